"""`Split`: a model split once into its arrays and the rest, and the compiled
training step and forward pass that take it (`s5ts.training._split`)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from s5ts.nn import IdentityEncoder, S5Block, SequenceNetwork
from s5ts.training import Split, make_optimizer, mse_loss, run_batch, train_step, with_learning_rates
from s5ts.training._loop import step_keys
from s5ts.training._optimizer import init_optimizer_state


def _network(seed=0, d_model=8, pooling="mean"):
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    blocks = [S5Block(d_model, 4, key=k1)]
    return SequenceNetwork(IdentityEncoder(2), blocks, eqx.nn.Linear(d_model, 1, key=k2), pooling=pooling, key=k3)


def _batch():
    rng = np.random.default_rng(0)
    mask = np.arange(6)[None, :] < np.array([[6], [4], [2]])
    return {
        "u": rng.normal(size=(3, 6, 2)).astype(np.float32) * mask[..., None],
        "gaps": rng.uniform(0.5, 2.0, (3, 6)).astype(np.float32) * mask,
        "mask": mask,
        "y": rng.normal(size=(3, 1)).astype(np.float32),
        "weights": np.array([1.0, 2.0, 0.5], np.float32),
    }


def test_a_split_combines_back_into_the_same_pytree():
    model = _network()
    split = Split.of(model)
    again = split.static.combine(split.arrays)
    assert jax.tree.structure(again) == jax.tree.structure(model)
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(model)):
        assert a is b
    assert sum(a is not None for a in split.arrays) == len(jax.tree.leaves(eqx.filter(model, eqx.is_array)))


def test_equal_networks_have_equal_static_parts_and_others_do_not():
    # Equal static parts share a compiled program; other weights change no static part.
    a, b = Split.of(_network(0)), Split.of(_network(1))
    assert a.static == b.static and hash(a.static) == hash(b.static)
    wider = Split.of(_network(0, d_model=6))
    assert wider.static != a.static  # the arrays' shapes differ, not the static part alone
    other = Split.of(_network(0, pooling="last"))
    assert other.static != a.static


def test_arrays_of_a_pytree_of_another_structure_is_an_error():
    split = Split.of(_network())
    with pytest.raises(ValueError, match="structure changed"):
        split.static.arrays_of((_network(), 1.0))


def test_the_compiled_step_equals_an_eager_step_and_its_keys_equal_splitting_one_at_a_time():
    model = _network()
    optimizer = make_optimizer(0.01, 1.0)
    opt_state = init_optimizer_state(model, 0.01, 1.0)
    batch = _batch()
    rates = {"regular": np.float32(0.05), "ssm": np.float32(0.02)}
    key = jax.random.key(3)

    # Each step's key: as splitting the key one step at a time.
    chain, step_data = step_keys(key, 3)
    k = key
    for i in range(3):
        k, step_key = jax.random.split(k)
        np.testing.assert_array_equal(step_data[i], jax.random.key_data(step_key))
        np.testing.assert_array_equal(chain[i], jax.random.key_data(k))

    split = Split.of((model, opt_state))
    arrays, loss, _ = train_step(split.static, optimizer, mse_loss, None, split.arrays, batch, None, rates, step_data[0])
    stepped, stepped_state = split.static.combine(arrays)

    # The same step, eagerly: the weighted mean loss, its gradient, the optimiser's update.
    keys = jax.random.split(jax.random.wrap_key_data(step_data[0]), 3)

    eager = jax.tree.map(jnp.asarray, batch)

    def mean_loss(model):
        outputs, _ = run_batch(model, eager, None, keys, inference=False)
        total, count = mse_loss(outputs, eager["y"], eager["weights"])
        return total / count

    expected_loss, grads = eqx.filter_value_and_grad(mean_loss)(model)
    params = eqx.filter(model, eqx.is_inexact_array)
    with jax.numpy_dtype_promotion("standard"):
        updates, _ = optimizer.update(grads, with_learning_rates(opt_state, rates), params)
    expected = eqx.apply_updates(model, updates)
    np.testing.assert_allclose(float(loss), float(expected_loss), rtol=1e-5)
    for got, want in zip(jax.tree.leaves(eqx.filter(stepped, eqx.is_array)), jax.tree.leaves(eqx.filter(expected, eqx.is_array))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-6)
    assert jax.tree.structure(stepped_state) == jax.tree.structure(opt_state)
    assert not all(jnp.array_equal(a, b) for a, b in zip(jax.tree.leaves(stepped), jax.tree.leaves(model)))
