"""Fit and predict from a long-format Parquet data set, streamed
(`s5ts.data.open_parquet` for the layout and order it needs).

`fit` makes one statistics pass over the data set in file order that
gathers what the in-memory path learns from the whole panel: every series'
id and length, the number of observed values, mean and standard deviation
of each feature per series (from which the pooled statistics of `"global"`
scaling and the reference of `"series"` scaling follow exactly, up to
rounding: `pooled_from_moments`, `reference_from_moments`), whether any
value is missing, the median gap (`MedianGap`: exact up to 2²² gaps, then a
log-histogram within 3.4·10⁻⁴), and each series' target. Then training
epochs stream the files again (`StreamedSequences`). Memory: one record
batch and one chunk of series, the padded batches' buffers (`rows` series
per length bucket), and O(n_series × n_features) small per-series numbers.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from ..data import MedianGap, ParquetSeries, RaggedPanel, open_parquet
from ..training import StreamedSequences, predict_outputs
from ._scaling import pooled_from_moments


def open_source(estimator, X, y=None, features=None) -> tuple[ParquetSeries, str | None]:
    """`X` opened with the estimator's `id_col` / `time_col` (and the
    `features` columns alone, if given), and the name of `y`'s column in it
    (None when `y` is given apart)."""
    column = y if isinstance(y, str) else None
    if estimator.id_col is None:
        where = os.fspath(X) if isinstance(X, (str, os.PathLike)) else type(X).__name__
        raise ValueError(
            f"{type(estimator).__name__} reads the Parquet data set {where!r} with id_col (and "
            "time_col): set them, e.g. id_col='id', time_col='time'"
        )
    source = open_parquet(
        X,
        id_col=estimator.id_col,
        time_col=estimator.time_col,
        exclude=() if column is None else (column,),
        features=features,
    )
    return source, column


def ids_panel(ids, like: RaggedPanel) -> RaggedPanel:
    """A panel of the series `ids` without their data (each of length 0),
    with `like`'s columns, kind of time and names: what targets are aligned
    with (`to_targets`) and predictions indexed by (`series_index`)."""
    values, times = np.zeros((0, like.n_features)), np.zeros(0)
    values.setflags(write=False)
    times.setflags(write=False)
    n = len(ids)
    return dataclasses.replace(
        like, ids=tuple(ids), values=(values,) * n, times=(times,) * n, ids_are_labels=True, row_series=None
    )


@dataclasses.dataclass
class _Statistics:
    """What the statistics pass gathers (see the module docstring)."""

    ids: list = dataclasses.field(default_factory=list)
    lengths: list = dataclasses.field(default_factory=list)
    counts: list = dataclasses.field(default_factory=list)
    means: list = dataclasses.field(default_factory=list)
    stds: list = dataclasses.field(default_factory=list)
    targets: list = dataclasses.field(default_factory=list)
    offsets: dict = dataclasses.field(default_factory=dict)
    first: RaggedPanel | None = None
    missing: bool = False
    gaps: MedianGap = dataclasses.field(default_factory=MedianGap)

    def add(self, chunk, column) -> None:
        panel = chunk.panel
        if chunk.first == 0:
            self.offsets[chunk.fragment] = len(self.ids)
        if self.first is None:
            self.first = panel.subset([0])
        self.ids.extend(panel.ids)
        self.lengths.append(panel.lengths)
        stacked = np.concatenate(panel.values)
        starts = np.concatenate([[0], np.cumsum(panel.lengths)[:-1]])
        observed = ~np.isnan(stacked)
        self.missing = self.missing or not observed.all()
        count = np.add.reduceat(observed.astype(np.float64), starts, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.add.reduceat(np.where(observed, stacked, 0.0), starts, axis=0) / count
            spread = np.where(observed, stacked - np.repeat(mean, panel.lengths, axis=0), 0.0) ** 2
            std = np.sqrt(np.add.reduceat(spread, starts, axis=0) / count)
        self.counts.append(count)
        self.means.append(mean)
        self.stds.append(std)
        for t in panel.times:
            self.gaps.add(np.diff(t))
        if column is not None:
            self.targets.append(panel.rows_to_series(chunk.extra[column], f"column {column!r}"))


def statistics_pass(source: ParquetSeries, column) -> _Statistics:
    """One pass over `source` in file order (`_Statistics`)."""
    stats = _Statistics()
    for chunk in source.read(extra=() if column is None else (column,)):
        stats.add(chunk, column)
    if stats.first is None:
        raise ValueError(f"{source.where} holds no rows")
    return stats


def _targets_by_id(y, source: ParquetSeries):
    """`y` given apart from X: a pandas Series / DataFrame indexed by id, or
    a pyarrow Table with the id column and the target column(s)."""
    if isinstance(y, (pd.Series, pd.DataFrame)):
        return y
    if type(y).__module__.startswith("pyarrow") and hasattr(y, "to_pandas") and hasattr(y, "column_names"):
        if source.id_col not in y.column_names:
            raise ValueError(f"the target table has no id column {source.id_col!r} (columns: {y.column_names})")
        frame = y.to_pandas().set_index(source.id_col)
        return frame.iloc[:, 0] if frame.shape[1] == 1 else frame
    raise TypeError(
        "with a Parquet X, y is the name of a column of X, a pandas Series / DataFrame indexed "
        f"by id, or a pyarrow Table keyed by {source.id_col!r}; got {type(y).__name__}"
    )


def training_data(estimator, X, y, *, fitted: bool, classes=None):
    """(prep, per_step, target state, `StreamedSequences`, n_inputs) for a
    fit on the Parquet data set `X` with targets `y` (one per series)."""
    from ._base import finish_preprocessing

    source, column = open_source(estimator, X, y)
    stats = statistics_pass(source, column)
    ids = ids_panel(stats.ids, stats.first)
    y_all = np.concatenate(stats.targets) if column is not None else _targets_by_id(y, source)
    targets, per_step, target_state = estimator._encode_targets(
        y_all, ids, state=estimator._target_state() if fitted else None, classes=classes
    )
    if per_step:
        raise ValueError("with a Parquet X, y must have one target per series (per-step targets are not supported yet)")
    weights = estimator._weights(None, ids, targets, target_state)
    lengths = np.concatenate(stats.lengths)
    if fitted:
        prep = estimator.preprocessing_
        estimator._check_fitted_inputs(stats.first, X)
    else:
        counts, means, stds = (np.concatenate(a) for a in (stats.counts, stats.means, stats.stds))
        prep = finish_preprocessing(
            stats.first,
            counts.sum(axis=0) > 0,
            stats.missing,
            lambda: pooled_from_moments(counts, means, stds, weights),
            lambda: (means, stds),
            stats.gaps.median(),
            estimator.standardize,
            estimator._time_handling,
            estimator.first_gap,
            weights,
        )
    n_inputs = estimator._sequences(stats.first, prep, encoder=estimator.encoder).inputs[0].shape[1]
    offsets = stats.offsets

    def chunks(rng):
        order = None if rng is None else rng.permutation(len(source.fragments))
        for chunk in source.read(order=order):
            panel = estimator._check_fitted_inputs(chunk.panel, X) if fitted else chunk.panel
            positions = offsets[chunk.fragment] + chunk.first + np.arange(panel.n_series)
            data = estimator._sequences(
                panel, prep, targets[positions], False, None if weights is None else weights[positions],
                encoder=estimator.encoder,
            )
            yield positions, data

    elapsed = estimator._sequences(stats.first, prep, encoder=estimator.encoder).elapsed
    data = StreamedSequences(lengths=lengths, chunks=chunks, per_step=False, elapsed=elapsed)
    return prep, per_step, target_state, data, n_inputs


def predict(estimator, X) -> tuple[RaggedPanel, list]:
    """(a panel of X's ids, without data; the network's outputs per series,
    in X's order) for the fitted `estimator` and the Parquet data set `X`:
    a cheap pass over the id column for the lengths, then one over the data
    (`predict_outputs` over a `StreamedSequences`, batched as in memory)."""
    source, _ = open_source(estimator, X, features=estimator.preprocessing_.columns)
    ids, lengths, fragment = source.series_lengths()
    offsets = np.concatenate([[0], np.cumsum(np.bincount(fragment, minlength=len(source.fragments)))])
    prep = estimator.preprocessing_
    first = []

    def chunks(rng):
        for chunk in source.read():
            panel = estimator._check_fitted_inputs(chunk.panel, X)
            if not first:
                first.append(panel.subset([0]))
            positions = offsets[chunk.fragment] + chunk.first + np.arange(panel.n_series)
            yield positions, estimator._sequences(panel, prep)

    data = StreamedSequences(lengths=lengths, chunks=chunks, per_step=estimator.per_step_, cap_length=False)
    outputs = predict_outputs(estimator.model_, data, estimator.batch_size)
    return ids_panel(ids, first[0]), outputs
