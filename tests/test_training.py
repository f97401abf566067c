"""s5ts.estimators._training and _losses: length buckets bound the number of
compilations, the learning-rate schedule, the optimiser's parameter groups,
batching and the padded losses against naive references."""

import logging
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from s5ts import S5Regressor
from s5ts.baselines import CRURegressor
from s5ts.data import bucket_length
from s5ts.estimators._losses import cross_entropy_loss, gaussian_nll_loss, mse_loss
from s5ts.estimators._training import (
    Sequences,
    TrainingConfig,
    TrainingState,
    batch_rows,
    learning_rate_at,
    make_optimizer,
    padded_batch,
    parameter_labels,
    train,
)
from s5ts.nn import IdentityEncoder, S5Block, SequenceNetwork

# --------------------------------------------------------------------------
# compilations: one training step per length bucket


class _Compilations(logging.Handler):
    """Counts JAX's "Compiling jit(train_step) ..." log records."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.count = 0

    def emit(self, record):
        if "Compiling jit(train_step)" in record.getMessage():
            self.count += 1


def count_train_step_compilations(X, y, estimator=S5Regressor, **params):
    handler = _Compilations()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            estimator(**params).fit(X, y)
    finally:
        logger.removeHandler(handler)
    return handler.count


def series_of_lengths(lengths, n_features, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(L), n_features)) for L in lengths], rng.normal(size=len(lengths))


# Three features and batch_size=4 are used by no other test, so every shape
# here is new to JAX's caches and each bucket compiles exactly once.
BUCKET_FIT = dict(
    n_layers=1, d_model=8, state_size=4, batch_size=4, max_epochs=1, validation_fraction=0.0, random_state=0
)


def test_lengths_5_to_5000_compile_one_step_per_bucket():
    lengths = [5, 6, 7, 8, 700, 800, 900, 1000, 4500, 5000]
    X, y = series_of_lengths(lengths, 3)
    buckets = {bucket_length(L) for L in lengths}
    assert buckets == {8, 1024, 8192}
    compiles = count_train_step_compilations(X, y, **BUCKET_FIT)
    assert compiles == len(buckets)  # not one per distinct length (10)
    assert compiles <= math.log2(max(lengths) / min(lengths)) + 2


@pytest.mark.parametrize(
    "estimator, n_features, params",  # feature counts no other test compiles
    [
        (S5Regressor, 7, dict(n_layers=1, d_model=8, state_size=4)),
        (CRURegressor, 6, dict(encoder="identity", latent_obs_size=3, num_basis=2, hidden_size=5)),
    ],
)
def test_later_epochs_compile_nothing_new(estimator, n_features, params):
    # A weakly typed initial parameter turns strong after the first update
    # and used to compile CRU's training step a second time.
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(12, n_features)) for _ in range(10)]
    y = [rng.normal(size=(12, 1)) for _ in range(10)]
    common = dict(batch_size=5, max_epochs=3, validation_fraction=0.0, random_state=0)
    assert count_train_step_compilations(X, y, estimator, **params, **common) == 1


@pytest.mark.slow
def test_lengths_spread_over_5_to_5000_compile_at_most_log2_ratio_plus_2():
    lengths = np.unique(np.geomspace(5, 5000, 24).astype(int))
    X, y = series_of_lengths(lengths, 5)
    compiles = count_train_step_compilations(X, y, **{**BUCKET_FIT, "batch_size": 3})
    assert compiles == len({bucket_length(L) for L in lengths}) == 11
    assert compiles <= math.log2(5000 / 5) + 2


def test_batch_rows_bounds_the_number_of_row_counts():
    assert [batch_rows(n, 32) for n in (1, 2, 3, 5, 16, 17, 33, 1000)] == [1, 2, 4, 8, 16, 32, 32, 32]
    assert batch_rows(20, 8) == 8


# --------------------------------------------------------------------------
# learning-rate schedule


def test_learning_rate_warmup_then_cosine():
    rates = [learning_rate_at(s, 100, 10, 2.0) for s in range(100)]
    np.testing.assert_allclose(rates[:10], 2.0 * np.arange(1, 11) / 10)
    np.testing.assert_allclose(rates[10], 2.0)
    assert all(a >= b for a, b in zip(rates[10:], rates[11:]))  # decays monotonically
    np.testing.assert_allclose(rates[55], 2.0 * 0.5 * (1 + math.cos(math.pi * 45 / 90)))
    assert learning_rate_at(100, 100, 10, 2.0) == pytest.approx(0.0, abs=1e-12)


def test_constant_schedule_after_warmup():
    assert learning_rate_at(0, None, 4, 1.0) == 0.25
    assert [learning_rate_at(s, None, 4, 1.0) for s in (4, 50, 10**6)] == [1.0, 1.0, 1.0]
    assert learning_rate_at(0, None, 0, 3.0) == 3.0


# --------------------------------------------------------------------------
# optimiser parameter groups


@pytest.fixture(scope="module")
def network():
    key = jax.random.key(0)
    k1, k2, k3 = jax.random.split(key, 3)
    blocks = [S5Block(8, 4, key=k1)]
    return SequenceNetwork(IdentityEncoder(2), blocks, eqx.nn.Linear(8, 1, key=k2), pooling="mean", key=k3)


def test_ssm_parameters_are_labelled(network):
    params = eqx.filter(network, eqx.is_inexact_array)
    labels = parameter_labels(params)
    ssm = network.blocks[0].ssm
    for name in ("log_neg_real", "lambda_imag", "B_re", "B_im", "log_step"):
        assert getattr(labels.blocks[0].ssm, name) == "ssm"
    for name in ("C_re", "C_im", "D"):
        assert getattr(labels.blocks[0].ssm, name) == "regular"
    assert labels.projection.weight == "regular" and labels.head.weight == "regular"
    assert ssm.B_re.shape == (4, 8)


def test_weight_decay_spares_the_ssm_parameters(network):
    params = eqx.filter(network, eqx.is_inexact_array)
    optimizer = make_optimizer(0.1, None)
    state = optimizer.init(params)
    zero = jax.tree.map(jnp.zeros_like, params)
    updates, _ = optimizer.update(zero, state, params)
    labels = parameter_labels(params)
    for update, param, label in zip(jax.tree.leaves(updates), jax.tree.leaves(params), jax.tree.leaves(labels)):
        expected = 0.1 * param if label == "regular" else jnp.zeros_like(param)
        np.testing.assert_allclose(update, expected, rtol=1e-6)


def test_gradients_are_clipped_to_the_global_norm(network):
    params = eqx.filter(network, eqx.is_inexact_array)
    clipped = make_optimizer(0.0, 1.0)
    huge = jax.tree.map(lambda p: jnp.full_like(p, 1e6), params)
    # Adam normalises the first step either way; the clipped gradient shows in
    # Adam's first moments (each parameter sits in one group), whose global
    # norm is (1 - b1) * 1.
    _, state = clipped.update(huge, clipped.init(params), params)
    moments = optax.tree_utils.tree_get_all_with_path(state, "mu")
    assert len(moments) == 2  # the "regular" and the "ssm" group
    leaves = [leaf for _, mu in moments for leaf in jax.tree.leaves(mu) if isinstance(leaf, jax.Array)]
    norm = math.sqrt(sum(float(jnp.sum(leaf**2)) for leaf in leaves))
    assert norm == pytest.approx(0.1, rel=1e-4)


# --------------------------------------------------------------------------
# batches and losses


def _sequences(per_step):
    rng = np.random.default_rng(0)
    lengths = [3, 5, 2]
    inputs = tuple(rng.normal(size=(L, 2)).astype(np.float32) for L in lengths)
    gaps = tuple(np.ones(L, np.float32) for L in lengths)
    if per_step:
        targets = tuple(rng.normal(size=(L, 1)).astype(np.float32) for L in lengths)
    else:
        targets = rng.normal(size=(3, 1)).astype(np.float32)
    return Sequences(inputs=inputs, gaps=gaps, targets=targets, per_step=per_step)


def test_padded_batch_marks_real_rows_and_steps():
    data = _sequences(per_step=False)
    batch = padded_batch(data, np.array([0, 2]), rows=4)
    # lengths 3 and 2: bucket 8, capped at the longest series of the data (5)
    assert batch["u"].shape == (4, 5, 2) and batch["gaps"].shape == (4, 5)
    np.testing.assert_array_equal(batch["weights"], [True, True, False, False])
    np.testing.assert_array_equal(batch["mask"].sum(axis=1), [3, 2, 0, 0])
    assert (batch["gaps"][~batch["mask"]] == 0).all()  # a padded step leaves the state alone
    np.testing.assert_array_equal(batch["y"][:2], data.targets[[0, 2]])
    per_step = padded_batch(_sequences(per_step=True), np.array([1]), rows=2)
    np.testing.assert_array_equal(per_step["weights"], per_step["mask"])


def test_losses_ignore_padding_and_match_naive_references():
    rng = np.random.default_rng(1)
    outputs = rng.normal(size=(3, 4, 2))
    targets = rng.normal(size=(3, 4, 2))
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    outputs_padded = np.where(weights[..., None], outputs, 1e6)  # garbage in padding
    total, count = mse_loss(jnp.asarray(outputs_padded), jnp.asarray(targets), jnp.asarray(weights))
    naive = [np.mean((outputs[b, k] - targets[b, k]) ** 2) for b in range(3) for k in range(4) if weights[b, k]]
    assert float(count) == 7
    np.testing.assert_allclose(float(total), np.sum(naive), rtol=1e-6)

    var = rng.uniform(0.5, 2.0, size=outputs.shape)
    total, _ = gaussian_nll_loss((jnp.asarray(outputs), jnp.asarray(var)), jnp.asarray(targets), jnp.asarray(weights))
    nll = 0.5 * (np.log(2 * np.pi * var) + (targets - outputs) ** 2 / var)
    np.testing.assert_allclose(float(total), nll.mean(axis=-1)[weights].sum(), rtol=1e-6)

    logits = rng.normal(size=(4, 3))
    labels = np.array([0, 2, 1, 1])
    row_weights = np.array([True, True, True, False])
    total, count = cross_entropy_loss(jnp.asarray(logits), jnp.asarray(labels), jnp.asarray(row_weights))
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(float(total), -sum(log_p[i, labels[i]] for i in range(3)), rtol=1e-6)
    assert float(count) == 3


def test_train_rejects_an_unknown_schedule(network):
    data = _sequences(per_step=False)
    state = TrainingState(model=network, opt_state=None)
    with pytest.raises(ValueError, match="schedule must be"):
        train(state, data, None, mse_loss, mse_loss, TrainingConfig(), rng=np.random.default_rng(0),
              key=jax.random.key(0), schedule="linear")
