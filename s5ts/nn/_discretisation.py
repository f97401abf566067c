r"""Discretisation of the diagonal continuous-time system
$\dot x = \Lambda x + \tilde B u$ over a per-step, per-state interval
$\Delta_{k,p} = \Delta_p g_k$ (timescale times the observation gap).

Each rule returns $(\bar\Lambda_k, w_k)$ so that
$x_k = \bar\Lambda_k \odot x_{k-1} + w_k \odot (\tilde B u_k)$; the input
weight is applied to the (L, P) projection $\tilde B u$, never to an
(L, P, H) $\bar B_k$.

A step of length 0 gives $\bar\Lambda = 1$, $w = 0$ under both rules, which is
what padded steps need: the state passes through unchanged.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Complex, Float


def complex_expm1(z: Complex[Array, "..."]) -> Complex[Array, "..."]:
    r"""$e^z - 1$ without cancellation for small $|z|$ (float32 matters here:
    gaps of 1e-6 would otherwise lose every digit of the input weight)."""
    x, y = jnp.real(z), jnp.imag(z)
    # e^x cos y - 1 = expm1(x) cos y - 2 sin²(y/2)
    real = jnp.expm1(x) * jnp.cos(y) - 2.0 * jnp.sin(0.5 * y) ** 2
    imag = jnp.exp(x) * jnp.sin(y)
    return jax.lax.complex(real, imag)


class Discretisation(eqx.Module):
    """How the continuous system becomes a discrete step."""

    @abc.abstractmethod
    def __call__(
        self, lam: Complex[Array, " P"], step: Float[Array, "*L P"]
    ) -> tuple[Complex[Array, "*L P"], Complex[Array, "*L P"]]:
        """Return (Λ̄, input weight) for step lengths `step` (≥ 0)."""


class ZOH(Discretisation):
    r"""Zero-order hold: $\bar\Lambda = e^{\Lambda\Delta}$,
    $w = (e^{\Lambda\Delta} - 1)/\Lambda$ (exact for inputs held constant
    over the step)."""

    def __call__(self, lam, step):
        z = lam * step
        return jnp.exp(z), complex_expm1(z) / lam


class Bilinear(Discretisation):
    r"""Bilinear (Tustin): $\bar\Lambda = (1 - \Delta\Lambda/2)^{-1}(1 + \Delta\Lambda/2)$,
    $w = (1 - \Delta\Lambda/2)^{-1}\Delta$."""

    def __call__(self, lam, step):
        half = 0.5 * lam * step
        inverse = 1.0 / (1.0 - half)
        return inverse * (1.0 + half), inverse * step


DISCRETISATIONS = {"zoh": ZOH, "bilinear": Bilinear}


def make_discretisation(name: str) -> Discretisation:
    """Map the user-facing name ("zoh" | "bilinear") to its rule."""
    try:
        return DISCRETISATIONS[name]()
    except KeyError:
        raise ValueError(
            f"discretization must be one of {sorted(DISCRETISATIONS)}, got {name!r}"
        ) from None
