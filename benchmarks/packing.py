"""Packing with resets against padding to buckets: one training epoch
(forward and backward of the loss, no update) of the estimators' default
network over an unequal-length panel, side by side in one run, batched as
training batches them (`s5ts.training`):

- `buckets`: `Sequences.iterate_batches`: power-of-two length buckets
  merged by `plan_buckets`, batches of 32 series of one bucket, each series
  padded to its bucket's length and a bucket's last batch padded with
  empty rows;
- `packed`: `packed_for(...)` (`PackedSequences`): the series laid end to
  end by `pack_rows` in rows as long as the longest series, each series
  starting with a reset of every block's state and pooled alone
  (`SequenceNetwork.packed`), the power of two of rows a batch that holds
  about 32 series.

The panel: PLAID (sktime's copy, offline; 1,074 series of 100 to 1,344
steps, 11 classes) with 30 % of each series' steps dropped at random, as
in the accuracy benchmark's NCDE protocol, so the gaps are irregular. Both
layouts compute the summed cross-entropy of every series with the same
parameters; the run prints both sums (they agree to float32 rounding) and
the median seconds of `--epochs` timed epochs, interleaved, after one
untimed epoch that compiles every shape.

`--fit DATASETS` times whole fits instead: the default `S5Classifier` /
`S5Regressor` (`random_state` each of `--seeds`) on data sets of the
accuracy benchmark (`_accuracy_data`, e.g. PLAID-drop30), with
`packing="auto"` (the default) and `packing=False` (length buckets), one
after the other, with the test score of each.

    taskset -c 0 python3 benchmarks/packing.py [--epochs 3]
    taskset -c 0 python3 benchmarks/packing.py --fit PLAID-drop30,Phenobarb --seeds 0,1
"""

from __future__ import annotations

import argparse
import statistics
import time

import _timing  # noqa: F401  (puts the repository on sys.path)
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from s5ts import S5Classifier
from s5ts.training import Sequences, WholeSequences, cross_entropy_loss, packed_for, run_batch

BATCH_SIZE = 32  # the estimators' default


def plaid(drop: float = 0.3, seed: int = 0) -> Sequences:
    """PLAID's series (values standardised per series, gaps between the
    kept steps) and class indices, as model-ready `Sequences`."""
    from sktime.datasets import load_plaid

    X, y = load_plaid(return_type="nested_univ")
    rng = np.random.default_rng(seed)
    values, gaps = [], []
    for cell in X.iloc[:, 0]:
        v = cell.to_numpy(dtype=np.float32)
        keep = np.sort(rng.choice(len(v), size=max(2, round(len(v) * (1 - drop))), replace=False))
        t = keep.astype(np.float32)
        values.append(((v[keep] - v.mean()) / (v.std() + 1e-6))[:, None])
        gaps.append(np.diff(t, prepend=t[0] - 1.0))
    _, labels = np.unique(np.asarray(y), return_inverse=True)
    return Sequences(inputs=tuple(values), gaps=tuple(gaps), targets=labels.astype(np.int32))


@eqx.filter_jit
def step(net, batch):
    def loss(net):
        return cross_entropy_loss(run_batch(net, batch, None, None, False)[0], batch["y"], batch["weights"])[0]

    return eqx.filter_value_and_grad(loss)(net)


def epoch(net, batches):
    total = 0.0
    for batch in batches:
        value, grads = step(net, batch)
        jax.block_until_ready(grads)
        total += float(value)
    return total


def timed_epochs(net, layouts: dict[str, list], epochs: int) -> tuple[dict, dict]:
    """(summed loss, seconds of each of `epochs` timed epochs) of each
    layout's batches: one untimed epoch each first (it compiles every
    shape), then the timed ones interleaved, so load hits every layout
    alike."""
    losses = {name: epoch(net, batches) for name, batches in layouts.items()}
    seconds = {name: [] for name in layouts}
    for _ in range(epochs):
        for name, batches in layouts.items():
            start = time.perf_counter()
            epoch(net, batches)
            seconds[name].append(time.perf_counter() - start)
    return losses, seconds


def fits(names: list[str], seeds: list[int]) -> None:
    """Default fits with packing="auto" and packing=False, side by side."""
    import sys
    from pathlib import Path

    from sklearn.metrics import accuracy_score, r2_score

    from s5ts import S5Regressor

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _accuracy_data

    for name in names:
        data = _accuracy_data.load(name, max_series=400)
        cls = S5Classifier if data.task == "classification" else S5Regressor
        score = accuracy_score if data.task == "classification" else r2_score
        for seed in seeds:
            for packing in ("auto", False):
                start = time.perf_counter()
                model = cls(random_state=seed, packing=packing).fit(data.X_train, data.y_train)
                seconds = time.perf_counter() - start
                compiling = sum(r["compile_seconds"] for r in model.history_)
                print(f"{name} seed {seed} packing={packing!r}: fit {seconds:.1f} s ({compiling:.1f} s compiling), "
                      f"{len(model.history_)} epochs, test score {score(data.y_test, model.predict(data.X_test)):.4f}",
                      flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--fit", help="comma-separated data sets of the accuracy benchmark: time whole fits")
    parser.add_argument("--seeds", default="0", help="with --fit: comma-separated random_state values")
    args = parser.parse_args(argv)
    if args.fit:
        fits(args.fit.split(","), [int(s) for s in args.seeds.split(",")])
        return
    data = plaid()
    n_classes = int(data.targets.max()) + 1
    net = S5Classifier().build_network(1, False, n_classes, jax.random.key(0))
    packed = packed_for(data, net, BATCH_SIZE, WholeSequences())
    rng = np.random.default_rng(0)
    layouts = {
        name: [
            {k: jnp.asarray(v) for k, v in batch.items()}
            for _, batch in source.iterate_batches(BATCH_SIZE, shuffle=True, rng=rng, place=False)
        ]
        for name, source in (("buckets", data), ("packed", packed))
    }
    lengths = data.lengths
    real = int(lengths.sum())
    print(f"PLAID, 30 % dropped: {len(lengths)} series of {lengths.min()}-{lengths.max()} steps, {real} steps; "
          f"packed: {type(packed).__name__}, {packed.rows} rows of {packed.row_length} steps a batch")
    for name, batches in layouts.items():
        steps = sum(int(np.prod(b["mask"].shape)) for b in batches)
        print(f"{name}: {len(batches)} batches, {steps} steps computed ({steps / real:.2f}x the real ones)")
    losses, seconds = timed_epochs(net, layouts, args.epochs)
    for name in layouts:
        print(f"{name}: summed loss {losses[name]:.6f}, epoch {statistics.median(seconds[name]):.2f} s "
              f"(runs {', '.join(f'{s:.2f}' for s in seconds[name])})")
    relative = abs(losses["packed"] - losses["buckets"]) / abs(losses["buckets"])
    speedup = statistics.median(seconds["buckets"]) / statistics.median(seconds["packed"])
    print(f"packed / buckets: loss differs by {relative:.1e} (relative); epoch {speedup:.2f}x faster")


if __name__ == "__main__":
    main()
