"""Out-of-core training: one epoch streamed from a long-format Parquet data set.

Generates a seeded synthetic data set (ragged, irregularly sampled series,
three features, one target per series; written sorted by id, then time, in
several files: the order `s5ts.data.open_parquet` needs) into `--out` (a
temporary directory by default; never committed), and a 10x smaller one
(`--scale-down`), then measures in a fresh subprocess each (so peak
memories do not mix):

- `stream`: `S5Regressor.fit(path, "y")` for one epoch, on the full and the
  smaller data set;
- `memory`: the same fit from the data read into a pandas long frame.

With `--model forecaster`, the same for `s5ts.forecasting.Forecaster`
(forecasting `x0` with `x1`, `x2` exogenous; the data sets are written
without the target column): streamed, `fit(path, X=["x1", "x2"])`; in
memory, `fit(y, X)` on (id, time) frames.

It prints observations per second of the whole `fit` call less the time
spent compiling (the statistics pass, or the conversion of the frame,
included; compilation is excluded because the persistent compilation
cache serves a later run's programs from disk) and the
peak resident memory (`ru_maxrss`), and the two ratios the issue asks for:
peak(full) / peak(small) <= 1.3 and throughput(memory) / throughput(stream)
<= 2.

    taskset -c 1 python benchmarks/scale.py --series 100000
    taskset -c 1 python benchmarks/scale.py --model forecaster --series 10000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def generate(
    path: str, n_series: int, *, mean_length: int = 100, files: int = 10, seed: int = 0, target: bool = True
) -> int:
    """Write the data set (`target` False: without the column `y`); returns
    its number of observations."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    total = 0
    bounds = np.linspace(0, n_series, files + 1).astype(int)
    for f in range(files):
        ids = np.arange(bounds[f], bounds[f + 1])
        lengths = rng.integers(mean_length // 5, 2 * mean_length - mean_length // 5 + 1, len(ids))
        n = int(lengths.sum())
        series = np.repeat(ids, lengths)
        gaps = rng.exponential(1.0, n)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        times = np.cumsum(gaps)
        times -= np.repeat(times[starts] - gaps[starts], lengths)
        level = rng.normal(size=len(ids))
        freq = rng.uniform(0.1, 1.0, len(ids))
        x0 = np.sin(np.repeat(freq, lengths) * times) + np.repeat(level, lengths) + 0.1 * rng.normal(size=n)
        x1 = rng.normal(size=n)
        x2 = np.repeat(level, lengths) * 0.5 + rng.normal(size=n)
        y = np.repeat(freq + level, lengths)
        columns = {"id": series, "time": times, "x0": x0, "x1": x1, "x2": x2}
        table = pa.table({**columns, "y": y} if target else columns)
        pq.write_table(table, os.path.join(path, f"part-{f:03d}.parquet"), row_group_size=1 << 16)
        total += n
    return total


def measure_forecaster(mode: str, path: str, batch_size: int) -> dict:
    """One epoch's fit of the forecaster (in this process); its seconds and peak memory."""
    from s5ts.forecasting import Forecaster

    model = Forecaster(max_epochs=1, warmup_epochs=0, batch_size=batch_size, random_state=0, id_col="id", time_col="time")
    if mode == "stream":
        started = time.perf_counter()
        model.fit(path, X=["x1", "x2"])
    else:
        import pyarrow.parquet as pq

        frame = pq.read_table(path).to_pandas().set_index(["id", "time"])
        started = time.perf_counter()
        model.fit(frame[["x0"]], frame[["x1", "x2"]])
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    compiling = sum(record["compile_seconds"] for record in model.history_)
    return {
        "seconds": seconds,
        "compile_seconds": compiling,
        "peak_mib": peak_mib,
        "train_loss": model.history_[-1]["train_loss"],
    }


def measure(mode: str, path: str, batch_size: int) -> dict:
    """One epoch's fit (in this process); its seconds and peak memory."""
    from s5ts import S5Regressor

    model = S5Regressor(
        max_epochs=1,
        min_epoch_steps=None,
        warmup_epochs=0,
        batch_size=batch_size,
        random_state=0,
        id_col="id",
        time_col="time",
    )
    if mode == "stream":
        started = time.perf_counter()
        model.fit(path, "y")
    else:
        import pyarrow.parquet as pq

        frame = pq.read_table(path).to_pandas()
        y = frame.groupby("id", sort=False)["y"].first().to_numpy()
        frame = frame.drop(columns="y")
        started = time.perf_counter()
        model.fit(frame, y)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    compiling = sum(record["compile_seconds"] for record in model.history_)
    return {
        "seconds": seconds,
        "compile_seconds": compiling,
        "peak_mib": peak_mib,
        "train_loss": model.history_[-1]["train_loss"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=100_000)
    parser.add_argument("--mean-length", type=int, default=100)
    parser.add_argument("--scale-down", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--out", default=None, help="directory for the data sets (default: a temporary one)")
    parser.add_argument("--skip-memory", action="store_true", help="do not measure the in-memory path")
    parser.add_argument("--model", choices=["regressor", "forecaster"], default="regressor")
    parser.add_argument("--measure", choices=["stream", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        fit = measure_forecaster if args.model == "forecaster" else measure
        print(json.dumps(fit(args.measure, args.data, args.batch_size)))
        return
    out = args.out or tempfile.mkdtemp(prefix="s5ts-scale-")
    sizes = {"full": args.series, "small": args.series // args.scale_down}
    observations = {}
    for name, n in sizes.items():
        started = time.perf_counter()
        observations[name] = generate(
            os.path.join(out, name), n, mean_length=args.mean_length, target=args.model == "regressor"
        )
        print(f"generated {name}: {n} series, {observations[name]} observations in {time.perf_counter() - started:.1f} s")

    def run(mode, name):
        command = [
            sys.executable,
            __file__,
            "--measure",
            mode,
            "--data",
            os.path.join(out, name),
            "--batch-size",
            str(args.batch_size),
            "--model",
            args.model,
        ]
        result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        result["obs_per_s"] = observations[name] / (result["seconds"] - result["compile_seconds"])
        print(
            f"{mode:6s} {name:5s}: {observations[name]:>10d} obs, {result['seconds']:8.1f} s "
            f"({result['compile_seconds']:.1f} s compiling), "
            f"{result['obs_per_s']:10.0f} obs/s less compilation, peak {result['peak_mib']:7.0f} MiB, "
            f"loss {result['train_loss']:.4f}",
            flush=True,
        )
        return result

    small = run("stream", "small")
    full = run("stream", "full")
    print(f"peak memory full / small (stream): {full['peak_mib'] / small['peak_mib']:.2f} (must be <= 1.3)")
    if not args.skip_memory:
        memory = run("memory", "full")
        print(f"throughput memory / stream: {memory['obs_per_s'] / full['obs_per_s']:.2f} (must be <= 2); "
              f"peak memory memory / stream: {memory['peak_mib'] / full['peak_mib']:.2f}")


if __name__ == "__main__":
    main()
