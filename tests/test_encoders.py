"""Per-step encoders: the pendulum CNN against a naive numpy reference."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from s5ts.nn._encoders import IdentityEncoder, PendulumCNN, _conv_rows, make_encoder


def _conv_reference(x, weight, bias, stride, padding):
    """Cross-correlation like PyTorch/Equinox: x (C, H, W), weight (O, C, k, k)."""
    out_channels, _, k, _ = weight.shape
    x = np.pad(x, ((0, 0), (padding, padding), (padding, padding)))
    height = (x.shape[1] - k) // stride + 1
    width = (x.shape[2] - k) // stride + 1
    out = np.zeros((out_channels, height, width))
    for o in range(out_channels):
        for i in range(height):
            for j in range(width):
                patch = x[:, i * stride : i * stride + k, j * stride : j * stride + k]
                out[o, i, j] = np.sum(patch * weight[o]) + bias[o]
    return out


def _pool_reference(x):
    channels, height, width = x.shape
    x = x[:, : height // 2 * 2, : width // 2 * 2]
    return x.reshape(channels, height // 2, 2, width // 2, 2).max(axis=(2, 4))


def _cnn_reference(cnn, frame):
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), eqx.filter(cnn, eqx.is_array))
    h = frame.reshape(1, 24, 24)
    h = _pool_reference(np.maximum(_conv_reference(h, p.conv1.weight, p.conv1.bias.reshape(-1), 1, 2), 0))
    h = _pool_reference(np.maximum(_conv_reference(h, p.conv2.weight, p.conv2.bias.reshape(-1), 2, 1), 0))
    assert h.shape == (12, 3, 3)  # flatten size 108, channel-major
    return np.maximum(p.linear.weight @ h.reshape(-1) + p.linear.bias, 0)


def test_pendulum_cnn_matches_naive_reference():
    cnn = PendulumCNN(key=jax.random.key(0))
    frames = np.random.default_rng(0).uniform(size=(3, 576))
    out = jax.vmap(cnn)(jnp.asarray(frames, jnp.float32))  # vmap over time, as the network does
    assert out.shape == (3, 30)
    for frame, got in zip(frames, np.asarray(out)):
        np.testing.assert_allclose(got, _cnn_reference(cnn, frame), rtol=1e-4, atol=1e-5)


def _cnn_with_xla_convolutions(cnn, frame):
    """The same CNN through Equinox's own layers (XLA's convolution, NCHW)."""
    h = frame.reshape(1, 24, 24)
    pool = eqx.nn.MaxPool2d(2, stride=2)
    h = pool(jax.nn.relu(cnn.conv1(h)))
    h = pool(jax.nn.relu(cnn.conv2(h)))
    return jax.nn.relu(cnn.linear(h.reshape(-1)))


@pytest.mark.parametrize("n_frames", [1, 5, 8, 13])
def test_pendulum_cnn_gradients_match_xla_convolution(x64, n_frames):
    """Forward and gradients of the matrix-product convolutions, on the
    batched call the network makes (`batch`: the frames in independent
    pieces, 13 frames split unevenly over 8), equal those of XLA's
    convolution vmapped over the frames, in float64."""
    cnn = PendulumCNN(key=jax.random.key(2), dtype=jnp.float64)
    frames = jnp.asarray(np.random.default_rng(1).uniform(size=(n_frames, 576)))

    def loss(model, encode):
        return jnp.sum(jnp.sin(encode(model, frames)))

    fast = eqx.filter_value_and_grad(loss)(cnn, lambda m, x: m.batch(x))
    slow = eqx.filter_value_and_grad(loss)(cnn, lambda m, x: jax.vmap(lambda f: _cnn_with_xla_convolutions(m, f))(x))
    assert fast[0].shape == ()
    np.testing.assert_allclose(fast[0], slow[0], rtol=1e-12)
    for got, want in zip(jax.tree.leaves(fast[1]), jax.tree.leaves(slow[1])):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("in_channels, size, padding, shape", [(1, 5, 2, (24, 24)), (3, 3, 1, (7, 9)), (2, 3, 0, (6, 5))])
def test_conv_rows_matches_naive_reference(in_channels, size, padding, shape):
    """The banded-matrix convolution on several channels, kernels and paddings."""
    conv = eqx.nn.Conv2d(in_channels, 4, kernel_size=size, padding=padding, key=jax.random.key(3))
    h = np.random.default_rng(2).normal(size=(*shape, in_channels)).astype(np.float32)
    got = _conv_rows(conv, jnp.asarray(h))
    want = _conv_reference(h.transpose(2, 0, 1).astype(np.float64), np.asarray(conv.weight, np.float64),
                           np.asarray(conv.bias, np.float64).reshape(-1), 1, padding)
    np.testing.assert_allclose(np.asarray(got), want.transpose(1, 2, 0), rtol=1e-4, atol=1e-5)


def test_conv_rows_refuses_what_it_does_not_compute():
    for conv in (eqx.nn.Conv2d(1, 2, 3, stride=2, key=jax.random.key(0)),
                 eqx.nn.Conv2d(1, 2, 3, dilation=2, key=jax.random.key(0))):
        with pytest.raises(ValueError, match="stride 1"):
            _conv_rows(conv, jnp.zeros((6, 6, 1)))


def test_pendulum_cnn_structure():
    cnn = PendulumCNN(key=jax.random.key(1))
    assert (cnn.in_features, cnn.out_features, cnn.image_shape) == (576, 30, (24, 24))
    assert cnn.linear.in_features == 108
    n_params = sum(a.size for a in jax.tree.leaves(eqx.filter(cnn, eqx.is_inexact_array)))
    assert n_params == (1 * 12 * 25 + 12) + (12 * 12 * 9 + 12) + (108 * 30 + 30) == 4890
    assert PendulumCNN(out_features=7, key=jax.random.key(1))(jnp.zeros(576)).shape == (7,)


def test_identity_encoder():
    enc = IdentityEncoder(4)
    x = jnp.arange(4.0)
    assert (enc.in_features, enc.out_features) == (4, 4)
    np.testing.assert_array_equal(enc(x), x)
    with pytest.raises(ValueError, match="in_features"):
        IdentityEncoder(0)


def test_make_encoder():
    key = jax.random.key(0)
    assert isinstance(make_encoder("identity", 3, key=key), IdentityEncoder)
    assert isinstance(make_encoder("pendulum_cnn", 576, key=key), PendulumCNN)
    with pytest.raises(ValueError, match="identity.*pendulum_cnn"):
        make_encoder("resnet", 3, key=key)
    with pytest.raises(ValueError, match="576.*in_features=100"):
        make_encoder("pendulum_cnn", 100, key=key)
