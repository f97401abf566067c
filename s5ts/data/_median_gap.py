"""The median gap between observations (the models' time scale) over data
seen chunk by chunk.

An exact median needs every gap. `MedianGap` keeps them while there are at
most `exact_limit` (2²² by default: 32 MiB), so its median is then exactly
`time_scale_from`'s; past that it moves them into a histogram of log₂(gap)
with `BINS_PER_OCTAVE` bins per octave, whose median is the geometric centre
of the bin holding it: a relative error of at most 2^(1/(2·1024)) − 1 ≈
3.4·10⁻⁴, in memory independent of the number of gaps (1 MiB).
"""

from __future__ import annotations

import numpy as np

#: Histogram resolution: bins per factor of two.
BINS_PER_OCTAVE = 1024
#: log₂ range of the histogram (gaps outside go to its end bins).
LOG2_RANGE = (-64.0, 64.0)
#: Gaps kept exactly before switching to the histogram.
EXACT_LIMIT = 1 << 22

#: The histogram median's largest relative error.
RELATIVE_ERROR = 2.0 ** (1.0 / (2 * BINS_PER_OCTAVE)) - 1.0


class MedianGap:
    """Accumulates positive gaps (`add`); `median()` is the time scale.

    >>> m = MedianGap()
    >>> m.add(np.array([1.0, 3.0, 2.0]))
    >>> m.median()
    2.0
    """

    def __init__(self, exact_limit: int = EXACT_LIMIT):
        self.exact_limit = int(exact_limit)
        self._exact: list[np.ndarray] | None = []
        self._count = 0
        self._histogram: np.ndarray | None = None

    @property
    def exact(self) -> bool:
        """Whether `median()` is exact (no histogram yet)."""
        return self._exact is not None

    def add(self, gaps: np.ndarray) -> None:
        gaps = np.asarray(gaps, np.float64).reshape(-1)
        if not gaps.size:
            return
        self._count += gaps.size
        if self._exact is not None:
            self._exact.append(gaps)
            if self._count > self.exact_limit:
                self._to_histogram()
            return
        self._histogram += self._binned(gaps)

    def merge(self, other: "MedianGap") -> None:
        """Add every gap `other` holds (a process's share of the data): the
        median is then the one of all the gaps added to either, as if they
        had been added to one (exact up to `exact_limit` in all).

        >>> a, b = MedianGap(), MedianGap()
        >>> a.add(np.array([1.0, 5.0])); b.add(np.array([2.0]))
        >>> a.merge(b); a.median()
        2.0
        """
        if other._exact is not None:
            for gaps in other._exact:
                self.add(gaps)
            return
        if self._exact is not None:
            self._exact.append(np.zeros(0))
            self._to_histogram()
        self._count += other._count
        self._histogram += other._histogram

    def _to_histogram(self) -> None:
        gaps, self._exact = np.concatenate(self._exact), None
        self._histogram = np.zeros(int((LOG2_RANGE[1] - LOG2_RANGE[0]) * BINS_PER_OCTAVE), np.int64)
        self._histogram += self._binned(gaps)

    def _binned(self, gaps: np.ndarray) -> np.ndarray:
        index = np.floor((np.log2(gaps) - LOG2_RANGE[0]) * BINS_PER_OCTAVE).astype(np.int64)
        return np.bincount(np.clip(index, 0, self._histogram.size - 1), minlength=self._histogram.size)

    def median(self) -> float:
        """The median gap (1.0 when no gap was added, as `time_scale_from`)."""
        if self._count == 0:
            return 1.0
        if self._exact is not None:
            return float(np.median(np.concatenate(self._exact)))
        cumulative = np.cumsum(self._histogram)
        k = int(np.searchsorted(cumulative, (self._count + 1) / 2.0))
        return float(2.0 ** (LOG2_RANGE[0] + (k + 0.5) / BINS_PER_OCTAVE))
