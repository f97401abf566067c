"""The `s5ts` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s5ts", description="S5 for irregularly sampled time series")
    commands = parser.add_subparsers(dest="command", required=True)
    pendulum = commands.add_parser(
        "pendulum",
        help="reproduce the S5 paper's irregular-pendulum table (S5, S5-drop, S5-append, CRU)",
    )
    pendulum.add_argument(
        "--preset",
        choices=("tiny", "quick", "paper"),
        default="quick",
        help="quick: ~6 min on a 2-core CPU; paper: the published protocol "
        "(about 30 min per S5 seed, 2 h per CRU seed on 2 CPU cores)",
    )
    pendulum.add_argument("--seeds", type=int, default=1, help="seeds per model (default 1)")
    pendulum.add_argument("--first-seed", type=int, default=0,
                          help="first seed (default 0); runs seeds first..first+N-1")
    pendulum.add_argument("--out", default="results/pendulum", help="output folder (default results/pendulum)")
    pendulum.add_argument("--models", nargs="+", default=None,
                          help="models to train (default S5 S5-drop S5-append CRU); the lineage's rows: "
                          "S5-selective S5-split S4D-Lin S4D-Inv S4D-Real DSS")
    pendulum.add_argument("--cache-dir", default=None, help="where the generated data is cached")
    pendulum.add_argument("--no-plots", action="store_true", help="skip the figures")
    pendulum.add_argument("--quiet", action="store_true", help="no progress output")
    merge = commands.add_parser(
        "pendulum-merge",
        help="combine `s5ts pendulum` output folders (other seeds or models) into one table",
    )
    merge.add_argument("folders", nargs="+", help="output folders of `s5ts pendulum` runs of one preset")
    merge.add_argument("--out", required=True, help="folder for the combined results")
    merge.add_argument("--no-plots", action="store_true", help="skip the learning-curve figure")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "pendulum":
        from .experiments.pendulum import MODELS, run_pendulum

        if args.seeds < 1:
            print("s5ts pendulum: --seeds must be at least 1", file=sys.stderr)
            return 2
        if args.first_seed < 0:
            print("s5ts pendulum: --first-seed must be at least 0", file=sys.stderr)
            return 2
        run_pendulum(
            args.preset,
            seeds=args.seeds,
            first_seed=args.first_seed,
            out=args.out,
            models=tuple(args.models) if args.models else MODELS,
            cache_dir=args.cache_dir,
            verbose=not args.quiet,
            plots=not args.no_plots,
        )
    if args.command == "pendulum-merge":
        from .experiments.pendulum import merge_results

        merge_results(args.folders, args.out, plots=not args.no_plots)
        print((Path(args.out) / "results.md").read_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
