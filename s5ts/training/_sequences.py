"""Model-ready ragged data and its padded batches.

A `Sequences` holds one entry per series; batches group series of one
length bucket (`s5ts.data.plan_buckets`) and are padded to a fixed number of
rows (the batch size, or the next power of two for smaller data sets), so a
fit compiles one training step per bucket.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..data import assign_buckets, bucket_length, make_batches, pad_batch, plan_buckets
from ._devices import placement_for
from ._thinning import draw_kept, keep_observations


class SequenceData(abc.ABC):
    """What training, evaluation and prediction read: series with known
    lengths, in padded batches of the length buckets of `plan_buckets`, in
    memory (`Sequences`) or read chunk by chunk (`StreamedSequences`). Each
    batches its own way; the plan of an epoch (`batch_lengths`) is the same
    for the same series."""

    per_step: bool
    cap_length: bool
    elapsed: tuple[str, ...]
    #: (n,) int64 the length of every series, by position.
    lengths: np.ndarray

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def subset(self, indices) -> "SequenceData":
        """The series at the sorted positions `indices`, renumbered from 0."""

    @abc.abstractmethod
    def iterate_batches(
        self,
        rows: int,
        *,
        shuffle: bool,
        rng: np.random.Generator | None = None,
        observation_dropout: float = 0.0,
        place: bool = True,
    ) -> Iterator[tuple[np.ndarray, dict]]:
        """(positions, batch) pairs: every series once, in padded batches of
        `rows` rows placed on the devices (`placement_for(rows)`; with
        `place=False` as numpy, this process's rows of each batch)."""

    def batch_lengths(self, rows: int) -> np.ndarray:
        """The padded length of every batch of an epoch, in plan order: per
        length bucket, shortest first, ⌈series / rows⌉ batches
        (`make_batches`' plan)."""
        buckets, counts = np.unique(self._padded(), return_counts=True)
        return np.repeat(buckets, [math.ceil(c / rows) for c in counts]).astype(np.int64)

    def steps_per_epoch(self, rows: int) -> int:
        return len(self.batch_lengths(rows))

    def _padded(self) -> np.ndarray:
        """(n,) the padded length (bucket) of every series."""
        return assign_buckets(self.lengths, plan_buckets(self.lengths, cap=self.cap_length))

    def _thinned(self, batch, row_lengths, rows, length, rate, rng, mine):
        """`batch`, this process's rows `mine` of a batch of `rows` rows whose
        first ones hold series of `row_lengths` (0: padding), with each
        observation dropped with probability `rate` (`observation_dropout`).
        Drawn over the whole batch's mask, known from the lengths alone, so
        every process draws the same numbers."""
        if rate <= 0:
            return batch
        full = np.zeros(rows, np.int64)
        full[: len(row_lengths)] = row_lengths
        kept = draw_kept(np.arange(length)[None, :] < full[:, None], rate, rng)[mine]
        return keep_observations(batch, kept, per_step=self.per_step, elapsed=self.elapsed)


@dataclasses.dataclass(frozen=True)
class Sequences(SequenceData):
    """Model-ready ragged data, in memory.

    - `inputs`: n arrays (L_i, D) float32.
    - `gaps`: n arrays (L_i,) float32, in model time units.
    - `extra`: n arrays (L_i, E) float32 appended after the encoder, or None.
    - `targets`: per step, n arrays (L_i, K); per sequence, an array (n, K)
      (float32, or int32 class indices (n,)); None at prediction.
    - `weights`: (n,) float32 weight of each series in the loss and the
      validation metric (`sample_weight`), or None for weight 1.
    - `cap_length`: cap the longest bucket at the longest series (no
      padding for data of one length); False pads every batch to a power
      of two, so fits on data of other lengths reuse the compiled programs
      (`s5ts.data.plan_buckets`).
    - `elapsed`: the batch keys that hold elapsed time (`"gaps"` under
      `time_handling="gaps"`, `"extra"` under `"append"`, none under
      `"drop"`): what observation dropout adds up over a dropped step
      (`thin_observations`).
    """

    inputs: tuple
    gaps: tuple
    extra: tuple | None = None
    targets: Any = None
    per_step: bool = False
    weights: np.ndarray | None = None
    cap_length: bool = True
    elapsed: tuple[str, ...] = ("gaps",)

    def __len__(self) -> int:
        return len(self.inputs)

    def iterate_batches(
        self,
        rows: int,
        *,
        shuffle: bool,
        rng: np.random.Generator | None = None,
        observation_dropout: float = 0.0,
        place: bool = True,
    ) -> Iterator[tuple[np.ndarray, dict]]:
        placement = placement_for(rows)
        mine = placement.local_rows or slice(0, rows)
        lengths = self.lengths
        buckets = plan_buckets(lengths, cap=self.cap_length)
        padded = assign_buckets(lengths, buckets)
        for indices in make_batches(lengths, rows, shuffle=shuffle, rng=rng, buckets=buckets):
            length = int(padded[indices[0]])
            batch = padded_batch(self, indices[mine], mine.stop - mine.start, length)
            batch = self._thinned(batch, lengths[indices], rows, length, observation_dropout, rng, mine)
            yield indices, placement.put_batch(batch) if place else batch

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(g) for g in self.gaps], dtype=np.int64)

    def subset(self, indices) -> "Sequences":
        return concatenated([self], [int(i) for i in indices])


#: The fields of `Sequences` with one entry per series.
PER_SERIES = ("inputs", "gaps", "extra", "targets", "weights")


def concatenated(parts: list[Sequences], indices: list[int] | None = None) -> Sequences:
    """One `Sequences` of the series of `parts`, in order (those at
    `indices` alone), with the settings of the first."""

    def joined(name):
        items = [getattr(part, name) for part in parts]
        if items[0] is None:
            return None
        if isinstance(items[0], np.ndarray):
            whole = np.concatenate(items) if len(items) > 1 else items[0]
            return whole if indices is None else whole[indices]
        whole = tuple(x for item in items for x in item)
        return whole if indices is None else tuple(whole[i] for i in indices)

    return dataclasses.replace(parts[0], **{name: joined(name) for name in PER_SERIES})


def split_validation(data: SequenceData, fraction: float, rng: np.random.Generator):
    """(train, valid) with `floor(fraction * n)` random series held out, or
    (data, None) when that leaves either side empty (streamed data: the
    same series as the same data in memory, by `subset`)."""
    n = len(data)
    n_valid = int(math.floor(fraction * n))
    if n_valid < 1 or n - n_valid < 1:
        return data, None
    order = rng.permutation(n)
    return data.subset(np.sort(order[n_valid:])), data.subset(np.sort(order[:n_valid]))


def padded_batch(data: Sequences, indices: np.ndarray, rows: int, length: int | None = None) -> dict[str, np.ndarray]:
    """Pad the series at `indices` into one batch of `rows` rows and `length`
    steps (padded steps: value 0, gap 0, mask False; padded rows: weight 0).

    `length` defaults to the bucket of the longest series at `indices`,
    capped at the longest series of `data` if `data.cap_length`."""
    if length is None:
        length = bucket_length(int(max(len(data.gaps[i]) for i in indices)))
        if data.cap_length:
            length = min(length, int(data.lengths.max()))
    u, mask = pad_batch(_pick(data.inputs, indices), length, batch_size=rows)
    gaps, _ = pad_batch(_pick(data.gaps, indices), length, batch_size=rows)
    batch = {"u": u, "gaps": gaps, "mask": mask}
    if data.extra is not None:
        batch["extra"], _ = pad_batch(_pick(data.extra, indices), length, batch_size=rows)
    if data.targets is not None:
        row_weights = np.zeros(rows, np.float32)
        row_weights[: len(indices)] = 1.0 if data.weights is None else data.weights[indices]
        if data.per_step:
            batch["y"], _ = pad_batch(_pick(data.targets, indices), length, batch_size=rows)
            batch["weights"] = mask * row_weights[:, None]
        else:
            y = data.targets[indices]
            pad = np.zeros((rows - len(indices), *y.shape[1:]), y.dtype)
            batch["y"] = np.concatenate([y, pad])
            batch["weights"] = row_weights
    return batch


def _pick(items: tuple, indices) -> list:
    """The arrays at `indices`; for no indices (a process's empty share of a
    short last batch, or rows of padding alone), one empty array of their
    kind, which pads to rows of padding."""
    return [items[i] for i in indices] if len(indices) else [items[0][:0]]


def batch_rows(n: int, batch_size: int) -> int:
    """Rows of every padded batch for `n` series: `batch_size`, or the next
    power of two ≥ n when that is smaller, so data sets of different sizes
    (cross-validation folds, prediction sets) share a few compiled shapes."""
    return min(int(batch_size), 1 << max(int(n) - 1, 0).bit_length())


def iterate_batches(
    data: SequenceData,
    rows: int,
    *,
    shuffle: bool,
    rng: np.random.Generator | None = None,
    observation_dropout: float = 0.0,
    place: bool = True,
) -> Iterator[tuple[np.ndarray, dict]]:
    """`data.iterate_batches`, `observation_dropout` checked: > 0 (training
    only) drops each observation with that probability, drawn from `rng`
    (`keep_observations`); the batch keeps its shape, so nothing compiles
    again. Across processes each pads only its own rows of every batch
    (`Placement.local_rows`)."""
    if not 0.0 <= observation_dropout < 1.0:
        raise ValueError(f"observation_dropout must be in [0, 1), got {observation_dropout!r}")
    return data.iterate_batches(rows, shuffle=shuffle, rng=rng, observation_dropout=observation_dropout, place=place)


def steps_per_epoch(data: SequenceData, rows: int) -> int:
    return data.steps_per_epoch(rows)
