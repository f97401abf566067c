"""Very long series in chunks, with the state carried from one chunk to the next.

A batch of `iterate_batches` (rows of series, padded to a common length L)
is cut along time into consecutive chunks of `chunk_length` steps (the
last one padded to it; a batch no longer than `chunk_length` is one chunk
of its own length). The network runs each chunk from the per-row states
the previous chunk of the same rows ended in (`SequenceNetwork.batch_run`;
zero for a batch's first chunk), so memory is set by `chunk_length`, not
by the length of the series; a padded step leaves the state unchanged, so
a row that ends early carries its final state through the remaining
chunks. Training takes one optimiser step per chunk, with the gradient
stopped at the incoming state: truncated back-propagation through time
(`train_chunk_step` in `_loop`). The forward pass over the chunks equals
the whole-sequence forward pass (to float32 rounding).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..nn import AbstractStatefulSequenceModel
from ._devices import placement_for

#: The smallest `chunk_length` accepted (shorter chunks spend their time on
#: per-step overhead).
MIN_CHUNK_LENGTH = 8


def check_chunking(model, per_step: bool, chunk_length: int | None) -> None:
    """Raise a ValueError naming `chunk_length` when `model` cannot be
    trained in chunks: chunking needs per-step targets of a causal network
    with carried states (`batch_run`: a unidirectional S5 `SequenceNetwork`
    with pooling "none") and one process; the data may be in memory or
    streamed (`SequenceData`: both give batches of the same plan)."""
    if chunk_length is None:
        return
    if isinstance(chunk_length, bool) or not isinstance(chunk_length, (int, np.integer)):
        raise TypeError(f"chunk_length must be an int or None, got {type(chunk_length).__name__}")
    if chunk_length < MIN_CHUNK_LENGTH:
        raise ValueError(f"chunk_length must be >= {MIN_CHUNK_LENGTH} or None, got {chunk_length}")
    needs = "chunk_length needs per-step targets (one per observation) of a causal network"
    if not per_step:
        raise ValueError(f"{needs}; y has one target per series (pooling): set chunk_length=None")
    if not isinstance(model, AbstractStatefulSequenceModel) or not model.per_step:
        raise ValueError(f"{needs} that carries its states (an S5 network); set chunk_length=None")
    if not model.causal:
        raise ValueError(f"{needs}; a bidirectional network sees the future: set bidirectional=False")
    if jax.process_count() > 1:
        raise ValueError("chunk_length is not supported across several processes (jax.distributed)")


def n_chunks(length: int, chunk_length: int) -> int:
    """The chunks a batch padded to `length` steps is cut into."""
    return max(1, math.ceil(int(length) / int(chunk_length)))


def chunk_steps_per_epoch(data, rows: int, chunk_length: int) -> int:
    """The optimiser steps of an epoch over `data` (a `SequenceData`, in
    memory or streamed) in chunks: for every batch of its plan
    (`batch_lengths`), the chunks of its padded length. An upper bound: a
    batch's chunks beyond its longest series hold padding alone and are
    skipped (`chunk_batch`), so an epoch of series of mixed lengths may
    take fewer."""
    return sum(n_chunks(int(length), int(chunk_length)) for length in data.batch_lengths(rows))


def chunk_batch(batch: dict, chunk_length: int, real_length: int | None = None) -> Iterator[dict]:
    """The consecutive chunks of `batch` (arrays (B, L, ...), or (B,) per-row
    ones, repeated in every chunk) along time, as numpy: each `chunk_length`
    steps, the last one padded to it (value 0, gap 0, mask False, weight 0);
    a batch with L ≤ `chunk_length` is one chunk of length L. Chunks from
    `real_length` on (the longest row's real steps) hold padding alone and
    are left out."""
    arrays = {name: np.asarray(value) for name, value in batch.items()}
    length = arrays["mask"].shape[1]
    if length <= chunk_length:
        yield arrays
        return
    if real_length is None:
        real_length = int(arrays["mask"].sum(axis=1).max(initial=0))
    for start in range(0, max(real_length, 1), chunk_length):
        chunk = {}
        for name, value in arrays.items():
            if value.ndim < 2 or value.shape[1] != length:
                chunk[name] = value
                continue
            piece = value[:, start : start + chunk_length]
            missing = chunk_length - piece.shape[1]
            if missing:
                pad = [(0, 0), (0, missing)] + [(0, 0)] * (piece.ndim - 2)
                piece = np.pad(piece, pad)
            chunk[name] = piece
        yield chunk


def chunked(batches: Iterable[tuple[np.ndarray, dict]], rows: int, chunk_length: int) -> Iterator[tuple[bool, dict]]:
    """(first, chunk) pairs over `batches` ((indices, batch) of
    `iterate_batches`): each batch's chunks in time order, placed on the
    devices (`placement_for(rows)`); `first` marks a batch's first chunk,
    where the states start from zero."""
    placement = placement_for(rows)
    for _, batch in batches:
        for i, chunk in enumerate(chunk_batch(batch, chunk_length)):
            yield i == 0, placement.put_batch(chunk)


def zero_states(model, rows: int) -> tuple:
    """Zero states of every block for `rows` rows: per block (rows, P)."""
    return jax.tree.map(lambda s: jnp.zeros((rows, *s.shape), s.dtype), model.init_state())


@eqx.filter_jit
def predict_chunk(model, batch, states):
    """(per-step outputs (B, C, ...), states after each row's last real step)
    of one chunk, continuing from `states` (per block (B, P))."""
    return model.batch_run(batch["u"], batch["gaps"], batch["mask"], batch.get("extra"), states, inference=True)


def chunked_outputs(model, batch: dict, rows: int, chunk_length: int) -> Iterator[tuple[dict, object]]:
    """(chunk, outputs) of every chunk of one batch, the states carried
    from chunk to chunk (inference: no dropout)."""
    placement = placement_for(rows)
    states = zero_states(model, rows)
    for chunk in chunk_batch(batch, chunk_length):
        outputs, states = predict_chunk(model, placement.put_batch(chunk), states)
        yield chunk, outputs
