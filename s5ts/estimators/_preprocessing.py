"""What the estimators learn from their training inputs before the network,
and the one check and transform every later input goes through.

`Preprocessing` is learned once, in `fit`, from statistics of the training
panel (`learn_preprocessing` in memory; a streamed statistics pass over a
Parquet data set gathers the same numbers, `finish_preprocessing`). Every
input after that — `predict`, `score`, `validation_data`, a warm start,
every Parquet chunk — goes through `Preprocessing.check` (features, kind of
time, time zone, whether times were given) and `Preprocessing.transform`
(scaled features and gaps: model-ready `Sequences`), as scikit-learn's
`validate_data(reset=False)` checks every call against what `fit` saw.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..data import RaggedPanel, check_columns, gaps_from_times, time_scale_from
from ..training import Sequences
from ._scaling import choose_scaling, pooled_from_moments, reference_from_moments, scale_values, series_statistics
from ._time_handling import AbstractTimeHandling, time_handling_for


def _zone(tz) -> str:
    return "tz-naive datetimes" if tz is None else f"tz-aware datetimes ({tz})"


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

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        out["feature_mean"] = self.feature_mean.tolist()
        out["feature_std"] = self.feature_std.tolist()
        out["columns"] = list(self.columns)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Preprocessing":
        data = dict(data)
        data["columns"] = tuple(data["columns"])
        data["feature_mean"] = np.asarray(data["feature_mean"], np.float64)
        data["feature_std"] = np.asarray(data["feature_std"], np.float64)
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
            scaled = scale_values(values, self.scaling, self.feature_mean, self.feature_std)
            if self.missing_indicator:
                scaled = np.concatenate([scaled, observed.astype(np.float64)], axis=1)
            step_gaps, channels = handling.inputs(gaps_from_times(times, self.time_scale, self.first_gap))
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

    def n_inputs(self, like: RaggedPanel) -> int:
        """The network's input width for panels like `like` (a checked panel
        of at least one series)."""
        return int(self.transform(like.subset([0])).inputs[0].shape[1])


def learn_preprocessing(
    panel: RaggedPanel,
    standardize: bool | str,
    time_handling: str = "gaps",
    first_gap: float = 1.0,
    weights: np.ndarray | None = None,
    encoder: str = "identity",
) -> Preprocessing:
    """How the features are scaled (`standardize`: True is `"global"`,
    False `"none"`; `"auto"` is resolved here, see `_scaling`), from observed
    values with each series weighted by `weights`; whether any value is
    missing (then the network also sees an observed-channel mask); and the
    time scale: the median gap between observations (unweighted: it describes
    the sampling, not the series' importance)."""
    counts, means, stds = series_statistics(panel.values)
    return finish_preprocessing(
        panel,
        counts,
        means,
        stds,
        bool((counts < panel.lengths[:, None]).any()),
        time_scale_from(panel),
        standardize,
        time_handling,
        first_gap,
        weights,
        encoder,
    )


def finish_preprocessing(
    panel: RaggedPanel,
    counts: np.ndarray,
    means: np.ndarray,
    stds: np.ndarray,
    missing: bool,
    time_scale: float,
    standardize: bool | str,
    time_handling: str,
    first_gap: float,
    weights: np.ndarray | None,
    encoder: str = "identity",
) -> Preprocessing:
    """The `Preprocessing` from statistics of the training data, however
    they were gathered (`learn_preprocessing` in memory, or one streaming
    pass over a Parquet data set), computed one way: `panel` gives the
    columns, kind of time and ids (any chunk of the data); `counts`,
    `means`, `stds` (n, k) each series' observed values, mean and standard
    deviation per feature (`series_statistics`), from which the pooled
    statistics (`pooled_from_moments`, each series weighted by `weights`)
    and the per-series reference follow; `missing`, whether any value is
    NaN; `time_scale`, the median gap (`MedianGap`)."""
    never = np.flatnonzero(~(counts.sum(axis=0) > 0))
    if never.size:
        raise ValueError(
            f"column {panel.columns[int(never[0])]!r} is NaN in every training series (series "
            f"{panel.ids[0]!r} to {panel.ids[-1]!r}): a feature never observed cannot be learned; "
            "drop it before fitting"
        )
    scaling = {True: "global", False: "none"}.get(standardize, standardize)
    location, scale = np.zeros(panel.n_features), np.ones(panel.n_features)
    if scaling in ("global", "auto"):
        location, std = pooled_from_moments(counts, means, stds, weights)
        scale = np.where(std > 0, std, 1.0)
    if scaling in ("series", "auto"):
        series_location, series_scale = reference_from_moments(means, stds, weights)
        if scaling == "auto":
            scaling = choose_scaling(scale, series_scale)
        if scaling == "series":
            location, scale = series_location, series_scale
    return Preprocessing(
        columns=tuple(panel.columns),
        feature_mean=location,
        feature_std=scale,
        missing_indicator=missing,
        time_scale=float(time_scale),
        time_kind=panel.time_kind,
        scaling=scaling,
        time_handling=time_handling,
        first_gap=float(first_gap),
        tz=panel.tz,
        explicit_times=not panel.default_times,
        encoder=encoder,
    )
