"""S5Regressor / S5Classifier behaviour: fitting, time stamps, targets,
determinism, warm start, partial_fit, persistence, NaN losses, Ctrl-C, and
proof that the model uses the observation times.

Models are tiny (d_model=8, state_size=4, one layer) and share one
architecture where they can, so most fits reuse compiled code.
"""

import copy
import dataclasses
import inspect
import itertools
import pickle
import subprocess
import sys
import textwrap

import equinox as eqx
import jax
import jax.numpy as jnp
import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import r2_score

import s5ts.training._loop as training
from s5ts import S5Classifier, S5Regressor
from s5ts.data import to_panel

# One pass over the data an epoch, every observation seen (not the defaults'
# min_epoch_steps and observation_dropout): the mechanics under test count steps.
FAST = dict(
    n_layers=1, d_model=8, state_size=4, batch_size=8, validation_fraction=0.0, random_state=0,
    min_epoch_steps=None, observation_dropout=0.0,
)


def make_frames(n=16, seed=0, kind="datetime", tz=None, nan_fraction=0.0):
    """n two-feature series (a, b) of 3..8 observations, irregular gaps of
    0.5..3 minutes; y = mean of `a` + the series' duration in hours."""
    rng = np.random.default_rng(seed)
    frames, y = [], []
    for _ in range(n):
        L = int(rng.integers(3, 9))
        minutes = np.cumsum(rng.uniform(0.5, 3.0, L))
        if kind == "datetime":
            index = pd.Timestamp("2024-03-01 08:00", tz=tz) + pd.to_timedelta(minutes, unit="min")
        elif kind == "timedelta":
            index = pd.to_timedelta(minutes, unit="min")
        else:
            index = pd.Index(minutes)
        values = rng.normal(size=(L, 2))
        if nan_fraction:
            values[rng.uniform(size=values.shape) < nan_fraction] = np.nan
            values[0] = rng.normal(size=2)  # keep every series observed somewhere
        frames.append(pd.DataFrame(values, index=index, columns=["a", "b"]))
        y.append(np.nanmean(values[:, 0]) + (minutes[-1] - minutes[0]) / 60)
    return frames, np.array(y)


def params_of(model):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array))]


def same_params(a, b):
    return all(np.array_equal(x, y) for x, y in zip(params_of(a), params_of(b)))


@pytest.fixture(scope="module")
def data():
    return make_frames()


@pytest.fixture(scope="module")
def reg(data):
    X, y = data
    return S5Regressor(**FAST, max_epochs=3).fit(X, y)


@pytest.fixture(scope="module")
def labelled():
    X, y = make_frames(seed=1)
    return X, np.where(y > np.median(y), "hi", "lo")


@pytest.fixture(scope="module")
def clf(labelled):
    X, y = labelled
    return S5Classifier(**FAST, max_epochs=3).fit(X, y)


# --------------------------------------------------------------------------
# fitted attributes and predictions


def test_regressor_fitted_attributes(reg, data):
    X, y = data
    assert reg.n_features_in_ == 2
    assert reg.feature_names_in_.tolist() == ["a", "b"] and reg.feature_names_in_.dtype == object
    gaps = np.concatenate([np.diff(f.index.asi8) for f in X]).astype(float)
    # pandas may store these datetimes in ns or us: the scale must be seconds either way
    unit = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[X[0].index.unit]
    np.testing.assert_allclose(reg.time_scale_, np.median(gaps) / unit, rtol=1e-9)
    assert reg.preprocessing_.time_kind == "datetime" and reg.preprocessing_.columns == ("a", "b")
    assert [r["epoch"] for r in reg.history_] == [0, 1, 2]
    assert all(np.isfinite(r["train_loss"]) for r in reg.history_)
    assert reg.best_epoch_ in (0, 1, 2) and reg.interrupted_ is False
    assert reg.n_parameters_ > 0 and reg.per_step_ is False
    prediction = reg.predict(X)
    assert prediction.shape == (16,) and prediction.dtype.kind == "f" and np.isfinite(prediction).all()


def test_same_random_state_gives_identical_predictions(reg, data):
    X, y = data
    again = S5Regressor(**FAST, max_epochs=3).fit(X, y)
    np.testing.assert_array_equal(again.predict(X), reg.predict(X))
    other = S5Regressor(**{**FAST, "random_state": 1}, max_epochs=3).fit(X, y)
    assert not np.array_equal(other.predict(X), reg.predict(X))


def test_predict_is_independent_of_batching_and_order(reg, data):
    X, _ = data
    full = reg.predict(X)
    np.testing.assert_allclose(reg.predict(X[::-1])[::-1], full, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg.predict(X[3:4]), full[3:4], rtol=1e-5, atol=1e-6)


def test_inputs_in_other_formats_give_the_same_predictions(reg, data):
    X, _ = data
    full = reg.predict(X)
    multi = pd.concat(X, keys=[f"s{i}" for i in range(len(X))], names=["series", "time"])
    np.testing.assert_allclose(reg.predict(multi), full, rtol=1e-6)
    as_ns = [f.set_axis(f.index.as_unit("ns")) for f in X]
    as_us = [f.set_axis(f.index.as_unit("us")) for f in X]
    np.testing.assert_allclose(reg.predict(as_ns), reg.predict(as_us), rtol=1e-6)
    reordered = [f[["b", "a"]] for f in X]  # same names, other order: reordered, not rejected
    np.testing.assert_allclose(reg.predict(reordered), full, rtol=1e-6)


def test_score_aligns_pandas_targets_by_series_id(reg, data):
    X, y = data
    ids = [f"s{i}" for i in range(len(X))]
    multi = pd.concat(X, keys=ids, names=["series", "time"])
    y_series = pd.Series(y, index=ids)
    shuffled = y_series.sample(frac=1.0, random_state=0)
    expected = r2_score(y, reg.predict(X))
    assert reg.score(X, y) == pytest.approx(expected)
    assert reg.score(multi, shuffled) == pytest.approx(expected)


def test_return_std_needs_gaussian_head(reg, data):
    with pytest.raises(ValueError, match="gaussian_nll"):
        reg.predict(data[0], return_std=True)


# --------------------------------------------------------------------------
# time stamps


def test_timedelta_and_numeric_times(data):
    _, y = data
    for kind in ("timedelta", "numeric"):
        X, _ = make_frames(kind=kind)
        model = S5Regressor(**FAST, max_epochs=1).fit(X, y)
        assert model.preprocessing_.time_kind == kind
        gaps = np.concatenate([np.diff(to_panel([f]).times[0]) for f in X])
        np.testing.assert_allclose(model.time_scale_, np.median(gaps), rtol=1e-9)
        assert np.isfinite(model.predict(X)).all()
    # minutes as numbers vs as timedeltas: same gaps in model units
    X_num, _ = make_frames(kind="numeric")
    X_td, _ = make_frames(kind="timedelta")
    a = S5Regressor(**FAST, max_epochs=1).fit(X_num, y).predict(X_num)
    b = S5Regressor(**FAST, max_epochs=1).fit(X_td, y).predict(X_td)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_tz_aware_timestamps(data, reg):
    _, y = data
    X_tz, _ = make_frames(tz="Europe/Berlin")
    model = S5Regressor(**FAST, max_epochs=3).fit(X_tz, y)
    # the same instants: same gaps as the naive fit, so the same model
    np.testing.assert_allclose(model.time_scale_, reg.time_scale_)
    np.testing.assert_allclose(model.predict(X_tz), reg.predict(data[0]), rtol=1e-5, atol=1e-6)
    utc = [f.tz_convert("UTC") for f in X_tz]
    np.testing.assert_array_equal(model.predict(utc), model.predict(X_tz))


def test_times_for_array_input():
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 10, (16, 6)), axis=1)
    X = np.stack([np.sin(times), np.cos(times)], axis=-1)
    y = times[:, -1] - times[:, 0]
    model = S5Regressor(**FAST, max_epochs=1).fit(X, y, times=times)
    assert model.feature_names_in_.tolist() == ["0", "1"]
    assert model.predict(X, times=times).shape == (16,)
    # datetime64 times work as well
    stamps = np.datetime64("2024-01-01T00:00:00", "us") + (times * 1e6).astype("timedelta64[us]")
    model_dt = S5Regressor(**FAST, max_epochs=1).fit(X, y, times=stamps)
    np.testing.assert_allclose(model_dt.predict(X, times=stamps), model.predict(X, times=times), rtol=1e-5)


def test_time_handling_sets_the_gaps_the_network_sees(reg, data):
    X, y = data
    panel = to_panel(X)
    real = [np.diff(t) / reg.time_scale_ for t in panel.times]
    for handling in ("gaps", "drop", "append"):
        prep = dataclasses.replace(reg.preprocessing_, time_handling=handling, first_gap=0.5)
        seq = prep.transform(panel)
        for gaps, extra, r in zip(seq.gaps, seq.extra or [None] * len(X), real):
            assert gaps[0] == 0.5 if handling == "gaps" else gaps[0] == 1.0
            if handling == "gaps":
                np.testing.assert_allclose(gaps[1:], r, rtol=1e-6)
            else:
                np.testing.assert_array_equal(gaps[1:], 1.0)
            if handling == "append":
                np.testing.assert_allclose(extra[1:, 0], r, rtol=1e-6)
        assert (seq.extra is not None) == (handling == "append")
    model = S5Regressor(**FAST, max_epochs=1, time_handling="append").fit(X, y)
    assert model.model_.n_extra == 1 and np.isfinite(model.predict(X)).all()
    # the fitted handling is part of the fitted state: set_params after fit does not change predict
    before = model.predict(X)
    np.testing.assert_array_equal(model.set_params(time_handling="gaps").predict(X), before)


# --------------------------------------------------------------------------
# missing values


def test_nan_features_use_an_observed_channel_mask():
    X, y = make_frames(nan_fraction=0.3)
    model = S5Regressor(**FAST, max_epochs=2).fit(X, y)
    assert model.preprocessing_.missing_indicator is True
    assert model.n_model_inputs_ == 4  # 2 standardised features + 2 observed flags
    assert np.isfinite(model.predict(X)).all()
    # the flag matters: the same values marked missing vs observed-as-mean differ
    observed = [f.fillna(pd.Series(model.preprocessing_.feature_mean, index=["a", "b"])) for f in X]
    assert not np.allclose(model.predict(observed), model.predict(X))
    # standardisation ignores the NaN
    values = np.concatenate([f.to_numpy() for f in X])
    np.testing.assert_allclose(model.preprocessing_.feature_mean, np.nanmean(values, axis=0))


# --------------------------------------------------------------------------
# targets: per step, multi-output, Gaussian head


def test_per_step_targets_with_gaussian_head(data):
    X, _ = data
    y = [f["a"].cumsum().to_numpy() for f in X]
    model = S5Regressor(**FAST, max_epochs=3, loss="gaussian_nll").fit(X, y)
    assert model.per_step_ is True
    mean, std = model.predict(X, return_std=True)
    assert isinstance(mean, list) and [m.shape for m in mean] == [(len(f),) for f in X]
    assert [s.shape for s in std] == [m.shape for m in mean]
    assert all((s > 0).all() and np.isfinite(s).all() for s in std)
    np.testing.assert_array_equal(np.concatenate(model.predict(X)), np.concatenate(mean))
    expected = r2_score(np.concatenate(y), np.concatenate(mean))
    assert model.score(X, y) == pytest.approx(expected)
    # per-step y as a (series, time) MultiIndex Series aligned with X's rows
    multi_y = pd.concat([pd.Series(v, index=f.index) for v, f in zip(y, X)], keys=range(len(X)))
    refit = S5Regressor(**FAST, max_epochs=3, loss="gaussian_nll").fit(X, multi_y)
    np.testing.assert_array_equal(np.concatenate(refit.predict(X)), np.concatenate(mean))


def test_multi_output_regression(data):
    X, y = data
    Y = pd.DataFrame({"u": y, "v": -2 * y + 1})
    model = S5Regressor(**FAST, max_epochs=3).fit(X, Y)
    prediction = model.predict(X)
    assert prediction.shape == (16, 2)
    assert model.score(X, Y) == pytest.approx(r2_score(Y.to_numpy(), prediction))
    # targets are standardised per column: the second output's scale is restored
    scaling = model._target_state
    np.testing.assert_allclose(scaling.mean, [y.mean(), (-2 * y + 1).mean()])


# --------------------------------------------------------------------------
# classifier


def test_classifier_labels_and_probabilities(clf, labelled):
    X, y = labelled
    assert clf.classes_.tolist() == ["hi", "lo"]
    proba = clf.predict_proba(X)
    assert proba.shape == (16, 2) and proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    prediction = clf.predict(X)
    np.testing.assert_array_equal(prediction, clf.classes_[proba.argmax(axis=1)])
    assert clf.score(X, y) == pytest.approx(np.mean(prediction == y))


def test_classifier_any_label_type(labelled):
    X, y = labelled
    for labels in (np.where(y == "hi", 7, -3), y == "hi", pd.Categorical(y)):
        model = S5Classifier(**FAST, max_epochs=1).fit(X, labels)
        assert set(model.predict(X)) <= set(np.unique(np.asarray(labels)))
        assert len(model.classes_) == 2


# --------------------------------------------------------------------------
# warm start and partial_fit


def test_warm_start_continues_training(reg, data):
    X, y = data
    model = copy.deepcopy(reg).set_params(warm_start=True, max_epochs=2)
    model.fit(X, y)
    assert [r["epoch"] for r in model.history_] == [0, 1, 2, 3, 4]
    assert not same_params(model.model_, reg.model_)  # it learned (the learning rate is not 0)
    model.fit(X, y)
    assert len(model.history_) == 7
    # without warm_start, fit starts over
    fresh = copy.deepcopy(model).set_params(warm_start=False, max_epochs=3).fit(X, y)
    assert len(fresh.history_) == 3
    np.testing.assert_array_equal(fresh.predict(X), reg.predict(X))


def test_warm_start_refuses_a_changed_architecture(reg, data):
    model = copy.deepcopy(reg).set_params(warm_start=True, d_model=16)
    with pytest.raises(ValueError, match="d_model is 16 but the fitted network has 8"):
        model.fit(*data)


def test_partial_fit_regressor(data):
    X, y = data
    model = S5Regressor(**FAST, max_epochs=2)
    before = None
    for call in range(4):  # more calls than max_epochs: every call still learns
        model.partial_fit(X, y)
        assert len(model.history_) == call + 1
        if before is not None:
            assert not same_params(before, model.model_)
        before = model.model_
    assert np.isfinite(model.predict(X)).all()


def test_partial_fit_classifier(labelled):
    X, y = labelled
    model = S5Classifier(**FAST)
    with pytest.raises(ValueError, match="needs `classes`"):
        model.partial_fit(X, y)
    lo = y == "lo"
    model.partial_fit([x for x, keep in zip(X, lo) if keep], y[lo], classes=["lo", "hi"])
    assert model.classes_.tolist() == ["hi", "lo"]  # one class seen so far is fine
    model.partial_fit(X, y)
    model.partial_fit(X, y, classes=["hi", "lo"])
    assert len(model.history_) == 3
    with pytest.raises(ValueError, match="differs from the classes"):
        model.partial_fit(X, y, classes=["hi", "lo", "mid"])


# --------------------------------------------------------------------------
# early stopping, NaN losses and Ctrl-C


def test_early_stopping_keeps_the_best_epoch(monkeypatch, data):
    X, y = data
    scores = iter([3.0, 1.0, 2.0, 2.5, 4.0, 5.0, 6.0])
    seen = []

    def fake_evaluate(model, valid, batch_size, metric_fn, *how):
        seen.append(model)
        return next(scores)

    monkeypatch.setattr(training, "evaluate", fake_evaluate)
    model = S5Regressor(
        **{**FAST, "validation_fraction": 0.25}, max_epochs=10, n_iter_no_change=2, warmup_epochs=0
    ).fit(X, y)
    assert [r["valid_mse"] for r in model.history_] == [3.0, 1.0, 2.0, 2.5]
    assert model.best_epoch_ == 1
    assert model.model_ is seen[1]


def test_auto_validation_holds_out_a_fifth_of_a_regressors_series_from_a_hundred_on():
    held_out = {}
    for n in (99, 100):
        X, y = make_frames(n=n, seed=1)
        model = S5Regressor(**{**FAST, "validation_fraction": "auto"}, max_epochs=1).fit(X, y)
        held_out[n] = "valid_mse" in model.history_[0]
    assert S5Regressor().validation_fraction == "auto"
    assert held_out == {99: False, 100: True}
    # A regressor with a hundred series holds out floor(0.2 * 100) of them, as
    # an explicit fraction of 0.2 does: the same split, the same fit.
    X, y = make_frames(n=100, seed=1)
    auto = S5Regressor(**{**FAST, "validation_fraction": "auto"}, max_epochs=2).fit(X, y)
    fifth = S5Regressor(**{**FAST, "validation_fraction": 0.2}, max_epochs=2).fit(X, y)
    assert [r["valid_mse"] for r in auto.history_] == [r["valid_mse"] for r in fifth.history_]
    # A classifier holds out none: the training loss decides.
    labels = (y > np.median(y)).astype(int)
    clf = S5Classifier(**{**FAST, "validation_fraction": "auto"}, max_epochs=1).fit(X, labels)
    assert "valid_loss" not in clf.history_[0]


def _patch_train_step(monkeypatch, after, action):
    """Run the real training step, then `action` from the `after`-th call on."""
    original = training.train_step
    calls = itertools.count()

    def step(*args):
        if next(calls) >= after:
            return action(original(*args))
        return original(*args)

    monkeypatch.setattr(training, "train_step", step)


def _poison(outputs):
    arrays, _, states = outputs  # the model's and optimiser's arrays (`_split`), the loss, the states
    poisoned = tuple(a * jnp.nan if eqx.is_inexact_array(a) else a for a in arrays)
    return poisoned, jnp.float32(jnp.nan), states


def _interrupt(outputs):
    raise KeyboardInterrupt


def test_nan_loss_stops_with_a_clear_error_and_keeps_the_last_good_model(monkeypatch, data):
    X, y = data
    # 16 series, batch_size 8: two steps per epoch; steps 4.. return NaN
    _patch_train_step(monkeypatch, 4, _poison)
    model = S5Regressor(**FAST, max_epochs=5)
    with pytest.raises(FloatingPointError, match=r"training loss became nan in epoch 2.*keeps the best"):
        model.fit(X, y)
    assert len(model.history_) == 2 and model.best_epoch_ in (0, 1)
    assert all(np.isfinite(p).all() for p in params_of(model.model_))
    assert np.isfinite(model.predict(X)).all()


def test_nan_loss_in_the_first_epoch_leaves_the_estimator_unchanged(monkeypatch, reg, data):
    X, y = data
    model = copy.deepcopy(reg)
    before = model.predict(X)
    _patch_train_step(monkeypatch, 1, _poison)
    with pytest.raises(FloatingPointError, match="estimator is unchanged"):
        model.fit(X, y)
    assert model.model_ is not None and len(model.history_) == 3
    np.testing.assert_array_equal(model.predict(X), before)


def test_huge_learning_rate_raises_floating_point_error(data):
    X, y = data
    # No warm-up: the first update is at the full rate, so the first epoch fails.
    model = S5Regressor(**FAST, max_epochs=3, learning_rate=1e30, warmup_epochs=0)
    with pytest.raises(FloatingPointError, match="Try a smaller learning_rate"):
        model.fit(X, y)
    assert not hasattr(model, "model_")  # no epoch finished: still unfitted


def test_ctrl_c_keeps_the_best_model_so_far_and_warns(monkeypatch, data):
    X, y = data
    _patch_train_step(monkeypatch, 5, _interrupt)  # during epoch 2
    model = S5Regressor(**FAST, max_epochs=10)
    with pytest.warns(RuntimeWarning, match="interrupted after 2 epochs"):
        assert model.fit(X, y) is model
    assert model.interrupted_ is True and len(model.history_) == 2
    assert np.isfinite(model.predict(X)).all()


def test_ctrl_c_before_the_first_epoch_propagates_and_changes_nothing(monkeypatch, reg, data):
    X, y = data
    model = copy.deepcopy(reg)
    before = model.predict(X)
    _patch_train_step(monkeypatch, 1, _interrupt)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, y)
    np.testing.assert_array_equal(model.predict(X), before)
    assert len(model.history_) == 3


def test_verbose_shows_a_progress_bar(capsys, data):
    X, y = data
    S5Regressor(**FAST, max_epochs=2, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    # says what it does: compiling (a batch shape new to this fit), then training
    assert "compiling (batch 8x" in err and "training" in err and "train_loss" in err


# --------------------------------------------------------------------------
# persistence


def test_save_and_load_round_trip(tmp_path, reg, clf, data, labelled):
    path = tmp_path / "reg.s5"
    reg.save(path)
    loaded = S5Regressor.load(path)
    np.testing.assert_array_equal(loaded.predict(data[0]), reg.predict(data[0]))
    assert loaded.get_params() == reg.get_params()
    assert loaded.history_ == reg.history_ and loaded.best_epoch_ == reg.best_epoch_
    assert loaded.time_scale_ == reg.time_scale_
    with pytest.raises(ValueError, match="holds a S5Regressor, not a S5Classifier"):
        S5Classifier.load(path)
    clf.save(tmp_path / "clf.s5")
    loaded_clf = S5Classifier.load(tmp_path / "clf.s5")
    assert loaded_clf.classes_.tolist() == ["hi", "lo"]
    np.testing.assert_array_equal(loaded_clf.predict_proba(labelled[0]), clf.predict_proba(labelled[0]))


@pytest.mark.parametrize("estimator", [S5Regressor, S5Classifier])
def test_max_mean_pooling_reads_twice_the_features_and_saves(tmp_path, estimator):
    """pooling="max_mean": the head reads the max and the mean (2 * d_model
    features); the fit saves and loads like any other."""
    X, y = make_frames(12, seed=3)
    if estimator is S5Classifier:
        y = np.where(y > np.median(y), "hi", "lo")
    model = estimator(**FAST, max_epochs=2, pooling="max_mean").fit(X, y)
    assert model.model_.head.in_features == 2 * FAST["d_model"]
    model.save(tmp_path / "m.s5")
    loaded = estimator.load(tmp_path / "m.s5")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(ValueError, match="pooling"):
        estimator(**FAST, pooling="max+mean").fit(X, y)


def test_pickle_and_joblib_round_trip_in_a_fresh_process(tmp_path, reg, data):
    X, _ = data
    with open(tmp_path / "model.pkl", "wb") as f:
        pickle.dump(reg, f)
    joblib.dump(reg, tmp_path / "model.joblib")
    with open(tmp_path / "X.pkl", "wb") as f:
        pickle.dump(X, f)
    script = textwrap.dedent(
        f"""
        import pickle, joblib, numpy as np
        X = pickle.load(open({str(tmp_path / "X.pkl")!r}, "rb"))
        a = pickle.load(open({str(tmp_path / "model.pkl")!r}, "rb")).predict(X)
        b = joblib.load({str(tmp_path / "model.joblib")!r}).predict(X)
        np.save({str(tmp_path / "a.npy")!r}, a)
        np.save({str(tmp_path / "b.npy")!r}, b)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=str(tmp_path.parent), env=_env())
    expected = reg.predict(X)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), expected)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), expected)
    # the pickled state holds numpy arrays only, so a GPU-trained model unpickles on a CPU
    state = reg.__getstate__()
    stored = jax.tree.leaves((state["model_"], state["_training_state_"].model, state["_training_state_"].opt_state))
    assert stored and not any(isinstance(leaf, jax.Array) for leaf in stored)
    # an unpickled model can keep training
    again = pickle.loads(pickle.dumps(reg)).set_params(warm_start=True, max_epochs=1)
    assert len(again.fit(X, data[1]).history_) == 4


def _env():
    import os

    import s5ts

    root = os.path.dirname(os.path.dirname(s5ts.__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --------------------------------------------------------------------------
# proof that the model uses the observation times


def elapsed_time_task(n, seed):
    """Each series: one pulse at its first observation, then 8..15 empty
    observations at random times; the target is the elapsed time from the
    first to the last observation. The number of observations says nothing
    about it, so only the gaps can."""
    rng = np.random.default_rng(seed)
    X, times, y = [], [], []
    for _ in range(n):
        L = int(rng.integers(9, 17))
        T = rng.uniform(1.0, 10.0)
        X.append(np.eye(L, 1))
        times.append(np.concatenate([[0.0], np.sort(rng.uniform(0.0, T, L - 2)), [T]]))
        y.append(T)
    return X, times, np.array(y)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gaps_beat_dropped_times_when_timing_decides(seed):
    X, times, y = elapsed_time_task(256, seed)
    X_test, times_test, y_test = elapsed_time_task(128, seed + 100)
    errors = {}
    for handling in ("gaps", "drop"):
        model = S5Regressor(
            **{**FAST, "batch_size": 32, "random_state": seed},
            max_epochs=15,
            learning_rate=1e-2,
            time_handling=handling,
            # The mechanism under test is the time handling; with max
            # pooling this tiny 15-epoch model learns the elapsed time more
            # slowly (seed 1: 0.61 against "drop"'s 1.00).
            pooling="mean",
        ).fit(X, y, times=times)
        prediction = model.predict(X_test, times=times_test)
        errors[handling] = np.mean((prediction - y_test) ** 2) / np.var(y_test)
    assert errors["drop"] > 0.8  # without times the task is (nearly) impossible
    assert errors["gaps"] < 0.5 * errors["drop"]
    assert errors["gaps"] < 0.35


# --------------------------------------------------------------------------
# an explicit validation set


def test_validation_data_selects_by_mse_in_target_units(data):
    X, y = data
    X_valid, y_valid = make_frames(n=6, seed=5)
    model = S5Regressor(**{**FAST, "n_iter_no_change": None}, max_epochs=4).fit(
        X, y, validation_data=(X_valid, y_valid)
    )
    scores = [r["valid_mse"] for r in model.history_]
    assert len(scores) == 4
    assert model.best_epoch_ == int(np.argmin(scores))
    # The recorded score is the validation MSE of the kept model, in y's units.
    best = model.predict(X_valid)
    np.testing.assert_allclose(np.mean((best - y_valid) ** 2), min(scores), rtol=1e-4)


def test_validation_data_is_checked(data):
    X, y = data
    model = S5Regressor(**FAST, max_epochs=1)
    with pytest.raises(TypeError, match="validation_data"):
        model.fit(X, y, validation_data=[X, y])
    bad = [frame.rename(columns={"b": "c"}) for frame in X]
    with pytest.raises(ValueError, match="'c'|c"):
        model.fit(X, y, validation_data=(bad, y))
    assert not hasattr(model, "model_")


def test_shared_parameters_signature_defaults_and_unknown_names():
    from s5ts.estimators import SharedParameters

    shared = SharedParameters(("max_epochs", "batch_size", "verbose"), batch_size=7)

    class Borrower:
        @shared
        def __init__(self, *, own=1, **rest):
            self.own = own
            shared.assign(self, rest)

    assert list(inspect.signature(Borrower.__init__).parameters) == ["self", "own", "max_epochs", "batch_size", "verbose"]
    b = Borrower(max_epochs=3)
    assert (b.own, b.max_epochs, b.batch_size, b.verbose) == (1, 3, 7, False)
    with pytest.raises(TypeError, match=r"Borrower\(\) got unexpected keyword arguments \['scan'\]"):
        Borrower(scan="auto")
    with pytest.raises(ValueError, match="not S5Estimator parameters"):
        SharedParameters(("max_epochs", "epochs"))
    with pytest.raises(ValueError, match="defaults for parameters not shared"):
        SharedParameters(exclude=("scan",), scan="sequential")
    everything_but = SharedParameters(exclude=("scan", "warm_start"))
    assert "scan" not in everything_but.defaults and everything_but.defaults["n_layers"] == 2


def test_input_hold_reaches_the_network(reg, data):
    X, y = data
    unit = S5Regressor(**FAST, max_epochs=2, input_hold="unit").fit(X, y)
    assert all(block.ssm.input_hold == "unit" for block in unit.model_.blocks)
    assert all(block.ssm.input_hold == "gap" for block in reg.model_.blocks)
    assert not np.allclose(unit.predict(X), S5Regressor(**FAST, max_epochs=2).fit(X, y).predict(X))
    with pytest.raises(ValueError, match="input_hold"):
        S5Regressor(**FAST, input_hold="held").fit(X, y)
    with pytest.raises(ValueError, match="input_hold"):
        copy.deepcopy(reg).set_params(warm_start=True, input_hold="unit").fit(X, y)


def event_interval_task(n, seed):
    """Each series: 0 at 10..30 random times and 1 at two random event times
    in [0, 10]; the target is the time between the events (the
    `event_interval` task of benchmarks/accuracy_real.py, smaller)."""
    rng = np.random.default_rng(seed)
    X, times, y = [], [], []
    for _ in range(n):
        events = np.sort(rng.uniform(0.0, 10.0, 2))
        t = np.concatenate([rng.uniform(0.0, 10.0, int(rng.integers(10, 31))), events])
        v = np.concatenate([np.zeros(len(t) - 2), np.ones(2)])
        order = np.argsort(t)
        X.append(v[order, None])
        times.append(t[order])
        y.append(events[1] - events[0])
    return X, times, np.array(y)


def test_unit_input_hold_reads_events_that_gap_hold_weighs_by_their_gaps():
    """A spike's input weight under "gap" is proportional to the random gap
    before it; under "unit" it is the same for every spike. Under mean
    pooling, which sums those weights, that decides the task; max pooling
    reads the spikes either way (MSE / variance 0.033 with "gap", 0.093 with
    "unit" in this test), so the test pins the mean."""
    X, times, y = event_interval_task(256, 0)
    X_test, times_test, y_test = event_interval_task(128, 100)
    errors = {}
    for hold in ("gap", "unit"):
        model = S5Regressor(
            **{**FAST, "batch_size": 32, "d_model": 16, "state_size": 8},
            max_epochs=30,
            input_hold=hold,
            pooling="mean",
        ).fit(X, y, times=times)
        errors[hold] = np.mean((model.predict(X_test, times=times_test) - y_test) ** 2) / np.var(y_test)
    assert errors["unit"] < 0.5 * errors["gap"], errors
