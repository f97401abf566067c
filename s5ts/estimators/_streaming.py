"""Fit and predict from a long-format Parquet data set, streamed
(`s5ts.data.open_parquet` for the layout and order it needs).

`fit` makes one statistics pass over the data set in file order that
gathers what the in-memory path learns from the whole panel: every series'
id and length, the number of observed values, mean and standard deviation
of each feature per series (from which the pooled statistics of `"global"`
scaling and the reference of `"series"` scaling follow exactly, up to
rounding: `pooled_from_moments`, `reference_from_moments`), whether any
value is missing, the median gap (`MedianGap`: exact up to 2²² gaps, then a
log-histogram within 3.4·10⁻⁴), each series' target(s) and weight (from
`sample_weight`'s column), and, for per-step targets (target columns of
which one varies within a series, a target data set laid out as X, or an
(id, time)-indexed y: `TargetRows`), each series' count, mean and standard
deviation of each target, from which the target scaling follows as in
memory. Then training epochs stream the files again (`StreamedSequences`;
per-step targets are read along with the features, a target data set in
lockstep with X). Memory: one record batch and one chunk of series (of X,
and of a target data set), the padded batches' buffers (`rows` series per
length bucket), and O(n_series × n_features) small per-series numbers. `predict` and `score` hold what they return: one
output (and for `score` one target) per series, or per observation of a
per-step model.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from ..data import (
    MedianGap,
    ParquetSeries,
    RaggedPanel,
    is_parquet_source,
    merge_in_file_order,
    open_parquet,
    order_by_ids,
    steps_by_series,
    to_targets,
)
from ..training import (
    FileShares,
    StreamedSequences,
    allgather_objects,
    file_owners,
    gather_results,
    own_files,
    predict_outputs,
)
from ._preprocessing import finish_preprocessing
from ._scaling import series_moments, series_statistics
from ._task import AbstractTask, check_sample_weight


@dataclasses.dataclass(frozen=True)
class TargetRows:
    """Targets read row by row along a Parquet X: `columns` of X; or, when
    `aligned` is given, those columns of a second Parquet data set laid
    out as X (`ParquetSeries.read_aligned`); or, when `by_step` is given,
    a (series, time) MultiIndex y held in memory, split by series
    (`steps_by_series`; `columns`: its columns, or one name for a Series).
    `is_1d`: y named one column of X (a str), a target data set of one
    column or a Series; otherwise the targets are (…, k), named by
    `columns` as a DataFrame y's are in memory."""

    columns: tuple
    is_1d: bool
    aligned: ParquetSeries | None = None
    by_step: dict | None = None

    @property
    def names(self) -> tuple | None:
        """The target names of 2-D targets (`TargetScaling.columns`), else None."""
        return None if self.is_1d else self.columns

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
        return _series_rows(self.stacked(rows), panel)


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


def ids_panel(ids, like: RaggedPanel, times=None) -> RaggedPanel:
    """A panel of the series `ids` without feature data (no columns), with
    `like`'s kind of time and names, and `times` (a sequence of (L_i,)
    arrays; default: each series of length 0): what targets are aligned
    with (`to_targets`) and predictions indexed by (`series_index`, and
    `step_index` with `times`)."""
    if times is None:
        times = (np.zeros(0),) * len(ids)
    values = tuple(np.zeros((len(t), 0)) for t in times)
    return dataclasses.replace(
        like, ids=tuple(ids), values=values, times=tuple(times), columns=(), ids_are_labels=True, row_series=None,
        row_order=None,
    )


def _series_rows(values: np.ndarray, panel: RaggedPanel) -> list:
    """Per-row `values` of a chunk (`SeriesChunk.extra`) cut into one
    (L_i,) array per series of its `panel`."""
    return np.split(panel.rows_in_order(values), np.cumsum(panel.lengths)[:-1])


@dataclasses.dataclass
class _Statistics:
    """What the statistics pass gathers (see the module docstring)."""

    ids: list = dataclasses.field(default_factory=list)
    lengths: list = dataclasses.field(default_factory=list)
    counts: list = dataclasses.field(default_factory=list)
    means: list = dataclasses.field(default_factory=list)
    stds: list = dataclasses.field(default_factory=list)
    targets: list = dataclasses.field(default_factory=list)
    target_means: list = dataclasses.field(default_factory=list)
    target_stds: list = dataclasses.field(default_factory=list)
    weights: list = dataclasses.field(default_factory=list)
    # The error of the first series whose target column varies (None: the
    # column is constant within every series).
    varying: ValueError | None = None
    offsets: dict = dataclasses.field(default_factory=dict)
    first: RaggedPanel | None = None
    missing: bool = False
    gaps: MedianGap = dataclasses.field(default_factory=MedianGap)
    # Each chunk's (fragment, first series in it, series): the order that
    # `merged` restores across processes; and the key of `varying`'s chunk.
    keys: list = dataclasses.field(default_factory=list)
    varying_key: tuple | None = None

    #: The lists with one entry per chunk (those that have any).
    PER_CHUNK = ("lengths", "counts", "means", "stds", "targets", "target_means", "target_stds", "weights")

    @property
    def parts(self) -> np.ndarray:
        """(n,) the file (fragment) of every series."""
        return np.repeat(np.array([k[0] for k in self.keys], np.int64), [k[2] for k in self.keys])

    @classmethod
    def merged(cls, parts: list["_Statistics"]) -> "_Statistics":
        """The statistics of every process's share (`parts`) as one pass over
        the whole data set in file order would have gathered them: the
        chunks of all shares sorted by file and place (each is read as one
        process reads it), the gaps merged."""
        out = cls()
        merge_in_file_order(parts, out, ("ids",), cls.PER_CHUNK)
        owned = [part for part in parts if part.keys]
        if owned:
            out.first = min(owned, key=lambda part: part.keys[0]).first
        varied = [part for part in parts if part.varying is not None]
        if varied:
            first = min(varied, key=lambda part: part.varying_key)
            out.varying, out.varying_key = first.varying, first.varying_key
        out.missing = any(part.missing for part in parts)
        for part in parts:
            out.gaps.merge(part.gaps)
        return out

    def add(self, chunk, targets: TargetRows | None, rows, weight_column, per_step: bool) -> None:
        panel = chunk.panel
        if chunk.first == 0:
            self.offsets[chunk.fragment] = len(self.ids)
        if self.first is None:
            self.first = panel.subset([0])
        self.keys.append((chunk.fragment, chunk.first, panel.n_series))
        self.ids.extend(panel.ids)
        self.lengths.append(panel.lengths)
        count, mean, std = series_statistics(panel.values)
        starts = np.concatenate([[0], np.cumsum(panel.lengths)[:-1]])
        self.missing = self.missing or bool((count < panel.lengths[:, None]).any())
        self.counts.append(count)
        self.means.append(mean)
        self.stds.append(std)
        for t in panel.times:
            self.gaps.add(np.diff(t))
        if targets is not None:
            if not targets.per_step_only:
                try:
                    self.targets.append(targets.per_series(rows, panel))
                except ValueError as error:  # one target per observation, or an error
                    self.targets.append(targets.stacked(rows)[starts])
                    if self.varying is None:
                        self.varying, self.varying_key = error, self.keys[-1]
            if per_step:  # checked as in memory (finite, numeric), then each series' moments
                steps = to_targets(targets.per_step(rows, panel), panel, numeric=True, kind="per_step").values
                target_mean, target_std = series_moments(steps)
                self.target_means.append(target_mean)
                self.target_stds.append(target_std)
        if weight_column is not None:
            self.weights.append(panel.rows_to_series(chunk.extra[weight_column], f"column {weight_column!r}"))


def statistics_pass(
    source: ParquetSeries,
    targets: TargetRows | None,
    weight_column=None,
    per_step: bool = False,
    owners: np.ndarray | None = None,
) -> _Statistics:
    """One pass over `source` in file order (`_Statistics`), with the
    `targets` read along; `per_step`: also each series' moments of its
    targets. Across processes (`owners`: `file_owners`), each reads its
    own files (`share_statistics`) and the shares are merged
    (`_Statistics.merged`)."""
    if owners is None:
        stats = share_statistics(source, targets, weight_column, per_step)
    else:
        stats = _Statistics.merged(
            gather_results(lambda: share_statistics(source, targets, weight_column, per_step, own_files(owners)))
        )
        source.check_unique(stats.ids, stats.parts)
    if stats.first is None:
        raise ValueError(f"{source.where} holds no rows")
    return stats


def share_statistics(
    source: ParquetSeries, targets: TargetRows | None, weight_column=None, per_step: bool = False, files=None
) -> _Statistics:
    """The statistics of the `files` of `source` (indices; default: all,
    in file order)."""
    stats = _Statistics()
    extra = () if weight_column is None else (weight_column,)
    for chunk, rows in read_targets(source, targets, extra=extra, order=files):
        stats.add(chunk, targets, rows, weight_column, per_step)
    return stats


def _targets_by_id(y, source: ParquetSeries):
    """`y` given apart from X, one target per series: a pandas Series /
    DataFrame indexed by id, or a pyarrow Table with the id column and the
    target column(s)."""
    if isinstance(y, (pd.Series, pd.DataFrame)):
        return y
    if type(y).__module__.startswith("pyarrow") and hasattr(y, "to_pandas") and hasattr(y, "column_names"):
        if source.id_col not in y.column_names:
            raise ValueError(f"the target table has no id column {source.id_col!r} (columns: {y.column_names})")
        frame = y.to_pandas().set_index(source.id_col)
        return frame.iloc[:, 0] if frame.shape[1] == 1 else frame
    raise TypeError(
        "with a Parquet X, y is the name of a column of X (or a list of them), a Parquet data set "
        "of targets laid out as X (a pathlib.Path or a pyarrow Dataset), a pandas Series / DataFrame "
        f"indexed by id or by (id, time), or a pyarrow Table keyed by {source.id_col!r}; got {type(y).__name__}"
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


def training_data(estimator, task: AbstractTask, X, y, *, state=None, fitted: bool, classes=None, sample_weight=None):
    """(prep, per_step, target state, `StreamedSequences`, n_inputs) for a
    fit on the Parquet data set `X` with targets `y` and `sample_weight`.

    `y` names a column of X, or a list of them: one target (row) per
    series when each is the same on every row of each series, else one per
    observation (a per-step model; a fitted model keeps its own kind); or
    y is a target data set laid out as X (`TargetRows`): one per
    observation; or y is given apart from X, one target per series
    (`_targets_by_id`). `sample_weight`: see `_weights_by_id`, checked by
    `check_sample_weight`. The targets are the `task`'s; a `fitted` model's
    target state is `state`."""
    source, targets, weight_column = open_source(estimator, X, y, sample_weight=sample_weight)
    stepped = targets is not None and targets.per_step_only
    if stepped and not task.takes_per_step:
        raise ValueError(
            f"{type(estimator).__name__} takes one label per series: with a Parquet X, y names a column "
            "of X or is given by id; a target data set or an (id, time)-indexed y holds one per observation"
        )
    may_step = targets is not None and (estimator.per_step_ if fitted else task.takes_per_step)
    owners = file_owners(source)
    stats = statistics_pass(source, targets, weight_column, per_step=may_step or stepped, owners=owners)
    ids = ids_panel(stats.ids, stats.first)
    if targets is not None:
        targets.check_ids(ids)
    sample_weight = check_sample_weight(_weights_by_id(sample_weight, ids, stats.weights), ids)
    per_step = stepped or (may_step and (fitted or stats.varying is not None))
    if stats.varying is not None and not per_step:
        raise stats.varying
    if per_step:
        targets_by_series = None
        if fitted:
            target_state = state
        else:
            counts = np.concatenate(stats.lengths)[:, None].astype(np.float64)
            means, stds = np.concatenate(stats.target_means), np.concatenate(stats.target_stds)
            target_state = task.state_from_moments(
                counts, means, stds, sample_weight, is_1d=targets.is_1d, columns=targets.names
            )
    else:
        if targets is None:
            y_all = _targets_by_id(y, source)
        elif targets.is_1d:
            y_all = np.concatenate(stats.targets)
        else:
            y_all = pd.DataFrame(np.concatenate(stats.targets), index=pd.Index(ids.ids), columns=list(targets.columns))
        targets_by_series, _, target_state = task.encode(
            y_all, ids, state, classes=classes, weights=sample_weight
        )
    weights = task.weights(sample_weight, targets_by_series, target_state)
    lengths = np.concatenate(stats.lengths)
    if fitted:
        prep = estimator.preprocessing_
        prep.check(stats.first)
    else:
        counts, means, stds = (np.concatenate(a) for a in (stats.counts, stats.means, stats.stds))
        prep = finish_preprocessing(
            stats.first,
            counts,
            means,
            stds,
            stats.missing,
            stats.gaps.median(),
            estimator.standardize,
            estimator._time_handling,
            estimator.first_gap,
            weights,
            estimator.encoder,
        )
    n_inputs = prep.n_inputs(stats.first)
    offsets = stats.offsets

    def chunks(rng):
        order = own_files(owners, None if rng is None else rng.permutation(len(source.fragments)))
        for chunk, rows in read_targets(source, targets if per_step else None, order=order):
            panel = prep.check(chunk.panel)
            positions = offsets[chunk.fragment] + chunk.first + np.arange(panel.n_series)
            if per_step:
                chunk_targets, _, _ = task.encode(targets.per_step(rows, panel), panel, target_state)
            else:
                chunk_targets = targets_by_series[positions]
            data = prep.transform(panel, chunk_targets, per_step, None if weights is None else weights[positions])
            yield positions, data

    elapsed = prep.handling.elapsed
    shares = None if owners is None else FileShares(stats.parts, owners)
    data = StreamedSequences(lengths=lengths, chunks=chunks, per_step=per_step, elapsed=elapsed, shares=shares)
    return prep, per_step, target_state, data, n_inputs


def predict(estimator, X, *, targets=None, weight_column=None, read=None) -> tuple[RaggedPanel, list, list]:
    """(a panel of X's ids, without data, with their times for a per-step
    model; the network's outputs per series, in X's order, per step trimmed
    to (L_i, ...); `read(chunk, rows)` of every chunk read, in order, with
    its `targets`' rows (`TargetRows.read`)) for the fitted `estimator` and
    the Parquet data set `X`: a cheap pass over the id column for the
    lengths, then one over the data (`predict_outputs` over a
    `StreamedSequences`, batched as in memory), with the `targets` (None or
    `TargetRows`) and `weight_column` (a name, or None) read along. A
    non-finite output is the estimator's to check (`_check_finite`)."""
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
    data = StreamedSequences(lengths=lengths, chunks=chunks, per_step=estimator.per_step_, cap_length=False, shares=shares)
    outputs = predict_outputs(estimator.model_, data, estimator.batch_size, estimator._prediction_backprop())
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


def scored(estimator, X, y, sample_weight=None, *, numeric: bool):
    """(a panel of X's ids, the network's outputs, the true targets, the
    series' weights or None) for the `score` of a fitted `estimator` on the
    Parquet data set `X`, streamed: `y` names columns of X or is a target
    data set laid out as X (`TargetRows`; checked and aligned per chunk by
    `to_targets`, as in memory: one per series, or one per observation for
    a per-step model) or is given apart, one per series
    (`_targets_by_id`); `sample_weight` as in `fit` (`_weights_by_id`).
    The targets are a (n,) / (n, k) array, or per step a tuple of (L_i,) /
    (L_i, k) arrays, as `to_targets` gives them in memory."""
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

    panel, outputs, parts = predict(estimator, X, targets=targets, weight_column=weight_column, read=read)
    if targets is not None:
        targets.check_ids(panel)
    if targets is None:
        source, _, _ = open_source(estimator, X, features=estimator.preprocessing_.columns)
        truth = to_targets(_targets_by_id(y, source), panel, numeric=numeric, kind=kind).values
    elif estimator.per_step_:
        truth = tuple(item for part, _ in parts for item in part)
    else:
        truth = np.concatenate([part for part, _ in parts])
    weights = _weights_by_id(sample_weight, panel, [weight for _, weight in parts])
    return panel, outputs, truth, weights
