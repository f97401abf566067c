"""What S5Regressor and S5Classifier share: validation, preprocessing,
model construction, the fit transaction, prediction and persistence."""

from __future__ import annotations

import abc
import copy
import dataclasses
import io
import json
from numbers import Integral

import equinox as eqx
import jax
import numpy as np
import pandas as pd
import scipy.sparse
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..data import (
    RaggedPanel,
    is_parquet_source,
    to_panel,
    to_targets,
)
from ..nn import (
    AbstractStatefulSequenceModel,
    SequenceNetwork,
    block_settings,
    make_blocks,
    make_encoder,
    n_summaries,
    pooled_width,
)
from ..training import (
    AbstractBackprop,
    NetworkSpec,
    NonFiniteLossError,
    Sequences,
    StreamedSequences,
    Thinning,
    TrainingConfig,
    TrainingResult,
    TrainingState,
    WholeSequences,
    agreed_seed,
    check_fingerprint,
    check_same_data,
    data_digest,
    enable_compilation_cache,
    is_distributed,
    is_primary,
    predict_outputs,
    saved_fingerprint,
    split_validation,
    train,
)
from . import _streaming
from ._parameters import (
    ALL_PARAMETERS,
    NETWORK_PARAMETERS,
    RUN_PARAMETERS,
    S5_CONSTRAINTS,
    TRAINING_CONSTRAINTS,
)
from ._preprocessing import Preprocessing
from ._source import InMemory, training_data
from ._task import AbstractTask
from ._time_handling import time_handling_for

_FORMAT_VERSION = 1

#: `_predicted`'s `y` for `predict` (None is a `y` that `score` rejects).
_PREDICT = object()

_AXES = {"nld": "(n series, L time steps, d features)", "ndl": "(n series, d features, L time steps)"}

def _no_times(times) -> None:
    """A Parquet X carries its times (`time_col`): `times=` beside it is an error."""
    if times is not None:
        raise ValueError("with a Parquet X, times= is not supported (times come from time_col)")


class SequenceEstimator(BaseEstimator, metaclass=abc.ABCMeta):
    """What every s5ts estimator of ragged series shares: the inputs and
    their preprocessing, the fit transaction over the shared training loop
    (`s5ts.training`), prediction, tags and persistence.

    Abstract. A final class adds a network (`build_network`,
    `_architecture_names`, its own `_parameter_constraints`) and its task
    (`_task`: `Regression` or `Classification`, built from its parameters),
    whose target state the fit keeps in `_target_state`.
    """

    _parameter_constraints: dict = TRAINING_CONSTRAINTS

    #: Parameters that define the network or the inputs it was trained on.
    _architecture_names: tuple = ()

    def _check_relations(self) -> None:
        """Checks between parameters that single constraints cannot express."""

    @property
    def _time_handling(self) -> str:
        """How times become the network's gaps (see S5's `time_handling`)."""
        return "gaps"

    @property
    def _hold_ends(self):
        """`hold_ends` as the preprocessing reads it (True, False or "auto")."""
        return self.hold_ends

    @abc.abstractmethod
    def build_network(self, n_inputs: int, per_step: bool, n_outputs: int, key):
        """The network, from this estimator's parameters alone (it is built
        on a copy, inside one compiled program: `s5ts.training.NetworkSpec`)."""

    @abc.abstractmethod
    def _task(self) -> AbstractTask:
        """The task (`_task`: targets, loss, metric), from this estimator's parameters."""

    def _network_spec(self, n_inputs: int, per_step: bool, target_state) -> NetworkSpec:
        return NetworkSpec.of(self, int(n_inputs), bool(per_step), int(self._task().n_outputs(target_state)))

    def _architecture_params(self) -> dict:
        return {name: getattr(self, name) for name in self._architecture_names}

    # ----- preprocessing -----
    def _panel(self, X, times, prep: Preprocessing | None = None, what: str = "X") -> RaggedPanel:
        """`X` (and `times`) as a `RaggedPanel`, read with `id_col`,
        `time_col` and `layout`; with `prep`, checked against what fit saw
        (`Preprocessing.check`: features, kind of time, time zone, given
        times; the columns in fit order), after the one check that needs
        `X` itself: a 3-D array read with the wrong `layout`."""
        if scipy.sparse.issparse(X):
            raise TypeError(
                f"{type(self).__name__} does not accept sparse input ({type(X).__name__}); "
                "pass a dense array or a list of DataFrames"
            )
        if not isinstance(X, (list, tuple, np.ndarray, pd.Series, pd.DataFrame, RaggedPanel)) and hasattr(
            X, "__array__"
        ):
            X = np.asarray(X)  # array-likes (xarray, torch, ...) are arrays
        panel = to_panel(X, times=times, id_col=self.id_col, time_col=self.time_col, layout=self.layout)
        if prep is None:
            return panel
        expected = len(prep.columns)
        if isinstance(X, np.ndarray) and X.ndim == 3 and panel.n_features != expected:
            other = "ndl" if self.layout == "nld" else "nld"
            hint = f"; if its axes are {_AXES[other]}, set layout={other!r}" if expected in X.shape[1:] else ""
            raise ValueError(
                f"{what} of shape {X.shape} is read as {_AXES[self.layout]} (layout={self.layout!r}), "
                f"so it has {panel.n_features} features, but the model was fitted on {expected}{hint}"
            )
        return prep.check(panel, what)

    def _config(self, lengths: np.ndarray | None = None) -> TrainingConfig:
        """The training settings; `lengths`, the steps of the series a fit
        trains on, for settings that depend on them (None outside a fit)."""
        return TrainingConfig.from_estimator(self)

    # ----- fitting -----
    def _fit(self, X, y, times, *, sample_weight=None, partial=False, classes=None, validation_data=None):
        """The fit transaction. Everything is computed into locals and
        assigned in `_commit` at the end, so a fit that fails (bad input,
        Ctrl-C before the first epoch) leaves the estimator exactly as it was.
        A non-finite loss commits the best model of the epochs that finished
        (if any) and raises."""
        self._validate_params()  # sklearn style: in fit, not __init__
        self._check_relations()
        enable_compilation_cache()
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        fitted = (partial or self.warm_start) and hasattr(self, "model_")
        if fitted:
            changed = {k: v for k, v in self._architecture_params().items() if self._architecture_[k] != v}
            if changed:
                name, value = next(iter(changed.items()))
                raise ValueError(
                    f"cannot continue training: {name} is {value!r} but the fitted network has "
                    f"{self._architecture_[name]!r}; fit with warm_start=False for a new network"
                )
        task = self._task()
        prep, per_step, target_state, data, n_inputs = self._training_data(X, y, times, sample_weight, fitted, classes)
        given_valid = self._validation_sequences(validation_data, prep, task, target_state, per_step)
        if is_distributed():
            # In memory every process holds all the data; streamed, each
            # reads its own files of one data set (checked by `_streaming`).
            check_same_data(data_digest(data if isinstance(data, Sequences) else None, given_valid))
        config = self._config(data.lengths)
        fingerprint = None
        if config.checkpoint_dir is not None:
            if partial or fitted:
                raise ValueError(
                    f"checkpoint_dir resumes an interrupted fit from its start; it cannot continue "
                    f"{'partial_fit' if partial else 'a warm start of a fitted estimator'}: set "
                    "checkpoint_dir=None (or warm_start=False for a new fit that checkpoints)"
                )
            seed, fingerprint = self._fingerprint(data, given_valid)
        if fitted:
            # A copy: a failed call must not advance the fitted estimator's generator.
            rng = copy.deepcopy(self._rng_)
            training_state = self._training_state_
        else:
            if fingerprint is None:
                seed = agreed_seed(check_random_state(self.random_state).randint(2**31 - 1))
            rng = np.random.default_rng(seed)
            spec = self._network_spec(n_inputs, per_step, target_state)
            training_state = config.initial_state(spec, jax.random.key(seed))
        if given_valid is not None or partial:
            train_data, valid_data = data, given_valid
        else:
            fraction = self.validation_fraction
            if fraction == "auto":
                fraction = task.auto_validation_fraction(len(data))
            train_data, valid_data = split_validation(data, fraction, rng)
        key = jax.random.key(int(rng.integers(2**31 - 1)))
        try:
            result = train(
                training_state,
                train_data,
                valid_data,
                task.loss_fn(),
                task.metric(target_state),
                config,
                rng=rng,
                key=key,
                epochs=1 if partial else config.max_epochs,
                schedule="constant" if partial else "cosine",
                metric_name=task.metric_name,
                fingerprint=fingerprint,
            )
        except NonFiniteLossError as error:
            if error.result is None:
                raise FloatingPointError(f"{error} No epoch finished: the estimator is unchanged.") from error
            self._commit(prep, per_step, target_state, error.result, rng, n_inputs, config)
            raise FloatingPointError(
                f"{error} The estimator keeps the best parameters of the epochs that finished "
                f"(epoch {error.result.best_epoch})."
            ) from error
        self._commit(prep, per_step, target_state, result, rng, n_inputs, config)
        return self

    def _training_data(self, X, y, times, sample_weight, fitted: bool, classes=None):
        """`_source.training_data` of `X` in memory (one chunk) or of the
        Parquet data set `X`, streamed; a `fitted` estimator keeps its own."""
        task = self._task()
        if is_parquet_source(X):  # streamed: `_streaming`
            _no_times(times)
            source = _streaming.ParquetSource(self, task, X, y, sample_weight)
        else:
            source = InMemory(task, self._panel(X, times, self.preprocessing_ if fitted else None), y, sample_weight)
        settings = dict(
            standardize=self.standardize, time_handling=self._time_handling, first_gap=self.first_gap,
            encoder=self.encoder, hold_ends=self._hold_ends,
        )
        kept = (self.preprocessing_, self.per_step_, self._target_state) if fitted else None
        return training_data(source, task, settings, fitted=kept, classes=classes)

    def _fingerprint(self, data: Sequences | StreamedSequences, given_valid: Sequences | None) -> tuple[int, dict]:
        """(seed, fingerprint) of a fit with `checkpoint_dir`: the class, the
        parameters that change what a fit computes, the number of series, a
        digest of the model-ready training and validation data, and the seed.
        When the directory holds a checkpoint and `random_state` is not an
        int, the seed is the checkpoint's (a restarted fit must split and
        draw as the first did); a checkpoint of another training raises."""
        saved = saved_fingerprint(self.checkpoint_dir)
        if saved is not None and not isinstance(self.random_state, Integral):
            seed = int(saved["seed"])
        else:
            seed = agreed_seed(check_random_state(self.random_state).randint(2**31 - 1))
        fingerprint = {
            "class": type(self).__name__,
            "params": {k: repr(v) for k, v in self.get_params(deep=False).items() if k not in RUN_PARAMETERS},
            "n_series": len(data),
            "data": data_digest(data, given_valid),
            "seed": seed,
        }
        if saved is not None:
            check_fingerprint(saved, fingerprint, self.checkpoint_dir)
        return seed, fingerprint

    def _validation_sequences(self, validation_data, prep, task: AbstractTask, target_state, per_step):
        """Model-ready sequences of a user-given validation set (X, y) or
        (X, y, times), checked as `predict` checks its X."""
        if validation_data is None:
            return None
        if not isinstance(validation_data, tuple) or len(validation_data) not in (2, 3):
            raise TypeError("validation_data must be a tuple (X, y) or (X, y, times)")
        X_valid, y_valid, *rest = validation_data
        panel = self._panel(X_valid, rest[0] if rest else None, prep, "validation_data")
        targets, valid_per_step, _ = task.encode(y_valid, panel, target_state)
        if valid_per_step != per_step:
            raise ValueError("validation_data's y must have the same layout (per series / per step) as y")
        return prep.transform(panel, targets, per_step, task.weights(None, targets, target_state))

    def _commit(self, prep, per_step, target_state, result: TrainingResult, rng, n_inputs, config: TrainingConfig):
        """Assign every fitted attribute (only ever assigned, never deleted);
        `config`, the settings the fit trained with."""
        self.preprocessing_ = prep
        self.per_step_ = per_step
        self._target_state = target_state
        self._training_state_ = result.state
        self.model_ = result.model
        self._rng_ = rng
        self._architecture_ = self._architecture_params()
        # how the fit thinned its series, which `predict` follows (`forward_batches`)
        self._thinning_ = config.thinning
        self.time_warp_ = float(config.time_warp)
        self.n_model_inputs_ = n_inputs
        self.history_ = list(result.state.history)
        self.best_epoch_ = result.best_epoch
        self.interrupted_ = result.interrupted
        self.n_features_in_ = len(prep.columns)
        self.feature_names_in_ = np.asarray(prep.columns, dtype=object)
        self.time_scale_ = prep.time_scale

    def fit(self, X, y, sample_weight=None, *, times=None, validation_data=None):
        """Fit on ragged, timestamped series.

        **Arguments:**

        - `X`: series in any format of `s5ts.data.to_panel` (a list of
          DataFrames indexed by time, a (series, time) MultiIndex frame, a long
          frame, a 3-D array (n, L, d) with `times`, a 2-D array (n, L)).
        - `y`: one target per series, or one per observation (per-step).
          For a long or MultiIndex frame, one per series (in order of first
          appearance, or a pandas object indexed by id) or one per row of X,
          the same on every row of a series.
        - `sample_weight`: (n,) weights ≥ 0, one per series (or per row of
          a long frame, as `y`): a series of weight 2 counts as two copies
          of it in the loss (and in the validation figure of a
          `validation_fraction` split).
        - `times`: observation times (n, L) for array `X` (a list of (L_i,)
          arrays for a list of arrays). A model fitted with `times` needs
          them again in `predict` and `score`.
        - `validation_data`: `(X_valid, y_valid)` (or with `times` third) to
          evaluate after every epoch for early stopping and model selection,
          instead of a `validation_fraction` split of `X`.

        A Parquet data set `X` (a path or a `pyarrow.dataset.Dataset`, read
        with `id_col` / `time_col`) is streamed (docs/scaling.md, "Data
        larger than memory"): `y` names a column of it, or a list of
        columns (one target, or one row of k, per series when each is the
        same on every row of each series, else one per observation: a
        per-step model); or is a pandas Series / DataFrame or pyarrow Table
        keyed by id; or, one per observation, a target data set laid out as
        X (a `pathlib.Path` or a Dataset: the same series in the same files
        and order, read in lockstep) or a pandas y indexed by (id, time);
        `sample_weight` names a column (the same on every row of a series)
        or is a pandas Series keyed by id.

        **Returns:** `self`.

        With `warm_start=True` a fitted estimator continues training (a new
        warm-up and cosine schedule over `max_epochs`; `history_` grows).

        With `checkpoint_dir`, the fit saves a checkpoint there (Orbax,
        atomically) every `checkpoint_every` epochs and at the end; a fit
        started again with the same directory, estimator parameters and
        data continues from the latest one and ends with the model of an
        uninterrupted fit (with `random_state=None` it reuses the saved
        seed). A checkpoint of a finished fit is restored without training.
        A checkpoint of another fit (other data or parameters) raises a
        ValueError saying what differs; so does combining it with a warm
        start of a fitted estimator or `partial_fit`. Needs
        orbax-checkpoint (`pip install -e ".[scale]" in the s5ts checkout`).
        """
        return self._fit(X, y, times, sample_weight=sample_weight, validation_data=validation_data)

    def _check_finite(self, panel: RaggedPanel, outputs: list) -> list:
        """`outputs`, or a `ValueError` naming the first series (and step)
        whose output is not finite and why (`_nonfinite_reason`); `panel`
        holds the series' ids (and times, for a per-step model), in memory
        or streamed alike."""
        for i, output in enumerate(outputs):
            finite = [np.isfinite(np.asarray(leaf)) for leaf in jax.tree.leaves(output)]
            if all(f.all() for f in finite):
                continue
            step, where = None, ""
            if self.per_step_:
                rows = np.logical_and.reduce([f.reshape(f.shape[0], -1).all(axis=1) for f in finite])
                step = int(np.flatnonzero(~rows)[0])
                where = f" from step {step} on"
            raise ValueError(
                f"series {panel.ids[i]!r}: the model's prediction is not finite{where}; "
                f"{self._nonfinite_reason(panel, i, step)}"
            )
        return outputs

    def _prediction_backprop(self) -> AbstractBackprop:
        """How `predict_outputs` runs the network: a per-step model that
        carries its states runs long series in chunks of `chunk_length` (the
        same outputs, memory set by the chunk), any other whole."""
        model = self.model_
        if isinstance(model, AbstractStatefulSequenceModel) and model.per_step and model.causal:
            return self._config().backprop
        return WholeSequences()

    def _nonfinite_reason(self, panel: RaggedPanel, i: int, step: int | None) -> str:
        """What can make the prediction of series `i` (from `step`) non-finite."""
        return "the network overflowed on this input (features or gaps far outside those seen in fit?)"

    def _predicted(self, X, times, y=_PREDICT, sample_weight=None, *, numeric=True):
        """(panel, the network's outputs per series, the true targets of `y`
        aligned with `X` as in `fit` (`score`'s; none to `predict`), sample_weight) for
        `predict` and `score`. A Parquet data set `X` is streamed
        (`_streaming.predict`, `_streaming.scored`), with a panel of its ids
        alone (no data)."""
        check_is_fitted(self, "model_")
        if is_parquet_source(X):
            _no_times(times)
            backprop, thinning = self._prediction_backprop(), self._thinning_
            if y is _PREDICT:
                panel, outputs, _ = _streaming.predict(self, X, backprop, thinning=thinning)
            else:
                panel, outputs, y, sample_weight = _streaming.scored(
                    self, X, y, backprop, sample_weight, numeric=numeric, thinning=thinning
                )
        else:
            panel = self._panel(X, times, self.preprocessing_)
            if y is not _PREDICT:
                y = to_targets(y, panel, numeric=numeric, kind="per_step" if self.per_step_ else "sequence").values
            data = self.preprocessing_.transform(panel, per_step=self.per_step_)
            outputs = predict_outputs(self.model_, data, self.batch_size, self._prediction_backprop(), self._thinning_)
        return panel, self._check_finite(panel, outputs), y, sample_weight

    def _as_frame(self, values, panel: RaggedPanel, columns=None):
        """Predictions as pandas, indexed by the series ids (per-series
        `(n,)` / `(n, k)` arrays) or by `(series, time)` (a list of per-step
        `(L_i,)` / `(L_i, k)` arrays, concatenated in panel order); `columns`
        names the k outputs."""
        if isinstance(values, list):
            index, values = panel.step_index(), np.concatenate(values, axis=0)
        else:
            index = panel.series_index()
        if values.ndim == 1:
            return pd.Series(values, index=index)
        return pd.DataFrame(values, index=index, columns=columns)

    # ----- scikit-learn tags -----
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing channel at an observed time
        tags.input_tags.three_d_array = True
        tags.non_deterministic = False  # same random_state, same predictions (on CPU)
        return tags

    # ----- persistence -----
    def __getstate__(self):
        # Device arrays become numpy, so a model pickled on a GPU unpickles on
        # a CPU; __setstate__ puts the arrays back on the default device.
        return _map_arrays(self.__dict__.copy(), _to_numpy)

    def __setstate__(self, state):
        self.__dict__.update(_map_arrays(state, _to_device))

    def save(self, path) -> None:
        """Write hyper-parameters (JSON) and weights
        (`equinox.tree_serialise_leaves`) to one file. Arrays load on any
        device: a model trained on a GPU loads on a CPU. The optimiser state
        is not saved: a warm start after `load` starts a fresh optimiser.
        Across `jax.distributed` processes only process 0 writes (every
        process holds the same model)."""
        check_is_fitted(self, "model_")
        if not is_primary():
            return
        header = {
            "format": _FORMAT_VERSION,
            "class": type(self).__name__,
            "params": self.get_params(),
            "preprocessing": self.preprocessing_.to_json(),
            "per_step": self.per_step_,
            "n_model_inputs": self.n_model_inputs_,
            "history": self.history_,
            "best_epoch": self.best_epoch_,
            "interrupted": self.interrupted_,
            "fitted": self._task().to_json(self._target_state),
            "thinning": dataclasses.asdict(self._thinning_),
            "time_warp": self.time_warp_,
        }
        buffer = io.BytesIO()
        eqx.tree_serialise_leaves(buffer, self.model_)
        with open(path, "wb") as f:
            f.write(json.dumps(header, default=_json_default).encode() + b"\n")
            f.write(buffer.getvalue())

    @classmethod
    def load(cls, path):
        """Read a file written by `save`; returns a fitted estimator."""
        with open(path, "rb") as f:
            header = json.loads(f.readline())
            weights = f.read()
        if header.get("class") != cls.__name__:
            raise ValueError(f"{path} holds a {header.get('class')}, not a {cls.__name__}")
        if header.get("format") != _FORMAT_VERSION:
            raise ValueError(f"{path} has format {header.get('format')}; this s5ts reads {_FORMAT_VERSION}")
        # Files written before a parameter existed take its default (input_hold: "gap", as they were fitted).
        estimator = cls(**header["params"])
        target_state = estimator._task().from_json(header["fitted"])
        spec = estimator._network_spec(header["n_model_inputs"], header["per_step"], target_state)
        skeleton = eqx.filter_eval_shape(spec, jax.random.key(0))  # shapes only: nothing to compile
        model = eqx.tree_deserialise_leaves(io.BytesIO(weights), skeleton)
        # Files written before the encoder was kept with the preprocessing: the estimator's.
        prep = Preprocessing.from_json({"encoder": header["params"]["encoder"], **header["preprocessing"]})
        config = estimator._config()
        state = TrainingState(model=model, opt_state=config.init_optimizer_state(model), history=header["history"])
        result = TrainingResult(model=model, state=state, best_epoch=header["best_epoch"], interrupted=header["interrupted"])
        # Files written before the fit's thinning was saved: trained without a budget;
        # before time warps: trained without.
        thinning = Thinning(**header.get("thinning", {"rate": config.thinning.rate}))
        config = dataclasses.replace(
            config, observation_dropout=thinning.rate, observation_budget=thinning.budget,
            time_warp=header.get("time_warp", 0.0),
        )
        estimator._commit(
            prep, header["per_step"], target_state, result, np.random.default_rng(0), header["n_model_inputs"], config
        )
        return estimator

    @property
    def n_parameters_(self) -> int:
        """Number of trainable scalars in the network."""
        check_is_fitted(self, "model_")
        leaves = jax.tree.leaves(eqx.filter(self.model_, eqx.is_inexact_array))
        return int(sum(leaf.size for leaf in leaves))


class S5Estimator(SequenceEstimator):
    """An S5 network of ragged series: see `S5Regressor` for the parameters."""

    _parameter_constraints = {**TRAINING_CONSTRAINTS, **S5_CONSTRAINTS}

    @ALL_PARAMETERS
    def __init__(self, **given):
        ALL_PARAMETERS.assign(self, given)

    _architecture_names = NETWORK_PARAMETERS

    def _make_head(self, n_in: int, n_outputs: int, key):
        """The head: a linear map from its `n_in` features (`d_model`, twice
        that under `pooling="max_mean"`, and the summary features when
        read) to the network's outputs."""
        return eqx.nn.Linear(n_in, n_outputs, key=key)

    @property
    def _time_handling(self) -> str:
        return self.time_handling

    @property
    def _hold_ends(self):
        # summary features describe a series' own observations: "auto" holds no ends under them
        return False if self.hold_ends == "auto" and self.summary_features else self.hold_ends

    def _config(self, lengths: np.ndarray | None = None) -> TrainingConfig:
        handling = time_handling_for(self.time_handling)
        return TrainingConfig.from_estimator(
            self, **handling.thinning(self.observation_dropout), time_warp=handling.time_warp(self.time_warp, lengths)
        )

    def _check_relations(self) -> None:
        if self.dt_min > self.dt_max:
            raise ValueError(f"dt_min must be <= dt_max, got {self.dt_min!r} > {self.dt_max!r}")
        if self.hold_ends is True and self.summary_features:
            raise ValueError(
                "summary_features=True summarises each series' own observations, which hold_ends=True "
                "extends to the training window (its span, count and end values would be the window's): "
                "set one of them to False"
            )
        if self.chunk_length is not None and self.bidirectional:
            raise ValueError(
                "chunk_length needs per-step targets of a causal network; a bidirectional network "
                "sees the future: set bidirectional=False or chunk_length=None"
            )

    # ----- model -----
    def build_network(self, n_inputs: int, per_step: bool, n_outputs: int, key) -> SequenceNetwork:
        if self.encoder == "pendulum_cnn" and n_inputs != 576:
            raise ValueError(
                f"encoder='pendulum_cnn' needs 576 features per step (24x24 pixels), got {n_inputs}"
            )
        if per_step and self.summary_features:
            raise ValueError(
                "summary_features=True is read beside the pooling of a whole series; "
                "y has a target per step here: set summary_features=False"
            )
        k_enc, k_proj, k_head, k_blocks = jax.random.split(key, 4)
        blocks = make_blocks(self.n_layers, key=k_blocks, **block_settings(self))
        pooling = "none" if per_step else self.pooling
        n_in = pooled_width(pooling, self.d_model) + (n_summaries(n_inputs) if self.summary_features else 0)
        return SequenceNetwork(
            make_encoder(self.encoder, n_inputs, key=k_enc),
            blocks,
            self._make_head(n_in, n_outputs, k_head),
            n_extra=time_handling_for(self.time_handling).n_extra,
            pooling=pooling,
            summaries=self.summary_features,
            key=k_proj,
        )


def _map_arrays(state: dict, fn) -> dict:
    """Apply `fn` to every leaf of the network and the training state."""
    if "model_" in state:
        state["model_"] = jax.tree.map(fn, state["model_"])
    if "_training_state_" in state:
        t = state["_training_state_"]
        state["_training_state_"] = dataclasses.replace(
            t, model=jax.tree.map(fn, t.model), opt_state=jax.tree.map(fn, t.opt_state)
        )
    return state


def _to_numpy(leaf):
    return np.asarray(leaf) if isinstance(leaf, jax.Array) else leaf


def _to_device(leaf):
    return jax.numpy.asarray(leaf) if isinstance(leaf, np.ndarray) else leaf


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in JSON; use pickle/joblib instead")


#: Decorates a subclass's `__init__(self, *, own..., **shared)`, which passes
#: `shared` on to `S5Estimator.__init__`: its signature lists every parameter.
with_shared_parameters = ALL_PARAMETERS
