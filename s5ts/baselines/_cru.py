r"""The Continuous Recurrent Unit (CRU; Schirmer et al., ICML 2022) as an Equinox module.

A continuous-discrete Kalman filter in a learned latent space: each step is
encoded into a latent observation with a variance, the belief is predicted
over the gap since the last observation with locally linear dynamics
(`_cru_math.predict`) and then updated (`_cru_math.kalman_update`); the
posterior belief is decoded into a Gaussian per step (causal filtering).
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from ..nn import ENCODERS, IdentityEncoder, PendulumCNN, make_encoder
from ._cru_math import (
    MAX_DOUBLINGS,
    Covariance,
    band_indices,
    elup1,
    kalman_update,
    l2_normalise,
    locally_linear_transition,
    predict,
)


# Module-level activations, so a fitted CRU pickles: `jnp.tanh` (a wrapped
# ufunc) and MLP's default final activation (a lambda) cannot be pickled.
def _tanh(x):
    return jnp.tanh(x)


def _identity(x):
    return x


def _inverse_softplus(y: float) -> float:
    return math.log(math.expm1(y))


class CRU(eqx.Module):
    r"""Continuous Recurrent Unit: a Kalman filter with locally linear latent dynamics.

    Per step k: features $h_k$ = encoder($u_k$) (L2-normalised for images),
    latent observation $y_k$ = Linear($h_k$), its variance
    $r_k$ = elup1(Linear($h_k$)). The belief $(\mu, \Sigma)$ over a latent state
    of size $2m$ starts at $\mu = 0$, $\Sigma = \operatorname{diag}(\sigma^u, \sigma^l)$
    (learnable, initially 10); at each observed step it is predicted over the
    time elapsed since the previous observed step under
    $dz = A(\mu) z\,dt + dW$, $\operatorname{Cov}(dW) = Q\,dt$,
    $A(\mu) = \sum_k \operatorname{softmax}(W\mu)_k A_k$ ($K$ banded basis
    matrices, initially 0; $Q$ diagonal, initially 0.1), then updated with
    $y_k, r_k$. No prediction happens before the first observed step (its gap
    is ignored). The posterior mean and covariance diagonals are decoded into
    a per-step mean (Linear → tanh → Linear) and variance
    (Linear → tanh → Linear → elup1).

    Steps with `mask` False are not observations: they leave the belief
    unchanged, their gap is carried over to the next observed step, and their
    output is the current belief decoded. Their inputs and gaps may be
    anything, NaN included.

    **Arguments:**

    - `in_features`: features per step (576 for 24×24 frames with the CNN).
    - `out_features`: outputs per step (2 for the pendulum's sin/cos).
    - `encoder`: `"pendulum_cnn"` (frames) or `"identity"` (tabular: the
      observation heads are then linear in the raw features).
    - `latent_obs_size`: m, half the latent state size (15).
    - `num_basis`: K, the number of basis matrices (15).
    - `bandwidth`: half-width of the band of each m×m block (3).
    - `hidden_size`: width of the decoders (30).
    - `l2_normalise`: L2-normalise the encoder features; default True for
      `"pendulum_cnn"`, False for `"identity"`.
    - `max_doublings`: bound on the doublings in `predict` (see there).
    - `key`: a `jax.random.PRNGKey`.

    With the defaults and the CNN the model has 14 359 parameters.

    ```python
    >>> import jax, jax.numpy as jnp
    >>> cru = CRU(3, 2, encoder="identity", key=jax.random.key(0))
    >>> mean, var = cru(jnp.ones((5, 3)), jnp.ones(5), jnp.ones(5, bool))
    >>> mean.shape, var.shape
    ((5, 2), (5, 2))

    ```
    """

    encoder: IdentityEncoder | PendulumCNN
    obs_mean: eqx.nn.Linear
    obs_var: eqx.nn.Linear
    initial_cov_param: Float[Array, "2 m"]
    diffusion_param: Float[Array, " n"]
    basis_band: Float[Array, "K 4 n_band"]
    coefficient_net: eqx.nn.Linear
    mean_decoder: eqx.nn.MLP
    var_decoder: eqx.nn.MLP
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    latent_obs_size: int = eqx.field(static=True)
    bandwidth: int = eqx.field(static=True)
    l2_normalise: bool = eqx.field(static=True)
    max_doublings: int = eqx.field(static=True)

    def __init__(
        self,
        in_features: int,
        out_features: int = 2,
        *,
        encoder: str = "pendulum_cnn",
        latent_obs_size: int = 15,
        num_basis: int = 15,
        bandwidth: int = 3,
        hidden_size: int = 30,
        l2_normalise: bool | None = None,
        max_doublings: int = MAX_DOUBLINGS,
        key: PRNGKeyArray,
    ):
        if encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {encoder!r}; choose one of {ENCODERS}")
        keys = jax.random.split(key, 6)
        m = latent_obs_size
        self.encoder = make_encoder(encoder, in_features, key=keys[0])
        features = self.encoder.out_features
        self.obs_mean = eqx.nn.Linear(features, m, key=keys[1])
        self.obs_var = eqx.nn.Linear(features, m, key=keys[2])
        # dtype=float: a weakly typed parameter turns strong after the first
        # optimiser update, which would compile the training step again.
        self.initial_cov_param = jnp.full((2, m), _inverse_softplus(10.0), dtype=float)
        self.diffusion_param = jnp.full((2 * m,), _inverse_softplus(0.1), dtype=float)
        n_band = band_indices(m, bandwidth)[0].size
        self.basis_band = jnp.zeros((num_basis, 4, n_band))
        self.coefficient_net = eqx.nn.Linear(2 * m, num_basis, key=keys[3])
        self.mean_decoder = eqx.nn.MLP(
            2 * m, out_features, hidden_size, depth=1, activation=_tanh, final_activation=_identity, key=keys[4]
        )
        self.var_decoder = eqx.nn.MLP(
            3 * m, out_features, hidden_size, depth=1, activation=_tanh, final_activation=_identity, key=keys[5]
        )
        self.in_features = in_features
        self.out_features = out_features
        self.latent_obs_size = m
        self.bandwidth = bandwidth
        self.l2_normalise = encoder == "pendulum_cnn" if l2_normalise is None else bool(l2_normalise)
        self.max_doublings = max_doublings

    def _observe(self, u: Float[Array, " d_in"]) -> tuple[Float[Array, " m"], Float[Array, " m"]]:
        """The latent observation and its variance for one step."""
        h = self.encoder(u)
        if self.l2_normalise:
            h = l2_normalise(h)  # all-zero ReLU features happen: keep gradients finite
        return self.obs_mean(h), elup1(self.obs_var(h))

    def __call__(
        self,
        u: Float[Array, "L d_in"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
    ) -> tuple[Float[Array, "L d_out"], Float[Array, "L d_out"]]:
        """Filter one sequence.

        **Arguments:**

        - `u`: inputs, shape (L, in_features).
        - `gaps`: time since the previous step, shape (L,); `gaps[0]` is ignored.
        - `mask`: True for observed steps, shape (L,); default all True.

        **Returns:** `(mean, var)`, each of shape (L, out_features): the
        predicted Gaussian at every step, from the observations up to it.
        """
        if mask is None:
            mask = jnp.ones(u.shape[0], bool)
        # Sanitise unobserved steps before anything sees them: NaN must not
        # reach the encoder, nor the gradients through jnp.where.
        u = jnp.where(mask[:, None], u, 0)
        gaps = jnp.where(jnp.isfinite(gaps), gaps, 0)
        obs, obs_var = jax.vmap(self._observe)(u)

        m = self.latent_obs_size
        diffusion = jax.nn.softplus(self.diffusion_param)
        initial_cov = jax.nn.softplus(self.initial_cov_param)
        cov0 = Covariance(upper=initial_cov[0], lower=initial_cov[1], side=jnp.zeros(m, initial_cov.dtype))
        mean0 = jnp.zeros(2 * m, initial_cov.dtype)

        def step(carry, inputs):
            mean, cov, started, elapsed = carry
            y, r, gap, observed = inputs
            elapsed = elapsed + gap
            # dt = 0 (an exact identity) until the first observation.
            dt = jnp.where(started & observed, elapsed, 0)
            transition = locally_linear_transition(
                mean, self.basis_band, self.coefficient_net, self.bandwidth
            )
            prior = predict(mean, cov, transition, diffusion, dt, max_doublings=self.max_doublings)
            posterior = kalman_update(*prior, y, r)
            mean, cov = jax.tree.map(lambda new, old: jnp.where(observed, new, old), posterior, (mean, cov))
            started = started | observed
            elapsed = jnp.where(observed, 0, elapsed)
            return (mean, cov, started, elapsed), (mean, cov)

        carry0 = (mean0, cov0, jnp.array(False), jnp.zeros((), gaps.dtype))
        _, (means, covs) = jax.lax.scan(step, carry0, (obs, obs_var, gaps, mask))
        out_mean = jax.vmap(self.mean_decoder)(means)
        out_var = elup1(jax.vmap(self.var_decoder)(jnp.concatenate(covs, axis=-1)))
        return out_mean, out_var


def cru_gaussian_nll(
    mean: Float[Array, "L d"],
    var: Float[Array, "L d"],
    target: Float[Array, "L d"],
    mask: Bool[Array, " L"],
) -> Float[Array, ""]:
    r"""Gaussian negative log-likelihood of one sequence, as CRU trains it.

    $\frac{1}{|\text{observed}|}\sum_{k\ \text{observed}} \sum_j \tfrac12
    \left(\log 2\pi + \log v_{kj} + (t_{kj} - \mu_{kj})^2 / v_{kj}\right)$ with
    $v = \max(\text{var}, 10^{-6})$. Average it over the batch for CRU's loss.

    **Arguments:**

    - `mean`, `var`: the predicted Gaussian, shape (L, d).
    - `target`: the targets, shape (L, d); anything (NaN included) where
      `mask` is False.
    - `mask`: True for the steps to score, shape (L,).

    **Returns:** the loss, a scalar (0 when no step is scored).
    """
    target = jnp.where(mask[:, None], target, 0)  # no NaN, even in gradients
    var = jnp.maximum(var, 1e-6)
    per_step = 0.5 * jnp.sum(jnp.log(2 * jnp.pi) + jnp.log(var) + (target - mean) ** 2 / var, axis=-1)
    return jnp.sum(jnp.where(mask, per_step, 0)) / jnp.maximum(jnp.sum(mask, dtype=per_step.dtype), 1)
