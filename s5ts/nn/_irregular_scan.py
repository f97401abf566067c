r"""Discretisation fused into the sequential scan, for per-step gaps.

S5 with observation gaps $g_k$ runs
$x_k = \bar\Lambda_k \odot x_{k-1} + w_k \odot \tilde B u_k$ with
$(\bar\Lambda_k, w_k)$ from the discretisation rule at step $\Delta g_k$.
Materialising $\bar\Lambda$ and $w$ as (L, P) complex arrays, and storing them
for the backward pass, costs several passes over memory per step on CPU.
Here one loop computes them row by row as it goes, and the custom VJP
recomputes them in its reverse loop while it accumulates the gradients of
$\Lambda$ and $\Delta$, so the only (L, P) arrays kept are the states.

A selective layer (`s5ts.nn._selection`) passes its selected steps
(L, P) as one more input, read row by row like the gaps; their cotangent is
written row by row in the reverse loop.

With the adjoint $\lambda_k = \bar x_k + \bar\Lambda_{k+1}\lambda_{k+1}$, step k
contributes the pullback of $(\bar\Lambda_k, b_k)$ at
$(\lambda_k x_{k-1}, \lambda_k)$, and the initial state gets
$\bar\Lambda_0 \lambda_0$.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Complex, Float

from ._discretisation import Discretisation, InputHold, make_discretisation, make_input_hold
from ._scan import _SEQUENTIAL_UNROLL
from ._selection import Selection, make_selection


def _coefficients(
    rule: Discretisation,
    hold: InputHold,
    selection: Selection,
    lam,
    timescale,
    gap,
    valid,
    bu_k,
    unit,
    selected_k,
    reset_k=None,
):
    """(Λ̄_k, b_k = w_k ⊙ B̃u_k) for one step; a masked step is (1, 0), and
    a reset step's Λ̄_k is 0 (the state before it is dropped).
    `unit`: the unit-step weight (P,) of a `hold` that reads it, computed
    once per sequence (None otherwise); `selected_k`: the step's selected
    steps (P,) of a `selection` that reads them (None otherwise); `reset_k`:
    the step's reset flag (None: no resets)."""
    lam_bar, weight = selection.coefficients(rule, lam, timescale, gap, selected_k)
    weight = hold.weight(weight, unit)
    lam_bar = jnp.where(valid, lam_bar, jnp.ones_like(lam_bar))
    if reset_k is not None:
        lam_bar = jnp.where(reset_k, jnp.zeros_like(lam_bar), lam_bar)
    b_k = jnp.where(valid, weight * bu_k, jnp.zeros_like(bu_k))
    return lam_bar, b_k


def _order(length: int, reverse: bool):
    """k(i) for the forward loop, and (first step, offset to the previous one)."""
    if reverse:
        return (lambda i: length - 1 - i), length - 1, 1
    return (lambda i: i), 0, -1


def _at(array, k):
    """`array[k]`, or None for an absent array."""
    return None if array is None else array[k]


def _forward(rule, hold, selection, reverse, lam, timescale, gaps, mask, bu, state, selected, reset):
    # In-place loop as in `_scan._sequential_loop`: only under the custom VJP
    # (plain autodiff of the indexing would be quadratic in L).
    length = gaps.shape[0]
    index, _, _ = _order(length, reverse)
    unit = hold.unit_weight(rule, lam, timescale)

    def body(i, carry):
        x_prev, out = carry
        k = index(i)
        a_k, b_k = _coefficients(
            rule, hold, selection, lam, timescale, gaps[k], mask[k], bu[k], unit, _at(selected, k), _at(reset, k)
        )
        x_k = a_k * x_prev + b_k
        return x_k, out.at[k].set(x_k)

    _, x = jax.lax.fori_loop(0, length, body, (state, jnp.zeros_like(bu)), unroll=_SEQUENTIAL_UNROLL)
    return x


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3))
def _fused(rule, hold, selection, reverse, lam, timescale, gaps, mask, bu, state, selected, reset):
    return _forward(rule, hold, selection, reverse, lam, timescale, gaps, mask, bu, state, selected, reset)


def _fused_fwd(rule, hold, selection, reverse, lam, timescale, gaps, mask, bu, state, selected, reset):
    x = _forward(rule, hold, selection, reverse, lam, timescale, gaps, mask, bu, state, selected, reset)
    return x, (lam, timescale, gaps, mask, bu, state, selected, reset, x)


def _fused_bwd(rule, hold, selection, reverse, residuals, x_bar):
    lam, timescale, gaps, mask, bu, state, selected, reset, x = residuals
    length = gaps.shape[0]
    index, first, before = _order(length, reverse)
    uses_unit = hold.uses_unit
    if uses_unit:
        # The unit-step weight is shared by every step: its cotangent is
        # summed over the loop and pulled back through the rule once.
        unit, unit_pullback = jax.vjp(lambda lam, ts: hold.unit_weight(rule, lam, ts), lam, timescale)
    else:
        unit = None

    def body(i, carry):
        lam_next, a_next, lam_grad, timescale_grad, gaps_bar, bu_bar, unit_grad, selected_bar = carry
        k = index(length - 1 - i)  # against the forward loop
        adjoint = x_bar[k] + a_next * lam_next
        x_prev = jnp.where(k == first, state, x[jnp.clip(k + before, 0, length - 1)])
        # `unit` is None for "gap", `selected` without selection: empty
        # arguments, whose cotangents are None.
        (a_k, _), pullback = jax.vjp(
            lambda lam, timescale, gap, bu_k, unit, selected_k: _coefficients(
                rule, hold, selection, lam, timescale, gap, mask[k], bu_k, unit, selected_k, _at(reset, k)
            ),
            lam, timescale, gaps[k], bu[k], unit, _at(selected, k),
        )
        d_lam, d_timescale, d_gap, d_bu, d_unit, d_selected = pullback((adjoint * x_prev, adjoint))
        return (
            adjoint,
            a_k,
            lam_grad + d_lam,
            timescale_grad + d_timescale,
            gaps_bar.at[k].set(d_gap),
            bu_bar.at[k].set(d_bu),
            None if d_unit is None else unit_grad + d_unit,
            None if d_selected is None else selected_bar.at[k].set(d_selected),
        )

    zero = jnp.zeros_like(x_bar[0])
    init = (
        zero,
        zero,
        jnp.zeros_like(lam),
        jnp.zeros_like(timescale),
        jnp.zeros_like(gaps),
        jnp.zeros_like(bu),
        None if unit is None else jnp.zeros_like(unit),
        None if selected is None else jnp.zeros_like(selected),
    )
    adjoint, a_first, lam_grad, timescale_grad, gaps_bar, bu_bar, unit_grad, selected_bar = jax.lax.fori_loop(
        0, length, body, init, unroll=_SEQUENTIAL_UNROLL
    )
    if uses_unit:
        d_lam, d_timescale = unit_pullback(unit_grad)
        lam_grad, timescale_grad = lam_grad + d_lam, timescale_grad + d_timescale
    return lam_grad, timescale_grad, gaps_bar, None, bu_bar, a_first * adjoint, selected_bar, None


_fused.defvjp(_fused_fwd, _fused_bwd)


def irregular_scan(
    lam: Complex[Array, " P"],
    timescale: Float[Array, " P"],
    gaps: Float[Array, " L"],
    mask: Bool[Array, " L"],
    bu: Complex[Array, "L P"],
    state: Complex[Array, " P"] | None = None,
    *,
    discretization: str | Discretisation = "zoh",
    reverse: bool = False,
    input_hold: str | InputHold = "gap",
    selected: Float[Array, "L P"] | None = None,
    selective: str | None | Selection = None,
    reset: Bool[Array, " L"] | None = None,
) -> Complex[Array, "L P"]:
    r"""States of $x_k = \bar\Lambda_k x_{k-1} + w_k \odot \tilde B u_k$ with the
    discretisation done inside a sequential loop.

    **Arguments:**

    - `lam`: Λ, shape (P,), complex.
    - `timescale`: Δ, shape (P,), > 0 (per-state step scale).
    - `gaps`: g, shape (L,), ≥ 0; step k lasts Δ g_k.
    - `mask`: shape (L,) bool; False steps leave the state unchanged
      (Λ̄ = 1, no input).
    - `bu`: B̃u, shape (L, P), complex.
    - `state`: the state before the first step, (P,) complex (default 0).
    - `discretization`: `"zoh"`, `"bilinear"` or a `Discretisation` rule.
    - `reverse`: run from the last step to the first (`state` is then the
      state after the last step).
    - `input_hold`: `"gap"` (w_k from the step Δ g_k), `"unit"` (w_k from
      Δ: every observation weighs as after a unit gap), `"mixed"`, or an
      `InputHold` (see `S5SSM`).
    - `selected`: the selected steps Δˢᵉˡ_k, (L, P) real, of a `selective`
      layer (`s5ts.nn._selection.selected_steps`); None without selection.
    - `selective`: None (S5), `"scaled"` (Λ̄_k and w_k from the step
      Δˢᵉˡ_k g_k), `"split"` (Λ̄_k from Δ g_k, w_k from Δˢᵉˡ_k), or a
      `Selection` (see `S5SSM`).
    - `reset`: shape (L,) bool or None; True drops the state before that
      step's update (Λ̄_k = 0), so the states from there on are those of a
      fresh run starting at that step (in the loop's direction: with
      `reverse`, a fresh run back from that step). A reset on a masked step
      leaves the state at zero.

    **Returns:** all states, shape (L, P), equal to
    `linear_scan(Λ̄, w ⊙ B̃u, reverse=reverse)` on the materialised
    coefficients (with `state` folded into the first step).

    Gradients (for `lam`, `timescale`, `gaps`, `bu`, `state`, `selected`)
    come from a custom VJP that recomputes Λ̄_k, w_k in its reverse loop; it
    stores only the inputs and the (L, P) states.
    """
    rule, hold, selection = make_discretisation(discretization), make_input_hold(input_hold), make_selection(selective)
    if selection.selects != (selected is not None):
        raise ValueError(f"selected steps are needed by selective={selection.name!r} and by nothing else")
    if selected is not None and selected.shape != bu.shape:
        raise ValueError(f"selected must have the shape (L, P) of bu, {bu.shape}, got {selected.shape}")
    if bu.ndim != 2 or bu.shape != gaps.shape + lam.shape:
        raise ValueError(f"bu must have shape (L, P) = {gaps.shape + lam.shape}, got {bu.shape}")
    if mask.shape != gaps.shape or timescale.shape != lam.shape:
        raise ValueError("mask must match gaps (L,) and timescale must match lam (P,)")
    if reset is not None and reset.shape != gaps.shape:
        raise ValueError(f"reset must match gaps {gaps.shape}, got {reset.shape}")
    dtype = jnp.result_type(lam, bu)
    bu = bu.astype(dtype)
    state = jnp.zeros(lam.shape, dtype) if state is None else jnp.asarray(state).astype(dtype)
    if gaps.shape[0] == 0:
        return bu
    reset = None if reset is None else reset.astype(bool)
    return _fused(
        rule, hold, selection, reverse, lam.astype(dtype), timescale, gaps, mask.astype(bool), bu, state, selected, reset
    )
