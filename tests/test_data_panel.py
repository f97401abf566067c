"""s5ts.data._panel: input formats → RaggedPanel, validation, conversions back."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from s5ts.data import (
    RaggedPanel,
    check_columns,
    frames_from_multiindex,
    gaps_from_times,
    panel_to_frames,
    time_scale_from,
    to_panel,
)


def _frames():
    """Three series with different lengths and irregular datetime stamps."""
    rng = np.random.default_rng(0)
    out = {}
    for sid, L in (("a", 4), ("b", 2), ("c", 5)):
        offsets = pd.to_timedelta(np.cumsum(rng.integers(1, 100, L)), unit="s")
        t = pd.Timestamp("2024-01-01") + offsets
        out[sid] = pd.DataFrame(
            {"x": rng.normal(size=L), "y": rng.normal(size=L)}, index=pd.DatetimeIndex(t)
        )
    return out


def assert_same_panel(p, q, *, ids=True):
    assert p.columns == q.columns
    assert p.time_kind == q.time_kind and p.tz == q.tz
    assert len(p.values) == len(q.values)
    if ids:
        assert p.ids == q.ids
    for a, b in zip(p.values, q.values):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(p.times, q.times):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# formats and round trips


def test_list_of_frames():
    frames = _frames()
    panel = to_panel(list(frames.values()))
    assert panel.ids == (0, 1, 2) and not panel.ids_are_labels
    assert panel.n_series == 3 and panel.n_features == 2 and len(panel) == 3
    np.testing.assert_array_equal(panel.lengths, [4, 2, 5])
    assert panel.columns == ("x", "y") and panel.time_kind == "datetime" and panel.tz is None
    for (sid, df), v, t in zip(frames.items(), panel.values, panel.times):
        np.testing.assert_array_equal(v, df.to_numpy())
        assert v.dtype == np.float64 and t.dtype == np.float64
        # naive reference: seconds since the epoch via Python datetimes
        ref = [(ts - pd.Timestamp("1970-01-01")).total_seconds() for ts in df.index]
        np.testing.assert_array_equal(t, ref)


def test_formats_round_trip():
    frames = _frames()
    from_series = to_panel(pd.Series(frames))
    assert from_series.ids == ("a", "b", "c") and from_series.ids_are_labels
    mi = pd.concat(frames, names=["sid", "when"])
    from_mi = to_panel(mi)
    long = mi.reset_index()
    from_long = to_panel(long, id_col="sid", time_col="when")
    assert_same_panel(from_series, from_mi)
    assert_same_panel(from_series, from_long)
    assert_same_panel(from_series, to_panel(list(frames.values())), ids=False)
    # panel → MultiIndex → panel, and panel → frames → panel
    assert_same_panel(from_mi, to_panel(from_mi.to_multiindex()))
    assert_same_panel(from_mi, to_panel(panel_to_frames(from_mi)), ids=False)
    # frames_from_multiindex keeps dtypes and time stamps exactly
    split = frames_from_multiindex(mi)
    for got, want in zip(split, frames.values()):
        pd.testing.assert_frame_equal(got, want, check_names=False)
    assert_same_panel(from_mi, to_panel(split), ids=False)


def test_multiindex_interleaved_rows_and_first_appearance_order():
    frames = _frames()
    mi = pd.concat(frames).sample(frac=1.0, random_state=0)
    mi = mi.sort_index(level=1, sort_remaining=False)  # rows of series interleaved by time
    panel = to_panel(mi)
    first_seen = list(dict.fromkeys(mi.index.get_level_values(0)))
    assert list(panel.ids) == first_seen
    for sid, v in zip(panel.ids, panel.values):
        np.testing.assert_array_equal(v, frames[sid].to_numpy())


def test_long_frame_without_time_col_uses_row_order():
    long = pd.DataFrame({"id": ["u", "u", "v", "u"], "x": [1.0, 2.0, 3.0, 4.0]})
    panel = to_panel(long, id_col="id")
    assert panel.ids == ("u", "v")
    np.testing.assert_array_equal(panel.times[0], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(panel.values[0][:, 0], [1.0, 2.0, 4.0])


def test_arrays_3d_2d_and_list_of_arrays_agree():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, 6, 2))
    times = np.sort(rng.uniform(0, 10, size=(3, 6)), axis=1)
    times[1, 4:] = np.nan  # trailing padding: series 1 has 4 steps
    panel = to_panel(X, times=times)
    np.testing.assert_array_equal(panel.lengths, [6, 4, 6])
    np.testing.assert_array_equal(panel.values[1], X[1, :4])
    np.testing.assert_array_equal(panel.times[1], times[1, :4])
    assert panel.columns == ("0", "1") and panel.time_kind == "numeric"
    as_list = to_panel([X[0], X[1, :4], X[2]], times=[times[0], times[1, :4], times[2]])
    assert_same_panel(panel, as_list)

    uni = to_panel(X[:, :, 0])
    assert uni.n_features == 1 and uni.columns == ("0",)
    np.testing.assert_array_equal(uni.times[2], np.arange(6.0))
    np.testing.assert_array_equal(uni.values[2][:, 0], X[2, :, 0])


def test_array_datetime_times_with_nat_padding():
    t = np.array(
        [
            ["2024-01-01T00:00", "2024-01-01T00:10", "NaT"],
            ["2024-01-01T00:00", "2024-01-01T00:01", "2024-01-01T00:05"],
        ],
        dtype="datetime64[s]",
    )
    panel = to_panel(np.ones((2, 3)), times=t)
    np.testing.assert_array_equal(panel.lengths, [2, 3])
    assert panel.time_kind == "datetime"
    np.testing.assert_array_equal(np.diff(panel.times[0]), [600.0])


def test_series_items_bool_and_column_names():
    s1 = pd.Series([1.0, np.nan, 3.0], index=[0.0, 0.5, 2.0])
    s2 = pd.Series([4.0, 5.0], index=[1.0, 3.0])
    panel = to_panel((s1, s2))
    assert panel.columns == ("0",)
    assert np.isnan(panel.values[0][1, 0])  # NaN features are allowed

    df = pd.DataFrame({1: [True, False], "b": [1, 2]}, index=[0, 1])
    panel = to_panel([df])
    assert panel.columns == ("1", "b")
    np.testing.assert_array_equal(panel.values[0], [[1.0, 1.0], [0.0, 2.0]])


def test_nullable_dtypes_become_nan():
    df = pd.DataFrame({"x": pd.array([1, None, 3], dtype="Int64")}, index=[0, 1, 2])
    v = to_panel([df]).values[0]
    assert np.isnan(v[1, 0]) and v[2, 0] == 3.0


def test_columns_reordered_to_first_series():
    a = pd.DataFrame({"x": [1.0], "y": [2.0]}, index=[0])
    b = pd.DataFrame({"y": [4.0], "x": [3.0]}, index=[0])
    panel = to_panel([a, b])
    np.testing.assert_array_equal(panel.values[1], [[3.0, 4.0]])


def test_timedelta_and_numeric_times():
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.to_timedelta([1.5, 4.0], unit="s"))
    panel = to_panel([df])
    assert panel.time_kind == "timedelta"
    np.testing.assert_array_equal(panel.times[0], [1.5, 4.0])
    back = panel_to_frames(panel)[0]
    assert isinstance(back.index, pd.TimedeltaIndex)
    np.testing.assert_array_equal(back.index.total_seconds(), [1.5, 4.0])

    num = to_panel([pd.DataFrame({"x": [1.0, 2.0]}, index=[3, 7])])
    assert num.time_kind == "numeric"
    np.testing.assert_array_equal(num.times[0], [3.0, 7.0])


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_datetime_units_give_identical_seconds(unit):
    stamps = pd.DatetimeIndex(
        ["2024-03-01 12:00:00.250", "2024-03-01 12:00:01.5", "2024-03-02 00:00:00"]
    )
    if unit == "s":
        stamps = stamps.floor("s")
    ns = to_panel([pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=stamps.as_unit("ns"))])
    other = to_panel([pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=stamps.as_unit(unit))])
    assert np.array_equal(ns.times[0], other.times[0])  # bit-identical
    ref = (stamps.as_unit("ns").asi8 - 0) / 1e9
    np.testing.assert_allclose(ns.times[0], ref, rtol=0, atol=1e-6)


def test_tz_aware_times():
    utc = pd.date_range("2024-03-31 00:00", periods=4, freq="h", tz="UTC")
    berlin = utc.tz_convert("Europe/Berlin")  # crosses the DST change
    p_utc = to_panel([pd.DataFrame({"x": np.arange(4.0)}, index=utc)])
    p_ber = to_panel([pd.DataFrame({"x": np.arange(4.0)}, index=berlin)])
    assert p_ber.tz == "Europe/Berlin" and p_utc.tz == "UTC"
    np.testing.assert_array_equal(p_utc.times[0], p_ber.times[0])  # same instants
    np.testing.assert_array_equal(np.diff(p_ber.times[0]), [3600.0] * 3)  # real elapsed time
    back = p_ber.to_multiindex().index.get_level_values(1)
    assert str(back.tz) == "Europe/Berlin"
    assert (back == berlin).all()


def test_panel_is_frozen_and_read_only():
    panel = to_panel([np.arange(3.0)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        panel.ids = (5,)
    with pytest.raises(ValueError):
        panel.values[0][0, 0] = 1.0


def test_panel_does_not_alias_user_data():
    X = np.ones((2, 3))
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=[0, 1])
    from_array, from_frame = to_panel(X), to_panel([df])
    X[:] = 5.0
    df.iloc[0, 0] = 7.0
    assert (from_array.values[0] == 1.0).all() and from_frame.values[0][0, 0] == 1.0


def test_subset_and_to_panel_of_panel():
    panel = to_panel(pd.Series(_frames()))
    sub = panel.subset([2, 0])
    assert sub.ids == ("c", "a") and sub.ids_are_labels and sub.columns == panel.columns
    assert sub.values[0] is panel.values[2]  # frozen arrays are shared, not copied
    assert to_panel(panel) is panel


# --------------------------------------------------------------------------
# bad input: one test per case; messages name the series and the column


def _with(sid_frames, sid, df):
    frames = dict(sid_frames)
    frames[sid] = df
    return pd.Series(frames)


@pytest.mark.parametrize(
    "X",
    [{"a": 1}, "text", 3.0, np.zeros(5), np.zeros((2, 3, 4, 5)), pd.DataFrame({"x": [1.0]})],
    ids=["dict", "str", "float", "1d-array", "4d-array", "flat-frame"],
)
def test_unsupported_type(X):
    with pytest.raises((TypeError, ValueError)):
        to_panel(X)


def test_unsupported_type_message():
    with pytest.raises(TypeError, match="unsupported input type dict"):
        to_panel({"a": 1})


def _stamps(*seconds):
    return pd.Timestamp("2024-01-01") + pd.to_timedelta(list(seconds), unit="s")


def test_unsorted_times():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": 0.0}, index=_stamps(0, 2, 1))
    with pytest.raises(ValueError, match=r"series 'b'.*not sorted"):
        to_panel(_with(_frames(), "b", df))


def test_rows_of_a_multiindex_frame_in_any_order_are_the_same_panel():
    """A MultiIndex frame's rows are a set: shuffled, they give the sorted
    panel (series in order of first appearance, each in time order)."""
    mi = pd.concat(_frames())
    shuffled = mi.iloc[np.random.default_rng(0).permutation(len(mi))]
    panel = to_panel(shuffled)
    want = to_panel(mi.loc[list(pd.unique(shuffled.index.get_level_values(0)))])
    assert_same_panel(panel, want)
    np.testing.assert_array_equal(panel.rows_in_order(shuffled["x"].to_numpy()), np.concatenate(panel.values)[:, 0])


def test_rows_of_a_long_frame_in_any_order_are_sorted_and_repeated_times_raise():
    long = pd.DataFrame({"id": [7, 8, 7, 7], "t": [2.0, 0.0, 1.0, 3.0], "x": [1.0, 3.0, 2.0, 4.0]})
    panel = to_panel(long, id_col="id", time_col="t")
    assert panel.ids == (7, 8)
    np.testing.assert_array_equal(panel.times[0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(panel.values[0][:, 0], [2.0, 1.0, 4.0])
    assert panel.row_order.tolist() == [2, 0, 3, 1]
    assert panel.rows_to_series(np.array(["a", "b", "a", "a"])).tolist() == ["a", "b"]
    in_order = to_panel(long.sort_values(["id", "t"]), id_col="id", time_col="t")
    assert in_order.row_order is None
    repeated = pd.DataFrame({"id": [7, 7, 7], "t": [2.0, 1.0, 2.0], "x": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"series 7: rows 0 and 2 of X have the same time 2.0"):
        to_panel(repeated, id_col="id", time_col="t")
    in_time = pd.DataFrame({"id": [7, 8, 7], "t": [1.0, 0.0, 1.0], "x": [1.0, 2.0, 3.0]})  # the same, rows in order
    with pytest.raises(ValueError, match=r"series 7: rows 0 and 2 of X have the same time 1.0"):
        to_panel(in_time, id_col="id", time_col="t")


def test_duplicate_times():
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.DatetimeIndex(["2024-01-01", "2024-01-01"]))
    with pytest.raises(ValueError, match=r"series 'c'.*duplicate time"):
        to_panel(_with(_frames(), "c", df))


def test_duplicate_times_closer_than_a_microsecond_are_not_duplicates():
    idx = pd.DatetimeIndex(["2024-01-01 00:00:00.000000001", "2024-01-01 00:00:00.000000002"])
    # distinct in ns, but equal once converted to float seconds since the epoch
    with pytest.raises(ValueError, match=r"series 0.*closer than float64"):
        to_panel([pd.DataFrame({"x": [1.0, 2.0]}, index=idx)])


def test_nat_time():
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.DatetimeIndex(["2024-01-01", None]))
    with pytest.raises(ValueError, match=r"series 'a'.*position 1 is missing"):
        to_panel(_with(_frames(), "a", df))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_numeric_time(bad):
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=[0.0, bad])
    with pytest.raises(ValueError, match=r"series 1.*missing \(NaT/NaN\) or infinite"):
        to_panel([pd.DataFrame({"x": [1.0]}, index=[0.0]), df])


def test_nan_time_inside_padded_array():
    times = np.array([[0.0, np.nan, 2.0]])
    with pytest.raises(ValueError, match=r"series 0.*only trailing NaN/NaT"):
        to_panel(np.ones((1, 3)), times=times)


def test_inf_in_features():
    df = pd.DataFrame({"x": [1.0, 2.0], "y": [np.inf, 0.0]}, index=_stamps(0, 1))
    with pytest.raises(ValueError, match=r"series 'b', column 'y'.*infinite"):
        to_panel(_with(_frames(), "b", df))


def test_inf_in_array_features():
    X = np.ones((2, 3, 2))
    X[1, 2, 1] = -np.inf
    with pytest.raises(ValueError, match=r"series 1, column '1'.*infinite"):
        to_panel(X)


def test_empty_series():
    df = pd.DataFrame({"x": [], "y": []}, index=pd.DatetimeIndex([]))
    with pytest.raises(ValueError, match=r"series 'c' is empty"):
        to_panel(_with(_frames(), "c", df))


def test_all_nan_series():
    df = pd.DataFrame({"x": [np.nan, np.nan], "y": [np.nan, np.nan]}, index=_stamps(0, 1))
    with pytest.raises(ValueError, match=r"series 'a'.*every feature is NaN"):
        to_panel(_with(_frames(), "a", df))


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["u", "v"], dtype=object),
        pd.Series(["u", "v"], dtype="string"),
        pd.Series(["u", "v"], dtype="category"),
        pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02"])),
    ],
    ids=["object", "string", "category", "datetime"],
)
def test_non_numeric_column(column):
    idx = _stamps(0, 1)
    df = pd.DataFrame({"x": [1.0, 2.0], "y": column.set_axis(idx)})
    assert df["y"].dtype == column.dtype
    with pytest.raises(TypeError, match=r"series 'b': column 'y' has non-numeric dtype"):
        to_panel(_with(_frames(), "b", df))


def test_non_numeric_column_in_multiindex():
    mi = pd.concat(_frames())
    mi["label"] = "z"
    with pytest.raises(TypeError, match=r"column 'label' has non-numeric dtype"):
        to_panel(mi)


def test_different_column_sets():
    df = pd.DataFrame({"x": [1.0], "z": [2.0]}, index=_stamps(0))
    msg = r"series 'c' has columns.*missing: \['y'\].*unexpected: \['z'\]"
    with pytest.raises(ValueError, match=msg):
        to_panel(_with(_frames(), "c", df))


def test_duplicated_column_names():
    df = pd.DataFrame([[1.0, 2.0]], columns=["x", "x"], index=_stamps(0))
    with pytest.raises(ValueError, match=r"series 'b': column 'x' appears more than once"):
        to_panel(_with(_frames(), "b", df))


def test_column_names_equal_once_converted_to_str():
    df = pd.DataFrame([[1.0, 2.0]], columns=[1, "1"], index=[0])
    with pytest.raises(ValueError, match=r"series 0: column '1' appears more than once"):
        to_panel([df])


def test_mixed_naive_and_aware():
    naive = pd.DataFrame({"x": [1.0]}, index=pd.DatetimeIndex(["2024-01-01"]))
    aware = pd.DataFrame({"x": [1.0]}, index=pd.DatetimeIndex(["2024-01-01"]).tz_localize("UTC"))
    with pytest.raises(ValueError, match=r"series 1 has tz-aware.*series 0 has naive"):
        to_panel([naive, aware])


def test_different_time_zones():
    a = pd.DataFrame({"x": [1.0]}, index=pd.DatetimeIndex(["2024-01-01"]).tz_localize("UTC"))
    b = pd.DataFrame({"x": [1.0]}, index=pd.DatetimeIndex(["2024-01-01"]).tz_localize("Asia/Tokyo"))
    with pytest.raises(ValueError, match=r"series 1 has time zone 'Asia/Tokyo'"):
        to_panel([a, b])


def test_different_time_kinds():
    a = pd.DataFrame({"x": [1.0]}, index=pd.DatetimeIndex(["2024-01-01"]))
    b = pd.DataFrame({"x": [1.0]}, index=[0.0])
    with pytest.raises(TypeError, match=r"series 1 has numeric times but series 0 has datetime"):
        to_panel([a, b])


def test_complex_column_is_a_value_error_in_sklearn_words():
    df = pd.DataFrame({"x": [1.0, 2.0], "y": [1 + 1j, 2 + 0j]}, index=_stamps(0, 1))
    with pytest.raises(ValueError, match=r"series 'b', column 'y': Complex data not supported"):
        to_panel(_with(_frames(), "b", df))
    with pytest.raises(ValueError, match=r"array X: Complex data not supported"):
        to_panel(np.ones((2, 3)) + 1j)


def test_unsupported_time_index():
    with pytest.raises(TypeError, match=r"series 0: .*datetime, timedelta or numeric.*pd.to_datetime"):
        to_panel([pd.DataFrame({"x": [1.0, 2.0]}, index=pd.Index(["2024-01-01", "2024-01-02"]))])


def test_period_times_are_their_start_times():
    months = pd.period_range("2024-01", periods=3, freq="M")
    panel = to_panel([pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=months)])
    starts = to_panel([pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=months.to_timestamp(how="start"))])
    assert panel.time_kind == "datetime"
    np.testing.assert_array_equal(panel.times[0], starts.times[0])
    assert np.diff(panel.times[0]).tolist() == [31 * 86400.0, 29 * 86400.0]  # January, leap February
    # a period level of a MultiIndex, as sktime's pd-multiindex may hold
    mi = pd.DataFrame(
        {"x": [1.0, 2.0, 3.0]}, index=pd.MultiIndex.from_arrays([["a", "a", "b"], months[[0, 1, 0]]])
    )
    np.testing.assert_array_equal(to_panel(mi).times[0], starts.times[0][:2])


def test_long_frame_errors():
    long = pd.DataFrame({"id": [1, 1], "t": [0.0, 1.0], "x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="id_col 'nope' is not a column"):
        to_panel(long, id_col="nope", time_col="t")
    with pytest.raises(ValueError, match="time_col needs id_col"):
        to_panel(long, time_col="t")
    with pytest.raises(TypeError, match="long DataFrame"):
        to_panel([long], id_col="id")


def test_three_level_multiindex():
    mi = pd.concat({"g": pd.concat(_frames())})
    with pytest.raises(ValueError, match="2 levels"):
        to_panel(mi)


def test_times_shape_mismatch_for_arrays():
    with pytest.raises(ValueError, match=r"times must have shape \(2, 3\) or \(3,\)"):
        to_panel(np.ones((2, 3)), times=np.arange(4.0))
    with pytest.raises(ValueError, match=r"series 1: times must have shape \(2,\)"):
        to_panel([np.ones(3), np.ones(2)], times=[np.arange(3.0), np.arange(3.0)])


# --------------------------------------------------------------------------
# columns at predict time, time scale, gaps


def test_check_columns():
    panel = to_panel(pd.Series(_frames()))
    assert check_columns(panel, ["x", "y"]) is panel
    swapped = check_columns(panel, ["y", "x"])
    np.testing.assert_array_equal(swapped.values[0], panel.values[0][:, ::-1])
    with pytest.raises(ValueError, match=r"2 feature columns \['x', 'y'\] but 3 were seen in fit"):
        check_columns(panel, ["x", "y", "z"])
    with pytest.raises(ValueError, match=r"missing \['z'\], unexpected \['y'\]"):
        check_columns(panel, ["x", "z"])


def test_time_scale_from():
    times = [np.array([0.0, 1.0, 4.0]), np.array([0.0, 2.0])]
    panel = to_panel([np.zeros(3), np.zeros(2)], times=times)
    assert time_scale_from(panel) == 2.0  # median of gaps 1, 3, 2
    single = to_panel([np.zeros(1), np.zeros(1)], times=[np.array([5.0]), np.array([7.0])])
    assert time_scale_from(single) == 1.0


def test_gaps_from_times_matches_loop():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.1, 2.0, 20))
    gaps = gaps_from_times(t, scale=0.5, first_gap=0.25)
    ref = [0.25] + [(t[k] - t[k - 1]) / 0.5 for k in range(1, 20)]
    np.testing.assert_allclose(gaps, ref, rtol=1e-15)
    with pytest.raises(ValueError, match="scale must be positive"):
        gaps_from_times(t, scale=0.0)


def test_ragged_panel_constructor_checks_shapes():
    with pytest.raises(ValueError, match="series 'q'"):
        RaggedPanel(
            ids=("q",), values=(np.zeros((3, 2)),), times=(np.zeros(2),), columns=("a", "b")
        )


# --------------------------------------------------------------------------
# indexing like a sequence of series (scikit-learn's splitters)


def test_panel_is_indexable_by_series():
    panel = to_panel(pd.Series(_frames()))
    assert len(panel) == 3 and panel.shape == (3,)
    assert panel[1].ids == ("b",) and panel[-1].ids == ("c",)
    assert panel[1:].ids == ("b", "c")
    assert panel[np.array([2, 0])].ids == ("c", "a")
    assert panel[[True, False, True]].ids == ("a", "c")
    assert panel[np.array([2, 0]), ...].ids == ("c", "a")  # how sklearn's _array_indexing asks
    np.testing.assert_array_equal(panel[np.array([2])].values[0], panel.values[2])
    with pytest.raises(IndexError, match="3 series"):
        panel[5]
    with pytest.raises(IndexError, match="by position"):
        panel["a"]


def test_sklearn_indexing_and_splitting_of_a_panel():
    from sklearn.model_selection import KFold, train_test_split
    from sklearn.utils import _safe_indexing
    from sklearn.utils.validation import check_consistent_length, indexable

    panel = to_panel([np.arange(float(L)) for L in range(2, 9)])
    y = np.arange(7.0)
    check_consistent_length(panel, y)
    X, y = indexable(panel, y)
    assert X is panel
    subset = _safe_indexing(panel, np.array([6, 1]))
    assert isinstance(subset, RaggedPanel) and subset.lengths.tolist() == [8, 3]
    train, test = next(KFold(3).split(panel))
    assert _safe_indexing(panel, test).lengths.tolist() == [2, 3, 4]
    X_train, X_test, y_train, y_test = train_test_split(panel, y, test_size=2, random_state=0)
    assert isinstance(X_test, RaggedPanel)
    # each series travels with its target: here y = length - 2
    assert (X_test.lengths - 2).tolist() == y_test.tolist()


# --------------------------------------------------------------------------
# rows of a long or MultiIndex frame


def _long():
    return pd.DataFrame({
        "patient": ["p1", "p2", "p1", "p1", "p2"],
        "hours": [0.0, 0.0, 1.5, 4.0, 2.0],
        "hr": [80.0, 95.0, 82.0, 79.0, 90.0],
    })


def test_rows_to_series_reads_per_row_values():
    panel = to_panel(_long(), id_col="patient", time_col="hours")
    assert panel.row_series.tolist() == [0, 1, 0, 0, 1]
    labels = np.array(["sick", "well", "sick", "sick", "well"])
    assert panel.rows_to_series(labels).tolist() == ["sick", "well"]
    both = np.array([[1.0, np.nan], [2.0, 0.0], [1.0, np.nan], [1.0, np.nan], [2.0, 0.0]])
    np.testing.assert_array_equal(panel.rows_to_series(both), [[1.0, np.nan], [2.0, 0.0]])
    with pytest.raises(ValueError, match=r"y has one entry per row of X, but it differs within series 'p1' \(rows 0 and 3"):
        panel.rows_to_series(np.array([1.0, 2.0, 1.0, 5.0, 2.0]))
    with pytest.raises(ValueError, match="X has 5 rows"):
        panel.rows_to_series(np.ones(4))
    assert panel.subset([1, 0]).row_series is None  # rows no longer describe a subset
    with pytest.raises(ValueError, match="long or MultiIndex"):
        to_panel([np.ones(3)]).rows_to_series(np.ones(3))


def test_input_names_are_kept_in_pandas_output():
    panel = to_panel(_long(), id_col="patient", time_col="hours")
    assert (panel.id_name, panel.time_name) == ("patient", "hours")
    assert panel.to_multiindex().index.names == ["patient", "hours"]
    assert panel_to_frames(panel)[0].index.name == "hours"
    assert panel.series_index().name == "patient" and panel.series_index().tolist() == ["p1", "p2"]
    steps = panel.step_index()
    assert steps.tolist() == [("p1", 0.0), ("p1", 1.5), ("p1", 4.0), ("p2", 0.0), ("p2", 2.0)]
    frames = _frames()
    for f in frames.values():
        f.index.name = "measured_at"
    listed = to_panel(list(frames.values()))
    assert panel_to_frames(listed)[1].index.name == "measured_at"
    assert listed.to_multiindex().index.names == ["series", "measured_at"]
    mi = pd.concat(frames, names=["station", "measured_at"])
    assert to_panel(mi).to_multiindex().index.names == ["station", "measured_at"]
    assert to_panel(np.zeros((2, 3))).to_multiindex().index.names == ["series", "time"]


def test_default_times_are_flagged():
    assert to_panel(np.zeros((2, 3))).default_times
    assert not to_panel(np.zeros((2, 3)), times=np.arange(3.0)).default_times
    assert to_panel([np.zeros(3)]).default_times
    assert not to_panel([np.zeros(3)], times=[np.arange(3.0)]).default_times
    assert to_panel(_long().drop(columns="hours"), id_col="patient").default_times
    assert not to_panel(_long(), id_col="patient", time_col="hours").default_times
    assert not to_panel(pd.Series(_frames())).default_times


def test_a_long_frame_as_a_query_returns_it_fits_as_the_sorted_one():
    long = _long()
    shuffled = long.iloc[[3, 1, 0, 4, 2]]
    a = to_panel(shuffled, id_col="patient", time_col="hours")
    b = to_panel(long, id_col="patient", time_col="hours")
    assert_same_panel(a, b)


# --------------------------------------------------------------------------
# arrays: layout, padding, object dtype, empty


def test_layout_ndl_reads_sktime_numpy3d():
    rng = np.random.default_rng(0)
    nld = rng.normal(size=(4, 6, 2))
    ndl = nld.transpose(0, 2, 1)  # sktime's numpy3D: (instance, variable, time)
    times = np.sort(rng.uniform(0, 10, (4, 6)), axis=1)
    a = to_panel(nld, times=times)
    b = to_panel(ndl, times=times, layout="ndl")
    assert b.n_features == 2 and b.lengths.tolist() == [6] * 4
    for va, vb in zip(a.values, b.values):
        np.testing.assert_array_equal(va, vb)
    with pytest.raises(
        ValueError, match=r"\(4, 2, 6\) is read as \(n series, L time steps, d features\) = \(4, 2, 6\).*layout='ndl'"
    ):
        to_panel(ndl, times=times)
    with pytest.raises(ValueError, match="layout must be one of"):
        to_panel(nld, layout="nl")


def test_trailing_all_nan_rows_without_times_are_padding():
    X = np.array([[[1.0, 2.0], [3.0, np.nan], [np.nan, np.nan]],
                  [[1.0, 1.0], [np.nan, np.nan], [2.0, 2.0]]])
    panel = to_panel(X)
    # series 0 ends with a padded row; series 1's NaN row is inside, a step without values
    assert panel.lengths.tolist() == [2, 3]
    np.testing.assert_array_equal(panel.values[0], X[0, :2])
    # the padded row is gone from what the models see: "last" is the last real row
    assert panel.values[0][-1].tolist()[0] == 3.0
    # with explicit times the row is an observation (its time says so)
    assert to_panel(X, times=np.arange(3.0)).lengths.tolist() == [3, 3]
    with pytest.raises(ValueError, match=r"series 1: every feature is NaN"):
        to_panel(np.concatenate([X, np.full((1, 3, 2), np.nan)])[[0, 2]])


def test_object_arrays_are_numbers_as_in_check_array():
    X = np.arange(6.0).reshape(2, 3).astype(object)
    np.testing.assert_array_equal(to_panel(X).values[1][:, 0], [3.0, 4.0, 5.0])
    X[0, 0] = {"foo": "bar"}
    with pytest.raises(TypeError, match=r"array X of dtype object.*argument must be .* string.* number"):
        to_panel(X)
    # a 1-D object array still holds one series per entry
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.zeros(2), np.zeros(4)
    assert to_panel(ragged).lengths.tolist() == [2, 4]


def test_empty_arrays_name_the_axes_in_sklearn_words():
    with pytest.raises(ValueError, match=r"no series \(found array with 0 sample\(s\) \(shape=\(0, 3\)\)"):
        to_panel(np.empty((0, 3)))
    msg = r"\(12, 0\) is read as .*0 feature\(s\) \(shape=\(12, 0\)\) while a minimum of 1 is required"
    with pytest.raises(ValueError, match=msg):
        to_panel(np.empty((12, 0)))


def test_a_series_without_id_is_the_series_not_series_none():
    unsorted = pd.DataFrame({"x": [1.0, 2.0]}, index=[1.0, 0.0])
    with pytest.raises(ValueError, match=r"^the series: times are not sorted") as error:
        to_panel(pd.Series([unsorted], index=[None], dtype=object))
    assert "None" not in str(error.value)
