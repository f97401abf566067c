"""Padded batches from series streamed chunk by chunk (data larger than memory).

A `StreamedSequences` stands where `train`, `evaluate` and the estimators
take a `Sequences`: it knows every series' length beforehand (from a
statistics pass), so the length buckets (`plan_buckets`) and the number of
batches an epoch takes are those of the same data in memory; an epoch then
reads the series in chunks (`chunks(rng)`: in a shuffled order of files for
training), puts each series in its bucket's buffer and emits a padded batch
(`padded_batch`) whenever a buffer holds `rows` series, the partial buffers
at the end. Memory: at most `rows` series per bucket, plus one chunk.

What differs from `Sequences` in memory: a batch holds series that come
close together in the stream (within a bucket), not a uniform random draw
of the bucket; files are read in a random order every epoch, and the batches
that fill are emitted in the order they fill.

Across `jax.distributed` processes each reads its own files (`shares`,
`_shards` lays out the steps).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator

import jax
import numpy as np

from ..data import CapAtLongest, LengthCap, assign_buckets, plan_buckets
from ._devices import placement_for
from ._distributed import allgather_objects
from ._sequences import SequenceData, Sequences, concatenated, padded_batch
from ._shards import FileShares, shard_plan
from ._thinning import Thinning


@dataclasses.dataclass(frozen=True, eq=False)
class StreamedSequences(SequenceData):
    """Series streamed chunk by chunk, batched like `Sequences`.

    - `lengths`: (n,) int64, the length of every series, by position.
    - `chunks`: `chunks(rng)` yields `(positions, Sequences)` pairs: the
      positions (in 0..n-1) of the series of one chunk and their model-ready
      data; `rng` None: every series in position order (evaluation,
      prediction), else a shuffled order of chunks drawn from `rng`.
    - `per_step`, `cap_length`, `elapsed`: as in `Sequences`.
    - `shares`: across processes, which process reads which series
      (`FileShares`); `chunks(rng)` then yields this process's series
      alone, its files in the order `rng.permutation(shares.n_files)` (the
      one draw it makes). None: this process reads every series.
    """

    lengths: np.ndarray
    chunks: Callable[[np.random.Generator | None], Iterator[tuple[np.ndarray, Sequences]]]
    per_step: bool = False
    cap_length: LengthCap = CapAtLongest()
    elapsed: tuple[str, ...] = ("gaps",)
    shares: FileShares | None = None

    def __len__(self) -> int:
        return int(len(self.lengths))

    def batch_lengths(self, rows: int) -> np.ndarray:
        """As in memory; across processes, `shard_plan`'s steps."""
        if self.shares is not None:
            return np.array([step.length for step in self._plan(rows, None)[1]], np.int64)
        return super().batch_lengths(rows)

    def _plan(self, rows: int, order):
        """(the placement, `shard_plan`'s steps) of batches of `rows` rows
        read across processes in the files' `order`."""
        placement = placement_for(rows)
        if jax.process_count() == 1:  # one process reading its own (all the) files
            return placement, shard_plan(self._padded(), self.shares, order, rows, 1)
        if placement.process_rows is None:
            raise ValueError(
                f"a batch of {rows} rows cannot be split evenly over the {placement.n_devices} devices of "
                f"{jax.process_count()} processes, so each process would need every series: set "
                "batch_size to a multiple of the number of devices (jax.device_count())"
            )
        blocks = placement.process_rows
        sizes = {b.stop - b.start for b in blocks}
        if len(sizes) != 1:
            raise ValueError(f"the processes supply blocks of different sizes of each batch: {blocks}")
        return placement, shard_plan(self._padded(), self.shares, order, sizes.pop(), len(blocks))

    def subset(self, keep: np.ndarray) -> "StreamedSequences":
        """The series at the sorted positions `keep`, renumbered 0..len(keep)-1."""
        keep = np.asarray(keep, np.int64)
        new = np.full(len(self.lengths), -1, np.int64)
        new[keep] = np.arange(len(keep))
        chunks = self.chunks

        def picked(rng):
            for positions, data in chunks(rng):
                mine = np.flatnonzero(new[positions] >= 0)
                if mine.size:
                    yield new[positions[mine]], data.subset(mine)

        shares = None if self.shares is None else self.shares.subset(keep)
        return dataclasses.replace(self, lengths=self.lengths[keep], chunks=picked, shares=shares)

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
        """As `Sequences` batches; across processes (`shares`), the positions
        are those of the whole global batch, -1 at rows of padding."""
        if self.shares is not None:
            yield from self._sharded_batches(rows, shuffle, rng, thinning, place, cut)
            return
        placement = placement_for(rows)
        if placement.local_rows is not None:
            raise ValueError(
                "this streamed data is read whole by every process; across jax.distributed processes "
                "it needs shares of its files (FileShares), or pass the data in memory (docs/scaling.md)"
            )
        buckets = plan_buckets(self.lengths, cap=self.cap_length)
        padded = assign_buckets(self.lengths, buckets)
        buffers: dict[int, list] = {}

        def emit(items, length):
            positions = np.array([p for p, _ in items], np.int64)
            batch = padded_batch(concatenated([one for _, one in items]), np.arange(len(items)), rows, length)
            batch = self._thinned(
                batch, self.lengths[positions], rows, length, thinning, rng, slice(0, rows), cut
            )
            return positions, placement.put_batch(batch) if place else batch

        for positions, data in self.chunks(rng if shuffle else None):
            for i, position in enumerate(positions):
                length = int(padded[position])
                buffer = buffers.setdefault(length, [])
                # One series' own arrays: the rest of the chunk is freed.
                buffer.append((int(position), data.subset([i])))
                if len(buffer) == rows:
                    yield emit(buffer, length)
                    buffers[length] = []
        for length in sorted(buffers):
            if buffers[length]:
                yield emit(buffers[length], length)

    def _sharded_batches(self, rows, shuffle, rng, thinning, place, cut):
        """`iterate_batches` across processes: this process reads its own
        files and pads its block of every step of `shard_plan`, holding the
        series it has read ahead of the others. Thinning is drawn over the
        whole global batch's mask (from the plan's lengths), so every
        process draws the same numbers."""
        order = copy.deepcopy(rng).permutation(self.shares.n_files) if shuffle else None
        placement, plan = self._plan(rows, order)
        me, blocks = jax.process_index(), placement.process_rows or (slice(0, rows),)
        local = blocks[me].stop - blocks[me].start
        stream = self.chunks(rng if shuffle else None)
        arrived: dict[int, Sequences] = {}

        def read_until(position):
            while position not in arrived:
                chunk = next(stream, None)
                if chunk is None:
                    raise RuntimeError(f"series {position} is not in this process's files (process {me})")
                for i, p in enumerate(chunk[0]):
                    arrived[int(p)] = chunk[1].subset([i])

        # One series of any process: the kind of arrays a block of padding
        # alone is made of (a process whose files hold none of this data's
        # series takes another's, all of them gathering it together).
        first = self.shares.read_order(me, order)[:1]
        for position in first:
            read_until(int(position))
        template = arrived[int(first[0])] if len(first) else None
        if any(not len(self.shares.read_order(p, None)) for p in range(len(blocks))):
            template = next(t for t in allgather_objects(template) if t is not None)
        for step in plan:
            mine = step.rows[me]
            for position in mine:
                read_until(int(position))
            items = [arrived.pop(int(p)) for p in mine]
            batch = padded_batch(concatenated(items) if items else template, np.arange(len(items)), local, step.length)
            indices = np.full(rows, -1, np.int64)
            for block, positions in zip(blocks, step.rows):
                indices[block.start : block.start + len(positions)] = positions
            row_lengths = np.where(indices >= 0, self.lengths[indices], 0)
            batch = self._thinned(batch, row_lengths, rows, step.length, thinning, rng, blocks[me], cut)
            yield indices, placement.put_batch(batch) if place else batch
        if next(stream, None) is not None or arrived:
            raise RuntimeError(f"process {me} read series that no step of the plan holds")

