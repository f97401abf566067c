"""S5Classifier: one label per irregular series."""

from __future__ import annotations

import numpy as np
from scipy.special import softmax
from sklearn.base import ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import StrOptions

from ..data import is_parquet_source
from ._base import S5Estimator, with_shared_parameters
from ._task import Classification


class S5Classifier(ClassifierMixin, S5Estimator):
    r"""S5 classification of ragged, irregularly sampled series (one label per
    series), with the scikit-learn API.

    Inputs, time handling and parameters are those of `S5Regressor` (no
    `loss`: cross-entropy; `validation_fraction="auto"` holds out no
    series, the training loss decides), plus `class_weight`: None, `"balanced"` (each
    class weighs `n / (n_classes * count)`, as in scikit-learn) or a dict
    {label: weight}; it multiplies `sample_weight` in the loss and in the
    validation loss (`history_`'s `valid_loss`). Labels may be of any type that `numpy.unique`
    orders (ints, strings, …); `classes_` holds them sorted.

    **Outputs:** `predict(X)` (n,) labels; `predict_proba(X)` (n, n_classes).

    >>> import numpy as np
    >>> from s5ts import S5Classifier
    >>> rng = np.random.default_rng(0)
    >>> X = [rng.normal(size=(int(n), 2)) for n in rng.integers(3, 9, 12)]
    >>> y = ["up" if x[:, 0].mean() > 0 else "down" for x in X]
    >>> clf = S5Classifier(d_model=8, state_size=4, max_epochs=2, random_state=0).fit(X, y)
    >>> clf.predict_proba(X).shape, clf.classes_.tolist()
    ((12, 2), ['down', 'up'])
    """

    @with_shared_parameters
    def __init__(self, *, class_weight=None, **shared):
        super().__init__(**shared)
        self.class_weight = class_weight

    _parameter_constraints = {**S5Estimator._parameter_constraints, "class_weight": [StrOptions({"balanced"}), dict, None]}

    def _task(self) -> Classification:
        return Classification(self.class_weight)

    @property
    def classes_(self) -> np.ndarray:
        """The labels, sorted (the fitted target state)."""
        return self._target_state

    def partial_fit(self, X, y, classes=None, sample_weight=None, *, times=None):
        """One epoch over (X, y), continuing from the current model. The
        first call needs `classes` (all labels that will ever appear), as in
        scikit-learn; later calls may omit it or must repeat it.

        **Returns:** `self`.
        """
        if not hasattr(self, "model_"):
            if classes is None:
                raise ValueError("the first call to partial_fit needs `classes` (every label that can appear)")
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(
                f"classes={np.unique(np.asarray(classes)).tolist()} differs from the classes of the "
                f"fitted model, {self.classes_.tolist()}"
            )
        return self._fit(X, y, times, sample_weight=sample_weight, partial=True, classes=classes)

    def predict_proba(self, X, *, times=None, as_frame=False):
        """Class probabilities, (n, n_classes), columns in the order of
        `classes_` (with `as_frame=True`, a DataFrame indexed by the series
        ids with the classes as columns)."""
        panel, logits, _, _ = self._predicted(X, times)
        proba = _probabilities(logits)
        return self._as_frame(proba, panel, self.classes_) if as_frame or is_parquet_source(X) else proba

    def predict(self, X, *, times=None, as_frame=False):
        """The most probable label of each series, (n,) (with
        `as_frame=True`, a Series indexed by the series ids)."""
        panel, logits, _, _ = self._predicted(X, times)
        labels = self._labels(logits)
        return self._as_frame(labels, panel) if as_frame or is_parquet_source(X) else labels

    def _labels(self, logits) -> np.ndarray:
        return self.classes_[np.argmax(_probabilities(logits), axis=1)]

    def score(self, X, y, sample_weight=None, *, times=None):
        """Accuracy; `y` is aligned with X as in `fit`. A Parquet data set
        X is streamed, as in `fit`: `y` (and `sample_weight`) name its
        columns or are pandas Series indexed by id."""
        _, logits, truth, sample_weight = self._predicted(X, times, y, sample_weight, numeric=False)
        truth = np.asarray(truth)
        if truth.ndim == 2 and truth.shape[1] == 1:
            truth = truth[:, 0]
        return accuracy_score(truth, self._labels(logits), sample_weight=sample_weight)


def _probabilities(logits) -> np.ndarray:
    """Softmax of the per-series logits, (n, n_classes) float64."""
    return softmax(np.stack(logits).astype(np.float64), axis=1)
