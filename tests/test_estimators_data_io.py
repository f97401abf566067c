"""Data in and out of S5Regressor / S5Classifier as users hold it: long and
MultiIndex frames (in fit, predict, score, Pipeline, GridSearchCV,
cross_val_score), RaggedPanels in scikit-learn's splitters, explicit times
through metadata routing, sktime's axis order, one-column target frames,
pandas-indexed predictions, and the inputs that used to give silently
wrong numbers."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning, UnsetMetadataPassedError
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from s5ts import S5Classifier, S5Regressor
from s5ts.data import to_panel

# One pass over the data an epoch, every observation seen (not the defaults'
# min_epoch_steps and observation_dropout): the mechanics under test count steps.
FAST = dict(
    n_layers=1, d_model=8, state_size=4, batch_size=8, validation_fraction=0.0, random_state=0, max_epochs=2,
    min_epoch_steps=None, observation_dropout=0.0,
)


def long_frame(n=12, seed=0):
    """A SQL-style long frame: one row per reading of n patients, rows of
    different patients interleaved; per-patient targets by id and labels."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        hours = np.cumsum(rng.uniform(0.5, 3.0, int(rng.integers(3, 8))))
        for h in hours:
            rows.append({"patient_id": f"p{i:02d}", "hours": h, "hr": rng.normal(80, 10), "spo2": rng.normal(97, 1)})
    long = pd.DataFrame(rows).sort_values("hours", kind="stable").reset_index(drop=True)  # interleaved
    ids = list(pd.unique(long["patient_id"]))
    duration = long.groupby("patient_id")["hours"].agg(lambda h: h.max() - h.min())
    y = pd.Series(duration.loc[ids].to_numpy(), index=ids)
    long["label"] = long["patient_id"].map(lambda p: "long" if y[p] > y.median() else "short")
    return long, y


@pytest.fixture(scope="module")
def long():
    return long_frame()


def features(long):
    return long.drop(columns="label")


def test_long_frame_fit_predict_score_with_constructor_columns(long):
    frame, y = long
    X = features(frame)
    model = S5Regressor(**FAST, id_col="patient_id", time_col="hours").fit(X, y)
    # the same series as a list of frames indexed by time: the same model
    as_list = [g.set_index("hours")[["hr", "spo2"]] for _, g in X.groupby("patient_id", sort=False)]
    direct = S5Regressor(**FAST).fit(as_list, y.to_numpy())
    np.testing.assert_allclose(model.predict(X), direct.predict(as_list), rtol=1e-6)
    assert model.feature_names_in_.tolist() == ["hr", "spo2"]
    # y by id in any order, or in the order of first appearance: the same fit
    shuffled = y.sample(frac=1.0, random_state=1)
    np.testing.assert_allclose(
        S5Regressor(**FAST, id_col="patient_id", time_col="hours").fit(X, shuffled).predict(X), model.predict(X)
    )
    assert model.score(X, shuffled) == pytest.approx(model.score(X, y.to_numpy()))
    with pytest.raises(ValueError, match=r"y has no entry for series \['p03'\] of X"):
        clone(model).fit(X, y.drop("p03"))
    with pytest.raises(ValueError, match=r"y has entries for series \['p99'\] that are not in X"):
        model.score(X, pd.concat([y, pd.Series({"p99": 1.0})]))
    # clone and get_params keep the columns
    assert clone(model).get_params()["id_col"] == "patient_id"


def test_long_frame_without_id_col_names_the_parameter(long):
    frame, y = long
    with pytest.raises(TypeError, match="id_col and time_col parameters"):
        S5Regressor(**FAST).fit(features(frame), y)
    with pytest.raises(ValueError, match=r"id_col 'patient' is not a column of X"):
        S5Regressor(**FAST, id_col="patient").fit(features(frame), y)
    with pytest.raises(ValueError, match="id_col"):
        S5Regressor(**FAST, id_col=["patient_id"]).fit(features(frame), y)  # sklearn's parameter check


def test_long_frame_in_pipeline_grid_search_and_cross_val_score(long):
    frame, y = long
    X = features(frame)
    groups = X["patient_id"]
    per_row_y = X["patient_id"].map(y)  # the target repeated on every row of its series
    model = S5Regressor(**FAST, id_col="patient_id", time_col="hours")
    cv = GroupKFold(3)
    scores = cross_val_score(model, X, per_row_y, groups=groups, cv=cv)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    # each fold is the model fitted on whole series: the same score by hand
    train, test = next(cv.split(X, per_row_y, groups))
    by_hand = clone(model).fit(X.iloc[train], per_row_y.iloc[train]).score(X.iloc[test], per_row_y.iloc[test])
    assert scores[0] == pytest.approx(by_hand)
    pipe = make_pipeline(FunctionTransformer(lambda df: df.assign(hr=df["hr"] / 100)), model)
    assert np.isfinite(pipe.fit(X, y).score(X, y))
    search = GridSearchCV(model, {"time_handling": ["gaps", "drop"]}, cv=cv).fit(X, per_row_y, groups=groups)
    assert search.best_params_["time_handling"] in ("gaps", "drop")
    assert search.predict(X).shape == (len(y),)
    labels = frame["label"]
    classifier = S5Classifier(**FAST, id_col="patient_id", time_col="hours")
    accuracy = cross_val_score(classifier, X, labels, groups=groups, cv=cv)
    assert ((0 <= accuracy) & (accuracy <= 1)).all()
    # a per-row target that varies within a series is not a per-series target
    with pytest.raises(ValueError, match=r"differs within series 'p\d\d'"):
        clone(model).fit(X, X["hr"])


def test_multiindex_frame_with_per_row_targets_and_group_splits(long):
    frame, y = long
    mi = features(frame).set_index(["patient_id", "hours"])
    groups = mi.index.get_level_values(0)
    per_row = np.asarray(groups.map(y))
    scores = cross_val_score(S5Regressor(**FAST), mi, per_row, groups=groups, cv=GroupKFold(2))
    assert np.isfinite(scores).all()
    # a label column of the MultiIndex frame, one value per series
    labels = frame.set_index(["patient_id", "hours"])["label"]
    model = S5Classifier(**FAST).fit(mi, labels)
    assert model.score(mi, labels) == pytest.approx(model.score(mi, labels.groupby(level=0).first()))


def test_ragged_panel_in_cross_val_score(long):
    frame, y = long
    panel = to_panel(features(frame), id_col="patient_id", time_col="hours")
    scores = cross_val_score(S5Regressor(**FAST), panel, y.to_numpy(), cv=KFold(3))
    by_hand = S5Regressor(**FAST).fit(panel[4:], y.to_numpy()[4:]).score(panel[:4], y.to_numpy()[:4])
    assert scores[0] == pytest.approx(by_hand)


def test_sample_weight_per_row_of_a_long_frame(long):
    frame, y = long
    X = features(frame)
    model = S5Regressor(**FAST, id_col="patient_id", time_col="hours")
    weights = np.linspace(0.5, 2.0, len(y))
    per_row = X["patient_id"].map(pd.Series(weights, index=y.index)).to_numpy()
    np.testing.assert_allclose(
        clone(model).fit(X, y, sample_weight=per_row).predict(X), clone(model).fit(X, y, sample_weight=weights).predict(X)
    )


# --------------------------------------------------------------------------
# explicit times: routed through cross-validation, required at predict


def timed_arrays(n=18, L=6, seed=0):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, 60, (n, L)), axis=1)
    X = np.sin(times / 7)[..., None]
    return X, times[:, -1] - times[:, 0], times


def test_predict_without_the_times_seen_in_fit_raises():
    X, y, times = timed_arrays()
    model = S5Regressor(**FAST).fit(X, y, times=times)
    with pytest.raises(ValueError, match=r"fitted on series with time stamps, but X has none.*set_score_request\(times=True\)"):
        model.predict(X)
    with pytest.raises(ValueError, match="pass times="):
        model.score(X, y)
    assert model.predict(X, times=times).shape == (len(y),)
    # a model fitted on numbered steps predicts on numbered steps
    S5Regressor(**FAST).fit(X, y).predict(X)


def test_metadata_routing_sends_times_to_fit_and_score():
    X, y, times = timed_arrays()
    cv = KFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        model = S5Regressor(**FAST).set_fit_request(times=True).set_score_request(times=True)
        scores = cross_val_score(model, X, y, params={"times": times}, cv=cv)
    train, test = next(cv.split(X))
    by_hand = S5Regressor(**FAST).fit(X[train], y[train], times=times[train]).score(X[test], y[test], times=times[test])
    assert scores[0] == pytest.approx(by_hand)
    # a score request left unset is sklearn's error; times kept from score is ours
    with sklearn.config_context(enable_metadata_routing=True):
        only_fit = S5Regressor(**FAST).set_fit_request(times=True)
        with pytest.raises(UnsetMetadataPassedError, match=r"\[times\] are passed but are not explicitly set"):
            cross_val_score(only_fit, X, y, params={"times": times}, cv=cv, error_score="raise")
        no_score_times = S5Regressor(**FAST).set_fit_request(times=True).set_score_request(times=False)
        with pytest.warns(UserWarning, match="fitted on series with time stamps"):
            scores = cross_val_score(no_score_times, X, y, params={"times": times}, cv=cv)
    assert np.isnan(scores).all()
    # without routing, times reach fit only: the folds' scores fail the same way
    with pytest.warns(UserWarning, match="fitted on series with time stamps"):
        scores = cross_val_score(S5Regressor(**FAST), X, y, params={"times": times}, cv=cv)
    assert np.isnan(scores).all()


# --------------------------------------------------------------------------
# sktime's (n, d, L) arrays


def test_layout_reads_sktime_numpy3d():
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 10, (12, 7)), axis=1)
    nld = np.stack([np.sin(times), np.cos(times), times / 10], axis=-1)
    ndl = nld.transpose(0, 2, 1)
    y = times[:, -1]
    a = S5Regressor(**FAST).fit(nld, y, times=times)
    b = S5Regressor(**FAST, layout="ndl").fit(ndl, y, times=times)
    np.testing.assert_allclose(b.predict(ndl, times=times), a.predict(nld, times=times), rtol=1e-6)
    assert b.n_features_in_ == 3
    with pytest.raises(ValueError, match=r"is read as \(n series, L time steps, d features\).*layout='ndl'"):
        S5Regressor(**FAST).fit(ndl, y, times=times)
    with pytest.raises(
        ValueError, match=r"\(12, 3, 7\) is read as \(n series, L time steps, d features\).*fitted on 3.*set layout='ndl'"
    ):
        a.predict(ndl)


# --------------------------------------------------------------------------
# targets and outputs


def test_one_column_frame_y_as_sklearn_does(long):
    frame, y = long
    X = features(frame)
    labels = frame.groupby("patient_id", sort=False)["label"].first()
    classifier = S5Classifier(**FAST, id_col="patient_id", time_col="hours")
    with pytest.warns(DataConversionWarning, match="A column-vector y was passed"):
        classifier.fit(X, labels.to_frame())
    assert classifier.classes_.tolist() == ["long", "short"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0 <= classifier.score(X, labels) <= 1
    # the regressor reads a one-column frame as one named output, as Ridge does
    regressor = S5Regressor(**FAST, id_col="patient_id", time_col="hours").fit(X, y.to_frame("duration"))
    assert regressor.predict(X).shape == (len(y), 1)
    assert regressor.predict(X, as_frame=True).columns.tolist() == ["duration"]


def test_pandas_indexed_predictions(long):
    frame, y = long
    X = features(frame)
    regressor = S5Regressor(**FAST, id_col="patient_id", time_col="hours").fit(X, y)
    prediction = regressor.predict(X, as_frame=True)
    assert isinstance(prediction, pd.Series) and prediction.index.name == "patient_id"
    assert prediction.index.tolist() == y.index.tolist()  # order of first appearance
    np.testing.assert_array_equal(prediction.to_numpy(), regressor.predict(X))
    # the index lines up with targets held by id, whatever their order
    shuffled = y.sample(frac=1.0, random_state=0)
    np.testing.assert_array_equal(
        prediction.loc[shuffled.index].to_numpy(), regressor.predict(X)[[y.index.get_loc(k) for k in shuffled.index]]
    )
    classifier = S5Classifier(**FAST, id_col="patient_id", time_col="hours").fit(X, frame["label"])
    proba = classifier.predict_proba(X, as_frame=True)
    assert proba.columns.tolist() == ["long", "short"] and proba.index.tolist() == y.index.tolist()
    np.testing.assert_array_equal(proba.to_numpy(), classifier.predict_proba(X))
    assert classifier.predict(X, as_frame=True).tolist() == classifier.predict(X).tolist()
    # per-step targets come back indexed by (series, time)
    mi = X.set_index(["patient_id", "hours"])
    per_step = S5Regressor(**FAST, loss="gaussian_nll").fit(mi, mi["hr"] / 100)
    mean, std = per_step.predict(mi, as_frame=True, return_std=True)
    assert mean.index.names == ["patient_id", "hours"] and std.index.equals(mean.index)
    assert len(mean) == len(mi) and mean.sort_index().index.equals(mi.sort_index().index)
    np.testing.assert_array_equal(mean.to_numpy(), np.concatenate(per_step.predict(mi)))


# --------------------------------------------------------------------------
# no silent wrong answers


def frames_with_columns(n=10, seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(n):
        L = int(rng.integers(3, 7))
        index = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.cumsum(rng.uniform(1, 5, L)), unit="min")
        frames.append(pd.DataFrame({"x": rng.normal(size=L), "z": np.nan}, index=index))
    return frames, rng.normal(size=n)


def test_a_feature_never_observed_in_fit_is_an_error():
    X, y = frames_with_columns()
    for standardize in (True, False):
        with pytest.raises(ValueError, match=r"column 'z' is NaN in every training series"):
            S5Regressor(**FAST, standardize=standardize).fit(X, y)
    X[3].iloc[1, 1] = 0.5  # observed once: a column the model can learn
    model = S5Regressor(**FAST).fit(X, y)
    assert np.isfinite(model.predict(X)).all() and np.isfinite(model.preprocessing_.feature_mean).all()


def test_nan_padded_array_without_times_drops_the_padding():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 9, 14)
    ragged = [rng.normal(size=(L, 2)) for L in lengths]
    padded = np.full((14, 8, 2), np.nan)
    for i, x in enumerate(ragged):
        padded[i, : len(x)] = x
    y = np.array([x[-1, 0] for x in ragged])
    model = S5Regressor(**FAST, pooling="last").fit(padded, y)
    # the same as the ragged list: the padded rows are not read as steps
    np.testing.assert_allclose(
        model.predict(padded), S5Regressor(**FAST, pooling="last").fit(ragged, y).predict(ragged), rtol=1e-6
    )


def test_tz_naive_fit_refuses_tz_aware_predict_and_back():
    X, y = frames_with_columns()
    X = [f[["x"]] for f in X]
    naive = S5Regressor(**FAST).fit(X, y)
    aware = [f.tz_localize("Europe/Berlin") for f in X]
    with pytest.raises(ValueError, match=r"fitted on tz-naive datetimes, but X has tz-aware datetimes \(Europe/Berlin\)"):
        naive.predict(aware)
    with pytest.raises(ValueError, match=r"fitted on tz-aware datetimes \(Europe/Berlin\), but X has tz-naive"):
        S5Regressor(**FAST).fit(aware, y).predict(X)
    # another zone of the same instants is the same elapsed time: accepted
    fitted = S5Regressor(**FAST).fit(aware, y)
    np.testing.assert_array_equal(fitted.predict([f.tz_convert("UTC") for f in aware]), fitted.predict(aware))


def test_predict_reads_the_fitted_encoder_and_loss_not_set_params():
    X, y = frames_with_columns()
    for f in X:
        f.iloc[0, 1] = 1.0  # z observed at the first step only: NaN elsewhere
    model = S5Regressor(**FAST).fit(X, y)
    before = model.predict(X)
    model.set_params(encoder="pendulum_cnn", loss="gaussian_nll")
    np.testing.assert_array_equal(model.predict(X), before)
    with pytest.raises(ValueError, match="return_std=True needs a Gaussian head"):
        model.predict(X, return_std=True)


def test_one_class_error_prints_the_label():
    X, _ = frames_with_columns()
    with pytest.raises(ValueError, match=r"y has only one class \(0\);"):
        S5Classifier(**FAST).fit([f[["x"]] for f in X], np.zeros(len(X), dtype=np.int64))
