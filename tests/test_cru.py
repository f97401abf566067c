"""CRU baseline: its maths against dense / ODE references, the module against a naive filter."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

from s5ts.baselines import CRU, cru_gaussian_nll
from s5ts.baselines._cru_math import (
    Covariance,
    band_indices,
    band_to_dense,
    elup1,
    expm_small,
    kalman_update,
    l2_normalise,
    locally_linear_transition,
    predict,
)

M = 15  # latent observation size
BANDWIDTH = 3


def _naive_dense(band, m=M, bandwidth=BANDWIDTH):
    """Scatter (4, n_band) band entries into a (2m, 2m) matrix with explicit loops."""
    dense = np.zeros((2 * m, 2 * m))
    for block, (bi, bj) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        idx = 0
        for i in range(m):
            for j in range(m):
                if abs(i - j) <= bandwidth:
                    dense[bi * m + i, bj * m + j] = band[block, idx]
                    idx += 1
    return dense


def _dense_cov(upper, lower, side):
    return np.block([[np.diag(upper), np.diag(side)], [np.diag(side), np.diag(lower)]])


def _diagonals(sigma, m=M):
    return np.diagonal(sigma[:m, :m]), np.diagonal(sigma[m:, m:]), np.diagonal(sigma[:m, m:])


def _random_belief(rng):
    mean = rng.normal(size=2 * M)
    upper, lower = rng.uniform(0.2, 2.0, size=(2, M))
    side = rng.uniform(-0.5, 0.5, size=M) * np.sqrt(upper * lower)  # keeps Σ positive definite
    return mean, (upper, lower, side)


def _stable_transition(rng, scale=0.2, shift=0.7):
    """Banded A - shift·I: stable, eigenvalue real parts spread over about [-1.4, -0.1]."""
    band = rng.normal(size=(4, band_indices(M, BANDWIDTH)[0].size)) * scale
    return _naive_dense(band) - shift * np.eye(2 * M)


def _predict64(mean, cov, a, q, dt, **kwargs):
    with jax.enable_x64(True):
        cov = Covariance(*map(jnp.asarray, cov))
        args = (jnp.asarray(mean), cov, jnp.asarray(a), jnp.asarray(q), jnp.asarray(dt))
        new_mean, new_cov = jax.jit(predict, static_argnames="max_doublings")(*args, **kwargs)
        return np.asarray(new_mean), tuple(np.asarray(c) for c in new_cov)


# ---------------------------------------------------------------- pure maths


def test_elup1():
    x = jnp.array([-30.0, -1.0, 0.0, 2.0, 1e30])
    np.testing.assert_allclose(elup1(x), [np.exp(-30.0), np.exp(-1.0), 1.0, 3.0, 1e30], rtol=1e-6)
    grad = jax.grad(lambda x: jnp.sum(elup1(x)))(jnp.array([-1.0, 0.5, 1e30]))
    np.testing.assert_allclose(grad, [np.exp(-1.0), 1.0, 1.0], rtol=1e-6)  # finite at huge x


def test_l2_normalise():
    x = jnp.array([3.0, -4.0, 0.0])
    np.testing.assert_allclose(l2_normalise(x), [0.6, -0.8, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(l2_normalise(jnp.zeros(3)), np.zeros(3))
    np.testing.assert_allclose(l2_normalise(jnp.array([1e-9, 0.0])), [0.1, 0.0], rtol=1e-5)  # eps = 1e-8
    grad = jax.grad(lambda x: jnp.sum(l2_normalise(x) * jnp.arange(3.0)))(jnp.zeros(3))
    assert np.isfinite(np.asarray(grad)).all()


def test_band_to_dense_matches_loops():
    rows, cols = band_indices(M, BANDWIDTH)
    assert rows.size == 15 + 2 * (14 + 13 + 12) == 93
    band = np.random.default_rng(0).normal(size=(4, 93))
    with jax.enable_x64(True):
        dense = np.asarray(band_to_dense(jnp.asarray(band), M, BANDWIDTH))
    np.testing.assert_array_equal(dense, _naive_dense(band))
    with pytest.raises(ValueError, match="band must have shape"):
        band_to_dense(jnp.zeros((4, 90)), M, BANDWIDTH)


def test_locally_linear_transition_is_softmax_mixture():
    rng = np.random.default_rng(1)
    band = rng.normal(size=(5, 4, 93))
    weight = rng.normal(size=(5, 2 * M))
    mean = rng.normal(size=2 * M)
    with jax.enable_x64(True):
        coefficient_net = jnp.asarray(weight).__matmul__  # z ↦ W z
        a = locally_linear_transition(jnp.asarray(mean), jnp.asarray(band), coefficient_net, BANDWIDTH)
    logits = weight @ mean
    alpha = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    expected = sum(alpha[k] * _naive_dense(band[k]) for k in range(5))
    np.testing.assert_allclose(np.asarray(a), expected, rtol=1e-12, atol=1e-12)


def test_kalman_update_matches_dense_filter():
    rng = np.random.default_rng(2)
    mean, cov = _random_belief(rng)
    obs, obs_var = rng.normal(size=M), rng.uniform(0.1, 3.0, size=M)
    with jax.enable_x64(True):
        new_mean, new_cov = kalman_update(
            jnp.asarray(mean), Covariance(*map(jnp.asarray, cov)), jnp.asarray(obs), jnp.asarray(obs_var)
        )
    sigma = _dense_cov(*cov)
    h = np.hstack([np.eye(M), np.zeros((M, M))])
    gain = sigma @ h.T @ np.linalg.inv(h @ sigma @ h.T + np.diag(obs_var))
    expected_mean = mean + gain @ (obs - h @ mean)
    expected_sigma = (np.eye(2 * M) - gain @ h) @ sigma
    np.testing.assert_allclose(np.asarray(new_mean), expected_mean, rtol=1e-12, atol=1e-12)
    for got, want in zip(new_cov, _diagonals(expected_sigma)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_expm_small_matches_jax_expm(dtype):
    x = np.random.default_rng(3).normal(size=(60, 60))
    x *= 0.25 / np.abs(x).sum(axis=0).max()
    with jax.enable_x64(dtype == "float64"):
        got = np.asarray(expm_small(jnp.asarray(x, dtype)))
        want = np.asarray(jax.scipy.linalg.expm(jnp.asarray(x, dtype)))
    tol = {"float32": 1e-6, "float64": 1e-14}[dtype]
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    np.testing.assert_allclose(got, scipy.linalg.expm(x), rtol=0, atol=tol)


def _ode_reference(mean, cov, a, q, dt):
    """Integrate dμ/dt = Aμ, dΣ/dt = AΣ + ΣAᵀ + Q with tight tolerances."""
    n = mean.size

    def rhs(_, z):
        mu, sigma = z[:n], z[n:].reshape(n, n)
        return np.concatenate([a @ mu, (a @ sigma + sigma @ a.T + np.diag(q)).ravel()])

    z0 = np.concatenate([mean, _dense_cov(*cov).ravel()])
    sol = scipy.integrate.solve_ivp(rhs, (0.0, dt), z0, method="DOP853", rtol=1e-11, atol=1e-12)
    assert sol.success
    return sol.y[:n, -1], sol.y[n:, -1].reshape(n, n)


@pytest.mark.parametrize("dt", [0.3, 2.0, 17.0])
@pytest.mark.parametrize("kind", ["stable", "mixed"])
def test_predict_matches_ode(dt, kind):
    rng = np.random.default_rng(4)
    a = _stable_transition(rng) if kind == "stable" else _stable_transition(rng, scale=0.1, shift=0.0)
    q = rng.uniform(0.05, 0.2, size=2 * M)
    mean, cov = _random_belief(rng)
    got_mean, got_cov = _predict64(mean, cov, a, q, dt)
    want_mean, want_sigma = _ode_reference(mean, cov, a, q, dt)
    scale = np.abs(want_sigma).max()
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-7, atol=1e-9 * np.abs(want_mean).max())
    for got, want in zip(got_cov, _diagonals(want_sigma)):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9 * scale)


def test_predict_zero_gap_is_identity():
    rng = np.random.default_rng(5)
    mean, cov = _random_belief(rng)
    a = _stable_transition(rng)
    got_mean, got_cov = _predict64(mean, cov, a, np.full(2 * M, 0.1), 0.0)
    np.testing.assert_array_equal(got_mean, mean)
    for got, want in zip(got_cov, cov):
        np.testing.assert_array_equal(got, want)
    # and its gradient (padded steps run it) is finite
    def loss(a):
        cov32 = Covariance(*(jnp.asarray(c, jnp.float32) for c in cov))
        return jnp.sum(predict(jnp.ones(2 * M), cov32, a, jnp.full(2 * M, 0.1), jnp.zeros(()))[1].upper)

    assert np.isfinite(np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(a, jnp.float32)))).all()


@pytest.mark.parametrize("dt", [1.0, 5.0, 17.0])
def test_predict_float32_long_gaps(dt):
    """float32 is accurate for long gaps, even where exp(AΔt) is badly conditioned."""
    rng = np.random.default_rng(6)
    for trial in range(3):
        a = _stable_transition(rng, scale=0.3, shift=1.0)  # real parts spread over about [-2, 0]
        q = np.full(2 * M, 0.1)
        mean, cov = _random_belief(rng)
        want_mean, want_cov = _predict64(mean, cov, a, q, dt)
        got_mean, got_cov = predict(
            jnp.asarray(mean, jnp.float32), Covariance(*(jnp.asarray(c, jnp.float32) for c in cov)),
            jnp.asarray(a, jnp.float32), jnp.asarray(q, jnp.float32), jnp.asarray(dt, jnp.float32),
        )
        # Element-wise, relative: a single expm of MΔt is off by more than 100 %
        # here in float32 (κ(Φ) ≈ e^{2·17}); rounding in ΦΣΦᵀ leaves ~1e-4.
        atol = 1e-4 * np.abs(want_mean).max()
        np.testing.assert_allclose(np.asarray(got_mean), want_mean, rtol=0, atol=atol)
        np.testing.assert_allclose(np.asarray(got_cov.upper), want_cov[0], rtol=1e-3)
        np.testing.assert_allclose(np.asarray(got_cov.lower), want_cov[1], rtol=1e-3)
        side_scale = np.sqrt(want_cov[0] * want_cov[1])
        assert np.all(np.abs(np.asarray(got_cov.side) - want_cov[2]) <= 1e-3 * side_scale)


def test_predict_beyond_max_doublings_is_nan():
    rng = np.random.default_rng(7)
    mean, cov = _random_belief(rng)
    a = _stable_transition(rng)
    q = np.full(2 * M, 0.1)
    van_loan = np.block([[a, np.diag(q)], [np.zeros_like(a), -a.T]]) * 17.0
    needed = int(np.ceil(np.log2(np.abs(van_loan).sum(axis=0).max() / 0.25)))  # ‖Mτ‖₁ ≤ 1/4
    assert needed > 3
    assert np.isnan(_predict64(mean, cov, a, q, 17.0, max_doublings=needed - 1)[0]).all()
    assert np.isfinite(_predict64(mean, cov, a, q, 17.0, max_doublings=needed)[0]).all()


# ---------------------------------------------------------------- the module


def _np_linear(linear, x):
    return np.asarray(linear.weight) @ x + np.asarray(linear.bias)


def _np_mlp(mlp, x):
    return _np_linear(mlp.layers[1], np.tanh(_np_linear(mlp.layers[0], x)))


def _np_elup1(x):
    return np.where(x < 0, np.exp(np.minimum(x, 0)), x + 1)


def _softplus(x):
    return np.logaddexp(np.asarray(x), 0)


def _naive_cru(model, u, gaps, mask):
    """A Python-loop filter with dense 30×30 covariances, single-expm Van Loan (float64)."""
    m = model.latent_obs_size
    n = 2 * m
    basis = [_naive_dense(np.asarray(b), m, model.bandwidth) for b in model.basis_band]
    q = _softplus(model.diffusion_param)
    h = np.hstack([np.eye(m), np.zeros((m, m))])

    def project(sigma):  # keep the three diagonals
        return _dense_cov(*_diagonals(sigma, m))

    mean = np.zeros(n)
    sigma = np.diag(_softplus(model.initial_cov_param).ravel())
    started, elapsed, out_mean, out_var = False, 0.0, [], []
    for u_k, gap, observed in zip(u, gaps, mask):
        if observed:
            if started:
                logits = _np_linear(model.coefficient_net, mean)
                alpha = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
                a = sum(w * b for w, b in zip(alpha, basis))
                e = scipy.linalg.expm(np.block([[a, np.diag(q)], [np.zeros((n, n)), -a.T]]) * (elapsed + gap))
                phi = e[:n, :n]
                mean = phi @ mean
                sigma = project(phi @ sigma @ phi.T + e[:n, n:] @ phi.T)
            y = _np_linear(model.obs_mean, u_k)
            r = _np_elup1(_np_linear(model.obs_var, u_k))
            gain = sigma @ h.T @ np.linalg.inv(h @ sigma @ h.T + np.diag(r))
            mean = mean + gain @ (y - h @ mean)
            sigma = project((np.eye(n) - gain @ h) @ sigma)
            started, elapsed = True, 0.0
        else:
            elapsed += gap
        out_mean.append(_np_mlp(model.mean_decoder, mean))
        out_var.append(_np_elup1(_np_mlp(model.var_decoder, np.concatenate(_diagonals(sigma, m)))))
    return np.array(out_mean), np.array(out_var)


def _tabular_cru(seed=0):
    """A CRU on 3 raw features, with non-zero dynamics (float64 inside `jax.enable_x64`)."""
    model = CRU(3, 2, encoder="identity", key=jax.random.key(seed))
    band = 0.2 * jax.random.normal(jax.random.key(seed + 1), model.basis_band.shape)
    return eqx.tree_at(lambda m: m.basis_band, model, band)


def _irregular_inputs(rng, length):
    u = rng.normal(size=(length, 3))
    gaps = rng.integers(1, 8, size=length).astype(float)
    gaps[rng.integers(length)] = 17.0
    return u, gaps


def test_cru_matches_naive_filter():
    rng = np.random.default_rng(8)
    u, gaps = _irregular_inputs(rng, 12)
    mask = np.ones(12, bool)
    mask[[4, 5]] = False  # unobserved steps in the middle: their gaps carry over
    with jax.enable_x64(True):
        model = _tabular_cru()
        assert model.obs_mean.weight.dtype == jnp.float64
        with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
            mean, var = eqx.filter_jit(model)(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask))
        want_mean, want_var = _naive_cru(model, u, gaps, mask)
    assert mean.shape == var.shape == (12, 2)
    np.testing.assert_allclose(np.asarray(mean), want_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(var), want_var, rtol=1e-9, atol=1e-10)


def test_cru_padding_and_first_gap():
    # All runs share one shape (one compilation); outputs are causal, so
    # prefixes of a longer run are the reference.
    rng = np.random.default_rng(9)
    u, gaps = _irregular_inputs(rng, 12)
    model = _tabular_cru(seed=2)
    run = eqx.filter_jit(model)

    def call(u, gaps, mask):
        return run(jnp.asarray(u, jnp.float32), jnp.asarray(gaps, jnp.float32), jnp.asarray(mask))

    mean, var = call(u, gaps, np.ones(12, bool))

    # The first gap is ignored.
    other = gaps.copy()
    other[0] = 50.0
    np.testing.assert_array_equal(call(u, other, np.ones(12, bool))[0], mean)

    # Right padding with NaN inputs and gaps: same outputs, belief frozen, no NaN.
    u_pad, gaps_pad, mask_pad = u.copy(), gaps.copy(), np.arange(12) < 8
    u_pad[8:], gaps_pad[8:] = np.nan, np.nan
    mean_pad, var_pad = call(u_pad, gaps_pad, mask_pad)
    np.testing.assert_allclose(mean_pad[:8], mean[:8], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(var_pad[:8], var[:8], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(mean_pad[8:], np.broadcast_to(mean_pad[7], (4, 2)))

    # Leading unobserved steps: the filter starts at the first observed one.
    u_lead = np.concatenate([np.full((2, 3), np.nan), u[:10]])
    gaps_lead = np.concatenate([[1.0, 3.0], gaps[:10]])
    mean_lead, _ = call(u_lead, gaps_lead, np.arange(12) >= 2)
    np.testing.assert_allclose(mean_lead[2:], mean[:10], rtol=1e-6, atol=1e-6)

    # Gradients stay finite with NaN in padded inputs, gaps and targets.
    args = (jnp.asarray(u_pad, jnp.float32), jnp.asarray(gaps_pad, jnp.float32), jnp.asarray(mask_pad))
    target = jnp.asarray(np.where(mask_pad[:, None], rng.normal(size=(12, 2)), np.nan), jnp.float32)
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        loss, grad = eqx.filter_value_and_grad(lambda m: cru_gaussian_nll(*m(*args), target, args[2]))(model)
    assert np.isfinite(loss)
    assert all(np.isfinite(np.asarray(g)).all() for g in jax.tree.leaves(grad))
    assert np.abs(np.asarray(grad.basis_band)).max() > 0  # the dynamics do get a gradient


def test_cru_pendulum_configuration():
    model = CRU(576, 2, key=jax.random.key(0))
    n_params = sum(a.size for a in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))
    # CNN 4890, observation heads 2·465, initial covariance 30, diffusion 30,
    # basis 15·4·93, coefficient net 465, decoders 992 + 1442.
    assert n_params == 14359
    assert model.l2_normalise
    np.testing.assert_allclose(jax.nn.softplus(model.initial_cov_param), 10.0, rtol=1e-5)
    np.testing.assert_allclose(jax.nn.softplus(model.diffusion_param), 0.1, rtol=1e-5)
    assert not np.any(np.asarray(model.basis_band))
    frames = jax.random.uniform(jax.random.key(1), (2, 6, 576))
    gaps = jnp.tile(jnp.array([1.0, 1, 2, 1, 17, 3]), (2, 1))
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        mean, var = eqx.filter_jit(jax.vmap(model))(frames, gaps, jnp.ones((2, 6), bool))
    assert mean.shape == var.shape == (2, 6, 2)
    assert np.isfinite(np.asarray(mean)).all() and (np.asarray(var) > 0).all()
    with pytest.raises(ValueError, match="choose one of"):
        CRU(3, encoder="mlp", key=jax.random.key(0))


def test_cru_gaussian_nll():
    rng = np.random.default_rng(10)
    mean, target = rng.normal(size=(2, 5, 2))
    var = rng.uniform(0.1, 2.0, size=(5, 2))
    var[0, 0] = 1e-9  # floored to 1e-6
    mask = np.array([True, True, False, True, False])
    target[~mask] = np.nan
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        got = cru_gaussian_nll(*(jnp.asarray(x, jnp.float32) for x in (mean, var, target)), jnp.asarray(mask))
    v = np.maximum(var, 1e-6)
    per_step = 0.5 * np.sum(np.log(2 * np.pi) + np.log(v) + (target - mean) ** 2 / v, axis=-1)
    np.testing.assert_allclose(got, per_step[mask].mean(), rtol=1e-5)
    assert cru_gaussian_nll(jnp.zeros((3, 2)), jnp.ones((3, 2)), jnp.zeros((3, 2)), jnp.zeros(3, bool)) == 0
