"""S5Classifier: one label per irregular series."""

from __future__ import annotations

import equinox as eqx
import numpy as np
from scipy.special import softmax
from sklearn.base import ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..data import is_parquet_source, to_targets
from ..training import cross_entropy_loss
from ._base import S5Estimator, with_shared_parameters


class S5Classifier(ClassifierMixin, S5Estimator):
    r"""S5 classification of ragged, irregularly sampled series (one label per
    series), with the scikit-learn API.

    Inputs, time handling and parameters are those of `S5Regressor` (no
    `loss`: cross-entropy), plus `class_weight`: None, `"balanced"` (each
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

    _per_step_targets = False

    def _task_weights(self, targets, classes):
        if self.class_weight is None:
            return None
        labels = classes[targets]
        if isinstance(self.class_weight, dict):
            unknown = [k for k in self.class_weight if k not in set(classes.tolist())]
            if unknown:
                raise ValueError(f"class_weight names labels {unknown} that are not among the classes {classes.tolist()}")
            return compute_sample_weight(self.class_weight, labels)
        return compute_sample_weight("balanced", labels)

    def _loss_fn(self):
        return cross_entropy_loss

    def _metric(self, classes):
        return cross_entropy_loss

    def _encode_targets(self, y, panel, *, state=None, classes=None, weights=None):
        targets = to_targets(y, panel, numeric=False, kind="sequence")
        labels = np.asarray(targets.values)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = column_or_1d(labels, warn=True)  # warns, as scikit-learn does
        if labels.ndim != 1:
            raise ValueError(f"S5Classifier needs one label per series, got y of shape {labels.shape}")
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            sid = panel.ids[int(np.flatnonzero(~np.isfinite(labels))[0])]
            raise ValueError(f"y for series {sid!r} has an infinite label")
        check_classification_targets(labels)  # rejects continuous (float) targets
        if state is None:
            known = np.unique(labels) if classes is None else np.unique(np.asarray(classes))
            if len(known) < 2:
                raise ValueError(
                    f"y has only one class ({known.tolist()[0]!r}); S5Classifier needs at least two classes"
                )
        else:
            known = state
        unseen = np.setdiff1d(labels, known)
        if unseen.size:
            series = [panel.ids[i] for i in np.flatnonzero(np.isin(labels, unseen))[:5]]
            raise ValueError(
                f"y has labels {unseen.tolist()} not among the known classes {known.tolist()} "
                f"(series {series})"
            )
        encoded = np.searchsorted(known, labels).astype(np.int32)
        return encoded, False, known

    def _set_target_state(self, classes):
        self.classes_ = classes

    def _target_state(self):
        return self.classes_

    def _n_outputs(self, classes):
        return len(classes)

    def _make_head(self, n_outputs, key):
        return eqx.nn.Linear(self.d_model, n_outputs, key=key)

    def _fitted_metadata(self):
        return {"classes": self.classes_.tolist()}

    def _target_state_from_metadata(self, metadata):
        return np.asarray(metadata["classes"])

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
        check_is_fitted(self, "model_")
        panel, logits = self._predict_outputs(X, times)
        proba = _probabilities(logits)
        return self._as_frame(proba, panel, self.classes_) if as_frame or is_parquet_source(X) else proba

    def predict(self, X, *, times=None, as_frame=False):
        """The most probable label of each series, (n,) (with
        `as_frame=True`, a Series indexed by the series ids)."""
        check_is_fitted(self, "model_")
        panel, logits = self._predict_outputs(X, times)
        labels = self._labels(logits)
        return self._as_frame(labels, panel) if as_frame or is_parquet_source(X) else labels

    def _labels(self, logits) -> np.ndarray:
        return self.classes_[np.argmax(_probabilities(logits), axis=1)]

    def score(self, X, y, sample_weight=None, *, times=None):
        """Accuracy; `y` is aligned with X as in `fit`. A Parquet data set
        X is streamed, as in `fit`: `y` (and `sample_weight`) name its
        columns or are pandas Series indexed by id."""
        _, logits, truth, sample_weight = self._scored(X, y, sample_weight, times, numeric=False)
        truth = np.asarray(truth)
        if truth.ndim == 2 and truth.shape[1] == 1:
            truth = truth[:, 0]
        return accuracy_score(truth, self._labels(logits), sample_weight=sample_weight)


def _probabilities(logits) -> np.ndarray:
    """Softmax of the per-series logits, (n, n_classes) float64."""
    return softmax(np.stack(logits).astype(np.float64), axis=1)
