"""Which private quantile mechanism for many columns at once: measured rank errors.

Three mechanisms release ``m`` quantiles of each of ``d`` columns under the same Gaussian-DP
budget ``mu`` (zCDP ``rho = mu^2/2`` for the exponential mechanism), on the same public
grid of 4096 bins per column (:mod:`skdp._mechanisms._quantiles`):

* ``tree``: skdp's -- one Gaussian release of the count trees (12 levels, sensitivity
  ``sqrt(24 d)``), consistent least-squares estimates, isotonic cumulative counts;
* ``flat``: one Gaussian release of the 4096 leaf counts only (sensitivity ``sqrt(2 d)``),
  isotonic cumulative counts -- the prefix sums add the noise of every leaf before them;
* ``exponential``: one exponential mechanism per quantile over the bins, utility
  ``-|rank - target|`` (sensitivity 1), each ``eps_i``-DP with bounded range, so
  ``eps_i^2/8``-zCDP (Cesar & Rogers 2021): ``eps_i = 2 mu / sqrt(d m)``.

The error of a released quantile is ``|rank(released)/n - level|`` (rank among the true
values).  Four column shapes of ``n`` rows: integer ages, log-normal incomes, a point
mass at zero with a tail (capital gains), a normal.  Mean and 90th percentile of the rank
error over columns, levels and ``--seeds`` seeds.

    python benchmarks/bench_quantiles.py [--seeds 5]

writes ``results/quantiles.md``.
"""

import argparse
import math
import time
from pathlib import Path

import numpy as np

from skdp._mechanisms import new_word_source
from skdp._mechanisms._exact import exact_gaussian_noise, release_on_grid
from skdp._mechanisms._quantiles import (LEAVES, TreeHistogram, ValueGrid, leaf_counts,
                                         release_tree_histogram)
from skdp.accounting import gaussian_mu_for

RESULTS = Path(__file__).resolve().parent / "results"


def columns(n, rng):
    ages = rng.integers(17, 91, n).astype(float)
    income = rng.lognormal(12, 0.6, n)
    gains = np.where(rng.random(n) < 0.9, 0.0, rng.lognormal(8, 1.2, n))
    normal = rng.normal(0.0, 1.0, n)
    return np.column_stack([ages, income, gains, normal])


def rank_errors(X, released, levels):
    errs = []
    for j in range(X.shape[1]):
        col = np.sort(X[:, j])
        lo = np.searchsorted(col, released[j], side="left") / col.size
        hi = np.searchsorted(col, released[j], side="right") / col.size
        # a released value inside a point mass has every rank of the mass: the best one
        errs.append(np.where(levels < lo, lo - levels, np.where(levels > hi, levels - hi,
                                                                  0.0)))
    return np.concatenate(errs)


def tree(X, mu, seed, levels):
    hist, _, _, _ = release_tree_histogram(X, mu, new_word_source(seed))
    return hist.quantiles(levels)


def flat(X, mu, seed, levels):
    d = X.shape[1]
    grids = [ValueGrid() for _ in range(d)]
    sens = math.sqrt(2.0 * d)
    gamma, z, _ = exact_gaussian_noise(new_word_source(seed), sens / mu, sens, d * LEAVES,
                                       bound=float(X.shape[0]))
    counts = release_on_grid(leaf_counts(X, grids), gamma, z).reshape(d, LEAVES)
    # rescale so the total is n (the root is public): the same read-out as the tree's
    return TreeHistogram(counts, grids, X.shape[0]).quantiles(levels)


def exponential(X, mu, seed, levels):
    d, m = X.shape[1], len(levels)
    eps_i = 2.0 * mu / math.sqrt(d * m)
    rng = np.random.default_rng(seed)
    grids = [ValueGrid() for _ in range(d)]
    counts = leaf_counts(X, grids)[:, :LEAVES - 1]
    out = np.empty((d, m))
    for j in range(d):
        cum = np.cumsum(counts[j])
        before = np.concatenate([[0], cum[:-1]])
        for k, q in enumerate(levels):
            target = q * cum[-1]
            # utility of a leaf: minus the distance from the target to its rank interval
            util = -np.maximum(0.0, np.maximum(before - target, target - cum))
            logits = eps_i * util / 2.0
            p = np.exp(logits - logits.max())
            leaf = rng.choice(p.size, p=p / p.sum())
            lo, hi = grids[j].edges(leaf)
            out[j, k] = lo + rng.random() * (hi - lo)
    return np.sort(out, axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=20000)
    args = ap.parse_args()
    levels = np.linspace(0.05, 0.95, 9)
    lines = ["# Private quantiles of many columns: rank errors by mechanism", "",
             f"`python benchmarks/bench_quantiles.py --seeds {args.seeds} --rows "
             f"{args.rows}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.  "
             f"{args.rows:,} rows, 4 columns (integer ages, log-normal incomes, 90 % zeros "
             "with a log-normal tail, a normal), 9 levels 0.05 ... 0.95; the same budget "
             "for every mechanism (mu-GDP, zCDP mu^2/2 for the exponential mechanism).  "
             "Rank error = |rank/n - level|, in % of the rows: mean / 90th percentile over "
             "columns, levels and seeds.", "",
             "| total epsilon (delta 1e-6) | mu | tree (skdp) | flat histogram | "
             "exponential mechanism |", "|---|---|---|---|---|"]
    for eps in (0.05, 0.1, 0.5, 1.0):
        mu = gaussian_mu_for(eps, 1e-6)
        cells = []
        for mech in (tree, flat, exponential):
            errs = np.concatenate([
                rank_errors(X, mech(X, mu, seed, levels), levels)
                for seed in range(args.seeds)
                for X in [columns(args.rows, np.random.default_rng(1000 + seed))]])
            cells.append(f"{100 * errs.mean():.2f} / {100 * np.quantile(errs, 0.9):.2f}")
        lines.append(f"| {eps:g} | {mu:.4f} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    (RESULTS / "quantiles.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
