"""Raw regression targets through a private pipeline with ``DPNonconvexRegressor``, with
and without their public range, and the range's ``loss_scale`` rule.

The tables and ranges of ``bench_target_range.py`` (airfoil, concrete, wine, hourly bike
rentals and their seeded subsamples; held out, not used to choose the rule: Adult's
weekly hours and daily bike rentals), the target **in its own units**, through
``make_private_pipeline(DPNonconvexRegressor(...))`` (its default loss, Welsch, and solver,
``warm_gd``: a private Huber warm start at threshold ``loss_scale``, then noisy gradient
steps on the robust loss where ``n epsilon`` allows them):

* ``raw``: ``DPNonconvexRegressor()`` -- what a user who passes the raw target gets;
* ``scaled`` (reference, the protocol of the other regression results): the target mapped
  publicly into [-1, 1] by the range, ``DPNonconvexRegressor(y_bound=1.0)``;
* ``range c``: ``DPNonconvexRegressor(target_range=(low, high), loss_scale=c h)`` for each
  candidate ``c`` of ``--scales`` (half-widths ``h`` of the range): the targets' private
  mean released, the model fitted on the targets minus it over ``h`` with the loss's scale
  ``c`` there (:mod:`skdp.linear_model._target_range`).

70/30 split (seed = the noise seed), delta = 1e-6, numba on one thread; mean test R^2 (in
the target's units) over the seeds +- its standard error.  Writes
``results/target_range_nonconvex.md`` and ``.json``.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_target_range_nonconvex.py \\
        [--seeds 0-9] [--tables airfoil,...] [--scales 0.05,0.1,0.2,0.4] [--out NAME]
"""

import _one_thread  # noqa: F401  (before numpy: one thread per pool, SKDP_DATA)
import sys
from pathlib import Path

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _common import git_state, log, machine_info, write_results  # noqa: E402
from _raw_protocol import parse_seeds, split_regression  # noqa: E402
from bench_target_range import (EPSILONS, HELD_OUT, TABLES, pipeline_r2,  # noqa: E402
                                raw_units)

from skdp import DPNonconvexRegressor  # noqa: E402

SCALES = (0.05, 0.1, 0.2, 0.4)


def variant_r2(X, y, target_range, eps, seed, variant):
    """Test R^2 of one fit of the pipeline (module docstring), its guarantee checked;
    ``variant``: "raw", "scaled" or a loss scale in half-widths (float)."""
    Xtr, Xte, ytr, yte = split_regression(X, y, seed)
    low, high = target_range
    centre, half = 0.5 * (low + high), 0.5 * (high - low)
    if variant == "raw":
        model, fit_y, back = DPNonconvexRegressor(), ytr, (lambda p: p)
    elif variant == "scaled":
        model = DPNonconvexRegressor(y_bound=1.0)
        fit_y, back = (np.clip(ytr, low, high) - centre) / half, (lambda p: centre + half * p)
    else:
        model = DPNonconvexRegressor(target_range=target_range,
                                     loss_scale=float(variant) * half)
        fit_y, back = ytr, (lambda p: p)
    return pipeline_r2(model, X, Xtr, fit_y, Xte, yte, back, eps, seed)


def _key(variant):
    return variant if isinstance(variant, str) else f"range {variant:g}"


def render(raw):
    variants = ["raw", "scaled"] + [f"range {c:g}" for c in raw["scales"]]
    lines = ["# Raw regression targets through a private pipeline with DPNonconvexRegressor",
             "",
             f"`benchmarks/bench_target_range_nonconvex.py --seeds {raw['seeds']}` "
             f"({raw['n_seeds']} seeds), git {raw['git']}, {raw['elapsed_s']:.0f} s, "
             f"NUMBA_NUM_THREADS={raw['machine']['env'].get('NUMBA_NUM_THREADS')}.  "
             "`make_private_pipeline(DPNonconvexRegressor(...))` on the target in its own "
             "units, delta = 1e-6, 70/30 split per seed; mean test R^2 +- standard error.  "
             "raw: `DPNonconvexRegressor()`; scaled (reference): the target mapped into "
             "[-1, 1] by the range, `DPNonconvexRegressor(y_bound=1.0)`; range c: "
             "`DPNonconvexRegressor(target_range=(low, high), loss_scale=c h)`, `h` the "
             "range's half-width.  Held out (not used to choose the rule): "
             f"{', '.join(HELD_OUT)}.", "",
             "| table | n train | eps | " + " | ".join(variants) + " |",
             "|---|---|---|" + "---|" * len(variants)]
    for c in raw["cells"]:
        cells = []
        for v in variants:
            r = np.array(c[v])
            cells.append(f"{r.mean():+.3f} +- {r.std() / np.sqrt(len(r)):.3f}")
        lines.append(f"| {c['table']} | {c['n_train']} | {c['epsilon']:g} | "
                     + " | ".join(cells) + " |")
    chosen = [c for c in raw["cells"] if c["table"] not in HELD_OUT]
    lines += ["", "Over the cells used to choose (" + str(len(chosen)) + "):", ""]
    for v in variants:
        means = np.array([np.mean(c[v]) for c in chosen])
        best = np.array([max(np.mean(c[w]) for w in variants if w.startswith("range"))
                         for c in chosen])
        lines.append(f"* {v}: mean R^2 {means.mean():+.4f}; largest shortfall to the best "
                     f"range scale of its cell {np.max(best - means):.4f}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--scales", default=",".join(str(c) for c in SCALES))
    parser.add_argument("--out", default="target_range_nonconvex",
                        help="results/<out>.{md,json}")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    scales = [float(c) for c in args.scales.split(",")]
    t0 = time.time()
    raw = {"seeds": args.seeds, "n_seeds": len(seeds), "scales": scales, "cells": [],
           "git": git_state()}
    for name in args.tables.split(","):
        X, y, target_range = raw_units(name)
        for eps in EPSILONS:
            cell = {"table": name, "epsilon": eps, "target_range": target_range,
                    "n_train": len(split_regression(X, y, 0)[2])}
            for v in ["raw", "scaled"] + scales:
                cell[_key(v)] = [float(variant_r2(X, y, target_range, eps, s, v))
                                 for s in seeds]
            raw["cells"].append(cell)
            log(f"{name:14s} eps={eps:<4} " + " ".join(
                f"{_key(v)} {np.mean(cell[_key(v)]):+.4f}" for v in ["raw", "scaled"] + scales))
    raw["machine"] = machine_info()
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results(args.out, render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
