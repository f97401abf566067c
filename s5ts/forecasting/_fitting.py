"""`Forecaster.fit`, one fit from any `Source` of complete series in chunks:
pandas frames in memory (`FramesSource`, one chunk of every series) or a
long-format Parquet data set streamed (`ParquetSource`; `open_parquet` for
the layout and order it needs). The source is read in passes:

1. **statistics**, in file order: every series' time span and held-out
   start (`held_out_start`) and own `SeriesScale`, the moments of the
   exogenous columns, the median gap (`MedianGap`: the time scale and the
   calendar's resolution) and the first and last time (`_Statistics`);
2. **training data**: each series' windows (`WindowPlan.examples`, drawn
   per series, so every source gives the same), made training data by the
   source: `Sequences` in memory; from files, `StreamedSequences` that
   keep the windows' lengths and read them again every epoch;
3. **after training**: the held-out windows' errors calibrate the
   intervals (`held_out_calibration`; from files a uniform sample of at
   most `CALIBRATION_QUERIES`), and each series' state after its last
   observation is kept, with its history in memory, with its `StepCarry`
   alone from files (`SeriesState.at_end`). Memory from files: one record
   batch and its chunk with their windows, the padded batches' buffers,
   and per series O(d + state) numbers. Across `jax.distributed`
   processes each reads its own files (`Source.per_process`).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Iterator
from numbers import Real
from typing import ClassVar

import jax
import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..data import ChunkLedger, MedianGap, ParquetSeries, SeriesChunk, open_parquet
from ..estimators import pooled_from_moments, series_moments
from ..training import (
    FileShares,
    NetworkSpec,
    SequenceData,
    StreamedSequences,
    TrainingConfig,
    agreed_seed,
    check_same_data,
    data_digest,
    file_owners,
    gather_results,
    is_distributed,
    own_files,
    train,
)
from ._calendar import choose_cycles
from ._calibration import held_out_calibration
from ._fallback import Trial, candidate_names, choose, combined, held_out_pairs, history_choice, history_errors, simple_part
from ._network import forecast, query_nll, states_after_each_step
from ._series import SeriesState, as_frame, frames_panel, split_series, x_rows
from ._simple import shows_cycle, simple_forecast, simple_names, smoother_time
from ._steps import SeriesScale, StepLayout, last_values, observation_steps, query_steps, standardised
from ._windows import VALIDATION_QUERIES, WINDOW_CAP, WindowPlan, as_sequences, copies_for, held_out_start, query_origins

#: The most held-out queries kept to calibrate the intervals of a streamed
#: fit (a uniform sample beyond it): 2²¹ errors, variances and leads, 48 MiB.
CALIBRATION_QUERIES = 1 << 21

#: The error of a fit without a single training example.
TOO_SHORT = "y is too short to train on: no series has an observation after another within the horizon"


@dataclasses.dataclass(frozen=True)
class _Series:
    """One series read from a source."""

    position: int
    id: object
    times: np.ndarray  # (L,) float64
    y: np.ndarray  # (L, d)
    x: np.ndarray | None  # (L, e), raw


@dataclasses.dataclass(frozen=True, eq=False)
class Source(abc.ABC):
    """The series a fit reads, chunk by chunk (`chunks`), with the columns
    forecast (`y_columns`), the exogenous ones (`x_columns`, None if none)
    and the names of the index of forecasts (`index_names`). `owners`:
    across `jax.distributed` processes, the process that reads each file
    (`file_owners`); None: this process reads every series.
    `calibration_queries`: the most held-out queries the calibration keeps;
    `keeps_history`: whether the forecaster keeps each series' history
    (and so can fall back to simple forecasts, `_fallback`)."""

    y_columns: pd.Index
    x_columns: pd.Index | None
    index_names: list
    owners: np.ndarray | None
    calibration_queries: ClassVar[float]
    keeps_history: ClassVar[bool]

    @abc.abstractmethod
    def chunks(self, ledger: ChunkLedger | None = None, order=None) -> Iterator[tuple[list[_Series], SeriesChunk]]:
        """(the series, the `SeriesChunk` read) chunk by chunk; positions
        from `ledger` (None: counted in reading order); `order`: the files
        to read, as in `ParquetSeries.read`."""

    @abc.abstractmethod
    def training_data(self, examples: Callable, ledger: ChunkLedger) -> tuple[SequenceData, SequenceData | None]:
        """(training windows, held-out windows or None) from `examples(order,
        training)`, which yields per chunk read in `order` (None: file
        order) each series' `(series, training windows, held-out window or
        None)` (no training windows when `training` is False)."""

    @abc.abstractmethod
    def kept(self, layout: StepLayout, one: _Series, x, scale: SeriesScale, state) -> SeriesState:
        """What the forecaster keeps of series `one` (`x` standardised)
        with the network `state` after its last observation."""

    def per_process(self, share: Callable) -> list:
        """`[share(files)]` of this process's files (None: every file), and
        across processes (`owners`) every process's, in process order."""
        if self.owners is None:
            return [share(None)]
        return gather_results(lambda: share(own_files(self.owners)))

    def check_unique(self, ledger: ChunkLedger) -> None:
        """Across processes, the ids each process checked in its own files
        alone, checked together."""


@dataclasses.dataclass(frozen=True, eq=False)
class FramesSource(Source):
    """`y` (and `X`) as pandas frames in memory: one chunk of every series."""

    series: list
    chunk: SeriesChunk
    calibration_queries: ClassVar[float] = math.inf  # every held-out query, as all is in memory
    keeps_history: ClassVar[bool] = True

    @classmethod
    def of(cls, y, X, x_columns: pd.Index | None = None) -> FramesSource:
        """`y` a Series or DataFrame indexed by time, or by (series…, time);
        `X` (or None) of the same layout at every time of `y`, its
        `x_columns` read (default: all)."""
        series = split_series(as_frame(y, "y"))
        panel = frames_panel(series, "y")
        if X is not None and x_columns is None:
            x_columns = as_frame(X, "X").columns
        x_by_id = {} if X is None else dict(split_series(as_frame(X, "X")))
        x = [None if X is None else x_rows(sid, x_by_id, frame.index, x_columns) for sid, frame in series]
        times, values = ([np.asarray(a, np.float64) for a in arrays] for arrays in (panel.times, panel.values))
        records = [_Series(i, sid, times[i], values[i], x[i]) for i, (sid, _) in enumerate(series)]
        return cls(as_frame(y, "y").columns, x_columns, list(y.index.names), None, records, SeriesChunk(panel, {}, 0, 0))

    def chunks(self, ledger=None, order=None):
        yield self.series, self.chunk

    def training_data(self, examples, ledger):
        """The one chunk's windows as `Sequences`."""
        (chunk,) = examples()
        train_windows = [window for _, windows, _ in chunk for window in windows]
        held_out = [tail for _, _, tail in chunk if tail is not None]
        if not train_windows:
            raise ValueError(TOO_SHORT)
        train_data, valid_data = as_sequences(train_windows), as_sequences(held_out) if held_out else None
        if is_distributed():  # every process holds the same windows (checked) and reads its rows of each batch
            check_same_data(data_digest(train_data, valid_data))
        return train_data, valid_data

    def kept(self, layout, one, x, scale, state):
        return SeriesState(one.times, one.y, x, scale, state)


@dataclasses.dataclass(frozen=True, eq=False)
class ParquetSource(Source):
    """A long-format Parquet data set, streamed chunk by chunk."""

    parquet: ParquetSeries
    calibration_queries: ClassVar[float] = CALIBRATION_QUERIES
    keeps_history: ClassVar[bool] = False

    @classmethod
    def open(cls, forecaster, y, X) -> ParquetSource:
        """The data set `y` read with the forecaster's `id_col` and
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
        names = [forecaster.id_col, forecaster.time_col]
        return cls(pd.Index(y_columns), pd.Index(x_columns) if x_columns else None, names, file_owners(parquet), parquet)

    def chunks(self, ledger=None, order=None):
        y_at = [self.parquet.features.index(c) for c in self.y_columns]
        x_at = [self.parquet.features.index(c) for c in self.x_columns] if self.x_columns is not None else []
        counted = 0
        for chunk in self.parquet.read(order=order):
            panel = chunk.panel
            positions = counted + np.arange(panel.n_series) if ledger is None else ledger.positions(chunk)
            counted += panel.n_series
            yield [
                _Series(int(positions[i]), panel.ids[i], np.asarray(panel.times[i], np.float64),
                        np.asarray(panel.values[i][:, y_at], np.float64),
                        np.asarray(panel.values[i][:, x_at], np.float64) if x_at else None)
                for i in range(panel.n_series)
            ], chunk

    def training_data(self, examples, ledger):
        """`StreamedSequences` of the windows' lengths (a plan pass, across
        processes each over its own files, gathered), which read the
        windows again chunk by chunk."""
        owners = self.owners

        def plan_share(files):
            """(position, its training windows' lengths, its held-out window's or None) per series."""
            return [
                (one.position, [len(w[1]) for w in windows], None if tail is None else len(tail[1]))
                for chunk in examples(files)
                for one, windows, tail in chunk
            ]

        plan = sorted((item for share in self.per_process(plan_share) for item in share), key=lambda item: item[0])
        train_counts = np.array([len(lengths) for _, lengths, _ in plan], np.int64)
        train_lengths = np.array([length for _, lengths, _ in plan for length in lengths], np.int64)
        if not len(train_lengths):
            raise ValueError(TOO_SHORT)
        held_out = [(position, tail) for position, _, tail in plan if tail is not None]
        first_window = np.concatenate([[0], np.cumsum(train_counts)[:-1]])
        tails = np.full(len(plan), -1, np.int64)
        tails[[position for position, _ in held_out]] = np.arange(len(held_out))

        def training_chunks(rng):
            order = own_files(owners, None if rng is None else rng.permutation(len(self.parquet.fragments)))
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
        parts = ledger.parts
        train_shares = None if owners is None else FileShares(np.repeat(parts, train_counts), owners)
        valid_shares = None if owners is None else FileShares(parts[[p for p, _ in held_out]], owners)
        settings = dict(per_step=True, cap_length=WINDOW_CAP)
        train_data = StreamedSequences(train_lengths, training_chunks, **settings, shares=train_shares)
        if not held_out:
            return train_data, None
        lengths = np.array([length for _, length in held_out], np.int64)
        return train_data, StreamedSequences(lengths, held_out_chunks, **settings, shares=valid_shares)

    def kept(self, layout, one, x, scale, state):
        return SeriesState.at_end(layout, one.times, one.y, x, scale, state)

    def check_unique(self, ledger):
        self.parquet.check_unique(ledger.ids, ledger.parts)


@dataclasses.dataclass
class _Statistics:
    """What the statistics pass gathers (see the module docstring): per
    series `stops`, `spans`, `trained_spans` (from the first observation
    to the last one trained on, before the held-out tail), `scales` and
    `minima` (each column's smallest value, inf if never observed); per chunk `x_moments`, the
    exogenous columns' (counts, means, standard deviations), each (1, e)."""

    ledger: ChunkLedger = dataclasses.field(default_factory=ChunkLedger)
    stops: list = dataclasses.field(default_factory=list)
    spans: list = dataclasses.field(default_factory=list)
    trained_spans: list = dataclasses.field(default_factory=list)
    scales: list = dataclasses.field(default_factory=list)
    minima: list = dataclasses.field(default_factory=list)
    x_moments: list = dataclasses.field(default_factory=list)
    gaps: MedianGap = dataclasses.field(default_factory=MedianGap)
    first: float = np.inf
    last: float = -np.inf
    time_kind: tuple | None = None
    any_gap: bool = False

    @classmethod
    def merged(cls, parts: list[_Statistics]) -> _Statistics:
        """The statistics of every process's share of the files (`parts`), as
        one pass over all of them in file order gathers them."""
        ledger = ChunkLedger.merged([part.ledger for part in parts])
        names = ("stops", "spans", "trained_spans", "scales", "minima")
        series = (ledger.per_series([getattr(part, name) for part in parts]) for name in names)
        out = cls(ledger, *series, ledger.per_chunk([part.x_moments for part in parts]))
        out.first, out.last = min(part.first for part in parts), max(part.last for part in parts)
        out.any_gap = any(part.any_gap for part in parts)
        owned = sorted((part for part in parts if part.ledger.keys), key=lambda part: part.ledger.keys[0])
        for part in owned:
            _same_kind(part.time_kind, owned[0].time_kind, part.ledger.ids[0])
            out.gaps.merge(part.gaps)
        out.time_kind = owned[0].time_kind if owned else None
        return out


def _same_kind(kind: tuple, earlier: tuple, sid) -> None:
    if kind != earlier:
        raise TypeError(
            f"series {sid!r} has {kind[0]} times (tz {kind[1]}), but earlier series have "
            f"{earlier[0]} times (tz {earlier[1]})"
        )


def statistics_pass(source: Source, validation_fraction: float) -> _Statistics:
    """The statistics of every series (file order); across processes each
    process reads its own files and the shares are merged."""
    parts = source.per_process(lambda files: share_statistics(source, validation_fraction, files))
    if len(parts) == 1:
        stats = parts[0]
    else:
        stats = _Statistics.merged(parts)
        source.check_unique(stats.ledger)
    observed = np.isfinite(np.stack(stats.minima)).any(axis=0) if stats.minima else None
    if observed is not None and not observed.all():
        # A column a series has not observed yet is forecast NaN for it; one no series observes has nothing to learn.
        column = source.y_columns[np.flatnonzero(~observed)[0]]
        raise ValueError(f"column {column!r} of y has no observed value in any series")
    return stats


def share_statistics(source: Source, validation_fraction: float, files=None) -> _Statistics:
    """The statistics of the `files` of `source` (default: all, in file order)."""
    stats = _Statistics()
    for series, chunk in source.chunks(order=files):
        panel = chunk.panel
        stats.ledger.add(chunk)
        stats.time_kind = stats.time_kind or (panel.time_kind, panel.tz)
        _same_kind((panel.time_kind, panel.tz), stats.time_kind, series[0].id)
        for one in series:
            stop = held_out_start(one.times, validation_fraction)
            stats.stops.append(stop)
            stats.spans.append(one.times[-1] - one.times[0])
            stats.trained_spans.append(one.times[max(stop - 1, 0)] - one.times[0])
            stats.scales.append(SeriesScale.of(one.y, SeriesScale.unknown(one.y.shape[1])))
            stats.minima.append(np.min(np.where(np.isnan(one.y), np.inf, one.y), axis=0))
            if len(one.times) > 1:
                stats.gaps.add(np.diff(one.times))
                stats.any_gap = True
            stats.first, stats.last = min(stats.first, one.times[0]), max(stats.last, one.times[-1])
        if source.x_columns is not None:
            stacked = np.concatenate([one.x for one in series])
            stats.x_moments.append((np.sum(~np.isnan(stacked), axis=0)[None], *series_moments([stacked])))
    return stats


def pooled_scale(owns: list[SeriesScale]) -> SeriesScale:
    """The scale of series without their own (`SeriesScale.unknown` where a
    column has fewer than two observations, or is constant): each field's
    median over the series that have it, else (1, 0, 1)."""
    with np.errstate(all="ignore"):
        pooled = [np.nanmedian(np.stack([getattr(c, f) for c in owns]), axis=0) for f in ("spread", "center", "width")]
    return SeriesScale(*pooled).filled(SeriesScale.neutral(len(owns[0].spread)))


def horizon_seconds(value, spans, time_kind: str, time_scale: float) -> float:
    """The longest lead trained for, in seconds (model time for numeric
    times): `value` (a positive Timedelta, or a string pandas reads as one
    such as `"30D"` or `"12h"`, for datetime or timedelta times; a positive
    number for numeric ones), or, when None, a quarter of the median span
    of the series (ten median gaps when none spans any time). A
    `ValueError` names the horizon of the wrong kind."""
    if value is None:
        spans = spans[spans > 0]
        span = float(np.median(spans)) if len(spans) else 0.0
        return span / 4 if span > 0 else 10.0 * time_scale
    if isinstance(value, str):
        try:
            value = pd.Timedelta(value)
        except ValueError:
            raise ValueError(f"horizon {value!r} is not a duration pandas reads (e.g. '30D', '12h')") from None
    if isinstance(value, pd.Timedelta) or isinstance(value, np.timedelta64):
        if time_kind == "numeric":
            raise ValueError(f"horizon {value!r} is a Timedelta, but y is indexed by numbers: give a number")
        seconds = pd.Timedelta(value).total_seconds()
        if not seconds > 0:
            raise ValueError(f"horizon must be positive, got {value!r}")
        return seconds
    if time_kind != "numeric":
        raise ValueError(f"horizon {value!r}: y is indexed by {time_kind}s, so give the horizon as a Timedelta")
    if not (isinstance(value, Real) and math.isfinite(value) and value > 0):
        raise ValueError(f"horizon must be positive, got {value!r}")
    return float(value)


def longest_trained_lead(lead: float, trained_spans) -> float:
    """The longest lead training draws: the horizon `lead`, or less when no
    series' trained part (`trained_spans`) spans it. Beyond it the forecast's
    mean holds what it reached there (`LeadHead`): a drift learnt on short
    leads is not carried on a straight line to leads no series showed."""
    longest = max(trained_spans, default=0.0)
    return float(min(lead, longest)) if longest > 0 else float(lead)


def horizon_value(seconds: float, time_kind: str):
    """A lead in seconds (`horizon_seconds`) in the units of the
    series' index: a `pd.Timedelta` for datetime and timedelta times, a
    number for numeric ones."""
    return float(seconds) if time_kind == "numeric" else pd.Timedelta(seconds, unit="s")


def fit_forecaster(forecaster, source: Source, horizon) -> dict:
    """The fitted attributes of `forecaster` from `source` (see the module
    docstring), assigned together at the end of `fit`; `horizon` overrides
    the forecaster's."""
    stats = statistics_pass(source, forecaster.validation_fraction)
    time_kind = stats.time_kind
    x_mean = x_std = None
    if source.x_columns is not None:  # the pooled moments (of one chunk as they are: pooling would round them)
        counts, means, stds = (np.concatenate(a) for a in zip(*stats.x_moments))
        x_mean, x_std = (means[0], stds[0]) if len(counts) == 1 else pooled_from_moments(counts, means, stds)
        x_std = np.where(x_std > 0, x_std, 1.0)  # a constant or never observed feature keeps unit 1
    time_scale = float(stats.gaps.median())  # 1.0 without a gap
    extent = (stats.last - stats.first, time_scale if stats.any_gap else np.inf)
    cycles = choose_cycles(None, time_kind[0], forecaster.calendar, extent=extent)
    default_scale = pooled_scale(stats.scales)
    scales = [own.filled(default_scale) for own in stats.scales]
    value = forecaster.horizon if horizon is None else horizon
    lead = horizon_seconds(value, np.asarray(stats.spans), time_kind[0], time_scale)
    d, e = len(source.y_columns), 0 if x_mean is None else len(x_mean)
    layout = StepLayout(d, cycles, e, time_scale, float(forecaster.first_gap), memory=lead)
    seed = agreed_seed(check_random_state(forecaster.random_state).randint(2**31 - 1))
    length = int(forecaster.window_length)
    copies = copies_for(stats.stops, length, forecaster.batch_size)
    # Training draws no lead beyond the trained lead whatever the bound; the
    # held-out window's draws stop there too, so early stopping and the
    # calibration judge forecasts the way `predict` makes them.
    trained_lead = longest_trained_lead(lead, stats.trained_spans)
    plan = WindowPlan(length, int(forecaster.n_queries), trained_lead, copies, seed)

    def examples(order=None, training=True):
        for series, _ in source.chunks(stats.ledger, order):
            yield [
                (one, *plan.examples(layout, one.times, one.y, standardised(one.x, x_mean, x_std), scales[one.position],
                                     stats.stops[one.position], one.position, training=training))
                for one in series
            ]

    train_data, valid_data = source.training_data(examples, stats.ledger)
    rng, config = np.random.default_rng(seed), TrainingConfig.from_estimator(forecaster)
    spec = NetworkSpec.of(forecaster, layout.n_inputs, layout.d, query_origins(valid_data, layout.n_inputs))
    initial = config.initial_state(spec, jax.random.key(seed))
    key = jax.random.key(int(rng.integers(2**31 - 1)))
    # early stopping on the held-out likelihood: means and intervals
    result = train(initial, train_data, valid_data, query_nll, query_nll, config, rng=rng, key=key, metric_name="nll")
    model, history = result.model, list(result.state.history)
    keep = 1.0
    if valid_data is not None:
        queries = int(valid_data.lengths.sum()) * max(plan.n_queries, VALIDATION_QUERIES) * d
        keep = min(1.0, source.calibration_queries / queries)
    calibration = held_out_calibration(model, valid_data, forecaster.batch_size, keep, np.random.default_rng(seed))

    network = model.network
    init = network.init_state()
    max_lead = trained_lead / layout.time_scale
    simple = simple_names(layout.cycles) if forecaster.fallback == "auto" and source.keeps_history else ()
    names = candidate_names(simple)

    def states_share(files):
        ends = []
        for series, _ in source.chunks(stats.ledger, files):
            for one in series:
                x, scale = standardised(one.x, x_mean, x_std), scales[one.position]
                u, gaps, spreads = observation_steps(layout, one.times, one.y, x, scale)
                after = states_after_each_step(network, init, u, gaps)
                stop = stats.stops[one.position]
                tau = smoother_time(one.times, one.y, stop) if simple else None
                trial = None  # S5 alone is tried too (fallback=None): its errors scale the series' intervals
                if source.keeps_history:
                    trial = held_out_trial(model, layout, one, x, spreads, after, stop, lead, max_lead, simple, tau)
                kept = source.kept(layout, one, x, scale, tuple(s[-1] for s in after))
                ends.append((one.position, one.id, kept, trial, tau))
        return ends

    ends = sorted((end for part in source.per_process(states_share) for end in part), key=lambda end: end[0])
    fallback = choose([end[1] for end in ends], [end[3] for end in ends], [end[4] for end in ends], names, calibration)
    nonnegative = pd.Series(np.all(np.stack(stats.minima) >= 0, axis=0), index=source.y_columns, name="nonnegative")
    meta = dict(time_kind=time_kind, index_names=source.index_names, y_columns=source.y_columns, x_columns=source.x_columns)
    return dict(
        network_=model, history_=history, time_scale_=layout.time_scale, horizon_=horizon_value(lead, time_kind[0]),
        trained_lead_=horizon_value(trained_lead, time_kind[0]), _max_lead=max_lead, cycles_=layout.cycles,
        calibration_=calibration,
        series_={sid: end for _, sid, end, _, _ in ends}, fallback_=fallback.table, nonnegative_=nonnegative,
        _fallback=fallback, _layout=layout, _meta=meta, _default_scale=default_scale, _x_mean=x_mean, _x_std=x_std,
    )


def held_out_trial(model, layout: StepLayout, one: _Series, x, spreads, after, stop: int, lead: float,
                   max_lead: float, simple: tuple[str, ...], tau: float | None) -> Trial | None:
    """Series `one`'s held-out forecasts (`held_out_pairs`) by S5 and its
    averages with the `simple` forecasts (`candidate_names`), in model
    units: from the network states `after` each step and the local
    `spreads`; the series is offered S5 and its average with the simple
    forecast its trained part picks (`history_choice`) among those whose
    cycle it shows (`shows_cycle`). None without a tail."""
    origins, targets = held_out_pairs(one.times, stop, lead)
    if not len(origins):
        return None
    at = one.times[targets]
    u, leads = query_steps(layout, at, None if x is None else x[targets], one.times[origins])
    mean, var = forecast(model, tuple(s[origins] for s in after), u, leads, max_lead)
    level, spread = last_values(one.y)[origins], spreads[origins]
    plain = {
        name: (simple_forecast(name, one.times, one.y, origins, at, tau=tau, cycles=layout.cycles) - level) / spread
        for name in simple
    }
    names = candidate_names(simple)
    means = {name: combined(name, mean, plain.get(simple_part(name))) for name in names}
    # The simple forecasts offered: those whose cycle the history shows, and of them the one the trained part picks.
    shown = tuple(name for name in simple if shows_cycle(name, one.times, one.y, stop, layout.cycles))
    best = history_choice(shown, *history_errors(shown, one.times, one.y, stop, lead, tau=tau, cycles=layout.cycles))
    offered = shown if best is None else [best]
    allowed = [simple_part(name) in (None, *offered) for name in names]
    return Trial.of(names, (one.y[targets] - level) / spread, means, var, leads, allowed)
