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
≤ 3x) and current / baseline cold compile time (first run − compute-only;
goal ≤ 0.5x).

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
import numpy, pandas, s5ts  # noqa: F401
imported = time.perf_counter()
where = s5ts.__file__
code = sys.stdin.read()
runs = []
for _ in range(2):
    t0 = time.perf_counter()
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    runs.append(time.perf_counter() - t0)
print(json.dumps({"import": imported - started, "first": runs[0], "compute": runs[1], "s5ts": where}))
"""


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
        [sys.executable, "-c", _CHILD], input=code, env=env, cwd=source_root,
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

    def median(name, key):
        return statistics.median(r[key] for r in results[name])

    print(f"\nREADME example, {args.rounds} rounds (medians; {os.cpu_count()} cores; load1 {os.getloadavg()[0]:.1f})")
    print(f"{'run':<16} {'import s':>9} {'first run s':>12} {'compute-only s':>15} {'compile s':>10}")
    for name in results:
        first, compute = median(name, "first"), median(name, "compute")
        print(f"{name:<16} {median(name, 'import'):>9.2f} {first:>12.2f} {compute:>15.2f} {first - compute:>10.2f}")
    warm = median("current, warm", "first") / median("current, warm", "compute")
    cold = [c["first"] - c["compute"] for c in results["current, cold"]]
    base = [b["first"] - b["compute"] for b in results["baseline, cold"]]
    print(f"\nwarm first run / compute-only: {warm:.2f}x (goal <= 3x)")
    print(f"cold compile, current / baseline {args.baseline}: {statistics.median(cold) / statistics.median(base):.2f}x "
          "(goal <= 0.5x)")


if __name__ == "__main__":
    main()
