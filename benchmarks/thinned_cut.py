"""Thinned training batches cut short against kept whole: one training
epoch (forward and backward of the loss, no update) of the estimators'
default network, side by side in one run, on batches of the same draws of
observation dropout (`observation_dropout`, the default 0.3 under
`time_handling="gaps"`):

- `whole`: `iterate_batches(..., observation_dropout=0.3)`: the kept
  observations moved to the front of each row, the batch as long as its
  length bucket;
- `cut`: the same with `cut=True` (what training does since 2026-12-06):
  the steps past `Thinning.kept_bound` (the mean count a row keeps
  plus 5 standard deviations), padding alone, cut off;
- `budget`: `observation_dropout="auto"` since 2026-12-06: the same rate,
  series longer than about 180 observations thinned further to about
  `AUTO_OBSERVATION_BUDGET` (128), and cut (other draws: its loss is not
  comparable).

The data: `--series` random-walk series of `--length` observations (the
default, 100 of 730, is ACSF1's shape in the accuracy benchmark), gaps
drawn from an exponential. Both compute the summed cross-entropy of every
series with the same parameters; the run prints both sums (equal to
float32 rounding) and the median seconds of `--epochs` timed epochs,
interleaved, after one untimed epoch that compiles both shapes.

Then prediction (`predict_outputs`) of the same series, side by side:
whole (without a budget, as before 2026-12-06 16:00), and under the budget,
where each series it thins is predicted as the mean over
`PREDICTION_COPIES` thinned copies (`forward_batches`, each copy cut
after the steps it can keep); the first call of each (which compiles),
then the median seconds of `--epochs` calls each, interleaved.

    taskset -c 0 python3 benchmarks/thinned_cut.py [--series 100 --length 730 --epochs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import _timing  # noqa: F401  (puts the repository on sys.path)
import jax
import jax.numpy as jnp
import numpy as np
from packing import timed_epochs  # epochs of gradients, timed as packing.py times them

from s5ts import S5Classifier
from s5ts.estimators import AUTO_OBSERVATION_BUDGET
from s5ts.training import PREDICTION_COPIES, Sequences, Thinning, iterate_batches, predict_outputs

BATCH_SIZE = 32  # the estimators' default
RATE = 0.3  # observation_dropout="auto" under time_handling="gaps"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--length", type=int, default=730)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    data = Sequences(
        inputs=tuple(rng.normal(size=(args.length, 1)).cumsum(0).astype(np.float32) for _ in range(args.series)),
        gaps=tuple(rng.exponential(1.0, args.length).astype(np.float32) for _ in range(args.series)),
        targets=rng.integers(0, 10, args.series).astype(np.int32),
    )
    net = S5Classifier().build_network(1, False, 10, jax.random.key(0))
    layouts = {
        name: [
            {k: jnp.asarray(v) for k, v in batch.items()}
            for _, batch in iterate_batches(
                data, BATCH_SIZE, shuffle=True, rng=np.random.default_rng(1), observation_dropout=RATE,
                observation_budget=budget, place=False, cut=cut,
            )
        ]
        for name, cut, budget in (("whole", False, None), ("cut", True, None), ("budget", True, AUTO_OBSERVATION_BUDGET))
    }
    print(f"{args.series} series of {args.length} observations, observation dropout {RATE}: "
          f"cut at {Thinning(RATE).kept_bound([args.length])} steps, "
          f"with the budget at {Thinning(RATE, AUTO_OBSERVATION_BUDGET).kept_bound([args.length])}")
    for name, batches in layouts.items():
        print(f"{name}: {len(batches)} batches of {sorted({b['mask'].shape[1] for b in batches})} steps")
    losses, seconds = timed_epochs(net, layouts, args.epochs)
    for name in layouts:
        print(f"{name}: summed loss {losses[name]:.6f}, epoch {statistics.median(seconds[name]):.3f} s "
              f"(runs {', '.join(f'{s:.3f}' for s in seconds[name])})")
    relative = abs(losses["cut"] - losses["whole"]) / abs(losses["whole"])
    speedup = statistics.median(seconds["whole"]) / statistics.median(seconds["cut"])
    print(f"cut / whole: loss differs by {relative:.1e} (relative); epoch {speedup:.2f}x faster")
    speedup = statistics.median(seconds["whole"]) / statistics.median(seconds["budget"])
    print(f"budget / whole: epoch {speedup:.2f}x faster")

    ways = {"whole": Thinning(RATE), f"{PREDICTION_COPIES} copies": Thinning(RATE, AUTO_OBSERVATION_BUDGET)}
    spent = {name: [] for name in ways}
    first = {}
    for timed in (False,) + (True,) * args.epochs:  # the first call of each compiles
        for name, thinning in ways.items():
            start = time.perf_counter()
            jax.block_until_ready(predict_outputs(net, data, BATCH_SIZE, thinning=thinning))
            if timed:
                spent[name].append(time.perf_counter() - start)
            else:
                first[name] = time.perf_counter() - start
    for name in ways:
        print(f"predict, {name}: first call (compiling) {first[name]:.3f} s, then {statistics.median(spent[name]):.3f} s "
              f"(runs {', '.join(f'{s:.3f}' for s in spent[name])})")
    ratio = statistics.median(spent[f"{PREDICTION_COPIES} copies"]) / statistics.median(spent["whole"])
    print(f"predict, copies / whole: {ratio:.2f}x the time")


if __name__ == "__main__":
    main()
