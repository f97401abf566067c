"""The DSS baseline: its kernels against naive loops (float64), the
recurrence against the FFT convolution, chunks, resets, masking, and the
network and optimiser grouping."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import float64_module, unchecked
from s5ts.baselines import DSS, DSSBlock, DSSExp, DSSNetwork, DSSSoftmax
from s5ts.baselines._dss_math import causal_convolution, exp_kernel, recurrence, softmax_kernel
from s5ts.nn import IdentityEncoder
from s5ts.training import parameter_labels

H, N = 3, 4


def _random_system(rng, real_range=(-2.0, -0.05)):
    """λ (H, N) with real parts in `real_range`, w (H, N), Δ (H,), numpy."""
    lam = rng.uniform(*real_range, (H, N)) + 1j * rng.uniform(-8, 8, (H, N))
    w = rng.normal(size=(H, N)) + 1j * rng.normal(size=(H, N))
    step = np.exp(rng.uniform(np.log(0.01), np.log(0.5), H))
    return lam, w, step


def _naive_exp_kernel(lam, w, step, length):
    """K_k = Re Σ_n C Āᵏ B̄ by a Python loop, Āᵏ by repeated products (complex128)."""
    kernel = np.zeros((H, length))
    for h in range(H):
        for n in range(N):
            a_bar = np.exp(lam[h, n] * step[h])
            b_bar = (a_bar - 1) / lam[h, n]
            power = 1.0 + 0j
            for k in range(length):
                kernel[h, k] += (w[h, n] * power * b_bar).real
                power *= a_bar
    return kernel


def _naive_softmax_kernel(lam, w, step, length):
    """K_k = Re Σ_n w λ⁻¹ e^{kz} / Σ_l e^{lz}, z = Δλ, as written (complex128;
    inf or NaN where e^{kz} overflows)."""
    k = np.arange(length)
    kernel = np.zeros((H, length))
    with np.errstate(over="ignore", invalid="ignore"):
        for h in range(H):
            for n in range(N):
                e = np.exp(k * step[h] * lam[h, n])
                kernel[h] += (w[h, n] / lam[h, n] * e / e.sum()).real
    return kernel


def _layer(rng, kernel="exp", **kwargs):
    """A float64 DSS layer with the random system `rng` draws (call under x64)."""
    lam, w, step = _random_system(rng, **kwargs)
    layer = DSS(H, N, kernel, key=jax.random.key(0))
    variant = layer.variant
    return eqx.tree_at(
        lambda m: (m.lambda_re, m.lambda_im, m.W_re, m.W_im, m.log_step),
        layer,
        (
            jnp.asarray(variant.real_parameter(lam.real)),
            jnp.asarray(lam.imag),
            jnp.asarray(w.real),
            jnp.asarray(w.imag),
            jnp.asarray(np.log(step)),
        ),
    )


def _inputs(rng, length):
    u = jnp.asarray(rng.normal(size=(length, H)))
    gaps = jnp.asarray(rng.exponential(1.0, length))
    return u, gaps


# ----- kernels -----


def test_exp_kernel_matches_a_naive_loop(x64):
    rng = np.random.default_rng(0)
    lam, w, step = _random_system(rng)
    ours = exp_kernel(jnp.asarray(lam), jnp.asarray(w), jnp.asarray(step), 200)
    assert ours.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(ours), _naive_exp_kernel(lam, w, step, 200), rtol=1e-11, atol=1e-13)


def test_softmax_kernel_matches_the_naive_formula_where_it_is_finite(x64):
    rng = np.random.default_rng(1)
    lam, w, step = _random_system(rng, real_range=(-3.0, 5.0))  # both signs of Re λ
    naive = _naive_softmax_kernel(lam, w, step, 60)
    assert np.isfinite(naive).all()
    ours = softmax_kernel(jnp.asarray(lam), jnp.asarray(w), jnp.asarray(step), 60)  # eps = 0: the formula
    np.testing.assert_allclose(np.asarray(ours), naive, rtol=1e-10, atol=1e-12)


def test_softmax_kernel_is_finite_and_right_where_the_naive_formula_overflows(x64):
    rng = np.random.default_rng(2)
    lam, w, _ = _random_system(rng)
    lam = 5.0 + 1j * lam.imag  # Re λ = +5: e^{kΔλ} reaches e^{999} at L = 2000, Δ = 0.1
    step = np.full(H, 0.1)
    length = 2000
    naive = _naive_softmax_kernel(lam, w, step, length)
    assert not np.isfinite(naive).all()
    ours = np.asarray(softmax_kernel(jnp.asarray(lam), jnp.asarray(w), jnp.asarray(step), length))
    assert np.isfinite(ours).all()
    # softmax_k(kz) = softmax_{L-1-k}(-kz): the naive formula on -z (Re < 0,
    # no overflow) read backwards; with w/λ kept, as the reference.
    reference = np.zeros((H, length))
    k = np.arange(length)
    for h in range(H):
        for n in range(N):
            e = np.exp(-k * step[h] * lam[h, n])
            reference[h] += (w[h, n] / lam[h, n] * (e / e.sum())[::-1]).real
    np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-13)
    # All the mass sits at the end of the window (k = L - 1), as for Re λ > 0 it must.
    assert np.all(np.abs(ours[:, : length // 2]) < 1e-12 * np.abs(ours[:, -1:]))


def test_softmax_kernel_of_a_shorter_series_inside_a_window(x64):
    rng = np.random.default_rng(11)
    lam, w, step = (jnp.asarray(a) for a in _random_system(rng, real_range=(-3.0, 5.0)))
    inside = softmax_kernel(lam, w, step, 80, valid_length=jnp.asarray(60))
    np.testing.assert_allclose(np.asarray(inside[:, :60]), np.asarray(softmax_kernel(lam, w, step, 60)), rtol=1e-12)
    assert np.all(np.asarray(inside[:, 60:]) == 0)
    # ... whereas the kernel of 80 steps is another one (the normaliser sees all 80).
    assert not np.allclose(np.asarray(softmax_kernel(lam, w, step, 80)[:, :60]), np.asarray(inside[:, :60]))


def test_softmax_eps_bounds_a_vanishing_normaliser(x64):
    # Re λ = 0 and LΔλ = 2πi: Σ_l e^{lΔλ} = 0, so 1/Z is unbounded without eps.
    length, step = 64, 0.1
    lam = jnp.full((H, N), 1j * 2 * np.pi / (length * step))
    w = jnp.ones((H, N), jnp.complex128)
    steps = jnp.full(H, step)
    exact = np.asarray(softmax_kernel(lam, w, steps, length))
    bounded = np.asarray(softmax_kernel(lam, w, steps, length, eps=1e-7))
    assert np.abs(exact).max() > 1e8
    assert np.isfinite(bounded).all() and np.abs(bounded).max() < 1e3


def test_exp_parameterisation_keeps_the_real_part_negative_and_softmax_does_not(x64):
    big = jnp.full((H, N), 50.0)
    assert (jnp.real(DSSExp().eigenvalues(-big, big)) < 0).all()
    assert (jnp.real(DSSExp().eigenvalues(big, big)) < 0).all()
    assert (jnp.real(DSSSoftmax().eigenvalues(big, big)) > 0).all()


# ----- recurrence and convolution -----


@pytest.mark.parametrize("method", ["sequential", "associative"])
def test_recurrence_on_unit_gaps_equals_the_fft_convolution(x64, method):
    rng = np.random.default_rng(3)
    lam, w, step = (jnp.asarray(a) for a in _random_system(rng))
    length = 257
    u = jnp.asarray(rng.normal(size=(length, H)))
    ones = jnp.ones(length)
    y_rec, _ = recurrence(lam, w, step, u, ones, ones > 0, method=method)
    y_conv = causal_convolution(u, exp_kernel(lam, w, step, length))
    assert y_rec.dtype == y_conv.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(y_rec), np.asarray(y_conv), rtol=0, atol=1e-10 * np.abs(y_conv).max())


def test_layer_regular_and_irregular_paths_agree_on_unit_gaps(x64):
    rng = np.random.default_rng(4)
    layer = float64_module(_layer(rng))
    u, _ = _inputs(rng, 100)
    np.testing.assert_allclose(np.asarray(layer(u)), np.asarray(layer(u, jnp.ones(100))), rtol=0, atol=1e-10)


def test_causal_convolution_matches_a_direct_sum(x64):
    rng = np.random.default_rng(5)
    u, kernel = rng.normal(size=(40, H)), rng.normal(size=(H, 40))
    direct = np.array([[sum(kernel[h, j] * u[k - j, h] for j in range(k + 1)) for h in range(H)] for k in range(40)])
    ours = causal_convolution(jnp.asarray(u), jnp.asarray(kernel))
    np.testing.assert_allclose(np.asarray(ours), direct, rtol=0, atol=1e-12)


def test_recurrence_matches_a_naive_loop_on_irregular_gaps(x64):
    rng = np.random.default_rng(6)
    layer = _layer(rng)
    u, gaps = _inputs(rng, 30)
    lam, w, step, d = (np.asarray(a) for a in (layer.lam, layer.w, layer.step_size, layer.D))
    x = np.zeros((H, N), complex)
    expected = []
    for k in range(30):
        a_bar = np.exp(lam * step[:, None] * float(gaps[k]))
        x = a_bar * x + (a_bar - 1) / lam * np.asarray(u[k])[:, None]
        expected.append((w * x).sum(axis=1).real + d * np.asarray(u[k]))
    np.testing.assert_allclose(np.asarray(layer(u, gaps)), np.array(expected), rtol=1e-12, atol=1e-12)


def test_chunks_carrying_the_state_equal_the_whole_run(x64):
    rng = np.random.default_rng(7)
    layer = _layer(rng)
    u, gaps = _inputs(rng, 50)
    whole, states = layer.run(u, gaps)
    first, first_states = layer.run(u[:23], gaps[:23])
    second, second_states = layer.run(u[23:], gaps[23:], state=first_states[-1])
    np.testing.assert_allclose(np.concatenate([first, second]), np.asarray(whole), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(second_states[-1]), np.asarray(states[-1]), rtol=1e-12, atol=1e-12)


def test_a_reset_equals_a_fresh_run_from_that_step(x64):
    rng = np.random.default_rng(8)
    layer = _layer(rng)
    u, gaps = _inputs(rng, 40)
    reset = jnp.arange(40) == 17
    y, states = layer.run(u, gaps, reset=reset, state=jnp.ones((H, N), jnp.complex128))
    fresh, fresh_states = layer.run(u[17:], gaps[17:])
    np.testing.assert_allclose(np.asarray(y[17:]), np.asarray(fresh), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(states[17:]), np.asarray(fresh_states), rtol=1e-12, atol=1e-12)
    # ... and before it, the run is the one without a reset.
    plain, _ = layer.run(u, gaps, state=jnp.ones((H, N), jnp.complex128))
    np.testing.assert_array_equal(np.asarray(y[:17]), np.asarray(plain[:17]))
    assert not np.allclose(np.asarray(plain[17:]), np.asarray(fresh))


# ----- masking -----


@pytest.mark.parametrize("kernel, irregular", [("exp", False), ("exp", True), ("softmax", False)])
@pytest.mark.parametrize("padded_length", [13, 20, 33])
def test_padding_does_not_leak_into_real_steps(x64, kernel, irregular, padded_length):
    rng = np.random.default_rng(9)
    layer = _layer(rng, kernel, real_range=(-2.0, 2.0) if kernel == "softmax" else (-2.0, -0.05))
    u, gaps = _inputs(rng, padded_length)
    real = layer(u[:12], gaps[:12] if irregular else None)
    padded_u = u.at[12:].set(jnp.nan)
    padded_gaps = gaps.at[12:].set(jnp.nan)
    mask = jnp.arange(padded_length) < 12
    out = layer(padded_u, padded_gaps if irregular else None, mask)
    # Neither the padding's values nor its length (softmax's normaliser) reach the real steps.
    np.testing.assert_allclose(np.asarray(out[:12]), np.asarray(real), rtol=1e-12, atol=1e-12)

    def loss(layer):
        y = layer(padded_u, padded_gaps if irregular else None, mask)
        return jnp.sum(jnp.where(mask[:, None], y, 0.0) ** 2)

    grads = jax.grad(loss)(layer)
    assert all(bool(jnp.isfinite(g).all()) for g in jax.tree.leaves(eqx.filter(grads, eqx.is_inexact_array)))


def test_masked_steps_inside_the_series_leave_the_recurrence_unchanged(x64):
    rng = np.random.default_rng(10)
    layer = _layer(rng)
    u, gaps = _inputs(rng, 15)
    mask = jnp.ones(15, bool).at[jnp.array([3, 4, 9])].set(False)
    holes = layer(u.at[~mask].set(jnp.nan), gaps.at[~mask].set(jnp.nan), mask)
    compact = layer(u[mask], gaps[mask])
    np.testing.assert_allclose(np.asarray(holes[mask]), np.asarray(compact), rtol=1e-12, atol=1e-12)


# ----- softmax on irregular grids, shapes, network -----


def test_softmax_refuses_irregular_gaps(getkey):
    layer = DSS(2, 4, "softmax", key=getkey())
    with pytest.raises(ValueError, match="no recurrence"):
        layer(jnp.ones((5, 2)), jnp.ones(5))
    with pytest.raises(ValueError, match="regular grids only"):
        DSSNetwork(IdentityEncoder(2), [DSSBlock(4, 2, "softmax", key=getkey())], eqx.nn.Linear(4, 1, key=getkey()),
                   regular=False, key=getkey())


def test_bad_arguments_are_named(getkey):
    with pytest.raises(ValueError, match="kernel must be one of"):
        DSS(2, 4, "sigmoid", key=getkey())
    with pytest.raises(ValueError, match="init must be one of"):
        DSS(2, 4, init="legs", key=getkey())
    layer = DSS(2, 4, key=getkey())
    with pytest.raises(ValueError, match="gaps must have shape"):  # without jaxtyping's own check
        unchecked(DSS.__call__)(layer, jnp.ones((5, 2)), jnp.ones(4))


def test_the_layer_is_float64_under_x64_and_float32_otherwise(getkey):
    with jax.enable_x64(True):
        float64_module(DSS(2, 4, key=getkey()))
        assert DSS(2, 4, key=getkey())(jnp.ones((3, 2))).dtype == jnp.float64
    layer = DSS(2, 4, "softmax", key=getkey())
    assert layer(jnp.ones((3, 2))).dtype == jnp.float32
    assert DSS(2, 4, key=getkey())(jnp.ones((3, 2)), jnp.ones(3)).dtype == jnp.float32


@pytest.mark.parametrize("kernel, regular", [("exp", False), ("exp", True), ("softmax", True)])
def test_network_per_step_and_pooled_with_padding(getkey, kernel, regular):
    blocks = [DSSBlock(8, 4, kernel, key=getkey()) for _ in range(2)]
    per_step = DSSNetwork(IdentityEncoder(3), blocks, eqx.nn.Linear(8, 2, key=getkey()), regular=regular, key=getkey())
    pooled = DSSNetwork(IdentityEncoder(3), blocks, eqx.nn.Linear(8, 2, key=getkey()), regular=regular,
                        pooling="mean", key=getkey())
    u = jax.random.normal(getkey(), (2, 10, 3))
    gaps = jnp.ones((2, 10)).at[:, 4].set(3.0)
    mask = jnp.arange(10)[None, :] < jnp.array([[10], [6]])
    out = per_step.batch(u, gaps, mask)
    assert out.shape == (2, 10, 2) and pooled.batch(u, gaps, mask).shape == (2, 2)
    # The second row's padding, garbage or not, changes none of its real steps.
    garbage = per_step.batch(u.at[1, 6:].set(1e6), gaps.at[1, 6:].set(7.0), mask)
    np.testing.assert_allclose(np.asarray(garbage[1, :6]), np.asarray(out[1, :6]), rtol=1e-5, atol=1e-6)
    if regular:  # the gaps are ignored on a regular grid
        np.testing.assert_array_equal(np.asarray(per_step.batch(u, jnp.ones((2, 10)), mask)), np.asarray(out))


def test_dynamics_train_in_the_ssm_group(getkey):
    network = DSSNetwork(IdentityEncoder(2), [DSSBlock(4, 2, key=getkey())], eqx.nn.Linear(4, 1, key=getkey()),
                         regular=False, key=getkey())
    labels = parameter_labels(eqx.filter(network, eqx.is_inexact_array)).blocks[0].dss
    assert (labels.lambda_re, labels.lambda_im, labels.log_step) == ("ssm",) * 3
    assert (labels.W_re, labels.W_im, labels.D) == ("regular",) * 3
