"""DPLogisticRegression on Dask arrays: throughput, memory and accuracy, against in memory.

A ``LocalCluster`` with 2 worker processes (1 thread each) generates the rows and labels
lazily on the workers (``dask.array.random``, partitions of 10^6 rows, 20 features, labels
from a logistic model); the client never holds them.  The default estimator
(``DPLogisticRegression(epsilon=1, data_norm=1, classes=[0, 1])``: objective
perturbation) is fitted; the fit clips each partition on its worker and keeps it there
(``persist``), then every L-BFGS step reduces over the partitions.  For each size: the
fit's wall time (generation included) and rows per second, the growth of the client's
peak RSS during the fit next to the array's size, each worker's peak RSS, the number of
L-BFGS evaluations, and the accuracy on a fresh in-memory test sample.  At 4·10^6 rows the
in-memory fit on the same rows (computed to a NumPy array first) runs side by side: its
wall time, rows per second of the Dask fit over the in-memory one, and its accuracy; the
same rows persisted in the workers' memory first are fitted too (the fit alone).

``--solvers`` adds a second table at ``SOLVER_N`` rows, persisted on the workers first: the
other solvers with a Dask path (``phased``, ``dpsgd`` at their defaults, and
``DPNonconvexRegressor``'s default ``warm_gd`` on targets of the same rows with 10 % gross
outliers), each against the in-memory fit on the same rows: wall times, rows per second,
scores and events.

``--reference-n`` fits that many rows of the same distribution in memory over several
noise seeds (``--reference-seeds``): the mean accuracy and its seed-to-seed standard
deviation, against which the largest Dask fit is read.

Writes ``benchmarks/results/dask_estimator.md`` / ``.json``.  Run:
``python benchmarks/bench_dask_estimator.py [--sizes 4e6 2e7 1e8] [--solvers]
[--reference-n 1e7]``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine_info, md_table, proc_status_kib, reset_peak_rss, write_results  # noqa: E402,E501
from bench_dask import _worker_peak_kib, _worker_reset  # noqa: E402

D = 20
CHUNK_ROWS = 1_000_000
W_TRUE = np.random.default_rng(0).standard_normal(D)


def lazy_problem(n, seed=1):
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.normal(size=(n, D), chunks=(CHUNK_ROWS, D)) * 0.15
    p = 1.0 / (1.0 + da.exp(-(X @ W_TRUE) * 6.0))
    y = (rs.uniform(size=n, chunks=CHUNK_ROWS) < p).astype(np.int8)
    return X, y


def render_row(entry):
    n, size, wall = entry["n"], entry["bytes"], entry["wall_s"]
    growth, workers = entry["client_peak_growth_bytes"], entry["worker_peak_bytes"]
    return [
        f"{n:.0e}", f"{size / 2**30:.2f}", f"{wall:.1f}", f"{n / wall / 1e6:.2f}",
        f"{growth / 2**20:.1f} ({growth / size:.2%})",
        ", ".join(f"{b / 2**30:.2f}" for b in workers),
        f"{entry['n_gradient_evals']:.0f}", f"{entry['accuracy']:.4f}",
        f"{entry['in_memory_s']:.1f}" if "in_memory_s" in entry else "",
        f"{entry['throughput_ratio']:.2f}" if "throughput_ratio" in entry else "",
        f"{entry['in_memory_accuracy']:.4f}" if "in_memory_s" in entry else "",
        str(entry.get("same_event", "")),
        f"{entry['persisted_s']:.1f} ({entry['persisted_ratio']:.2f})"
        if "persisted_s" in entry else ""]


def estimator(random_state=0):
    from skdp import DPLogisticRegression

    return DPLogisticRegression(epsilon=1.0, delta=1e-10, data_norm=1.0, classes=[0, 1],
                                random_state=random_state)


SOLVER_N = 4_000_000


def regression_targets(X, seed=2):
    """Targets of a linear model on the same rows (lazy), 10 % gross outliers in [15, 30]."""
    import dask.array as da

    rs = da.random.RandomState(seed)
    y = X @ (W_TRUE * 2.0) + 0.3 * rs.normal(size=X.shape[0], chunks=X.chunks[0])
    bad = rs.uniform(size=X.shape[0], chunks=X.chunks[0]) < 0.1
    return da.where(bad, 15.0 + 15.0 * rs.uniform(size=X.shape[0], chunks=X.chunks[0]), y)


def solver_cases():
    from skdp import DPLogisticRegression, DPNonconvexRegressor

    logistic = dict(epsilon=1.0, delta=1e-10, data_norm=1.0, classes=[0, 1], random_state=0)
    return [
        ("DPLogisticRegression(solver='phased', alpha=1e-5)", "classification",
         lambda: DPLogisticRegression(solver="phased", alpha=1e-5, **logistic)),
        ("DPLogisticRegression(solver='dpsgd')", "classification",
         lambda: DPLogisticRegression(solver="dpsgd", **logistic)),
        ("DPNonconvexRegressor() (warm_gd)", "robust",
         lambda: DPNonconvexRegressor(epsilon=1.0, delta=1e-10, data_norm=1.0,
                                      random_state=0)),
    ]


def run_solvers(client):
    """The second table (module docstring): persisted Dask fit against in-memory fit."""
    import dask
    from distributed import wait

    X, y = lazy_problem(SOLVER_N)
    y_robust = regression_targets(X)
    X_test, y_test = dask.compute(*lazy_problem(200_000, seed=99))
    y_test_clean = X_test @ (W_TRUE * 2.0)
    Xp, yp, yrp = X.persist(), y.persist(), y_robust.persist()
    wait([Xp, yp, yrp])
    Xm, ym, yrm = dask.compute(Xp, yp, yrp)
    out = {}
    for name, kind, make in solver_cases():
        target_d, target_m = (yp, ym) if kind == "classification" else (yrp, yrm)
        make().fit(Xm[:300_000], target_m[:300_000])  # warm-up (JIT; > 2^22 entries)
        t0 = time.perf_counter()
        dsk = make().fit(Xp, target_d)
        dask_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem = make().fit(Xm, target_m)
        mem_s = time.perf_counter() - t0
        if kind == "classification":
            scores = dsk.score(X_test, y_test), mem.score(X_test, y_test)
        else:
            scores = dsk.score(X_test, y_test_clean), mem.score(X_test, y_test_clean)
        out[name] = {"dask_s": dask_s, "in_memory_s": mem_s, "ratio": mem_s / dask_s,
                     "dask_score": float(scores[0]), "in_memory_score": float(scores[1]),
                     "same_event": bool(dsk.dp_event_ == mem.dp_event_),
                     "solver_": dsk.solver_,
                     "schedule": {k: v for k, v in (dsk.solver_params_ or {}).items()
                                  if v is not None}
                     if getattr(dsk, "solver_params_", None) else {}}
        print(name, out[name], flush=True)
    return out


def render_solvers(entries):
    rows = [[name, f"{e['dask_s']:.1f}", f"{SOLVER_N / e['dask_s'] / 1e6:.2f}",
             f"{e['in_memory_s']:.1f}", f"{e['ratio']:.2f}", f"{e['dask_score']:.4f}",
             f"{e['in_memory_score']:.4f}", str(e["same_event"])]
            for name, e in entries.items()]
    return "\n".join([
        f"## Other solvers, {SOLVER_N:.0e} rows persisted on the workers", "",
        "Scores: test accuracy (classifiers), R^2 on clean targets (the robust regressor).",
        "", md_table(["fit", "Dask fit s", "M rows/s", "in-memory fit s",
                      "Dask rows/s over in-memory", "Dask score", "in-memory score",
                      "same event"], rows)])


def in_memory_reference(n, seeds, X_test, y_test):
    """The default estimator fitted in memory on ``n`` rows of the same distribution
    (generated on the client), over ``seeds`` noise seeds: the accuracy a larger Dask fit
    should reach (mean and seed-to-seed standard deviation)."""
    import dask

    X, y = dask.compute(*lazy_problem(n, seed=2), scheduler="threads")
    accs, times = [], []
    for seed in range(seeds):
        t0 = time.perf_counter()
        model = estimator(random_state=seed).fit(X, y)
        times.append(time.perf_counter() - t0)
        accs.append(float(model.score(X_test, y_test)))
    return {"n": n, "accuracies": accs, "fit_s": times, "mean": float(np.mean(accs)),
            "std": float(np.std(accs, ddof=1)) if seeds > 1 else 0.0}


def render_reference(ref):
    return (f"In-memory reference: {ref['n']:.0e} rows of the same distribution, "
            f"{len(ref['accuracies'])} noise seeds: test accuracy {ref['mean']:.4f} "
            f"(standard deviation {ref['std']:.4f}; "
            f"{', '.join(f'{a:.4f}' for a in ref['accuracies'])}), "
            f"median fit {np.median(ref['fit_s']):.1f} s.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="*", type=float, default=[4e6, 2e7])
    ap.add_argument("--keep", action="store_true",
                    help="keep the other sizes of the saved dask_estimator.json")
    ap.add_argument("--solvers", action="store_true",
                    help="add the other solvers' table (module docstring)")
    ap.add_argument("--reference-n", type=float, default=0,
                    help="also fit this many rows in memory over --reference-seeds noise "
                         "seeds (the same distribution): the accuracy the largest Dask fit "
                         "is compared with")
    ap.add_argument("--reference-seeds", type=int, default=5)
    args = ap.parse_args()
    import dask
    from distributed import Client, LocalCluster

    sizes = [int(s) for s in args.sizes]
    compare_n = 4_000_000
    X_test, y_test = dask.compute(*lazy_problem(200_000, seed=99))
    raw = {"sizes": {}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit="10GiB") as cluster, \
            Client(cluster) as client:
        estimator().fit(*lazy_problem(2 * CHUNK_ROWS))          # warm-up (imports, JIT)
        for n in sizes:
            X, y = lazy_problem(n)
            client.run(_worker_reset)
            reset_peak_rss()
            before = proc_status_kib("VmRSS")["VmRSS"]
            t0 = time.perf_counter()
            model = estimator().fit(X, y)
            wall = time.perf_counter() - t0
            growth = (proc_status_kib("VmHWM")["VmHWM"] - before) * 1024
            workers = [v * 1024 for v in client.run(_worker_peak_kib).values()]
            size = n * (D * 8 + 1)
            entry = {"n": n, "bytes": size, "wall_s": wall, "rows_per_s": n / wall,
                     "client_peak_growth_bytes": growth, "worker_peak_bytes": workers,
                     "n_gradient_evals": model.n_gradient_evals_ / n,
                     "accuracy": model.score(X_test, y_test), "epsilon_": model.epsilon_}
            if n == compare_n:
                # the same rows already in the workers' memory: the fit alone, without
                # the lazy generation the other timings include
                from distributed import wait

                Xp, yp = X.persist(), y.persist()
                wait([Xp, yp])
                t0 = time.perf_counter()
                estimator().fit(Xp, yp)
                entry["persisted_s"] = time.perf_counter() - t0
                del Xp, yp
                Xm, ym = dask.compute(X, y)
                # the client has only run Dask fits so far: compile (or load) the
                # in-memory kernels first, as the workers' warm-up did for theirs
                estimator().fit(Xm[:300_000], ym[:300_000])
                t0 = time.perf_counter()
                mem = estimator().fit(Xm, ym)
                entry["in_memory_s"] = time.perf_counter() - t0
                entry["in_memory_accuracy"] = mem.score(X_test, y_test)
                entry["throughput_ratio"] = entry["in_memory_s"] / wall
                entry["persisted_ratio"] = entry["in_memory_s"] / entry["persisted_s"]
                entry["same_event"] = bool(mem.dp_event_ == model.dp_event_)
                del Xm, ym
            raw["sizes"][n] = entry
            print(render_row(entry), flush=True)
        if args.solvers:
            raw["solvers"] = run_solvers(client)
    if args.reference_n:
        raw["reference"] = in_memory_reference(int(args.reference_n), args.reference_seeds,
                                               X_test, y_test)
        print(render_reference(raw["reference"]), flush=True)
    if args.keep:
        from _common import RESULTS_DIR

        path = RESULTS_DIR / "dask_estimator.json"
        if path.exists():
            saved = json.loads(path.read_text())
            raw["sizes"] = {**{int(k): v for k, v in saved["sizes"].items()}, **raw["sizes"]}
            for key in ("solvers", "reference"):
                if key not in raw and key in saved:
                    raw[key] = saved[key]
    rows = [render_row(raw["sizes"][n]) for n in sorted(raw["sizes"])]
    info = machine_info()
    raw["machine"] = info
    text = "\n".join([
        "# DPLogisticRegression on Dask arrays: throughput, memory and accuracy", "",
        __doc__.split("\n\n", 1)[1].rsplit("Writes", 1)[0].strip(), "",
        f"Machine: {info.get('cpu', '?')}, {info.get('nproc', '?')} cores, "
        f"{info.get('mem_total_gib', 0):.1f} GiB.", "",
        md_table(["rows", "data GiB", "Dask fit s", "M rows/s",
                  "client peak growth MiB (of the data)", "worker peaks GiB",
                  "passes over the data", "test accuracy", "in-memory fit s",
                  "Dask rows/s over in-memory", "in-memory test accuracy",
                  "same event", "persisted on the workers: fit s (rows/s over in-memory)"],
                 rows),
    ] + (["", render_reference(raw["reference"])] if raw.get("reference") else [])
      + (["", render_solvers(raw["solvers"])] if raw.get("solvers") else []))
    write_results("dask_estimator", text, raw)
    print(text.rsplit("\n\n", 1)[-1])


if __name__ == "__main__":
    main()
