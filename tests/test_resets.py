"""Resets (`S5SSM(..., reset=)`, `irregular_scan(reset=)`): several ragged
series end to end in one row, each starting at a reset, give each series
the outputs, final state and gradients of its own run, in float64 to
1e-12, for S5 and its selective variants, forward and bidirectional, on the
fused sequential scan and the associative one; a reset mid-series equals a
fresh run from that step; padding after the packed series does not leak."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_selective import with_weight

from conftest import float64_module, unchecked
from s5ts.data import pack_rows, pad_batch
from s5ts.nn import S5SSM, IdentityEncoder, S5Block, SequenceNetwork, backward_gaps, n_summaries, pooled_width
from s5ts.nn._irregular_scan import irregular_scan

LENGTHS = (7, 1, 12)  # a one-step series in the middle
PADDING = 4


def layer(getkey, rng, selective, bidirectional, scan):
    ssm = S5SSM(3, 4, 2, bidirectional=bidirectional, scan=scan, selective=selective, key=getkey())
    if selective is not None:
        ssm = with_weight(ssm, rng)
    return float64_module(ssm)


def series(rng):
    """Each series' inputs and gaps (its first gap is its own first gap)."""
    return [(rng.normal(size=(n, 3)), rng.exponential(2.0, size=n)) for n in LENGTHS]


def packed(parts, padding=PADDING, rng=None):
    """One row: the series end to end, then `padding` junk steps masked out."""
    u = np.concatenate([p[0] for p in parts])
    gaps = np.concatenate([p[1] for p in parts])
    reset = np.zeros(len(gaps), bool)
    reset[np.cumsum([0] + [len(p[1]) for p in parts[:-1]])] = True
    mask = np.ones(len(gaps), bool)
    if padding:
        junk = rng if rng is not None else np.random.default_rng(0)
        u = np.concatenate([u, junk.normal(size=(padding, 3)) * 100])
        gaps = np.concatenate([gaps, junk.uniform(0, 50, padding)])
        reset = np.concatenate([reset, np.zeros(padding, bool)])
        mask = np.concatenate([mask, np.zeros(padding, bool)])
    return tuple(jnp.asarray(a) for a in (u, gaps, mask, reset))


@pytest.mark.parametrize("selective", [None, "scaled", "split"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("scan", ["sequential", "associative"])
def test_series_packed_with_resets_equal_their_own_runs(x64, getkey, selective, bidirectional, scan):
    rng = np.random.default_rng(1)
    ssm = layer(getkey, rng, selective, bidirectional, scan)
    parts = series(rng)
    u, gaps, mask, reset = packed(parts, rng=rng)
    y, states = ssm.with_states(u, gaps, mask, reset=reset)
    start = 0
    for u_s, gaps_s in parts:
        y_s, states_s = ssm.with_states(jnp.asarray(u_s), jnp.asarray(gaps_s))
        stop = start + len(gaps_s)
        np.testing.assert_allclose(y[start:stop], y_s, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(states[start:stop], states_s, rtol=1e-12, atol=1e-12)
        start = stop


@pytest.mark.parametrize("selective", [None, "split"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("scan", ["sequential", "associative"])
def test_gradients_of_a_packed_row_are_those_of_the_separate_runs(x64, getkey, selective, bidirectional, scan):
    """The loss summed over the packed series has the gradient (parameters
    and inputs) of the same loss summed over separate runs: one series'
    steps never reach another's through the state or its adjoint."""
    rng = np.random.default_rng(2)
    ssm = layer(getkey, rng, selective, bidirectional, scan)
    parts = series(rng)
    u, gaps, mask, reset = packed(parts, rng=rng)
    weights = jnp.asarray(rng.normal(size=u.shape))

    def packed_loss(ssm, u):
        y, _ = ssm(u, gaps, mask, reset=reset)
        return jnp.sum(jnp.where(mask[:, None], y * weights, 0.0) ** 2)

    def separate_loss(ssm, u):
        total, start = 0.0, 0
        for _, gaps_s in parts:
            stop = start + len(gaps_s)
            y, _ = ssm(u[start:stop], jnp.asarray(gaps_s))
            total = total + jnp.sum((y * weights[start:stop]) ** 2)
            start = stop
        return total

    value, (g_ssm, g_u) = jax.value_and_grad(packed_loss, argnums=(0, 1))(ssm, u)
    expected, (e_ssm, e_u) = jax.value_and_grad(separate_loss, argnums=(0, 1))(ssm, u)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    for got, want in zip(jax.tree.leaves(eqx.filter(g_ssm, eqx.is_inexact_array)),
                         jax.tree.leaves(eqx.filter(e_ssm, eqx.is_inexact_array))):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    n_real = sum(LENGTHS)
    np.testing.assert_allclose(g_u[:n_real], e_u[:n_real], rtol=1e-10, atol=1e-12)
    assert np.all(g_u[n_real:] == 0)


@pytest.mark.parametrize("scan", ["sequential", "associative"])
def test_a_reset_equals_a_fresh_run_from_that_step(x64, getkey, scan):
    """Whatever the state carried in and the steps before it, a reset at
    step k gives from k on the outputs of a fresh run of steps k, k+1, ...;
    before k, the run without the reset."""
    rng = np.random.default_rng(3)
    ssm = layer(getkey, rng, "scaled", False, scan)
    u, gaps = jnp.asarray(rng.normal(size=(30, 3))), jnp.asarray(rng.exponential(2.0, size=30))
    carried = jnp.asarray(rng.normal(size=4) + 1j * rng.normal(size=4))
    reset = jnp.arange(30) == 11
    y, x_last = ssm(u, gaps, state=carried, reset=reset)
    y_plain, _ = ssm(u, gaps, state=carried)
    y_fresh, x_fresh = ssm(u[11:], gaps[11:])
    np.testing.assert_allclose(y[:11], y_plain[:11], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y[11:], y_fresh, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x_last, x_fresh, rtol=1e-12, atol=1e-12)


def test_a_reset_on_the_first_step_drops_the_carried_state(x64, getkey):
    rng = np.random.default_rng(4)
    ssm = layer(getkey, rng, None, False, "sequential")
    u, gaps = jnp.asarray(rng.normal(size=(9, 3))), jnp.asarray(rng.exponential(2.0, size=9))
    carried = jnp.asarray(rng.normal(size=4) + 1j * rng.normal(size=4))
    first = jnp.arange(9) == 0

    def loss(state):
        return jnp.sum(ssm(u, gaps, state=state, reset=first)[0] ** 2)

    np.testing.assert_allclose(ssm(u, gaps, state=carried, reset=first)[0], ssm(u, gaps)[0], rtol=1e-12, atol=1e-12)
    assert np.all(jax.grad(loss, holomorphic=False)(carried) == 0)


def test_fused_scan_with_resets_matches_the_associative_scan_and_its_gradient(x64):
    rng = np.random.default_rng(5)
    lam = jnp.asarray(-rng.uniform(0.1, 1.0, 4) + 1j * rng.normal(size=4))
    timescale = jnp.asarray(rng.uniform(0.1, 1.0, 4))
    gaps = jnp.asarray(rng.exponential(1.0, 20))
    bu = jnp.asarray(rng.normal(size=(20, 4)) + 1j * rng.normal(size=(20, 4)))
    mask = jnp.arange(20) < 17
    reset = jnp.asarray(np.isin(np.arange(20), [0, 5, 6, 12]))
    for reverse in (False, True):
        def fused(lam, timescale, bu):
            x = irregular_scan(lam, timescale, gaps, mask, bu, reverse=reverse, reset=reset)
            return jnp.sum(jnp.abs(x) ** 2), x

        def reference(lam, timescale, bu):
            lam_bar = jnp.exp(lam[None] * (timescale[None] * gaps[:, None]).astype(lam.dtype))
            b = jnp.where(mask[:, None], (lam_bar - 1) / lam[None] * bu, 0.0)
            lam_bar = jnp.where(reset[:, None], 0.0, jnp.where(mask[:, None], lam_bar, 1.0))
            order = range(19, -1, -1) if reverse else range(20)
            x, states = jnp.zeros(4, bu.dtype), [None] * 20
            for k in order:
                x = lam_bar[k] * x + b[k]
                states[k] = x
            x = jnp.stack(states)
            return jnp.sum(jnp.abs(x) ** 2), x

        (v, x), g = jax.value_and_grad(fused, argnums=(0, 1, 2), has_aux=True)(lam, timescale, bu)
        (v_ref, x_ref), g_ref = jax.value_and_grad(reference, argnums=(0, 1, 2), has_aux=True)(lam, timescale, bu)
        np.testing.assert_allclose(x, x_ref, rtol=1e-12, atol=1e-12)
        for a, b in zip(g, g_ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_backward_gaps_of_packed_series():
    """Each series' last step takes its own first gap, as when run alone."""
    gaps = jnp.array([1.0, 2.0, 3.0, 5.0, 6.0, 9.0])
    mask = jnp.array([True, True, True, True, True, False])
    reset = jnp.array([True, False, False, True, False, False])
    np.testing.assert_allclose(backward_gaps(gaps, mask, reset), [2.0, 3.0, 1.0, 6.0, 5.0, 0.0])
    np.testing.assert_allclose(backward_gaps(gaps, mask, jnp.zeros(6, bool)), backward_gaps(gaps, mask))


def test_a_block_passes_resets_to_its_layer(x64, getkey):
    rng = np.random.default_rng(6)
    block = float64_module(S5Block(3, 4, 2, key=getkey()))
    parts = series(rng)
    u, gaps, mask, reset = packed(parts, rng=rng)
    x, _ = block(u, gaps, mask, reset=reset)
    start = 0
    for u_s, gaps_s in parts:
        stop = start + len(gaps_s)
        np.testing.assert_allclose(x[start:stop], block(jnp.asarray(u_s), jnp.asarray(gaps_s))[0],
                                   rtol=1e-12, atol=1e-12)
        start = stop


def test_a_reset_of_the_wrong_shape_is_named(getkey):
    ssm = S5SSM(3, 4, 2, key=getkey())
    with pytest.raises(ValueError, match="reset"):
        unchecked(S5SSM.with_states)(ssm, jnp.ones((5, 3)), jnp.ones(5), reset=jnp.zeros(4, bool))
    with pytest.raises(ValueError, match="reset"):
        unchecked(irregular_scan)(ssm.lam, jnp.ones(4), jnp.ones(5), jnp.ones(5, bool), jnp.ones((5, 4), jnp.complex64),
                       reset=jnp.zeros(3, bool))


@pytest.mark.parametrize(
    "pooling,summaries", [("max", False), ("mean", False), ("last", False), ("max_mean", False), ("max", True)]
)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_network_on_packed_rows_equals_it_on_padded_rows(x64, getkey, pooling, summaries, bidirectional):
    """`SequenceNetwork.packed` on series laid out by `pack_rows` gives each
    series the pooled output (its summary features included), and the loss
    gradient, of `batch` on the same series padded one per row."""
    rng = np.random.default_rng(7)
    blocks = [S5Block(8, 4, 2, bidirectional=bidirectional, key=getkey()) for _ in range(2)]
    head = eqx.nn.Linear(pooled_width(pooling, 8) + (n_summaries(3) if summaries else 0), 2, key=getkey())
    net = float64_module(SequenceNetwork(IdentityEncoder(3), blocks, head, pooling=pooling, summaries=summaries,
                                         key=getkey()))
    lengths = [9, 3, 14, 1, 6, 11]
    data = [(rng.normal(size=(n, 3)), rng.exponential(2.0, size=n)) for n in lengths]
    u_pad, mask_pad = pad_batch([d[0] for d in data], 16)
    gaps_pad, _ = pad_batch([d[1] for d in data], 16)
    rows = pack_rows(lengths, 20)
    assert len(rows) < len(lengths)
    slots = max(len(r) for r in rows)
    u_rows = [np.concatenate([data[i][0] for i in r]) for r in rows]
    gap_rows = [np.concatenate([data[i][1] for i in r]) for r in rows]
    id_rows = [np.concatenate([np.full(lengths[i], k) for k, i in enumerate(r)]) for r in rows]
    u_pk, mask_pk = pad_batch(u_rows, 20)
    gaps_pk, _ = pad_batch(gap_rows, 20)
    ids_pk, _ = pad_batch(id_rows, 20, fill=-1.0)
    targets = jnp.asarray(rng.normal(size=(len(lengths), 2)))
    where = [(r, k) for r, row in enumerate(rows) for k in range(len(row))]  # each series' (row, slot) ...
    series = [i for row in rows for i in row]  # ... and its index

    def padded_loss(net):
        return jnp.sum((net.batch(jnp.asarray(u_pad), jnp.asarray(gaps_pad), jnp.asarray(mask_pad)) - targets) ** 2)

    def packed_outputs(net):
        out = net.packed(jnp.asarray(u_pk), jnp.asarray(gaps_pk), jnp.asarray(mask_pk),
                         jnp.asarray(ids_pk.astype(int)), slots)
        assert out.shape == (len(rows), slots, 2)
        return jnp.stack([out[r, k] for r, k in where])

    def packed_loss(net):
        return jnp.sum((packed_outputs(net) - targets[np.asarray(series)]) ** 2)

    np.testing.assert_allclose(packed_outputs(net),
                               net.batch(jnp.asarray(u_pad), jnp.asarray(gaps_pad), jnp.asarray(mask_pad))[np.asarray(series)],
                               rtol=1e-12, atol=1e-12)
    g_packed, g_padded = eqx.filter_grad(packed_loss)(net), eqx.filter_grad(padded_loss)(net)
    for got, want in zip(jax.tree.leaves(eqx.filter(g_packed, eqx.is_inexact_array)),
                         jax.tree.leaves(eqx.filter(g_padded, eqx.is_inexact_array))):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_packed_needs_a_pooling_and_rows_must_hold_every_series(getkey):
    net = SequenceNetwork(IdentityEncoder(3), [S5Block(8, 4, 2, key=getkey())], eqx.nn.Linear(8, 2, key=getkey()),
                          pooling="none", key=getkey())
    with pytest.raises(ValueError, match="pooling"):
        net.packed(jnp.ones((1, 4, 3)), jnp.ones((1, 4)), jnp.ones((1, 4), bool), jnp.zeros((1, 4), int), 1)
    with pytest.raises(ValueError, match="row_length=8"):
        pack_rows([5, 9], 8)
    rows = pack_rows([5, 3, 4, 2, 8, 1], 8)
    assert sorted(np.concatenate(rows).tolist()) == list(range(6))
    assert all(sum([5, 3, 4, 2, 8, 1][i] for i in r) <= 8 for r in rows)
