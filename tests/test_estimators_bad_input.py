"""Bad input: one test per case. Each raises ValueError or TypeError whose
message names the series (and the column, for feature problems), and a
failed fit leaves an already fitted estimator exactly as it was."""

import copy

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from s5ts import S5Classifier, S5Regressor

# One pass over the data an epoch, every observation seen (not the defaults'
# min_epoch_steps and observation_dropout): the mechanics under test count steps.
FAST = dict(
    n_layers=1, d_model=8, state_size=4, batch_size=8, validation_fraction=0.0, random_state=0,
    min_epoch_steps=None, observation_dropout=0.0,
)
IDS = [f"s{i}" for i in range(8)]


def good_frames():
    """Eight two-feature series 's0'..'s7' (x, z) on irregular minute grids."""
    rng = np.random.default_rng(0)
    start = pd.Timestamp("2024-01-01")
    frames = {}
    for sid in IDS:
        L = int(rng.integers(3, 7))
        index = start + pd.to_timedelta(np.cumsum(rng.uniform(1, 5, L)), unit="min")
        frames[sid] = pd.DataFrame(rng.normal(size=(L, 2)), index=index, columns=["x", "z"])
    return frames


def as_X(frames):
    return pd.Series(frames)  # labelled ids: messages say 's2', not 2


Y = pd.Series(np.linspace(-1.0, 1.0, 8), index=IDS)


@pytest.fixture(scope="module")
def fitted():
    return S5Regressor(**FAST, max_epochs=2).fit(as_X(good_frames()), Y)


def snapshot(model):
    return {
        "attributes": dict(vars(model)),
        "prediction": model.predict(as_X(good_frames())),
        "rng": copy.deepcopy(model._rng_.bit_generator.state),
    }


def assert_unchanged(model, before):
    after = vars(model)
    assert after.keys() == before["attributes"].keys()
    changed = [k for k, v in before["attributes"].items() if after[k] is not v]
    assert not changed, f"a failed fit changed {changed}"
    assert model._rng_.bit_generator.state == before["rng"]
    np.testing.assert_array_equal(model.predict(as_X(good_frames())), before["prediction"])


def assert_fit_rejects(model, X, y, error, match, **fit_kwargs):
    """`fit` raises `error` matching `match`, for a fresh and for a fitted
    (also warm-started) estimator, and leaves the fitted one unchanged."""
    with pytest.raises(error, match=match):
        S5Regressor(**FAST).fit(X, y, **fit_kwargs)
    for warm_start in (False, True):
        model.set_params(warm_start=warm_start)
        before = snapshot(model)
        try:
            with pytest.raises(error, match=match):
                model.fit(X, y, **fit_kwargs)
            assert_unchanged(model, before)
        finally:
            model.set_params(warm_start=False)


def corrupt(column_or_index, sid="s2"):
    frames = good_frames()
    frames[sid] = column_or_index(frames[sid].copy())
    return as_X(frames)


# --------------------------------------------------------------------------
# times


def test_unsorted_timestamps(fitted):
    X = corrupt(lambda f: f.iloc[[1, 0, *range(2, len(f))]])
    assert_fit_rejects(fitted, X, Y, ValueError, r"series 's2': times are not sorted")


def test_duplicate_timestamps(fitted):
    def duplicate(f):
        index = f.index.to_numpy().copy()
        index[1] = index[0]
        return f.set_axis(pd.DatetimeIndex(index))

    assert_fit_rejects(fitted, corrupt(duplicate), Y, ValueError, r"series 's2': duplicate time at positions 0 and 1")


def test_nat_timestamp(fitted):
    def nat(f):
        index = f.index.to_numpy().copy()
        index[1] = np.datetime64("NaT")
        return f.set_axis(pd.DatetimeIndex(index))

    assert_fit_rejects(fitted, corrupt(nat), Y, ValueError, r"series 's2': time at position 1 is missing \(NaT")


def test_different_time_types_across_series(fitted):
    X = corrupt(lambda f: f.set_axis(f.index - pd.Timestamp("2024-01-01")))
    assert_fit_rejects(fitted, X, Y, TypeError, r"series 's2' has timedelta times but series 's0' has datetime")


def test_mixed_naive_and_tz_aware_timestamps(fitted):
    X = corrupt(lambda f: f.tz_localize("UTC"))
    assert_fit_rejects(fitted, X, Y, ValueError, r"series 's2' has tz-aware datetimes but series 's0' has naive")


def test_time_kind_differs_from_fit_at_predict(fitted):
    X = as_X({k: f.set_axis(f.index - pd.Timestamp("2024-01-01")) for k, f in good_frames().items()})
    with pytest.raises(TypeError, match="fitted on datetime times, but X has timedelta times"):
        fitted.predict(X)


# --------------------------------------------------------------------------
# features


def test_inf_in_features(fitted):
    def inf(f):
        f.iloc[1, 1] = np.inf
        return f

    assert_fit_rejects(fitted, corrupt(inf), Y, ValueError, r"series 's2', column 'z': infinite value at position 1")
    with pytest.raises(ValueError, match=r"series 's2', column 'z': infinite"):
        fitted.predict(corrupt(inf))


def test_all_nan_series(fitted):
    X = corrupt(lambda f: f * np.nan)
    assert_fit_rejects(fitted, X, Y, ValueError, r"series 's2': every feature is NaN")


def test_empty_series(fitted):
    X = corrupt(lambda f: f.iloc[:0])
    assert_fit_rejects(fitted, X, Y, ValueError, r"series 's2' is empty")


def test_non_numeric_feature_column(fitted):
    X = corrupt(lambda f: f.assign(z=["low", "high", "low", "mid", "low", "high"][: len(f)]))
    assert_fit_rejects(fitted, X, Y, TypeError, r"series 's2': column 'z' has non-numeric dtype")


def test_inconsistent_columns_across_series(fitted):
    X = corrupt(lambda f: f.rename(columns={"z": "w"}))
    assert_fit_rejects(fitted, X, Y, ValueError, r"series 's2' has columns \['x', 'w'\] but series 's0' has")


def test_wrong_feature_count_at_predict(fitted):
    X = as_X({k: f[["x"]] for k, f in good_frames().items()})
    with pytest.raises(ValueError, match=r"X has 1 feature columns \['x'\] but 2 were seen in fit"):
        fitted.predict(X)
    X3 = as_X({k: f.assign(extra=1.0) for k, f in good_frames().items()})
    with pytest.raises(ValueError, match=r"X has 3 feature columns"):
        fitted.predict(X3)


def test_wrong_feature_names_at_predict_and_partial_fit(fitted):
    X = as_X({k: f.rename(columns={"z": "w"}) for k, f in good_frames().items()})
    with pytest.raises(ValueError, match=r"missing \['z'\], unexpected \['w'\]"):
        fitted.predict(X)
    before = snapshot(fitted)
    with pytest.raises(ValueError, match=r"missing \['z'\], unexpected \['w'\]"):
        fitted.partial_fit(X, Y)
    assert_unchanged(fitted, before)


def test_nan_at_predict_when_fit_saw_no_missing_values(fitted):
    def hole(f):
        f.iloc[1, 1] = np.nan
        return f

    with pytest.raises(ValueError, match=r"series 's2', column 'z': NaN in X, but the model was fitted"):
        fitted.predict(corrupt(hole))


def test_sparse_input_is_rejected(fitted):
    X = scipy.sparse.csr_matrix(np.ones((8, 5)))
    with pytest.raises(TypeError, match="sparse"):
        S5Regressor(**FAST).fit(X, np.zeros(8))
    with pytest.raises(TypeError, match="sparse"):
        fitted.predict(X)


# --------------------------------------------------------------------------
# targets


def test_series_without_target(fitted):
    X = as_X(good_frames())
    assert_fit_rejects(fitted, X, Y.drop("s2"), ValueError, r"y has no entry for series \['s2'\]")
    # positional input cannot know which one: the counts are named
    frames = list(good_frames().values())
    with pytest.raises(ValueError, match="y has 7 entries but X has 8 series"):
        S5Regressor(**FAST).fit(frames, Y.to_numpy()[:7])


def test_nan_in_y(fitted):
    y = Y.copy()
    y["s2"] = np.nan
    assert_fit_rejects(fitted, as_X(good_frames()), y, ValueError, r"y for series 's2' contains NaN")


def test_per_step_y_of_the_wrong_length(fitted):
    frames = good_frames()
    y = {k: np.zeros(len(f)) for k, f in frames.items()}
    y["s2"] = y["s2"][:-1]
    with pytest.raises(ValueError, match=r"y for series 's2' has \d+ steps but the series has \d+"):
        S5Regressor(**FAST).fit(as_X(frames), pd.Series(y))


def test_y_none(fitted):
    assert_fit_rejects(fitted, as_X(good_frames()), None, ValueError, "requires y to be passed")


def test_non_numeric_y_for_regression(fitted):
    y = Y.astype(str)
    assert_fit_rejects(fitted, as_X(good_frames()), y, TypeError, "not numeric")


def test_fewer_than_two_classes():
    with pytest.raises(ValueError, match=r"y has only one class \('a'\); S5Classifier needs at least two"):
        S5Classifier(**FAST).fit(as_X(good_frames()), pd.Series("a", index=IDS))


def test_continuous_labels_are_not_classes():
    with pytest.raises(ValueError, match="Unknown label type"):
        S5Classifier(**FAST).fit(as_X(good_frames()), Y)


def test_missing_label():
    y = pd.Series(["a", "b"] * 4, index=IDS, dtype=object)
    y["s2"] = None
    with pytest.raises(ValueError, match=r"y for series 's2' has a missing label"):
        S5Classifier(**FAST).fit(as_X(good_frames()), y)


def test_unseen_labels_in_partial_fit_and_warm_start():
    X = as_X(good_frames())
    y = pd.Series(["a", "b"] * 4, index=IDS)
    model = S5Classifier(**FAST).partial_fit(X, y, classes=["a", "b"])
    new = y.copy()
    new["s2"] = "c"
    for warm_start, call in ((False, lambda: model.partial_fit(X, new)), (True, lambda: model.fit(X, new))):
        model.set_params(warm_start=warm_start)
        before = {k: v for k, v in vars(model).items()}
        prediction = model.predict_proba(X)
        unseen = r"labels \['c'\] not among the known classes \['a', 'b'\] \(series \['s2'\]\)"
        with pytest.raises(ValueError, match=unseen):
            call()
        assert all(vars(model)[k] is v for k, v in before.items())
        np.testing.assert_array_equal(model.predict_proba(X), prediction)


# --------------------------------------------------------------------------
# hyper-parameters (checked in fit, not in __init__)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"d_model": 0}, r"'d_model' parameter of S5Regressor must be an int in the range \[1, inf\)\. Got 0"),
        ({"n_layers": 1.5}, r"'n_layers' parameter of S5Regressor must be an int in the range \[1, inf\)"),
        ({"time_handling": "ignore"}, r"'time_handling' parameter of S5Regressor must be a str among .*'drop'.*Got 'ignore'"),
        ({"discretization": "euler"}, r"'discretization' parameter of S5Regressor must be a str among"),
        ({"loss": "mae"}, r"'loss' parameter of S5Regressor must be a str among .*'gaussian_nll'"),
        ({"dropout": 1.0}, r"'dropout' parameter of S5Regressor must be a float in the range \[0(\.0)?, 1(\.0)?\)"),
        (
            {"validation_fraction": -0.1},
            r"'validation_fraction' parameter of S5Regressor must be a float in the range \[0(\.0)?, 1(\.0)?\)",
        ),
        ({"dt_min": 0.5, "dt_max": 0.1}, "dt_min must be <= dt_max"),
        (
            {"learning_rate": float("nan")},
            r"'learning_rate' parameter of S5Regressor must be a float in the range \(0(\.0)?, inf\)",
        ),
        ({"n_iter_no_change": 0}, r"'n_iter_no_change' parameter of S5Regressor must be an int in the range \[1, inf\) or None"),
        ({"bidirectional": "yes"}, r"'bidirectional' parameter of S5Regressor must be an instance of 'bool'"),
        ({"tol": -1.0}, r"'tol' parameter of S5Regressor must be a float in the range \[0(\.0)?, inf\)"),
    ],
)
def test_invalid_hyper_parameters(fitted, params, match):
    model = S5Regressor(**{**FAST, **params})  # no error at construction
    with pytest.raises(ValueError, match=match):
        model.fit(as_X(good_frames()), Y)
    try:
        fitted.set_params(**params)
        before = snapshot(fitted)
        with pytest.raises(ValueError, match=match):
            fitted.fit(as_X(good_frames()), Y)
        assert_unchanged(fitted, before)
    finally:
        fitted.set_params(**{k: S5Regressor(**FAST).get_params()[k] for k in params})
