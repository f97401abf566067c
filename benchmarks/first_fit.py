"""Time to a first result: the README's example in fresh processes.

Runs the first Python block of README.md, as written, in new processes and
times it twice in each (the first run compiles, or reads the persistent
compilation cache; the second is the same fit's compute alone):

- `current, cold`: this checkout with an empty compilation cache;
- `current, warm`: this checkout again, with the cache the cold run left
  (what a user's second script or notebook kernel sees);
- `baseline, cold`: the same example on another revision (default: the
  commit before the training layer, with no persistent cache), checked out
  into a temporary git worktree that is removed afterwards.

The three run in turn, `--rounds` times, so machine load hits all alike;
medians are printed with two ratios: warm first run / compute-only (goal
≤ 3x) and current / baseline cold compile time (goal ≤ 0.5x). Compile time
is what JAX itself reports: the wall seconds of the first run spent inside
its tracing, lowering and XLA-compile events (nested spans counted once;
the same events in every revision). The first run minus the compute-only
run is printed too, but it also holds whatever else a first run does more
(the first steps' host work), which grew when the defaults began to train
for thousands of steps.

    python3 benchmarks/first_fit.py [--baseline REV] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "2b75c04"  # main before s5ts/training (2026-12-01)

_CHILD = r"""
import json, sys, time
started = time.perf_counter()
import jax, numpy, pandas, s5ts  # noqa: F401
imported = time.perf_counter()
where = s5ts.__file__
spans = []
jax.monitoring.register_event_time_span_listener(
    lambda event, start, end, **_: spans.append((event, start, end)) if event in EVENTS else None)


def seconds(spans):
    # Wall seconds inside any of the events: nested tracing counts once.
    total, reached = 0.0, float("-inf")
    for _, start, end in sorted(spans, key=lambda span: span[1]):
        total += max(0.0, end - max(start, reached))
        reached = max(reached, end)
    return total


code = sys.stdin.read()
runs, compiling = [], []
for _ in range(2):
    t0 = time.perf_counter()
    spans.clear()
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    runs.append(time.perf_counter() - t0)
    compiling.append({"all": seconds(spans), **{e: seconds([s for s in spans if s[0] == e]) for e in EVENTS}})
print(json.dumps({"import": imported - started, "first": runs[0], "compute": runs[1],
                  "compiling": compiling[0], "compiling_again": compiling[1]["all"], "s5ts": where}))
"""

#: JAX's own events around tracing, lowering and XLA compilation (the last
#: includes reading the persistent cache): the same in every revision of
#: s5ts, so the baseline is measured as the current code is.
EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```python\n(.*?)```", text, flags=re.S)
    if match is None:
        raise SystemExit("README.md has no ```python block")
    return match.group(1)


def run(source_root: Path, env_extra: dict, code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S5TS_")}
    env.update(env_extra, PYTHONPATH=str(source_root))
    # `python -c` puts the working directory first on sys.path: run in the
    # source root, or a checkout there would shadow the baseline.
    out = subprocess.run(
        [sys.executable, "-c", f"EVENTS = {EVENTS!r}\n" + _CHILD], input=code, env=env, cwd=source_root,
        capture_output=True, text=True, check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    imported = Path(result["s5ts"]).resolve()
    if not imported.is_relative_to(source_root.resolve()):
        raise RuntimeError(f"the child imported s5ts from {imported}, not from {source_root}")
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    code = readme_example()
    results: dict[str, list[dict]] = {"current, cold": [], "current, warm": [], "baseline, cold": []}
    with tempfile.TemporaryDirectory() as scratch:
        baseline = Path(scratch) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(baseline), args.baseline],
                       check=True, capture_output=True)
        try:
            for round_ in range(args.rounds):
                cache = Path(scratch) / f"cache{round_}"
                results["baseline, cold"].append(run(baseline, {"S5TS_COMPILATION_CACHE": "0"}, code))
                results["current, cold"].append(run(ROOT, {"S5TS_COMPILATION_CACHE": str(cache)}, code))
                results["current, warm"].append(run(ROOT, {"S5TS_COMPILATION_CACHE": str(cache)}, code))
                print(f"round {round_ + 1}/{args.rounds}: " + ", ".join(
                    f"{name} {r[-1]['first']:.1f} s" for name, r in results.items()), flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)

    def median(name, key, part=None):
        return statistics.median(r[key] if part is None else r[key][part] for r in results[name])

    print(f"\nREADME example, {args.rounds} rounds (medians; {os.cpu_count()} cores; load1 {os.getloadavg()[0]:.1f})")
    print("compiling s: wall seconds of the first run inside JAX's tracing, lowering or XLA compile events")
    print("(XLA's includes reading the persistent cache); again s: the same in the second run")
    header = ("run", "import s", "first run s", "compute-only s", "first-compute s", "compiling s",
              "trace", "lower", "XLA", "again s")
    print(f"{header[0]:<16}" + "".join(f"{h:>{max(len(h) + 2, 8)}}" for h in header[1:]))
    for name in results:
        first, compute = median(name, "first"), median(name, "compute")
        row = [median(name, "import"), first, compute, first - compute, median(name, "compiling", "all"),
               *(median(name, "compiling", event) for event in EVENTS), median(name, "compiling_again")]
        print(f"{name:<16}" + "".join(f"{v:>{max(len(h) + 2, 8)}.2f}" for h, v in zip(header[1:], row)))
    warm = median("current, warm", "first") / median("current, warm", "compute")
    print(f"\nwarm first run / compute-only: {warm:.2f}x (goal <= 3x)")
    cold = median("current, cold", "compiling", "all") / median("baseline, cold", "compiling", "all")
    print(f"cold compiling, current / baseline {args.baseline}: {cold:.2f}x (goal <= 0.5x)")
    cold = (median("current, cold", "first") - median("current, cold", "compute")) / (
        median("baseline, cold", "first") - median("baseline, cold", "compute"))
    print(f"cold first run - compute-only, current / baseline: {cold:.2f}x "
          "(includes whatever else the first run does more than the second)")


if __name__ == "__main__":
    main()
