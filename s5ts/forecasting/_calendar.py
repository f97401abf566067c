r"""Calendar features: Fourier terms of the absolute time, as Prophet does.

A datetime series gets, for each cycle its span and resolution support
(Prophet's rules: yearly with at least two years of data, weekly when
observations are less than a week apart and span two weeks, daily when they
are less than a day apart and span two days),

$$\big[\sin(2\pi k t / T),\ \cos(2\pi k t / T)\big]_{k=1..K}$$

for the cycle's period $T$ (seconds) and order $K$. Pure numpy.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from jaxtyping import Float

DAY = 86_400.0
WEEK = 7 * DAY
YEAR = 365.25 * DAY

#: Fourier orders per cycle: fewer than Prophet's (10, 3, 4), since the
#: network combines the terms non-linearly.
ORDERS = {"yearly": 3, "weekly": 2, "daily": 2}
PERIODS = {"yearly": YEAR, "weekly": WEEK, "daily": DAY}


@dataclasses.dataclass(frozen=True)
class Cycle:
    name: str
    period: float  # seconds
    order: int


def choose_cycles(
    times: list[np.ndarray] | None, time_kind: str, calendar="auto", *, extent: tuple[float, float] | None = None
) -> tuple[Cycle, ...]:
    """The cycles for series at `times` (seconds; one array per series), or
    of the `extent` `(span, resolution)` they were summarised by (times
    None; see `cycles_for`).

    `calendar`: `"auto"` (Prophet's rules, datetime times only), `None` (no
    calendar features) or a sequence of cycle names (`"yearly"`,
    `"weekly"`, `"daily"`), which then apply to any datetime times.
    """
    if calendar is None or time_kind != "datetime":
        if calendar not in (None, "auto") and time_kind != "datetime":
            raise ValueError(f"calendar={calendar!r} needs datetime times, but the series have {time_kind} times")
        return ()
    if calendar != "auto":
        unknown = sorted(set(calendar) - set(ORDERS))
        if unknown:
            raise ValueError(f"unknown calendar cycles {unknown}; choose from {sorted(ORDERS)}")
        return tuple(Cycle(name, PERIODS[name], ORDERS[name]) for name in ORDERS if name in calendar)
    if extent is not None:
        return cycles_for(*extent)
    nonempty = [t for t in times if len(t)]
    if not nonempty:
        return ()
    span = max(t[-1] for t in nonempty) - min(t[0] for t in nonempty)
    diffs = [np.diff(t) for t in nonempty if len(t) > 1]
    resolution = float(np.median(np.concatenate(diffs))) if diffs else np.inf
    return cycles_for(span, resolution)


def cycles_for(span: float, resolution: float) -> tuple[Cycle, ...]:
    """Prophet's rules (`choose_cycles` with `"auto"`) for datetime series
    spanning `span` seconds in all, with a median gap of `resolution`."""
    chosen = []
    if span >= 2 * YEAR:
        chosen.append("yearly")
    if resolution < WEEK and span >= 2 * WEEK:
        chosen.append("weekly")
    if resolution < DAY and span >= 2 * DAY:
        chosen.append("daily")
    return tuple(Cycle(name, PERIODS[name], ORDERS[name]) for name in chosen)


def n_calendar_features(cycles: tuple[Cycle, ...]) -> int:
    return 2 * sum(c.order for c in cycles)


def calendar_features(times: Float[np.ndarray, " L"], cycles: tuple[Cycle, ...]) -> Float[np.ndarray, "L F"]:
    """Fourier terms of `times` (seconds since the epoch), (L, 2·ΣK) float64."""
    times = np.asarray(times, np.float64)
    columns = []
    for cycle in cycles:
        # The phase in [0, 1) first: seconds since 1970 times 2πk lose digits.
        phase = np.mod(times, cycle.period) / cycle.period
        for k in range(1, cycle.order + 1):
            columns += [np.sin(2 * np.pi * k * phase), np.cos(2 * np.pi * k * phase)]
    if not columns:
        return np.zeros((len(times), 0))
    return np.stack(columns, axis=1)
