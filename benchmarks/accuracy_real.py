"""Accuracy of s5ts's default estimators against the tools users would pick
instead, on real data sets made irregular and on synthetic timing tasks.

What it measures: for each data set (see `_accuracy_data.py`) every method is
fitted on the same training split and scored on the same test split:
accuracy for classification, R² for regression (and MSE, MSE / variance of
the test targets). Also the seconds of fit + predict, the mean rank of each
method over the real data sets, and how many points each method is below the
best one per data set.

Methods, side by side in one run (each seeded with `random_state=0`, or
once per seed of `--seeds`):

- `s5_gaps` / `s5_drop`: `S5Classifier` / `S5Regressor` with their defaults,
  `time_handling="gaps"` (the default) and `"drop"`, on the irregular series
  as a list of DataFrames indexed by time (what the estimators take as is).
  `--s5-params JSON` overrides S5 parameters for tuning; the default run has
  none.
- `tsf`, `minirocket`, `summary`: sktime's `TimeSeriesForestClassifier` /
  `Regressor` (after `ColumnConcatenator` for multivariate sets),
  `RocketClassifier` / `RocketRegressor(rocket_transform="minirocket")`
  (MiniRocket + ridge with built-in cross-validation) and `SummaryClassifier`
  (for regression: the same summary statistics + a 200-tree random forest), on
  each series linearly interpolated onto a regular grid (`on_grid`).
- `hgb`: scikit-learn's `HistGradientBoostingClassifier` / `Regressor` on
  per-channel summary features of the irregular series (mean, std, min, max,
  first, last, slope; number of observations, time span, mean gap): what a
  user computes without any time-series library.
- `dummy`: the prior class / the training mean, for reference.
- `s5_vote3` (only when named in `--methods`): scikit-learn's
  `VotingClassifier(voting="soft")` / `VotingRegressor` over three `s5_gaps`
  estimators with other seeds; three times the S5 fitting time.
- `s5_grid` (only when named in `--methods`): `s5_gaps` on the interpolated
  grid that `tsf`, `minirocket` and `summary` see, regular steps: beside
  `s5_gaps` it says what irregular sampling costs S5, beside MiniRocket what
  the model does with the same inputs.

A method that fails on a data set is reported as failed; the run goes on.

One seed decides little on small test splits (the model seed alone moves
S5 on ArrowHead by 3.4 points). `--seeds 0,1,2` fits every method once per
seed, as its `random_state` (the data, thinning and subsampling, stay those
of seed 0; `random_state` in `--s5-params` overrides it for S5); the tables
then show means over the seeds, the ranks are ranks of the means, and a
section lists each score's range over the seeds.

Run from the repository root, pinned to one core (S5 fits dominate the time):

    taskset -c 1 python3 benchmarks/accuracy_real.py            # full run, writes docs/accuracy.md
    taskset -c 1 python3 benchmarks/accuracy_real.py --quick    # 3 small sets, short S5 runs (minutes)
    taskset -c 1 python3 benchmarks/accuracy_real.py --datasets GunPoint,rhythm --methods s5_gaps,hgb \\
        --s5-params '{"learning_rate": 3e-3}' --no-docs
    taskset -c 1 python3 benchmarks/accuracy_real.py --datasets ArrowHead,UnitTest --seeds 0,1,2 --no-docs

Needs the `benchmarks` extra (`pip install -e ".[benchmarks]"`: sktime, and
numba for MiniRocket). Raw results go to `--out` (default
`results/accuracy/`) as CSV and JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

_ROOT = Path(__file__).resolve().parents[1]
for path in (_ROOT, _ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import _accuracy_data as D  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _report import choose, run_context, table, write_raw  # noqa: E402
from scipy.stats import rankdata  # noqa: E402
from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score  # noqa: E402

from s5ts import S5Classifier, S5Regressor  # noqa: E402

SEED = 0
DEFAULT_MAX_SERIES = 400
QUICK_DATASETS = ["UnitTest", "JapaneseVowels", "frequency"]
QUICK_MAX_SERIES = 100
QUICK_S5_PARAMS = {"max_epochs": 15}
DOCS = _ROOT / "docs" / "accuracy.md"
VERSIONS = ["s5ts", "jax", "numpy", "pandas", "scikit-learn", "sktime", "numba", "scipy"]


# --- inputs of the methods ----------------------------------------------------


def summary_features(frames: list[pd.DataFrame]) -> np.ndarray:
    """Per channel mean, std, min, max, first, last and least-squares slope
    over time; per series the number of observations, time span and mean gap."""
    rows = []
    for f in frames:
        t = f.index.to_numpy(dtype=float)
        v = f.to_numpy(dtype=float)  # (L, C)
        dt = t - t.mean()
        slope = (dt @ (v - v.mean(axis=0))) / max(float(dt @ dt), 1e-12)
        span = t[-1] - t[0]
        per_channel = [v.mean(0), v.std(0), v.min(0), v.max(0), v[0], v[-1], slope]
        rows.append(np.concatenate(per_channel + [[len(t), span, span / max(len(t) - 1, 1)]]))
    return np.asarray(rows)


def as_frames(frames, data: D.Dataset):
    return frames


def as_grid(frames, data: D.Dataset):
    return D.on_grid(frames, data.grid, data.grid_length)


def as_features(frames, data: D.Dataset):
    return summary_features(frames)


# --- methods ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Method:
    """`prepare` turns a list of frames into the estimator's X; `build`
    makes the unfitted estimator for a data set, the S5 overrides and a
    seed (its `random_state`). An `opt_in` method runs only when
    `--methods` names it."""

    name: str
    description: str
    prepare: Callable[[list, D.Dataset], Any]
    build: Callable[[D.Dataset, dict], Any]
    opt_in: bool = False


def _by_task(classifier: Callable[[int], Any], regressor: Callable[[int], Any]):
    """A `build` that picks the classifier or the regressor by the task."""
    return lambda data, s5_params, seed: classifier(seed) if data.task == "classification" else regressor(seed)


def _s5(time_handling: str):
    def build(data: D.Dataset, s5_params: dict, seed: int):
        cls = S5Classifier if data.task == "classification" else S5Regressor
        return cls(**{"random_state": seed, **s5_params, "time_handling": time_handling})

    return build


def _s5_grid(data: D.Dataset, s5_params: dict, seed: int):
    """S5 defaults on the interpolated grid the grid methods see, as an
    (n, channels, grid) array (`layout="ndl"`, steps 0, 1, ...): set beside
    `s5_gaps`, what the irregular sampling costs S5, and beside MiniRocket,
    what the model does on the same inputs."""
    return _s5("gaps")(data, {"layout": "ndl", **s5_params}, seed)


VOTE_MEMBERS = 3


def _s5_vote(data: D.Dataset, s5_params: dict, seed: int):
    """scikit-learn's soft vote over `VOTE_MEMBERS` default S5 estimators that
    differ only in `random_state` (seed·3, seed·3 + 1, ...): the mean of
    their probabilities, or of their predictions."""
    from sklearn.ensemble import VotingClassifier, VotingRegressor

    members = [
        (f"seed{k}", _s5("gaps")(data, s5_params, k))
        for k in range(VOTE_MEMBERS * seed, VOTE_MEMBERS * (seed + 1))
    ]
    if data.task == "classification":
        return VotingClassifier(members, voting="soft")
    return VotingRegressor(members)


def _tsf(data: D.Dataset, s5_params: dict, seed: int):
    from sktime.classification.interval_based import TimeSeriesForestClassifier
    from sktime.regression.interval_based import TimeSeriesForestRegressor
    from sktime.transformations.colconcat import ColumnConcatenator

    cls = TimeSeriesForestClassifier if data.task == "classification" else TimeSeriesForestRegressor
    forest = cls(random_state=seed)
    return ColumnConcatenator() * forest if data.n_channels > 1 else forest


def _minirocket(data: D.Dataset, s5_params: dict, seed: int):
    from sktime.classification.kernel_based import RocketClassifier
    from sktime.regression.kernel_based import RocketRegressor

    cls = RocketClassifier if data.task == "classification" else RocketRegressor
    return cls(rocket_transform="minirocket", random_state=seed)


def _summary(data: D.Dataset, s5_params: dict, seed: int):
    from sktime.classification.feature_based import SummaryClassifier
    from sktime.transformations.series.summarize import SummaryTransformer

    if data.task == "classification":
        return SummaryClassifier(random_state=seed)
    # SummaryClassifier's statistics and forest size, for regression
    features = SummaryTransformer(summary_function=("mean", "std", "min", "max"), quantiles=(0.25, 0.5, 0.75))
    return features * RandomForestRegressor(n_estimators=200, random_state=seed)


METHODS = {
    m.name: m
    for m in [
        Method("s5_gaps", "S5 defaults, time_handling='gaps' (irregular series)", as_frames, _s5("gaps")),
        Method("s5_drop", "S5 defaults, time_handling='drop' (order only)", as_frames, _s5("drop")),
        Method("s5_vote3", f"soft vote of {VOTE_MEMBERS} S5 defaults with other seeds (opt-in)", as_frames, _s5_vote,
               opt_in=True),
        Method("s5_grid", "S5 defaults on the interpolated grid (opt-in)", as_grid, _s5_grid, opt_in=True),
        Method("tsf", "sktime TimeSeriesForest (interpolated grid)", as_grid, _tsf),
        Method("minirocket", "sktime MiniRocket + ridge CV (interpolated grid)", as_grid, _minirocket),
        Method("summary", "sktime summary statistics + random forest (interpolated grid)", as_grid, _summary),
        Method(
            "hgb",
            "HistGradientBoosting on summary features of the irregular series",
            as_features,
            _by_task(
                lambda seed: HistGradientBoostingClassifier(random_state=seed),
                lambda seed: HistGradientBoostingRegressor(random_state=seed),
            ),
        ),
        Method(
            "dummy",
            "prior class / training mean (reference)",
            as_features,
            _by_task(lambda seed: DummyClassifier(strategy="prior"), lambda seed: DummyRegressor()),
        ),
    ]
}


#: What a run without `--methods` fits: every method but the opt-in ones.
DEFAULT_METHODS = [name for name, method in METHODS.items() if not method.opt_in]


# --- running ------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    """One method on one data set. `score`: accuracy or R²; `error`: why it
    failed (then the scores are None)."""

    dataset: str
    method: str
    task: str
    real: bool
    score: float | None = None
    mse: float | None = None
    mse_over_var: float | None = None
    fit_s: float | None = None
    predict_s: float | None = None
    error: str | None = None
    epochs: int | None = None  # S5 only: epochs run, and the best epoch kept
    best_epoch: int | None = None
    predicted_classes: int | None = None  # classification: distinct predicted labels
    seed_scores: list[float] | None = None  # with several seeds: the score of each; the fields above are means


def scores(data: D.Dataset, pred: np.ndarray) -> dict:
    if data.task == "classification":
        return {"score": float(accuracy_score(data.y_test, pred)), "predicted_classes": len(np.unique(pred))}
    mse = float(mean_squared_error(data.y_test, pred))
    return {"score": float(r2_score(data.y_test, pred)), "mse": mse, "mse_over_var": mse / float(np.var(data.y_test))}


def training_info(estimator) -> dict:
    history = getattr(estimator, "history_", None)
    if history is None:
        return {}
    best = getattr(estimator, "best_epoch_", None)
    return {"epochs": len(history), "best_epoch": None if best is None else int(best)}


def run_one(method: Method, data: D.Dataset, s5_params: dict, seed: int = SEED) -> Result:
    """Fit on the training split, predict the test split, time both."""
    result = Result(data.name, method.name, data.task, data.is_real)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            estimator = method.build(data, s5_params, seed)
            estimator.fit(method.prepare(data.X_train, data), data.y_train)
            fitted = time.perf_counter()
            pred = np.asarray(estimator.predict(method.prepare(data.X_test, data)))
            done = time.perf_counter()
        found = {**scores(data, pred), **training_info(estimator)}
    except Exception as error:  # a failure is a result, not the end of the run
        result.error = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return result
    return dataclasses.replace(result, fit_s=fitted - start, predict_s=done - fitted, **found)


def over_seeds(runs: list[Result]) -> Result:
    """One result from the same method and data set fitted with several
    seeds: the mean of each figure, the training facts of the first seed, and
    every seed's score; failed if any seed failed."""
    if len(runs) == 1:
        return runs[0]
    failed = [r.error for r in runs if r.error]
    if failed:
        return dataclasses.replace(
            runs[0], error=failed[0], score=None, mse=None, mse_over_var=None, fit_s=None, predict_s=None
        )

    def mean(field):
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else float(np.mean(values))

    averaged = {f: mean(f) for f in ("score", "mse", "mse_over_var", "fit_s", "predict_s")}
    return dataclasses.replace(runs[0], **averaged, seed_scores=[r.score for r in runs])


def run(datasets: list[D.Dataset], methods: list[Method], s5_params: dict, seeds: list[int] = (SEED,)) -> list[Result]:
    results = []
    for data in datasets:
        for method in methods:
            runs = []
            for seed in seeds:
                r = run_one(method, data, s5_params, seed)
                shown = f"failed: {r.error}" if r.error else f"{r.score:.3f} in {r.fit_s + r.predict_s:.1f} s"
                print(f"  {data.name:16s} {method.name:11s} {f'seed {seed} ' if len(seeds) > 1 else ''}{shown}",
                      flush=True)
                runs.append(r)
            results.append(over_seeds(runs))
    return results


# --- tables -------------------------------------------------------------------


def lookup(results: list[Result]) -> dict[tuple[str, str], Result]:
    return {(r.dataset, r.method): r for r in results}


def ranks_of(results: list[Result], dataset: str, methods: list[str]) -> dict[str, float]:
    """Rank 1 = best score on `dataset`; failures share the last ranks."""
    found = lookup(results)
    values = [found[dataset, m].score for m in methods]
    values = [-np.inf if v is None else v for v in values]
    return dict(zip(methods, rankdata([-v for v in values], method="average")))


def score_rows(results, datasets, methods, value: Callable[[Result], float | None], digits=3, best=max):
    """One row per data set: `value` of each method, the best in bold."""
    found = lookup(results)
    rows = []
    for d in datasets:
        cells = [value(found[d.name, m]) if (d.name, m) in found else None for m in methods]
        known = [c for c in cells if c is not None]
        top = best(known) if known else None
        shown = ["fail" if c is None else (f"**{c:.{digits}f}**" if c == top else f"{c:.{digits}f}") for c in cells]
        rows.append([d.name, "acc" if d.task == "classification" else "R²"] + shown)
    return rows


def points_below_best(results, datasets, methods) -> list[list[str]]:
    found = lookup(results)
    rows = []
    for d in datasets:
        values = [found[d.name, m].score for m in methods]
        top = max((v for v in values if v is not None), default=None)
        cells = ["fail" if v is None or top is None else f"{100 * (top - v):.1f}" for v in values]
        rows.append([d.name] + cells)
    return rows


def mean_ranks(results, datasets, methods) -> list[str]:
    per_set = [ranks_of(results, d.name, methods) for d in datasets]
    return [f"{np.mean([r[m] for r in per_set]):.2f}" if per_set else "-" for m in methods]


def observations(results: list[Result]) -> list[str]:
    """Facts worth a line: single-class predictions, short S5 trainings, failures."""
    notes = []
    for r in results:
        if r.error:
            notes.append(f"`{r.method}` failed on {r.dataset}: {r.error}")
        elif r.predicted_classes == 1 and r.method != "dummy":
            notes.append(f"`{r.method}` predicted a single class on {r.dataset} (accuracy {r.score:.3f})")
        if r.epochs is not None and r.best_epoch is not None and r.best_epoch < 10:
            notes.append(
                f"`{r.method}` on {r.dataset}: best validation score at epoch {r.best_epoch} "
                f"(of {r.epochs} run)"
            )
    return notes


def report(results, datasets, methods, context: dict) -> str:
    """The whole Markdown report (also what is printed)."""
    names = [m.name for m in methods]
    real = [d for d in datasets if d.is_real]
    synthetic = [d for d in datasets if not d.is_real]
    regression = [d for d in datasets if d.task == "regression"]
    found = lookup(results)
    s5_rows = [
        [d.name] + [f"{found[d.name, m].epochs} / {found[d.name, m].best_epoch}" if found[d.name, m].epochs else "-"
                    for m in names if m.startswith("s5")]
        for d in datasets
    ]
    parts = [
        "# Accuracy on irregular time series: s5ts defaults and the alternatives",
        "",
        "Generated by `benchmarks/accuracy_real.py` (its docstring says how to run it);"
        " do not edit by hand, rerun the script.",
        "",
        f"- command: `{context['command']}`",
        f"- date: {context['date']}; machine: {context['machine']}",
        f"- versions: {context['versions']}",
        f"- S5 overrides of the defaults: `{json.dumps(context['s5_params'])}`"
        + (" (none: the defaults)" if not context["s5_params"] else ""),
        f"- seeds: {', '.join(map(str, context['seeds']))}"
        + (" (every method's `random_state`; scores and seconds are means over the seeds,"
           " the S5 training table is the first seed's)" if len(context["seeds"]) > 1 else ""),
        f"- total time: {context['total_s'] / 60:.1f} min",
        "",
        "## Setup",
        "",
        "Real data sets ship with sktime (loaded offline; aeon, which ships a few more, needs numba < 0.64 and"
        " so numpy < 2.4, and was not installed) and keep their own train / test split. Every series"
        f" keeps a seeded random {D.THIN_FRACTION:.0%} of its time points (at least 2) at their original positions"
        f" 0..L-1, so it becomes irregular. Splits larger than {context['max_series']} series are subsampled"
        " (seeded; stratified by class for classification). Synthetic sets are irregular already and are not thinned:"
        f" {D.N_TRAIN} training and {D.N_TEST} test series each, observed in a {D.WINDOW_HOURS:g} h window.",
        "S5 and `hgb` see the irregular series; `tsf`, `minirocket` and `summary` see each series linearly"
        " interpolated onto a regular grid (the original 0..L-1 positions, or, for sets of unequal lengths,"
        " each series' observed span resampled to the median original length; synthetic sets: 101 points"
        " over the window).",
        "",
        table(
            ["data set", "task", "train", "test", "channels", "median points kept", "grid", "notes"],
            [
                [d.name, d.task, str(len(d.X_train)), str(len(d.X_test)), str(d.n_channels),
                 f"{np.median([len(f) for f in d.X_train]):.0f}", str(d.grid_length), d.notes or "-"]
                for d in datasets
            ],
        ),
        "",
        table(["method", "what"], [[m.name, m.description] for m in methods]),
        "",
        "## Scores",
        "",
        "Accuracy (classification) or R² (regression) on the test split; the best per data set in bold.",
        "",
        table(["data set", "metric"] + names, score_rows(results, datasets, names, lambda r: r.score)),
        "",
        f"Mean rank over the {len(real)} real data sets (1 = best; failures rank last):",
        "",
        table(["", *names], [["mean rank (real)", *mean_ranks(results, real, names)]]
              + ([["mean rank (synthetic)", *mean_ranks(results, synthetic, names)]] if synthetic else [])),
        "",
        "Points below the best method per data set (100 × (best − score), accuracy or R²):",
        "",
        table(["data set"] + names, points_below_best(results, datasets, names)),
    ]
    if regression:
        parts += [
            "",
            "Regression: MSE / variance of the test targets (= 1 − R²; lower is better; 1 = no better than"
            " the mean of the test targets):",
            "",
            table(["data set", "metric"] + names,
                  [[row[0], "MSE/var", *row[2:]] for row in
                   score_rows(results, regression, names, lambda r: r.mse_over_var, best=min)]),
            "",
            "Regression: MSE (in the targets' units squared):",
            "",
            table(["data set", "metric"] + names,
                  [[row[0], "MSE", *row[2:]] for row in
                   score_rows(results, regression, names, lambda r: r.mse, digits=4, best=min)]),
        ]
    parts += [
        "",
        "## Time",
        "",
        "Seconds of fit + predict on one core. They include compilation: JAX's for S5 (`s5_drop` runs after"
        " `s5_gaps` on the same shapes and mostly reuses its compiled functions) and numba's for MiniRocket"
        " (paid again for each new input shape).",
        "",
        table(["data set"] + names, [
            [d.name] + [f"{r.fit_s + r.predict_s:.1f}" if r.fit_s is not None else "fail"
                        for r in (found[d.name, m] for m in names)]
            for d in datasets
        ]),
    ]
    s5_names = [m for m in names if m.startswith("s5")]
    if s5_names:
        parts += [
            "",
            "## S5 training",
            "",
            "Epochs run / epoch of the kept parameters (the lowest validation figure, or training loss without a"
            " validation split), counted from 0. The defaults hold out nothing (`validation_fraction=0.0`): early"
            " stopping watches the training loss (`n_iter_no_change=20`).",
            "",
            table(["data set"] + s5_names, s5_rows),
        ]
    if len(context["seeds"]) > 1:
        parts += [
            "",
            "## Spread over seeds",
            "",
            "Lowest – highest score (accuracy or R²) over the seeds "
            f"{', '.join(map(str, context['seeds']))}; the tables above show the means.",
            "",
            table(["data set"] + names, [
                [d.name] + [f"{min(r.seed_scores):.3f} – {max(r.seed_scores):.3f}" if r.seed_scores else "fail"
                            for r in (found[d.name, m] for m in names)]
                for d in datasets
            ]),
        ]
    notes = observations(results)
    parts += ["", "## Notes", ""] + ([f"- {n}" for n in notes] if notes else ["- none"])
    return "\n".join(parts) + "\n"


# --- output -------------------------------------------------------------------


def seed_list(text: str) -> list[int]:
    """`--seeds`: one or more distinct comma-separated integers."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"one or more distinct integers, got {text!r}")
    return seeds


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help=f"{', '.join(QUICK_DATASETS)}, at most {QUICK_MAX_SERIES} series per split, "
                        f"S5 with {QUICK_S5_PARAMS}; implies --no-docs")
    p.add_argument("--datasets", help=f"comma-separated, from: {', '.join(D.ALL)}")
    p.add_argument("--methods", help=f"comma-separated, from: {', '.join(METHODS)}")
    p.add_argument("--s5-params", default="{}", help="JSON of S5 parameters overriding the defaults")
    p.add_argument("--max-series", type=int, help=f"subsample splits to this size (default {DEFAULT_MAX_SERIES})")
    p.add_argument("--out", type=Path, default=Path("results/accuracy"), help="folder of the raw CSV / JSON")
    p.add_argument("--no-docs", action="store_true", help="do not overwrite docs/accuracy.md")
    p.add_argument("--seeds", type=seed_list, default=[SEED],
                   help=f"comma-separated distinct integers; each method is fitted once per seed (default {SEED})")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    s5_params = json.loads(args.s5_params)
    seeds = args.seeds
    if args.quick:
        s5_params = {**QUICK_S5_PARAMS, **s5_params}
    max_series = args.max_series or (QUICK_MAX_SERIES if args.quick else DEFAULT_MAX_SERIES)
    dataset_names = choose(args.datasets, D.ALL, QUICK_DATASETS if args.quick else D.ALL, "data sets")
    methods = [METHODS[n] for n in choose(args.methods, list(METHODS), DEFAULT_METHODS, "methods")]

    start = time.perf_counter()
    datasets = [D.load(name, max_series, SEED) for name in dataset_names]
    print(f"{len(datasets)} data sets x {len(methods)} methods; S5 overrides {s5_params or 'none'}", flush=True)
    results = run(datasets, methods, s5_params, seeds)
    context = run_context(VERSIONS, start, s5_params=s5_params, max_series=max_series, seeds=seeds)
    text = report(results, datasets, methods, context)
    print("\n" + text)
    write_raw(results, context, args.out)
    if not (args.no_docs or args.quick):
        DOCS.write_text(text)
        print(f"wrote {DOCS.relative_to(_ROOT)}")
    print(f"raw results in {args.out}/")


if __name__ == "__main__":
    main()
