r"""Interval calibration from held-out errors, by lead.

The network's Gaussian variances are fitted on training targets; the
forecaster widens (or narrows) its standard deviations by factors read
from errors on a held-out tail of each series. Errors grow with the lead
faster than a model trained on a short series may predict, so the factors
are read per band of leads (`lead_calibration`): the held-out queries are
sorted by lead into up to `n_bins` bands of equal counts, each band gets
`calibration_factor` of its own errors, and a factor never falls with the
lead (a longer lead cannot be more certain than a shorter one was
found). Each band also has a factor per calibrated coverage
(`coverage_factors`): the central interval of a coverage is read at its
own held-out quantile, so an 80 % interval is not widened by the tail a
95 % interval needs. The maths is pure numpy; `held_out_calibration`
reads a model's held-out errors batch by batch and hands them to it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from jaxtyping import Float
from scipy.stats import norm

from ..training import gather_rows, predicted_batches

#: The central coverages whose held-out empirical quantiles the calibrated
#: intervals must reach (`calibration_factor`).
CALIBRATED_COVERAGES = (0.8, 0.95)


def coverage_factors(errors: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """The factors on the standard deviations, one per coverage of
    `CALIBRATED_COVERAGES`, from held-out errors and predicted variances.

    Each coverage's is the factor that makes the central interval cover
    that share of the errors, read as split conformal prediction does (of
    n errors the ⌈(n + 1)·c⌉-th smallest, the largest when that exceeds n),
    so a short held-out tail errs wide. The last (widest) coverage's is
    `calibration_factor`, the factor of the Gaussian itself: the largest of
    every coverage's and the one that makes the standardised squared
    errors average 1. Never below 1/4, so one lucky tail cannot collapse
    the intervals; all 1 without errors."""
    z = np.sort(np.abs(errors) / np.sqrt(np.maximum(variances, 1e-12)))
    n = len(z)
    if n == 0:
        return np.ones(len(CALIBRATED_COVERAGES))
    factors = np.array([z[min(math.ceil((n + 1) * c), n) - 1] / norm.ppf(0.5 + c / 2) for c in CALIBRATED_COVERAGES])
    factors[-1] = max(factors.max(), np.sqrt(np.mean(z**2)))
    return np.maximum(factors, 0.25)


def calibration_factor(errors: np.ndarray, variances: np.ndarray) -> float:
    """The factor on the Gaussian's standard deviations from held-out
    errors and predicted variances: the largest of the one that makes the
    standardised squared errors average 1 and those that make the central
    80 % and 95 % intervals cover that share of the errors
    (`coverage_factors`' last)."""
    return float(coverage_factors(errors, variances)[-1])


@dataclasses.dataclass(frozen=True)
class LeadCalibration:
    """Factors on the standard deviations by lead: `factors[i]` applies to
    leads in band i, the bands split at `edges` (model units, increasing;
    a lead equal to an edge is in the band above it). The default is one
    band with factor 1 (no calibration).

    `coverage_factors[i, j]` is band i's factor for central intervals of
    coverage `CALIBRATED_COVERAGES[j]`, at most `factors[i]` (None: every
    coverage takes `factors`). `factors` scale the Gaussian (its variance);
    intervals and quantiles scale by `interval_factors`.

    **Call:** `calibration(leads (Q,)) -> factors (Q,)`."""

    edges: Float[np.ndarray, " n_edges"] = dataclasses.field(default_factory=lambda: np.zeros(0))
    factors: Float[np.ndarray, " n_bands"] = dataclasses.field(default_factory=lambda: np.ones(1))
    coverage_factors: Float[np.ndarray, "rows n_coverages"] | None = None

    def __post_init__(self):
        if len(self.factors) != len(self.edges) + 1:
            raise ValueError(f"{len(self.edges)} edges need {len(self.edges) + 1} factors, got {len(self.factors)}")
        if not np.all(np.asarray(self.factors) > 0):
            raise ValueError(f"factors must be positive, got {self.factors}")
        if self.coverage_factors is None:
            self._every_coverage_at_factors()
        coverage = np.asarray(self.coverage_factors)
        if coverage.shape != (len(self.factors), len(CALIBRATED_COVERAGES)):
            raise ValueError(f"coverage_factors must have shape {(len(self.factors), len(CALIBRATED_COVERAGES))}, "
                             f"got {coverage.shape}")
        if np.any(np.diff(coverage, axis=1) < 0) or not np.array_equal(coverage[:, -1], self.factors):
            # Otherwise quantiles could fall with the coverage between two calibrated ones.
            raise ValueError("coverage_factors must not fall from one coverage to the next, and the last "
                             f"coverage's must be `factors`; got {coverage.tolist()} for factors {self.factors}")

    def _every_coverage_at_factors(self) -> None:
        object.__setattr__(self, "coverage_factors", np.repeat(np.asarray(self.factors, np.float64)[:, None],
                                                               len(CALIBRATED_COVERAGES), axis=1))

    def __setstate__(self, state: dict) -> None:
        # Unpickling: a calibration pickled before `coverage_factors` existed
        # had every coverage at `factors`.
        self.__dict__.update(state)
        if state.get("coverage_factors") is None:
            self._every_coverage_at_factors()

    def _bands(self, leads):
        return np.searchsorted(self.edges, np.asarray(leads, np.float64), side="right")

    def __call__(self, leads) -> np.ndarray:
        return np.asarray(self.factors[self._bands(leads)])

    def interval_factors(self, leads) -> np.ndarray:
        """`(Q, n_coverages)`: each lead's factor for each coverage of
        `CALIBRATED_COVERAGES`, as a fraction of its `factors` (at most 1)."""
        bands = self._bands(leads)
        return np.asarray(self.coverage_factors[bands] / self.factors[bands][..., None])

    def widest(self, other: "LeadCalibration") -> "LeadCalibration":
        """The larger of this and `other`'s factor at every lead, for every
        coverage."""
        edges = np.union1d(self.edges, other.edges)
        starts = np.concatenate([[-np.inf], edges])  # each band's first lead
        coverage = np.maximum(self.coverage_factors[self._bands(starts)], other.coverage_factors[other._bands(starts)])
        return LeadCalibration(edges, np.maximum(self(starts), other(starts)), coverage)


def interval_ratio(ratios: np.ndarray, coverage: float) -> np.ndarray:
    """The factor on the Gaussian's standard deviation for a central
    interval of `coverage`, from `ratios` (..., n_coverages) (each
    calibrated coverage's, `LeadCalibration.interval_factors`): linear in
    the coverage between calibrated ones, the nearest one's beyond them."""
    ratios = np.asarray(ratios, np.float64)
    levels = np.asarray(CALIBRATED_COVERAGES)
    j = int(np.clip(np.searchsorted(levels, coverage), 1, len(levels) - 1))
    w = float(np.clip((coverage - levels[j - 1]) / (levels[j] - levels[j - 1]), 0.0, 1.0))
    return (1 - w) * ratios[..., j - 1] + w * ratios[..., j]


def lead_calibration(
    errors: Float[np.ndarray, " n"],
    variances: Float[np.ndarray, " n"],
    leads: Float[np.ndarray, " n"],
    *,
    n_bins: int = 4,
    min_count: int = 40,
) -> LeadCalibration:
    """`LeadCalibration` from held-out errors, predicted variances and the
    leads they were forecast at: the errors sorted by lead into
    min(`n_bins`, n // `min_count`) bands of equal counts (at least one),
    each band's factors `coverage_factors` of its errors, each raised
    where needed so that it never falls with the lead.

    `min_count` (40) keeps each band's 95 % quantile an order statistic
    below its largest error (split conformal needs n ≥ 19 for that).
    Chosen in the forecasting benchmark (docs/forecasting.md): 4 bands
    against one factor for every lead."""
    order = np.argsort(leads, kind="stable")
    n = len(order)
    bands = np.array_split(order, max(1, min(n_bins, n // min_count)))
    coverage = np.maximum.accumulate([coverage_factors(errors[b], variances[b]) for b in bands], axis=0)
    # A band starts at its first lead; equal edges are harmless: a lead equal
    # to several falls in the highest of their bands, the widest.
    edges = np.array([leads[b[0]] for b in bands[1:]], np.float64)
    return LeadCalibration(edges, coverage[:, -1].copy(), coverage)


def held_out_calibration(model, data, batch_size: int, keep: float = 1.0, rng=None) -> LeadCalibration:
    """`lead_calibration` over the held-out queries of `data` (`Sequences`
    or `StreamedSequences`; None: `LeadCalibration()`, no calibration),
    reduced batch by batch, each query kept with probability `keep` (a
    uniform sample, drawn from `rng`, bounds the memory on data streamed
    from files)."""
    if data is None:
        return LeadCalibration()
    errors, variances, leads = [], [], []
    for _, rows, batch, items in predicted_batches(model, data, batch_size):
        all_targets, all_steps = gather_rows((batch["y"], batch["extra"]))
        for row, (mean, var) in zip(rows, items):
            L = len(mean)
            targets, steps = all_targets[row, :L], all_steps[row, :L]
            K = steps.shape[1] // (model.n_inputs + 1)
            lead = np.repeat(steps.reshape(L, K, -1)[..., -1], targets.shape[1] // K, axis=1)  # K x d per origin
            valid = np.isfinite(targets)
            if keep < 1.0:
                valid &= rng.random(valid.shape) < keep
            errors.append(targets[valid] - mean[valid])
            variances.append(var[valid])
            leads.append(lead[valid])
    return lead_calibration(np.concatenate(errors), np.concatenate(variances), np.concatenate(leads))
