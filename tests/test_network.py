"""Blocks and the sequence network: padding invariance, step/chunk
equivalence, pooling, dropout."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import float64_module
from s5ts.nn import (
    ACTIVATIONS,
    GaussianHead,
    IdentityEncoder,
    PendulumCNN,
    S5Block,
    SequenceNetwork,
    make_activation,
    masked_last,
    masked_max,
    masked_max_mean,
    masked_mean,
    pooled_width,
)


def make_network(getkey, *, pooling="none", bidirectional=False, n_extra=0, activation="half_glu", prenorm=False, dropout=0.0):
    blocks = [
        S5Block(8, 4, 2, bidirectional=bidirectional, activation=activation, prenorm=prenorm, dropout=dropout, key=getkey())
        for _ in range(2)
    ]
    return SequenceNetwork(
        IdentityEncoder(3), blocks, GaussianHead(pooled_width(pooling, 8), 2, 8, key=getkey()), n_extra=n_extra,
        pooling=pooling, key=getkey(),
    )


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("prenorm", [False, True])
def test_step_mode_equals_sequence_mode(x64, getkey, activation, prenorm):
    net = float64_module(make_network(getkey, activation=activation, prenorm=prenorm))
    rng = np.random.default_rng(0)
    u = jnp.asarray(rng.normal(size=(12, 3)))
    gaps = jnp.asarray(rng.exponential(1.0, 12))
    mean_seq, var_seq = net(u, gaps)
    state = net.init_state()
    for k in range(12):
        state, (mean_k, var_k) = net.step(state, u[k], gaps[k])
        np.testing.assert_allclose(mean_k, mean_seq[k], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(var_k, var_seq[k], rtol=1e-9, atol=1e-10)


def test_chunked_run_equals_whole(x64, getkey):
    net = float64_module(make_network(getkey))
    rng = np.random.default_rng(1)
    u = jnp.asarray(rng.normal(size=(20, 3)))
    gaps = jnp.asarray(rng.exponential(1.0, 20))
    (mean_whole, _), state_whole = net.run(u, gaps)
    (mean_a, _), state = net.run(u[:9], gaps[:9])
    (mean_b, _), state = net.run(u[9:], gaps[9:], state=state)
    np.testing.assert_allclose(jnp.concatenate([mean_a, mean_b]), mean_whole, rtol=1e-9, atol=1e-10)
    for s, w in zip(state, state_whole):
        np.testing.assert_allclose(s, w, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("pooling", ["none", "mean", "max", "last", "max_mean"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_invariance_and_nan_padding(getkey, pooling, bidirectional):
    net = make_network(getkey, pooling=pooling, bidirectional=bidirectional, n_extra=1)
    rng = np.random.default_rng(2)
    u = rng.normal(size=(7, 3))
    gaps = rng.exponential(1.0, 7)
    extra = gaps[:, None]
    outputs = []
    for pad in [0, 3, 9]:
        mask = jnp.arange(7 + pad) < 7
        u_pad = jnp.asarray(np.concatenate([u, np.full((pad, 3), np.nan)]))
        gaps_pad = jnp.asarray(np.concatenate([gaps, np.full(pad, np.nan)]))
        extra_pad = jnp.asarray(np.concatenate([extra, np.full((pad, 1), np.nan)]))
        mean, var = net(u_pad, gaps_pad, mask, extra_pad)
        outputs.append(mean[:7] if pooling == "none" else mean)

        def loss(net):
            m, v = net(u_pad, gaps_pad, mask, extra_pad)
            if pooling == "none":
                m, v = m[:7], v[:7]
            return jnp.sum(m**2 + v)

        grads = eqx.filter_grad(loss)(net)
        assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))
    for out in outputs[1:]:
        np.testing.assert_allclose(out, outputs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooling", ["none", "mean", "max", "max_mean"])
def test_batch_equals_vmap_of_the_call(getkey, pooling):
    # `batch` runs the encoder on all B·L steps in one vmap (the pendulum
    # CNN: rank-4 image batches for XLA); the outputs, dropout draws and
    # gradients are those of the per-sequence call, vmapped.
    blocks = [S5Block(8, 4, 2, dropout=0.3, key=getkey()) for _ in range(2)]
    net = SequenceNetwork(
        PendulumCNN(out_features=6, key=getkey()), blocks, GaussianHead(pooled_width(pooling, 8), 2, 8, key=getkey()),
        n_extra=1, pooling=pooling, key=getkey(),
    )
    rng = np.random.default_rng(4)
    u = jnp.asarray(rng.uniform(size=(3, 5, 576)), jnp.float32)
    gaps = jnp.asarray(rng.exponential(1.0, (3, 5)), jnp.float32)
    mask = jnp.asarray(np.arange(5) < np.array([[5], [3], [1]]))
    u = jnp.where(mask[..., None], u, jnp.nan)  # padding read as data would show
    extra = gaps[..., None]
    keys = jax.random.split(getkey(), 3)

    def vmapped(net):
        return jax.vmap(lambda u, g, m, e, k: net(u, g, m, e, key=k, inference=False))(u, gaps, mask, extra, keys)

    def batched(net):
        return net.batch(u, gaps, mask, extra, keys=keys, inference=False)

    for a, b in zip(jax.tree.leaves(batched(net)), jax.tree.leaves(vmapped(net))):
        if pooling == "none":
            a, b = a[mask], b[mask]
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def loss(f):
        return lambda net: sum(
            jnp.sum(jnp.where(mask[..., None], x, 0.0) ** 2) if pooling == "none" else jnp.sum(x**2) for x in f(net)
        )

    grads = [jax.tree.leaves(eqx.filter_grad(loss(f))(net)) for f in (batched, vmapped)]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_masked_pooling():
    h = jnp.arange(12.0).reshape(4, 3)
    mask = jnp.array([True, True, False, False])
    np.testing.assert_allclose(masked_mean(h, mask), h[:2].mean(0))
    np.testing.assert_allclose(masked_last(h, mask), h[1])
    # max: padding never wins, even when it is larger; no step observed: 0.
    h = jnp.asarray([[-5.0, 1.0, -1.0], [-3.0, 0.5, -2.0], [9.0, 9.0, 9.0]])
    np.testing.assert_allclose(masked_max(h, jnp.array([True, True, False])), [-3.0, 1.0, -1.0])
    np.testing.assert_allclose(masked_max(h, jnp.zeros(3, bool)), [0.0, 0.0, 0.0])
    grad = jax.grad(lambda h: jnp.sum(masked_max(h, jnp.array([True, True, False]))))(h)
    np.testing.assert_allclose(grad, [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    # max_mean: the max, then the mean of the observed steps (a float64 loop).
    rng = np.random.default_rng(5)
    h, mask = rng.normal(size=(6, 4)), np.array([True, False, True, True, False, False])
    h[~mask] = 1e6  # padding never read
    expected = [max(h[k, j] for k in range(6) if mask[k]) for j in range(4)]
    expected += [sum(h[k, j] for k in range(6) if mask[k]) / mask.sum() for j in range(4)]
    np.testing.assert_allclose(masked_max_mean(jnp.asarray(h, jnp.float32), jnp.asarray(mask)), expected, rtol=1e-6)
    assert pooled_width("max_mean", 8) == 16 and pooled_width("max", 8) == pooled_width("none", 8) == 8


def test_dropout_needs_key_only_in_training(getkey):
    net = make_network(getkey, dropout=0.5)
    u, gaps = jnp.ones((5, 3)), jnp.ones(5)
    a = net(u, gaps, key=getkey(), inference=False)[0]
    b = net(u, gaps, key=getkey(), inference=False)[0]
    assert not np.allclose(a, b)
    np.testing.assert_allclose(net(u, gaps)[0], net(u, gaps)[0])


def test_errors(getkey):
    with pytest.raises(ValueError, match="pooling"):
        make_network(getkey, pooling="median")
    net = make_network(getkey, pooling="mean")
    with pytest.raises(ValueError, match="step mode"):
        net.step(net.init_state(), jnp.ones(3), jnp.asarray(1.0))
    with pytest.raises(ValueError, match="extra"):
        make_network(getkey, n_extra=2)(jnp.ones((4, 3)), jnp.ones(4))
    with pytest.raises(ValueError, match="activation"):
        S5Block(4, 2, 1, activation="relu", key=getkey())


def _dense(linear, x):
    return np.asarray(linear.weight) @ x + np.asarray(linear.bias)


def _gelu(x):
    # the tanh form: jax.nn.gelu's default, and Flax's (the official S5 code)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_match_their_formulas(x64, getkey, name):
    """Each activation against its definition in numpy (float64)."""
    module = float64_module(make_activation(name, 5, key=getkey()))
    x = np.random.default_rng(3).normal(size=5) * 2.0
    expected = {
        "gelu": lambda: _gelu(x),
        "glu": lambda: _dense(module.value, _gelu(x)) * _sigmoid(_dense(module.gate, _gelu(x))),
        "half_glu": lambda: _gelu(x) * _sigmoid(_dense(module.gate, _gelu(x))),
        "half_glu2": lambda: x * _sigmoid(_dense(module.gate, _gelu(x))),
    }[name]()
    np.testing.assert_allclose(module(jnp.asarray(x)), expected, rtol=1e-12, atol=1e-12)


def test_network_built_under_x64_is_float64_end_to_end(x64, getkey):
    from s5ts.nn import PendulumCNN, make_blocks, make_encoder

    blocks = make_blocks(2, 8, 4, 2, activation="glu", key=getkey())
    net = float64_module(
        SequenceNetwork(make_encoder("identity", 3, key=getkey()), blocks, GaussianHead(8, 2, 8, key=getkey()), key=getkey())
    )
    float64_module(PendulumCNN(key=getkey()))
    mean, var = net(jnp.ones((6, 3)), jnp.ones(6))
    assert mean.dtype == var.dtype == jnp.float64
    kept = eqx.filter(make_blocks(1, 8, 4, key=getkey(), dtype=jnp.float32), eqx.is_array)
    assert {str(leaf.dtype) for leaf in jax.tree.leaves(kept)} == {"float32"}
