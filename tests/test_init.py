"""The initialisations of Λ (`s5ts.nn._init`, `S5SSM(init=...)`): each
S4D form against its closed form written out here, per block; HiPPO-N kept
as the default; the choice reaches the estimators through the parameter table."""

import jax
import numpy as np
import pytest

from s5ts import S5Regressor
from s5ts.nn import INITS, S5SSM, block_diagonal_hippo, initial_eigenvalues


def _closed_form(init: str, N: int) -> np.ndarray:
    """λₙ for n = 0 … N/2 − 1, one loop iteration per n (the spec's formulas)."""
    out = []
    for n in range(N // 2):
        if init == "s4d_lin":
            out.append(complex(-0.5, -np.pi * n))
        elif init == "s4d_inv":
            out.append(complex(-0.5, -(N / np.pi) * (N / (2 * n + 1) - 1)))
        else:
            out.append(complex(-(n + 1), 0.0))
    return np.array(out)


@pytest.mark.parametrize("init", ["s4d_lin", "s4d_inv", "s4d_real"])
@pytest.mark.parametrize("state_size, blocks", [(8, 1), (8, 4), (6, 3)])
def test_s4d_eigenvalues_are_the_closed_forms_per_block(init, state_size, blocks, x64):
    lam, basis = initial_eigenvalues(init, state_size, blocks)
    N = 2 * state_size // blocks
    np.testing.assert_allclose(lam, np.tile(_closed_form(init, N), blocks), rtol=1e-15, atol=0)
    assert (lam.real < 0).all()
    np.testing.assert_array_equal(basis, np.eye(2 * state_size, state_size))
    ssm = S5SSM(4, state_size, blocks, init=init, key=jax.random.key(0))
    stored = -np.exp(np.asarray(ssm.log_neg_real)) + 1j * np.asarray(ssm.lambda_imag)
    np.testing.assert_allclose(stored, lam, rtol=1e-12, atol=1e-12)


def test_hippo_is_the_default_and_unchanged(x64):
    lam, vectors = block_diagonal_hippo(8, 2)
    got, basis = initial_eigenvalues("hippo", 8, 2)
    np.testing.assert_array_equal(got, lam)
    np.testing.assert_array_equal(basis, vectors)
    default, named = (S5SSM(4, 8, 2, key=jax.random.key(1), **kw) for kw in ({}, {"init": "hippo"}))
    for a, b in zip(jax.tree.leaves(default), jax.tree.leaves(named)):
        np.testing.assert_array_equal(a, b)
    assert INITS[0] == "hippo"


def test_bad_init_and_blocks_raise():
    with pytest.raises(ValueError, match="init must be one of"):
        S5SSM(4, 8, init="s4d", key=jax.random.key(0))
    with pytest.raises(ValueError, match="blocks of even size"):
        initial_eigenvalues("s4d_lin", 3, 2)
    with pytest.raises(ValueError, match="init"):
        S5Regressor(init="lin").fit([np.ones((3, 1))], [1.0])


@pytest.mark.parametrize("init", ["s4d_lin", "s4d_inv", "s4d_real"])
def test_each_init_fits_irregular_series(init):
    rng = np.random.default_rng(0)
    times = [np.cumsum(rng.exponential(1.0, n)) for n in (12, 20, 7, 15)]
    X = [np.sin(t)[:, None] for t in times]
    y = np.array([x.mean() for x in X])
    model = S5Regressor(n_layers=1, d_model=4, state_size=4, max_epochs=2, init=init, random_state=0)
    pred = model.fit(X, y, times=times).predict(X, times=times)
    assert pred.shape == (4,) and np.isfinite(pred).all()
    assert model._architecture_["init"] == init  # a warm start with another init cannot continue
