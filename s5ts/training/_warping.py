"""Time warps: training batches that see each series' clock run a little
faster in some stretches and slower in others.

The elapsed time of each step (its gap, under `time_handling="gaps"`) is
multiplied by exp(σ f(k)), where f is a piecewise-linear function of the
step index k through `knots` standard normal values spread evenly over the
row's observed steps (its padding, and where a batch is cut, change
nothing): smooth, so neighbouring gaps stretch alike and a
series keeps its order and its shape, with a median factor of 1. Each
series draws its knots afresh on every pass over the training data, by
its position, from a generator of that pass (rows packed with several
series draw per row); evaluation and prediction never warp. Only what the network reads as time changes
(`elapsed`, the keys observation dropout adds up): under
`time_handling="drop"` there is none, and a warp changes nothing.

A model that sees the gaps learns every time scale from the training
series' own; where those are few, a warp shows it the same series on
nearby clocks (docs/estimators.md, "Time warps").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class TimeWarp:
    """How training batches warp their series' time: `strength` σ (0: no
    warp) and the `knots` of the smooth log-factor (see the module
    docstring)."""

    strength: float = 0.0
    knots: int = 4

    def __post_init__(self):
        if not (math.isfinite(self.strength) and self.strength >= 0):
            raise ValueError(f"time_warp must be a finite number >= 0, got {self.strength!r}")
        if self.knots < 2:
            raise ValueError(f"a time warp needs at least 2 knots, got {self.knots!r}")

    @property
    def warps(self) -> bool:
        return self.strength > 0

    def seed(self, rng: np.random.Generator) -> int | None:
        """The warps' seed for a whole fit: one draw from the fit's `rng`
        before anything else draws from it (None without warps: nothing is
        drawn). The knots of each pass then come from (seed, epoch, pass)
        alone (`pass_generator`): not from how the batches drew theirs, so
        a streamed fit warps as the same fit in memory does, and a fit
        resumed from a checkpoint as the one it continues."""
        return int(rng.integers(2**63)) if self.warps else None

    @staticmethod
    def pass_generator(seed: int | None, epoch: int, n: int) -> np.random.Generator | None:
        """The generator of pass `n` of `epoch` (None without a seed)."""
        return None if seed is None else np.random.default_rng([seed, epoch, n])

    def factors(self, observed: np.ndarray, length: int, knots: np.ndarray) -> np.ndarray:
        """(rows, length) float64: each row's factor at each step,
        exp(σ f(k)), f piecewise linear through the row's `knots` (rows,
        `self.knots`), standard normal draws, placed evenly over its
        `observed` steps (rows,), the first at its first step and the last
        at its last; past them f stays at the last knot. The padding of a
        batch, and where it is cut, changes nothing."""
        span = np.maximum(np.asarray(observed, dtype=np.float64) - 1.0, 1.0)[:, None]
        position = np.minimum(np.arange(length)[None, :] * (self.knots - 1) / span, self.knots - 1)
        left = np.minimum(np.floor(position).astype(np.int64), self.knots - 2)
        fraction = position - left
        rows = np.arange(len(knots))[:, None]
        field = knots[rows, left] * (1.0 - fraction) + knots[rows, left + 1] * fraction
        return np.exp(self.strength * field)

    def apply(self, batch: dict, knots: np.ndarray, *, elapsed: tuple[str, ...]) -> dict:
        """`batch` (numpy) with its `elapsed` arrays, (B, L) or (B, L, 1),
        multiplied by the `factors` of its rows' `knots` (B, `self.knots`).
        A new dict; the input is not modified."""
        if not self.warps or not elapsed:
            return batch
        mask = np.asarray(batch["mask"], dtype=bool)
        factors = self.factors(mask.sum(axis=1), mask.shape[1], knots)
        out = dict(batch)
        for key in elapsed:
            values = np.asarray(batch[key])
            scale = factors.reshape(factors.shape + (1,) * (values.ndim - 2))
            out[key] = (values * scale).astype(values.dtype)
        return out

    def batches(self, batches, rng: np.random.Generator | None, *, n_series: int, rows: int, mine: slice,
                elapsed: tuple[str, ...]):
        """The (positions, batch) pairs of `batches` (this process's rows
        `mine` of batches of `rows` rows), each batch warped (`apply`) with
        knots from `rng` (`pass_generator`; None: not warped), one pass over
        the data. Each series draws its knots once a pass, by its position, so a series is warped
        alike however the batches are laid out (in memory, streamed, in
        chunks) and on every process; rows packed with several series
        (`"segments"`) draw theirs per row, in batch order, for the whole
        batch."""
        if rng is None or not elapsed:
            yield from batches
            return
        per_series = rng.standard_normal((n_series, self.knots))
        for positions, batch in batches:
            if "segments" in batch:
                knots = rng.standard_normal((rows, self.knots))[mine]
            else:
                row_positions = np.full(rows, -1, np.int64)
                given = np.asarray(positions, dtype=np.int64)
                row_positions[: len(given)] = given
                local = row_positions[mine]  # -1: a row of padding, nothing to warp
                knots = np.where((local >= 0)[:, None], per_series[np.maximum(local, 0)], 0.0)
            yield positions, self.apply(batch, knots, elapsed=elapsed)
