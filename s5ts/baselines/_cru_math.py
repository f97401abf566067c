r"""The maths of the Continuous Recurrent Unit (Schirmer et al., ICML 2022).

Pure functions on one time step of one sequence; float32 and float64 alike.

The latent state has size $2m$ ($m$ = latent observation size, 15 in the
paper): an "upper" part that the observation sees directly ($H = [I_m\ 0]$)
and a "lower" memory part. Its covariance is kept in the factorised form of
Recurrent Kalman Networks, three $m$-vectors

$$\Sigma = \begin{pmatrix} \operatorname{diag}\sigma^u & \operatorname{diag}\sigma^s \\
                           \operatorname{diag}\sigma^s & \operatorname{diag}\sigma^l \end{pmatrix},$$

which makes the Kalman update element-wise. The prediction over a gap
$\Delta t$ solves $\dot\mu = A\mu$, $\dot\Sigma = A\Sigma + \Sigma A^\top + Q$
exactly with one matrix exponential (Van Loan), then projects $\Sigma$ back
onto the three diagonals.

The transition matrix $A$ is built from $K$ basis matrices, each a $2\times 2$
grid of $m\times m$ band matrices (entries with $|i-j|\le$ bandwidth). Only
the band entries are stored (`band` arrays of shape (K, 4, n_band)), so that
parameter counts are the true number of free parameters; `band_to_dense`
scatters them into the dense $(2m, 2m)$ matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

# Largest 1-norm of the scaled Van Loan matrix M·τ whose exponential is
# taken (see `predict` and `expm_small`).
_VAN_LOAN_STEP_NORM = 0.25
# Default bound on the number of doublings in `predict`: ‖M Δt‖₁ up to
# 2^12/4 = 1024. Under vmap every one of them is computed (a select, not a
# branch), so the bound is a cost: each costs 3 (n, n) products forward.
MAX_DOUBLINGS = 12


class Covariance(NamedTuple):
    """The factorised latent covariance: three diagonals, each of shape (m,)."""

    upper: Float[Array, " m"]
    lower: Float[Array, " m"]
    side: Float[Array, " m"]


def elup1(x: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
    r"""$\mathrm{elu}(x) + 1$: $e^x$ for $x < 0$, $x + 1$ otherwise; positive and smooth.

    `exp` only ever sees non-positive values, so neither branch overflows and
    the gradient of the unused branch cannot turn into NaN.
    """
    return jnp.where(x < 0, jnp.exp(jnp.minimum(x, 0)), x + 1)


def l2_normalise(x: Float[Array, " d"], eps: float = 1e-8) -> Float[Array, " d"]:
    """x / max(‖x‖₂, eps), with a finite gradient at x = 0 (`jnp.linalg.norm`'s is NaN there)."""
    return x / jnp.sqrt(jnp.maximum(jnp.sum(x**2), eps**2))


def band_indices(size: int, bandwidth: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the entries of a `size`×`size` band matrix.

    **Arguments:**

    - `size`: the matrix size m.
    - `bandwidth`: entries with |i - j| <= bandwidth are free.

    **Returns:** `(rows, cols)`, two int numpy arrays of shape (n_band,), in
    row-major order. Computed with numpy at trace time (static shapes).
    """
    rows, cols = np.nonzero(np.abs(np.subtract.outer(np.arange(size), np.arange(size))) <= bandwidth)
    return rows, cols


def band_to_dense(band: Float[Array, "4 n_band"], size: int, bandwidth: int) -> Float[Array, "n n"]:
    """Scatter the band entries of the four m×m blocks into one dense (2m, 2m) matrix.

    **Arguments:**

    - `band`: band entries of the blocks (11, 12, 21, 22) in that order,
      each in the row-major order of `band_indices(size, bandwidth)`.
    - `size`: the block size m.
    - `bandwidth`: the band half-width.

    **Returns:** the dense matrix, shape (2m, 2m).
    """
    rows, cols = band_indices(size, bandwidth)
    if band.shape != (4, rows.size):
        raise ValueError(
            f"band must have shape (4, {rows.size}) for size={size}, bandwidth={bandwidth}; got {band.shape}"
        )
    block_row = np.repeat(np.array([0, 0, 1, 1]), rows.size) * size
    block_col = np.repeat(np.array([0, 1, 0, 1]), rows.size) * size
    dense = jnp.zeros((2 * size, 2 * size), band.dtype)
    return dense.at[block_row + np.tile(rows, 4), block_col + np.tile(cols, 4)].set(band.reshape(-1))


def locally_linear_transition(
    mean: Float[Array, " n"],
    band: Float[Array, "K 4 n_band"],
    coefficient_net: Callable[[Float[Array, " n"]], Float[Array, " K"]],
    bandwidth: int,
) -> Float[Array, "n n"]:
    r"""The locally linear transition matrix $A(\mu) = \sum_k \alpha_k(\mu) A_k$.

    **Arguments:**

    - `mean`: the latent mean μ, shape (n,) with n = 2m.
    - `band`: band entries of the K basis matrices (see `band_to_dense`).
    - `coefficient_net`: maps μ to K logits; α = softmax(logits).
    - `bandwidth`: the band half-width of each block.

    **Returns:** A, shape (n, n).
    """
    alpha = jax.nn.softmax(coefficient_net(mean))
    # Mix the band entries first: one scatter instead of K dense matrices.
    return band_to_dense(jnp.tensordot(alpha, band, axes=1), mean.shape[0] // 2, bandwidth)


def kalman_update(
    mean: Float[Array, " n"],
    cov: Covariance,
    obs: Float[Array, " m"],
    obs_var: Float[Array, " m"],
) -> tuple[Float[Array, " n"], Covariance]:
    r"""Kalman update with $H = [I_m\ 0]$ and diagonal observation noise.

    With the factorised covariance the gain is element-wise:
    $q^u = \sigma^u / (\sigma^u + r)$, $q^l = \sigma^s / (\sigma^u + r)$;
    $\mu^u \mathrel{+}= q^u (y - \mu^u)$, $\mu^l \mathrel{+}= q^l (y - \mu^u)$;
    $\sigma^u \leftarrow (1 - q^u)\sigma^u$,
    $\sigma^l \leftarrow \sigma^l - q^l \sigma^s$,
    $\sigma^s \leftarrow (1 - q^u)\sigma^s$.

    **Arguments:**

    - `mean`: prior mean, shape (2m,).
    - `cov`: prior covariance (three diagonals of shape (m,)).
    - `obs`: latent observation y, shape (m,).
    - `obs_var`: its variance r > 0, shape (m,).

    **Returns:** the posterior `(mean, cov)`, same shapes.
    """
    m = obs.shape[0]
    mean_upper, mean_lower = mean[:m], mean[m:]
    denominator = cov.upper + obs_var
    q_upper = cov.upper / denominator
    q_lower = cov.side / denominator
    residual = obs - mean_upper
    new_mean = jnp.concatenate([mean_upper + q_upper * residual, mean_lower + q_lower * residual])
    new_cov = Covariance(
        upper=(1 - q_upper) * cov.upper,
        lower=cov.lower - q_lower * cov.side,
        side=(1 - q_upper) * cov.side,
    )
    return new_mean, new_cov


def dense_covariance(cov: Covariance) -> Float[Array, "n n"]:
    """The dense (2m, 2m) covariance matrix of the factorised form."""
    return jnp.block(
        [[jnp.diag(cov.upper), jnp.diag(cov.side)], [jnp.diag(cov.side), jnp.diag(cov.lower)]]
    )


def taylor_degree(dtype) -> int:
    """Smallest Taylor degree q with θ^(q+1)/(q+1)! · e^θ ≤ unit roundoff, θ = `_VAN_LOAN_STEP_NORM`.

    6 for float32, 12 for float64: the truncation error of `expm_small` is
    then below rounding.
    """
    roundoff = float(jnp.finfo(dtype).eps) / 2
    theta = _VAN_LOAN_STEP_NORM
    degree = 1
    while theta ** (degree + 1) / math.factorial(degree + 1) * math.exp(theta) > roundoff:
        degree += 1
    return degree


def expm_small(x: Float[Array, "n n"]) -> Float[Array, "n n"]:
    r"""$e^X$ for $\|X\|_1 \le$ `_VAN_LOAN_STEP_NORM` (= 1/4), by a Taylor polynomial.

    The degree (`taylor_degree`) makes the truncation error smaller than
    rounding for that norm bound; larger norms are not accurate, so callers
    scale first (as `predict` does). Evaluated by Paterson–Stockmeyer:
    $\lceil\sqrt q\rceil - 1$ matrix products for the powers plus a Horner
    recurrence in $X^s$, i.e. 4 products in float32, 6 in float64, and no
    linear solve.

    Why not `jax.scipy.linalg.expm`: it picks a Padé order and a number of
    squarings per matrix with `lax.switch`/`lax.cond`, which under `jax.vmap`
    evaluate every branch, plus one LU solve per matrix: on 2 500 vmapped
    60×60 float32 matrices of 1-norm 1/4 (jitted, 2-core CPU, best of 5) it
    took 1.6 s against 0.19 s here.
    `tests/test_cru.py` checks this function against it.
    """
    degree = taylor_degree(x.dtype)
    block = math.isqrt(degree) + (math.isqrt(degree) ** 2 < degree)  # ceil(sqrt(q))
    coefficients = [1 / math.factorial(k) for k in range(degree + 1)]
    eye = jnp.eye(x.shape[0], dtype=x.dtype)
    powers = [eye, x]
    for _ in range(block - 1):
        powers.append(powers[-1] @ x)
    top = powers.pop()  # X^block
    chunks = [
        sum(c * p for c, p in zip(coefficients[j : j + block], powers))
        for j in range(0, degree + 1, block)
    ]
    result = chunks[-1]
    for chunk in reversed(chunks[:-1]):
        result = result @ top + chunk
    return result


def predict(
    mean: Float[Array, " n"],
    cov: Covariance,
    transition: Float[Array, "n n"],
    diffusion: Float[Array, " n"],
    dt: Float[Array, ""],
    *,
    max_doublings: int = MAX_DOUBLINGS,
) -> tuple[Float[Array, " n"], Covariance]:
    r"""Continuous-discrete prediction over a gap $\Delta t \ge 0$ (Van Loan).

    Solves $\dot\mu = A\mu$, $\dot\Sigma = A\Sigma + \Sigma A^\top + Q$ over
    $\Delta t$: $\mu \leftarrow \Phi\mu$, $\Sigma \leftarrow \Phi\Sigma\Phi^\top + Q_d$
    with $\Phi = e^{A\Delta t}$ and $Q_d = \int_0^{\Delta t} e^{As} Q e^{A^\top s}\,ds$,
    then keeps the three diagonals. $\Delta t = 0$ is the identity.

    With $M = \begin{pmatrix} A & Q \\ 0 & -A^\top\end{pmatrix}$ and
    $E = e^{M\tau}$ (Van Loan): $E_{11} = \Phi_\tau$ and
    $E_{12} = Q_\tau \Phi_\tau^{-\top}$, so $Q_\tau = E_{12}\Phi_\tau^\top$.
    Taking $\tau = \Delta t$ directly loses about $\varepsilon\,\kappa(\Phi)$ of
    $Q_d$ to rounding ($E_{12}$ carries $\Phi^{-\top}$): for a stable $A$ whose
    eigenvalues have real parts in $[-1.34, -0.03]$ and $\Delta t = 17$, float32
    gives negative variances; for real parts in $[-3.55, -0.35]$ float64 gives
    variances of $\pm 10^5$ where the true ones are below 0.2. Instead $\tau = \Delta t / 2^s$, with
    $s$ the smallest integer such that $\|M\tau\|_1 \le 1/4$ (so
    $\kappa(\Phi_\tau) \le e^{1/2}$), one matrix exponential
    (`expm_small`), and $s$ doublings
    $\Phi_{2\tau} = \Phi_\tau^2$, $Q_{2\tau} = \Phi_\tau Q_\tau \Phi_\tau^\top + Q_\tau$
    (sums of positive semi-definite terms: no cancellation). The doublings
    replace the squarings of the usual scaling-and-squaring and work on the
    (n, n) pair, which is cheaper than squaring the (2n, 2n) matrix.

    **Arguments:**

    - `mean`: mean μ, shape (n,) with n = 2m.
    - `cov`: covariance (three diagonals of shape (m,)).
    - `transition`: A, shape (n, n).
    - `diffusion`: the diagonal of Q (≥ 0), shape (n,).
    - `dt`: the gap Δt ≥ 0, a scalar.
    - `max_doublings`: static bound on s; $\|M\Delta t\|_1$ up to
      $2^{\text{max\_doublings}}/4$ is handled, beyond that the result is NaN.

    **Returns:** the predicted `(mean, cov)`, same shapes.
    """
    n = mean.shape[0]
    m = n // 2
    van_loan = jnp.block(
        [[transition, jnp.diag(diffusion)], [jnp.zeros_like(transition), -transition.T]]
    ) * dt
    norm = jnp.max(jnp.sum(jnp.abs(van_loan), axis=0))
    # norm == 0 (dt == 0) gives log2 = -inf: no doubling.
    doublings = jnp.maximum(jnp.ceil(jnp.log2(norm / _VAN_LOAN_STEP_NORM)), 0)
    exp_m = expm_small(van_loan * 2.0 ** -jnp.minimum(doublings, max_doublings))
    phi = exp_m[:n, :n]
    noise = exp_m[:n, n:] @ phi.T

    def double(carry, i):
        phi, noise = carry
        doubled = (phi @ phi, phi @ noise @ phi.T + noise)
        return jax.tree.map(lambda new, old: jnp.where(i < doublings, new, old), doubled, carry), None

    # A fixed-length scan (not a while loop) keeps it reverse-differentiable.
    (phi, noise), _ = jax.lax.scan(double, (phi, noise), jnp.arange(max_doublings, dtype=doublings.dtype))
    too_long = doublings > max_doublings
    phi = jnp.where(too_long, jnp.nan, phi)
    left = phi @ dense_covariance(cov)
    # The three diagonals of left @ phi.T + noise, without forming the product.
    new_cov = Covariance(
        upper=jnp.sum(left[:m] * phi[:m], axis=-1) + jnp.diagonal(noise[:m, :m]),
        lower=jnp.sum(left[m:] * phi[m:], axis=-1) + jnp.diagonal(noise[m:, m:]),
        side=jnp.sum(left[:m] * phi[m:], axis=-1) + jnp.diagonal(noise[:m, m:]),
    )
    return phi @ mean, new_cov
