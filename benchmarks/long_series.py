"""One very long irregular series trained in chunks (`chunk_length`): peak
memory is set by the chunk, not by the series.

The series: N steps (seeded), exponential gaps, one noisy input, a per-step
target that is an irregularly sampled exponential smoothing of the input.
Every run fits one epoch of a small `S5Regressor` (1 layer, d_model 16,
state 8, no observation dropout) in a fresh subprocess and prints the
training steps per second (observations per second of the optimisation
steps, the history's `train_seconds`: compiling excluded) and the peak
resident memory of the process (`ru_maxrss`: data, JAX and the fit).
Runs: 10⁶ steps at chunk_length 1024 and 8192; a 10⁵-step prefix at the
same chunk lengths and unchunked. `STEPS=200000` in the environment for a
shorter series.

    taskset -c 1 python3 benchmarks/long_series.py
"""

from __future__ import annotations

import os
import subprocess
import sys

STEPS = int(os.environ.get("STEPS", 1_000_000))

_CHILD = r"""
import resource, sys, time
import numpy as np
from s5ts import S5Regressor

n, chunk = int(sys.argv[1]), (None if sys.argv[2] == "none" else int(sys.argv[2]))
rng = np.random.default_rng(0)
gaps = rng.exponential(size=%d)[:n]
x = rng.normal(size=(%d, 1))[:n]
decay = np.exp(-gaps / 20.0)
target = np.empty(n)
level = 0.0
for k in range(n):
    level = decay[k] * level + (1 - decay[k]) * x[k, 0]
    target[k] = level
times = np.cumsum(gaps)
model = S5Regressor(
    n_layers=1, d_model=16, state_size=8, max_epochs=1, warmup_epochs=0, min_epoch_steps=None,
    observation_dropout=0.0, chunk_length=chunk, random_state=0,
)
model.fit([x], [target], times=[times])
record = model.history_[-1]
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{n} {sys.argv[2]} {n / record['train_seconds']:.0f} {peak_mib:.0f} {record['train_loss']:.4f}")
"""


def run(n: int, chunk) -> str:
    code = _CHILD % (STEPS, STEPS)
    out = subprocess.run([sys.executable, "-c", code, str(n), str(chunk)], capture_output=True, text=True)
    if out.returncode:
        return f"{n} {chunk} failed: {out.stderr.strip().splitlines()[-1]}"
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    prefix = STEPS // 10
    print("steps chunk_length steps_per_s peak_rss_MiB train_loss", flush=True)
    for n, chunk in [(STEPS, 1024), (STEPS, 8192), (prefix, 1024), (prefix, 8192), (prefix, "none")]:
        print(run(n, chunk), flush=True)


if __name__ == "__main__":
    main()
