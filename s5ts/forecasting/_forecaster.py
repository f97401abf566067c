"""`Forecaster`: irregular-time forecasting with S5 on pandas alone (the
sktime `S5Forecaster` is a thin adapter over it)."""

from __future__ import annotations

from numbers import Integral, Real

import equinox as eqx
import jax
import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..data import is_parquet_source
from ..estimators import TRAINING_CONSTRAINTS, SharedParameters
from ..nn import IdentityEncoder, SequenceNetwork, block_settings, make_blocks
from ..training import enable_compilation_cache, is_primary
from ._asked import asked_after, asked_at
from ._calendar import ORDERS
from ._calibration import CALIBRATED_COVERAGES, interval_ratio
from ._fallback import calibration_for, combined, fallback_summary, simple_part
from ._fitting import FramesSource, ParquetSource, fit_forecaster
from ._network import MultiHorizonNetwork, advance, forecast, states_after_each_step
from ._series import SeriesState, as_frame, check_time_kind, pick_x_columns, split_series, timestamps, where
from ._simple import simple_forecast
from ._steps import SeriesScale, last_values, observation_steps, query_steps, standardised

#: The `S5Estimator` parameters the forecaster takes, with defaults for one
#: or a few series (see docs/forecasting.md for how they were chosen).
PARAMETERS = SharedParameters(
    exclude=(
        "bidirectional", "encoder", "pooling", "time_handling", "standardize", "scan", "warm_start",
        "observation_dropout", "checkpoint_dir", "checkpoint_every", "packing", "summary_features", "hold_ends",
        "time_warp",
    ),
    max_epochs=200,
    batch_size=4,  # 8 until 2026-12-06: level or worse and 1.8x the seconds (docs/forecasting.md, "Defaults")
    learning_rate=1e-3,
    dt_max=0.1,
    warmup_epochs=5,
    validation_fraction=0.15,
    n_iter_no_change=5,  # 10 (and 20 before it) fit no better and trained longer (docs/forecasting.md, "Early stopping")
    min_epoch_steps=None,  # its own MIN_BATCHES_PER_EPOCH repeats the windows of small data sets
)

class Forecaster(BaseEstimator):
    r"""Forecast irregularly sampled series at any future times with S5.

    A causal S5 network reads each series one observation at a time (the
    step inputs are in `s5ts.forecasting._steps`: changes since the last
    value in units of the series' spread, the gap, calendar features and
    exogenous `X`). It is trained on what predict asks for: from origins
    inside each training series, values at leads up to `horizon`, the state
    at the origin carried over each lead exactly ($e^{\Lambda\Delta g}$)
    and a Gaussian head on the change since the origin's last value. The
    last `validation_fraction` of each series' time span is held out of the
    targets for early stopping and to calibrate the intervals by lead
    (`lead_calibration`).

    **Data:** `y` a Series or DataFrame (d columns; NaN = not observed)
    indexed by time (datetime, timedelta, numbers or periods; irregular),
    or a MultiIndex frame `(series…, time)` for one global model over a
    panel; `X` exogenous features of the same layout at every time of `y`
    and of the forecasts. A column may be unobserved so far in some series
    (not in all): it is forecast NaN there, the other columns as usual.

    **Forecasts** (`predict`, `predict_distribution`): at absolute `times`
    — one index for every series, or a `(series…, time)` MultiIndex that
    asks each series at its own times, ISO date strings accepted — or at
    `leads` after each series' own last observation (`predict(leads="7D")`,
    as sktime's relative horizons); see `predict_distribution`.

    **Parameters:** `horizon` — the longest lead trained for, in the time
    index's units (a Timedelta, or a string such as `"30D"`, for datetime
    and timedelta indexes); None: a quarter of
    the median span of the series (`fit(horizon=...)` overrides it);
    `calendar` — `"auto"` (yearly / weekly / daily Fourier terms by
    Prophet's rules on datetime indexes), None, or a list of those names;
    `n_queries` — leads drawn per origin of the training windows (the
    held-out tail draws `max(n_queries, VALIDATION_QUERIES)`); `window_length` — training
    windows of at most this many observations (long series give many);
    `id_col`, `time_col` — the columns that name the series and their times
    when `y` is a Parquet data set; then the architecture and training
    parameters of `s5ts.S5Regressor`.

    **Data larger than memory:** `y` a long-format Parquet data set (a path
    or a `pyarrow.dataset.Dataset`, one row per observation, read with
    `id_col` and `time_col`, in the order `s5ts.data.open_parquet` needs)
    and `X` a list of its columns that are exogenous features (the other
    columns are forecast). The data are streamed (`_fitting`): memory is
    set by a batch, and `series_` keeps each series' state after its last
    observation, not its history, so forecasts and `update` go forward from
    there (docs/scaling.md).

    **Fitted attributes:** `network_` (a `MultiHorizonNetwork`), `history_` (per-epoch records),
    `time_scale_` (the median gap, in seconds for datetime and timedelta
    times), `horizon_` (the horizon the leads were drawn within, in the
    index's units: a `pd.Timedelta` for datetime and timedelta times, a
    number for numeric ones), `trained_lead_` (the longest lead training
    could draw, in the same units: `horizon_`, or less when no series'
    trained part spans it; beyond it the forecast's mean holds the drift it
    reached there), `cycles_`, `calibration_` (a
    `LeadCalibration`: the factor on the standard deviations at each lead,
    in model units), `series_` (per series id, a `SeriesState`),
    `fallback_` (a DataFrame, one row per series: the forecast used,
    `method`, the number of held-out values it was chosen on,
    `interval_scale`, the factor on its standard deviations from its own
    held-out errors against the panel's, and each candidate's held-out
    mean absolute error in units of the series' local spread; NaN for a
    candidate the series is not offered: a seasonal one whose cycle its
    history does not show, and the averages with simple forecasts other
    than the one its trained part picked, where it held at least
    `_fallback.HISTORY_COUNT` values to pick on), `nonnegative_` (per column of `y`, whether it was never
    negative in fit: then no forecast, quantile or interval bound is
    below zero).

    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> hours = np.cumsum(rng.exponential(1.0, 80))
    >>> y = pd.Series(np.sin(hours), index=pd.to_timedelta(hours, unit="h"))
    >>> model = Forecaster(n_layers=1, d_model=8, state_size=4, max_epochs=2, random_state=0).fit(y)
    >>> future = y.index[-1] + pd.to_timedelta([0.5, 2.0, 7.5], unit="h")
    >>> model.predict(future).shape
    (3, 1)
    >>> model.predict(leads=["30min", "2h", "7.5h"]).shape  # the same times, after the last observation
    (3, 1)
    """

    _parameter_constraints = {
        **PARAMETERS.constraints(),
        "horizon": [Interval(Real, 0, None, closed="neither"), pd.Timedelta, str, None],
        "calendar": [StrOptions({"auto"}), list, tuple, None],
        "n_queries": [Interval(Integral, 1, None, closed="left")],
        "window_length": [Interval(Integral, 2, None, closed="left")],
        "fallback": [StrOptions({"auto"}), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],  # of each series' time span: no "auto"
        "id_col": TRAINING_CONSTRAINTS["id_col"],
        "time_col": TRAINING_CONSTRAINTS["time_col"],
    }

    @PARAMETERS
    def __init__(
        self, *, horizon=None, calendar="auto", n_queries=4, window_length=256, fallback="auto", id_col=None,
        time_col=None, **shared
    ):
        self.horizon = horizon
        self.fallback = fallback
        self.calendar = calendar
        self.n_queries = n_queries
        self.window_length = window_length
        self.id_col = id_col
        self.time_col = time_col
        PARAMETERS.assign(self, shared)

    # ------------------------------------------------------------------
    # fit

    def fit(self, y, X=None, *, horizon=None) -> "Forecaster":
        """Train on `y` (and `X`); `horizon` overrides the parameter. `y`
        may be a Parquet data set (see the class docstring)."""
        self._validate_params()
        if self.calendar not in (None, "auto"):
            unknown = sorted(set(self.calendar) - set(ORDERS))
            if unknown:
                raise ValueError(f"calendar: unknown cycles {unknown}; choose from {sorted(ORDERS)}")
        enable_compilation_cache()
        source = ParquetSource.open(self, y, X) if is_parquet_source(y) else FramesSource.of(y, X)
        fitted = fit_forecaster(self, source, horizon)
        # Everything is computed: only now is the fitted state replaced.
        for name, value in fitted.items():
            setattr(self, name, value)
        if self.verbose and is_primary():
            print(fallback_summary(self.fallback_))
            if self.trained_lead_ < self.horizon_:
                print(f"the horizon {self.horizon_} is longer than any series' trained part: forecasts past "
                      f"{self.trained_lead_} hold the drift the network reached there")
        return self

    def build_network(self, n_inputs: int, d: int, query_origins: int | None, key) -> MultiHorizonNetwork:
        """The network for steps of `n_inputs` features and `d` outputs, its
        validation computing the queries of at most `query_origins` origins
        a window (`MultiHorizonNetwork`; None: all) (built on a copy,
        inside one compiled program: `NetworkSpec`)."""
        k_proj, k_head, k_blocks = jax.random.split(key, 3)
        # causal: no reverse pass
        blocks = make_blocks(self.n_layers, key=k_blocks, **block_settings(self, bidirectional=False, scan="auto"))
        network = SequenceNetwork(IdentityEncoder(n_inputs), blocks, eqx.nn.Identity(), pooling="none", key=k_proj)
        return MultiHorizonNetwork(network, self.d_model, d, n_inputs, query_origins=query_origins, key=k_head)

    # ------------------------------------------------------------------
    # forecasts

    def predict_distribution(
        self, times=None, X=None, *, leads=None, at_first: str = "raise"
    ) -> tuple[np.ndarray, np.ndarray, pd.Index]:
        """Gaussian forecasts `(mean (n, d), var (n, d), index)` in original
        units, one row per (series, time) asked, at either:

        - `times`, absolute: a collection of times (or one) asked of every
          series, rows series-major, the index `times` or, for a panel,
          `(series…, time)`; or a `pd.MultiIndex` `(series…, time)` whose
          leading levels are ids of fitted series (another id raises a
          ValueError naming it), each series forecast at its own times
          only, the rows and index in the order given (a list of
          `(series…, time)` tuples is one). Strings are read as the
          series' times: ISO 8601 dates (`"2024-03-01"`, `"2024-03-01
          12:30"`) on a datetime index, wall times in its time zone when it
          has one (a time that DST makes ambiguous or skips raises; a
          string with a UTC offset is that instant), durations on a
          timedelta index; periods are their start times.
        - `leads`, relative (as sktime's relative `ForecastingHorizon`, but
          from each series' own last observation, not one cutoff): a
          positive lead, or a collection of them, after each series' last
          observation — Timedeltas or strings such as `"7D"` on datetime
          and timedelta indexes, numbers on numeric ones; rows
          series-major, the index of the absolute times they make (each
          series' last observation read to the microsecond; `X`, if the
          model has exogenous features, needs rows at those times).

        A time at or before an observation is forecast from the history
        strictly before it (one step ahead in-sample). A column of a
        series with no observed value before a time (NaN so far) has NaN
        mean and variance there; its other columns are forecast.

        A series' first observation time has no history to forecast from:
        `at_first="raise"` (default) raises, `"nan"` gives NaN mean and
        variance there (sktime's full in-sample horizons include it). A
        time before the first observation always raises (times asked of
        every series: before any series' first observation)."""
        mean, var, _, index = self._forecast(times, X, leads, at_first)
        return mean, var, index

    def _forecast(self, times, X, leads, at_first):
        """`predict_distribution`'s means, variances and index, and each
        row's factors for the calibrated coverages as a fraction of its
        standard deviation (n, n_coverages: `LeadCalibration.interval_factors`)."""
        check_is_fitted(self, "network_")
        if at_first not in ("raise", "nan"):
            raise ValueError(f"at_first must be 'raise' or 'nan', got {at_first!r}")
        meta = self._meta
        if (times is None) == (leads is None):
            raise TypeError("predict needs times or leads, not both" if leads is not None else "predict needs times or leads")
        if leads is None:
            asked = asked_at(times, list(self.series_), meta["time_kind"], meta["index_names"])
        else:
            last = {sid: float(record.times[-1]) for sid, record in self.series_.items()}
            asked = asked_after(leads, last, meta["time_kind"], meta["index_names"])
        x_by_id = {}
        if X is not None and meta["x_columns"] is not None:
            x_by_id = {sid: f.set_axis(timestamps(f.index)) for sid, f in split_series(as_frame(X, "X"))}
        mean, var = (np.full((len(asked.index), len(meta["y_columns"])), np.nan) for _ in range(2))
        ratios = np.ones((len(asked.index), len(CALIBRATED_COVERAGES)))
        for sid, (rows, when, seconds) in asked.series.items():
            record = self.series_[sid]
            if asked.shared and sid is not None:
                self._check_history(sid, record, when, seconds, at_first)
            if len(rows):
                forecasts = self._series_forecast(sid, record, when, seconds, x_by_id.get(sid), X is not None, at_first)
                mean[rows], var[rows], ratios[rows] = forecasts
        return mean, var, ratios, asked.index

    def predict(self, times=None, X=None, *, leads=None) -> pd.DataFrame:
        """Mean forecasts at `times`, or `leads` after each series' last
        observation (a DataFrame: rows as `predict_distribution`, columns
        as `y`)."""
        mean, _, index = self.predict_distribution(times, X, leads=leads)
        return pd.DataFrame(mean, index=index, columns=self._meta["y_columns"])

    def predict_quantiles(self, times=None, alpha=(0.1, 0.9), X=None, *, leads=None,
                          at_first: str = "raise") -> pd.DataFrame:
        """Quantiles `alpha` (a float or a list in (0, 1)) of the forecasts
        at `times` (or `leads`, as `predict`): columns (column of `y`, alpha), as sktime's
        `predict_quantiles`; rows and `at_first` as `predict_distribution`.
        Each is an end of the central interval of coverage |2·alpha − 1|
        (`predict_interval`)."""
        alpha = _levels(alpha, "alpha")
        mean, var, ratios, index = self._forecast(times, X, leads, at_first)
        values = gaussian_quantiles(mean, var, alpha, self.nonnegative_.to_numpy(), ratios)
        columns = pd.MultiIndex.from_product([self._meta["y_columns"], alpha])
        return pd.DataFrame(values.reshape(len(index), -1), index=index, columns=columns)

    def predict_interval(self, times=None, coverage=0.9, X=None, *, leads=None,
                         at_first: str = "raise") -> pd.DataFrame:
        """Central intervals of `coverage` (a float or a list in (0, 1)) at
        `times` (or `leads`, as `predict`): columns (column of `y`, coverage, "lower"/"upper"), as
        sktime's `predict_interval`; rows and `at_first` as `predict_distribution`.

        Each coverage is calibrated on its own held-out quantile: the
        Gaussian's standard deviation times the factor of
        `LeadCalibration.interval_factors` (1 at 95 % and above, at most 1
        at 80 % and below, linear between), so the 80 % interval is not
        widened by what the 95 % one needs."""
        coverage = _levels(coverage, "coverage")
        alpha = [a for c in coverage for a in (0.5 - c / 2, 0.5 + c / 2)]
        mean, var, ratios, index = self._forecast(times, X, leads, at_first)
        values = gaussian_quantiles(mean, var, alpha, self.nonnegative_.to_numpy(), ratios)
        columns = pd.MultiIndex.from_product([self._meta["y_columns"], coverage, ["lower", "upper"]])
        return pd.DataFrame(values.reshape(len(index), -1), index=index, columns=columns)

    def _check_history(self, sid, record: SeriesState, when, seconds, at_first) -> None:
        """Times asked of every series are after series `sid`'s first
        observation (its first with `at_first="nan"`)."""
        if record.carry is not None:  # `_series_forecast` says what a streamed fit keeps
            return
        early = seconds < record.times[0] if at_first == "nan" else seconds <= record.times[0]
        if early.any():
            raise ValueError(
                f"times: series {sid!r} cannot forecast at {when[np.flatnonzero(early)[0]]}, not after its first "
                f"observation ({_index_value(record.times[0], self._meta['time_kind'])}): times given alone are "
                "asked of every series; ask each series at its own times with a (series…, time) MultiIndex, "
                "or after its last observation with leads="
            )

    def _series_forecast(self, sid, record: SeriesState, when, seconds, x_frame, has_x, at_first="raise"):
        layout = self._layout
        if record.carry is not None and (seconds <= record.times[-1]).any():
            first = when[np.flatnonzero(seconds <= record.times[-1])[0]]
            raise ValueError(
                f"{where(sid)}cannot forecast at {first}: the forecaster was fitted from a Parquet data set "
                f"and keeps each series' state after its last observation "
                f"({_index_value(record.times[-1], self._meta['time_kind'])}), not its history; forecast after it"
            )
        origin = np.searchsorted(record.times, seconds, side="left") - 1
        no_history = (seconds == record.times[0]) if at_first == "nan" else np.zeros(len(seconds), bool)
        origin[no_history] = 0  # a placeholder: these rows become NaN
        if (origin < 0).any():
            first = when[np.flatnonzero(origin < 0)[0]]
            raise ValueError(
                f"{where(sid)}cannot forecast at {first}: it is not after the series' first observation "
                f"({_index_value(record.times[0], self._meta['time_kind'])}), and a forecast needs history before it"
            )
        level = last_values(record.y)[origin]  # NaN: a column not observed yet, whose forecast is NaN
        n = len(record.times)
        states = [np.broadcast_to(s, (len(seconds), *s.shape)) for s in map(np.asarray, record.state)]
        if record.carry is not None:  # every origin is the last observation
            spread = np.broadcast_to(record.carry.spread(record.scale.spread), (len(seconds), layout.d))
        else:
            u, gaps, spreads = observation_steps(layout, record.times, record.y, record.x, record.scale)
            spread = spreads[origin]
        if (origin < n - 1).any():
            sequence = self.network_.network
            after = states_after_each_step(sequence, sequence.init_state(), u, gaps)
            future = origin == n - 1
            states = [np.where(future[:, None], s, a[origin]) for s, a in zip(states, after)]
        x = None
        if self._meta["x_columns"] is not None:
            x = self._query_x(sid, record, when, seconds, x_frame, has_x)
        u, leads = query_steps(layout, seconds, x, record.times[origin])
        mean, var = forecast(self.network_, tuple(states), u, leads, self._max_lead)
        fallback = self._fallback
        method = fallback.method(sid)
        simple = simple_part(method)
        if simple is not None:
            at = simple_forecast(simple, record.times, record.y, origin, seconds, tau=fallback.taus[sid],
                                 cycles=layout.cycles)
            mean = combined(method, mean, (at - level) / spread)
        calibration = calibration_for(fallback, method, self.calibration_)
        factor = calibration(leads)[:, None] * fallback.interval_scale(sid)
        mean, var = level + spread * mean, var * spread**2 * factor**2
        mean = np.where(self.nonnegative_.to_numpy(), np.maximum(mean, 0.0), mean)
        mean[no_history] = var[no_history] = np.nan
        mean[np.isnan(level)] = var[np.isnan(level)] = np.nan
        return mean, var, calibration.interval_factors(leads)

    def _query_x(self, sid, record, when, seconds, x_frame, has_x):
        """Standardised exogenous features at the requested times: from
        predict's X, or from the history at observation times."""
        x = np.full((len(when), len(self._meta["x_columns"])), np.nan)
        known = np.zeros(len(when), dtype=bool)
        if x_frame is not None:
            x_frame = pick_x_columns(x_frame, self._meta["x_columns"])
            present = when.isin(x_frame.index)
            if present.any():
                rows = x_frame.loc[when[present]].to_numpy(dtype=np.float64, na_value=np.nan)
                x[present] = standardised(rows, self._x_mean, self._x_std)
                known |= present
        position = np.searchsorted(record.times, seconds)
        at_observation = (position < len(record.times)) & ~known
        at_observation[at_observation] = record.times[position[at_observation]] == seconds[at_observation]
        x[at_observation] = record.x[position[at_observation]]
        known |= at_observation
        if not known.all():
            first = when[np.flatnonzero(~known)[0]]
            if not has_x:
                raise ValueError(
                    f"the forecaster was fitted with exogenous X, so predict needs X at the forecast "
                    f"times (first missing: {first})"
                )
            raise ValueError(
                f"{where(sid)}X has no row at time {first}; the forecaster was fitted with exogenous X, "
                "so X must cover every forecast time"
            )
        return x

    # ------------------------------------------------------------------
    # update

    def update(self, y, X=None) -> "Forecaster":
        """Add observations: each series' state is advanced over its new
        observations after its last known time; late observations (inside
        the known history) are merged and the series' state recomputed from
        its start; a known time with a different value raises. Series new
        to the model start from the zero state and get S5's forecast (the
        fallback was chosen in fit). The weights and each series' fallback
        stay as fitted (`fit` again to retrain)."""
        check_is_fitted(self, "network_")
        columns = self._meta["x_columns"]
        if columns is not None and X is None:
            raise ValueError("the forecaster was fitted with exogenous X, so update needs X too")
        source = FramesSource.of(y, None if columns is None else X, columns)
        panel = source.chunk.panel
        check_time_kind((panel.time_kind, panel.tz), self._meta["time_kind"], "y has {} times")
        records = dict(self.series_)
        for one in source.series:
            x = standardised(one.x, self._x_mean, self._x_std)
            records[one.id] = self._updated(one.id, records.get(one.id), one.times, one.y, x)
        self.series_ = records
        return self

    def _updated(self, sid, record: SeriesState | None, t, v, x) -> SeriesState:
        layout, network = self._layout, self.network_.network
        if record is None:
            scale = SeriesScale.of(v, self._default_scale)
            u, gaps, _ = observation_steps(layout, t, v, x, scale)
            return SeriesState(t, v, x, scale, advance(network, network.init_state(), u, gaps))
        if record.carry is not None:
            if t[0] <= record.times[-1]:
                raise ValueError(
                    f"{where(sid)}update has an observation at {_index_value(t[0], self._meta['time_kind'])}, "
                    f"not after the last one the forecaster keeps "
                    f"({_index_value(record.times[-1], self._meta['time_kind'])}): fitted from a Parquet data set, it "
                    "keeps each series' state, not its history; fit again to include earlier observations"
                )
            u, gaps, _ = observation_steps(layout, t, v, x, record.scale, after=record.carry)
            state = advance(network, record.state, u, gaps)
            return SeriesState.at_end(layout, t, v, x, record.scale, state, after=record.carry)
        known = np.isin(t, record.times)
        if known.any():
            position = np.searchsorted(record.times, t[known])
            same = np.isclose(record.y[position], v[known], equal_nan=True).all(axis=1)
            if not same.all():
                when = _index_value(t[known][np.flatnonzero(~same)[0]], self._meta["time_kind"])
                raise ValueError(
                    f"{where(sid)}update has a different value at {when}, a time already observed; "
                    "fit again to replace observations"
                )
        new = ~known
        if not new.any():
            return record
        times = np.concatenate([record.times, t[new]])
        order = np.argsort(times, kind="stable")
        y = np.concatenate([record.y, v[new]])[order]
        xs = None if x is None else np.concatenate([record.x, x[new]])[order]
        u, gaps, _ = observation_steps(layout, times[order], y, xs, record.scale)
        if t[new][0] <= record.times[-1]:  # late observations: the whole series again
            state = advance(network, network.init_state(), u, gaps)
        else:  # only the new steps, from the stored state
            n = len(record.times)
            state = advance(network, record.state, u[n:], gaps[n:])
        return SeriesState(times[order], y, xs, record.scale, state)


def gaussian_quantiles(mean, var, alpha, nonnegative, ratios=None) -> np.ndarray:
    """Quantiles `alpha` (A,) of independent Gaussians of `mean` and `var`
    (n, d): (n, d, A); where `nonnegative` (d,) holds, the quantiles of
    max(Y, 0) (a quantity never negative in training is never forecast
    below zero, nor are its intervals). With `ratios` (n, n_coverages:
    `LeadCalibration.interval_factors`), quantile alpha is the end of the
    central interval of coverage |2·alpha − 1| calibrated on its own: the
    standard deviation times `interval_ratio` at that coverage."""
    alpha = np.asarray(alpha, np.float64)
    sd = np.sqrt(np.asarray(var))[..., None]
    if ratios is not None:
        sd = sd * np.stack([interval_ratio(ratios, abs(2 * a - 1)) for a in alpha], axis=-1)[:, None, :]
    q = np.asarray(mean)[..., None] + sd * norm.ppf(alpha)
    return np.where(np.asarray(nonnegative)[:, None], np.maximum(q, 0.0), q)


def _levels(values, name) -> list[float]:
    """`values` (a float or a list of floats in (0, 1)) as a list, else a ValueError naming `name`."""
    values = [values] if isinstance(values, Real) else list(values)
    if not values or not all(isinstance(v, Real) and 0 < v < 1 for v in values):
        raise ValueError(f"{name} must be a float or a list of floats in (0, 1), got {values!r}")
    return [float(v) for v in values]


def _index_value(seconds, time_kind):
    kind, tz = time_kind
    if kind == "datetime":
        stamp = pd.Timestamp(int(round(seconds * 1e9)))
        return stamp.tz_localize("UTC").tz_convert(tz) if tz is not None else stamp
    if kind == "timedelta":
        return pd.Timedelta(seconds, unit="s")
    return seconds
