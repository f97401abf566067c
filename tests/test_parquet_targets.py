"""Targets of a Parquet fit as users hold them: several target columns of
X, and per-step targets apart from X (a second Parquet data set laid out
as X, or a pandas (id, time)-indexed y); each against the same data in
memory (a DataFrame y by id, or a MultiIndex y)."""

import pathlib

import numpy as np
import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

from sklearn.exceptions import DataConversionWarning  # noqa: E402
from test_parquet import SMALL, long_frame, write  # noqa: E402

from s5ts import S5Classifier, S5Regressor  # noqa: E402


def _assert_same_fit(streamed, memory):
    """The same target scaling (up to rounding) and, with every series in
    one batch, the same losses as in memory."""
    got, want = streamed._target_state, memory._target_state
    np.testing.assert_allclose(got.mean, want.mean, rtol=1e-12)
    np.testing.assert_allclose(got.std, want.std, rtol=1e-12)
    assert (got.is_1d, got.columns) == (want.is_1d, want.columns)
    assert streamed.per_step_ == memory.per_step_
    assert [r["train_loss"] for r in streamed.history_] == pytest.approx(
        [r["train_loss"] for r in memory.history_], rel=1e-4
    )


def _assert_same_predictions(streamed, memory, path, X, score_path_y, score_memory_y):
    from_parquet = streamed.predict(path)
    pd.testing.assert_frame_equal(from_parquet, streamed.predict(X, as_frame=True))
    np.testing.assert_allclose(from_parquet.to_numpy(), memory.predict(X, as_frame=True).to_numpy(), rtol=1e-3, atol=1e-3)
    assert streamed.score(path, score_path_y) == pytest.approx(streamed.score(X, score_memory_y), rel=1e-12)


def test_several_target_columns_per_series_equal_in_memory(tmp_path):
    """y a list of columns of X, each the same on every row of a series:
    one (k,) target per series, as a DataFrame y indexed by id in memory."""
    df = long_frame()
    df["z"] = df["id"].map({sid: 10.0 * k for k, sid in enumerate(df["id"].unique())})
    path = write(df, tmp_path, files=3, row_group_size=11)
    X, y = df.drop(columns=["y", "z"]), df.groupby("id", sort=False)[["y", "z"]].first()
    streamed = S5Regressor(max_epochs=3, **SMALL).fit(path, ["y", "z"])
    memory = S5Regressor(max_epochs=3, **SMALL).fit(X, y)
    assert streamed.feature_names_in_.tolist() == ["a", "b"]
    _assert_same_fit(streamed, memory)
    assert not streamed.per_step_ and streamed._target_state.columns == ("y", "z")
    _assert_same_predictions(streamed, memory, path, X, ["y", "z"], y)
    assert streamed.score(path, ("y", "z")) == pytest.approx(streamed.score(X, y), rel=1e-12)
    # a list of one column is a DataFrame y of one column: (n, 1) predictions
    one = S5Regressor(max_epochs=1, **SMALL).fit(path, ["z"])
    assert one.predict(path).columns.tolist() == ["z"]


def test_several_target_columns_per_step_equal_in_memory(tmp_path):
    """y a list of columns of X of which one varies within a series: one
    (k,) target per observation, as a MultiIndex DataFrame y in memory."""
    df = long_frame()
    df["v"] = 2.0 * df["a"] + 0.1 * df["time"]  # varies; "y" is constant within each series
    path = write(df, tmp_path, files=3, row_group_size=11)
    X, y = df.drop(columns=["y", "v"]), df.set_index(["id", "time"])[["v", "y"]]
    streamed = S5Regressor(max_epochs=3, **SMALL).fit(path, ["v", "y"])
    memory = S5Regressor(max_epochs=3, **SMALL).fit(X, y)
    assert streamed.per_step_
    _assert_same_fit(streamed, memory)
    _assert_same_predictions(streamed, memory, path, X, ["v", "y"], y)


@pytest.mark.parametrize("form, columns", [("parquet", ["v"]), ("parquet", ["v", "w"]), ("pandas", ["v", "w"])])
def test_per_step_targets_apart_from_x_equal_in_memory(tmp_path, form, columns):
    """y apart from X, one target per observation: a second Parquet data
    set with the same series in the same files and order (written in other
    row groups, so the two are read in record batches that do not line
    up), given as a path or a Dataset, streamed in lockstep with X also
    when the epochs shuffle the files; or a pandas (id, time)-indexed y
    (its rows in any order). As the MultiIndex y in memory (a Series for
    one column)."""
    df = long_frame()
    df["v"] = 2.0 * df["a"] + 0.1 * df["time"]
    df["w"] = np.cos(df["time"])
    X = df.drop(columns=["y", "v", "w"])
    path = write(X, tmp_path / "x", files=3, row_group_size=11)
    y = df.set_index(["id", "time"])[columns]
    y = y[columns[0]] if len(columns) == 1 else y
    if form == "parquet":
        y_path = pathlib.Path(write(df[["id", "time", *columns]], tmp_path / "y", files=3, row_group_size=7))
        given = (y_path, ds.dataset(y_path, format="parquet"))
    else:
        given = (y.sample(frac=1.0, random_state=0),)
    streamed = S5Regressor(max_epochs=3, **SMALL).fit(path, given[0])
    memory = S5Regressor(max_epochs=3, **SMALL).fit(X, y)
    _assert_same_fit(streamed, memory)
    from_parquet = streamed.predict(path)
    want = streamed.predict(X, as_frame=True)
    (pd.testing.assert_series_equal if len(columns) == 1 else pd.testing.assert_frame_equal)(from_parquet, want)
    for y_given in given:
        assert streamed.score(path, y_given) == pytest.approx(streamed.score(X, y), rel=1e-12)
    # each epoch's shuffled files: the same series' targets beside X's
    _, _, scaling, data, _ = streamed._training_data(path, given[-1], None, None, fitted=True)
    steps = [v.reshape(len(v), -1) for v in (y.loc[sid].to_numpy() for sid in df["id"].unique())]
    for positions, chunk in data.chunks(np.random.default_rng(1)):
        for position, targets in zip(positions, chunk.targets):
            np.testing.assert_allclose(targets * scaling.std + scaling.mean, steps[position], rtol=1e-6, atol=1e-6)


def test_classifier_label_columns_as_in_memory(tmp_path):
    """S5Classifier takes one label per series, as in memory: a list of one
    column is a one-column DataFrame y (sklearn's warning, then the labels);
    several columns or a target data set raise a ValueError."""
    df = long_frame()
    df["y"] = np.where(df["y"] > 0, "up", "down")
    path = write(df, tmp_path / "x")
    X = df.drop(columns="y")
    labels = df.groupby("id", sort=False)[["y"]].first()
    with pytest.warns(DataConversionWarning):
        streamed = S5Classifier(max_epochs=1, **SMALL).fit(path, ["y"])
    with pytest.warns(DataConversionWarning):
        memory = S5Classifier(max_epochs=1, **SMALL).fit(X, labels)
    assert streamed.history_[0]["train_loss"] == pytest.approx(memory.history_[0]["train_loss"], rel=1e-4)
    pd.testing.assert_frame_equal(streamed.predict_proba(path), memory.predict_proba(X, as_frame=True), rtol=1e-4)
    with pytest.raises(ValueError, match="one label per series"):
        S5Classifier(max_epochs=1, **SMALL).fit(X, df.assign(z="same").groupby("id", sort=False)[["y", "z"]].first())
    with pytest.raises(ValueError, match="one label per series"):
        S5Classifier(max_epochs=1, **SMALL).fit(write(df.assign(z="same"), tmp_path / "z"), ["y", "z"])
    y_path = pathlib.Path(write(df[["id", "time", "y"]], tmp_path / "y"))
    with pytest.raises(ValueError, match="one label per series"):
        S5Classifier(max_epochs=1, **SMALL).fit(write(X, tmp_path / "bare"), y_path)


def test_target_errors_name_the_series_and_the_column_or_file(tmp_path):
    df = long_frame(n=6)
    df["v"] = df["a"] * 2.0
    X = df.drop(columns=["y", "v"])
    path = write(X, tmp_path / "x", files=2)
    estimator = S5Regressor(max_epochs=1, **SMALL)
    full = write(df, tmp_path / "full", files=2)
    with pytest.raises(ValueError, match=r"y 'nope' is not a column of .*full"):
        estimator.fit(full, ["y", "nope"])
    with pytest.raises(ValueError, match="more than once"):
        estimator.fit(full, ["y", "y"])
    # a label column of several that is not constant within a series: the classifier names it
    with pytest.raises(ValueError, match=r"column 'v'.*series 's000'"):
        S5Classifier(max_epochs=1, **SMALL).fit(full, ["y", "v"])
    # NaN among the targets
    holes = df.assign(v=np.where((df.id == "s004") & (df.time > df.time.min()), np.nan, df.v))
    with pytest.raises(ValueError, match=r"y for series 's004' contains NaN"):
        estimator.fit(write(holes, tmp_path / "holes"), ["v", "y"])

    def misaligned(name, y_frame, files=2):
        return pathlib.Path(write(y_frame, tmp_path / name, files=files))

    targets = df[["id", "time", "v"]]
    renamed = misaligned("renamed", targets.assign(id=targets["id"].replace("s004", "s004b")))
    with pytest.raises(ValueError, match=r"series 's004' of .*x.part1\.parquet meets series 's004b' of .*renamed.part1\.parquet"):
        estimator.fit(path, renamed)
    shorter = misaligned("shorter", targets.drop(index=np.flatnonzero(targets.id == "s001")[-1]))
    with pytest.raises(ValueError, match=r"series 's001' has \d+ rows in .*x.part0\.parquet but \d+ in .*shorter.part0"):
        estimator.fit(path, shorter)
    moved = misaligned("moved", targets.assign(time=np.where(targets.id == "s005", targets.time + 0.5, targets.time)))
    with pytest.raises(ValueError, match=r"series 's005': its times in .*moved.part1\.parquet differ from those in .*x.part1"):
        estimator.fit(path, moved)
    # the same series split otherwise between the files, or a file more
    with pytest.raises(ValueError, match=r"series 's003' of .*x.part1\.parquet meets series 's003' of .*other.part0"):
        estimator.fit(path, _split_at(targets, tmp_path / "other", 4))
    with pytest.raises(ValueError, match=r"has 3 files and .*x 2"):
        estimator.fit(path, misaligned("three", targets, files=3))
    # a series more in y, or one fewer
    with pytest.raises(ValueError, match=r"series 's005' of .*x.part1\.parquet is not in .*fewer"):
        estimator.fit(path, misaligned("fewer", targets[targets.id != "s005"]))
    extra = pd.concat([targets, targets[targets.id == "s005"].assign(id="s006")])
    with pytest.raises(ValueError, match=r"series 's006' of .*more.part1\.parquet is not in .*x"):
        estimator.fit(path, _split_at(extra, tmp_path / "more", 3))
    # a pandas (id, time)-indexed y: a series missing or one more, a time moved
    steps = df.set_index(["id", "time"])["v"]
    with pytest.raises(ValueError, match=r"y has no entry for series 's003' of X \(in .*x.part1\.parquet\)"):
        estimator.fit(path, steps.drop(index="s003", level="id"))
    more = pd.concat([steps, steps.loc[["s005"]].rename(index={"s005": "s009"}, level="id")])
    with pytest.raises(ValueError, match=r"y has entries for series \['s009'\] that are not in X"):
        estimator.fit(path, more)
    shifted = steps.rename(index=dict.fromkeys([steps.loc["s002"].index[0]], -1.0), level="time")
    with pytest.raises(ValueError, match=r"y for series 's002'"):
        estimator.fit(path, shifted)
    # score reads y in lockstep too
    fitted = S5Regressor(max_epochs=1, **SMALL).fit(path, misaligned("good", targets))
    with pytest.raises(ValueError, match=r"series 's004' of .*x.part1\.parquet meets series 's004b'"):
        fitted.score(path, renamed)
    # a str is a column of X, never a path
    with pytest.raises(ValueError, match=r"y '.*good' is not a column.*give a target data set as a pathlib\.Path"):
        fitted.fit(path, str(tmp_path / "good"))


def _split_at(frame, directory, first):
    """`frame` in two files, the first holding its first `first` series."""
    directory.mkdir()
    ids = frame["id"].unique()
    for k, part in enumerate((ids[:first], ids[first:])):
        pq.write_table(pa.Table.from_pandas(frame[frame.id.isin(part)], preserve_index=False), directory / f"part{k}.parquet")
    return directory


def test_per_step_target_columns_follow_rows_written_out_of_time_order(tmp_path):
    """A series' rows written in another order are read in time order, and
    its per-step target column with them (`RaggedPanel.row_order`): the
    same fit as from the sorted file."""
    df = long_frame(n=6)
    df["v"] = 2.0 * df["a"] + 0.1 * df["time"]
    shuffled = df.copy()
    for sid in ("s001", "s004"):
        rows = np.flatnonzero(shuffled.id == sid)
        shuffled.iloc[rows] = shuffled.iloc[np.random.default_rng(0).permutation(rows)].to_numpy()
    X = df.drop(columns="y")
    sorted_path = write(X, tmp_path / "sorted", files=2, row_group_size=11)
    shuffled_path = write(shuffled.drop(columns="y"), tmp_path / "shuffled", files=2, row_group_size=11)
    a = S5Regressor(max_epochs=2, **SMALL).fit(sorted_path, ["v"])
    b = S5Regressor(max_epochs=2, **SMALL).fit(shuffled_path, ["v"])
    assert a.per_step_ and b.per_step_
    assert [r["train_loss"] for r in a.history_] == pytest.approx([r["train_loss"] for r in b.history_], rel=1e-6)
    pd.testing.assert_frame_equal(a.predict(sorted_path), b.predict(shuffled_path))
