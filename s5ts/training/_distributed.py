"""Several processes, one fit: JAX's multi-controller runtime
(`jax.distributed`), its launch, and which process writes.

Every process runs the same program on the same in-memory data and draws
the same batch plan from the same seeds; `_devices.placement_for` then
lays each global batch over a mesh of every device of every process, each
process supplying only its own rows of it, and replicates the parameters.
The training step's gradients are summed across processes by XLA's
collectives (gloo over TCP on CPU), so every process ends with the same
model. Files, logs and progress bars are written by process 0 alone
(`is_primary`).

`initialize` starts the runtime from arguments or from environment
variables (the multi-host recipe); `launch_local` (`python -m
s5ts.distributed`) starts N processes of a script on this machine with
those variables set.

A process that dies stops sending heartbeats; after `heartbeat_timeout`
seconds the coordination service reports it to the others, which then
abort with JAX's error naming the missing task instead of waiting in a
collective forever. `initialization_timeout` bounds the wait for peers
that never start.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np

#: The environment variables `initialize` reads (`JAX_COORDINATOR_ADDRESS`
#: and `JAX_COORDINATOR_BIND_ADDRESS` are read by JAX itself too).
COORDINATOR = "JAX_COORDINATOR_ADDRESS"
BIND = "JAX_COORDINATOR_BIND_ADDRESS"
NUM_PROCESSES = "S5TS_NUM_PROCESSES"
PROCESS_ID = "S5TS_PROCESS_ID"
HEARTBEAT_TIMEOUT = "S5TS_HEARTBEAT_TIMEOUT"
INITIALIZATION_TIMEOUT = "S5TS_INITIALIZATION_TIMEOUT"

#: Seconds without heartbeats after which a process counts as dead (JAX's
#: default, 100 s, is made for large clusters; a dead peer on one machine
#: or a small cluster should stop the others within about half a minute).
DEFAULT_HEARTBEAT_TIMEOUT = 20
#: Seconds to wait for every process to connect.
DEFAULT_INITIALIZATION_TIMEOUT = 60
#: Seconds a finished process waits for the others at exit.
SHUTDOWN_TIMEOUT = 60


def is_primary() -> bool:
    """Whether this process writes (files, logs, progress bars): process 0,
    or the only process."""
    return jax.process_index() == 0


def is_distributed() -> bool:
    """Whether the fit spans several processes (`jax.process_count() > 1`)."""
    return jax.process_count() > 1


def agreed_seed(seed: int) -> int:
    """`seed` as process 0 drew it, on every process (one broadcast; `seed`
    itself in a single process). With `random_state=None` each process
    draws its own seed, and their batch plans and initial networks would
    silently differ."""
    if not is_distributed():
        return int(seed)
    from jax.experimental import multihost_utils

    return int(multihost_utils.broadcast_one_to_all(np.int32(seed)))


def allgather_objects(value) -> list:
    """`value` of every process, in process order (`[value]` in a single
    process): each pickled, padded to the longest and gathered with
    `multihost_utils.process_allgather`. For the small per-series numbers
    a statistics pass gathers (ids, lengths, moments), not for bulk data."""
    if not is_distributed():
        return [value]
    from jax.experimental import multihost_utils

    mine = np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.int64(mine.size))).reshape(-1)
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: mine.size] = mine
    everyone = np.asarray(multihost_utils.process_allgather(padded))
    return [pickle.loads(everyone[p, : int(sizes[p])].tobytes()) for p in range(len(sizes))]


def gather_results(compute):
    """`compute()` on every process, its results in process order; when it
    raised on some processes, the first one's exception is raised on every
    process (rather than there alone, the others waiting for it in the next
    collective until its heartbeats stop). In a single process:
    `[compute()]`, any exception as it is."""
    if not is_distributed():
        return [compute()]
    try:
        mine = (True, compute())
    except Exception as error:  # noqa: BLE001 - raised again below, on every process
        mine = (False, error)
    everyone = allgather_objects(mine)
    failed = next((value for ok, value in everyone if not ok), None)
    if failed is not None:
        raise failed
    return [value for _, value in everyone]


def check_same_data(digest: str) -> None:
    """Raise a ValueError on every process unless all of them hold the
    training data of hex `digest` (`_checkpoint.data_digest`): each process
    supplies its rows of batches drawn from its own copy, so copies that
    differ would train on a mixture without any error. Nothing to check in
    a single process."""
    everyone = allgather_objects(digest)
    differ = [p for p, seen in enumerate(everyone) if seen != everyone[0]]
    if differ:
        raise ValueError(
            f"process {differ[0]} was given other training data than process 0: every process must call "
            "fit with the same X, y, times, sample_weight and validation_data (each uses only its own "
            "rows of every batch; docs/scaling.md)"
        )


def _int_setting(value, variable: str, default: int | None) -> int | None:
    if value is None:
        value = os.environ.get(variable)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"environment variable {variable} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{variable.lower()} must be an int, got {type(value).__name__}")
    return value


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    heartbeat_timeout: int | None = None,
    initialization_timeout: int | None = None,
) -> bool:
    """Start JAX's multi-controller runtime before any JAX computation, with
    CPU collectives over TCP (gloo) and short failure timeouts.

    **Arguments** (each left None is read from the environment variable named):

    - `coordinator_address`: `"host:port"` of process 0, reachable from
      every process (`JAX_COORDINATOR_ADDRESS`; `JAX_COORDINATOR_BIND_ADDRESS`
      restricts where process 0 listens, default every interface).
    - `num_processes`, `process_id` (0 .. N - 1): the number of processes and
      this one's (`S5TS_NUM_PROCESSES`, `S5TS_PROCESS_ID`).
    - `heartbeat_timeout`: seconds of silence after which a process counts
      as dead and the others fail (`S5TS_HEARTBEAT_TIMEOUT`, default 20).
    - `initialization_timeout`: seconds to wait for every process to connect
      (`S5TS_INITIALIZATION_TIMEOUT`, default 60).

    **Returns:** True when the runtime was started (or had been, by an
    earlier call); False when nothing is configured (no coordinator
    address and no process count): a single-process run, left as it is.

    **Raises:** `ValueError` naming the missing or wrong setting when the
    configuration is partial or inconsistent; `RuntimeError` (JAX's) when
    JAX has already started its backend.
    """
    address = coordinator_address if coordinator_address is not None else os.environ.get(COORDINATOR)
    n = _int_setting(num_processes, NUM_PROCESSES, None)
    pid = _int_setting(process_id, PROCESS_ID, None)
    heartbeat = _int_setting(heartbeat_timeout, HEARTBEAT_TIMEOUT, DEFAULT_HEARTBEAT_TIMEOUT)
    init_timeout = _int_setting(initialization_timeout, INITIALIZATION_TIMEOUT, DEFAULT_INITIALIZATION_TIMEOUT)
    if address is None and n is None and pid is None:
        return False
    if jax.distributed.is_initialized():
        return True
    missing = [
        name
        for name, value in ((COORDINATOR, address), (NUM_PROCESSES, n), (PROCESS_ID, pid))
        if value is None
    ]
    if missing:
        raise ValueError(
            "a multi-process run needs the coordinator address, the number of processes and this "
            f"process's id; missing: {', '.join(missing)} (arguments or environment variables)"
        )
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"coordinator_address must be 'host:port', got {address!r}")
    if n < 1:
        raise ValueError(f"num_processes must be at least 1, got {n}")
    if not 0 <= pid < n:
        raise ValueError(f"process_id must be in [0, {n - 1}], got {pid}")
    for name, value in (("heartbeat_timeout", heartbeat), ("initialization_timeout", init_timeout)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1 second, got {value}")
    # gloo is what `jax.distributed` needs for collectives between CPU
    # processes (JAX 0.10's default already; set so an older default or a
    # user's setting of none cannot leave CPU processes unable to sum).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=address,
        num_processes=n,
        process_id=pid,
        initialization_timeout=init_timeout,
        heartbeat_timeout_seconds=heartbeat,
        shutdown_timeout_seconds=SHUTDOWN_TIMEOUT,
    )
    return True


# ----- the local launcher -----


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: What each launched process runs: start the runtime, then the script as
#: `python script.py args` would (its folder first on the import path).
_BOOTSTRAP = (
    "import os, runpy, sys\n"
    "from s5ts.training import initialize\n"
    "initialize()\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def process_environment(
    process_id: int,
    num_processes: int,
    port: int,
    *,
    heartbeat_timeout: int = DEFAULT_HEARTBEAT_TIMEOUT,
    initialization_timeout: int = DEFAULT_INITIALIZATION_TIMEOUT,
    base: dict | None = None,
) -> dict[str, str]:
    """The environment of local process `process_id` of `num_processes`:
    `base` (default `os.environ`) plus the variables `initialize` reads, with
    the coordinator on 127.0.0.1:`port` (listening there alone)."""
    env = dict(os.environ if base is None else base)
    env.update(
        {
            COORDINATOR: f"127.0.0.1:{port}",
            BIND: f"127.0.0.1:{port}",
            NUM_PROCESSES: str(num_processes),
            PROCESS_ID: str(process_id),
            HEARTBEAT_TIMEOUT: str(heartbeat_timeout),
            INITIALIZATION_TIMEOUT: str(initialization_timeout),
        }
    )
    return env


def launch_local(
    script: str,
    args: Sequence[str] = (),
    *,
    processes: int = 2,
    port: int | None = None,
    heartbeat_timeout: int = DEFAULT_HEARTBEAT_TIMEOUT,
    initialization_timeout: int = DEFAULT_INITIALIZATION_TIMEOUT,
) -> int:
    """Run `python script args` as `processes` processes of one
    `jax.distributed` job on this machine (coordinator on 127.0.0.1); their
    output goes to this process's stdout and stderr.

    When a process fails, the others fail too once their heartbeats time out
    (`heartbeat_timeout`); any still running `heartbeat_timeout + 30` seconds
    later are terminated.

    **Returns:** 0 when every process exited with 0, else the first failing
    process's exit status (128 + the signal for one killed by a signal).

    **Raises:** `ValueError` for fewer than one process or a missing script.
    """
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a positive int, got {processes!r}")
    if not os.path.isfile(script):
        raise ValueError(f"script not found: {script!r}")
    port = free_port() if port is None else port
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, script, *args],
            env=process_environment(
                i,
                processes,
                port,
                heartbeat_timeout=heartbeat_timeout,
                initialization_timeout=initialization_timeout,
            ),
        )
        for i in range(processes)
    ]
    failed: int | None = None
    deadline = None
    try:
        while any(c.poll() is None for c in children):
            if failed is None:
                failed = next((_status(c.returncode) for c in children if c.returncode not in (None, 0)), None)
                if failed is not None:
                    deadline = time.monotonic() + heartbeat_timeout + 30
            if deadline is not None and time.monotonic() > deadline:
                for c in children:
                    if c.poll() is None:
                        c.terminate()
                deadline = None
            time.sleep(0.2)
    except KeyboardInterrupt:
        for c in children:
            if c.poll() is None:
                c.send_signal(signal.SIGINT)
        for c in children:
            c.wait()
        raise
    if failed is None:
        failed = next((_status(c.returncode) for c in children if c.returncode != 0), 0)
    return failed


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m s5ts.distributed --processes N [--port P] script.py [args]`."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m s5ts.distributed",
        description="run a script as several processes of one jax.distributed job on this machine",
    )
    parser.add_argument("--processes", type=int, default=2, help="number of processes (default 2)")
    parser.add_argument("--port", type=int, default=None, help="coordinator port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--heartbeat-timeout", type=int, default=DEFAULT_HEARTBEAT_TIMEOUT,
                        help=f"seconds after which a silent process counts as dead (default {DEFAULT_HEARTBEAT_TIMEOUT})")
    parser.add_argument("--initialization-timeout", type=int, default=DEFAULT_INITIALIZATION_TIMEOUT,
                        help=f"seconds to wait for every process to connect (default {DEFAULT_INITIALIZATION_TIMEOUT})")
    parser.add_argument("script", help="the Python script every process runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    try:
        return launch_local(
            options.script,
            options.args,
            processes=options.processes,
            port=options.port,
            heartbeat_timeout=options.heartbeat_timeout,
            initialization_timeout=options.initialization_timeout,
        )
    except ValueError as error:
        parser.error(str(error))

