"""CRURegressor through the shared estimator interface (tabular inputs, so
no CNN: fast)."""

import pickle

import numpy as np
import pytest

from s5ts.baselines import CRURegressor


def make_data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        L = int(rng.integers(4, 10))
        t = np.cumsum(rng.exponential(1.0, L))
        X.append(np.stack([np.sin(t), np.cos(t)], axis=1))
        y.append(np.sin(t + 0.5)[:, None])
    times = [np.cumsum(np.ones(len(x))) for x in X]
    return X, y, times


def test_fit_predict_std_and_warm_start():
    X, y, times = make_data()
    model = CRURegressor(encoder="identity", max_epochs=2, batch_size=4, validation_fraction=0.0, random_state=0)
    model.fit(X, y, times=times)
    mean, std = model.predict(X[:3], times=times[:3], return_std=True)
    assert [m.shape for m in mean] == [(len(x), 1) for x in X[:3]]
    assert all(np.all(s > 0) and np.all(np.isfinite(s)) for s in std)
    assert len(model.history_) == 2
    model.set_params(warm_start=True).fit(X, y, times=times)
    assert len(model.history_) == 4
    model.set_params(hidden_size=7)
    with pytest.raises(ValueError, match="hidden_size"):
        model.fit(X, y, times=times)


def test_needs_per_step_targets():
    X, _, times = make_data()
    with pytest.raises(ValueError, match="per observation"):
        CRURegressor(encoder="identity", max_epochs=1).fit(X, np.zeros(len(X)), times=times)


def test_pickle_round_trip_predicts_the_same():
    X, y, times = make_data()
    model = CRURegressor(encoder="identity", max_epochs=1, batch_size=4, random_state=0).fit(X, y, times=times)
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(X, times=times), again.predict(X, times=times)):
        np.testing.assert_array_equal(a, b)


def test_save_and_load_round_trip_predicts_the_same(tmp_path):
    X, y, times = make_data()
    model = CRURegressor(encoder="identity", max_epochs=1, batch_size=4, random_state=0).fit(X, y, times=times)
    model.save(tmp_path / "cru.s5")
    again = CRURegressor.load(tmp_path / "cru.s5")  # CRU has no `input_hold`
    for a, b in zip(model.predict(X, times=times), again.predict(X, times=times)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"latent_obs_size": 0}, r"'latent_obs_size' parameter of CRURegressor must be an int in the range \[1, inf\)"),
        ({"num_basis": 2.5}, r"'num_basis' parameter of CRURegressor must be an int"),
        ({"bandwidth": -1}, r"'bandwidth' parameter of CRURegressor"),
        ({"hidden_size": "30"}, r"'hidden_size' parameter of CRURegressor"),
        ({"encoder": "lstm"}, r"'encoder' parameter of CRURegressor must be a str among"),
        ({"learning_rate": 0.0}, r"'learning_rate' parameter of CRURegressor"),
    ],
)
def test_cru_validates_its_own_parameters(params, match):
    X, y, times = make_data()
    model = CRURegressor(**{"encoder": "identity", "max_epochs": 1, **params})
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, times=times)
    assert not hasattr(model, "model_")


def test_cru_is_its_own_final_class():
    from s5ts import S5Regressor

    model = CRURegressor()
    assert not isinstance(model, S5Regressor)
    # no S5 settings faked on it: it has only the parameters it takes
    assert not any(hasattr(model, name) for name in ("d_model", "n_layers", "time_handling", "ssm_learning_rate", "loss"))
    assert model.get_params()["learning_rate"] == 1e-3  # CRU's published setting, not S5's default


def test_gap_beyond_the_matrix_exponential_range_raises_not_nan():
    X, y, times = make_data()
    model = CRURegressor(encoder="identity", max_epochs=1, batch_size=4, validation_fraction=0.0, random_state=0)
    model.fit(X, y, times=times)
    far = [t.copy() for t in times[:2]]
    far[1][3:] += 1e9  # a gap of a billion median gaps before step 3 of series 1
    assert all(np.isfinite(m).all() for m in model.predict(X[:2], times=times[:2]))
    with pytest.raises(
        ValueError,
        match=r"series 1: the model's prediction is not finite from step 3 on; "
        r"the gap before step 3 is 1e\+09 times the median gap",
    ):
        model.predict(X[:2], times=far)
