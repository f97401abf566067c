"""`ChunkLedger`: the series a reader of a data set met chunk by chunk, and
where they lie, merged across readers (processes) into file order."""

from __future__ import annotations

import dataclasses

import numpy as np

from ._parquet import SeriesChunk


@dataclasses.dataclass
class ChunkLedger:
    """The series of the chunks (`SeriesChunk`) a reader met, in its order:
    `ids`, every series' id; `offsets`, {fragment: the position of its
    first series} for every fragment (file) read from its start; `keys`,
    per chunk `(fragment, its first series' place in the fragment,
    series)`, which sort into file order; `origins`, of a `merged` ledger,
    per chunk `(its ledger, its index there, a slice of its series there)`.

    >>> a = ChunkLedger(["s2"], {1: 0}, [(1, 0, 1)])  # one reader read file 1,
    >>> b = ChunkLedger(["s0", "s1"], {0: 0}, [(0, 0, 2)])  # another file 0
    >>> merged = ChunkLedger.merged([a, b])
    >>> merged.ids, merged.offsets, merged.parts.tolist(), merged.per_series([[20], [0, 10]])
    (['s0', 's1', 's2'], {0: 0, 1: 2}, [0, 0, 1], [0, 10, 20])
    """

    ids: list = dataclasses.field(default_factory=list)
    offsets: dict = dataclasses.field(default_factory=dict)
    keys: list = dataclasses.field(default_factory=list)
    origins: list = dataclasses.field(default_factory=list)

    def add(self, chunk: SeriesChunk) -> None:
        """Record the next chunk read."""
        if chunk.first == 0:
            self.offsets[chunk.fragment] = len(self.ids)
        self.keys.append((chunk.fragment, chunk.first, chunk.panel.n_series))
        self.ids.extend(chunk.panel.ids)

    def positions(self, chunk: SeriesChunk) -> np.ndarray:
        """(n,) the positions in file order of the series of `chunk`, a chunk
        of a fragment this ledger read from its start."""
        return self.offsets[chunk.fragment] + chunk.first + np.arange(chunk.panel.n_series)

    @property
    def parts(self) -> np.ndarray:
        """(n,) the file (fragment) of every series."""
        return np.repeat(np.array([k[0] for k in self.keys], np.int64), [k[2] for k in self.keys])

    @classmethod
    def merged(cls, ledgers: list[ChunkLedger]) -> ChunkLedger:
        """The ledger of one reader of every file in file order, from those
        of several readers (`ledgers`, in any order) of some files each."""
        starts = [np.cumsum([0, *(k[2] for k in ledger.keys)]) for ledger in ledgers]
        chunks = sorted((key, p, c) for p, ledger in enumerate(ledgers) for c, key in enumerate(ledger.keys))
        out = cls(origins=[(p, c, slice(starts[p][c], starts[p][c + 1])) for _, p, c in chunks])
        for key, p, c in chunks:
            if key[1] == 0:
                out.offsets[key[0]] = len(out.ids)
            out.keys.append(key)
            out.ids.extend(ledgers[p].ids[starts[p][c] : starts[p][c + 1]])
        return out

    def per_series(self, lists: list[list]) -> list:
        """Of a `merged` ledger: the readers' lists of one entry per series
        (chunk after chunk; one list per ledger, in `merged`'s order), as
        one list in file order."""
        return [item for p, _, rows in self.origins for item in lists[p][rows]]

    def per_chunk(self, lists: list[list]) -> list:
        """Of a `merged` ledger: the readers' lists of one entry per chunk
        (or empty: nothing gathered) as one list in file order."""
        return [lists[p][c] for p, c, _ in self.origins if lists[p]]

