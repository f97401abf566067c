"""S5TimeSeriesClassifier: `s5ts.S5Classifier` as an sktime classifier."""

from __future__ import annotations

import numpy as np
from sktime.classification.base import BaseClassifier

from ..estimators import S5Classifier
from ._common import FAST_PARAMETERS, PANEL_PARAMETERS, PANEL_TAGS


class S5TimeSeriesClassifier(BaseClassifier):
    r"""S5 classification of irregularly sampled, unequal-length series (sktime API).

    A thin sktime wrapper of `s5ts.S5Classifier` (cross-entropy on one label
    per series). Each series keeps its own time stamps: the gap before each
    observation sets that step's discretisation, so unequal lengths,
    irregular series-specific spacing, several variables and NaN (a variable
    not observed at a time; NaN first met in `predict` raises) need no
    resampling or imputation.

    **Inputs:** any sktime Panel mtype; internally a `pd-multiindex` frame
    (instance, time) whose time level is integer, datetime, timedelta or
    period. `y`: one label per series (any type `numpy.unique` orders).

    **Parameters:** those of `S5TimeSeriesRegressor` without `loss`.

    **Fitted attributes:** `classes_`, `n_classes_` (sktime) and
    `estimator_`, the fitted `S5Classifier`.

    >>> import numpy as np, pandas as pd
    >>> from s5ts.sktime import S5TimeSeriesClassifier
    >>> rng = np.random.default_rng(0)
    >>> frames, y = [], []
    >>> for i in range(12):  # rising or falling series, observed at random integer times
    ...     t = np.sort(rng.choice(100, size=rng.integers(4, 12), replace=False))
    ...     slope = 1.0 if i % 2 else -1.0
    ...     index = pd.MultiIndex.from_product([[i], t], names=["series", "time"])
    ...     frames.append(pd.DataFrame({"x": slope * t / 100}, index=index))
    ...     y.append("up" if slope > 0 else "down")
    >>> X = pd.concat(frames)
    >>> clf = S5TimeSeriesClassifier(n_layers=1, d_model=8, state_size=4, max_epochs=2, random_state=0)
    >>> clf.fit(X, np.array(y)).predict_proba(X).shape
    (12, 2)
    >>> clf.classes_.tolist()
    ['down', 'up']
    """

    _tags = dict(PANEL_TAGS, **{"capability:predict_proba": True})

    @PANEL_PARAMETERS
    def __init__(self, **shared):
        PANEL_PARAMETERS.assign(self, shared)
        super().__init__()

    def _fit(self, X, y):
        """`X`: pd-multiindex panel; `y`: (n,) labels, at least two classes
        (sktime handles the single-class case before calling `_fit`). The
        adapter's parameters are the wrapped `S5Classifier`'s."""
        self.estimator_ = S5Classifier(**self.get_params(deep=False)).fit(X, y)
        return self

    def _predict_proba(self, X) -> np.ndarray:
        """(n, n_classes) probabilities, columns in `self.classes_` order."""
        # sktime's classes_ and S5Classifier's are both np.unique(y): same order.
        return self.estimator_.predict_proba(X)

    def _predict(self, X) -> np.ndarray:
        """(n,) labels."""
        return self.classes_[np.argmax(self._predict_proba(X), axis=1)]

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Two tiny, fast settings: plain S5 and S5-append with last-step pooling."""
        return [
            dict(FAST_PARAMETERS),
            dict(FAST_PARAMETERS, time_handling="append", pooling="last"),
        ]
