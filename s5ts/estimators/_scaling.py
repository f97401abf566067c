"""How feature values are scaled before the network: the maths of the
estimators' `standardize` parameter, as pure numpy functions.

- `"global"`: one location m and scale s per feature, the mean and standard
  deviation of every observed training value: x' = (x − m) / s.
- `"series"`: each series by its own mean μᵢ and standard deviation σᵢ
  (over its observed values), z = (x − μᵢ) / σ̃ᵢ, plus two channels per
  feature, constant along the series, that keep what z forgets:
  level asinh((μᵢ − m) / s) and scale log(σ̃ᵢ / s). Here m is the mean of the
  training series' means, s the geometric mean of their (positive) standard
  deviations, and σ̃ᵢ the series' standard deviation moderated toward the
  training series' typical one (`variance_prior`, `moderated_std`) and at
  least 10⁻³ s, so that a constant series does not divide by zero. asinh
  and log keep levels and scales that span orders of magnitude within a
  few units.
- `"none"`: the values as they are.
- `"auto"` (resolved at fit by `choose_scaling`): `"series"` when, for some
  feature, the typical series' spread s is under `AUTO_SERIES_RATIO` (a
  half) of the pooled spread of all values, that is, when most of the
  feature's variance lies between series (their levels or scales) rather
  than within them: `"global"` would then squash series of a small scale to
  a near-constant (PLAID's appliance currents span five orders of
  magnitude) or leave each series' shape small beside the offsets between
  series (Tecator's spectra); `"global"` otherwise. docs/estimators.md,
  "Scaling of the features", has the benchmark behind the rule.

The spread of a series of a few observations is a poor estimate of its
scale: two visits with the same value give σᵢ = 0, and a scale channel
of log 10⁻³ ≈ −6.9 beside the others' ±1. So σ̃ᵢ is the posterior
estimate of empirical Bayes under a scaled inverse χ² prior on the
series' variances, fitted to the training series' sample variances by
the moments of their logarithms (Smyth 2004, "Linear models and empirical
Bayes methods for assessing differential expression in microarray
experiments", limma's `squeezeVar`): with dᵢ = nᵢ − 1 degrees of freedom
and the unbiased sample variance sᵢ², σ̃ᵢ² = (d₀ s₀² + dᵢ sᵢ²) / (d₀ + dᵢ).
The prior weighs as d₀ observations, and d₀ is fitted to how much the
variances differ beyond their sampling noise: where scales span orders of
magnitude (PLAID's appliances) d₀ is near 0, and a series of many
observations keeps about its own scale (the smallest scales are raised
by up to a few times, the prior's variance being added to theirs); where
they differ little more than a handful of observations each makes them
differ, short series are drawn toward s₀, and with d₀ = ∞ every series
is scaled by s₀. A feature with fewer than `MIN_PRIOR_SERIES` series of
two or more values and a positive spread gets no prior: each series keeps
its own σᵢ.

Missing values (NaN) stay out of every statistic; in the scaled inputs they
are 0, and the caller adds the observed-channel mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import digamma, polygamma

#: `"auto"` picks `"series"` below this ratio of the typical series' spread
#: to the pooled spread (see the module docstring).
AUTO_SERIES_RATIO = 0.5

#: σ̃ᵢ is at least SCALE_FLOOR · s under `"series"`.
SCALE_FLOOR = 1e-3

#: `variance_prior` fits a feature's prior from at least this many series
#: of two or more values whose spread is positive, and none from fewer.
MIN_PRIOR_SERIES = 10


def weighted_mean_std(values: np.ndarray, weights: np.ndarray | None = None):
    """Mean and standard deviation of each column of `values` (m, k) over its
    non-NaN entries, each row weighted by `weights` (m,) (a row of weight 2
    counts as two copies of it). NaN for a column with no entry."""
    observed = ~np.isnan(values)
    w = observed * (1.0 if weights is None else np.asarray(weights, np.float64)[:, None])
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (w * np.nan_to_num(values)).sum(axis=0) / total
        var = (w * np.nan_to_num(values - mean) ** 2).sum(axis=0) / total
    return mean, np.sqrt(var)


def series_statistics(values: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each series' number of observed values, mean and (population)
    standard deviation per feature over its observed values: three arrays
    (n series, k features), NaN moments where a count is 0. What every
    scaling is learned from (`pooled_from_moments`, `reference_from_moments`),
    gathered alike from a panel in memory and chunk by chunk from Parquet.

    >>> counts, means, stds = series_statistics([np.array([[1.0], [3.0]]), np.array([[np.nan], [5.0]])])
    >>> counts.ravel().tolist(), means.ravel().tolist(), stds.ravel().tolist()
    ([2.0, 1.0], [2.0, 5.0], [1.0, 0.0])
    """
    lengths = np.array([len(v) for v in values], np.int64)
    stacked = np.concatenate(values)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    observed = ~np.isnan(stacked)
    counts = np.add.reduceat(observed.astype(np.float64), starts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.add.reduceat(np.where(observed, stacked, 0.0), starts, axis=0) / counts
        spread = np.where(observed, stacked - np.repeat(means, lengths, axis=0), 0.0) ** 2
        stds = np.sqrt(np.add.reduceat(spread, starts, axis=0) / counts)
    return counts, means, stds


def series_moments(values: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each series' mean and (population) standard deviation per feature over
    its observed values: two arrays (n series, k features), NaN where a
    series never observes a feature."""
    means, stds = zip(*(weighted_mean_std(v) for v in values))
    return np.array(means).reshape(len(values), -1), np.array(stds).reshape(len(values), -1)


def reference_from_moments(
    means: np.ndarray, stds: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The location m (k,) and scale s (k,) of `"series"` scaling from the
    series' moments (`series_moments`: two arrays (n, k)): the mean of the
    series' means and the geometric mean of their positive standard
    deviations, each series weighted by `weights` (n,). A feature that no
    series spreads (every series constant or observed once) gets s = 1."""
    location, _ = weighted_mean_std(means, weights)
    with np.errstate(divide="ignore"):
        log_std = np.where(stds > 0, np.log(np.where(stds > 0, stds, 1.0)), np.nan)
    mean_log, _ = weighted_mean_std(log_std, weights)
    scale = np.where(np.isfinite(mean_log), np.exp(np.nan_to_num(mean_log)), 1.0)
    return location, scale


def pooled_from_moments(
    counts: np.ndarray, means: np.ndarray, stds: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`weighted_mean_std` of all values from each series' number of observed
    values, mean and standard deviation per feature (three arrays (n, k);
    NaN moments where a count is 0), each series weighted by `weights` (n,):
    the pooled mean is the weighted mean of the series' means, the pooled
    variance the weighted mean of each series' variance plus its squared
    offset from the pooled mean (Chan et al.'s merge). Equal to
    `weighted_mean_std` on the stacked values up to rounding.

    >>> a, b = np.array([[1.0], [2.0]]), np.array([[4.0], [np.nan], [6.0]])
    >>> counts, (means, stds) = np.array([[2], [2]]), series_moments([a, b])
    >>> pooled_from_moments(counts, means, stds)
    (array([3.25]), array([1.92028644]))
    >>> weighted_mean_std(np.concatenate([a, b]))
    (array([3.25]), array([1.92028644]))
    """
    w = counts * (1.0 if weights is None else np.asarray(weights, np.float64)[:, None])
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (w * np.nan_to_num(means)).sum(axis=0) / total
        var = (w * (np.nan_to_num(stds) ** 2 + np.nan_to_num(means - mean) ** 2)).sum(axis=0) / total
    return mean, np.sqrt(var)


def _trigamma_inverse(y: float) -> float:
    """x with ψ′(x) = y, by Newton's method on 1 / ψ′ (Smyth 2004; limma's
    `trigammaInverse`)."""
    if y > 1e7:
        return 1.0 / np.sqrt(y)
    if y < 1e-6:
        return 1.0 / y
    x = 0.5 + 1.0 / y
    for _ in range(50):
        trigamma = float(polygamma(1, x))
        step = trigamma * (1.0 - trigamma / y) / float(polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def _prior_of(variances: np.ndarray, dof: np.ndarray, floor: float) -> tuple[float, float]:
    """(d₀, s₀²) of one feature from sample variances with `dof` degrees of
    freedom each (all ≥ 1): `variance_prior`; (0, 1), no prior, from fewer
    than `MIN_PRIOR_SERIES` positive variances or where the fit is not
    finite."""
    none = (0.0, 1.0)
    if int((variances > 0).sum()) < MIN_PRIOR_SERIES:
        return none
    median = float(np.median(variances))
    variances = np.maximum(variances, 1e-5 * median if median > 0 else floor)
    half = dof / 2.0
    with np.errstate(all="ignore"):
        e = np.log(variances) - digamma(half) + np.log(half)
        e_mean = float(e.mean())
        excess = float(np.mean((e - e_mean) ** 2) * len(e) / (len(e) - 1) - np.mean(polygamma(1, half)))
        if not (math.isfinite(e_mean) and math.isfinite(excess)):
            return none
    try:
        if excess <= 0:
            d0, prior_var = math.inf, math.exp(e_mean)
        else:
            d0 = 2.0 * _trigamma_inverse(excess)
            prior_var = math.exp(e_mean + float(digamma(d0 / 2.0)) - math.log(d0 / 2.0))
    except OverflowError:
        return none
    return (d0, prior_var) if prior_var > 0 else none  # exp may underflow to 0


def variance_prior(counts: np.ndarray, stds: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prior of `"series"` scaling's per-series variances, per feature:
    degrees of freedom d₀ and variance s₀² (two arrays (k,)) of a scaled
    inverse χ² distribution fitted to the series' unbiased sample variances
    sᵢ² = σᵢ² nᵢ / (nᵢ − 1), each with dᵢ = nᵢ − 1 degrees of freedom, by
    the mean and variance of log sᵢ² (Smyth 2004, limma's `fitFDist`),
    from each series' number of observed values and population standard
    deviation (`series_statistics`: (n, k) each) and the feature's scale s
    (k,). Series of one observation take no part; variances are held at
    10⁻⁵ of their median (at (`SCALE_FLOOR` · s)² where the median is 0).
    d₀ = ∞ where the variances differ no more than their sampling noise
    explains; d₀ = 0 (no prior: each series its own σᵢ) for a feature with
    fewer than `MIN_PRIOR_SERIES` series of two or more values and a
    positive spread. Unweighted: it describes how the series are sampled,
    not how much each counts."""
    prior_dof, prior_var = np.zeros(counts.shape[1]), np.ones(counts.shape[1])
    for j in range(counts.shape[1]):
        n, std = counts[:, j], stds[:, j]
        ok = (n >= 2) & np.isfinite(std)
        n, std = n[ok], std[ok]
        prior_dof[j], prior_var[j] = _prior_of(std**2 * n / (n - 1), n - 1, float((SCALE_FLOOR * scale[j]) ** 2))
    return prior_dof, prior_var


def moderated_std(std: np.ndarray, count: np.ndarray, prior_dof: np.ndarray, prior_var: np.ndarray) -> np.ndarray:
    """One series' standard deviations σ̃ (k,) from its population ones
    `std` over `count` observed values (k,) and the `variance_prior`:
    σ̃² = (d₀ s₀² + d s²) / (d₀ + d), s² = σ² n / (n − 1) and d = n − 1.
    Where d₀ = 0 (no prior) σ̃ = σ, whatever the count; otherwise s₀ where
    d₀ = ∞ or the series has one value."""
    dof = np.maximum(count - 1.0, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.where(dof > 0, std**2 * count / dof, 0.0)
        mixed = (prior_dof * prior_var + dof * variance) / (prior_dof + dof)
    out = np.where(np.isinf(prior_dof) | (dof == 0), prior_var, mixed)
    return np.where(prior_dof == 0, std, np.sqrt(out))


def choose_scaling(pooled_std: np.ndarray, series_scale: np.ndarray) -> str:
    """What `standardize="auto"` means for these data: `"series"` if some
    feature's typical series spread (`series_scale`, (k,)) is under
    `AUTO_SERIES_RATIO` of its pooled spread (`pooled_std`, (k,)), else
    `"global"`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = series_scale / pooled_std
    return "series" if bool(np.any(ratio < AUTO_SERIES_RATIO)) else "global"


def scale_values(
    values: np.ndarray,
    scaling: str,
    location: np.ndarray,
    scale: np.ndarray,
    prior: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """One series' values (L, k) scaled per `scaling` with the fitted
    `location` and `scale` (k,): (L, k), or (L, 3k) under `"series"` (z, then
    level, then scale channels), its standard deviations moderated by the
    `prior` ((d₀, s₀²): `variance_prior`; None: the series' own). Missing
    values are 0."""
    observed = ~np.isnan(values)
    if scaling != "series":
        return np.where(observed, (values - location) / scale, 0.0)
    (mean,), (std,) = series_moments([values])
    never = np.isnan(mean)
    mean = np.where(never, location, mean)
    if prior is not None:
        std = moderated_std(std, observed.sum(axis=0).astype(np.float64), *prior)
    std = np.maximum(np.where(never, scale, std), SCALE_FLOOR * scale)
    z = np.where(observed, (values - mean) / std, 0.0)
    static = np.concatenate([np.arcsinh((mean - location) / scale), np.log(std / scale)])
    return np.concatenate([z, np.broadcast_to(static, (len(values), static.size))], axis=1)
