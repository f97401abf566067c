"""The training loop shared by the estimators, the forecaster and the CRU
baseline: epochs of shuffled, padded batches (`_sequences`), the optimiser
and its schedule (`_optimizer`), early stopping (`_early_stopping`), batches
split over the local devices (`_devices`), and the time spent compiling
reported apart from the time spent training.

Every epoch's record in the history has `train_loss`, `train_seconds` (the
optimisation steps alone), `compile_seconds` (tracing and compiling, JAX's
own figures, or reading from the persistent cache; included in no other
figure), `seconds` (the whole epoch), and `valid_<metric>` with validation
data.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.sharding import PartitionSpec

from ._backprop import AbstractBackprop, WholeSequences, backprop_for, run_batch
from ._cache import release_compiled_programs
from ._checkpoint import Checkpoints, LoopState
from ._devices import gather_rows, placement_for, to_default_device
from ._distributed import is_primary
from ._early_stopping import EarlyStopping
from ._initial import initial_model_and_state
from ._losses import mean_over_copies
from ._optimizer import init_optimizer_state, make_optimizer, schedule_scales, with_learning_rates
from ._sequences import SequenceData, batch_rows, iterate_batches, packed_for
from ._split import Split
from ._thinning import Thinning, copies_kept, cut_batch, keep_observations
from ._warping import TimeWarp

# ----- compile time, from JAX's own monitoring events -----

#: JAX's duration events of tracing, lowering, compiling and reading a
#: compiled program from the persistent cache.
_COMPILE_EVENTS = frozenset(
    {
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
        "/jax/compilation_cache/cache_retrieval_time_sec",
    }
)
_compile_lock = threading.Lock()
_compile_total = [0.0]


def _on_duration(event: str, duration: float, **_kwargs) -> None:
    if event in _COMPILE_EVENTS:
        with _compile_lock:
            _compile_total[0] += duration


jax.monitoring.register_event_duration_secs_listener(_on_duration)


def compile_seconds_so_far() -> float:
    """Seconds this process has spent tracing and compiling JAX programs
    (JAX's events; nested functions' tracing may count twice)."""
    with _compile_lock:
        return _compile_total[0]


def timed(fn, *args):
    """(fn(*args), seconds of the call spent compiling): JAX's compile events
    during the call, at most the call's wall time (a compiled call returns
    as soon as its work is dispatched, so a call that compiles takes about
    as long as the compilation)."""
    started, compiled = time.perf_counter(), compile_seconds_so_far()
    out = fn(*args)
    return out, min(compile_seconds_so_far() - compiled, time.perf_counter() - started)


# ----- the compiled functions -----


def _summed_loss(model, batch, states, keys, loss_fn):
    """(the batch's weighted sum of losses, (its sum of weights, the states its rows end in))."""
    outputs, after = run_batch(model, batch, states, keys, inference=False)
    total, count = loss_fn(outputs, batch["y"], batch["weights"])
    return total, (count, after)


def _loss_and_grads(model, batch, states, key, loss_fn, mesh):
    """(the batch's mean loss, its gradient with respect to the model's
    inexact arrays, the states its rows end in: `run_batch`). Row i's dropout
    key is `jax.random.split(key, rows)[i]`.

    With `mesh` (the batch's rows split over its devices, `_devices`), each
    device takes the gradient of the summed loss of its own rows
    (`jax.shard_map`), and the sums (loss, weight, gradients) are added
    across devices as one flat vector, then divided by the total weight:
    XLA's CPU collectives (gloo) make a round trip per array, and the
    default network's 28 gradient arrays took 13.6 ms to sum across two
    processes against 1.9 ms as one vector (docs/scaling.md,
    `benchmarks/collectives.py`). Carried states stay with their rows."""
    keys = None if key is None else jax.random.split(key, batch["u"].shape[0])
    if mesh is None:

        def mean_loss(model):
            total, (count, after) = _summed_loss(model, batch, states, keys, loss_fn)
            return total / jnp.maximum(count, 1e-12), after

        (loss, after), grads = eqx.filter_value_and_grad(mean_loss, has_aux=True)(model)
        return loss, grads, after
    arrays, static = eqx.partition(model, eqx.is_array)

    def summed(arrays, batch, states, keys):
        model = eqx.combine(arrays, static)
        (total_loss, (count, after)), grads = eqx.filter_value_and_grad(_summed_loss, has_aux=True)(
            model, batch, states, keys, loss_fn
        )
        flat, unflatten = ravel_pytree((total_loss, count, grads))
        return unflatten(jax.lax.psum(flat, "rows")), after

    rows = PartitionSpec("rows")
    # check_vma=False: the scans' carries start from unsharded zeros (the
    # gradient is taken inside, so no autodiff crosses the map).
    (total_loss, count, grads), after = jax.shard_map(
        summed,
        mesh=mesh,
        in_specs=(PartitionSpec(), rows, rows, rows),
        out_specs=(PartitionSpec(), rows),
        check_vma=False,
    )(arrays, batch, states, keys)
    scale = 1.0 / jnp.maximum(count, 1e-12)
    return total_loss * scale, jax.tree.map(lambda g: g * scale, grads), after


def _update(model, opt_state, grads, learning_rates, optimizer):
    """The optimiser's step at `learning_rates` ({group: float32 scalar}),
    written into the optimiser state (`with_learning_rates`: inside the
    compiled step it costs nothing); returns (model, opt_state)."""
    opt_state = with_learning_rates(opt_state, learning_rates)
    params = eqx.filter(model, eqx.is_inexact_array)
    # optax mixes its int32 step count with floats (Adam's bias correction):
    # its code is not ours to make strict, so it is traced with standard
    # promotion even when the tests make ours strict.
    with jax.numpy_dtype_promotion("standard"):
        updates, opt_state = optimizer.update(grads, opt_state, params)
    return eqx.apply_updates(model, updates), opt_state


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def train_step(static, optimizer, loss_fn, mesh, arrays, batch, states, learning_rates, key_data):
    """One optimiser step at `learning_rates` on one batch (or one chunk of
    it, continuing from the carried `states`: `_backprop`; None for whole
    rows) of the model and optimiser state `static.combine(arrays)` (a
    `Split` of `(model, opt_state)`, made once per fit: `_split`), its
    dropout drawn from the key of raw `key_data` (`jax.random.key_data`;
    `step_keys`); returns (their arrays after the step, as `arrays`, the
    loss, the states its rows end in). `mesh`: the devices the batch's rows
    are split over, or None (`_loss_and_grads`)."""
    model, opt_state = static.combine(arrays)
    key = jax.random.wrap_key_data(key_data)
    loss, grads, states = _loss_and_grads(model, batch, states, key, loss_fn, mesh)
    return static.arrays_of(_update(model, opt_state, grads, learning_rates, optimizer)), loss, states


@functools.partial(jax.jit, static_argnums=1)
def _key_chain(key, n: int):
    """The raw data (`jax.random.key_data`) of the keys of `n` successive
    `key, step_key = jax.random.split(key)`: (each `key` after its split,
    each `step_key`), each (n, ...)."""

    def split(key, _):
        key, step_key = jax.random.split(key)
        return key, (jax.random.key_data(key), jax.random.key_data(step_key))

    return jax.lax.scan(split, key, length=n)[1]


def step_keys(key, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`_key_chain` on the host, one compiled call for an epoch's `n` steps
    (a split a step cost a dispatch each): step i's dropout key is
    `jax.random.wrap_key_data(step_data[i])`, and the key after i + 1 steps
    `chain[i]`, the same keys as splitting one step at a time."""
    return jax.device_get(_key_chain(key, int(n)))


@eqx.filter_jit
def _metric(metric_fn, outputs, targets, weights):
    return metric_fn(outputs, targets, weights)


def _forward_only(data: SequenceData) -> SequenceData:
    """`data` batched as its cap says of forward passes (`LengthCap.forward`):
    data capped at its longest series pads to powers of two, so that the
    validation set and the series given to `predict` share the forward
    pass's compiled shapes (capped at each set's own longest series, they
    rarely do; the extra padding costs a forward pass, not a training
    step)."""
    return dataclasses.replace(data, cap_length=data.cap_length.forward)


def evaluate(
    model,
    data: SequenceData,
    batch_size: int,
    metric_fn,
    backprop: AbstractBackprop = WholeSequences(),
    thinning: Thinning = Thinning(),
) -> float:
    """The weighted mean of `metric_fn` over every real element of `data`,
    the forward pass run as `backprop` runs it (whole, or in chunks with
    carried states), and series that `thinning`'s budget thins in training
    as the mean over thinned copies (`forward_batches`). Validation and
    prediction share one compiled forward pass (each costs seconds to
    compile on a CPU; the metric's own program is tiny). The batches' sums
    are read back once, at the end, so that the next batch is prepared
    while the devices compute."""
    rows = batch_rows(len(data), batch_size)
    data = _forward_only(data)
    model = Split.of(placement_for(rows).replicate(model))
    sums = [
        _metric(metric_fn, outputs, piece["y"], piece["weights"])
        for _, _, pieces in forward_batches(model, data, rows, backprop, thinning)
        for piece, outputs in pieces
    ]
    total, count = 0.0, 0.0
    for s, c in jax.device_get(sums):
        total += float(s)
        count += float(c)
    return total / count if count > 0 else math.nan


def predict_outputs(
    model,
    data: SequenceData,
    batch_size: int,
    backprop: AbstractBackprop = WholeSequences(),
    thinning: Thinning = Thinning(),
) -> list:
    """Network outputs per series, in input order (numpy; per step: trimmed
    to L_i). `TruncatedBackprop` runs per-step data over chunks with the
    states carried (`_backprop`): the same outputs, memory set by the chunk.
    A series that `thinning`'s budget thins in training is predicted as the
    mean of its outputs over thinned copies (`forward_batches`)."""
    results: list = [None] * len(data)
    for indices, _, _, items in predicted_batches(model, data, batch_size, backprop, thinning):
        for i, item in zip(indices, items):
            results[i] = item
    return results


def predicted_batches(
    model,
    data: SequenceData,
    batch_size: int,
    backprop: AbstractBackprop = WholeSequences(),
    thinning: Thinning = Thinning(),
) -> Iterator[tuple[np.ndarray, np.ndarray, dict, list]]:
    """`predict_outputs` one batch at a time, for a caller that reduces them
    without holding every series' outputs: `(indices, rows, batch,
    outputs)`, the positions of the batch's series, the rows of the padded
    batch they are in (across processes streamed data has padding in every
    process's block), the batch (split over the processes: `gather_rows`)
    and its series' outputs."""
    rows = batch_rows(len(data), batch_size)
    data = _forward_only(data)
    lengths = data.lengths
    model = Split.of(placement_for(rows).replicate(model))
    for indices, batch, pieces in forward_batches(model, data, rows, backprop, thinning):
        parts = [gather_rows(o) for _, o in pieces]
        outputs = parts[0] if len(parts) == 1 else jax.tree.map(lambda *p: np.concatenate(p, axis=1), *parts)
        at = np.flatnonzero(np.asarray(indices) >= 0)
        items = []
        for row in at:
            item = jax.tree.map(lambda o: o[row], outputs)
            if data.per_step:
                n = int(lengths[indices[row]])
                item = jax.tree.map(lambda o: o[:n], item)
            items.append(item)
        yield np.asarray(indices)[at], at, batch, items


def forward_batches(
    model, data: SequenceData, rows: int, backprop: AbstractBackprop, thinning: Thinning = Thinning()
) -> Iterator[tuple[np.ndarray, dict, list]]:
    """(positions, the placed batch, [(piece, outputs), ...]) of every batch
    of `data` in plan order, the network (a `Split`) run on it as
    `backprop` runs it. With one target per series and a `thinning` with a
    budget, the outputs of each series that the budget thins in training
    are the mean over `PREDICTION_COPIES` copies of it thinned as in
    training (`copies_kept`; a Gaussian head's, the moments of their
    mixture: `mean_over_copies`); every other series' are its whole run's. The
    training thinned such a series to about `thinning.budget`
    observations: whole, it is longer and more finely sampled than
    anything the network has seen. Whether a batch runs copies is decided
    from the lengths of all its rows, so every process runs the same."""
    placement = placement_for(rows)
    copies = thinning if thinning.budget is not None and not data.per_step else None
    for indices, batch in iterate_batches(data, rows, shuffle=False, place=False):
        placed = placement.put_batch(batch)
        pieces = list(backprop.forward(model, placed, rows, data.per_step))
        if copies is not None and copies.past_rate(_row_lengths(data, indices, rows)).any():
            ((_, whole),) = pieces
            pieces = [(placed, _mean_over_copies(model, batch, whole, copies, rows, backprop, data.elapsed))]
        yield indices, placed, pieces


def _row_lengths(data: SequenceData, indices: np.ndarray, rows: int) -> np.ndarray:
    """(rows,) the length of the series in every row of a batch at
    `indices` (positions; -1 or past their end: padding, length 0)."""
    indices = np.asarray(indices)
    lengths = np.zeros(rows, np.int64)
    lengths[: len(indices)] = np.where(indices >= 0, data.lengths[np.maximum(indices, 0)], 0)
    return lengths


def _mean_over_copies(model, batch: dict, whole, thinning: Thinning, rows: int, backprop, elapsed) -> Any:
    """`forward_batches`' outputs of a batch (numpy, this process's rows)
    holding series the budget thins: theirs the mean over their copies,
    the other rows' `whole`."""
    placement = placement_for(rows)
    mask = np.asarray(batch["mask"], dtype=bool)
    past = thinning.past_rate(mask.sum(axis=1))
    kept = copies_kept(batch, thinning)
    # The other rows' copies are not read (theirs are the whole run's): their
    # first step alone, so every copy ends within the bound of the batch's
    # length and is cut there alike on every process (`cut_batch`).
    kept[:, ~past] = mask[~past] & (np.arange(mask.shape[1]) == 0)
    cut = thinning.kept_bound([mask.shape[1]])
    outputs = []
    for one in kept:
        copy = placement.put_batch(cut_batch(keep_observations(batch, one, elapsed=elapsed), one, cut))
        ((_, out),) = backprop.forward(model, copy, rows, False)
        outputs.append(out)
    thinned = placement.put_batch({"rows": past})["rows"]

    def pick(mine, from_copies):
        return jnp.where(thinned.reshape(-1, *([1] * (mine.ndim - 1))), from_copies, mine)

    return jax.tree.map(pick, whole, mean_over_copies(outputs))


# ----- configuration and state -----


@dataclasses.dataclass
class TrainingConfig:
    """How to train: the estimators' parameters of the same names."""

    max_epochs: int = 100
    batch_size: int = 32
    learning_rate: float = 1e-2
    ssm_learning_rate: float | None = None
    weight_decay: float = 0.0
    warmup_epochs: int = 5
    grad_clip: float | None = 1.0
    n_iter_no_change: int | None = 20
    tol: float = 1e-4
    verbose: bool = False
    min_epoch_steps: int | None = None
    observation_dropout: float = 0.0
    #: Thin series longer than about this many observations further, to
    #: about this many (`Thinning`; the estimators' `observation_dropout="auto"`).
    observation_budget: int | None = None
    #: σ of the training batches' time warps (`TimeWarp`; 0: none; the
    #: estimators' `time_warp`).
    time_warp: float = 0.0
    checkpoint_dir: str | os.PathLike | None = None
    checkpoint_every: int = 1
    #: Pack training batches end to end (`packed_for`): "auto" where length
    #: buckets would pad much, True wherever it can, False never.
    packing: bool | str = "auto"
    #: How a batch flows through the network: whole, or in chunks (the
    #: estimators' `chunk_length`, `backprop_for`).
    backprop: AbstractBackprop = WholeSequences()

    @property
    def thinning(self) -> Thinning:
        """How training batches thin their series, and so which series a
        prediction averages over thinned copies (`forward_batches`)."""
        return Thinning(self.observation_dropout, self.observation_budget)

    @property
    def warping(self) -> TimeWarp:
        """How training batches warp their series' time."""
        return TimeWarp(float(self.time_warp))

    def epoch_steps(self, n_batches: int) -> int:
        """Optimiser steps in one epoch of data that makes `n_batches` a
        pass: one pass, or `min_epoch_steps` if that is more, so that a
        small data set, whose epoch would be one or two batches, is not
        stopped after a hundred steps. Such an epoch passes over the data
        as often as it takes (`passes_per_epoch`), each pass shuffled, and
        ends where its steps do, in the last pass if need be: every data
        set of fewer than `min_epoch_steps` batches makes the same steps an
        epoch."""
        if self.min_epoch_steps is None:
            return n_batches
        return max(n_batches, self.min_epoch_steps)

    def passes_per_epoch(self, n_batches: int) -> int:
        """Passes over the training data that an epoch starts (the last
        may be cut short: `epoch_steps`)."""
        return math.ceil(self.epoch_steps(n_batches) / n_batches)

    @classmethod
    def from_estimator(cls, estimator, **resolved) -> "TrainingConfig":
        """The settings of an estimator with parameters of the same names
        (those it does not have, such as CRU's `ssm_learning_rate`, keep
        their defaults); `resolved` gives values for parameters whose
        estimator value is not a setting itself (`observation_dropout="auto"`)."""
        params = {**estimator.get_params(deep=False), **resolved}
        params.setdefault("backprop", backprop_for(params.get("chunk_length")))
        return cls(**{f.name: params[f.name] for f in dataclasses.fields(cls) if f.name in params})

    def init_optimizer_state(self, model):
        return init_optimizer_state(model, float(self.weight_decay), self.grad_clip)

    def initial_state(self, build: Callable[[Any], eqx.Module], key) -> "TrainingState":
        """A new network `build(key)` and its optimiser state, compiled as
        one program (`initial_model_and_state`; `build` a `NetworkSpec`)."""
        model, opt_state = initial_model_and_state(build, key, float(self.weight_decay), self.grad_clip)
        return TrainingState(model=model, opt_state=opt_state)


@dataclasses.dataclass
class TrainingState:
    """What a fit carries between calls (warm start, partial_fit)."""

    model: Any
    opt_state: Any
    step: int = 0
    history: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class TrainingResult:
    model: Any  # the best model (what the estimator predicts with)
    state: TrainingState  # the end of the last finished epoch, to continue from
    best_epoch: int
    interrupted: bool = False


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite.

    `result` is the `TrainingResult` as it stood after the last epoch with a
    finite loss, or None when no epoch of this call finished.
    """

    def __init__(self, message: str, result: TrainingResult | None):
        super().__init__(message)
        self.result = result


# ----- the loop -----


class _Progress:
    """A tqdm bar over epochs that says when it is compiling."""

    def __init__(self, epochs: int, verbose: bool):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=epochs, disable=not (verbose and is_primary()), desc="training", leave=False)
        self.shapes: set = set()

    def before_step(self, batch) -> None:
        shape = tuple(sorted((k, np.shape(v)) for k, v in batch.items()))
        if shape not in self.shapes:
            self.shapes.add(shape)
            self.bar.set_description(f"compiling (batch {batch['u'].shape[0]}x{batch['u'].shape[1]})")
            self.bar.refresh()

    def after_step(self) -> None:
        if self.bar.desc != "training":
            self.bar.set_description("training")

    def epoch_done(self, record: dict) -> None:
        self.bar.update(1)
        self.bar.set_postfix({k: f"{v:.4g}" for k, v in record.items() if k != "epoch"})

    def close(self) -> None:
        self.bar.close()


def train(
    state: TrainingState,
    train_data: SequenceData,
    valid_data: SequenceData | None,
    loss_fn: Callable,
    metric_fn: Callable,
    config: TrainingConfig,
    *,
    rng: np.random.Generator,
    key: jax.Array,
    epochs: int | None = None,
    schedule: str = "cosine",
    metric_name: str = "loss",
    fingerprint: dict | None = None,
) -> TrainingResult:
    """Train for `epochs` (default `config.max_epochs`) with early stopping on
    `metric_fn` over `valid_data` (or the training loss when there is none).

    **Arguments:**

    - `state`: where to start (a fresh model, or a previous call's
      `TrainingResult.state`). It is not modified.
    - `schedule`: `"cosine"`: warm-up then cosine decay over this call's
      epochs (a `fit`, also a warm-started one); `"constant"`: warm-up over
      the first steps ever taken, then the peak rate (`partial_fit`, whose
      calls have no known end).
    - `metric_name`: the history's key for the validation figure is
      `"valid_" + metric_name` (lower is better).
    - `fingerprint`: with `config.checkpoint_dir`, a JSON-able dict that
      identifies this training (`s5ts.training._checkpoint`): the loop
      continues from the directory's latest checkpoint when it holds one
      of the same fingerprint (a ValueError when another), and saves one
      after every `config.checkpoint_every` finished epochs and at the end.
      A checkpoint of a finished training is returned without training.
      `rng` is then set to the saved generator state. Not with
      `schedule="constant"` (`partial_fit`).

    **Returns:** a `TrainingResult` with the best model.

    **Raises:** `NonFiniteLossError` (a `FloatingPointError`) when an epoch's
    loss is not finite, carrying the result up to the last good epoch.
    Ctrl-C (`KeyboardInterrupt`) after at least one finished epoch stops
    with a warning and returns the best model so far; before that it
    propagates.
    """
    if schedule not in ("cosine", "constant"):
        raise ValueError(f"schedule must be 'cosine' or 'constant', got {schedule!r}")
    release_compiled_programs()
    epochs = config.max_epochs if epochs is None else epochs
    rows = batch_rows(len(train_data), config.batch_size)
    backprop = config.backprop
    backprop.check(state.model, train_data.per_step)
    train_data = packed_for(train_data, state.model, rows, backprop, config.packing)
    rows = train_data.rows_per_batch(rows)
    batches_per_pass = backprop.steps(train_data, rows)
    passes = config.passes_per_epoch(batches_per_pass)
    n_steps = config.epoch_steps(batches_per_pass)
    warmup_steps = config.warmup_epochs * n_steps
    ssm_rate = config.ssm_learning_rate if config.ssm_learning_rate is not None else config.learning_rate
    optimizer = make_optimizer(float(config.weight_decay), config.grad_clip)

    first_step, start = state.step, 0
    stopping = EarlyStopping(config.n_iter_no_change, config.tol, start=config.warmup_epochs)
    best_model, best_epoch = state.model, len(state.history) - 1
    warping = config.warping
    warp_seed = warping.seed(rng)  # before a checkpoint restores the generator: the same on resuming
    checkpoints = None
    if config.checkpoint_dir is not None:
        if schedule != "cosine":
            raise ValueError("checkpoint_dir resumes a whole fit; partial_fit (schedule='constant') cannot use it")
        checkpoints = Checkpoints(config.checkpoint_dir, fingerprint or {})
        saved = checkpoints.restore(state.model, state.opt_state, key)
        if saved is not None:
            state = TrainingState(saved.model, saved.opt_state, saved.step, list(saved.history))
            first_step, start, key, stopping = saved.first_step, saved.epochs_done, saved.key, saved.stopping
            best_model, best_epoch = saved.best_model, saved.best_epoch
            rng.bit_generator.state = saved.rng_state
            if saved.finished:
                checkpoints.close()
                return TrainingResult(model=best_model, state=state, best_epoch=best_epoch)
    # Replicated over the devices that share each batch; back on the default
    # device in the result.
    placement = placement_for(rows)
    mine = placement.local_rows or slice(0, rows)  # this process's rows of each batch
    model, opt_state, best_model = placement.replicate((state.model, state.opt_state, best_model))
    # Rows split over several devices: data parallelism written out (`_loss_and_grads`).
    mesh = None if placement.rows is None or placement.rows.is_fully_replicated else placement.rows.mesh
    # Split once: the steps take the flat tuple of arrays (`_split`).
    static, arrays = (split := Split.of((model, opt_state))).static, split.arrays
    step = state.step
    history = list(state.history)
    # `good` is the state after the last epoch that finished with a finite
    # loss: what a NaN or a Ctrl-C falls back to.
    good = TrainingState(model=model, opt_state=opt_state, step=step, history=list(history))

    def result(interrupted=False):
        return TrainingResult(
            model=to_default_device(best_model),
            state=dataclasses.replace(
                good, model=to_default_device(good.model), opt_state=to_default_device(good.opt_state)
            ),
            best_epoch=best_epoch,
            interrupted=interrupted,
        )

    progress = _Progress(epochs, config.verbose)
    try:
        for call_epoch in range(start, epochs):
            epoch = len(history)
            started, compile_time = time.perf_counter(), 0.0
            if schedule == "cosine":
                scales = schedule_scales(np.arange(n_steps) + (step - first_step), epochs * n_steps, warmup_steps)
            else:
                scales = schedule_scales(np.arange(n_steps) + step, None, warmup_steps)
            losses = []
            batches = itertools.chain.from_iterable(
                warping.batches(
                    iterate_batches(
                        train_data,
                        rows,
                        shuffle=True,
                        rng=rng,
                        observation_dropout=config.observation_dropout,
                        observation_budget=config.observation_budget,
                        place=False,
                        cut=backprop.cuts_thinned,
                    ),
                    TimeWarp.pass_generator(warp_seed, epoch, n),
                    n_series=len(train_data), rows=rows, mine=mine, elapsed=train_data.elapsed,
                )
                for n in range(passes)
            )
            states = None  # carried from piece to piece, afresh at each batch's first
            chain, step_data = step_keys(key, n_steps)
            # the epoch ends at its n_steps-th step, inside its last pass if need be
            pieces = itertools.islice(backprop.pieces(batches, rows), n_steps)
            for scale, step_key, (first, batch) in zip(scales, step_data, pieces):
                rates = {"regular": np.float32(config.learning_rate * scale), "ssm": np.float32(ssm_rate * scale)}
                progress.before_step(batch)
                states = backprop.initial_states(model, rows) if first else states
                (arrays, loss, states), seconds = timed(
                    train_step, static, optimizer, loss_fn, mesh, arrays, batch, states, rates, step_key
                )
                compile_time += seconds
                progress.after_step()
                step += 1
                losses.append(loss)
            model, opt_state = static.combine(arrays)
            key = jax.random.wrap_key_data(chain[len(losses) - 1]) if losses else key
            train_loss = float(np.mean(jax.device_get(losses)))
            steps_done = time.perf_counter()
            if not math.isfinite(train_loss):
                finished = len(history) > len(state.history)
                raise NonFiniteLossError(
                    f"the training loss became {train_loss} in epoch {epoch}; training stopped. "
                    "Try a smaller learning_rate or check the inputs' scale.",
                    result() if finished else None,
                )
            record = {"epoch": epoch, "train_loss": train_loss, "train_seconds": steps_done - started - compile_time}
            if valid_data is not None and len(valid_data):
                score, seconds = timed(evaluate, model, valid_data, config.batch_size, metric_fn, backprop, config.thinning)
                compile_time += seconds
                record[f"valid_{metric_name}"] = score
            else:
                score = train_loss
            record["compile_seconds"] = compile_time
            record["seconds"] = time.perf_counter() - started
            history.append(record)
            good = TrainingState(model=model, opt_state=opt_state, step=step, history=list(history))
            if stopping.update(call_epoch, score):
                best_model, best_epoch = model, epoch
            progress.epoch_done(record)
            done = stopping.should_stop or call_epoch + 1 == epochs
            if checkpoints is not None and (done or (call_epoch + 1) % config.checkpoint_every == 0):
                checkpoints.save(
                    LoopState(
                        model, opt_state, step, history, first_step, call_epoch + 1, rng.bit_generator.state,
                        key, stopping, best_model, best_epoch, done,
                    )
                )
            if stopping.should_stop:
                break
    except KeyboardInterrupt:
        if len(history) == len(state.history):
            raise
        warnings.warn(
            f"fit interrupted after {len(history) - len(state.history)} epochs; keeping the best "
            f"model so far (epoch {best_epoch}).",
            RuntimeWarning,
            stacklevel=4,
        )
        return result(interrupted=True)
    finally:
        progress.close()
        if checkpoints is not None:
            checkpoints.close()
    return result()
