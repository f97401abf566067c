"""Run every benchmark, one after the other, each in its own process (so one
benchmark's arrays and compiled code do not weigh on the next).

    python3 benchmarks/run_all.py            # full sizes: several minutes on 2 cores
    python3 benchmarks/run_all.py --quick    # tiny sizes, to check that they run
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCHMARKS = ("scan_speed.py", "ssm_gaps.py", "ssm_memory.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that the scripts run")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent
    failed = []
    for name in BENCHMARKS:
        command = [sys.executable, str(here / name)] + (["--quick"] if args.quick else [])
        print(f"\n$ {' '.join(command[1:])}", flush=True)
        if subprocess.run(command).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
