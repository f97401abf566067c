"""What an estimator learns to predict, its task: one small final class
each, built from the estimator's parameters at fit time. `Regression(loss)`
(`S5Regressor`, `CRURegressor`): numbers per series or per observation,
standardised (`TargetScaling`), the loss named `loss`, model selection by
MSE in the targets' units. `Classification(class_weight)` (`S5Classifier`):
one label per series as an index into the sorted classes, cross-entropy,
`class_weight` multiplying each series' weight. What a task learns, the
target state, is a plain value the estimator keeps.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar, final

import jax.numpy as jnp
import numpy as np
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from ..data import RaggedPanel, to_targets
from ..training import SquaredErrorInUnits, cross_entropy_loss, gaussian_nll_loss, mse_loss
from ._scaling import pooled_from_moments, weighted_mean_std

#: `validation_fraction="auto"` for regression: this share of the series
#: held out for early stopping when there are at least
#: `AUTO_VALIDATION_MIN_SERIES` (none below, and none for classification;
#: docs/estimators.md, "Early stopping by the size of the panel").
AUTO_VALIDATION_FRACTION = 0.2
AUTO_VALIDATION_MIN_SERIES = 100

REGRESSION_LOSSES = {"mse": mse_loss, "gaussian_nll": gaussian_nll_loss}


@dataclasses.dataclass(frozen=True)
class TargetScaling:
    """Regression's target state: targets are (y − `mean`) / `std` (k,);
    `is_1d`: y was (n,) / (L_i,); `columns`: y's column names, for pandas
    output."""

    mean: np.ndarray
    std: np.ndarray
    is_1d: bool
    columns: tuple | None = None

    def __post_init__(self):  # a constant target is scaled by 1
        object.__setattr__(self, "std", np.where(self.std > 0, self.std, 1.0))


class AbstractTask(abc.ABC):
    """What a task decides: how targets become the network's, the target
    state, the series' weights, the loss and the validation figure."""

    #: Whether targets may be one per observation (a per-step model).
    takes_per_step: ClassVar[bool]
    #: Whether targets are numbers (`to_targets`' `numeric`).
    numeric: ClassVar[bool]
    #: The validation figure's name in `history_` ("valid_" + this).
    metric_name: ClassVar[str]

    @abc.abstractmethod
    def encode(self, y, panel: RaggedPanel, state=None, *, classes=None, weights=None) -> tuple:
        """(the network's targets, per_step, the target state) of `y` aligned
        with `panel` (`to_targets`): `state` None learns it (series weighted
        by `weights`; `classes`: a first `partial_fit`'s), else encodes with it."""

    @abc.abstractmethod
    def state_from_moments(self, counts, means, stds, weights=None, *, is_1d=True, columns=None):
        """The target state `encode` learns from per-step targets, from each
        series' number of steps (n, 1) and moments of its k targets (n, k),
        weighted by `weights` (n,); `is_1d`, `columns`: how they were given."""

    @abc.abstractmethod
    def n_outputs(self, state) -> int:
        """The network's outputs per series or step."""

    @abc.abstractmethod
    def weights(self, sample_weight, encoded, state) -> np.ndarray | None:
        """Each series' weight in the loss as float32: the checked
        `sample_weight` (or None) times the task's own for the `encoded`
        targets; None when every weight is 1."""

    @abc.abstractmethod
    def loss_fn(self):
        """The training loss (`s5ts.training`'s: weighted sum, sum of weights)."""

    @abc.abstractmethod
    def metric(self, state):
        """The validation figure (lower is better), as `loss_fn`, for the target state."""

    @abc.abstractmethod
    def auto_validation_fraction(self, n_series: int) -> float:
        """The share of `n_series` training series that
        `validation_fraction="auto"` holds out for early stopping."""

    @abc.abstractmethod
    def to_json(self, state) -> dict:
        """The target state as the `"fitted"` entry of a saved file."""

    @abc.abstractmethod
    def from_json(self, metadata: dict):
        """The target state of a saved file's `"fitted"` entry."""


@final
@dataclasses.dataclass(frozen=True)
class Regression(AbstractTask):
    """Regression with the loss named `loss` (see the module docstring)."""

    loss: str = "mse"
    takes_per_step = True
    numeric = True
    metric_name = "mse"

    def encode(self, y, panel, state=None, *, classes=None, weights=None):
        targets = to_targets(y, panel, numeric=True)
        per_step = targets.kind == "per_step"
        items = [v.reshape(len(v), -1) for v in (targets.values if per_step else [targets.values])]
        stacked = np.concatenate(items)
        if state is None:
            rows = np.repeat(weights, [len(v) for v in items]) if per_step and weights is not None else weights
            state = TargetScaling(*weighted_mean_std(stacked, rows), targets.is_1d, targets.columns)
        elif stacked.shape[1] != len(state.mean):
            raise ValueError(
                f"y has {stacked.shape[1]} targets per {'step' if per_step else 'series'}; "
                f"the model has {len(state.mean)}"
            )
        encoded = tuple(((v - state.mean) / state.std).astype(np.float32) for v in items)
        return encoded if per_step else encoded[0], per_step, state

    def state_from_moments(self, counts, means, stds, weights=None, *, is_1d=True, columns=None):
        return TargetScaling(*pooled_from_moments(counts, means, stds, weights), is_1d, columns)

    def n_outputs(self, state):
        return len(state.mean)

    def weights(self, sample_weight, encoded, state):
        return _float32(sample_weight)

    def loss_fn(self):
        return REGRESSION_LOSSES[self.loss]

    def metric(self, state):
        # Model selection compares MSE in the targets' own units.
        return SquaredErrorInUnits(jnp.asarray(state.std, jnp.float32))

    def auto_validation_fraction(self, n_series):
        return AUTO_VALIDATION_FRACTION if n_series >= AUTO_VALIDATION_MIN_SERIES else 0.0

    def to_json(self, state):
        columns = None if state.columns is None else list(state.columns)
        return {"target_mean": state.mean.tolist(), "target_std": state.std.tolist(), "target_1d": state.is_1d,
                "target_columns": columns}

    def from_json(self, metadata):
        columns = metadata.get("target_columns")
        mean, std = np.asarray(metadata["target_mean"]), np.asarray(metadata["target_std"])
        return TargetScaling(mean, std, metadata["target_1d"], None if columns is None else tuple(columns))

    def predictions(self, outputs: list, state: TargetScaling, per_step: bool):
        """The network's `outputs` → (means, stds or None) in the targets'
        units and layout: (n,) / (n, k) arrays, or per step lists of (L_i,)
        / (L_i, k) arrays; stds from a Gaussian head alone."""
        means, stds = [], []
        for item in outputs:
            mean, var = item if isinstance(item, tuple) else (item, None)
            means.append(mean * state.std + state.mean)
            stds.append(None if var is None else np.sqrt(var) * state.std)
        if state.is_1d:
            means, stds = [m[..., 0] for m in means], [None if d is None else d[..., 0] for d in stds]
        stds = None if not stds or stds[0] is None else stds  # (per step without a Gaussian head too)
        if not per_step:
            means, stds = np.stack(means), None if stds is None else np.stack(stds)
        return means, stds


@final
@dataclasses.dataclass(frozen=True)
class Classification(AbstractTask):
    """One label per series, `class_weight` None, `"balanced"` or a dict
    {label: weight} (see the module docstring)."""

    class_weight: str | dict | None = None
    takes_per_step = False
    numeric = False
    metric_name = "loss"

    def encode(self, y, panel, state=None, *, classes=None, weights=None):
        labels = np.asarray(to_targets(y, panel, numeric=False, kind="sequence").values)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = column_or_1d(labels, warn=True)  # warns, as scikit-learn does
        if labels.ndim != 1:
            raise ValueError(f"S5Classifier needs one label per series, got y of shape {labels.shape}")
        if labels.dtype.kind == "f" and not np.isfinite(labels).all():
            sid = panel.ids[int(np.flatnonzero(~np.isfinite(labels))[0])]
            raise ValueError(f"y for series {sid!r} has an infinite label")
        check_classification_targets(labels)  # rejects continuous (float) targets
        if state is None:
            state = np.unique(labels) if classes is None else np.unique(np.asarray(classes))
            if len(state) < 2:
                raise ValueError(
                    f"y has only one class ({state.tolist()[0]!r}); S5Classifier needs at least two classes"
                )
        unseen = np.setdiff1d(labels, state)
        if unseen.size:
            series = [panel.ids[i] for i in np.flatnonzero(np.isin(labels, unseen))[:5]]
            raise ValueError(
                f"y has labels {unseen.tolist()} not among the known classes {state.tolist()} (series {series})"
            )
        return np.searchsorted(state, labels).astype(np.int32), False, state

    def state_from_moments(self, counts, means, stds, weights=None, *, is_1d=True, columns=None):
        raise TypeError("classification takes no per-step targets")

    def n_outputs(self, state):
        return len(state)

    def weights(self, sample_weight, encoded, state):
        if self.class_weight is None:
            return _float32(sample_weight)
        unknown = [k for k in self.class_weight if k not in set(state.tolist())] if isinstance(self.class_weight, dict) else []
        if unknown:
            raise ValueError(f"class_weight names labels {unknown} that are not among the classes {state.tolist()}")
        weights = compute_sample_weight(self.class_weight, state[encoded]) * (1.0 if sample_weight is None else sample_weight)
        if not weights.sum() > 0:
            raise ValueError("the class weights times sample_weight are zero for every series")
        return _float32(weights)

    def loss_fn(self):
        return cross_entropy_loss

    def metric(self, state):
        return cross_entropy_loss

    def auto_validation_fraction(self, n_series):
        return 0.0

    def to_json(self, state):
        return {"classes": state.tolist()}

    def from_json(self, metadata):
        return np.asarray(metadata["classes"])


def _float32(weights):
    return None if weights is None else np.asarray(weights, np.float64).astype(np.float32)


def check_sample_weight(sample_weight, panel: RaggedPanel) -> np.ndarray | None:
    """`sample_weight` for the series of `panel` as (n,) float64 weights ≥ 0
    (a scalar for every series; one per row of a long frame, the same on a
    series' rows), or None; a `ValueError` names the series."""
    if sample_weight is None:
        return None
    given = np.asarray(sample_weight)
    if given.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {given.dtype}")
    given = given.astype(np.float64)
    if given.ndim == 0:
        given = np.full(panel.n_series, float(given))
    if panel.row_series is not None and given.shape == panel.row_series.shape != (panel.n_series,):
        given = panel.rows_to_series(given, "sample_weight")  # one per row of a long frame
    if given.shape != (panel.n_series,):
        raise ValueError(
            f"sample_weight has shape {given.shape}; X has {panel.n_series} series, "
            f"so it needs shape ({panel.n_series},)"
        )
    bad = np.flatnonzero(~np.isfinite(given) | (given < 0))
    if bad.size:
        raise ValueError(
            f"sample_weight for series {panel.ids[int(bad[0])]!r} is {given[bad[0]]}; "
            "weights must be finite and >= 0"
        )
    if not given.sum() > 0:
        raise ValueError("sample_weight: every series has zero weight; at least one must be positive")
    return given
