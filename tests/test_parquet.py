"""Out-of-core fit and predict from long-format Parquet data sets, against
the same data in memory as a long DataFrame."""

import os

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from s5ts import S5Classifier, S5Regressor  # noqa: E402
from s5ts.data import MedianGap, open_parquet, to_panel  # noqa: E402
from s5ts.data._median_gap import RELATIVE_ERROR  # noqa: E402
from s5ts.estimators import _streaming  # noqa: E402
from s5ts.estimators._preprocessing import Statistics, learn_preprocessing  # noqa: E402
from s5ts.training import Sequences, StreamedSequences, TruncatedBackprop, iterate_batches, split_validation, steps_per_epoch  # noqa: E402

# packing=False: a Parquet fit trains on length buckets, and so does the in-memory fit it is compared with
SMALL = dict(d_model=8, state_size=4, random_state=0, id_col="id", time_col="time", observation_dropout=0.0, packing=False)


def long_frame(n=24, seed=0, missing=False):
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(n):
        L = int(rng.integers(3, 30))
        t = np.cumsum(rng.exponential(1.0, L))
        a = np.sin(t) + (i % 5) * 2.0
        if missing:
            a[rng.random(L) < 0.2] = np.nan
            a[0] = 1.0
        parts.append(
            pd.DataFrame({"id": f"s{i:03d}", "time": t, "a": a, "b": rng.normal(size=L) * (1 + i), "y": float(i % 3)})
        )
    return pd.concat(parts, ignore_index=True)


def write(df, directory, files=2, row_group_size=37):
    """`df` split by series into `files` files, each in row groups."""
    os.makedirs(directory, exist_ok=True)
    ids = df["id"].unique()
    for k, part in enumerate(np.array_split(ids, files)):
        table = pa.Table.from_pandas(df[df["id"].isin(part)], preserve_index=False)
        pq.write_table(table, os.path.join(directory, f"part{k}.parquet"), row_group_size=row_group_size)
    return str(directory)


def per_series_y(df):
    return df.groupby("id", sort=False)["y"].first().to_numpy()


def test_median_gap_exact_then_histogram():
    rng = np.random.default_rng(0)
    gaps = rng.lognormal(0.0, 2.0, 10_001)
    exact, binned = MedianGap(), MedianGap(exact_limit=1000)
    for part in np.array_split(gaps, 7):
        exact.add(part)
        binned.add(part)
    assert exact.exact and exact.median() == np.median(gaps)
    assert not binned.exact
    assert abs(binned.median() / np.median(gaps) - 1) <= RELATIVE_ERROR
    assert MedianGap().median() == 1.0


def test_reader_yields_every_series_once_in_order(tmp_path):
    df = long_frame()
    source = open_parquet(write(df, tmp_path, files=3, row_group_size=5), id_col="id", time_col="time", exclude=("y",))
    assert source.features == ("a", "b")
    memory = to_panel(df.drop(columns="y"), id_col="id", time_col="time")
    ids, values = [], []
    for chunk in source.read(extra=("y",)):
        ids.extend(chunk.panel.ids)
        values.extend(chunk.panel.values)
    assert ids == list(memory.ids)
    for got, want in zip(values, memory.values):
        np.testing.assert_array_equal(got, want)
    lengths_ids, lengths, _ = source.series_lengths()
    assert lengths_ids == list(memory.ids)
    np.testing.assert_array_equal(lengths, memory.lengths)


@pytest.mark.parametrize("standardize", ["global", "series", "auto", False])
def test_statistics_pass_equals_in_memory(tmp_path, standardize):
    df = long_frame(missing=True)
    path = write(df, tmp_path, files=3, row_group_size=11)
    estimator = S5Regressor(standardize=standardize, **SMALL)
    prep, per_step, scaling, data, _ = estimator._training_data(path, "y", None, None, fitted=False)
    panel = to_panel(df.drop(columns="y"), id_col="id", time_col="time")
    want = learn_preprocessing(panel, standardize, "gaps", 1.0)
    assert (prep.columns, prep.scaling, prep.missing_indicator) == (want.columns, want.scaling, want.missing_indicator)
    assert prep.time_scale == want.time_scale  # exact below MedianGap's limit
    np.testing.assert_allclose(prep.feature_mean, want.feature_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(prep.feature_std, want.feature_std, rtol=1e-12)
    assert (prep.variance_prior is None) == (want.variance_prior is None) == (want.scaling != "series")
    for got, expected in zip(prep.variance_prior or (), want.variance_prior or ()):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    y = per_series_y(df)
    np.testing.assert_allclose(scaling.mean, [y.mean()])
    np.testing.assert_allclose(scaling.std, [y.std()])
    np.testing.assert_array_equal(data.lengths, panel.lengths)
    assert not per_step


def _chunked(data: Sequences, size: int) -> StreamedSequences:
    def chunks(rng):
        starts = list(range(0, len(data), size))
        for s in starts if rng is None else rng.permutation(starts):
            positions = np.arange(s, min(s + size, len(data)))
            yield positions, data.subset(positions)

    return StreamedSequences(lengths=data.lengths, chunks=chunks)


def test_streamed_batches_cover_every_series_once_in_as_many_steps():
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(2, 9, 40), rng.integers(30, 60, 25), [300]])
    data = Sequences(
        inputs=tuple(np.full((L, 1), i, np.float32) for i, L in enumerate(lengths)),
        gaps=tuple(np.ones(L, np.float32) for L in lengths),
        targets=np.arange(len(lengths), dtype=np.float32)[:, None],
    )
    streamed = _chunked(data, 7)
    assert steps_per_epoch(streamed, 8) == steps_per_epoch(data, 8)
    seen, shapes = [], set()
    for positions, batch in iterate_batches(streamed, 8, shuffle=True, rng=np.random.default_rng(1)):
        seen.extend(positions.tolist())
        shapes.add(batch["u"].shape)
        # each row holds its own series (inputs = its position) and target
        np.testing.assert_array_equal(batch["y"][: len(positions), 0], positions)
        np.testing.assert_array_equal(batch["u"][np.arange(len(positions)), 0, 0], positions)
    assert sorted(seen) == list(range(len(lengths)))
    assert shapes == {b["u"].shape for _, b in iterate_batches(data, 8, shuffle=False)}
    # the validation split holds out the same series as in memory
    train, valid = split_validation(streamed, 0.25, np.random.default_rng(3))
    want_train, want_valid = split_validation(data, 0.25, np.random.default_rng(3))
    np.testing.assert_array_equal(train.lengths, want_train.lengths)
    np.testing.assert_array_equal(valid.lengths, want_valid.lengths)
    assert sorted(p for p, _ in ((p, b) for ps, b in iterate_batches(valid, 4, shuffle=False) for p in ps)) == list(
        range(len(valid))
    )


def test_streamed_fit_and_predict_equal_in_memory(tmp_path):
    """With every series in one batch (24 series, batch_size 32, one length
    bucket), a streamed epoch is the in-memory one with the batch's rows in
    another order: the same fit up to float32 summation order. Predictions
    of one fitted model from Parquet and from memory are identical."""
    df = long_frame()
    path = write(df, tmp_path)
    streamed = S5Regressor(max_epochs=3, **SMALL).fit(path, "y")
    memory = S5Regressor(max_epochs=3, **SMALL).fit(df.drop(columns="y"), per_series_y(df))
    assert [r["train_loss"] for r in streamed.history_] == pytest.approx(
        [r["train_loss"] for r in memory.history_], rel=1e-4
    )
    from_parquet = streamed.predict(path)
    in_memory = streamed.predict(df.drop(columns="y"), as_frame=True)
    pd.testing.assert_series_equal(from_parquet, in_memory)
    np.testing.assert_allclose(from_parquet.to_numpy(), memory.predict(df.drop(columns="y")), rtol=1e-3, atol=1e-4)
    # y apart from X (a Series or a pyarrow Table keyed by id; X without a y column): the same targets
    bare = write(df.drop(columns="y"), tmp_path / "bare")
    y = per_series_y(df)
    for given in (pd.Series(y, index=df["id"].unique()), pa.table({"id": df["id"].unique(), "t": y})):
        _, _, scaling, data, _ = streamed._training_data(bare, given, None, None, fitted=True)
        positions, chunk = next(data.chunks(None))
        np.testing.assert_allclose(chunk.targets[:, 0] * scaling.std[0] + scaling.mean[0], y[positions], rtol=1e-6, atol=1e-6)


def test_streamed_hold_ends_equals_in_memory(tmp_path):
    """`hold_ends=True` from Parquet: the window of every file's series,
    and the held steps of each chunk's, as in memory."""
    df = long_frame()
    path = write(df, tmp_path, files=3, row_group_size=16)
    streamed = S5Regressor(max_epochs=2, hold_ends=True, **SMALL).fit(path, "y")
    memory = S5Regressor(max_epochs=2, hold_ends=True, **SMALL).fit(df.drop(columns="y"), per_series_y(df))
    starts, ends = df.groupby("id")["time"].min(), df.groupby("id")["time"].max()
    assert streamed.preprocessing_.window == memory.preprocessing_.window == (starts.min(), ends.max())
    np.testing.assert_array_equal(streamed.predict(path), streamed.predict(df.drop(columns="y")))
    np.testing.assert_allclose(streamed.predict(path), memory.predict(df.drop(columns="y")), rtol=1e-3, atol=1e-4)
    # thinned in training: every batch's rows hold exactly the held series' steps
    thinned = S5Regressor(max_epochs=2, hold_ends=True, **{**SMALL, "observation_dropout": 0.3}).fit(path, "y")
    np.testing.assert_array_equal(thinned.predict(path), thinned.predict(df.drop(columns="y")))


@pytest.mark.parametrize("varying", [False, True])
def test_statistics_of_shares_merged_equal_one_pass(tmp_path, varying):
    """Each process's statistics of its own files (`share_statistics`),
    merged, are those of one pass over every file: the same series in the
    same order, moments, targets, weights, the first series, the error of
    the first varying target and the median gap."""
    df = long_frame(n=30, missing=True)
    df["w"] = df["y"] + 1.0
    if varying:
        df.loc[df["id"] == "s017", "y"] = np.arange((df["id"] == "s017").sum(), dtype=float)
    source = open_parquet(write(df, tmp_path, files=5, row_group_size=13), id_col="id", time_col="time", exclude=("y", "w"))
    targets = _streaming.TargetRows(("y",), True)
    whole = _streaming.share_statistics(source, targets, "w", per_step=True)
    owners = np.array([1, 0, 2, 0, 1])
    shares = [_streaming.share_statistics(source, targets, "w", True, np.flatnonzero(owners == p)) for p in range(3)]
    merged = Statistics.merged(shares[::-1])  # in any order of processes
    assert (merged.ids, merged.ledger.keys, merged.ledger.offsets) == (whole.ids, whole.ledger.keys, whole.ledger.offsets)
    for name in Statistics.PER_CHUNK:
        got, want = getattr(merged, name), getattr(whole, name)
        assert len(got) == len(want), name
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert merged.first.ids == whole.first.ids and merged.missing and whole.missing
    assert merged.gaps.median() == whole.gaps.median()
    # hold_ends' window: the earliest first and the latest last time stamp
    assert (merged.first_time, merged.last_time) == (whole.first_time, whole.last_time)
    assert (whole.first_time, whole.last_time) == (df["time"].min(), df["time"].max())
    assert (merged.varying is None) == (not varying) and str(merged.varying) == str(whole.varying)
    np.testing.assert_array_equal(merged.ledger.parts, np.repeat(np.arange(5), np.bincount(whole.ledger.parts)))
    with pytest.raises(ValueError, match="series 's003' appears again"):
        source.check_unique(["s001", "s003", "s002", "s003"], [0, 0, 1, 3])


def test_streamed_classifier_with_validation(tmp_path):
    df = long_frame(n=40)
    df["y"] = np.where(df["y"] > 0, "up", "down")
    path = write(df, tmp_path, files=3, row_group_size=16)
    clf = S5Classifier(max_epochs=2, validation_fraction=0.25, batch_size=8, **SMALL).fit(path, "y")
    assert clf.classes_.tolist() == ["down", "up"]
    assert all("valid_loss" in record for record in clf.history_)
    proba = clf.predict_proba(path)
    want = clf.predict_proba(df.drop(columns="y"), as_frame=True)
    pd.testing.assert_frame_equal(proba, want)
    assert clf.predict(path).tolist() == clf.predict(df.drop(columns="y")).tolist()
    labels = df.groupby("id", sort=False)["y"].first()
    assert clf.score(path, "y") == clf.score(df.drop(columns="y"), labels.to_numpy())
    assert clf.score(path, labels.iloc[::-1]) == clf.score(df.drop(columns="y"), labels.to_numpy())


def test_order_and_column_errors_name_the_series_or_column(tmp_path):
    df = long_frame(n=6)
    estimator = S5Regressor(max_epochs=1, **SMALL)
    # an id that reappears after another began, in one file
    shuffled = pd.concat([df[df.id == "s000"].iloc[:2], df[df.id == "s001"], df[df.id == "s000"].iloc[2:]])
    pq.write_table(pa.Table.from_pandas(shuffled, preserve_index=False), tmp_path / "one.parquet")
    with pytest.raises(ValueError, match=r"series 's000' appears again in .*one\.parquet"):
        estimator.fit(str(tmp_path / "one.parquet"), "y")
    # a series split over two files
    (tmp_path / "split").mkdir()
    first = df[df.id == "s000"]
    pq.write_table(pa.Table.from_pandas(first.iloc[:2], preserve_index=False), tmp_path / "split" / "a.parquet")
    pq.write_table(pa.Table.from_pandas(first.iloc[2:], preserve_index=False), tmp_path / "split" / "b.parquet")
    with pytest.raises(ValueError, match=r"series 's000' appears again in .*b\.parquet"):
        estimator.fit(str(tmp_path / "split"), "y")
    # a series' rows in another order are read in time order, as in memory; a repeated time raises
    backwards = df.copy()
    rows = np.flatnonzero(backwards.id == "s002")
    backwards.iloc[rows] = backwards.iloc[rows[::-1]].to_numpy()
    pq.write_table(pa.Table.from_pandas(backwards, preserve_index=False), tmp_path / "back.parquet")
    read = [c.panel for c in open_parquet(tmp_path / "back.parquet", id_col="id", time_col="time").read()]
    panel = next(p for p in read if "s002" in p.ids)
    i = panel.ids.index("s002")
    np.testing.assert_array_equal(panel.times[i], df.time[df.id == "s002"].to_numpy())
    np.testing.assert_array_equal(panel.values[i][:, 0], df.a[df.id == "s002"].to_numpy())
    backwards.loc[rows[1], "time"] = backwards.loc[rows[0], "time"]
    pq.write_table(pa.Table.from_pandas(backwards, preserve_index=False), tmp_path / "repeated.parquet")
    with pytest.raises(ValueError, match=r"series 's002'.*have the same time.*repeated\.parquet"):
        estimator.fit(str(tmp_path / "repeated.parquet"), "y")
    # labels not constant within a series (a regressor reads them as per-step targets)
    varying = df.copy()
    varying.loc[np.flatnonzero(varying.id == "s003")[1], "y"] = 99.0
    pq.write_table(pa.Table.from_pandas(varying, preserve_index=False), tmp_path / "vary.parquet")
    with pytest.raises(ValueError, match=r"column 'y'.*series 's003'"):
        S5Classifier(max_epochs=1, **SMALL).fit(str(tmp_path / "vary.parquet"), "y")
    good = str(tmp_path / "good.parquet")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), good)
    with pytest.raises(ValueError, match=r"time_col 'when' is not a column of .*good\.parquet"):
        S5Regressor(**{**SMALL, "time_col": "when"}).fit(good, "y")
    with pytest.raises(ValueError, match=r"y 'target' is not a column"):
        estimator.fit(good, "target")
    with pytest.raises(ValueError, match="id_col"):
        S5Regressor(**{**SMALL, "id_col": None, "time_col": None}).fit(good, "y")
    with pytest.raises(ValueError, match="does not exist"):
        estimator.fit(str(tmp_path / "nowhere"), "y")
    # nothing was fitted by the failed calls
    assert not hasattr(estimator, "model_")
    # predict needs the columns seen in fit
    fitted = S5Regressor(max_epochs=1, **SMALL).fit(good, "y")
    pq.write_table(pa.Table.from_pandas(df.drop(columns="b"), preserve_index=False), tmp_path / "nob.parquet")
    with pytest.raises(ValueError, match=r"feature column 'b' is not a column"):
        fitted.predict(str(tmp_path / "nob.parquet"))


def test_streamed_fit_checkpoints_and_resumes(tmp_path):
    """`checkpoint_dir` with a Parquet X: the data's digest is read from the
    stream; a finished checkpoint is restored without training, and other
    data in the same directory is refused."""
    pytest.importorskip("orbax.checkpoint")
    df = long_frame()
    path = write(df, tmp_path / "data")
    params = dict(max_epochs=2, checkpoint_dir=str(tmp_path / "ckpt"), **SMALL)
    first = S5Regressor(**params).fit(path, "y")
    again = S5Regressor(**params).fit(path, "y")
    assert again.history_ == first.history_
    pd.testing.assert_series_equal(again.predict(path), first.predict(path))
    other = df.assign(a=np.cos(df["a"]))  # (a shift alone would be scaled away: the same training)
    with pytest.raises(ValueError, match="data"):
        S5Regressor(**params).fit(write(other, tmp_path / "other"), "y")


def test_streamed_per_step_fit_predict_score_equal_in_memory(tmp_path):
    """A y column that varies within a series is one target per observation:
    the streamed per-step fit is the in-memory fit of the long frame with a
    (series, time) MultiIndex y (all series in one batch, as above), with
    the target scaling learned from streamed moments; predict and score
    from Parquet are those in memory."""
    df = long_frame()
    df["y"] = 2.0 * df["a"] + 0.1 * df["time"]
    path = write(df, tmp_path)
    X, y = df.drop(columns="y"), df.set_index(["id", "time"])["y"]
    streamed = S5Regressor(max_epochs=3, **SMALL).fit(path, "y")
    memory = S5Regressor(max_epochs=3, **SMALL).fit(X, y)
    assert streamed.per_step_ and memory.per_step_
    np.testing.assert_allclose(streamed._target_state.mean, memory._target_state.mean, rtol=1e-12)
    np.testing.assert_allclose(streamed._target_state.std, memory._target_state.std, rtol=1e-12)
    assert [r["train_loss"] for r in streamed.history_] == pytest.approx(
        [r["train_loss"] for r in memory.history_], rel=1e-4
    )
    from_parquet = streamed.predict(path)
    pd.testing.assert_series_equal(from_parquet, streamed.predict(X, as_frame=True))
    np.testing.assert_allclose(from_parquet.to_numpy(), memory.predict(X, as_frame=True).to_numpy(), rtol=1e-3, atol=1e-3)
    assert streamed.score(path, "y") == pytest.approx(streamed.score(X, y), rel=1e-12)
    with pytest.raises(ValueError, match="columns of X"):
        streamed.score(path, per_series_y(df))


def test_streamed_sample_weight_and_score_equal_in_memory(tmp_path):
    """`sample_weight` as a column of X or a Series keyed by id: the same
    weights, weighted statistics and fit as in memory; `score` too."""
    df = long_frame()
    ids = df["id"].unique()
    w = pd.Series(np.arange(len(ids)) % 4 * 0.5, index=ids)  # zeros included
    df["w"] = df["id"].map(w)
    path = write(df, tmp_path / "data")
    X, y = df.drop(columns=["y", "w"]), per_series_y(df)
    params = dict(max_epochs=2, standardize="global", **SMALL)
    streamed = S5Regressor(**params).fit(path, "y", sample_weight="w")
    memory = S5Regressor(**params).fit(X, y, sample_weight=w.to_numpy())
    assert streamed.feature_names_in_.tolist() == ["a", "b"]  # w is not a feature
    np.testing.assert_allclose(streamed.preprocessing_.feature_mean, memory.preprocessing_.feature_mean, rtol=1e-12)
    np.testing.assert_allclose(streamed.preprocessing_.feature_std, memory.preprocessing_.feature_std, rtol=1e-12)
    np.testing.assert_allclose(streamed._target_state.mean, memory._target_state.mean, rtol=1e-12)
    assert [r["train_loss"] for r in streamed.history_] == pytest.approx(
        [r["train_loss"] for r in memory.history_], rel=1e-4
    )
    # a Series keyed by id, in another order: the same weights in the batches
    for given in ("w", w.iloc[::-1]):
        _, _, _, data, _ = streamed._training_data(path, "y", None, given, fitted=False)
        positions, chunk = next(data.chunks(None))
        np.testing.assert_array_equal(chunk.weights, w.to_numpy()[positions].astype(np.float32))
    # score: a column or a Series keyed by id, weighted or not, as in memory
    want = streamed.score(X, y)
    assert streamed.score(path, "y") == pytest.approx(want, rel=1e-12)
    assert streamed.score(path, pd.Series(y, index=ids).iloc[::-1]) == pytest.approx(want, rel=1e-12)
    weighted = streamed.score(X, y, sample_weight=w.to_numpy())
    assert weighted != pytest.approx(want)
    assert streamed.score(path, "y", sample_weight="w") == pytest.approx(weighted, rel=1e-12)
    # errors name the series and the column
    varying = df.copy()
    varying.loc[np.flatnonzero(varying.id == "s005")[1], "w"] = 7.0
    bad = write(varying, tmp_path / "vary")
    with pytest.raises(ValueError, match=r"column 'w'.*series 's005'"):
        S5Regressor(**params).fit(bad, "y", sample_weight="w")
    negative = write(df.assign(w=np.where(df.id == "s002", -1.0, df.w)), tmp_path / "negative")
    with pytest.raises(ValueError, match=r"sample_weight for series 's002'"):
        S5Regressor(**params).fit(negative, "y", sample_weight="w")
    with pytest.raises(ValueError, match="zero weight"):
        S5Regressor(**params).fit(write(df.assign(w=0.0), tmp_path / "zero"), "y", sample_weight="w")
    with pytest.raises(ValueError, match=r"sample_weight has no entry for series \['s000'\]"):
        S5Regressor(**params).fit(path, "y", sample_weight=w.iloc[1:])
    with pytest.raises(TypeError, match="sample_weight"):
        S5Regressor(**params).fit(path, "y", sample_weight=w.to_numpy())


def test_chunked_model_predicts_from_parquet_as_in_memory(tmp_path):
    """A per-step model fitted in memory with `chunk_length` predicts a
    Parquet data set over the same chunks, states carried: the in-memory
    predictions."""
    df = long_frame()
    df["y"] = np.sin(df["a"])
    path = write(df.drop(columns="y"), tmp_path)
    model = S5Regressor(max_epochs=1, chunk_length=8, **SMALL).fit(
        df.drop(columns="y"), df.set_index(["id", "time"])["y"]
    )
    assert model._prediction_backprop() == TruncatedBackprop(8)
    pd.testing.assert_series_equal(model.predict(path), model.predict(df.drop(columns="y"), as_frame=True))
