"""Early stopping that waits for the warm-up and ignores tiny gains."""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass
class EarlyStopping:
    """Stop after `patience` epochs without an improvement of more than
    `tol` (relative to the best score so far; lower is better), counting only
    the epochs after the first `start` (the warm-up: a warm-up that starts at
    a learning rate of 0 often plateaus, and a stop then would end training
    before it began). `patience` None never stops.

    `update` returns True when the epoch's score is the lowest so far: the
    model to keep, whether or not the gain counts against `tol`.

    >>> stopping = EarlyStopping(patience=2, tol=0.1, start=1)
    >>> [stopping.update(e, s) for e, s in enumerate([5.0, 5.0, 4.9, 4.8])]
    [True, False, True, True]
    >>> stopping.should_stop  # 4.9 and 4.8 gained < 10 % on 5.0
    True
    """

    patience: int | None
    tol: float = 0.0
    start: int = 0
    best: float = math.inf
    reference: float = math.inf  # the score the last counted improvement reached
    since_improvement: int = 0

    def update(self, epoch: int, score: float) -> bool:
        if score < self.reference - self.tol * abs(self.reference) or not math.isfinite(self.reference):
            self.reference, self.since_improvement = score, 0
        elif epoch >= self.start:
            self.since_improvement += 1
        lowest = score < self.best
        if lowest:
            self.best = score
        return lowest

    @property
    def should_stop(self) -> bool:
        return self.patience is not None and self.since_improvement >= self.patience
