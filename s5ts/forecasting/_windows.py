"""The forecaster's training examples, one series at a time. Pure numpy.

A series gives training windows of at most `window` observation steps over
its first part, each origin with `n_queries` leads drawn inside that part
(`draw_queries`, `query_examples`), and, when the last `validation_fraction`
of its time span holds observations, one held-out window: the last
`window` steps before that tail, its queries inside the tail.

The draws of series `position` come from its own generator (seeded by the
fit's seed and the position), so the same windows are built whether the
series are held in memory or streamed from files in any order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from jaxtyping import Float

from ..data import CapOnGrid, bucket_length
from ..training import Sequences
from ._steps import SeriesScale, StepLayout, draw_queries, observation_steps, query_examples

#: Leads drawn per origin of the held-out tail (at least `n_queries`): its
#: errors calibrate the intervals and choose the epoch, and cost one forward
#: pass an epoch, so more are cheap (docs/forecasting.md, "Defaults").
VALIDATION_QUERIES = 16

#: How the windows' longest bucket is capped (`s5ts.data.LengthCap`): at
#: the next of four lengths per octave above the longest window, so fits
#: whose longest windows round up to the same length share the compiled
#: programs, while a panel of short series pays for little padding. Every
#: padded step of a window costs its `n_queries` query steps too: powers
#: of two padded issue 34's panel of 150 series (windows of at most 37
#: steps) to 64, and an epoch of its training steps took 2.2x as long as at 40
#: (docs/performance.md).
WINDOW_CAP = CapOnGrid()

#: Fewest batches per training epoch: the windows of few or short series
#: are repeated, each copy with fresh draws of its queries, up to this many.
MIN_BATCHES_PER_EPOCH = 4


@dataclasses.dataclass(frozen=True)
class WindowPlan:
    """How a fit cuts its series into examples: at most `window` steps per
    window, `n_queries` leads per origin up to `lead` (seconds or index
    units), each series' windows `copies` times, draws seeded by `seed`."""

    window: int
    n_queries: int
    lead: float
    copies: int
    seed: int

    def examples(
        self,
        layout: StepLayout,
        times: Float[np.ndarray, " L"],
        y: Float[np.ndarray, "L d"],
        x: Float[np.ndarray, "L e"] | None,
        scale: SeriesScale,
        stop: int,
        position: int,
        *,
        training: bool = True,
    ) -> tuple[list, tuple | None]:
        """(training windows, the held-out window or None) of series
        `position` whose first `stop` observations are trained on: each
        window `(inputs, gaps, queries, targets)` as `query_examples` lays
        them out; windows without a target are left out (`training`
        False: the held-out window alone, the training list empty)."""
        W, K = self.window, self.n_queries
        rng = np.random.default_rng([self.seed, position])
        u, gaps, spreads = observation_steps(layout, times, y, x, scale)
        train = []
        for _ in range(self.copies if training else 0):
            queries = draw_queries(times, self.lead, K, rng, stop=stop)
            steps, targets = query_examples(layout, times, y, x, spreads, queries)
            for a in window_starts(stop, W):
                window = slice(a, min(a + W, stop))
                if np.isfinite(targets[window]).any():
                    train.append((u[window], gaps[window], steps[window], targets[window]))
        held_out = None
        if stop < len(times):
            draws = np.random.default_rng(position)
            queries = draw_queries(times, self.lead, max(K, VALIDATION_QUERIES), draws, first=stop)
            steps, targets = query_examples(layout, times, y, x, spreads, queries)
            window = slice(max(stop - W, 0), stop)
            if np.isfinite(targets[window]).any():
                held_out = (u[window], gaps[window], steps[window], targets[window])
        return train, held_out


def held_out_start(times: Float[np.ndarray, " L"], validation_fraction: float) -> int:
    """The first observation of the held-out tail (the last
    `validation_fraction` of the time span); `len(times)` (nothing held
    out) when that would leave fewer than 2 observations to train on or
    none to hold out."""
    span = times[-1] - times[0]
    stop = int(np.searchsorted(times, times[-1] - validation_fraction * span, side="right"))
    return stop if 2 <= stop < len(times) and validation_fraction > 0 else len(times)


def window_starts(length: int, window: int) -> list[int]:
    """Starts of windows of `window` steps over `length` steps, half
    overlapping, the last ending at the end."""
    if length <= window:
        return [0]
    starts = list(range(0, length - window + 1, window // 2))
    if starts[-1] != length - window:
        starts.append(length - window)
    return starts


def copies_for(stops, window: int, batch_size: int) -> int:
    """How many times each series' windows are repeated so that an epoch
    takes at least `MIN_BATCHES_PER_EPOCH` batches (`stops`: each series'
    `held_out_start`)."""
    windows = sum(len(window_starts(int(s), window)) for s in stops)
    return max(1, -(-MIN_BATCHES_PER_EPOCH * batch_size // windows))


def query_origins(held_out, n_inputs: int) -> int | None:
    """The most origins with a query (a positive lead) in any window of
    `held_out` (`Sequences` in memory; queries of `n_inputs` features and
    a lead), as a power of two (at least 8): what validation computes
    queries for (`MultiHorizonNetwork`'s `query_origins`). None without
    held-out windows or for windows streamed from files (not read here)."""
    if not isinstance(held_out, Sequences):
        return None
    counts = [np.any(w.reshape(len(w), -1, n_inputs + 1)[..., -1] > 0, axis=1).sum() for w in held_out.extra]
    return bucket_length(max(max(counts), 1))


def as_sequences(windows: list) -> Sequences:
    """The windows as `Sequences` for `train`, per step, the longest
    bucket capped on the grid of four lengths per octave (`WINDOW_CAP`)."""
    return Sequences(
        inputs=tuple(w[0] for w in windows),
        gaps=tuple(w[1] for w in windows),
        extra=tuple(w[2] for w in windows),
        targets=tuple(w[3] for w in windows),
        per_step=True,
        cap_length=WINDOW_CAP,
    )
