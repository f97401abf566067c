"""Fit and predict from a long-format Parquet data set, streamed
(`s5ts.data.open_parquet` for the layout and order it needs).

`fit` reads it as a source (`ParquetSource`): one statistics pass in file
order (`Statistics`; per-step targets — target columns of which one varies
within a series, a target data set laid out as X, or an (id, time)-indexed
y: `TargetRows` — kept as each series' moments), then training epochs
stream the files again (`StreamedSequences`; per-step targets read along
with the features, a target data set in lockstep with X). Memory: one
record batch and one chunk of series (of X, and of a target data set), the
padded batches' buffers (`rows` series per length bucket), and
O(n_series × n_features) small per-series numbers. `predict` and `score`
hold what they return: one output (and for `score` one target) per
series, or per observation of a per-step model.
"""

from __future__ import annotations

import dataclasses
import os
from typing import final

import numpy as np
import pandas as pd

from ..data import (
    ParquetSeries,
    PowersOfTwo,
    RaggedPanel,
    is_parquet_source,
    open_parquet,
    order_by_ids,
    steps_by_series,
    to_targets,
)
from ..training import (
    FileShares,
    StreamedSequences,
    Thinning,
    allgather_objects,
    file_owners,
    gather_results,
    own_files,
    predict_outputs,
)
from ._preprocessing import Statistics
from ._source import AbstractSource, ids_panel
from ._task import AbstractTask, check_sample_weight


@dataclasses.dataclass(frozen=True)
class TargetRows:
    """Targets read row by row along a Parquet X (`_target_rows`): `columns`
    of X; or those of `aligned`, a target data set laid out as X
    (`ParquetSeries.read_aligned`); or of `by_step`, a (series, time)
    MultiIndex y split by series (`steps_by_series`). `is_1d`: one target
    per row, (…,); else (…, k), named by `columns` as a DataFrame y's are."""

    columns: tuple
    is_1d: bool
    aligned: ParquetSeries | None = None
    by_step: dict | None = None

    @property
    def per_step_only(self) -> bool:
        """Whether the targets are one per observation whatever their values
        (as a MultiIndex y in memory): those given apart from X."""
        return self.aligned is not None or self.by_step is not None

    def read(self, source: ParquetSeries, *, extra=(), order=None):
        """`source`'s chunks with their targets: (chunk, {column: (n_rows,)
        values}), row-aligned with the chunk's input rows. `by_step`'s
        series are checked against the chunk's (`to_targets`: steps and
        times; a series of X missing from y raises a `ValueError` naming
        it and the file)."""
        if self.aligned is not None:
            pairs = source.read_aligned(self.aligned, extra=extra, order=order)
        elif self.by_step is not None:
            pairs = ((chunk, self._given(chunk, source)) for chunk in source.read(extra=extra, order=order))
        else:
            for chunk in source.read(extra=(*self.columns, *extra), order=order):
                yield chunk, {c: chunk.extra[c] for c in self.columns}
            return
        for chunk, values in pairs:
            stacked = np.concatenate([v.reshape(len(v), -1) for v in values])
            yield chunk, {c: stacked[:, j] for j, c in enumerate(self.columns)}

    def _given(self, chunk, source: ParquetSeries) -> tuple:
        """`by_step`'s targets of the chunk's series, checked: (L_i,) / (L_i, k) arrays."""
        missing = [sid for sid in chunk.panel.ids if sid not in self.by_step]
        if missing:
            fragment = source.fragment_name(source.fragments[chunk.fragment], chunk.fragment)
            raise ValueError(f"y has no entry for series {missing[0]!r} of X (in {fragment})")
        items = [self.by_step[sid] for sid in chunk.panel.ids]
        return to_targets(items, chunk.panel, numeric=True, kind="per_step").values

    def check_ids(self, ids: RaggedPanel) -> None:
        """A `by_step` y's series are X's, `ids` (`order_by_ids`'s errors)."""
        if self.by_step is not None:
            order_by_ids(list(self.by_step), ids)

    def stacked(self, rows: dict) -> np.ndarray:
        """The per-row targets (n_rows,) / (n_rows, k)."""
        return rows[self.columns[0]] if self.is_1d else np.column_stack([rows[c] for c in self.columns])

    def per_series(self, rows: dict, panel: RaggedPanel) -> np.ndarray:
        """One target per series, (n,) / (n, k): each column must be the same
        on every row of a series (a `ValueError` names the series and the
        column)."""
        values = [panel.rows_to_series(rows[c], f"column {c!r}") for c in self.columns]
        return values[0] if self.is_1d else np.column_stack(values)

    def per_step(self, rows: dict, panel: RaggedPanel) -> list:
        """One (L_i,) / (L_i, k) array of targets per series of `panel`."""
        return np.split(panel.rows_in_order(self.stacked(rows)), np.cumsum(panel.lengths)[:-1])


def read_targets(source: ParquetSeries, targets: TargetRows | None, *, extra=(), order=None):
    """`source`'s chunks, each with its targets' rows (`TargetRows.read`;
    None without `targets`)."""
    if targets is not None:
        yield from targets.read(source, extra=extra, order=order)
        return
    for chunk in source.read(extra=extra, order=order):
        yield chunk, None


def _target_rows(y, estimator) -> TargetRows | None:
    """`y` as `TargetRows`: a str names a column of X; a list or tuple of
    str several; a path (os.PathLike, not a str: that names a column) or a
    `pyarrow.dataset.Dataset` is a target data set laid out as X, opened
    with the estimator's `id_col` / `time_col`, whose other columns are
    the targets; a (series, time) MultiIndex Series / DataFrame holds
    per-step targets in memory. None for another `y` (given apart, one
    per series by id)."""
    if isinstance(y, TargetRows):
        return y
    if isinstance(y, str):
        return TargetRows((y,), True)
    if isinstance(y, (list, tuple)) and y and all(isinstance(c, str) for c in y):
        if len(set(y)) != len(y):
            raise ValueError(f"y names a column of X more than once: {list(y)}")
        return TargetRows(tuple(y), False)
    if isinstance(y, (pd.Series, pd.DataFrame)) and isinstance(y.index, pd.MultiIndex):
        columns = tuple(str(c) for c in y.columns) if isinstance(y, pd.DataFrame) else ("y",)
        return TargetRows(columns, isinstance(y, pd.Series), by_step=steps_by_series(y))
    if isinstance(y, os.PathLike) or (not isinstance(y, (list, tuple)) and is_parquet_source(y)):
        aligned = open_parquet(y, id_col=estimator.id_col, time_col=estimator.time_col)
        return TargetRows(aligned.features, len(aligned.features) == 1, aligned)
    return None


def open_source(
    estimator, X, y=None, features=None, sample_weight=None
) -> tuple[ParquetSeries, TargetRows | None, str | None]:
    """`X` opened with the estimator's `id_col` / `time_col` (and the
    `features` columns alone, if given), `y` as `TargetRows` (None when `y`
    is given apart, by id: `_targets_by_id`) and the name of
    `sample_weight`'s column (None when it is given apart, or not at all):
    neither target nor weight columns are read as features."""
    weight_column = sample_weight if isinstance(sample_weight, str) else None
    if estimator.id_col is None:
        where = os.fspath(X) if isinstance(X, (str, os.PathLike)) else type(X).__name__
        raise ValueError(
            f"{type(estimator).__name__} reads the Parquet data set {where!r} with id_col (and "
            "time_col): set them, e.g. id_col='id', time_col='time'"
        )
    targets = _target_rows(y, estimator)
    of_x = () if targets is None or targets.per_step_only else targets.columns
    try:
        source = open_parquet(
            X,
            id_col=estimator.id_col,
            time_col=estimator.time_col,
            exclude=tuple(c for c in (*of_x, weight_column) if c is not None),
            features=features,
        )
    except ValueError as error:
        if isinstance(y, str) and os.path.exists(y):
            raise ValueError(f"{error}; a str y names a column of X: give a target data set as a pathlib.Path") from error
        raise
    return source, targets, weight_column


def share_statistics(
    source: ParquetSeries, targets: TargetRows | None, weight_column=None, per_step: bool = False, files=None, *,
    learn: bool = True,
) -> Statistics:
    """The statistics of the `files` of `source` (indices; default: all, in
    file order), the targets one per series (where a column varies within
    a series, its first row's and the error) or, `per_step`, their moments;
    `learn`: see `Statistics`."""
    stats, extra = Statistics(learn=learn), () if weight_column is None else (weight_column,)
    for chunk, rows in read_targets(source, targets, extra=extra, order=files):
        panel, series, steps, varying, weights = chunk.panel, None, None, None, None
        if targets is not None and not targets.per_step_only:
            try:
                series = targets.per_series(rows, panel)
            except ValueError as error:  # one target per observation, or an error
                series, varying = targets.stacked(rows)[np.cumsum(panel.lengths) - panel.lengths], error
        if targets is not None and per_step:
            steps = to_targets(targets.per_step(rows, panel), panel, numeric=True, kind="per_step").values
        if weight_column is not None:
            weights = panel.rows_to_series(chunk.extra[weight_column], f"column {weight_column!r}")
        stats.add(chunk, series=series, steps=steps, weights=weights, varying=varying)
    return stats


def _targets_by_id(y, id_col):
    """`y` given apart from X, one target per series: a pandas Series /
    DataFrame indexed by id, or a pyarrow Table with the id column and the
    target column(s)."""
    if isinstance(y, (pd.Series, pd.DataFrame)):
        return y
    if type(y).__module__.startswith("pyarrow") and hasattr(y, "to_pandas") and hasattr(y, "column_names"):
        if id_col not in y.column_names:
            raise ValueError(f"the target table has no id column {id_col!r} (columns: {y.column_names})")
        frame = y.to_pandas().set_index(id_col)
        return frame.iloc[:, 0] if frame.shape[1] == 1 else frame
    raise TypeError(
        "with a Parquet X, y is the name of a column of X (or a list of them), a Parquet data set "
        "of targets laid out as X (a pathlib.Path or a pyarrow Dataset), a pandas Series / DataFrame "
        f"indexed by id or by (id, time), or a pyarrow Table keyed by {id_col!r}; got {type(y).__name__}"
    )


def _weights_by_id(sample_weight, ids: RaggedPanel, from_column: list):
    """`sample_weight` for a Parquet X as one value per series of `ids`, in
    their order (unchecked): None; the name of a column of X (its values,
    `from_column`, read in the statistics pass); or a pandas Series indexed
    by id."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, str):
        return np.concatenate(from_column)
    if isinstance(sample_weight, pd.Series) and not isinstance(sample_weight.index, pd.MultiIndex):
        return sample_weight.to_numpy()[order_by_ids(sample_weight.index, ids, "sample_weight")]
    raise TypeError(
        "with a Parquet X, sample_weight is the name of a column of X (the same on every row of a "
        f"series) or a pandas Series indexed by id; got {type(sample_weight).__name__}"
    )


@final
class ParquetSource(AbstractSource):
    """The Parquet data set `X` (`open_source`), streamed, with the `task`'s
    targets `y` in any form of `fit`'s docstring (`_target_rows`,
    `_targets_by_id`; a fitted model keeps its own kind) and `sample_weight`
    (`_weights_by_id`)."""

    def __init__(self, estimator, task: AbstractTask, X, y, sample_weight=None):
        self.source, self.targets, self.weight_column = open_source(estimator, X, y, sample_weight=sample_weight)
        self.task, self.y, self.sample_weight = task, y, sample_weight
        self.owners = file_owners(self.source)

    def statistics(self, per_step):
        targets = self.targets
        stepped = targets is not None and targets.per_step_only
        if stepped and not self.task.takes_per_step:
            raise ValueError(
                f"{self.task.__class__.__name__} takes one label per series: with a Parquet X, y names a column "
                "of X or is given by id; a target data set or an (id, time)-indexed y holds one per observation"
            )
        may_step = targets is not None and (self.task.takes_per_step if per_step is None else per_step)
        # One pass in file order; across processes (`owners`) each reads its own files, the shares merged.
        source, args = self.source, (targets, self.weight_column, may_step or stepped)
        learn = per_step is None
        if self.owners is None:
            stats = share_statistics(source, *args, learn=learn)
        else:
            parts = gather_results(lambda: share_statistics(source, *args, own_files(self.owners), learn=learn))
            stats = Statistics.merged(parts)
            source.check_unique(stats.ids, stats.ledger.parts)
        if stats.first is None:
            raise ValueError(f"{source.where} holds no rows")
        ids = ids_panel(stats.ids, stats.first)
        if targets is not None:
            targets.check_ids(ids)
            stats.is_1d, stats.columns = targets.is_1d, None if targets.is_1d else targets.columns
        stats.sample_weight = check_sample_weight(_weights_by_id(self.sample_weight, ids, stats.weights), ids)
        stats.per_step = stepped or (may_step and (per_step is not None or stats.varying is not None))
        if stats.varying is not None and not stats.per_step:
            raise stats.varying
        if targets is None:
            stats.series_y = _targets_by_id(self.y, self.source.id_col)
        return stats

    def sequences(self, stats, make, elapsed, lengths):
        source, owners, ledger = self.source, self.owners, stats.ledger
        targets = self.targets if stats.per_step else None

        def chunks(rng):
            order = own_files(owners, None if rng is None else rng.permutation(len(source.fragments)))
            for chunk, rows in read_targets(source, targets, order=order):
                positions = ledger.positions(chunk)
                steps = None if targets is None else targets.per_step(rows, chunk.panel)
                yield positions, make(chunk.panel, positions, steps)

        shares = None if owners is None else FileShares(ledger.parts, owners)
        return StreamedSequences(lengths=lengths, chunks=chunks, per_step=stats.per_step, elapsed=elapsed, shares=shares)


def predict(
    estimator, X, backprop, *, thinning=Thinning(), targets=None, weight_column=None, read=None
) -> tuple[RaggedPanel, list, list]:
    """(a panel of X's ids without data, with their times for a per-step
    model; the network's outputs per series in X's order, per step trimmed
    to (L_i, ...); `read(chunk, rows)` of every chunk, in order, with its
    `targets`' rows) for the fitted `estimator` and the Parquet data set
    `X`: one cheap pass over the id column for the lengths, then one over
    the data (`predict_outputs`, the network run as `backprop` says, long
    series averaged over copies thinned as `thinning` says, over a
    `StreamedSequences` batched as in memory)."""
    prep = estimator.preprocessing_
    source, targets, _ = open_source(estimator, X, targets, features=prep.columns, sample_weight=weight_column)
    owners = file_owners(source)
    ids, lengths, fragment = series_lengths(source, owners)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(fragment, minlength=len(source.fragments)))])
    records = []  # per chunk read: (fragment, first, its first series, times, what `read` gave)

    def chunks(rng):
        extra = () if weight_column is None else (weight_column,)
        for chunk, rows in read_targets(source, targets, extra=extra, order=own_files(owners)):
            panel = prep.check(chunk.panel)
            records.append((
                chunk.fragment,
                chunk.first,
                panel.subset([0]),
                panel.times if estimator.per_step_ else None,
                None if read is None else read(dataclasses.replace(chunk, panel=panel), rows),
            ))
            positions = offsets[chunk.fragment] + chunk.first + np.arange(panel.n_series)
            yield positions, prep.transform(panel)

    shares = None if owners is None else FileShares(fragment, owners)
    # the id column alone gives no times: at most the steps of a held window
    # (a bound pads more; predictions do not depend on padding)
    data = StreamedSequences(
        lengths=prep.n_steps(lengths), chunks=chunks, per_step=estimator.per_step_, cap_length=PowersOfTwo(), shares=shares
    )
    outputs = predict_outputs(estimator.model_, data, estimator.batch_size, backprop, thinning)
    if owners is not None:  # every process's chunks, in file order
        records = sorted((r for part in allgather_objects(records) for r in part), key=lambda r: r[:2])
    times = [t for r in records for t in r[3]] if estimator.per_step_ else None
    return ids_panel(ids, records[0][2], times), outputs, [r[4] for r in records]


def series_lengths(source: ParquetSeries, owners: np.ndarray | None) -> tuple[list, np.ndarray, np.ndarray]:
    """`source.series_lengths()`; across processes (`owners`) each reads
    the id column of its own files and the shares are merged in file order."""
    if owners is None:
        return source.series_lengths()
    parts = gather_results(lambda: source.series_lengths(own_files(owners)))
    where = np.concatenate([part[2] for part in parts])
    order = np.argsort(where, kind="stable")
    ids = [sid for part in parts for sid in part[0]]
    ids = [ids[i] for i in order]
    lengths, where = np.concatenate([part[1] for part in parts])[order], where[order]
    if not ids:
        raise ValueError(f"{source.where} holds no rows")
    source.check_unique(ids, where)
    return ids, lengths, where


def scored(estimator, X, y, backprop, sample_weight=None, *, numeric: bool, thinning=Thinning()):
    """`predict`'s (panel, outputs) with the true targets and the series'
    weights (or None) for `score` on the Parquet data set `X`: `y` and
    `sample_weight` as in `fit`, targets read along with X checked and
    aligned per chunk by `to_targets`, as in memory: a (n,) / (n, k) array,
    or per step a tuple of (L_i,) / (L_i, k) arrays."""
    kind = "per_step" if estimator.per_step_ else "sequence"
    targets = _target_rows(y, estimator)
    weight_column = sample_weight if isinstance(sample_weight, str) else None
    if targets is None and estimator.per_step_:
        raise ValueError(
            "a per-step model scores a Parquet X against columns of X (pass their names as y) or a "
            "Parquet data set of targets laid out as X"
        )

    def read(chunk, rows):
        truth = weight = None
        if targets is not None:
            given = (targets.per_step if estimator.per_step_ else targets.per_series)(rows, chunk.panel)
            truth = to_targets(given, chunk.panel, numeric=numeric, kind=kind).values
        if weight_column is not None:
            weight = chunk.panel.rows_to_series(chunk.extra[weight_column], f"column {weight_column!r}")
        return truth, weight

    panel, outputs, parts = predict(
        estimator, X, backprop, thinning=thinning, targets=targets, weight_column=weight_column, read=read
    )
    if targets is None:
        truth = to_targets(_targets_by_id(y, estimator.id_col), panel, numeric=numeric, kind=kind).values
    else:
        targets.check_ids(panel)
        truth = [part for part, _ in parts]
        truth = tuple(item for part in truth for item in part) if estimator.per_step_ else np.concatenate(truth)
    weights = _weights_by_id(sample_weight, panel, [weight for _, weight in parts])
    return panel, outputs, truth, weights
