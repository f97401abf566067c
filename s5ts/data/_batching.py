"""Length buckets, batches and padding.

A jitted function compiles once per input shape. Padding every batch to its
series' bucket length (the next power of two, at least `min_length`) and
every batch to `batch_size` rows bounds the number of shapes a fit compiles:
lengths 5..5000 fall in 11 buckets (8, 16, ..., 8192), so at most about
log2(max/min) + 2 shapes. Padding costs at most 2x the work of the longest
series in a bucket.

A data set's longest bucket may be capped (`LengthCap`): at its longest
series (`CapAtLongest`: no padding for data of one length), at
`grid_length` of it (`CapOnGrid`: the next of four lengths per octave, 8,
10, 12, 14, 16, 20, ..., so data sets whose longest series round up to
the same length share compiled shapes), or not at all (`PowersOfTwo`).

`plan_buckets` then merges the short buckets of a small data set into the
next longer one while that adds few padded steps (each bucket is one more
compilation, which costs seconds on a CPU; padding a few thousand steps
costs far less).

Padded steps carry `fill` (0 by default, which is also the right gap for
padded steps: a zero gap leaves the state unchanged) and `mask` False;
padded rows (`batch_size=`) are all mask False.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from numbers import Integral
from typing import final

import numpy as np
from jaxtyping import Bool, Int, Shaped


def bucket_length(L: Integral, min_length: Integral = 8) -> int:
    """The padded length of a series of length `L`: the next power of two
    ≥ `L`, and at least `min_length`.

    >>> bucket_length(5), bucket_length(9), bucket_length(1024), bucket_length(1025)
    (8, 16, 1024, 2048)
    """
    L = int(L)
    if L < 1:
        raise ValueError(f"length must be at least 1, got {L}")
    if min_length < 1:
        raise ValueError(f"min_length must be at least 1, got {min_length}")
    return max(1 << (L - 1).bit_length(), int(min_length))


def grid_length(L: Integral, min_length: Integral = 8) -> int:
    """The next of four lengths per octave ≥ `L` (above 8, multiples of an
    eighth of the power of two above: 8, 10, 12, 14, 16, 20, 24, 28, 32,
    40, ...), and at least `min_length`: less than a quarter longer than
    `L` above 8 (`CapOnGrid`).

    >>> [grid_length(L) for L in (5, 9, 17, 37, 64, 65, 200)]
    [8, 10, 20, 40, 64, 80, 224]
    """
    power = bucket_length(L, min_length)  # checks both; above min_length, the power of two ≥ L
    if L <= min_length:
        return int(min_length)
    step = max(power // 8, 1)
    return -(-int(L) // step) * step


class LengthCap(abc.ABC):
    """How the longest length bucket of a data set is capped
    (`plan_buckets`), and so how much its longest batches pad."""

    @abc.abstractmethod
    def limit(self, longest: Integral, min_length: Integral = 8) -> int | None:
        """The padded length of the longest bucket of data whose longest
        series has `longest` steps (None: its power of two)."""

    @property
    @abc.abstractmethod
    def forward(self) -> "LengthCap":
        """The cap of the same data in a forward pass alone (validation,
        prediction; `s5ts.training`)."""


@final
@dataclasses.dataclass(frozen=True)
class PowersOfTwo(LengthCap):
    """No cap: every bucket a power of two, so data sets of other lengths
    share compiled shapes."""

    def limit(self, longest, min_length=8):
        return None

    @property
    def forward(self):
        return self


@final
@dataclasses.dataclass(frozen=True)
class CapAtLongest(LengthCap):
    """The longest bucket capped at the longest series: data of one length
    pays for no padding. Its forward passes pad to powers of two, so a
    validation set and the series given to predict share their shapes."""

    def limit(self, longest, min_length=8):
        return int(longest)

    @property
    def forward(self):
        return PowersOfTwo()


@final
@dataclasses.dataclass(frozen=True)
class CapOnGrid(LengthCap):
    """The longest bucket capped at `grid_length` of the longest series,
    less than a quarter of padding above 8 steps; data sets whose longest
    series round up to the same grid length share compiled shapes, in
    training and in forward passes alike."""

    def limit(self, longest, min_length=8):
        return grid_length(longest, min_length)

    @property
    def forward(self):
        return self


#: Padded steps per epoch that merging buckets may add (`plan_buckets`): at
#: about 1e-5 s per padded step of a default-sized model on one CPU core,
#: 2**14 of them cost about 0.2 s an epoch, against the 4-7 s a compilation
#: of the training step takes (measured: docs/performance.md).
MERGE_BUDGET = 2**14


def plan_buckets(
    lengths: Int[np.ndarray, " n"] | Sequence[Integral],
    *,
    min_length: Integral = 8,
    budget: Integral = MERGE_BUDGET,
    cap: LengthCap = CapAtLongest(),
) -> np.ndarray:
    """The padded lengths a data set is batched at, sorted.

    Start from the power-of-two buckets of `bucket_length`, the longest one
    capped as `cap` says (`LengthCap`: by default at the longest series, so
    a data set of one length pays for no padding).
    Then, cheapest first, merge a bucket into the next longer one while the
    padded steps this adds, in total over all merges, stay within `budget`
    (steps per epoch; 0 keeps every bucket). Fewer buckets mean fewer
    compiled shapes.

    >>> plan_buckets([5, 6, 30, 31]).tolist()  # 2 * 25 extra steps: merged
    [31]
    >>> plan_buckets([5, 6, 30, 31], budget=0).tolist()
    [8, 31]
    >>> plan_buckets([5] * 100 + [3000], budget=1000).tolist()
    [8, 3000]
    >>> plan_buckets([5] * 100 + [3000], budget=1000, cap=PowersOfTwo()).tolist()
    [8, 4096]
    >>> plan_buckets([5] * 100 + [3000], budget=1000, cap=CapOnGrid()).tolist()
    [8, 3072]
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if lengths.size == 0:
        raise ValueError("plan_buckets needs at least one length")
    if not isinstance(cap, LengthCap):
        raise TypeError(f"cap must be a LengthCap (PowersOfTwo, CapAtLongest, CapOnGrid), got {cap!r}")
    limit = cap.limit(int(lengths.max()), min_length)
    assigned = np.array([bucket_length(L, min_length) for L in lengths])
    if limit is not None:
        assigned = np.minimum(assigned, limit)
    buckets, counts = (list(a) for a in np.unique(assigned, return_counts=True))
    spent = 0
    while len(buckets) > 1:
        costs = [counts[i] * (buckets[i + 1] - buckets[i]) for i in range(len(buckets) - 1)]
        i = int(np.argmin(costs))
        if spent + costs[i] > budget:
            break
        spent += costs[i]
        merged = counts.pop(i)
        buckets.pop(i)
        counts[i] += merged  # now the next longer bucket
    return np.asarray(buckets, dtype=np.int64)


def assign_buckets(lengths, buckets) -> np.ndarray:
    """The padded length of each series: the shortest of `buckets` (sorted)
    that holds it.

    >>> assign_buckets([3, 8, 9], [8, 31]).tolist()
    [8, 8, 31]
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    buckets = np.asarray(buckets, dtype=np.int64)
    index = np.searchsorted(buckets, lengths)
    if lengths.size and index.max() >= len(buckets):
        raise ValueError(f"a series of length {int(lengths.max())} is longer than every bucket {buckets.tolist()}")
    return buckets[index]


def make_batches(
    lengths: Int[np.ndarray, " n"] | Sequence[Integral],
    batch_size: Integral,
    *,
    shuffle: bool,
    rng: np.random.Generator | int | None = None,
    min_length: Integral = 8,
    buckets: Int[np.ndarray, " m"] | Sequence[Integral] | None = None,
) -> list[np.ndarray]:
    """Split series indices into batches whose series share one bucket length.

    **Arguments:**

    - `lengths`: series lengths, shape `(n,)`.
    - `batch_size`: the largest number of series in a batch.
    - `shuffle`: shuffle the series inside each bucket and the order of the
      batches (training); otherwise series keep their input order inside a
      bucket and buckets come shortest first (prediction).
    - `rng`: a `numpy.random.Generator` (or seed) used when shuffling.
    - `min_length`: see `bucket_length`.
    - `buckets`: the padded lengths to group by (e.g. from `plan_buckets`);
      default: the power-of-two buckets of `bucket_length`.

    **Returns:** a list of int64 index arrays. Each bucket ends with its
    partial batch, if any (nothing is dropped); so every index appears
    exactly once.

    >>> make_batches([3, 20, 4, 5, 30], 2, shuffle=False)
    [array([0, 2]), array([3]), array([1, 4])]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if shuffle:
        rng = np.random.default_rng(rng)
    if buckets is None:
        assigned = np.array([bucket_length(L, min_length) for L in lengths], dtype=np.int64)
    else:
        assigned = assign_buckets(lengths, buckets)
    batches = []
    for b in np.unique(assigned):
        members = np.flatnonzero(assigned == b)
        if shuffle:
            members = rng.permutation(members)
        batches.extend(
            members[start : start + batch_size] for start in range(0, members.shape[0], batch_size)
        )
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def pad_batch(
    arrays: Sequence[Shaped[np.ndarray, "_ ..."]],
    length: int,
    fill: float = 0.0,
    *,
    batch_size: Integral | None = None,
) -> tuple[Shaped[np.ndarray, "B length ..."], Bool[np.ndarray, "B length"]]:
    """Right-pad arrays `(L_i, ...)` along their first axis into one batch.

    **Arguments:**

    - `arrays`: the series' arrays, shapes `(L_i, ...)` with a common
      trailing shape and `L_i <= length`.
    - `length`: the padded length (usually `bucket_length(max L_i)`).
    - `fill`: the value put in padded steps.
    - `batch_size`: if given, also pad the batch with rows of `fill` (mask
      all False) up to this many rows, so a last, partial batch has the same
      shape as the others and does not trigger a new compilation.

    **Returns:** `(padded, mask)`: `padded` of shape `(B, length, ...)` with
    `B = batch_size or len(arrays)`, in the arrays' common dtype; `mask` of
    shape `(B, length)`, True at real steps.

    >>> padded, mask = pad_batch([np.array([1.0, 2.0]), np.array([3.0])], 4, batch_size=3)
    >>> padded
    array([[1., 2., 0., 0.],
           [3., 0., 0., 0.],
           [0., 0., 0., 0.]])
    >>> mask.sum(axis=1)
    array([2, 1, 0])
    """
    arrays = [np.asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("pad_batch needs at least one array")
    B = len(arrays) if batch_size is None else int(batch_size)
    if B < len(arrays):
        raise ValueError(f"{len(arrays)} arrays do not fit in batch_size={batch_size}")
    trailing = arrays[0].shape[1:]
    for i, a in enumerate(arrays):
        if a.ndim == 0 or a.shape[1:] != trailing:
            expected = f"(L, {', '.join(map(str, trailing))})" if trailing else "(L,)"
            raise ValueError(f"array {i} has shape {a.shape}; expected {expected}")
        if a.shape[0] > length:
            raise ValueError(f"array {i} has length {a.shape[0]} > padded length {length}")
    dtype = np.result_type(*arrays)
    padded = np.full((B, length, *trailing), fill, dtype=dtype)
    mask = np.zeros((B, length), dtype=bool)
    for i, a in enumerate(arrays):
        padded[i, : a.shape[0]] = a
        mask[i, : a.shape[0]] = True
    return padded, mask


def pack_rows(lengths: Int[np.ndarray, " n"] | Sequence[Integral], row_length: Integral) -> list[np.ndarray]:
    """Series indices laid end to end in rows of at most `row_length`
    steps, first fit by decreasing length: the rows of
    `SequenceNetwork.packed`, where each series starts with a reset instead
    of a padded row of its own. Each row lists its series in the order they
    sit; every index appears exactly once.

    >>> [r.tolist() for r in pack_rows([5, 3, 4, 2], 8)]
    [[0, 1], [2, 3]]
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    row_length = int(row_length)
    if lengths.size and lengths.max() > row_length:
        raise ValueError(f"a series of length {int(lengths.max())} is longer than row_length={row_length}")
    rows: list[list[int]] = []
    room = np.empty(lengths.size, np.int64)  # free steps of each row opened so far
    for i in np.argsort(-lengths, kind="stable"):
        fits = np.flatnonzero(room[: len(rows)] >= lengths[i])
        if fits.size:
            rows[fits[0]].append(int(i))
            room[fits[0]] -= lengths[i]
        else:
            room[len(rows)] = row_length - lengths[i]
            rows.append([int(i)])
    return [np.asarray(r, dtype=np.int64) for r in rows]
