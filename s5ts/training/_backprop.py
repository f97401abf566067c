"""How a batch of sequences flows through the network in training and
inference: whole, or in chunks with the state carried (truncated
back-propagation through time). One object, passed once
(`TrainingConfig.backprop`, as diffrax passes an adjoint), owns it: the
loop, evaluation and prediction ask it how many optimiser steps an epoch
takes, how a batch is cut into the pieces each step sees, and how the
forward pass runs; nothing else threads a chunk length through.

- `WholeSequences()` (the default): one optimiser step per batch, the
  gradient through every step of every series.
- `TruncatedBackprop(chunk_length)`: a batch (rows of series, padded to a
  common length L) is cut along time into consecutive chunks of
  `chunk_length` steps (the last one padded to it; a batch no longer than
  `chunk_length` is one chunk of its own length). The network runs each
  chunk from the per-row states the previous chunk of the same rows ended
  in (`AbstractStatefulSequenceModel.batch_run`; zero for a batch's first
  chunk), so memory is set by `chunk_length`, not by the length of the
  series; a padded step leaves the state unchanged, so a row that ends
  early carries its final state through the remaining chunks. Training
  takes one optimiser step per chunk, with the gradient stopped at the
  incoming state. The forward pass over the chunks equals the
  whole-sequence forward pass (to float32 rounding). Batches are cut on
  the host, before they are placed on the devices, so each chunk goes
  through the same data-parallel step as a whole batch; data may be in
  memory or streamed (both give batches of the same plan).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Iterable, Iterator
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from ..nn import AbstractStatefulSequenceModel
from ._devices import placement_for
from ._split import Split

#: The smallest `chunk_length` accepted (shorter chunks spend their time on
#: per-step overhead).
MIN_CHUNK_LENGTH = 8


def n_chunks(length: int, chunk_length: int) -> int:
    """The chunks a batch padded to `length` steps is cut into."""
    return max(1, math.ceil(int(length) / int(chunk_length)))


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


def zero_states(model, rows: int) -> tuple:
    """Zero states of every block for `rows` rows: per block (rows, P)."""
    return jax.tree.map(lambda s: jnp.zeros((rows, *s.shape), s.dtype), model.init_state())


#: The keys of a batch that the network reads.
INPUTS = ("u", "gaps", "mask", "extra")


def _inputs(batch: dict) -> dict:
    """The network's inputs of `batch`: targets and weights in a forward
    pass's arguments would make it another program than prediction's."""
    return {name: batch[name] for name in INPUTS if name in batch}


def run_batch(model, batch, states, keys, inference):
    """(the network's outputs on every row of `batch`, the states its rows
    end in): the whole rows (`states` None: `model.batch`), or continuing
    from the carried `states` (per block (B, P)) with their gradient
    stopped (`model.batch_run`: a chunk). Row i's dropout key is `keys[i]`.
    A packed training batch (a `"segments"` array: `PackedSequences`) runs
    `model.packed`, its outputs one per row and slot of `"weights"`."""
    u, gaps, mask, extra = batch["u"], batch["gaps"], batch["mask"], batch.get("extra")
    if "segments" in batch:  # series packed end to end (`PackedSequences`): an output per row and slot
        slots = batch["weights"].shape[1]
        return model.packed(u, gaps, mask, batch["segments"], slots, extra, keys=keys, inference=inference), None
    if states is None:
        return model.batch(u, gaps, mask, extra, keys=keys, inference=inference), None
    return model.batch_run(u, gaps, mask, extra, jax.lax.stop_gradient(states), keys=keys, inference=inference)


@functools.partial(jax.jit, static_argnums=0)
def predict_batch(static, arrays, batch, states=None):
    """`run_batch` in inference, of the model `static.combine(arrays)` (a
    `Split`, made once per pass over the data: `_split`)."""
    return run_batch(static.combine(arrays), batch, states, None, True)


class AbstractBackprop(abc.ABC):
    """How a batch flows through the network (see the module docstring)."""

    #: Whether a thinned training batch may be cut short (`cut_batch`):
    #: not where an epoch's steps are planned from the batches' lengths.
    cuts_thinned: ClassVar[bool]

    @abc.abstractmethod
    def check(self, model, per_step: bool) -> None:
        """A `ValueError` when `model` with `per_step` targets cannot be trained this way."""

    @abc.abstractmethod
    def steps(self, data, rows: int) -> int:
        """The optimiser steps of an epoch over `data` (a `SequenceData`)."""

    @abc.abstractmethod
    def pieces(self, batches: Iterable[tuple[np.ndarray, dict]], rows: int) -> Iterator[tuple[bool, dict]]:
        """(first, piece) pairs over the host `batches` ((indices, batch) of
        `iterate_batches(..., place=False)`): what each optimiser step sees,
        placed on the devices (`placement_for(rows)`); `first` marks a
        piece whose rows start afresh."""

    @abc.abstractmethod
    def initial_states(self, model, rows: int):
        """The carried states a batch's first piece starts from (None: none carried)."""

    @abc.abstractmethod
    def forward(self, model: Split, batch: dict, rows: int, per_step: bool) -> Iterator[tuple[dict, object]]:
        """(piece, outputs) of the placed `batch` in inference, in time order,
        of the model split once (`Split`)."""


@final
@dataclasses.dataclass(frozen=True)
class WholeSequences(AbstractBackprop):
    """One optimiser step per batch, the gradient through every step."""

    cuts_thinned = True

    def check(self, model, per_step: bool) -> None:
        pass

    def steps(self, data, rows: int) -> int:
        return data.steps_per_epoch(rows)

    def pieces(self, batches, rows):
        placement = placement_for(rows)
        for _, batch in batches:
            yield True, placement.put_batch(batch)

    def initial_states(self, model, rows: int):
        return None

    def forward(self, model, batch, rows, per_step):
        yield batch, predict_batch(model.static, model.arrays, _inputs(batch))[0]


@final
@dataclasses.dataclass(frozen=True)
class TruncatedBackprop(AbstractBackprop):
    """Chunks of `chunk_length` steps, the state carried from one to the
    next and the gradient stopped there (see the module docstring)."""

    cuts_thinned = False  # an epoch's chunks are counted from the padded lengths
    chunk_length: int

    def __post_init__(self):
        chunk_length = self.chunk_length
        if isinstance(chunk_length, bool) or not isinstance(chunk_length, (int, np.integer)):
            raise TypeError(f"chunk_length must be an int or None, got {type(chunk_length).__name__}")
        if chunk_length < MIN_CHUNK_LENGTH:
            raise ValueError(f"chunk_length must be >= {MIN_CHUNK_LENGTH} or None, got {chunk_length}")

    def check(self, model, per_step: bool) -> None:
        """Chunks need per-step targets of a causal network that carries
        its states (`AbstractStatefulSequenceModel`: a unidirectional S5
        `SequenceNetwork` with pooling "none"), and one process."""
        needs = "chunk_length needs per-step targets (one per observation) of a causal network"
        if not per_step:
            raise ValueError(f"{needs}; y has one target per series (pooling): set chunk_length=None")
        if not isinstance(model, AbstractStatefulSequenceModel) or not model.per_step:
            raise ValueError(f"{needs} that carries its states (an S5 network); set chunk_length=None")
        if not model.causal:
            raise ValueError(f"{needs}; a bidirectional network sees the future: set bidirectional=False")
        if jax.process_count() > 1:
            # each process would cut its own rows into its own number of chunks
            raise ValueError("chunk_length is not supported across several processes (jax.distributed)")

    def steps(self, data, rows: int) -> int:
        """For every batch of the plan (`batch_lengths`), the chunks of its
        padded length. An upper bound: a batch's chunks beyond its longest
        series hold padding alone and are skipped (`chunk_batch`), so an
        epoch of series of mixed lengths may take fewer."""
        return sum(n_chunks(int(length), int(self.chunk_length)) for length in data.batch_lengths(rows))

    def pieces(self, batches, rows):
        placement = placement_for(rows)
        for _, batch in batches:
            for i, chunk in enumerate(chunk_batch(batch, self.chunk_length)):
                yield i == 0, placement.put_batch(chunk)

    def initial_states(self, model, rows: int):
        return zero_states(model, rows)

    def forward(self, model, batch, rows, per_step):
        if not per_step:
            yield from WholeSequences().forward(model, batch, rows, per_step)
            return
        placement = placement_for(rows)
        states = zero_states(model.tree, rows)
        for chunk in chunk_batch(batch, self.chunk_length):
            outputs, states = predict_batch(model.static, model.arrays, placement.put_batch(_inputs(chunk)), states)
            yield chunk, outputs


def backprop_for(chunk_length: int | None) -> AbstractBackprop:
    """The estimators' `chunk_length` as a way of computing: None is
    `WholeSequences()`, an int `TruncatedBackprop(chunk_length)`."""
    return WholeSequences() if chunk_length is None else TruncatedBackprop(chunk_length)
