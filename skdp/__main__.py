"""Command line: ``python -m skdp demo``."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skdp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="fit every DP estimator on embedded data and print a table")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        run_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
