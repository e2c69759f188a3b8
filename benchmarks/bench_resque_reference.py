"""NOT PRIVATE -- query counts and depth of the paper's accelerated ReSQue pipeline, measured.

Runs the non-private reference of ``benchmarks/_resque_accel_reference.py`` (Monteiro-Svaiter
ball acceleration with ReSQue-SGD ball oracles, one batched query round per oracle call)
side by side with two baselines on the same problem and seeds -- the non-accelerated ball
iteration ``x <- Ball(x, lam_*)`` (same oracle) and sequential SGD on ``F_rho`` (one query
per round) -- over a grid of targets ``eps`` and dimensions ``d``.  Each method runs until
``F_rho(x) - min F_rho <= eps`` (measured with the closed form; measurement, not queries)
and reports the outer iterations, line-search calls, total gradient queries, query depth
(batched rounds) and wall time at that point.  Log-log slopes of depth and queries in
``1/eps`` and in ``d`` are fitted (least squares on the per-cell medians over seeds) and
compared with the paper's claims (Thm 1: depth ``d^(1/3) eps^(-2/3)``, queries
``d^(1/3) eps^(-2/3) + eps^(-2)``; SGD: depth ``eps^(-2)``).

Problems (``make_problem``; unit rows, ``L = 1``, margins O(1) along ``e_1`` in every ``d``):

* ``absolute, sharp`` (primary): ``y = <a, w*>`` exactly, ``R = 1``, ``||w*|| = 0.6`` --
  a sharp minimum, the nonsmooth case ReSQue smoothing is for;
* ``absolute, noise 0.1``: ``y = <a, w*> + 0.1 Laplace``: locally quadratic (easy for SGD);
* ``logistic`` (``R = 4``), ``d = 20`` only.

n = 4000 rows.  Full grid: eps in {0.1, 0.05, 0.025, 0.0125, 0.00625}; primary: d in
{5, 20, 80, 320}, 3 seeds; noise 0.1: d in {5, 20, 80}, 2 seeds; logistic: d = 20, 2 seeds
(about 10 minutes on the shared 2-core machine).  ``--quick`` (about 10 s): primary problem
only, eps in {0.1, 0.05, 0.025, 0.0125}, d in {5, 20, 80}, 2 seeds.  The accelerated
pipeline runs twice: general-form ReSQue weights (``resque_estimates_full``, d-dimensional
query points) and the 1-D GLM form.

    python benchmarks/bench_resque_reference.py [--quick]
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _resque_accel_reference as ref  # noqa: E402
from _common import (  # noqa: E402
    CpuLoad,
    log,
    machine_info,
    machine_info_markdown,
    md_table,
    write_results,
)

N_ROWS = 4000
METHODS = ("accelerated", "accelerated_glm", "ball_iteration", "sgd")
RUNNERS = {"accelerated": ref.run_accelerated,
           "accelerated_glm": lambda *a, **k: ref.run_accelerated(*a, form="glm", **k),
           "ball_iteration": ref.run_ball_iteration, "sgd": ref.run_sgd}
# claimed log-log slopes of depth and queries (Thm 1 / SGD), in 1/eps and in d
CLAIMS = {
    ("accelerated", "depth"): (2 / 3, 1 / 3, "d^(1/3) eps^(-2/3) (Thm 1)"),
    ("accelerated", "queries"): (2.0, 0.0, "d^(1/3) eps^(-2/3) + eps^(-2) (Thm 1; eps^-2 "
                                 "dominates)"),
    ("accelerated_glm", "depth"): (2 / 3, 1 / 3, "as accelerated (1-D GLM ReSQue weights)"),
    ("accelerated_glm", "queries"): (2.0, 0.0, "as accelerated"),
    ("ball_iteration", "depth"): (1.0, 0.5, "R/r = sqrt(d)/eps (unaccelerated, logs dropped)"),
    ("ball_iteration", "queries"): (None, None, "(no claim)"),
    ("sgd", "depth"): (2.0, 0.0, "eps^(-2) (worst case)"),
    ("sgd", "queries"): (2.0, 0.0, "eps^(-2) (worst case)"),
}


def warm():
    """Compile / load every kernel once (never timed)."""
    P = ref.make_problem(200, 3, "absolute", seed=0)
    for form in ("full", "glm"):
        ref.run_accelerated(P, 0.3, seed=0, form=form, k_max=1)
    ref.run_ball_iteration(P, 0.3, seed=0, k_max=1)
    ref.run_sgd(P, 0.3, seed=0, t_max=10)


def run_cell(problem_name, loss, noise, d, eps, seeds):
    """All methods, all seeds, on one (problem, d, eps); returns one row per method/seed."""
    P = ref.make_problem(N_ROWS, d, loss, seed=1000 + d, noise=noise)
    sch = ref.schedule_for(P, eps)
    x_start = np.zeros(d)
    x_start[0] = 0.6 * P.R
    x_rho, f_star = P.minimise(sch.rho, x_start=x_start)
    f_raw_at_xrho = P.value(x_rho, 0.0)
    rows = []
    for seed in seeds:
        for m in METHODS:
            res = RUNNERS[m](P, eps, seed=seed, f_star=f_star)
            at = res.at_target
            row = dict(problem=problem_name, d=d, eps=eps, seed=seed, method=m,
                       K_theory=sch.K_theory, rho=sch.rho, lam_star=sch.lam_star,
                       reached=at is not None, wall_s=res.wall_s,
                       min_gap_seen=min(t["gap"] for t in res.trace))
            src = at if at is not None else dict(res.trace[-1], F_raw=P.value(res.x, 0.0))
            row.update({k: src[k] for k in ("queries", "rounds", "outer", "line_search_calls",
                                             "ball_calls", "gap", "F_raw")})
            row["F_raw_minus_F_raw_at_xrho"] = src["F_raw"] - f_raw_at_xrho
            rows.append(row)
    return rows


def med(rows, key):
    return float(np.median([r[key] for r in rows]))


def fit_slopes(cells, method, key):
    """Per-d slope in 1/eps, per-eps slope in d, and a joint fit ``c + a log(1/eps) + b log d``
    on the medians over seeds (only cells where every seed reached the target)."""
    pts = {}
    for (d, eps), rows in cells.items():
        rs = [r for r in rows if r["method"] == method]
        if rs and all(r["reached"] for r in rs):
            pts[(d, eps)] = med(rs, key)
    ds = sorted({d for d, _ in pts})
    es = sorted({e for _, e in pts})
    per_d = {}
    for d in ds:
        xs = [(math.log(1 / e), math.log(v)) for (dd, e), v in pts.items() if dd == d]
        if len(xs) >= 2:
            per_d[d] = float(np.polyfit(*zip(*xs), 1)[0])
    per_eps = {}
    for e in es:
        xs = [(math.log(dd), math.log(v)) for (dd, ee), v in pts.items() if ee == e]
        if len(xs) >= 2:
            per_eps[e] = float(np.polyfit(*zip(*xs), 1)[0])
    tail = {}  # local slope between the two smallest eps (the asymptotic end of the grid)
    for d in ds:
        e2 = sorted(e for (dd, e) in pts if dd == d)[:2]
        if len(e2) == 2:
            tail[d] = math.log(pts[(d, e2[0])] / pts[(d, e2[1])]) / math.log(e2[1] / e2[0])
    joint = None
    if len(ds) >= 2 and len(es) >= 2:
        M = np.array([[1.0, math.log(1 / e), math.log(d)] for (d, e) in pts])
        b = np.array([math.log(v) for v in pts.values()])
        coef = np.linalg.lstsq(M, b, rcond=None)[0]
        joint = {"a_inv_eps": float(coef[1]), "b_d": float(coef[2])}
    return {"per_d": per_d, "per_eps": per_eps, "tail_per_d": tail, "joint": joint,
            "n_cells": len(pts)}


def render(results, slopes, info, load, quick, wall):
    lines = [
        "# ReSQue accelerated pipeline: measured query depth and queries (NOT PRIVATE)",
        "",
        "Generated by `python benchmarks/bench_resque_reference.py" + (" --quick`" if quick
                                                                      else "`")
        + f" in {wall:.0f} s.  **Not private**: a measurement tool for the paper's claims "
        "(Carmon et al. 2023, Thm 1), never a solver.  Implementation and all constants: "
        "docstring of `benchmarks/_resque_accel_reference.py` (the paper gives none; ours: "
        "rho = eps/(L sqrt d), r = rho, lam_* = eps/(R^(2/3) r^(4/3)), 6 bisections on "
        "log lam in [lam_*, L/r], queries per ball call 8 (1 + e L^2/(lam r)^2), general-form "
        "ReSQue weights, no clipping).  Other processes shared the 2 cores (load below): "
        "wall times are indicative; counts are exact and load-independent.",
        "",
        machine_info_markdown(info, load),
        "",
        "Methods (same problem, same seeds): **accelerated** = Monteiro-Svaiter ball "
        "acceleration, each iteration 6 line-search ball calls + 1 ball call, every call ONE "
        "batched round of queries at a fixed centre (depth = 7 K), general-form ReSQue "
        "weights; **accelerated_glm** = the same with the 1-D GLM weights (doc/solvers/resque.rst); "
        "**ball_iteration** = "
        "x <- Ball(x, lam_*) with the same oracle, no acceleration (depth = K); **sgd** = "
        "sequential SGD on F_rho, step R/(L sqrt t), step-weighted average (depth = queries "
        "= steps; progress checked every x1.25 steps, so its counts are within 1.25x).  "
        "Each run stops at the first point with F_rho - min F_rho <= eps (exact closed form; "
        "a measurement, not counted as queries).  Cells: median over seeds.  "
        "`F - F(x*_rho)`: the unsmoothed risk at that point minus the unsmoothed risk at the "
        "minimiser of F_rho.",
        "",
    ]
    for prob, cells in results.items():
        lines += [f"## {prob}", ""]
        body = []
        for (d, eps), rows in sorted(cells.items()):
            by = {m: [r for r in rows if r["method"] == m] for m in METHODS}
            acc_depth = med(by["accelerated"], "rounds")
            for m in METHODS:
                rs = by[m]
                reached = sum(r["reached"] for r in rs)
                body.append([
                    d, eps, m, rs[0]["K_theory"] if m.startswith("accelerated") else "",
                    f"{med(rs, 'outer'):.0f}", f"{med(rs, 'line_search_calls'):.0f}",
                    f"{med(rs, 'queries'):.3g}", f"{med(rs, 'rounds'):.3g}",
                    f"{med(rs, 'rounds') / acc_depth:.2f}",
                    f"{med(rs, 'gap'):.2e}", f"{med(rs, 'F_raw_minus_F_raw_at_xrho'):.2e}",
                    f"{reached}/{len(rs)}", f"{med(rs, 'wall_s'):.2f}"])
        lines.append(md_table(
            ["d", "eps", "method", "K_theory", "K (iterations)", "line-search calls",
             "queries", "depth (rounds)", "depth / accelerated", "F_rho - min", "F - F(x*_rho)",
             "reached", "wall s"], body, align="rrlrrrrrrrrrr"))
        lines.append("")
        lines += ["Fitted log-log slopes (median over seeds; claims with L = R = 1, logs "
                  "dropped).  'in 1/eps' per d, 'in d' per eps, and a joint fit "
                  "log y = c + a log(1/eps) + b log d:", ""]
        body = []
        for (m, key), (ca, cb, text) in CLAIMS.items():
            s = slopes[prob][f"{m}|{key}"]
            pe = ", ".join(f"d={d}: {v:.2f}" for d, v in s["per_d"].items())
            pt = ", ".join(f"d={d}: {v:.2f}" for d, v in s["tail_per_d"].items())
            pd = ", ".join(f"eps={e}: {v:.2f}" for e, v in s["per_eps"].items())
            j = s["joint"]
            body.append([m, key, pe or "n/a", pt or "n/a", pd or "n/a",
                         f"{j['a_inv_eps']:.2f}" if j else "n/a",
                         f"{j['b_d']:.2f}" if j else "n/a",
                         "n/a" if ca is None else f"{ca:.2f}",
                         "n/a" if cb is None else f"{cb:.2f}", text])
        lines.append(md_table(["method", "count", "slope in 1/eps (per d)",
                               "local slope, two smallest eps (per d)",
                               "slope in d (per eps)", "joint a (1/eps)", "joint b (d)",
                               "claimed a", "claimed b", "claim"], body,
                              align="lllllrrrrl"))
        lines.append("")
        e_min = min(e for _, e in cells)
        body = []
        for (d, eps), rows in sorted(cells.items()):
            if eps != e_min:
                continue
            by = {m: [r for r in rows if r["method"] == m] for m in METHODS}
            dep = {m: med(by[m], "rounds") for m in METHODS}
            qs = {m: med(by[m], "queries") for m in METHODS}
            body.append([d, eps, f"{dep['accelerated']:.0f}", f"{dep['ball_iteration']:.0f}",
                         f"{dep['sgd']:.0f}", f"{dep['sgd'] / dep['accelerated']:.2f}",
                         f"{dep['ball_iteration'] / dep['accelerated']:.2f}",
                         f"{qs['accelerated'] / qs['sgd']:.3g}",
                         f"{qs['ball_iteration'] / qs['accelerated']:.3g}"])
        lines += [f"At the smallest target (eps = {e_min}), side by side:", "",
                  md_table(["d", "eps", "depth accelerated", "depth ball_iteration",
                            "depth sgd", "depth sgd / accelerated",
                            "depth ball / accelerated", "queries accelerated / sgd",
                            "queries ball / accelerated"], body), ""]
    lines += [
        "## Reading",
        "",
        "- The claims are worst-case upper bounds with unknown constants and polylogs; the "
        "slopes here are of three instance families over an 8-16x range of eps and d, so "
        "read them as shapes.  The local slope (two smallest eps) is the asymptotic end.",
        "- Accelerated depth = 7 rounds per Monteiro-Svaiter iteration (6 line-search calls + "
        "1 ball call).  The iteration count is governed by R/r = R sqrt(d)/eps (each ball call "
        "moves at most r), so if depth ~ (R/r)^alpha the slope in d is alpha/2 and the slope "
        "in 1/eps is alpha: the full-range fits give alpha ~ 0.6-0.67 (logistic 0.75), the "
        "local ones 0.53-0.58 (claim 2/3), and a d slope of ~0.27 (claim 1/3), consistent "
        "with one exponent a little below 2/3.  K/K_theory falls from ~1 to ~0.6-0.7 as R/r "
        "grows (these instances start at distance 0.6 R from "
        "the optimum and are easier than the worst case).",
        "- Accelerated *queries* grow like eps^(-0.8..1.4), far below the claimed eps^(-2): "
        "the line search picks lam where the ball constraint is just inactive, "
        "lam ~ ||grad F||/r >> lam_*, so a ball call costs 8 (1 + e/(lam r)^2) = O(10-100) "
        "queries; the eps^(-2) term is the worst case lam ~ lam_* (objectives flat near the "
        "optimum).  The constant is large: at these sizes the accelerated pipeline spends "
        "6-2000x more queries than SGD (it buys depth, not work).",
        "- SGD's depth eps^(-2) is also a worst case, reached (local slope ~2) on the sharp "
        "instance, where the 1/sqrt(t) oscillation around the kink limits the averaged "
        "iterate; on the locally quadratic instances (noise 0.1, logistic) SGD converges "
        "faster and the accelerated pipeline's depth advantage shrinks to ~1-3x (logistic: "
        "none).  SGD's counts at large eps are a few steps (it is checked at 2, 3, 4, ... "
        "steps x1.25), which makes its full-range slopes noisy.",
        "- The ball iteration without acceleration needs about (R/r) log rounds (slopes ~1.1 "
        "in 1/eps, ~0.5 in d, as expected) but no line search, so it has *less* depth than "
        "the accelerated pipeline until R/r ~ 10^3 (it is behind from eps = 0.00625 at "
        "d >= 80 and eps = 0.0125 at d = 320); its queries grow like eps^(-2.4) (every call "
        "at lam_*).",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    quick = args.quick
    log("warming kernels")
    warm()
    t0 = time.perf_counter()
    load = CpuLoad()
    if quick:
        probs = [("absolute, sharp (y = <a, w*>)", "absolute", 0.0, (5, 20, 80),
                  (0.1, 0.05, 0.025, 0.0125), (0, 1))]
    else:
        grid = (0.1, 0.05, 0.025, 0.0125, 0.00625)
        probs = [("absolute, sharp (y = <a, w*>)", "absolute", 0.0, (5, 20, 80, 320), grid,
                  (0, 1, 2)),
                 ("absolute, noise 0.1 Laplace", "absolute", 0.1, (5, 20, 80), grid, (0, 1)),
                 ("logistic (R = 4)", "logistic", 0.0, (20,), grid, (0, 1))]
    results, slopes, raw_rows = {}, {}, []
    for name, loss, noise, dd, es, seeds in probs:
        cells = {}
        for d in dd:
            for eps in es:
                log(f"{name}: d={d} eps={eps}")
                cells[(d, eps)] = run_cell(name, loss, noise, d, eps, seeds)
                raw_rows += cells[(d, eps)]
        results[name] = cells
        slopes[name] = {f"{m}|{k}": fit_slopes(cells, m, "rounds" if k == "depth"
                                               else "queries")
                        for (m, k) in CLAIMS}
    load = load.stop()
    wall = time.perf_counter() - t0
    info = machine_info()
    md = render(results, slopes, info, load, quick, wall)
    raw = {"quick": quick, "wall_s": wall, "rows": raw_rows, "slopes": slopes,
           "constants": {"N_BISECT": ref.N_BISECT, "THETA": ref.THETA, "C_N": ref.C_N,
                         "N_MIN": ref.N_MIN, "N_MAX": ref.N_MAX, "n_rows": N_ROWS},
           "machine": info, "load": load}
    paths = write_results("resque_reference", md, raw)
    log(f"wrote {paths[0]} and {paths[1]} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
