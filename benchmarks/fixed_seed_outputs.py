"""Whether a change kept behaviour: fixed-seed fits of every model family,
their outputs saved, and two such files compared bit for bit.

Fitted with `random_state=0` on small synthetic data: `S5Regressor` under
each `time_handling` (with a validation split), `S5Classifier`, a per-step
`S5Regressor` whole and in chunks (`chunk_length=8`), `CRURegressor`, a long
frame, the same data as a Parquet data set (streamed), and the
`Forecaster`. A refactor that keeps every computation gives identical
arrays; one that changes the order of a floating-point reduction gives
differences at rounding level, which `--compare` prints.

Run each checkout with its own package first on `sys.path` (this file puts
the checkout it lies in there), e.g. the commit before a change in a git
worktree:

    git worktree add /tmp/before HEAD~1
    cp benchmarks/fixed_seed_outputs.py /tmp/before/benchmarks/
    python3 /tmp/before/benchmarks/fixed_seed_outputs.py /tmp/before.npz
    python3 benchmarks/fixed_seed_outputs.py /tmp/after.npz
    python3 benchmarks/fixed_seed_outputs.py --compare /tmp/before.npz /tmp/after.npz

Needs pyarrow (the `test` or `scale` extra).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import _timing  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import pandas as pd


def outputs() -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from s5ts import S5Classifier, S5Regressor
    from s5ts.baselines import CRURegressor
    from s5ts.forecasting import Forecaster

    out = {}
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 40, size=30)
    times = [np.cumsum(rng.exponential(1.0, n)) for n in lengths]
    X = [np.column_stack([np.sin(t), rng.normal(size=n)]) for t, n in zip(times, lengths)]
    y = np.array([x[:, 0].mean() + 0.1 * len(x) for x in X])
    labels = np.array(["a" if v > np.median(y) else "b" for v in y])
    steps = [np.sin(t + 0.5) for t in times]
    common = dict(n_layers=1, d_model=8, state_size=4, max_epochs=4, random_state=0)
    for handling in ("gaps", "drop", "append"):
        model = S5Regressor(**common, time_handling=handling, validation_fraction=0.2).fit(X, y, times=times)
        out[f"reg_{handling}"] = model.predict(X, times=times)
    out["clf"] = S5Classifier(**common).fit(X, labels, times=times).predict_proba(X, times=times)
    out["per_step"] = np.concatenate(S5Regressor(**common).fit(X, steps, times=times).predict(X, times=times))
    chunked = S5Regressor(**common, chunk_length=8).fit(X, steps, times=times)
    out["chunked"] = np.concatenate(chunked.predict(X, times=times))
    cru = CRURegressor(encoder="identity", latent_obs_size=3, hidden_size=8, max_epochs=2, random_state=0)
    out["cru"] = np.concatenate(cru.fit(X, [s[:, None] for s in steps], times=times).predict(X, times=times))
    rows = [
        pd.DataFrame({"id": f"s{i:02d}", "time": t, "a": x[:, 0], "b": x[:, 1], "y": y[i]})
        for i, (x, t) in enumerate(zip(X, times))
    ]
    long = pd.concat(rows, ignore_index=True)
    model = S5Regressor(**common, id_col="id", time_col="time")
    out["long"] = model.fit(long.drop(columns="y"), long.groupby("id")["y"].first()).predict(long.drop(columns="y"))
    folder = Path(tempfile.mkdtemp())
    for k, part in enumerate(np.array_split(long["id"].unique(), 3)):
        pq.write_table(pa.Table.from_pandas(long[long.id.isin(part)], preserve_index=False), folder / f"p{k}.parquet")
    out["parquet"] = S5Regressor(**common, id_col="id", time_col="time").fit(folder, "y").predict(folder).to_numpy()
    index = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.cumsum(rng.exponential(1.0, 150)), "D")
    series = pd.Series(np.sin(np.arange(150) / 7.0) + 0.01 * np.arange(150), index=index)
    forecaster = Forecaster(n_layers=1, d_model=8, state_size=4, max_epochs=3, random_state=0)
    forecaster.fit(series, horizon=pd.Timedelta("10D"))
    out["forecast"] = forecaster.predict(index[-1] + pd.to_timedelta([1, 3, 7], "D")).to_numpy()
    return out


def compare(before: Path, after: Path) -> None:
    a, b = np.load(before), np.load(after)
    for name in a.files:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            print(f"{name:10s} shapes differ: {x.shape} against {y.shape}")
        elif np.array_equal(x, y):
            print(f"{name:10s} identical")
        else:
            print(f"{name:10s} max |difference| {np.max(np.abs(x - y)):.3g}")
    for name in sorted(set(b.files) - set(a.files)):
        print(f"{name:10s} only in {after}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="the .npz to write; with --compare, the two to compare")
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    if args.compare:
        if len(args.files) != 2:
            parser.error("--compare takes two files")
        compare(*args.files)
        return
    result = outputs()
    np.savez(args.files[0], **result)
    print({name: np.shape(value) for name, value in result.items()})


if __name__ == "__main__":
    main()
