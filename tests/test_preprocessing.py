"""`Preprocessing`: the one check of every input against what fit saw, used
alike by predict, score, validation_data, warm starts and every Parquet
chunk (`s5ts/estimators/_preprocessing.py`)."""

import numpy as np
import pandas as pd
import pytest

from s5ts import S5Regressor
from s5ts.data import to_panel
from s5ts.estimators._preprocessing import learn_preprocessing

TINY = dict(n_layers=1, d_model=8, state_size=4, max_epochs=1, random_state=0, observation_dropout=0.0)


def _data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6, 2))
    times = np.sort(rng.uniform(0, 10, size=(n, 6)), axis=1)
    return X, times, X[:, :, 0].mean(axis=1)


def test_validation_data_without_times_after_a_fit_with_times_raises_as_predict_does():
    X, times, y = _data()
    model = S5Regressor(**TINY)
    with pytest.raises(ValueError, match="fitted on series with time stamps, but validation_data has none"):
        model.fit(X, y, times=times, validation_data=(X, y))
    assert not hasattr(model, "model_")  # nothing committed
    model.fit(X, y, times=times, validation_data=(X, y, times))
    with pytest.raises(ValueError, match="fitted on series with time stamps, but X has none"):
        model.predict(X)


def test_validation_data_is_checked_for_columns_and_kind_of_time():
    X, times, y = _data()
    with pytest.raises(ValueError, match=r"validation_data of shape \(8, 6, 1\) .* fitted on 2"):
        S5Regressor(**TINY).fit(X, y, times=times, validation_data=(X[:, :, :1], y, times))
    frames = [pd.DataFrame(x, index=t, columns=["a", "b"]) for x, t in zip(X, times)]
    with pytest.raises(ValueError, match=r"validation_data's feature columns differ .* missing \['b'\]"):
        S5Regressor(**TINY).fit(frames, y, validation_data=([f.rename(columns={"b": "c"}) for f in frames], y))
    stamps = pd.Timestamp("2024-01-01") + pd.to_timedelta(times.ravel(), "h")
    stamps = np.asarray(stamps).reshape(times.shape)
    with pytest.raises(TypeError, match="fitted on datetime times, but validation_data has numeric times"):
        S5Regressor(**TINY).fit(X, y, times=stamps, validation_data=(X, y, times))


def test_the_check_reorders_columns_and_refuses_a_time_zone_mixture():
    frames = [
        pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.5]}, index=pd.date_range("2024-01-01", periods=3, freq="h"))
        for _ in range(3)
    ]
    prep = learn_preprocessing(to_panel(frames), "global")
    swapped = prep.check(to_panel([f[["b", "a"]] for f in frames]))
    assert swapped.columns == ("a", "b")
    np.testing.assert_array_equal(swapped.values[0], frames[0].to_numpy())
    aware = [f.tz_localize("UTC") for f in frames]
    with pytest.raises(ValueError, match=r"fitted on tz-naive datetimes, but score's X has tz-aware datetimes \(UTC\)"):
        prep.check(to_panel(aware), "score's X")


def test_a_parquet_chunk_goes_through_the_same_check_as_an_in_memory_panel(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    rows = []
    for i in range(6):
        t = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 48, 5)), "h")
        rows.append(pd.DataFrame({"id": f"s{i}", "time": t, "a": rng.normal(size=5), "y": float(i)}))
    long = pd.concat(rows, ignore_index=True)
    model = S5Regressor(**TINY, id_col="id", time_col="time").fit(long.drop(columns="y"), long.groupby("id")["y"].first())
    numeric = long.assign(time=(long["time"] - long["time"].min()).dt.total_seconds())
    with pytest.raises(TypeError) as in_memory:
        model.predict(numeric.drop(columns="y"))
    pq.write_table(pa.Table.from_pandas(numeric.drop(columns="y"), preserve_index=False), tmp_path / "x.parquet")
    with pytest.raises(TypeError) as streamed:
        model.predict(tmp_path / "x.parquet")
    assert str(streamed.value) == str(in_memory.value) == "the model was fitted on datetime times, but X has numeric times"


# ----- hold_ends: each series read over the training series' time window -----


@pytest.mark.parametrize(
    "times",
    [
        [2.0, 3.0, 5.5],  # inside the window: a held step before and after
        [0.0, 1.0, 9.0],  # at the window's start: after only
        [2.0, 4.0, 10.0],  # at its end: before only
        [4.0],  # one observation: held both ways
        [-1.0, 3.0, 12.0],  # beyond the window both ways (a later series): nothing added
    ],
)
def test_held_ends_are_the_series_with_copies_of_its_ends_at_the_window_ends(times):
    """`held` against the series given copies of its first and last values
    at the window's ends, its gaps computed from those times."""
    from s5ts.data import gaps_from_times
    from s5ts.estimators._preprocessing import held

    times = np.array(times)
    window, scale, first_gap = (0.0, 10.0), 0.5, 0.7
    inputs = np.arange(2.0 * len(times)).reshape(-1, 2)
    naive_times, naive_inputs = list(times), list(inputs)
    if times[0] > window[0]:
        naive_times, naive_inputs = [window[0]] + naive_times, [inputs[0]] + naive_inputs
    if times[-1] < window[1]:
        naive_times, naive_inputs = naive_times + [window[1]], naive_inputs + [inputs[-1]]
    got_inputs, got_gaps = held(inputs, times, gaps_from_times(times, scale, first_gap), window, scale, first_gap)
    np.testing.assert_array_equal(got_inputs, np.array(naive_inputs))
    np.testing.assert_allclose(got_gaps, gaps_from_times(np.array(naive_times), scale, first_gap), rtol=1e-12)


@pytest.mark.parametrize("time_handling", ["gaps", "append"])
def test_hold_ends_transforms_as_the_held_panel_without_it(time_handling):
    """The model inputs of `hold_ends=True` are those of the same
    preprocessing without a window on the panel whose series have copies of
    their first and last observations at the training window's ends."""
    import dataclasses

    X, times, y = _data()
    panel = to_panel(list(X), times=list(times))
    prep = learn_preprocessing(panel, True, time_handling=time_handling, hold_ends=True)
    start, end = float(times[:, 0].min()), float(times[:, -1].max())
    assert prep.window == (start, end)
    held_X, held_times = [], []
    for x, t in zip(X, times):
        before, after = int(t[0] > start), int(t[-1] < end)
        held_X.append(np.concatenate([x[:1]] * before + [x] + [x[-1:]] * after))
        held_times.append(np.concatenate([[start]] * before + [t] + [[end]] * after))
    got = prep.transform(panel)
    want = dataclasses.replace(prep, window=None).transform(to_panel(held_X, times=held_times))
    assert [len(g) for g in got.gaps] == [len(t) for t in held_times]
    for name in ("inputs", "gaps", "extra"):
        for a, b in zip(getattr(got, name) or (), getattr(want, name) or ()):
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=name)


def test_hold_ends_is_kept_with_the_model_and_refused_for_per_step_targets(tmp_path):
    X, times, y = _data()
    model = S5Regressor(**TINY, hold_ends=True).fit(X, y, times=times)
    assert model.preprocessing_.window == (times[:, 0].min(), times[:, -1].max())
    plain = S5Regressor(**TINY).fit(X, y, times=times)
    assert plain.preprocessing_.window is None
    assert not np.allclose(model.predict(X, times=times), plain.predict(X, times=times))
    model.save(tmp_path / "held")
    loaded = S5Regressor.load(tmp_path / "held")
    assert loaded.preprocessing_.window == model.preprocessing_.window
    np.testing.assert_array_equal(loaded.predict(X, times=times), model.predict(X, times=times))
    # a later set_params does not change the fitted model's inputs
    np.testing.assert_array_equal(model.set_params(hold_ends=False).predict(X, times=times), loaded.predict(X, times=times))
    with pytest.raises(ValueError, match="hold_ends=True .* a target per step"):
        S5Regressor(**TINY, hold_ends=True).fit(X, X[:, :, :1], times=times)


def test_n_steps_counts_the_held_steps_transform_adds():
    panel = to_panel(
        [np.ones((n, 1)) for n in (3, 3, 3, 1, 2, 2)],
        times=[[2.0, 3.0, 5.5], [0.0, 1.0, 9.0], [2.0, 4.0, 10.0], [4.0], [-1.0, 12.0], [11.0, 12.0]],
    )
    prep = learn_preprocessing(panel.subset([0, 1, 2, 3]), True, hold_ends=True)  # window (0, 10)
    assert prep.window == (0.0, 10.0)
    want = [len(g) for g in prep.transform(panel).gaps]
    assert want == [5, 4, 4, 3, 2, 3]  # inside, at the start, at the end, one observation, beyond, after it
    starts, ends = np.array([t[0] for t in panel.times]), np.array([t[-1] for t in panel.times])
    np.testing.assert_array_equal(prep.n_steps(panel.lengths, starts, ends), want)
    assert (prep.n_steps(panel.lengths) >= want).all()  # without the times: a bound
    np.testing.assert_array_equal(learn_preprocessing(panel, True).n_steps(panel.lengths, starts, ends), panel.lengths)


def test_hold_ends_refuses_summary_features():
    X, times, y = _data()
    with pytest.raises(ValueError, match="summary_features=True .* hold_ends=True"):
        S5Regressor(**TINY, hold_ends=True, summary_features=True).fit(X, y, times=times)


def test_auto_holds_the_ends_of_short_series_on_numeric_or_timedelta_times_only():
    from s5ts.estimators._preprocessing import AUTO_HOLD_MAX_OBSERVATIONS

    rng = np.random.default_rng(0)

    def panel(n_obs, kind="numeric"):
        times = [np.sort(rng.choice(np.arange(30.0), n_obs, replace=False)) for _ in range(9)]
        if kind == "datetime":
            times = [pd.Timestamp("2024-01-01") + pd.to_timedelta(t, "D") for t in times]
        elif kind == "timedelta":
            times = [pd.to_timedelta(t, "D") for t in times]
        return to_panel([rng.normal(size=(n_obs, 1)) for _ in times], times=times)

    short = AUTO_HOLD_MAX_OBSERVATIONS
    assert learn_preprocessing(panel(short), True, hold_ends="auto").window is not None
    assert learn_preprocessing(panel(short, "timedelta"), True, hold_ends="auto").window is not None
    assert learn_preprocessing(panel(short + 1), True, hold_ends="auto").window is None  # long enough for their shape
    assert learn_preprocessing(panel(short, "datetime"), True, hold_ends="auto").window is None  # calendar times
    assert learn_preprocessing(panel(short, "datetime"), True, hold_ends=True).window is not None  # asked for
    assert learn_preprocessing(panel(short), True, time_handling="drop", hold_ends="auto").window is None
    assert learn_preprocessing(panel(short), True, hold_ends=False).window is None


def test_auto_holds_no_ends_with_per_step_targets_or_summary_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 4, 1))
    times = np.sort(rng.uniform(0, 10, size=(12, 4)), axis=1)
    y = X[:, :, 0].mean(axis=1)
    assert S5Regressor(**TINY).fit(X, y, times=times).preprocessing_.window is not None  # the default, "auto"
    assert S5Regressor(**TINY).fit(X, X, times=times).preprocessing_.window is None  # a target per step
    assert S5Regressor(**TINY, summary_features=True).fit(X, y, times=times).preprocessing_.window is None
