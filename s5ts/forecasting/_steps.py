r"""The step inputs of the forecasting model, for one series. Pure numpy.

A series observed at times $t_0 < \dots < t_{n-1}$ with values $y_k$
(columns may be NaN: not observed then) becomes one step per observation.
Step $k$ covers $(t_{k-1}, t_k]$: its gap is $g_k = (t_k - t_{k-1})/s$
($s$ the time scale learnt in fit; $g_0$ = `first_gap`) and its input is

$$u_k = [\,\delta_k,\ o_k,\ z_k,\ \log(1 + g_k),\ c(t_k),\ c(t_{k-1}),\ x_k\,]$$

with $\delta_k = (y_k - \ell_{k-1})/s_{k-1}$ the change since each column's
last observed value $\ell_{k-1}$, in units of the series' local spread
$s_{k-1}$ (`local_spreads`: a time-weighted mean absolute change between
observations up to then, anchored to the whole series' spread σ, so a
series whose swings grow stays in range; 0 where not observed),
$o_k$ the columns observed at $t_k$, $z_k = (\ell_k - m)/w$ the level
against the series' mean $m$ and standard deviation $w$ in fit (clipped to
±5: a trend leaves that range, the changes do not), $c(\cdot)$ the calendar features
(`_calendar`) and $x_k$ exogenous features.

A forecast for a time $T$ from the state after observation $k$ (the
*origin*) is one more step with gap $(T - t_k)/s$ and input
$[\,0,\ 0,\ 0,\ \log(1 + g),\ c(T),\ c(t_k),\ x_T\,]$: no observation, the
calendar at both ends, and the SSM integrates exactly over the lead. Its
output is $(y(T) - \ell_k)/s_k$: forecasts are relative to the last
value and the local spread, so a trending series never leaves the range
the network saw.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
from jaxtyping import Float, Int

from ._calendar import Cycle, calendar_features, n_calendar_features


@dataclasses.dataclass(frozen=True)
class StepLayout:
    """What a step's input holds: `d` outputs, calendar `cycles`, `n_exog`
    exogenous features; `time_scale` (seconds or index units per model time
    unit), `first_gap` (model units) and the local spread's `memory`."""

    d: int
    cycles: tuple[Cycle, ...]
    n_exog: int
    time_scale: float
    first_gap: float
    memory: float = np.inf  # time constant of the local spread (seconds or index units)

    @property
    def n_inputs(self) -> int:
        return 3 * self.d + 1 + 2 * n_calendar_features(self.cycles) + self.n_exog

    def _inputs(self, delta, observed, level, gaps, now, before, x):
        parts = [delta, observed, level, np.log1p(gaps)[:, None]]
        parts += [calendar_features(now, self.cycles), calendar_features(before, self.cycles)]
        if self.n_exog:
            parts.append(x)
        return np.concatenate(parts, axis=1).astype(np.float32)


def standardised(x: Float[np.ndarray, "L e"] | None, mean, std) -> Float[np.ndarray, "L e"] | None:
    """Exogenous features `x` in units of their fitted `std` from `mean`, 0 where not observed."""
    return None if x is None else np.nan_to_num((x - mean) / std, nan=0.0)


def last_values(y: Float[np.ndarray, "L d"], before: Float[np.ndarray, " d"] | None = None) -> Float[np.ndarray, "L d"]:
    """Each column's last observed value at or before each step (NaN
    before its first observation), continuing from `before`."""
    frame = pd.DataFrame(np.asarray(y, np.float64))
    if before is not None:
        frame = pd.concat([pd.DataFrame(np.asarray(before, np.float64)[None]), frame], ignore_index=True)
        return frame.ffill().to_numpy()[1:]
    return frame.ffill().to_numpy()


@dataclasses.dataclass(frozen=True)
class SeriesScale:
    """How one series is scaled (per column, each (d,)): `spread` σ, the
    unit of changes and forecasts; `center` m and `width` w of the level."""

    spread: np.ndarray
    center: np.ndarray
    width: np.ndarray

    @classmethod
    def unknown(cls, d: int) -> "SeriesScale":
        """A scale of `d` columns, none known (NaN): `of(y, unknown(d))` is
        what the series' own data give."""
        return cls(*(np.full(d, np.nan),) * 3)

    @classmethod
    def neutral(cls, d: int) -> "SeriesScale":
        """Spread 1, center 0, width 1: the scale of a column no series has one of."""
        return cls(np.ones(d), np.zeros(d), np.ones(d))

    def filled(self, default: "SeriesScale") -> "SeriesScale":
        """This scale, `default`'s where a column has none (NaN)."""
        pick = lambda own, other: np.where(np.isfinite(own), own, other)  # noqa: E731
        return SeriesScale(pick(self.spread, default.spread), pick(self.center, default.center), pick(self.width, default.width))

    @classmethod
    def of(cls, y: Float[np.ndarray, "L d"], default: "SeriesScale | None" = None) -> "SeriesScale":
        """The scale of `y`; columns without one take `default`'s (or 1, 0, 1)."""
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column not observed yet: NaN, then `default`'s
            center = np.nanmean(y, axis=0) if len(y) else np.full(y.shape[1], np.nan)
            width = np.nanstd(y, axis=0) if len(y) else np.full(y.shape[1], np.nan)
        width = np.where(width > 0, width, np.nan)
        return cls(spread(y), center, width).filled(default or cls.neutral(y.shape[1]))


def spread(y: Float[np.ndarray, "L d"]) -> Float[np.ndarray, " d"]:
    """Each column's mean absolute change between consecutive observations
    of it (NaN where it has fewer than two, or never changes)."""
    out = np.full(y.shape[1], np.nan)
    for j in range(y.shape[1]):
        observed = y[~np.isnan(y[:, j]), j]
        if len(observed) > 1:
            change = np.mean(np.abs(np.diff(observed)))
            out[j] = change if change > 0 else np.nan
    return out


#: The whole series' spread σ counts as this many changes in the local spread.
PRIOR_CHANGES = 2.0


@dataclasses.dataclass(frozen=True)
class StepCarry:
    """Where a series' steps stand after its last observation: all that
    steps continuing the series need (`observation_steps(..., after=carry)`),
    so a forecaster can keep this instead of the history.

    - `time`: the last observation's time (seconds or index units).
    - `level`: (d,) each column's last observed value (NaN: never observed).
    - `total`, `count`: (d,) the local spread's decayed sums of absolute
      changes and of their count (`local_spreads`)."""

    time: float
    level: np.ndarray
    total: np.ndarray
    count: np.ndarray

    def spread(self, prior: Float[np.ndarray, " d"]) -> Float[np.ndarray, " d"]:
        """The local spread after the last observation (`local_spreads`)."""
        return (self.total + PRIOR_CHANGES * prior) / (self.count + PRIOR_CHANGES)


def local_spreads(
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    prior: Float[np.ndarray, " d"],
    memory: float,
    after: StepCarry | None = None,
) -> Float[np.ndarray, "L d"]:
    r"""Each column's local spread after each step,
    $s_k = (\sum_j w_{kj} |\Delta_j| + P\sigma) / (\sum_j w_{kj} + P)$ over
    the changes $\Delta_j$ between consecutive observations of the column
    up to $t_k$, $w_{kj} = e^{-(t_k - t_j)/\tau}$ ($\tau$ = `memory`, σ =
    `prior`, P = `PRIOR_CHANGES`); continuing the series of `after`, if given."""
    return _spread_sums(times, y, prior, memory, after)[0][0]


def step_carry(
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    prior: Float[np.ndarray, " d"],
    memory: float,
    after: StepCarry | None = None,
) -> StepCarry:
    """The `StepCarry` after observations `y` at `times` (continuing `after`)."""
    (_, levels, _), total, count = _spread_sums(times, y, prior, memory, after)
    return StepCarry(float(times[-1]), levels[-1], total, count)


def _spread_sums(times, y, prior, memory, after):
    """((local spreads, last values, those before each step), each (L, d),
    and after the last step: total, count)."""
    times = np.asarray(times, np.float64)
    d = y.shape[1]
    if after is None:
        total, count, start, before = np.zeros(d), np.zeros(d), times[0], np.full(d, np.nan)
    else:
        total, count, start, before = after.total, after.count, after.time, after.level
    levels = last_values(y, before)
    previous = np.concatenate([before[None], levels[:-1]])
    change = np.abs(y - previous)
    seen = np.isfinite(change)
    total = _decayed_sums(np.where(seen, change, 0.0), times, total, start, memory)
    count = _decayed_sums(seen.astype(np.float64), times, count, start, memory)
    out = (total + PRIOR_CHANGES * prior) / (count + PRIOR_CHANGES)
    return (out, levels, previous), total[-1], count[-1]


#: `_decayed_sums` rescales its running sum every this many time constants
#: (e^40 ≈ 2·10¹⁷: far from float64's range, and each term keeps its own
#: relative precision).
_BLOCK = 40.0


def _decayed_sums(values, times, initial, start, memory):
    r"""$S_k = S_{-1} e^{-(t_k - t_s)/\tau} + \sum_{j \le k} v_j e^{-(t_k - t_j)/\tau}$
    for every step k (values (L, d), the initial sums (d,) at time $t_s$ =
    `start`, τ = `memory`, infinite: plain sums): the recursion
    $S_k = S_{k-1} e^{-(t_k - t_{k-1})/\tau} + v_k$ vectorised, in blocks of
    `_BLOCK` time constants, each a cumulative sum scaled to its start."""
    if not np.isfinite(memory):
        return initial + np.cumsum(values, axis=0)
    s = (times - start) / memory
    out = np.empty_like(values)
    carry, origin = np.asarray(initial, np.float64), 0.0  # the sums at scaled time `origin`
    block = np.floor(s / _BLOCK)
    for b in np.unique(block):
        rows = block == b
        first = s[rows][0]
        scaled = np.cumsum(values[rows] * np.exp(s[rows] - first)[:, None], axis=0)
        out[rows] = carry * np.exp(origin - s[rows])[:, None] + scaled * np.exp(first - s[rows])[:, None]
        carry, origin = out[rows][-1], s[rows][-1]
    return out


def observation_steps(
    layout: StepLayout,
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    x: Float[np.ndarray, "L e"] | None,
    scale: SeriesScale,
    after: StepCarry | None = None,
) -> tuple[Float[np.ndarray, "L n_in"], Float[np.ndarray, " L"], Float[np.ndarray, "L d"]]:
    """Inputs (float32), gaps (model units, float32) and local spreads
    after each step, of a series' observations `y` at `times`; with
    `after`, the steps that continue the series it stands for (equal to the
    last steps of the whole series' `observation_steps`)."""
    times = np.asarray(times, np.float64)
    gaps = np.empty_like(times)
    gaps[0] = layout.first_gap if after is None else (times[0] - after.time) / layout.time_scale
    gaps[1:] = np.diff(times) / layout.time_scale
    (spreads, levels, previous), _, _ = _spread_sums(times, y, scale.spread, layout.memory, after)
    first = scale.spread if after is None else after.spread(scale.spread)
    before = np.concatenate([first[None], spreads[:-1]])
    observed = ~np.isnan(y)
    delta = np.nan_to_num((y - previous) / before, nan=0.0, posinf=0.0, neginf=0.0)
    level = np.clip(np.nan_to_num((levels - scale.center) / scale.width, nan=0.0), -5.0, 5.0)
    u = layout._inputs(delta, observed.astype(np.float64), level, gaps, times, times - gaps * layout.time_scale, x)
    return u, gaps.astype(np.float32), spreads


def query_steps(
    layout: StepLayout,
    times: Float[np.ndarray, " Q"],
    x: Float[np.ndarray, "Q e"] | None,
    origin_times: Float[np.ndarray, " Q"],
) -> tuple[Float[np.ndarray, "Q n_in"], Float[np.ndarray, " Q"]]:
    """Inputs and gaps (leads) of one forecast step per requested time, each
    from the state after its origin observation at `origin_times`."""
    times = np.asarray(times, np.float64)
    origin_times = np.asarray(origin_times, np.float64)
    leads = (times - origin_times) / layout.time_scale
    zeros = np.zeros((len(times), layout.d))
    return layout._inputs(zeros, zeros, zeros, leads, times, origin_times, x), leads.astype(np.float32)


def draw_queries(
    times: Float[np.ndarray, " L"],
    horizon: float,
    n_queries: int,
    rng: np.random.Generator,
    *,
    first: int = 0,
    stop: int | None = None,
) -> Int[np.ndarray, "L K"]:
    """For each origin k, `n_queries` observation indices q drawn uniformly
    (with replacement) among `max(k + 1, first) <= q < stop` with
    `times[q] - times[k] <= horizon`; -1 where an origin has none."""
    times = np.asarray(times, np.float64)
    L = len(times)
    stop = L if stop is None else stop
    lo = np.maximum(np.arange(L) + 1, first)
    hi = np.minimum(np.searchsorted(times, times + horizon, side="right"), stop)
    count = hi - lo
    draws = lo[:, None] + np.floor(rng.random((L, n_queries)) * np.maximum(count, 1)[:, None]).astype(np.int64)
    draws[count <= 0] = -1
    return draws


def query_examples(
    layout: StepLayout,
    times: Float[np.ndarray, " L"],
    y: Float[np.ndarray, "L d"],
    x: Float[np.ndarray, "L e"] | None,
    spreads: Float[np.ndarray, "L d"],
    queries: Int[np.ndarray, "L K"],
) -> tuple[Float[np.ndarray, "L KQ"], Float[np.ndarray, "L Kd"]]:
    """The forecast steps from every origin to its `queries` (from
    `draw_queries`), flattened per origin: `(steps, targets)` with
    `steps[k]` = K × (input, lead) and `targets[k]` = K × the scaled change
    $(y_q - \\ell_k)/s_k$ (`spreads` from `observation_steps`) (NaN where there is no query, no value at q, or
    no earlier value of the column)."""
    L, K = queries.shape
    origin = np.repeat(np.arange(L), K)
    none = queries.reshape(-1) < 0
    q = np.where(none, origin, queries.reshape(-1))  # no query: a zero lead, no target
    u, leads = query_steps(layout, times[q], None if x is None else x[q], times[origin])
    level = last_values(y)[origin]
    targets = (y[q] - level) / spreads[origin]
    targets[none] = np.nan
    steps = np.concatenate([u, leads[:, None]], axis=1)
    steps[none] = 0.0
    steps = steps.reshape(L, -1)
    return steps.astype(np.float32), targets.reshape(L, -1).astype(np.float32)
