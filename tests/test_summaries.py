"""Summary features (`s5ts.nn.sequence_summaries`, `segment_summaries`, the
estimators' `summary_features`): equal to a float64 Python loop over each
series' observed steps; padding, whatever it holds, and the row's time
offset never enter; an estimator fits and predicts with them."""

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from s5ts import S5Classifier, S5Regressor
from s5ts.nn import PER_CHANNEL, PER_SERIES, n_summaries, segment_summaries, sequence_summaries


def reference(u, gaps):
    """The summaries of one series' observed steps, by a loop in float64."""
    n, d = u.shape
    t = np.cumsum(gaps)
    out = []
    for stat in PER_CHANNEL:
        for c in range(d):
            x = u[:, c]
            if stat == "mean":
                out.append(sum(x) / n)
            elif stat == "std":
                m = sum(x) / n
                out.append(np.sqrt(sum((v - m) ** 2 for v in x) / n))
            elif stat == "min":
                out.append(min(x))
            elif stat == "max":
                out.append(max(x))
            elif stat == "first":
                out.append(x[0])
            elif stat == "last":
                out.append(x[-1])
            else:
                tm, xm = sum(t) / n, sum(x) / n
                var_t = sum((s - tm) ** 2 for s in t) / n
                cov = sum((s - tm) * (v - xm) for s, v in zip(t, x)) / n
                out.append(cov / np.sqrt(var_t) if var_t > 0 else 0.0)
    span = t[-1] - t[0]
    out += [np.log1p(n), np.log1p(span), np.log1p(span / max(n - 1, 1))]
    return np.array(out)


def test_one_sequence_equals_a_loop_and_ignores_its_padding(x64):
    rng = np.random.default_rng(0)
    u = rng.normal(size=(9, 2))
    gaps = rng.exponential(3.0, size=9)
    mask = np.arange(9) < 6
    u[~mask] = np.nan  # padding may hold anything
    gaps[~mask] = 1e6
    got = np.asarray(sequence_summaries(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask)))
    assert got.shape == (n_summaries(2),) == (len(PER_CHANNEL) * 2 + len(PER_SERIES),)
    np.testing.assert_allclose(got, reference(u[:6], gaps[:6]), rtol=1e-12, atol=1e-12)


def test_segments_of_a_packed_row_are_each_series_alone(x64):
    """Each segment's summaries equal its series' alone: the times before it in
    the row (a large first gap) change nothing; a one-step series has no
    spread, span or trend; an unused number gives zeros."""
    rng = np.random.default_rng(1)
    lengths = (5, 1, 7)
    parts = [(rng.normal(size=(n, 3)), rng.exponential(2.0, size=n)) for n in lengths]
    parts[0][1][0] = 1e3  # a first gap far larger than the rest
    u = np.concatenate([p[0] for p in parts] + [np.full((3, 3), np.nan)])
    gaps = np.concatenate([p[1] for p in parts] + [np.full(3, np.nan)])
    ids = np.concatenate([np.full(n, k) for k, n in enumerate(lengths)] + [np.full(3, 4)])  # padding: id ≥ n
    got = np.asarray(segment_summaries(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(ids), 4))
    for k, (series_u, series_gaps) in enumerate(parts):
        np.testing.assert_allclose(got[k], reference(series_u, series_gaps), rtol=1e-9, atol=1e-9)
    one_step = got[1].reshape(-1)
    assert one_step[3:6].tolist() == [0.0, 0.0, 0.0]  # std of each channel
    assert one_step[-2:].tolist() == [0.0, 0.0]  # span, mean gap
    np.testing.assert_array_equal(got[3], 0.0)


def panel(rng, n=40):
    X = [pd.DataFrame({"v": rng.normal(size=L) + (i % 2)}, index=np.sort(rng.uniform(0, 30, L)))
         for i, L in enumerate(rng.integers(3, 15, size=n))]
    return X, np.arange(n) % 2


@pytest.mark.parametrize("estimator,params", [(S5Classifier, {}), (S5Regressor, {"loss": "gaussian_nll"})])
def test_estimators_fit_and_predict_with_summary_features(estimator, params):
    X, y = panel(np.random.default_rng(2))
    if estimator is S5Regressor:
        y = y.astype(float)
    model = estimator(d_model=8, state_size=4, max_epochs=3, random_state=0, summary_features=True, **params).fit(X, y)
    assert model.model_.summaries
    assert np.all(np.isfinite(np.asarray(model.predict(X), dtype=float)))
    without = estimator(d_model=8, state_size=4, max_epochs=3, random_state=0, **params).fit(X, y)
    assert not without.model_.summaries


def test_summary_features_need_one_target_per_series():
    rng = np.random.default_rng(3)
    X = [pd.DataFrame({"v": rng.normal(size=6)}, index=np.arange(6.0)) for _ in range(4)]
    y = [pd.Series(rng.normal(size=6), index=np.arange(6.0)) for _ in range(4)]
    with pytest.raises(ValueError, match="summary_features"):
        S5Regressor(max_epochs=1, summary_features=True).fit(X, y)
