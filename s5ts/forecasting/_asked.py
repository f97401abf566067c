"""What a forecast is asked for (`Asked`): each series' times, from the
`times` given to `predict` — one index of times asked of every series
(`asked_at`), or a `(series…, time)` MultiIndex of each series' own — or
from `leads` after each series' last observation (`asked_after`). Times
are read as the fitted series' kind (`read_times`: ISO 8601 strings
included) and put on their scale in seconds (`seconds_of`). Pure pandas
and numpy; errors name the argument at fault."""

from __future__ import annotations

import dataclasses
from numbers import Real

import numpy as np
import pandas as pd

from ..data import to_panel
from ._series import check_time_kind, timestamps


@dataclasses.dataclass(frozen=True)
class Asked:
    """The forecasts one call asks for: `series`, per series id asked
    about, `(rows, when, seconds)` — the rows of the output it fills, its
    times as pandas values and in seconds on the fitted series' scale —
    and the output's `index`. `shared`: one index of times asked of every
    series (rows series-major)."""

    series: dict
    index: pd.Index
    shared: bool


def asked_at(times, ids: list, time_kind: tuple, index_names: list) -> Asked:
    """The forecasts at `times` of the fitted series `ids` (`[None]`: one
    series without an id) whose times are of `time_kind` `(kind, tz)` and
    whose index levels are `index_names`. `times`: a collection of times
    (or one) asked of every series, the output series-major with the index
    `(series…, time)` for a panel; or a `pd.MultiIndex` `(series…, time)`,
    each series asked only at its own times, the output in its order (a
    list of `(series…, time)` tuples is one)."""
    if not isinstance(times, pd.Index):
        times = pd.Index([times] if pd.api.types.is_scalar(times) else times)
    if isinstance(times, pd.MultiIndex):
        return _each_series(times, ids, time_kind, index_names)
    when = read_times(times, time_kind)
    seconds = seconds_of(when, time_kind)
    Q = len(when)
    series = {sid: (i * Q + np.arange(Q), when, seconds) for i, sid in enumerate(ids)}
    if ids == [None]:
        return Asked(series, when, shared=True)
    levels = _id_levels(ids, len(index_names) - 1, Q)
    index = pd.MultiIndex.from_arrays([*levels, when[np.tile(np.arange(Q), len(ids))]], names=index_names)
    return Asked(series, index, shared=True)


def _each_series(times: pd.MultiIndex, ids, time_kind, index_names) -> Asked:
    if ids == [None]:
        raise ValueError(
            "times: a MultiIndex names series, but the forecaster was fitted on one series, not a panel: "
            "give the times alone"
        )
    depth = len(index_names) - 1
    if times.nlevels != depth + 1:
        raise ValueError(
            f"times: a MultiIndex of {times.nlevels} levels, but the fitted panel's index has {depth + 1} "
            f"({index_names}): give (series…, time) rows"
        )
    when = read_times(times.get_level_values(-1), time_kind)
    seconds = seconds_of(when, time_kind)
    positions = pd.Series(np.arange(len(times)), index=times.droplevel(-1))
    groups = positions.groupby(level=list(range(depth)) if depth > 1 else 0, sort=False, dropna=False).indices
    fitted = {sid: sid for sid in ids}  # the ids as fitted (a group key may be a numpy scalar)
    unknown = [sid for sid in groups if sid not in fitted]
    if unknown:
        listed = ", ".join(repr(sid) for sid in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ValueError(f"times: series {listed} not in the fitted panel ({len(ids)} series, e.g. {ids[0]!r})")
    series = {fitted[sid]: (rows, when[rows], seconds[rows]) for sid, rows in groups.items()}
    levels = [times.get_level_values(level) for level in range(depth)]
    return Asked(series, pd.MultiIndex.from_arrays([*levels, when], names=index_names), shared=False)


def asked_after(leads, last: dict, time_kind: tuple, index_names: list) -> Asked:
    """The forecasts at `leads` after each series' last observation (`last`:
    per series id, its time in seconds), rows series-major, each series'
    leads in the order given; as `asked_at` the absolute times they make."""
    steps = read_leads(leads, time_kind)
    ids = list(last)
    ends = time_values(np.array([last[sid] for sid in ids], np.float64), time_kind)
    L = len(steps)
    when = ends.repeat(L) + steps[np.tile(np.arange(L), len(ids))]
    if ids == [None]:
        return asked_at(when, ids, time_kind, index_names)
    levels = _id_levels(ids, len(index_names) - 1, L)
    return asked_at(pd.MultiIndex.from_arrays([*levels, when], names=index_names), ids, time_kind, index_names)


def _id_levels(ids: list, depth: int, repeat: int) -> list:
    """The series levels of an index with `repeat` rows per series."""
    return [pd.Index([sid[level] if depth > 1 else sid for sid in ids]).repeat(repeat) for level in range(depth)]


def read_times(times, time_kind: tuple, name: str = "times") -> pd.Index:
    """`times` (a collection of times, or one time) as an index: periods as
    their start times, strings read as the fitted `time_kind` `(kind, tz)`
    reads them (`_read_string`); other values as they are."""
    when = timestamps(pd.Index([times] if pd.api.types.is_scalar(times) else times))
    if pd.api.types.is_object_dtype(when.dtype) or pd.api.types.is_string_dtype(when.dtype):
        read = {}
        values = []
        for value in when:
            if isinstance(value, str):
                if value not in read:
                    read[value] = _read_string(value, time_kind, name)
                value = read[value]
            values.append(value)
        when = pd.Index(values)
    return when


def _read_string(value: str, time_kind: tuple, name: str):
    """A time given as a string: an ISO 8601 date and time for datetime
    series — a wall time in the fitted time zone, or with its UTC offset an
    instant, converted to that zone — or a duration for timedelta series."""
    kind, tz = time_kind
    if kind == "timedelta":
        try:
            return pd.Timedelta(value)
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not a duration pandas reads (e.g. '3 days 04:00:00', '12h')") from None
    if kind != "datetime":
        raise ValueError(f"{name}: {value!r} is a string, but the forecaster was fitted on numeric times: give numbers")
    try:
        stamp = pd.to_datetime(value, format="ISO8601")
    except ValueError:
        raise ValueError(f"{name}: {value!r} is not an ISO 8601 date (e.g. '2024-03-01' or '2024-03-01 12:30')") from None
    if stamp.tzinfo is None:
        if tz is None:
            return stamp
        # NaT, not pandas' exceptions: pandas 2 raises pytz's, which are no ValueError.
        local = stamp.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
        if local is pd.NaT:
            skipped = stamp.tz_localize(tz, ambiguous=True, nonexistent="NaT") is pd.NaT
            why = "the clocks skip it there" if skipped else "it occurs twice there, the clocks going back"
            raise ValueError(
                f"{name}: {value!r} is not one time in the forecaster's time zone {tz} ({why}): "
                "give it with its UTC offset, e.g. '2024-10-27T02:30+01:00'"
            )
        return local
    if tz is None:
        raise ValueError(
            f"{name}: {value!r} has a UTC offset, but the forecaster was fitted on naive datetimes: give it without one"
        )
    return stamp.tz_convert(tz)


def read_leads(leads, time_kind: tuple) -> pd.Index:
    """`leads` (a collection of leads, or one) after a series' last
    observation: positive Timedeltas (or strings pandas reads as durations,
    e.g. `"7D"`) for datetime and timedelta series, positive numbers for
    numeric ones."""
    values = [leads] if pd.api.types.is_scalar(leads) else list(leads)
    kind = time_kind[0]
    if kind == "numeric":
        for value in values:
            if not _is_number(value):
                raise ValueError(f"leads: {value!r} is not a number, but y is indexed by numbers: give leads in its units")
        steps = pd.Index(np.asarray(values, np.float64))
        bad = ~(np.isfinite(steps) & (steps > 0))
    else:
        parsed = []
        for value in values:
            if _is_number(value) or isinstance(value, (bool, np.bool_)):
                raise ValueError(
                    f"leads: {value!r} is a number, but y is indexed by {kind}s: give Timedeltas or strings pandas "
                    "reads as durations (e.g. '7D', '12h')"
                )
            try:
                parsed.append(pd.Timedelta(value))
            except (ValueError, TypeError):
                raise ValueError(f"leads: {value!r} is not a duration pandas reads (e.g. '7D', '12h')") from None
        steps = pd.TimedeltaIndex(parsed)
        bad = np.asarray(steps.isna() | (steps <= pd.Timedelta(0)))
    if bad.any():
        first = values[int(np.flatnonzero(bad)[0])]
        raise ValueError(f"leads must be positive (after each series' last observation), got {first!r}")
    return steps


def _is_number(value) -> bool:
    """A real number, not a bool, nor a `np.timedelta64` (numpy's integers)."""
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_, np.timedelta64, np.datetime64))


def seconds_of(when: pd.Index, time_kind: tuple, name: str = "times") -> np.ndarray:
    """The times `when` in seconds on the scale of fitted series of
    `time_kind` (as `to_panel` reads them); a TypeError names `name` when
    they are of another kind or time zone, a ValueError when one is
    missing."""
    if len(when) == 0:
        return np.zeros(0)
    dtype = when.dtype
    timelike = isinstance(when, (pd.DatetimeIndex, pd.TimedeltaIndex))
    if not (timelike or (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))):
        raise TypeError(f"{name} must be datetime, timedelta or numeric times, got dtype {dtype}")
    missing = np.asarray(when.isna()) if timelike else ~np.isfinite(when.to_numpy(np.float64))
    if missing.any():
        raise ValueError(f"{name}: the time at position {int(np.flatnonzero(missing)[0])} is missing (NaT/NaN) or infinite")
    unique = when.unique().sort_values()
    try:
        panel = to_panel([pd.DataFrame({"t": np.zeros(len(unique))}, index=unique)])
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from error
    check_time_kind((panel.time_kind, panel.tz), time_kind, f"{name} are {{}}")
    return np.asarray(panel.times[0], np.float64)[unique.get_indexer(when)]


def time_values(seconds: np.ndarray, time_kind: tuple) -> pd.Index:
    """Times in `seconds` as pandas values of `time_kind`, to the
    microsecond: exact for times of that resolution (float64 seconds since
    1970 resolve under half a microsecond until about 2100). In
    nanoseconds, the unit other times compare to without rounding."""
    kind, tz = time_kind
    if kind == "numeric":
        return pd.Index(seconds, dtype=np.float64)
    whole = np.floor(seconds)
    micro = whole.astype(np.int64) * 10**6 + np.round((seconds - whole) * 1e6).astype(np.int64)
    if kind == "timedelta":
        return pd.TimedeltaIndex(micro.astype("timedelta64[us]")).as_unit("ns")
    stamps = pd.DatetimeIndex(micro.astype("datetime64[us]")).as_unit("ns")
    return stamps if tz is None else stamps.tz_localize("UTC").tz_convert(tz)
