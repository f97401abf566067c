"""Initialisations of the S5 state matrix: HiPPO-N (S5 paper, appendix B)
and S4D's closed forms (Gu et al. 2022, "On the parameterization and
initialization of diagonal state space models"), `INITS`.

Computed once in numpy float64 at construction; nothing here is traced.
"""

from __future__ import annotations

import numpy as np


def hippo_n(size: int) -> np.ndarray:
    """The normal part of HiPPO-LegS, (size, size): S = A + p pᵀ with
    p_n = √(n + ½); S + ½I is skew-symmetric."""
    n = np.arange(size)
    p = np.sqrt(n + 0.5)
    root = np.sqrt(2 * n + 1)
    legs = -np.tril(np.outer(root, root), -1) - np.diag(n + 1.0)
    return legs + np.outer(p, p)


def diagonalised_hippo_n(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of HiPPO-N, keeping one of each conjugate pair.

    **Returns:** eigenvalues (size/2,) complex, real part −½ and negative
    imaginary part, and eigenvectors V (size, size/2) with orthonormal columns.
    """
    if size % 2:
        raise ValueError(f"HiPPO-N block size must be even for conjugate symmetry, got {size}")
    normal = hippo_n(size)
    real_part = np.mean(np.diag(normal))  # −½
    # S − (−½)I is skew-symmetric, so −i(S + ½I) is Hermitian: eigh is exact and stable.
    omega, vectors = np.linalg.eigh(-1j * (normal - real_part * np.eye(size)))
    keep = np.argsort(omega)[: size // 2]  # the negative-frequency half
    return real_part + 1j * omega[keep], vectors[:, keep]


def block_diagonal_hippo(state_size: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """J = `blocks` copies of diagonalised HiPPO-N of size 2P/J.

    **Returns:** Λ (P,) complex and the block-diagonal V (2P, P) complex.
    """
    size = _block_size(state_size, blocks)
    lam, vectors = diagonalised_hippo_n(size)
    full = np.zeros((2 * state_size, state_size), dtype=complex)
    for j in range(blocks):
        full[j * size : (j + 1) * size, j * (size // 2) : (j + 1) * (size // 2)] = vectors
    return np.tile(lam, blocks), full



def _block_size(state_size: int, blocks: int) -> int:
    """The (even) size 2P/J of each of J = `blocks` blocks of 2P states."""
    if state_size <= 0 or blocks <= 0:
        raise ValueError(f"state_size and blocks must be positive, got {state_size}, {blocks}")
    if (2 * state_size) % blocks or ((2 * state_size) // blocks) % 2:
        raise ValueError(
            f"2*state_size ({2 * state_size}) must split into `blocks` ({blocks}) "
            "blocks of even size"
        )
    return 2 * state_size // blocks


#: S4D's eigenvalues λₙ of a block of N states, one of each conjugate pair
#: (n = 0 … N/2 − 1, negative imaginary parts as HiPPO-N's here).
S4D = {
    "s4d_lin": lambda n, N: -0.5 - 1j * np.pi * n,
    "s4d_inv": lambda n, N: -0.5 - 1j * (N / np.pi) * (N / (2 * n + 1) - 1),
    "s4d_real": lambda n, N: -(n + 1.0) + 0j,
}

#: The initialisations of Λ (`S5SSM`'s `init`).
INITS = ("hippo", *S4D)


def initial_eigenvalues(init: str, state_size: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Λ (P,) complex and the basis V (2P, P) in which B̃ = VᴴB and C̃ = CV
    are drawn: `"hippo"`, `block_diagonal_hippo`; an S4D initialisation,
    its closed form (`S4D`) for each of the J = `blocks` blocks of
    N = 2P/J states, with V the first P unit vectors (B̃ and C̃ drawn
    directly, real, as S4D draws them)."""
    if init == "hippo":
        return block_diagonal_hippo(state_size, blocks)
    if init not in S4D:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    size = _block_size(state_size, blocks)
    lam = S4D[init](np.arange(size // 2), size)
    return np.tile(lam, blocks), np.eye(2 * state_size, state_size)
