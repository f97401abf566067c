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
