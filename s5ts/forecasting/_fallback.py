r"""Which forecast each series gets: S5's alone, or S5's averaged with a
simple one (`_simple`), chosen on the series' held-out end the way AutoETS
chooses a model by information criterion.

After training, every series that has a held-out tail (the last
`validation_fraction` of its time span, kept out of the training targets)
is forecast from rolling origins: from its last observation before the
tail and from observations inside it (`held_out_pairs`), at the tail's
later observations within the horizon. Each candidate's absolute errors,
in units of the series' local spread (so they read as MASE), are summed
per series (`Trial`). A seasonal candidate is tried only on a series
whose history shows its cycle (`_simple.shows_cycle`; `Trial.allowed`).
Which simple forecast S5 may be averaged with is chosen on the series'
trained part, which is longer than its tail (`history_choice`): the tail
then only says whether S5 alone or that average does better, one
comparison instead of one per simple forecast (a series with too short a
history keeps every candidate).
A series' score for a candidate is its mean error
shrunk toward the candidate's mean over the series it is tried on,
$(\sum_s e + n_0 \bar e)/(n_s + n_0)$ with $n_0$ = `SHRINKAGE`: a series
with a short tail leans on the panel's verdict. The lowest score wins; S5
wins ties. A candidate's intervals are S5's predicted variances scaled by
factors by lead read from the candidate's own held-out errors
(`lead_calibration`, over the series it is offered to), never below S5's own factors (`LeadCalibration.widest`).
Those factors are the panel's; each series' intervals are then scaled by
its own held-out errors against them (`interval_scales`): its mean
absolute standardised error over the panel's, shrunk toward 1 with
$n_0$ = `INTERVAL_SHRINKAGE`, so a series whose errors run larger than
its panel's gets wider intervals, and a calmer one narrower.

Why averages and not the simple forecasts alone, why $n_0 = 20$, why
intervals at least S5's and the interval shrinkage: docs/forecasting.md,
"Falling back" and "Intervals per series", from the forecasting
benchmark's development half (`benchmarks/forecast_fallback.py`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from jaxtyping import Float

from ._calendar import Cycle
from ._calibration import LeadCalibration, lead_calibration
from ._simple import simple_forecast
from ._steps import spread

S5 = "s5"

#: Held-out forecasts that count as much as the panel's mean error in a
#: series' score (`choose`).
SHRINKAGE = 20.0

#: Held-out values that count as much as the panel's mean standardised
#: error in a series' interval scale (`interval_scales`).
INTERVAL_SHRINKAGE = 20.0

#: At most this many rolling origins per series' tail, and this many
#: targets per origin (evenly spaced), bound the held-out forecasts.
MAX_ORIGINS = 32
MAX_TARGETS = 64


def candidate_names(simple: tuple[str, ...]) -> tuple[str, ...]:
    """S5 alone, and S5 averaged with each simple forecast (`"s5+drift"`)."""
    return (S5, *(f"{S5}+{name}" for name in simple))


def simple_part(name: str) -> str | None:
    """The simple forecast candidate `name` averages S5's with (None: S5 alone)."""
    if name == S5:
        return None
    if not name.startswith(f"{S5}+"):
        raise ValueError(f"unknown candidate {name!r}: S5 alone ('s5') or S5 averaged with a simple forecast ('s5+…')")
    return name[len(S5) + 1:]


def combined(name: str, s5_mean, simple_mean):
    """Candidate `name`'s mean from S5's and its simple forecast's."""
    return s5_mean if simple_part(name) is None else 0.5 * (s5_mean + simple_mean)


def _evenly(indices: np.ndarray, most: int) -> np.ndarray:
    if len(indices) <= most:
        return indices
    return indices[np.unique(np.round(np.linspace(0, len(indices) - 1, most)).astype(np.int64))]


def rolling_pairs(times: np.ndarray, origins: np.ndarray, first_target: int, end: int,
                  lead: float) -> tuple[np.ndarray, np.ndarray]:
    """(origins, targets), observation indices of forecasts from rolling
    `origins` (at most `MAX_ORIGINS`, evenly spaced), each at the
    observations from `first_target` (and after the origin) up to `end`
    (excluded) at most `lead` after it (at most `MAX_TARGETS`)."""
    pairs_o, pairs_t = [], []
    for k in _evenly(np.asarray(origins, np.int64), MAX_ORIGINS):
        last = int(np.searchsorted(times, times[k] + lead, side="right"))
        q = _evenly(np.arange(max(k + 1, first_target), min(last, end)), MAX_TARGETS)
        pairs_o.append(np.full(len(q), k))
        pairs_t.append(q)
    if not pairs_o:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(pairs_o), np.concatenate(pairs_t)


def held_out_pairs(times: np.ndarray, stop: int, lead: float) -> tuple[np.ndarray, np.ndarray]:
    """(origins, targets), observation indices of the held-out forecasts of
    a series whose tail starts at `stop`: origins from `stop - 1` on (at
    most `MAX_ORIGINS`), each with the tail's later observations at most
    `lead` after it (at most `MAX_TARGETS`). Empty without a tail."""
    n = len(times)
    if stop >= n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return rolling_pairs(times, np.arange(stop - 1, n - 1), stop, n, lead)


#: The fewest values within the trained part of a series on which
#: `history_choice` picks its simple forecast (fewer: every one stays a candidate).
HISTORY_COUNT = 10


def history_errors(
    simple: tuple[str, ...],
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    stop: int,
    lead: float,
    *,
    tau: float | None = None,
    cycles: tuple[Cycle, ...] = (),
) -> tuple[Float[np.ndarray, " S"], int]:
    """Each of the `simple` forecasts' mean absolute error within the
    series' trained part (its first `stop` observations), and the number of
    values it is the mean of: from rolling origins there (`rolling_pairs`,
    from the second observation on) at its later observations at most
    `lead` ahead, each column's errors in units of its mean absolute change
    between observations (`spread`; 1 where it has none). NaN errors
    without values."""
    origins, targets = rolling_pairs(times, np.arange(1, stop - 1), 0, stop, lead)
    truth = y[targets]
    forecasts = [simple_forecast(name, times, y, origins, times[targets], tau=tau, cycles=cycles) for name in simple]
    # every simple forecast has a value where its column has one by the origin
    valid = np.isfinite(truth) & np.isfinite(forecasts[0]) if simple else np.zeros(truth.shape, bool)
    count = int(valid.sum())
    if not count:
        return np.full(len(simple), np.nan), 0
    scale = spread(y[:stop])
    scale = np.where(np.isfinite(scale), scale, 1.0)
    return np.array([np.mean((np.abs(truth - f) / scale)[valid]) for f in forecasts]), count


def history_choice(simple: tuple[str, ...], errors: Float[np.ndarray, " S"], count: int) -> str | None:
    """Of the `simple` forecasts, the one of lowest `errors` within the
    series' trained part (`history_errors`: the errors and their `count`);
    None when fewer than `HISTORY_COUNT` values are there to compare them
    on. The first of `simple` on a tie."""
    return simple[int(np.argmin(errors))] if count >= HISTORY_COUNT else None


@dataclasses.dataclass(frozen=True)
class Trial:
    """One series' held-out forecasts: per candidate (`names`) the sum of
    absolute scaled errors (`sums`) over `count` values; for the intervals,
    each value's scaled error per candidate (`errors`, (n, C)), S5's
    predicted variance (`variances`) and lead (`leads`), model units;
    `allowed` (C,) which candidates the series may use (None: all)."""

    names: tuple[str, ...]
    sums: np.ndarray
    count: int
    errors: np.ndarray
    variances: np.ndarray
    leads: np.ndarray
    allowed: np.ndarray | None = None

    @classmethod
    def of(cls, names, targets, means: dict, variances, leads, allowed=None) -> "Trial":
        """From the scaled `targets` (Q, d), each candidate's scaled mean (Q, d) in `means`, S5's variances (Q, d)
        and the leads (Q,); `allowed` as the field."""
        valid = np.isfinite(targets) & np.all([np.isfinite(means[name]) for name in names], axis=0)
        errors = np.stack([(targets - means[name])[valid] for name in names], axis=1)
        leads = np.broadcast_to(np.asarray(leads, np.float64)[:, None], targets.shape)[valid]
        allowed = None if allowed is None else np.asarray(allowed, dtype=bool)
        return cls(tuple(names), np.abs(errors).sum(axis=0), int(valid.sum()), errors, variances[valid], leads,
                   allowed)

    def tried(self) -> np.ndarray:
        """(C,): whether each candidate is tried on the series (`allowed`, all by default; S5 always)."""
        tried = np.ones(len(self.names), bool) if self.allowed is None else self.allowed.copy()
        tried[self.names.index(S5)] = True
        return tried

    def standardised(self, name: str, calibration: LeadCalibration) -> float:
        """The sum of candidate `name`'s absolute errors over its calibrated
        standard deviations (S5's, times `calibration` at each lead)."""
        sd = np.sqrt(np.maximum(self.variances, 1e-12)) * calibration(self.leads)
        return float(np.sum(np.abs(self.errors[:, self.names.index(name)]) / sd))


def interval_scales(errors: np.ndarray, counts: np.ndarray, shrinkage: float = INTERVAL_SHRINKAGE) -> np.ndarray:
    r"""Each series' factor on its standard deviations, from the sums of
    its held-out absolute standardised errors (`errors`, (S,): errors over
    the calibrated standard deviations) over `counts` values:
    $m_s = \frac{(e_s + n_0 \bar z) / (n_s + n_0)}{\bar z}$ with $\bar z$ the
    panel's mean, $n_0$ = `shrinkage` (inf: every factor 1). 1 for a series
    without held-out values, and for all when fewer than two series have
    them (a lone series is its own panel)."""
    errors, counts = np.asarray(errors, np.float64), np.asarray(counts, np.float64)
    scales = np.ones(len(counts))
    tried = counts > 0
    if tried.sum() < 2 or np.isinf(shrinkage):
        return scales
    pooled = errors[tried].sum() / counts[tried].sum()
    if not pooled > 0:
        return scales
    scales[tried] = (errors[tried] + shrinkage * pooled) / (counts[tried] + shrinkage) / pooled
    return scales


@dataclasses.dataclass(frozen=True)
class Fallback:
    """The fitted choice: per series id the candidate used (`methods`;
    series not listed use S5), the smoother's time constant (`taus`),
    each candidate's `LeadCalibration` (`calibrations`) and per series the
    factor on its intervals (`scales`; not listed: 1); `table` the fitted
    attribute users read (`Forecaster.fallback_`)."""

    methods: dict
    taus: dict
    calibrations: dict
    table: pd.DataFrame
    scales: dict = dataclasses.field(default_factory=dict)

    def method(self, sid) -> str:
        return self.methods.get(sid, S5)

    def interval_scale(self, sid) -> float:
        return self.scales.get(sid, 1.0)


def choose(ids: list, trials: list, taus: list, names: tuple[str, ...], floor: LeadCalibration) -> Fallback:
    """The `Fallback` of series `ids` from their `Trial`s (None: no held-out
    end, S5 kept) and smoother time constants, over candidates `names`;
    `floor` S5's own interval factors, below which no candidate's go."""
    tried = [t for t in trials if t is not None and t.count > 0]
    rows, methods = [], {}
    if not tried:
        table = pd.DataFrame(
            {"method": [S5] * len(ids), "held_out": np.zeros(len(ids), np.int64), "interval_scale": np.ones(len(ids))},
            index=pd.Index(ids, tupleize_cols=False, dtype=object, name="series"),
        )
        return Fallback({}, dict(zip(ids, taus)), {}, table)
    # Each candidate's mean error over the series it is tried on (S5's: all of them).
    on = [t.tried() for t in tried]
    with np.errstate(invalid="ignore"):
        pooled = sum(t.sums * o for t, o in zip(tried, on)) / sum(t.count * o for t, o in zip(tried, on))
    for sid, trial in zip(ids, trials):
        if trial is None or trial.count == 0:
            methods[sid] = S5
            rows.append(np.full(len(names), np.nan))
            continue
        scores = np.where(trial.tried(), (trial.sums + SHRINKAGE * pooled) / (trial.count + SHRINKAGE), np.inf)
        methods[sid] = names[int(np.argmin(scores))]  # the first, S5, on a tie
        rows.append(np.where(trial.tried(), trial.sums / trial.count, np.nan))
    errors = np.concatenate([t.errors for t in tried])
    variances, leads = np.concatenate([t.variances for t in tried]), np.concatenate([t.leads for t in tried])
    offered = np.concatenate([np.broadcast_to(o, (t.count, len(names))) for t, o in zip(tried, on)])  # per error
    calibrations = {name: lead_calibration(errors[offered[:, c], c], variances[offered[:, c]],
                                           leads[offered[:, c]]).widest(floor) for c, name in enumerate(names)}
    counts = np.array([0 if t is None else t.count for t in trials])
    used = {name: floor if name == S5 else calibrations[name] for name in names}  # as `calibration_for` gives them
    sums = np.array([0.0 if t is None or t.count == 0 else t.standardised(methods[sid], used[methods[sid]])
                     for sid, t in zip(ids, trials)])
    scales = interval_scales(sums, counts)
    table = pd.DataFrame(np.array(rows), columns=list(names), index=pd.Index(ids, tupleize_cols=False, dtype=object))
    table.insert(0, "interval_scale", scales)
    table.insert(0, "held_out", counts)
    table.insert(0, "method", [methods[sid] for sid in ids])
    table.index.name = "series"
    return Fallback(
        {sid: m for sid, m in methods.items() if m != S5}, dict(zip(ids, taus)), calibrations, table,
        scales={sid: float(m) for sid, m in zip(ids, scales) if m != 1.0},
    )


def fallback_summary(table: pd.DataFrame) -> str:
    """One line per forecast used (`Forecaster.fallback_`): how many series
    use it and their mean held-out error, beside S5's on the same series."""
    lines = ["forecasts used (held-out mean absolute error in local spreads, the forecast's / S5's):"]
    for method, rows in table.groupby("method", sort=False):
        if rows["held_out"].sum() == 0:
            lines.append(f"  {method}: {len(rows)} series, no held-out end")
            continue
        tried = rows[rows["held_out"] > 0]
        lines.append(f"  {method}: {len(rows)} series, {tried[method].mean():.3f} / {tried[S5].mean():.3f}")
    scales = table["interval_scale"]
    if len(table) > 1:
        lines.append(f"interval scale per series (its held-out errors against the panel's): median {scales.median():.2f}, "
                     f"range {scales.min():.2f}-{scales.max():.2f}")
    return "\n".join(lines)


def calibration_for(fallback: Fallback | None, name: str, default: LeadCalibration) -> LeadCalibration:
    """The interval factors of candidate `name` (`default`, the held-out
    window's, for S5)."""
    if name == S5 or fallback is None:
        return default
    return fallback.calibrations[name]
