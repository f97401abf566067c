"""s5ts.training: length buckets bound the number of compilations, the
learning-rate schedule, the optimiser's parameter groups, early stopping,
batching and the padded losses against naive references."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from conftest import compilations
from s5ts import S5Classifier, S5Regressor
from s5ts.baselines import CRURegressor, DSSRegressor
from s5ts.data import CapAtLongest, PowersOfTwo, bucket_length, plan_buckets
from s5ts.estimators import AUTO_OBSERVATION_BUDGET
from s5ts.nn import IdentityEncoder, S5Block, SequenceNetwork
from s5ts.training import (
    EarlyStopping,
    NetworkSpec,
    Sequences,
    Thinning,
    TrainingConfig,
    TrainingState,
    batch_rows,
    cross_entropy_loss,
    gaussian_nll_loss,
    make_optimizer,
    mse_loss,
    padded_batch,
    parameter_labels,
    schedule_scales,
    train,
    with_learning_rates,
)

# --------------------------------------------------------------------------
# compilations: one training step per length bucket


def count_train_step_compilations(X, y, estimator=S5Regressor, **params):
    with compilations() as compiled:
        estimator(**params).fit(X, y)
    return compiled.count


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
    assert {bucket_length(L) for L in lengths} == {8, 1024, 8192}
    # 8 -> 1024 adds 4 * 1016 padded steps (within the budget); 1024 -> 5000
    # would add 4 * 3976: the plan keeps two buckets.
    buckets = plan_buckets(lengths)
    assert buckets.tolist() == [1024, 5000]
    compiles = count_train_step_compilations(X, y, packing=False, observation_dropout=0.0, **BUCKET_FIT)
    assert compiles == len(buckets)  # not one per distinct length (10)
    assert compiles <= math.log2(max(lengths) / min(lengths)) + 2
    # observation_dropout="auto" thins both buckets' long series to about
    # 128 observations and cuts their batches at one length: one shape
    auto = Thinning(0.3, AUTO_OBSERVATION_BUDGET)
    assert auto.kept_bound([1024]) == auto.kept_bound([5000])
    assert count_train_step_compilations(X, y, packing=False, **BUCKET_FIT) == 1
    # packed end to end instead (the default here: the buckets pad a lot), one shape
    assert count_train_step_compilations(X, y, **BUCKET_FIT) == 1


def _naive_plan(lengths, budget):
    """Brute force over every way to merge adjacent power-of-two buckets:
    the fewest buckets whose extra padding stays within `budget`."""
    import itertools

    longest = max(lengths)
    base = sorted({min(bucket_length(L), longest) for L in lengths})
    best = base
    for keep in itertools.product([False, True], repeat=len(base) - 1):
        kept = [b for b, k in zip(base, keep) if k] + [base[-1]]
        extra = sum(
            next(b for b in kept if b >= min(bucket_length(L), longest)) - min(bucket_length(L), longest) for L in lengths
        )
        if extra <= budget and len(kept) < len(best):
            best = kept
    return best


@pytest.mark.parametrize("seed", range(6))
def test_bucket_plan_merges_as_far_as_the_budget_allows(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 3000, rng.integers(3, 40)).tolist()
    budget = int(rng.choice([0, 500, 5000, 2**14]))
    plan = plan_buckets(lengths, budget=budget).tolist()
    assert plan[-1] == max(lengths) and plan == sorted(plan)
    # as few buckets as any merge of adjacent buckets within the budget
    # (greedy cheapest-first can tie but not lose on these sizes)
    assert len(plan) <= len(_naive_plan(lengths, budget)) + 1
    padded = [next(b for b in plan if b >= L) for L in lengths]
    base = [min(bucket_length(L), max(lengths)) for L in lengths]
    assert sum(padded) - sum(base) <= budget
    if budget == 0:
        assert plan == sorted(set(base))


@pytest.mark.parametrize(
    "estimator, n_features, params",  # feature counts no other test compiles
    [
        (S5Regressor, 7, dict(n_layers=1, d_model=8, state_size=4)),
        (CRURegressor, 6, dict(encoder="identity", latent_obs_size=3, num_basis=2, hidden_size=5)),
        (DSSRegressor, 9, dict(n_layers=1, d_model=8, state_size=4)),
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


def test_a_first_fit_compiles_its_initialisation_once_and_one_forward_pass():
    # Five features and d_model=6 are used by no other test: every program
    # here is new to this process. Built op by op, the network would compile
    # a program per random draw (jax.random's _normal, _uniform, ...); the
    # validation pass and predict() would compile two forward passes.
    rng = np.random.default_rng(5)
    X = [rng.normal(size=(int(L), 5)) for L in rng.integers(5, 30, 24)]
    y = rng.normal(size=24)
    # 13 steps an epoch (1 batch, 13 passes): a schedule length no other test uses, so its program is new too.
    params = dict(
        n_layers=1, d_model=6, state_size=4, max_epochs=2, validation_fraction=0.2, min_epoch_steps=13, random_state=0
    )
    with compilations() as first:
        S5Regressor(**params).fit(X, y).predict(X[:3])
    assert first.names["initial_model_and_state"] == 1
    assert first.names["_normal"] == first.names["_uniform"] == 0
    assert first.names["predict_batch"] == 1  # validation and prediction share it
    assert first.names["_scales"] == 1  # the learning-rate schedule: once, not per epoch
    with compilations() as again:  # an equal network: nothing to compile
        S5Regressor(**params).fit(X, y)
    assert sum(again.names.values()) == 0, again.names


@pytest.mark.parametrize("estimator", [S5Regressor, CRURegressor])
def test_the_network_built_in_one_program_equals_the_one_built_op_by_op(estimator, getkey):
    params = dict(encoder="identity", hidden_size=5) if estimator is CRURegressor else dict(d_model=8, bidirectional=True)
    spec = NetworkSpec.of(estimator(**params), 3, True, 2)
    key = getkey()
    config = TrainingConfig()
    state = config.initial_state(spec, key)
    eager = spec(key)
    assert jax.tree.structure(state.model) == jax.tree.structure(eager)
    arrays = [jax.tree.leaves(eqx.filter(model, eqx.is_array)) for model in (state.model, eager)]
    assert len(arrays[0]) > 5
    for built, reference in zip(*arrays):
        np.testing.assert_allclose(built, reference, rtol=1e-6, atol=1e-7)
    reference_state = config.init_optimizer_state(eager)
    assert jax.tree.structure(state.opt_state) == jax.tree.structure(reference_state)
    for built, reference in zip(jax.tree.leaves(state.opt_state), jax.tree.leaves(reference_state)):
        np.testing.assert_array_equal(built, reference)


def test_network_specs_compare_by_value():
    def spec(**params):
        return NetworkSpec.of(S5Classifier(**params), 3, False, 2)

    assert spec(class_weight={"a": 2.0}) == spec(class_weight={"a": 2.0})
    assert hash(spec(class_weight={"a": 2.0})) == hash(spec(class_weight={"a": 2.0}))
    assert spec(class_weight={"a": 2.0}) != spec(class_weight={"a": 3.0})
    assert spec(d_model=8) != spec(d_model=16)
    assert NetworkSpec.of(S5Classifier(), 3, False, 2) != NetworkSpec.of(S5Classifier(), 3, False, 3)


def test_batch_rows_bounds_the_number_of_row_counts():
    assert [batch_rows(n, 32) for n in (1, 2, 3, 5, 16, 17, 33, 1000)] == [1, 2, 4, 8, 16, 32, 32, 32]
    assert batch_rows(20, 8) == 8


# --------------------------------------------------------------------------
# learning-rate schedule


def test_learning_rate_warmup_then_cosine():
    rates = schedule_scales(np.arange(101), 100, 10)
    np.testing.assert_allclose(rates[:11], np.arange(11) / 10, atol=1e-7)  # linear from 0
    assert all(a >= b for a, b in zip(rates[10:], rates[11:]))  # decays monotonically
    np.testing.assert_allclose(rates[55], 0.5 * (1 + math.cos(math.pi * 45 / 90)), rtol=1e-6)
    assert rates[100] == pytest.approx(0.0, abs=1e-7)


def test_the_schedule_is_optax_s_evaluated_in_one_program():
    steps = np.arange(40)
    with jax.numpy_dtype_promotion("standard"):  # optax's own mix of int and float
        expected = optax.warmup_cosine_decay_schedule(0.0, 1.0, 7, 40, end_value=0.0)(steps)
    np.testing.assert_allclose(schedule_scales(steps, 40, 7), expected, rtol=1e-6, atol=1e-7)
    with compilations() as compiled:  # a schedule no other test uses
        for epoch in range(4):
            schedule_scales(np.arange(5) + 5 * epoch, 23, 3)
    assert compiled.names["_scales"] == 1


def test_constant_schedule_after_warmup():
    np.testing.assert_allclose(schedule_scales(np.array([0, 1, 4, 50, 10**6]), None, 4), [0, 0.25, 1, 1, 1])
    np.testing.assert_allclose(schedule_scales(np.array([0, 7]), None, 0), [1, 1])
    np.testing.assert_allclose(schedule_scales(np.array([0, 3]), 3, 3), [0, 1])  # no decay steps left


def test_a_small_data_set_passes_over_its_data_until_an_epoch_has_min_epoch_steps():
    config = TrainingConfig(min_epoch_steps=10)
    assert [config.epoch_steps(n) for n in (1, 3, 7, 10, 16)] == [10, 10, 10, 10, 16]  # the last pass cut short
    assert [config.passes_per_epoch(n) for n in (1, 3, 7, 10, 16)] == [10, 4, 2, 1, 1]
    assert TrainingConfig().passes_per_epoch(1) == 1  # None: one pass (CRU, the forecaster)
    assert [TrainingConfig().epoch_steps(n) for n in (1, 3)] == [1, 3]
    X, y = series_of_lengths([6] * 20, 2)
    tiny = dict(n_layers=1, d_model=4, state_size=2, max_epochs=2, batch_size=8, validation_fraction=0.0)
    steps = {}
    for min_steps in (None, 7):
        model = S5Regressor(**tiny, min_epoch_steps=min_steps, random_state=0).fit(X, y)
        steps[min_steps] = model._training_state_.step
        assert len(model.history_) == 2
    assert steps == {None: 2 * 3, 7: 2 * 7}  # 3 batches; the third pass stops at the seventh step


def test_early_stopping_waits_for_the_warm_up_and_a_real_gain():
    stopping = EarlyStopping(patience=2, tol=0.01, start=3)
    flat = [stopping.update(epoch, 1.0) for epoch in range(4)]
    assert flat == [True, False, False, False] and not stopping.should_stop  # epochs 0-2: warm-up
    assert not stopping.update(4, 1.0) and stopping.should_stop
    stopping = EarlyStopping(patience=2, tol=0.01)
    stopping.update(0, 1.0)
    assert stopping.update(1, 0.995)  # the lowest: kept as the best model...
    assert stopping.since_improvement == 1  # ...but below tol: no improvement
    assert stopping.update(2, 0.5) and stopping.since_improvement == 0
    assert not EarlyStopping(None).should_stop


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


def _first_updates(network, weight_decay, rates, gradient):
    """(updates, params, labels) of the optimiser's first step on `gradient`."""
    params = eqx.filter(network, eqx.is_inexact_array)
    optimizer = make_optimizer(weight_decay, None)
    state = with_learning_rates(optimizer.init(params), rates)
    with jax.numpy_dtype_promotion("standard"):  # optax's own code, as train_step runs it
        updates, _ = optimizer.update(jax.tree.map(gradient, params), state, params)
    return jax.tree.leaves(updates), jax.tree.leaves(params), jax.tree.leaves(parameter_labels(params))


def test_weight_decay_spares_the_ssm_parameters(network):
    updates, params, labels = _first_updates(network, 0.1, {"regular": 2.0, "ssm": 3.0}, jnp.zeros_like)
    for update, param, label in zip(updates, params, labels):
        expected = -2.0 * 0.1 * param if label == "regular" else jnp.zeros_like(param)
        np.testing.assert_allclose(update, expected, rtol=1e-6)


def test_each_group_steps_at_its_own_learning_rate(network):
    # Adam's first step is sign(g) (up to eps), so an update is -rate * sign(g).
    updates, _, labels = _first_updates(network, 0.0, {"regular": 0.01, "ssm": 0.5}, jnp.ones_like)
    for update, label in zip(updates, labels):
        np.testing.assert_allclose(update, -(0.01 if label == "regular" else 0.5), rtol=1e-5)


def test_gradients_are_clipped_to_the_global_norm(network):
    params = eqx.filter(network, eqx.is_inexact_array)
    clipped = make_optimizer(0.0, 1.0)
    huge = jax.tree.map(lambda p: jnp.full_like(p, 1e6), params)
    # Adam normalises the first step either way; the clipped gradient shows in
    # Adam's first moments (each parameter sits in one group), whose global
    # norm is (1 - b1) * 1.
    with jax.numpy_dtype_promotion("standard"):  # optax's own code, as train_step runs it
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


def test_batch_lengths_are_the_plan_of_make_batches():
    """`SequenceData.batch_lengths` (how many steps an epoch takes, and of
    which lengths, for in-memory and streamed data alike) equals the padded
    length of every batch `make_batches` plans, in its order."""
    from s5ts.data import assign_buckets, make_batches, plan_buckets

    rng = np.random.default_rng(0)
    for trial in range(50):
        lengths = rng.integers(1, 300, size=int(rng.integers(1, 60)))
        rows = int(rng.integers(1, 40))
        data = Sequences(
            inputs=tuple(np.zeros((n, 1), np.float32) for n in lengths),
            gaps=tuple(np.ones(n, np.float32) for n in lengths),
            cap_length=CapAtLongest() if trial % 2 else PowersOfTwo(),
        )
        buckets = plan_buckets(data.lengths, cap=data.cap_length)
        padded = assign_buckets(data.lengths, buckets)
        plan = make_batches(data.lengths, rows, shuffle=False, buckets=buckets)
        assert data.batch_lengths(rows).tolist() == [int(padded[b[0]]) for b in plan]
        assert data.steps_per_epoch(rows) == len(plan)
