"""s5ts.data._targets: y → Targets aligned with a RaggedPanel."""

import numpy as np
import pandas as pd
import pytest

from conftest import unchecked
from s5ts.data import to_panel, to_targets


def _frames():
    t = pd.date_range("2024-01-01", periods=5, freq="min")
    return {
        "a": pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=t[[0, 2, 3]]),
        "b": pd.DataFrame({"x": [4.0, 5.0]}, index=t[[1, 4]]),
        "c": pd.DataFrame({"x": [6.0, 7.0, 8.0, 9.0]}, index=t[:4]),
    }


@pytest.fixture
def labelled():
    """A panel whose ids are labels ('a', 'b', 'c'), lengths 3, 2, 4."""
    return to_panel(pd.concat(_frames()))


@pytest.fixture
def positional():
    return to_panel(list(_frames().values()))


# --------------------------------------------------------------------------
# one target per series


def test_sequence_from_arrays(positional):
    t = to_targets([1, 2, 3], positional)
    assert t.kind == "sequence" and t.values.dtype == np.float64 and t.columns is None
    np.testing.assert_array_equal(t.values, [1.0, 2.0, 3.0])
    t2 = to_targets(np.arange(6).reshape(3, 2), positional)
    assert t2.values.shape == (3, 2) and t2.n_outputs == 2


def test_sequence_series_reordered_by_id(labelled):
    y = pd.Series({"c": 30.0, "a": 10.0, "b": 20.0})
    np.testing.assert_array_equal(to_targets(y, labelled).values, [10.0, 20.0, 30.0])
    ydf = pd.DataFrame({"u": [3.0, 1.0, 2.0], "v": [6.0, 4.0, 5.0]}, index=["c", "a", "b"])
    t = to_targets(ydf, labelled)
    assert t.columns == ("u", "v")
    np.testing.assert_array_equal(t.values, [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])


def test_sequence_series_missing_ids(labelled):
    y = pd.Series({"a": 1.0, "c": 3.0, "zz": 9.0})
    with pytest.raises(ValueError, match=r"no entry for series \['b'\]"):
        to_targets(y, labelled)


def test_sequence_series_extra_ids(labelled):
    y = pd.Series({"a": 1.0, "b": 2.0, "c": 3.0, "zz": 9.0})
    with pytest.raises(ValueError, match=r"entries for series \['zz'\] that are not in X"):
        to_targets(y, labelled)


def test_sequence_series_duplicate_ids(labelled):
    y = pd.Series([1.0, 2.0, 3.0], index=["a", "a", "b"])
    with pytest.raises(ValueError, match=r"more than one entry for series 'a'"):
        to_targets(y, labelled)


def test_positional_panel_takes_series_in_order(positional):
    # as after an sklearn split of a list: y keeps its old labels
    y = pd.Series([1.0, 2.0, 3.0], index=[7, 2, 0])
    np.testing.assert_array_equal(to_targets(y, positional).values, [1.0, 2.0, 3.0])


def test_wrong_number_of_targets(positional):
    with pytest.raises(ValueError, match="y has 2 entries but X has 3 series"):
        to_targets([1.0, 2.0], positional)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_sequence_nan_or_inf(labelled, bad):
    y = pd.Series({"a": 1.0, "b": bad, "c": 3.0})
    with pytest.raises(ValueError, match=r"y for series 'b' contains NaN or inf"):
        to_targets(y, labelled)


def test_sequence_non_numeric(positional):
    with pytest.raises(TypeError, match="not numeric"):
        to_targets(["u", "v", "w"], positional)


def test_labels_kept_for_classification(labelled):
    y = pd.Series({"b": "dog", "a": "cat", "c": "cat"}, dtype="category")
    t = to_targets(y, labelled, numeric=False)
    assert list(t.values) == ["cat", "dog", "cat"]


@pytest.mark.parametrize("missing", [None, np.nan])
def test_missing_label(positional, missing):
    with pytest.raises(ValueError, match=r"y for series 2 has a missing label"):
        to_targets(np.array(["cat", "dog", missing], dtype=object), positional, numeric=False)


# --------------------------------------------------------------------------
# one target per time step


def test_per_step_list_of_arrays(positional):
    y = [np.arange(3.0), np.arange(2.0), np.arange(4.0)]
    t = to_targets(y, positional)
    assert t.kind == "per_step" and len(t.values) == 3
    for got, want in zip(t.values, y):
        np.testing.assert_array_equal(got, want)


def test_per_step_ragged_lists(positional):
    t = to_targets([[1, 2, 3], [4, 5], [6, 7, 8, 9]], positional)
    assert t.kind == "per_step"
    np.testing.assert_array_equal(t.values[2], [6.0, 7.0, 8.0, 9.0])


def test_per_step_length_mismatch(positional):
    with pytest.raises(ValueError, match=r"y for series 1 has 3 steps but the series has 2"):
        to_targets([np.arange(3.0), np.arange(3.0), np.arange(4.0)], positional)


def test_per_step_series_with_times(positional):
    frames = list(_frames().values())
    y = [pd.Series(df["x"].to_numpy() * 2, index=df.index) for df in frames]
    t = to_targets(y, positional)
    np.testing.assert_array_equal(t.values[2], [12.0, 14.0, 16.0, 18.0])
    # default RangeIndex: taken positionally
    t2 = to_targets([pd.Series(s.to_numpy()) for s in y], positional)
    np.testing.assert_array_equal(t2.values[1], [8.0, 10.0])


def test_per_step_index_not_the_times(positional):
    frames = list(_frames().values())
    y = [pd.Series(df["x"].to_numpy(), index=df.index) for df in frames]
    y[1] = pd.Series([1.0, 2.0], index=frames[1].index + pd.Timedelta("1s"))
    with pytest.raises(ValueError, match=r"y for series 1: its index does not equal"):
        to_targets(y, positional)


def test_per_step_multiindex(labelled):
    mi = pd.concat(_frames())
    y = (mi["x"] * 10).sample(frac=1.0, random_state=0)  # rows shuffled across series and time
    t = to_targets(y.rename("target"), labelled)
    assert t.kind == "per_step"
    np.testing.assert_array_equal(t.values[0], [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(t.values[1], [40.0, 50.0])
    tdf = to_targets(y.to_frame("target"), labelled)
    assert tdf.columns == ("target",) and tdf.values[2].shape == (4, 1)


def test_per_step_multiindex_time_mismatch(labelled):
    mi = pd.concat(_frames())
    y = mi["x"].copy()
    idx = y.index.to_frame()
    idx.iloc[3, 1] = idx.iloc[3, 1] + pd.Timedelta("1s")  # first row of series 'b'
    y.index = pd.MultiIndex.from_frame(idx)
    with pytest.raises(ValueError, match=r"y for series 'b': its time stamps do not equal X's"):
        to_targets(y, labelled)


def test_per_step_multiindex_missing_series(labelled):
    y = pd.concat(_frames())["x"].drop("b", level=0)
    with pytest.raises(ValueError, match=r"no entry for series \['b'\]"):
        to_targets(y, labelled)


def test_per_step_padded_arrays():
    times = np.array([[0.0, 1.0, 2.0, 3.0], [0.0, 0.5, np.nan, np.nan]])
    panel = to_panel(np.ones((2, 4, 2)), times=times)
    y2 = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, np.nan, np.nan]])  # NaN padding ignored
    with pytest.raises(ValueError, match="ambiguous|kind="):
        to_targets(y2, panel)
    t = to_targets(y2, panel, kind="per_step")
    np.testing.assert_array_equal(t.values[1], [5.0, 6.0])
    y3 = np.zeros((2, 4, 3))
    t3 = to_targets(y3, panel)
    assert t3.kind == "per_step" and t3.values[1].shape == (2, 3)
    seq = to_targets(y2[:, :2], panel)  # (n, k) with k != L: one target per series
    assert seq.kind == "sequence" and seq.values.shape == (2, 2)
    forced = to_targets(np.nan_to_num(y2), panel, kind="sequence")  # k == max L, told so
    assert forced.kind == "sequence" and forced.values.shape == (2, 4)


def test_per_step_padded_array_too_short():
    panel = to_panel(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"y has 3 steps per series but series 0 has 4"):
        to_targets(np.zeros((2, 3, 1)), panel)


def test_per_step_nan(positional):
    y = [np.arange(3.0), np.array([1.0, np.nan]), np.arange(4.0)]
    with pytest.raises(ValueError, match=r"y for series 1 contains NaN or inf"):
        to_targets(y, positional)


def test_per_step_labels(positional):
    y = [np.array(["a", "b", "a"]), np.array(["b", "b"]), np.array(["a"] * 4)]
    t = to_targets(y, positional, numeric=False)
    assert t.kind == "per_step" and list(t.values[1]) == ["b", "b"]
    y[2] = np.array(["a", None, "a", "a"], dtype=object)
    with pytest.raises(ValueError, match=r"y for series 2 has a missing label"):
        to_targets(y, positional, numeric=False)


def test_bad_kind(positional):
    with pytest.raises(ValueError, match="kind must be"):
        unchecked(to_targets)([1.0, 2.0, 3.0], positional, kind="global")


# --------------------------------------------------------------------------
# long and MultiIndex X: y per series (by id, or in order of first
# appearance) or per row


def _long():
    return pd.DataFrame({
        "patient": ["p1", "p2", "p1", "p1", "p2"],
        "hours": [0.0, 0.0, 1.5, 4.0, 2.0],
        "hr": [80.0, 95.0, 82.0, 79.0, 90.0],
        "label": ["sick", "well", "sick", "sick", "well"],
    })


def test_long_frame_targets_by_id_in_order_or_per_row():
    long = _long()
    panel = to_panel(long.drop(columns="label"), id_col="patient", time_col="hours")
    # in order of first appearance of the ids
    assert to_targets(["sick", "well"], panel, numeric=False, kind="sequence").values.tolist() == ["sick", "well"]
    # a Series indexed by id, in any order
    by_id = pd.Series({"p2": 2.0, "p1": 1.0})
    assert to_targets(by_id, panel).values.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"y has no entry for series \['p2'\] of X"):
        to_targets(pd.Series({"p1": 1.0, "p3": 3.0}), panel)
    with pytest.raises(ValueError, match=r"y has entries for series \['p3'\] that are not in X"):
        to_targets(pd.Series({"p1": 1.0, "p2": 2.0, "p3": 3.0}), panel)
    # one entry per row (a label column of the same query), as array or Series
    assert to_targets(long["label"], panel, numeric=False, kind="sequence").values.tolist() == ["sick", "well"]
    assert to_targets(long["label"].to_numpy(), panel, numeric=False).values.tolist() == ["sick", "well"]
    with pytest.raises(ValueError, match=r"differs within series 'p2' \(rows 1 and 4"):
        to_targets(np.array([1.0, 2.0, 1.0, 1.0, 3.0]), panel)


def test_multiindex_y_per_row_for_sequence_targets():
    long = _long()
    mi = long.set_index(["patient", "hours"])
    panel = to_panel(mi[["hr"]])
    labels = to_targets(mi["label"].iloc[::-1], panel, numeric=False, kind="sequence")  # any row order
    assert labels.values.tolist() == ["sick", "well"]
    with pytest.raises(ValueError, match=r"differs within series 'p1'"):
        to_targets(mi["hr"], panel, kind="sequence")


def test_one_column_frame_of_labels():
    panel = to_panel(_long().drop(columns="label"), id_col="patient", time_col="hours")
    y = pd.DataFrame({"outcome": pd.Categorical(["sick", "well"])}, index=["p1", "p2"])
    targets = to_targets(y, panel, numeric=False, kind="sequence")
    assert targets.values.tolist() == [["sick"], ["well"]] and targets.columns == ("outcome",)
