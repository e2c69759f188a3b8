"""From a raw table to a private classifier: skdp's side, and the report next to the peers.

For every data set x epsilon x seed of ``_raw_protocol`` (the split every contender uses)::

    pipeline  make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=eps,
              random_state=seed) on the raw columns (no bound given: private splines and
              one-hot categories, one budget for the whole fit)
    default   DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=[0, 1],
              random_state=seed) on skdp.datasets.load_*(return_X_y=True), the loader's
              scaling (min-max over the whole file, then rows of norm <= 1), same split

and writes test accuracy, ROC AUC (``decision_function``), fit wall time and the reported
guarantee to ``results/raw_tables_skdp.json`` (cells already there are skipped; the file is
rewritten atomically after each fit).  Then renders ``results/raw_tables.md`` from it and
the peers' ``results/raw_tables_{dpebm,diffprivlib,sklearn}.json`` (``peers_raw_tables.py``).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        nice -n 5 python benchmarks/bench_raw_tables.py [--quick | --report-only]
"""

import os
import sys
from pathlib import Path

# One thread everywhere unless told otherwise (the peers run single-threaded), and the
# shared data next to the repository; both before numpy/numba are imported.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("SKDP_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from _common import (RESULTS_DIR, CpuLoad, _jsonable, fmt_loadavg, log,  # noqa: E402
                     machine_info, machine_info_markdown, md_table, mark, median)
from _raw_protocol import DATASETS, EPSILONS, load_raw, parse_seeds, split  # noqa: E402

OUT_JSON = RESULTS_DIR / "raw_tables_skdp.json"
OUT_MD = RESULTS_DIR / "raw_tables.md"
PIPELINE, DEFAULT = "pipeline", "default (loader's scaling)"
LOADERS = {"adult": "load_adult", "bank": "load_bank", "credit_card": "load_credit_card"}
DAGGER_NOTE = "given bounds read from the training data: no DP guarantee for those bounds"


# ------------------------------------------------------------------------------- fits
def load_both(name, data_home):
    """Raw frame + target of the protocol, and the loader's scaled design (same rows)."""
    import skdp.datasets

    X, y = load_raw(name, data_home)
    t0 = time.perf_counter()
    Z, yz = getattr(skdp.datasets, LOADERS[name])(return_X_y=True, data_home=data_home)
    loader_s = time.perf_counter() - t0
    if not np.array_equal(y, yz):
        raise RuntimeError(f"{name}: the loader's target differs from the raw table's: "
                           "the rows are not in the same order, the splits would differ")
    return X, y, Z, loader_s


def fit_one(config, data, seed, eps):
    """Fit one config on the seed's split; return the row (scores, time, guarantee)."""
    from skdp import DPLogisticRegression, make_private_pipeline

    X, y, Z, _ = data
    if config == PIPELINE:
        Xtr, Xte, ytr, yte = split(X, y, seed)
        model = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=eps,
                                      random_state=seed)
    else:
        Xtr, Xte, ytr, yte = train_test_split(Z, y, test_size=0.3, random_state=seed,
                                              stratify=y)
        model = DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=[0, 1],
                                     random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        secs = time.perf_counter() - t0
    row = {"accuracy": float(model.score(Xte, yte)),
           "auc": float(roc_auc_score(yte, model.decision_function(Xte))),
           "fit_seconds": secs, "epsilon_reported": model.epsilon_,
           "delta_reported": model.delta_,
           "privacy_guaranteed": bool(model.privacy_guaranteed_),
           "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:120]}"
                               for w in caught}),
           "n_train": len(ytr), "y_test_sum": int(np.sum(yte))}
    if config == PIPELINE:
        row["budget_split"] = {k: list(v) for k, v in model.budget_split_.items()}
    else:
        row["scaling"] = ("loader's scaling: min-max over the whole file (data-derived), "
                          "rows divided by sqrt(d) (norm <= 1); data_norm=1.0")
    return row


def write_atomic(path, doc):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(_jsonable(doc), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run(seeds, epsilons, datasets):
    import skdp

    loadavg_start = os.getloadavg()
    probe = CpuLoad()
    doc = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {"tool": "skdp", "rows": []}
    info = machine_info()
    info["loadavg_at_start"] = loadavg_start
    info["nice"] = os.nice(0)
    run_info = {"argv": " ".join(sys.argv), "info": info, "fits": 0, "loader_seconds": {}}
    doc.setdefault("runs", []).append(run_info)
    if doc.get("versions") not in (None, info["versions"]):
        log(f"warning: {OUT_JSON.name} was started with {doc['versions']}, now "
            f"{info['versions']}")
    doc.setdefault("versions", info["versions"])
    doc["protocol"] = {"split": "train_test_split(test_size=0.3, stratify=y, random_state=seed)",
                       "configs": {PIPELINE: "make_private_pipeline(DPLogisticRegression("
                                             "classes=[0, 1]), epsilon=eps, random_state=seed)",
                                   DEFAULT: "DPLogisticRegression(epsilon=eps, data_norm=1.0, "
                                            "classes=[0, 1], random_state=seed) on "
                                            "skdp.datasets.load_*(return_X_y=True)"}}
    done = {(r["dataset"], r["seed"], r["epsilon"], r["config"]) for r in doc["rows"]}
    data_home = os.environ["SKDP_DATA"]
    cache, warm = {}, set()
    for seed in seeds:  # seeds outermost: a cut-short run keeps whole seeds
        for name in datasets:
            todo = [(eps, c) for eps in epsilons for c in (PIPELINE, DEFAULT)
                    if (name, seed, eps, c) not in done]
            if not todo:
                continue
            if name not in cache:
                cache[name] = load_both(name, data_home)
                run_info["loader_seconds"][name] = cache[name][3]
            for eps, config in todo:
                if (name, config) not in warm:  # compile / first-call costs are not timed
                    fit_one(config, cache[name], seed, eps)
                    warm.add((name, config))
                row = {"dataset": name, "seed": seed, "epsilon": eps, "config": config,
                       **fit_one(config, cache[name], seed, eps)}
                doc["rows"].append(row)
                run_info["fits"] += 1
                run_info["cpu_load"] = probe.stop()
                write_atomic(OUT_JSON, doc)
                log(f"{name:12s} seed={seed} eps={eps:<4} {config:27s} acc={row['accuracy']:.4f} "
                    f"auc={row['auc']:.4f} {row['fit_seconds']:.2f}s eps_={row['epsilon_reported']:.3f}"
                    + (f" warnings: {row['warnings']}" if row["warnings"] else ""))
    run_info["cpu_load"] = probe.stop()
    write_atomic(OUT_JSON, doc)
    return skdp.__version__


# ----------------------------------------------------------------------------- report
def read_json(path):
    for _ in range(5):  # a peer may be replacing the file right now
        try:
            return json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError):
            time.sleep(0.5)
    return None


def collect():
    """``{(source, config): {(dataset, eps): [rows]}}`` and the peer documents."""
    cells, docs, leaks = {}, {}, set()
    names = {"skdp": OUT_JSON, **{p: RESULTS_DIR / f"raw_tables_{p}.json"
                                   for p in ("dpebm", "diffprivlib", "sklearn")}}
    for source, path in names.items():
        doc = read_json(path) if path.exists() else None
        if doc is None:
            continue
        docs[source] = doc
        for r in doc["rows"]:
            key = (source, r["config"])
            cells.setdefault(key, {}).setdefault((r["dataset"], r["epsilon"]), []).append(r)
            if source != "skdp" and any("data-derived" in str(v) for v in r.values()):
                leaks.add(key)
    return cells, docs, leaks


COLUMNS = [  # (header, source, config)
    ("skdp bounds-free pipeline", "skdp", PIPELINE),
    ("skdp default, loader's scaling §", "skdp", DEFAULT),
    ("DP-EBM default", "dpebm", "default"),
    ("DP-EBM lr=0.1", "dpebm", "learning_rate=0.1"),
    ("diffprivlib default C", "diffprivlib", "default C"),
    ("diffprivlib oracle C ‡", "diffprivlib", "oracle C"),
    ("sklearn LR (non-private)", "sklearn", "LogisticRegression"),
    ("sklearn HGB (non-private)", "sklearn", "HistGradientBoostingClassifier"),
]


def stats(rows, key):
    v = np.array([r[key] for r in rows], dtype=float)
    return v.mean(), (v.std(ddof=1) if len(v) > 1 else 0.0)


def cell(rows):
    if not rows:
        return "—"
    (a, sa), (u, su) = stats(rows, "accuracy"), stats(rows, "auc")
    if len(rows) == 1:
        return f"{a:.3f} / {u:.3f}"
    return f"{a:.3f} ± {sa:.3f} / {u:.3f} ± {su:.3f}"


def lookup(cells, source, config, dataset, eps):
    eps = None if source == "sklearn" else eps  # non-private: one value per data set
    return cells.get((source, config), {}).get((dataset, eps), [])


def mean_of(cells, config, dataset, eps, key):
    rows = lookup(cells, "skdp", config, dataset, eps)
    return stats(rows, key)[0] if rows else float("nan")


def median_time(rows):
    return median([r["fit_seconds"] for r in rows]) if rows else float("nan")


def targets(cells, datasets, epsilons, loader_seconds=None):
    def m(d, e, k):
        return mean_of(cells, PIPELINE, d, e, k)

    out = [("Adult ε=1: accuracy ≥ 0.845 and AUC ≥ 0.90",
            f"{m('adult', 1.0, 'accuracy'):.4f} / {m('adult', 1.0, 'auc'):.4f}",
            m("adult", 1.0, "accuracy") >= 0.845 and m("adult", 1.0, "auc") >= 0.90),
           ("Adult ε=0.5: accuracy ≥ 0.841", f"{m('adult', 0.5, 'accuracy'):.4f}",
            m("adult", 0.5, "accuracy") >= 0.841),
           ("Bank ε=1: accuracy ≥ 0.896 and AUC ≥ 0.90",
            f"{m('bank', 1.0, 'accuracy'):.4f} / {m('bank', 1.0, 'auc'):.4f}",
            m("bank", 1.0, "accuracy") >= 0.896 and m("bank", 1.0, "auc") >= 0.90)]
    below, slow = [], []
    for d in datasets:
        for e in epsilons:
            if e < 0.5:
                continue
            for k in ("accuracy", "auc"):
                p, q = m(d, e, k), mean_of(cells, DEFAULT, d, e, k)
                if not p >= q:
                    below.append(f"{d} ε={e:g} {k} {p:.4f} < {q:.4f}")
            tp = median_time(lookup(cells, "skdp", PIPELINE, d, e))
            td = median_time(lookup(cells, "skdp", DEFAULT, d, e))
            if not tp <= 2 * td:
                slow.append(f"{d} ε={e:g}: {tp / td:.1f}×")
    out.append(("every data set and ε ≥ 0.5: pipeline ≥ default (loader's scaling) in mean "
                "accuracy and in mean AUC", "; ".join(below) or "all cells", not below))
    loader = (loader_seconds or {}).get("adult")
    if loader:
        ratios = [median_time(lookup(cells, "skdp", PIPELINE, "adult", e))
                  / (median_time(lookup(cells, "skdp", DEFAULT, "adult", e)) + loader)
                  for e in epsilons]
        out.append(("Adult: pipeline fit ≤ 2 × (default fit + the loader's preprocessing), "
                    "the issue's speed target", " / ".join(f"{r:.2f}×" for r in ratios),
                    all(r <= 2.0 for r in ratios)))
    out.append(("stricter, every data set: pipeline fit ≤ 2 × the default's fit alone (the "
                "loader's preprocessing excluded)", "; ".join(slow) or "all cells", not slow))
    return out


def render(argv, quick):
    cells, docs, leaks = collect()
    sk = docs.get("skdp", {"rows": [], "runs": []})
    datasets = [d for d in DATASETS if any(r["dataset"] == d for r in sk["rows"])] or list(DATASETS)
    epsilons = sorted({r["epsilon"] for r in sk["rows"]}) or list(EPSILONS)
    runs = [r for r in sk.get("runs", []) if r["fits"]]
    out = ["# From a raw table to a private classifier: skdp and its peers", "",
           "Written by `benchmarks/bench_raw_tables.py` (skdp side) from "
           "`results/raw_tables_skdp.json` and the peers' `results/raw_tables_{dpebm,"
           "diffprivlib,sklearn}.json` (`benchmarks/peers_raw_tables.py`). Protocol "
           "(`benchmarks/_raw_protocol.py`): raw UCI columns, 70/30 stratified split "
           "`train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)`, the "
           "same seeds and rows for every contender. Test accuracy / ROC AUC, mean ± std "
           "(ddof=1) over seeds (no ± with one seed).", "",
           f"- rendered by: `{argv}`", ""]
    if runs:
        out.append("skdp runs (resumed runs add cells; each cell was fitted once):")
        out.append("")
        for r in runs:
            i = r["info"]
            load = r.get("cpu_load") or {}
            out.append(f"- `{r['argv']}`: {i['date_utc']}, {r['fits']} fits, nice "
                       f"{i.get('nice')}, NUMBA_NUM_THREADS={i['env'].get('NUMBA_NUM_THREADS')}"
                       f", OMP_NUM_THREADS={i['env'].get('OMP_NUM_THREADS')} (numba used "
                       f"{i['numba_num_threads']} thread(s)), load average "
                       f"{fmt_loadavg(i['loadavg_at_start'])} at start; other processes used "
                       f"{load.get('external_cores', float('nan')):.2f} cores on average")
        out += ["", "Machine and versions of the last skdp run:", "",
                machine_info_markdown(runs[-1]["info"], None), ""]
    out += ["Peers:", ""]
    for p in ("dpebm", "diffprivlib", "sklearn"):
        if p in docs:
            d = docs[p]
            v = ", ".join(f"{k} {x}" for k, x in d["versions"].items())
            r = d.get("runs", [{}])
            out.append(f"- {p}: {v}; runs: " + "; ".join(
                f"{x.get('started')} seeds {x.get('seeds')} (OMP_NUM_THREADS="
                f"{x.get('OMP_NUM_THREADS')}, nice {x.get('nice')})" for x in r))
    out += ["", "Accuracy / AUC", ""]

    for d in datasets:
        headers = ["ε"] + [h + (" †" if (s, c) in leaks else "") for h, s, c in COLUMNS] + \
                  ["seeds per cell (column order)"]
        rows = []
        for e in epsilons:
            found = [lookup(cells, s, c, d, e) for _, s, c in COLUMNS]
            rows.append([f"{e:g}"] + [cell(f) for f in found] +
                        ["/".join(str(len(f)) for f in found)])
        out += [f"### {d}", "", md_table(headers, rows, "r" * len(headers)), ""]
    out += ["† " + DAGGER_NOTE + " (DP-EBM: `privacy_bounds` = training min/max; diffprivlib: "
            "training one-hot categories, min-max scaling and `data_norm`).",
            "‡ C chosen on the test set among {0.01, 0.1, 1, 10, 100} (an oracle, not a "
            "private choice).",
            "§ the loader's scaling: `skdp.datasets.load_*(return_X_y=True)` min-max scales "
            "with the min and max over the whole file (train and test rows: data-derived, no "
            "DP guarantee for those bounds), then divides by √d so rows have norm ≤ 1 "
            "(`data_norm=1.0`).",
            "The sklearn columns are non-private and do not depend on ε (one value per data "
            "set, repeated in each row). The skdp pipeline is given nothing but the public "
            "schema (numeric vs string dtypes) and `classes=[0, 1]`.", ""]

    out += ["## Fit time", "",
            "Median wall seconds of one `fit` (training split only, first-call warm-up not "
            "timed). The default's preprocessing happens in the loader, outside its fit: the "
            "loader column is one `load_*(return_X_y=True)` call (whole file, read + encode).",
            ""]
    trows = []
    for d in datasets:
        loader = [r["loader_seconds"].get(d) for r in runs if r["loader_seconds"].get(d)]
        for e in epsilons:
            tp = median_time(lookup(cells, "skdp", PIPELINE, d, e))
            td = median_time(lookup(cells, "skdp", DEFAULT, d, e))
            lo = median(loader) if loader else float("nan")
            peers = [median_time(lookup(cells, s, c, d, e)) for s, c in
                     (("dpebm", "default"), ("diffprivlib", "default C"),
                      ("sklearn", "LogisticRegression"))]
            trows.append([d, f"{e:g}", f"{tp:.3f}", f"{td:.3f}", f"{tp / td:.1f}",
                          f"{lo:.2f}", f"{tp / (td + lo):.2f}"] + [f"{p:.3f}" for p in peers])
    out += [md_table(["data set", "ε", "skdp pipeline", "skdp default", "pipeline / default",
                      "loader (s)", "pipeline / (default + loader)", "DP-EBM default",
                      "diffprivlib default C", "sklearn LR"], trows, "llrrrrrrrr"), "",
            "Peers' times come from their own runs (other processes, `nice -n 10`, one "
            "thread); they are context, not a controlled comparison.", ""]

    out += ["## Targets (skdp bounds-free pipeline, means over seeds)", ""]
    out.append(md_table(["target", "measured", "holds"],
                        [[t, v, mark(ok) if "nan" not in v else "not measured"]
                         for t, v, ok in targets(cells, datasets, epsilons, {
                             d: median([r["loader_seconds"][d] for r in runs
                                        if r["loader_seconds"].get(d)])
                             for d in datasets
                             if any(r["loader_seconds"].get(d) for r in runs)})],
                        "llc"))
    if quick:
        out += ["", "**Quick run: one seed, ε = 1 only; not the full protocol.**"]
    OUT_MD.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    return OUT_MD


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9", help="e.g. 0-9, 0,3,5 or 0 (default 0-9)")
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--report-only", action="store_true", help="re-render the markdown only")
    ap.add_argument("--quick", action="store_true", help="1 seed, ε = 1 only")
    args = ap.parse_args(argv)
    seeds = [0] if args.quick else parse_seeds(args.seeds)
    epsilons = [1.0] if args.quick else [float(e) for e in args.epsilons.split(",")]
    datasets = args.datasets.split(",")
    if unknown := set(datasets) - set(DATASETS):
        ap.error(f"unknown data sets {sorted(unknown)}; expected {DATASETS}")
    if not args.report_only:
        run(seeds, epsilons, datasets)
    log(f"wrote {render(' '.join(['python'] + sys.argv), args.quick)}")


if __name__ == "__main__":
    main()
