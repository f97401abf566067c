"""How the forecaster's per-series choice (`s5ts.forecasting._fallback`)
would score under other rules, on the forecasting benchmark's tasks.

Each task is fitted once per seed (`S5Forecaster` defaults, as
`forecast_real.py` does); then every candidate the fit tried is forced on
every series in turn and its forecasts at the task's held-out points are
kept, with the fit's held-out table (`fallback_`). A rule (which candidates,
how much a series' own held-out end counts against the panel's) is then
scored offline from those: the task's MASE with each series forecast by the
candidate the rule picks, the coverage of its intervals and its CRPS. The
rules are chosen on the development half only (docs/forecasting.md,
"Falling back", and its lab note in docs/results/).

    python3 benchmarks/forecast_fallback.py --seeds 0,1,2 --out /tmp/fallback.pkl
    python3 benchmarks/forecast_fallback.py --score /tmp/fallback.pkl
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _forecast_data as D  # noqa: E402
import _forecast_metrics as M  # noqa: E402


def fitted(task: D.Task, seed: int) -> dict:
    """One fit of a task: per candidate, the forecasts' absolute errors and
    interval hits at the task's held-out points; the held-out table."""
    from sktime.forecasting.base import ForecastingHorizon

    from s5ts.sktime import S5Forecaster

    times = pd.DatetimeIndex(task.test.index.get_level_values(-1).unique()).sort_values()
    fh = ForecastingHorizon(times, is_relative=False)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adapter = S5Forecaster(random_state=seed).fit(task.train, fh=fh)
    seconds = time.perf_counter() - start
    model = adapter.forecaster_
    chosen = model._fallback
    table = model.fallback_
    y = task.test["y"].to_numpy(dtype=float)
    subjects = task.test.index.get_level_values(0) if task.spec.panel else np.full(len(y), None)
    out = {}
    for name in table.columns[2:]:
        model._fallback = dataclasses.replace(chosen, methods={sid: name for sid in model.series_})
        mean = adapter.predict(fh)["y"].reindex(task.test.index).to_numpy()
        sd = np.sqrt(adapter.predict_var(fh)["y"].reindex(task.test.index).to_numpy())
        out[name] = {"mean": mean, "sd": sd}
    model._fallback = chosen
    return {"task": task.name, "seed": seed, "subjects": np.asarray(subjects, dtype=object), "table": table,
            "candidates": out, "scale": M.naive_scale(task.train), "seconds": seconds, "y": y,
            "nonnegative": bool(model.nonnegative_.iloc[0])}


def hits(run: dict, mean, sd, coverage: float) -> np.ndarray:
    """Whether each held-out point is inside the central Gaussian interval (its bounds at or above zero for a
    never-negative quantity, as the forecaster gives them)."""
    half = norm.ppf(0.5 + coverage / 2) * sd
    lower, upper = mean - half, mean + half
    if run["nonnegative"]:
        lower, upper = np.maximum(lower, 0.0), np.maximum(upper, 0.0)
    return (run["y"] >= lower) & (run["y"] <= upper)


def pick(table: pd.DataFrame, names: list[str], shrinkage: float) -> dict:
    """Per series, the rule's candidate among `names` (S5 first: it wins ties)."""
    scores = table[names].to_numpy(dtype=float)
    counts = table["held_out"].to_numpy(dtype=float)
    tried = counts > 0
    if not tried.any():
        return {sid: "s5" for sid in table.index}
    pooled = (scores[tried] * counts[tried, None]).sum(axis=0) / counts[tried].sum()
    out = {}
    for sid, row, n in zip(table.index, scores, counts):
        if n == 0:
            out[sid] = "s5"
            continue
        shrunk = pooled if np.isinf(shrinkage) else (row * n + shrinkage * pooled) / (n + shrinkage)
        out[sid] = names[int(np.argmin(shrunk))]
    return out


def scored(run: dict, names: list[str], shrinkage: float) -> dict:
    """A rule's scores on one run: each series forecast by the candidate the rule picks."""
    chosen = pick(run["table"], names, shrinkage)
    subjects = run["subjects"]
    per_point = np.array([chosen.get(s if s is not None else None, "s5") for s in subjects], dtype=object)
    mean, sd = np.empty(len(subjects)), np.empty(len(subjects))
    for name in set(per_point):
        rows = per_point == name
        mean[rows], sd[rows] = run["candidates"][name]["mean"][rows], run["candidates"][name]["sd"][rows]
    error = np.abs(run["y"] - mean)
    share = np.mean([v != "s5" for v in chosen.values()])
    crps = M.gaussian_crps(run["y"], mean, sd).mean() / run["scale"]
    return {"mase": error.mean() / run["scale"], "cover_80": hits(run, mean, sd, 0.8).mean(),
            "cover_95": hits(run, mean, sd, 0.95).mean(), "crps": crps, "moved": share}


RULES = {"s5 alone": ["s5"], **{f"averages, n0={n0:g}": n0 for n0 in (0.0, 5.0, 20.0, 100.0, np.inf)}}


def report(runs: list[dict]) -> pd.DataFrame:
    rows = []
    for label, rule in RULES.items():
        by_task = {}
        for run in runs:
            names, n0 = (rule, 0.0) if isinstance(rule, list) else (list(run["table"].columns[2:]), rule)
            s = scored(run, names, n0)
            by_task.setdefault(run["task"], []).append(s)
        mase = {t: np.mean([s["mase"] for s in v]) for t, v in by_task.items()}
        last = {t: np.mean([scored(r, ["last_value"], 0.0)["mase"] for r in runs if r["task"] == t]) for t in by_task}
        ratio = np.array([mase[t] / last[t] for t in by_task])
        rows.append({
            "rule": label, "geo-mean MASE": M.geometric_mean(list(mase.values())),
            "better than last value": f"{int((ratio < 1).sum())} / {len(ratio)}", "worst / last value": ratio.max(),
            "cover 80": np.mean([s["cover_80"] for v in by_task.values() for s in v]),
            "cover 95": np.mean([s["cover_95"] for v in by_task.values() for s in v]),
            "lowest 95": min(np.mean([s["cover_95"] for s in v]) for v in by_task.values()),
            "crps": M.geometric_mean([np.mean([s["crps"] for s in v]) for v in by_task.values()]),
            "series moved": np.mean([s["moved"] for v in by_task.values() for s in v]),
        })
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--half", choices=[D.DEVELOPMENT, D.CONFIRMATION], default=D.DEVELOPMENT)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--tasks", help="comma-separated (default: the half's)")
    p.add_argument("--out", type=Path, default=Path("/tmp/fallback.pkl"))
    p.add_argument("--score", type=Path, help="score the runs saved in this file and exit")
    args = p.parse_args(argv)
    if args.score:
        with open(args.score, "rb") as f:
            runs = pickle.load(f)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(report(runs).round(3).to_string(index=False))
        return
    names = args.tasks.split(",") if args.tasks else [n for n in D.ALL if D.HALF[n] == args.half]
    runs = []
    for name in names:
        task = D.load(name)
        for seed in map(int, args.seeds.split(",")):
            run = fitted(task, seed)
            runs.append(run)
            print(f"{name:20s} seed {seed}: chosen {run['table']['method'].value_counts().to_dict()}, "
                  f"{run['seconds']:.1f} s", flush=True)
            with open(args.out, "wb") as f:
                pickle.dump(runs, f)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(report(runs).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
