"""Selective steps on real gaps (`S5SSM(selective=...)`, `s5ts.nn._selection`):
W_Δ = 0 is S5 to 1e-12; the layer against a Python loop of the recurrence
with per-step Δ_k in numpy complex128; the associative scan against the fused
sequential one (values and gradients); padding, chunks, step mode; the
option through the parameter table."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_ssm import naive_lambda, naive_rule, naive_ssm

from conftest import float64_module
from s5ts import S5Regressor
from s5ts.forecasting import Forecaster
from s5ts.nn import S5SSM, make_selection, selected_steps
from s5ts.nn._discretisation import make_discretisation
from s5ts.nn._irregular_scan import irregular_scan

SELECTIVE = ("scaled", "split")


def with_weight(ssm: S5SSM, rng, scale=0.7) -> S5SSM:
    """`ssm` with a random W_Δ (it starts at 0)."""
    weight = rng.normal(size=ssm.select_weight.shape) * scale
    return eqx.tree_at(lambda m: m.select_weight, ssm, jnp.asarray(weight, ssm.select_weight.dtype))


def inputs(rng, length, features, n_real=None):
    u = rng.normal(size=(length, features))
    gaps = rng.exponential(2.0, size=length)
    mask = np.arange(length) < (length if n_real is None else n_real)
    return u, gaps, mask


def naive_selective(ssm, u, gaps, mask):
    """The recurrence as a Python loop in numpy float64/complex128, straight
    from the formulas: Δˢᵉˡ_k = softplus(W u_k + log(e^Δ − 1)); "scaled":
    Λ̄_k, w_k over the step Δˢᵉˡ_k g_k; "split": Λ̄_k over Δ g_k, w_k over
    Δˢᵉˡ_k (g_k: the gap of the pass, forward or backward)."""
    lam = naive_lambda(ssm)
    delta = np.exp(np.asarray(ssm.log_step, np.float64))
    W = np.asarray(ssm.select_weight, np.float64)

    def coefficients(k, gap):
        selected = np.logaddexp(0.0, W @ u[k] + np.log(np.expm1(delta)))
        if ssm.selective == "scaled":
            return naive_rule(ssm.discretization, lam, selected * gap)
        return naive_rule(ssm.discretization, lam, delta * gap)[0], naive_rule(ssm.discretization, lam, selected)[1]

    return naive_ssm(ssm, u, gaps, mask, coefficients)


@pytest.mark.parametrize("scan", ["sequential", "associative"])
@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_zero_weight_is_s5_to_1e12(x64, getkey, scan, discretization, bidirectional):
    """W_Δ = 0 (as initialised; b = softplus⁻¹(Δ) by construction): "scaled"
    is S5, "split" is S5 with input_hold="unit", values and gradients of
    every shared parameter; a nonzero W_Δ changes the outputs."""
    key = getkey()
    rng = np.random.default_rng(0)
    u, gaps, mask = (jnp.asarray(a) for a in inputs(rng, 19, 3, n_real=14))

    def build(**kwargs):
        return float64_module(S5SSM(3, 6, 3, discretization, bidirectional, scan, key=key, **kwargs))

    def loss(ssm):
        y, x_last = ssm(u, gaps, mask)
        return jnp.sum(jnp.where(mask[:, None], y, 0.0) ** 2) + jnp.sum(jnp.abs(x_last) ** 2), (y, x_last)

    for selective, hold in (("scaled", "gap"), ("split", "unit")):
        s5, selected = build(input_hold=hold), build(selective=selective)
        assert selected.selective == selective and not np.any(selected.select_weight)
        (value_s5, (y_s5, x_s5)), grads_s5 = jax.value_and_grad(loss, has_aux=True)(s5)
        (value, (y, x_last)), grads = jax.value_and_grad(loss, has_aux=True)(selected)
        np.testing.assert_allclose(y, y_s5, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x_last, x_s5, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(value, value_s5, rtol=1e-12)
        for name in ("log_neg_real", "lambda_imag", "B_re", "B_im", "C_re", "C_im", "D", "log_step"):
            np.testing.assert_allclose(getattr(grads, name), getattr(grads_s5, name), rtol=1e-10, atol=1e-12, err_msg=name)
        assert np.any(np.asarray(grads.select_weight) != 0)  # W_Δ learns from there
        y_moved, _ = with_weight(selected, rng)(u, gaps, mask)
        assert np.max(np.abs(np.asarray(y_moved - y)[np.asarray(mask)])) > 1e-3


def test_switched_off_is_the_s5_layer(getkey):
    key = getkey()
    s5, off = S5SSM(3, 4, 2, key=key), S5SSM(3, 4, 2, selective=None, key=key)
    assert off.selective is None and off.select_weight is None
    for a, b in zip(jax.tree.leaves(s5), jax.tree.leaves(off)):
        np.testing.assert_array_equal(a, b)
    u, gaps = jnp.ones((6, 3)), jnp.linspace(0.1, 2.0, 6)
    np.testing.assert_array_equal(s5(u, gaps)[0], off(u, gaps)[0])


@pytest.mark.parametrize("selective", SELECTIVE)
@pytest.mark.parametrize("scan", ["sequential", "associative"])
@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_matches_naive_loop_float64(x64, getkey, selective, scan, discretization, bidirectional):
    rng = np.random.default_rng(1)
    ssm = S5SSM(3, 6, 3, discretization, bidirectional, scan, dt_min=0.05, dt_max=1.0, selective=selective, key=getkey())
    ssm = float64_module(with_weight(ssm, rng))
    for length, n_real in [(1, 1), (9, 9), (17, 11)]:
        u, gaps, mask = inputs(rng, length, 3, n_real)
        y, x_last = ssm(jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask))
        y_ref, x_ref = naive_selective(ssm, u, gaps, mask)
        np.testing.assert_allclose(y[mask], y_ref[mask], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(x_last, x_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("selective", SELECTIVE)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_associative_scan_equals_fused_sequential_scan(x64, getkey, selective, bidirectional):
    """Values and the gradients of every parameter (W_Δ included) and of u:
    the fused scan's hand-written backward loop against the materialised
    coefficients under the associative scan."""
    rng = np.random.default_rng(2)
    key = getkey()
    seq, assoc = (
        float64_module(with_weight(S5SSM(3, 6, 3, bidirectional=bidirectional, scan=s, selective=selective, key=key), rng))
        for s in ("sequential", "associative")
    )
    assoc = eqx.tree_at(lambda m: m.select_weight, assoc, seq.select_weight)
    u, gaps, mask = (jnp.asarray(a) for a in inputs(rng, 21, 3, n_real=16))
    cotangent = jnp.asarray(rng.normal(size=(21, 3)))

    def loss(ssm, u):
        y, x_last = ssm(u, gaps, mask)
        return jnp.sum(y * cotangent) + jnp.sum(jnp.abs(x_last) ** 2)

    (v_seq, g_seq), (v_assoc, g_assoc) = (jax.value_and_grad(loss, argnums=(0, 1))(m, u) for m in (seq, assoc))
    np.testing.assert_allclose(v_seq, v_assoc, rtol=1e-11)
    leaves_seq, leaves_assoc = jax.tree.leaves(g_seq), jax.tree.leaves(g_assoc)
    assert len(leaves_seq) == len(leaves_assoc) == 10 + 2 * bidirectional  # 9 parameters (W_Δ among them) and u
    for got, want in zip(leaves_seq, leaves_assoc):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("selective", SELECTIVE)
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_scan_gradient_of_the_selected_steps(x64, selective, reverse):
    """`irregular_scan(selected=...)` against the recurrence on materialised
    coefficients differentiated by plain autodiff (a `lax.scan`, no custom
    VJP), for every input, the selected steps and the carried state included."""
    rng = np.random.default_rng(3)
    L, P = 13, 4
    lam = jnp.asarray(-np.exp(rng.normal(size=P) - 1.0) + 1j * rng.normal(size=P) * 3)
    timescale = jnp.asarray(np.exp(rng.uniform(np.log(0.05), 0.0, P)))
    mask = jnp.asarray(rng.uniform(size=L) > 0.25)
    gaps = jnp.where(mask, jnp.asarray(rng.exponential(size=L)), 0.0)
    bu = jnp.asarray(rng.normal(size=(L, P)) + 1j * rng.normal(size=(L, P)))
    selected = jnp.asarray(np.exp(rng.normal(size=(L, P)) - 1.0))
    state = jnp.asarray(rng.normal(size=P) + 1j * rng.normal(size=P))
    cotangent = jnp.asarray(rng.normal(size=(L, P)) + 1j * rng.normal(size=(L, P)))
    rule, selection = make_discretisation("zoh"), make_selection(selective)

    def reference(lam, timescale, gaps, bu, state, selected):
        lam_bar, weight = selection.coefficients(rule, lam, timescale, gaps, selected)
        a = jnp.where(mask[:, None], lam_bar, 1.0)
        b = jnp.where(mask[:, None], weight * bu, 0.0)
        first = -1 if reverse else 0
        b = b.at[first].add(a[first] * state)
        order = slice(None, None, -1) if reverse else slice(None)

        def step(x, ab):
            return ab[0] * x + ab[1], ab[0] * x + ab[1]

        return jax.lax.scan(step, jnp.zeros_like(state), (a[order], b[order]))[1][order]

    def fused(lam, timescale, gaps, bu, state, selected):
        return irregular_scan(lam, timescale, gaps, mask, bu, state, reverse=reverse, selected=selected, selective=selective)

    args = (lam, timescale, gaps, bu, state, selected)
    out_f, vjp_f = jax.vjp(fused, *args)
    out_r, vjp_r = jax.vjp(reference, *args)
    np.testing.assert_allclose(out_f, out_r, rtol=1e-11, atol=1e-12)
    names = ("lam", "timescale", "gaps", "bu", "state", "selected")
    for name, got, want in zip(names, vjp_f(cotangent), vjp_r(cotangent)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11, err_msg=name)
    assert np.all(np.asarray(vjp_f(cotangent)[-1])[~np.asarray(mask)] == 0)  # padded steps select nothing


@pytest.mark.parametrize("selective", SELECTIVE)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_does_not_leak_and_gradients_are_finite(x64, getkey, selective, bidirectional):
    """NaN inputs and gaps in the padding: real outputs, the final state and
    every gradient equal those of the unpadded sequence."""
    rng = np.random.default_rng(4)
    ssm = float64_module(with_weight(S5SSM(3, 4, 2, bidirectional=bidirectional, selective=selective, key=getkey()), rng))
    u, gaps, _ = inputs(rng, 10, 3)

    def loss(ssm, u, gaps, mask):
        y, x_last = ssm(u, gaps, mask)
        return jnp.sum(jnp.where(mask[:, None], jnp.sin(y), 0.0)) + jnp.sum(jnp.abs(x_last) ** 2), (y, x_last)

    def run(pad):
        u_pad = jnp.asarray(np.concatenate([u, np.full((pad, 3), np.nan)]))
        gaps_pad = jnp.asarray(np.concatenate([gaps, np.full(pad, np.nan)]))
        mask = jnp.arange(10 + pad) < 10
        return jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(ssm, u_pad, gaps_pad, mask)

    (value, (y, x_last)), (g_model, g_u) = run(0)
    for pad in (1, 7):
        (value_p, (y_p, x_p)), (g_model_p, g_u_p) = run(pad)
        np.testing.assert_allclose(y_p[:10], y, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x_p, x_last, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(value_p, value, rtol=1e-12)
        for got, want in zip(jax.tree.leaves(g_model_p), jax.tree.leaves(g_model)):
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert np.all(np.isfinite(g_u_p)) and np.all(np.asarray(g_u_p)[10:] == 0)
        np.testing.assert_allclose(g_u_p[:10], g_u, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("selective", SELECTIVE)
@pytest.mark.parametrize("scan", ["sequential", "associative"])
def test_chunked_equals_whole_and_step_mode(x64, getkey, selective, scan):
    rng = np.random.default_rng(5)
    ssm = float64_module(with_weight(S5SSM(3, 4, 2, scan=scan, selective=selective, key=getkey()), rng))
    u, gaps, _ = (jnp.asarray(a) for a in inputs(rng, 30, 3))
    y_whole, x_whole = ssm(u, gaps)
    state, pieces = None, []
    for start, stop in [(0, 13), (13, 30)]:
        y, state = ssm(u[start:stop], gaps[start:stop], state=state)
        pieces.append(y)
    np.testing.assert_allclose(jnp.concatenate(pieces), y_whole, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state, x_whole, rtol=1e-12, atol=1e-12)
    state = ssm.init_state()
    for k in range(30):
        state, y_k = ssm.step(state, u[k], gaps[k])
        np.testing.assert_allclose(y_k, y_whole[k], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state, x_whole, rtol=1e-10, atol=1e-12)


def test_selected_steps_formula(x64):
    """softplus(W u + softplus⁻¹(Δ)) for one step and many, against numpy;
    Δ itself when W = 0, for tiny and large Δ."""
    rng = np.random.default_rng(6)
    delta = np.array([1e-6, 1e-3, 0.1, 1.0, 30.0])
    weight, u = rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    want = np.logaddexp(0.0, u @ weight.T + np.log(np.expm1(delta)))
    np.testing.assert_allclose(selected_steps(jnp.asarray(weight), jnp.asarray(delta), jnp.asarray(u)), want, rtol=1e-12)
    np.testing.assert_allclose(selected_steps(jnp.asarray(weight), jnp.asarray(delta), jnp.asarray(u[0])), want[0], rtol=1e-12)
    unselected = selected_steps(jnp.zeros((5, 3)), jnp.asarray(delta), jnp.asarray(u))
    np.testing.assert_allclose(unselected, np.tile(delta, (7, 1)), rtol=1e-13)


def test_bad_options_raise(getkey):
    with pytest.raises(ValueError, match="selective must be one of"):
        S5SSM(3, 4, selective="gated", key=getkey())
    with pytest.raises(ValueError, match="input_hold='gap'"):
        S5SSM(3, 4, selective="split", input_hold="unit", key=getkey())
    ssm = S5SSM(3, 4, selective="scaled", key=getkey())
    with pytest.raises(ValueError, match="pass u"):
        ssm.discretise(jnp.ones(5))
    with pytest.raises(ValueError, match="selected steps are needed"):
        irregular_scan(ssm.lam, jnp.ones(4), jnp.ones(5), jnp.ones(5, bool), jnp.ones((5, 4), jnp.complex64), selective="scaled")
    with pytest.raises(ValueError, match="selective"):
        S5Regressor(selective="mamba").fit([np.ones((3, 1))], [1.0])


@pytest.mark.parametrize("selective", SELECTIVE)
def test_estimators_and_the_forecaster_take_the_option(selective):
    rng = np.random.default_rng(7)
    times = [np.cumsum(rng.exponential(1.0, n)) for n in (12, 20, 7, 15)]
    X = [np.sin(t)[:, None] for t in times]
    y = np.array([x.mean() for x in X])
    model = S5Regressor(n_layers=1, d_model=4, state_size=4, max_epochs=2, selective=selective, random_state=0)
    pred = model.fit(X, y, times=times).predict(X, times=times)
    assert pred.shape == (4,) and np.isfinite(pred).all()
    assert model._architecture_["selective"] == selective  # a warm start with another selection cannot continue
    assert all(block.ssm.selective == selective for block in model.model_.blocks)
    assert Forecaster(selective=selective).get_params()["selective"] == selective
    assert Forecaster().get_params()["selective"] is None
