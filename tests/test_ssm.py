"""S5SSM against naive float64 references: a Python loop over the ZOH /
bilinear recurrence, the dense matrix exponential, step mode, chunks and
padding."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import expm

from conftest import float64_module, unchecked
from s5ts.nn import S5SSM, backward_gaps, block_diagonal_hippo, hippo_n


def naive_lambda(ssm):
    """Λ in numpy complex128."""
    return -np.exp(np.asarray(ssm.log_neg_real, np.float64)) + 1j * np.asarray(ssm.lambda_imag, np.float64)


def naive_rule(discretization, lam, step):
    """(Λ̄, w) over `step` by the textbook formulas, numpy complex128."""
    if discretization == "zoh":
        lam_bar = np.exp(lam * step)
        return lam_bar, (lam_bar - 1) / lam
    return (1 + lam * step / 2) / (1 - lam * step / 2), step / (1 - lam * step / 2)


def naive_ssm(ssm, u, gaps, mask, coefficients=None):
    """Python loop in float64 numpy, straight from the equations.
    `coefficients(k, gap)`: (Λ̄_k, w_k) of step k over `gap` (default S5's,
    over the step Δ·gap)."""
    lam = naive_lambda(ssm)
    B = np.asarray(ssm.B_re, np.float64) + 1j * np.asarray(ssm.B_im, np.float64)
    C = np.asarray(ssm.C_re, np.float64) + 1j * np.asarray(ssm.C_im, np.float64)
    D = np.asarray(ssm.D, np.float64)
    delta = np.exp(np.asarray(ssm.log_step, np.float64))
    if coefficients is None:
        def coefficients(k, gap):
            return naive_rule(ssm.discretization, lam, delta * gap)

    def run(order, step_gaps, C):
        x = np.zeros(len(lam), complex)
        ys = np.zeros((len(u), len(D)))
        for k in order:
            if not mask[k]:
                continue
            lam_bar, weight = coefficients(k, step_gaps[k])
            x = lam_bar * x + weight * (B @ u[k])
            ys[k] = 2 * np.real(C @ x)
        return ys, x

    real = np.flatnonzero(mask)
    y, x_last = run(real, gaps, C)
    if ssm.bidirectional:
        back = np.zeros(len(u))
        back[real[:-1]] = np.asarray(gaps)[real[1:]]
        back[real[-1]] = gaps[0]
        C_back = np.asarray(ssm.C_back_re, np.float64) + 1j * np.asarray(ssm.C_back_im, np.float64)
        y = y + run(real[::-1], back, C_back)[0]
    y = y + D * np.where(mask[:, None], u, 0.0)
    return y, x_last


def random_inputs(rng, length, features, n_real=None):
    u = rng.normal(size=(length, features))
    gaps = rng.exponential(2.0, size=length)
    mask = np.zeros(length, bool)
    mask[: length if n_real is None else n_real] = True
    return u, gaps, mask


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("scan", ["associative", "sequential"])
def test_matches_naive_loop_float64(x64, getkey, discretization, bidirectional, scan):
    ssm = float64_module(S5SSM(3, 6, 3, discretization, bidirectional, scan, key=getkey()))
    rng = np.random.default_rng(0)
    for length, n_real in [(1, 1), (9, 9), (17, 11)]:
        u, gaps, mask = random_inputs(rng, length, 3, n_real)
        y, x_last = ssm(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask))
        y_ref, x_ref = naive_ssm(ssm, u, gaps, mask)
        np.testing.assert_allclose(y[mask], y_ref[mask], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(x_last, x_ref, rtol=1e-10, atol=1e-10)


def test_ragged_batch_with_vmap(x64, getkey):
    ssm = float64_module(S5SSM(2, 4, 1, key=getkey()))
    rng = np.random.default_rng(1)
    lengths = [5, 12, 1, 8]
    u = rng.normal(size=(4, 12, 2))
    gaps = rng.uniform(0, 5, size=(4, 12))
    mask = np.arange(12)[None] < np.array(lengths)[:, None]
    ys, xs = jax.vmap(ssm)(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask))
    for i in range(4):
        y_ref, x_ref = naive_ssm(ssm, u[i], gaps[i], mask[i])
        np.testing.assert_allclose(ys[i][mask[i]], y_ref[mask[i]], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(xs[i], x_ref, rtol=1e-10, atol=1e-10)


def test_zoh_matches_dense_matrix_exponential(x64, getkey):
    """expm([[ΛΔ, ΔB̃], [0, 0]]) = [[Λ̄, diag(w)B̃], [0, I]] for every state."""
    ssm = float64_module(S5SSM(3, 4, 2, key=getkey()))
    B = np.asarray(ssm.B_re) + 1j * np.asarray(ssm.B_im)
    for gap in [1e-4, 0.37, 3.0, 40.0]:
        lam_bar, weight = ssm.discretise(jnp.asarray(gap))
        delta = np.exp(np.asarray(ssm.log_step)) * gap
        P, H = B.shape
        dense = np.zeros((P + H, P + H), np.complex128)  # the reference in numpy
        dense[:P, :P] = np.diag(np.asarray(ssm.lam) * delta)
        dense[:P, P:] = delta[:, None] * B
        exp = expm(jnp.asarray(dense))
        np.testing.assert_allclose(jnp.diag(exp[:P, :P]), lam_bar, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(exp[:P, P:], weight[:, None] * B, rtol=1e-9, atol=1e-12)


def test_hippo_initialisation(x64):
    S = hippo_n(8)
    np.testing.assert_allclose(S + S.T, -np.eye(8), atol=1e-12)  # normal: −½I + skew
    lam, V = block_diagonal_hippo(4, 2)
    assert lam.shape == (4,) and V.shape == (8, 4)
    np.testing.assert_allclose(lam.real, -0.5)
    assert np.all(lam.imag < 0)
    # Each kept eigenpair solves S v = λ v in its block.
    block = hippo_n(4)
    for j in range(2):
        np.testing.assert_allclose(block @ V[:4, j], lam[j] * V[:4, j], atol=1e-10)
    np.testing.assert_allclose(V.conj().T @ V, np.eye(4), atol=1e-12)
    with pytest.raises(ValueError, match="even"):
        block_diagonal_hippo(3, 2)


def test_initial_parameters(getkey):
    ssm = S5SSM(5, 8, 4, dt_min=0.01, dt_max=0.1, key=getkey())
    assert np.all(np.real(ssm.lam) < 0)
    steps = np.exp(ssm.log_step)
    assert np.all((steps >= 0.01 - 1e-7) & (steps <= 0.1 + 1e-7))
    leaves = jax.tree.leaves(ssm)
    assert all(not jnp.iscomplexobj(leaf) for leaf in leaves)


@pytest.mark.parametrize("jit", [False, True])
def test_initial_b_and_c_are_the_projections_of_real_gaussians(getkey, jit):
    # B̃ = Vᴴ B and C̃ = C V, against float64 numpy on the same draws (the
    # layer computes them in float32 JAX, eagerly or inside one program).
    key = getkey()
    def build(k):
        return S5SSM(5, 8, 2, bidirectional=True, key=k)

    ssm = eqx.filter_jit(build)(key) if jit else build(key)
    _, V = block_diagonal_hippo(8, 2)
    k_b, k_c, k_cb, _, _ = jax.random.split(key, 5)
    b = np.asarray(jax.random.normal(k_b, (16, 5)), np.float64) / np.sqrt(5)
    np.testing.assert_allclose(np.asarray(ssm.B_re) + 1j * np.asarray(ssm.B_im), V.conj().T @ b, atol=2e-7)
    for k, re, im in ((k_c, ssm.C_re, ssm.C_im), (k_cb, ssm.C_back_re, ssm.C_back_im)):
        c = np.asarray(jax.random.normal(k, (5, 16)), np.float64) / np.sqrt(16)
        np.testing.assert_allclose(np.asarray(re) + 1j * np.asarray(im), c @ V, atol=2e-7)


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_step_mode_equals_sequence_mode(x64, getkey, discretization):
    ssm = float64_module(S5SSM(3, 4, 2, discretization, key=getkey()))
    rng = np.random.default_rng(2)
    u, gaps, _ = random_inputs(rng, 15, 3)
    y_seq, x_seq = ssm(jnp.asarray(u), jnp.asarray(gaps))
    state = ssm.init_state()
    for k in range(15):
        state, y_k = ssm.step(state, jnp.asarray(u[k]), jnp.asarray(gaps[k]))
        np.testing.assert_allclose(y_k, y_seq[k], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state, x_seq, rtol=1e-10, atol=1e-12)


def test_chunked_equals_whole(x64, getkey):
    ssm = float64_module(S5SSM(3, 4, 2, key=getkey()))
    rng = np.random.default_rng(3)
    u, gaps, _ = random_inputs(rng, 30, 3)
    y_whole, x_whole = ssm(jnp.asarray(u), jnp.asarray(gaps))
    state, pieces = None, []
    for start, stop in [(0, 7), (7, 8), (8, 30)]:
        y, state = ssm(jnp.asarray(u[start:stop]), jnp.asarray(gaps[start:stop]), state=state)
        pieces.append(y)
    np.testing.assert_allclose(jnp.concatenate(pieces), y_whole, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state, x_whole, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_padding_length_does_not_matter(getkey, bidirectional, discretization):
    ssm = S5SSM(3, 4, 2, discretization, bidirectional, key=getkey())
    rng = np.random.default_rng(4)
    u, gaps, _ = random_inputs(rng, 10, 3)
    reference = None
    for pad in [0, 1, 6, 22]:
        u_pad = np.concatenate([u, rng.normal(size=(pad, 3)) * 100])
        gaps_pad = np.concatenate([gaps, rng.uniform(0, 50, pad)])
        mask = np.arange(10 + pad) < 10
        y, x_last = ssm(jnp.asarray(u_pad), jnp.asarray(gaps_pad), jnp.asarray(mask))
        if reference is None:
            reference = (y[:10], x_last)
        np.testing.assert_allclose(y[:10], reference[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x_last, reference[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_nan_in_padding_gives_finite_outputs_and_gradients(getkey, bidirectional):
    ssm = S5SSM(3, 4, 2, bidirectional=bidirectional, key=getkey())
    u = jnp.concatenate([jnp.ones((5, 3)), jnp.full((3, 3), jnp.nan)])
    gaps = jnp.concatenate([jnp.ones(5), jnp.full(3, jnp.nan)])
    mask = jnp.arange(8) < 5

    def loss(ssm, u):
        y, x_last = ssm(u, gaps, mask)
        return jnp.sum(jnp.where(mask[:, None], y, 0.0) ** 2) + jnp.sum(jnp.abs(x_last) ** 2)

    value, (grad_model, grad_u) = jax.value_and_grad(loss, argnums=(0, 1))(ssm, u)
    assert np.isfinite(value)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grad_model))
    assert np.all(np.isfinite(grad_u)) and np.all(grad_u[5:] == 0)


def test_backward_gaps():
    gaps = jnp.array([1.0, 2.0, 3.0, 4.0, 9.0, 9.0])
    mask = jnp.array([True, True, True, True, False, False])
    np.testing.assert_allclose(backward_gaps(gaps, mask), [2.0, 3.0, 4.0, 1.0, 0.0, 0.0])


def test_bidirectional_has_no_step_mode_or_state(getkey):
    ssm = S5SSM(2, 2, 1, bidirectional=True, key=getkey())
    with pytest.raises(ValueError, match="no step mode"):
        ssm.step(ssm.init_state(), jnp.ones(2), jnp.asarray(1.0))
    with pytest.raises(ValueError, match="cannot continue"):
        ssm(jnp.ones((3, 2)), jnp.ones(3), state=ssm.init_state())


def test_bad_construction_and_shapes(getkey):
    with pytest.raises(ValueError, match="discretization"):
        S5SSM(2, 2, 1, discretization="euler", key=getkey())
    with pytest.raises(ValueError, match="scan"):
        S5SSM(2, 2, 1, scan="fast", key=getkey())
    with pytest.raises(ValueError, match="dt_min"):
        S5SSM(2, 2, 1, dt_min=0.5, dt_max=0.1, key=getkey())
    ssm = S5SSM(2, 2, 1, key=getkey())
    with pytest.raises(ValueError, match="shape"):
        unchecked(S5SSM.__call__)(ssm, jnp.ones((3, 5)), jnp.ones(3))
    with pytest.raises(ValueError, match="gaps"):
        unchecked(S5SSM.__call__)(ssm, jnp.ones((3, 2)), jnp.ones(4))


def test_memory_is_linear_in_length(getkey):
    """Forward+backward with per-step gaps never builds an (L, P, H) array:
    XLA's temporary memory stays far below L·P·H·8 bytes."""
    H = P = 64
    L = 2048
    ssm = S5SSM(H, P, 4, scan="sequential", key=getkey())

    def loss(ssm, u, gaps):
        return jnp.sum(ssm(u, gaps)[0] ** 2)

    compiled = (
        jax.jit(jax.grad(loss))
        .lower(ssm, jnp.ones((L, H)), jnp.ones(L))
        .compile()
    )
    analysis = compiled.memory_analysis()
    lph_bytes = L * P * H * 8
    assert analysis.temp_size_in_bytes < lph_bytes / 4


def test_dtype_follows_jax_default_or_the_argument(getkey):
    """As `eqx.nn.Linear`: float32 by default, float64 under x64, or `dtype`;
    every parameter, not some of them."""

    def dtypes(module):
        return {str(leaf.dtype) for leaf in jax.tree.leaves(module) if isinstance(leaf, jax.Array)}

    assert dtypes(S5SSM(3, 4, 2, bidirectional=True, key=getkey())) == {"float32"}
    with jax.enable_x64(True):
        assert dtypes(S5SSM(3, 4, 2, bidirectional=True, key=getkey())) == {"float64"}
        kept = S5SSM(3, 4, 2, key=getkey(), dtype=jnp.float32)
        assert dtypes(kept) == {"float32"}
        y, x_last = kept(jnp.ones((5, 3), jnp.float32), jnp.ones(5, jnp.float32))
        assert y.dtype == jnp.float32 and x_last.dtype == jnp.complex64


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_float64_step_mode_equals_sequence_mode_to_1e12(x64, getkey, discretization):
    """Built under x64 with no cast: float64 throughout, so step mode and
    sequence mode agree to rounding (float32 parameters left them 1.6e-8 apart)."""
    ssm = float64_module(S5SSM(3, 4, 2, discretization, scan="sequential", key=getkey()))
    rng = np.random.default_rng(5)
    u, gaps, mask = random_inputs(rng, 15, 3)
    y_seq, x_seq = ssm(jnp.asarray(u), jnp.asarray(gaps))
    assert y_seq.dtype == jnp.float64 and x_seq.dtype == jnp.complex128
    state = ssm.init_state()
    steps = []
    for k in range(15):
        state, y_k = ssm.step(state, jnp.asarray(u[k]), jnp.asarray(gaps[k]))
        steps.append(y_k)
    np.testing.assert_allclose(jnp.stack(steps), y_seq, rtol=1e-12, atol=1e-12)
    y_ref, x_ref = naive_ssm(ssm, u, gaps, mask)
    np.testing.assert_allclose(y_seq, y_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x_seq, x_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scan", ["associative", "sequential"])
def test_unit_input_hold_in_sequence_and_step_mode(x64, getkey, scan):
    """Both scans and the step mode agree under `input_hold="unit"`; with
    every gap 1 it equals the default `"gap"`."""
    key = getkey()
    unit = float64_module(S5SSM(3, 6, 3, scan=scan, input_hold="unit", key=key))
    gap = float64_module(S5SSM(3, 6, 3, scan=scan, key=key))
    rng = np.random.default_rng(1)
    u, gaps, _ = random_inputs(rng, 12, 3)
    u, gaps = jnp.asarray(u), jnp.asarray(gaps)
    y, _ = unit(u, gaps)
    state, steps = unit.init_state(), []
    for k in range(12):
        state, y_k = unit.step(state, u[k], gaps[k])
        steps.append(y_k)
    np.testing.assert_allclose(jnp.stack(steps), y, rtol=1e-10, atol=1e-10)
    ones = jnp.ones(12)
    np.testing.assert_allclose(unit(u, ones)[0], gap(u, ones)[0], rtol=1e-12, atol=1e-12)
    assert not np.allclose(y, gap(u, gaps)[0])
    with pytest.raises(ValueError, match="input_hold"):
        S5SSM(3, 6, input_hold="held", key=key)
