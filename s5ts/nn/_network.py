"""A sequence network: per-step encoder → projection → S5 blocks → head.

The head reads every step (sequence-to-sequence) or a masked pooling of the
steps (sequence-level: "mean", "max" or "last").
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Complex, Float, Int, Key, PRNGKeyArray

from ._block import S5Block
from ._model import AbstractPackedSequenceModel, AbstractStatefulSequenceModel
from ._summaries import segment_summaries, sequence_summaries


def elup1(x: Array) -> Array:
    """exp(x) for x < 0, x + 1 otherwise: a smooth positive map."""
    return jnp.where(x < 0, jnp.exp(jnp.minimum(x, 0.0)), x + 1.0)


class MLPHead(eqx.Module):
    """Linear → tanh → Linear, on one feature vector."""

    hidden: eqx.nn.Linear
    out: eqx.nn.Linear

    def __init__(self, in_features: int, out_features: int, hidden: int, *, key: PRNGKeyArray, dtype=None):
        k1, k2 = jax.random.split(key)
        self.hidden = eqx.nn.Linear(in_features, hidden, key=k1, dtype=dtype)
        self.out = eqx.nn.Linear(hidden, out_features, key=k2, dtype=dtype)

    def __call__(self, h: Float[Array, " H"]) -> Float[Array, " K"]:
        return self.out(jnp.tanh(self.hidden(h)))


class GaussianHead(eqx.Module):
    """A mean head and a variance head (variance = elup1 of the second), as in
    the S5 pendulum model. Returns `(mean (K,), variance (K,))`."""

    mean: MLPHead
    variance: MLPHead

    def __init__(self, in_features: int, out_features: int, hidden: int, *, key: PRNGKeyArray, dtype=None):
        k1, k2 = jax.random.split(key)
        self.mean = MLPHead(in_features, out_features, hidden, key=k1, dtype=dtype)
        self.variance = MLPHead(in_features, out_features, hidden, key=k2, dtype=dtype)

    def __call__(self, h: Float[Array, " H"]) -> tuple[Float[Array, " K"], Float[Array, " K"]]:
        return self.mean(h), elup1(self.variance(h))


def masked_mean(h: Float[Array, "L H"], mask: Bool[Array, " L"]) -> Float[Array, " H"]:
    weights = mask.astype(h.dtype)
    return weights @ h / jnp.maximum(weights.sum(), 1.0)


def masked_max(h: Float[Array, "L H"], mask: Bool[Array, " L"]) -> Float[Array, " H"]:
    """The largest value of each feature over the observed steps (0 when no
    step is observed: a padding row of a batch). Padding, whatever it holds,
    never wins, and its gradient is 0."""
    lowest = jnp.finfo(h.dtype).min
    top = jnp.max(jnp.where(mask[:, None], h, lowest), axis=0)
    return jnp.where(jnp.any(mask), top, 0.0)


def masked_last(h: Float[Array, "L H"], mask: Bool[Array, " L"]) -> Float[Array, " H"]:
    index = jnp.max(jnp.where(mask, jnp.arange(mask.shape[0]), 0))
    return h[index]


def masked_max_mean(h: Float[Array, "L H"], mask: Bool[Array, " L"]) -> Float[Array, " 2*H"]:
    """Each feature's largest value and its mean over the observed steps,
    side by side (`masked_max`, then `masked_mean`)."""
    return jnp.concatenate([masked_max(h, mask), masked_mean(h, mask)])


#: The sequence-level poolings, each (L, H) features and (L,) mask → (H,)
#: (`"max_mean"`: (2H,), `pooled_width`).
POOLS = {"mean": masked_mean, "max": masked_max, "last": masked_last, "max_mean": masked_max_mean}


def pooled_width(pooling: str, d_model: int) -> int:
    """How many features a pooling of `d_model` features gives the head
    (`"none"`: each step's `d_model`): the width of its `POOLS` function's
    output, read from its shape without computing it."""
    if pooling == "none":
        return d_model
    if pooling not in POOLS:
        raise ValueError(f"pooling must be one of {('none', *POOLS)}, got {pooling!r}")
    features = jax.ShapeDtypeStruct((1, d_model), jnp.float32)
    return jax.eval_shape(POOLS[pooling], features, jax.ShapeDtypeStruct((1,), jnp.bool_)).shape[-1]


def segment_mean(h: Float[Array, "N H"], ids: Int[Array, " N"], n: int) -> Float[Array, "n H"]:
    counts = jax.ops.segment_sum(jnp.ones(ids.shape, h.dtype), ids, n)
    return jax.ops.segment_sum(h, ids, n) / jnp.maximum(counts, 1.0)[:, None]


def segment_max(h: Float[Array, "N H"], ids: Int[Array, " N"], n: int) -> Float[Array, "n H"]:
    """The largest value of each feature per segment (0 for an empty one)."""
    top = jax.ops.segment_max(h, ids, n)
    return jnp.where(jnp.isfinite(top), top, 0.0)


def segment_last(h: Float[Array, "N H"], ids: Int[Array, " N"], n: int) -> Float[Array, "n H"]:
    """Each segment's last step (steps of a segment in order)."""
    last = jax.ops.segment_max(jnp.arange(ids.shape[0]), ids, n)
    return h[jnp.clip(last, 0, ids.shape[0] - 1)]


def segment_max_mean(h: Float[Array, "N H"], ids: Int[Array, " N"], n: int) -> Float[Array, "n 2*H"]:
    """`segment_max` and `segment_mean` side by side, as `masked_max_mean`."""
    return jnp.concatenate([segment_max(h, ids, n), segment_mean(h, ids, n)], axis=-1)


#: The poolings of `POOLS` over segments of steps (`SequenceNetwork.packed`):
#: (N, H) features, (N,) segment ids and the number of segments → (n, H).
SEGMENT_POOLS = {"mean": segment_mean, "max": segment_max, "last": segment_last, "max_mean": segment_max_mean}

#: `SequenceNetwork`'s `pooling` values: "none" (an output per step) or a pooling.
POOLINGS = ("none", *POOLS)


class SequenceNetwork(AbstractStatefulSequenceModel, AbstractPackedSequenceModel):
    """Encoder → Linear to `d_model` → stacked `S5Block`s → head, on one sequence.

    **Arguments:**

    - `encoder`: a per-step module `(d_in,) -> (d_enc,)` with an
      `out_features` attribute (e.g. `IdentityEncoder`, `PendulumCNN`).
    - `head`: a per-vector module `(d_model,) -> output` (an
      `eqx.nn.Linear`, `MLPHead`, `GaussianHead`, …).
    - `n_extra`: features appended after the encoder (e.g. the gap, for the
      paper's S5-append ablation).
    - `pooling`: `"none"` (an output per step), `"mean"`, `"max"` (each
      feature's largest value over the steps), `"last"` or `"max_mean"`
      (the max and the mean side by side: the head reads 2·`d_model`
      features, `pooled_width`); one output per sequence, padding excluded.
    - `summaries`: with a pooling, the head reads the pooled features with
      the series' summary features appended (`s5ts.nn.sequence_summaries`
      of its inputs and gaps: `pooled_width + n_summaries(d_in)` features in).
    - `blocks`: a sequence of `S5Block`s (all with the same `d_model`).
    - `dtype`: of the input projection (None: JAX's default float); build
      the encoder, blocks and head with the same one.

    **Call:** `net(u (L, d_in), gaps (L,), mask (L,), extra (L, n_extra) | None,
    *, key=None, inference=True)` returns the head's output for every step
    (leading axis L) or once per sequence. `net.batch(u (B, L, d_in), gaps
    (B, L), mask (B, L), extra, *, keys=None, inference=True)` is the call
    vmapped over B sequences, with the encoder run on all B·L steps at once
    (what the training loop uses).
    """

    encoder: eqx.Module
    projection: eqx.nn.Linear
    blocks: tuple[S5Block, ...]
    head: eqx.Module
    n_extra: int = eqx.field(static=True)
    pooling: str = eqx.field(static=True)
    summaries: bool = eqx.field(static=True)

    def __init__(
        self,
        encoder: eqx.Module,
        blocks: tuple[S5Block, ...] | list[S5Block],
        head: eqx.Module,
        *,
        n_extra: int = 0,
        pooling: str = "none",
        summaries: bool = False,
        key: PRNGKeyArray,
        dtype=None,
    ):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if summaries and pooling == "none":
            raise ValueError("summaries are read beside a pooling: they need pooling other than 'none'")
        if not blocks:
            raise ValueError("a SequenceNetwork needs at least one S5Block")
        d_model = blocks[0].ssm.d_model
        self.encoder = encoder
        self.projection = eqx.nn.Linear(encoder.out_features + n_extra, d_model, key=key, dtype=dtype)
        self.blocks = tuple(blocks)
        self.head = head
        self.n_extra = n_extra
        self.pooling = pooling
        self.summaries = bool(summaries)

    def _project(self, features_k: Float[Array, " F"], extra_k: Float[Array, " E"] | None) -> Float[Array, " H"]:
        """One step's encoder features, with its extra features appended, to H."""
        if self.n_extra:
            features_k = jnp.concatenate([features_k, extra_k])
        return self.projection(features_k)

    def _embedded(self, u, mask, extra):
        """The steps' embeddings (..., H) for inputs (..., D) of any leading
        shape, and the mask (L,) all True when None."""
        if mask is None:
            mask = jnp.ones(u.shape[:-1], dtype=bool)
        length = u.shape[-2]
        if self.n_extra and (extra is None or extra.shape != (*u.shape[:-1], self.n_extra)):
            raise ValueError(f"this network needs extra features of shape ({length}, {self.n_extra})")
        # Padding may hold NaN or garbage: replace it before the encoder so
        # neither outputs nor gradients see it.
        u = jnp.where(mask[..., None], u, 0.0)
        if extra is not None:
            extra = jnp.where(mask[..., None], extra, 0.0)
        # The encoder sees every step at once, rank-2 inputs (steps, D)
        # whatever the leading shape: a third faster for the pendulum CNN
        # than under two nested vmaps (`batch`), and an encoder with a
        # `batch` method (`PendulumCNN`) computes them as it sees fit.
        lead = u.shape[:-1]
        flat_u = u.reshape(-1, u.shape[-1])
        encode = getattr(self.encoder, "batch", None) or jax.vmap(self.encoder)
        flat_extra = None if extra is None else extra.reshape(-1, extra.shape[-1])
        h = jax.vmap(self._project)(encode(flat_u), flat_extra)
        return h.reshape(*lead, -1), mask

    def _blocks(self, h, gaps, mask, state, key, inference, every_step=False, reset=None):
        """Blocks' output (L, H) and the states after the last real step (or,
        `every_step`, after every step: per block (L, P)); `reset` (L,): see
        `packed`."""
        keys = [None] * len(self.blocks) if key is None else list(jax.random.split(key, len(self.blocks)))
        states = [None] * len(self.blocks) if state is None else list(state)
        last_states = []
        for block, block_state, block_key in zip(self.blocks, states, keys):
            h, block_states = block.with_states(
                h, gaps, mask, block_state, reset, key=block_key, inference=inference
            )
            last_states.append(block_states if every_step else block_states[-1])
        return h, tuple(last_states)

    def _pooled_head(self, pooled, side):
        """The head on pooled features, the summaries `side` appended when
        the network reads them."""
        return self.head(jnp.concatenate([pooled, side]) if self.summaries else pooled)

    def _side(self, u, gaps, mask):
        """The sequence's summaries when the network reads them, else None."""
        return sequence_summaries(u, gaps, mask) if self.summaries else None

    def _output(self, h, mask, side):
        if self.pooling == "none":
            return jax.vmap(self.head)(h)
        return self._pooled_head(POOLS[self.pooling](h, mask), side)

    def _run(self, h, side, gaps, mask, state, key, inference):
        """(outputs, per block the state after the last real step) of one
        embedded sequence (`side`: its summaries, or None)."""
        h, last_states = self._blocks(h, gaps, mask, state, key, inference)
        return self._output(h, mask, side), last_states

    def _batch_run(self, u, gaps, mask, extra, state, keys, inference):
        """`_run` over B sequences, the encoder on all B·L steps at once (`batch`)."""
        h, mask = self._embedded(u, mask, extra)
        side = jax.vmap(self._side)(u, gaps, mask) if self.summaries else None
        return jax.vmap(lambda *row: self._run(*row, inference))(h, side, gaps, mask, state, keys)

    def __call__(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: Float[Array, "L E"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> Any:
        h, mask = self._embedded(u, mask, extra)
        return self._run(h, self._side(u, gaps, mask), gaps, mask, None, key, inference)[0]

    def batch(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        extra: Float[Array, "B L E"] | None = None,
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> Any:
        """`jax.vmap` of the call over B sequences (`keys` (B,) or None), with
        the encoder applied to all B·L steps in one vmap: under two nested
        vmaps XLA sees rank-5 image batches, and the pendulum CNN's
        forward+backward took 200 ms instead of 158 ms (32 × 50 frames, CPU)."""
        return self._batch_run(u, gaps, mask, extra, None, keys, inference)[0]

    @property
    def packs(self) -> bool:
        return self.pooling != "none"

    def packed(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        segments: Int[Array, "B L"],
        n_segments: int,
        extra: Float[Array, "B L E"] | None = None,
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> Any:
        """The pooled outputs (B, n_segments, ...) of series packed end to
        end in B rows: `segments` (B, L) numbers each real step's series
        within its row (0 … n_segments − 1; each series' steps contiguous,
        in time order; padding any value). A series starts afresh where its
        number starts (a reset of every block's state), and its steps are
        pooled alone: each output equals `batch` on that series padded in a
        row of its own, without padding every series to a common length
        (`s5ts.data.pack_rows` lays a panel out so). Numbers a row does not
        use give the pooling of no step (0 for max and mean). Rows are
        independent, so a batch splits over devices by rows."""
        if not self.packs:
            raise ValueError("packed() pools each series: it needs a network with a pooling, not pooling='none'")
        h, mask = self._embedded(u, mask, extra)

        def row(u, h, gaps, mask, segments, key):
            previous = jnp.concatenate([jnp.full_like(segments[:1], -1), segments[:-1]])
            reset = mask & (segments != previous)
            h = self._blocks(h, gaps, mask, None, key, inference, reset=reset)[0]
            ids = jnp.where(mask, segments, n_segments)  # padding pooled into a dropped extra segment
            pooled = SEGMENT_POOLS[self.pooling](h, ids, n_segments + 1)[:n_segments]
            side = segment_summaries(u, gaps, ids, n_segments) if self.summaries else None
            return jax.vmap(self._pooled_head)(pooled, side)

        return jax.vmap(row)(u, h, gaps, mask, segments, keys)

    def batch_run(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        extra: Float[Array, "B L E"] | None,
        state: tuple[Complex[Array, "B P"], ...],
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> tuple[Any, tuple[Complex[Array, "B P"], ...]]:
        """`batch` for causal per-step networks, each row continuing from its
        `state` (per block (B, P)): returns `(per-step outputs (B, L, ...),
        per block the states (B, P) after each row's last real step)`, so
        chunks of long series can be trained and predicted one after the
        other (`s5ts.training`'s `chunk_length`)."""
        self._require_per_step("batch_run()")
        return self._batch_run(u, gaps, mask, extra, state, keys, inference)

    def states(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: Float[Array, "L E"] | None = None,
        state: tuple[Complex[Array, " P"], ...] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> tuple[Complex[Array, "L P"], ...]:
        """Sequence mode's states of every block after every step (a padded
        step repeats the state before it), from `state` (default: zero), for
        causal per-step networks: `step` from the state after step k equals
        continuing the sequence there."""
        self._require_per_step("states()")
        state = self.init_state() if state is None else state
        h, mask = self._embedded(u, mask, extra)
        _, states = self._blocks(h, gaps, mask, state, key, inference, every_step=True)
        return states

    @property
    def per_step(self) -> bool:
        return self.pooling == "none"

    @property
    def causal(self) -> bool:
        return not any(block.ssm.bidirectional for block in self.blocks)

    def _require_per_step(self, what: str) -> None:
        if self.pooling != "none":
            raise ValueError(f"{what} needs per-step outputs (pooling='none'), not {self.pooling!r}")

    def init_state(self) -> tuple[Complex[Array, " P"], ...]:
        """Zero states of every block: the start of a new series."""
        return tuple(block.init_state() for block in self.blocks)

    def step(
        self,
        state: tuple[Complex[Array, " P"], ...],
        u_k: Float[Array, " D"],
        gap_k: Float[Array, ""],
        extra_k: Float[Array, " E"] | None = None,
    ) -> tuple[tuple[Complex[Array, " P"], ...], Any]:
        """Online mode for causal per-step networks: `(state, u_k, gap_k) ->
        (new_state, output_k)`, equal to the sequence mode's output at step k."""
        self._require_per_step("step mode")
        h = self._project(self.encoder(u_k), extra_k)
        new_state = []
        for block, block_state in zip(self.blocks, state):
            block_state, h = block.step(block_state, h, gap_k)
            new_state.append(block_state)
        return tuple(new_state), self.head(h)

    def run(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: Float[Array, "L E"] | None = None,
        state: tuple[Complex[Array, " P"], ...] | None = None,
    ) -> tuple[Any, tuple[Complex[Array, " P"], ...]]:
        """Sequence mode that also carries states (inference, causal networks):
        continues from `state` and returns `(per-step outputs, states after the
        last real step)`, so a long series can be processed in chunks."""
        self._require_per_step("run()")
        h, mask = self._embedded(u, mask, extra)
        return self._run(h, None, gaps, mask, self.init_state() if state is None else state, None, True)
