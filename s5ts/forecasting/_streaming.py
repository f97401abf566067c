"""`Forecaster.fit` on a long-format Parquet data set, streamed
(`s5ts.data.open_parquet` for the layout and order it needs).

The data set is read one chunk of complete series at a time, in passes:

1. **statistics**, in file order: every series' id, length, time span and
   held-out start (`held_out_start`), its own `SeriesScale`, the moments of
   the exogenous columns, the median gap (`MedianGap`: the time scale and
   the calendar's resolution) and the first and last time;
2. **plan**: each series' training and held-out windows
   (`WindowPlan.examples`, whose draws are seeded per series), of which
   only the lengths are kept;
3. **every epoch**: the windows again, in a shuffled order of files
   (`StreamedSequences`), equal to those of the plan;
4. **after training**: the held-out windows' errors calibrate the
   intervals (`held_out_calibration`, a uniform sample of at most
   `CALIBRATION_QUERIES`), and each series' state after its last
   observation is kept with its `StepCarry` (`SeriesState.at_end`), not
   its history.

Memory: one record batch and its chunk of series with their windows, the
padded batches' buffers, and per series O(d + state) numbers (its scale,
carry and network state; the windows' lengths). The windows are those the
same data in memory give (the same draws), so the two fits agree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..data import MedianGap, ParquetSeries, SeriesChunk, merge_in_file_order, open_parquet
from ..estimators import pooled_from_moments, series_moments
from ..training import FileShares, StreamedSequences, agreed_seed, file_owners, gather_results, own_files
from ._calendar import choose_cycles
from ._calibration import held_out_calibration
from ._fitting import fitted_attributes, horizon_seconds, train_network, window_plan
from ._network import advance
from ._series import TOO_SHORT, SeriesState, check_observed, exog_scaling, pooled_scale
from ._steps import SeriesScale, StepLayout, observation_steps
from ._windows import VALIDATION_QUERIES, as_sequences, held_out_start

#: The most held-out queries kept to calibrate the intervals of a streamed
#: fit (a uniform sample beyond it): 2²¹ errors, variances and leads, 48 MiB.
CALIBRATION_QUERIES = 1 << 21


@dataclasses.dataclass(frozen=True)
class _Series:
    """One series read from the data set."""

    position: int
    id: object
    times: np.ndarray  # (L,) float64
    y: np.ndarray  # (L, d)
    x: np.ndarray | None  # (L, e), raw


@dataclasses.dataclass(frozen=True, eq=False)
class _Source:
    """The data set with the columns forecast (`y_columns`) and the
    exogenous ones (`x_columns`, () if none)."""

    parquet: ParquetSeries
    y_columns: tuple
    x_columns: tuple

    def chunks(self, offsets: dict | None = None, order=None) -> Iterator[tuple[list[_Series], SeriesChunk]]:
        """(the series, the `SeriesChunk` read) chunk by chunk; positions
        from `offsets` (fragment → position of its first series; None:
        counted in file order); `order` as in `ParquetSeries.read`."""
        y_at = [self.parquet.features.index(c) for c in self.y_columns]
        x_at = [self.parquet.features.index(c) for c in self.x_columns]
        counted = 0
        for chunk in self.parquet.read(order=order):
            panel = chunk.panel
            first = counted if offsets is None else offsets[chunk.fragment] + chunk.first
            counted += panel.n_series
            yield [
                _Series(
                    first + i,
                    panel.ids[i],
                    np.asarray(panel.times[i], np.float64),
                    np.asarray(panel.values[i][:, y_at], np.float64),
                    np.asarray(panel.values[i][:, x_at], np.float64) if x_at else None,
                )
                for i in range(panel.n_series)
            ], chunk


def open_source(forecaster, y, X) -> _Source:
    """The Parquet data set `y` read with the forecaster's `id_col` and
    `time_col`; `X` the names of its exogenous columns (or None)."""
    if forecaster.id_col is None or forecaster.time_col is None:
        raise ValueError(
            "a Forecaster reads a Parquet data set with id_col and time_col: set both, e.g. "
            "Forecaster(id_col='id', time_col='time')"
        )
    if X is not None and not (isinstance(X, (list, tuple)) and all(isinstance(c, str) for c in X)):
        raise TypeError(
            "with a Parquet y, X names the exogenous columns of the same data set (a list of column "
            f"names), got {type(X).__name__}"
        )
    parquet = open_parquet(y, id_col=forecaster.id_col, time_col=forecaster.time_col)
    x_columns = tuple(X or ())
    for column in x_columns:
        if column not in parquet.features:
            raise ValueError(f"X column {column!r} is not a column of {parquet.where} (columns: {list(parquet.features)})")
    y_columns = tuple(c for c in parquet.features if c not in x_columns)
    if not y_columns:
        raise ValueError(f"{parquet.where} has no column to forecast besides the exogenous {list(x_columns)}")
    return _Source(parquet, y_columns, x_columns)


@dataclasses.dataclass
class _Statistics:
    """What the statistics pass gathers (see the module docstring)."""

    ids: list = dataclasses.field(default_factory=list)
    offsets: dict = dataclasses.field(default_factory=dict)
    stops: list = dataclasses.field(default_factory=list)
    spans: list = dataclasses.field(default_factory=list)
    scales: list = dataclasses.field(default_factory=list)
    x_counts: list = dataclasses.field(default_factory=list)
    x_means: list = dataclasses.field(default_factory=list)
    x_stds: list = dataclasses.field(default_factory=list)
    gaps: MedianGap = dataclasses.field(default_factory=MedianGap)
    first: float = np.inf
    last: float = -np.inf
    time_kind: tuple | None = None
    any_gap: bool = False
    # Each chunk's (fragment, first series in it, series): see `merged`.
    keys: list = dataclasses.field(default_factory=list)

    @property
    def parts(self) -> np.ndarray:
        """(n,) the file (fragment) of every series."""
        return np.repeat(np.array([k[0] for k in self.keys], np.int64), [k[2] for k in self.keys])

    @classmethod
    def merged(cls, parts: list["_Statistics"]) -> "_Statistics":
        """The statistics of every process's share of the files (`parts`), as
        one pass over all of them in file order gathers them."""
        out = cls()
        merge_in_file_order(parts, out, ("ids", "stops", "spans", "scales"), ("x_counts", "x_means", "x_stds"))
        owned = sorted((part for part in parts if part.keys), key=lambda part: part.keys[0])
        for part in owned:
            _same_kind(part.time_kind, owned[0].time_kind, part.ids[0])
            out.gaps.merge(part.gaps)
        out.time_kind = owned[0].time_kind if owned else None
        out.first = min(part.first for part in parts)
        out.last = max(part.last for part in parts)
        out.any_gap = any(part.any_gap for part in parts)
        return out


def _same_kind(kind: tuple, earlier: tuple, sid) -> None:
    if kind != earlier:
        raise TypeError(
            f"series {sid!r} has {kind[0]} times (tz {kind[1]}), but earlier series have "
            f"{earlier[0]} times (tz {earlier[1]})"
        )


def statistics_pass(source: _Source, validation_fraction: float, owners: np.ndarray | None = None) -> _Statistics:
    """The statistics of every series (file order); across processes
    (`owners`, `file_owners`) each process reads its own files and the
    shares are merged."""
    if owners is None:
        return _share_statistics(source, validation_fraction)
    stats = _Statistics.merged(gather_results(lambda: _share_statistics(source, validation_fraction, own_files(owners))))
    source.parquet.check_unique(stats.ids, stats.parts)
    return stats


def _share_statistics(source: _Source, validation_fraction: float, files=None) -> _Statistics:
    stats = _Statistics()
    for series, chunk in source.chunks(order=files):
        panel = chunk.panel
        if chunk.first == 0:
            stats.offsets[chunk.fragment] = len(stats.ids)
        stats.keys.append((chunk.fragment, chunk.first, panel.n_series))
        kind = (panel.time_kind, panel.tz)
        if stats.time_kind is None:
            stats.time_kind = kind
        _same_kind(kind, stats.time_kind, series[0].id)
        for one in series:
            check_observed(one.id, one.y, source.y_columns)
            stats.ids.append(one.id)
            stats.stops.append(held_out_start(one.times, validation_fraction))
            stats.spans.append(one.times[-1] - one.times[0])
            stats.scales.append(SeriesScale.of(one.y, SeriesScale.unknown(one.y.shape[1])))
            if len(one.times) > 1:
                stats.gaps.add(np.diff(one.times))
                stats.any_gap = True
            stats.first, stats.last = min(stats.first, one.times[0]), max(stats.last, one.times[-1])
        if source.x_columns:
            raw = [one.x for one in series]
            means, stds = series_moments(raw)
            stats.x_counts.append(np.stack([np.sum(~np.isnan(r), axis=0) for r in raw]))
            stats.x_means.append(means)
            stats.x_stds.append(stds)
    return stats


def parquet_fit(forecaster, y, X, horizon) -> dict:
    """The fitted attributes of `forecaster` from the Parquet data set `y`
    (see the module docstring)."""
    source = open_source(forecaster, y, X)
    owners = file_owners(source.parquet)
    stats = statistics_pass(source, forecaster.validation_fraction, owners)
    time_kind = stats.time_kind
    meta = {
        "time_kind": time_kind,
        "index_names": [forecaster.id_col, forecaster.time_col],
        "y_columns": pd.Index(source.y_columns),
        "x_columns": pd.Index(source.x_columns) if source.x_columns else None,
    }
    x_mean = x_std = None
    if source.x_columns:
        counts, means, stds = (np.concatenate(a) for a in (stats.x_counts, stats.x_means, stats.x_stds))
        x_mean, x_std = exog_scaling(*pooled_from_moments(counts, means, stds))
    time_scale = float(stats.gaps.median())  # 1.0 without a gap, as in memory
    extent = (stats.last - stats.first, time_scale if stats.any_gap else np.inf)
    cycles = choose_cycles(None, time_kind[0], forecaster.calendar, extent=extent)
    default_scale = pooled_scale(stats.scales)
    scales = [own.filled(default_scale) for own in stats.scales]
    value = forecaster.horizon if horizon is None else horizon
    lead = horizon_seconds(value, np.asarray(stats.spans), time_kind[0], time_scale)
    d, e = len(source.y_columns), len(source.x_columns)
    layout = StepLayout(d, cycles, e, time_scale, float(forecaster.first_gap), memory=lead)
    seed = agreed_seed(check_random_state(forecaster.random_state).randint(2**31 - 1))
    plan = window_plan(forecaster, lead, stats.stops, seed)
    offsets = stats.offsets

    def standardised(one: _Series):
        return None if one.x is None else np.nan_to_num((one.x - x_mean) / x_std, nan=0.0)

    def examples(order=None, training=True):
        """(series, its training windows, its held-out window or None) of
        every series, chunk by chunk (`training` False: no training windows)."""
        for series, _ in source.chunks(offsets, order):
            yield [
                (one, *plan.examples(layout, one.times, one.y, standardised(one), scales[one.position],
                                     stats.stops[one.position], one.position, training=training))
                for one in series
            ]

    # The plan: the windows' lengths (across processes, each of its own
    # series, gathered).
    def plan_share():
        counts, lengths, tails = {}, {}, {}
        for chunk in examples(own_files(owners)):
            for one, windows, tail in chunk:
                counts[one.position] = len(windows)
                lengths[one.position] = [len(w[1]) for w in windows]
                if tail is not None:
                    tails[one.position] = len(tail[1])
        return counts, lengths, tails

    shares = gather_results(plan_share) if owners is not None else [plan_share()]
    train_counts = np.zeros(len(stats.ids), np.int64)
    by_series, held_out = {}, {}
    for counts, lengths, tails in shares:
        for position, count in counts.items():
            train_counts[position] = count
        by_series.update(lengths)
        held_out.update(tails)
    train_lengths = [n for position in sorted(by_series) for n in by_series[position]]
    if not train_lengths:
        raise ValueError(TOO_SHORT)
    first_window = np.concatenate([[0], np.cumsum(train_counts)[:-1]])
    tails = np.full(len(stats.ids), -1, np.int64)
    tails[sorted(held_out)] = np.arange(len(held_out))

    def training_chunks(rng):
        order = own_files(owners, None if rng is None else rng.permutation(len(source.parquet.fragments)))
        for chunk in examples(order):
            for one, w, _ in chunk:
                if len(w) != train_counts[one.position]:  # the draws are seeded per series: never
                    raise RuntimeError(f"series {one.id!r}: {len(w)} windows, planned {train_counts[one.position]}")
            positions = [first_window[one.position] + np.arange(len(w)) for one, w, _ in chunk]
            windows = [window for _, w, _ in chunk for window in w]
            if windows:
                yield np.concatenate(positions), as_sequences(windows)

    def held_out_chunks(rng):
        for chunk in examples(own_files(owners), training=False):
            kept = [(tails[one.position], tail) for one, _, tail in chunk if tail is not None]
            if kept:
                yield np.array([p for p, _ in kept], np.int64), as_sequences([t for _, t in kept])

    # Across processes: each window read with its series' file.
    series_parts = stats.parts
    train_shares = valid_shares = None
    if owners is not None:
        train_shares = FileShares(np.repeat(series_parts, train_counts), owners)
        valid_shares = FileShares(series_parts[sorted(held_out)], owners)
    train_data = StreamedSequences(
        np.asarray(train_lengths, np.int64), training_chunks, per_step=True, cap_length=False, shares=train_shares
    )
    valid_data = None
    if held_out:
        lengths = np.array([held_out[p] for p in sorted(held_out)], np.int64)
        valid_data = StreamedSequences(lengths, held_out_chunks, per_step=True, cap_length=False, shares=valid_shares)
    model, history = train_network(forecaster, layout, train_data, valid_data, seed)

    keep = 1.0
    if valid_data is not None:
        queries = int(valid_data.lengths.sum()) * max(plan.n_queries, VALIDATION_QUERIES) * d
        keep = min(1.0, CALIBRATION_QUERIES / queries)
    calibration = held_out_calibration(model, valid_data, forecaster.batch_size, keep, np.random.default_rng(seed))

    network = model.network
    init = network.init_state()

    def states_share():
        states = []
        for series, _ in source.chunks(offsets, own_files(owners)):
            for one in series:
                x, scale = standardised(one), scales[one.position]
                u, gaps, _ = observation_steps(layout, one.times, one.y, x, scale)
                end = SeriesState.at_end(layout, one.times, one.y, x, scale, advance(network, init, u, gaps))
                states.append((one.position, one.id, end))
        return states

    ends = gather_results(states_share) if owners is not None else [states_share()]
    states = {sid: end for _, sid, end in sorted((e for part in ends for e in part), key=lambda e: e[0])}
    return fitted_attributes(model, history, layout, lead, calibration, states, meta, default_scale, x_mean, x_std)
