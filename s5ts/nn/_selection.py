r"""Selective steps (Mamba, Gu & Dao 2023) on real observation gaps.

Mamba computes the step of each input from the input,
$\Delta_k = \mathrm{softplus}(W_\Delta u_k + b)$. Here the bias is S5's own
learned timescale read through the inverse softplus, $b = \mathrm{softplus}^{-1}(\Delta)$,
so the only new parameter is $W_\Delta$ (P, H), and $W_\Delta = 0$ selects
$\Delta$ itself. The selected step $\Delta^{\mathrm{sel}}_k$ (L, P) is
combined with the observed gap $g_k$ in one of two ways (`S5SSM`'s
`selective`):

- `Scaled` (`"scaled"`): both $\bar\Lambda_k$ and the input weight $w_k$ from
  the step $\Delta^{\mathrm{sel}}_k g_k$ (event-ssm's ZOH with a per-step
  Δ). $W_\Delta = 0$ is S5 (`input_hold="gap"`) exactly.
- `Split` (`"split"`): the decay from the gap and S5's timescale,
  $\bar\Lambda_k = e^{\Lambda\Delta g_k}$; the input's weight from the input
  alone, $w_k$ from the step $\Delta^{\mathrm{sel}}_k$ (lrnnx's event mode).
  $W_\Delta = 0$ is S5 with `input_hold="unit"` exactly.
- `Fixed` (None): no selection, S5: both from $\Delta g_k$.

Each is one per-step $(\bar\Lambda_k, w_k)$, which the fused scan
(`irregular_scan`) and the associative scan already take: the selected steps
are one (L, P) real array computed before the scan, and its cotangent one
(L, P) array written by the fused scan's backward loop.

Mamba also makes B and C input-dependent; S5's B̃ (P, H) and C̃ (H, P) are
multi-input multi-output, so an input-dependent B̃_k would be an (L, P, H)
tensor per sequence (the cost the layer avoids by never forming B̄_k). Only
the step is selected here.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Complex, Float

from ._discretisation import Discretisation, _broadcast, _named, gap_steps


def inverse_softplus(x: Float[Array, "*P"]) -> Float[Array, "*P"]:
    r"""$\mathrm{softplus}^{-1}(x) = \log(e^x - 1)$ for $x > 0$, written
    $x + \log(1 - e^{-x})$ so that neither small nor large $x$ overflows or
    cancels."""
    return x + jnp.log(-jnp.expm1(-x))


def selected_steps(
    weight: Float[Array, "P H"], timescale: Float[Array, " P"], u: Float[Array, "*L H"]
) -> Float[Array, "*L P"]:
    r"""$\Delta^{\mathrm{sel}}_k = \mathrm{softplus}(W_\Delta u_k + \mathrm{softplus}^{-1}(\Delta))$
    for u of shape (L, H) or (H,)."""
    return jax.nn.softplus(jnp.add(*_broadcast(u @ weight.T, inverse_softplus(timescale))))


class Selection(eqx.Module):
    """How an observation's input selects its step (`S5SSM`'s `selective`):
    `coefficients` gives $(\\bar\\Lambda_k, w_k)$ from S5's timescale, the
    gaps and the selected steps."""

    #: Its name at the user's surface (`selective=`); None: no selection.
    name: ClassVar[str | None]
    #: Whether it reads selected steps (and the layer has a `W_Δ`).
    selects: ClassVar[bool] = True

    def selected(
        self, weight: Float[Array, "P H"] | None, timescale: Float[Array, " P"], u: Float[Array, "*L H"] | None
    ) -> Float[Array, "*L P"] | None:
        """The selected steps of inputs `u`; None where it reads none (and
        needs no `weight` or `u`)."""
        return selected_steps(weight, timescale, u) if self.selects else None

    @abc.abstractmethod
    def coefficients(
        self,
        rule: Discretisation,
        lam: Complex[Array, " P"],
        timescale: Float[Array, " P"],
        gaps: Float[Array, "*L"],
        selected: Float[Array, "*L P"] | None,
    ) -> tuple[Complex[Array, "*L P"], Complex[Array, "*L P"]]:
        """(Λ̄, input weight) for gaps of shape (L,) or () (before any input hold)."""


class Fixed(Selection):
    """No selection (None): S5, both from the step Δ g_k."""

    name: ClassVar[str | None] = None
    selects: ClassVar[bool] = False

    def coefficients(self, rule, lam, timescale, gaps, selected):
        return rule(lam, gap_steps(timescale, gaps, lam.real.dtype))


class Scaled(Selection):
    """`"scaled"`: both Λ̄_k and w_k from the selected step times the gap."""

    name: ClassVar[str | None] = "scaled"

    def coefficients(self, rule, lam, timescale, gaps, selected):
        return rule(lam, gap_steps(selected, gaps, lam.real.dtype))


class Split(Selection):
    """`"split"`: Λ̄_k from S5's step Δ g_k, w_k from the selected step alone."""

    name: ClassVar[str | None] = "split"

    def coefficients(self, rule, lam, timescale, gaps, selected):
        lam_bar, _ = rule(lam, gap_steps(timescale, gaps, lam.real.dtype))
        _, weight = rule(lam, selected.astype(lam.real.dtype))
        return lam_bar, weight


#: The selections by name (None: no selection, S5).
SELECTIONS = {kind.name: kind for kind in (Fixed, Scaled, Split)}


def make_selection(name: str | None | Selection) -> Selection:
    """Map the user-facing name (None | "scaled" | "split") to its selection
    (a selection is itself)."""
    return _named(Selection, SELECTIONS, name, f"selective must be one of {tuple(SELECTIONS)}")
