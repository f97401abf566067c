"""JAX's compilation caches: the persistent one, on by default for s5ts, and
a guard on the one in memory (`release_compiled_programs`).

Compiling a training step takes seconds on a CPU; with the cache a second
process (a new notebook kernel, the next script) reads the compiled programs
from disk instead. `enable_compilation_cache` runs at the start of every
`fit`; it configures JAX only when nothing has configured a cache before:

- `S5TS_COMPILATION_CACHE=0` (or `false`, `off`, `no`) turns it off;
  any other value is taken as the cache directory;
- `set_compilation_cache(False)` turns it off for this process,
  `set_compilation_cache(path)` chooses the directory;
- a cache directory set through JAX itself (`jax_compilation_cache_dir`) is
  left as it is;
- otherwise the cache is `<user cache dir>/s5ts/jax-<jax version>`
  (`platformdirs.user_cache_dir`), and every compiled program is kept
  (JAX's default keeps only those that took over a second to compile).

s5ts keeps one subfolder per number of CPU cores the process may use
(`cpus-<n>`): XLA's CPU code is partitioned for the threads it had when it
compiled, and JAX's cache key does not say how many, so a program compiled
under `taskset -c 0` and read back by a process with two cores ran its
training step at one core's speed (2.3× slower, measured on the pendulum
model; docs/performance.md). A cache configured through JAX has no such
subfolders: keep one per core count yourself.

In memory, JAX keeps every program it compiled for the life of the process,
and XLA's CPU runtime holds a few memory mappings per kernel of each (about
400 for one small `fit`). A process that compiles thousands of programs (a
long notebook session of differently shaped fits, a test suite) reaches
Linux's limit, `vm.max_map_count` (65,530 by default), and the next
compilation crashes the process (SIGSEGV or SIGABRT inside XLA).
`release_compiled_programs`, which `train` calls first, drops JAX's compiled
programs (`jax.clear_caches`) well before that: a program needed again is
compiled again (or read from the persistent cache).
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import jax

ENVIRONMENT_VARIABLE = "S5TS_COMPILATION_CACHE"
_OFF = {"0", "false", "off", "no"}
_choice: list = [None]  # None: not chosen; False: off; a path
_configured = [False]


def set_compilation_cache(setting: bool | str | os.PathLike) -> None:
    """Choose the cache for this process: `False` turns s5ts's cache off,
    `True` restores the default, a path uses that directory. Takes effect at
    the next `fit`, unless s5ts has already turned the cache on."""
    if setting is True:
        setting = None
    elif setting is not False and not isinstance(setting, (str, os.PathLike)):
        raise TypeError(f"set_compilation_cache takes True, False or a path, got {setting!r}")
    _choice[0] = setting


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("s5ts")) / f"jax-{jax.__version__}"


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def compilation_cache_dir() -> Path | None:
    """The directory s5ts would use now (with its `cpus-<n>` subfolder), or
    None when the cache is off."""
    if _choice[0] is False:
        return None
    env = os.environ.get(ENVIRONMENT_VARIABLE)
    if _choice[0] is not None:
        base = Path(_choice[0])
    elif env is not None and env.strip().lower() in _OFF:
        return None
    else:
        base = Path(env) if env else default_cache_dir()
    return base / f"cpus-{_usable_cores()}"


def enable_compilation_cache() -> None:
    """Turn JAX's persistent cache on (see the module docstring); idempotent."""
    if _configured[0] or jax.config.jax_compilation_cache_dir is not None:
        return
    path = compilation_cache_dir()
    if path is None:
        return
    path.mkdir(parents=True, exist_ok=True)
    point_cache_at(path)
    _configured[0] = True


#: The JAX settings `point_cache_at` makes.
CACHE_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


def point_cache_at(path: str | os.PathLike) -> None:
    """JAX's persistent cache in `path`, every compiled program kept
    (`CACHE_SETTINGS`), from the next compilation on."""
    for name, value in zip(CACHE_SETTINGS, (str(path), 0.0, -1)):
        jax.config.update(name, value)
    # JAX decides once per process, at its first compilation, whether a cache
    # is used; earlier compilations (before any fit) made that decision.
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()


#: The share of `vm.max_map_count` past which `release_compiled_programs`
#: drops JAX's compiled programs.
MAPPING_SHARE = 0.5


def _memory_mappings() -> tuple[int, int] | None:
    """(mappings this process holds, the kernel's limit), or None where
    /proc does not say (not Linux)."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            limit = int(f.read())
        with open("/proc/self/maps", "rb") as f:
            used = sum(1 for _ in f)
    except (OSError, ValueError):
        return None
    return used, limit


def release_compiled_programs(share: float = MAPPING_SHARE) -> bool:
    """Drop JAX's in-memory compiled programs (`jax.clear_caches`) when this
    process holds more than `share` of the memory mappings Linux allows it
    (see the module docstring); returns whether it did. Elsewhere, and below
    the share, nothing happens."""
    counts = _memory_mappings()
    if counts is None or counts[0] <= share * counts[1]:
        return False
    jax.clear_caches()
    gc.collect()  # the executables go, and their mappings with them
    return True
