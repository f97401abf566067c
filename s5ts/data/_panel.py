"""User input → `RaggedPanel`, the one ragged representation the models see.

`to_panel` lists the accepted inputs (see also `docs/input-formats.md`).

Period time stamps stand for their start time (`Period.start_time`).
Datetime and timedelta times become float seconds, computed from the
underlying integer representation in its own unit (pandas 3 often stores
`datetime64[us]`, so the unit is never assumed). The integer and fractional
seconds are converted separately, so the same instant gives bit-identical
seconds whatever its storage unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from jaxtyping import Float

from ._median_gap import MedianGap

TimeKind = Literal["datetime", "timedelta", "numeric"]
TIME_KINDS = ("datetime", "timedelta", "numeric")

#: Axis orders of a 3-D array X: `"nld"` (series, time, feature), s5ts's
#: own, and `"ndl"` (series, feature, time), sktime's `numpy3D`.
LAYOUTS = ("nld", "ndl")

_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


@dataclasses.dataclass(frozen=True, eq=False)
class RaggedPanel:
    """n time series of different lengths on their own (irregular) time grids.

    **Fields:**

    - `ids`: the n series identifiers, in input order.
    - `values`: n read-only float64 arrays of shape `(L_i, d)`; NaN marks a
      missing channel at an observed time.
    - `times`: n read-only float64 arrays of shape `(L_i,)`, strictly
      increasing; seconds for datetime/timedelta input (datetimes: seconds
      since the Unix epoch, UTC), the raw numbers otherwise.
    - `columns`: the d feature names (str).
    - `tz`: the time zone of datetime input, if any.
    - `ids_are_labels`: True when `ids` came from the input (MultiIndex
      level, id column, labels of a pandas Series of frames), False when
      they are just positions `0..n-1`. Targets given as a pandas object
      are aligned by label only in the first case (after an sklearn split
      of a list, positions no longer match a target Series' labels).
    - `id_name`, `time_name`: the input's names for the series level / id
      column and the time level / column / index (None: unnamed), which
      pandas output uses (else `"series"` / `"time"`).
    - `default_times`: True when the input carried no times and `to_panel`
      numbered the steps `0, 1, ...`.
    - `row_series`: for row-wise input (a long or MultiIndex frame), the
      series position of each input row, int64 `(n_rows,)`; else None.
      `rows_to_series` uses it to read per-row targets or weights.
    - `row_order`: for row-wise input, the input row of every observation
      in panel order (`rows_in_order`), int64 `(n_rows,)`; None when the
      input's rows already were in that order.

    A panel is indexable like a 1-D sequence of series (`len(panel)`,
    `panel.shape == (n,)`, `panel[key]`: see `__getitem__`), so
    scikit-learn's splitters accept it as X.

    Build one with `to_panel`; the constructor checks only shapes.
    """

    ids: tuple
    values: tuple
    times: tuple
    columns: tuple
    time_kind: TimeKind = "numeric"
    tz: str | None = None
    ids_are_labels: bool = False
    id_name: Any = None
    time_name: Any = None
    default_times: bool = False
    row_series: np.ndarray | None = None
    row_order: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.ids)
        if len(self.values) != n or len(self.times) != n:
            raise ValueError(
                f"ids, values and times must have the same length, got {n}, "
                f"{len(self.values)} and {len(self.times)}"
            )
        if self.time_kind not in TIME_KINDS:
            raise ValueError(f"time_kind must be one of {TIME_KINDS}, got {self.time_kind!r}")
        if self.tz is not None and self.time_kind != "datetime":
            raise ValueError("tz is only meaningful for datetime times")
        d = len(self.columns)
        values, times = [], []
        for sid, v, t in zip(self.ids, self.values, self.times):
            v = _frozen_float(v)
            t = _frozen_float(t)
            if v.ndim != 2 or v.shape[1] != d or t.shape != (v.shape[0],):
                raise ValueError(
                    f"{_series(sid)}: values must have shape (L, {d}) and times (L,), "
                    f"got {v.shape} and {t.shape}"
                )
            values.append(v)
            times.append(t)
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "times", tuple(times))
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        if self.row_series is not None:
            rows = np.asarray(self.row_series, dtype=np.int64)
            if rows.ndim != 1 or int(np.bincount(rows, minlength=n).sum()) != int(self.lengths.sum()):
                raise ValueError("row_series must give one series position per observation")
            rows.setflags(write=False)
            object.__setattr__(self, "row_series", rows)

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @property
    def n_features(self) -> int:
        return len(self.columns)

    @property
    def lengths(self) -> np.ndarray:
        """Series lengths `L_i`, int64 array of shape `(n,)`."""
        return np.array([t.shape[0] for t in self.times], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def shape(self) -> tuple[int]:
        """`(n_series,)`: what scikit-learn's `_num_samples` and `_safe_indexing` read."""
        return (self.n_series,)

    def __getitem__(self, key) -> RaggedPanel:
        """The panel of the series selected by `key`: an int, a slice, an
        integer or boolean array-like (scikit-learn's array indexing passes
        `(key, Ellipsis)`, accepted too)."""
        if isinstance(key, tuple):
            if len(key) != 2 or key[1] is not Ellipsis:
                raise IndexError(f"a RaggedPanel has one axis (series); got the index {key!r}")
            key = key[0]
        if isinstance(key, (str, bytes)):
            raise IndexError(f"index a RaggedPanel by position, not by {key!r}")
        try:
            positions = np.arange(self.n_series)[key]
        except IndexError as error:
            raise IndexError(f"RaggedPanel of {self.n_series} series: {error}") from None
        return self.subset(np.atleast_1d(positions))

    def time_index(self, i: int) -> pd.Index:
        """The times of series `i` as a pandas Index of the input's kind,
        named as in the input (else `"time"`).

        Datetimes and timedeltas come back at microsecond resolution (float64
        seconds since the epoch resolve about 0.25 µs today).
        """
        return _seconds_to_index(self.times[i], self.time_kind, self.tz, self._time_label)

    @property
    def _id_label(self):
        return "series" if self.id_name is None else self.id_name

    @property
    def _time_label(self):
        return "time" if self.time_name is None else self.time_name

    def series_index(self) -> pd.Index:
        """The series ids as a pandas Index (named as in the input, else `"series"`)."""
        return pd.Index(list(self.ids), name=self._id_label, tupleize_cols=False)

    def step_index(self) -> pd.MultiIndex:
        """A `(series, time)` MultiIndex with one entry per observation, in panel order."""
        if self.n_series == 0:
            raise ValueError("the panel has no series")
        times = [self.time_index(i) for i in range(self.n_series)]
        positions = np.repeat(np.arange(self.n_series), self.lengths)
        return pd.MultiIndex.from_arrays(
            [self.series_index()[positions], times[0].append(times[1:])],
            names=[self._id_label, self._time_label],
        )

    def subset(self, indices) -> RaggedPanel:
        """The panel restricted to the series at positions `indices` (in that order)."""
        idx = [int(i) for i in np.asarray(indices, dtype=np.int64).reshape(-1)]
        return dataclasses.replace(
            self,
            ids=tuple(self.ids[i] for i in idx),
            values=tuple(self.values[i] for i in idx),
            times=tuple(self.times[i] for i in idx),
            row_series=None,  # the input's rows no longer describe the subset
            row_order=None,
        )

    def rows_in_order(self, values):
        """Per-row `values` of row-wise input (`(n_rows, ...)`, in the
        input's row order) in panel order: series after series, each in
        time order, as `np.concatenate(self.values)` stacks them."""
        values = np.asarray(values)
        return values if self.row_order is None else values[self.row_order]

    def rows_to_series(self, values, what: str = "y") -> np.ndarray:
        """One entry per series (its first row's) from `values`, one per input
        row of a long or MultiIndex frame; each series' rows must agree
        (`one_per_series`; `what` names `values` in messages)."""
        if self.row_series is None:
            raise ValueError(f"{what} per row needs X as a long or MultiIndex frame")
        n_rows = self.row_series.shape[0]
        if np.shape(values)[:1] != (n_rows,):
            raise ValueError(f"{what} has {np.shape(values)[:1]} entries; X has {n_rows} rows")
        return one_per_series(values, self.row_series, self.ids, what)

    def to_multiindex(self) -> pd.DataFrame:
        """A DataFrame with a `(series, time)` MultiIndex; the inverse of `to_panel`."""
        values = np.concatenate(self.values, axis=0) if self.n_series else None
        return pd.DataFrame(values, index=self.step_index(), columns=list(self.columns))


def _frozen_float(a) -> np.ndarray:
    if (
        isinstance(a, np.ndarray)
        and a.dtype == np.float64
        and a.flags.owndata
        and not a.flags.writeable
    ):
        return a  # already frozen by us (e.g. `subset`): no copy
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------
# times


def _describe(sid) -> str:
    return "" if sid is None else f"series {sid!r}: "


def _series(sid) -> str:
    """How messages name a series: `series 'a'`, or `the series` for an id
    of None (a single series given without one)."""
    return "the series" if sid is None else f"series {sid!r}"


def _times_to_seconds(t, sid=None) -> tuple[np.ndarray, np.ndarray, TimeKind, str | None]:
    """Convert time stamps (pandas Index or numpy array, any shape) to float seconds.

    **Returns:** `(seconds, exact, kind, tz)`: float64 seconds with NaN for
    NaT/NaN; `exact`, the same times in a representation whose order and
    equality are exact (int64 ticks in the input's unit for
    datetimes/timedeltas, so ordering checks are not fooled by float
    rounding); the time kind; the tz name.
    """
    shape = np.shape(t)
    if isinstance(t, pd.MultiIndex):
        raise TypeError(f"{_describe(sid)}times must be one level, got a MultiIndex")
    if isinstance(getattr(t, "dtype", None), pd.PeriodDtype):
        # A period stands for its start (pandas' `Period.start_time`).
        t = pd.PeriodIndex(t).to_timestamp(how="start")
    if not isinstance(t, (pd.Index, pd.Series)):
        t = np.asarray(t)
    dtype = t.dtype
    kind_char = dtype.kind if isinstance(dtype, np.dtype) else None
    if isinstance(dtype, pd.DatetimeTZDtype) or kind_char in ("M", "m"):
        kind = "timedelta" if kind_char == "m" else "datetime"
        idx = (pd.TimedeltaIndex if kind == "timedelta" else pd.DatetimeIndex)(
            np.ravel(t) if isinstance(t, np.ndarray) else t
        )
        tz = getattr(idx, "tz", None)
        ticks = np.asarray(idx.asi8, dtype=np.int64)
        per = _PER_SECOND[idx.unit]
        whole = np.floor_divide(ticks, per)
        # Whole seconds are exact in float64; the remainder divided by `per` is
        # correctly rounded, so 1.5 s stored in ms, us or ns gives the same float.
        sec = whole.astype(np.float64) + (ticks - whole * per) / per
        sec[np.asarray(idx.isna())] = np.nan
        return sec.reshape(shape), ticks.reshape(shape), kind, None if tz is None else str(tz)
    if (
        pd.api.types.is_numeric_dtype(dtype)
        and not pd.api.types.is_bool_dtype(dtype)
        and not pd.api.types.is_complex_dtype(dtype)
    ):
        pandas = isinstance(t, (pd.Index, pd.Series))
        sec = (t.to_numpy(dtype=np.float64, na_value=np.nan) if pandas else t.astype(np.float64)).reshape(shape)
        return sec, sec, "numeric", None
    stringy = pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
    hint = " (parse strings with pd.to_datetime)" if stringy else ""
    raise TypeError(
        f"{_describe(sid)}times must be datetime, timedelta or numeric, got dtype {dtype}{hint}"
    )


def _seconds_to_index(sec, kind, tz, name="time") -> pd.Index:
    sec = np.asarray(sec, dtype=np.float64)
    if kind == "numeric":
        return pd.Index(sec, name=name)
    whole = np.floor(sec)
    us = whole.astype(np.int64) * 10**6 + np.round((sec - whole) * 1e6).astype(np.int64)
    if kind == "timedelta":
        return pd.TimedeltaIndex(us.astype("timedelta64[us]"), name=name)
    idx = pd.DatetimeIndex(us.astype("datetime64[us]"), name=name)
    if tz is not None:
        idx = idx.tz_localize("UTC").tz_convert(tz)
    return idx


def _check_times(sid, sec, exact):
    """Finite, strictly increasing; messages name the series and position."""
    bad = ~np.isfinite(sec)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{_series(sid)}: time at position {k} is missing (NaT/NaN) or infinite")
    if sec.shape[0] < 2:
        return
    order = exact[1:] > exact[:-1]
    same = exact[1:] == exact[:-1]
    if same.any():
        k = int(np.flatnonzero(same)[0]) + 1
        raise ValueError(
            f"{_series(sid)}: duplicate time at positions {k - 1} and {k}; "
            "times must be strictly increasing"
        )
    if not order.all():
        k = int(np.flatnonzero(~order)[0]) + 1
        raise ValueError(
            f"{_series(sid)}: times are not sorted (position {k} comes before position {k - 1}); "
            "sort the series by time first (e.g. .sort_index())"
        )
    if not (np.diff(sec) > 0).all():
        k = int(np.flatnonzero(np.diff(sec) <= 0)[0]) + 1
        raise ValueError(
            f"{_series(sid)}: times at positions {k - 1} and {k} are closer than float64 "
            "seconds can resolve"
        )


def _check_time_kind(sid, kind, tz, first_sid, first_kind, first_tz):
    """Series `sid` has the same kind of time and the same tz as the first series."""
    if kind != first_kind:
        raise TypeError(
            f"{_series(sid)} has {kind} times but {_series(first_sid)} has "
            f"{first_kind} times; all series must use one kind of time"
        )
    if tz != first_tz:
        if tz is None or first_tz is None:
            raise ValueError(
                f"{_series(sid)} has {'naive' if tz is None else 'tz-aware'} datetimes but "
                f"{_series(first_sid)} has {'naive' if first_tz is None else 'tz-aware'} ones; "
                "do not mix them"
            )
        raise ValueError(
            f"{_series(sid)} has time zone {tz!r} but {_series(first_sid)} has {first_tz!r}; "
            "convert all series to one time zone (e.g. .tz_convert)"
        )


# --------------------------------------------------------------------------
# features


def _frame_features(df: pd.DataFrame, sid=None) -> tuple[np.ndarray, tuple]:
    """float64 `(L, d)` values and str column names of a feature frame."""
    where = _describe(sid)
    if df.shape[1] == 0:
        raise ValueError(f"{where}no feature columns")
    columns = tuple(str(c) for c in df.columns)
    seen = set()
    for c in columns:
        if c in seen:
            raise ValueError(f"{where}column {c!r} appears more than once")
        seen.add(c)
    for name, dtype in zip(columns, df.dtypes):
        if pd.api.types.is_complex_dtype(dtype):
            raise _complex_error(f"column {name!r}: " if sid is None else f"{_series(sid)}, column {name!r}: ", dtype)
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            raise TypeError(
                f"{where}column {name!r} has non-numeric dtype {dtype}; features must be "
                "numeric or bool (encode categories and strings first)"
            )
    return df.to_numpy(dtype=np.float64, na_value=np.nan), columns


def _complex_error(where: str, dtype) -> ValueError:
    """scikit-learn's wording ("Complex data not supported"), in s5ts's terms."""
    return ValueError(f"{where}Complex data not supported (dtype {dtype}); features must be real numbers")


def _check_values(sid, values, columns):
    if values.shape[0] == 0:
        raise ValueError(f"{_series(sid)} is empty")
    inf = np.isinf(values)
    if inf.any():
        row, col = np.argwhere(inf)[0]
        raise ValueError(
            f"{_series(sid)}, column {columns[col]!r}: infinite value at position {row}"
        )
    if np.isnan(values).all():
        raise ValueError(f"{_series(sid)}: every feature is NaN (no observed value)")


def _column_positions(got: tuple, expected: tuple) -> tuple[list | None, list, list]:
    """`(positions, missing, unexpected)`: where each `expected` column
    stands in `got` (None unless both hold the same names, as many), the
    expected columns not in `got`, the columns of `got` not expected."""
    got_set, expected_set = set(got), set(expected)
    missing = [c for c in expected if c not in got_set]
    unexpected = [c for c in got if c not in expected_set]
    if missing or unexpected or len(got) != len(expected):
        return None, missing, unexpected
    pos = {c: j for j, c in enumerate(got)}
    return [pos[c] for c in expected], missing, unexpected


def _array_features(arr, sid) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind == "c":
        raise _complex_error(f"{_series(sid)}: values: ", arr.dtype)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{_series(sid)}: values must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{_series(sid)}: values must be 1-D or 2-D, got shape {arr.shape}")
    return arr.astype(np.float64)


# --------------------------------------------------------------------------
# builders


def _from_items(items, ids, times, ids_are_labels) -> RaggedPanel:
    if len(items) == 0:
        raise ValueError("X holds no series")
    if times is not None and len(times) != len(items):
        raise ValueError(f"times has {len(times)} entries but X has {len(items)} series")
    out_v, out_t = [], []
    time_names, default_times = set(), False
    for i, (sid, item) in enumerate(zip(ids, items)):
        if isinstance(item, (pd.DataFrame, pd.Series)):
            if times is not None:
                raise ValueError(
                    f"{_series(sid)}: pass times as the index of the frame, not through times="
                )
            if isinstance(item, pd.Series):
                item = item.to_frame(name=0 if item.name is None else item.name)
            values, columns = _frame_features(item, sid)
            sec, exact, kind, tz = _times_to_seconds(item.index, sid)
            time_names.add(item.index.name)
        else:
            values = _array_features(item, sid)
            columns = tuple(str(j) for j in range(values.shape[1]))
            default_times = default_times or times is None
            t = np.arange(values.shape[0]) if times is None else times[i]
            if np.ndim(t) != 1 or np.shape(t)[0] != values.shape[0]:
                raise ValueError(
                    f"{_series(sid)}: times must have shape ({values.shape[0]},), "
                    f"got {np.shape(t)}"
                )
            sec, exact, kind, tz = _times_to_seconds(t, sid)
        if i == 0:
            first_sid, first_kind, first_tz, reference = sid, kind, tz, columns
        _check_time_kind(sid, kind, tz, first_sid, first_kind, first_tz)
        _check_values(sid, values, columns)
        _check_times(sid, sec, exact)
        if columns != reference:
            positions, missing, extra = _column_positions(columns, reference)
            if positions is None:
                raise ValueError(
                    f"{_series(sid)} has columns {list(columns)} but {_series(first_sid)} has "
                    f"{list(reference)} (missing: {missing}, unexpected: {extra})"
                )
            values = values[:, positions]
        out_v.append(values)
        out_t.append(sec)
    time_name = time_names.pop() if len(time_names) == 1 else None  # one name, or none
    return RaggedPanel(
        tuple(ids), tuple(out_v), tuple(out_t), reference, first_kind, first_tz, ids_are_labels,
        time_name=time_name, default_times=default_times,
    )


def _from_grouped(id_values, time_values, features: pd.DataFrame, *, id_name, time_name) -> RaggedPanel:
    """Rows belong to series `id_values` (in order of first appearance).
    The rows are a set, as a database query returns them: each series'
    rows are taken in time order whatever their order in the input
    (`row_order` keeps it); a time repeated within a series raises."""
    if len(features) == 0:
        raise ValueError("X holds no rows")
    codes, uniques = pd.factorize(id_values, use_na_sentinel=True)
    if (codes < 0).any():
        raise ValueError(f"series id missing (NaN/None) at row {int(np.flatnonzero(codes < 0)[0])}")
    ids = list(uniques.tolist())
    values, columns = _frame_features(features)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(ids)))])
    kind, tz = "numeric", None
    if time_values is not None:
        sec_all, exact_all, kind, tz = _times_to_seconds(time_values, None)
    out_v, out_t, out_rows = [], [], []
    for g, sid in enumerate(ids):
        rows = order[bounds[g] : bounds[g + 1]]
        if time_values is None:
            sec = exact = np.arange(rows.shape[0], dtype=np.float64)
        else:
            sec, exact = sec_all[rows], exact_all[rows]
            if np.isfinite(sec).all():
                if not (exact[1:] >= exact[:-1]).all():
                    in_time = np.argsort(exact, kind="stable")
                    rows, sec, exact = rows[in_time], sec[in_time], exact[in_time]
                same = np.flatnonzero(exact[1:] == exact[:-1])
                if same.size:  # named by the input's rows, wherever they stand
                    k = int(same[0]) + 1
                    raise ValueError(
                        f"{_series(sid)}: rows {int(rows[k - 1])} and {int(rows[k])} of X have the same time "
                        f"{time_values[int(rows[k])]}; times must be distinct within a series"
                    )
        v = values[rows]
        _check_values(sid, v, columns)
        _check_times(sid, sec, exact)
        out_v.append(v)
        out_t.append(sec)
        out_rows.append(rows)
    row_order = np.concatenate(out_rows)
    in_order = bool((row_order == np.arange(row_order.shape[0])).all())
    return RaggedPanel(
        tuple(ids), tuple(out_v), tuple(out_t), columns, kind, tz, True,
        id_name=id_name, time_name=time_name, default_times=time_values is None, row_series=codes,
        row_order=None if in_order else row_order,
    )


def _as_float_array(X: np.ndarray) -> np.ndarray:
    """A numeric, bool or object array as float64 (object entries converted
    as scikit-learn's `check_array` does); complex and other dtypes raise."""
    if X.dtype.kind == "c":
        raise _complex_error("array X: ", X.dtype)
    if X.dtype == object:
        try:
            return X.astype(np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"array X of dtype object holds an entry that is not a number: {error}") from None
    if X.dtype.kind not in "biuf":
        raise TypeError(f"array X must be numeric or bool, got dtype {X.dtype}")
    return X.astype(np.float64)


def _from_array(X: np.ndarray, times, layout="nld") -> RaggedPanel:
    given = X.shape
    if X.ndim == 2:
        X = X[:, :, None]
    elif layout == "ndl":
        X = X.transpose(0, 2, 1)
    n, L, d = X.shape
    read_as = f"X of shape {given} is read as (n series, L time steps, d features) = {(n, L, d)}"
    if n == 0:
        raise ValueError(
            f"{read_as}: no series (found array with 0 sample(s) (shape={given}) while a minimum of 1 is required)"
        )
    if L == 0 or d == 0:
        raise ValueError(
            f"{read_as}: series without observations (found array with 0 feature(s) (shape={given}) "
            "while a minimum of 1 is required)"
        )
    columns = tuple(str(j) for j in range(d))
    X = _as_float_array(X)
    if times is None:
        t = np.broadcast_to(np.arange(L), (n, L))
        # Without times, rows NaN in every feature at the end of a series are
        # padding (a padded array of ragged series), not observations.
        observed_rows = ~np.isnan(X).all(axis=2)
        lengths = np.where(observed_rows.any(axis=1), L - np.argmax(observed_rows[:, ::-1], axis=1), 0)
    else:
        t = np.asarray(times)
        if t.shape == (L,):
            t = np.broadcast_to(t, (n, L))
        if t.shape != (n, L):
            hint = ""
            if len(given) == 3:
                other, time_axis = ("ndl", 2) if layout == "nld" else ("nld", 1)
                if t.shape[-1] == given[time_axis] != L:
                    hint = f"; times matches X's axis {time_axis}: for that axis order pass layout={other!r}"
            raise ValueError(f"times must have shape ({n}, {L}) or ({L},), got {t.shape}: {read_as}{hint}")
        lengths = None
    sec, exact, kind, tz = _times_to_seconds(t)
    out_v, out_t = [], []
    for i in range(n):
        if lengths is not None:
            L_i = int(lengths[i])
            if L_i == 0:
                raise ValueError(f"series {i!r}: every feature is NaN (no observed value)")
        else:
            missing = np.isnan(sec[i])
            L_i = int(np.argmax(missing)) if missing.any() else L
            if missing[L_i:].size and not missing[L_i:].all():
                k = L_i + int(np.argmin(missing[L_i:]))
                raise ValueError(
                    f"series {i!r}: time at position {L_i} is NaN/NaT but position {k} has a time; "
                    "only trailing NaN/NaT times (padding) are allowed"
                )
        _check_values(i, X[i, :L_i], columns)
        _check_times(i, sec[i, :L_i], exact[i, :L_i])
        out_v.append(X[i, :L_i])
        out_t.append(sec[i, :L_i])
    return RaggedPanel(tuple(range(n)), tuple(out_v), tuple(out_t), columns, kind, tz, default_times=times is None)


def to_panel(
    X,
    *,
    times=None,
    id_col: Any = None,
    time_col: Any = None,
    layout: str = "nld",
) -> RaggedPanel:
    """Validate time-series input and convert it to a `RaggedPanel`.

    **Arguments:**

    - `X`: one of
        - a list / tuple / 1-D object array of per-series DataFrames (rows =
          time stamps in the index, columns = features), Series (univariate)
          or arrays `(L_i,)` / `(L_i, d)`; ids are the positions `0..n-1`;
        - a pandas Series whose values are such frames; ids are its labels;
        - a DataFrame or Series with a `(series, time)` MultiIndex; ids are
          the first level's values in order of first appearance;
        - a long DataFrame with `id_col` (and optionally `time_col`; without
          it the rows of each series are taken as times `0, 1, ...`); the
          other columns are features;
        - a 3-D array `(n, L, d)` (`layout="nld"`) or `(n, d, L)`
          (`layout="ndl"`, sktime's numpy3D), or a 2-D array `(n, L)`
          (univariate); object arrays are converted to float64, as
          scikit-learn's `check_array` does;
        - a `RaggedPanel` (returned unchanged).
    - `times`: only for array input: `(n, L)` or `(L,)` time stamps
      (numeric, `datetime64` or `timedelta64`; default `0..L-1`). Trailing
      NaN/NaT entries mark padding, so a padded array holds ragged series.
      For a list of arrays, a list of `(L_i,)` time arrays. Without
      `times`, an array's trailing rows that are NaN in every feature are
      padding.
    - `id_col`, `time_col`: column names for long-format input.
    - `layout`: the axis order of a 3-D array, `"nld"` (series, time,
      feature) or `"ndl"` (series, feature, time).

    **Returns:** a `RaggedPanel`.

    **Raises:** `TypeError` for unsupported input or non-numeric features;
    `ValueError` for unsorted, duplicate, missing or infinite times, infinite
    features, empty or all-NaN series, and inconsistent or duplicated
    columns. Messages name the series id and, where relevant, the column.
    NaN features are allowed (a channel not observed at that time).

    >>> import pandas as pd
    >>> a = pd.DataFrame({"x": [1.0, 2.0]}, index=[0.0, 0.5])
    >>> b = pd.DataFrame({"x": [3.0, 4.0, 5.0]}, index=[0.0, 1.0, 3.0])
    >>> to_panel([a, b]).lengths
    array([2, 3])
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if isinstance(X, RaggedPanel):
        if times is not None or id_col is not None or time_col is not None:
            raise ValueError("times/id_col/time_col do not apply to a RaggedPanel")
        return X
    if (id_col is not None or time_col is not None) and not isinstance(X, pd.DataFrame):
        raise TypeError(f"id_col/time_col need a long DataFrame, got {type(X).__name__}")
    if times is not None and isinstance(X, (pd.DataFrame, pd.Series)):
        raise ValueError("times= is only for array input; pandas input carries its times")

    if isinstance(X, pd.DataFrame):
        if id_col is not None:
            return _from_long(X, id_col, time_col)
        if time_col is not None:
            raise ValueError("time_col needs id_col (which column names the series?)")
        if isinstance(X.index, pd.MultiIndex):
            return _from_multiindex(X)
        raise TypeError(
            "a DataFrame must have a (series, time) MultiIndex or be in long format with "
            "id_col= (and time_col=; for the estimators, their id_col and time_col "
            "parameters); for one series pass [df]"
        )
    if isinstance(X, pd.Series):
        if isinstance(X.index, pd.MultiIndex):
            return _from_multiindex(X.to_frame(name=0 if X.name is None else X.name))
        holds_series = (pd.DataFrame, pd.Series, np.ndarray)
        if X.dtype == object and len(X) and all(isinstance(v, holds_series) for v in X):
            if not X.index.is_unique:
                dup = X.index[X.index.duplicated()][0]
                raise ValueError(f"series id {dup!r} appears more than once in X's index")
            return _from_items(list(X), X.index.tolist(), None, True)
        raise TypeError(
            "a pandas Series must have a (series, time) MultiIndex or hold one DataFrame per "
            "series; for one univariate series pass [s]"
        )
    if isinstance(X, np.ndarray) and (X.dtype != object or X.ndim > 1):
        if X.ndim not in (2, 3):
            raise ValueError(
                f"array X must be 2-D (n, L) or 3-D (n, L, d), got shape {X.shape}; "
                "for one series pass [x]"
            )
        return _from_array(X, times, layout)
    if isinstance(X, np.ndarray):
        X = list(X)  # a 1-D object array holds one series per entry
    if isinstance(X, (list, tuple)):
        return _from_items(list(X), list(range(len(X))), times, False)
    raise TypeError(
        f"unsupported input type {type(X).__name__}; expected a list of DataFrames, a "
        "MultiIndex DataFrame, a long DataFrame with id_col=, or a 2-D/3-D array"
    )


def _from_multiindex(df: pd.DataFrame) -> RaggedPanel:
    _check_two_levels(df.index)
    names = df.index.names
    return _from_grouped(
        df.index.get_level_values(0), df.index.get_level_values(1), df,
        id_name=names[0], time_name=names[1],
    )


def _check_two_levels(index: pd.MultiIndex, what: str = "the MultiIndex") -> None:
    if index.nlevels != 2:
        raise ValueError(f"{what} must have 2 levels (series, time), got {index.nlevels}")


def _from_long(df: pd.DataFrame, id_col, time_col) -> RaggedPanel:
    for role, col in (("id_col", id_col), ("time_col", time_col)):
        if col is not None and col not in df.columns:
            raise ValueError(f"{role} {col!r} is not a column of X (columns: {list(df.columns)})")
    if time_col is not None and time_col == id_col:
        raise ValueError("id_col and time_col must be different columns")
    features = df.drop(columns=[id_col] + ([] if time_col is None else [time_col]))
    times = None if time_col is None else pd.Index(df[time_col])
    return _from_grouped(pd.Index(df[id_col]), times, features, id_name=id_col, time_name=time_col)


def one_per_series(values, codes, ids, what: str = "y") -> np.ndarray:
    """Collapse per-row `values` to one entry per series.

    **Arguments:** `values`, array-like `(n_rows, ...)`; `codes`, int
    `(n_rows,)`, each row's series position in `ids` (every position
    present); `ids`, the series ids (for messages); `what`, the values'
    name in messages.

    **Returns:** each series' value (its first row's), first axis `len(ids)`.

    **Raises:** `ValueError` naming the series whose rows differ (NaN equals
    NaN).
    """
    values = np.asarray(values)
    codes = np.asarray(codes)
    _, first = np.unique(codes, return_index=True)
    per_series = values[first]
    repeated = per_series[codes]
    both_missing = np.asarray(pd.isna(values), dtype=bool) & np.asarray(pd.isna(repeated), dtype=bool)
    same = (np.asarray(values == repeated, dtype=bool) | both_missing).reshape(len(codes), -1).all(axis=1)
    if not same.all():
        row = int(np.flatnonzero(~same)[0])
        series = int(codes[row])
        raise ValueError(
            f"{what} has one entry per row of X, but it differs within series {ids[series]!r} "
            f"(rows {int(first[series])} and {row}: {values[first[series]].tolist()!r} and "
            f"{values[row].tolist()!r}); a per-series value must repeat on every row of its series"
        )
    return per_series


# --------------------------------------------------------------------------
# conversions back to pandas


def panel_to_frames(panel: RaggedPanel) -> list[pd.DataFrame]:
    """One DataFrame per series, indexed by its times (in the input's kind,
    with the input's time index name)."""
    return [
        pd.DataFrame(np.array(v), index=panel.time_index(i), columns=list(panel.columns))
        for i, v in enumerate(panel.values)
    ]


def frames_from_multiindex(df: pd.DataFrame | pd.Series) -> list:
    """Split a `(series, time)` MultiIndex frame into a list of per-series frames.

    scikit-learn's splitters (`cross_val_score`, `train_test_split`) index X
    by rows, so a MultiIndex frame would be cut into time steps. A list has
    one entry per series and splits correctly. The list follows the order of
    first appearance of the ids, i.e. `df.index.unique(level=0)`; dtypes and
    time stamps are kept exactly.
    """
    if not isinstance(df, (pd.DataFrame, pd.Series)) or not isinstance(df.index, pd.MultiIndex):
        raise TypeError("frames_from_multiindex needs a DataFrame or Series with a MultiIndex")
    _check_two_levels(df.index)
    return [g.droplevel(0) for _, g in df.groupby(level=0, sort=False)]


def check_columns(panel: RaggedPanel, expected_columns: Sequence, what: str = "X") -> RaggedPanel:
    """Check `panel` (the argument `what`) has the features seen in fit; return it with columns in fit order.

    Same names in another order are reordered; a different number of
    features or different names raise a `ValueError` naming the columns.
    """
    expected = tuple(str(c) for c in expected_columns)
    got = panel.columns
    if got == expected:
        return panel
    if len(got) != len(expected):
        raise ValueError(
            f"{what} has {len(got)} feature columns {list(got)} but {len(expected)} were seen in "
            f"fit: {list(expected)}"
        )
    positions, missing, extra = _column_positions(got, expected)
    if positions is None:
        raise ValueError(
            f"{what}'s feature columns differ from those seen in fit: missing {missing}, "
            f"unexpected {extra}"
        )
    return dataclasses.replace(panel, values=tuple(v[:, positions] for v in panel.values), columns=expected)


# --------------------------------------------------------------------------
# time scale and gaps


def time_scale_from(panel: RaggedPanel) -> float:
    """The median gap between consecutive times over all series (positive):
    `MedianGap`'s, as a streamed pass over the same series gathers it
    (exact up to 2²² gaps).

    Falls back to 1.0 when every series has a single time.
    """
    median = MedianGap()
    for t in panel.times:
        median.add(np.diff(t))
    return median.median()


def gaps_from_times(
    times: Float[np.ndarray, " L"], scale: float, first_gap: float = 1.0
) -> Float[np.ndarray, " L"]:
    r"""Per-step gaps in model units: $g_0$ = `first_gap`, $g_k = (t_k - t_{k-1}) / s$.

    **Arguments:**

    - `times`: strictly increasing times, shape `(L,)`.
    - `scale`: the time scale $s > 0$ (see `time_scale_from`).
    - `first_gap`: the gap assigned to the first step (it has no predecessor).

    **Returns:** float64 gaps, shape `(L,)`.

    >>> gaps_from_times(np.array([0.0, 2.0, 3.0]), scale=2.0)
    array([1. , 1. , 0.5])
    """
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    times = np.asarray(times, dtype=np.float64)
    if times.ndim != 1:
        raise ValueError(f"times must be 1-D, got shape {times.shape}")
    gaps = np.empty_like(times)
    if times.shape[0]:
        gaps[0] = first_gap
        gaps[1:] = np.diff(times) / scale
    return gaps
