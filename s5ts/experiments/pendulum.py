"""Reproduction of the S5 paper's irregular-pendulum table (Table 3 / 9).

Trains S5, S5-drop, S5-append and CRU on the generated data, selects each
run's parameters by validation MSE (evaluated every epoch), and reports test
MSE × 10⁻³ (mean ± std over seeds), seconds per training epoch and parameter
counts beside the published numbers.

Run it with `s5ts pendulum --preset quick|paper --seeds N --out DIR`, or call
`run_pendulum` from Python (the notebook does).
"""

from __future__ import annotations

import dataclasses
import json
import platform
from pathlib import Path

import numpy as np

from ..baselines import CRURegressor, DSSRegressor
from ..data import to_panel
from ..datasets import load_pendulum
from ..estimators import S5Regressor

#: The S5 authors' pendulum configuration (the paper, and the official run scripts' activation).
S5_PAPER_CONFIG = dict(
    n_layers=4,
    d_model=30,
    state_size=8,  # 16 before conjugate symmetry
    blocks=8,
    activation="half_glu2",  # x ⊙ σ(W GELU(x)), as the official run scripts
    prenorm=False,
    dropout=0.0,
    discretization="zoh",
    dt_min=0.01,
    dt_max=0.1,
    encoder="pendulum_cnn",
    loss="gaussian_nll",
    learning_rate=0.012,
    ssm_learning_rate=0.003,
    weight_decay=0.0,
    batch_size=32,
    warmup_epochs=1,
    grad_clip=None,
    standardize=False,
    min_epoch_steps=None,  # the paper's epochs: one pass over the data,
    observation_dropout=0.0,  # every frame of every sequence
    time_warp=0.0,  # every gap as it is (the paper has no warps)
)

#: CRU's published training setting (the CRU paper).
CRU_PAPER_CONFIG = dict(encoder="pendulum_cnn", learning_rate=1e-3, batch_size=50, weight_decay=0.0)

#: Published test MSE × 10⁻³ (mean, std) — S5 paper Table 3 / Table 9.
PUBLISHED = {
    "S5": (3.41, 0.27),
    "S5-append": (4.13, 0.43),
    "S5-drop": (6.68, 0.38),
    "CRU": (4.63, 1.07),
    "CRU (S5 paper rerun)": (3.94, 0.21),
    "RoMAE": (3.32, 0.13),
}

MODELS = ("S5", "S5-drop", "S5-append", "CRU")
_TIME_HANDLING = {"S5": "gaps", "S5-drop": "drop", "S5-append": "append"}

#: The lineage's rows, trained when named (`models=`, `s5ts pendulum
#: --models`): S5 (per-step gaps) with one option changed
#: (docs/s5-layer.md), and the DSS baseline with S5's setting where it
#: shares it (docs/baselines.md).
VARIANTS = {
    "S5-selective": {"selective": "scaled"},
    "S5-split": {"selective": "split"},
    "S4D-Lin": {"init": "s4d_lin"},
    "S4D-Inv": {"init": "s4d_inv"},
    "S4D-Real": {"init": "s4d_real"},
}
ALL_MODELS = (*MODELS, *VARIANTS, "DSS")
#: The rows trained with `S5_PAPER_CONFIG` (merged runs must share it).
_S5_FAMILY = {*_TIME_HANDLING, *VARIANTS, "DSS"}


@dataclasses.dataclass(frozen=True)
class Preset:
    """Data sizes and epochs of one reproduction setting."""

    n_train: int
    n_valid: int
    n_test: int
    s5_epochs: int
    cru_epochs: int
    cru_n_train: int  # CRU is ~5× slower per epoch on CPU: the quick presets train it on fewer series

    def describe(self) -> str:
        return (
            f"{self.n_train}/{self.n_valid}/{self.n_test} train/valid/test sequences, "
            f"S5 {self.s5_epochs} epochs, CRU {self.cru_epochs} epochs on {self.cru_n_train} sequences"
        )


PRESETS = {
    # The published protocol: full splits, 100 epochs, selection by validation MSE.
    "paper": Preset(2000, 1000, 1000, 100, 100, 2000),
    # About 6 minutes on a 2-core CPU (measured); already orders S5 < S5-append < S5-drop.
    "quick": Preset(512, 256, 256, 20, 3, 128),
    # Seconds-scale smoke run (CI runs the notebook with it).
    "tiny": Preset(32, 16, 16, 2, 1, 16),
}


def make_model(name: str, preset: Preset, seed: int, *, verbose: bool = False):
    """The estimator for one row of the table: every epoch trained
    (`n_iter_no_change=None`), the validation set given to `fit`."""
    common = dict(validation_fraction=0.0, n_iter_no_change=None, random_state=seed, verbose=verbose)
    if name in _TIME_HANDLING:
        return S5Regressor(**S5_PAPER_CONFIG, **common, time_handling=_TIME_HANDLING[name], max_epochs=preset.s5_epochs)
    if name in VARIANTS:
        return S5Regressor(**S5_PAPER_CONFIG, **common, **VARIANTS[name], max_epochs=preset.s5_epochs)
    if name == "DSS":  # one diagonal SSM per channel: no blocks of a shared state, no choice of discretisation
        shared = {k: v for k, v in S5_PAPER_CONFIG.items() if k not in ("blocks", "discretization", "time_warp")}
        return DSSRegressor(**shared, **common, max_epochs=preset.s5_epochs)
    if name == "CRU":
        return CRURegressor(**CRU_PAPER_CONFIG, **common, max_epochs=preset.cru_epochs)
    raise ValueError(f"unknown model {name!r}; choose from {ALL_MODELS}")


def mse(prediction: list, targets: list) -> float:
    """Mean squared error over every observation and output."""
    return float(np.mean((np.concatenate(prediction) - np.concatenate([np.asarray(t) for t in targets])) ** 2))


def summarise(runs: list[dict]) -> dict:
    """Per model: test MSE × 10⁻³ mean and std over seeds, epoch seconds, parameters."""
    summary = {}
    for name in dict.fromkeys(r["model"] for r in runs):
        rows = [r for r in runs if r["model"] == name]
        scores = np.array([r["test_mse"] * 1e3 for r in rows])
        steady = [s for r in rows for s in r["epoch_seconds"][1:]] or [s for r in rows for s in r["epoch_seconds"]]
        summary[name] = {
            "test_mse_e3_mean": float(scores.mean()),
            "test_mse_e3_std": float(scores.std(ddof=1)) if len(scores) > 1 else 0.0,
            "seeds": len(rows),
            "seconds_per_epoch": float(np.median(steady)),
            "n_train_sequences": rows[0]["n_train_sequences"],
            "n_parameters": rows[0]["n_parameters"],
            "published_e3": PUBLISHED.get(name),
        }
    return summary


def results_markdown(summary: dict, preset_name: str, preset: Preset, *, merged: bool = False) -> str:
    """The results table. `merged`: the runs come from separate processes
    (`merge_results`), so their epoch times were not measured side by side."""
    lines = [
        f"# Irregular pendulum: preset `{preset_name}`",
        "",
        f"{preset.describe()}; selection by validation MSE every epoch.",
        "",
        "| model | test MSE × 10⁻³ (ours) | published | s / epoch | train seqs | parameters |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in summary.items():
        published = row["published_e3"]
        paper = f"{published[0]:.2f} ± {published[1]:.2f}" if published else "–"
        lines.append(
            f"| {name} | {row['test_mse_e3_mean']:.2f} ± {row['test_mse_e3_std']:.2f} (n={row['seeds']}) | "
            f"{paper} | {row['seconds_per_epoch']:.2f} | {row['n_train_sequences']} | {row['n_parameters']:,} |"
        )
    lines += [
        "",
        "Published: S5 paper Table 3 / Table 9 (S5 rows 20 seeds; CRU from the CRU paper, 5 seeds); "
        f"RoMAE reports {PUBLISHED['RoMAE'][0]} ± {PUBLISHED['RoMAE'][1]}.",
    ]
    if merged:
        lines.append(
            "\nMerged from runs made apart (other processes, cores or loads): the seconds per epoch are "
            "not a side-by-side speed comparison; see benchmarks/pendulum_speed.py for that."
        )
    elif "S5" in summary and "CRU" in summary:
        ratio = summary["CRU"]["seconds_per_epoch"] / summary["S5"]["seconds_per_epoch"]
        per_sequence = ratio * summary["S5"]["n_train_sequences"] / summary["CRU"]["n_train_sequences"]
        lines.append(
            f"\nS5 vs CRU training time per sequence, same run: CRU is {per_sequence:.1f}× slower."
        )
    return "\n".join(lines) + "\n"


def run_pendulum(
    preset: str = "quick",
    *,
    seeds: int = 1,
    first_seed: int = 0,
    out: str | Path = "results/pendulum",
    models: tuple[str, ...] = MODELS,
    cache_dir: str | Path | None = None,
    verbose: bool = True,
    plots: bool = True,
) -> dict:
    """Train every model for `seeds` seeds (`first_seed`, `first_seed + 1`, …)
    and write `results.md`, `results.csv`, `results.json` and plots into `out`.
    Runs of other seeds made elsewhere are combined with `merge_results`.

    **Returns:** the `results.json` content (a dict with `summary` and `runs`).
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    if not isinstance(first_seed, int) or first_seed < 0:
        raise ValueError(f"first_seed must be a non-negative integer, got {first_seed!r}")
    unknown = [m for m in models if m not in ALL_MODELS]
    if unknown:
        raise ValueError(f"unknown models {unknown}; choose from {ALL_MODELS}")
    config = PRESETS[preset]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def log(message):
        if verbose:
            print(message, flush=True)

    log(f"pendulum preset {preset!r}: {config.describe()}")
    data = {
        split: load_pendulum(split, n_sequences=n, cache_dir=cache_dir, verbose=verbose)
        for split, n in (("train", config.n_train), ("valid", config.n_valid), ("test", config.n_test))
    }
    # Convert the frames once; every epoch's partial_fit then starts from arrays.
    panels = {split: to_panel(bunch.X) for split, bunch in data.items()}
    runs, curves, example = [], {}, {}
    for name in models:
        n_train = config.cru_n_train if name == "CRU" else config.n_train
        epochs = config.cru_epochs if name == "CRU" else config.s5_epochs
        X_train, y_train = panels["train"].subset(range(n_train)), data["train"].y[:n_train]
        for seed in range(first_seed, first_seed + seeds):
            model = make_model(name, config, seed, verbose=verbose)
            log(f"{name} seed {seed}: {epochs} epochs on {n_train} sequences")

            # The paper's model selection: the epoch of the lowest validation MSE is kept.
            best = model.fit(X_train, y_train, validation_data=(panels["valid"], data["valid"].y))
            curve = [
                {"epoch": r["epoch"], "train_loss": r["train_loss"], "valid_mse": r["valid_mse"], "seconds": r["train_seconds"]}
                for r in best.history_
            ]
            test_prediction = best.predict(panels["test"])
            runs.append(
                {
                    "model": name,
                    "seed": seed,
                    "test_mse": mse(test_prediction, data["test"].y),
                    "best_valid_mse": min(r["valid_mse"] for r in curve),
                    "best_epoch": int(np.argmin([r["valid_mse"] for r in curve])),
                    "epoch_seconds": [r["seconds"] for r in curve],
                    "n_parameters": best.n_parameters_,
                    "n_train_sequences": n_train,
                }
            )
            curves[f"{name} (seed {seed})"] = curve
            if name not in example:
                mean, std = best.predict(panels["test"].subset([0]), return_std=True)
                example[name] = {"mean": mean[0], "std": std[0]}
            log(f"  {name} seed {seed}: test MSE {runs[-1]['test_mse'] * 1e3:.2f}e-3")

    result = {
        "preset": preset,
        "preset_config": dataclasses.asdict(config),
        "s5_config": S5_PAPER_CONFIG,
        "cru_config": CRU_PAPER_CONFIG,
        "summary": summarise(runs),
        "runs": runs,
        "curves": curves,
        "environment": _environment(),
    }
    _write_results(result, out, plots=plots)
    if plots:
        from ._plots import plot_predictions

        plot_predictions(example, data["test"], out / "predictions.png")
    log((out / "results.md").read_text())
    return result


def merge_results(directories: list[str | Path], out: str | Path, *, plots: bool = True) -> dict:
    """Combine the `results.json` of runs made separately — other seeds
    (`first_seed`), other models, other machines — into one table in `out`.

    The runs must share a preset and must not repeat a (model, seed) pair;
    the folders with S5-family runs must share their S5 configuration, and
    those with CRU runs the CRU configuration.

    **Returns:** the merged `results.json` content.
    """
    if not directories:
        raise ValueError("merge_results needs at least one results directory")
    results = []
    for directory in directories:
        path = Path(directory) / "results.json"
        if not path.is_file():
            raise ValueError(f"{directory}: no results.json (not an `s5ts pendulum` output folder)")
        results.append(json.loads(path.read_text()))
    presets = {r["preset"] for r in results}
    if len(presets) > 1:
        raise ValueError(f"cannot merge different presets {sorted(presets)} from {[str(d) for d in directories]}")
    configs = {}
    for key, family in (("s5_config", _S5_FAMILY), ("cru_config", {"CRU"})):
        trained = [(d, r[key]) for d, r in zip(directories, results) if any(run["model"] in family for run in r["runs"])]
        if any(config != trained[0][1] for _, config in trained):
            differing = {str(d): config for d, config in trained}
            raise ValueError(f"cannot merge runs trained with different {key}: {differing}")
        if trained:
            configs[key] = trained[0][1]
    runs, curves, source = [], {}, {}
    for directory, result in zip(directories, results):
        for run in result["runs"]:
            key = (run["model"], run["seed"])
            if key in source:
                raise ValueError(f"{run['model']} seed {run['seed']} is in both {source[key]} and {directory}")
            source[key] = str(directory)
            runs.append(run)
        curves.update(result["curves"])
    runs.sort(key=lambda run: (ALL_MODELS.index(run["model"]), run["seed"]))
    merged = {**results[0], **configs, "summary": summarise(runs), "runs": runs, "curves": curves,
              "merged_from": [str(d) for d in directories]}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_results(merged, out, plots=plots)
    return merged


def _write_results(result: dict, out: Path, *, plots: bool) -> None:
    """results.json, results.csv, results.md and the learning curves."""
    (out / "results.json").write_text(json.dumps(result, indent=2))
    _write_csv(out / "results.csv", result["runs"])
    preset = result["preset"]
    (out / "results.md").write_text(
        results_markdown(result["summary"], preset, PRESETS[preset], merged="merged_from" in result)
    )
    if plots:
        from ._plots import plot_learning_curves

        plot_learning_curves(result["curves"], out / "learning_curves.png")


def _write_csv(path: Path, runs: list[dict]) -> None:
    import pandas as pd

    frame = pd.DataFrame(runs)
    frame["test_mse_e3"] = frame["test_mse"] * 1e3
    frame["seconds_per_epoch"] = [float(np.median(s[1:] or s)) for s in frame["epoch_seconds"]]
    frame.drop(columns=["epoch_seconds"]).to_csv(path, index=False)


def _environment() -> dict:
    import jax

    return {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "machine": platform.machine(),
        "processor": platform.processor(),
    }
