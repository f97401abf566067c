"""The forecaster fitted on a long-format Parquet data set, streamed,
against the same data in memory as (series, time) frames."""

import dataclasses
import os

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from s5ts.forecasting import Forecaster, _fitting  # noqa: E402
from s5ts.forecasting._windows import WINDOW_CAP  # noqa: E402
from s5ts.training import Sequences, StreamedSequences  # noqa: E402

SMALL = dict(n_layers=1, d_model=8, state_size=4, window_length=32, batch_size=4, random_state=0)


def panel(n=5, seed=0, missing=False):
    """A long frame of `n` irregular hourly series (two forecast columns,
    one exogenous), lengths 40-90."""
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(n):
        L = int(rng.integers(40, 90))
        hours = np.cumsum(rng.exponential(2.0, L))
        a = np.sin(hours / 12 + i) * (1 + i) + 0.1 * rng.normal(size=L)
        b = np.cos(hours / 30) + 0.05 * i * hours / 24
        if missing:
            b[rng.random(L) < 0.3] = np.nan
            b[0] = 0.0
        parts.append(
            pd.DataFrame(
                {
                    "id": f"s{i}",
                    "time": pd.Timestamp("2024-03-01") + pd.to_timedelta(hours, unit="h"),
                    "a": a,
                    "b": b,
                    "temp": rng.normal(size=L) + i,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def write(df, directory, files=2, row_group_size=29):
    os.makedirs(directory, exist_ok=True)
    for k, part in enumerate(np.array_split(df["id"].unique(), files)):
        table = pa.Table.from_pandas(df[df["id"].isin(part)], preserve_index=False)
        pq.write_table(table, os.path.join(directory, f"part{k}.parquet"), row_group_size=row_group_size)
    return str(directory)


def frames(df):
    indexed = df.set_index(["id", "time"])
    return indexed[["a", "b"]], indexed[["temp"]]


def future_x(df, times):
    """Exogenous values at `times` after the end, for every series."""
    index = pd.MultiIndex.from_product([df["id"].unique(), times], names=["id", "time"])
    return pd.DataFrame({"temp": np.linspace(-1, 1, len(index))}, index=index)


@pytest.fixture
def captured(monkeypatch):
    """The examples each fit trains on, recorded where the one fit (any
    source) hands them to `train`."""
    seen = []
    original = _fitting.train

    def recording(initial, train_data, valid_data, *args, **kwargs):
        seen.append((train_data, valid_data))
        return original(initial, train_data, valid_data, *args, **kwargs)

    monkeypatch.setattr(_fitting, "train", recording)
    return seen


def _windows(data):
    """The windows of `data` in position order, as lists of arrays."""
    if isinstance(data, StreamedSequences):
        items = {}
        for positions, part in data.chunks(None):
            for k, p in enumerate(positions):
                items[int(p)] = (part.inputs[k], part.gaps[k], part.extra[k], part.targets[k])
        assert sorted(items) == list(range(len(data)))
        return [items[p] for p in range(len(data))]
    return list(zip(data.inputs, data.gaps, data.extra, data.targets))


@pytest.mark.parametrize("missing", [False, True])
def test_a_parquet_fit_equals_the_same_data_in_memory(tmp_path, captured, missing):
    # The learning rate is negligible, so both fits end with the initial
    # network (the same seed): everything else they compute must agree —
    # the statistics, every training and held-out window, the calibration,
    # the series' states and the forecasts.
    df = panel(missing=missing)
    y, X = frames(df)
    path = write(df, tmp_path / "data")
    params = dict(SMALL, max_epochs=1, learning_rate=1e-12, warmup_epochs=0)
    memory = Forecaster(**params, fallback=None).fit(y, X)  # a streamed fit keeps no history to fall back on
    streamed = Forecaster(**params, id_col="id", time_col="time").fit(path, X=["temp"])
    assert (streamed.fallback_["method"] == "s5").all() and (streamed.fallback_["interval_scale"] == 1.0).all()
    # nor to scale each series' intervals by its held-out errors, as the fit in memory does
    assert memory.fallback_["held_out"].gt(0).all() and (streamed.fallback_["held_out"] == 0).all()
    memory._fallback = dataclasses.replace(memory._fallback, scales={})

    assert streamed.time_scale_ == memory.time_scale_ and streamed.horizon_ == memory.horizon_
    assert streamed.cycles_ == memory.cycles_ != ()
    for name in ("spread", "center", "width"):
        np.testing.assert_allclose(getattr(streamed._default_scale, name), getattr(memory._default_scale, name))
    np.testing.assert_allclose(streamed._x_mean, memory._x_mean, rtol=1e-12)
    np.testing.assert_allclose(streamed._x_std, memory._x_std, rtol=1e-12)

    (train_m, valid_m), (train_s, valid_s) = captured
    assert isinstance(train_s, StreamedSequences) and isinstance(valid_s, StreamedSequences)
    assert isinstance(train_m, Sequences) and isinstance(valid_m, Sequences)  # in memory: batched as ever
    for in_memory, from_files in [(train_m, train_s), (valid_m, valid_s)]:
        a, b = _windows(in_memory), _windows(from_files)
        assert len(a) == len(b) > 0
        # batched alike: the same cap, the same padded length of every batch
        assert in_memory.cap_length == from_files.cap_length == WINDOW_CAP
        np.testing.assert_array_equal(in_memory.batch_lengths(4), from_files.batch_lengths(4))
        for wa, wb in zip(a, b):
            for xa, xb in zip(wa, wb):
                np.testing.assert_allclose(xa, xb, rtol=1e-6, atol=1e-6)

    np.testing.assert_allclose(streamed.calibration_.factors, memory.calibration_.factors, rtol=1e-5)
    np.testing.assert_allclose(streamed.calibration_.edges, memory.calibration_.edges, rtol=1e-6)
    assert list(streamed.series_) == list(memory.series_)
    for sid, record in streamed.series_.items():
        full = memory.series_[sid]
        assert record.times[0] == full.times[-1] and len(record.times) == 1  # no history kept
        for s, f in zip(record.state, full.state):
            np.testing.assert_allclose(s, f, rtol=1e-5, atol=1e-6)

    end = df["time"].max()
    times = pd.DatetimeIndex([end + pd.Timedelta(hours=h) for h in (1.5, 10.0, 40.0)])
    mean_s, var_s, index_s = streamed.predict_distribution(times, future_x(df, times))
    mean_m, var_m, index_m = memory.predict_distribution(times, future_x(df, times))
    assert index_s.equals(index_m) and list(index_s.names) == ["id", "time"]
    np.testing.assert_allclose(mean_s, mean_m, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(var_s, var_m, rtol=1e-4)
    assert list(streamed.predict(times, future_x(df, times)).columns) == ["a", "b"]

    # New observations after the end: the kept state and carry go forward as
    # the whole history does.
    new_times = pd.DatetimeIndex([end + pd.Timedelta(hours=h) for h in (2.0, 5.0)])
    index = pd.MultiIndex.from_product([df["id"].unique(), new_times], names=["id", "time"])
    new_y = pd.DataFrame({"a": np.arange(len(index), dtype=float), "b": 1.0}, index=index)
    new_x = pd.DataFrame({"temp": 0.5}, index=index)
    later = pd.DatetimeIndex([end + pd.Timedelta(hours=h) for h in (6.0, 30.0)])
    streamed.update(new_y, new_x)
    memory.update(new_y, new_x)
    mean_s, var_s, _ = streamed.predict_distribution(later, future_x(df, later))
    mean_m, var_m, _ = memory.predict_distribution(later, future_x(df, later))
    np.testing.assert_allclose(mean_s, mean_m, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(var_s, var_m, rtol=1e-4)


def test_a_forecaster_learns_from_parquet(tmp_path):
    df = panel(n=6, seed=1)
    path = write(df, tmp_path / "data", files=3)
    model = Forecaster(**dict(SMALL, max_epochs=15, learning_rate=1e-2), id_col="id", time_col="time").fit(path)
    nll = [record["valid_nll"] for record in model.history_]
    assert min(nll[1:]) < nll[0]
    end = df["time"].max()
    mean, var, _ = model.predict_distribution(pd.DatetimeIndex([end + pd.Timedelta(hours=3)]))
    assert mean.shape == (6, 3) and np.isfinite(mean).all() and (var > 0).all()  # a, b and temp are all forecast


def test_a_parquet_forecaster_refuses_times_it_kept_no_history_for(tmp_path):
    df = panel(n=3)
    path = write(df, tmp_path / "data")
    model = Forecaster(**dict(SMALL, max_epochs=1), id_col="id", time_col="time").fit(path, X=["temp"])
    last = df.groupby("id")["time"].max()
    inside = pd.DatetimeIndex([last["s1"] - pd.Timedelta(hours=1), df["time"].max() + pd.Timedelta(hours=1)])
    with pytest.raises(ValueError, match=r"series 's0'.*keeps each series' state after its last observation"):
        model.predict(inside, future_x(df, inside))
    late = pd.DataFrame(
        {"a": [1.0], "b": [1.0]},
        index=pd.MultiIndex.from_tuples([("s2", last["s2"] - pd.Timedelta(hours=1))], names=["id", "time"]),
    )
    with pytest.raises(ValueError, match=r"series 's2'.*not after the last one the forecaster keeps"):
        model.update(late, pd.DataFrame({"temp": [0.0]}, index=late.index))


def test_a_parquet_forecaster_forecasts_each_series_after_its_own_end(tmp_path):
    # Leads count from each series' own last observation (the state a
    # streamed fit keeps); series s1 never observes "b": its "b" is NaN
    # (mean and variance), its "a" and every other series' columns are
    # forecast. (Times at whole seconds: X's rows are looked up at the
    # times leads make, each last observation read to the microsecond.)
    df = panel(n=3)
    df["time"] = df["time"].dt.floor("s")
    df.loc[df["id"] == "s1", "b"] = np.nan
    model = Forecaster(**dict(SMALL, max_epochs=1), id_col="id", time_col="time").fit(write(df, tmp_path / "data"), X=["temp"])
    last = df.groupby("id")["time"].max()
    asked = pd.MultiIndex.from_tuples([(sid, last[sid] + pd.Timedelta(hours=h)) for sid in last.index for h in (1, 6)])
    future = pd.DataFrame({"temp": np.linspace(-1, 1, len(asked))}, index=asked)
    mean, var, index = model.predict_distribution(leads=["1h", "6h"], X=future)
    assert list(index) == list(asked)
    expected_mean, expected_var, _ = model.predict_distribution(asked, future)
    np.testing.assert_array_equal(mean, expected_mean)
    np.testing.assert_array_equal(var, expected_var)
    unobserved = np.zeros(mean.shape, bool)
    unobserved[2:4, 1] = True  # s1's rows, column "b"
    assert np.isnan(mean[unobserved]).all() and np.isnan(var[unobserved]).all()
    assert np.isfinite(mean[~unobserved]).all() and (var[~unobserved] > 0).all()


def test_a_parquet_forecaster_names_what_is_wrong(tmp_path):
    df = panel(n=3)
    path = write(df, tmp_path / "data")
    with pytest.raises(ValueError, match="id_col and time_col"):
        Forecaster(**SMALL).fit(path)
    reading = dict(SMALL, id_col="id", time_col="time")
    with pytest.raises(ValueError, match="X column 'pressure' is not a column"):
        Forecaster(**reading).fit(path, X=["pressure"])
    with pytest.raises(TypeError, match="X names the exogenous columns"):
        Forecaster(**reading).fit(path, X=frames(df)[1])
    with pytest.raises(ValueError, match="no column to forecast"):
        Forecaster(**reading).fit(path, X=["a", "b", "temp"])
    empty = df.copy()
    empty["b"] = np.nan  # in every series (in some: forecast NaN there, tests/test_forecasting_panels.py)
    with pytest.raises(ValueError, match=r"column 'b' of y has no observed value in any series"):
        Forecaster(**reading).fit(write(empty, tmp_path / "empty"), X=["temp"])
    shuffled = df.sample(frac=1.0, random_state=0)
    pq.write_table(pa.Table.from_pandas(shuffled, preserve_index=False), tmp_path / "shuffled.parquet")
    with pytest.raises(ValueError, match="appears again"):
        Forecaster(**reading).fit(tmp_path / "shuffled.parquet", X=["temp"])


def test_the_calibration_sample_is_bounded(tmp_path, monkeypatch):
    # Beyond CALIBRATION_QUERIES held-out queries, a uniform sample of them
    # calibrates the intervals: the factors stay close to those of all.
    df = panel(n=4)
    path = write(df, tmp_path / "data")
    params = dict(SMALL, max_epochs=2, id_col="id", time_col="time")
    everything = Forecaster(**params).fit(path, X=["temp"])
    monkeypatch.setattr(_fitting.ParquetSource, "calibration_queries", 400)
    sampled = Forecaster(**params).fit(path, X=["temp"])
    assert len(sampled.calibration_.factors) <= len(everything.calibration_.factors)
    np.testing.assert_allclose(sampled.calibration_(np.array([0.5])), everything.calibration_(np.array([0.5])), rtol=0.5)


def test_statistics_of_shares_merged_equal_one_pass(tmp_path):
    """Each process's statistics of its own files, merged, are those of one
    pass over every file (across processes: `tests/test_distributed.py`)."""
    df = panel(n=7, missing=True)
    forecaster = Forecaster(id_col="id", time_col="time", **SMALL)
    source = _fitting.ParquetSource.open(forecaster, write(df, tmp_path, files=4, row_group_size=23), ["temp"])
    whole = _fitting.share_statistics(source, 0.2)
    owners = np.array([1, 0, 0, 1])
    shares = [_fitting.share_statistics(source, 0.2, np.flatnonzero(owners == p)) for p in (1, 0)]
    merged = _fitting._Statistics.merged(shares)
    for name in ("ids", "keys", "offsets"):
        assert getattr(merged.ledger, name) == getattr(whole.ledger, name), name
    np.testing.assert_array_equal(merged.ledger.parts, whole.ledger.parts)
    for name in ("stops", "spans", "time_kind", "first", "last", "any_gap"):
        assert getattr(merged, name) == getattr(whole, name), name
    for a, b in zip(merged.x_moments, whole.x_moments, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    for a, b in zip(merged.scales, whole.scales, strict=True):
        np.testing.assert_array_equal(a.spread, b.spread)
        np.testing.assert_array_equal(a.center, b.center)
    assert merged.gaps.median() == whole.gaps.median()


def test_frames_in_memory_are_the_one_chunk_case_of_a_source(tmp_path):
    """The frames' source reads the series of the Parquet data set, in one
    chunk: the same records and statistics, up to the rounding of pooled
    exogenous moments."""
    df = panel(n=5, missing=True)
    y, X = frames(df)
    memory = _fitting.FramesSource.of(y, X)
    files = _fitting.ParquetSource.open(Forecaster(id_col="id", time_col="time"), write(df, tmp_path), ["temp"])
    assert len(list(memory.chunks())) == 1 and memory.owners is None
    read = [one for series, _ in files.chunks() for one in series]
    assert [(one.position, one.id) for one in memory.series] == [(one.position, one.id) for one in read]
    for a, b in zip(memory.series, read, strict=True):
        for name in ("times", "y", "x"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert list(memory.y_columns) == list(files.y_columns) and list(memory.x_columns) == list(files.x_columns)
    assert memory.index_names == files.index_names == ["id", "time"]
    mine, theirs = _fitting.share_statistics(memory, 0.2), _fitting.share_statistics(files, 0.2)
    assert mine.ledger.ids == theirs.ledger.ids and mine.ledger.keys == [(0, 0, 5)]
    for name in ("stops", "spans", "time_kind", "first", "last", "any_gap"):
        assert getattr(mine, name) == getattr(theirs, name), name
    assert mine.gaps.median() == theirs.gaps.median()
    (count, mean, std), pooled = mine.x_moments[0], [np.concatenate(a) for a in zip(*theirs.x_moments)]
    np.testing.assert_array_equal(count, pooled[0].sum(axis=0, keepdims=True))
    stacked = X.to_numpy()
    np.testing.assert_array_equal(mean[0], np.nanmean(stacked, axis=0))  # as the in-memory fit always had it
    np.testing.assert_array_equal(std[0], np.nanstd(stacked, axis=0))
