"""S5Forecaster: sktime forecasting of irregularly sampled series at any
future time, with a causal S5 network (see `_forecast_steps` for the model)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.utils import check_random_state
from sktime.forecasting.base import BaseForecaster

from ..data import time_scale_from, to_panel
from ..estimators._base import SharedParameters
from ..training import (
    Sequences,
    TrainingConfig,
    TrainingState,
    gaussian_nll_loss,
    split_validation,
    squared_error,
    train,
)
from ..nn import ACTIVATIONS, DISCRETISATIONS, GaussianHead, IdentityEncoder, SequenceNetwork, make_blocks
from ._forecast_steps import (
    advance,
    forecast,
    n_step_inputs,
    query_inputs,
    states_after_each_step,
    step_inputs,
)

_INNER_MTYPES = ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"]


@dataclasses.dataclass(frozen=True)
class _History:
    """One series as the forecaster knows it: observation times (seconds),
    standardised values and exogenous features, and the network state after
    the last observation's step."""

    times: np.ndarray  # (L,)
    z: np.ndarray  # (L, d)
    x: np.ndarray | None  # (L, e)
    state: tuple  # per block, complex (P,)

    def extended(self, times, z, x, state) -> "_History":
        return _History(
            times=np.concatenate([self.times, times]),
            z=np.concatenate([self.z, z]),
            x=None if x is None else np.concatenate([self.x, x]),
            state=state,
        )


#: The `S5Estimator` parameters the forecaster takes (not those of panels of
#: many series, nor `warm_start`, which sktime's `fit` reset contradicts); its
#: defaults suit one or a few long series: more epochs, no validation split;
#: its learning rate and initial timescales stay those it was tested with
#: (the estimators' defaults changed on 2026-12-01 from their benchmark; the
#: forecaster's are for its own benchmark to choose).
_PARAMETERS = SharedParameters(
    exclude=("bidirectional", "encoder", "pooling", "time_handling", "standardize", "scan", "warm_start"),
    max_epochs=200,
    learning_rate=3e-3,
    dt_max=0.1,
    warmup_epochs=5,
    validation_fraction=0.0,
    n_iter_no_change=20,
)


class S5Forecaster(BaseForecaster):
    r"""Forecast irregularly sampled series at arbitrary future times with S5.

    A causal S5 network reads a series one observation at a time: the step
    for observation $k$ covers $(t_{k-1}, t_k]$, its discretisation uses the
    real gap $g_k = (t_k - t_{k-1})/s$ ($s$ = the median gap in `fit`), its
    input is the previous observation (held constant over the interval, as in
    ZOH), exogenous `X` at $t_k$ and $\log(1 + g_k)$, and its Gaussian head
    predicts $y_k$. Trained by maximum likelihood on one series or, as one
    global model, on every series of a panel.

    A forecast for a time $T$ is one more step from the state after the last
    observation before $T$, with gap $(T - t_{\text{last}})/s$: so horizons
    can be any absolute future time stamps (irregularly spaced, on a
    `DatetimeIndex` without frequency, a `TimedeltaIndex` or integers) or
    relative Timedeltas, and each is forecast from the exact lead time.
    In-sample times give one-step-ahead forecasts from the history before
    them. `predict_interval`, `predict_quantiles`, `predict_var` and
    `predict_proba` come from the Gaussian head (marginal per time).

    `update(y)` runs the new observations through the network from the
    stored state (the history is not recomputed) and moves the cutoff; the
    network weights stay as fitted (refit to retrain). A series new to the
    model starts from the zero state.

    **Horizons:** absolute (`ForecastingHorizon(index, is_relative=False)`,
    or a `pd.DatetimeIndex` / integer index); relative Timedeltas
    (`ForecastingHorizon(pd.to_timedelta([...]), is_relative=True)`, the
    only kind sktime allows for a `TimedeltaIndex`); relative integers
    count time units on an integer index and steps of the frequency on an
    index that has one — on a frequency-less datetime index they have no
    meaning and raise a `ValueError`.

    **Parameters:** architecture `n_layers`, `d_model`, `state_size`,
    `blocks`, `discretization`, `activation`, `prenorm`, `dt_min`,
    `dt_max`, `dropout` (see `s5ts.S5Regressor`); `first_gap`, the gap of a
    series' first step; training `max_epochs`, `batch_size` (series per
    batch), `learning_rate`, `ssm_learning_rate`, `weight_decay`,
    `warmup_epochs`, `grad_clip`, `validation_fraction` (of the series of a
    panel; early stopping on their one-step MSE), `n_iter_no_change`,
    `random_state`, `verbose`.

    **Fitted attributes:** `network_` (the Equinox `SequenceNetwork`),
    `history_` (per-epoch losses), `time_scale_` (seconds or index units per
    model time unit).

    >>> import numpy as np, pandas as pd
    >>> from sktime.forecasting.base import ForecastingHorizon
    >>> from s5ts.sktime import S5Forecaster
    >>> rng = np.random.default_rng(0)
    >>> hours = np.cumsum(rng.exponential(1.0, 60))  # Poisson observation times
    >>> times = pd.Timestamp("2024-01-01") + pd.to_timedelta(hours, unit="h")
    >>> y = pd.Series(np.sin(hours), index=pd.DatetimeIndex(times), name="y")
    >>> forecaster = S5Forecaster(n_layers=1, d_model=8, state_size=4, max_epochs=2, random_state=0)
    >>> forecaster = forecaster.fit(y)
    >>> future = times[-1] + pd.to_timedelta([0.3, 1.7, 5.0], unit="h")  # irregular
    >>> fh = ForecastingHorizon(pd.DatetimeIndex(future), is_relative=False)
    >>> forecaster.predict(fh).shape
    (3,)
    >>> forecaster.predict_interval(fh, coverage=0.9).shape
    (3, 2)
    """

    _tags = {
        "authors": ["s5ts developers"],
        "maintainers": ["s5ts developers"],
        "y_inner_mtype": _INNER_MTYPES,
        "X_inner_mtype": _INNER_MTYPES,
        "capability:multivariate": True,
        "capability:exogenous": True,
        # Absolute horizons on a frequency-less index cannot be classified
        # in- or out-of-sample by sktime; with this True it does not try.
        "capability:insample": True,
        "capability:pred_int": True,
        "capability:pred_int:insample": True,
        "capability:missing_values": False,
        "capability:categorical_in_X": False,
        "capability:update": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "requires-fh-in-fit": False,
    }

    # The forecaster keeps the states it needs; sktime need not store y.
    _config = {"remember_data": False}

    @_PARAMETERS
    def __init__(self, **shared):
        _PARAMETERS.assign(self, shared)
        super().__init__()
        # sktime creates these only when remember_data is on at construction;
        # set_config can switch it on later.
        for name in ("_y", "_X"):
            if not hasattr(self, name):
                setattr(self, name, None)

    # ------------------------------------------------------------------
    # fit

    def _fit(self, y, X, fh):
        """`y`: a DataFrame indexed by time, or a (…, instance, time)
        MultiIndex panel; `X`: the same layout, at least at y's times."""
        self._check_parameters()
        series = _split_series(y)
        self._index_names = list(y.index.names)
        self._y_columns = y.columns
        self._x_columns = None if X is None else X.columns
        panel = self._encode_y(series, fitted=False)
        times, values = list(panel.times), list(panel.values)
        self._time_kind = (panel.time_kind, panel.tz)
        exog = self._encode_x(series, X, times) if X is not None else None
        if fh is not None:
            self._horizon_index(fh)  # fail early on a horizon predict cannot use

        stacked = np.concatenate(values)
        std = stacked.std(axis=0)
        self._y_mean = stacked.mean(axis=0)
        self._y_std = np.where(std > 0, std, 1.0)
        if exog is not None:
            xs = np.concatenate(exog)
            std = np.nanstd(xs, axis=0)
            self._x_mean = np.nanmean(xs, axis=0)
            self._x_std = np.where(std > 0, std, 1.0)
        self.time_scale_ = float(time_scale_from(panel))

        z = [self._standardise_y(v) for v in values]
        x = None if exog is None else [self._standardise_x(e) for e in exog]
        steps = [
            step_inputs(t, z_i, None if x is None else x[i], scale=self.time_scale_, first_gap=self.first_gap)
            for i, (t, z_i) in enumerate(zip(times, z))
        ]
        data = Sequences(
            inputs=tuple(u for u, _ in steps),
            gaps=tuple(g for _, g in steps),
            targets=tuple(z_i.astype(np.float32) for z_i in z),
            per_step=True,
        )
        seed = check_random_state(self.random_state).randint(2**31 - 1)
        rng = np.random.default_rng(seed)
        n_exog = 0 if x is None else x[0].shape[1]
        network = self._build_network(n_step_inputs(stacked.shape[1], n_exog), stacked.shape[1], seed)
        config = TrainingConfig.from_estimator(self)
        train_data, valid_data = split_validation(data, self.validation_fraction, rng)
        result = train(
            TrainingState(model=network, opt_state=config.init_optimizer_state(network)),
            train_data,
            valid_data,
            gaussian_nll_loss,
            squared_error,
            config,
            rng=rng,
            key=jax.random.key(int(rng.integers(2**31 - 1))),
            metric_name="mse",
        )
        self.network_ = result.model
        self.history_ = list(result.state.history)
        init = self.network_.init_state()
        self._series = {
            sid: _History(
                times=t,
                z=z_i,
                x=None if x is None else x[i],
                state=advance(self.network_, init, *steps[i]),
            )
            for i, (sid, t, z_i) in enumerate(zip([s for s, _ in series], times, z))
        }
        return self

    def _check_parameters(self):
        for name in ("n_layers", "d_model", "state_size", "blocks", "max_epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("learning_rate", "dt_min", "dt_max", "first_gap"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if self.discretization not in DISCRETISATIONS:
            raise ValueError(
                f"discretization must be one of {tuple(DISCRETISATIONS)}, got {self.discretization!r}"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ValueError(f"validation_fraction must be in [0, 1), got {self.validation_fraction!r}")

    def _build_network(self, n_inputs: int, n_outputs: int, seed: int) -> SequenceNetwork:
        k_proj, k_head, k_blocks = jax.random.split(jax.random.key(seed), 3)
        blocks = make_blocks(
            self.n_layers, self.d_model, self.state_size, self.blocks, self.discretization,
            False,  # causal: no reverse pass
            "auto", self.dt_min, self.dt_max, self.activation, self.dropout, self.prenorm,
            key=k_blocks,
        )
        head = GaussianHead(self.d_model, n_outputs, self.d_model, key=k_head)
        return SequenceNetwork(IdentityEncoder(n_inputs), blocks, head, pooling="none", key=k_proj)

    # ------------------------------------------------------------------
    # encoding

    def _encode_y(self, series, *, fitted: bool):
        """The series as a `RaggedPanel` (times in seconds or index units)."""
        frames = [_with_time_index(frame) for _, frame in series]
        ids = pd.Index([sid for sid, _ in series], tupleize_cols=False, dtype=object)
        panel = to_panel(pd.Series(frames, index=ids, dtype=object))
        if fitted and (panel.time_kind, panel.tz) != self._time_kind:
            raise TypeError(
                f"y has {panel.time_kind} times (tz {panel.tz}), but the forecaster was fitted on "
                f"{self._time_kind[0]} times (tz {self._time_kind[1]})"
            )
        return panel

    def _encode_x(self, series, X, times):
        """Exogenous features of each series at its observation times."""
        by_id = dict(_split_series(X))
        out = []
        for sid, frame in series:
            if sid not in by_id:
                raise ValueError(f"series {sid!r}: X has no rows for this series")
            out.append(self._x_rows(sid, by_id[sid], frame.index))
        return out

    def _x_rows(self, sid, x_frame: pd.DataFrame, index: pd.Index) -> np.ndarray:
        x_frame = self._x_columns_of(x_frame)
        missing = ~index.isin(x_frame.index)
        if missing.any():
            where = "" if sid is None else f"series {sid!r}: "
            raise ValueError(
                f"{where}X has no row at time {index[np.flatnonzero(missing)[0]]}; the forecaster "
                "was fitted with exogenous X, so X must cover every time it is asked about"
            )
        rows = x_frame.loc[index]
        for column, dtype in rows.dtypes.items():
            if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
                where = "" if sid is None else f"series {sid!r}, "
                raise TypeError(f"{where}column {column!r} of X has non-numeric dtype {dtype}")
        return rows.to_numpy(dtype=np.float64, na_value=np.nan)

    def _x_columns_of(self, x_frame):
        missing = [c for c in self._x_columns if c not in x_frame.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} seen in fit")
        return x_frame[list(self._x_columns)]

    def _standardise_y(self, values):
        return (values - self._y_mean) / self._y_std

    def _standardise_x(self, values):
        # A missing exogenous value becomes the training mean.
        return np.nan_to_num((values - self._x_mean) / self._x_std, nan=0.0)

    def _seconds(self, index: pd.Index) -> np.ndarray:
        """Times of `index` on the scale of the fitted series' times."""
        index = _timestamps(index)
        if len(index) == 0:
            return np.zeros(0)
        order = np.argsort(np.asarray(index), kind="stable")
        frame = pd.DataFrame({"t": np.zeros(len(index))}, index=index[order])
        try:
            panel = to_panel([frame])
        except ValueError as error:
            raise ValueError(f"forecast times: {error}") from error
        if (panel.time_kind, panel.tz) != self._time_kind:
            raise TypeError(
                f"the horizon has {panel.time_kind} times (tz {panel.tz}), but the forecaster was "
                f"fitted on {self._time_kind[0]} times (tz {self._time_kind[1]})"
            )
        seconds = np.empty(len(index))
        seconds[order] = panel.times[0]
        return seconds

    # ------------------------------------------------------------------
    # horizons and forecasts

    def _horizon_index(self, fh) -> pd.Index:
        """The absolute time stamps of `fh`."""
        if not fh.is_relative:
            return fh.to_pandas()
        steps = fh.to_pandas()
        cutoff = self.cutoff
        if pd.api.types.is_timedelta64_dtype(steps.dtype):
            if not (isinstance(cutoff, (pd.DatetimeIndex, pd.TimedeltaIndex))):
                raise ValueError(
                    "Timedelta horizons need y indexed by a DatetimeIndex or TimedeltaIndex; "
                    f"y has a {type(cutoff).__name__}: give relative horizons as numbers of its units"
                )
            return pd.Index(cutoff[0] + steps)
        if isinstance(cutoff, (pd.DatetimeIndex, pd.TimedeltaIndex)) and cutoff.freq is None:
            raise ValueError(
                f"relative integer horizons {list(steps)} need an index with a frequency, but y's "
                f"{type(cutoff).__name__} has none (irregular times): pass the absolute future time "
                "stamps (ForecastingHorizon(times, is_relative=False)) or Timedelta horizons "
                "(ForecastingHorizon(pd.to_timedelta([...]), is_relative=True))"
            )
        return fh.to_absolute_index(cutoff)

    def _forecast(self, fh, X):
        """Means and variances (original units), rows = series × horizon."""
        when = self._horizon_index(fh)
        seconds = self._seconds(when)
        x_by_id = {} if X is None or self._x_columns is None else dict(_split_series(X))
        parts = [
            self._queries(sid, record, when, seconds, x_by_id.get(sid))
            for sid, record in self._series.items()
        ]
        states = tuple(jnp.concatenate([p[0][b] for p in parts]) for b in range(len(self.network_.blocks)))
        u = np.concatenate([p[1] for p in parts])
        gaps = np.concatenate([p[2] for p in parts])
        mean, var = forecast(self.network_, states, u, gaps)
        mean = mean * self._y_std + self._y_mean
        var = var * self._y_std**2
        return mean, var, self._output_index(when)

    def _queries(self, sid, record: _History, when, seconds, x_frame):
        """States, inputs and gaps of the forecast steps of one series."""
        Q = len(seconds)
        # The last observation strictly before each requested time.
        last = np.searchsorted(record.times, seconds, side="left") - 1
        n = len(record.times)
        future = last == n - 1
        states = [jnp.broadcast_to(s, (Q, *s.shape)) for s in record.state]
        if not future.all():
            init = self.network_.init_state()
            u, gaps = step_inputs(
                record.times, record.z, record.x, scale=self.time_scale_, first_gap=self.first_gap
            )
            after = states_after_each_step(self.network_, init, u, gaps)
            for b, (s, a) in enumerate(zip(states, after)):
                history = jnp.concatenate([init[b][None], a])  # index k + 1: after step k
                states[b] = jnp.where(future[:, None], s, history[last + 1])
        last_z = record.z[np.maximum(last, 0)]
        last_time = np.where(last >= 0, record.times[np.maximum(last, 0)], np.nan)
        x = None
        if self._x_columns is not None:
            x = self._query_x(sid, record, when, seconds, x_frame)
        u, gaps = query_inputs(
            seconds, x, last_z, last_time, scale=self.time_scale_, first_gap=self.first_gap
        )
        return tuple(states), u, gaps

    def _query_x(self, sid, record, when, seconds, x_frame):
        """Exogenous features at the requested times: from predict's X, or
        from the history at observation times."""
        x = np.full((len(when), len(self._x_columns)), np.nan)
        known = np.zeros(len(when), dtype=bool)
        if x_frame is not None:
            x_frame = self._x_columns_of(x_frame)
            present = when.isin(x_frame.index)
            if present.any():
                x[present] = self._standardise_x(
                    x_frame.loc[when[present]].to_numpy(dtype=np.float64, na_value=np.nan)
                )
                known |= present
        position = np.searchsorted(record.times, seconds)
        at_observation = (position < len(record.times)) & ~known
        at_observation[at_observation] = record.times[position[at_observation]] == seconds[at_observation]
        x[at_observation] = record.x[position[at_observation]]
        known |= at_observation
        if not known.all():
            first = when[np.flatnonzero(~known)[0]]
            if x_frame is None:
                raise ValueError(
                    f"the forecaster was fitted with exogenous X, so predict needs X at the forecast "
                    f"times (first missing: {first})"
                )
            where = "" if sid is None else f"series {sid!r}: "
            raise ValueError(
                f"{where}X has no row at time {first}; the forecaster was fitted with exogenous X, "
                "so X must cover every forecast time"
            )
        return x

    def _output_index(self, when: pd.Index) -> pd.Index:
        ids = list(self._series)
        if ids == [None]:
            return when
        Q = len(when)
        time_level = when[np.tile(np.arange(Q), len(ids))]
        id_levels = []
        depth = len(self._index_names) - 1
        for level in range(depth):
            values = [sid[level] if depth > 1 else sid for sid in ids]
            id_levels.append(pd.Index(values).repeat(Q))
        return pd.MultiIndex.from_arrays([*id_levels, time_level], names=self._index_names)

    def _predict(self, fh, X=None):
        mean, _, index = self._forecast(fh, X)
        return pd.DataFrame(mean, index=index, columns=self._y_columns)

    def _predict_var(self, fh, X=None, cov=False):
        if cov:
            raise NotImplementedError("S5Forecaster predicts marginal variances only (cov=False)")
        _, var, index = self._forecast(fh, X)
        return pd.DataFrame(var, index=index, columns=self._y_columns)

    def _predict_proba(self, fh, X, marginal=True):
        """Independent Normal forecasts per time (mean and sd of the head)."""
        # Implemented here (not left to sktime's default) so that one forward
        # pass gives both parameters, and so that sktime's notice about the
        # optional skpro does not fire: its own minimal Normal serves instead.
        try:
            from skpro.distributions.normal import Normal
        except ImportError:
            from sktime.base._proba._normal import Normal
        mean, var, index = self._forecast(fh, X)
        mu = pd.DataFrame(mean, index=index, columns=self._y_columns)
        sigma = pd.DataFrame(np.sqrt(var), index=index, columns=self._y_columns)
        return Normal(mu=mu, sigma=sigma, index=index, columns=self._y_columns)

    def _predict_quantiles(self, fh, X, alpha):
        mean, var, index = self._forecast(fh, X)
        sd = np.sqrt(var)
        columns = self._get_columns(method="predict_quantiles", alpha=alpha)
        values = [mean[:, j] + sd[:, j] * norm.ppf(a) for j in range(mean.shape[1]) for a in alpha]
        return pd.DataFrame(np.stack(values, axis=1), index=index, columns=columns)

    def _predict_interval(self, fh, X, coverage):
        mean, var, index = self._forecast(fh, X)
        sd = np.sqrt(var)
        columns = self._get_columns(method="predict_interval", coverage=coverage)
        values = []
        for j in range(mean.shape[1]):
            for c in coverage:
                half = sd[:, j] * norm.ppf(0.5 + 0.5 * c)
                values += [mean[:, j] - half, mean[:, j] + half]
        return pd.DataFrame(np.stack(values, axis=1), index=index, columns=columns)

    # ------------------------------------------------------------------
    # update

    def _update(self, y, X=None, update_params=True):
        """Advance each series' state over its observations after its last
        known time (earlier rows are already known and skipped); series new
        to the model start from the zero state. The weights do not change."""
        series = _split_series(y)
        panel = self._encode_y(series, fitted=True)
        times, values = panel.times, panel.values
        if self._x_columns is not None and X is None:
            raise ValueError("the forecaster was fitted with exogenous X, so update needs X too")
        exog = self._encode_x(series, X, times) if self._x_columns is not None else None
        records = dict(self._series)
        for i, (sid, _) in enumerate(series):
            record = records.get(sid)
            t = times[i]
            keep = slice(None) if record is None else t > record.times[-1]
            t = t[keep]
            if len(t) == 0:
                continue
            z = self._standardise_y(values[i][keep])
            x = None if exog is None else self._standardise_x(exog[i][keep])
            if record is None:
                u, gaps = step_inputs(t, z, x, scale=self.time_scale_, first_gap=self.first_gap)
                records[sid] = _History(t, z, x, advance(self.network_, self.network_.init_state(), u, gaps))
            else:
                u, gaps = step_inputs(
                    t,
                    z,
                    x,
                    scale=self.time_scale_,
                    first_gap=self.first_gap,
                    last_z=record.z[-1],
                    last_time=record.times[-1],
                )
                records[sid] = record.extended(t, z, x, advance(self.network_, record.state, u, gaps))
        self._series = records
        return self

    # ------------------------------------------------------------------

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Tiny networks trained for two epochs (ZOH and bilinear)."""
        fast = {"n_layers": 1, "d_model": 4, "state_size": 2, "max_epochs": 2, "random_state": 0}
        return [fast, dict(fast, discretization="bilinear", activation="gelu", warmup_epochs=0)]


def _split_series(frame: pd.DataFrame) -> list:
    """`[(id, frame indexed by time)]`: one entry (id None) for a single
    series; for a MultiIndex, one per instance (id = the outer level's value,
    or a tuple of the outer levels' values), in order of first appearance."""
    if frame.index.nlevels == 1:
        return [(None, frame)]
    outer = list(range(frame.index.nlevels - 1))
    by = outer[0] if len(outer) == 1 else outer
    return [(sid, group.droplevel(outer)) for sid, group in frame.groupby(level=by, sort=False)]


def _timestamps(index: pd.Index) -> pd.Index:
    """Periods become their start times; other indexes are kept."""
    if isinstance(index, pd.PeriodIndex):
        return index.to_timestamp()
    return index


def _with_time_index(frame: pd.DataFrame) -> pd.DataFrame:
    if isinstance(frame.index, pd.PeriodIndex):
        frame = frame.copy()
        frame.index = frame.index.to_timestamp()
    return frame
