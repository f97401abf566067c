"""Checkpoints of the training loop with Orbax: everything `train` needs to
continue a fit exactly where it stopped, so that a fit killed mid-run and
started again with the same directory ends with the model an uninterrupted
fit would have.

A checkpoint holds the arrays (the model after the last finished epoch, its
optimiser state, the best model, the JAX key's data) and a JSON record (the
step, the history, this call's first step and finished epochs, on which the
cosine schedule depends, the numpy generator's state, the early-stopping
state, the best epoch, whether training finished, and the caller's
`fingerprint` of the training). Saves are synchronous and atomic: Orbax
writes each checkpoint into a temporary directory and renames it to its
step number only once it is complete (on object stores it writes a commit
marker instead), so a process killed mid-save leaves the previous checkpoint
as the latest; unfinished temporary directories are removed when the
directory is next opened. The step number is the number of epochs in the
history; the last `MAX_TO_KEEP` checkpoints are kept.

**Several processes** (`jax.distributed`): every process opens the same
directory (a file system they all see) and calls `save` and `restore` at the
same points with the same arguments — Orbax synchronises them, and the
primary process writes the JSON record and the replicated arrays. The
numpy generator's state saved is the primary process's: processes must keep
identical generators (the same seed and the same draws), as data-parallel
training over one global shuffle does.

orbax-checkpoint is not a dependency of s5ts: it is imported when a
checkpoint directory is used (`pip install -e ".[scale]" in the s5ts checkout`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any

import equinox as eqx
import jax
import numpy as np

from ._distributed import allgather_objects
from ._early_stopping import EarlyStopping
from ._sequences import PER_SERIES, Sequences

#: Checkpoints kept in a directory (older ones are deleted after a save).
MAX_TO_KEEP = 2


def _orbax():
    """The `orbax.checkpoint` module, or an ImportError that says how to get it."""
    try:
        import orbax.checkpoint as ocp
    except ImportError as error:
        raise ImportError(
            "checkpoint_dir needs orbax-checkpoint, which s5ts does not install by default: "
            'pip install -e ".[scale]" in the s5ts checkout'
        ) from error
    return ocp


def _manager(directory, create: bool):
    ocp = _orbax()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=MAX_TO_KEEP,
        enable_async_checkpointing=False,
        create=create,
        cleanup_tmp_directories=True,
    )
    return ocp.CheckpointManager(os.path.abspath(os.fspath(directory)), options=options)


# ----- what identifies a training -----


def data_digest(*sequences) -> str:
    """A hex digest of the arrays of `Sequences` (None entries hashed as
    such; a `StreamedSequences` read once, chunk by chunk):
    inputs, gaps, extra, targets and weights, with their shapes and dtypes.
    One pass over the data (BLAKE2b runs at about a gigabyte a second),
    small next to one epoch of training."""
    digest = hashlib.blake2b(digest_size=16)
    _digest_into(digest, sequences)
    return digest.hexdigest()


def _digest_into(digest, sequences) -> None:
    for data in sequences:
        if data is None:
            digest.update(b"none")
            continue
        if not isinstance(data, Sequences):  # streamed: its chunks in position order
            # Across processes each reads its own files (`shares`): every
            # process's digest of its share, in process order.
            mine = hashlib.blake2b(digest_size=16) if data.shares is not None else digest
            for positions, part in data.chunks(None):
                mine.update(np.ascontiguousarray(positions, np.int64).tobytes())
                _digest_into(mine, (part,))
            if data.shares is not None:
                for share in allgather_objects(mine.digest()):
                    digest.update(share)
            continue
        for name in PER_SERIES:
            digest.update(name.encode())
            items = getattr(data, name)
            if items is None:
                continue
            for item in items if isinstance(items, tuple) else (items,):
                array = np.ascontiguousarray(item)
                digest.update(f"{array.dtype.str}{array.shape}".encode())
                digest.update(array.tobytes())


def check_fingerprint(saved: dict, given: dict, directory) -> None:
    """Raise a ValueError naming what differs between the `fingerprint` of
    the training saved in `directory` and the one about to run (`given`):
    a checkpoint continues only the training that wrote it."""
    if saved == given:
        return
    differences = []
    for name in sorted(set(saved) | set(given)):
        before, now = saved.get(name), given.get(name)
        if isinstance(before, dict) and isinstance(now, dict):
            differences += [
                f"{key} was {before.get(key)} there, {now.get(key)} now"
                for key in sorted(set(before) | set(now))
                if before.get(key) != now.get(key)
            ]
        elif before != now:
            if name == "data":
                differences.append("the training data (X, y, sample_weight or validation_data) differs")
            else:
                what = {"seed": "the seed drawn from random_state"}.get(name, name)
                differences.append(f"{what} was {before!r} there, {now!r} now")
    raise ValueError(
        f"checkpoint_dir {os.fspath(directory)!r} holds a checkpoint of another training: "
        f"{'; '.join(differences)}. Use another checkpoint_dir, or delete this one to start afresh."
    )


def saved_fingerprint(directory) -> dict | None:
    """The fingerprint stored with the latest checkpoint in `directory`, or
    None when it holds none (or does not exist)."""
    ocp = _orbax()  # first: a fit that names a directory needs Orbax, whether or not it exists yet
    if not os.path.isdir(directory):
        return None
    with _manager(directory, create=False) as manager:
        step = manager.latest_step()
        if step is None:
            return None
        record = manager.restore(step, args=ocp.args.Composite(record=ocp.args.JsonRestore())).record
    return record["fingerprint"]


# ----- the loop's state -----


@dataclasses.dataclass
class LoopState:
    """The training loop between two epochs: what a checkpoint holds.

    - `model`, `opt_state`, `step`, `history`: after the last finished epoch.
    - `first_step`: the step this call started from (the cosine schedule
      runs from it); `epochs_done`: epochs this call has finished.
    - `rng_state`: the numpy generator's `bit_generator.state`; `key`: the
      JAX key the next step splits.
    - `stopping`, `best_model`, `best_epoch`: early stopping and model
      selection so far; `finished`: training ended (all epochs, or stopped).
    """

    model: Any
    opt_state: Any
    step: int
    history: list
    first_step: int
    epochs_done: int
    rng_state: dict
    key: jax.Array
    stopping: EarlyStopping
    best_model: Any
    best_epoch: int
    finished: bool = False


def _arrays(tree) -> dict:
    """The array leaves of `tree`, by position (strings, for Orbax)."""
    return {f"{i:05d}": leaf for i, leaf in enumerate(jax.tree.leaves(eqx.filter(tree, eqx.is_array)))}


def _fill(template, arrays: dict):
    """`template` with its array leaves replaced by `arrays` (in order)."""
    params, static = eqx.partition(template, eqx.is_array)
    leaves, treedef = jax.tree.flatten(params)
    return eqx.combine(jax.tree.unflatten(treedef, [arrays[f"{i:05d}"] for i in range(len(leaves))]), static)


class Checkpoints:
    """The checkpoints of one training in `directory` (created if needed),
    each stored with `fingerprint` (a JSON-able dict that identifies the
    training; see `check_fingerprint`). Use as a context manager, or `close`."""

    def __init__(self, directory, fingerprint: dict):
        self.directory = os.fspath(directory)
        self.fingerprint = fingerprint
        self._manager = _manager(self.directory, create=True)

    def __enter__(self) -> "Checkpoints":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._manager.close()

    def save(self, loop: LoopState) -> None:
        """Write `loop` as the checkpoint of step `len(loop.history)`,
        returning once it is complete on disk."""
        ocp = _orbax()
        arrays = {
            "model": _arrays(loop.model),
            "opt_state": _arrays(loop.opt_state),
            "best_model": _arrays(loop.best_model),
            "key": np.asarray(jax.random.key_data(loop.key)),
        }
        record = {
            "fingerprint": self.fingerprint,
            "step": int(loop.step),
            "history": loop.history,
            "first_step": int(loop.first_step),
            "epochs_done": int(loop.epochs_done),
            "rng_state": loop.rng_state,
            "stopping": dataclasses.asdict(loop.stopping),
            "best_epoch": int(loop.best_epoch),
            "finished": bool(loop.finished),
        }
        self._manager.save(
            len(loop.history),
            args=ocp.args.Composite(arrays=ocp.args.StandardSave(arrays), record=ocp.args.JsonSave(record)),
            force=True,
        )
        self._manager.wait_until_finished()

    def restore(self, model, opt_state, key: jax.Array) -> LoopState | None:
        """The latest checkpoint, restored into the structure, shapes and
        dtypes of a freshly built `model` and `opt_state` (and `key`'s
        implementation); None when there is none. Raises ValueError when it
        was written by another training (`check_fingerprint`), and then
        closes the directory."""
        try:
            return self._restore(model, opt_state, key)
        except BaseException:
            self.close()
            raise

    def _restore(self, model, opt_state, key: jax.Array) -> LoopState | None:
        step = self._manager.latest_step()
        if step is None:
            return None
        ocp = _orbax()
        record = self._manager.restore(step, args=ocp.args.Composite(record=ocp.args.JsonRestore())).record
        check_fingerprint(record["fingerprint"], self.fingerprint, self.directory)
        target = {
            "model": _arrays(model),
            "opt_state": _arrays(opt_state),
            "best_model": _arrays(model),
            "key": np.asarray(jax.random.key_data(key)),
        }
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
        arrays = self._manager.restore(step, args=ocp.args.Composite(arrays=ocp.args.StandardRestore(abstract))).arrays
        return LoopState(
            model=_fill(model, arrays["model"]),
            opt_state=_fill(opt_state, arrays["opt_state"]),
            step=record["step"],
            history=record["history"],
            first_step=record["first_step"],
            epochs_done=record["epochs_done"],
            rng_state=record["rng_state"],
            key=jax.random.wrap_key_data(np.asarray(arrays["key"]), impl=jax.random.key_impl(key)),
            stopping=EarlyStopping(**record["stopping"]),
            best_model=_fill(model, arrays["best_model"]),
            best_epoch=record["best_epoch"],
            finished=record["finished"],
        )
