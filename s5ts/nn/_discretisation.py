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
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Complex, Float


def _exp_and_expm1(z: Complex[Array, "..."]) -> tuple[Complex[Array, "..."], Complex[Array, "..."]]:
    r"""$(e^z, e^z - 1)$ from three real transcendentals (expm1 x, cos y,
    sin y), with $e^z - 1$ free of cancellation for small $|z|$ (float32
    matters here: gaps of 1e-6 would otherwise lose every digit of the input
    weight)."""
    x, y = jnp.real(z), jnp.imag(z)
    expm1_x, cos_y, sin_y = jnp.expm1(x), jnp.cos(y), jnp.sin(y)
    exp_x = expm1_x + 1.0
    # 1 - cos y: as sin²y / (1 + cos y) where that is stable (cos y > 0).
    one_minus_cos = jnp.where(cos_y > 0, sin_y * sin_y / (1.0 + jnp.abs(cos_y)), 1.0 - cos_y)
    imag = exp_x * sin_y
    # e^x cos y - 1 = expm1(x) cos y - (1 - cos y)
    return jax.lax.complex(exp_x * cos_y, imag), jax.lax.complex(expm1_x * cos_y - one_minus_cos, imag)


def scale_complex(z: Complex[Array, "..."], x: Float[Array, "..."]) -> Complex[Array, "..."]:
    """z · x for complex z and real x, broadcast against each other, as two
    real products: what complex × real means, written out, since strict
    dtype promotion (rightly) refuses to mix the kinds implicitly."""
    z, x = _broadcast(z, x)
    return jax.lax.complex(jnp.real(z) * x, jnp.imag(z) * x)


def _broadcast(*arrays: Array) -> list[Array]:
    """The arrays broadcast to one shape, explicitly (no implicit rank promotion)."""
    shape = jnp.broadcast_shapes(*(a.shape for a in arrays))
    return [jnp.broadcast_to(a, shape) for a in arrays]


def complex_expm1(z: Complex[Array, "..."]) -> Complex[Array, "..."]:
    r"""$e^z - 1$ without cancellation for small $|z|$."""
    return _exp_and_expm1(z)[1]


@jax.custom_jvp
def zoh_coefficients(lam: Complex[Array, " P"], step: Float[Array, "*L P"]):
    r"""$(e^{\Lambda\Delta}, (e^{\Lambda\Delta} - 1)/\Lambda)$.

    Its derivative is written in terms of these two values
    ($\partial\bar\Lambda = \bar\Lambda\,\partial z$,
    $\partial w = (\bar\Lambda\,\partial z - w\,\partial\Lambda)/\Lambda$ with
    $z = \Lambda\Delta$), so a backward pass costs no transcendentals beyond
    the forward ones."""
    lam_bar, expm1_z = _exp_and_expm1(scale_complex(lam, step))
    # 1/Λ is (P,): under vmap one division per state, not per (series, state).
    return lam_bar, jnp.multiply(*_broadcast(expm1_z, 1.0 / lam))


@zoh_coefficients.defjvp
def _zoh_coefficients_jvp(primals, tangents):
    lam, step = primals
    d_lam, d_step = tangents
    lam_bar, weight = zoh_coefficients(lam, step)
    d_z = scale_complex(d_lam, step) + scale_complex(lam, d_step)
    weight_d_lam = jnp.multiply(*_broadcast(weight, d_lam))
    return (lam_bar, weight), (lam_bar * d_z, jnp.multiply(*_broadcast(lam_bar * d_z - weight_d_lam, 1.0 / lam)))


class Discretisation(eqx.Module):
    """How the continuous system becomes a discrete step."""

    #: Its name at the user's surface (`discretization=`).
    name: ClassVar[str]

    @abc.abstractmethod
    def __call__(
        self, lam: Complex[Array, " P"], step: Float[Array, "*L P"]
    ) -> tuple[Complex[Array, "*L P"], Complex[Array, "*L P"]]:
        """Return (Λ̄, input weight) for step lengths `step` (≥ 0)."""


class ZOH(Discretisation):
    r"""Zero-order hold: $\bar\Lambda = e^{\Lambda\Delta}$,
    $w = (e^{\Lambda\Delta} - 1)/\Lambda$ (exact for inputs held constant
    over the step)."""

    name: ClassVar[str] = "zoh"

    def __call__(self, lam, step):
        return zoh_coefficients(lam, step)


class Bilinear(Discretisation):
    r"""Bilinear (Tustin): $\bar\Lambda = (1 - \Delta\Lambda/2)^{-1}(1 + \Delta\Lambda/2)$,
    $w = (1 - \Delta\Lambda/2)^{-1}\Delta$."""

    name: ClassVar[str] = "bilinear"

    def __call__(self, lam, step):
        half = scale_complex(0.5 * lam, step)
        inverse = 1.0 / (1.0 - half)
        return inverse * (1.0 + half), scale_complex(inverse, step)


DISCRETISATIONS = {kind.name: kind for kind in (ZOH, Bilinear)}


class InputHold(eqx.Module):
    """How an observation's input enters the state (`S5SSM`'s `input_hold`):
    its weight from the weight of the step's own gap and that of a unit gap."""

    #: Its name at the user's surface (`input_hold=`).
    name: ClassVar[str]
    #: Whether it reads the unit gap's weight (`unit_weight`).
    uses_unit: ClassVar[bool] = True

    def unit_weight(self, rule: Discretisation, lam, timescale) -> Complex[Array, " P"] | None:
        """The input weight of a unit step, (P,); None where it is not read."""
        return rule(lam, timescale.astype(lam.real.dtype))[1] if self.uses_unit else None

    @abc.abstractmethod
    def weight(self, weight: Complex[Array, "*L P"], unit: Complex[Array, " P"] | None) -> Complex[Array, "*L P"]:
        """The input weight of each step, from that of its own gap (`weight`)
        and that of a unit gap (`unit`)."""


class GapHold(InputHold):
    """`"gap"` (the S5 paper): the input is held over the whole gap before
    it, so its weight grows with the gap."""

    name: ClassVar[str] = "gap"
    uses_unit: ClassVar[bool] = False

    def weight(self, weight, unit):
        return weight


class UnitHold(InputHold):
    """`"unit"`: every observation weighs as after a unit gap (one median
    gap), while the state still decays over the real gap."""

    name: ClassVar[str] = "unit"

    def weight(self, weight, unit):
        return jnp.broadcast_to(unit, weight.shape)


class MixedHold(InputHold):
    """`"mixed"`: every second state (p odd) `"unit"`, the others `"gap"`."""

    name: ClassVar[str] = "mixed"

    def weight(self, weight, unit):
        return jnp.where(jnp.arange(weight.shape[-1]) % 2 == 1, unit, weight)


INPUT_HOLDS = {kind.name: kind for kind in (GapHold, UnitHold, MixedHold)}


def step_coefficients(
    rule: Discretisation, lam: Complex[Array, " P"], timescale: Float[Array, " P"], gaps: Float[Array, "*L"],
    hold: InputHold = GapHold(),
) -> tuple[Complex[Array, "*L P"], Complex[Array, "*L P"]]:
    r"""$(\bar\Lambda_k, w_k)$ for gaps $g_k$ of shape (L,) or ():
    $\bar\Lambda_k$ from the step $\Delta g_k$, and $w_k$ from the same step
    (`GapHold`) or from the unit step $\Delta$ (`UnitHold`)."""
    lam_bar, weight = rule(lam, gap_steps(timescale, gaps, lam.real.dtype))
    return lam_bar, hold.weight(weight, hold.unit_weight(rule, lam, timescale))


def gap_steps(steps: Float[Array, "*S P"], gaps: Float[Array, "*L"], dtype) -> Float[Array, "*L P"]:
    """The step of each state over each gap, `steps` (P,) or (L, P) times
    `gaps` (L,) or (), in `dtype`."""
    return (jnp.broadcast_to(steps, gaps.shape + steps.shape[-1:]) * gaps[..., None]).astype(dtype)


def _named(base: type, kinds: dict, name, choices: str):
    """`kinds[name]()`, or `name` itself if it is a `base`; else a ValueError naming the `choices`."""
    if isinstance(name, base):
        return name
    try:
        return kinds[name]()
    except (KeyError, TypeError):
        raise ValueError(f"{choices}, got {name!r}") from None


def make_discretisation(name: str | Discretisation) -> Discretisation:
    """Map the user-facing name ("zoh" | "bilinear") to its rule (a rule is itself)."""
    return _named(Discretisation, DISCRETISATIONS, name, f"discretization must be one of {sorted(DISCRETISATIONS)}")


def make_input_hold(name: str | InputHold) -> InputHold:
    """Map the user-facing name ("gap" | "unit" | "mixed") to its hold (a hold is itself)."""
    return _named(InputHold, INPUT_HOLDS, name, f"input_hold must be one of {tuple(INPUT_HOLDS)}")
