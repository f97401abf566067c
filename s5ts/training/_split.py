"""A pytree split once into its arrays and the rest, for the thousands of
compiled calls a fit makes with one model.

`eqx.filter_jit` splits its arguments into arrays and the rest on every
call, walking the whole network and optimiser state in Python: about 1 ms
a call for the default network, a quarter of a training step in issue
35's estimator case (docs/performance.md, "Splitting the model once").
The training loop, validation and prediction call their compiled
functions with the same structure thousands of times: `Split` walks it
once, and the compiled functions (`jax.jit`, with the `Static` part as a
static argument) take the flat tuple of arrays, which JAX's dispatch
reads without calling back into Python.
"""

from __future__ import annotations

import dataclasses
from typing import Any, final

import equinox as eqx
import jax


@final
class Static:
    """The non-array leaves and the structure of a split pytree: a static
    argument of `jax.jit`, hashed once and compared by value (two fits of an
    equal network share their compiled programs, as with `eqx.filter_jit`).
    Its leaves must be hashable, as `eqx.filter_jit` requires."""

    __slots__ = ("leaves", "treedef", "_hash")

    def __init__(self, leaves: tuple, treedef):
        self.leaves = leaves  # None where the pytree holds an array
        self.treedef = treedef
        self._hash = hash((leaves, treedef))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (
            isinstance(other, Static)
            and self._hash == other._hash
            and self.treedef == other.treedef
            and self.leaves == other.leaves
        )

    def combine(self, arrays: tuple) -> Any:
        """The pytree with `arrays` (a flat tuple, None at the non-array
        leaves) in place of its arrays; also inside a compiled function."""
        return jax.tree.unflatten(self.treedef, [a if s is None else s for a, s in zip(arrays, self.leaves)])

    def arrays_of(self, tree) -> tuple:
        """The flat tuple of `tree`'s arrays (None elsewhere); `tree` has this
        structure (a `ValueError` otherwise), as a compiled step's result."""
        leaves, treedef = jax.tree.flatten(tree)
        if treedef != self.treedef:
            raise ValueError(f"the pytree's structure changed: {treedef} against {self.treedef}")
        return tuple(x if s is None else None for x, s in zip(leaves, self.leaves))


@final
@dataclasses.dataclass(frozen=True, eq=False)
class Split:
    """`tree` split once: `arrays` (a flat tuple, None at the other leaves)
    and `static` (`Static`); `static.combine(arrays)` is `tree` again."""

    tree: Any
    arrays: tuple
    static: Static

    @classmethod
    def of(cls, tree) -> "Split":
        leaves, treedef = jax.tree.flatten(tree)
        arrays = tuple(x if eqx.is_array(x) else None for x in leaves)
        static = Static(tuple(None if eqx.is_array(x) else x for x in leaves), treedef)
        return cls(tree, arrays, static)
