"""Shared fixtures: PRNG keys, float64 scope, a float64 check and a tree comparison helper."""

import inspect
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def release_compiled_programs():
    """After each test, s5ts's guard against too many compiled programs kept
    in memory (`s5ts.training.release_compiled_programs`): the suite compiles
    thousands, and `train` alone only checks once per fit."""
    yield
    from s5ts.training import release_compiled_programs

    release_compiled_programs()


@pytest.fixture
def getkey():
    """A fresh PRNG key on every call (equinox's test idiom)."""
    counter = itertools.count()
    return lambda: jax.random.key(next(counter))


@pytest.fixture
def x64():
    """Run the test body with 64-bit JAX types."""
    with jax.enable_x64(True):
        yield


def float64_module(tree):
    """`tree` unchanged, after checking that every floating leaf is float64
    (or complex128): modules built under x64 must be float64 end to end."""
    dtypes = {
        str(leaf.dtype)
        for leaf in jax.tree.leaves(tree)
        if isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jnp.inexact)
    }
    assert dtypes <= {"float64", "complex128"}, f"not float64 end to end: {sorted(dtypes)}"
    return tree


def tree_allclose(x, y, *, rtol=1e-5, atol=1e-8):
    leaves_x, tree_x = jax.tree.flatten(x)
    leaves_y, tree_y = jax.tree.flatten(y)
    return tree_x == tree_y and all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol) for a, b in zip(leaves_x, leaves_y)
    )


def unchecked(function):
    """`function` without the run-time check of its jaxtyping annotations
    that the test suite adds (`--jaxtyping-packages`): to test the function's
    own validation, which is what users without that check meet."""
    return inspect.unwrap(function)
