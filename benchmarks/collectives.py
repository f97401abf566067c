"""One cross-process sum of a network's gradients: one all-reduce of every
gradient array (as XLA's partitioner wrote the training step before, one
operand per array) against one all-reduce of the same numbers as one flat
vector (as `s5ts.training.train_step` does now, `_loop._loss_and_grads`).

Two local processes (`python -m s5ts.distributed --processes 2`, gloo
collectives), each summing the gradient arrays of the default
`S5Regressor` network (shapes from a one-epoch fit on a few series) with
`jax.shard_map` + `psum`; medians of 40 calls after a warm-up, the two
variants interleaved. Then again with each process pinned to its own core
(`os.sched_setaffinity`). XLA's CPU collectives make one gloo round trip
per operand, so the first variant's time grows with the number of arrays.

    python3 benchmarks/collectives.py
"""

from __future__ import annotations

import os
import subprocess
import sys

_CHILD = r"""
import os, sys, time
if sys.argv[1] == "pinned":
    os.sched_setaffinity(0, {int(os.environ["S5TS_PROCESS_ID"]) % os.cpu_count()})
import equinox as eqx, jax, numpy as np
from jax.flatten_util import ravel_pytree
from jax.sharding import Mesh, PartitionSpec as P
from s5ts import S5Regressor

rng = np.random.default_rng(0)
X = rng.normal(size=(8, 20, 2)).astype(np.float32)
est = S5Regressor(max_epochs=1, validation_fraction=0.0, random_state=0).fit(X, X[:, -1, 0])
arrays = [np.ones(np.shape(a), np.float32) for a in jax.tree.leaves(eqx.filter(est.model_, eqx.is_inexact_array))]
mesh = Mesh(np.array(jax.devices()), ("rows",))


def summed(f):
    return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P(), check_vma=False))


per_array = summed(lambda tree: jax.lax.psum(tree, "rows"))
one_vector = summed(lambda tree: (lambda flat, unflatten: unflatten(jax.lax.psum(flat, "rows")))(*ravel_pytree(tree)))
times = {"per_array": [], "one_vector": []}
for f in (per_array, one_vector):
    jax.block_until_ready(f(arrays))
for _ in range(40):
    for name, f in (("per_array", per_array), ("one_vector", one_vector)):
        started = time.perf_counter()
        jax.block_until_ready(f(arrays))
        times[name].append(time.perf_counter() - started)
if jax.process_index() == 0:
    a, b = (float(np.median(times[k])) * 1e3 for k in ("per_array", "one_vector"))
    print(f"{sys.argv[1]:9s} {len(arrays):3d} arrays ({sum(x.size for x in arrays)} numbers): "
          f"one operand per array {a:7.2f} ms, one vector {b:6.2f} ms, ratio {a / b:5.1f}", flush=True)
"""


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "sum.py")
        with open(script, "w") as f:
            f.write(_CHILD)
        for mode in ("unpinned", "pinned"):
            command = [sys.executable, "-m", "s5ts.distributed", "--processes", "2", script, mode]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode:
                sys.exit(result.stderr[-3000:])
            print("\n".join(line for line in result.stdout.splitlines() if not line.startswith("[Gloo]")))


if __name__ == "__main__":
    main()
