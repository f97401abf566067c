"""How to use several CPU cores: `GridSearchCV(n_jobs=...)` against JAX's
own threads and one CPU device per core.

Each configuration runs in a fresh process with an empty compilation cache
(every worker compiles, as a user's first search does) and then again with
the cache warm, on the same grid search: 2 learning rates × 3 folds over 96
ragged series (the README's kind of data), `S5Regressor` defaults but
`max_epochs=30`.

- `n_jobs=1`: one process; XLA uses its thread pool over all cores.
- `n_jobs=2`: joblib's worker processes, one fit each at a time.
- `n_jobs=1, 2 CPU devices`: `JAX_NUM_CPU_DEVICES=2`, each batch split over
  two devices, one per core (`s5ts.training.placement_for`).

    python3 benchmarks/cores.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
from sklearn.model_selection import GridSearchCV
from s5ts import S5Regressor
n_jobs = int(sys.argv[1])
rng = np.random.default_rng(0)
X = []
for _ in range(96):
    t = np.sort(rng.uniform(0, 10, rng.integers(5, 30)))
    X.append(pd.DataFrame({"value": np.sin(t)}, index=pd.Index(t, name="time")))
y = np.array([f.index[-1] - f.index[0] for f in X])
search = GridSearchCV(S5Regressor(max_epochs=30, random_state=0), {"learning_rate": [1e-3, 3e-3]}, cv=3, n_jobs=n_jobs)
t0 = time.perf_counter()
search.fit(X, y)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""

CONFIGS = {
    "n_jobs=1": (1, {}),
    "n_jobs=2": (2, {}),
    "n_jobs=1, 2 CPU devices": (1, {"JAX_NUM_CPU_DEVICES": "2"}),
}


def run(n_jobs: int, env_extra: dict) -> float:
    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n_jobs)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, (n_jobs, extra) in CONFIGS.items():
            cache = {"S5TS_COMPILATION_CACHE": os.path.join(scratch, name.replace(" ", "_").replace(",", ""))}
            cold = run(n_jobs, {**extra, **cache})
            warm = run(n_jobs, {**extra, **cache})
            rows.append((name, cold, warm))
            print(f"{name:<26} cold {cold:6.1f} s   warm cache {warm:6.1f} s", flush=True)
    base_cold, base_warm = rows[0][1], rows[0][2]
    print(f"\nGridSearchCV, 2 candidates x 3 folds; {os.cpu_count()} cores; load1 {os.getloadavg()[0]:.1f}")
    print(f"{'configuration':<26} {'cold s':>8} {'vs n_jobs=1':>12} {'warm s':>8} {'vs n_jobs=1':>12}")
    for name, cold, warm in rows:
        print(f"{name:<26} {cold:>8.1f} {cold / base_cold:>11.2f}x {warm:>8.1f} {warm / base_warm:>11.2f}x")


if __name__ == "__main__":
    main()
