r"""Scores of `forecast_real.py`: MASE, interval coverage and width, and the
CRPS of a Gaussian forecast, for one task (a series, or a panel scored as
one pool of points).

- MASE: the mean absolute error over the horizon divided by `naive_scale`,
  the mean $|y_k - y_{k-1}|$ over consecutive training observations (of the
  thinned, irregular series; within each subject of a panel, pooled).
- Width of an interval: mean (upper - lower) over the horizon, divided by the
  same scale, so widths compare across series.
- CRPS of $N(\mu, \sigma^2)$ at $y$, closed form with $z = (y - \mu)/\sigma$:
  $\sigma\,[z\,(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt{\pi}]$
  (Gneiting & Raftery 2007); $|y - \mu|$ when $\sigma = 0$. Also divided by
  the scale. A method that gives intervals only is scored as the Gaussian
  centred on its point forecast whose central 95 % interval has the width of
  its own (`sigma_from_interval`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm


def naive_scale(train: pd.DataFrame) -> float:
    """Mean absolute change between consecutive observations of `train`
    (column "y"; a MultiIndex panel: within each subject, pooled)."""
    if train.index.nlevels == 1:
        steps = np.diff(train["y"].to_numpy(dtype=float))
    else:
        by_subject = train["y"].groupby(level=0, sort=False)
        steps = np.concatenate([np.diff(g.to_numpy(dtype=float)) for _, g in by_subject])
    if len(steps) == 0:
        raise ValueError("the naive scale needs two observations of one series")
    return float(np.mean(np.abs(steps)))


def gaussian_crps(y, mu, sigma) -> np.ndarray:
    """CRPS of N(mu, sigma²) at y, element-wise; sigma 0 gives |y - mu|."""
    y, mu, sigma = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (y, mu, sigma)))
    out = np.array(np.abs(y - mu))  # an array also for scalar arguments
    spread = sigma > 0
    z = (y[spread] - mu[spread]) / sigma[spread]
    out[spread] = sigma[spread] * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
    return out


def sigma_from_interval(lower, upper, coverage: float = 0.95) -> np.ndarray:
    """The sd of the Gaussian whose central `coverage` interval is as wide."""
    return (np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)) / (2 * norm.ppf(0.5 + coverage / 2))


def coverage(y, lower, upper) -> float:
    """Share of `y` inside [lower, upper], over the points that have both
    bounds (NaN when none has)."""
    y, lower, upper = (np.asarray(a, dtype=float) for a in (y, lower, upper))
    known = np.isfinite(lower) & np.isfinite(upper)
    if not known.any():
        return float("nan")
    return float(np.mean((y[known] >= lower[known]) & (y[known] <= upper[known])))


def geometric_mean(values) -> float:
    """Over the finite positive values (NaN when there are none)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.mean(np.log(values)))) if len(values) else float("nan")
