"""What S5Regressor and S5Classifier share: validation, preprocessing,
model construction, the fit transaction, prediction and persistence."""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
import math

import equinox as eqx
import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..data import RaggedPanel, check_columns, gaps_from_times, time_scale_from, to_panel
from ..nn import ACTIVATIONS, DISCRETISATIONS, ENCODERS, POOLINGS, S5Block, SequenceNetwork, make_encoder
from ._training import (
    Sequences,
    TrainingConfig,
    TrainingState,
    init_optimizer_state,
    predict_outputs,
    train,
)

TIME_HANDLING = ("gaps", "drop", "append")
_FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    """Everything learned from the training inputs before the network."""

    columns: tuple
    feature_mean: np.ndarray
    feature_std: np.ndarray
    missing_indicator: bool
    time_scale: float
    time_kind: str

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["feature_mean"] = self.feature_mean.tolist()
        out["feature_std"] = self.feature_std.tolist()
        out["columns"] = list(self.columns)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Preprocessing":
        data = dict(data)
        data["columns"] = tuple(data["columns"])
        data["feature_mean"] = np.asarray(data["feature_mean"], np.float64)
        data["feature_std"] = np.asarray(data["feature_std"], np.float64)
        return cls(**data)


def learn_preprocessing(panel: RaggedPanel, standardize: bool) -> Preprocessing:
    stacked = np.concatenate(panel.values, axis=0)
    if standardize:
        mean = np.nanmean(stacked, axis=0)
        std = np.nanstd(stacked, axis=0)
        std = np.where(std > 0, std, 1.0)
    else:
        mean = np.zeros(panel.n_features)
        std = np.ones(panel.n_features)
    return Preprocessing(
        columns=tuple(panel.columns),
        feature_mean=mean,
        feature_std=std,
        missing_indicator=bool(np.isnan(stacked).any()),
        time_scale=float(time_scale_from(panel)),
        time_kind=panel.time_kind,
    )


def _check_params(estimator) -> None:
    """Validate constructor arguments (sklearn style: in fit, not __init__)."""
    choices = {
        "discretization": tuple(DISCRETISATIONS),
        "activation": ACTIVATIONS,
        "encoder": ENCODERS,
        "pooling": tuple(p for p in POOLINGS if p != "none"),
        "time_handling": TIME_HANDLING,
    }
    for name, allowed in choices.items():
        value = getattr(estimator, name)
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    for name in ("n_layers", "d_model", "state_size", "blocks", "max_epochs", "batch_size"):
        value = getattr(estimator, name)
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    for name in ("learning_rate", "dt_min", "dt_max", "first_gap"):
        value = getattr(estimator, name)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    if estimator.ssm_learning_rate is not None and not estimator.ssm_learning_rate > 0:
        raise ValueError(f"ssm_learning_rate must be positive or None, got {estimator.ssm_learning_rate!r}")
    if not 0.0 <= estimator.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {estimator.dropout!r}")
    if not 0.0 <= estimator.validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {estimator.validation_fraction!r}")
    if estimator.weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {estimator.weight_decay!r}")


class S5Estimator(BaseEstimator):
    """Base class: see `S5Regressor` for the parameters."""

    def __init__(
        self,
        *,
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
        scan="auto",
        random_state=None,
        verbose=False,
        warm_start=False,
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
        self.scan = scan
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    # ----- task-specific hooks (subclasses) -----
    _loss_name: str
    _metric_fn = None

    def _encode_targets(self, y, panel, *, first_fit: bool, classes=None):
        raise NotImplementedError

    def _make_head(self, n_outputs: int, key):
        raise NotImplementedError

    def _n_outputs(self, target_state) -> int:
        raise NotImplementedError

    def _fitted_metadata(self) -> dict:
        raise NotImplementedError

    # ----- preprocessing -----
    def _panel(self, X, times, *, fitted: bool) -> RaggedPanel:
        panel = to_panel(X, times=times)
        if fitted:
            panel = check_columns(panel, self.preprocessing_.columns)
            if panel.time_kind != self.preprocessing_.time_kind:
                raise TypeError(
                    f"the model was fitted on {self.preprocessing_.time_kind} times, "
                    f"but X has {panel.time_kind} times"
                )
        return panel

    def _sequences(self, panel: RaggedPanel, prep: Preprocessing, targets=None, per_step=False) -> Sequences:
        inputs, gaps, extra = [], [], []
        for i, (values, times) in enumerate(zip(panel.values, panel.times)):
            observed = ~np.isnan(values)
            scaled = np.where(observed, (values - prep.feature_mean) / prep.feature_std, 0.0)
            if prep.missing_indicator:
                scaled = np.concatenate([scaled, observed.astype(np.float64)], axis=1)
            elif not observed.all():
                column = panel.columns[int(np.flatnonzero(~observed.all(axis=0))[0])]
                if self.encoder != "identity":
                    raise ValueError(
                        f"series {panel.ids[i]!r}, column {column!r}: NaN in X, but the "
                        f"{self.encoder!r} encoder cannot take missing values"
                    )
            real_gaps = gaps_from_times(times, prep.time_scale, self.first_gap)
            step_gaps = real_gaps if self.time_handling == "gaps" else np.ones_like(real_gaps)
            inputs.append(scaled.astype(np.float32))
            gaps.append(step_gaps.astype(np.float32))
            extra.append(real_gaps[:, None].astype(np.float32))
        return Sequences(
            inputs=tuple(inputs),
            gaps=tuple(gaps),
            extra=tuple(extra) if self.time_handling == "append" else None,
            targets=targets,
            per_step=per_step,
        )

    # ----- model -----
    def _build_network(self, n_inputs: int, per_step: bool, target_state, key) -> SequenceNetwork:
        if self.encoder == "pendulum_cnn" and n_inputs != 576:
            raise ValueError(
                f"encoder='pendulum_cnn' needs 576 features per step (24x24 pixels), got {n_inputs}"
            )
        k_enc, k_proj, k_head, *k_blocks = jax.random.split(key, 3 + self.n_layers)
        blocks = [
            S5Block(
                self.d_model,
                self.state_size,
                self.blocks,
                self.discretization,
                self.bidirectional,
                self.scan,
                self.dt_min,
                self.dt_max,
                self.activation,
                self.dropout,
                self.prenorm,
                key=k,
            )
            for k in k_blocks
        ]
        return SequenceNetwork(
            make_encoder(self.encoder, n_inputs, key=k_enc),
            blocks,
            self._make_head(self._n_outputs(target_state), k_head),
            n_extra=1 if self.time_handling == "append" else 0,
            pooling="none" if per_step else self.pooling,
            key=k_proj,
        )

    def _config(self) -> TrainingConfig:
        return TrainingConfig(
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            ssm_learning_rate=self.ssm_learning_rate,
            weight_decay=self.weight_decay,
            warmup_epochs=self.warmup_epochs,
            grad_clip=self.grad_clip,
            n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose,
        )

    # ----- fitting -----
    def _fit(self, X, y, times, *, epochs=None, continue_training=False, partial=False, classes=None):
        _check_params(self)
        fitted = continue_training and hasattr(self, "model_")
        seed = check_random_state(self.random_state).randint(2**31 - 1) if not fitted else None
        panel = self._panel(X, times, fitted=fitted)
        # Everything is computed into locals and assigned at the end: a fit
        # that fails leaves the estimator exactly as it was.
        prep = self.preprocessing_ if fitted else learn_preprocessing(panel, self.standardize)
        targets, per_step, target_state = self._encode_targets(y, panel, first_fit=not fitted, classes=classes)
        data = self._sequences(panel, prep, targets, per_step)
        n_inputs = data.inputs[0].shape[1]
        if fitted:
            rng = self._rng_
            training_state = self._training_state_
        else:
            rng = np.random.default_rng(seed)
            model = self._build_network(n_inputs, per_step, target_state, jax.random.key(seed))
            training_state = TrainingState(model=model, opt_state=init_optimizer_state(model, self._config()))
        train_data, valid_data = self._split(data, rng, partial)
        key = jax.random.key(int(rng.integers(2**31 - 1)))
        config = self._config()
        try:
            result = train(
                training_state,
                train_data,
                valid_data,
                self._loss_fn(),
                self._metric(),
                config,
                rng=rng,
                key=key,
                epochs=epochs,
                total_epochs=config.max_epochs if not partial else max(config.max_epochs, 1),
            )
        except FloatingPointError as error:
            if getattr(error, "last_good", None) is not None and not fitted:
                # Keep the last good parameters, as a consistent fitted model.
                good = TrainingState(model=error.last_good, opt_state=training_state.opt_state)
                self._commit(prep, per_step, target_state, good, error.last_good, rng, n_inputs)
            raise
        self._commit(prep, per_step, target_state, result.state, result.model, rng, n_inputs)
        self.best_epoch_ = result.best_epoch
        self.interrupted_ = result.interrupted
        return self

    def _split(self, data: Sequences, rng, partial):
        n = len(data)
        n_valid = int(math.floor(self.validation_fraction * n))
        if partial or self.validation_fraction == 0 or n_valid < 1 or n - n_valid < 1:
            return data, None
        order = rng.permutation(n)
        return data.subset(np.sort(order[n_valid:])), data.subset(np.sort(order[:n_valid]))

    def _commit(self, prep, per_step, target_state, training_state, model, rng, n_inputs):
        self.preprocessing_ = prep
        self.per_step_ = per_step
        self._set_target_state(target_state)
        self._training_state_ = dataclasses.replace(training_state, model=training_state.model)
        self.model_ = model
        self._rng_ = rng
        self.n_model_inputs_ = n_inputs
        self.history_ = list(training_state.history)
        self.n_features_in_ = len(prep.columns)
        self.time_scale_ = prep.time_scale
        if all(isinstance(c, str) for c in prep.columns) and not all(
            c == str(i) for i, c in enumerate(prep.columns)
        ):
            self.feature_names_in_ = np.asarray(prep.columns, dtype=object)

    def _set_target_state(self, target_state):
        raise NotImplementedError

    def fit(self, X, y, *, times=None):
        """Fit on ragged, timestamped series.

        **Arguments:**

        - `X`: series in any format of `s5ts.data.to_panel` (a list of
          DataFrames indexed by time, a (series, time) MultiIndex frame, a long
          frame, a 3-D array (n, L, d) with `times`, a 2-D array (n, L)).
        - `y`: one target per series, or one per observation (per-step).
        - `times`: observation times (n, L) for array `X`.

        With `warm_start=True` a fitted estimator continues training.
        """
        return self._fit(X, y, times, continue_training=self.warm_start)

    def _predict_outputs(self, X, times):
        check_is_fitted(self, "model_")
        panel = self._panel(X, times, fitted=True)
        data = self._sequences(panel, self.preprocessing_)
        data = dataclasses.replace(data, per_step=self.per_step_)
        return panel, predict_outputs(self.model_, data, min(self.batch_size, len(data)))

    # ----- persistence -----
    def __getstate__(self):
        # Device arrays become numpy, so a model pickled on a GPU unpickles on
        # a CPU; __setstate__ puts the network's leaves back on the device.
        state = self.__dict__.copy()
        for name in _DEVICE_ATTRIBUTES:
            if name in state:
                state[name] = jax.tree.map(_to_numpy, state[name])
        return state

    def __setstate__(self, state):
        for name in _DEVICE_ATTRIBUTES:
            if name in state:
                state[name] = jax.tree.map(_to_device, state[name])
        self.__dict__.update(state)

    def save(self, path) -> None:
        """Write hyper-parameters (JSON) and weights
        (`equinox.tree_serialise_leaves`) to one file. Arrays load on any
        device: a model trained on a GPU loads on a CPU."""
        check_is_fitted(self, "model_")
        header = {
            "format": _FORMAT_VERSION,
            "class": type(self).__name__,
            "params": self.get_params(),
            "preprocessing": self.preprocessing_.to_json(),
            "per_step": self.per_step_,
            "n_model_inputs": self.n_model_inputs_,
            "history": self.history_,
            "fitted": self._fitted_metadata(),
        }
        buffer = io.BytesIO()
        eqx.tree_serialise_leaves(buffer, self.model_)
        with open(path, "wb") as f:
            f.write(json.dumps(header, default=_json_default).encode() + b"\n")
            f.write(buffer.getvalue())

    @classmethod
    def load(cls, path):
        """Read a file written by `save`."""
        with open(path, "rb") as f:
            header = json.loads(f.readline())
            weights = f.read()
        if header.get("class") != cls.__name__:
            raise ValueError(f"{path} holds a {header.get('class')}, not a {cls.__name__}")
        estimator = cls(**header["params"])
        target_state = estimator._target_state_from_metadata(header["fitted"])
        skeleton = estimator._build_network(
            header["n_model_inputs"], header["per_step"], target_state, jax.random.key(0)
        )
        model = eqx.tree_deserialise_leaves(io.BytesIO(weights), skeleton)
        prep = Preprocessing.from_json(header["preprocessing"])
        state = TrainingState(
            model=model, opt_state=init_optimizer_state(model, estimator._config()), history=header["history"]
        )
        estimator._commit(
            prep, header["per_step"], target_state, state, model, np.random.default_rng(0), header["n_model_inputs"]
        )
        return estimator

    def _target_state_from_metadata(self, metadata):
        raise NotImplementedError

    @property
    def n_parameters_(self) -> int:
        """Number of trainable scalars in the network."""
        check_is_fitted(self, "model_")
        leaves = jax.tree.leaves(eqx.filter(self.model_, eqx.is_inexact_array))
        return int(sum(leaf.size for leaf in leaves))


_DEVICE_ATTRIBUTES = ("model_", "_training_state_")


def _to_numpy(leaf):
    return np.asarray(leaf) if isinstance(leaf, jax.Array) else leaf


def _to_device(leaf):
    return jax.numpy.asarray(leaf) if isinstance(leaf, np.ndarray) else leaf


def with_shared_parameters(init):
    """Give a subclass `__init__(self, *, own..., **shared)` the full explicit
    signature that scikit-learn's `get_params` reads (own parameters first,
    then every `S5Estimator` parameter), without repeating the list."""
    own = inspect.signature(init)
    base = inspect.signature(S5Estimator.__init__)
    parameters = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
    parameters += [p for name, p in base.parameters.items() if name != "self"]
    init.__signature__ = own.replace(parameters=parameters)
    return init


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in JSON; use pickle/joblib instead")
