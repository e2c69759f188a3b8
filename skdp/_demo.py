"""``python -m skdp demo``: every estimator on embedded real data, private vs non-private.

Data: the Adult census-income and Bike-sharing sets shipped with the package, preprocessed
with public constants only (:func:`skdp.datasets.load_demo_adult`,
:func:`skdp.datasets.load_demo_bike`), so ``data_norm`` (the public bound on the feature
rows) makes each private fit (epsilon, delta)-DP end to end.  The train/test split is a
fixed random split (public).  Every estimator runs at its **defaults** (``solver="auto"``,
``alpha="auto"``): only ``epsilon``, ``data_norm`` and the residual scale of the robust
losses (``huber_threshold``, ``loss_scale``: a property of the target's units, fixed a
priori) are set.  The chosen solver is printed.  The non-private scikit-learn rows use the
same features.

The raw-table case fits :func:`~skdp.make_private_pipeline` -- the headline feature -- on
the raw Adult table (:func:`skdp.datasets.load_adult` with ``as_frame=True``: numbers,
strings, missing values; shipped with the package, so no network): spline knots, category
lists and the model are all learnt privately within the one budget, and the pipeline's
``epsilon_`` composes them (a little under ``eps``: its steps' events compose with slack).
Its reference is the same shape of model in scikit-learn, with knots and categories read
from the rows.

The robust-regression case (:class:`~skdp.DPNonconvexRegressor`, Welsch loss) fits the bike
data after replacing 10 % of the *training* targets by gross outliers (a fixed seeded
corruption, public); the test split is clean.  The title and the table's header come at
once, a progress line announces every step before it starts (loading a data set, each
fit), and each row is printed as soon as its fit ends.
"""

import sys
import time
import warnings

from ._progress import Progress

EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-6

#: (data, metric, private estimator, non-private scikit-learn reference): the cases in the
#: order they run (their estimators are built by :func:`_cases`).
CASES = (
    ("adult", "accuracy", "DPLogisticRegression", "LogisticRegression"),
    ("raw adult", "accuracy", "make_private_pipeline", "Pipeline"),
    ("bike", "R^2", "DPHuberRegressor", "HuberRegressor"),
    ("bike+outliers", "R^2", "DPNonconvexRegressor", "HuberRegressor"),
)


def _timed_fit(model, X, y):
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def _gross_outliers(y, fraction=0.1, seed=0):
    """Replace a seeded random ``fraction`` of the targets by values in [3, 6] (public)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    bad = rng.random(len(y)) < fraction
    y = np.array(y, dtype=float)
    y[bad] = rng.uniform(3.0, 6.0, bad.sum())
    return y


def _raw_adult():
    """The raw Adult table (shipped with the package) as a Bunch with a public schema."""
    from . import datasets
    from .datasets._uci import _ADULT_LEVELS

    bunch = datasets.load_adult(as_frame=True)
    # the documented schema (adult.names), public -- not read from the frame's dtypes
    bunch.categorical = [c for c in bunch.data.columns if c in _ADULT_LEVELS]
    bunch.numeric = [c for c in bunch.data.columns if c not in _ADULT_LEVELS]
    bunch.row_norm_bound = None  # the pipeline takes its basis' public bound
    return bunch


def _reference_pipeline():
    """Non-private scikit-learn on the raw table: the same shape of model as the private
    pipeline, with spline knots and categories read from the rows."""
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, SplineTransformer

    return make_pipeline(
        make_column_transformer(
            (SplineTransformer(n_knots=16, knots="quantile"),
             make_column_selector(dtype_include="number")),
            (OneHotEncoder(handle_unknown="ignore"),
             make_column_selector(dtype_exclude="number"))),
        LogisticRegression(max_iter=1000))


def _cases():
    """``(data name, loader, metric, make_dp(eps, norm, bunch), make_sklearn()[, corrupt])``
    per case of :data:`CASES`; imports scikit-learn and skdp's estimators (the loaders run
    later, when their case starts)."""
    from sklearn.linear_model import HuberRegressor, LogisticRegression

    from . import datasets
    from ._pipeline import make_private_pipeline
    from .linear_model import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor

    return [
        (
            "adult",
            datasets.load_demo_adult,
            "accuracy",
            lambda eps, norm, bunch: DPLogisticRegression(
                epsilon=eps, delta=DELTA, data_norm=norm, classes=[0, 1],
                random_state=0),
            lambda: LogisticRegression(max_iter=1000),
        ),
        (
            "raw adult",
            _raw_adult,
            "accuracy",
            lambda eps, norm, bunch: make_private_pipeline(
                DPLogisticRegression(classes=[0, 1]), epsilon=eps, delta=DELTA,
                numeric=bunch.numeric, categorical=bunch.categorical, random_state=0),
            _reference_pipeline,
        ),
        (
            "bike",
            datasets.load_demo_bike,
            "R^2",
            lambda eps, norm, bunch: DPHuberRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, huber_threshold=0.1, random_state=0),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
        ),
        (
            "bike+outliers",
            datasets.load_demo_bike,
            "R^2",
            lambda eps, norm, bunch: DPNonconvexRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, loss="welsch", loss_scale=0.3,
                random_state=0),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
            _gross_outliers,
        ),
    ]


HEADER = (f"{'estimator':<21} {'data':<13} {'metric':<8} {'eps':>5} {'DP':>7} {'sklearn':>7} "
          f"{'solver_':<22} {'fit s':>6}")


def _line(r):
    flag = "" if r["guaranteed"] and r["spent"] <= r["eps"] * (1 + 1e-9) else " *"
    return (f"{r['estimator']:<21} {r['data']:<13} {r['metric']:<8} {r['eps']:>5g} "
            f"{r['score']:>7.3f} {r['sklearn']:>7.3f} {r['solver']:<22} {r['time']:>6.2f}{flag}")


def _plot_problem(plot):
    """Why ``--plot FILE`` cannot be written, checked before the run (None if it can)."""
    import os

    directory = os.path.dirname(os.path.abspath(plot))
    if not os.path.isdir(directory):
        return f"--plot: the directory {directory} does not exist"
    if not os.access(directory, os.W_OK):
        return f"--plot: the directory {directory} is not writable"
    if os.path.isdir(plot):
        return f"--plot: {plot} is a directory; give a file name such as curve.png"
    if not _matplotlib_available():
        return ("--plot: matplotlib is not installed (pip install matplotlib), so no plot "
                "can be saved; install it or run without --plot")
    return None


def _matplotlib_available():
    """Whether ``import matplotlib`` can find it (without importing it: the demo's header
    comes before any heavy import)."""
    import importlib.util

    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def run_demo(out=None, quick=False, plot=None):
    """Fit every estimator at several epsilons (one with ``quick``) and print a
    privacy/utility table, one line per fit as soon as it ends; ``plot``: a file to save the
    privacy-utility curves to (needs matplotlib).

    The title and the table's header are printed before anything is imported or loaded,
    and a progress line (on a terminal, a status line erased by the next row) announces
    every step before it starts: loading a data set, the non-private scikit-learn
    reference fit, each private fit.
    """
    out = sys.stdout if out is None else out
    epsilons = (1.0,) if quick else EPSILONS
    if plot:
        problem = _plot_problem(plot)
        if problem:
            raise ValueError(problem)
    progress = Progress(out)
    progress.line(f"skdp demo: {len(CASES)} models x epsilon in {list(epsilons)}, "
                  f"delta = {DELTA:g}; every fit at its defaults.")
    progress.line(HEADER)
    progress.line("-" * len(HEADER))
    try:
        rows = _run_cases(progress, epsilons)
    finally:
        progress.close()
    progress.line(
        f"\nScores on a held-out 20 % split.  Preprocessing uses public constants only, or is"
        f"\nlearnt privately (raw adult: make_private_pipeline).  Every fit is (eps, {DELTA:g})-"
        "DP\nunder replace-one neighbours (* marks a fit whose epsilon_ exceeds eps or that "
        "has\nno guarantee).  solver_ and alpha come from skdp's public 'auto' rules; "
        "sklearn is a\nnon-private reference.  The first fit of each model includes numba's "
        "kernel load."
    )
    if plot:
        _plot(rows, plot, out)
    return rows


def _label(model):
    """The name a row shows: the class, or ``make_private_pipeline`` for its pipelines."""
    return "make_private_pipeline" if hasattr(model, "steps") else type(model).__name__


def _run_cases(progress, epsilons):
    progress.step("importing scikit-learn and skdp's estimators ...")
    from sklearn.model_selection import train_test_split

    rows = []
    loaded = {}
    n_fits = len(CASES) * (1 + len(epsilons))     # a reference and the private fits per case
    fit = iter(range(1, n_fits + 1))
    for name, load, metric, make_dp, make_sk, *corrupt in _cases():
        if load not in loaded:
            progress.step(f"loading the embedded {name} data ...")
            loaded[load] = load()
        bunch = loaded[load]
        X_tr, X_te, y_tr, y_te = train_test_split(
            bunch.data, bunch.target, test_size=0.2, random_state=0
        )
        if corrupt:
            y_tr = corrupt[0](y_tr)
        norm = bunch.row_norm_bound  # public bound on the feature rows
        sk = make_sk()
        progress.step(f"fit {next(fit)}/{n_fits}: {type(sk).__name__} on {name} "
                      "(non-private reference) ...")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk.fit(X_tr, y_tr)
        sk_score = sk.score(X_te, y_te)
        for eps in epsilons:
            dp = make_dp(eps, norm, bunch)
            label = _label(dp)
            progress.step(f"fit {next(fit)}/{n_fits}: {label} on {name}, eps = {eps:g} ...")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dp_time = _timed_fit(dp, X_tr, y_tr)
            except ValueError as exc:  # explained in one line, never a silent nan
                progress.line(f"{label:<21} {name:<13} eps={eps:g}: refused: "
                              f"{str(exc).split(';')[0]}")
                continue
            model = dp[-1] if hasattr(dp, "steps") else dp     # a pipeline's estimator
            row = dict(estimator=label, data=name, metric=metric, eps=eps,
                       spent=dp.epsilon_, score=dp.score(X_te, y_te), sklearn=sk_score,
                       solver=model.solver_, time=dp_time, guaranteed=dp.privacy_guaranteed_)
            rows.append(row)
            progress.line(_line(row))
    return rows


def _plot(rows, path, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:   # checked before the run; kept for a broken installation
        raise ValueError(f"--plot: matplotlib cannot be imported ({exc}); no plot "
                         "saved") from exc
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in dict.fromkeys((r["estimator"], r["data"]) for r in rows):
        rs = [r for r in rows if (r["estimator"], r["data"]) == key]
        line, = ax.plot([r["eps"] for r in rs], [r["score"] for r in rs], "o-",
                        label=f"{key[0]} / {key[1]}")
        ax.axhline(rs[0]["sklearn"], color=line.get_color(), ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test score (accuracy or R^2); dotted: non-private")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    print(f"privacy-utility curve saved to {path}", file=out, flush=True)
