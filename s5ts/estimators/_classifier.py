"""S5Classifier: one label per irregular series."""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..data import to_targets
from ._base import S5Estimator, with_shared_parameters
from ._losses import cross_entropy_loss


class S5Classifier(ClassifierMixin, S5Estimator):
    r"""S5 classification of ragged, irregularly sampled series (one label per
    series), with the scikit-learn API.

    Inputs, time handling and parameters are those of `S5Regressor` (no
    `loss`: cross-entropy). Labels may be of any type that `numpy.unique`
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
    def __init__(self, **shared):
        super().__init__(**shared)

    def _loss_fn(self):
        return cross_entropy_loss

    def _metric(self):
        return cross_entropy_loss

    def _encode_targets(self, y, panel, *, first_fit, classes=None):
        targets = to_targets(y, panel, numeric=False, kind="sequence")
        labels = np.asarray(targets.values)
        if labels.ndim != 1:
            raise ValueError(f"S5Classifier needs one label per series, got y of shape {labels.shape}")
        if first_fit:
            known = np.unique(labels) if classes is None else np.unique(np.asarray(classes))
            if len(known) < 2:
                raise ValueError(f"S5Classifier needs at least two classes in y, got {known.tolist()}")
        else:
            known = self.classes_
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

    def _n_outputs(self, classes):
        return len(classes)

    def _make_head(self, n_outputs, key):
        return eqx.nn.Linear(self.d_model, n_outputs, key=key)

    def _fitted_metadata(self):
        return {"classes": self.classes_.tolist()}

    def _target_state_from_metadata(self, metadata):
        return np.asarray(metadata["classes"])

    def partial_fit(self, X, y, classes=None, *, times=None):
        """One epoch over (X, y). The first call needs `classes` (all labels
        that will ever appear), as in scikit-learn."""
        if not hasattr(self, "model_") and classes is None:
            raise ValueError("the first call to partial_fit needs `classes`")
        return self._fit(X, y, times, epochs=1, continue_training=True, partial=True, classes=classes)

    def predict_proba(self, X, *, times=None):
        check_is_fitted(self, "model_")
        _, logits = self._predict_outputs(X, times)
        return np.asarray(jax.nn.softmax(np.stack(logits), axis=-1), dtype=np.float64)

    def predict(self, X, *, times=None):
        return self.classes_[np.argmax(self.predict_proba(X, times=times), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.three_d_array = True
        tags.non_deterministic = False
        return tags
