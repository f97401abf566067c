"""Shared helpers of the accuracy-style benchmarks (`accuracy_real.py`,
`forecast_real.py`): what ran where (command, machine, versions), Markdown
tables, name lists from the command line, and generated sections of a docs
page between markers."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pandas as pd
from _timing import cpu_model

ROOT = Path(__file__).resolve().parents[1]


def versions(names: list[str]) -> str:
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found + [f"Python {platform.python_version()}"])


def machine() -> str:
    return f"{cpu_model()}, nproc {os.cpu_count()}, run on {len(os.sched_getaffinity(0))} core(s)"


#: Environment variables that change a run's scores (JAX's CPU devices and XLA's flags round differently)
#: or its seconds (the compilation cache): a command that set them is written with them.
SETTINGS = ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "S5TS_COMPILATION_CACHE")


def command_line() -> str:
    """This run's command, with the `taskset` that pinned it (if any) and
    the `SETTINGS` it ran under."""
    args = [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]
    cores = sorted(os.sched_getaffinity(0))
    pin = f"taskset -c {','.join(map(str, cores))} " if len(cores) < (os.cpu_count() or 0) else ""
    settings = "".join(f"{name}={shlex.quote(os.environ[name])} " for name in SETTINGS if name in os.environ)
    return settings + pin + "python3 " + " ".join(shlex.quote(a) for a in args)


def now() -> str:
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def revision() -> str:
    """HEAD, and the last commit that changed s5ts/ (what the numbers
    measure), with a note when s5ts/ has uncommitted changes."""

    def git(*args) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"

    dirty = " (s5ts/ has uncommitted changes)" if git("status", "--porcelain", "--", "s5ts") else ""
    head, changed = git("rev-parse", "--short", "HEAD"), git("log", "-1", "--format=%h", "--", "s5ts")
    return f"HEAD {head}, s5ts/ last changed in {changed}{dirty}"


def run_context(packages: list[str], start: float, **extra) -> dict:
    """What ran where: command, date, machine, revision, versions of
    `packages`, `extra`, and the minutes since `start` (perf_counter)."""
    return {
        "command": command_line(),
        "date": now(),
        "machine": machine(),
        "revision": revision(),
        "versions": versions(packages),
        **extra,
        "total_s": time.perf_counter() - start,
    }


def write_raw(results: list, context: dict, out: Path) -> None:
    """Dataclass results as `results.csv`, and with `context` as `results.json`."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [dataclasses.asdict(r) for r in results]
    pd.DataFrame(rows).to_csv(out / "results.csv", index=False)
    (out / "results.json").write_text(json.dumps({"context": context, "results": rows}, indent=1))


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def choose(value: str | None, known: list[str], default: list[str], what: str) -> list[str]:
    """The comma-separated names of `value` (or `default`), all in `known`."""
    names = default if value is None else [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def markers(section: str) -> tuple[str, str]:
    return f"<!-- begin generated: {section} -->", f"<!-- end generated: {section} -->"


def replace_section(page: str, section: str, body: str) -> str:
    """`page` with the text between the markers of `section` replaced by
    `body` (markers appended at the end when the page has none)."""
    begin, end = markers(section)
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin not in page:
        return page.rstrip() + "\n\n" + block + "\n"
    head, rest = page.split(begin, 1)
    if end not in rest:
        raise ValueError(f"{begin!r} has no {end!r} after it")
    return head + block + rest.split(end, 1)[1]
