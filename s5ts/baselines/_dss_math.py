r"""DSS's maths (Gupta, Gu and Berant 2022, "Diagonal State Spaces are as
Effective as Structured State Spaces") as pure functions on H channels of N
complex eigenvalues each.

Channel h is the single-input single-output system
$\dot x = \operatorname{diag}(\lambda_h) x + \mathbf 1 u_h$,
$y_h = \operatorname{Re}(w_h \cdot x) + D_h u_h$ with its own timescale
$\Delta_h$ (the factor 2 of the conjugate pairs is absorbed in $w$).

- `exp_kernel`: DSS-EXP, $K_k = \operatorname{Re}\sum_n w_n
  \frac{e^{\Delta\lambda_n} - 1}{\lambda_n} e^{k\Delta\lambda_n}$ = $C\bar A^k\bar B$
  under zero-order hold (S4D's kernel);
- `softmax_kernel`: DSS-softmax, $K_k = \operatorname{Re}\sum_n w_n
  \lambda_n^{-1}\operatorname{softmax}_k(k\Delta\lambda_n)$ over $k < L$;
- `causal_convolution`: $y_k = \sum_{j \le k} K_j u_{k-j}$ by FFT;
- `recurrence`: the same system stepped over per-step gaps $g_k$,
  $x_k = e^{\lambda\Delta g_k} x_{k-1} + \frac{e^{\lambda\Delta g_k} - 1}{\lambda} u_k$,
  with the state carried in and reset flags; on unit gaps it equals the
  convolution with `exp_kernel`.

The discretisation is s5ts's zero-order hold (`s5ts.nn.ZOH`, cancellation
free for small steps) and the scan is `s5ts.nn.linear_scan`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Complex, Float, Int

from ..nn import ZOH, linear_scan


def _scale(z: Complex[Array, "..."], x: Float[Array, "..."]) -> Complex[Array, "..."]:
    """z · x for complex z and real x of the same shape (strict dtype
    promotion refuses to mix the kinds implicitly)."""
    return jax.lax.complex(jnp.real(z) * x, jnp.imag(z) * x)


def zoh(
    lam: Complex[Array, "H N"], steps: Float[Array, "*L H"]
) -> tuple[Complex[Array, "*L H N"], Complex[Array, "*L H N"]]:
    r"""$(\bar A, \bar B) = (e^{\lambda s}, (e^{\lambda s} - 1)/\lambda)$ for each
    channel's step $s$ (`steps` (..., H), shared by its N eigenvalues), from
    `s5ts.nn.ZOH` on the H·N eigenvalues flattened."""
    channels, size = lam.shape
    lead = steps.shape[:-1]
    per_state = jnp.broadcast_to(steps[..., None], (*steps.shape, size)).astype(lam.real.dtype)
    a, b = ZOH()(lam.reshape(channels * size), per_state.reshape(*lead, channels * size))
    return a.reshape(*lead, channels, size), b.reshape(*lead, channels, size)


def _powers(z: Complex[Array, "H N"], length: int) -> Complex[Array, "H N L"]:
    r"""$e^{kz}$ for k = 0 … length − 1, each exponent formed directly (no
    repeated products)."""
    k = jnp.arange(length, dtype=z.real.dtype)[None, None, :]
    return jnp.exp(_scale(z[..., None], k))


def exp_kernel(
    lam: Complex[Array, "H N"], w: Complex[Array, "H N"], step: Float[Array, " H"], length: int
) -> Float[Array, "H L"]:
    r"""DSS-EXP's kernel: $K_{h,k} = \operatorname{Re}\sum_n w_{hn}
    \frac{e^{\Delta_h\lambda_{hn}} - 1}{\lambda_{hn}} e^{k\Delta_h\lambda_{hn}}$,
    k = 0 … `length` − 1, i.e. $C\bar A^k\bar B$ of the zero-order-hold
    system with $C = w$, $B = 1$. Finite for Re λ ≤ 0 (DSS-EXP keeps
    Re λ < 0).

    **Arguments:** `lam` λ (H, N) complex, `w` (H, N) complex, `step` Δ (H,)
    > 0, `length` L (a Python int).

    **Returns:** the kernel, (H, L) real.
    """
    _, b = zoh(lam, step)
    z = _scale(lam, step[:, None].astype(lam.real.dtype))
    return jnp.real(jnp.sum((w * b)[..., None] * _powers(z, length), axis=1))


def softmax_kernel(
    lam: Complex[Array, "H N"],
    w: Complex[Array, "H N"],
    step: Float[Array, " H"],
    length: int,
    eps: float = 0.0,
    valid_length: Int[Array, ""] | None = None,
) -> Float[Array, "H L"]:
    r"""DSS-softmax's kernel: $K_{h,k} = \operatorname{Re}\sum_n
    \frac{w_{hn}}{\lambda_{hn}}\operatorname{softmax}_k(k\Delta_h\lambda_{hn})$,
    $\operatorname{softmax}_k(kz) = e^{kz}/\sum_{l<n} e^{lz}$ over the
    first n = `valid_length` steps (default: all `length`), for any sign of
    Re λ; $K_k = 0$ for $k \ge n$.

    Computed stably: every row is shifted by its exponent of largest real
    part ($(n-1)z$ where Re z > 0, else 0), so no exponential exceeds 1 in
    modulus (the shift cancels in the ratio; it carries no gradient). The
    normaliser $Z = \sum_{l<n} e^{lz - \text{shift}}$ is summed directly;
    its reciprocal is $\bar Z/(|Z|^2 + \varepsilon)$, which for `eps` > 0
    stays bounded where Z nearly vanishes (Re z ≈ 0 and nz near a multiple
    of 2πi, as DSS's own code guards its division); `eps` = 0 is the
    formula exactly.

    **Arguments:** as `exp_kernel`; `eps` ≥ 0; `valid_length` n, an integer
    scalar (traced or not) in [1, `length`]: the length of the series
    inside a padded window, so that its kernel does not depend on the
    padding.

    **Returns:** the kernel, (H, `length`) real. It depends on n through
    the normaliser: the kernel of n steps is not a prefix of a longer one.
    """
    dtype = lam.real.dtype
    n = jnp.asarray(length if valid_length is None else valid_length)
    z = _scale(lam, step[:, None].astype(dtype))
    top = jnp.where(jnp.real(z) > 0, _scale(z, (n - 1).astype(dtype)), jnp.zeros_like(z))
    inside = (jnp.arange(length, dtype=n.dtype) < n)[None, None, :]
    # Steps past n would exceed 1 in modulus (Re z > 0): their exponent is
    # zeroed before the exponential (no overflow, no NaN gradient), their term after.
    k = jnp.arange(length, dtype=dtype)[None, None, :]
    exponent = _scale(z[..., None], k) - jax.lax.stop_gradient(top)[..., None]
    s = jnp.where(inside, jnp.exp(jnp.where(inside, exponent, jnp.zeros_like(exponent))), jnp.zeros_like(exponent))
    total = jnp.sum(s, axis=-1)
    inverse = _scale(jnp.conj(total), 1.0 / (jnp.real(total) ** 2 + jnp.imag(total) ** 2 + eps))
    return jnp.real(jnp.sum((w / lam * inverse)[..., None] * s, axis=1))


def causal_convolution(u: Float[Array, "L H"], kernel: Float[Array, "H L"]) -> Float[Array, "L H"]:
    r"""$y_{k,h} = \sum_{j=0}^{k} K_{h,j} u_{k-j,h}$ for every channel, by
    FFT on 2L points (zero padding: no wrap-around), O(L log L)."""
    length = u.shape[0]
    if length == 0:
        return u
    n = 2 * length
    spectrum = jnp.fft.rfft(u, n=n, axis=0) * jnp.fft.rfft(kernel.T.astype(u.dtype), n=n, axis=0)
    return jnp.fft.irfft(spectrum, n=n, axis=0)[:length].astype(u.dtype)


def recurrence(
    lam: Complex[Array, "H N"],
    w: Complex[Array, "H N"],
    step: Float[Array, " H"],
    u: Float[Array, "L H"],
    gaps: Float[Array, " L"],
    mask: Bool[Array, " L"],
    state: Complex[Array, "H N"] | None = None,
    reset: Bool[Array, " L"] | None = None,
    method: str = "auto",
) -> tuple[Float[Array, "L H"], Complex[Array, "L H N"]]:
    r"""The DSS-EXP system stepped over per-step gaps:

    $$x_k = \bar A_k x_{k-1} + \bar B_k u_k,\quad \bar A_k = e^{\lambda\Delta g_k},\quad
    \bar B_k = \frac{e^{\lambda\Delta g_k} - 1}{\lambda},\quad
    y_k = \operatorname{Re}(w \cdot x_k)$$

    per channel (Δ its own timescale), from $x_{-1}$ = `state` (default 0).

    **Arguments:**

    - `lam`, `w` (H, N) complex; `step` Δ (H,) > 0.
    - `u` (L, H) inputs, `gaps` (L,) ≥ 0 (`gaps[0]`: the time before the
      first step).
    - `mask` (L,): False steps leave the state unchanged ($\bar A = 1$, no
      input), whatever their input and gap hold (NaN included).
    - `state` (H, N) complex: the state before the first step.
    - `reset` (L,): True zeroes the state before that step's update, so the
      outputs from there on are those of a fresh run starting at that step
      (a reset on a masked step leaves the state at zero).
    - `method`: the `s5ts.nn.linear_scan` method.

    **Returns:** `(y, states)`: y (L, H) without the skip term $D u$, and
    the state after every step (L, H, N) complex.
    """
    dtype = lam.real.dtype
    u = jnp.where(mask[:, None], u, 0.0).astype(dtype)
    gaps = jnp.where(mask, gaps, 0.0).astype(dtype)
    a, b = zoh(lam, gaps[:, None] * step[None, :].astype(dtype))
    valid = mask[:, None, None]
    a = jnp.where(valid, a, jnp.ones_like(a))
    b = jnp.where(valid, _scale(b, u[:, :, None]), jnp.zeros_like(b))
    if reset is not None:
        a = jnp.where(reset[:, None, None], jnp.zeros_like(a), a)
    if state is not None:
        # x_0 = Ā_0 x_init + B̄_0 u_0: the carried state folded into the first step.
        b = b.at[0].add(a[0] * jnp.asarray(state).astype(a.dtype))
    states = linear_scan(a, b, method)
    return jnp.real(jnp.sum(w[None] * states, axis=-1)), states
