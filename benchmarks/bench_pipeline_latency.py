"""Latency of a private pipeline fit at an epsilon it has not seen before, against a repeat.

Issue 48, part 3: ``skdp.make_private_pipeline(model, epsilon=eps, delta=1e-6,
random_state=0)`` on raw rows resampled with replacement to ``n`` rows (seed 0), with
``--task``:

- ``classification`` (default): ``DPLogisticRegression(classes=[0, 1])`` on Adult
  (``_raw_protocol.load_raw``);
- ``regression``: ``DPHuberRegressor()`` on wine quality, its target publicly scaled into
  [-1, 1] (``_raw_protocol.load_raw_regression``);
- ``regression_range``: ``DPHuberRegressor(target_range=(0, 10))`` on wine quality in its
  own units (the model releases the targets' mean first, then fits).

Target: a fit at a new epsilon takes at most 1.5x a repeat fit at the same epsilon, at
n = 3,000 and 30,000.

Protocol.  One child process per ``n`` (``NUMBA_NUM_THREADS=OMP_NUM_THREADS=1`` unless
``--threads`` says otherwise); two warm-up fits at epsilon 1; then ``--rounds`` rounds, each
a fit at a fresh epsilon ``1 + k 1e-3`` (never seen in the process, so no cache holds its
calibration) immediately followed by a repeat fit at the same epsilon.  Reported: the median
of the per-round ratios new / repeat, the median times, and where a fit's time goes --
the plan's placeholder fits (the transformers' events and widths, refitted on public
placeholder rows at every new epsilon), the accounting (budget split, calibrations, the
final composition; only the outermost call timed) and the rest (the fit proper).

Usage::

    python benchmarks/bench_pipeline_latency.py [--rounds 12] [--sizes 3000 30000] \
        [--baseline /work/main] [--selection airfoil adult]

``--baseline``: another skdp tree measured the same way (its own processes, after this
tree's for each size); ``--selection``: the wall time of a private grid search over the
pipeline (``bench_pipeline_selection.py``'s "main" grid, epsilon 1) in fresh processes,
alternating the trees, and whether both released the same coefficients.

Writes ``benchmarks/results/pipeline_latency.{md,json}`` (``pipeline_latency_<task>.*`` for
the regression tasks) with the commit it ran on.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")


TASKS = ("classification", "regression", "regression_range")
TASK_MODELS = {"classification": "DPLogisticRegression(classes=[0, 1])",
               "regression": "DPHuberRegressor()",
               "regression_range": "DPHuberRegressor(target_range=(0, 10))"}
TASK_DATA = {"classification": "Adult",
             "regression": "wine quality (target scaled into [-1, 1])",
             "regression_range": "wine quality (target in its own units)"}


def _task_data(task):
    """``(X, y, model)`` of ``--task`` (module docstring), the raw rows before resampling."""
    sys.path.insert(0, HERE)
    from _raw_protocol import REGRESSION_TARGET_RANGE, load_raw, load_raw_regression

    import skdp

    if task == "classification":
        X, y = load_raw("adult")
        return X, y, skdp.DPLogisticRegression(classes=[0, 1])
    X, y = load_raw_regression("wine")
    if task == "regression":
        return X, y, skdp.DPHuberRegressor()
    low, high = REGRESSION_TARGET_RANGE["wine"]
    return X, 0.5 * (low + high) + 0.5 * (high - low) * y, skdp.DPHuberRegressor(
        target_range=(low, high))


def _child(n, rounds, task):
    import functools
    import warnings

    import numpy as np
    import sklearn.base

    import skdp
    import skdp._plan as plan_mod
    import skdp._solvers._dpsgd as dpsgd_mod
    import skdp.accounting as accounting
    import skdp.linear_model._budget as budget_mod
    try:
        import skdp.linear_model._nested_share as nested_mod
    except ImportError:        # a baseline tree from before the one search
        nested_mod = None

    warnings.simplefilter("ignore")
    clock = {"probes": 0.0, "accounting": 0.0}
    depth = [0]

    def timed(module, name, bucket):
        original = getattr(module, name, None)
        if original is None:     # a function only some trees have (check_model_fits: old)
            return

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if depth[0]:
                return original(*args, **kwargs)
            depth[0] += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                clock[bucket] += time.perf_counter() - start
                depth[0] -= 1
        setattr(module, name, wrapper)

    timed(plan_mod, "planned_transformer_events", "probes")
    timed(plan_mod, "design_widths", "probes")
    timed(budget_mod, "check_model_fits", "accounting")
    timed(budget_mod, "largest_model_epsilon", "accounting")
    # a nested estimator's one search (target_range, y_bound="auto"): imported at call time
    if nested_mod is not None:
        timed(nested_mod, "model_split", "accounting")
        timed(nested_mod, "released_bounds_model_epsilon", "accounting")
    timed(dpsgd_mod, "_noise_multiplier", "accounting")
    timed(accounting, "get_epsilon", "accounting")

    X, y, model = _task_data(task)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X), n, replace=n > len(X))
    X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    schema = dict(numeric=[c for c in X.columns if X[c].dtype.kind in "if"],
                  categorical=[c for c in X.columns if X[c].dtype == object])

    def fit(eps):
        pipe = skdp.make_private_pipeline(sklearn.base.clone(model), epsilon=eps, delta=1e-6, random_state=0, **schema)
        for k in clock:
            clock[k] = 0.0
        start = time.perf_counter()
        pipe.fit(X, y)
        total = time.perf_counter() - start
        return dict(seconds=total, **clock, epsilon_model=pipe.budget_split_["model"][0])

    fit(1.0)
    fit(1.0)
    rows = []
    for k in range(1, rounds + 1):
        eps = 1.0 + k * 1e-3
        new = fit(eps)
        repeat = fit(eps)
        rows.append({"epsilon": eps, "new": new, "repeat": repeat})
    return rows


def _selection_child(name):
    """One private grid search (bench_pipeline_selection.py's "main" grid, epsilon 1,
    seed 0) in a fresh process: its wall time and what it released."""
    import warnings

    import numpy as np

    sys.path.insert(0, HERE)
    import bench_pipeline_selection as sel
    from _raw_protocol import (CATEGORICAL, NUMERIC, load_raw, load_raw_regression, split,
                               split_regression)

    from skdp.model_selection import DPGridSearchCV

    warnings.simplefilter("ignore")
    if sel.is_regression(name):
        X, y = load_raw_regression(name)
        Xtr, _, ytr, _ = split_regression(X, y, 0)
    else:
        X, y = load_raw(name)
        Xtr, _, ytr, _ = split(X, y, 0)
    start = time.perf_counter()
    search = DPGridSearchCV(sel.make_pipe(name, 1.0, NUMERIC(X), CATEGORICAL(X), None),
                            sel.GRIDS["main"], epsilon=1.0, delta=sel.DELTA,
                            scoring=sel.scorer_for(name), random_state=0).fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    return {"dataset": name, "seconds": seconds,
            "best_params": {k: str(v) for k, v in sorted(search.best_params_.items())},
            "best_score": float(search.best_score_),
            "fit_mu": search.budget_split_.get("fit_mu"),
            "coef": np.asarray(search.best_estimator_[-1].coef_).ravel().tolist()}


def _summary(n, rows):
    ratios = [r["new"]["seconds"] / r["repeat"]["seconds"] for r in rows]
    med = lambda kind, key: statistics.median(r[kind][key] for r in rows)  # noqa: E731
    return {
        "n": n, "rounds": len(rows), "median_ratio": statistics.median(ratios),
        "new_seconds": med("new", "seconds"), "repeat_seconds": med("repeat", "seconds"),
        "new_probes": med("new", "probes"), "new_accounting": med("new", "accounting"),
        "repeat_probes": med("repeat", "probes"),
        "repeat_accounting": med("repeat", "accounting"),
        "repeat_accounting_share": statistics.median(
            (r["repeat"]["accounting"] + r["repeat"]["probes"]) / r["repeat"]["seconds"]
            for r in rows),
        "new_overhead_share": statistics.median(
            (r["new"]["accounting"] + r["new"]["probes"]) / r["new"]["seconds"]
            for r in rows),
    }


def _commit():
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head, bool(dirty)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 30000])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--task", choices=TASKS, default="classification")
    parser.add_argument("--selection", nargs="*", default=[],
                        help="data sets whose private grid search is timed (e.g. airfoil)")
    parser.add_argument("--selection-rounds", type=int, default=2)
    parser.add_argument("--baseline", default=None,
                        help="another skdp tree (e.g. /work/main) run the same way, "
                             "interleaved, for comparison")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--selection-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.child is not None:
        json.dump(_child(args.child, args.rounds, args.task), sys.stdout)
        return
    if args.selection_child is not None:
        json.dump(_selection_child(args.selection_child), sys.stdout)
        return
    trees = {"this": ROOT}
    baseline_commit = None
    if args.baseline:
        trees["baseline"] = os.path.abspath(args.baseline)
        baseline_commit = subprocess.run(["git", "-C", trees["baseline"], "rev-parse", "HEAD"],
                                         capture_output=True, text=True).stdout.strip()

    def run(tree, *child_args):
        env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads),
                   OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
                   MKL_NUM_THREADS=str(args.threads), PYTHONPATH=trees[tree],
                   NUMBA_CACHE_DIR=os.path.join(ROOT, ".numba_cache") if tree == "this"
                   else os.path.join(tempfile.gettempdir(), "skdp_baseline_numba_cache"))
        out = subprocess.run([sys.executable, __file__, *child_args], env=env,
                             capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        return json.loads(out.stdout)

    summaries, raw = {t: [] for t in trees}, {t: {} for t in trees}
    for n in args.sizes:
        for tree in trees:     # one process per tree and size, one after the other
            rows = run(tree, "--child", str(n), "--rounds", str(args.rounds),
                       "--task", args.task)
            raw[tree][n] = rows
            summaries[tree].append(_summary(n, rows))
            s = summaries[tree][-1]
            print(f"{tree} n={n}: new {s['new_seconds']:.3f} s, repeat "
                  f"{s['repeat_seconds']:.3f} s, median ratio {s['median_ratio']:.2f}",
                  flush=True)
    selection = {t: {} for t in trees}
    for name in args.selection:
        for r in range(args.selection_rounds):
            for tree in trees:
                selection[tree].setdefault(name, []).append(
                    run(tree, "--selection-child", name))
                print(f"{tree} search on {name}: "
                      f"{selection[tree][name][-1]['seconds']:.2f} s", flush=True)
    commit, dirty = _commit()
    doc = {"commit": commit, "dirty_tree": dirty, "threads": args.threads, "task": args.task,
           "baseline": args.baseline, "baseline_commit": baseline_commit,
           "summaries": summaries, "rows": raw, "selection": selection}
    lines = [
        "# Pipeline fit at a new epsilon against a repeat fit (issue 48, part 3)", "",
        f"Commit `{commit}`{' (tree had uncommitted changes)' if dirty else ''}; "
        f"{args.threads} thread(s) (NUMBA_NUM_THREADS, OMP_NUM_THREADS); "
        f"task `{args.task}`: `make_private_pipeline({TASK_MODELS[args.task]}, epsilon, "
        f"delta=1e-6, random_state=0)` on {TASK_DATA[args.task]} resampled to n rows; per round a fit at a fresh epsilon "
        "(1 + k 1e-3) then a repeat at the same epsilon, interleaved in one process per n. "
        "Generated by `benchmarks/bench_pipeline_latency.py`.", "",
        "Target: median ratio new / repeat <= 1.5.", "",
        "| tree | n | rounds | new fit (s) | repeat fit (s) | median ratio | new: placeholder "
        "fits (s) | new: accounting (s) | repeat: accounting + placeholder share | met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tree, s in [(t, s) for t in trees for s in summaries[t]]:
        label = "this" if tree == "this" else f"baseline `{baseline_commit[:7]}`"
        lines.append(
            f"| {label} | {s['n']} | {s['rounds']} | {s['new_seconds']:.3f} | "
            f"{s['repeat_seconds']:.3f} "
            f"| {s['median_ratio']:.2f} | {s['new_probes']:.3f} | {s['new_accounting']:.3f} "
            f"| {100 * s['repeat_accounting_share']:.1f} % "
            f"| {'yes' if s['median_ratio'] <= 1.5 else 'no'} |")
    lines += ["", "Times are medians over the rounds; 'accounting' is the budget split, the "
              "calibrations and the final composition (outermost calls), 'placeholder fits' "
              "the plan's fits of the transformers on public placeholder rows (their events "
              "and the design width), which a new epsilon refits.", ""]
    if args.selection:
        lines += ["## A private grid search over the pipeline", "",
                  "`DPGridSearchCV` over the pipeline, `bench_pipeline_selection.py`'s \"main\" "
                  "grid (4 candidates), epsilon 1, seed 0, each run in a fresh process, the "
                  "trees alternating.", "",
                  "| data set | tree | seconds (each run) | best candidate | best score | "
                  "released coefficients equal to the baseline's |", "|---|---|---|---|---|---|"]
        for name in args.selection:
            for tree in trees:
                runs = selection[tree][name]
                same = ""
                if args.baseline:
                    same = "yes" if all(
                        a["coef"] == b["coef"] and a["best_params"] == b["best_params"]
                        for a, b in zip(runs, selection["baseline"][name])) else "no"
                label = "this" if tree == "this" else f"baseline `{baseline_commit[:7]}`"
                times = ", ".join(f"{r['seconds']:.2f}" for r in runs)
                lines.append(f"| {name} | {label} | {times} | "
                             f"{runs[0]['best_params']} | {runs[0]['best_score']:.4f} | "
                             f"{same if tree == 'this' else ''} |")
        lines.append("")
    if not args.no_write:
        os.makedirs(RESULTS, exist_ok=True)
        stem = "pipeline_latency" + ("" if args.task == "classification" else f"_{args.task}")
        with open(os.path.join(RESULTS, stem + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(RESULTS, stem + ".md"), "w") as f:
            f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
