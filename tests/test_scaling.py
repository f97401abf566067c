"""Feature scaling (`standardize`): "series" against a Python loop in
float64, the prior of its per-series variances (it recovers the prior it
was drawn from) and their moderation, the "auto" rule, the edge cases
(constant series, a single observation, a feature a series never
observes), weights, and the estimators' use of it (fitted
`preprocessing_.scaling`, predict, save/load)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from s5ts import S5Classifier, S5Regressor
from s5ts.data import to_panel
from s5ts.estimators._preprocessing import Preprocessing, learn_preprocessing
from s5ts.estimators._scaling import (
    AUTO_SERIES_RATIO,
    MIN_PRIOR_SERIES,
    SCALE_FLOOR,
    choose_scaling,
    moderated_std,
    reference_from_moments,
    scale_values,
    series_statistics,
    variance_prior,
)

FAST = dict(
    d_model=8, state_size=4, n_layers=1, max_epochs=3, batch_size=8, random_state=0,
    min_epoch_steps=None, observation_dropout=0.0,
)


def series_reference(series: list[np.ndarray], weights=None):
    """m and s of "series" scaling as fit learns them, from each series' moments."""
    _, means, stds = series_statistics(series)
    return reference_from_moments(means, stds, weights)


def _loop_reference(series: list[np.ndarray], weights=None):
    """m and s of "series" scaling, one value at a time, in float64."""
    n, k = len(series), series[0].shape[1]
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    m, s = np.zeros(k), np.ones(k)
    for j in range(k):
        means, logs, wm, wl = [], [], [], []
        for i, x in enumerate(series):
            seen = [v for v in x[:, j] if not math.isnan(v)]
            if not seen:
                continue
            mu = sum(seen) / len(seen)
            sd = math.sqrt(sum((v - mu) ** 2 for v in seen) / len(seen))
            means.append(mu), wm.append(w[i])
            if sd > 0:
                logs.append(math.log(sd)), wl.append(w[i])
        m[j] = sum(a * b for a, b in zip(means, wm)) / sum(wm)
        s[j] = math.exp(sum(a * b for a, b in zip(logs, wl)) / sum(wl)) if wl else 1.0
    return m, s


def _loop_moderated(seen: list[float], d0: float, prior_var: float) -> float:
    """σ̃ of one feature of one series from its observed values, in float64."""
    n = len(seen)
    mu = sum(seen) / n
    if d0 == 0:
        return math.sqrt(sum((v - mu) ** 2 for v in seen) / n)
    if math.isinf(d0) or n == 1:
        return math.sqrt(prior_var)
    unbiased = sum((v - mu) ** 2 for v in seen) / (n - 1)
    return math.sqrt((d0 * prior_var + (n - 1) * unbiased) / (d0 + n - 1))


def _loop_scaled(x: np.ndarray, m, s, prior=None):
    """One series scaled by "series", a loop over features and steps."""
    L, k = x.shape
    out = np.zeros((L, 3 * k))
    for j in range(k):
        seen = [v for v in x[:, j] if not math.isnan(v)]
        if seen:
            mu = sum(seen) / len(seen)
            sd = math.sqrt(sum((v - mu) ** 2 for v in seen) / len(seen))
            if prior is not None:
                sd = _loop_moderated(seen, prior[0][j], prior[1][j])
        else:
            mu, sd = m[j], s[j]
        sd = max(sd, SCALE_FLOOR * s[j])
        for t in range(L):
            out[t, j] = 0.0 if math.isnan(x[t, j]) else (x[t, j] - mu) / sd
            out[t, k + j] = math.asinh((mu - m[j]) / s[j])
            out[t, 2 * k + j] = math.log(sd / s[j])
    return out


def _heterogeneous(n=24, seed=0, nan=False):
    """Series whose scales span five orders of magnitude (like PLAID)."""
    rng = np.random.default_rng(seed)
    X = []
    for i in range(n):
        L = int(rng.integers(2, 12))
        scale = 10.0 ** rng.uniform(-3, 2)
        values = np.c_[scale * rng.normal(size=L) + 3 * scale, rng.normal(size=L)]
        if nan:
            values[rng.random(L) < 0.3, 0] = np.nan
        X.append(values)
    return X


def test_series_scaling_equals_a_python_loop_in_float64():
    X = _heterogeneous(nan=True)
    X[0][:, 0] = np.nan  # a series that never observes feature 0
    X[1][:, 1] = 7.0  # a constant series
    X[2] = X[2][:1]  # a single observation
    weights = np.linspace(0.5, 2.0, len(X))
    location, scale = series_reference(X, weights)
    m, s = _loop_reference(X, weights)
    np.testing.assert_allclose(location, m, rtol=1e-12)
    np.testing.assert_allclose(scale, s, rtol=1e-12)
    for x in X:
        got = scale_values(x, "series", location, scale)
        assert got.shape == (len(x), 6) and np.isfinite(got).all()
        np.testing.assert_allclose(got, _loop_scaled(x, m, s), rtol=1e-10, atol=1e-12)
    # the edge cases: neutral level and scale for a feature never seen, z = 0 for a constant
    np.testing.assert_allclose(scale_values(X[0], "series", location, scale)[:, [0, 2, 4]], 0.0, atol=1e-12)
    np.testing.assert_allclose(scale_values(X[1], "series", location, scale)[:, 1], 0.0)
    # moderated standard deviations, with a finite, an infinite and a zero d0
    for prior in [(np.array([3.0, 0.5]), np.array([2.0, 0.1])), (np.array([np.inf, 0.0]), np.array([4.0, 1.0]))]:
        for x in X:
            got = scale_values(x, "series", location, scale, prior)
            np.testing.assert_allclose(got, _loop_scaled(x, m, s, prior), rtol=1e-10, atol=1e-12)
    assert learn_preprocessing(to_panel(X), "series").variance_prior is not None
    assert learn_preprocessing(to_panel(X), "global").variance_prior is None


def _drawn_from_a_prior(d0: float, prior_var: float, n: int = 4000, seed: int = 0):
    """Series of 2-10 normal values whose variances are drawn from the
    scaled inverse χ² prior (d0, s0² = prior_var)."""
    rng = np.random.default_rng(seed)
    variances = d0 * prior_var / rng.chisquare(d0, n) if np.isfinite(d0) else np.full(n, prior_var)
    return [rng.normal(5.0, math.sqrt(v), (int(rng.integers(2, 11)), 1)) for v in variances]


@pytest.mark.parametrize("d0, prior_var", [(4.0, 2.0), (12.0, 0.3)])
def test_variance_prior_recovers_the_prior_the_variances_were_drawn_from(d0, prior_var):
    counts, _, stds = series_statistics(_drawn_from_a_prior(d0, prior_var))
    got_d0, got_var = variance_prior(counts, stds, np.ones(1))
    assert abs(got_d0[0] / d0 - 1) < 0.25 and abs(got_var[0] / prior_var - 1) < 0.1, (got_d0, got_var)


def test_variance_prior_is_flat_for_scales_of_five_orders_and_a_point_for_one_scale():
    counts, _, stds = series_statistics(_heterogeneous(n=200))  # feature 0 spans five orders
    d0, s0 = variance_prior(counts, stds, np.ones(2))
    assert d0[0] < 0.5  # PLAID-like: each series keeps about its own scale
    counts, _, one_stds = series_statistics(_drawn_from_a_prior(np.inf, 1.5))
    one_d0, one_var = variance_prior(counts, one_stds, np.ones(1))
    assert one_d0[0] > 20 and abs(one_var[0] / 1.5 - 1) < 0.07  # one scale: short series drawn to it
    x = _heterogeneous(n=200)[7]
    own = np.nanstd(x, axis=0)
    moderated = moderated_std(own, np.full(2, float(len(x))), d0, s0)
    assert abs(math.log(moderated[0] / own[0])) < abs(math.log(own[0])) / 4  # kept near its own
    # too few series of two values or more with a spread: no prior, each series its own
    few = [np.ones((1, 1)), np.ones((1, 1))] + [np.array([[1.0], [2.0 + i]]) for i in range(MIN_PRIOR_SERIES - 1)]
    counts, _, stds = series_statistics(few)
    d0, _ = variance_prior(counts, stds, np.ones(1))
    assert d0[0] == 0 and moderated_std(np.array([0.5]), np.array([2.0]), d0, np.ones(1))[0] == 0.5
    counts, _, stds = series_statistics(few + [np.array([[1.0], [3.0]])])
    assert variance_prior(counts, stds, np.ones(1))[0][0] > 0  # one more: a prior
    # a feature constant in every training series (a covariate repeated at each step): no prior,
    # so a series that does vary there is scaled by its own spread, not by the floor's
    constant = [np.c_[np.full(5, float(i)), np.arange(5.0) * (1 + i)] for i in range(30)]
    prep = learn_preprocessing(to_panel(constant), "series")
    assert prep.variance_prior[0][0] == 0 and prep.variance_prior[0][1] > 0
    varying = np.c_[np.array([0.0, 2.0, 4.0]), np.arange(3.0)]
    z = scale_values(varying, "series", prep.feature_mean, prep.feature_std, prep.variance_prior)[:, 0]
    np.testing.assert_allclose(z, [-1.224744871, 0.0, 1.224744871], rtol=1e-8)


def test_a_preprocessing_saved_before_the_prior_reads_as_without_it():
    prep = learn_preprocessing(to_panel(_heterogeneous(nan=True)), "series")
    assert np.isinf(prep.variance_prior[0]).any()  # d0 = inf survives the JSON text
    again = Preprocessing.from_json(json.loads(json.dumps(prep.to_json())))
    for a, b in zip(again.variance_prior, prep.variance_prior):
        np.testing.assert_array_equal(a, b)
    old = prep.to_json()
    del old["variance_prior"]
    assert Preprocessing.from_json(old).variance_prior is None


def test_series_scaling_ignores_each_series_scale_and_level_in_z_but_keeps_them_apart():
    X = _heterogeneous()
    location, scale = series_reference(X)
    x = X[3]
    a = scale_values(x, "series", location, scale)
    b = scale_values(1000.0 * x + 5.0, "series", location, scale)
    np.testing.assert_allclose(a[:, :2], b[:, :2], rtol=1e-9, atol=1e-9)  # z: the same shape
    assert not np.allclose(a[:, 2:], b[:, 2:])  # level and scale channels differ
    np.testing.assert_allclose(b[:, 4:] - a[:, 4:], math.log(1000.0), rtol=1e-9)


def test_global_scaling_is_the_pooled_mean_and_std():
    X = _heterogeneous(nan=True)
    prep = learn_preprocessing(to_panel(X), "global")
    stacked = np.concatenate(X)
    np.testing.assert_allclose(prep.feature_mean, np.nanmean(stacked, axis=0))
    np.testing.assert_allclose(prep.feature_std, np.nanstd(stacked, axis=0))
    assert prep.scaling == "global"
    got = scale_values(X[0], "global", prep.feature_mean, prep.feature_std)
    expected = np.where(np.isnan(X[0]), 0.0, (X[0] - prep.feature_mean) / prep.feature_std)
    np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize("standardize, scaling", [(True, "global"), (False, "none"), ("series", "series")])
def test_explicit_settings_are_honoured(standardize, scaling):
    prep = learn_preprocessing(to_panel(_heterogeneous()), standardize)
    assert prep.scaling == scaling
    if scaling == "none":
        np.testing.assert_array_equal(prep.feature_mean, 0.0)
        np.testing.assert_array_equal(prep.feature_std, 1.0)


def test_auto_picks_series_only_when_most_variance_lies_between_series():
    rng = np.random.default_rng(1)
    homogeneous = [rng.normal(size=(int(rng.integers(3, 20)), 2)) for _ in range(30)]
    assert learn_preprocessing(to_panel(homogeneous), "auto").scaling == "global"
    # levels a little apart: each series still spans a good part of the pooled spread
    assert learn_preprocessing(to_panel([x + 0.1 * i for i, x in enumerate(homogeneous)]), "auto").scaling == "global"
    # offsets between series about 2.6 times their own spread (spectra's baselines): mostly between-series variance
    assert learn_preprocessing(to_panel([x + 0.3 * i for i, x in enumerate(homogeneous)]), "auto").scaling == "series"
    # levels far apart: the pooled spread dwarfs every series' own, which "global" would squash
    assert learn_preprocessing(to_panel([x + 10 * i for i, x in enumerate(homogeneous)]), "auto").scaling == "series"
    assert learn_preprocessing(to_panel(_heterogeneous()), "auto").scaling == "series"
    # the rule itself, at the threshold
    assert choose_scaling(np.array([1.0, 1.0]), np.array([1.0, AUTO_SERIES_RATIO * 0.99])) == "series"
    assert choose_scaling(np.array([1.0, 1.0]), np.array([1.0, AUTO_SERIES_RATIO * 1.01])) == "global"


def test_a_weight_of_two_equals_a_duplicate_in_the_statistics():
    X = _heterogeneous()
    weights = np.ones(len(X))
    weights[[2, 5]] = 2.0
    a = learn_preprocessing(to_panel(X), "series", weights=weights)
    b = learn_preprocessing(to_panel(X + [X[2], X[5]]), "series")
    np.testing.assert_allclose(a.feature_mean, b.feature_mean, rtol=1e-12)
    np.testing.assert_allclose(a.feature_std, b.feature_std, rtol=1e-12)


def test_estimators_fit_predict_save_and_load_with_series_scaling(tmp_path):
    X = [
        pd.DataFrame(x, columns=["a", "b"], index=pd.Index(np.cumsum(np.ones(len(x))), name="t"))
        for x in _heterogeneous(nan=True)
    ]
    y = np.array([math.log10(np.nanstd(x["a"]) + 1e-9) for x in X])
    reg = S5Regressor(**FAST).fit(X, y)
    assert reg.preprocessing_.scaling == "series"  # the default, "auto", chose it
    assert reg.n_model_inputs_ == 2 * 3 + 2  # z, level, scale per feature + observed flags
    pred = reg.predict(X)
    assert np.isfinite(pred).all()
    reg.save(tmp_path / "m")
    loaded = S5Regressor.load(tmp_path / "m")
    assert loaded.preprocessing_.scaling == "series"
    np.testing.assert_allclose(loaded.predict(X), pred, rtol=1e-6)
    labels = np.where(y > np.median(y), "big", "small")
    clf = S5Classifier(**FAST, standardize="global").fit(X, labels)
    assert clf.preprocessing_.scaling == "global" and clf.n_model_inputs_ == 2 + 2


def test_a_bad_standardize_is_an_error_naming_it():
    X = _heterogeneous()
    with pytest.raises(ValueError, match="standardize"):
        S5Regressor(**FAST, standardize="per-series").fit(X, np.zeros(len(X)))
