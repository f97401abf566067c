"""The cost of resumable fits: one Orbax checkpoint save (`checkpoint_dir`)
against one training epoch of the same fit.

Fits `S5Regressor` (default architecture: 2 layers, d_model 32, state size
16) on synthetic irregular series with `checkpoint_every=1`, times every
`Checkpoints.save` (synchronous: it returns once the checkpoint is renamed
into place) and every epoch's `seconds` after the first (which compiles),
and prints medians, their ratio and the size of one checkpoint on disk.

    PYTHONPATH=. python3 benchmarks/checkpoint_cost.py [--series 256] [--epochs 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from s5ts import S5Regressor
from s5ts.training import Checkpoints


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=256)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 10, (args.series, args.length)), axis=1)
    X = np.sin(times)[..., None] + 0.1 * rng.standard_normal((args.series, args.length, 1))
    y = X[:, -1, 0]

    saves: list[float] = []
    save = Checkpoints.save

    def timed_save(self, loop):
        started = time.perf_counter()
        save(self, loop)
        saves.append(time.perf_counter() - started)

    Checkpoints.save = timed_save
    with tempfile.TemporaryDirectory() as scratch:
        directory = os.path.join(scratch, "run")
        model = S5Regressor(
            max_epochs=args.epochs, n_iter_no_change=None, random_state=0, checkpoint_dir=directory
        ).fit(X, y, times=times)
        last = max(int(name) for name in os.listdir(directory) if name.isdigit())
        size = _size(os.path.join(directory, str(last)))
    epochs = [record["seconds"] for record in model.history_[1:]]
    save_s, epoch_s = statistics.median(saves[1:]), statistics.median(epochs)
    print(f"model: {model.n_parameters_} parameters; {args.series} series x {args.length} steps")
    print(f"first save (imports, creates the directory): {saves[0]:.3f} s")
    print(f"save, median of {len(saves) - 1}: {save_s:.3f} s (range {min(saves[1:]):.3f}-{max(saves[1:]):.3f})")
    print(f"epoch, median of {len(epochs)}: {epoch_s:.3f} s")
    print(f"save / epoch: {save_s / epoch_s:.2f}")
    print(f"one checkpoint on disk: {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
