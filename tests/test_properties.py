"""Property tests: any shapes, gaps from 1e-6 to 1e6 time units, padding
anywhere at the end: outputs finite, state bounded."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from s5ts.nn import S5SSM

# One model per configuration, built once: hypothesis varies the data.
_MODELS = {
    (disc, bidi): S5SSM(3, 4, 2, disc, bidi, key=jax.random.key(0))
    for disc in ("zoh", "bilinear")
    for bidi in (False, True)
}
_CALL = {cfg: eqx.filter_jit(model) for cfg, model in _MODELS.items()}

log_gaps = st.floats(min_value=-6.0, max_value=6.0, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    length=st.sampled_from([1, 4, 16]),
    n_real_fraction=st.floats(0.0, 1.0),
    exponents=st.lists(log_gaps, min_size=16, max_size=16),
    scale=st.floats(1e-3, 1e3),
    discretization=st.sampled_from(["zoh", "bilinear"]),
    bidirectional=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_finite_and_bounded(length, n_real_fraction, exponents, scale, discretization, bidirectional, seed):
    ssm = _MODELS[(discretization, bidirectional)]
    rng = np.random.default_rng(seed)
    u = scale * rng.normal(size=(length, 3)).astype(np.float32)
    gaps = (10.0 ** np.asarray(exponents[:length])).astype(np.float32)
    n_real = max(1, int(round(n_real_fraction * length)))
    mask = np.arange(length) < n_real
    y, x_last = _CALL[(discretization, bidirectional)](jnp.asarray(u), jnp.asarray(gaps), jnp.asarray(mask))
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(x_last))
    # |Λ̄| ≤ 1 and |w| ≤ 2/|Λ| (ZOH) or Δ/|1 − ΔΛ/2| ≤ 2/|Λ| (bilinear), so
    # |x| ≤ Σ_k (2/|Λ|)·|B̃u_k|.
    lam = np.abs(np.asarray(ssm.lam))
    B = np.abs(np.asarray(ssm.B_re) + 1j * np.asarray(ssm.B_im))
    bound = np.sum(2.0 / lam[None, :] * (np.abs(u[mask]) @ B.T), axis=0)
    assert np.all(np.abs(x_last) <= bound * (1 + 1e-3) + 1e-6)
