r"""Simple forecasts of one series, the yardsticks the forecaster measures
itself against on each series' held-out end (`_fallback`). Pure numpy.

Each forecasts the values at times $T$ from the history up to an origin
observation $k$ (columns independently; NaN = not observed):

- `last_value`: $\ell_k$, the column's last observed value;
- `drift`: $\ell_k + b\,\tau(1 - e^{-(T - t_\ell)/\tau})$, the slope
  $b = (\ell_k - y_f)/(t_\ell - t_f)$ of the line from the column's first
  observation $(t_f, y_f)$ through its last $(t_\ell, \ell_k)$, carried on
  damped with time constant $\tau$ = `DRIFT_MEMORY` $\cdot (t_\ell - t_f)$:
  a slope measured over a span is trusted for about half that span
  again, and the forecast levels off at $\ell_k + b\tau$ (the last value
  without a slope to draw);
- `smoother`: the level $\sum_j w_j y_j / \sum_j w_j$, $w_j = e^{-(t_k -
  t_j)/\tau}$, an exponential smoother in continuous time whose time
  constant τ is chosen per series by one-step errors (`smoother_time`);
- `seasonal_<cycle>`: the value one period $P$ of a calendar cycle before,
  $m$ periods back for the smallest $m \ge 1$ with $T - mP \le t_k$, read
  between the observations around it by linear interpolation (the last
  value where the history does not reach that far).

A seasonal forecast is a candidate for a series only where its history
shows the cycle (`shows_cycle`): values one period apart differ less than
values half a period apart. A calendar says which cycles could be there (a
price on trading days has a calendar year), not which are.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float, Int
from scipy.stats import f as f_distribution

from ._calendar import Cycle
from ._steps import _decayed_sums, last_values

#: The smoother's time constants tried, in median gaps of the series.
SMOOTHER_TIMES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)

BASES = ("last_value", "drift", "smoother")

#: The drift's damping time, as a share of the span its slope is measured
#: over (docs/forecasting.md, "A damped drift").
DRIFT_MEMORY = 0.5

#: A cycle shows (`shows_cycle`) when the one-period differences' mean
#: square over the half-period ones' is below this quantile of its F
#: distribution under noise alone.
CYCLE_QUANTILE = 0.05


def simple_names(cycles: tuple[Cycle, ...]) -> tuple[str, ...]:
    """The simple forecasts for series with calendar `cycles`."""
    return BASES + tuple(f"seasonal_{cycle.name}" for cycle in cycles)


def _last_times(times: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each column's last observation time at or before each step (NaN before its first)."""
    return last_values(np.where(np.isnan(y), np.nan, np.broadcast_to(times[:, None], y.shape)))


def smoothed_levels(times, y, tau: float) -> Float[np.ndarray, "L d"]:
    """The smoother's level after each step with time constant `tau` (NaN before a column's first observation)."""
    observed = ~np.isnan(y)
    start = times[0]
    zeros = np.zeros(y.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        total = _decayed_sums(np.where(observed, y, 0.0), times, zeros, start, tau)
        weight = _decayed_sums(observed.astype(np.float64), times, zeros, start, tau)
        return np.where(weight > 0, total / weight, np.nan)


def smoother_time(times, y, stop: int) -> float:
    """The smoother's time constant: of `SMOOTHER_TIMES` median gaps, the
    one whose level best forecasts each next observation (mean absolute
    error) among the first `stop` observations; one median gap when they
    give no error to compare."""
    times = np.asarray(times, np.float64)
    gap = float(np.median(np.diff(times[:stop]))) if stop > 1 else 0.0
    gap = gap if gap > 0 else 1.0
    best, chosen = np.inf, gap
    for factor in SMOOTHER_TIMES:
        level = smoothed_levels(times[:stop], y[:stop], factor * gap)
        errors = np.abs(y[1:stop] - level[: stop - 1])
        if np.isfinite(errors).any():
            error = float(np.nanmean(errors))
            if error < best:
                best, chosen = error, factor * gap
    return chosen


def _period(name: str, cycles: tuple[Cycle, ...]) -> float:
    """The period (seconds) of seasonal forecast `name` among `cycles`."""
    period = {f"seasonal_{c.name}": c.period for c in cycles}.get(name)
    if period is None:
        raise ValueError(f"unknown simple forecast {name!r}: the series' cycles are {[c.name for c in cycles]}")
    return period


def shows_cycle(name: str, times, y, stop: int, cycles: tuple[Cycle, ...]) -> bool:
    """Whether the series' first `stop` observations show the cycle of
    seasonal forecast `name` (period P): values one period apart differ less
    than values half a period apart. For a cycle of amplitude A on noise of
    spread σ the two mean squares are about 2σ² and 2σ² + 2A²; for noise
    alone, or a trend, about equal; for a random walk the first is twice
    the second.

    Each observation at least P after its column's first is compared with
    the column's values P and P/2 before it, read by linear interpolation
    between observations as the seasonal forecast reads them. Each
    column's differences are centred on their mean, so that a trend's
    steady growth, the same in every difference of one lag, counts for
    neither. Their ratio of mean squares (P over P/2), column by column,
    is averaged over the columns weighted by their counts N_c. The cycle
    shows when that average is below `CYCLE_QUANTILE` of an F distribution
    with ΣN_c − 1 degrees of freedom each way: a smaller ratio than noise
    alone gives in 19 histories of 20 (the differences overlap, so this is a
    rule of thumb, not an exact test). False without 3 differences in a
    column; True for a name that is not seasonal."""
    if not name.startswith("seasonal_"):
        return True
    period = _period(name, cycles)
    times, y = np.asarray(times[:stop], np.float64), np.asarray(y[:stop], np.float64)
    ratios, counts = [], []
    for column in y.T:
        seen = np.isfinite(column)
        t, v = times[seen], column[seen]
        late = t >= t[0] + period if len(t) else np.zeros(0, bool)
        if late.sum() < 3:
            continue
        one = v[late] - np.interp(t[late] - period, t, v)
        half = v[late] - np.interp(t[late] - period / 2, t, v)
        if not np.var(half) > 0:
            continue
        ratios.append(np.var(one) / np.var(half))
        counts.append(int(late.sum()))
    if not counts:
        return False
    n = sum(counts)
    return bool(np.dot(ratios, counts) / n < f_distribution.ppf(CYCLE_QUANTILE, n - 1, n - 1))


def simple_forecast(
    name: str,
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    origins: Int[np.ndarray, " Q"],
    at: Float[np.ndarray, " Q"],
    *,
    tau: float | None = None,
    cycles: tuple[Cycle, ...] = (),
) -> Float[np.ndarray, "Q d"]:
    """The simple forecast `name` (`simple_names`) of the series' values at
    times `at`, each from the history up to observation `origins[q]`;
    `tau` the smoother's time constant (needed by it alone), `cycles` those seasonal forecasts
    can name. NaN where a column has no observation up to the origin."""
    times = np.asarray(times, np.float64)
    at = np.asarray(at, np.float64)
    levels = last_values(y)[origins]
    if name == "last_value":
        return levels
    if name == "smoother":
        if tau is None:
            raise ValueError("the smoother needs its time constant tau")
        return smoothed_levels(times, y, tau)[origins]
    last_time = _last_times(times, y)[origins]
    if name == "drift":
        first = np.argmax(~np.isnan(y), axis=0)  # each column's first observation
        first_y, first_t = y[first, np.arange(y.shape[1])], times[first]
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = (levels - first_y) / (last_time - first_t)
        slope = np.where(np.isfinite(slope), slope, 0.0)
        memory = DRIFT_MEMORY * (last_time - first_t)
        lead = at[:, None] - last_time
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            reach = np.where(memory > 0, memory * -np.expm1(-lead / np.where(memory > 0, memory, 1.0)), lead)
        return levels + slope * reach
    if name.startswith("seasonal_"):
        period = _period(name, cycles)
        back = np.maximum(1.0, np.ceil((at - times[origins]) / period))
        when = at - back * period
        out = levels.copy()
        for j in range(y.shape[1]):
            seen = ~np.isnan(y[:, j])
            t_j, y_j = times[seen], y[seen, j]
            if len(t_j) == 0:
                continue
            inside = (when >= t_j[0]) & (when <= last_time[:, j])
            out[inside, j] = np.interp(when[inside], t_j, y_j)
        return out
    raise ValueError(f"unknown simple forecast {name!r}")
