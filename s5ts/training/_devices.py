"""Data parallelism: each padded batch split row-wise over the local devices.

The network sees one series and batches are `jax.vmap`ped, so a batch whose
rows lie on several devices needs no change to the model: `jit` partitions the
vmapped computation by its inputs' shardings and sums the gradients across
devices. Parameters and optimiser state are replicated on every device.

This is what makes several CPU cores useful for the sequential scan, whose
loop XLA runs on one thread per device: with `JAX_NUM_CPU_DEVICES=2` (set
before JAX starts) each core runs the loop over half of the batch. With one
device (JAX's default on CPU, or one GPU) placement does nothing.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where batches and parameters live: `rows` and `replicated` are
    shardings over the same devices, or None for JAX's default device."""

    rows: NamedSharding | None = None
    replicated: NamedSharding | None = None

    @property
    def n_devices(self) -> int:
        return 1 if self.rows is None else self.rows.mesh.size

    def put_batch(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """Every array of `batch` split along its first axis (the rows)."""
        if self.rows is None:
            return batch
        return jax.device_put(batch, self.rows)

    def replicate(self, tree: Any) -> Any:
        """Every JAX array of `tree` (a model, an optimiser state) copied to
        each device; other leaves as they are."""
        if self.replicated is None:
            return tree
        return jax.tree.map(lambda leaf: _put(leaf, self.replicated), tree)


def _put(leaf, sharding):
    return jax.device_put(leaf, sharding) if isinstance(leaf, jax.Array) else leaf


@functools.lru_cache(maxsize=None)
def placement_for(rows: int) -> Placement:
    """The placement for batches of `rows` rows: over the most local devices
    that divide `rows` evenly (all of them for the usual power-of-two batch
    sizes), or the default device when only one does."""
    devices = jax.local_devices()
    n = max(d for d in range(1, len(devices) + 1) if rows % d == 0)
    if n == 1:
        return Placement()
    mesh = Mesh(np.array(devices[:n]), ("rows",))
    return Placement(NamedSharding(mesh, PartitionSpec("rows")), NamedSharding(mesh, PartitionSpec()))


def to_default_device(tree: Any) -> Any:
    """Every JAX array of `tree` on JAX's default device alone, as fitted
    attributes are kept (so users combine them with their own arrays freely).
    A tree on one device already is returned as it is (the same object)."""

    def spread(leaf) -> bool:
        return isinstance(leaf, jax.Array) and len(leaf.devices()) > 1

    if not any(spread(leaf) for leaf in jax.tree.leaves(tree)):
        return tree
    device = jax.local_devices()[0]
    return jax.tree.map(lambda leaf: jax.device_put(leaf, device) if spread(leaf) else leaf, tree)
