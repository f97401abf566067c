"""Data parallelism: each padded batch split row-wise over the local devices.

The network sees one series and batches are `jax.vmap`ped, so a batch whose
rows lie on several devices needs no change to the model: `jit` partitions the
vmapped computation (predictions, validation) by its inputs' shardings, and
the training step maps the gradient over the devices' rows with
`jax.shard_map`, summing loss and gradients across devices as one vector
(`_loop._loss_and_grads`). Parameters and optimiser state are replicated on
every device.

This is what makes several CPU cores useful for the sequential scan, whose
loop XLA runs on one thread per device: with `JAX_NUM_CPU_DEVICES=2` (set
before JAX starts) each core runs the loop over half of the batch. With one
device (JAX's default on CPU, or one GPU) placement does nothing.

Under `jax.distributed` (`jax.process_count() > 1`, see `_distributed`) the
mesh spans every device of every process. Every process draws the same
batches (same data, same seeds); each supplies only its own rows of each
global batch (`Placement.local_rows`, contributed with
`jax.make_array_from_process_local_data`), so each reads and pads only its
share. Outputs sharded over rows are gathered back with
`gather_rows`; the fitted model comes back to each process's own default
device (`to_default_device`).
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
    shardings over the same devices, or None for JAX's default device.

    `local_rows` is the slice of each global batch's rows this process
    supplies (`put_batch`), or None for all of them (a single process);
    `process_rows` the slice of every process, in process order (None in a
    single process, or when every process supplies the whole batch)."""

    rows: NamedSharding | None = None
    replicated: NamedSharding | None = None
    local_rows: slice | None = None
    process_rows: tuple[slice, ...] | None = None

    @property
    def n_devices(self) -> int:
        return 1 if self.rows is None else self.rows.mesh.size

    def put_batch(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """Every array of `batch` split along its first axis (the rows).

        Across processes `batch` holds this process's `local_rows` alone,
        and the result is the global batch they make together."""
        if self.rows is None:
            return batch
        if self.local_rows is None:
            return jax.device_put(batch, self.rows)
        global_rows = self.local_rows.stop if self.process_rows is None else self.process_rows[-1].stop
        return {
            name: jax.make_array_from_process_local_data(self.rows, value, (global_rows, *np.shape(value)[1:]))
            for name, value in batch.items()
        }

    def replicate(self, tree: Any) -> Any:
        """Every JAX array of `tree` (a model, an optimiser state) copied to
        each device; other leaves as they are. Across processes each
        process's copy must hold the same values (the same seeds do that)."""
        if self.replicated is None:
            return tree
        put = _put if self.local_rows is None else _put_global
        return jax.tree.map(lambda leaf: put(leaf, self.replicated), tree)


def _put(leaf, sharding):
    return jax.device_put(leaf, sharding) if isinstance(leaf, jax.Array) else leaf


def _put_global(leaf, sharding):
    """`leaf` replicated over a mesh that spans processes: a local array is
    copied from this process's values (`device_put` refuses arrays committed
    to one device there)."""
    if not isinstance(leaf, jax.Array) or leaf.sharding == sharding:
        return leaf
    if leaf.is_fully_addressable:
        return jax.make_array_from_callback(leaf.shape, sharding, lambda index: leaf[index])
    return jax.jit(lambda x: x, out_shardings=sharding)(leaf)


@functools.lru_cache(maxsize=None)
def placement_for(rows: int) -> Placement:
    """The placement for batches of `rows` rows: over the most local devices
    that divide `rows` evenly (all of them for the usual power-of-two batch
    sizes), or the default device when only one does.

    Across processes (`jax.process_count() > 1`): over every device of
    every process, each process supplying `rows / n_devices` rows per
    device; when the devices do not divide `rows`, every device computes
    the whole batch (replicated) and each process supplies all of it."""
    if jax.process_count() > 1:
        return _global_placement(rows)
    devices = jax.local_devices()
    n = max(d for d in range(1, len(devices) + 1) if rows % d == 0)
    if n == 1:
        return Placement()
    mesh = Mesh(np.array(devices[:n]), ("rows",))
    return Placement(NamedSharding(mesh, PartitionSpec("rows")), NamedSharding(mesh, PartitionSpec()))


def _global_placement(rows: int) -> Placement:
    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("rows",))
    replicated = NamedSharding(mesh, PartitionSpec())
    if rows % len(devices):
        return Placement(replicated, replicated, slice(0, rows))
    sharded = NamedSharding(mesh, PartitionSpec("rows"))
    # Each process's devices hold one contiguous block of rows (the mesh
    # lists each process's devices together, as `jax.devices()` does).
    blocks = []
    for process in range(jax.process_count()):
        indices = sorted(
            index[0].indices(rows)[:2]
            for device, index in sharded.devices_indices_map((rows,)).items()
            if device.process_index == process
        )
        if not indices or any(a[1] != b[0] for a, b in zip(indices, indices[1:])):
            raise RuntimeError(f"process {process}'s devices do not hold contiguous rows of the batch: {indices}")
        blocks.append(slice(indices[0][0], indices[-1][1]))
    if [b.start for b in blocks] != [0, *(b.stop for b in blocks[:-1])] or blocks[-1].stop != rows:
        raise RuntimeError(f"the processes' blocks of rows do not follow each other: {blocks}")
    return Placement(sharded, replicated, blocks[jax.process_index()], tuple(blocks))


def gather_rows(tree: Any) -> Any:
    """Every array of `tree` as a numpy array with all its rows, on every
    process (`multihost_utils.process_allgather` for arrays split across
    processes; a plain copy otherwise)."""

    def gather(leaf):
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable and not leaf.is_fully_replicated:
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
        return np.asarray(leaf)

    return jax.tree.map(gather, tree)


def to_default_device(tree: Any) -> Any:
    """Every JAX array of `tree` on JAX's default device alone, as fitted
    attributes are kept (so users combine them with their own arrays freely).
    A tree on one device already is returned as it is (the same object).
    Across processes, a replicated array is taken from this process's own
    copy (each process keeps its own model)."""

    def spread(leaf) -> bool:
        return isinstance(leaf, jax.Array) and len(leaf.devices()) > 1

    if not any(spread(leaf) for leaf in jax.tree.leaves(tree)):
        return tree
    device = jax.local_devices()[0]

    def local(leaf):
        if not spread(leaf):
            return leaf
        if leaf.is_fully_addressable:
            return jax.device_put(leaf, device)
        if not leaf.is_fully_replicated:
            raise ValueError(f"an array split across processes has no local copy: {leaf.sharding}")
        return jax.device_put(leaf.addressable_data(0), device)

    return jax.tree.map(local, tree)
