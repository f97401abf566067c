"""One series as the forecaster knows it (`SeriesState`), and what the
fits in memory and from Parquet check and pool over their series alike."""

from __future__ import annotations

import dataclasses

import numpy as np

from ._steps import SeriesScale, StepCarry, StepLayout, step_carry


@dataclasses.dataclass(frozen=True)
class SeriesState:
    """One series as the forecaster knows it: observation times, values in
    original units, standardised exogenous features, its `SeriesScale`, and
    the network state after its last observation.

    `carry` None: the whole history is kept. A `StepCarry` (a fit from
    Parquet): only where the series stands after its last observation —
    `times` (1,) that observation's time, `y` (1, d) each column's last
    observed value, `x` (1, e) — so forecasts and updates go forward from
    it, and memory stays per series, not per observation."""

    times: np.ndarray  # (L,)
    y: np.ndarray  # (L, d), NaN = not observed
    x: np.ndarray | None  # (L, e)
    scale: SeriesScale
    state: tuple  # per block, complex (P,)
    carry: StepCarry | None = None

    @classmethod
    def at_end(cls, layout: StepLayout, times, y, x, scale: SeriesScale, state, after: StepCarry | None = None):
        """The record that keeps only the end of observations `y` at `times`
        (continuing `after`) with the network `state` after them."""
        carry = step_carry(times, y, scale.spread, layout.memory, after)
        return cls(times[-1:], carry.level[None], None if x is None else x[-1:], scale, state, carry)


def where(sid) -> str:
    return "" if sid is None else f"series {sid!r}: "


#: The error of a fit without a single training example.
TOO_SHORT = "y is too short to train on: no series has an observation after another within the horizon"


def check_observed(sid, values: np.ndarray, columns) -> None:
    """A `ValueError` naming the series and the column of `values` (L, d)
    that has no observed value."""
    empty = np.isnan(values).all(axis=0)
    if empty.any():
        raise ValueError(f"{where(sid)}column {columns[np.flatnonzero(empty)[0]]!r} of y has no observed value")


def exog_scaling(mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The centre and unit of exogenous features (e,) from their pooled mean
    and standard deviation: a constant or never observed feature keeps unit 1."""
    return mean, np.where(std > 0, std, 1.0)


def pooled_scale(owns: list[SeriesScale]) -> SeriesScale:
    """The scale of series without their own (`SeriesScale.unknown` where a
    column has fewer than two observations, or is constant): each field's
    median over the series that have it, else (1, 0, 1)."""
    d = len(owns[0].spread)
    with np.errstate(all="ignore"):
        pooled = [np.nanmedian(np.stack([getattr(c, f) for c in owns]), axis=0) for f in ("spread", "center", "width")]
    fallback = (np.ones(d), np.zeros(d), np.ones(d))
    return SeriesScale(*(np.where(np.isfinite(p), p, f) for p, f in zip(pooled, fallback)))
