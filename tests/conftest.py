"""Shared fixtures: PRNG keys, float64 scope, and a tree comparison helper."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest


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


def to_float64(tree):
    """Cast every floating leaf of an Equinox module to float64 (inside x64)."""
    return jax.tree.map(
        lambda leaf: leaf.astype(jnp.float64)
        if isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jnp.floating)
        else leaf,
        tree,
    )


def tree_allclose(x, y, *, rtol=1e-5, atol=1e-8):
    leaves_x, tree_x = jax.tree.flatten(x)
    leaves_y, tree_y = jax.tree.flatten(y)
    return tree_x == tree_y and all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol) for a, b in zip(leaves_x, leaves_y)
    )
