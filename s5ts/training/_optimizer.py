"""The optimiser: gradient clipping, then Adam with decoupled weight decay
for ordinary parameters and Adam without decay for the SSM parameters (Λ, B̃,
log Δ), each group with its own learning rate (`optax.multi_transform`).

The learning rates live in the optimiser state (`optax.inject_hyperparams`
around `optax.scale_by_learning_rate`); every step takes this step's rates
(from an optax schedule, `schedule_scales`, evaluated on the host) as array
inputs and writes them into the state: the compiled step never sees a
schedule, so fits with other learning rates, epochs or data sizes reuse it.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..nn import AbstractSSM

GROUPS = ("regular", "ssm")


def _is_ssm(node) -> bool:
    return isinstance(node, AbstractSSM)


def _label_ssm(node):
    if not _is_ssm(node):
        return node
    names = node.ssm_parameters
    return eqx.tree_at(lambda m: [getattr(m, n) for n in names], node, ["ssm"] * len(names))


def parameter_labels(params) -> Any:
    """"ssm" for the `ssm_parameters` of every `AbstractSSM` layer in
    `params` (`S5SSM`'s Λ, B̃, log Δ; DSS's λ, log Δ);
    "regular" for every other leaf."""
    labels = jax.tree.map(lambda _: "regular", params)
    return jax.tree.map(_label_ssm, labels, is_leaf=_is_ssm)


def _group(weight_decay: float) -> optax.GradientTransformation:
    parts = [optax.scale_by_adam()]
    if weight_decay:
        parts.append(optax.add_decayed_weights(weight_decay))
    parts.append(optax.inject_hyperparams(optax.scale_by_learning_rate)(learning_rate=0.0))
    return optax.chain(*parts)


@functools.lru_cache(maxsize=None)
def make_optimizer(weight_decay: float, grad_clip: float | None) -> optax.GradientTransformation:
    """The optimiser for these settings (one object per settings, so the
    compiled step is shared by every fit that uses them). Its learning rates
    are 0 until `with_learning_rates` sets them."""
    groups = optax.multi_transform({"regular": _group(weight_decay), "ssm": _group(0.0)}, parameter_labels)
    if grad_clip is not None and grad_clip > 0:
        return optax.chain(optax.clip_by_global_norm(grad_clip), groups)
    return groups


def with_learning_rates(opt_state, rates: dict[str, Any]):
    """`opt_state` with each group's learning rate set to `rates[group]`
    (a new state; the old one is unchanged)."""
    for group, rate in rates.items():

        def in_group(path, _value, group=group) -> bool:
            return any(getattr(key, "key", None) == group for key in path)

        opt_state = optax.tree_utils.tree_set(opt_state, in_group, learning_rate=jnp.asarray(rate, jnp.float32))
    return opt_state


def schedule_scales(steps: np.ndarray, total_steps: int | None, warmup_steps: int) -> np.ndarray:
    """The learning-rate multiplier at each of `steps`: optax's linear warm-up
    from 0 over `warmup_steps`, then cosine decay to 0 at `total_steps`
    (`optax.warmup_cosine_decay_schedule`), or, with `total_steps` None, the
    peak after the warm-up (`optax.warmup_constant_schedule`, for
    `partial_fit`, whose calls have no known end)."""
    steps = np.asarray(steps)
    total = None if total_steps is None else int(total_steps)
    return np.asarray(jax.device_get(_scales(steps, total, int(warmup_steps))), np.float64)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _scales(steps, total_steps: int | None, warmup_steps: int):
    """`schedule_scales` as one compiled program per schedule (op by op,
    each of the schedule's dozen operations would be its own)."""
    if total_steps is None:
        schedule = (
            optax.schedules.warmup_constant_schedule(0.0, 1.0, warmup_steps)
            if warmup_steps
            else optax.constant_schedule(1.0)
        )
    elif warmup_steps:
        decay_steps = max(total_steps, warmup_steps + 1)
        schedule = optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps, decay_steps, end_value=0.0)
    else:
        schedule = optax.cosine_decay_schedule(1.0, max(total_steps, 1))
    # optax's schedules mix their int32 step count with floats: allowed here
    # (host-side bookkeeping) under the strict promotion our tests use.
    with jax.numpy_dtype_promotion("standard"):
        return jnp.broadcast_to(schedule(steps), steps.shape)


@eqx.filter_jit
def init_optimizer_state(model, weight_decay: float, grad_clip: float | None):
    """A fresh optimiser state for `model`'s inexact arrays, its learning
    rates strongly typed float32 zeros (as the training step writes them, so
    the step compiles once); one compiled program per network shape."""
    state = make_optimizer(float(weight_decay), grad_clip).init(eqx.filter(model, eqx.is_inexact_array))
    return with_learning_rates(state, dict.fromkeys(GROUPS, 0.0))
