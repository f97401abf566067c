"""Two local processes (`python -m s5ts.distributed --processes 2`, one CPU
device each, gloo collectives) against one process, on the same fit.

The fit: `S5Regressor` defaults but `max_epochs=EPOCHS`, 256 ragged series
of 20-200 observations, batch 32, same seed. Throughput is the data set's
observations per second of an epoch's optimisation steps (the history's
`train_seconds`), over the epochs after the first: the first holds the
compilation and, across processes, the wait for the slower process's
compilation, which JAX's compile events do not count. Parity is the largest difference between the fitted parameters of
the two processes, of 2 processes and 1, and of 2 processes and 1 process
with two CPU devices (`JAX_NUM_CPU_DEVICES=2`: the same split of every
batch, and a third throughput). `EPOCHS=3` in the environment for a
shorter run (at least 2); `LENGTH=2000` for series of 200-2000 observations (20-200 by
default).

`--parquet`: the same series written to 8 Parquet files and fitted from
them, streamed; two processes then each read their own 4 files
(docs/scaling.md, "Parquet across processes"). Their batches are not
those of one process (each process fills its half of every batch from its
own files), so the difference to one process is that of another draw of
the batches, not rounding.

`--cru`: the CRU baseline (`CRURegressor(encoder="identity")`, per-step
targets) on the same series in memory: steps some fifty times as long as
S5's (a Kalman filter of small matrices at every observation), so the
fixed cost of a step across processes weighs little (`EPOCHS=3` for a run
of a few minutes).

    python3 benchmarks/distributed.py
    python3 benchmarks/distributed.py --parquet
    LENGTH=2000 EPOCHS=3 python3 benchmarks/distributed.py
    EPOCHS=3 python3 benchmarks/distributed.py --cru
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

EPOCHS = int(os.environ.get("EPOCHS", 6))

_DATA = r"""
import os, sys
import equinox as eqx, jax, numpy as np
rng = np.random.default_rng(0)
longest = int(os.environ.get("LENGTH", 200))
lengths = rng.integers(longest // 10, longest, size=256)
times = [np.cumsum(rng.exponential(1.0, n)) for n in lengths]
X = [np.column_stack([np.sin(t), rng.normal(size=n)]).astype(np.float32) for t, n in zip(times, lengths)]
y = np.array([x[:, 0].mean() for x in X])


def write_parquet(folder, files=8):
    import pandas as pd, pyarrow as pa, pyarrow.parquet as pq
    os.makedirs(folder, exist_ok=True)
    frames = [pd.DataFrame({"id": i, "time": t, "a": x[:, 0], "b": x[:, 1], "y": y[i]})
              for i, (t, x) in enumerate(zip(times, X))]
    for k, part in enumerate(np.array_split(np.arange(len(X)), files)):
        table = pa.Table.from_pandas(pd.concat([frames[i] for i in part]), preserve_index=False)
        pq.write_table(table, os.path.join(folder, f"part{k}.parquet"))
"""

_CHILD = _DATA + r"""
from s5ts import S5Regressor
from s5ts.baselines import CRURegressor
model = sys.argv[2]
parquet = sys.argv[3] if len(sys.argv) > 3 else None
columns = dict(id_col="id", time_col="time") if parquet else {}
settings = dict(max_epochs=%d, batch_size=32, n_iter_no_change=None, validation_fraction=0.0, random_state=0)
if model == "cru":  # per-step targets: the first feature
    est = CRURegressor(encoder="identity", **settings).fit(X, [x[:, :1] for x in X], times=times)
else:
    est = S5Regressor(**settings, **columns)
    est.fit(parquet, "y") if parquet else est.fit(X, y, times=times)
leaves = jax.tree.leaves(eqx.filter(est.model_, eqx.is_inexact_array))
np.savez(f"{sys.argv[1]}.{jax.process_index()}.npz",
         parameters=np.concatenate([np.ravel(np.asarray(l)) for l in leaves]),
         observations=np.float64(lengths.sum()),
         train_loss=np.array([r["train_loss"] for r in est.history_]),
         epoch_seconds=np.array([r["train_seconds"] for r in est.history_]))
""" % EPOCHS


def run(
    folder: str, name: str, processes: int, devices: int = 1, parquet: str | None = None, model: str = "s5"
) -> list[dict]:
    script = os.path.join(folder, "fit.py")
    with open(script, "w") as f:
        f.write(_CHILD)
    out = os.path.join(folder, name)
    env = dict(os.environ)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    if devices > 1:
        env["JAX_NUM_CPU_DEVICES"] = str(devices)
    command = [sys.executable, script, out, model, *([parquet] if parquet else [])]
    if processes > 1:
        command = [sys.executable, "-m", "s5ts.distributed", "--processes", str(processes), *command[1:]]
    subprocess.run(command, env=env, check=True, capture_output=True)
    return [dict(np.load(f"{out}.{i}.npz")) for i in range(processes)]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parquet", action="store_true", help="fit from 8 Parquet files, streamed")
    parser.add_argument("--cru", action="store_true", help="the CRU baseline (per-step targets) instead of S5")
    options = parser.parse_args()
    if EPOCHS < 2:
        parser.error("EPOCHS must be at least 2: the throughput is measured after the first epoch")
    if options.cru and options.parquet:
        parser.error("--cru fits in memory only")
    runs = {"1 process": (1, 1), "2 processes": (2, 1), "1 process, 2 CPU devices": (1, 2)}
    results, walls = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        parquet = None
        if options.parquet:
            namespace: dict = {}
            exec(_DATA, namespace)
            parquet = os.path.join(folder, "data")
            namespace["write_parquet"](parquet)
            print("streamed from 8 Parquet files")
        for i, (name, (processes, devices)) in enumerate(runs.items()):
            started = time.perf_counter()
            results[name] = run(folder, f"run{i}", processes, devices, parquet, "cru" if options.cru else "s5")
            walls[name] = time.perf_counter() - started
    # After the first epoch, which holds the compilation and, across
    # processes, the wait for the slower process's compilation.
    rates = {name: float(r[0]["observations"] / np.mean(r[0]["epoch_seconds"][1:])) for name, r in results.items()}
    for name in runs:
        print(f"{name:26s} {rates[name]:8.0f} observations/s of training steps after epoch 1 ({walls[name]:.0f} s in all)")
    print(f"ratio 2 processes / 1 process: {rates['2 processes'] / rates['1 process']:.2f}")
    two = results["2 processes"]
    parameters = {name: r[0]["parameters"] for name, r in results.items()}
    print("parity, max |parameter difference|:")
    print(f"  process 0 vs process 1:                  {np.abs(two[0]['parameters'] - two[1]['parameters']).max():.2e}")
    for other in ("1 process", "1 process, 2 CPU devices"):
        difference = np.abs(parameters["2 processes"] - parameters[other]).max()
        print(f"  2 processes vs {other + ':':26s} {difference:.2e}")
    for name, r in results.items():
        print(f"training loss per epoch, {name + ':':26s}", np.array2string(r[0]["train_loss"], precision=5))
    for name, r in results.items():
        print(f"seconds of steps per epoch, {name + ':':23s}", np.array2string(r[0]["epoch_seconds"], precision=2))


if __name__ == "__main__":
    main()
