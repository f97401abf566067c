"""Series streamed across `jax.distributed` processes, each process reading
its own share of the files.

A data set larger than memory is a set of files, each holding whole
series. `share_files` gives every file to one process, balanced by rows;
each process then reads only its own files, in the order of one shuffled
permutation of all the files that every process draws alike.

Training still needs one global batch per step, of one length bucket,
whose rows each process supplies its own block of
(`Placement.process_rows`). `shard_plan` lays out an epoch's global steps
from what every process knows without reading a row: every series'
length bucket, its file and the files' owners. Each process, reading its
files in the drawn order, fills a local batch of a bucket whenever it has
read `local_rows` series of it (the partial batches at the end), as one
process streaming alone does; global step `j` of a bucket joins the `j`-th
local batch of that bucket of every process (rows of padding for a process
that has fewer). Steps come in the order they are complete on every
process: by the latest of their local batches' fill times, a process's
fill time being the fraction of its series read when that local batch
filled, the partial batches last (shortest first). So one process's plan
is exactly the batches it streams alone; a process holds only the series
it has read ahead of the others; and an epoch takes ``sum over buckets of max over processes of
ceil(n_p,b / local_rows)`` steps: as many as one process would take when
the files spread each bucket evenly.

`file_owners` shares out the files of a Parquet data set (after checking
that every process sees the same ones) and `own_files` picks a process's
own from an order of all of them. The rest is pure numpy; every process
computes the same plan.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from jaxtyping import Int

from ._distributed import allgather_objects, is_distributed


@dataclasses.dataclass(frozen=True, eq=False)
class FileShares:
    """Which process reads which series.

    - `parts`: (n,) int64, the file of every series, by position; a
      file's series are read in position order.
    - `owners`: (n_files,) int64, the process that reads each file.
    """

    parts: np.ndarray
    owners: np.ndarray

    @property
    def n_files(self) -> int:
        return len(self.owners)

    def subset(self, keep: np.ndarray) -> "FileShares":
        """The shares of the series at the sorted positions `keep`."""
        return dataclasses.replace(self, parts=self.parts[np.asarray(keep, np.int64)])

    def read_order(self, process: int, order: np.ndarray | None) -> np.ndarray:
        """The positions `process` reads, in reading order: its files in
        `order` (a permutation of the files; None: file order), each
        file's series in position order."""
        rank = np.arange(self.n_files) if order is None else np.argsort(order)
        mine = np.flatnonzero(self.owners[self.parts] == process)
        return mine[np.argsort(rank[self.parts[mine]], kind="stable")]


def share_files(rows: Int[np.ndarray, " files"], processes: int) -> np.ndarray:
    """The process that reads each file: the largest file first, each to the
    process with the fewest rows so far (the lowest index on ties), so
    every process reads about as many rows.

    >>> share_files(np.array([10, 80, 30, 40]), 2).tolist()
    [1, 0, 1, 1]
    """
    rows = np.asarray(rows, np.int64)
    if processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    owners = np.zeros(len(rows), np.int64)
    load = np.zeros(processes, np.int64)
    for f in np.argsort(-rows, kind="stable"):
        p = int(np.argmin(load))
        owners[f] = p
        load[p] += rows[f]
    return owners


def file_owners(source) -> np.ndarray | None:
    """Across `jax.distributed` processes, the process that reads each file
    of the Parquet data set `source` (a `s5ts.data.ParquetSeries`;
    `share_files` by the files' rows), once every process has been seen to
    hold the same files (names and row counts: else a ValueError on every
    process); None in a single process."""
    if not is_distributed():
        return None
    names, rows = source.file_names(), source.file_rows()
    everyone = allgather_objects((names, rows.tolist()))
    for p, seen in enumerate(everyone):
        if seen != everyone[0]:
            raise ValueError(
                f"process {p} sees other files of {source.where} than process 0 ({len(seen[0])} against "
                f"{len(everyone[0][0])}, or other names or numbers of rows): every process must be given "
                "the same data set, on a file system all of them read (docs/scaling.md)"
            )
    return share_files(rows, jax.process_count())


def own_files(owners: np.ndarray | None, order=None):
    """The files this process reads, in `order` (a permutation of all the
    files; None: file order); `order` itself in a single process (`owners`
    None).

    >>> own_files(None, [2, 0, 1]), own_files(None)
    ([2, 0, 1], None)
    """
    if owners is None:
        return order
    order = np.arange(len(owners)) if order is None else np.asarray(order)
    return order[owners[order] == jax.process_index()]


@dataclasses.dataclass(frozen=True)
class ShardedStep:
    """One global step: its padded length and, per process, the positions
    of the series in its block of rows (at most `local_rows`; the rest of
    the block is padding)."""

    length: int
    rows: tuple[np.ndarray, ...]


def shard_plan(
    padded: Int[np.ndarray, " n"],
    shares: FileShares,
    order: np.ndarray | None,
    local_rows: int,
    processes: int,
) -> list[ShardedStep]:
    """An epoch's global steps (the module docstring): `padded` the padded
    length of every series, `order` the files' reading order (None: file
    order), `local_rows` the rows of each process's block."""
    padded = np.asarray(padded, np.int64)
    empty = np.zeros(0, np.int64)
    steps: dict[tuple[int, int], list] = {}
    for p in range(processes):
        read = shares.read_order(p, order)
        for length in np.unique(padded[read]):
            at = np.flatnonzero(padded[read] == length)  # read indices of this bucket's series
            for j, start in enumerate(range(0, len(at), local_rows)):
                part = at[start : start + local_rows]
                # partial batches after every full one, as one process emits them
                filled = (part[-1] + 1) / len(read) if len(part) == local_rows else 2.0
                step = steps.setdefault((int(length), j), [0.0, [empty] * processes])
                step[0] = max(step[0], filled)
                step[1][p] = read[part]
    ordered = sorted(steps.items(), key=lambda item: (item[1][0], item[0]))
    return [ShardedStep(length, tuple(rows)) for (length, _), (_, rows) in ordered]
