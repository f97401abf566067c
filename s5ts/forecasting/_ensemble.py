r"""`ForecasterEnsemble`: copies of one `Forecaster` that differ only in
their seed, fitted to the same series, their forecasts averaged.

One fit depends on its seed (the network's initial weights, the leads
drawn, the order of the windows), and on a short series or a small panel
that moves a forecast as much as a change of model does. Averaging a few
fits removes much of it, at one fit's time per member
(docs/forecasting.md, "Several seeds").

How the members' forecasts are combined, for $m = 1..M$ members:

- means: $\bar\mu = \frac1M\sum_m \mu_m$;
- variances (`predict_distribution`): those of the equal mixture of the
  members' distributions, $\frac1M\sum_m \sigma^2_m + \frac1M\sum_m
  (\mu_m - \bar\mu)^2$;
- quantiles and intervals: each quantile the mean of the members' own
  (each calibrated on its own held-out tail), as quantile forecasts are
  usually combined; so they are never below zero where the members'
  are not.
"""

from __future__ import annotations

import copy
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from ._forecaster import Forecaster


class ForecasterEnsemble(BaseEstimator):
    """`n_members` copies of `forecaster` (default: `Forecaster()`), each
    with its own `random_state` drawn from `random_state`, fitted to the
    same series; forecasts are their average (see the module docstring).

    `fit`, `predict`, `predict_distribution`, `predict_quantiles`,
    `predict_interval` and `update` take the arguments of `Forecaster`'s.
    A fit costs one `Forecaster` fit per member (they share their compiled
    programs, so the first member pays for compiling).

    **Fitted attributes:** `members_` (the fitted forecasters), `horizon_`
    and `trained_lead_` (as `Forecaster`'s; every member has the same).

    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> hours = np.cumsum(rng.exponential(1.0, 80))
    >>> y = pd.Series(np.sin(hours), index=pd.to_timedelta(hours, unit="h"))
    >>> small = Forecaster(n_layers=1, d_model=8, state_size=4, max_epochs=2)
    >>> ensemble = ForecasterEnsemble(small, n_members=3, random_state=0).fit(y)
    >>> len({member.random_state for member in ensemble.members_})  # three seeds
    3
    >>> ensemble.predict(leads=["30min", "2h"]).shape
    (2, 1)
    """

    _parameter_constraints = {
        "forecaster": [HasMethods(["fit", "predict_distribution", "predict_quantiles", "update"]), None],
        "n_members": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, forecaster=None, *, n_members=3, random_state=None):
        self.forecaster = forecaster
        self.n_members = n_members
        self.random_state = random_state

    def fit(self, y, X=None, *, horizon=None) -> "ForecasterEnsemble":
        """Fit every member to `y` (and `X`, `horizon`, as `Forecaster.fit`).
        The fitted attributes change only once every member is fitted."""
        self._validate_params()
        base = Forecaster() if self.forecaster is None else self.forecaster
        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max, size=self.n_members)
        members = [clone(base).set_params(random_state=int(seed)).fit(y, X, horizon=horizon) for seed in seeds]
        self.members_ = members
        self.horizon_ = members[0].horizon_
        self.trained_lead_ = members[0].trained_lead_
        return self

    def predict_distribution(self, times=None, X=None, *, leads=None, at_first: str = "raise"):
        """`(mean (n, d), var (n, d), index)` as `Forecaster.predict_distribution`:
        the mixture of the members' Gaussians (its mean and variance)."""
        parts = [m.predict_distribution(times, X, leads=leads, at_first=at_first) for m in self._members()]
        means = np.stack([p[0] for p in parts])
        variances = np.stack([p[1] for p in parts])
        mean = means.mean(axis=0)
        return mean, variances.mean(axis=0) + ((means - mean) ** 2).mean(axis=0), parts[0][2]

    def predict(self, times=None, X=None, *, leads=None) -> pd.DataFrame:
        """The members' mean forecasts, averaged (rows and columns as `Forecaster.predict`)."""
        return _average([m.predict(times, X, leads=leads) for m in self._members()])

    def predict_quantiles(self, times=None, alpha=(0.1, 0.9), X=None, *, leads=None,
                          at_first: str = "raise") -> pd.DataFrame:
        """The members' quantiles `alpha`, each averaged (as `Forecaster.predict_quantiles`)."""
        return _average([m.predict_quantiles(times, alpha, X, leads=leads, at_first=at_first) for m in self._members()])

    def predict_interval(self, times=None, coverage=0.9, X=None, *, leads=None,
                         at_first: str = "raise") -> pd.DataFrame:
        """The members' interval ends, each averaged (as `Forecaster.predict_interval`)."""
        return _average([m.predict_interval(times, coverage, X, leads=leads, at_first=at_first)
                         for m in self._members()])

    def update(self, y, X=None) -> "ForecasterEnsemble":
        """`Forecaster.update` on every member; when one raises, none is updated."""
        self.members_ = [copy.copy(m).update(y, X) for m in self._members()]
        return self

    def _members(self) -> list:
        check_is_fitted(self, "members_")
        return self.members_


def _average(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The element-wise mean of frames of one index and columns."""
    values = np.mean([f.to_numpy(dtype=np.float64) for f in frames], axis=0)
    return pd.DataFrame(values, index=frames[0].index, columns=frames[0].columns)
