"""The fused discretisation + scan against the unfused path (materialised
Λ̄, w and `linear_scan`), values and gradients, in float64."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import unchecked
from s5ts.nn import S5SSM
from s5ts.nn._discretisation import make_discretisation
from s5ts.nn._irregular_scan import irregular_scan
from s5ts.nn._scan import linear_scan


def unfused(lam, timescale, gaps, mask, bu, state, discretization, reverse):
    """The reference: (L, P) coefficients, then the custom-VJP linear scan."""
    lam_bar, weight = make_discretisation(discretization)(lam, timescale[None, :] * gaps[:, None])
    lam_bar = jnp.where(mask[:, None], lam_bar, 1.0)
    b = jnp.where(mask[:, None], weight * bu, 0.0)
    first = -1 if reverse else 0
    b = b.at[first].add(lam_bar[first] * state)
    return linear_scan(lam_bar, b, "sequential", reverse=reverse)


def problem(seed, length=23, size=5):
    rng = np.random.default_rng(seed)
    lam = -np.exp(rng.normal(size=size) - 1.0) + 1j * rng.normal(size=size) * 3
    log_timescale = rng.uniform(np.log(0.01), np.log(1.0), size)
    gaps = rng.exponential(size=length)
    mask = rng.uniform(size=length) > 0.25
    gaps = np.where(mask, gaps, 0.0)
    bu = rng.normal(size=(length, size)) + 1j * rng.normal(size=(length, size))
    state = rng.normal(size=size) + 1j * rng.normal(size=size)
    cotangent = rng.normal(size=(length, size)) + 1j * rng.normal(size=(length, size))
    as_jax = [jnp.asarray(v) for v in (lam.real, lam.imag, log_timescale, gaps, bu, state, cotangent)]
    return (*as_jax, jnp.asarray(mask))


CASES = [(d, r) for d in ("zoh", "bilinear") for r in (False, True)]


@pytest.mark.parametrize(("discretization", "reverse"), CASES)
def test_values_match_unfused(x64, discretization, reverse):
    lam_re, lam_im, log_ts, gaps, bu, state, _, mask = problem(0)
    lam = jax.lax.complex(lam_re, lam_im)
    ts = jnp.exp(log_ts)
    for init in (state, None):
        got = irregular_scan(lam, ts, gaps, mask, bu, init, discretization=discretization, reverse=reverse)
        want = unfused(lam, ts, gaps, mask, bu, jnp.zeros_like(state) if init is None else init, discretization, reverse)
        assert got.dtype == jnp.complex128
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    # masked steps really pass the state through
    prev = np.roll(np.asarray(got), 1 if not reverse else -1, axis=0)
    inner = np.where(~np.asarray(mask))[0]
    inner = inner[(inner > 0) & (inner < len(mask) - 1)]
    np.testing.assert_allclose(np.asarray(got)[inner], prev[inner], rtol=1e-12)


@pytest.mark.parametrize(("discretization", "reverse"), CASES)
def test_gradients_match_unfused(x64, discretization, reverse):
    lam_re, lam_im, log_ts, gaps, bu, state, cotangent, mask = problem(1)

    def wrap(scan):
        def f(lam_re, lam_im, log_ts, gaps, bu, state):
            lam = jax.lax.complex(lam_re, lam_im)
            return scan(lam, jnp.exp(log_ts), gaps, mask, bu, state)

        return f

    fused = wrap(lambda *a: irregular_scan(*a, discretization=discretization, reverse=reverse))
    reference = wrap(lambda *a: unfused(*a, discretization, reverse))
    args = (lam_re, lam_im, log_ts, gaps, bu, state)
    out_f, vjp_f = jax.vjp(fused, *args)
    out_r, vjp_r = jax.vjp(reference, *args)
    np.testing.assert_allclose(out_f, out_r, rtol=1e-10, atol=1e-10)
    names = ("lam_re", "lam_im", "log_timescale", "gaps", "bu", "state")
    for name, got, want in zip(names, vjp_f(cotangent), vjp_r(cotangent)):
        scale = max(float(np.abs(want).max()), 1.0)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * scale, err_msg=name)
    # masked steps get no gap gradient (their gap cannot matter)
    gaps_bar = vjp_f(cotangent)[3]
    assert np.all(np.asarray(gaps_bar)[~np.asarray(mask)] == 0.0)


def test_real_loss_gradient_matches_finite_differences(x64):
    """Guards the complex cotangent convention end to end."""
    lam_re, lam_im, log_ts, gaps, bu, state, _, mask = problem(2, length=15, size=3)

    def loss(params):
        lam_re, lam_im, log_ts = params
        x = irregular_scan(jax.lax.complex(lam_re, lam_im), jnp.exp(log_ts), gaps, mask, bu, state)
        return jnp.sum(jnp.abs(x) ** 2)

    params = (lam_re, lam_im, log_ts)
    grads = jax.grad(loss)(params)
    rng = np.random.default_rng(5)
    direction = tuple(jnp.asarray(rng.normal(size=p.shape)) for p in params)
    eps = 1e-6
    plus = tuple(p + eps * d for p, d in zip(params, direction))
    minus = tuple(p - eps * d for p, d in zip(params, direction))
    fd = (loss(plus) - loss(minus)) / (2 * eps)
    analytic = sum(jnp.sum(g * d) for g, d in zip(grads, direction))
    np.testing.assert_allclose(analytic, fd, rtol=1e-6)


def test_vmap_and_float32():
    lam_re, lam_im, log_ts, gaps, bu, state, _, mask = problem(3)
    lam = jax.lax.complex(lam_re, lam_im).astype(jnp.complex64)
    ts = jnp.exp(log_ts).astype(jnp.float32)
    gaps = gaps.astype(jnp.float32)
    bu = bu.astype(jnp.complex64)
    batch_gaps = jnp.stack([gaps, 2 * gaps])
    batch_bu = jnp.stack([bu, -bu])
    got = jax.vmap(lambda g, b: irregular_scan(lam, ts, g, mask, b))(batch_gaps, batch_bu)
    assert got.dtype == jnp.complex64
    for i in range(2):
        want = unfused(lam, ts, batch_gaps[i], mask, batch_bu[i], jnp.zeros_like(lam), "zoh", False)
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_ssm_sequential_matches_associative(x64, bidirectional):
    """S5SSM uses the fused path for the sequential scan and the unfused one
    for the associative scan: same outputs and parameter gradients."""
    key = jax.random.key(0)
    layers = [
        S5SSM(d_model=3, state_size=4, bidirectional=bidirectional, scan=scan, key=key)
        for scan in ("sequential", "associative")
    ]
    layers = [jax.tree_util.tree_map(lambda v: v.astype(jnp.float64), s) for s in layers]
    rng = np.random.default_rng(6)
    u = jnp.asarray(rng.normal(size=(17, 3)))
    gaps = jnp.asarray(rng.exponential(size=17))
    mask = jnp.asarray(np.arange(17) < 13)

    def loss(ssm):
        y, x_last = ssm(u, gaps, mask)
        return jnp.sum(y**2) + jnp.sum(jnp.abs(x_last) ** 2)

    (v_seq, g_seq), (v_assoc, g_assoc) = (jax.value_and_grad(loss)(s) for s in layers)
    np.testing.assert_allclose(v_seq, v_assoc, rtol=1e-10)
    for got, want in zip(jax.tree_util.tree_leaves(g_seq), jax.tree_util.tree_leaves(g_assoc)):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_bad_shapes():
    with pytest.raises(ValueError, match="bu must have shape"):
        unchecked(irregular_scan)(jnp.ones(3, jnp.complex64), jnp.ones(3), jnp.ones(4), jnp.ones(4, bool), jnp.ones((4, 2)))


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
@pytest.mark.parametrize("hold", ["unit", "mixed"])
def test_unit_input_hold_matches_unfused(x64, discretization, hold):
    """`input_hold="unit"`: Λ̄_k from the step Δ g_k, but every input weight
    from the unit step Δ; `"mixed"`: so for the odd states only (values and
    gradients against the materialised path)."""
    from s5ts.nn import make_input_hold
    from s5ts.nn._discretisation import step_coefficients

    lam_re, lam_im, log_ts, gaps, bu, state, cotangent, mask = problem(4)
    rule = make_discretisation(discretization)

    def reference(lam_re, lam_im, log_ts, gaps, bu, state):
        lam = jax.lax.complex(lam_re, lam_im)
        lam_bar, weight = step_coefficients(rule, lam, jnp.exp(log_ts), gaps, make_input_hold(hold))
        lam_bar = jnp.where(mask[:, None], lam_bar, 1.0)
        b = jnp.where(mask[:, None], weight * bu, 0.0)
        b = b.at[0].add(lam_bar[0] * state)
        return linear_scan(lam_bar, b, "sequential")

    def fused(lam_re, lam_im, log_ts, gaps, bu, state):
        lam = jax.lax.complex(lam_re, lam_im)
        return irregular_scan(lam, jnp.exp(log_ts), gaps, mask, bu, state, discretization=discretization,
                              input_hold=hold)

    lam = jax.lax.complex(lam_re, lam_im)
    weight = step_coefficients(rule, lam, jnp.exp(log_ts), gaps, make_input_hold(hold))[1]
    gap_weight = rule(lam, jnp.exp(log_ts)[None, :] * gaps[:, None])[1]
    unit = jnp.broadcast_to(rule(lam, jnp.exp(log_ts))[1], weight.shape)
    odd = np.arange(weight.shape[1]) % 2 == 1
    np.testing.assert_allclose(weight[:, odd], unit[:, odd])
    np.testing.assert_allclose(weight[:, ~odd], (unit if hold == "unit" else gap_weight)[:, ~odd])
    args = (lam_re, lam_im, log_ts, gaps, bu, state)
    out_f, vjp_f = jax.vjp(fused, *args)
    out_r, vjp_r = jax.vjp(reference, *args)
    np.testing.assert_allclose(out_f, out_r, rtol=1e-10, atol=1e-10)
    for got, want in zip(vjp_f(cotangent), vjp_r(cotangent)):
        scale = max(float(np.abs(want).max()), 1.0)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * scale)


def test_input_holds_agree_on_unit_gaps_and_differ_otherwise(x64):
    lam_re, lam_im, log_ts, gaps, bu, state, _, mask = problem(5)
    lam, ts = jax.lax.complex(lam_re, lam_im), jnp.exp(log_ts)
    ones = jnp.where(mask, 1.0, 0.0)
    run = lambda g, hold: irregular_scan(lam, ts, g, mask, bu, state, input_hold=hold)  # noqa: E731
    np.testing.assert_allclose(run(ones, "unit"), run(ones, "gap"), rtol=1e-12, atol=1e-12)
    assert not np.allclose(run(gaps, "unit"), run(gaps, "gap"))
    # "unit": a single impulse enters with the same weight whatever the gap before it
    impulse = jnp.zeros_like(bu).at[5].set(bu[5])
    no_state = jnp.zeros_like(state)
    first = irregular_scan(lam, ts, gaps, mask.at[5].set(True), impulse, no_state, input_hold="unit")[5]
    longer = irregular_scan(lam, ts, gaps.at[5].mul(7.0), mask.at[5].set(True), impulse, no_state, input_hold="unit")[5]
    np.testing.assert_allclose(first, longer, rtol=1e-12)
