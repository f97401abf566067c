"""DSSRegressor through the shared estimator interface (tabular inputs: fast)."""

import numpy as np
import pytest

from s5ts.baselines import DSSNetwork, DSSRegressor


def make_data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X, y, times = [], [], []
    for _ in range(n):
        L = int(rng.integers(4, 10))
        t = np.cumsum(rng.exponential(1.0, L))
        X.append(np.stack([np.sin(t), np.cos(t)], axis=1))
        y.append(np.sin(t + 0.5)[:, None])
        times.append(t)
    return X, y, times


FAST = dict(d_model=8, state_size=4, n_layers=1, max_epochs=2, batch_size=4, min_epoch_steps=None, random_state=0)


def test_per_step_gaussian_fit_predict_and_warm_start():
    X, y, times = make_data()
    model = DSSRegressor(loss="gaussian_nll", **FAST).fit(X, y, times=times)
    assert isinstance(model.model_, DSSNetwork) and not model.model_.regular
    mean, std = model.predict(X[:3], times=times[:3], return_std=True)
    assert [m.shape for m in mean] == [(len(x), 1) for x in X[:3]]
    assert all(np.all(s > 0) and np.all(np.isfinite(s)) for s in std)
    model.set_params(warm_start=True).fit(X, y, times=times)
    assert len(model.history_) == 4
    model.set_params(kernel="softmax", time_handling="drop")
    with pytest.raises(ValueError, match="kernel"):
        model.fit(X, y, times=times)


def test_the_gaps_reach_the_recurrence_and_not_the_convolution():
    X, y, times = make_data()
    stretched = [2.0 * t + np.arange(len(t)) ** 2 for t in times]  # other gaps, same order
    for time_handling, differs in [("gaps", True), ("drop", False)]:
        model = DSSRegressor(time_handling=time_handling, **FAST).fit(X, y, times=times)
        a, b = model.predict(X, times=times), model.predict(X, times=stretched)
        assert any(not np.allclose(p, q) for p, q in zip(a, b)) == differs


def test_softmax_needs_a_regular_grid_and_fits_on_one(tmp_path):
    X, _, times = make_data()
    y = np.array([x[-1, 0] for x in X])
    with pytest.raises(ValueError, match="time_handling='drop'"):
        DSSRegressor(kernel="softmax", **FAST).fit(X, y, times=times)
    model = DSSRegressor(kernel="softmax", time_handling="append", **FAST).fit(X, y, times=times)
    assert model.model_.regular and model.model_.n_extra == 1
    assert model.predict(X, times=times).shape == (len(X),)
    model.save(tmp_path / "dss.s5")
    again = DSSRegressor.load(tmp_path / "dss.s5")
    np.testing.assert_array_equal(model.predict(X, times=times), again.predict(X, times=times))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"kernel": "sigmoid"}, r"'kernel' parameter of DSSRegressor must be a str among"),
        ({"loss": "mae"}, r"'loss' parameter of DSSRegressor"),
        ({"state_size": 0}, r"'state_size' parameter of DSSRegressor"),
        ({"dt_min": 2.0}, r"dt_min must be <= dt_max"),
    ],
)
def test_dss_validates_its_parameters(params, match):
    X, y, times = make_data()
    model = DSSRegressor(**{**FAST, **params})
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, times=times)
    assert not hasattr(model, "model_")
