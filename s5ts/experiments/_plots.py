"""Figures of the pendulum reproduction (matplotlib is imported here only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(curves: dict, path: Path) -> None:
    """Training loss and validation MSE per epoch, one line per run."""
    plt = _pyplot()
    fig, (ax_loss, ax_mse) = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, curve in curves.items():
        epochs = [row["epoch"] + 1 for row in curve]
        ax_loss.plot(epochs, [row["train_loss"] for row in curve], label=label)
        ax_mse.plot(epochs, [row["valid_mse"] * 1e3 for row in curve], label=label)
    ax_loss.set(xlabel="epoch", ylabel="training loss (Gaussian NLL)", title="training")
    ax_mse.set(xlabel="epoch", ylabel="validation MSE × 10⁻³", title="validation", yscale="log")
    ax_mse.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_predictions(example: dict, test, path: Path) -> None:
    """Predicted sin/cos with ±2σ against the truth on the first test sequence."""
    plt = _pyplot()
    times = test.times[0]
    truth = test.targets[0]
    fig, axes = plt.subplots(len(example), 2, figsize=(10, 2.2 * len(example)), squeeze=False)
    for row, (name, pred) in enumerate(example.items()):
        mean, std = np.asarray(pred["mean"]), np.asarray(pred["std"])
        for col, label in enumerate(("sin φ", "cos φ")):
            ax = axes[row, col]
            ax.plot(times, truth[:, col], "k.", ms=3, label="truth")
            ax.plot(times, mean[:, col], label=name)
            ax.fill_between(times, mean[:, col] - 2 * std[:, col], mean[:, col] + 2 * std[:, col], alpha=0.25)
            ax.set(ylabel=label, ylim=(-1.6, 1.6))
            ax.legend(fontsize=7, loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel("frame (0.01 s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
