"""Several processes, one fit (`jax.distributed`): start the runtime, ask
which process writes, launch N local processes of a script.

    python -m s5ts.distributed --processes 2 train.py [args]

runs `python train.py [args]` twice, as processes 0 and 1 of one job with
its coordinator on 127.0.0.1 and CPU collectives over gloo; each process
calls `fit` on the same data and ends with the same model.
"""

from __future__ import annotations

import sys

from .training import (
    free_port,
    initialize,
    is_distributed,
    is_primary,
    launch_local,
    process_environment,
)
from .training import launch_main as main

__all__ = ["free_port", "initialize", "is_distributed", "is_primary", "launch_local", "main", "process_environment"]

if __name__ == "__main__":
    sys.exit(main())
