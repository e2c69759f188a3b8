"""Rendering of ``table3.py``'s results: markdown, PNG and JSON (numbers never typed in)."""

import json
import math
import platform
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from _table3_paper import EPSILONS, LABELS, MUS, PAPER, PAPER_SHAPES
from _table3_worker import (BATCH_SIZE, CONFIGS, DELTA, HUBER_THRESHOLD, INTERCEPT_SCALING,
                            TARGET_RANGE)

FACTOR = 3.0


def _fmt(x, digits=4):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-4:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _t(x):
    if x is None:
        return "–"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba
    import scipy
    import sklearn

    import skdp
    return {"cpu": cpu, "cores": __import__("os").cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
            "sklearn": sklearn.__version__, "skdp": getattr(skdp, "__version__", "?")}


def _index(results):
    return {(r["config"], r["dataset"], r["mu"], r["epsilon"], r["method"]): r for r in results}


def _rows(datasets):
    for ds in datasets:
        for mu in MUS[ds]:
            for eps in EPSILONS:
                yield ds, mu, eps


def compute_checks(meta, refs, results):
    R = _index(results)
    datasets = meta["datasets"]
    configs = meta["configs"]
    rows = list(_rows(datasets))
    checks = {}

    # (a) paper mode within a factor 3 of the paper's "ours" error
    for c in configs:
        within, details = 0, []
        for ds, mu, eps in rows:
            r = R.get((c, ds, mu, eps, "op_paper"))
            if r is None:
                continue
            paper = PAPER[(ds, mu, eps)][0]
            ratio = r["error_mean"] / paper
            ok = 1 / FACTOR <= ratio <= FACTOR
            within += ok
            details.append({"dataset": ds, "mu": mu, "epsilon": eps, "ratio": ratio, "ok": ok})
        checks[f"a_{c}"] = {"within": within, "rows": len(details),
                            "pass": within >= 0.8 * len(details), "rows_detail": details}

    # (b) tight <= paper mode on every mu > 0 row
    for c in configs:
        det, n_ok = [], 0
        for ds, mu, eps in rows:
            if mu == 0:
                continue
            rp, rt = R.get((c, ds, mu, eps, "op_paper")), R.get((c, ds, mu, eps, "op_tight"))
            if rp is None or rt is None:
                continue
            ok = rt["error_mean"] <= rp["error_mean"]
            n_ok += ok
            det.append({"dataset": ds, "mu": mu, "epsilon": eps, "ok": ok,
                        "tight_over_paper": rt["error_mean"] / rp["error_mean"]})
        checks[f"b_{c}"] = {"ok": n_ok, "rows": len(det), "pass": n_ok == len(det),
                            "rows_detail": det}

    # (c) output perturbation beats dpsgd in error and time
    c = configs[0]
    for m, b in (("op_paper", "dpsgd"), ("op_tight", "dpsgd"),
                 ("op_paper", "dpsgd_paper"), ("op_tight", "dpsgd_paper")):
        e_ok = t_ok = both = n = 0
        for ds, mu, eps in rows:
            r, s = R.get((c, ds, mu, eps, m)), R.get((c, ds, mu, eps, b))
            if r is None or s is None:
                continue
            n += 1
            e = r["error_mean"] < s["error_mean"]
            t = r["cpu_median_s"] < s["cpu_median_s"]
            e_ok += e
            t_ok += t
            both += e and t
        checks[f"c_{m}" + ("" if b == "dpsgd" else "_vs_paper_sgd")] = {"error_wins": e_ok, "time_wins": t_ok, "both": both, "rows": n,
                            "pass": both > n / 2}

    # (d) invariants
    inv_sc = []
    for ds in datasets:
        mu = MUS[ds][1]
        entry = {"dataset": ds, "mu": mu, "paper": [PAPER[(ds, mu, e)][0] * e * e for e in EPSILONS]}
        for cc in configs:
            vals = [R[(cc, ds, mu, e, "op_paper")]["error_mean"] * e * e
                    if (cc, ds, mu, e, "op_paper") in R else None for e in EPSILONS]
            entry[cc] = vals
            tv = [R[(cc, ds, mu, e, "op_tight")]["error_mean"] * e * e
                  if (cc, ds, mu, e, "op_tight") in R else None for e in EPSILONS]
            entry[cc + "_tight"] = tv
        inv_sc.append(entry)
    inv_rt = []
    for ds in datasets:
        entry = {"dataset": ds,
                 "paper": PAPER[(ds, 0.0, 2.0)][2] / PAPER[(ds, 0.0, 0.1)][2]}
        for cc in configs:
            a, b = R.get((cc, ds, 0.0, 2.0, "op_paper")), R.get((cc, ds, 0.0, 0.1, "op_paper"))
            if a and b:
                entry[cc + "_cpu"] = a["cpu_median_s"] / b["cpu_median_s"]
                entry[cc + "_T"] = a["n_iter"] / b["n_iter"]
        inv_rt.append(entry)
    checks["d_error_eps2"] = inv_sc
    checks["d_runtime_ratio"] = inv_rt
    checks["d_runtime_ratio_theory"] = 20 ** (2 / 3)
    return checks


def _row_explanation(ds, mu, eps, R, configs):
    """Why one config-A paper-mode row is outside the factor 3 (from the measured numbers)."""
    paper = PAPER[(ds, mu, eps)][0]
    rA = R[("A", ds, mu, eps, "op_paper")]
    ratio = rA["error_mean"] / paper
    why = []
    if "B" in configs and ("B", ds, mu, eps, "op_paper") in R:
        rB = R[("B", ds, mu, eps, "op_paper")]
        ratioB = rB["error_mean"] / paper
        if 1 / FACTOR <= ratioB <= FACTOR:
            why.append(f"feature/target scaling: with rows normalised to ‖x‖ ≤ 1 and "
                       f"range-scaled targets (config B) the ratio is {ratioB:.3g}")
        else:
            why.append(f"config B ratio {ratioB:.3g} (also outside)")
    opt = rA.get("F_wT_minus_F_hat")
    if mu == 0 and opt is not None and rA["error_mean"] > 0:
        why.append(f"optimisation error F(w_T)−F(ŵ) = {_fmt(opt, 3)} is "
                   f"{100 * opt / rA['error_mean']:.0f}% of it (T = {rA['n_iter']} set by the "
                   f"unstated D = ||ŵ||)")
    if ds == "bike" and mu > 0:
        pe = [PAPER[(ds, mu, e)][0] * e * e for e in EPSILONS]
        why.append(f"the paper's BIKE μ>0 rows break their own 1/ε² law (err·ε² = "
                   f"{', '.join(_fmt(v, 2) for v in pe)})")
    return ratio, "; ".join(why) if why else "unexplained"


def render_markdown(meta, refs, results, checks, machine):
    R = _index(results)
    datasets = meta["datasets"]
    configs = meta["configs"]
    L = []
    A = L.append
    A("# Table 3 reproduction (Zhang, Zheng, Mou & Wang, IJCAI 2017)")
    A("")
    A(f"Written by `benchmarks/table3.py` on "
      f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; every number below is "
      f"measured or computed by the script (the paper's numbers are transcribed in "
      f"`benchmarks/_table3_paper.py`).")
    A("")
    quick = meta["mode"] == "quick"
    A(f"**Mode: {meta['mode']}** (`{meta['command']}`). Repetitions per cell: "
      f"**{meta['reps']}** for output perturbation"
      + (f" — of which **{meta['op_real_fits']} are real solver calls** (timed) and the other "
         f"{meta['reps'] - meta['op_real_fits']} are exact resamples of the released noise "
         f"(see Method)" if meta["op_real_fits"] < meta["reps"] else " (all real solver calls)")
      + f"; **{meta['dpsgd_reps']} for dpsgd** (all real calls"
      + (", fewer than 10 to keep the quick run under 15 minutes on 2 cores" if
         meta["dpsgd_reps"] < meta["reps"] else "") + "). "
      + ("The paper averages 100 runs; the full mode (`python benchmarks/table3.py`) does "
         "100 real fits of every method." if quick else ""))
    A("")
    ld = meta.get("load") or {}
    A(f"Total wall time: **{meta['total_wall_s']:.0f} s** with {meta['workers']} worker "
      f"processes (one numba/BLAS thread each) on {machine['cores']} cores "
      f"({machine['cpu']}); this run used {ld.get('this_run_cores', float('nan')):.2f} cores "
      f"on average, other processes {ld.get('other_processes_cores', float('nan')):.2f} cores. "
      f"Times in the table are **median CPU seconds of one solver call** (single thread; the "
      f"paper reports CPU time on unknown hardware, so compare ratios, not absolute values). "
      f"Versions: python {machine['python']}, numpy {machine['numpy']}, scipy "
      f"{machine['scipy']}, numba {machine['numba']}, scikit-learn {machine['sklearn']}, "
      f"skdp {machine['skdp']}.")
    A("")

    # ------------------------------------------------------------------ choices
    A("## Public choices for what the paper leaves unstated")
    A("")
    A("| parameter | config A (primary: the paper's setting, as far as its numbers let us infer it — see *Where the reproduction disagrees*, 1) | config B (secondary: the spec's assumption ‖x‖ ≤ 1) |")
    A("|---|---|---|")
    A("| features | numeric columns min–max scaled to [0,1], categoricals one-hot (the `skdp.datasets` loaders' columns × √d): every entry in [0,1] ⇒ ‖x‖ ≤ √d | the `skdp.datasets` loaders as shipped: the same columns ÷√d ⇒ ‖x‖ ≤ 1 |")
    A(f"| intercept | `fit_intercept=True`: constant column s = {INTERCEPT_SCALING:g}, clipped and regularised with the weights (the paper's d for CreditCard 34 = 33 + 1 and BIKE 62 = 61 + 1 suggest an intercept column counted in d) | same |")
    A(f"| data_norm C_x | √(d + s²) (e.g. bank √43) | √(1 + s²) = {math.sqrt(1 + INTERCEPT_SCALING ** 2):.4f} |")
    A(f"| regression targets | raw targets; `y_bound` = {TARGET_RANGE['wine']:g} (wine: the documented 0–10 quality scale), {TARGET_RANGE['bike']:g} (bike: a round bound above the observed max 977 — chosen after seeing the README's range, so not strictly data-independent) | divided by the same public range bounds; `y_bound` = 1 |")
    A(f"| Huber threshold h | {HUBER_THRESHOLD:g} (skdp's default) | {HUBER_THRESHOLD:g} |")
    A("| labels | {0,1} → {−1,+1} | same |")
    A("| μ = 0: `max_coef_norm` D (fixes T and, for dpsgd, the ball radius R) | **‖ŵ‖ of the non-private solve — data-dependent, NOT private; used for the reproduction only** (the paper presumably did the same). Where the logistic minimiser is not attained, the norm of the first continuation point whose F is within 1e-6 of inf F (see References) | same |")
    A(f"| μ > 0 | solver defaults: paper mode D = min(L/μ, √(2f0/μ)) (public), T from the paper's iteration count (κ = 10); tight mode: certified L-BFGS, Δ = 2.02 L/(nμ) | same |")
    A(f"| dpsgd (BST14 baseline) | `solve_dpsgd` defaults: Poisson sampling, expected batch m = {BATCH_SIZE}, T = ⌈n²/m²⌉, step 1/(μt) capped at 1/(β+μ) for μ > 0, R/(G√t) for μ = 0; run twice: **dpsgd** = `calibration=\"tight\"` (PLD accountant for the Poisson-subsampled Gaussian, replace-one — the strongest version of the baseline) and **dpsgd paper** = `calibration=\"paper\"` (BST14's printed noise multiplier z = √(32 ln(n/δ) ln(1/δ))/ε, the baseline the paper compared against) | not run |")
    A(f"| privacy | (ε, δ) with δ = {DELTA:g} (note δ > 1/n on every set, as in the paper) | same |")
    A("")
    A("**Method.** For every cell the solver functions are called directly "
      "(`solve_output_perturbation`, `solve_dpsgd`) with the loss specs. The error is "
      "F(w_priv) − F(ŵ) with F recomputed in numpy from the released `coef_`/`intercept_` on "
      "the clipped + augmented design (`skdp._mechanisms.clip_and_augment`), averaged over the "
      "repetitions. ŵ: L-BFGS-B (gtol 1e-12) then damped Newton to ‖∇F‖ ≤ 1e-12. "
      "For μ = 0 logistic the minimiser may not exist (quasi-separation by rare one-hot "
      "levels): we follow the minimisers of F + (λ/2)‖w‖², λ = 1e-4 … 1e-12 (Newton at each) "
      "and finally Newton on F itself, and use the smallest F seen as the infimum estimate. "
      "Output perturbation releases w_T + σ·N(0, I) with a deterministic w_T; in quick mode "
      "only the first few repetitions are real solver calls: the Generator passed to the "
      "solver is wrapped to record its Gaussian draw, w_T = w_priv − σ·draw is recovered "
      "(and checked identical across the real calls), and the remaining releases are "
      "w_T + σ·N(0, I) with fresh seeds — exactly the solver's output distribution, at no "
      "optimisation cost. dpsgd repetitions are all real calls. The dpsgd noise calibration "
      "(PLD accountant, ~1–3 s, data-independent) is done once per cell before the timed "
      "calls and excluded from the fit time (it is cached by skdp).")
    A("")

    # ------------------------------------------------------------------ references
    A("## Non-private references")
    A("")
    A("| config | dataset | n | d (ours / paper) | μ | F(ŵ) | ‖ŵ‖ (= D for μ = 0) | ‖∇F(ŵ)‖ | minimiser attained | note |")
    A("|---|---|---|---|---|---|---|---|---|---|")
    for c in configs:
        for ds in datasets:
            for mu in MUS[ds]:
                r = refs[(c, ds, mu)]
                note = ""
                if "F_uncertainty" in r:
                    note = (f"continuation; F decrease over the last decade of λ: "
                            f"{_fmt(r['F_uncertainty'], 2)}")
                    if not r["attained"]:
                        note += (f"; ‖w‖ keeps growing along the path (at the best point "
                                 f"{r['norm_at_best']:.4g})")
                A(f"| {c} | {LABELS[ds]} | {r['n']} | {r['d']} (+1 intercept) / "
                  f"{PAPER_SHAPES[ds][1]} | {mu:g} | {r['F']:.10g} | {r['norm']:.4g} | "
                  f"{r['grad_norm']:.1e} | {'yes' if r['attained'] else '**no**'} | {note} |")
    A("")

    # ------------------------------------------------------------------ main table
    A("## Table 3, every row")
    A("")
    A("Errors: mean excess empirical risk F(w_priv) − F(ŵ). *ratio* = our paper-mode error / "
      "the paper's \"ours\" error (config A; config B in the B columns). Times: median CPU s "
      "per fit (ours) and the paper's CPU s. op = output perturbation.")
    A("")
    hdr = ("| dataset | μ | ε | op paper | op tight | dpsgd | dpsgd paper | paper: ours "
           "| paper: BST14 | ratio | time op paper | time op tight | time dpsgd "
           "| time dpsgd paper | paper time ours | paper time BST14 |")
    sep = "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    if "B" in configs:
        hdr += " B: op paper | B: ratio | B: op tight |"
        sep += "---|---|---|"
    A(hdr)
    A(sep)
    for ds, mu, eps in _rows(datasets):
        pe, pb, pt, pbt = PAPER[(ds, mu, eps)]
        g = lambda m, c="A": R.get((c, ds, mu, eps, m))  # noqa: E731
        ms = ("op_paper", "op_tight", "dpsgd", "dpsgd_paper")
        e = {m: (g(m)["error_mean"] if g(m) else None) for m in ms}
        t = {m: (g(m)["cpu_median_s"] if g(m) else None) for m in ms}
        ratio = e["op_paper"] / pe if e["op_paper"] is not None else None
        flag = "" if ratio is None or 1 / FACTOR <= ratio <= FACTOR else " ✗"
        line = (f"| {LABELS[ds]} | {mu:g} | {eps:g} | {_fmt(e['op_paper'])} | "
                f"{_fmt(e['op_tight'])} | {_fmt(e['dpsgd'])} | {_fmt(e['dpsgd_paper'])} | "
                f"{pe:g} | {pb:g} | "
                f"{_fmt(ratio, 3)}{flag} | {_t(t['op_paper'])} | {_t(t['op_tight'])} | "
                f"{_t(t['dpsgd'])} | {_t(t['dpsgd_paper'])} | {pt:g} | {pbt:g} |")
        if "B" in configs:
            bp, bt = g("op_paper", "B"), g("op_tight", "B")
            rb = bp["error_mean"] / pe if bp else None
            fb = "" if rb is None or 1 / FACTOR <= rb <= FACTOR else " ✗"
            line += (f" {_fmt(bp['error_mean'] if bp else None)} | {_fmt(rb, 3)}{fb} | "
                     f"{_fmt(bt['error_mean'] if bt else None)} |")
        A(line)
    A("")
    A("✗ = outside a factor 3 of the paper's value.")
    rse = {}
    for r in results:
        if r["config"] == "A" and r["error_se"] is not None and r["error_mean"] > 0:
            rse.setdefault(r["method"], []).append(r["error_se"] / r["error_mean"])
    A("Standard error of the means (config A), relative: "
      + "; ".join(f"{m} median {100 * np.median(v):.0f} %, max {100 * max(v):.0f} %"
                  for m, v in sorted(rse.items()))
      + " (all per-repetition errors are in `table3.json`).")
    A("")

    # ------------------------------------------------------------------ checks
    A("## Checks")
    A("")
    ca = checks["a_A"]
    A(f"**(a) paper mode within a factor {FACTOR:g} of the paper's error on ≥ 80 % of the rows.** "
      f"Config A: **{ca['within']}/{ca['rows']}** rows ({100 * ca['within'] / ca['rows']:.0f} %) → "
      f"**{'PASS' if ca['pass'] else 'FAIL'}**.")
    if "a_B" in checks:
        cb = checks["a_B"]
        A(f"Config B (‖x‖ ≤ 1, range-scaled targets): **{cb['within']}/{cb['rows']}** rows "
          f"({100 * cb['within'] / cb['rows']:.0f} %) → {'PASS' if cb['pass'] else 'FAIL'}.")
        for grp, sel in (("μ > 0", lambda d: d["mu"] > 0), ("μ = 0", lambda d: d["mu"] == 0)):
            for c in configs:
                rows = [d for d in checks[f"a_{c}"]["rows_detail"] if sel(d)]
                A(f"  - {grp}, config {c}: {sum(d['ok'] for d in rows)}/{len(rows)} within; "
                  f"median ratio {np.median([d['ratio'] for d in rows]):.3g}")
    A("")
    A("Every config-A row outside the factor, with the reason read off the measured numbers:")
    A("")
    A("| dataset | μ | ε | ratio A | explanation |")
    A("|---|---|---|---|---|")
    for d in ca["rows_detail"]:
        if d["ok"]:
            continue
        ratio, why = _row_explanation(d["dataset"], d["mu"], d["epsilon"], R, configs)
        A(f"| {LABELS[d['dataset']]} | {d['mu']:g} | {d['epsilon']:g} | {ratio:.3g} | {why} |")
    A("")
    for c in configs:
        cb = checks[f"b_{c}"]
        worst = max(cb["rows_detail"], key=lambda d: d["tight_over_paper"]) if cb["rows_detail"] else None
        A(f"**(b) tight ≤ paper mode on every μ > 0 row, config {c}:** {cb['ok']}/{cb['rows']} → "
          f"**{'PASS' if cb['pass'] else 'FAIL'}**"
          + (f" (tight/paper error ratio from "
             f"{min(d['tight_over_paper'] for d in cb['rows_detail']):.3g} to "
             f"{worst['tight_over_paper']:.3g})." if worst else "."))
    A("")
    for suffix, bname in (("_vs_paper_sgd", "dpsgd paper (BST14's printed noise, as in the paper)"),
                          ("", "dpsgd (PLD-calibrated)")):
        for m in ("op_paper", "op_tight"):
            cc = checks[f"c_{m}{suffix}"]
            A(f"**(c) {m} beats {bname}, config A:** lower error on "
              f"{cc['error_wins']}/{cc['rows']} rows, lower median CPU time on "
              f"{cc['time_wins']}/{cc['rows']}, both on {cc['both']}/{cc['rows']} → "
              f"**{'PASS' if cc['pass'] else 'FAIL'}** (\"most rows\").")
    A("")
    A("**(d) invariants of the spec.**")
    A("")
    A("(i) μ > 0: error·ε² should be ≈ constant in ε (Theorem 2's 1/ε² law); paper mode:")
    A("")
    A("| dataset | μ | source | ε = 0.1 | 0.5 | 1 | 2 | max/min |")
    A("|---|---|---|---|---|---|---|---|")
    for entry in checks["d_error_eps2"]:
        for src in ["paper"] + configs + [c + "_tight" for c in configs]:
            vals = entry.get(src)
            if not vals or any(v is None for v in vals):
                continue
            pos = [v for v in vals if v > 0]
            spread = max(pos) / min(pos) if len(pos) == len(vals) else float("nan")
            name = {"paper": "paper (ours column)"}.get(src, f"config {src.replace('_tight', '')}"
                                                         + (" tight" if "tight" in src else " paper mode"))
            A(f"| {LABELS[entry['dataset']]} | {entry['mu']:g} | {name} | "
              + " | ".join(_fmt(v, 3) for v in vals) + f" | {spread:.2f} |")
    A("")
    from skdp.accounting import calibrate_gaussian_sigma
    se = [calibrate_gaussian_sigma(e, DELTA, 1.0) * e for e in EPSILONS]
    A(f"Tight mode is not expected to follow 1/ε² exactly: the analytic Gaussian's σ·ε/Δ is "
      f"{', '.join(f'{v:.2f}' for v in se)} at ε = 0.1 … 2 (×{(se[-1] / se[0]) ** 2:.1f} in "
      f"σ²ε²), while the paper's σ·ε/Δ = √(2 ln(2/δ)) is constant.")
    A("")
    A(f"(ii) μ = 0: runtime(ε = 2)/runtime(ε = 0.1) should be ≈ 20^(2/3) = "
      f"{checks['d_runtime_ratio_theory']:.2f} (T ∝ ε^(2/3), Theorem 3):")
    A("")
    A("| dataset | paper | " + " | ".join(f"config {c}: CPU time ratio | config {c}: T ratio"
                                          for c in configs) + " |")
    A("|---|---|" + "---|---|" * len(configs))
    for entry in checks["d_runtime_ratio"]:
        A(f"| {LABELS[entry['dataset']]} | {entry['paper']:.2f} | "
          + " | ".join(f"{entry.get(c + '_cpu', float('nan')):.2f} | "
                       f"{entry.get(c + '_T', float('nan')):.2f}" for c in configs) + " |")
    A("")
    return L


def render_analysis(meta, refs, results, checks):
    """"Where we disagree, and why" + solver findings, from the measured numbers."""
    R = _index(results)
    datasets = meta["datasets"]
    configs = meta["configs"]
    hasB = "B" in configs
    L = []
    A = L.append
    A("## Where the reproduction disagrees with the paper, and why")
    A("")

    # 1. mu > 0: scaling
    def ratios(c, sel):
        return [d["ratio"] for d in checks[f"a_{c}"]["rows_detail"] if sel(d)]

    pos = lambda d: d["mu"] > 0  # noqa: E731
    zero = lambda d: d["mu"] == 0  # noqa: E731
    rA = ratios("A", pos)
    nA = sum(1 / FACTOR <= r <= FACTOR for r in rA)
    nA_nobike = sum(1 / FACTOR <= d["ratio"] <= FACTOR for d in checks["a_A"]["rows_detail"]
                    if d["mu"] > 0 and d["dataset"] != "bike")
    n_nobike = sum(1 for d in checks["a_A"]["rows_detail"] if d["mu"] > 0 and d["dataset"] != "bike")
    A(f"**1. μ > 0 rows: the feature scaling decides, and config A reproduces the paper.** "
      f"Paper mode's error is essentially the noise term (β/2)·E‖z‖², with "
      f"E‖z‖² = p·2ln(2/δ)Δ²/ε² and Δ = 5L(μ+β)/(nμβ), L = C_x + 2μD, β = C_x²/4 + μ: it "
      f"grows with the row bound C_x, which the paper does not state. With min–max/one-hot "
      f"columns in [0, 1] and C_x = √(d+1) (config A) paper mode lands within a factor 3 on "
      f"**{nA}/{len(rA)}** μ > 0 rows (median ratio {np.median(rA):.3g}; {nA_nobike}/{n_nobike} "
      f"without BIKE, see 2), and the dataset constants error·ε² of invariant (d)(i) match "
      f"the paper's:")
    A("")
    A("| dataset | paper: mean err·ε² | config A: mean err·ε² |"
      + (" config B: mean err·ε² |" if hasB else ""))
    A("|---|---|---|" + ("---|" if hasB else ""))
    for e in checks["d_error_eps2"]:
        A(f"| {LABELS[e['dataset']]} | {_fmt(float(np.mean(e['paper'])), 3)} | "
          f"{_fmt(float(np.mean(e['A'])), 3)} |"
          + (f" {_fmt(float(np.mean(e['B'])), 3)} |" if hasB else ""))
    A("")
    if hasB:
        rB_nb = [d["ratio"] for d in checks["a_B"]["rows_detail"]
                 if d["mu"] > 0 and d["dataset"] != "bike"]
        A("So the paper's μ > 0 numbers are reproduced by Algorithm 1 exactly as printed "
          "(Lemma 3 sensitivity, the paper's Gaussian σ, the paper's iteration count) when the "
          "features are the min–max/one-hot columns in [0, 1] without row normalisation and "
          "C_x is the corresponding public bound √(d+1). Normalising rows to ‖x‖ ≤ 1 (config "
          f"B, as the spec assumes) gives errors {1 / max(rB_nb):.0f}–{1 / min(rB_nb):.0f}× "
          "smaller than the paper's on BANK, ADULT, CreditCard and WINE — a smaller C_x means "
          "a smaller L and β, hence less noise; this is why config A is our primary reading "
          "of the paper.")
    A("")
    bike = [PAPER[("bike", 0.5, e)][0] * e * e for e in EPSILONS]
    ent = next((e for e in checks["d_error_eps2"] if e["dataset"] == "bike"), None)
    spreads = [max(ent[c]) / min(ent[c]) for c in configs
               if ent and ent.get(c) and all(v is not None and v > 0 for v in ent[c])]
    match = {c: [f"{d['epsilon']:g}" for d in checks[f"a_{c}"]["rows_detail"]
                 if d["dataset"] == "bike" and d["mu"] > 0 and d["ok"]] for c in configs}
    A(f"**2. BIKE, μ = 0.5.** The paper's rows break their own 1/ε² law (err·ε² = "
      f"{', '.join(_fmt(v, 2) for v in bike)}: ×{max(bike) / min(bike):.0f} across ε; the "
      f"error flattens at ≈ 0.023 for ε ≥ 1), while ours follow it in both configurations "
      f"(max/min of err·ε² ≤ {max(spreads) if spreads else float('nan'):.2f}). A floor that "
      f"does not shrink with the noise must be optimisation error or a different objective "
      f"(target scaling, threshold), which the paper does not state; no configuration we "
      f"ran matches all four rows (within a factor 3: "
      + "; ".join(f"config {c} at ε = {', '.join(v) if v else 'none'}" for c, v in match.items())
      + ").")
    A("")

    # 3. mu = 0
    A("**3. μ = 0 rows: the unstated D and a hard optimisation problem.** Theorem 3's "
      "schedule fixes T = T*(D) and Δ = 3LT/(βn) from D = ‖ŵ‖, so both the optimisation "
      "error F(w_T) − F(ŵ) and the noise grow with D. Our error splits as follows "
      "(paper mode; *opt* = F(w_T) − F(ŵ) of the noise-free iterate, *noise* = the rest):")
    A("")
    A("| config | dataset | D = ‖ŵ‖ | minimiser attained | ε | T | opt | noise | total | paper | opt / paper |")
    A("|---|---|---|---|---|---|---|---|---|---|---|")
    n_opt_big = {c: 0 for c in configs}
    n_rows0 = {c: 0 for c in configs}
    for c in configs:
        for ds in datasets:
            ref = refs[(c, ds, 0.0)]
            for eps in EPSILONS:
                r = R.get((c, ds, 0.0, eps, "op_paper"))
                if r is None:
                    continue
                p = PAPER[(ds, 0.0, eps)][0]
                opt = r["F_wT_minus_F_hat"]
                n_rows0[c] += 1
                n_opt_big[c] += opt > FACTOR * p
                A(f"| {c} | {LABELS[ds]} | {ref['norm']:.4g} | {'yes' if ref['attained'] else 'no'} | "
                  f"{eps:g} | {r['n_iter']} | {_fmt(opt, 3)} | {_fmt(r['error_mean'] - opt, 3)} | "
                  f"{_fmt(r['error_mean'], 3)} | {p:g} | {opt / p:.3g} |")
    A("")
    A("On " + ", ".join(f"{n_opt_big[c]}/{n_rows0[c]} rows of config {c}" for c in configs)
      + " the optimisation error *alone* exceeds 3× the paper's total error: full-batch GD "
      "from 0 with step 1/β for T*(‖ŵ‖) steps cannot get that close to ŵ on these "
      "unregularised problems (ADULT and CreditCard are quasi-separable — ‖w‖ keeps growing "
      "along the regularisation path, so ‖ŵ‖ itself depends on how the non-private solver "
      "was stopped). Adding noise only adds to that. The paper's runtimes hint at its T: ")
    # implied T from the paper's own seconds per iteration on the mu > 0 rows
    cref = "A"
    lines, implied = [], []
    for ds in datasets:
        mu1 = MUS[ds][1]
        spi = [PAPER[(ds, mu1, e)][2] / R[(cref, ds, mu1, e, "op_paper")]["n_iter"]
               for e in EPSILONS if (cref, ds, mu1, e, "op_paper") in R]
        if not spi:
            continue
        s = float(np.median(spi))
        tp = [PAPER[(ds, mu1, e)][2] for e in EPSILONS]
        to = [R[(cref, ds, mu1, e, "op_paper")]["n_iter"] for e in EPSILONS]
        rat = [PAPER[(ds, 0.0, e)][2] / s / R[(cref, ds, 0.0, e, "op_paper")]["n_iter"]
               for e in EPSILONS if (cref, ds, 0.0, e, "op_paper") in R]
        implied.extend(rat)
        lines.append(f"| {LABELS[ds]} | {' : '.join(f'{t / tp[0]:.2f}' for t in tp)} | "
                     f"{' : '.join(f'{t / to[0]:.2f}' for t in to)} | {_fmt(s, 3)} | "
                     f"{', '.join(f'{v:.2f}' for v in rat)} |")
    A("")
    A(f"| dataset | paper time, μ > 0, ε = 0.1 : 0.5 : 1 : 2 | our T (config {cref}), same | "
      f"paper s/iteration (median, μ > 0) | implied paper T / our T at μ = 0, ε = 0.1, 0.5, 1, 2 |")
    A("|---|---|---|---|---|")
    for line in lines:
        A(line)
    A("")
    prof_ok = []
    for ds in datasets:
        mu1 = MUS[ds][1]
        if not all((cref, ds, mu1, e, "op_paper") in R for e in EPSILONS):
            continue
        tp = [PAPER[(ds, mu1, e)][2] for e in EPSILONS]
        to = [R[(cref, ds, mu1, e, "op_paper")]["n_iter"] for e in EPSILONS]
        if all(abs((a / tp[0]) / (b / to[0]) - 1) <= 0.15 for a, b in zip(tp, to)):
            prof_ok.append(LABELS[ds])
    A(f"Caveat: the paper's μ > 0 time profile matches our T profile within 15 % only for "
      f"{', '.join(prof_ok) or 'no dataset'}, so the per-iteration cost (and the implied T) "
      f"is a hint, not a measurement. ")
    A(f"If the paper's seconds per iteration were the same at μ = 0 as at μ > 0 (same "
      f"gradient pass), its μ = 0 runs used about {min(implied):.2f}–{max(implied):.2f}× "
      f"our T (the ε-profile, T ∝ ε^(2/3), matches: invariant (d)(ii)). Fewer steps at the "
      f"same D would *raise* the optimisation error, so the paper's small μ = 0 errors on "
      f"ADULT/CreditCard point to a different D or ŵ (a smaller, early-stopped reference "
      f"would lower T, Δ and — measured against its own F(ŵ) — the reported excess risk), "
      f"which the paper does not give. We leave these rows as **not reproduced, cause: "
      f"unstated D/ŵ for μ = 0**."
      + "".join(f" Config {c}: datasets within the factor on every ε at μ = 0: "
                f"{', '.join(LABELS[ds] for ds in datasets if all(d['ok'] for d in checks[f'a_{c}']['rows_detail'] if d['dataset'] == ds and d['mu'] == 0)) or 'none'}."
                for c in configs))
    A("")

    # 4. dpsgd
    def err(c, ds, mu, e, m):
        r = R.get((c, ds, mu, e, m))
        return r["error_mean"] if r else None

    bst = [PAPER[(ds, mu, e)][1] / err("A", ds, mu, e, "dpsgd_paper")
           for ds, mu, e in _rows(datasets) if err("A", ds, mu, e, "dpsgd_paper")]
    bst3 = sum(1 / FACTOR <= b <= FACTOR for b in bst)
    A("**4. Check (c): the baseline's noise decides.** We ran BST14 twice on the same "
      "design, steps and seeds: with BST14's printed noise (`dpsgd paper`, the baseline the "
      "paper compared against) and calibrated by the PLD accountant (`dpsgd`). The paper's "
      f"BST14 error / our `dpsgd paper` error: median {np.median(bst):.3g} "
      f"(range {min(bst):.3g}–{max(bst):.3g}; within a factor 3 on {bst3}/{len(bst)} rows). "
      "The two calibrations differ only in the noise multiplier z (noise std = z·L per "
      "step, before dividing by the expected batch):")
    A("")
    A("| dataset | n | z PLD (dpsgd) ε = 0.1 / 0.5 / 1 / 2 | z BST14 printed (dpsgd paper) | std ratio |")
    A("|---|---|---|---|---|")
    for ds in datasets:
        zs, zp = [], []
        for e in EPSILONS:
            r = R.get(("A", ds, MUS[ds][1], e, "dpsgd"))
            q = R.get(("A", ds, MUS[ds][1], e, "dpsgd_paper"))
            if r is None or q is None:
                continue
            zs.append(float(r["details"]["noise_multiplier"]))
            zp.append(float(q["details"]["noise_multiplier"]))
        if zs:
            A(f"| {LABELS[ds]} | {refs[('A', ds, 0.0)]['n']} | {' / '.join(f'{z:.3g}' for z in zs)} | "
              f"{' / '.join(f'{z:.3g}' for z in zp)} | "
              f"{min(b / a for a, b in zip(zs, zp)):.1f}–{max(b / a for a, b in zip(zs, zp)):.1f} |")
    A("")
    A("Output perturbation in paper mode carries Lemma 3's loose constants too "
      "(paper/tight sensitivity and noise on the μ > 0 rows, config A):")
    A("")
    A("| dataset | μ | Δ paper / Δ tight | σ paper / σ tight at ε = 0.1 … 2 |")
    A("|---|---|---|---|")
    for ds in datasets:
        mu = MUS[ds][1]
        rp = [R.get(("A", ds, mu, e, "op_paper")) for e in EPSILONS]
        rt = [R.get(("A", ds, mu, e, "op_tight")) for e in EPSILONS]
        if any(x is None for x in rp + rt):
            continue
        A(f"| {LABELS[ds]} | {mu:g} | {rp[0]['sensitivity'] / rt[0]['sensitivity']:.2f} | "
          + ", ".join(f"{a['noise_scale'] / b['noise_scale']:.1f}" for a, b in zip(rp, rt)) + " |")
    A("")
    cps, cts = checks["c_op_paper_vs_paper_sgd"], checks["c_op_tight_vs_paper_sgd"]
    cp, ct = checks["c_op_paper"], checks["c_op_tight"]

    def grp(m, b, sel):
        v = [err("A", ds, mu, e, m) / err("A", ds, mu, e, b) for ds, mu, e in _rows(datasets)
             if sel(mu) and err("A", ds, mu, e, m) and err("A", ds, mu, e, b)]
        return (f"{sum(x < 1 for x in v)}/{len(v)} rows, median ratio {np.median(v):.2g}"
                if v else "no rows")

    A(f"Against the paper's baseline (BST14's printed noise) the paper's claim reproduces: "
      f"paper-mode output perturbation has the lower error on {cps['error_wins']}/{cps['rows']} "
      f"rows and the lower time on {cps['time_wins']}/{cps['rows']}; tight mode on "
      f"{cts['error_wins']}/{cts['rows']} and {cts['time_wins']}/{cts['rows']}. Against the "
      f"PLD-calibrated DP-SGD it does **not** on error: paper mode wins {cp['error_wins']}/"
      f"{cp['rows']} rows, tight mode {ct['error_wins']}/{ct['rows']} (op tight / dpsgd error: "
      f"μ > 0 {grp('op_tight', 'dpsgd', lambda m: m > 0)}; μ = 0 "
      f"{grp('op_tight', 'dpsgd', lambda m: m == 0)}), while output perturbation keeps the "
      f"runtime advantage ({ct['time_wins']}/{ct['rows']} rows for tight; dpsgd's time is "
      f"constant in ε and μ, as in the paper). Why: T = n²/m² steps of subsampled Gaussian "
      f"noise, accounted exactly, average the noise over ~n²/m² steps, and with a smooth, "
      f"strongly convex objective SGD's final iterate is already close to ŵ; the paper's "
      f"advantage came from BST14's advanced-composition noise, whose std is the factor above "
      f"larger. At μ > 0 the two are within a small factor, at μ = 0 output perturbation "
      f"pays for Lemma 2's sensitivity growing linearly in T.")
    A("")

    # ------------------------------------------------------------------ solver findings
    A("## Solver findings")
    A("")
    spread = max((r["w_T_relative_spread"] or 0.0) for r in results
                 if not r["method"].startswith("dpsgd"))
    fx = max(abs(v.get("F_numpy_minus_F_skdp_at_w", 0.0)) for v in refs.values())
    A(f"- Output perturbation is deterministic up to its single Gaussian draw, as documented: "
      f"the recovered noise-free iterate w_T agreed across the real calls of every cell "
      f"(max relative spread {spread:.1e}), and each call drew the noise exactly once.")
    A(f"- Our numpy objective and skdp's kernel (`Objective.value_grad`) agree at every "
      f"reference point (max |ΔF| = {fx:.1e}).")
    worse = []
    n0 = 0
    for c in configs:
        for ds in datasets:
            for e in EPSILONS:
                a, b = R.get((c, ds, 0.0, e, "op_tight")), R.get((c, ds, 0.0, e, "op_paper"))
                if a is None or b is None:
                    continue
                n0 += 1
                if a["error_mean"] > b["error_mean"]:
                    se = math.hypot(a["error_se"] or 0.0, b["error_se"] or 0.0)
                    zsc = (a["error_mean"] - b["error_mean"]) / se if se > 0 else float("inf")
                    worse.append(f"{LABELS[ds]} ε = {e:g} ({c}): {a['error_mean'] / b['error_mean']:.2f}×, "
                                 f"{zsc:.1f} SE; T {a['n_iter']} vs {b['n_iter']}")
    zmax = max((float(w.split(", ")[1].split(" SE")[0]) for w in worse), default=0.0)
    sig = [R[(c, ds, 0.0, e, "op_paper")]["noise_scale"] / R[(c, ds, 0.0, e, "op_tight")]["noise_scale"]
           for c in configs for ds in datasets for e in EPSILONS
           if (c, ds, 0.0, e, "op_tight") in R and (c, ds, 0.0, e, "op_paper") in R]
    same_T = all(R[(c, ds, 0.0, e, "op_tight")]["n_iter"] == R[(c, ds, 0.0, e, "op_paper")]["n_iter"]
                 for c in configs for ds in datasets for e in EPSILONS
                 if (c, ds, 0.0, e, "op_tight") in R and (c, ds, 0.0, e, "op_paper") in R)
    A(f"- μ = 0, tight vs paper mode (not part of check (b)): both modes run "
      f"{'the same' if same_T else 'NOT the same'} T (the paper's schedule) and so release "
      f"the same w_T; tight adds {min(sig):.2f}–{max(sig):.2f}× less noise (Δ = 2LTη/n "
      f"instead of 3LTη/n, analytic σ). Tight has the lower mean error on "
      f"{n0 - len(worse)}/{n0} rows"
      + (f"; higher on {'; '.join(worse)} (max {zmax:.1f} standard errors)" if worse else "")
      + ". (An earlier version minimised Theorem 3's bound with tight's own constants, which "
        "gave a 1.3–2.2× larger T; because the bound's optimisation term 2βD²/T is far above "
        "the real GD error, those steps bought little and their larger Δ cost more: tight "
        "was worse than paper on some μ = 0 rows. Now it is never worse in distribution.)")
    from skdp._solvers import SOLVERS
    if "dpsgd" in SOLVERS:
        A("- `DPLogisticRegression`/`DPHuberRegressor` accept `solver=\"dpsgd\"` by now "
          "(registered in `skdp._solvers.SOLVERS`); this benchmark still calls the solver "
          "functions directly with the loss specs, so that both methods get exactly the same "
          "design, bounds and seeds.")
    else:
        A("- The estimators do not accept `solver=\"dpsgd\"` yet (`skdp._solvers.SOLVERS` "
          "only registers `output_perturbation`): this benchmark imports "
          "`skdp._solvers._dpsgd.solve_dpsgd`.")
    A("- No crash, non-finite output or privacy-check failure (`calibration=\"paper\"`'s "
      "analytic-Gaussian check) occurred in any cell.")
    A("")
    return L


def plot(path, meta, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    R = _index(results)
    datasets = meta["datasets"]
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 7.6), squeeze=False)
    eps = np.array(EPSILONS)
    styles = [("A", "op_paper", "op paper (A: [0,1] features)", "C0", "o", "-"),
              ("A", "op_tight", "op tight (A)", "C1", "s", "-"),
              ("A", "dpsgd", "dpsgd PLD (A)", "C2", "^", "-"),
              ("A", "dpsgd_paper", "dpsgd BST14 noise (A)", "C4", "v", "-"),
              ("B", "op_paper", "op paper (B: ||x|| <= 1)", "C0", "o", "--"),
              ("B", "op_tight", "op tight (B)", "C1", "s", "--")]
    for j, ds in enumerate(datasets):
        for i, mu in enumerate(MUS[ds]):
            ax = axes[i, j]
            for c, m, lab, col, mk, ls in styles:
                ys = [R[(c, ds, mu, e, m)]["error_mean"] if (c, ds, mu, e, m) in R else np.nan
                      for e in EPSILONS]
                if np.all(np.isnan(ys)):
                    continue
                ys = np.where(np.array(ys) > 0, ys, np.nan)
                ax.plot(eps, ys, ls=ls, marker=mk, color=col, label=lab, ms=4,
                        alpha=1.0 if c == "A" else 0.7)
            ax.plot(eps, [PAPER[(ds, mu, e)][0] for e in EPSILONS], "kx", ms=9, mew=2,
                    label="paper: ours")
            ax.plot(eps, [PAPER[(ds, mu, e)][1] for e in EPSILONS], "+", color="grey", ms=10,
                    mew=2, label="paper: BST14")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(eps)
            ax.set_xticklabels([f"{e:g}" for e in EPSILONS])
            ax.set_title(f"{LABELS[ds]}, μ = {mu:g}")
            ax.grid(True, which="both", alpha=0.3)
            if i == 1:
                ax.set_xlabel("ε (δ = 1e-3)")
            if j == 0:
                ax.set_ylabel("mean excess empirical risk")
    handles = {}
    for ax in axes.ravel():
        for hh, ll in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(ll, hh)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=7,
               fontsize=9)
    fig.suptitle(f"Table 3 reproduction ({meta['mode']} mode, {meta['reps']} reps; dpsgd "
                 f"{meta['dpsgd_reps']}) — Zhang et al. 2017")
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(out_dir, meta, refs, results, extra_md=None):
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = _machine()
    checks = compute_checks(meta, refs, results)
    md = render_markdown(meta, refs, results, checks, machine)
    md += render_analysis(meta, refs, results, checks)
    if extra_md:
        md += ["", extra_md]
    (out_dir / "table3.md").write_text("\n".join(md) + "\n")
    plot(out_dir / "table3.png", meta, results)
    refs_json = {f"{c}|{ds}|{mu:g}": v for (c, ds, mu), v in refs.items()}
    paper_json = {f"{ds}|{mu:g}|{e:g}": dict(zip(("error_ours", "error_bst14", "cpu_s_ours",
                                                 "cpu_s_bst14"), v))
                  for (ds, mu, e), v in PAPER.items()}
    payload = {"meta": meta, "machine": machine, "references": refs_json,
               "results": sorted(results, key=lambda r: (r["config"], r["dataset"], r["mu"],
                                                         r["epsilon"], r["method"])),
               "paper": paper_json, "checks": checks,
               "configs": CONFIGS}
    (out_dir / "table3.json").write_text(json.dumps(payload, indent=1, default=float) + "\n")
