"""Long-format Parquet data read as a stream of complete series.

A data set (one `.parquet` file, a directory of them, or a
`pyarrow.dataset.Dataset`) holds one row per observation: an id column, a
time column (optional) and feature columns. It is read fragment by fragment
(file by file), record batch by record batch, and each batch's complete
series are converted with `to_panel` for long frames, so times, time zones
and every check are exactly those of an in-memory long DataFrame.

**Required order:** each series' rows are contiguous and lie within one
fragment (file), in increasing time: the data written sorted by id, then
time, with no series split over two files. An id that appears again after
another series began (in the same or a later file), or a time that goes
backwards, raises a `ValueError` naming the series and the file.

**Memory held while reading:** the current record batch (`batch_size`
rows) and the rows of the one series still unfinished at its end, plus the
set of ids seen so far (O(n_series) small metadata).

pyarrow is not a runtime dependency of s5ts: it is imported here, lazily.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from ._panel import RaggedPanel, to_panel

#: Rows per record batch read from a fragment.
BATCH_ROWS = 1 << 16


def _pyarrow_dataset():
    try:
        import pyarrow.dataset as ds
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            'reading Parquet data sets needs pyarrow: pip install -e ".[scale]" in the s5ts checkout'
        ) from error
    return ds


def is_parquet_source(X) -> bool:
    """Whether `X` is a Parquet data set for `open_parquet`: a path (str or
    os.PathLike) or a `pyarrow.dataset.Dataset`. Never imports pyarrow
    unless it is already imported."""
    if isinstance(X, (str, os.PathLike)):
        return True
    module = type(X).__module__ or ""
    return module.startswith("pyarrow") and hasattr(X, "get_fragments")


@dataclasses.dataclass(frozen=True, eq=False)
class SeriesChunk:
    """Complete series read together.

    - `panel`: their `RaggedPanel` (with `row_series`, one position per row).
    - `extra`: {column: (n_rows,) values} for the other columns read (a
      target column), row-aligned with the panel's input rows.
    - `fragment`: the fragment (file) index they came from.
    - `first`: the position of the chunk's first series within its fragment.
    """

    panel: RaggedPanel
    extra: dict
    fragment: int
    first: int


@dataclasses.dataclass(frozen=True, eq=False)
class ParquetSeries:
    """A long-format Parquet data set read as complete series, made by
    `open_parquet` (its arguments are the fields; `where` names the data
    set in messages). The module docstring says the order it needs."""

    dataset: Any
    id_col: Any
    time_col: Any
    features: tuple
    where: str
    batch_size: int = BATCH_ROWS

    @property
    def fragments(self) -> list:
        return list(self.dataset.get_fragments())

    def file_rows(self) -> np.ndarray:
        """(n_files,) the rows of every file (fragment), from its metadata."""
        return np.array([fragment.count_rows() for fragment in self.fragments], np.int64)

    def file_names(self) -> list[str]:
        """How messages name every file (fragment)."""
        return [self.fragment_name(fragment, i) for i, fragment in enumerate(self.fragments)]

    def check_unique(self, ids, where) -> None:
        """Raise `_claim`'s ValueError for the first id of `ids` seen
        before, `where` (n,) the file index of each: series read by
        different processes, each of which checked only its own files."""
        repeated = pd.Index(ids).duplicated()
        if repeated.any():
            i = int(np.flatnonzero(repeated)[0])
            index = int(where[i])
            self._claim(ids[i], {ids[i]}, self.fragment_name(self.fragments[index], index))

    def fragment_name(self, fragment, index: int) -> str:
        return str(getattr(fragment, "path", None) or f"fragment {index} of {self.where}")

    def read(self, *, extra: Iterable = (), order: Iterable | None = None) -> Iterator[SeriesChunk]:
        """The data set's complete series, chunk by chunk.

        **Arguments:**

        - `extra`: other columns to read along (a target column), returned
          per row in `SeriesChunk.extra`.
        - `order`: the fragment indices to read, in that order (default:
          all, in the data set's order).

        **Raises:** `ValueError` naming the series and the file when a series'
        rows are not contiguous or its times are not increasing (and every
        error of `to_panel` for a long frame, with the file named).
        """
        extra = tuple(extra)
        columns = [self.id_col, *([] if self.time_col is None else [self.time_col]), *self.features, *extra]
        fragments = self.fragments
        seen: set = set()
        for index in range(len(fragments)) if order is None else order:
            fragment = fragments[int(index)]
            name = self.fragment_name(fragment, int(index))
            first = 0
            pending = None
            for batch in fragment.to_batches(columns=columns, batch_size=self.batch_size):
                if batch.num_rows == 0:
                    continue
                frame = batch.to_pandas()
                if pending is not None:
                    frame = pd.concat([pending, frame], ignore_index=True)
                ids = frame[self.id_col].to_numpy()
                starts = _run_starts(ids)
                # The last run may continue in the next batch: held back.
                complete, pending = frame.iloc[: starts[-2]], frame.iloc[starts[-2] :]
                if len(complete):
                    chunk = self._chunk(complete, extra, starts[:-2], seen, name, int(index), first)
                    first += chunk.panel.n_series
                    yield chunk
            if pending is not None and len(pending):
                yield self._chunk(pending, extra, np.array([0]), seen, name, int(index), first)

    def read_aligned(
        self, other: ParquetSeries, *, extra: Iterable = (), order: Iterable | None = None
    ) -> Iterator[tuple[SeriesChunk, tuple]]:
        """This data set's chunks (`read`), each with the same series' rows
        of `other`, a data set laid out alike: the same series in the same
        files (its i-th file beside this one's i-th) and order, with the same
        times. The two are read in lockstep, file by file in `order`, so
        neither is ever held whole: beside `read`'s memory, one chunk of
        `other`.

        **Returns:** an iterator of (chunk, a tuple of one (L_i, m) array per
        series of the chunk: `other`'s values of its m `features`).

        **Raises:** `ValueError` naming the series and both files where the
        two are not laid out alike (or hold different numbers of files).
        """
        mine, theirs = self.fragments, other.fragments
        if len(mine) != len(theirs):
            raise ValueError(
                f"{other.where} has {len(theirs)} files and {self.where} {len(mine)}: {_ALIGNED}"
            )
        along = (
            (panel.ids[i], panel.times[i], panel.values[i], panel.time_kind, chunk.fragment)
            for chunk in other.read(order=order)
            for panel in (chunk.panel,)
            for i in range(panel.n_series)
        )
        for chunk in self.read(extra=extra, order=order):
            panel, name = chunk.panel, self.fragment_name(mine[chunk.fragment], chunk.fragment)
            values = []
            for i, sid in enumerate(panel.ids):
                item = next(along, None)
                if item is None:
                    raise ValueError(f"series {sid!r} of {name} is not in {other.where}: {_ALIGNED}")
                their_sid, times, value, kind, index = item
                their_name = other.fragment_name(theirs[index], index)
                if index != chunk.fragment or their_sid != sid:
                    raise ValueError(
                        f"series {sid!r} of {name} meets series {their_sid!r} of {their_name} in "
                        f"{other.where}: {_ALIGNED}"
                    )
                if len(value) != panel.lengths[i]:
                    raise ValueError(
                        f"series {sid!r} has {panel.lengths[i]} rows in {name} but {len(value)} in {their_name}"
                    )
                if kind != panel.time_kind or not np.array_equal(times, panel.times[i]):
                    raise ValueError(f"series {sid!r}: its times in {their_name} differ from those in {name}")
                values.append(value)
            yield chunk, tuple(values)
        extra_item = next(along, None)
        if extra_item is not None:
            their_sid, _, _, _, index = extra_item
            raise ValueError(
                f"series {their_sid!r} of {other.fragment_name(theirs[index], index)} is not in "
                f"{self.where}: {_ALIGNED}"
            )

    def _claim(self, sid, seen: set, name: str) -> None:
        """Add the id of a series that begins in `name` to `seen`; a missing
        id, or one seen before (the rows of a series are not contiguous, or
        span two files), raises a ValueError naming it and the file."""
        if pd.isna(sid):
            raise ValueError(f"{name}: series id missing (NaN/None) in column {self.id_col!r}")
        if sid in seen:
            raise ValueError(
                f"series {sid!r} appears again in {name} after other series began: each "
                f"series' rows must be contiguous and in one file (write the data sorted by "
                f"{self.id_col!r}, then by time)"
            )
        seen.add(sid)

    def _chunk(self, frame, extra, starts, seen, name, index, first) -> SeriesChunk:
        ids = frame[self.id_col].to_numpy()
        for sid in ids[starts]:
            self._claim(sid, seen, name)
        try:
            panel = to_panel(frame.drop(columns=list(extra)), id_col=self.id_col, time_col=self.time_col)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{error} (in {name})") from error
        return SeriesChunk(
            panel=panel, extra={c: frame[c].to_numpy() for c in extra}, fragment=index, first=first
        )

    def series_lengths(self, files: Iterable | None = None) -> tuple[list, np.ndarray, np.ndarray]:
        """(ids, lengths, fragment of each series) in data set order, from the
        id column alone (a cheap pass; the order is checked as in `read`);
        `files`: the indices of the fragments to read (default: all; the
        result may then be empty)."""
        ids, lengths, where = [], [], []
        seen: set = set()
        fragments = self.fragments
        for index in range(len(fragments)) if files is None else files:
            index = int(index)
            fragment = fragments[index]
            name = self.fragment_name(fragment, index)
            for batch in fragment.to_batches(columns=[self.id_col], batch_size=self.batch_size):
                values = batch.column(0).to_pandas().to_numpy()
                if not len(values):
                    continue
                starts = _run_starts(values)
                counts = np.diff(starts)
                runs = values[starts[:-1]]
                if ids and where[-1] == index and runs[0] == ids[-1]:
                    lengths[-1] += int(counts[0])
                    runs, counts = runs[1:], counts[1:]
                for sid, count in zip(runs, counts):
                    self._claim(sid, seen, name)
                    ids.append(sid)
                    lengths.append(int(count))
                    where.append(index)
        if not ids and files is None:
            raise ValueError(f"{self.where} holds no rows")
        return ids, np.asarray(lengths, np.int64), np.asarray(where, np.int64)


_ALIGNED = "the two data sets must hold the same series in the same files and order, with the same times"


def _run_starts(ids: np.ndarray) -> np.ndarray:
    """Where each run of equal ids starts, and len(ids) last."""
    ids = np.asarray(ids)
    change = ids[1:] != ids[:-1]
    if ids.dtype == object:
        change = np.asarray(change, dtype=bool)
    return np.concatenate([[0], np.flatnonzero(change) + 1, [len(ids)]]).astype(np.int64)


def open_parquet(
    source,
    *,
    id_col,
    time_col=None,
    exclude: Iterable = (),
    features: Iterable | None = None,
    batch_size: int = BATCH_ROWS,
) -> ParquetSeries:
    """Open a long-format Parquet data set.

    **Arguments:**

    - `source`: a path (str or os.PathLike) to a `.parquet` file or a
      directory of them, or a `pyarrow.dataset.Dataset`.
    - `id_col`: the series id column (required).
    - `time_col`: the time column, or None (the rows of a series are its
      steps 0, 1, ...).
    - `exclude`: columns that are not features (a target column).
    - `features`: the feature columns to read (default: every column but
      the id, time and `exclude` ones); others are not read.
    - `batch_size`: rows per record batch read.

    **Returns:** a `ParquetSeries`.

    **Raises:** `ValueError` when a named column is missing (naming it and
    the data set), when no feature column is left, or the path does not
    exist; `TypeError` for another kind of `source`.
    """
    ds = _pyarrow_dataset()
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise ValueError(f"Parquet data set {path!r} does not exist")
        dataset, where = ds.dataset(path, format="parquet"), path
    elif isinstance(source, ds.Dataset):
        dataset, where = source, f"the {type(source).__name__}"
    else:
        raise TypeError(f"a Parquet source is a path or a pyarrow.dataset.Dataset, got {type(source).__name__}")
    if id_col is None:
        raise ValueError(f"reading the Parquet data set {where} needs id_col (which column names the series?)")
    names = list(dataset.schema.names)
    exclude = tuple(exclude)
    named = (("id_col", id_col), ("time_col", time_col), *(("y", c) for c in exclude))
    if features is not None:
        named = (*named, *(("feature column", c) for c in features))
    for role, column in named:
        if column is not None and column not in names:
            raise ValueError(f"{role} {column!r} is not a column of {where} (columns: {names})")
    if time_col is not None and time_col == id_col:
        raise ValueError("id_col and time_col must be different columns")
    if features is None:
        features = tuple(c for c in names if c not in {id_col, time_col, *exclude})
    features = tuple(features)
    if not features:
        raise ValueError(f"{where} has no feature column besides {[id_col, time_col, *exclude]}")
    return ParquetSeries(dataset, id_col, time_col, features, where, int(batch_size))
