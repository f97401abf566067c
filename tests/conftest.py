"""Shared fixtures: PRNG keys, float64 scope, a float64 check and a tree comparison helper."""

import collections
import contextlib
import inspect
import itertools
import logging
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def release_compiled_programs():
    """Before each test, s5ts's guard against too many compiled programs kept
    in memory (`s5ts.training.release_compiled_programs`): the suite compiles
    thousands, and `train` alone only checks once per fit. It runs at a lower
    share of the limit than `train`'s own check, so that no test starts just
    below that share: a test that counts what its second fit compiles would
    otherwise see the programs dropped between its fits, when the worker
    crossed the share during its first."""
    from s5ts.training import release_compiled_programs
    from s5ts.training._cache import MAPPING_SHARE

    release_compiled_programs(share=0.8 * MAPPING_SHARE)
    yield


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


class _Compilations(logging.Handler):
    """Counts JAX's "Compiling jit(<name>) ..." log records by name."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.names = collections.Counter()

    def emit(self, record):
        match = re.match(r"Compiling jit\((\w+)\)", record.getMessage())
        if match:
            self.names[match.group(1)] += 1

    @property
    def count(self) -> int:
        """The training steps compiled."""
        return self.names["train_step"]


@contextlib.contextmanager
def compilations():
    """`with compilations() as compiled:` ... `compiled.names["predict_batch"]`:
    the programs JAX compiled inside the block, by name (`compiled.count`:
    the training steps)."""
    handler = _Compilations()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield handler
    finally:
        logger.removeHandler(handler)



@pytest.fixture
def own_persistent_cache(tmp_path):
    """JAX's persistent compilation cache in a folder of this test's own,
    every program kept, then as it was. sktime's checks fit the same
    networks under each of an estimator's test parameter sets (another
    learning rate, seed or epoch count): the in-memory programs are keyed
    by every parameter, so each set compiles its network's initialisation
    again, while the compiled code is the same and the disk cache, keyed
    by it, reads it back (the forecaster's check: 213 s against 299 s
    without a disk cache, docs/sktime.md)."""
    from jax.experimental.compilation_cache import compilation_cache

    from s5ts.training._cache import CACHE_SETTINGS, point_cache_at

    before = {name: getattr(jax.config, name) for name in CACHE_SETTINGS}
    try:
        point_cache_at(tmp_path)
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()


def assert_passes_check_estimator(estimator):
    """sktime's whole conformance suite for `estimator`, with zero failures."""
    from sktime.utils.estimator_checks import check_estimator

    results = check_estimator(estimator, raise_exceptions=False, verbose=False)
    failures = {name: str(outcome)[:500] for name, outcome in results.items() if outcome != "PASSED"}
    assert len(results) > 100
    assert not failures, failures


def pytest_collection_modifyitems(config, items):
    """sktime's conformance checks (minutes each) first: with
    `--no-loadscope-reorder` (pyproject.toml) pytest-xdist hands out files
    in collection order, so their files start at once on their own workers.
    (By default it orders files by their number of tests, which left the
    forecaster's one-test file, 7 minutes, for the end: 950 s and 869 s
    for the suite.)"""
    items.sort(key=lambda item: not item.name.startswith("test_sktime_check_estimator"))
