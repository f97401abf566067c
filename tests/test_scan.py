"""linear_scan against a naive float64 loop, its gradients against autodiff
of the loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import unchecked
from s5ts.nn import linear_scan
from s5ts.nn._scan import _associative_scan, _sequential_scan

METHODS = ["associative", "sequential", "auto"]


def naive_scan(a, b, reverse=False):
    a, b = np.asarray(a), np.asarray(b)
    order = range(len(a) - 1, -1, -1) if reverse else range(len(a))
    x = np.zeros_like(b)
    state = np.zeros_like(b[0])
    for k in order:
        state = a[k] * state + b[k]
        x[k] = state
    return x


def random_complex(rng, shape, scale=1.0):
    return scale * (rng.normal(size=shape) + 1j * rng.normal(size=shape))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [1, 2, 7, 64])
def test_matches_loop_float64(x64, method, reverse, length):
    rng = np.random.default_rng(length)
    a = random_complex(rng, (length, 5), 0.6)
    b = random_complex(rng, (length, 5))
    got = linear_scan(jnp.asarray(a), jnp.asarray(b), method, reverse=reverse)
    assert got.dtype == jnp.complex128
    np.testing.assert_allclose(got, naive_scan(a, b, reverse), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_matches_loop_float32(method):
    rng = np.random.default_rng(1)
    a = random_complex(rng, (300, 16), 0.7)
    b = random_complex(rng, (300, 16))
    got = linear_scan(jnp.asarray(a, jnp.complex64), jnp.asarray(b, jnp.complex64), method)
    want = naive_scan(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("method", ["associative", "sequential"])
@pytest.mark.parametrize("reverse", [False, True])
def test_custom_vjp_matches_autodiff(x64, method, reverse):
    rng = np.random.default_rng(2)
    a = jnp.asarray(random_complex(rng, (33, 4), 0.5))
    b = jnp.asarray(random_complex(rng, (33, 4)))
    cotangent = jnp.asarray(random_complex(rng, (33, 4)))
    plain = _sequential_scan if method == "sequential" else _associative_scan

    def reference(a, b):
        if reverse:
            return plain(a[::-1], b[::-1])[::-1]
        return plain(a, b)

    _, vjp_fast = jax.vjp(lambda a, b: linear_scan(a, b, method, reverse=reverse), a, b)
    _, vjp_ref = jax.vjp(reference, a, b)
    for fast, ref in zip(vjp_fast(cotangent), vjp_ref(cotangent)):
        np.testing.assert_allclose(fast, ref, rtol=1e-10, atol=1e-12)


def test_real_gradient_of_real_loss(x64):
    """A real loss of a complex scan: gradient w.r.t. real parameters matches
    finite differences (guards the complex cotangent convention)."""
    rng = np.random.default_rng(3)
    phase = jnp.asarray(rng.normal(size=(20, 3)))
    b = jnp.asarray(random_complex(rng, (20, 3)))

    def loss(phase):
        a = 0.9 * jnp.exp(jax.lax.complex(jnp.zeros_like(phase), phase))
        return jnp.sum(jnp.abs(linear_scan(a, b, "sequential")) ** 2)

    grad = jax.grad(loss)(phase)
    eps = 1e-6
    direction = jnp.asarray(rng.normal(size=phase.shape))
    fd = (loss(phase + eps * direction) - loss(phase - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(jnp.sum(grad * direction), fd, rtol=1e-6)


def test_vmap_batches_independently():
    rng = np.random.default_rng(4)
    a = jnp.asarray(rng.uniform(0, 1, (3, 10, 2)), jnp.float32)
    b = jnp.asarray(rng.normal(size=(3, 10, 2)), jnp.float32)
    batched = jax.vmap(lambda a, b: linear_scan(a, b, "sequential"))(a, b)
    for i in range(3):
        np.testing.assert_allclose(batched[i], naive_scan(a[i], b[i]), rtol=1e-5, atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="same shape"):
        unchecked(linear_scan)(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="scan method"):
        unchecked(linear_scan)(jnp.ones(3), jnp.ones(3), "fast")
