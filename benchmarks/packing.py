"""Packing with resets against padding to buckets: one training epoch
(forward and backward of the loss, no update) of the estimators' default
network over an unequal-length panel, side by side in one run.

- `buckets`: what `S5Classifier` does today: power-of-two length buckets
  merged by `plan_buckets`, batches of 32 series of one bucket, each series
  padded to its bucket's length and the last batch of a bucket padded with
  empty rows (`pad_batch(..., batch_size=32)`).
- `packed`: the series laid end to end by `pack_rows` in rows as long as
  the longest series, `--rows` rows a batch, each series starting with a
  reset of every block's state and pooled alone (`SequenceNetwork.packed`).

The panel: PLAID (sktime's copy, offline; 1,074 series of 100 to 1,344
steps, 11 classes) with 30 % of each series' steps dropped at random, as
in the accuracy benchmark's NCDE protocol, so the gaps are irregular. Both
layouts compute the summed cross-entropy of every series with the same
parameters; the run prints both sums (they agree to float32 rounding) and
the median seconds of `--epochs` timed epochs after one untimed epoch that
compiles every shape.

`--fit DATASETS` times whole fits instead: the default `S5Classifier` /
`S5Regressor` (`random_state` each of `--seeds`) on data sets of the
accuracy benchmark (`_accuracy_data`, e.g. PLAID-drop30), trained on
packed rows (what `fit` does there) and on length buckets (packing
switched off by setting its threshold, `s5ts.training._sequences.PACK_GAIN`,
out of reach: it is no user setting), one after the other, with the test
score of each.

    taskset -c 0 python3 benchmarks/packing.py [--epochs 3] [--rows 8]
    taskset -c 0 python3 benchmarks/packing.py --fit PLAID-drop30,Phenobarb --seeds 0,1
"""

from __future__ import annotations

import argparse
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from s5ts import S5Classifier
from s5ts.data import make_batches, pack_rows, pad_batch, plan_buckets

BATCH_SIZE = 32  # the estimators' default


def plaid(drop: float = 0.3, seed: int = 0):
    """Each series' values (L, 1) and gaps (L,), and the class indices."""
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
    classes, labels = np.unique(np.asarray(y), return_inverse=True)
    return values, gaps, labels.astype(np.int32), len(classes)


def cross_entropy(logits, labels, weights):
    return jnp.sum(weights * (jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, labels[:, None], -1)[:, 0]))


@eqx.filter_jit
def bucket_step(net, u, gaps, mask, labels, weights):
    def loss(net):
        return cross_entropy(net.batch(u, gaps, mask), labels, weights)

    return eqx.filter_value_and_grad(loss)(net)


@eqx.filter_jit
def packed_step(net, u, gaps, mask, segments, labels, weights):
    def loss(net):
        return cross_entropy(net.packed(u, gaps, mask, segments, labels.shape[0]), labels, weights)

    return eqx.filter_value_and_grad(loss)(net)


def bucket_batches(values, gaps, labels):
    lengths = [len(g) for g in gaps]
    buckets = plan_buckets(lengths)
    batches = []
    for idx in make_batches(lengths, BATCH_SIZE, shuffle=True, rng=0, buckets=buckets):
        length = int(buckets[np.searchsorted(buckets, max(lengths[i] for i in idx))])
        u, mask = pad_batch([values[i] for i in idx], length, batch_size=BATCH_SIZE)
        g, _ = pad_batch([gaps[i] for i in idx], length, batch_size=BATCH_SIZE)
        lab = np.zeros(BATCH_SIZE, np.int32)
        lab[: len(idx)] = labels[idx]
        w = (np.arange(BATCH_SIZE) < len(idx)).astype(np.float32)
        batches.append(tuple(jnp.asarray(a) for a in (u, g, mask, lab, w)))
    return batches


def packed_batches(values, gaps, labels, rows_per_batch):
    lengths = [len(g) for g in gaps]
    row_length = max(lengths)
    rows = pack_rows(lengths, row_length)
    groups = [rows[k : k + rows_per_batch] for k in range(0, len(rows), rows_per_batch)]
    capacity = max(sum(len(r) for r in group) for group in groups)  # series a batch holds: one compiled shape
    batches = []
    for group in groups:
        members = [i for r in group for i in r]
        local = {i: j for j, i in enumerate(members)}

        def row_of(parts, r):
            return np.concatenate([parts[i] for i in r])

        u, mask = pad_batch([row_of(values, r) for r in group], row_length, batch_size=rows_per_batch)
        g, _ = pad_batch([row_of(gaps, r) for r in group], row_length, batch_size=rows_per_batch)
        ids = [np.concatenate([np.full(lengths[i], local[i], np.float32) for i in r]) for r in group]
        seg, _ = pad_batch(ids, row_length, fill=-1.0, batch_size=rows_per_batch)
        lab = np.zeros(capacity, np.int32)
        lab[: len(members)] = labels[members]
        w = (np.arange(capacity) < len(members)).astype(np.float32)
        batches.append(tuple(jnp.asarray(a) for a in (u, g, mask, seg.astype(np.int32), lab, w)))
    return batches


def epoch(step, net, batches):
    total = 0.0
    for batch in batches:
        value, grads = step(net, *batch)
        jax.block_until_ready(grads)
        total += float(value)
    return total


def fits(names: list[str], seeds: list[int]) -> None:
    """Default fits on packed rows and on length buckets, side by side."""
    import sys
    from pathlib import Path

    from sklearn.metrics import accuracy_score, r2_score

    import s5ts.training._sequences as sequences
    from s5ts import S5Regressor

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _accuracy_data

    threshold = sequences.PACK_GAIN
    for name in names:
        data = _accuracy_data.load(name, max_series=400)
        cls = S5Classifier if data.task == "classification" else S5Regressor
        score = accuracy_score if data.task == "classification" else r2_score
        for seed in seeds:
            for layout, gain in (("packed", threshold), ("buckets", float("inf"))):
                sequences.PACK_GAIN = gain
                try:
                    start = time.perf_counter()
                    model = cls(random_state=seed).fit(data.X_train, data.y_train)
                    seconds = time.perf_counter() - start
                finally:
                    sequences.PACK_GAIN = threshold
                compiling = sum(r["compile_seconds"] for r in model.history_)
                print(f"{name} seed {seed} {layout}: fit {seconds:.1f} s ({compiling:.1f} s compiling), "
                      f"{len(model.history_)} epochs, test score {score(data.y_test, model.predict(data.X_test)):.4f}",
                      flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=8, help="packed rows per batch")
    parser.add_argument("--fit", help="comma-separated data sets of the accuracy benchmark: time whole fits")
    parser.add_argument("--seeds", default="0", help="with --fit: comma-separated random_state values")
    args = parser.parse_args(argv)
    if args.fit:
        fits(args.fit.split(","), [int(s) for s in args.seeds.split(",")])
        return
    values, gaps, labels, n_classes = plaid()
    lengths = np.array([len(g) for g in gaps])
    net = S5Classifier().build_network(1, False, n_classes, jax.random.key(0))
    layouts = {
        "buckets": (bucket_step, bucket_batches(values, gaps, labels)),
        "packed": (packed_step, packed_batches(values, gaps, labels, args.rows)),
    }
    real = int(lengths.sum())
    print(f"PLAID, 30 % dropped: {len(lengths)} series of {lengths.min()}-{lengths.max()} steps, {real} steps")
    losses, seconds = {}, {name: [] for name in layouts}
    for name, (step, batches) in layouts.items():
        steps = sum(int(np.prod(b[2].shape)) for b in batches)
        print(f"{name}: {len(batches)} batches, {steps} steps computed ({steps / real:.2f}x the real ones)")
        losses[name] = epoch(step, net, batches)  # compiles every shape
    for _ in range(args.epochs):  # interleaved, so load hits both alike
        for name, (step, batches) in layouts.items():
            start = time.perf_counter()
            epoch(step, net, batches)
            seconds[name].append(time.perf_counter() - start)
    for name in layouts:
        print(f"{name}: summed loss {losses[name]:.6f}, epoch {statistics.median(seconds[name]):.2f} s "
              f"(runs {', '.join(f'{s:.2f}' for s in seconds[name])})")
    relative = abs(losses["packed"] - losses["buckets"]) / abs(losses["buckets"])
    speedup = statistics.median(seconds["buckets"]) / statistics.median(seconds["packed"])
    print(f"packed / buckets: loss differs by {relative:.1e} (relative); epoch {speedup:.2f}x faster")


if __name__ == "__main__":
    main()
