"""Shared helpers of the benchmarks: timing, XLA memory analysis, tables.

Timings are medians of repeated calls after warm-up (the first call compiles),
each ended by `block_until_ready`, so they measure the compiled computation
and not JAX's asynchronous dispatch. Memory comes from XLA's buffer
assignment (`jax.jit(f).lower(...).compile().memory_analysis()`), which needs
no run: it also sizes computations too large to execute here.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

# `python3 benchmarks/NAME.py` puts benchmarks/ (not the repository root) on
# sys.path; make the working tree's s5ts importable without installing it.
_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import jax  # noqa: E402

GIB = 2.0**30


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of `runs` calls, and their range."""

    median: float
    low: float
    high: float
    runs: int

    @property
    def spread(self) -> float:
        """(max − min) / median: how noisy the runs were."""
        return (self.high - self.low) / self.median


def block(tree: Any) -> Any:
    """Wait for every array in `tree` to be computed."""
    return jax.block_until_ready(tree)


def time_interleaved(
    calls: dict[str, tuple[Callable, tuple]], *, repeats: int = 5, warmup: int = 1
) -> dict[str, Timing]:
    """Median wall time of each `fn(*args)`, measured round-robin.

    Every round calls each function once, in a shuffled order (seeded), so a
    change in the machine's load (it is shared) hits all of them alike and no
    function always runs right after the same other one; their ratios stay
    meaningful. Outputs are blocked on and dropped at once: one result is
    alive at a time.

    **Arguments:**

    - `calls`: name -> (compiled function, its arguments).
    - `repeats`: timed rounds; `warmup`: untimed rounds before them.

    **Returns:** name -> `Timing`.
    """
    for _ in range(warmup):
        for fn, args in calls.values():
            block(fn(*args))
    runs: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffle = random.Random(0).shuffle
    for _ in range(repeats):
        shuffle(order)
        for name in order:
            fn, args = calls[name]
            start = time.perf_counter()
            block(fn(*args))
            runs[name].append(time.perf_counter() - start)
    return {
        name: Timing(statistics.median(r), min(r), max(r), len(r)) for name, r in runs.items()
    }


@dataclasses.dataclass(frozen=True)
class Memory:
    """XLA's buffer sizes for one compiled computation, in bytes."""

    argument: int
    output: int
    temp: int
    alias: int
    peak: int | None  # XLA's own peak estimate, where the backend gives one

    @property
    def total(self) -> int:
        """temp + argument + output: everything live at once, at worst."""
        return self.temp + self.argument + self.output


def compile_with_memory(fn: Callable, *args) -> tuple[Callable, Memory, float]:
    """Compile `fn` for `args` (arrays, or `jax.ShapeDtypeStruct`s: nothing
    is run or allocated) and read XLA's memory analysis.

    **Returns:** `(compiled function, Memory, compile seconds)`; the compiled
    function takes arguments of exactly the shapes and dtypes of `args`.
    """
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    seconds = time.perf_counter() - start
    stats = compiled.memory_analysis()
    peak = getattr(stats, "peak_memory_in_bytes", None)
    memory = Memory(
        argument=stats.argument_size_in_bytes,
        output=stats.output_size_in_bytes,
        temp=stats.temp_size_in_bytes,
        alias=stats.alias_size_in_bytes,
        peak=peak if peak else None,
    )
    return compiled, memory, seconds


def shapes_of(tree: Any) -> Any:
    """Replace every array in `tree` by its `jax.ShapeDtypeStruct` (with its
    sharding when it is spread over several devices)."""

    def shape(x):
        sharding = getattr(x, "sharding", None)
        if sharding is not None and len(sharding.device_set) > 1:
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    return jax.tree.map(shape, tree)


def gib(n_bytes: float | None) -> str:
    """Bytes as GiB (MiB below 0.1 GiB)."""
    if n_bytes is None:
        return "-"
    return f"{n_bytes / GIB:.2f} GiB" if n_bytes >= 0.1 * GIB else f"{n_bytes / 2**20:.1f} MiB"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f} us"
    return f"{value * 1e3:.1f} ms" if value < 1.0 else f"{value:.2f} s"


def spread(timing: Timing | None) -> str:
    return "-" if timing is None else f"{100 * timing.spread:.0f}%"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A plain-text table, columns aligned, first column left-aligned."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)]

    def line(cells):
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def cpu_model() -> str:
    try:
        for entry in Path("/proc/cpuinfo").read_text().splitlines():
            if entry.startswith("model name"):
                return entry.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def print_header(title: str) -> None:
    """What was measured where: title, date, machine, JAX version and backend."""
    print(f"# {title}")
    print(
        f"# {datetime.datetime.now().isoformat(timespec='seconds')}  "
        f"cores={len(os.sched_getaffinity(0))}  cpu={cpu_model()!r}  "
        f"jax={jax.__version__}  backend={jax.default_backend()}  devices={jax.device_count()}  "
        f"load1={os.getloadavg()[0]:.2f}"
    )
