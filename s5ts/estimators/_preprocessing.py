"""What the estimators learn from their training inputs before the network
(`Preprocessing`, learned once in `fit` from the one pass of `Statistics`
over the training series' chunks), and the one check and transform every
later input goes through — `predict`, `score`, `validation_data`, a warm
start, every Parquet chunk — as scikit-learn's `validate_data(reset=False)`
checks every call against what `fit` saw.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..data import ChunkLedger, MedianGap, RaggedPanel, SeriesChunk, check_columns, gaps_from_times
from ..training import Sequences
from ._scaling import (
    choose_scaling,
    pooled_from_moments,
    reference_from_moments,
    scale_values,
    series_moments,
    series_statistics,
    variance_prior,
)
from ._time_handling import AbstractTimeHandling, time_handling_for

#: `hold_ends="auto"`: hold the ends of panels whose series have at most
#: this many observations (the median), one target each, on numeric or
#: timedelta times (docs/estimators.md, "Held ends").
AUTO_HOLD_MAX_OBSERVATIONS = 5


def _zone(tz) -> str:
    return "tz-naive datetimes" if tz is None else f"tz-aware datetimes ({tz})"


def held(inputs: np.ndarray, times: np.ndarray, gaps: np.ndarray, window: tuple[float, float], scale: float,
         first_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """A series' model inputs (L, D) and gaps (L,) with its first
    observation held from the `window`'s start and its last to the
    window's end: where the series starts after the window's start, one
    more step before its first, a copy of its inputs at the window's start
    (gap `first_gap`), the first observation's gap then the time since the
    window's start; where it ends before the window's end, one more step
    after its last, a copy of its inputs at the window's end. Under the
    zero-order hold each step's input holds over the gap before it, so the
    series reads as the interpolating methods' grid reads it, constant
    before its first and after its last observation (`hold_ends=True`)."""
    start, end = window
    if times[0] > start:
        inputs = np.concatenate([inputs[:1], inputs])
        gaps = np.concatenate([[first_gap, (times[0] - start) / scale], gaps[1:]])
    if times[-1] < end:
        inputs = np.concatenate([inputs, inputs[-1:]])
        gaps = np.concatenate([gaps, [(end - times[-1]) / scale]])
    return inputs, gaps


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    """Everything learned from the training inputs before the network."""

    columns: tuple
    feature_mean: np.ndarray
    feature_std: np.ndarray
    missing_indicator: bool
    time_scale: float
    time_kind: str
    # How the features were scaled ("none", "global" or "series"; see
    # `_scaling`): `feature_mean` and `feature_std` are its location and scale.
    scaling: str = "global"
    # How times become the network's gaps; fixed at fit so that set_params
    # after fit cannot feed the network inputs it was not trained on.
    time_handling: str = "gaps"
    first_gap: float = 1.0
    # The training times' zone (None: naive or not datetimes), and whether
    # they were given (False: the steps were numbered 0, 1, ...).
    tz: str | None = None
    explicit_times: bool = False
    # The network's encoder (whether it can take missing values), fixed at
    # fit as `time_handling` is.
    encoder: str = "identity"
    # `hold_ends=True`: the training series' time window (the earliest first
    # and the latest last time stamp); each series' first observation is
    # held from its start and its last to its end (`held`). None: off.
    window: tuple[float, float] | None = None
    # `"series"` scaling: the prior (d₀, s₀²) of the series' variances
    # (`_scaling.variance_prior`), two arrays (k,). None: each series' own
    # standard deviation (models saved before it).
    variance_prior: tuple[np.ndarray, np.ndarray] | None = None

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["feature_mean"] = self.feature_mean.tolist()
        out["feature_std"] = self.feature_std.tolist()
        out["columns"] = list(self.columns)
        out["window"] = None if self.window is None else list(self.window)
        out["variance_prior"] = None if self.variance_prior is None else [a.tolist() for a in self.variance_prior]
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Preprocessing":
        data = dict(data)
        data["columns"] = tuple(data["columns"])
        data["feature_mean"] = np.asarray(data["feature_mean"], np.float64)
        data["feature_std"] = np.asarray(data["feature_std"], np.float64)
        window = data.get("window")  # absent from files saved before hold_ends
        data["window"] = None if window is None else (float(window[0]), float(window[1]))
        prior = data.get("variance_prior")  # absent from files saved before it
        data["variance_prior"] = None if prior is None else tuple(np.asarray(a, np.float64) for a in prior)
        return cls(**data)

    @property
    def handling(self) -> AbstractTimeHandling:
        """`time_handling` as its object (`_time_handling`)."""
        return time_handling_for(self.time_handling)

    def check(self, panel: RaggedPanel, what: str = "X") -> RaggedPanel:
        """`panel` checked against the training inputs — the same features
        (returned in fit order), kind of time and time zone, and times
        whenever fit had them — or a `ValueError` / `TypeError` naming
        `what` (the argument) and what differs."""
        panel = check_columns(panel, self.columns, what)
        if panel.time_kind != self.time_kind:
            raise TypeError(f"the model was fitted on {self.time_kind} times, but {what} has {panel.time_kind} times")
        if (panel.tz is None) != (self.tz is None):
            raise ValueError(
                f"the model was fitted on {_zone(self.tz)}, but {what} has {_zone(panel.tz)} (series "
                f"{panel.ids[0]!r}, ...); do not mix them: localize or convert first (tz_localize / tz_convert)"
            )
        if self.explicit_times and panel.default_times:
            raise ValueError(
                f"the model was fitted on series with time stamps, but {what} has none, so its steps "
                "would be read as times 0, 1, 2, ...; pass times= (in cross-validation or a grid "
                "search, route it to score too: set_score_request(times=True), see "
                "docs/estimators.md)"
            )
        return panel

    def transform(self, panel: RaggedPanel, targets=None, per_step: bool = False, weights=None) -> Sequences:
        """Model-ready inputs of a checked `panel`: scaled features
        (`_scaling`; NaN → 0, plus the observed-channel mask when the
        training data had missing values) and gaps in model time units,
        per `time_handling`; with the `targets`, `per_step` and series
        `weights` given."""
        handling = self.handling
        inputs, gaps, extra = [], [], []
        for i, (values, times) in enumerate(zip(panel.values, panel.times)):
            observed = ~np.isnan(values)
            if not observed.all() and (self.encoder != "identity" or not self.missing_indicator):
                column = panel.columns[int(np.flatnonzero(~observed.all(axis=0))[0])]
                reason = (
                    f"the {self.encoder!r} encoder cannot take missing values"
                    if self.encoder != "identity"
                    else "the model was fitted on data without missing values, so it has no "
                    "observed-channel mask; refit on data that has them, or impute first"
                )
                raise ValueError(f"series {panel.ids[i]!r}, column {column!r}: NaN in X, but {reason}")
            scaled = scale_values(values, self.scaling, self.feature_mean, self.feature_std, self.variance_prior)
            if self.missing_indicator:
                scaled = np.concatenate([scaled, observed.astype(np.float64)], axis=1)
            step_gaps = gaps_from_times(times, self.time_scale, self.first_gap)
            if self.window is not None:
                scaled, step_gaps = held(scaled, times, step_gaps, self.window, self.time_scale, self.first_gap)
            step_gaps, channels = handling.inputs(step_gaps)
            inputs.append(scaled.astype(np.float32))
            gaps.append(step_gaps.astype(np.float32))
            extra.append(None if channels is None else channels.astype(np.float32))
        return Sequences(
            inputs=tuple(inputs),
            gaps=tuple(gaps),
            extra=tuple(extra) if handling.n_extra else None,
            targets=targets,
            per_step=per_step,
            weights=weights,
            elapsed=handling.elapsed,
        )

    def n_steps(self, lengths: np.ndarray, starts: np.ndarray | None = None, ends: np.ndarray | None = None) -> np.ndarray:
        """The model steps `transform` gives series of `lengths`
        observations: as many, and with a window (`hold_ends`) one more
        for a series that starts after its start and one more for one that
        ends before its end; given each series' first and last time stamps
        (`starts`, `ends`), exactly, else at most (two more)."""
        lengths = np.asarray(lengths, np.int64)
        if self.window is None:
            return lengths
        if starts is None or ends is None:
            return lengths + 2
        return lengths + (np.asarray(starts) > self.window[0]) + (np.asarray(ends) < self.window[1])

    def n_inputs(self, like: RaggedPanel) -> int:
        """The network's input width for panels like `like` (a checked panel
        of at least one series)."""
        return int(self.transform(like.subset([0])).inputs[0].shape[1])


@dataclasses.dataclass
class Statistics:
    """What one pass over a fit's chunks of series gathers (`add`), per
    series and in order: enough for `preprocessing` (`series_statistics`:
    the pooled statistics and `"series"` scaling's reference follow up to
    rounding) and the target state; then what the source decides from them."""

    ledger: ChunkLedger = dataclasses.field(default_factory=ChunkLedger)
    lengths: list = dataclasses.field(default_factory=list)
    counts: list = dataclasses.field(default_factory=list)
    means: list = dataclasses.field(default_factory=list)
    stds: list = dataclasses.field(default_factory=list)
    targets: list = dataclasses.field(default_factory=list)
    target_means: list = dataclasses.field(default_factory=list)
    target_stds: list = dataclasses.field(default_factory=list)
    weights: list = dataclasses.field(default_factory=list)
    starts: list = dataclasses.field(default_factory=list)  # each series' first and last time stamp
    ends: list = dataclasses.field(default_factory=list)
    varying: ValueError | None = None  # of the first series whose target column varies
    first: RaggedPanel | None = None
    missing: bool = False
    gaps: MedianGap = dataclasses.field(default_factory=MedianGap)
    #: False: the pass of a fitted model, which keeps its preprocessing and
    #: target state: no feature moments, gaps or target moments are gathered.
    learn: bool = True
    varying_key: tuple | None = None
    per_step: bool = False
    is_1d: bool = True
    columns: tuple | None = None
    series_y: object = None
    sample_weight: np.ndarray | None = None

    #: The lists with one entry per chunk (those that have any).
    PER_CHUNK = (
        "lengths", "counts", "means", "stds", "targets", "target_means", "target_stds", "weights", "starts", "ends",
    )

    @property
    def ids(self) -> list:
        return self.ledger.ids

    @property
    def first_time(self) -> float:
        """The earliest first time stamp (`hold_ends`' window starts there)."""
        return float(np.concatenate(self.starts).min())

    @property
    def last_time(self) -> float:
        """The latest last time stamp (`hold_ends`' window ends there)."""
        return float(np.concatenate(self.ends).max())

    @classmethod
    def merged(cls, parts: list["Statistics"]) -> "Statistics":
        """The statistics of every process's share (`parts`) as one pass over
        the whole data set in file order would have gathered them: the
        chunks of all shares sorted by file and place (each is read as one
        process reads it), the gaps merged."""
        ledger = ChunkLedger.merged([part.ledger for part in parts])
        out = cls(ledger, **{name: ledger.per_chunk([getattr(part, name) for part in parts]) for name in cls.PER_CHUNK})
        owned = [part for part in parts if part.ledger.keys]
        if owned:
            out.first = min(owned, key=lambda part: part.ledger.keys[0]).first
        varied = [part for part in parts if part.varying is not None]
        if varied:
            first = min(varied, key=lambda part: part.varying_key)
            out.varying, out.varying_key = first.varying, first.varying_key
        out.missing = any(part.missing for part in parts)
        for part in parts:
            out.gaps.merge(part.gaps)
        return out

    def add(self, chunk: SeriesChunk, *, series=None, steps=None, weights=None, varying=None) -> None:
        """Gather the `chunk`, its `series` targets or the moments of its
        `steps` (checked per-step targets), `weights`, and `varying`'s error."""
        panel = chunk.panel
        if self.first is None:
            self.first = panel.subset([0])
        self.ledger.add(chunk)
        if varying is not None and self.varying is None:
            self.varying, self.varying_key = varying, self.ledger.keys[-1]
        self.lengths.append(panel.lengths)
        self.starts.append(np.array([t[0] for t in panel.times], np.float64))
        self.ends.append(np.array([t[-1] for t in panel.times], np.float64))
        if series is not None:
            self.targets.append(series)
        if weights is not None:
            self.weights.append(weights)
        if not self.learn:
            return
        count, mean, std = series_statistics(panel.values)
        self.missing = self.missing or bool((count < panel.lengths[:, None]).any())
        self.counts.append(count)
        self.means.append(mean)
        self.stds.append(std)
        for t in panel.times:
            self.gaps.add(np.diff(t))
        if steps is not None:
            target_mean, target_std = series_moments(steps)
            self.target_means.append(target_mean)
            self.target_stds.append(target_std)

    def holds_ends(self, hold_ends, time_handling: str) -> bool:
        """Whether `hold_ends` (True, False or "auto") holds this panel's
        ends: "auto" for one target per series, numeric or timedelta times
        (a shared origin is likely; calendar times are not held), a time
        handling that sees the gaps, and series of at most
        `AUTO_HOLD_MAX_OBSERVATIONS` observations (the median): few
        observations place a series in time poorly, and long ones carry
        their answer in their shape."""
        if hold_ends != "auto":
            return bool(hold_ends)
        lengths = np.concatenate(self.lengths)
        return (
            not self.per_step
            and self.first.time_kind != "datetime"
            and time_handling != "drop"
            and float(np.median(lengths)) <= AUTO_HOLD_MAX_OBSERVATIONS
        )

    def preprocessing(
        self, standardize, time_handling: str, first_gap: float, weights, encoder: str, hold_ends=False
    ) -> Preprocessing:
        """The `Preprocessing`: the features' scaling (`standardize`: True
        is `"global"`, False `"none"`, `"auto"` resolved here: `_scaling`)
        with each series weighted by `weights`; an observed-channel mask if
        any value is missing; the time scale, the median gap (unweighted:
        it describes the sampling, not the series' importance); with
        `hold_ends` (`holds_ends`), the training series' time window."""
        if hold_ends is True and self.per_step:
            raise ValueError(
                "hold_ends=True adds held steps before and after a series, which per-step targets "
                "do not have: y has a target per step here; set hold_ends=False"
            )
        counts, means, stds = (np.concatenate(a) for a in (self.counts, self.means, self.stds))
        like = self.first  # the columns, kind of time, time zone
        never = np.flatnonzero(~(counts.sum(axis=0) > 0))
        if never.size:
            raise ValueError(
                f"column {like.columns[int(never[0])]!r} is NaN in every training series (series "
                f"{self.ids[0]!r} to {self.ids[-1]!r}): a feature never observed cannot be learned; "
                "drop it before fitting"
            )
        hold_ends = self.holds_ends(hold_ends, time_handling)
        scaling = {True: "global", False: "none"}.get(standardize, standardize)
        location, scale = np.zeros(like.n_features), np.ones(like.n_features)
        if scaling in ("global", "auto"):
            location, std = pooled_from_moments(counts, means, stds, weights)
            scale = np.where(std > 0, std, 1.0)
        if scaling in ("series", "auto"):
            series_location, series_scale = reference_from_moments(means, stds, weights)
            if scaling == "auto":
                scaling = choose_scaling(scale, series_scale)
            if scaling == "series":
                location, scale = series_location, series_scale
        prior = variance_prior(counts, stds, scale) if scaling == "series" else None
        return Preprocessing(
            columns=tuple(like.columns),
            feature_mean=location,
            feature_std=scale,
            missing_indicator=self.missing,
            time_scale=float(self.gaps.median()),
            time_kind=like.time_kind,
            scaling=scaling,
            time_handling=time_handling,
            first_gap=float(first_gap),
            tz=like.tz,
            explicit_times=not like.default_times,
            encoder=encoder,
            window=(self.first_time, self.last_time) if hold_ends else None,
            variance_prior=prior,
        )


def learn_preprocessing(
    panel: RaggedPanel, standardize, time_handling="gaps", first_gap=1.0, weights=None, encoder="identity",
    hold_ends=False,
):
    """The `Preprocessing` of the training `panel`, each series weighted by
    `weights`: `Statistics.preprocessing` of one chunk."""
    stats = Statistics()
    stats.add(SeriesChunk(panel, {}, 0, 0))
    return stats.preprocessing(standardize, time_handling, first_gap, weights, encoder, hold_ends)
