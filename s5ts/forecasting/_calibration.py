r"""Interval calibration from held-out errors, by lead.

The network's Gaussian variances are fitted on training targets; the
forecaster widens (or narrows) its standard deviations by factors read
from errors on a held-out tail of each series. Errors grow with the lead
faster than a model trained on a short series may predict, so the factors
are read per band of leads (`lead_calibration`): the held-out queries are
sorted by lead into up to `n_bins` bands of equal counts, each band gets
`calibration_factor` of its own errors, and a factor never falls with the
lead (a longer lead cannot be more certain than a shorter one was
found). The maths is pure numpy; `held_out_calibration` reads a model's
held-out errors batch by batch and hands them to it.
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


def calibration_factor(errors: np.ndarray, variances: np.ndarray) -> float:
    """The factor on the standard deviations from held-out errors and
    predicted variances: the largest of the one that makes the standardised
    squared errors average 1 and those that make the central 80 % and 95 %
    intervals cover that share of the errors, each with split conformal
    prediction's finite-sample quantile (of n errors the
    ⌈(n + 1)·c⌉-th smallest, the largest when that exceeds n), so a short
    held-out tail errs wide; never below 1/4, so one lucky tail cannot
    collapse the intervals; 1 without errors."""
    z = np.sort(np.abs(errors) / np.sqrt(np.maximum(variances, 1e-12)))
    n = len(z)
    if n == 0:
        return 1.0
    factors = [np.sqrt(np.mean(z**2))]
    factors += [z[min(math.ceil((n + 1) * c), n) - 1] / norm.ppf(0.5 + c / 2) for c in CALIBRATED_COVERAGES]
    return float(max(max(factors), 0.25))


@dataclasses.dataclass(frozen=True)
class LeadCalibration:
    """Factors on the standard deviations by lead: `factors[i]` applies to
    leads in band i, the bands split at `edges` (model units, increasing;
    a lead equal to an edge is in the band above it). The default is one
    band with factor 1 (no calibration).

    **Call:** `calibration(leads (Q,)) -> factors (Q,)`."""

    edges: Float[np.ndarray, " n_edges"] = dataclasses.field(default_factory=lambda: np.zeros(0))
    factors: Float[np.ndarray, " n_bands"] = dataclasses.field(default_factory=lambda: np.ones(1))

    def __post_init__(self):
        if len(self.factors) != len(self.edges) + 1:
            raise ValueError(f"{len(self.edges)} edges need {len(self.edges) + 1} factors, got {len(self.factors)}")

    def __call__(self, leads) -> np.ndarray:
        return np.asarray(self.factors[np.searchsorted(self.edges, np.asarray(leads, np.float64), side="right")])

    def widest(self, other: "LeadCalibration") -> "LeadCalibration":
        """The larger of this and `other`'s factor at every lead."""
        edges = np.union1d(self.edges, other.edges)
        starts = np.concatenate([[-np.inf], edges])  # each band's first lead
        return LeadCalibration(edges, np.maximum(self(starts), other(starts)))


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
    each band's factor `calibration_factor` of its errors, raised where
    needed so that it never falls with the lead.

    `min_count` (40) keeps each band's 95 % quantile an order statistic
    below its largest error (split conformal needs n ≥ 19 for that).
    Chosen in the forecasting benchmark (docs/forecasting.md): 4 bands
    against one factor for every lead."""
    order = np.argsort(leads, kind="stable")
    n = len(order)
    bands = np.array_split(order, max(1, min(n_bins, n // min_count)))
    factors = np.maximum.accumulate([calibration_factor(errors[b], variances[b]) for b in bands])
    # A band starts at its first lead; equal edges are harmless: a lead equal
    # to several falls in the highest of their bands, the widest.
    edges = np.array([leads[b[0]] for b in bands[1:]], np.float64)
    return LeadCalibration(edges, np.asarray(factors, np.float64))


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
