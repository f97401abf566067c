"""Where a fit's series come from, read one way: a source
(`AbstractSource`) yields chunks of series with their targets and weights;
one statistics pass over them (`Statistics`); then one target state, one
`Preprocessing` and the training data (`training_data`). In memory
(`InMemory`) is the one-chunk case, materialised as `Sequences`; a Parquet
data set (`_streaming.ParquetSource`) is streamed (`StreamedSequences`).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import final

import numpy as np
import pandas as pd

from ..data import RaggedPanel, SeriesChunk, to_targets
from ..training import SequenceData
from ._preprocessing import Preprocessing, Statistics
from ._task import AbstractTask, check_sample_weight


class AbstractSource(abc.ABC):
    """A fit's series, targets and weights, read as chunks (built with the task)."""

    @abc.abstractmethod
    def statistics(self, per_step: bool | None) -> Statistics:
        """The one pass over the source, with what it decides set:
        `per_step`, the targets' form, the checked `sample_weight`
        (`Statistics`); `per_step`: a fitted model's (None: unfitted)."""

    @abc.abstractmethod
    def sequences(self, stats: Statistics, make: Callable, elapsed: tuple, lengths: np.ndarray) -> SequenceData:
        """The model-ready training data: `make(panel, positions, steps)`
        of every chunk (`positions`: its series' places in `stats`;
        `steps`: their per-step targets, or None), of `lengths` steps
        (`Preprocessing.n_steps`)."""


@final
class InMemory(AbstractSource):
    """The whole `panel` as one chunk, with `y` aligned with it as
    `to_targets` aligns it (per step only if the task takes them) and
    `sample_weight` (`check_sample_weight`)."""

    def __init__(self, task: AbstractTask, panel: RaggedPanel, y, sample_weight=None):
        self.panel = panel
        self.sample_weight = check_sample_weight(sample_weight, panel)
        self.targets = to_targets(y, panel, numeric=task.numeric, kind=None if task.takes_per_step else "sequence")

    def statistics(self, per_step):
        targets, stepped = self.targets, self.targets.kind == "per_step"
        stats = Statistics(
            per_step=stepped, is_1d=targets.is_1d, columns=targets.columns, sample_weight=self.sample_weight,
            learn=per_step is None,
        )
        values = targets.values
        stats.add(SeriesChunk(self.panel, {}, 0, 0), series=None if stepped else values, steps=values if stepped else None)
        return stats

    def sequences(self, stats, make, elapsed, lengths):
        return make(self.panel, np.arange(self.panel.n_series), self.targets.values if stats.per_step else None)


def ids_panel(ids, like: RaggedPanel, times=None) -> RaggedPanel:
    """A panel of the series `ids` without feature data (no columns), with
    `like`'s kind of time and names, and `times` (a sequence of (L_i,)
    arrays; default: each series of length 0): what targets are aligned
    with (`to_targets`) and predictions indexed by (`series_index`, and
    `step_index` with `times`)."""
    if times is None:
        times = (np.zeros(0),) * len(ids)
    values = tuple(np.zeros((len(t), 0)) for t in times)
    return dataclasses.replace(
        like, ids=tuple(ids), values=values, times=tuple(times), columns=(), ids_are_labels=True, row_series=None,
        row_order=None,
    )


def training_data(
    source: AbstractSource, task: AbstractTask, settings: dict, *, fitted: tuple | None = None, classes=None
) -> tuple[Preprocessing, bool, object, SequenceData, int]:
    """(prep, per_step, target state, the training data, n_inputs) of a
    fit on `source` for `task`: the statistics pass; the target state from
    the targets one per series (`encode`, with `classes`) or each series'
    moments of its per-step targets (`state_from_moments`); the weights;
    the `Preprocessing` (`Statistics.preprocessing` with `settings`); each
    chunk checked and transformed. `fitted`: the (prep, per_step, target
    state) a fitted model keeps."""
    prep, fitted_per_step, state = fitted or (None, None, None)
    stats = source.statistics(fitted_per_step)
    per_step = stats.per_step
    if fitted and per_step != fitted_per_step:
        raise ValueError(
            f"y has one target per {'step' if per_step else 'series'}, but the model was fitted "
            f"with one per {'step' if fitted_per_step else 'series'}"
        )
    ids = ids_panel(stats.ids, stats.first)
    encoded = None
    if not per_step:
        y = stats.series_y
        if y is None:  # gathered by the pass: (n,) / (n, k), named as given
            y = np.concatenate(stats.targets)
            y = y if stats.columns is None else pd.DataFrame(y, index=pd.Index(ids.ids), columns=list(stats.columns))
        encoded, _, state = task.encode(y, ids, state, classes=classes, weights=stats.sample_weight)
    elif state is None:
        counts = np.concatenate(stats.lengths)[:, None].astype(np.float64)
        means, stds = np.concatenate(stats.target_means), np.concatenate(stats.target_stds)
        state = task.state_from_moments(counts, means, stds, stats.sample_weight, is_1d=stats.is_1d, columns=stats.columns)
    weights = task.weights(stats.sample_weight, encoded, state)
    if prep is None:
        prep = stats.preprocessing(weights=weights, **settings)
    else:
        prep.check(stats.first)

    def make(panel, positions, steps):
        panel = prep.check(panel)
        targets = task.encode(steps, panel, state)[0] if per_step else encoded[positions]
        return prep.transform(panel, targets, per_step, None if weights is None else weights[positions])

    lengths = prep.n_steps(*(np.concatenate(getattr(stats, name)) for name in ("lengths", "starts", "ends")))
    data = source.sequences(stats, make, prep.handling.elapsed, lengths)
    return prep, per_step, state, data, prep.n_inputs(stats.first)
