"""Linear scans: x_k = a_k ⊙ x_{k-1} + b_k with x_{-1} = 0.

The recurrence is associative under
(a_i, b_i) • (a_j, b_j) = (a_j a_i, a_j b_i + b_j), so it can run as a
parallel prefix scan (O(log L) depth, best on accelerators) or as a plain
sequential loop (best on CPU, where it is several times faster and compiles
far faster).

Both share one custom VJP: the adjoint of a linear recurrence is itself a
linear recurrence run backwards,
λ_k = ḡ_k + a_{k+1} λ_{k+1},  ∂/∂b_k = λ_k,  ∂/∂a_k = λ_k x_{k-1},
so the backward pass stores only (a, x) and reuses the same scan instead of
differentiating through the scan's internals.
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp
from jaxtyping import Array, Inexact

ScanMethod = Literal["auto", "associative", "sequential"]
SCAN_METHODS = ("auto", "associative", "sequential")

# Unrolling the sequential loop did not pay on CPU: 2 was within noise of 1
# and 8 the slowest at every size (benchmarks/scan_speed.py --unroll-sweep).
_SEQUENTIAL_UNROLL = 1


def _combine(left, right):
    a_i, b_i = left
    a_j, b_j = right
    return a_j * a_i, a_j * b_i + b_j


def _associative_scan(a: Array, b: Array) -> Array:
    _, x = jax.lax.associative_scan(_combine, (a, b), axis=0)
    return x


def _sequential_scan(a: Array, b: Array) -> Array:
    """The recurrence as a `lax.scan` over stacked inputs: what plain autodiff
    should see (the reference the custom VJP is tested against)."""

    def step(x_prev, ab):
        a_k, b_k = ab
        x_k = a_k * x_prev + b_k
        return x_k, x_k

    _, x = jax.lax.scan(
        step, jnp.zeros_like(b[0]), (a, b), unroll=min(_SEQUENTIAL_UNROLL, max(a.shape[0], 1))
    )
    return x


def _sequential_loop(a: Array, b: Array, reverse: bool = False) -> Array:
    """The recurrence as a loop that indexes `a`, `b` in place and writes each
    state into a preallocated output (used under the custom VJP only).

    Under `jax.vmap` (batch axis first) `lax.scan` over stacked inputs makes
    XLA transpose every array to time-major and back, which costs more than
    the loop itself for long sequences. `reverse` runs the index from the last
    step down instead of flipping arrays. Not for plain autodiff: the
    transpose of indexing a closed-over array adds a full-size zero array per
    step (quadratic in L).
    """
    length = a.shape[0]

    def body(i, carry):
        x_prev, out = carry
        k = length - 1 - i if reverse else i
        x_k = a[k] * x_prev + b[k]
        return x_k, out.at[k].set(x_k)

    init = (jnp.zeros_like(b[0]), jnp.zeros_like(b))
    _, x = jax.lax.fori_loop(0, length, body, init, unroll=_SEQUENTIAL_UNROLL)
    return x


def _sequential_adjoint(a: Array, x: Array, x_bar: Array, reverse: bool) -> tuple[Array, Array]:
    """(ā, b̄) of the sequential scan, in one loop running against time.

    λ_k = x̄_k + a_{k+1} λ_{k+1} with a_{k+1} carried from the previous
    iteration (no shifted or reversed copies of `a`), and ā_k = λ_k x_{k-1}
    written in the same iteration (no shifted copy of `x`).
    """
    length = a.shape[0]
    # The forward loop ran k = 0..L-1 (reverse: L-1..0); this one runs back.
    first, before = (length - 1, 1) if reverse else (0, -1)

    def body(i, carry):
        lam_next, a_next, a_bar, b_bar = carry
        k = i if reverse else length - 1 - i
        lam_k = x_bar[k] + a_next * lam_next
        # x_{k-1} in the forward loop's order; its first step started from 0.
        x_prev = x[jnp.clip(k + before, 0, length - 1)]
        x_prev = jnp.where(k == first, jnp.zeros_like(x_prev), x_prev)
        return lam_k, a[k], a_bar.at[k].set(lam_k * x_prev), b_bar.at[k].set(lam_k)

    zero = jnp.zeros_like(x_bar[0])
    init = (zero, zero, jnp.zeros_like(x_bar), jnp.zeros_like(x_bar))
    _, _, a_bar, b_bar = jax.lax.fori_loop(0, length, body, init, unroll=_SEQUENTIAL_UNROLL)
    return a_bar, b_bar


def resolve_scan_method(method: str) -> str:
    """Map "auto" to the fastest method for the default backend."""
    if method not in SCAN_METHODS:
        raise ValueError(f"scan method must be one of {SCAN_METHODS}, got {method!r}")
    if method == "auto":
        return "sequential" if jax.default_backend() == "cpu" else "associative"
    return method


def _forward(method: str, reverse: bool, a: Array, b: Array) -> Array:
    if method == "sequential":
        return _sequential_loop(a, b, reverse)
    if reverse:
        return _associative_scan(a[::-1], b[::-1])[::-1]
    return _associative_scan(a, b)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _linear_scan(method: str, reverse: bool, a: Array, b: Array) -> Array:
    return _forward(method, reverse, a, b)


def _linear_scan_fwd(method, reverse, a, b):
    x = _forward(method, reverse, a, b)
    return x, (a, x)


def _linear_scan_bwd(method, reverse, residuals, x_bar):
    a, x = residuals
    if method == "sequential":
        return _sequential_adjoint(a, x, x_bar, reverse)
    if reverse:
        a, x, x_bar = a[::-1], x[::-1], x_bar[::-1]
    # λ_k = x̄_k + a_{k+1} λ_{k+1}: a forward scan over the reversed sequence
    # whose multipliers are a shifted by one step (a_L does not exist: 0).
    a_next = jnp.concatenate([a[1:], jnp.zeros_like(a[:1])], axis=0)
    lam = _associative_scan(a_next[::-1], x_bar[::-1])[::-1]
    x_prev = jnp.concatenate([jnp.zeros_like(x[:1]), x[:-1]], axis=0)
    a_bar, b_bar = lam * x_prev, lam
    if reverse:
        return a_bar[::-1], b_bar[::-1]
    return a_bar, b_bar


_linear_scan.defvjp(_linear_scan_fwd, _linear_scan_bwd)


def linear_scan(
    a: Inexact[Array, "L ..."],
    b: Inexact[Array, "L ..."],
    method: ScanMethod = "auto",
    *,
    reverse: bool = False,
) -> Inexact[Array, "L ..."]:
    r"""Solve the linear recurrence $x_k = a_k \odot x_{k-1} + b_k$, $x_{-1} = 0$.

    **Arguments:**

    - `a`: multipliers, shape `(L, ...)` (real or complex).
    - `b`: inputs, same shape as `a`.
    - `method`: `"associative"` (parallel prefix scan, O(log L) depth: the
      right choice on GPU/TPU), `"sequential"` (a loop: fastest on CPU) or
      `"auto"` (chosen from the default JAX backend).
    - `reverse`: run from the last step to the first
      ($x_k = a_k x_{k+1} + b_k$).

    **Returns:** all states `x`, shape `(L, ...)`.

    Gradients use a custom VJP that runs the adjoint as a reversed linear
    scan of the same kind (it stores only `a` and `x`).

    >>> import jax.numpy as jnp
    >>> linear_scan(jnp.array([0.5, 0.5, 0.5]), jnp.array([1.0, 1.0, 1.0]), "sequential")
    Array([1.  , 1.5 , 1.75], dtype=float32)
    """
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    dtype = jnp.result_type(a, b)
    a = a.astype(dtype)
    b = b.astype(dtype)
    resolved = resolve_scan_method(method)
    if a.shape[0] == 0:
        return b
    return _linear_scan(resolved, reverse, a, b)
