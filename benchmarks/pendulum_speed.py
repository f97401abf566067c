"""Pendulum training speed on this machine, measured side by side in one run.

1. One S5 training step (the paper's model, batch 32, 50 frames) against the
   official code's 0.65 s per step on this kind of 2-core CPU (spec:
   the project's reference numbers; the official code is not run here).
2. Training epochs of S5 against CRU on the same sequences, alternating
   (medians of `--epochs`, after one warm-up epoch that compiles).
3. The per-frame CNN's forward+backward: convolutions as matrix products (what
   PendulumCNN does) against XLA's convolution on the same parameters.
4. Derived from 1 and 3: what each step spends beyond the shared CNN, and
   the ceiling the CNN puts on the CRU/S5 step ratio (CRU step / CNN: the
   ratio if S5's own layers took no time at all).

    python3 benchmarks/pendulum_speed.py            # 256 sequences
    python3 benchmarks/pendulum_speed.py --quick    # 64 sequences
    JAX_NUM_CPU_DEVICES=2 python3 benchmarks/pendulum_speed.py   # batches split over 2 CPU devices
"""

from __future__ import annotations

import argparse

import _timing  # noqa: F401  (puts the repository on sys.path)
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _timing import print_header, print_table, seconds, time_interleaved

from s5ts.data import to_panel
from s5ts.datasets import load_pendulum
from s5ts.experiments.pendulum import PRESETS, make_model
from s5ts.training import Split, make_optimizer, padded_batch, placement_for, train_step

OFFICIAL_STEP_SECONDS = 0.65  # measured once: official S5 code, batch 32, this kind of CPU


def _step_call(estimator, panel, y, rows):
    """The compiled training step of a fitted estimator and one real batch."""
    data = estimator.preprocessing_.transform(
        panel, *estimator._task().encode(y, panel, estimator._target_state)[:2]
    )
    # Placed as training places it: split over the local devices, if several.
    placement = placement_for(rows)
    batch = placement.put_batch(padded_batch(data, np.arange(rows), rows))
    model, opt_state = placement.replicate((estimator._training_state_.model, estimator._training_state_.opt_state))
    optimizer = make_optimizer(float(estimator.weight_decay), estimator.grad_clip)
    rates = {"regular": np.float32(1e-3), "ssm": np.float32(1e-3)}
    loss_fn = estimator._task().loss_fn()
    key_data = jax.random.key_data(jax.random.key(0))
    split = Split.of((model, opt_state))

    def step():
        return train_step(split.static, optimizer, loss_fn, None, split.arrays, batch, None, rates, key_data)[1]

    return step


def _xla_conv_cnn(cnn, frames):
    """The same CNN through XLA's convolution (eqx.nn.Conv2d, NCHW)."""

    def one(x):
        h = x.reshape(1, 24, 24)
        h = jax.nn.relu(cnn.conv1(h))
        h = h.reshape(12, 12, 2, 12, 2).max(axis=(2, 4))
        h = jax.nn.relu(cnn.conv2(h))
        h = h.reshape(12, 3, 2, 3, 2).max(axis=(2, 4))
        return jax.nn.relu(cnn.linear(h.reshape(-1)))

    return jax.vmap(one)(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 sequences instead of 256")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per model, after one warm-up epoch")
    args = parser.parse_args()
    n = 64 if args.quick else 256
    print_header(f"Pendulum training speed ({n} sequences of 50 frames)")

    X, y = load_pendulum("train", n_sequences=n, return_X_y=True, verbose=False)
    panel = to_panel(X)
    preset = PRESETS["paper"]
    s5 = make_model("S5", preset, seed=0)
    cru = make_model("CRU", preset, seed=0)
    # Whole training epochs (`partial_fit`: one pass, every batch), S5 and CRU
    # alternating; the untimed warm-up epoch compiles every batch shape.
    epochs = time_interleaved(
        {name: (lambda m=model: m.partial_fit(panel, y).history_[-1], ()) for name, model in (("S5", s5), ("CRU", cru))},
        repeats=args.epochs,
    )
    epoch_seconds = {name: timing.median for name, timing in epochs.items()}

    steps = time_interleaved(
        {"S5 step (batch 32)": (_step_call(s5, panel, y, 32), ()), "CRU step (batch 32)": (_step_call(cru, panel, y, 32), ())},
        repeats=args.repeats,
    )
    cnn = s5.model_.encoder
    frames = jnp.asarray(np.concatenate(panel.values[:32]), jnp.float32)  # 1 600 frames

    def loss(f):
        return eqx.filter_jit(eqx.filter_grad(lambda c, x: jnp.sum(f(c, x) ** 2)))

    cnn_times = time_interleaved(
        {
            "CNN matrix products": (loss(lambda c, x: c.batch(x)), (cnn, frames)),
            "CNN XLA convolution": (loss(_xla_conv_cnn), (cnn, frames)),
        },
        repeats=args.repeats,
    )

    s5_step = steps["S5 step (batch 32)"].median
    cru_step = steps["CRU step (batch 32)"].median
    cnn_step = cnn_times[
        "CNN matrix products"
    ].median  # the CNN part of the S5 step at batch 32 (CRU vmaps the call per sequence)
    print_table(
        ["measurement", "median", "ratio"],
        [
            [
                "S5 training step, batch 32",
                seconds(s5_step),
                f"{OFFICIAL_STEP_SECONDS / s5_step:.2f}× faster than official 0.65 s",
            ],
            ["CRU training step, batch 32", seconds(cru_step), f"{cru_step / s5_step:.1f}× S5's step"],
            [f"S5 epoch ({n} seqs)", seconds(epoch_seconds["S5"]), ""],
            [
                f"CRU epoch ({n} seqs)",
                seconds(epoch_seconds["CRU"]),
                f"{epoch_seconds['CRU'] / epoch_seconds['S5']:.1f}× S5's epoch",
            ],
            ["CNN fwd+bwd, 1600 frames: matrix products", seconds(cnn_step), ""],
            [
                "CNN fwd+bwd, 1600 frames: XLA conv",
                seconds(cnn_times["CNN XLA convolution"].median),
                f"{cnn_times['CNN XLA convolution'].median / cnn_step:.2f}× matrix products",
            ],
            ["S5 step beyond the CNN, batch 32", seconds(s5_step - cnn_step), ""],
            [
                "CRU step beyond the CNN, batch 32",
                seconds(cru_step - cnn_step),
                f"{(cru_step - cnn_step) / (s5_step - cnn_step):.1f}× S5's",
            ],
            ["ceiling on the step ratio: CRU step / CNN", "", f"{cru_step / cnn_step:.1f}× (S5 layers free)"],
        ],
    )


if __name__ == "__main__":
    main()
