"""S5TimeSeriesClassifier: `s5ts.S5Classifier` as an sktime classifier."""

from __future__ import annotations

import numpy as np
from sktime.classification.base import BaseClassifier

from ..estimators import S5Classifier
from ._common import FAST_PARAMETERS, PANEL_TAGS, inner_parameters


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

    def __init__(
        self,
        n_layers=2,
        d_model=32,
        state_size=16,
        blocks=1,
        discretization="zoh",
        bidirectional=False,
        activation="half_glu",
        prenorm=False,
        dt_min=0.001,
        dt_max=0.1,
        dropout=0.0,
        encoder="identity",
        pooling="mean",
        time_handling="gaps",
        first_gap=1.0,
        standardize=True,
        max_epochs=100,
        batch_size=32,
        learning_rate=1e-3,
        ssm_learning_rate=None,
        weight_decay=0.0,
        warmup_epochs=1,
        grad_clip=1.0,
        validation_fraction=0.1,
        n_iter_no_change=10,
        random_state=None,
        verbose=False,
    ):
        self.n_layers = n_layers
        self.d_model = d_model
        self.state_size = state_size
        self.blocks = blocks
        self.discretization = discretization
        self.bidirectional = bidirectional
        self.activation = activation
        self.prenorm = prenorm
        self.dt_min = dt_min
        self.dt_max = dt_max
        self.dropout = dropout
        self.encoder = encoder
        self.pooling = pooling
        self.time_handling = time_handling
        self.first_gap = first_gap
        self.standardize = standardize
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.ssm_learning_rate = ssm_learning_rate
        self.weight_decay = weight_decay
        self.warmup_epochs = warmup_epochs
        self.grad_clip = grad_clip
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        super().__init__()

    def _fit(self, X, y):
        """`X`: pd-multiindex panel; `y`: (n,) labels, at least two classes
        (sktime handles the single-class case before calling `_fit`)."""
        self.estimator_ = S5Classifier(**inner_parameters(self)).fit(X, y)
        return self

    def _predict_proba(self, X) -> np.ndarray:
        """(n, n_classes) probabilities, columns in `self.classes_` order."""
        proba = self.estimator_.predict_proba(X)
        # sktime's classes_ and S5Classifier's are both np.unique(y): same order.
        return np.asarray(proba, dtype=np.float64)

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
