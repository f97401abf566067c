"""Targets y → `Targets`, aligned with a `RaggedPanel`: one per series
(`"sequence"`) or one per observed step (`"per_step"`); see `to_targets`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
import pandas as pd

from ._panel import RaggedPanel, _check_two_levels, _series, _times_to_seconds, one_per_series

TargetKind = Literal["sequence", "per_step"]


@dataclasses.dataclass(frozen=True, eq=False)
class Targets:
    """Validated targets.

    **Fields:**

    - `values`: for `"sequence"` an array `(n,)` or `(n, k)`; for
      `"per_step"` a tuple of n arrays `(L_i,)` or `(L_i, k)`. float64 when
      numeric, otherwise the labels as given.
    - `columns`: target names (str) for DataFrame targets, else None.
    """

    kind: TargetKind
    values: np.ndarray | tuple
    columns: tuple | None = None

    @property
    def is_1d(self) -> bool:
        return (self.values if self.kind == "sequence" else self.values[0]).ndim == 1

    @property
    def n_outputs(self) -> int:
        """k, or 1 for 1-D targets."""
        return 1 if self.is_1d else (self.values if self.kind == "sequence" else self.values[0]).shape[1]


def _is_list_of_series(y) -> bool:
    return isinstance(y, (list, tuple)) or (
        isinstance(y, np.ndarray) and y.dtype == object and y.ndim == 1
    )


def _infer_kind(y, panel: RaggedPanel) -> TargetKind:
    if isinstance(y, (pd.Series, pd.DataFrame)):
        if isinstance(y.index, pd.MultiIndex):
            return "per_step"
        if isinstance(y, pd.Series) and y.dtype == object:
            if any(np.ndim(v) or isinstance(v, (pd.DataFrame, pd.Series)) for v in y):
                return "per_step"
        return "sequence"
    if _is_list_of_series(y):
        if any(isinstance(v, (pd.Series, pd.DataFrame, np.ndarray)) and np.ndim(v) >= 1 for v in y):
            return "per_step"
        if any(isinstance(v, (list, tuple)) for v in y):
            lens = {len(v) for v in y if isinstance(v, (list, tuple))}
            if len(lens) > 1:
                return "per_step"  # ragged lists can only be per-step targets
    arr = np.asarray(y) if not isinstance(y, np.ndarray) else y
    if arr.ndim == 3:
        return "per_step"
    if arr.ndim == 2 and arr.shape[0] == panel.n_series:
        max_len = int(panel.lengths.max())
        if arr.shape[1] == max_len and max_len > 1:
            raise ValueError(
                f"y has shape {arr.shape}: (n, k) targets per series or (n, L) targets per "
                "time step? Pass kind='sequence' or kind='per_step'"
            )
    return "sequence"


def _as_numeric(arr, sid=None) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind in "biufO":  # object arrays of numbers convert too
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            pass
    where = "y" if sid is None else f"y for {_series(sid)}"
    raise TypeError(f"{where} is not numeric (dtype {arr.dtype}); regression needs numbers")


def _bad_rows(arr: np.ndarray, numeric: bool) -> np.ndarray:
    """Rows (first axis) holding NaN/inf (numeric) or missing labels."""
    bad = ~np.isfinite(arr) if numeric else np.asarray(pd.isna(arr), dtype=bool)
    return bad.reshape(bad.shape[0], -1).any(axis=1) if bad.ndim else bad.reshape(1)


def _missing_error(sid, numeric) -> ValueError:
    return ValueError(f"y for {_series(sid)} " + ("contains NaN or inf" if numeric else "has a missing label (NaN/None)"))


def _check_entries(values, sid, numeric):
    """One series' targets: float64 without NaN/inf, or labels without NaN/None."""
    arr = _as_numeric(values, sid) if numeric else np.asarray(values)
    if arr.size and _bad_rows(arr, numeric).any():
        raise _missing_error(sid, numeric)
    return arr


def _pandas_values(y, numeric):
    """Values of a pandas object, NA as NaN (numeric) or None/NaN (labels)."""
    if numeric:
        if isinstance(y, pd.DataFrame):
            for c, dt in zip(y.columns, y.dtypes):
                if not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)):
                    raise TypeError(f"y column {str(c)!r} is not numeric (dtype {dt})")
        elif not (pd.api.types.is_numeric_dtype(y.dtype) or pd.api.types.is_bool_dtype(y.dtype)):
            raise TypeError(f"y is not numeric (dtype {y.dtype})")
        return y.to_numpy(dtype=np.float64, na_value=np.nan)
    dtypes = y.dtypes if isinstance(y, pd.DataFrame) else [y.dtype]
    categorical = any(isinstance(dt, pd.CategoricalDtype) for dt in dtypes)
    return y.to_numpy(dtype=object) if categorical else y.to_numpy()


def _columns_of(y):
    return tuple(str(c) for c in y.columns) if isinstance(y, pd.DataFrame) else None


def _name_ids(ids, limit=10):
    ids = list(ids)
    more = f" (and {len(ids) - limit} more)" if len(ids) > limit else ""
    return f"{ids[:limit]!r}{more}"


def order_by_ids(labels, panel: RaggedPanel, what="y") -> np.ndarray:
    """Positions in `labels` (a sequence of ids) of each id of `panel`, (n,)
    int64: `values[order_by_ids(labels, panel)]` puts values keyed by
    `labels` in the panel's order.

    **Raises:** `ValueError` naming `what` and the duplicated, missing or
    extra ids."""
    labels = pd.Index(labels)
    if not labels.is_unique:
        dup = labels[labels.duplicated()][0]
        raise ValueError(f"{what} has more than one entry for series {dup!r}")
    pos = labels.get_indexer(pd.Index(list(panel.ids)))
    if (pos < 0).any():
        missing = [sid for sid, p in zip(panel.ids, pos) if p < 0]
        raise ValueError(f"{what} has no entry for series {_name_ids(missing)} of X")
    if len(labels) != panel.n_series:
        known = set(panel.ids)
        extra = [lab for lab in labels if lab not in known]
        raise ValueError(f"{what} has entries for series {_name_ids(extra)} that are not in X")
    return pos


def _per_row(y, panel: RaggedPanel) -> bool:
    """Whether `y` has one entry per row of a long or MultiIndex X (and so
    not one per series: with as many rows as series, the two coincide)."""
    rows = panel.row_series
    return rows is not None and rows.shape[0] != panel.n_series and np.shape(y)[:1] == rows.shape


def _sequence_targets(y, panel: RaggedPanel, numeric: bool) -> Targets:
    n = panel.n_series
    columns = _columns_of(y)
    if isinstance(y, (pd.Series, pd.DataFrame)):
        vals = _pandas_values(y, numeric)
        if isinstance(y.index, pd.MultiIndex):
            # (series, time) rows: one value per series, repeated on its rows.
            codes, keys = pd.factorize(y.index.get_level_values(0))
            vals = one_per_series(vals, codes, list(keys))
            vals = vals[order_by_ids(keys, panel)]
        elif _per_row(y, panel):
            vals = panel.rows_to_series(vals)
        elif panel.ids_are_labels:
            vals = vals[order_by_ids(y.index, panel)]
    else:
        vals = np.asarray(y)
        if _per_row(vals, panel):
            vals = panel.rows_to_series(vals)
    if vals.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D (n,) or 2-D (n, k) for sequence targets, got {vals.shape}")
    if vals.shape[0] != n:
        raise ValueError(f"y has {vals.shape[0]} entries but X has {n} series")
    if vals.ndim == 2 and vals.shape[1] == 0:
        raise ValueError("y has no target columns")
    values = _as_numeric(vals) if numeric else vals
    bad = _bad_rows(values, numeric)
    if bad.any():
        raise _missing_error(panel.ids[int(np.flatnonzero(bad)[0])], numeric)
    return Targets("sequence", values, columns)


def _per_step_item(item, sid, L, times, time_kind, numeric):
    """One series' per-step targets, checked against its length and times."""
    if isinstance(item, (pd.Series, pd.DataFrame)):
        if len(item) != L:
            raise ValueError(f"y for {_series(sid)} has {len(item)} steps but the series has {L}")
        idx = item.index
        default = isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1
        if not default:
            try:
                sec, _, kind, _ = _times_to_seconds(idx, sid)
            except TypeError:
                raise ValueError(
                    f"y for {_series(sid)} has an index that is not the series' times"
                ) from None
            if kind != time_kind or not np.array_equal(sec, times):
                raise ValueError(
                    f"y for {_series(sid)}: its index does not equal the series' times"
                )
        vals = _pandas_values(item, numeric)
    else:
        vals = np.asarray(item)
        if vals.ndim not in (1, 2):
            raise ValueError(
                f"y for {_series(sid)} must be (L,) or (L, k), got shape {vals.shape}"
            )
        if vals.shape[0] != L:
            raise ValueError(
                f"y for {_series(sid)} has {vals.shape[0]} steps but the series has {L}"
            )
    return _check_entries(vals, sid, numeric)


def steps_by_series(y) -> dict:
    """A `(series, time)` MultiIndex Series / DataFrame `y` split by
    series: {id: its rows, indexed by time, sorted (y's rows need not
    follow X's order)}, in y's order of the series.

    **Raises:** `ValueError` when the MultiIndex has other than 2 levels.
    """
    _check_two_levels(y.index, "y's MultiIndex")
    groups = {}
    for key, group in y.groupby(level=0, sort=False):
        item = group.droplevel(0)
        groups[key] = item if item.index.is_monotonic_increasing else item.sort_index()
    return groups


def _per_step_targets(y, panel: RaggedPanel, numeric: bool) -> Targets:
    n = panel.n_series
    lengths = panel.lengths
    if isinstance(y, (pd.Series, pd.DataFrame)) and isinstance(y.index, pd.MultiIndex):
        groups = steps_by_series(y)
        keys = list(groups)
        items = [groups[keys[p]] for p in order_by_ids(keys, panel)]
        out = []
        for i, (sid, item) in enumerate(zip(panel.ids, items)):
            if len(item) != lengths[i]:
                raise ValueError(
                    f"y for {_series(sid)} has {len(item)} steps but the series has {lengths[i]}"
                )
            sec, _, kind, _ = _times_to_seconds(item.index, sid)
            if kind != panel.time_kind or not np.array_equal(sec, panel.times[i]):
                raise ValueError(f"y for {_series(sid)}: its time stamps do not equal X's")
            out.append(_check_entries(_pandas_values(item, numeric), sid, numeric))
        return Targets("per_step", tuple(out), _columns_of(y))

    if isinstance(y, pd.Series) and not isinstance(y.index, pd.MultiIndex):
        items = list(y)
        if panel.ids_are_labels:
            items = [items[p] for p in order_by_ids(y.index, panel)]
    elif _is_list_of_series(y):
        items = list(y)
    else:
        arr = np.asarray(y)
        if arr.ndim not in (2, 3):
            raise ValueError(f"per-step y as an array must be (n, L) or (n, L, k), got {arr.shape}")
        if arr.shape[0] != n:
            raise ValueError(f"y has {arr.shape[0]} entries but X has {n} series")
        for i, sid in enumerate(panel.ids):
            if arr.shape[1] < lengths[i]:
                raise ValueError(
                    f"y has {arr.shape[1]} steps per series but {_series(sid)} has {lengths[i]}"
                )
        items = [arr[i, : lengths[i]] for i in range(n)]
    if len(items) != n:
        raise ValueError(f"y has {len(items)} entries but X has {n} series")
    out = [
        _per_step_item(item, sid, int(lengths[i]), panel.times[i], panel.time_kind, numeric)
        for i, (sid, item) in enumerate(zip(panel.ids, items))
    ]
    shapes = {a.shape[1:] for a in out}
    if len(shapes) > 1:
        raise ValueError(
            f"per-step y has inconsistent trailing shapes across series: {sorted(shapes)}"
        )
    cols = {_columns_of(item) for item in items if isinstance(item, pd.DataFrame)}
    return Targets("per_step", tuple(out), cols.pop() if len(cols) == 1 else None)


def to_targets(
    y,
    panel: RaggedPanel,
    *,
    numeric: bool = True,
    kind: TargetKind | None = None,
) -> Targets:
    """Validate targets and align them with `panel`.

    **Arguments:**

    - `y`: one of
        - array-like `(n,)` / `(n, k)`: one target per series;
        - a pandas Series / DataFrame indexed by series id (aligned to the
          panel's ids when those are labels, else taken in order);
        - per step: a list of n arrays / Series / DataFrames of lengths `L_i`
          (a pandas index, unless the default `0..L_i-1`, must equal the
          series' times); a `(series, time)` MultiIndex Series/DataFrame
          matching X's rows; a padded array `(n, L)` or `(n, L, k)` with
          `L >= max L_i` (the padding is ignored).
    - `panel`: the `RaggedPanel` the targets belong to.
    - `numeric`: True for regression (float64, NaN/inf rejected); False for
      classification (labels kept as given; NaN/None rejected).
    - `kind`: `"sequence"` or `"per_step"`; None infers it. A 2-D array of
      shape `(n, max L_i)` is ambiguous and needs `kind`.

    **Returns:** a `Targets`.

    >>> import numpy as np
    >>> from s5ts.data import to_panel
    >>> panel = to_panel([np.zeros(3), np.zeros(2)])
    >>> to_targets([1.0, 2.0], panel).values
    array([1., 2.])
    >>> to_targets([np.ones(3), np.zeros(2)], panel).kind
    'per_step'
    """
    if not isinstance(panel, RaggedPanel):
        raise TypeError(f"panel must be a RaggedPanel, got {type(panel).__name__}")
    if y is None:
        raise ValueError("y is required")
    if kind is None:
        kind = _infer_kind(y, panel)
    if kind == "sequence":
        return _sequence_targets(y, panel, numeric)
    if kind == "per_step":
        return _per_step_targets(y, panel, numeric)
    raise ValueError(f"kind must be 'sequence', 'per_step' or None, got {kind!r}")
