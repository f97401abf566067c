"""Observation dropout: training batches that see a random subset of each
series' observations.

An irregular series is one random subset of the times its quantity could
have been observed at; thinning it again at random gives another plausible
sample of the same series with the same target. Each training batch drops
each observation with probability `rate`, independently, keeping at least
one per series. The kept observations move to the front of their row (the
padded length, and so the compiled step, stays the same), and a dropped
observation's elapsed time is added to the next kept one, so that the gaps
still add up to the time between kept observations. The first kept
observation takes the row's first gap (`first_gap`, as every series'
first observation does at prediction). In a packed batch (a `"segments"`
array numbering each step's series, `SequenceNetwork.packed`) every series
of a row keeps at least one observation, elapsed time is never carried
from one series to the next, and each series' first kept observation takes
that series' first gap.

A model trained on series thinned to a budget predicts each series the
budget thins as the mean of its outputs over `PREDICTION_COPIES` copies
thinned the same way (`copies_kept`): the whole series is longer, with
shorter gaps, than anything it was trained on.
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np

#: The batch arrays with one entry per step (besides `"u"`, `"gaps"`,
#: `"mask"`), compacted with them when present.
_STEP_KEYS = ("extra", "segments")
#: Those that are per step only when the targets are (`Sequences.per_step`).
_PER_STEP_TARGET_KEYS = ("y", "weights")


def thin_observations(
    batch: dict[str, np.ndarray],
    rate: float,
    rng: np.random.Generator,
    *,
    per_step: bool = False,
    elapsed: tuple[str, ...] = ("gaps",),
) -> dict[str, np.ndarray]:
    """Drop each observed step of a padded batch with probability `rate`:
    `keep_observations(batch, draw_kept(batch["mask"], rate, rng), ...)`.

    **Arguments:**

    - `batch`: a padded batch (`padded_batch`): `"u"` (B, L, D), `"gaps"`
      (B, L), `"mask"` (B, L) bool, optionally `"extra"` (B, L, E) and the
      targets `"y"` / `"weights"`, per step (B, L, ...) when `per_step`.
    - `rate`: the probability that an observation is dropped, in [0, 1).
    - `rng`: draws which observations are dropped.
    - `per_step`, `elapsed`: as in `keep_observations`.

    **Returns:** a new batch of the same shapes and dtypes (the input is
    not modified); rows without observations (padding rows) stay empty.
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must be in [0, 1), got {rate!r}")
    if rate == 0.0:
        return dict(batch)
    kept = draw_kept(np.asarray(batch["mask"], dtype=bool), rate, rng, batch.get("segments"))
    return keep_observations(batch, kept, per_step=per_step, elapsed=elapsed)


def draw_kept(
    mask: np.ndarray, rate: float | np.ndarray, rng: np.random.Generator, segments: np.ndarray | None = None
) -> np.ndarray:
    """Which observed steps to keep, (B, L) bool: each with probability
    1 − `rate` (a number, or an array that broadcasts to (B, L)), and at
    least one (a random one) of every row that has one (with `segments`
    (B, L), of every series of a packed row). Padded steps
    (`mask` False) are never kept."""
    kept = mask & (rng.random(mask.shape) >= rate)
    groups = np.arange(mask.shape[0])[:, None] if segments is None else _series_of(segments, mask)
    groups = np.broadcast_to(groups, mask.shape)
    observed = np.unique(groups[mask])
    empty = np.setdiff1d(observed, np.unique(groups[kept]))
    for group in empty:
        kept.flat[rng.choice(np.flatnonzero(mask & (groups == group)))] = True
    return kept


def _series_of(segments: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A number per (row, series) of a packed batch's steps, (B, L) int64."""
    span = int(segments.max(initial=0)) + 1
    return np.where(mask, np.arange(mask.shape[0])[:, None] * span + segments, -1)


def keep_observations(
    batch: dict[str, np.ndarray],
    kept: np.ndarray,
    *,
    per_step: bool = False,
    elapsed: tuple[str, ...] = ("gaps",),
) -> dict[str, np.ndarray]:
    """The batch with only the `kept` steps, (B, L) bool, moved to the front
    of their rows in their order; the rest is padding (0, mask False).

    **Arguments:**

    - `batch`, `kept`: a padded batch, and a subset of its `"mask"`.
    - `per_step`: whether `"y"` and `"weights"` have one entry per step.
    - `elapsed`: the keys whose values are elapsed time, (B, L) or
      (B, L, 1): a dropped step's value is added to the next kept step's,
      and the first kept step takes the row's first value (the gap before
      a series' first observation). `("gaps",)` for `time_handling="gaps"`,
      `("extra",)` for `"append"`, `()` for `"drop"` (every gap stays 1).
    """
    mask = np.asarray(batch["mask"], dtype=bool)
    if (kept & ~mask).any():
        raise ValueError("kept must be a subset of the batch's mask")
    rows, length = mask.shape
    # Kept steps first, in their order; the dropped ones after them, masked.
    order = np.argsort(~kept, axis=1, kind="stable")
    new_mask = np.arange(length)[None, :] < kept.sum(axis=1, keepdims=True)

    def expand(a: np.ndarray, values: np.ndarray) -> np.ndarray:
        return a.reshape(rows, length, *([1] * (values.ndim - 2)))

    def compact(values: np.ndarray) -> np.ndarray:
        moved = np.take_along_axis(values, expand(order, values), axis=1)
        return np.where(expand(new_mask, values), moved, np.zeros((), values.dtype))

    segments = batch.get("segments")
    if segments is None:
        starts = np.zeros((rows, length), np.int64)  # one series a row, from step 0
        first_kept = np.broadcast_to(np.arange(length)[None, :] == 0, (rows, length))
    else:
        segments = np.asarray(segments)
        index = np.arange(length)[None, :]
        changed = np.concatenate([np.ones((rows, 1), bool), segments[:, 1:] != segments[:, :-1]], axis=1)
        starts = np.maximum.accumulate(np.where(changed, index, 0), axis=1)  # each step's series' first step
        kept_segments = np.take_along_axis(segments, order, axis=1)
        first_kept = np.concatenate(
            [np.ones((rows, 1), bool), kept_segments[:, 1:] != kept_segments[:, :-1]], axis=1
        )

    def merge(values: np.ndarray) -> np.ndarray:
        # The time from a row's first step to each kept one, differenced;
        # a series' first kept step takes that series' first value.
        total = np.cumsum(np.where(expand(mask, values), values, 0), axis=1, dtype=np.float64)
        merged = np.diff(compact(total), axis=1, prepend=0.0)
        first = np.take_along_axis(values, expand(np.take_along_axis(starts, order, axis=1), values), axis=1)
        merged = np.where(expand(first_kept, values), first, merged)
        return np.where(expand(new_mask, values), merged, 0).astype(values.dtype)

    out = dict(batch)
    for key in _step_keys(batch, per_step):
        if key != "mask":
            values = np.asarray(batch[key])
            out[key] = merge(values) if key in elapsed else compact(values)
    out["mask"] = new_mask
    return out


def _step_keys(batch: dict, per_step: bool) -> list[str]:
    """The keys of `batch` with one entry per step."""
    keys = ["u", "gaps", "mask", *(k for k in _STEP_KEYS if k in batch)]
    return keys + [k for k in _PER_STEP_TARGET_KEYS if k in batch] if per_step else keys


#: How many standard deviations above its mean a row's count of kept
#: observations may be before a thinned batch keeps its whole length
#: (`Thinning.kept_bound`): about one row in three million goes past 5.
KEPT_MARGIN = 5.0


@dataclasses.dataclass(frozen=True)
class Thinning:
    """How training batches thin their series (observation dropout): each
    observation is dropped with probability `rate`, and with a `budget` a
    series of more than `budget / (1 - rate)` observations is thinned
    further, to about `budget` of them (the estimators'
    `observation_dropout="auto"`, docs/estimators.md)."""

    rate: float = 0.0
    budget: int | None = None

    def __post_init__(self):
        if not 0.0 <= self.rate < 1.0:
            raise ValueError(f"observation_dropout must be in [0, 1), got {self.rate!r}")
        if self.budget is not None and self.budget < 1:
            raise ValueError(f"the budget of kept observations must be at least 1, got {self.budget!r}")

    @property
    def thins(self) -> bool:
        return self.rate > 0 or self.budget is not None

    def rates(self, lengths) -> np.ndarray:
        """The probability that an observation of a series of each of
        `lengths` observations is dropped."""
        lengths = np.asarray(lengths, dtype=np.float64)
        if self.budget is None:
            return np.full(lengths.shape, self.rate)
        return np.maximum(self.rate, 1.0 - self.budget / np.maximum(lengths, 1.0))

    def past_rate(self, lengths) -> np.ndarray:
        """(n,) bool: which series of `lengths` observations the budget
        thins beyond the rate (none without a budget); a prediction runs
        them as thinned copies (`copies_kept`)."""
        lengths = np.asarray(lengths)
        return (self.rates(lengths) > self.rate) & (lengths > 0)

    def kept_bound(self, lengths) -> int:
        """The steps a thinned row holding series of `lengths` observations
        keeps at most but for a chance in millions: the mean count kept plus
        `KEPT_MARGIN` standard deviations, rounded up to a multiple of 8, at
        most the row's length (`cut_batch`). For a length bucket, the bound
        of one series as long as the bucket holds for every row of it (the
        mean and the spread both grow with the length), so its batches share
        one shape, one compiled training step.

        >>> Thinning(0.3).kept_bound([730]), Thinning(0.3).kept_bound([64]), Thinning(0.0).kept_bound([730])
        (576, 64, 730)
        >>> Thinning(0.3, budget=128).kept_bound([730]), Thinning(0.3, budget=128).kept_bound([100])
        (184, 96)
        """
        lengths = np.asarray(lengths, dtype=np.float64)
        rates = self.rates(lengths)
        mean = float(np.sum((1.0 - rates) * lengths))
        spread = KEPT_MARGIN * math.sqrt(float(np.sum(lengths * rates * (1.0 - rates))))
        return min(int(lengths.sum()), 8 * math.ceil((mean + spread) / 8))


def cut_batch(batch: dict[str, np.ndarray], kept: np.ndarray, cut: int, *, per_step: bool = False) -> dict:
    """A batch thinned by `keep_observations` without its steps past `cut`
    (`Thinning.kept_bound`), which after the kept observations moved to
    the front hold padding alone: the network's scans and dots run over
    fewer steps and compute the same. `kept` (B, L) bool: the steps kept in
    the whole batch (over every process's rows, so every process cuts
    alike). A batch with a row that kept more than `cut` is returned whole."""
    length = kept.shape[1]
    if cut >= length or int(kept.sum(axis=1).max(initial=0)) > cut:
        return batch
    return {**batch, **{key: np.asarray(batch[key])[:, :cut] for key in _step_keys(batch, per_step)}}


#: How many thinned copies of a series that the budget thins a prediction
#: averages over (`copies_kept`; docs/estimators.md, "Long series").
PREDICTION_COPIES = 8


def copies_kept(batch: dict[str, np.ndarray], thinning: Thinning, copies: int = PREDICTION_COPIES) -> np.ndarray:
    """The observations each of `copies` thinned copies of a padded
    batch's series keeps, (copies, B, L) bool.

    A row that the budget thins (`Thinning.past_rate`) keeps each
    observation with the training's probability, at least one, drawn from
    a generator seeded by the row's own inputs and gaps (NaN read as 0, so
    are −0.0 and 0.0 alike), so a series' copies do not depend on the
    batch it is in or on the call; and at most `Thinning.kept_bound` of the
    row's series (the first ones kept, where a copy draws more: a chance in
    millions), so copies fit the steps `cut_batch` keeps. Every other row
    keeps all its observations in every copy (a prediction runs it whole)."""
    mask = np.asarray(batch["mask"], dtype=bool)
    lengths = mask.sum(axis=1)
    rates = thinning.rates(lengths)
    kept = np.repeat(mask[None], copies, axis=0)
    for row in np.flatnonzero(thinning.past_rate(lengths)):
        n = int(lengths[row])
        values = (np.nan_to_num(np.asarray(batch[key], np.float64)[row, :n]) + 0.0 for key in ("u", "gaps"))
        rng = np.random.default_rng([zlib.crc32(np.ascontiguousarray(v).tobytes()) for v in values])
        drawn = draw_kept(np.ones((copies, n), bool), float(rates[row]), rng)
        kept[:, row, :n] = drawn & (np.cumsum(drawn, axis=1) <= thinning.kept_bound([n]))
    return kept
