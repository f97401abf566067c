"""S5Forecaster: sktime forecasting of irregularly sampled series at any
future time; a thin adapter over `s5ts.forecasting.Forecaster`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sktime.datatypes import update_data
from sktime.forecasting.base import BaseForecaster

from ..forecasting import PARAMETERS, Forecaster

_INNER_MTYPES = ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"]
_OWN = ("horizon", "calendar", "n_queries", "window_length", "fallback")


class S5Forecaster(BaseForecaster):
    r"""Forecast irregularly sampled series at arbitrary future times with S5.

    The model is `s5ts.forecasting.Forecaster` (see its docstring and
    docs/forecasting.md): a causal S5 network trained on what a forecast
    asks for — values at leads up to a horizon from origins inside each
    series, the state carried over each lead exactly — with forecasts
    relative to the last value (so trends stay in range), calendar Fourier
    features on datetime indexes (as Prophet), and Gaussian intervals
    calibrated on a held-out tail of each series. One series or, as one
    global model, every series of a panel.

    Horizons can be any absolute future time stamps (irregularly spaced, on
    a `DatetimeIndex` without frequency, a `TimedeltaIndex` or integers) or
    relative Timedeltas, and each is forecast from the exact lead time.
    In-sample times give one-step-ahead forecasts from the history before
    them. A horizon given to `fit` sets the longest lead trained for
    (otherwise the `horizon` parameter, or a quarter of the series' span).
    `predict_var` and `predict_proba` come from the Gaussian head
    (marginal per time); `predict_interval` and `predict_quantiles` are
    its central intervals, each coverage calibrated on its own held-out
    quantile (`Forecaster.predict_interval`).

    `update(y, update_params=False)` runs the new observations through the
    network from the stored state (late observations are merged and the
    series recomputed; a different value at a known time raises) and moves
    the cutoff; `update_params=True` (sktime's default) refits on all data
    seen. A series new to the model starts from the zero state.

    **Horizons:** absolute (`ForecastingHorizon(index, is_relative=False)`,
    or a `pd.DatetimeIndex` / integer index); relative Timedeltas
    (`ForecastingHorizon(pd.to_timedelta([...]), is_relative=True)`, the
    only kind sktime allows for a `TimedeltaIndex`); relative integers
    count time units on an integer index and steps of the frequency on an
    index that has one — on a frequency-less datetime index they have no
    meaning and raise a `ValueError`.

    **Parameters:** those of `s5ts.forecasting.Forecaster` (see its
    docstring): `horizon`, `calendar`, `n_queries`, `window_length`,
    `fallback` (per series, S5's forecast or its average with a simple one,
    chosen on the held-out end), and the S5 architecture and training parameters it shares with
    `S5Regressor` (`validation_fraction`: the held-out tail of each
    series' span).

    **Fitted attributes:** `forecaster_` (the `Forecaster`), and from it
    `network_`, `history_`, `time_scale_`, `fallback_`, `nonnegative_`.

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

    # The forecaster keeps what it needs (the data seen, for a refit in
    # update(update_params=True)); sktime need not store y.
    _config = {"remember_data": False}

    @PARAMETERS
    def __init__(self, *, horizon=None, calendar="auto", n_queries=4, window_length=256, fallback="auto", **shared):
        self.fallback = fallback
        self.horizon = horizon
        self.calendar = calendar
        self.n_queries = n_queries
        self.window_length = window_length
        PARAMETERS.assign(self, shared)
        super().__init__()
        # sktime creates these only when remember_data is on at construction;
        # set_config can switch it on later.
        for name in ("_y", "_X"):
            if not hasattr(self, name):
                setattr(self, name, None)

    # ------------------------------------------------------------------
    # fit and update

    def _fit(self, y, X, fh):
        """`y`: a DataFrame indexed by time, or a (…, instance, time)
        MultiIndex panel; `X`: the same layout, at least at y's times."""
        self._fit_horizon = None if fh is None else self._longest_lead(self._horizon_index(fh))
        self._seen = (y, X)
        self._refit(y, X)
        return self

    def _refit(self, y, X):
        params = {name: getattr(self, name) for name in (*_OWN, *PARAMETERS.defaults)}
        self.forecaster_ = Forecaster(**params).fit(y, X, horizon=self._fit_horizon)
        self.network_ = self.forecaster_.network_
        self.history_ = self.forecaster_.history_
        self.time_scale_ = self.forecaster_.time_scale_
        self.fallback_ = self.forecaster_.fallback_
        self.nonnegative_ = self.forecaster_.nonnegative_

    def _longest_lead(self, when: pd.Index):
        """The longest lead of a horizon after the cutoff, in y's units
        (None when no time of it is after the cutoff)."""
        cutoff = self.cutoff
        if isinstance(when, pd.PeriodIndex):
            when, cutoff = when.to_timestamp(), cutoff.to_timestamp()
        lead = (when - cutoff[0]).max()
        zero = pd.Timedelta(0) if isinstance(lead, pd.Timedelta) else 0
        return lead if lead > zero else None

    def _update(self, y, X=None, update_params=True):
        """Advance each series' state over the new observations; with
        `update_params`, refit on all data seen."""
        self.forecaster_.update(y, X)  # validates y and X against the fitted ones
        seen_y, seen_X = self._seen
        self._seen = (update_data(seen_y, y), seen_X if X is None else update_data(seen_X, X))
        if update_params:
            self._refit(*self._seen)
        return self

    # ------------------------------------------------------------------
    # horizons and forecasts

    def _horizon_index(self, fh) -> pd.Index:
        """The absolute time stamps of `fh`."""
        steps = fh.to_pandas()
        if not fh.is_relative:
            return steps
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
        # sktime's full in-sample horizons include each series' first time,
        # which has no history to forecast from: NaN there (docs/sktime.md).
        mean, var, index = self.forecaster_.predict_distribution(when, X, at_first="nan")
        return mean, var, _with_times(index, when)

    def _columns(self):
        return self.forecaster_._meta["y_columns"]

    def _predict(self, fh, X=None):
        mean, _, index = self._forecast(fh, X)
        return pd.DataFrame(mean, index=index, columns=self._columns())

    def _predict_var(self, fh, X=None, cov=False):
        if cov:
            raise NotImplementedError("S5Forecaster predicts marginal variances only (cov=False)")
        _, var, index = self._forecast(fh, X)
        return pd.DataFrame(var, index=index, columns=self._columns())

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
        columns = self._columns()
        mu = pd.DataFrame(mean, index=index, columns=columns)
        sigma = pd.DataFrame(np.sqrt(var), index=index, columns=columns)
        return Normal(mu=mu, sigma=sigma, index=index, columns=columns)

    def _predict_quantiles(self, fh, X, alpha):
        """Each quantile the end of a central interval calibrated at its own
        coverage (`Forecaster.predict_interval`); `predict_proba` and
        `predict_var` are the Gaussian, calibrated at its widest."""
        when = self._horizon_index(fh)
        values = self.forecaster_.predict_quantiles(when, list(alpha), X, at_first="nan")
        columns = self._get_columns(method="predict_quantiles", alpha=alpha)
        return pd.DataFrame(values.to_numpy(), index=_with_times(values.index, when), columns=columns)

    # ------------------------------------------------------------------

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """A tiny network trained for two epochs without calendar features,
        and the same with another learning rate and schedule. sktime's
        conformance suite fits hundreds of forecasters on series of several
        index kinds and widths; each new input width or length compiles the
        training step again (seconds each). Without calendar features the
        width depends only on the columns of y and X, and parameters that
        are inputs of the compiled programs (not their shapes) let the
        second set reuse the first's compilations. Other architectures and
        the calendar: tests/test_forecasting.py."""
        fast = {"n_layers": 1, "d_model": 4, "state_size": 2, "max_epochs": 2, "calendar": None, "random_state": 0}
        return [fast, dict(fast, learning_rate=1e-2, warmup_epochs=0, max_epochs=3, random_state=1)]


def _with_times(index: pd.Index, when: pd.Index) -> pd.Index:
    """The forecast index, with the requested periods in place of their
    start times where `when` is a `pd.PeriodIndex` (else `index` itself)."""
    if not isinstance(when, pd.PeriodIndex):
        return index
    if index.nlevels == 1:
        return when
    times = when[np.tile(np.arange(len(when)), len(index) // len(when))]
    return pd.MultiIndex.from_arrays([*(index.get_level_values(i) for i in range(index.nlevels - 1)), times], names=index.names)
