"""Calibrate the one constant of the ``alpha="auto"`` rule (``MARGIN``) on synthetic data.

The rule (``skdp/linear_model/_auto.py``) sets ``alpha = sigma sqrt(p)/(n W)`` with
``W = MARGIN/R``.  This script fits the default solver (objective perturbation) on
synthetic problems that look like tabular data -- anisotropic features with a decaying
spectrum and a non-zero mean, rows of norm at most 1, class imbalance, a true model whose
margins reach a few units -- over a grid of ``n``, ``p``, ``epsilon`` and seeds, for
``MARGIN`` in a grid, and reports each value's mean shortfall to the best value of every
cell.  **No benchmark dataset is used**: the constant must not be tuned on the data it is
judged on (``bench_defaults.py``).

Run: ``python benchmarks/calibrate_auto.py [--quick]``; writes
``benchmarks/results/calibrate_auto.md``.
"""

import argparse
import itertools
import json
import pathlib
import time
import warnings

import numpy as np

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp._solvers._objective_perturbation import budget_mu
from skdp.linear_model import _auto

RESULTS = pathlib.Path(__file__).parent / "results"
#: 99 % quantile of the row norms over the public bound ``data_norm = 1``.  Public bounds
#: are usually loose: the bound must hold for every row that could exist, so it comes from
#: documented ranges -- min-max scaling divided by sqrt(p), the usual recipe, gives rows of
#: norm 0.3-0.6 under a bound of 1 -- not from the data's largest row.  1 stands for
#: row-normalised data.
LOOSENESS = (1.0, 0.5, 0.3)


#: synthetic design families: ``"decaying"`` (dense features with a decaying spectrum) and
#: ``"onehot"`` (categorical variables one-hot encoded next to a few numeric columns: rows of
#: nearly constant norm, sparse, the usual shape of tabular data after encoding)
DESIGNS = ("decaying", "onehot")


def tabular_design(n, p, rng, looseness=1.0, design="decaying"):
    """Rows of norm <= 1 whose 99 % norm quantile is ``looseness``.

    ``"decaying"``: dense rows with a decaying spectrum (scales ``1/j``) and a non-zero
    mean.  ``"onehot"``: ``p // 5`` numeric columns (clipped normals) and categorical
    variables of 6 levels (the last takes the remaining columns), each level's frequency
    drawn from a Dirichlet(0.7) -- every row has one 1 per variable."""
    if design == "onehot":
        numeric = max(1, p // 5)
        cols = [np.clip(0.5 * rng.standard_normal((n, numeric)), -1.0, 1.0)]
        left = p - numeric
        while left > 0:
            levels = min(6, left) if left - 6 != 1 else 7
            freq = rng.dirichlet(np.full(levels, 0.7))
            cols.append(np.eye(levels)[rng.choice(levels, size=n, p=freq)])
            left -= levels
        X = np.hstack(cols)
    else:
        scales = 1.0 / np.arange(1, p + 1)
        mean = rng.uniform(-0.5, 0.5, p) * scales
        X = mean + rng.standard_normal((n, p)) * scales
    X *= looseness / np.quantile(np.linalg.norm(X, axis=1), 0.99)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.maximum(norms, 1.0)


def logistic_problem(n, p, rng, looseness=1.0, design="decaying"):
    X = tabular_design(2 * n, p, rng, looseness, design)
    w = rng.standard_normal(p)
    z = X @ w
    w *= 2.5 / z.std()
    b = -np.quantile(X @ w, 0.7)          # about 30 % positives
    y = (rng.random(2 * n) < 1.0 / (1.0 + np.exp(-(X @ w + b)))).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


#: the regression kinds: target noise std next to a signal of std 1 (test R^2 about 0.8
#: and 0.3: strong and weak signal, both common in tabular regression)
HUBER_NOISE = {"huber": 0.5, "huber_weak": 1.5}
KINDS = ("logistic",) + tuple(HUBER_NOISE)
FAMILY = {"logistic": "classification", "huber": "regression", "huber_weak": "regression"}


def huber_problem(n, p, rng, looseness=1.0, design="decaying", noise=0.5):
    X = tabular_design(2 * n, p, rng, looseness, design)
    w = rng.standard_normal(p)
    w *= 1.0 / (X @ w).std()
    y = X @ w + 0.3 + noise * rng.standard_normal(2 * n)
    ytr = y[:n].copy()
    out = rng.random(n) < 0.05            # gross outliers in the training targets only
    ytr[out] += rng.choice([-1, 1], out.sum()) * 10.0
    return X[:n], ytr, X[n:], y[n:]


def robust_problem(n, p, rng):
    """Tabular design, targets with unit-scale noise, 10 % gross outliers in the training
    targets (values 15-30 times the noise scale); clean test targets."""
    X = tabular_design(2 * n, p, rng)
    w = rng.standard_normal(p)
    w *= 1.5 / (X @ w).std()
    y = X @ w + 1.0 + 0.5 * rng.standard_normal(2 * n)
    ytr = y[:n].copy()
    bad = rng.random(n) < 0.1
    ytr[bad] = rng.uniform(15.0, 30.0, bad.sum())
    return X[:n], ytr, X[n:], y[n:]


#: (WARM_SHARE, REFINE_STEPS) candidates of the warm_gd solver
WARM_GRID = ((0.7, 10), (0.85, 5), (0.95, 3), (0.95, 1))


def run_warm(quick):
    """Choose warm_gd's budget share and refinement steps on synthetic robust problems;
    the last candidate column refines whatever the drift (``NOISE_DRIFT_LIMIT = inf``), and
    the default plan's noise ratio ``nu`` (``_warm_gd.refinement_noise_ratio``; until issue
    35's second round the drift over the refinement radius) is reported, to place the skip
    rule's limit."""
    from skdp import DPNonconvexRegressor
    from skdp._losses import WelschLoss
    from skdp._solvers import _warm_gd

    ns = (2000,) if quick else (1000, 5000, 20000)
    epsilons = (0.5, 2.0) if quick else (0.5, 1.0, 2.0, 10.0)
    seeds = range(2 if quick else 3)
    saved = (_warm_gd.WARM_SHARE, _warm_gd.REFINE_STEPS, _warm_gd.NOISE_DRIFT_LIMIT)
    grid = WARM_GRID + (("always", None),)
    rows = []
    try:
        for n, eps in itertools.product(ns, epsilons):
            res = np.zeros((len(seeds), len(grid) + 1))
            for s in seeds:
                Xtr, ytr, Xte, yte = robust_problem(n, 20, np.random.default_rng(77 + s + n))
                h = DPHuberRegressor(epsilon=eps, data_norm=1.0, random_state=s).fit(Xtr, ytr)
                res[s, -1] = score("huber", h, Xte, yte)
                for j, (f, T) in enumerate(grid):
                    if f == "always":
                        _warm_gd.WARM_SHARE, _warm_gd.REFINE_STEPS = saved[:2]
                        _warm_gd.NOISE_DRIFT_LIMIT = float("inf")
                    else:
                        _warm_gd.WARM_SHARE, _warm_gd.REFINE_STEPS = f, T
                        _warm_gd.NOISE_DRIFT_LIMIT = saved[2]
                    est = DPNonconvexRegressor(epsilon=eps, data_norm=1.0, random_state=s)
                    res[s, j] = score("huber", est.fit(Xtr, ytr), Xte, yte)
            _warm_gd.WARM_SHARE, _warm_gd.REFINE_STEPS, _warm_gd.NOISE_DRIFT_LIMIT = saved
            plan = _warm_gd.warm_gd_plan(n, 21, WelschLoss(1.0), epsilon=eps, delta=1e-6,
                                         alpha=0.0, row_bound=2.0 ** 0.5, loss_scale=1.0,
                                         warm_share=_warm_gd.WARM_SHARE)
            drift = _warm_gd.refinement_noise_ratio(plan, 21)   # the skip rule's nu
            rows.append((n, eps, drift, res.mean(axis=0)))
            print("warm", n, eps, round(drift, 4), np.round(res.mean(axis=0), 3), flush=True)
    finally:
        _warm_gd.WARM_SHARE, _warm_gd.REFINE_STEPS, _warm_gd.NOISE_DRIFT_LIMIT = saved
    return rows


def report_warm(rows):
    head = " | ".join(f"f={f:g}, T={T}" for f, T in WARM_GRID)
    lines = ["# warm_gd constants on synthetic data", "",
             "## warm_gd: budget share, refinement steps, skip rule", "",
             "Synthetic robust regression (p = 20, 10 % gross outliers in the training "
             "targets, clean test); test R^2, mean over seeds; `always`: the default share "
             "and steps with the skip rule off; `drift`: the default plan's noise ratio nu "
             "(``_warm_gd.refinement_noise_ratio``; the skip rule refines at nu <= "
             "NOISE_DRIFT_LIMIT); "
             "last column: DPHuberRegressor's default on the same data.", "",
             f"| n | eps | drift | {head} | always | DPHuberRegressor |",
             "|---|---|---|" + "---|" * (len(WARM_GRID) + 2)]
    for n, eps, drift, mean in rows:
        lines.append(f"| {n} | {eps:g} | {drift:.4f} | "
                     + " | ".join(f"{v:.3f}" for v in mean) + " |")
    mean = np.mean([m for _, _, _, m in rows], axis=0)
    lines.append("")
    lines.append("Mean over cells: " + ", ".join(
        f"f={f:g}, T={T}: {v:.4f}" for (f, T), v in zip(WARM_GRID, mean))
        + f"; always: {mean[-2]:.4f}; DPHuberRegressor: {mean[-1]:.4f}.")
    return "\n".join(lines) + "\n"


#: (n, p, epsilon) cells of the skip-rule experiment: noise drift over the refinement radius
#: 0.02-0.2 (the rule's ratio until issue 35's second round; nu = 0.09-0.9)
WARM_LIMIT_CELLS = tuple((5000, 20, e) for e in (0.6, 0.8, 1.0, 1.25, 1.5, 2.0)) + \
    tuple((20000, 20, e) for e in (0.2, 0.3, 0.4, 0.5)) + \
    tuple((12000, 60, e) for e in (0.5, 0.75, 1.0, 1.5, 2.0))
WARM_LIMIT_SEEDS = 20


def run_warm_limit():
    """Where refining stops paying: per cell, warm_gd with the refinement forced on
    (``NOISE_DRIFT_LIMIT = inf``) against the warm start alone at the whole budget
    (``NOISE_DRIFT_LIMIT = 0``), paired over ``WARM_LIMIT_SEEDS`` seeds (same data and
    seed for both), with the refined plan's noise ratio ``nu`` (the skip rule's)."""
    from skdp import DPNonconvexRegressor
    from skdp._losses import WelschLoss
    from skdp._solvers import _warm_gd

    saved = _warm_gd.NOISE_DRIFT_LIMIT
    rows = []
    try:
        for n, p, eps in WARM_LIMIT_CELLS:
            diffs, refined, skipped = [], [], []
            for s in range(WARM_LIMIT_SEEDS):
                Xtr, ytr, Xte, yte = robust_problem(n, p, np.random.default_rng(500 + s + n))
                out = []
                for limit in (float("inf"), 0.0):
                    _warm_gd.NOISE_DRIFT_LIMIT = limit
                    est = DPNonconvexRegressor(epsilon=eps, data_norm=1.0, random_state=s)
                    out.append(score("huber", est.fit(Xtr, ytr), Xte, yte))
                refined.append(out[0])
                skipped.append(out[1])
                diffs.append(out[0] - out[1])
            plan = _warm_gd.warm_gd_plan(n, p + 1, WelschLoss(1.0), epsilon=eps, delta=1e-6,
                                         alpha=0.0, row_bound=2.0 ** 0.5, loss_scale=1.0,
                                         warm_share=_warm_gd.WARM_SHARE)
            drift = _warm_gd.refinement_noise_ratio(plan, p + 1)   # the skip rule's nu
            d = np.array(diffs)
            rows.append((n, p, eps, drift, float(np.mean(refined)), float(np.mean(skipped)),
                         float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))))
            print("limit", rows[-1], flush=True)
    finally:
        _warm_gd.NOISE_DRIFT_LIMIT = saved
    return sorted(rows, key=lambda r: r[3])


def report_warm_limit(rows):
    lines = ["# warm_gd's skip rule: where the refinement stops paying", "",
             "Synthetic robust regression (``robust_problem``: 10 % gross outliers in the "
             "training targets, clean test), Welsch loss, delta = 1e-6, rows of norm <= 1.  "
             f"Per cell, {WARM_LIMIT_SEEDS} paired seeds: warm_gd with the refinement forced "
             "on, and the warm start alone at the whole budget (what the skip rule "
             "releases).  Sorted by the refined plan's noise ratio nu "
             "(``_warm_gd.refinement_noise_ratio``), the quantity the rule thresholds.", "",
             "| n | p | eps | drift | refined R^2 | skipped R^2 | refined - skipped | "
             "standard error |", "|---|---|---|---|---|---|---|---|"]
    for n, p, eps, drift, r, k, d, se in rows:
        lines.append(f"| {n} | {p} | {eps:g} | {drift:.4f} | {r:.4f} | {k:.4f} | {d:+.4f} | "
                     f"{se:.4f} |")
    return "\n".join(lines) + "\n"


def score(kind, est, X, y):
    if kind == "logistic":
        return est.score(X, y)
    pred = est.predict(X)
    return 1.0 - np.mean((y - pred) ** 2) / np.var(y)


#: grid of margins ``M`` evaluated in every cell (the rule's ``W = M/R``)
MARGINS = (4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)


def scores_at_margins(make, margins, loss, R, P, n, mu, data, scorer):
    """Test scores of ``make(alpha)`` fitted at ``alpha = sigma sqrt(P)/(n M/R)`` (the flat
    comparator, ``gamma = 0``) for every ``M`` in ``margins``; ``data`` is
    ``(Xtr, ytr, Xte, yte)``."""
    from skdp._solvers._objective_perturbation import noise_balanced_alpha

    Xtr, ytr, Xte, yte = data
    out = np.zeros(len(margins))
    for j, margin in enumerate(margins):
        alpha = noise_balanced_alpha(float(loss.lipschitz(R)), P, n, mu, R, margin,
                                     size_exponent=0.0)
        est = make(alpha)
        with warnings.catch_warnings():
            # a grid point's alpha may be below the solver's privacy floor
            warnings.simplefilter("ignore", UserWarning)
            est.fit(Xtr, ytr)
        out[j] = scorer(est, Xte, yte)
    return out


def run_cell(cell):
    """Mean test score of objective perturbation at ``alpha = sigma sqrt(p)/(n M/R)`` for
    every ``M`` in ``MARGINS`` (one synthetic cell, over ``seeds``)."""
    kind, design, loose, n, p, eps, seeds = cell
    scores = np.zeros((len(seeds), len(MARGINS)))
    for i, s in enumerate(seeds):
        rng = np.random.default_rng(1000 * s + n + p)
        data = make_problem(kind, n, p, rng, loose, design)
        cls = DPLogisticRegression if kind == "logistic" else DPHuberRegressor
        public = {"classes": [0, 1]} if kind == "logistic" else {}
        base = cls(epsilon=eps, data_norm=1.0, **public)
        loss, _ = base._planning_loss()
        scores[i] = scores_at_margins(
            lambda alpha: cls(epsilon=eps, data_norm=1.0, alpha=alpha, random_state=s,
                              **public),
            MARGINS, loss, base._public_row_bound(), p + 1, n, budget_mu(eps, 1e-6, p + 1),
            data, lambda est, X, y: score(kind, est, X, y))
    return (kind, design, loose, n, p, eps, scores.mean(axis=0))


def run(quick, workers=2, kinds=KINDS):
    ns = (500, 5000) if quick else (500, 2000, 10_000, 30_000)
    ps = (10,) if quick else (10, 40, 100)
    epsilons = (0.5, 2.0) if quick else (0.5, 1.0, 2.0, 10.0)
    seeds = tuple(range(2 if quick else 3))
    cells = [c + (seeds,) for c in itertools.product(
        kinds, DESIGNS, LOOSENESS, ns, ps, epsilons)]
    rows = []
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(workers) as pool:
        for row in pool.imap(run_cell, cells):
            rows.append(row)
            print(*row[:6], np.round(row[6], 3), flush=True)
    return rows


#: grids of the joint fit of (M_0, gamma)
GAMMAS = tuple(round(0.05 * k, 2) for k in range(15))
M0_GRID = tuple(2.0 ** (2 + k / 8) for k in range(49))


#: dpsgd's alpha in the solver-switch calibration, as multiples of the alpha="auto" rule
SWITCH_ALPHA_FACTORS = (1.0, 0.1, 0.01)


def make_problem(kind, n, p, rng, loose, design):
    if kind == "logistic":
        return logistic_problem(n, p, rng, loose, design)
    return huber_problem(n, p, rng, loose, design, HUBER_NOISE[kind])


def run_switch_cell(cell):
    """Scores of the default (objective perturbation at the alpha rule) and of dpsgd with
    its practical schedule at ``alpha = k * rule`` for ``k`` in ``SWITCH_ALPHA_FACTORS``."""
    kind, design, loose, n, p, eps, seeds = cell
    scores = np.zeros((len(seeds), 1 + len(SWITCH_ALPHA_FACTORS)))
    for i, s in enumerate(seeds):
        rng = np.random.default_rng(1000 * s + n + p)
        Xtr, ytr, Xte, yte = make_problem(kind, n, p, rng, loose, design)
        cls = DPLogisticRegression if kind == "logistic" else DPHuberRegressor
        public = {"classes": [0, 1]} if kind == "logistic" else {}
        base = cls(epsilon=eps, data_norm=1.0, **public)
        loss, _ = base._planning_loss()
        R = base._public_row_bound()
        rule = _auto.auto_alpha("dpsgd", loss, n=n, p=p + 1, epsilon=eps, delta=1e-6,
                                row_bound=R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            est = cls(epsilon=eps, data_norm=1.0, solver="objective_perturbation",
                      random_state=s, **public).fit(Xtr, ytr)
            scores[i, 0] = score(kind, est, Xte, yte)
            for j, k in enumerate(SWITCH_ALPHA_FACTORS):
                est = cls(epsilon=eps, data_norm=1.0, solver="dpsgd", alpha=k * rule,
                          random_state=s, **public).fit(Xtr, ytr)
                scores[i, 1 + j] = score(kind, est, Xte, yte)
    return (kind, design, loose, n, p, eps, scores.mean(axis=0))


def run_switch(quick, workers=2):
    ns = (500, 5000) if quick else (500, 2000, 10_000, 30_000)
    ps = (10,) if quick else (10, 40, 100)
    epsilons = (0.5, 2.0) if quick else (0.5, 1.0, 2.0, 10.0)
    seeds = tuple(range(2 if quick else 3))
    cells = [c + (seeds,) for c in itertools.product(
        KINDS, DESIGNS, LOOSENESS, ns, ps, epsilons)]
    rows = []
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(workers) as pool:
        for row in pool.imap(run_switch_cell, cells):
            rows.append(row)
            print("switch", *row[:6], np.round(row[6], 3), flush=True)
    return rows


#: classes of the multinomial calibration cells
MULTI_CLASSES = (3, 5, 10)
#: margins ``M`` of the multinomial cells: dpsgd's best ``alpha`` there is far below the
#: binary constant's (``--multinomial``), so the grid reaches higher
MULTI_MARGINS = (16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0)


#: logit standard deviation of the multinomial problems: ``weak`` as the binary problem's
#: margin (Bayes accuracy 0.52-0.64 at K = 10, 0.78-0.85 at K = 3), ``strong`` for well
#: separated classes (0.83-0.87 and 0.93)
MULTI_SIGNALS = {"weak": 2.5, "strong": 8.0}


def multinomial_problem(n, p, K, rng, looseness=1.0, design="decaying", signal=2.5):
    """``K`` classes on a tabular design: logits ``X W + b`` with ``W`` Gaussian, scaled so
    the logits have standard deviation ``signal``, class priors from
    ``b = log Dirichlet(2)`` (imbalanced), labels drawn from the softmax."""
    X = tabular_design(2 * n, p, rng, looseness, design)
    W = rng.standard_normal((p, K))
    W *= signal / (X @ W).std()
    Z = X @ W + np.log(rng.dirichlet(np.full(K, 2.0)))
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random((2 * n, 1))).argmax(axis=1)
    return X[:n], y[:n], X[n:], y[n:]


def run_multinomial_cell(cell):
    """Mean test accuracy of the multinomial default solver (dpsgd, practical schedule) at
    ``alpha = sigma sqrt(P)/(n M/R)`` (``P = (p + 1) K`` coefficients, flat comparator) for
    every ``M`` in ``MULTI_MARGINS`` (one synthetic cell, over ``seeds``)."""
    label, design, loose, n, p, eps, seeds = cell
    K, signal = _multi_label(label)
    scores = np.zeros((len(seeds), len(MULTI_MARGINS)))
    classes = list(range(K))
    for i, s in enumerate(seeds):
        rng = np.random.default_rng(1000 * s + n + p + K)
        data = multinomial_problem(n, p, K, rng, loose, design, MULTI_SIGNALS[signal])
        base = DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=classes)
        loss, k = base._planning_loss()
        P = (p + 1) * k
        scores[i] = scores_at_margins(
            lambda alpha: DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=classes,
                                               alpha=alpha, random_state=s),
            MULTI_MARGINS, loss, base._public_row_bound(), P, n, budget_mu(eps, 1e-6, P),
            data, lambda est, X, y: est.score(X, y))
    return (label, design, loose, n, p, eps, scores.mean(axis=0))


def _multi_label(label):
    """``"K signal"`` -> ``(K, signal)`` (a bare ``K``: the weak signal)."""
    parts = str(label).split()
    return int(parts[0]), (parts[1] if len(parts) > 1 else "weak")


def run_multinomial(quick, signals, workers=2):
    ns = (500, 5000) if quick else (500, 2000, 10_000, 30_000)
    ps = (10,) if quick else (10, 40)
    epsilons = (0.5, 2.0) if quick else (0.5, 1.0, 2.0, 10.0)
    seeds = tuple(range(2))
    labels = [f"{K} {signal}" for signal in signals for K in MULTI_CLASSES]
    cells = [c + (seeds,) for c in itertools.product(
        labels, DESIGNS, (1.0, 0.3), ns, ps, epsilons)]
    rows = []
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(workers) as pool:
        for row in pool.imap(run_multinomial_cell, cells):
            rows.append(row)
            print("multinomial", *row[:6], np.round(row[6], 3), flush=True)
    return rows


def multinomial_shortfalls(rows, margin, gamma):
    """Shortfall, in every multinomial cell, of the rule ``M = margin (t/t_0)^gamma``
    (``t = n mu/sqrt(P)``, ``P = (p + 1) K``) to the cell's best margin (accuracy
    interpolated linearly in ``log2 M``, clipped to the grid)."""
    from skdp._solvers._objective_perturbation import SIZE_MAX

    cells = []
    for label, _design, _loose, n, p, eps, mean in rows:
        P = (p + 1) * _multi_label(label)[0]
        cells.append((min(n * budget_mu(eps, 1e-6, P) / np.sqrt(P), SIZE_MAX), mean))
    return shortfalls(cells, MULTI_MARGINS, margin, gamma)


def report_multinomial(rows, elapsed):
    """The multinomial cells and the fit of dpsgd's multinomial margin ``M_0``."""
    from skdp._solvers._objective_perturbation import MARGIN, SIZE_EXPONENT

    committed = _auto.DPSGD_MULTINOMIAL_MARGIN
    lines = ["# Calibration of dpsgd's alpha rule for the multinomial loss (synthetic data)",
             "",
             f"{elapsed:.0f} s.  dpsgd (the multinomial default, practical schedule), delta = "
             "1e-6, data_norm = 1, classes given.  Each cell: mean test accuracy over seeds at "
             "`alpha = sigma sqrt(P)/(n M/R)` (`P = (p + 1) K` coefficients) for each margin "
             "M; then the shortfall of the rule `M = M_0 (t/t_0)^gamma` "
             "(`t = n mu/sqrt(P)`, `t_0 = 1000`) to the best M of each cell.  No benchmark "
             "dataset is used.", "",
             "| K, signal | design | norms (99 % q.) | n | p | eps | "
             + " | ".join(f"M={m:g}" for m in MULTI_MARGINS) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(MULTI_MARGINS)]
    for label, design, loose, n, p, eps, mean in rows:
        lines.append(f"| {label} | {design} | {loose:g} | {n} | {p} | {eps:g} | "
                     + " | ".join(f"{v:.3f}" for v in mean) + " |")
    grid = tuple(2.0 ** (4 + k / 4) for k in range(49))
    gammas = tuple(round(0.05 * k, 2) for k in range(31))
    fits = [(multinomial_shortfalls(rows, m, g), m, g) for g in gammas for m in grid]
    fits = [(sh.mean(), sh.max(), m, g) for sh, m, g in fits]
    best = min(fits, key=lambda f: f[0])
    at_gamma = min((f for f in fits if abs(f[3] - SIZE_EXPONENT) < 0.026), key=lambda f: f[0])
    old = multinomial_shortfalls(rows, MARGIN["classification"], SIZE_EXPONENT)
    committed_gamma = _auto.DPSGD_MULTINOMIAL_EXPONENT
    new = multinomial_shortfalls(rows, committed, committed_gamma)
    lines += ["", "## Fit", "",
              "Mean / worst shortfall (accuracy) to the best margin of each cell.", "",
              "| rule | (M_0, gamma) | mean | worst |", "|---|---|---|---|",
              f"| best joint fit | ({best[2]:.0f}, {best[3]:.2f}) | {best[0]:.4f} | "
              f"{best[1]:.3f} |",
              f"| best M_0 at the binary rule's gamma | ({at_gamma[2]:.0f}, {at_gamma[3]:.2f}) "
              f"| {at_gamma[0]:.4f} | {at_gamma[1]:.3f} |",
              f"| previous: the binary constant | ({MARGIN['classification']:g}, "
              f"{SIZE_EXPONENT:.2f}) | {old.mean():.4f} | {old.max():.3f} |",
              f"| committed: `DPSGD_MULTINOMIAL_MARGIN`, `_EXPONENT` | ({committed:g}, "
              f"{committed_gamma:.2f}) "
              f"| {new.mean():.4f} | {new.max():.3f} |"]
    lines += ["", "The joint fit keeps improving as gamma grows, toward a step: a large alpha "
              "(shrinkage to the class priors) at small privacy sample sizes, almost none "
              "beyond; its scores outside the margin grid are the grid's edge values "
              "(clipped), which flatters that limit.  The committed rule takes gamma = 1 "
              "and the best M_0 for it: then `alpha = sigma sqrt(P)/(n W)` with "
              "`W ~ t = n mu/sqrt(P)` is `alpha = (2 L R t_0/M_0) P/(n mu)^2`, the L2 "
              "strength proportional to the DP noise energy `P (sigma/n)^2` of the mean "
              "gradient."]
    lines += ["", "By signal, number of classes and epsilon, mean shortfall of the previous "
              "/ the committed rule:", ""]
    for label in dict.fromkeys(r[0] for r in rows):
        parts = []
        for eps in sorted({r[5] for r in rows}):
            sub = [r for r in rows if r[0] == label and r[5] == eps]
            if sub:
                a = multinomial_shortfalls(sub, MARGIN["classification"], SIZE_EXPONENT)
                b = multinomial_shortfalls(sub, committed, committed_gamma)
                parts.append(f"eps {eps:g}: {a.mean():.4f} / {b.mean():.4f}")
        lines.append(f"- K, signal = {label}: " + ", ".join(parts))
    return "\n".join(lines) + "\n"


def load_cells(path):
    """``(rows, elapsed_s)`` of a saved run (``save_cells``)."""
    saved = json.loads(path.read_text())
    return _rows(saved["cells"]), saved.get("elapsed_s", float("nan"))


def save_cells(path, rows, elapsed, **header):
    path.write_text(json.dumps(
        {**header, "elapsed_s": elapsed,
         "cells": [list(r[:6]) + [list(map(float, r[6]))] for r in rows]}, indent=0))


def merge_saved(path, rows, elapsed, replaced):
    """A partial run: its ``rows`` replace the saved cells whose label ``replaced(label)``
    says; the other saved cells are kept and their time added."""
    if not path.exists():
        return rows, elapsed
    saved = json.loads(path.read_text())
    kept = [r for r in _rows(saved["cells"]) if not replaced(r[0])]
    return kept + rows, elapsed + saved.get("elapsed_s", 0.0)


def _rows(cells):
    return [tuple(c[:6]) + (np.array(c[6]),) for c in cells]


def privacy_size(n, p, eps):
    """``t = n mu/sqrt(p)`` of a cell (``p`` coefficients: features + intercept)."""
    return n * budget_mu(eps, 1e-6, p + 1) / np.sqrt(p + 1)


def report_switch(rows, elapsed):
    """Shortfall of the rule "dpsgd (alpha = k * rule) below t*, else objective
    perturbation" to the best of the two solvers in each cell."""
    heads = ", ".join(f"dpsgd k={k:g}" for k in SWITCH_ALPHA_FACTORS)
    lines = ["# Solver switch: objective perturbation or dpsgd, on synthetic data", "",
             f"{elapsed:.0f} s.  Each cell: mean test score over seeds of objective "
             f"perturbation at the alpha rule, then dpsgd (practical schedule) at alpha = k "
             f"x rule ({heads}); `t = n mu/sqrt(p)`.", "",
             "| loss | design | norms | n | p | eps | t | objective_perturbation | "
             + " | ".join(f"dpsgd k={k:g}" for k in SWITCH_ALPHA_FACTORS) + " |",
             "|---|---|---|---|---|---|---|---|" + "---|" * len(SWITCH_ALPHA_FACTORS)]
    for kind, design, loose, n, p, eps, mean in rows:
        lines.append(f"| {kind} | {design} | {loose:g} | {n} | {p} | {eps:g} | "
                     f"{privacy_size(n, p, eps):.0f} | "
                     + " | ".join(f"{v:.3f}" for v in mean) + " |")
    lines += ["", "## Threshold fit", "",
              "Mean / worst shortfall to the better of objective perturbation and the best "
              "dpsgd column of each cell, per loss family, for the rule \"dpsgd with alpha "
              "= k x rule when t < t*, objective perturbation otherwise\" (t* = 0: never "
              "dpsgd).", "",
              "| family | k | t* | mean | worst |", "|---|---|---|---|---|"]
    for family in ("classification", "regression"):
        sub = [r for r in rows if FAMILY[r[0]] == family]
        if not sub:
            continue
        best_all = np.array([max(r[6]) for r in sub])
        ts = np.array([privacy_size(r[3], r[4], r[5]) for r in sub])
        results = []
        for j, k in enumerate(SWITCH_ALPHA_FACTORS):
            for t_star in (0, 50, 100, 150, 200, 300, 500, 1000, 1e9):
                got = np.array([r[6][1 + j] if t < t_star else r[6][0]
                                for r, t in zip(sub, ts)])
                sh = best_all - got
                results.append((sh.mean(), sh.max(), k, t_star))
        results.sort()
        for mean, worst, k, t_star in results[:6]:
            lines.append(f"| {family} | {k:g} | {t_star:g} | {mean:.4f} | {worst:.3f} |")
        never = best_all - np.array([r[6][0] for r in sub])
        lines.append(f"| {family} | - | 0 (never) | {never.mean():.4f} | {never.max():.3f} |")
    lines += ["", "## By the Jacobian share", "",
              "Objective perturbation first pays ``eps_J = log(1 + beta/(n alpha))`` out of its "
              "budget, which dpsgd does not; where that share ``eps_J/eps`` (at the alpha "
              "the rule picks) is large, dpsgd might be expected to win.  Cells grouped by "
              "that share: mean and median of dpsgd (k = 0.01) minus objective "
              "perturbation, the fraction of cells where dpsgd is better, and the worst "
              "difference.  In no group is dpsgd better in most cells (38 % at most), and no "
              "group's mean gain exceeds 0.003 while the losses reach tenths of R^2: the "
              "share does not justify a switch either.", "",
              "| loss | eps_J/eps | cells | mean | median | dpsgd better | worst |",
              "|---|---|---|---|---|---|---|"]
    for kind in dict.fromkeys(r[0] for r in rows):
        sub = [(jacobian_share(kind, r[3], r[4], r[5]), r[6][-1] - r[6][0])
               for r in rows if r[0] == kind]
        for lo, hi in ((0.0, 0.1), (0.1, 0.2), (0.2, 0.3), (0.3, 0.4), (0.4, 1.0)):
            d = np.array([diff for share, diff in sub if lo <= share < hi])
            if d.size:
                lines.append(f"| {kind} | [{lo:g}, {hi:g}) | {d.size} | {d.mean():+.3f} | "
                             f"{np.median(d):+.3f} | {(d > 0).mean():.2f} | {d.min():+.3f} |")
    return "\n".join(lines) + "\n"


def jacobian_share(kind, n, p, eps):
    """``eps_J/eps`` of objective perturbation at the alpha its rule picks in a cell."""
    cls = DPLogisticRegression if kind == "logistic" else DPHuberRegressor
    public = {"classes": [0, 1]} if kind == "logistic" else {}
    base = cls(epsilon=eps, data_norm=1.0, **public)
    loss, _ = base._planning_loss()
    R = base._public_row_bound()
    alpha = _auto.auto_alpha("objective_perturbation", loss, n=n, p=p + 1, epsilon=eps,
                             delta=1e-6, row_bound=R)
    return float(np.log1p(float(loss.smoothness(R)) / (n * alpha))) / eps


def rule_shortfalls(rows, family, margin, gamma):
    """Shortfall, in every cell of the loss ``family``, of the rule ``M = margin (t/t_0)^gamma`` to the
    cell's best margin (scores interpolated linearly in ``log2 M``, clipped to the grid)."""
    return shortfalls([(privacy_size(n, p, eps), mean)
                       for kd, _design, _loose, n, p, eps, mean in rows
                       if FAMILY[kd] == family], MARGINS, margin, gamma)


def shortfalls(cells, margins, margin, gamma):
    """Shortfall of the rule ``M = margin (t/t_0)^gamma`` to the best margin of each cell
    ``(t, mean scores at margins)``: scores interpolated linearly in ``log2 M``, the rule's
    ``M`` clipped to the grid."""
    from skdp._solvers._objective_perturbation import SIZE_REF

    logm = np.log2(margins)
    out = []
    for t, mean in cells:
        m = np.clip(np.log2(margin) + gamma * np.log2(t / SIZE_REF), logm[0], logm[-1])
        out.append(np.max(mean) - np.interp(m, logm, mean))
    return np.array(out)


def report_fit(rows):
    """The joint fit of ``(M_0, gamma)`` per loss, next to the committed constants."""
    from skdp._solvers._objective_perturbation import MARGIN, SIZE_EXPONENT

    lines = ["", "## Fit of the rule `W = (M_0/R) (t/t_0)^gamma`, `t = n mu/sqrt(p)`, "
             "`t_0 = 1000`", "",
             "Mean and worst shortfall to the best margin of each cell (accuracy; R^2 for "
             "Huber), scores interpolated in log M.", "",
             "| loss | best (M_0, gamma) | its mean / worst | best flat M (gamma = 0) | "
             "its mean / worst | committed (M_0, gamma) | its mean / worst |",
             "|---|---|---|---|---|---|---|"]
    for family in ("classification", "regression"):
        fits = [(rule_shortfalls(rows, family, m, g), m, g) for g in GAMMAS for m in M0_GRID]
        fits = [(s.mean(), s.max(), m, g) for s, m, g in fits if s.size]
        if not fits:
            continue
        best = min(fits, key=lambda f: f[0])
        flat = min((f for f in fits if f[3] == 0.0), key=lambda f: f[0])
        com = rule_shortfalls(rows, family, MARGIN[family], SIZE_EXPONENT)
        lines.append(
            f"| {family} | ({best[2]:.1f}, {best[3]:.2f}) | {best[0]:.4f} / {best[1]:.3f} | "
            f"{flat[2]:.1f} | {flat[0]:.4f} / {flat[1]:.3f} | "
            f"({MARGIN[family]:g}, {SIZE_EXPONENT:.3f}) | {com.mean():.4f} / {com.max():.3f} |")
        subsets = [(f"norms {loose:g}", [r for r in rows if r[2] == loose])
                   for loose in LOOSENESS]
        subsets += [(kind, [r for r in rows if r[0] == kind]) for kind in KINDS
                    if FAMILY[kind] == family and family == "regression"]
        for label, sub in subsets:
            s = rule_shortfalls(sub, family, MARGIN[family], SIZE_EXPONENT)
            f = rule_shortfalls(sub, family, flat[2], 0.0)
            if s.size:
                lines.append(f"|   {label} | | | | {f.mean():.4f} / {f.max():.3f} | "
                             f"| {s.mean():.4f} / {s.max():.3f} |")
    return "\n".join(lines) + "\n"


def _cell_alphas(kind, n, p, eps):
    """The loss constants of a cell and the ``alpha`` each margin's fit actually used
    (``noise_balanced_alpha`` at ``gamma = 0``, raised to the solver's privacy floor)."""
    from skdp._solvers._objective_perturbation import minimum_alpha, noise_balanced_alpha

    cls = DPLogisticRegression if kind == "logistic" else DPHuberRegressor
    public = {"classes": [0, 1]} if kind == "logistic" else {}
    base = cls(epsilon=eps, data_norm=1.0, **public)
    loss, _ = base._planning_loss()
    R = base._public_row_bound()
    L = float(loss.lipschitz(R))
    mu0 = budget_mu(eps, 1e-6, p + 1)
    floor = minimum_alpha(loss, R, n, eps, 1e-6)
    used = np.array([max(floor, noise_balanced_alpha(L, p + 1, n, mu0, R, m,
                                                     size_exponent=0.0)) for m in MARGINS])
    return loss, R, L, floor, used


def _score_at(alphas_used, mean, alpha):
    """A cell's score at ``alpha``: interpolated in ``log alpha`` between the fitted points
    (clipped to them); ``alphas_used`` decrease with the margin."""
    la = np.log(alphas_used)[::-1]
    return float(np.interp(np.clip(np.log(alpha), la[0], la[-1]), la, np.asarray(mean)[::-1]))


def report_floor_aware(rows):
    """Refit of objective perturbation's floor-aware rule
    (``_auto.objective_perturbation_alpha``) from the saved cells: each cell's score is a
    function of the ``alpha`` its fits used, so any rule can be scored by interpolation.
    The grid search over ``(M_0, gamma)`` tabulates ``mu(eps_J)`` per epsilon; the
    committed constants are then scored with the rule's own code."""
    from skdp._solvers._objective_perturbation import SIZE_EXPONENT, objective_noise_mu

    eps_values = sorted({r[5] for r in rows})
    table = {}
    for eps in eps_values:
        ej = np.linspace(0.0, 0.5 * eps, 120)
        table[eps] = (ej, np.array([objective_noise_mu(eps, 1e-6, e, 1) for e in ej]))
    cells = []
    for kind, _design, _loose, n, p, eps, mean in rows:
        loss, R, L, floor, used = _cell_alphas(kind, n, p, eps)
        beta = float(loss.smoothness(R))
        grid = floor * np.logspace(0.0, 4.0, 400)
        mu = np.interp(np.log1p(beta / (n * grid)), *table[eps])
        cells.append(dict(
            kind=kind, family=FAMILY[kind], n=n, p=p, eps=eps, loss=loss, R=R, used=used,
            mean=mean, best=float(np.max(mean)), grid=grid,
            noise=(p + 1) * (2.0 * L / mu) ** 2 / (2.0 * n * n * grid),
            t=privacy_size(n, p, eps)))

    def shortfalls(sub, m0, gamma):
        out = []
        for c in sub:
            W = m0 / c["R"] * (c["t"] / 1000.0) ** gamma
            alpha = c["grid"][np.argmin(c["noise"] + c["grid"] * W * W / 2.0)]
            out.append(c["best"] - _score_at(c["used"], c["mean"], alpha))
        return np.array(out)

    lines = ["", "## Floor-aware rule for objective perturbation", "",
             "`alpha = argmin p sigma(alpha)^2/(2 n^2 alpha) + alpha W^2/2` over `alpha >= "
             "floor`, `sigma(alpha) = 2L/mu(alpha)` with `mu(alpha)` the budget left after "
             "the Jacobian term `eps_J = log(1 + beta/(n alpha))`; same `W = (M_0/R) "
             "(t/t_0)^gamma`.  Scores interpolated in `log alpha` between the `alpha` each "
             "margin's fits used (after the floor).", "",
             "| loss | best (M_0, gamma) | its mean / worst | best M_0 at gamma = 1/3 | "
             "its mean / worst | committed OP_MARGIN (rule's code) | its mean / worst |",
             "|---|---|---|---|---|---|---|"]
    for family in ("classification", "regression"):
        sub = [c for c in cells if c["family"] == family]
        if not sub:
            continue
        fits = []
        for g in GAMMAS + (1.0 / 3.0,):
            for m0 in M0_GRID + tuple(2.0 ** (8 + k / 8) for k in range(1, 9)):
                sh = shortfalls(sub, m0, g)
                fits.append((sh.mean(), sh.max(), m0, g))
        best = min(fits, key=lambda f: f[0])
        third = min((f for f in fits if f[3] == 1.0 / 3.0), key=lambda f: f[0])
        committed = np.array([
            c["best"] - _score_at(c["used"], c["mean"], _auto.objective_perturbation_alpha(
                c["loss"], n=c["n"], p=c["p"] + 1, epsilon=c["eps"], delta=1e-6,
                row_bound=c["R"], margin=_auto.OP_MARGIN[family])) for c in sub])
        lines.append(
            f"| {family} | ({best[2]:.1f}, {best[3]:.2f}) | {best[0]:.4f} / {best[1]:.3f} | "
            f"{third[2]:.1f} | {third[0]:.4f} / {third[1]:.3f} | "
            f"{_auto.OP_MARGIN[family]:g} (gamma {SIZE_EXPONENT:.3f}) | "
            f"{committed.mean():.4f} / {committed.max():.3f} |")
    return "\n".join(lines) + "\n"


def report(rows, elapsed):
    lines = ["# Calibration of the alpha=\"auto\" rule's constants on synthetic data", "",
             f"Objective perturbation, delta = 1e-6, data_norm = 1; {elapsed:.0f} s.  Each "
             "cell: mean test score (accuracy; R^2 for Huber, on clean test targets) over "
             "seeds at `alpha = sigma sqrt(p)/(n M/R)` for each margin M; `huber`: signal "
             "std 1, noise 0.5; `huber_weak`: noise 1.5; then the mean shortfall to the "
             "best M of each cell, and the joint fit of the rule's (M_0, gamma).", "",
             "| loss | design | norms (99 % q.) | n | p | eps | " + " | ".join(
                 f"M={m:g}" for m in MARGINS) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(MARGINS)]
    short = {k: [] for k in KINDS}
    by_design = {}
    for kind, design, loose, n, p, eps, mean in rows:
        lines.append(f"| {kind} | {design} | {loose:g} | {n} | {p} | {eps:g} | "
                     + " | ".join(f"{v:.3f}" for v in mean) + " |")
        short[kind].append(mean.max() - mean)
        by_design.setdefault((kind, design), []).append(mean.max() - mean)
    lines.append("")
    for (kind, design), vals in by_design.items():
        v = np.mean(vals, axis=0)
        lines.append(f"- {kind}, {design} designs: mean shortfall " + ", ".join(
            f"M={m:g}: {a:.4f}" for m, a in zip(MARGINS, v)))
    for kind, vals in short.items():
        if vals:
            v = np.mean(vals, axis=0)
            w = np.max(vals, axis=0)
            lines.append(f"- {kind}: mean shortfall " + ", ".join(
                f"M={m:g}: {a:.4f} (worst {b:.3f})" for m, a, b in zip(MARGINS, v, w)))
    both = np.mean([np.mean(v, axis=0) for v in short.values() if v], axis=0)
    lines.append("- both losses: mean shortfall " + ", ".join(
        f"M={m:g}: {a:.4f}" for m, a in zip(MARGINS, both)))
    return "\n".join(lines) + "\n" + report_fit(rows) + report_floor_aware(rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--warm-only", action="store_true",
                    help="only warm_gd's constants (results/calibrate_auto_warm.md)")
    ap.add_argument("--warm-limit", action="store_true",
                    help="warm_gd's skip rule: refine vs skip per drift "
                         "(results/calibrate_auto_warm_limit.md)")
    ap.add_argument("--no-warm", action="store_true",
                    help="only alpha's MARGIN (results/calibrate_auto.md)")
    ap.add_argument("--kinds", nargs="*", choices=KINDS,
                    help="run these kinds only, replacing their cells in calibrate_auto.json")
    ap.add_argument("--switch", action="store_true",
                    help="objective perturbation vs dpsgd per cell "
                         "(results/calibrate_switch.md)")
    ap.add_argument("--multinomial", action="store_true",
                    help="dpsgd's multinomial margin (results/calibrate_multinomial.md)")
    ap.add_argument("--signals", nargs="*", choices=("weak", "strong"),
                    help="with --multinomial: run these signal levels only, replacing their "
                         "cells in calibrate_multinomial.json")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite calibrate_auto.md (with the fit) from calibrate_auto.json; "
                         "with --switch, calibrate_switch.md from calibrate_switch.json")
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if args.warm_limit:
        text = report_warm_limit(run_warm_limit())
        (RESULTS / "calibrate_auto_warm_limit.md").write_text(text)
        print(text)
    elif args.multinomial:
        path = RESULTS / "calibrate_multinomial.json"
        if args.report_only:
            rows, elapsed = load_cells(path)
        else:
            t0 = time.time()
            signals = args.signals or tuple(MULTI_SIGNALS)
            rows = run_multinomial(args.quick, signals)
            elapsed = time.time() - t0
            if args.signals:
                rows, elapsed = merge_saved(path, rows, elapsed,
                                            lambda label: _multi_label(label)[1] in signals)
            save_cells(path, rows, elapsed, margins=MULTI_MARGINS)
        text = report_multinomial(rows, elapsed)
        (RESULTS / "calibrate_multinomial.md").write_text(text)
        print(text)
    elif args.switch:
        path = RESULTS / "calibrate_switch.json"
        if args.report_only:
            rows, elapsed = load_cells(path)
        else:
            t0 = time.time()
            rows = run_switch(args.quick)
            elapsed = time.time() - t0
            save_cells(path, rows, elapsed, factors=SWITCH_ALPHA_FACTORS)
        text = report_switch(rows, elapsed)
        (RESULTS / "calibrate_switch.md").write_text(text)
        print(text)
    elif args.report_only:
        rows, elapsed = load_cells(RESULTS / "calibrate_auto.json")
        text = report(rows, elapsed)
        (RESULTS / "calibrate_auto.md").write_text(text)
        print(text)
    elif not args.warm_only:
        t0 = time.time()
        kinds = tuple(args.kinds or KINDS)
        rows = run(args.quick, kinds=kinds)
        elapsed = time.time() - t0
        path = RESULTS / "calibrate_auto.json"
        if args.kinds:
            rows, elapsed = merge_saved(path, rows, elapsed, lambda kind: kind in kinds)
        save_cells(path, rows, elapsed, margins=MARGINS)
        text = report(rows, elapsed)
        (RESULTS / "calibrate_auto.md").write_text(text)
        print(text)
    if not (args.no_warm or args.report_only or args.switch or args.warm_limit
            or args.multinomial):
        text = report_warm(run_warm(args.quick))
        (RESULTS / "calibrate_auto_warm.md").write_text(text)
        print(text)
