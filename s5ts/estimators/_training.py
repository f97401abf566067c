"""The training loop shared by every s5ts estimator.

Model-ready data is a `Sequences` (one entry per series); batches group
series of one length bucket and are padded to a fixed number of rows (the
batch size, or the next power of two for smaller data sets), so a fit
compiles one training step per bucket (about log2(max/min) + 2 shapes).

Batches are split row-wise over the local devices when there are several
(`_devices.py`); the result's model comes back on the default device.

Optimiser: gradient clipping, then AdamW for ordinary parameters and Adam
without weight decay for the SSM parameters (Λ, B̃, log Δ), each with its own
learning rate; warm-up then cosine decay. Learning rates enter the compiled
step as arrays, so refits of the same architecture reuse compiled code.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..data import bucket_length, make_batches, pad_batch
from ._devices import placement_for, to_default_device

#: Leaf names of S5SSM parameters that get the SSM learning rate and no decay.
SSM_PARAMETERS = frozenset({"log_neg_real", "lambda_imag", "B_re", "B_im", "log_step"})


@dataclasses.dataclass(frozen=True)
class Sequences:
    """Model-ready ragged data.

    - `inputs`: n arrays (L_i, D) float32.
    - `gaps`: n arrays (L_i,) float32, in model time units.
    - `extra`: n arrays (L_i, E) float32 appended after the encoder, or None.
    - `targets`: per step, n arrays (L_i, K); per sequence, an array (n, K)
      (float32, or int32 class indices (n,)); None at prediction.
    """

    inputs: tuple
    gaps: tuple
    extra: tuple | None = None
    targets: Any = None
    per_step: bool = False

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(g) for g in self.gaps], dtype=np.int64)

    def subset(self, indices) -> "Sequences":
        idx = [int(i) for i in indices]

        def pick(items):
            if items is None:
                return None
            if isinstance(items, np.ndarray):
                return items[idx]
            return tuple(items[i] for i in idx)

        return dataclasses.replace(
            self,
            inputs=pick(self.inputs),
            gaps=pick(self.gaps),
            extra=pick(self.extra),
            targets=pick(self.targets),
        )


def split_validation(data: Sequences, fraction: float, rng: np.random.Generator):
    """(train, valid) with `floor(fraction * n)` random series held out, or
    (data, None) when that leaves either side empty."""
    n = len(data)
    n_valid = int(math.floor(fraction * n))
    if n_valid < 1 or n - n_valid < 1:
        return data, None
    order = rng.permutation(n)
    return data.subset(np.sort(order[n_valid:])), data.subset(np.sort(order[:n_valid]))


def padded_batch(data: Sequences, indices: np.ndarray, rows: int) -> dict[str, np.ndarray]:
    """Pad the series at `indices` into one batch of `rows` rows and a
    bucket length (padded steps: value 0, gap 0, mask False).

    The bucket is capped at the longest series of `data`: data sets of one
    length (the pendulum's 50 steps) then pay for no padding at all, and the
    number of compiled shapes grows by one at most."""
    longest = int(data.lengths.max())
    length = min(bucket_length(int(max(len(data.gaps[i]) for i in indices))), longest)
    u, mask = pad_batch([data.inputs[i] for i in indices], length, batch_size=rows)
    gaps, _ = pad_batch([data.gaps[i] for i in indices], length, batch_size=rows)
    batch = {"u": u, "gaps": gaps, "mask": mask}
    if data.extra is not None:
        batch["extra"], _ = pad_batch([data.extra[i] for i in indices], length, batch_size=rows)
    if data.targets is not None:
        if data.per_step:
            batch["y"], _ = pad_batch([data.targets[i] for i in indices], length, batch_size=rows)
            batch["weights"] = mask
        else:
            y = data.targets[indices]
            pad = np.zeros((rows - len(indices), *y.shape[1:]), y.dtype)
            batch["y"] = np.concatenate([y, pad])
            batch["weights"] = np.arange(rows) < len(indices)
    return batch


def batch_rows(n: int, batch_size: int) -> int:
    """Rows of every padded batch for `n` series: `batch_size`, or the next
    power of two ≥ n when that is smaller, so data sets of different sizes
    (cross-validation folds, prediction sets) share a few compiled shapes."""
    return min(int(batch_size), 1 << max(int(n) - 1, 0).bit_length())


def iterate_batches(
    data: Sequences, rows: int, *, shuffle: bool, rng: np.random.Generator | None = None
) -> Iterator[tuple[np.ndarray, dict]]:
    """(indices, batch) pairs; each batch split over the local devices
    (`placement_for(rows)`)."""
    placement = placement_for(rows)
    for indices in make_batches(data.lengths, rows, shuffle=shuffle, rng=rng):
        yield indices, placement.put_batch(padded_batch(data, indices, rows))


def _label(path, _leaf) -> str:
    name = getattr(path[-1], "name", None)
    return "ssm" if name in SSM_PARAMETERS else "regular"


def parameter_labels(params) -> Any:
    """"ssm" for S5SSM's Λ, B̃, log Δ leaves; "regular" for the rest."""
    return jax.tree_util.tree_map_with_path(_label, params)


@functools.lru_cache(maxsize=None)
def make_optimizer(weight_decay: float, grad_clip: float | None) -> optax.GradientTransformation:
    """Adam directions with decoupled weight decay on ordinary parameters only.

    The learning rate is applied in the step (it is an input there), so this
    transformation is the same object for every fit with these settings.
    """
    regular = optax.chain(optax.scale_by_adam(), optax.add_decayed_weights(weight_decay))
    parts = [optax.multi_transform({"regular": regular, "ssm": optax.scale_by_adam()}, parameter_labels)]
    if grad_clip is not None and grad_clip > 0:
        parts.insert(0, optax.clip_by_global_norm(grad_clip))
    return optax.chain(*parts)


def learning_rate_at(step: int, total_steps: int | None, warmup_steps: int, peak: float) -> float:
    """Linear warm-up from 0, then cosine decay to 0 at `total_steps` (or a
    constant `peak` when `total_steps` is None)."""
    if warmup_steps and step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    if total_steps is None:
        return peak
    span = max(total_steps - warmup_steps, 1)
    progress = min(max(step - warmup_steps, 0) / span, 1.0)
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


def _batched_outputs(model, batch, key, inference):
    extra = batch.get("extra")
    rows = batch["u"].shape[0]
    keys = None if key is None else jax.random.split(key, rows)

    def one(u, gaps, mask, extra, k):
        return model(u, gaps, mask, extra, key=k, inference=inference)

    return jax.vmap(one)(batch["u"], batch["gaps"], batch["mask"], extra, keys)


def _loss(model, batch, key, loss_fn):
    outputs = _batched_outputs(model, batch, key, inference=False)
    total, count = loss_fn(outputs, batch["y"], batch["weights"])
    return total / jnp.maximum(count, 1.0)


@eqx.filter_jit
def train_step(model, opt_state, batch, learning_rates, key, optimizer, loss_fn):
    """One optimiser step; returns (model, opt_state, loss)."""
    params = eqx.filter(model, eqx.is_inexact_array)
    loss, grads = eqx.filter_value_and_grad(_loss)(model, batch, key, loss_fn)
    directions, opt_state = optimizer.update(grads, opt_state, params)
    rates = jax.tree.map(
        lambda label: learning_rates[label], parameter_labels(directions)
    )
    updates = jax.tree.map(lambda d, rate: -rate * d, directions, rates)
    return eqx.apply_updates(model, updates), opt_state, loss


@eqx.filter_jit
def evaluate_batch(model, batch, metric_fn):
    """(sum, count) of `metric_fn` on one batch, without dropout."""
    outputs = _batched_outputs(model, batch, None, inference=True)
    return metric_fn(outputs, batch["y"], batch["weights"])


@eqx.filter_jit
def predict_batch(model, batch):
    return _batched_outputs(model, batch, None, inference=True)


def evaluate(model, data: Sequences, batch_size: int, metric_fn) -> float:
    """The mean of `metric_fn` over every real element of `data`."""
    total, count = 0.0, 0.0
    rows = batch_rows(len(data), batch_size)
    model = placement_for(rows).replicate(model)
    for _, batch in iterate_batches(data, rows, shuffle=False):
        s, c = evaluate_batch(model, batch, metric_fn)
        total += float(s)
        count += float(c)
    return total / max(count, 1.0)


def predict_outputs(model, data: Sequences, batch_size: int) -> list:
    """Network outputs per series, in input order (numpy; per step: trimmed to L_i)."""
    results: list = [None] * len(data)
    rows = batch_rows(len(data), batch_size)
    model = placement_for(rows).replicate(model)
    for indices, batch in iterate_batches(data, rows, shuffle=False):
        outputs = jax.tree.map(np.asarray, predict_batch(model, batch))
        for row, i in enumerate(indices):
            item = jax.tree.map(lambda o: o[row], outputs)
            if data.per_step:
                n = len(data.gaps[i])
                item = jax.tree.map(lambda o: o[:n], item)
            results[i] = item
    return results


@dataclasses.dataclass
class TrainingConfig:
    max_epochs: int = 100
    batch_size: int = 32
    learning_rate: float = 1e-3
    ssm_learning_rate: float | None = None
    weight_decay: float = 0.0
    warmup_epochs: int = 1
    grad_clip: float | None = 1.0
    n_iter_no_change: int | None = 10
    verbose: bool = False

    @classmethod
    def from_estimator(cls, estimator) -> "TrainingConfig":
        """The settings of an estimator with attributes of the same names."""
        return cls(**{field.name: getattr(estimator, field.name) for field in dataclasses.fields(cls)})


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


def train(
    state: TrainingState,
    train_data: Sequences,
    valid_data: Sequences | None,
    loss_fn: Callable,
    metric_fn: Callable,
    config: TrainingConfig,
    *,
    rng: np.random.Generator,
    key: jax.Array,
    epochs: int | None = None,
    schedule: str = "cosine",
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

    **Returns:** a `TrainingResult` with the best model.

    **Raises:** `NonFiniteLossError` (a `FloatingPointError`) when an epoch's
    loss is not finite, carrying the result up to the last good epoch.
    Ctrl-C (`KeyboardInterrupt`) after at least one finished epoch stops
    with a warning and returns the best model so far; before that it
    propagates.
    """
    if schedule not in ("cosine", "constant"):
        raise ValueError(f"schedule must be 'cosine' or 'constant', got {schedule!r}")
    epochs = config.max_epochs if epochs is None else epochs
    rows = batch_rows(len(train_data), config.batch_size)
    steps_per_epoch = len(make_batches(train_data.lengths, rows, shuffle=False))
    warmup_steps = config.warmup_epochs * steps_per_epoch
    ssm_rate = config.ssm_learning_rate if config.ssm_learning_rate is not None else config.learning_rate
    optimizer = make_optimizer(float(config.weight_decay), config.grad_clip)

    first_step = state.step
    # Replicated over the devices that share each batch; back on the default
    # device in the result.
    model, opt_state = placement_for(rows).replicate((state.model, state.opt_state))
    step = state.step
    history = list(state.history)
    # `good` is the state after the last epoch that finished with a finite
    # loss: what a NaN or a Ctrl-C falls back to.
    good = TrainingState(model=model, opt_state=opt_state, step=step, history=list(history))
    best_score, best_model, best_epoch = math.inf, model, len(history) - 1
    since_best = 0

    def result(interrupted=False):
        return TrainingResult(
            model=to_default_device(best_model),
            state=dataclasses.replace(
                good, model=to_default_device(good.model), opt_state=to_default_device(good.opt_state)
            ),
            best_epoch=best_epoch,
            interrupted=interrupted,
        )

    progress = _progress(epochs, config.verbose)
    try:
        for _ in range(epochs):
            epoch = len(history)
            started = time.perf_counter()
            losses = []
            for _, batch in iterate_batches(train_data, rows, shuffle=True, rng=rng):
                key, step_key = jax.random.split(key)
                if schedule == "cosine":
                    scale = learning_rate_at(step - first_step, epochs * steps_per_epoch, warmup_steps, 1.0)
                else:
                    scale = learning_rate_at(step, None, warmup_steps, 1.0)
                rates = {
                    "regular": jnp.float32(config.learning_rate * scale),
                    "ssm": jnp.float32(ssm_rate * scale),
                }
                model, opt_state, loss = train_step(model, opt_state, batch, rates, step_key, optimizer, loss_fn)
                step += 1
                losses.append(loss)
            train_loss = float(np.mean(jax.device_get(losses)))
            if not math.isfinite(train_loss):
                finished = len(history) > len(state.history)
                raise NonFiniteLossError(
                    f"the training loss became {train_loss} in epoch {epoch}; training stopped. "
                    "Try a smaller learning_rate or check the inputs' scale.",
                    result() if finished else None,
                )
            record = {"epoch": epoch, "train_loss": train_loss, "train_seconds": time.perf_counter() - started}
            if valid_data is not None and len(valid_data):
                score = evaluate(model, valid_data, config.batch_size, metric_fn)
                record["valid_score"] = score
            else:
                score = train_loss
            record["seconds"] = time.perf_counter() - started
            history.append(record)
            good = TrainingState(model=model, opt_state=opt_state, step=step, history=list(history))
            if score < best_score:
                best_score, best_model, best_epoch, since_best = score, model, epoch, 0
            else:
                since_best += 1
            progress.update(1)
            progress.set_postfix({k: f"{v:.4g}" for k, v in record.items() if k != "epoch"})
            if config.n_iter_no_change and since_best >= config.n_iter_no_change:
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
    return result()


def _progress(epochs: int, verbose: bool):
    from tqdm.auto import tqdm

    return tqdm(total=epochs, disable=not verbose, desc="epochs", leave=False)


def init_optimizer_state(model, config: TrainingConfig):
    optimizer = make_optimizer(float(config.weight_decay), config.grad_clip)
    return optimizer.init(eqx.filter(model, eqx.is_inexact_array))
