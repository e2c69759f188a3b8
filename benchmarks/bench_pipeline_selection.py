"""Does private selection pay for itself?  The default private pipeline against a private
grid search over the same pipeline at the same total epsilon (issue 47, deliverable 5).

For every data set x epsilon x seed, on the split of ``_raw_protocol`` (classifiers:
``split``, 70/30 stratified; regressors: ``split_regression``, 70/30)::

    default   make_private_pipeline(model, epsilon=eps, delta=1e-6, numeric=..., categorical=...,
              random_state=seed)
    searched  DPGridSearchCV(<the same pipeline, random_state=None>, GRID, epsilon=eps,
              delta=1e-6, scoring=SCORER, random_state=seed)   (refit on the training rows)
    oracle    every grid candidate fitted as the default is (full eps, random_state=seed);
              the best *test* score among them (non-private: an upper reference only)

with ``model`` = ``DPLogisticRegression(classes=[0, 1])`` (adult, bank, credit_card; test
accuracy; the search's default accuracy scorer) or ``DPHuberRegressor(y_bound=1.0)``
(airfoil, concrete, wine; the target mapped to [-1, 1] by a public documented range, see
``_raw_protocol.REGRESSION_TARGET_RANGE``; test R^2; the search scores
``|y - prediction|`` clipped to [0, 1]).  The grid candidate equal to the default (all
"auto") is the default's own fit, so ``oracle >= default`` by construction.

    ORACLE GAP = oracle - default          (what a perfect free choice would gain)
    COST       = default - searched        (positive: the search lost)

Writes ``results/pipeline_selection.json`` (raw rows; cells already there are skipped and
the file is rewritten atomically after each cell) and renders
``results/pipeline_selection.md``.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        nice -n 10 python benchmarks/bench_pipeline_selection.py [--seeds 0-2] \\
        [--datasets ...] [--epsilons ...] [--grid main] [--part NAME] [--report-only]

``--part NAME`` lets two processes run side by side (e.g. classifiers and regressors);
each writes its own part file, and the next run without ``--part`` (``--report-only``
will do) merges them and renders.
"""

import os
import sys
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("SKDP_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import accuracy_score, r2_score  # noqa: E402
from sklearn.model_selection import ParameterGrid  # noqa: E402

from _common import (REPO_ROOT, RESULTS_DIR, CpuLoad, _jsonable, fmt_loadavg, log,  # noqa: E402
                     machine_info, machine_info_markdown, md_table, mark, median)
from _raw_protocol import (CATEGORICAL, DATASETS, EPSILONS, NUMERIC,  # noqa: E402
                           REGRESSION_DATASETS, REGRESSION_TARGET_RANGE, load_raw,
                           load_raw_regression, parse_seeds, split, split_regression)

OUT_JSON = RESULTS_DIR / "pipeline_selection.json"
OUT_MD = RESULTS_DIR / "pipeline_selection.md"
DELTA = 1e-6
ALL_DATASETS = DATASETS + REGRESSION_DATASETS
SCORE_UPPER = 1.0  # per-row |y - prediction| clipped to [0, 1] (targets live in [-1, 1])

# The grids.  "main": the model's L2 strength and the spline resolution, each with the
# default ("auto") and one alternative: 4 candidates, so E[K] = 4 runs plus the refit.
GRIDS = {
    "main": {"model__alpha": ["auto", 1e-2], "columns__numeric__n_knots": ["auto", 12]},
    # two candidates only (E[K] = 2: the per-fit budget shrinks less): the default and the
    # finer knots the oracle of "main" prefers on concrete
    "knots_auto_12": {"columns__numeric__n_knots": ["auto", 12]},
    # two candidates: the default and coarser knots
    "knots_auto_6": {"columns__numeric__n_knots": ["auto", 6]},
    # two candidates: the default and a stronger L2 penalty
    "alpha_auto_0.1": {"model__alpha": ["auto", 0.1]},
}


def is_regression(name):
    return name in REGRESSION_DATASETS


def load(name, data_home):
    X, y = (load_raw_regression if is_regression(name) else load_raw)(name, data_home)
    return X, y, NUMERIC(X), CATEGORICAL(X)


def make_pipe(name, eps, numeric, categorical, seed):
    from skdp import DPHuberRegressor, DPLogisticRegression, make_private_pipeline

    model = DPHuberRegressor(y_bound=1.0) if is_regression(name) else \
        DPLogisticRegression(classes=[0, 1])
    return make_private_pipeline(model, epsilon=eps, delta=DELTA, numeric=numeric,
                                 categorical=categorical, random_state=seed)


def test_score(name, model, Xte, yte):
    pred = model.predict(Xte)
    return float(r2_score(yte, pred) if is_regression(name) else accuracy_score(yte, pred))


def scorer_for(name):
    if not is_regression(name):
        return None  # the search's default: accuracy
    from skdp.model_selection import make_private_scorer

    return make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=SCORE_UPPER,
                               greater_is_better=False)


def key_of(params):
    return ",".join(f"{k.split('__')[-1]}={v}" for k, v in sorted(params.items()))


def caught_text(caught):
    return sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught})


def run_cell(name, data, seed, eps, grid_name):
    """Default, oracle candidates and the search on one split; one JSON row."""
    from skdp.model_selection import DPGridSearchCV

    X, y, numeric, categorical = data
    Xtr, Xte, ytr, yte = (split_regression if is_regression(name) else split)(X, y, seed)
    grid = GRIDS[grid_name]
    row = {"dataset": name, "seed": seed, "epsilon": eps, "grid": grid_name,
           "n_train": len(ytr), "n_test": len(yte),
           "metric": "r2" if is_regression(name) else "accuracy"}

    # default (its fit is also the all-"auto" candidate of the oracle)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        default = make_pipe(name, eps, numeric, categorical, seed).fit(Xtr, ytr)
        row["default_seconds"] = time.perf_counter() - t0
    row["default"] = test_score(name, default, Xte, yte)
    row["default_epsilon_reported"] = default.epsilon_
    row["default_model"] = {"solver_": getattr(default[-1], "solver_", None),
                            "alpha_": getattr(default[-1], "alpha_", None)}
    row["default_warnings"] = caught_text(caught)

    # oracle: every candidate at the full epsilon, best test score (non-private reference)
    cands = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for params in ParameterGrid(grid):
            k = key_of(params)
            if all(v == "auto" for v in params.values()):
                cands[k] = row["default"]
                continue
            try:
                m = make_pipe(name, eps, numeric, categorical, seed).set_params(**params)
                cands[k] = test_score(name, m.fit(Xtr, ytr), Xte, yte)
            except Exception:  # a finding, reported as such
                cands[k] = None
                row.setdefault("oracle_errors", {})[k] = traceback.format_exc()
    row["candidates_full_eps"] = cands
    row["oracle_warnings"] = caught_text(caught)
    ok = {k: v for k, v in cands.items() if v is not None}
    row["oracle_best"] = max(ok, key=ok.get)
    row["oracle"] = ok[row["oracle_best"]]

    # the private search at the same total epsilon
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            search = DPGridSearchCV(make_pipe(name, eps, numeric, categorical, None), grid,
                                    epsilon=eps, delta=DELTA, scoring=scorer_for(name),
                                    random_state=seed).fit(Xtr, ytr)
        except Exception:
            search = None
            row["search_error"] = traceback.format_exc()
        row["search_seconds"] = time.perf_counter() - t0
    row["search_warnings"] = caught_text(caught)
    if search is not None:
        row["searched"] = test_score(name, search, Xte, yte)
        row["search_selected"] = key_of(search.best_params_)
        row["search_best_score"] = float(search.best_score_)
        row["search_epsilon_reported"] = search.epsilon_
        row["search_delta_reported"] = search.delta_
        row["search_privacy_guaranteed"] = bool(search.privacy_guaranteed_)
        bs = search.budget_split_
        row["search_budget"] = {k: bs.get(k) for k in (
            "fit_mu", "fit_epsilon_at_delta", "score_noise_std", "epsilon_selection",
            "epsilon_total", "delta_total", "n_repetitions_mean")}
    return row


def write_atomic(path, doc):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(_jsonable(doc), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def tree_state():
    out = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True,
                         cwd=str(REPO_ROOT)).stdout
    # this script's own output files do not count (a parallel --part run writes them)
    return [ln for ln in out.splitlines()
            if ln.strip() and "benchmarks/results/pipeline_selection" not in ln]


def part_path(part):
    return OUT_JSON if not part else RESULTS_DIR / f"pipeline_selection.part-{part}.json"


def merge_parts():
    """Fold the ``--part`` files (parallel runs) into ``pipeline_selection.json``."""
    doc = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {"rows": []}
    for path in sorted(RESULTS_DIR.glob("pipeline_selection.part-*.json")):
        part = json.loads(path.read_text())
        have = {(r["dataset"], r["seed"], r["epsilon"], r["grid"]) for r in doc["rows"]}
        doc["rows"] += [r for r in part["rows"]
                        if (r["dataset"], r["seed"], r["epsilon"], r["grid"]) not in have]
        doc.setdefault("runs", []).extend(part.get("runs", []))
        doc["protocol"] = part.get("protocol", doc.get("protocol"))
        write_atomic(OUT_JSON, doc)
        path.unlink()
        log(f"merged {path.name}")


def run(seeds, epsilons, datasets, grid_name, part=None):
    import skdp

    out_json = part_path(part)
    probe = CpuLoad()
    doc = json.loads(out_json.read_text()) if out_json.exists() else {"rows": []}
    info = machine_info()
    info["nice"] = os.nice(0)
    info["skdp_file"] = skdp.__file__
    info["git_status_porcelain"] = tree_state()
    if info["git_status_porcelain"]:
        log(f"warning: the tree is not clean: {info['git_status_porcelain']}")
    run_info = {"argv": " ".join(sys.argv), "grid": grid_name, "info": info, "cells": 0}
    doc.setdefault("runs", []).append(run_info)
    doc["protocol"] = {
        "delta": DELTA, "grids": GRIDS,
        "split_classification": "train_test_split(test_size=0.3, stratify=y, random_state=seed)",
        "split_regression": "train_test_split(test_size=0.3, random_state=seed)",
        "regression_target": {k: f"(y - {(a + b) / 2:g}) / {(b - a) / 2:g}  (public range "
                                  f"[{a:g}, {b:g}])"
                              for k, (a, b) in REGRESSION_TARGET_RANGE.items()},
        "regression_scorer": f"|y - prediction| clipped to [0, {SCORE_UPPER:g}], lower is better",
    }
    done = {(r["dataset"], r["seed"], r["epsilon"], r["grid"]) for r in doc["rows"]}
    if out_json != OUT_JSON and OUT_JSON.exists():  # cells the main file already has
        done |= {(r["dataset"], r["seed"], r["epsilon"], r["grid"])
                 for r in json.loads(OUT_JSON.read_text())["rows"]}
    data_home = os.environ["SKDP_DATA"]
    cache = {}
    for seed in seeds:  # seeds outermost: a cut-short run keeps whole seeds
        for name in datasets:
            todo = [e for e in epsilons if (name, seed, e, grid_name) not in done]
            if not todo:
                continue
            if name not in cache:
                cache[name] = load(name, data_home)
                with warnings.catch_warnings():  # first call: numba cache loads, not timed
                    warnings.simplefilter("ignore")
                    X, y = cache[name][:2]
                    make_pipe(name, 1.0, *cache[name][2:], 0).fit(X, y)
            for eps in todo:
                row = run_cell(name, cache[name], seed, eps, grid_name)
                doc["rows"].append(row)
                run_info["cells"] += 1
                run_info["cpu_load"] = probe.stop()
                write_atomic(out_json, doc)
                log(f"{name:11s} seed={seed} eps={eps:<4g} default={row['default']:.4f} "
                    f"searched={row.get('searched', float('nan')):.4f} "
                    f"oracle={row['oracle']:.4f} ({row['oracle_best']}) "
                    f"pick={row.get('search_selected')} search {row['search_seconds']:.1f}s"
                    + (" SEARCH ERROR" if "search_error" in row else ""))
    run_info["cpu_load"] = probe.stop()
    write_atomic(out_json, doc)


# ----------------------------------------------------------------------------- report
def cells_of(rows, grid_name):
    out = {}
    for r in rows:
        if r["grid"] == grid_name:
            out.setdefault((r["dataset"], r["epsilon"]), []).append(r)
    return out


def summarise(rs):
    ok = [r for r in rs if "searched" in r]
    d = np.array([r["default"] for r in ok])
    s = np.array([r["searched"] for r in ok])
    o = np.array([r["oracle"] for r in ok])
    cost = d - s
    return {"n": len(rs), "n_ok": len(ok), "errors": len(rs) - len(ok),
            "default": d.mean(), "default_sd": d.std(ddof=1) if len(d) > 1 else 0.0,
            "searched": s.mean(), "searched_sd": s.std(ddof=1) if len(s) > 1 else 0.0,
            "searched_min": s.min(), "oracle": o.mean(), "gap": (o - d).mean(),
            "cost": cost.mean(), "cost_se": cost.std(ddof=1) / np.sqrt(len(cost))
            if len(cost) > 1 else float("nan"),
            "wins": int(np.sum(s > d)), "ties": int(np.sum(s == d)),
            "search_s": median([r["search_seconds"] for r in ok]),
            "default_s": median([r["default_seconds"] for r in ok]),
            "fit_eps": median([r["search_budget"]["fit_epsilon_at_delta"] for r in ok]),
            "picks": {k: sum(r.get("search_selected") == k for r in ok)
                      for k in sorted({r.get("search_selected") for r in ok})},
            "oracle_picks": {k: sum(r["oracle_best"] == k for r in ok)
                             for k in sorted({r["oracle_best"] for r in ok})}}


def target_checks(S):
    """Per cell: (t1 applies, t1 met), (t2 applies, t2 met)."""
    t1 = (S["eps"] >= 1.0, S["cost"] <= 0.01)
    applies2 = S["gap"] >= 2 * S["cost"]
    t2 = (applies2, S["searched"] > S["default"])
    return t1, t2


def fmt_picks(p):
    short = {"alpha=auto,n_knots=auto": "default"}
    return ", ".join(f"{short.get(k, k)} ×{v}" for k, v in p.items())


def render(argv):
    doc = json.loads(OUT_JSON.read_text())
    rows = doc["rows"]
    grids = [g for g in GRIDS if any(r["grid"] == g for r in rows)]
    runs = [r for r in doc.get("runs", []) if r["cells"]]
    out = ["# Does private selection pay for itself?", "",
           "Written by `benchmarks/bench_pipeline_selection.py` from "
           "`results/pipeline_selection.json` (issue 47, deliverable 5). Numbers are "
           "measured, never edited.", "",
           f"- rendered by: `{argv}`", "",
           "## Protocol", "",
           "- **default**: `make_private_pipeline(model, epsilon=ε, delta=1e-6, numeric=…, "
           "categorical=…, random_state=seed)` at the total ε.",
           "- **searched**: `DPGridSearchCV(<same pipeline>, grid, epsilon=ε, delta=1e-6, "
           "random_state=seed)` at the same total ε (Papernot–Steinke repeat-and-select, "
           "holdout 0.2, E[K] = number of candidates, refit of the selected candidate on all "
           "training rows — all inside ε).",
           "- **oracle**: every grid candidate fitted like the default (full ε, same seed), "
           "best *test* score (a non-private reference: what a free, perfect choice would "
           "give). The all-`auto` candidate is the default's own fit, so oracle ≥ default.",
           "- **gap** = oracle − default; **cost** = default − searched (positive: the search "
           "lost). Means over seeds; ± is the standard deviation over seeds (ddof=1).",
           "- Classifiers (adult, bank, credit_card): `DPLogisticRegression(classes=[0, 1])`, "
           "test accuracy, the search's default accuracy scorer; `_raw_protocol.split` "
           "(70/30 stratified). Full data sets (Adult: 22,792 training rows), no subsample.",
           "- Regressors (airfoil, concrete, wine red+white with `color` as a categorical "
           "column): `DPHuberRegressor(y_bound=1.0)` (default `huber_threshold=1`), test R²; "
           "target mapped to [−1, 1] by a public range: "
           + ", ".join(f"{k} [{a:g}, {b:g}]" for k, (a, b) in REGRESSION_TARGET_RANGE.items())
           + " (documented scale for wine, physical domain for the others; never read from "
             "the rows); search scorer `make_private_scorer(lambda t, p: np.abs(t - p), "
             "lower=0, upper=1, greater_is_better=False)`; `_raw_protocol.split_regression` "
             "(70/30).",
           "- Same split and seed for all three contenders in a cell.", ""]
    out += ["Grids:", ""]
    for g in grids:
        out.append(f"- `{g}`: `{GRIDS[g]}` ({len(ParameterGrid(GRIDS[g]))} candidates)")
    out += ["", "Runs:", ""]
    for r in runs:
        i = r["info"]
        load = r.get("cpu_load") or {}
        out.append(f"- `{r['argv']}` (grid `{r['grid']}`): {i['date_utc']}, {r['cells']} "
                   f"cells, git commit {i['git']['commit']}, tree "
                   + ("clean" if not i.get("git_status_porcelain") else
                      f"NOT clean: {i['git_status_porcelain']}")
                   + f", nice {i.get('nice')}, numba threads {i['numba_num_threads']} "
                   f"(NUMBA_NUM_THREADS={i['env'].get('NUMBA_NUM_THREADS')}, OMP_NUM_THREADS="
                   f"{i['env'].get('OMP_NUM_THREADS')}), the same for every contender; "
                   f"wall {load.get('wall_s', float('nan')) / 60:.1f} min, load average "
                   f"{fmt_loadavg(i['loadavg_at_start'])} at start, other processes used "
                   f"{load.get('external_cores', float('nan')):.2f} cores on average")
    if runs:
        out += ["", "Machine and versions of the last run:", "",
                machine_info_markdown(runs[-1]["info"], None), ""]

    errors = [r for r in rows if "search_error" in r or "oracle_errors" in r]
    for g in grids:
        C = cells_of(rows, g)
        ds = [d for d in ALL_DATASETS if any(k[0] == d for k in C)]
        eps = sorted({k[1] for k in C})
        table, t1_fail, t2_fail, t2_n, t1_n = [], [], [], 0, 0
        for d in ds:
            for e in eps:
                rs = C.get((d, e))
                if not rs:
                    continue
                S = summarise(rs)
                S["eps"] = e
                if not S["n_ok"]:
                    table.append([d, f"{e:g}", "—", "search failed", "", "", "", "", "", ""])
                    continue
                (a1, m1), (a2, m2) = target_checks(S)
                t1_n += a1
                t2_n += a2
                if a1 and not m1:
                    t1_fail.append(f"{d} ε={e:g} (cost {S['cost']:+.4f})")
                if a2 and not m2:
                    t2_fail.append(f"{d} ε={e:g} (gap {S['gap']:.4f}, cost {S['cost']:+.4f})")
                table.append([
                    d, f"{e:g}", f"{S['default']:.4f} ± {S['default_sd']:.4f}",
                    f"{S['searched']:.4f} ± {S['searched_sd']:.4f}", f"{S['oracle']:.4f}",
                    f"{S['gap']:+.4f}", f"{S['cost']:+.4f} ± {S['cost_se']:.4f}",
                    (mark(m1) if a1 else "n/a") + " / " + (mark(m2) if a2 else "n/a"),
                    f"{S['wins']}/{S['n_ok']}" + (f" ({S['errors']} err)" if S["errors"] else ""),
                    f"{S['search_s']:.1f} ({S['default_s']:.2f})"])
        out += [f"## Grid `{g}`: headline", "",
                "Test accuracy (classifiers) or test R² (regressors). cost ± its standard "
                "error over seeds (paired). Targets: T1 = at ε ≥ 1 cost ≤ 0.01; T2 = where "
                "gap ≥ 2·cost, searched > default (n/a: the condition does not hold). "
                "wins: seeds where searched > default. Time: median wall seconds of one "
                "search (of one default fit).", "",
                md_table(["data set", "ε", "default", "searched", "oracle", "gap", "cost",
                          "T1 / T2", "wins", "search s (default s)"], table, "lrrrrrrcrr"),
                ""]
        out += ["Targets (evaluated on the means over seeds):", "",
                f"- T1, searched within 0.01 of the default at every ε ≥ 1: "
                + (f"**met** in all {t1_n} cells" if not t1_fail else
                   f"**not met** in {len(t1_fail)} of {t1_n} cells: " + "; ".join(t1_fail)),
                f"- T2, wherever gap ≥ 2 × cost the search beats the default: "
                + (f"**met** in all {t2_n} cells where it applies" if not t2_fail else
                   f"**not met** in {len(t2_fail)} of {t2_n} cells where it applies: "
                   + "; ".join(t2_fail)), ""]
        summ = {k: dict(summarise(v), eps=k[1]) for k, v in C.items()
                if any("searched" in r for r in v)}
        cls_gap = [(S["gap"], k) for k, S in summ.items() if not is_regression(k[0])]
        ratio = [S["fit_eps"] / k[1] for k, S in summ.items()]
        blow = [r for rs in C.values() for r in rs
                if is_regression(r["dataset"]) and r.get("searched", 0) < -1]
        n_reg = sum(is_regression(r["dataset"]) for rs in C.values() for r in rs)
        out += ["Where it falls short (computed from the rows above):", ""]
        if cls_gap:
            g_max, k_max = max(cls_gap)
            out.append(f"- Classifiers: the largest oracle gap is {g_max:+.4f} ({k_max[0]} "
                       f"ε={k_max[1]:g}); the default is already (nearly) the best candidate, "
                       "so no choice among these candidates can repay a cost of order 0.01.")
        if ratio:
            out.append(f"- Each candidate (and the refit) is fitted at a per-fit ε of "
                       f"{min(ratio):.2f}–{max(ratio):.2f} × the total ε: that, not a wrong "
                       "pick, is most of the cost: whichever candidate wins, the searched "
                       "model is fitted with that fraction of the default's budget.")
        if n_reg:
            out.append(f"- Regressors: {len(blow)} of {n_reg} searched fits have test R² < −1"
                       + (" (predictions far outside the public target range: at the search's "
                          "per-fit ε the models are dominated by noise, and the noisy "
                          "validation score cannot tell them apart); the mean R² of those "
                          "cells is dominated by such seeds." if blow else "."))
        out.append("")
        out += ["What was chosen (search picks over seeds; the oracle's best candidate on "
                "test) and the per-fit budget of the search:", ""]
        prow = []
        for d in ds:
            for e in eps:
                rs = C.get((d, e))
                if not rs:
                    continue
                S = summarise(rs)
                if S["n_ok"]:
                    prow.append([d, f"{e:g}", f"{S['fit_eps']:.3f}", fmt_picks(S["picks"]),
                                 fmt_picks(S["oracle_picks"]), f"{S['searched_min']:.4f}"])
        out += [md_table(["data set", "ε", "per-fit ε of the search", "search picks",
                          "oracle picks", "worst searched seed"], prow, "llrllr"), ""]
    out += ["## Errors", ""]
    if not errors:
        out += ["No search or candidate fit raised.", ""]
    for r in errors:
        for label, tb in ([("search", r["search_error"])] if "search_error" in r else []) + \
                [(f"candidate {k}", v) for k, v in r.get("oracle_errors", {}).items()]:
            out += [f"- {r['dataset']} ε={r['epsilon']:g} seed={r['seed']} grid `{r['grid']}` "
                    f"{label}:", "", "```", tb.rstrip(), "```", ""]
    OUT_MD.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    return OUT_MD


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-2", help="e.g. 0-2, 0,3,5 or 0 (default 0-2)")
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--datasets", default=",".join(ALL_DATASETS))
    ap.add_argument("--grid", default="main", choices=sorted(GRIDS))
    ap.add_argument("--part", default=None,
                    help="write pipeline_selection.part-PART.json (for runs in parallel "
                         "processes) and do not render; a later run without --part merges "
                         "the parts into pipeline_selection.json and renders")
    ap.add_argument("--report-only", action="store_true", help="re-render the markdown only")
    args = ap.parse_args(argv)
    datasets = args.datasets.split(",")
    if unknown := set(datasets) - set(ALL_DATASETS):
        ap.error(f"unknown data sets {sorted(unknown)}; expected {ALL_DATASETS}")
    if not args.report_only:
        run(parse_seeds(args.seeds), [float(e) for e in args.epsilons.split(",")], datasets,
            args.grid, args.part)
    if args.part:
        return
    merge_parts()
    log(f"wrote {render(' '.join(['python'] + sys.argv))}")


if __name__ == "__main__":
    main()
