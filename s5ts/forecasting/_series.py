"""The forecaster's series: read from pandas frames (`split_series`, the
exogenous rows of each: `x_rows`) and kept as it knows them (`SeriesState`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..data import to_panel
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


def check_time_kind(kind: tuple, fitted: tuple, what: str) -> None:
    """A TypeError unless times of `kind`, `(kind, tz)`, are of the `fitted`
    one; `what` names them, "{}" their kind."""
    if kind != fitted:
        raise TypeError(
            f"{what.format(kind[0])} (tz {kind[1]}), but the forecaster was fitted on {fitted[0]} times (tz {fitted[1]})"
        )


def split_series(frame: pd.DataFrame) -> list:
    """`[(id, frame indexed by time)]`: one entry (id None) for a single
    series; for a MultiIndex, one per instance (id = the outer level's value,
    or a tuple of the outer levels' values), in order of first appearance."""
    if frame.index.nlevels == 1:
        return [(None, frame)]
    outer = list(range(frame.index.nlevels - 1))
    by = outer[0] if len(outer) == 1 else outer
    return [(sid, group.droplevel(outer)) for sid, group in frame.groupby(level=by, sort=False)]


def as_frame(data, name) -> pd.DataFrame:
    """`data` (`y` or `X`, called `name`) as a DataFrame."""
    if isinstance(data, pd.Series):
        return data.to_frame(name=data.name if data.name is not None else 0)
    if isinstance(data, pd.DataFrame):
        return data
    raise TypeError(f"{name} must be a pandas Series or DataFrame indexed by time, got {type(data).__name__}")


def timestamps(index: pd.Index) -> pd.Index:
    """Periods become their start times; other indexes are kept."""
    return index.to_timestamp() if isinstance(index, pd.PeriodIndex) else index


def frames_panel(series, name):
    """The `RaggedPanel` of `split_series`' frames, its errors naming `name`."""
    frames = [frame.set_axis(timestamps(frame.index)) for _, frame in series]
    ids = pd.Index([sid for sid, _ in series], tupleize_cols=False, dtype=object)
    try:
        return to_panel(pd.Series(frames, index=ids, dtype=object))
    except (ValueError, TypeError) as error:
        raise type(error)(f"{name}: {error}") from error


def pick_x_columns(x_frame, columns):
    """The exogenous `columns` seen in fit, of `x_frame`."""
    missing = [c for c in columns if c not in x_frame.columns]
    if missing:
        raise ValueError(f"X lacks the columns {missing} seen in fit")
    return x_frame[list(columns)]


def x_rows(sid, by_id, index, columns) -> np.ndarray:
    """The exogenous `columns` of series `sid` (its frame in `by_id`) at
    the times `index`, raw (float64)."""
    if sid not in by_id:
        raise ValueError(f"{where(sid)}X has no rows for this series")
    x_frame = pick_x_columns(by_id[sid], columns)
    index = timestamps(index)
    x_frame = x_frame.set_axis(timestamps(x_frame.index))
    missing = ~index.isin(x_frame.index)
    if missing.any():
        raise ValueError(
            f"{where(sid)}X has no row at time {index[np.flatnonzero(missing)[0]]}; the forecaster "
            "was fitted with exogenous X, so X must cover every time it is asked about"
        )
    rows = x_frame.loc[index]
    for column, dtype in rows.dtypes.items():
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            raise TypeError(f"{where(sid)}column {column!r} of X has non-numeric dtype {dtype}")
    return rows.to_numpy(dtype=np.float64, na_value=np.nan)
