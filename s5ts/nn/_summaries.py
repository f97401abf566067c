"""Per-series summary features of a sequence's observed steps: what a
random forest on summary statistics sees, computed exactly on the irregular
steps, for a network's head to read beside the S5 pooling
(`SequenceNetwork`'s `summaries`).

Per input channel: the mean, standard deviation, minimum, maximum, first
and last value, and the trend, cov(t, u) / sd(t) (the change over one
standard deviation of the series' times, so independent of the time unit);
per series: log(1 + n) of the number of steps n, log(1 + span) of the time
from its first to its last step, and log(1 + span / (n − 1)) of its mean
gap. Times are the cumulative sums of the gaps, so only differences of them
enter (a row of several series packed end to end gives each its own).
Pure functions; the summaries are constants of the data (no gradient
flows into them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

#: The summaries computed per input channel, in order.
PER_CHANNEL = ("mean", "std", "min", "max", "first", "last", "trend")
#: The summaries computed once per series, in order.
PER_SERIES = ("log_count", "log_span", "log_mean_gap")


def n_summaries(n_inputs: int) -> int:
    """The number of summary features of a sequence of `n_inputs` channels."""
    return len(PER_CHANNEL) * n_inputs + len(PER_SERIES)


def segment_summaries(
    u: Float[Array, "N D"], gaps: Float[Array, " N"], ids: Int[Array, " N"], n: int
) -> Float[Array, "n S"]:
    """The summaries (n, `n_summaries(D)`) of the segments of steps numbered
    by `ids` (0 … n − 1; each segment's steps in time order; an id ≥ n is
    left out, e.g. padding). An empty segment's summaries are 0. Layout:
    `PER_CHANNEL` blocks of D columns each, then `PER_SERIES`."""
    keep = ids < n
    u = jnp.where(keep[:, None], u, 0.0)
    times = jnp.cumsum(jnp.where(keep, gaps, 0.0))

    def total(x):
        return jax.ops.segment_sum(x, ids, n)

    count = total(jnp.ones(ids.shape, u.dtype))
    present = count > 0
    divisor = jnp.maximum(count, 1.0)
    mean = total(u) / divisor[:, None]
    centred = u - mean[jnp.minimum(ids, n - 1)]
    std = jnp.sqrt(total(centred**2) / divisor[:, None])
    top = jnp.where(present[:, None], jax.ops.segment_max(u, ids, n), 0.0)
    bottom = jnp.where(present[:, None], -jax.ops.segment_max(-u, ids, n), 0.0)
    index = jnp.arange(ids.shape[0])
    first = u[jnp.clip(jax.ops.segment_min(index, ids, n), 0, ids.shape[0] - 1)]
    last = u[jnp.clip(jax.ops.segment_max(index, ids, n), 0, ids.shape[0] - 1)]
    t_mean = total(times) / divisor
    t_centred = jnp.where(keep, times - t_mean[jnp.minimum(ids, n - 1)], 0.0)
    t_var = total(t_centred**2) / divisor
    covariance = total(t_centred[:, None] * centred) / divisor[:, None]
    spread = t_var > 0
    trend = jnp.where(spread[:, None], covariance / jnp.sqrt(jnp.where(spread, t_var, 1.0))[:, None], 0.0)
    span = jnp.where(present, jax.ops.segment_max(times, ids, n) + jax.ops.segment_max(-times, ids, n), 0.0)
    per_series = jnp.stack(
        [jnp.log1p(count), jnp.log1p(span), jnp.log1p(span / jnp.maximum(count - 1.0, 1.0))], axis=-1
    )
    per_channel = [mean, std, bottom, top, first, last, trend]
    summaries = jnp.concatenate([*per_channel, per_series], axis=-1)
    return jnp.where(present[:, None], summaries, 0.0)


def sequence_summaries(
    u: Float[Array, "L D"], gaps: Float[Array, " L"], mask: Bool[Array, " L"]
) -> Float[Array, " S"]:
    """The summaries (`n_summaries(D)`,) of one sequence's observed steps
    (`mask`; padding left out, whatever it holds)."""
    return segment_summaries(u, gaps, jnp.where(mask, 0, 1), 1)[0]
