"""Losses on one padded batch. Each returns (weighted sum of per-element
losses, sum of the weights), so batches of different padding weigh
correctly and a series of weight 2 counts as two copies of it.

`outputs` is the vmapped network output: per step `(B, L, K)` (or a
`(mean, var)` pair of those), per sequence `(B, K)`; `targets` has the same
leading shape; `weights` (B, L) or (B,) float: each real step's / row's
weight (its series' `sample_weight`), 0 for padding.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

VARIANCE_FLOOR = 1e-6


def _weighted(per_element, weights):
    # per_element (B, [L,] K): average over K, weight by real steps/rows.
    # `where` first: padding may hold anything (inf, NaN), and 0 * NaN = NaN.
    weights = weights.astype(per_element.dtype)
    per_item = jnp.where(weights > 0, jnp.mean(per_element, axis=-1), 0.0)
    return jnp.sum(per_item * weights), jnp.sum(weights)


def mse_loss(outputs, targets, weights):
    return _weighted((outputs - targets) ** 2, weights)


def gaussian_nll_loss(outputs, targets, weights):
    mean, var = outputs
    var = jnp.maximum(var, VARIANCE_FLOOR)
    nll = 0.5 * (jnp.log(2 * jnp.pi * var) + (targets - mean) ** 2 / var)
    return _weighted(nll, weights)


def cross_entropy_loss(outputs, targets, weights):
    # outputs: logits (B, C); targets: integer labels (B,)
    log_probs = jax.nn.log_softmax(outputs, axis=-1)
    picked = jnp.take_along_axis(log_probs, targets[..., None].astype(jnp.int32), axis=-1)
    return _weighted(-picked, weights)


def point_prediction(outputs):
    """The mean of a Gaussian head, or the outputs themselves."""
    return outputs[0] if isinstance(outputs, tuple) else outputs


def mean_over_copies(copies: list):
    r"""One output from the outputs of several copies of the same inputs
    (`copies`, each as `point_prediction` reads it): their mean; for a
    Gaussian head's `(mean, var)` pairs, the moments of the equal mixture
    of the copies' Gaussians, the mean of the means and
    $\overline{\sigma^2} + \overline{\mu^2} - \bar\mu^2$ (the mean of the
    variances plus the variance of the means, so the copies' disagreement
    widens the prediction)."""
    if isinstance(copies[0], tuple):
        means = jnp.stack([mean for mean, _ in copies])
        variances = jnp.stack([var for _, var in copies])
        mean = jnp.mean(means, axis=0, keepdims=True)
        return mean[0], jnp.mean(variances + jnp.square(means - mean), axis=0)
    return jnp.mean(jnp.stack(copies), axis=0)


class SquaredErrorInUnits(eqx.Module):
    """MSE of the point prediction in the targets' original units, for
    targets standardised with `std` (K,): the model-selection metric."""

    std: jax.Array

    def __call__(self, outputs, targets, weights):
        error = point_prediction(outputs) - targets
        return _weighted((error * jnp.broadcast_to(self.std, error.shape)) ** 2, weights)
