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

The per-series interval scales (`interval_scales`) are scored the same
way: the forced candidates' intervals are read with every scale 1, and
each series' scale under another shrinkage is worked out offline from its
held-out standardised error; `--intervals` prints those rules, with how
far each panel subject's coverage is from the nominal one. Coverage here
is the Gaussian's (`predict_var`), the forecaster's 95 % intervals; its
80 % intervals are calibrated on their own held-out quantile and are
narrower where the errors have heavy tails (`Forecaster.predict_interval`),
so this tool overstates their coverage.

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
    for name in candidates(table):
        model._fallback = dataclasses.replace(chosen, methods={sid: name for sid in model.series_}, scales={})
        mean = adapter.predict(fh)["y"].reindex(task.test.index).to_numpy()
        sd = np.sqrt(adapter.predict_var(fh)["y"].reindex(task.test.index).to_numpy())
        out[name] = {"mean": mean, "sd": sd}
    model._fallback = chosen
    if task.spec.panel:
        last = task.train["y"].groupby(level=0, sort=False).last().reindex(subjects).to_numpy(dtype=float)
    else:
        last = np.full(len(y), float(task.train["y"].iloc[-1]))
    return {"task": task.name, "seed": seed, "subjects": np.asarray(subjects, dtype=object), "table": table,
            "last_value": last,
            "candidates": out, "scale": M.naive_scale(task.train), "seconds": seconds, "y": y,
            "panel": task.spec.panel,
            "nonnegative": bool(model.nonnegative_.iloc[0])}


def candidates(table: pd.DataFrame) -> list[str]:
    """The candidates' columns of a `fallback_` table."""
    return [c for c in table.columns if c not in ("method", "held_out", "interval_scale")]


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
    scores = table[names].to_numpy(dtype=float)  # NaN: a candidate not offered to the series (`fallback_`)
    counts = table["held_out"].to_numpy(dtype=float)
    tried = counts > 0
    if not tried.any():
        return {sid: "s5" for sid in table.index}
    offered = np.isfinite(scores[tried])
    weights = counts[tried, None] * offered
    with np.errstate(invalid="ignore"):
        pooled = (np.where(offered, scores[tried], 0.0) * counts[tried, None]).sum(axis=0) / weights.sum(axis=0)
    out = {}
    for sid, row, n in zip(table.index, scores, counts):
        if n == 0:
            out[sid] = "s5"
            continue
        shrunk = pooled if np.isinf(shrinkage) else (row * n + shrinkage * pooled) / (n + shrinkage)
        out[sid] = names[int(np.argmin(np.where(np.isfinite(row), shrunk, np.inf)))]
    return out


def scored(run: dict, names: list[str], shrinkage: float, interval_shrinkage: float = np.inf) -> dict:
    """A rule's scores on one run: each series forecast by the candidate the rule picks, its intervals scaled
    by `interval_scales` with `interval_shrinkage` (inf: every scale 1)."""
    chosen = pick(run["table"], names, shrinkage)
    subjects = run["subjects"]
    mean, sd = chosen_forecasts(run, chosen)
    sd = sd * per_series_scales(run, interval_shrinkage).reindex(subjects).fillna(1.0).to_numpy()
    error = np.abs(run["y"] - mean)
    share = np.mean([v != "s5" for v in chosen.values()])
    crps = M.gaussian_crps(run["y"], mean, sd).mean() / run["scale"]
    out = {"mase": error.mean() / run["scale"], "cover_80": hits(run, mean, sd, 0.8).mean(),
           "cover_95": hits(run, mean, sd, 0.95).mean(), "crps": crps, "moved": share}
    if run.get("panel"):  # each subject's coverage, to be pooled over seeds
        out["subject_hits"] = {c: pd.Series(hits(run, mean, sd, c)).groupby(np.asarray(subjects, str)).agg(["sum", "count"])
                               for c in (0.8, 0.95)}
    return out


def chosen_forecasts(run: dict, chosen: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each held-out point's mean and sd (every interval factor 1) from the candidate `chosen` for its series."""
    per_point = np.array([chosen.get(s, "s5") for s in run["subjects"]], dtype=object)
    mean, sd = np.empty(len(per_point)), np.empty(len(per_point))
    for name in set(per_point):
        rows = per_point == name
        mean[rows], sd[rows] = run["candidates"][name]["mean"][rows], run["candidates"][name]["sd"][rows]
    return mean, sd


def held_out_ratio(table: pd.DataFrame) -> pd.Series:
    """Each series' mean absolute standardised held-out error over its panel's, read back from the fit's
    `interval_scale` (shrinkage `INTERVAL_SHRINKAGE`); NaN without held-out values."""
    from s5ts.forecasting._fallback import INTERVAL_SHRINKAGE as n0

    n = table["held_out"].astype(float)
    return ((table["interval_scale"] * (n + n0) - n0) / n).where(n > 0)


def per_series_scales(run: dict, shrinkage: float) -> pd.Series:
    """Each series' interval scale under `shrinkage`, from the fit's held-out standardised errors (the chosen
    candidates' with the production rule; they are the rules' own up to that choice)."""
    from s5ts.forecasting._fallback import interval_scales

    table = run["table"]
    counts = table["held_out"].to_numpy(dtype=float)
    sums = held_out_ratio(table).fillna(0.0).to_numpy() * counts
    return pd.Series(interval_scales(sums, counts, shrinkage), index=table.index)


RULES = {"s5 alone": ["s5"], **{f"averages, n0={n0:g}": n0 for n0 in (0.0, 5.0, 20.0, 100.0, np.inf)}}


def report(runs: list[dict]) -> pd.DataFrame:
    rows = []
    for label, rule in RULES.items():
        by_task = {}
        for run in runs:
            names, n0 = (rule, 0.0) if isinstance(rule, list) else (candidates(run["table"]), rule)
            s = scored(run, names, n0)
            by_task.setdefault(run["task"], []).append(s)
        mase = {t: np.mean([s["mase"] for s in v]) for t, v in by_task.items()}
        last = {t: np.mean([np.abs(r["y"] - r["last_value"]).mean() / r["scale"] for r in runs if r["task"] == t])
                for t in by_task}
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


INTERVAL_RULES = {f"interval n0={n0:g}" if np.isfinite(n0) else "pooled (every scale 1)": n0
                  for n0 in (np.inf, 100.0, 20.0, 5.0, 0.0)}


def interval_report(runs: list[dict]) -> pd.DataFrame:
    """The interval rules with the production choice of candidates: pooled coverage per task, CRPS, and for
    panels the mean distance of each subject's coverage (at least 3 points, pooled over seeds) from nominal."""
    from s5ts.forecasting._fallback import SHRINKAGE

    rows = []
    for label, n0 in INTERVAL_RULES.items():
        by_task, subjects = {}, {0.8: [], 0.95: []}
        for run in runs:
            by_task.setdefault(run["task"], []).append(scored(run, candidates(run["table"]), SHRINKAGE, n0))
        for task, found in by_task.items():
            for c in subjects:
                parts = [s["subject_hits"][c] for s in found if "subject_hits" in s]
                if parts:
                    pooled = sum(parts)
                    pooled = pooled[pooled["count"] >= 3]
                    subjects[c].append(np.abs(pooled["sum"] / pooled["count"] - c))
        gap = {c: 100 * np.concatenate(v).mean() if v else np.nan for c, v in subjects.items()}
        rows.append({
            "rule": label,
            "cover 80": np.mean([s["cover_80"] for v in by_task.values() for s in v]),
            "cover 95": np.mean([s["cover_95"] for v in by_task.values() for s in v]),
            "lowest 95": min(np.mean([s["cover_95"] for s in v]) for v in by_task.values()),
            "crps": M.geometric_mean([np.mean([s["crps"] for s in v]) for v in by_task.values()]),
            "subject |cov80 - 80|": gap[0.8], "subject |cov95 - 95|": gap[0.95],
        })
    return pd.DataFrame(rows)


def panel_report(runs: list[dict]) -> pd.DataFrame:
    """Per panel task, with the production rule and every interval factor 1: what a per-series factor could read
    (held-out values per subject) and what decides a subject's coverage (the mean over subjects of the absolute
    mean standardised test error, and across subjects the correlation of the mean absolute standardised test
    error with the held-out one), over the seeds."""
    from s5ts.forecasting._fallback import SHRINKAGE

    rows = []
    for task in dict.fromkeys(r["task"] for r in runs if r.get("panel")):
        parts = []
        for run in (r for r in runs if r["task"] == task):
            subjects = run["subjects"]
            mean, sd = chosen_forecasts(run, pick(run["table"], candidates(run["table"]), SHRINKAGE))
            parts.append(pd.DataFrame({
                "subject": np.asarray(subjects, str), "z": (run["y"] - mean) / sd,
                "held_out": run["table"]["held_out"].reindex(subjects).to_numpy(dtype=float),
                "held_z": held_out_ratio(run["table"]).reindex(subjects).to_numpy(dtype=float),
            }))
        points = pd.concat(parts)
        points["abs_z"], points["in_80"] = points["z"].abs(), points["z"].abs() < norm.ppf(0.9)
        by = points.groupby("subject").agg(bias=("z", "mean"), abs_z=("abs_z", "mean"), held_out=("held_out", "mean"),
                                           held_z=("held_z", "mean"), points=("z", "size"))
        known = by["held_z"].notna()
        rows.append({
            "task": task, "subjects": len(by), "test points each": by["points"].mean() / len(parts),
            "held-out values each": by["held_out"].mean(), "mean |bias|": by["bias"].abs().mean(),
            "corr(test, held-out)": np.corrcoef(by.loc[known, "abs_z"], by.loc[known, "held_z"])[0, 1]
            if known.sum() > 2 else np.nan,
            "cover 80": points["in_80"].mean(),
        })
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--half", choices=[D.DEVELOPMENT, D.CONFIRMATION], default=D.DEVELOPMENT)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--tasks", help="comma-separated (default: the half's)")
    p.add_argument("--out", type=Path, default=Path("/tmp/fallback.pkl"))
    p.add_argument("--score", type=Path, help="score the runs saved in this file and exit")
    p.add_argument("--intervals", action="store_true", help="print the per-series interval rules as well")
    args = p.parse_args(argv)
    if args.score:
        with open(args.score, "rb") as f:
            runs = pickle.load(f)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(report(runs).round(3).to_string(index=False))
            if args.intervals:
                print(interval_report(runs).round(3).to_string(index=False))
                print(panel_report(runs).round(2).to_string(index=False))
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
        if args.intervals:
            print(interval_report(runs).round(3).to_string(index=False))
            print(panel_report(runs).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
