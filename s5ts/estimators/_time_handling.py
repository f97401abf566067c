"""How observation times become the network's inputs (the estimators'
`time_handling`), one small final class each, mapped once from the
scikit-learn surface's string (`time_handling_for`):

- `Gaps()` (`"gaps"`, S5): each step's gap is its own discretisation step,
  Λ̄ₖ = exp(ΛΔgₖ);
- `Drop()` (`"drop"`, the paper's S5-drop): every gap is 1, the times are
  thrown away;
- `Append()` (`"append"`, S5-append): every gap is 1 and the real gap is
  one more input channel, appended after the encoder.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar, final

import numpy as np

#: `observation_dropout="auto"`: the observations a training batch keeps
#: of a long series, about (docs/estimators.md, "Observation dropout").
AUTO_OBSERVATION_BUDGET = 128
#: `time_warp="auto"`: the σ of the training batches' time warps
#: (`s5ts.training.TimeWarp`) where the training series have a median of
#: at least `AUTO_TIME_WARP_MIN_LENGTH` steps, under a time handling that
#: reads the gaps (docs/estimators.md, "Time warps").
AUTO_TIME_WARP = 0.2
AUTO_TIME_WARP_MIN_LENGTH = 20


class AbstractTimeHandling(abc.ABC):
    """What a time handling decides (see the module docstring)."""

    #: Its name at the scikit-learn surface.
    name: ClassVar[str]
    #: The batch arrays that hold elapsed time (what observation dropout adds
    #: up over a dropped step).
    elapsed: ClassVar[tuple[str, ...]]
    #: Input channels appended after the encoder.
    n_extra: ClassVar[int]
    #: `observation_dropout="auto"`: thin only a model that sees the times,
    #: for which a thinned series is another sample of the same one; under
    #: "drop" it would only shift the steps (docs/estimators.md).
    auto_observation_dropout: ClassVar[float]
    #: Whether `time_warp="auto"` warps: only where the gaps are each
    #: step's discretisation step, the setting it was measured in.
    auto_time_warp: ClassVar[bool]

    def thinning(self, observation_dropout: float | str) -> dict:
        """The training settings (`TrainingConfig`'s `observation_dropout`
        and `observation_budget`) of an estimator's `observation_dropout`:
        a rate as given; `"auto"`, `auto_observation_dropout`, and where
        that thins, series longer than about `AUTO_OBSERVATION_BUDGET`
        observations thinned further, to about that many."""
        if observation_dropout != "auto":
            return {"observation_dropout": observation_dropout, "observation_budget": None}
        rate = self.auto_observation_dropout
        return {"observation_dropout": rate, "observation_budget": AUTO_OBSERVATION_BUDGET if rate > 0 else None}

    def time_warp(self, time_warp: float | str, lengths: np.ndarray | None) -> float:
        """The σ of the training batches' time warps (`TrainingConfig.time_warp`)
        of an estimator's `time_warp`: a number as given; `"auto"`,
        `AUTO_TIME_WARP` where this handling warps and the training series
        (`lengths`, their steps) have a median of at least
        `AUTO_TIME_WARP_MIN_LENGTH`, else 0 (also without `lengths`: no
        training)."""
        if time_warp != "auto":
            return float(time_warp)
        if not self.auto_time_warp or lengths is None or len(lengths) == 0:
            return 0.0
        return AUTO_TIME_WARP if np.median(lengths) >= AUTO_TIME_WARP_MIN_LENGTH else 0.0

    @abc.abstractmethod
    def inputs(self, gaps: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(the steps' gaps the network discretises with (L,), the extra
        channels (L, n_extra) or None) from the real gaps (L,) in model
        units."""


@final
@dataclasses.dataclass(frozen=True)
class Gaps(AbstractTimeHandling):
    name = "gaps"
    elapsed = ("gaps",)
    n_extra = 0
    auto_observation_dropout = 0.3
    auto_time_warp = True

    def inputs(self, gaps):
        return gaps, None


@final
@dataclasses.dataclass(frozen=True)
class Drop(AbstractTimeHandling):
    name = "drop"
    elapsed = ()
    n_extra = 0
    auto_observation_dropout = 0.0
    auto_time_warp = False

    def inputs(self, gaps):
        return np.ones_like(gaps), None


@final
@dataclasses.dataclass(frozen=True)
class Append(AbstractTimeHandling):
    name = "append"
    elapsed = ("extra",)
    n_extra = 1
    auto_observation_dropout = 0.3
    auto_time_warp = False

    def inputs(self, gaps):
        return np.ones_like(gaps), gaps[:, None]


TIME_HANDLINGS = {kind.name: kind() for kind in (Gaps, Drop, Append)}


def time_handling_for(name: str) -> AbstractTimeHandling:
    """The time handling called `name` (a ValueError naming the choices otherwise)."""
    try:
        return TIME_HANDLINGS[name]
    except (KeyError, TypeError):
        raise ValueError(f"time_handling must be one of {tuple(TIME_HANDLINGS)}, got {name!r}") from None
