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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import numpy as np

from ..data import assign_buckets, plan_buckets
from ._devices import placement_for
from ._sequences import Sequences, padded_batch
from ._thinning import thin_observations


@dataclasses.dataclass(frozen=True, eq=False)
class StreamedSequences:
    """Series streamed chunk by chunk, batched like `Sequences`.

    - `lengths`: (n,) int64, the length of every series, by position.
    - `chunks`: `chunks(rng)` yields `(positions, Sequences)` pairs: the
      positions (in 0..n-1) of the series of one chunk and their model-ready
      data; `rng` None: every series in position order (evaluation,
      prediction), else a shuffled order of chunks drawn from `rng`.
    - `per_step`, `cap_length`, `elapsed`: as in `Sequences`.
    """

    lengths: np.ndarray
    chunks: Callable[[np.random.Generator | None], Iterator[tuple[np.ndarray, Sequences]]]
    per_step: bool = False
    cap_length: bool = True
    elapsed: tuple[str, ...] = ("gaps",)

    def __len__(self) -> int:
        return int(len(self.lengths))

    def steps_per_epoch(self, rows: int) -> int:
        """Batches an epoch takes: ⌈series / rows⌉ per bucket, as in memory."""
        padded = assign_buckets(self.lengths, plan_buckets(self.lengths, cap=self.cap_length))
        _, counts = np.unique(padded, return_counts=True)
        return int(sum(math.ceil(c / rows) for c in counts))

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

        return dataclasses.replace(self, lengths=self.lengths[keep], chunks=picked)

    def iterate_batches(
        self,
        rows: int,
        *,
        shuffle: bool,
        rng: np.random.Generator | None = None,
        observation_dropout: float = 0.0,
    ) -> Iterator[tuple[np.ndarray, dict]]:
        """(positions, batch) pairs, as `iterate_batches` gives for
        `Sequences`: every series once, `steps_per_epoch(rows)` batches."""
        placement = placement_for(rows)
        if placement.local_rows is not None:
            raise ValueError(
                "data streamed from Parquet is read by one process; across jax.distributed processes "
                "pass the data in memory (docs/scaling.md)"
            )
        buckets = plan_buckets(self.lengths, cap=self.cap_length)
        padded = assign_buckets(self.lengths, buckets)
        buffers: dict[int, list] = {}

        def emit(items, length):
            positions = np.array([p for p, _ in items], np.int64)
            data = _concatenate([one for _, one in items])
            batch = padded_batch(
                dataclasses.replace(data, cap_length=self.cap_length), np.arange(len(items)), rows, length
            )
            if observation_dropout > 0:
                batch = thin_observations(
                    batch, observation_dropout, rng, per_step=self.per_step, elapsed=self.elapsed
                )
            return positions, placement.put_batch(batch)

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


def _concatenate(parts: list[Sequences]) -> Sequences:
    """One `Sequences` of the series of `parts`, in order."""
    first = parts[0]

    def joined(name):
        items = [getattr(p, name) for p in parts]
        if items[0] is None:
            return None
        if isinstance(items[0], np.ndarray):
            return np.concatenate(items)
        return tuple(x for item in items for x in item)

    return dataclasses.replace(
        first,
        inputs=joined("inputs"),
        gaps=joined("gaps"),
        extra=joined("extra"),
        targets=joined("targets"),
        weights=joined("weights"),
    )
