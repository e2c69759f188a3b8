"""The ``skdp`` command line (also ``python -m skdp``).

Subcommands: ``demo`` (every estimator at its defaults on embedded data), ``ledger summary
PATH`` (what a privacy ledger has spent), ``audit SPEC`` (a black-box privacy audit of an
estimator on a generated canary pair).  Everything is parsed with :mod:`argparse`; the
estimator of ``audit`` is given as ``module:Class(key=value, ...)`` whose values are Python
literals (read with :func:`ast.literal_eval`: nothing is executed).

Talking to the user: every command prints its first line before it imports anything heavy
(scikit-learn, numba kernels, dp-accounting, Dask), announces each long step before it
starts (:mod:`skdp._progress`: a status line or progress bar on a terminal, plain flushed
lines elsewhere), checks its arguments -- an audit SPEC included -- before the heavy
imports where it can, and reports an error as one line on stderr that names its cause
(``skdp COMMAND: error: ...``, exit status 2), never a traceback.

Exit status of ``audit``: 0 when the lower bound does not exceed the claimed epsilon, 3
when it does (a violation), 4 when the claim is ``inf`` -- the fitted estimator reports
``privacy_guaranteed_ = False`` (e.g. ``classes=None``: the label set is read from the
data), so no bound can exceed it: the audit cannot fail, and it is not a pass either.  The
claim is the fitted estimator's ``epsilon_`` (:attr:`skdp.audit.AuditResult.
claimed_epsilon`), not its ``epsilon`` parameter.
"""

import argparse
import ast
import importlib
import math
import os
import sys

DESCRIPTION = """\
skdp: differentially private scikit-learn estimators.

commands:
  demo                 fit every estimator at its defaults, and make_private_pipeline
                       on the raw Adult table, on embedded real data; print one line
                       per fit as soon as it ends
  ledger summary PATH  the releases a privacy ledger recorded, the total epsilon at its
                       delta and the budget left
  audit SPEC           black-box privacy audit of an estimator on a generated canary pair,
                       e.g.  skdp audit "skdp:DPLogisticRegression(epsilon=1.0,
                       data_norm=1.0, classes=[0, 1])"
  compile              compile every numba kernel into numba's on-disk cache once, so
                       that no later first fit waits for compilation

Run "skdp COMMAND --help" for the options of a command.  Errors go to stderr with exit
status 2 (3: an audit found a violation; 4: the audited estimator guarantees nothing,
epsilon_ = inf, so there was nothing to violate).
"""

#: The smallest ``--fits`` that :func:`skdp.audit.audit_estimator` accepts: half the fits
#: of each side estimate the projection direction and ``MIN_SAMPLES = 10`` must remain
#: (``n_fits - n_fits // 2 >= 10``; pinned by a test against the audit module).
MIN_FITS = 19


class SpecError(ValueError):
    """An audit SPEC that cannot be used; the message says why."""


def _version():
    from . import __version__

    return __version__


def _int_at_least(minimum, why):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum} ({why}), got {value}")
        return value
    return parse


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32), got {value}")
    return value


def _confidence(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(
            f"must lie strictly between 0 and 1 (e.g. 0.95), got {text}")
    return value


def _parser():
    parser = argparse.ArgumentParser(
        prog="skdp", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"skdp {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help='one of the commands below; "skdp COMMAND --help" '
                                     'lists its options')

    demo = sub.add_parser(
        "demo", help="every estimator at its defaults on embedded data",
        description="Fit every estimator at its defaults (solver='auto', alpha='auto') on "
                    "the embedded Adult and Bike-sharing data, and make_private_pipeline on "
                    "the raw Adult table (knots, categories and model learnt privately "
                    "under one budget), and print one line per fit as "
                    "soon as it ends, next to a non-private scikit-learn reference.  A "
                    "progress line announces each fit before it starts (on a terminal, a "
                    "status line that the next row replaces).")
    demo.add_argument("--quick", action="store_true",
                      help="epsilon 1.0 only (4 private fits) instead of 0.1, 1.0 and 10.0 "
                           "(12 private fits)")
    demo.add_argument("--plot", metavar="FILE",
                      help="save the privacy-utility curves of the run to FILE (e.g. "
                           "curve.png; needs matplotlib: without it the demo refuses at "
                           "once, exit status 2)")

    ledger = sub.add_parser("ledger", help="inspect a privacy ledger",
                            description="Inspect a privacy ledger stored on disk.")
    lsub = ledger.add_subparsers(dest="ledger_command", metavar="ACTION", required=True,
                                 help="what to do with the ledger")
    summary = lsub.add_parser("summary", help="entries, total epsilon, budget left",
                              description="Print the releases recorded in the ledger at PATH, "
                                          "their composed epsilon at the ledger's delta and "
                                          "the budget left.  Nothing is recorded.")
    summary.add_argument("path", metavar="PATH",
                         help="the ledger's store: the file given as "
                              "PrivacyLedger(..., path=PATH)")

    audit = sub.add_parser(
        "audit", help="black-box privacy audit of an estimator",
        description="Fit the estimator many times on two neighbouring datasets (a canary "
                    "row at the public bound, replaced by its opposite) and print a lower "
                    "bound on its epsilon with its confidence level.  SPEC is checked "
                    "before any fit; a progress bar (plain lines when not on a terminal) "
                    "counts the fits.  The claimed epsilon is the fitted estimator's own "
                    "guarantee (epsilon_), not the parameter: inf when a fit reads a bound "
                    "or the label set from the data (privacy_guaranteed_ = False).  Exit "
                    "status 0: the bound does not exceed the claim; 3: it does (a privacy "
                    "violation); 4: the claim is inf, so the audit can never fail and "
                    "checks nothing (the reason is printed once).  Each warning of the "
                    "fits is printed once.")
    audit.add_argument("spec", metavar="SPEC",
                       help="the estimator, as module:Class(key=value, ...) with Python "
                            "literal values (nothing is executed); it must set a public "
                            "data_norm and must not set random_state (every fit gets its own "
                            "seed), e.g. \"skdp:DPLogisticRegression(epsilon=1.0, "
                            "data_norm=1.0, classes=[0, 1])\"")
    audit.add_argument("--fits", type=_int_at_least(MIN_FITS, "half of them fix the test "
                                                   "direction, 10 must remain"),
                       default=400, metavar="N",
                       help=f"fits per dataset (default 400, at least {MIN_FITS}); a quarter "
                            "of them enter the bound, so more fits give a tighter bound")
    audit.add_argument("--n-samples", type=_int_at_least(2, "the canary and one other row"),
                       default=200, metavar="N",
                       help="rows of each of the two datasets (default 200)")
    audit.add_argument("--confidence", type=_confidence, default=0.95, metavar="LEVEL",
                       help="confidence level of the lower bound on epsilon, in (0, 1) "
                            "(default 0.95)")
    audit.add_argument("--seed", type=_seed, default=0, metavar="INT",
                       help="seed of the datasets, of the fits' seeds and of the test's "
                            "split; the same seed repeats the audit exactly (default 0)")
    _add_compile_parser(sub)
    return parser


def _add_compile_parser(sub):
    from ._compile import GROUP_NAMES

    compile_ = sub.add_parser(
        "compile", help="compile every kernel into numba's cache, once",
        description="Compile the numba kernels of every solver and default into numba's "
                    "on-disk cache, one line per group with its seconds, so that the first "
                    "fit of every later session reads them from the cache instead of "
                    "compiling (a first multinomial or pipeline fit otherwise spends 12-13 s "
                    "compiling on two cores).  The cache is NUMBA_CACHE_DIR if set, else the __pycache__ "
                    "folders of the install, else ~/.cache/numba; run again after upgrading "
                    "skdp or numba.  Exit status 0, or 1 when a group failed or no cache "
                    "can be kept.")

    def group(name):
        if name not in GROUP_NAMES:
            raise argparse.ArgumentTypeError(
                f"no group {name!r} (the groups: {', '.join(GROUP_NAMES)})")
        return name

    compile_.add_argument("groups", nargs="*", metavar="GROUP", type=group,
                          help="compile only these groups (default: all): "
                               + ", ".join(GROUP_NAMES))
    compile_.add_argument("--quiet", action="store_true",
                          help="print nothing but errors (the exit status tells)")
    compile_.add_argument("--float32", action="store_true",
                          help="also compile the variants for float32 rows")


# -- audit SPEC -----------------------------------------------------------------------------

def split_spec(spec):
    """``"module:Class(key=value, ...)"`` -> ``(module, class name, kwargs)``, imports
    nothing.  Values must be Python literals (read with :func:`ast.literal_eval`).

    >>> split_spec("skdp:DPHuberRegressor(epsilon=0.5, data_norm=2)")
    ('skdp', 'DPHuberRegressor', {'epsilon': 0.5, 'data_norm': 2})
    >>> try:
    ...     split_spec("skdp:DPHuberRegressor(epsilon=open('x'), data_norm=2)")
    ... except SpecError as exc:
    ...     print(str(exc).split(" (")[0])
    epsilon=open('x') in SPEC is not a Python literal
    """
    if ":" not in spec:
        raise SpecError(f"SPEC must be module:Class(key=value, ...), got {spec!r} (no ':')")
    module_name, call = (part.strip() for part in spec.split(":", 1))
    if not module_name or not all(p.isidentifier() for p in module_name.split(".")):
        raise SpecError(f"SPEC must start with a module name before ':', got {module_name!r}")
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError as exc:
        raise SpecError(f"SPEC is not valid Python call syntax: {exc.msg} in {call!r}") \
            from None
    if isinstance(node, ast.Name):
        return module_name, node.id, {}
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise SpecError(f"expected Class or Class(key=value, ...) after ':', got {call!r}")
    if node.args or any(kw.arg is None for kw in node.keywords):
        raise SpecError("SPEC takes key=value parameters only (no positional arguments, "
                        f"no **), got {call!r}")
    kwargs = {}
    for kw in node.keywords:
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise SpecError(
                f"{kw.arg}={ast.get_source_segment(call, kw.value) or '?'} in SPEC is not "
                "a Python literal (a number, string, list, tuple, dict, None, True or "
                "False); nothing in SPEC is executed") from None
    return module_name, node.func.id, kwargs


def _check_data_norm(kwargs):
    norm = kwargs.get("data_norm")
    if norm is None:
        raise SpecError("audit needs a public data_norm in SPEC (the canary row sits at it), "
                        "e.g. data_norm=1.0")
    if isinstance(norm, bool) or not isinstance(norm, (int, float)) or not (
            norm > 0 and math.isfinite(norm)):
        raise SpecError(f"data_norm in SPEC must be a positive finite number, got {norm!r}")
    if "random_state" in kwargs:
        raise SpecError("SPEC must not set random_state: the audit gives every fit its own "
                        "seed (use --seed to repeat an audit)")


def _resolve(module_name, name):
    """The class ``module_name.name``, with errors that say which part is missing."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise SpecError(f"SPEC names the module {module_name!r}, which cannot be imported: "
                        f"{exc}") from None
    try:
        cls = getattr(module, name)
    except AttributeError:
        public = getattr(module, "__all__", None)
        hint = f" (it has: {', '.join(public)})" if public else ""
        raise SpecError(f"SPEC names {module_name}:{name}, but the module {module_name} has "
                        f"no {name!r}{hint}") from None
    if not (isinstance(cls, type) and hasattr(cls, "fit") and hasattr(cls, "get_params")):
        raise SpecError(f"{module_name}:{name} is not a scikit-learn estimator class")
    return cls


def _build(cls, kwargs):
    """``cls(**kwargs)``, its parameters validated (unknown names, out-of-range values)."""
    import inspect

    accepted = [p.name for p in inspect.signature(cls).parameters.values()
                if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise SpecError(f"{cls.__name__} has no parameter {', '.join(map(repr, unknown))} "
                        f"(its parameters: {', '.join(accepted)})")
    estimator = cls(**kwargs)
    if "random_state" not in accepted:
        raise SpecError(f"{cls.__name__} has no random_state parameter: the audit needs to "
                        "seed each fit")
    validate = getattr(estimator, "_validate_params", None)
    if validate is not None:       # scikit-learn's _parameter_constraints
        try:
            validate()
        except (ValueError, TypeError) as exc:
            raise SpecError(f"invalid SPEC: {exc}") from None
    return estimator


def parse_spec(spec):
    """``"module:Class(key=value, ...)"`` -> ``(class, kwargs)``.  Values must be Python
    literals; nothing in the string is executed.  Errors are :class:`SpecError`
    (a ``ValueError``) naming the cause."""
    module_name, name, kwargs = split_spec(spec)
    return _resolve(module_name, name), kwargs


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
    from ._progress import Progress

    # 1. the SPEC's syntax and the audit's own requirements: nothing imported yet
    module_name, name, kwargs = split_spec(args.spec)
    _check_data_norm(kwargs)
    # 2. the class and its parameters (imports the estimator's module, e.g. scikit-learn;
    #    no numba kernel and no accounting library yet)
    cls = _resolve(module_name, name)
    template = _build(cls, kwargs)
    from sklearn.base import is_classifier

    params = template.get_params()
    delta = float(params.get("delta", 1e-6))
    claimed = params.get("epsilon")
    progress = Progress(out)
    progress.line(f"auditing {cls.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
                  f": {args.fits} fits on each of two neighbouring datasets of "
                  f"{args.n_samples} rows")
    import warnings

    try:
        # the fits' warnings are issued once each by audit_estimator: printed here, once
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = _run_audit(args, cls, kwargs, template, delta, progress, is_classifier)
    finally:
        progress.close()
    if res.claimed_epsilon is not None:
        claimed = res.claimed_epsilon       # the fitted estimator's guarantee (epsilon_)
    from .exceptions import PrivacyLeakWarning

    for w in caught:
        if not (issubclass(w.category, PrivacyLeakWarning) and res.claim_note):
            progress.line(f"warning (from the fits): {w.category.__name__}: {w.message}")
    shown = "inf" if claimed is not None and math.isinf(float(claimed)) else claimed
    progress.line(f"epsilon lower bound: {res.epsilon_lower_bound:.3f} at "
                  f"{args.confidence:.0%} confidence (delta = {delta:g}); claimed epsilon: "
                  f"{shown}")
    if claimed is not None and math.isinf(float(claimed)):
        why = res.claim_note or "the fitted estimator reports epsilon_ = inf"
        progress.line(f"NO GUARANTEE: the fitted estimator's epsilon_ is inf "
                      f"(privacy_guaranteed_ = False), so no lower bound can exceed it and "
                      f"the audit checks nothing. Why: {why}")
        return 4
    if claimed is not None and res.epsilon_lower_bound > float(claimed):
        progress.line("VIOLATION: the lower bound exceeds the claimed epsilon")
        return 3
    return 0


def _run_audit(args, cls, kwargs, template, delta, progress, is_classifier):
    progress.step("importing the audit and the estimator's kernels ...")
    from .audit import audit_estimator
    from .audit._blackbox import _released_model

    X0, y0, X1, y1 = canary_pair(args.n_samples, 2, float(kwargs["data_norm"]),
                                 is_classifier(template), args.seed)
    counter = progress.counter(2 * args.fits, "fits")

    def released_model(estimator):   # the audit's default statistic, counting the fits
        counter.tick()
        return _released_model(estimator)

    def make_estimator(seed):
        return cls(**kwargs, random_state=seed)

    result = audit_estimator(make_estimator, X0, y0, X1, y1, n_fits=args.fits, delta=delta,
                             statistic=released_model, confidence=args.confidence,
                             random_state=args.seed)
    return result


# -- errors ---------------------------------------------------------------------------------

def _user_error(exc):
    """The one-line message of an error a user can act on, or None for a bug (which keeps
    its traceback)."""
    ledger = sys.modules.get("skdp.accounting._ledger")
    if ledger is not None and isinstance(exc, ledger.LedgerError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename if exc.filename else exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    if isinstance(exc, (ValueError, TypeError, OSError, ImportError, AttributeError,
                        LookupError)):
        text = str(exc)
        if isinstance(exc, SpecError) or not text:
            return text or type(exc).__name__
        return text if isinstance(exc, ValueError) else f"{type(exc).__name__}: {text}"
    return None


def _ledger_summary(path, out):
    """Check PATH here (file, readable, an SQLite database) so that a wrong path is named
    as such, then print :meth:`~skdp.accounting.PrivacyLedger.summary`."""
    store = "a privacy ledger's store is the file given as PrivacyLedger(..., path=PATH)"
    if not os.path.exists(path):
        raise ValueError(f"no such file: {path} ({store})")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory, not a privacy ledger's store ({store})")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head and head != b"SQLite format 3\x00":
        raise ValueError(f"{path} is not a privacy ledger's store: it is not an SQLite "
                         f"database ({store})")
    from .accounting import PrivacyLedger

    with PrivacyLedger.open(path) as ledger:
        print(ledger.summary(), file=out, flush=True)


def main(argv=None, out=None):
    """Run the command line ``argv`` (default ``sys.argv[1:]``), writing results to ``out``
    (default stdout) and errors to stderr; returns the exit status."""
    out = sys.stdout if out is None else out
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(out)
        return 0
    try:
        if args.command == "demo":
            from ._demo import run_demo

            run_demo(out=out, quick=args.quick, plot=args.plot)
            return 0
        if args.command == "ledger":
            _ledger_summary(args.path, out)
            return 0
        if args.command == "audit":
            return _audit(args, out)
        if args.command == "compile":
            from ._compile import run_compile

            return run_compile(args.groups or None, quiet=args.quiet, float32=args.float32,
                               out=out)
    except KeyboardInterrupt:
        print(f"\nskdp {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        message = _user_error(exc)
        if message is None:
            raise
        print(f"skdp {args.command}: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
