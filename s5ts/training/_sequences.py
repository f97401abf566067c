"""Model-ready ragged data and its padded batches.

A `Sequences` holds one entry per series; batches group series of one
length bucket (`s5ts.data.plan_buckets`) and are padded to a fixed number of
rows (the batch size, or the next power of two for smaller data sets), so a
fit compiles one training step per bucket. Where the buckets would pad
much, training batches lay the series end to end instead
(`PackedSequences`, chosen by `packed_for`): one compiled shape.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..data import (
    CapAtLongest,
    LengthCap,
    assign_buckets,
    bucket_length,
    make_batches,
    pack_rows,
    pad_batch,
    plan_buckets,
)
from ..nn import AbstractPackedSequenceModel
from ._backprop import WholeSequences
from ._devices import placement_for
from ._thinning import Thinning, cut_batch, draw_kept, keep_observations


class SequenceData(abc.ABC):
    """What training, evaluation and prediction read: series with known
    lengths, in padded batches of the length buckets of `plan_buckets`, in
    memory (`Sequences`) or read chunk by chunk (`StreamedSequences`). Each
    batches its own way; the plan of an epoch (`batch_lengths`) is the same
    for the same series."""

    per_step: bool
    cap_length: LengthCap
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
        thinning: Thinning = Thinning(),
        place: bool = True,
        cut: bool = False,
    ) -> Iterator[tuple[np.ndarray, dict]]:
        """(positions, batch) pairs: every series once, in padded batches of
        `rows` rows placed on the devices (`placement_for(rows)`; with
        `place=False` as numpy, this process's rows of each batch), thinned
        as `thinning` says (drawn from `rng`). With `cut`, thinned batches
        lose the padded steps at their end (`cut_batch`)."""

    def batch_lengths(self, rows: int) -> np.ndarray:
        """The padded length of every batch of an epoch, in plan order: per
        length bucket, shortest first, ⌈series / rows⌉ batches
        (`make_batches`' plan)."""
        buckets, counts = np.unique(self._padded(), return_counts=True)
        return np.repeat(buckets, [math.ceil(c / rows) for c in counts]).astype(np.int64)

    def steps_per_epoch(self, rows: int) -> int:
        return len(self.batch_lengths(rows))

    def rows_per_batch(self, rows: int) -> int:
        """The rows of this data's training batches for `rows` requested
        (`batch_rows`): `rows`, unless the data batches its own way
        (`PackedSequences`)."""
        return rows

    def _padded(self) -> np.ndarray:
        """(n,) the padded length (bucket) of every series."""
        return assign_buckets(self.lengths, plan_buckets(self.lengths, cap=self.cap_length))

    def _thinned(self, batch, row_lengths, rows, length, thinning, rng, mine, cut=False):
        """`batch`, this process's rows `mine` of a batch of `rows` rows whose
        first ones hold series of `row_lengths` (0: padding), thinned as
        `thinning` says, and with `cut` without the padding that leaves at
        its end (`cut_batch`). Drawn over the whole batch's mask, known from
        the lengths alone, so every process draws the same numbers and cuts
        alike. A budget thins only series with one target each: a target
        per step may depend on every observation before it, and only the
        rate applies."""
        thinning = dataclasses.replace(thinning, budget=None) if self.per_step else thinning
        if not thinning.thins:
            return batch
        full = np.zeros(rows, np.int64)
        full[: len(row_lengths)] = row_lengths
        kept = draw_kept(np.arange(length)[None, :] < full[:, None], thinning.rates(full)[:, None], rng)
        batch = keep_observations(batch, kept[mine], per_step=self.per_step, elapsed=self.elapsed)
        return cut_batch(batch, kept, thinning.kept_bound([length]), per_step=self.per_step) if cut else batch


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
    - `cap_length`: how the longest bucket is capped (`s5ts.data.LengthCap`):
      at the longest series (`CapAtLongest`: no padding for data of one
      length), not at all (`PowersOfTwo`: fits on data of other lengths
      reuse the compiled programs), or at the next of four lengths per
      octave above it (`CapOnGrid`: data whose longest series round up to
      the same length share them).
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
    cap_length: LengthCap = CapAtLongest()
    elapsed: tuple[str, ...] = ("gaps",)

    def __len__(self) -> int:
        return len(self.inputs)

    def iterate_batches(
        self,
        rows: int,
        *,
        shuffle: bool,
        rng: np.random.Generator | None = None,
        thinning: Thinning = Thinning(),
        place: bool = True,
        cut: bool = False,
    ) -> Iterator[tuple[np.ndarray, dict]]:
        placement = placement_for(rows)
        mine = placement.local_rows or slice(0, rows)
        lengths = self.lengths
        buckets = plan_buckets(lengths, cap=self.cap_length)
        padded = assign_buckets(lengths, buckets)
        for indices in make_batches(lengths, rows, shuffle=shuffle, rng=rng, buckets=buckets):
            length = int(padded[indices[0]])
            batch = padded_batch(self, indices[mine], mine.stop - mine.start, length)
            batch = self._thinned(batch, lengths[indices], rows, length, thinning, rng, mine, cut)
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
    capped as `data.cap_length` says."""
    if length is None:
        length = bucket_length(int(max(len(data.gaps[i]) for i in indices)))
        cap = data.cap_length.limit(int(data.lengths.max()))
        if cap is not None:
            length = min(length, cap)
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
    observation_budget: int | None = None,
    place: bool = True,
    cut: bool = False,
) -> Iterator[tuple[np.ndarray, dict]]:
    """`data.iterate_batches`, thinned (training only) by
    `Thinning(observation_dropout, observation_budget)`, checked: each
    observation dropped with probability `observation_dropout`, and with a
    budget, long series further, to about that many observations, drawn
    from `rng` (`keep_observations`). The batch keeps its shape, so nothing
    compiles again, unless `cut`: then the steps past
    `Thinning.kept_bound`, padding after the kept observations moved to the
    front, are cut off (one shorter shape per length bucket). Across
    processes each pads only its own rows of every batch
    (`Placement.local_rows`)."""
    thinning = Thinning(observation_dropout, observation_budget)
    return data.iterate_batches(rows, shuffle=shuffle, rng=rng, thinning=thinning, place=place, cut=cut)


def steps_per_epoch(data: SequenceData, rows: int) -> int:
    return data.steps_per_epoch(rows)


#: Pack training batches only when the length buckets would compute at
#: least this many times the steps packed rows compute (`packed_for`).
PACK_GAIN = 1.25
#: ... and the longest series has at least this many steps: below a few
#: hundred steps a step's fixed costs outweigh the padding, and packing
#: made the development half's short panels no faster (Phenobarb, 2 to 6
#: steps; event_interval, 22 to 62: docs/estimators.md, "Packed rows").
PACK_MIN_LENGTH = 256


@dataclasses.dataclass(frozen=True)
class PackedSequences(SequenceData):
    """The training batches of `data` (in memory, one target per series)
    with its series laid end to end in rows of `row_length` steps
    (`s5ts.data.pack_rows`, once per fit), `rows` rows a batch: each
    series starts with a reset and is pooled alone
    (`AbstractPackedSequenceModel.packed`), so no series is padded to its
    length bucket. Every epoch shuffles the rows. Targets and weights sit
    in `slots` slots per row (the most series a row holds): `"y"` (rows,
    slots, ...), `"weights"` (rows, slots), 0 for an empty slot, so a batch
    splits over devices and processes by rows as a bucketed one does.
    Build it with `packed_for`."""

    data: Sequences
    rows: int
    row_length: int
    layout: tuple  # the series of each row, in the order they sit
    slots: int
    per_step = False  # one target per series

    def __len__(self) -> int:
        return len(self.data)

    @property
    def cap_length(self) -> LengthCap:
        return self.data.cap_length

    @property
    def elapsed(self) -> tuple[str, ...]:
        return self.data.elapsed

    @property
    def lengths(self) -> np.ndarray:
        return self.data.lengths

    def subset(self, indices) -> "SequenceData":
        return self.data.subset(indices)

    def rows_per_batch(self, rows: int) -> int:
        return self.rows

    def batch_lengths(self, rows: int) -> np.ndarray:
        return np.full(math.ceil(len(self.layout) / self.rows), self.row_length, np.int64)

    def iterate_batches(self, rows, *, shuffle, rng=None, thinning=Thinning(), place=True, cut=False):
        placement = placement_for(self.rows)
        mine = placement.local_rows or slice(0, self.rows)
        order = rng.permutation(len(self.layout)) if shuffle else np.arange(len(self.layout))
        lengths = self.lengths
        # The steps every thinned row of this layout keeps but for a chance
        # in millions (`Thinning.kept_bound` of its fullest row): one shape.
        bound = max(thinning.kept_bound(lengths[row]) for row in self.layout) if cut and thinning.thins else None
        for start in range(0, len(order), self.rows):
            group = [self.layout[i] for i in order[start : start + self.rows]]
            batch = self._batch(group)
            if thinning.thins:
                # drawn over the whole batch, so every process draws the same numbers
                rates = np.zeros((self.rows, self.row_length))  # each step's series' drop probability
                for r, row in enumerate(group):
                    rates[r, : lengths[row].sum()] = np.repeat(thinning.rates(lengths[row]), lengths[row])
                kept = draw_kept(batch["mask"], rates, rng, batch["segments"])
                batch = keep_observations(batch, kept, per_step=False, elapsed=self.elapsed)
                batch = cut_batch(batch, kept, bound) if cut else batch
            batch = {name: value[mine] for name, value in batch.items()}
            yield np.concatenate(group), placement.put_batch(batch) if place else batch

    def _batch(self, group: list[np.ndarray]) -> dict:
        data = self.data

        def rows_of(items):
            return [np.concatenate([items[i] for i in row]) for row in group]

        numbers = [np.concatenate([np.full(len(data.gaps[i]), k, np.int32) for k, i in enumerate(row)]) for row in group]
        u, mask = pad_batch(rows_of(data.inputs), self.row_length, batch_size=self.rows)
        gaps, _ = pad_batch(rows_of(data.gaps), self.row_length, batch_size=self.rows)
        segments, _ = pad_batch(numbers, self.row_length, batch_size=self.rows)
        batch = {"u": u, "gaps": gaps, "mask": mask, "segments": segments}
        if data.extra is not None:
            batch["extra"], _ = pad_batch(rows_of(data.extra), self.row_length, batch_size=self.rows)
        y = np.zeros((self.rows, self.slots, *data.targets.shape[1:]), data.targets.dtype)
        weights = np.zeros((self.rows, self.slots), np.float32)
        for r, row in enumerate(group):
            y[r, : len(row)] = data.targets[row]
            weights[r, : len(row)] = 1.0 if data.weights is None else data.weights[row]
        batch["y"], batch["weights"] = y, weights
        return batch


def packed_for(data: SequenceData, model, rows: int, backprop, packing: bool | str = "auto") -> SequenceData:
    """`data` as `PackedSequences` when it can (in memory, one target per
    series, a `model` that packs (`AbstractPackedSequenceModel`), whole
    sequences (`WholeSequences`), some row holding two series or more) and
    `packing` says so: True always, "auto" when the longest series has at
    least `PACK_MIN_LENGTH` steps and packing computes at least
    `PACK_GAIN` times fewer steps per epoch than the length buckets, False
    never. Otherwise `data` itself. Rows are as long as the
    longest series; a batch has the power of two of rows nearest to those
    that hold, on average, `rows` series (so it splits over devices as a
    bucketed batch does). The choice depends on the data alone, not on the
    devices: a fit split over devices or processes packs as on one."""
    if (
        packing is False
        or not isinstance(data, Sequences)
        or data.per_step
        or not isinstance(model, AbstractPackedSequenceModel)
        or not model.packs
        or not isinstance(backprop, WholeSequences)
    ):
        return data
    lengths = data.lengths
    row_length = int(lengths.max())
    if packing == "auto" and row_length < PACK_MIN_LENGTH:
        return data  # decided before laying out the rows
    layout = pack_rows(lengths, row_length)
    wanted = rows * len(layout) / len(lengths)  # rows holding `rows` series on average
    per_batch = min(1 << max(0, round(math.log2(max(wanted, 1.0)))), 1 << (len(layout) - 1).bit_length())
    bucketed = int(np.sum(data.batch_lengths(rows) * rows))
    packed = math.ceil(len(layout) / per_batch) * per_batch * row_length
    if len(layout) == len(lengths) or (packing == "auto" and bucketed < PACK_GAIN * packed):
        return data  # no row holds two series, or too little to gain
    slots = max(len(r) for r in layout)
    return PackedSequences(data, per_batch, row_length, tuple(layout), slots)
