"""The discretisation rules' maths against naive float64 references: e^z - 1
for tiny and large z, and the ZOH coefficients' hand-written derivative
against JAX's autodiff of the textbook formula."""

import cmath

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from s5ts.nn import ZOH, Bilinear, complex_expm1
from s5ts.nn._discretisation import zoh_coefficients


def expm1_reference(z: complex) -> complex:
    """e^z - 1 in float64: a Taylor series where exp(z) - 1 would cancel."""
    if abs(z) < 1e-3:
        return z + z**2 / 2 + z**3 / 6 + z**4 / 24
    return cmath.exp(z) - 1


@pytest.mark.parametrize("magnitude", [1e-9, 1e-6, 1e-3, 0.3, 3.0, 30.0])
def test_complex_expm1_float32_relative_error(magnitude):
    rng = np.random.default_rng(0)
    # Every direction, including near-imaginary z (cos y ≈ -1 when |y| ≈ π).
    angles = np.linspace(0.5 * np.pi, 1.5 * np.pi, 41)  # Re z ≤ 0, as for a stable Λ
    z = magnitude * np.exp(1j * angles) * rng.uniform(0.5, 1.0, angles.shape)
    got = np.asarray(complex_expm1(jnp.asarray(z, jnp.complex64)))
    want = np.array([expm1_reference(complex(v)) for v in z.astype(np.complex64).astype(np.complex128)])
    np.testing.assert_allclose(got, want, rtol=2e-6 if magnitude < 10 else 1e-5, atol=0)


def test_complex_expm1_near_pi():
    y = np.float32(np.pi) + np.array([-1e-3, 0.0, 1e-3], np.float32)
    got = np.asarray(complex_expm1(jax.lax.complex(jnp.zeros(3), jnp.asarray(y))))
    want = np.array([cmath.exp(1j * float(v)) - 1 for v in y])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def naive_zoh(lam, step):
    lam = jnp.broadcast_to(lam, step.shape)  # explicit: the tests run with strict promotion
    z = lam * step.astype(lam.dtype)
    return jnp.exp(z), (jnp.exp(z) - 1.0) / lam


def random_system(rng, n=16):
    lam = -rng.uniform(0.05, 2.0, n) + 1j * rng.uniform(-20, 20, n)
    step = rng.uniform(0.01, 3.0, (5, n))
    return jnp.asarray(lam), jnp.asarray(step)


def test_zoh_values_and_jvp_match_autodiff_float64(x64):
    rng = np.random.default_rng(1)
    lam, step = random_system(rng)
    d_lam = jnp.asarray(rng.normal(size=lam.shape) + 1j * rng.normal(size=lam.shape))
    d_step = jnp.asarray(rng.normal(size=step.shape))
    got_out, got_tangent = jax.jvp(zoh_coefficients, (lam, step), (d_lam, d_step))
    want_out, want_tangent = jax.jvp(naive_zoh, (lam, step), (d_lam, d_step))
    for got, want in zip(got_out + got_tangent, want_out + want_tangent):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_zoh_gradients_match_autodiff_float64(x64):
    rng = np.random.default_rng(2)
    lam, step = random_system(rng)
    weights = [jnp.asarray(rng.normal(size=step.shape) + 1j * rng.normal(size=step.shape)) for _ in range(2)]

    def loss(rule):
        def f(lam, step):
            lam_bar, w = rule(lam, step)
            return jnp.sum(jnp.real(weights[0] * lam_bar) + jnp.imag(weights[1] * w) ** 2)

        return f

    got = jax.grad(loss(zoh_coefficients), argnums=(0, 1))(lam, step)
    want = jax.grad(loss(naive_zoh), argnums=(0, 1))(lam, step)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("rule", [ZOH(), Bilinear()])
def test_zero_step_passes_state_through_with_finite_gradients(rule):
    lam = jnp.asarray([-0.5 + 3j, -1e-4 + 0j], jnp.complex64)
    lam_bar, weight = rule(lam, jnp.zeros(2))
    np.testing.assert_array_equal(np.asarray(lam_bar), 1.0)
    np.testing.assert_array_equal(np.asarray(weight), 0.0)
    grads = jax.grad(lambda lam, s: jnp.sum(jnp.abs(rule(lam, s)[1]) ** 2 + jnp.real(rule(lam, s)[0])), (0, 1))(
        lam, jnp.zeros(2)
    )
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
