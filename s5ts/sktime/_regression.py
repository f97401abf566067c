"""S5TimeSeriesRegressor: `s5ts.S5Regressor` as an sktime regressor."""

from __future__ import annotations

import numpy as np
from sktime.regression.base import BaseRegressor

from ..estimators import S5Regressor
from ._common import FAST_PARAMETERS, PANEL_PARAMETERS, PANEL_TAGS


class S5TimeSeriesRegressor(BaseRegressor):
    r"""S5 regression of irregularly sampled, unequal-length series (sktime API).

    A thin sktime wrapper of `s5ts.S5Regressor`: `fit(X, y)` trains one S5
    network on a panel and `predict(X)` returns one value per series. Each
    series keeps its own time stamps (the gap before each observation sets
    that step's discretisation), so unequal lengths, irregular
    series-specific spacing, several variables and NaN (a variable not
    observed at a time; NaN first met in `predict` raises) need no
    resampling or imputation.

    **Inputs:** any sktime Panel mtype; internally a `pd-multiindex` frame
    (instance, time) whose time level is integer, datetime, timedelta or
    period. `y`: one number per series.

    **Parameters:** those of `s5ts.S5Regressor` (see its docstring) but
    `warm_start` (sktime's `fit` starts afresh), `scan` and how X is read
    (`id_col`, `time_col`, `layout`: sktime brings its own formats).

    **Fitted attributes:** `estimator_`, the fitted `S5Regressor` (its
    `history_`, `model_`, `time_scale_`, ...).

    >>> import numpy as np, pandas as pd
    >>> from s5ts.sktime import S5TimeSeriesRegressor
    >>> rng = np.random.default_rng(0)
    >>> start = pd.Timestamp("2024-01-01")
    >>> frames = []
    >>> for i in range(12):  # 12 series, 5-14 observations at random times
    ...     hours = np.sort(rng.uniform(0, 48, rng.integers(5, 15)))
    ...     index = pd.MultiIndex.from_product(
    ...         [[i], start + pd.to_timedelta(hours, unit="h")], names=["series", "time"]
    ...     )
    ...     frames.append(pd.DataFrame({"x": np.sin(hours / 8)}, index=index))
    >>> X = pd.concat(frames)
    >>> y = X.groupby(level=0)["x"].last().to_numpy()
    >>> reg = S5TimeSeriesRegressor(n_layers=1, d_model=8, state_size=4, max_epochs=2, random_state=0)
    >>> reg.fit(X, y).predict(X).shape
    (12,)
    """

    _tags = dict(PANEL_TAGS)

    @PANEL_PARAMETERS
    def __init__(self, *, loss="mse", **shared):
        PANEL_PARAMETERS.assign(self, shared)
        self.loss = loss
        super().__init__()

    def _fit(self, X, y):
        """`X`: pd-multiindex panel; `y`: (n,) targets in X's instance order.
        The adapter's parameters are the wrapped `S5Regressor`'s."""
        self.estimator_ = S5Regressor(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict(self, X) -> np.ndarray:
        """(n,) predictions, in X's instance order."""
        return np.asarray(self.estimator_.predict(X), dtype=np.float64)

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Two tiny, fast settings: plain S5 and S5-append with a Gaussian head."""
        return [
            dict(FAST_PARAMETERS),
            dict(FAST_PARAMETERS, time_handling="append", pooling="last", loss="gaussian_nll"),
        ]
