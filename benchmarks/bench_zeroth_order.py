"""Private zeroth-order O2NC (Zhang, Tran & Cutkosky 2024) on capped-L1 robust regression.

Writes ``benchmarks/results/zeroth_order.md`` (and ``.json``).  For each setting and
``epsilon in {0.5, 1, 2, 8}`` (``delta = 1e-6``) three private fits of the same loss
``min(|x.w + b - y|, tau)`` (``tau = loss_scale = 1``, targets clipped to ``y_bound = 3``)
are compared side by side in one process:

* ``zo`` -- ``DPNonconvexRegressor(solver="zeroth_order")`` (variance-reduced oracle, tree
  noise, tight calibration, default smoothing radius ``0.2 y_bound/data_norm``);
* ``naive`` -- ``solver="zeroth_order_naive"`` (one row, one direction and fresh
  Gaussian noise per round), same smoothing radius;
* ``dpsgd`` -- ``solver="dpsgd"`` on the same loss through its **subgradient** (the
  dpsgd kernel dispatches the capped-absolute id to ``sign(r) 1{|r| < tau}``): Poisson
  batches of ``max(50, n/100)``, 5 epochs, ``alpha = 0``, projection radius
  ``max_coef_norm = 5`` (public), PLD-calibrated.  Its fit time includes the PLD
  calibration.

Metrics: the Goldstein-stationarity proxy ``||grad F_hat_delta(w)||`` -- the exact gradient
of the uniformly smoothed training objective at the output (closed form: each row
contributes ``a [P(0 < r + delta ||a|| t < tau) - P(-tau < r + delta ||a|| t < 0)]`` with
``(t + 1)/2 ~ Beta((p+1)/2, (p+1)/2)``), which bounds the Goldstein
``2 delta``-subdifferential (Cor. 2.3), with ``delta`` = zo's smoothing radius for every
method; the training capped objective; the RMSE on *clean* test targets; loss
evaluations (zo: ``2 p`` per row read, naive: 2 per row) or per-example gradient
evaluations (dpsgd); the fit time (kernels warmed first).  Means over seeds.

Settings: synthetic (rows uniform on the unit sphere in R^d, ``y = x.w* + 0.3 + 0.05 N``,
``||w*|| = 3``, 20 % of the training targets replaced by ``U(-3, 3)``; ``d = 20, n = 1e5``
and, without ``--quick``, ``d = 5, n = 1e4 / 1e5``); UCI airfoil and concrete (skdp
loaders, min-max features mapped to ``[-1, 1]``, target on a fixed public scale, 75/25
split, 15 % of the training targets replaced by gross outliers ``U(3, 6)`` then clipped to
3; reference: non-private least squares on the *clean* training targets).  ``--quick`` runs in a
few minutes.
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import beta as beta_dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    data_home,
    fmt_time,
    log,
    machine_info,
    machine_info_markdown,
    md_table,
    write_results,
)

from skdp import DPNonconvexRegressor  # noqa: E402
from skdp._mechanisms import clip_and_augment  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 8.0)
DELTA = 1e-6
TAU = 1.0
Y_BOUND = 3.0
METHODS = ("zo", "naive", "dpsgd")
# public target scales (centre, scale) of the UCI targets
TARGET_SCALE = {"airfoil": (125.0, 7.0), "concrete": (36.0, 17.0)}


def synthetic(n, d, seed, n_test=20_000):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w *= 3.0 / np.linalg.norm(w)

    def rows(m):
        X = rng.normal(size=(m, d))
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    X, Xt = rows(n), rows(n_test)
    y = X @ w + 0.3 + 0.05 * rng.normal(size=n)
    clean = y.copy()
    out = rng.random(n) < 0.2
    y[out] = rng.uniform(-3, 3, out.sum())
    yt = Xt @ w + 0.3
    return X, y, Xt, yt, math.sqrt(2.0), clean  # ||[x, 1]|| <= sqrt 2


def uci(name, seed):
    from skdp.datasets import load_airfoil, load_concrete

    loader = {"airfoil": load_airfoil, "concrete": load_concrete}[name]
    X, y = loader(data_home=data_home(), return_X_y=True)
    c, s = TARGET_SCALE[name]
    y = (np.asarray(y, dtype=float) - c) / s
    X = np.asarray(X, dtype=float)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    k = int(0.75 * len(y))
    tr, te = perm[:k], perm[k:]
    # the loader's columns lie in [0, 1/sqrt d] (min-max / sqrt d): centre and rescale them
    # to [-1, 1] (a fixed public map), so ||x|| <= sqrt d
    d = X.shape[1]
    X = (X * math.sqrt(d) - 0.5) * 2.0
    Xtr, ytr = X[tr], y[tr].copy()
    clean = ytr.copy()
    out = rng.random(k) < 0.15
    ytr[out] = rng.uniform(3, 6, out.sum())
    R = math.sqrt(d + 1.0) * 1.001
    return Xtr, ytr, X[te], y[te], R, clean


def smoothed_grad_norm(A, y, w, delta_s, tau=TAU):
    """``||grad F_hat_delta(w)||`` of the capped objective on rows ``A`` (closed form)."""
    p = A.shape[1]
    nu = np.linalg.norm(A, axis=1)
    r = A @ w - np.clip(y, -Y_BOUND, Y_BOUND)
    cdf = beta_dist((p + 1) / 2, (p + 1) / 2).cdf
    safe = np.where(nu > 0, nu, 1.0)

    def P_lt(v):
        return cdf(np.clip(((v - r) / (delta_s * safe) + 1) / 2, 0, 1))

    coef = (P_lt(tau) - P_lt(0.0)) - (P_lt(0.0) - P_lt(-tau))
    coef = np.where(nu > 0, coef, 0.0)
    return float(np.linalg.norm(A.T @ coef) / A.shape[0])


def make(method, eps, n, R, seed):
    common = dict(epsilon=eps, delta=DELTA, loss="capped_absolute", loss_scale=TAU,
                  data_norm=R, y_bound=Y_BOUND, random_state=seed)
    if method == "zo":
        return DPNonconvexRegressor(solver="zeroth_order", **common)
    if method == "naive":
        return DPNonconvexRegressor(solver="zeroth_order_naive", **common)
    b = max(50, n // 100)
    return DPNonconvexRegressor(solver="dpsgd", alpha=0.0, max_coef_norm=5.0, batch_size=b,
                                n_steps=int(math.ceil(5 * n / b)), **common)


def run_setting(name, data, eps_list, seeds):
    X, y, Xt, yt, R, y_clean = data
    n, d = X.shape
    p = d + 1
    A = clip_and_augment(X, R, True, 1.0)
    rows = []
    for eps in eps_list:
        acc = {m: {"proxy": [], "obj": [], "rmse": [], "time": [], "evals": []} for m in METHODS}
        for seed in seeds:
            delta_s = None
            for m in METHODS:
                est = make(m, eps, n, R, seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    dt = time.perf_counter() - t0
                w = np.append(est.coef_, est.intercept_)
                if delta_s is None:  # zo's smoothing radius (the default rule)
                    from skdp._solvers._zeroth_order import default_smoothing_radius
                    from skdp._losses._nonsmooth import CappedAbsoluteLoss

                    delta_s = default_smoothing_radius(R, Y_BOUND, CappedAbsoluteLoss(TAU))
                a = acc[m]
                a["proxy"].append(smoothed_grad_norm(A, y, w, delta_s))
                a["obj"].append(float(np.minimum(np.abs(A @ w - np.clip(y, -3, 3)), TAU).mean()))
                a["rmse"].append(float(np.sqrt(np.mean((est.predict(Xt) - yt) ** 2))))
                a["time"].append(dt)
                evals = est.n_gradient_evals_
                if m == "zo":
                    evals *= 2 * p
                elif m == "naive":
                    evals *= 2
                a["evals"].append(evals)
                assert est.epsilon_ <= eps * (1 + 1e-9)
        row = {"setting": name, "n": n, "d": d, "epsilon": eps, "delta_s": delta_s}
        for m in METHODS:
            row[m] = {k: float(np.mean(v)) for k, v in acc[m].items()}
            row[m]["time_median"] = float(np.median(acc[m]["time"]))
        rows.append(row)
        log(f"{name} eps={eps}: " + ", ".join(
            f"{m} proxy {row[m]['proxy']:.3f} rmse {row[m]['rmse']:.3f} "
            f"t {row[m]['time_median']:.2f}s" for m in METHODS))
    # reference: the loss at the truth / zero and a (nearly) non-private zo fit
    ref = make("zo", 1e6, n, R, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(X, y)
    w_ref = np.append(ref.coef_, ref.intercept_)
    ds = rows[0]["delta_s"]
    Xc = np.c_[X, np.ones(n)]
    clean = y if y_clean is None else y_clean
    w_ols = np.linalg.lstsq(Xc, clean, rcond=None)[0]
    reference = {
        "ols_clean_rmse": float(np.sqrt(np.mean((np.c_[Xt, np.ones(len(yt))] @ w_ols - yt)**2))),
        "zero_proxy": smoothed_grad_norm(A, y, np.zeros(p), ds),
        "zero_rmse": float(np.sqrt(np.mean(yt**2))),
        "nonprivate_zo_proxy": smoothed_grad_norm(A, y, w_ref, ds),
        "nonprivate_zo_rmse": float(np.sqrt(np.mean((ref.predict(Xt) - yt) ** 2))),
    }
    return rows, reference


def warm():
    X, y, *_ = synthetic(400, 3, 0, n_test=10)
    for m in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(m, 1.0, 400, math.sqrt(2), 0).fit(X, y)


def timing_point(n, d, reps):
    """Warm fit time of zo at n, d (target: < 10 s at n = 1e5, d = 20)."""
    X, y, *_ = synthetic(n, d, 123, n_test=10)
    times = []
    for r in range(reps):
        est = make("zo", 1.0, n, math.sqrt(2), r)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def render(results, reference, timing, info, quick):
    lines = ["# Private zeroth-order O2NC on capped-L1 robust regression", "",
             "Generated by `benchmarks/bench_zeroth_order.py" + (" --quick" if quick else "")
             + "`; see its docstring for the settings.  Loss `min(|r|, 1)`, targets clipped "
             "to 3, delta = 1e-6, tight calibration.  *proxy* = `||grad F_hat_delta(w)||`, "
             "the exact smoothed-gradient norm of the training objective at the output "
             "(Goldstein-stationarity proxy; smaller is better); *obj* = training capped "
             "loss; *RMSE* on clean test targets; *evals* = loss evaluations (zo, naive) "
             "or per-example gradients (dpsgd); time = median warm fit time.", "",
             machine_info_markdown(info, None), "",
             "Other helpers used the 2 cores at the same time: absolute times are noisy; "
             "the ratios compare methods measured in the same run.", ""]
    lines += ["## Fit time", "",
              f"zo fit time at n = 1e5, d = 20 (warm, median of 3): **{fmt_time(timing)}** "
              f"(target < 10 s: {'met' if timing < 10 else 'NOT met'}).", ""]
    wins = wins_rmse = wins_proxy = 0
    total = 0
    for setting in dict.fromkeys(r["setting"] for r in results):
        rs = [r for r in results if r["setting"] == setting]
        ref = reference[setting]
        r0 = rs[0]
        lines += [f"## {setting} (n = {r0['n']:,} train rows, d = {r0['d']}, "
                  f"smoothing radius {r0['delta_s']:.3g})", "",
                  f"Reference: w = 0 has proxy {ref['zero_proxy']:.3f}, test RMSE "
                  f"{ref['zero_rmse']:.3f}; zo at epsilon = 1e6 (nearly non-private) has proxy "
                  f"{ref['nonprivate_zo_proxy']:.3f}, test RMSE {ref['nonprivate_zo_rmse']:.3f}; "
                  f"non-private least squares on the clean training targets: test RMSE "
                  f"{ref['ols_clean_rmse']:.3f}.",
                  ""]
        head = ["epsilon"]
        for m in METHODS:
            head += [f"{m} proxy", f"{m} obj", f"{m} RMSE"]
        head += ["naive/zo proxy", "dpsgd/zo proxy", "naive/zo RMSE"]
        body = []
        for r in rs:
            row = [f"{r['epsilon']:g}"]
            for m in METHODS:
                row += [f"{r[m]['proxy']:.3f}", f"{r[m]['obj']:.3f}", f"{r[m]['rmse']:.3f}"]
            row += [f"{r['naive']['proxy'] / r['zo']['proxy']:.2f}",
                    f"{r['dpsgd']['proxy'] / r['zo']['proxy']:.2f}",
                    f"{r['naive']['rmse'] / r['zo']['rmse']:.2f}"]
            body.append(row)
            total += 1
            wins += r["zo"]["obj"] <= r["naive"]["obj"]
            wins_rmse += r["zo"]["rmse"] <= r["naive"]["rmse"]
            wins_proxy += r["zo"]["proxy"] <= r["naive"]["proxy"]
        lines += [md_table(head, body), ""]
        head2 = ["epsilon"] + [f"{m} evals" for m in METHODS] + [f"{m} time" for m in METHODS]
        body2 = [[f"{r['epsilon']:g}"] + [f"{r[m]['evals']:.3g}" for m in METHODS]
                 + [fmt_time(r[m]["time_median"]) for m in METHODS] for r in rs]
        lines += [md_table(head2, body2), ""]
    lines += ["## Summary", "",
              f"- variance-reduced zo has a training objective <= the naive baseline's in "
              f"{wins} of {total} (setting, epsilon) cells (means over seeds), a test RMSE <= "
              f"naive's in {wins_rmse} and a stationarity proxy <= naive's in {wins_proxy}.",
              "- The proxy is small both near a minimiser and on the flat plateau around "
              "w = 0 (most residuals beyond tau, where the capped loss is constant): a small "
              "proxy with a high objective (naive, small-n settings) is a poor stationary "
              "point, so read it together with the objective.",
              "- At n ~ 1e3 (UCI) even the nearly non-private zo barely moves from 0, and at "
              "n = 1e4 it makes partial progress: a single pass moves at most K delta and the "
              "regret-optimal OSD step uses the worst-case gradient bound; the method needs "
              "n >~ 1e5 here.",
              "- dpsgd runs on the same loss through its subgradient (5 epochs, multi-pass); "
              "zo and naive read every row once."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    quick = args.quick
    log("warming kernels")
    warm()
    settings = [("synthetic d=20", lambda s: synthetic(100_000, 20, s))]
    if not quick:
        settings += [("synthetic d=5, n=1e4", lambda s: synthetic(10_000, 5, s)),
                     ("synthetic d=5, n=1e5", lambda s: synthetic(100_000, 5, s))]
    settings += [("airfoil", lambda s: uci("airfoil", s)),
                 ("concrete", lambda s: uci("concrete", s))]
    seeds_syn = (0, 1) if quick else (0, 1, 2)
    seeds_uci = (0, 1, 2) if quick else tuple(range(6))
    results, reference = [], {}
    for name, fn in settings:
        data = fn(0)
        seeds = seeds_syn if name.startswith("synthetic") else seeds_uci
        rows, ref = run_setting(name, data, EPSILONS, seeds)
        results += rows
        reference[name] = ref
    log("timing point n=1e5, d=20")
    timing = timing_point(100_000, 20, 3)
    info = machine_info()
    md = render(results, reference, timing, info, quick)
    raw = {"quick": quick, "results": results, "reference": reference,
           "fit_time_n1e5_d20_s": timing, "machine": info}
    paths = write_results("zeroth_order", md, raw)
    log(f"wrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
