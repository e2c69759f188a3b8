"""The ``skdp`` command line (also ``python -m skdp``).

Subcommands: ``demo`` (every estimator at its defaults on embedded data), ``ledger summary
PATH`` (what a privacy ledger has spent), ``audit SPEC`` (a black-box privacy audit of an
estimator on a generated canary pair).  Everything is parsed with :mod:`argparse`; the
estimator of ``audit`` is given as ``module:Class(key=value, ...)`` whose values are Python
literals (read with :func:`ast.literal_eval`: nothing is executed).
"""

import argparse
import ast
import importlib
import sys

DESCRIPTION = """\
skdp: differentially private scikit-learn estimators.

commands:
  demo                 fit every estimator at its defaults on embedded real data and
                       print one line per fit as soon as it ends
  ledger summary PATH  the releases a privacy ledger recorded, the total epsilon at its
                       delta and the budget left
  audit SPEC           black-box privacy audit of an estimator on a generated canary pair,
                       e.g.  skdp audit "skdp:DPLogisticRegression(epsilon=1.0,
                       data_norm=1.0, classes=[0, 1])"

Run "skdp COMMAND --help" for the options of a command.
"""


def _version():
    from . import __version__

    return __version__


def _parser():
    parser = argparse.ArgumentParser(
        prog="skdp", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"skdp {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo", help="every estimator at its defaults on embedded data",
        description="Fit every estimator at its defaults (solver='auto', alpha='auto') on "
                    "the embedded Adult and Bike-sharing data and print one line per fit as "
                    "soon as it ends.")
    demo.add_argument("--quick", action="store_true", help="one epsilon (1.0) instead of three")
    demo.add_argument("--plot", metavar="FILE",
                      help="save the privacy-utility curve of the run (needs matplotlib)")

    ledger = sub.add_parser("ledger", help="inspect a privacy ledger",
                            description="Inspect a privacy ledger stored on disk.")
    lsub = ledger.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    summary = lsub.add_parser("summary", help="entries, total epsilon, budget left",
                              description="Print the releases recorded in the ledger at PATH, "
                                          "their composed epsilon at the ledger's delta and "
                                          "the budget left.")
    summary.add_argument("path", metavar="PATH")

    audit = sub.add_parser(
        "audit", help="black-box privacy audit of an estimator",
        description="Fit the estimator many times on two neighbouring datasets (a canary "
                    "row at the public bound, replaced by its opposite) and print a lower "
                    "bound on its epsilon with its confidence level.  SPEC is "
                    "module:Class(key=value, ...) with literal values; it must set a public "
                    "data_norm.")
    audit.add_argument("spec", metavar="SPEC")
    audit.add_argument("--fits", type=int, default=400,
                       help="fits per dataset (default 400)")
    audit.add_argument("--n-samples", type=int, default=200,
                       help="rows of each dataset (default 200)")
    audit.add_argument("--confidence", type=float, default=0.95)
    audit.add_argument("--seed", type=int, default=0)
    return parser


def parse_spec(spec):
    """``"module:Class(key=value, ...)"`` -> ``(class, kwargs)``.  Values must be Python
    literals; nothing in the string is executed."""
    if ":" not in spec:
        raise ValueError(f"expected module:Class(...), got {spec!r}")
    module_name, call = spec.split(":", 1)
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse {call!r}: {exc.msg}") from None
    if isinstance(node, ast.Name):
        name, kwargs = node.id, {}
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        name = node.func.id
        try:
            kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        except ValueError:
            raise ValueError("the parameters of SPEC must be literals (numbers, strings, "
                             "lists, None, True/False)") from None
        if None in kwargs:
            raise ValueError("SPEC takes key=value parameters only")
    else:
        raise ValueError(f"expected Class or Class(key=value, ...), got {call!r}")
    cls = getattr(importlib.import_module(module_name.strip()), name)
    return cls, kwargs


def canary_pair(n, d, data_norm, classifier, seed=0):
    """Two neighbouring datasets: ``n - 1`` shared rows of norm at most ``data_norm / 2`` and
    one canary row at the bound, ``+data_norm e_1`` with label 1 (target ``+10 data_norm``)
    in the first, its opposite with label 0 (target ``-10 data_norm``) in the second."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    X *= 0.5 * data_norm / np.sqrt(d)
    y0 = (X[:, 1 % d] > 0).astype(int) if classifier else X @ np.ones(d)
    X0, X1, y1 = X.copy(), X.copy(), y0.copy()
    X0[0] = 0.0
    X0[0, 0] = data_norm
    X1[0] = -X0[0]
    if classifier:
        y0[0], y1[0] = 1, 0
    else:
        y0[0], y1[0] = 10.0 * data_norm, -10.0 * data_norm
    return X0, y0, X1, y1


def _audit(args, out):
    from sklearn.base import is_classifier

    from .audit import audit_estimator

    cls, kwargs = parse_spec(args.spec)
    if kwargs.get("data_norm") is None:
        raise ValueError("audit needs a public data_norm in SPEC (the canary sits at it)")
    template = cls(**kwargs)
    params = template.get_params()
    X0, y0, X1, y1 = canary_pair(args.n_samples, 2, float(kwargs["data_norm"]),
                                 is_classifier(template), args.seed)
    delta = float(params.get("delta", 1e-6))
    claimed = params.get("epsilon")
    print(f"auditing {cls.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) "
          f"with {args.fits} fits per dataset ...", file=out, flush=True)
    res = audit_estimator(lambda s: cls(**kwargs, random_state=s), X0, y0, X1, y1,
                          n_fits=args.fits, delta=delta, confidence=args.confidence,
                          random_state=args.seed)
    print(f"epsilon lower bound: {res.epsilon_lower_bound:.3f} at {args.confidence:.0%} "
          f"confidence (delta = {delta:g}); claimed epsilon: {claimed}", file=out)
    if claimed is not None and res.epsilon_lower_bound > float(claimed):
        print("VIOLATION: the lower bound exceeds the claimed epsilon", file=out)
        return 3
    return 0


def main(argv=None, out=None):
    out = sys.stdout if out is None else out
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(out)
        return 0
    from .accounting._ledger import LedgerError

    try:
        if args.command == "demo":
            from ._demo import run_demo

            run_demo(out=out, quick=args.quick, plot=args.plot)
            return 0
        if args.command == "ledger":
            from .accounting import PrivacyLedger

            with PrivacyLedger.open(args.path) as ledger:
                print(ledger.summary(), file=out)
            return 0
        if args.command == "audit":
            return _audit(args, out)
    except (ValueError, OSError, ImportError, AttributeError, LedgerError) as exc:
        print(f"skdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
