"""Seconds to a forecast (issue 34's two cases, `Forecaster` defaults) and
to a fitted estimator (issue 35's case, `S5Classifier` defaults), each
fitted and predicted in fresh processes.

- `series`: one irregular daily series of 1,000 points (a trend, a yearly
  season, noise; 1,000 of 1,800 days kept), horizon 60 days;
- `panel`: 150 short series of 12–40 points at irregular hours (a decay
  from a dose, as pharmacokinetic panels), horizon 12 hours;
- `estimator`: 200 series of 20–50 points at irregular times, two
  classes told apart by the period of a noisy sine; fit, then predict the
  same 200 (goal: at most 10 s warm on two cores).

Each case runs in a new process twice: first with an empty compilation
cache (`cold`: what a user's first script pays), then with the cache the
first left (`warm`: a second script, or a notebook after its first fit).
Printed: fit + predict seconds per case and run, the epochs trained, and
the fit's training seconds (`history_`). Goals (issue 34): at most 10 s
warm and 20 s cold on two cores.

    python3 benchmarks/forecast_speed.py [--cases series,panel] [--params JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CASES = ("series", "panel", "estimator")


def classes():
    """The estimator case: 200 series and their classes."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    X, labels = [], np.arange(200) % 2
    for label in labels:
        n = int(rng.integers(20, 51))
        t = np.sort(rng.uniform(0.0, 100.0, n))
        X.append(pd.DataFrame({"v": np.sin(t / (5.0 + 3.0 * label)) + rng.normal(0.0, 0.3, n)}, index=t))
    return X, labels


def data(case: str):
    """A forecasting case: the series, the horizon and the times to predict (None: leads from each end)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    if case == "series":
        days = np.sort(rng.choice(1800, 1000, replace=False))
        when = pd.Timestamp("2019-01-01") + pd.to_timedelta(days, unit="D")
        season = np.sin(2 * np.pi * when.dayofyear / 365.25)
        y = pd.Series(20 + 0.01 * days + 3 * season + rng.normal(size=1000), index=when, name="y")
        return y, pd.Timedelta(days=60), when[-1] + pd.to_timedelta([1, 7, 30, 60], unit="D")
    frames = {}
    for i in range(150):
        n = int(rng.integers(12, 41))
        hours = np.sort(rng.uniform(0.0, 48.0, n))
        level = rng.uniform(5.0, 15.0) * np.exp(-hours / rng.uniform(6.0, 20.0)) * (1 + 0.1 * rng.normal(size=n))
        frames[f"s{i}"] = pd.Series(level, index=pd.to_timedelta(hours, unit="h"))
    y = pd.concat(frames, names=["id", "time"]).rename("conc")
    return y, pd.Timedelta(hours=12), None


def one(case: str, params: dict) -> dict:
    """Fit and predict `case` in this process."""
    import pandas as pd

    from s5ts import S5Classifier
    from s5ts.forecasting import Forecaster

    if case == "estimator":
        X, labels = classes()
        start = time.perf_counter()
        model = S5Classifier(random_state=0, **params).fit(X, labels)
        fitted = time.perf_counter()
        model.predict(X)
        done = time.perf_counter()
        return _timings(model, start, fitted, done)
    y, horizon, future = data(case)
    start = time.perf_counter()
    model = Forecaster(random_state=0, **params).fit(y, horizon=horizon)
    fitted = time.perf_counter()
    if future is None:
        model.predict(leads=pd.to_timedelta([1, 6, 12], unit="h"))
    else:
        model.predict(future)
    done = time.perf_counter()
    return _timings(model, start, fitted, done)


def _timings(model, start: float, fitted: float, done: float) -> dict:
    train = sum(record.get("train_seconds", 0.0) for record in model.history_)
    return {"fit": fitted - start, "predict": done - fitted, "total": done - start, "epochs": len(model.history_),
            "train_seconds": train}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--params", default="{}", help="JSON of Forecaster (or, for the estimator case, S5Classifier) parameters")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    params = json.loads(args.params)
    if args.child:
        print(json.dumps(one(args.child, params)))
        return
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, S5TS_COMPILATION_CACHE=cache)
            for run in ("cold", "warm"):
                out = subprocess.run([sys.executable, __file__, "--child", case, "--params", args.params],
                                     env=env, capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{case:7s} {run}: fit + predict {r['total']:.1f} s (fit {r['fit']:.1f}, predict "
                      f"{r['predict']:.1f}), {r['epochs']} epochs, training {r['train_seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
