"""Convex ERM benchmark: ``skdp.DPLogisticRegression`` against scikit-learn.

Measures, on the UCI bank marketing data and a synthetic logistic problem (n = 10^6,
d = 50):

1. fit time of the DP estimator over scikit-learn's ``LogisticRegression`` on the *same*
   objective, side by side in one process after warm-up (target: ratio <= 1.5);
2. where the DP fit time goes (gradient evaluations, time per pass, copy/clip);
3. ``import skdp`` + first fit in a fresh process with a warm numba cache (target <= 2 s);
4. peak extra memory of a DP fit relative to ``X.nbytes`` (target <= 2);
5. test accuracy at epsilon in {0.1, 0.5, 1, 2} next to the non-private optimum.

Same objective.  ``DPLogisticRegression(alpha=mu)`` minimises
``(1/n) sum_i log(1 + exp(-y_i [x_i, s] w)) + (mu/2) ||w||^2`` with the intercept as a
*regularised* constant column ``s = intercept_scaling``.  scikit-learn minimises
``C sum_i loss_i + ||w||^2 / 2`` with an unpenalised intercept, so it gets the augmented
design ``[X, s]``, ``fit_intercept=False`` and ``C = 1/(n mu)``: then its objective is
``n C`` times ours and both have the same minimiser.

Run ``python benchmarks/bench_convex.py`` (about 3 minutes on an idle 2-core machine) or with
``--quick`` (synthetic n = 10^5, fewer repeats, about a minute).  Results go to
``benchmarks/results/convex.{md,json}`` (``convex_quick.*`` with ``--quick``).
"""

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

import _common as C  # noqa: E402

ALPHAS = (1e-2, 1e-4)
EPSILONS = (0.1, 0.5, 1.0, 2.0)
EPS_SPEED = 1.0
INTERCEPT_SCALING = 1.0
# Rows have ||x|| <= 1 (public), so [x, s] has norm <= sqrt(1 + s^2).
DATA_NORM = math.sqrt(1.0 + INTERCEPT_SCALING**2)
SK_TOLS = (1e-4, 1e-8)
# "default": numba, BLAS and OpenMP as configured (2 threads here); 1: all limited to one
# thread, which is robust to other processes on a small shared machine.
THREAD_SETTINGS = ("default", 1)
# Pause before every timed fit.  numba's OpenMP pool, scikit-learn's bundled OpenMP and
# OpenBLAS each keep their idle threads spinning for a while after a parallel region; on
# 2 cores a fit started right after the *other* library's fit runs ~2x slower (measured:
# DP bank fit 58 ms alone or after a 0.2 s pause, 130-170 ms right after a sklearn fit).
SETTLE_S = 0.3
# A timing round during which other processes used more than QUIET_CORES cores on average
# is redone (up to MAX_ROUNDS_FACTOR x the requested rounds) and left out of the medians.
QUIET_CORES = 0.25
MAX_ROUNDS_FACTOR = 2
SK_MAX_ITER = 100_000
TARGET_SPEED_RATIO = 1.5
TARGET_STARTUP_S = 2.0
TARGET_MEMORY_RATIO = 2.0

SYN_D = 50
SYN_SEED = 0
SYN_COEF_SCALE = 2.0  # w* ~ N(0, 4 I): margins x.w* have std ~2 before clipping
SYN_INTERCEPT = 0.5
SYN_N_TEST = 100_000
BANK_TEST_SIZE = 0.2
BANK_SPLIT_SEED = 0


# ----------------------------------------------------------------------------- data
def make_synthetic(n, d=SYN_D, seed=SYN_SEED, stream=1):
    """Rows ``x ~ N(0, I/d)`` rescaled to ``||x|| <= 1``; ``y ~ Bernoulli(sigmoid(x.w* + b*))``.

    ``w*`` depends only on ``seed`` (same for train and test); ``stream`` selects an
    independent sample (1 = train, 2 = test).  Built in place: peak memory ~ X + O(n).
    """
    w_true = SYN_COEF_SCALE * np.random.default_rng(seed).standard_normal(d)
    rng = np.random.default_rng([seed, stream])
    X = rng.standard_normal((n, d))
    X *= 1.0 / math.sqrt(d)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    clipped = float(np.mean(norms > 1.0))
    X /= np.maximum(norms, 1.0)[:, None]
    z = X @ w_true + SYN_INTERCEPT
    y = (rng.random(n) < expit(z)).astype(np.int64)
    bayes = float(np.mean((z > 0) == (y == 1)))
    return X, y, {"w_true": w_true, "fraction_rescaled": clipped, "bayes_accuracy": bayes}


def load_bank_data():
    from skdp.datasets import load_bank

    bunch = load_bank(data_home=C.data_home())
    X = np.ascontiguousarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target)
    pre = bunch.preprocessing
    info = {
        "preprocessing_rule": pre.get("rule"),
        "row_norm_bound": pre.get("row_norm_bound"),
        "row_norm_bound_tight": pre.get("row_norm_bound_tight"),
        "privacy_note": pre.get("privacy_note"),
        "max_row_norm_observed": float(np.sqrt(np.einsum("ij,ij->i", X, X).max())),
    }
    return X, y, info


# ---------------------------------------------------------------------- estimators
def delta_for(n):
    """delta = 1/n^2 (well below 1/n) for a training set of n rows."""
    return 1.0 / float(n) ** 2


def make_dp(alpha, n, epsilon=EPS_SPEED, seed=0):
    from skdp import DPLogisticRegression

    return DPLogisticRegression(classes=[0, 1],
        epsilon=epsilon,
        delta=delta_for(n),
        data_norm=DATA_NORM,
        alpha=alpha,
        fit_intercept=True,
        intercept_scaling=INTERCEPT_SCALING,
        random_state=seed,
    )


def make_sk(alpha, n, tol):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False, tol=tol,
                              max_iter=SK_MAX_ITER)


def augment(X):
    return np.hstack([X, np.full((X.shape[0], 1), INTERCEPT_SCALING)])


def dp_vector(model):
    """Released coefficients as one vector in the augmented parametrisation."""
    return np.r_[model.coef_.ravel(), model.intercept_.ravel() / INTERCEPT_SCALING]


def objective_grad_norm(Xa, y01, w, alpha):
    """``||grad F(w)||_2`` of the common objective (mean loss + alpha/2 ||w||^2)."""
    ypm = np.where(y01 == 1, 1.0, -1.0)
    z = Xa @ w
    g = -ypm * expit(-ypm * z)
    return float(np.linalg.norm(Xa.T @ g / Xa.shape[0] + alpha * w))


def fit_sk_quiet(model, X, y):
    """Fit, recording (not printing) a ConvergenceWarning."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    return any(issubclass(w.category, ConvergenceWarning) for w in caught)


# --------------------------------------------------------------------- diagnostics
def diagnose(X, y, Xa, alpha):
    """One untimed, instrumented fit of each estimator (doubles as the warm-up).

    Records the DP solver's gradient-norm trace (through the private ``Objective``), the
    time of its copy/clip step, scikit-learn's number of loss/gradient evaluations, and
    the peak traced memory of both fits.  Instrumentation is best effort: if a private
    name moved, the corresponding entries are None and the plain fit still runs.
    """
    n = X.shape[0]
    out = {}
    trace, clip_times = [], []
    patches = []
    try:
        from skdp._solvers import _objective as obj_mod

        orig_vg = obj_mod.Objective.value_grad

        def value_grad(self, W):
            t = time.perf_counter()
            v, g = orig_vg(self, W)
            trace.append((time.perf_counter() - t, float(v), float(np.linalg.norm(g)),
                          int(getattr(self, "n", -1))))
            return v, g

        obj_mod.Objective.value_grad = value_grad
        patches.append((obj_mod.Objective, "value_grad", orig_vg))
    except (ImportError, AttributeError) as exc:
        out["trace_error"] = repr(exc)
    try:
        from skdp._solvers import _output_perturbation as op_mod

        orig_clip = op_mod.clip_and_augment

        def clip_and_augment(*a, **k):
            t = time.perf_counter()
            r = orig_clip(*a, **k)
            clip_times.append(time.perf_counter() - t)
            return r

        op_mod.clip_and_augment = clip_and_augment
        patches.append((op_mod, "clip_and_augment", orig_clip))
        slack = getattr(op_mod, "CERTIFICATE_SLACK", 0.01)
    except (ImportError, AttributeError) as exc:
        out["clip_error"] = repr(exc)
        slack = 0.01
    try:
        dp = make_dp(alpha, n)
        time.sleep(SETTLE_S)
        with C.traced_peak() as mem:
            t_dp, _ = C.timed(dp.fit, X, y)
    finally:
        for owner, name, orig in reversed(patches):
            setattr(owner, name, orig)
    target = slack * DATA_NORM / n  # mu * tau with tau = slack L/(n mu), L = data_norm
    # Evaluations on the full design; others (e.g. a warm start on a row subsample) are
    # counted separately, in units of full passes.
    full = [(t, v, g) for t, v, g, rows in trace if rows == n]
    sub_rows = sum(rows for _, _, _, rows in trace if rows != n)
    gnorms = [g for _, _, g in full]
    first_ok = next((i + 1 for i, g in enumerate(gnorms) if g <= target), None)
    out["dp"] = {
        "fit_s_instrumented": t_dp,
        "n_iter": int(dp.n_iter_),
        # Full passes counted by the wrapper; without it, from ``n_gradient_evals_``
        # (per-example gradients = passes x n in current skdp).
        "n_gradient_evals": len(full) if trace else _passes(dp.n_gradient_evals_, n),
        "subsample_pass_equivalents": sub_rows / n,
        "n_gradient_evals_attr": int(dp.n_gradient_evals_),
        "traced_evals": len(trace),
        "certificate_target": target,
        "evals_to_certifiable": first_ok,
        "grad_norm_trace": gnorms,
        "value_trace": [v for _, v, _ in full],
        "s_per_eval": C.median([t for t, _, _ in full]) if full else None,
        "s_in_evals": float(sum(t for t, _, _, _ in trace)) if trace else None,
        "clip_s": clip_times[0] if clip_times else None,
        "peak_extra_bytes": mem["peak_extra_bytes"],
        "X_nbytes": X.nbytes,
    }

    try:
        from sklearn.linear_model._linear_loss import LinearModelLoss

        orig_lg = LinearModelLoss.loss_gradient
    except (ImportError, AttributeError):
        LinearModelLoss, orig_lg = None, None
    for tol in SK_TOLS:
        calls = []
        if orig_lg is not None:

            def loss_gradient(self, *a, **k):
                t = time.perf_counter()
                r = orig_lg(self, *a, **k)
                calls.append(time.perf_counter() - t)
                return r

            LinearModelLoss.loss_gradient = loss_gradient
        try:
            sk = make_sk(alpha, n, tol)
            time.sleep(SETTLE_S)
            with C.traced_peak() as mem:
                t_sk, _ = C.timed(fit_sk_quiet, sk, Xa, y)
        finally:
            if orig_lg is not None:
                LinearModelLoss.loss_gradient = orig_lg
        w = sk.coef_.ravel()
        out[f"sk_{tol:g}"] = {
            "fit_s_instrumented": t_sk,
            "n_iter": int(np.max(sk.n_iter_)),
            "n_evals": len(calls) if orig_lg is not None else None,
            "s_per_eval": C.median(calls) if calls else None,
            "grad_norm_at_solution": objective_grad_norm(Xa, y, w, alpha),
            "peak_extra_bytes": mem["peak_extra_bytes"],
            "Xa_nbytes": Xa.nbytes,
        }
    return out


def _passes(n_gradient_evals, n):
    """Full passes from ``n_gradient_evals_``: per-example counts are multiples of n."""
    n_gradient_evals = int(n_gradient_evals)
    return n_gradient_evals // n if n_gradient_evals >= n and n_gradient_evals % n == 0 \
        else n_gradient_evals


# ---------------------------------------------------------------------------- speed
def bench_speed(name, X, y, alpha, repeats, thread_setting="default", diagnostics=True,
                X_test=None, y_test=None, acc_cache=None, gate=None):
    """Median fit times over ``repeats`` interleaved rounds DP -> sklearn(1e-4) -> (1e-8).

    With ``diagnostics`` an instrumented untimed fit of each estimator comes first (it is
    also the per-configuration warm-up; kernels were loaded by :func:`warm_up`).
    """
    n = X.shape[0]
    Xa = augment(X)
    diag = None
    with C.threads(thread_setting):
        if diagnostics:
            C.log(f"speed {name} alpha={alpha:g} threads={thread_setting}: diagnostics")
            if gate is not None:
                gate.wait()
            load = C.CpuLoad()
            diag = diagnose(X, y, Xa, alpha)
            diag["external_cores"] = load.stop()["external_cores"]
        times = {"dp": [], **{f"sk_{t:g}": [] for t in SK_TOLS}}
        dist, noise, ext = [], [], []
        conv_warn = {f"sk_{t:g}": False for t in SK_TOLS}
        sk_models = {}
        r = -1
        while True:
            clean = sum(e <= QUIET_CORES for e in ext)
            if clean >= repeats or r + 1 >= MAX_ROUNDS_FACTOR * repeats:
                break
            # Redoing disturbed rounds only helps while we may still wait for quiet.
            if r + 1 >= repeats and (gate is None or gate.exhausted):
                break
            r += 1
            if gate is not None:
                gate.wait()
            load = C.CpuLoad()
            dp = make_dp(alpha, n, seed=r)
            time.sleep(SETTLE_S)
            t, _ = C.timed(dp.fit, X, y)
            times["dp"].append(t)
            for tol in SK_TOLS:
                sk = make_sk(alpha, n, tol)
                time.sleep(SETTLE_S)
                t, warned = C.timed(fit_sk_quiet, sk, Xa, y)
                times[f"sk_{tol:g}"].append(t)
                conv_warn[f"sk_{tol:g}"] |= warned
                sk_models[tol] = sk
            ext.append(load.stop()["external_cores"])
            # Same-objective check: the DP release minus the precise sklearn optimum is
            # the noise (plus a certified <= tau error), so its norm is ~ sigma sqrt(p).
            w_sk = sk_models[SK_TOLS[-1]].coef_.ravel()
            dist.append(float(np.linalg.norm(dp_vector(dp) - w_sk))
                        / (dp.noise_scale_ * math.sqrt(w_sk.size)))
            noise.append(float(dp.noise_scale_))
            if acc_cache is not None:
                acc_cache[(alpha, EPS_SPEED, r)] = (float(dp.score(X_test, y_test)),
                                                    float(dp.noise_scale_))
            C.log(f"  {name} alpha={alpha:g} threads={thread_setting} round {r + 1}: "
                  f"dp {times['dp'][-1]:.3f}s, "
                  + ", ".join(f"sk tol={t:g} {times[f'sk_{t:g}'][-1]:.3f}s" for t in SK_TOLS)
                  + f" (other processes: {ext[-1]:.2f} cores)")
    # Medians over the rounds in which other processes stayed quiet (all rounds if fewer
    # than half of them did); every round is kept in the JSON.
    keep = [i for i, e in enumerate(ext) if e <= QUIET_CORES]
    contended = len(keep) < max(1, (repeats + 1) // 2)
    if contended:
        keep = list(range(len(ext)))
    med = {k: C.median([v[i] for i in keep]) for k, v in times.items()}
    return {
        "dataset": name,
        "n": n,
        "d": X.shape[1],
        "alpha": alpha,
        "threads": thread_setting,
        "epsilon": EPS_SPEED,
        "delta": delta_for(n),
        "repeats": repeats,
        "rounds_run": len(ext),
        "rounds_used": keep,
        "contended": contended,
        "times_s": times,
        "median_s": med,
        "ratio": {f"sk_{t:g}": med["dp"] / med[f"sk_{t:g}"] for t in SK_TOLS},
        "external_cores_per_round": ext,
        "dp_n_iter": int(dp.n_iter_),
        "dp_n_gradient_evals_attr": int(dp.n_gradient_evals_),
        "sk_n_iter": {f"sk_{t:g}": int(np.max(sk_models[t].n_iter_)) for t in SK_TOLS},
        "sk_convergence_warning": conv_warn,
        "dist_to_sk_over_expected_noise": C.median(dist),
        "noise_scale": C.median(noise),
        "diagnostics": diag,
        "sk_precise_model": sk_models[SK_TOLS[-1]],  # dropped before writing JSON
    }


def warm_up(X, y):
    """Load every kernel and import everything once (never timed, never traced)."""
    n = X.shape[0]
    Xa = augment(X)
    for thread_setting in ("default", 1):
        with C.threads(thread_setting):
            make_dp(ALPHAS[0], n).fit(X, y)
            for tol in SK_TOLS:
                fit_sk_quiet(make_sk(ALPHAS[0], n, tol), Xa, y)


# -------------------------------------------------------------------------- startup
STARTUP_CODE = r"""
import time
t0 = time.perf_counter()
import skdp
t1 = time.perf_counter()
from skdp import DPLogisticRegression
t2 = time.perf_counter()
import numpy as np
rng = np.random.default_rng(0)
X = rng.standard_normal((1000, 10)) / np.sqrt(10)
X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
y = (X[:, 0] + 0.3 * rng.standard_normal(1000) > 0).astype(int)
t3 = time.perf_counter()
DPLogisticRegression(classes=[0, 1],
                     epsilon=1.0, delta=1e-6, data_norm=2 ** 0.5, random_state=0).fit(X, y)
t4 = time.perf_counter()
import json, numba
print(json.dumps({"import_skdp_s": t1 - t0, "import_estimator_s": t2 - t1,
                  "data_s": t3 - t2, "first_fit_s": t4 - t3, "total_s": t4 - t0,
                  "numba_cache_dir": numba.config.CACHE_DIR}))
"""


def bench_startup(n_runs=3):
    """Fresh interpreters, one after the other: run 1 warms numba's on-disk cache."""
    runs = []
    for i in range(n_runs):
        t, out = C.timed(C.run_python, STARTUP_CODE)
        rec = C.last_json_line(out)
        rec["process_wall_s"] = t
        runs.append(rec)
        C.log(f"startup run {i + 1}: import+first fit {rec['total_s']:.3f}s "
              f"(process wall {t:.2f}s)")
    imports = C.import_times("from skdp import DPLogisticRegression", IMPORT_PACKAGES)
    C.log("import profile: " + ", ".join(f"{k} {v:.2f}s" for k, v in imports.items()))
    return {"runs": runs, "reported_s": runs[1]["total_s"], "reported_run": 2,
            "import_profile_s": imports}


IMPORT_PACKAGES = ("numpy", "scipy", "sklearn", "numba", "dp_accounting", "threadpoolctl",
                   "skdp.linear_model", "skdp._solvers", "skdp._losses", "skdp._mechanisms",
                   "skdp.accounting")


# --------------------------------------------------------------------------- memory
def memory_child(n):
    """Child mode: peak RSS of one DP fit (and one sklearn fit) in a fresh process."""
    X, y, _ = make_synthetic(n)
    rep = {"n": n, "d": X.shape[1], "X_nbytes": X.nbytes}
    make_dp(ALPHAS[0], 2000).fit(X[:2000], y[:2000])  # load kernels, start threads
    for label, model, data in (
        ("dp", make_dp(ALPHAS[0], n), X),
        ("sk_1e-4", make_sk(ALPHAS[0], n, 1e-4), None),
    ):
        if data is None:
            data = augment(X)
            rep["Xa_nbytes"] = data.nbytes
        base = C.proc_status_kib("VmRSS")["VmRSS"]
        rep["hwm_reset"] = C.reset_peak_rss()
        if label == "dp":
            model.fit(data, y)
        else:
            fit_sk_quiet(model, data, y)
        peak = C.proc_status_kib("VmHWM")["VmHWM"]
        rep[label] = {"rss_before_kib": base, "peak_kib": peak,
                      "peak_extra_bytes": (peak - base) * 1024}
        del data
    print(json.dumps(rep))


def bench_memory_fresh(n):
    t, out = C.timed(C.run_python, None, [str(Path(__file__).resolve()), "--memory-child", str(n)])
    rep = C.last_json_line(out)
    C.log(f"fresh-process memory (n={n}) took {t:.1f}s")
    return rep


# ------------------------------------------------------------------------- accuracy
def bench_accuracy(name, X, y, X_test, y_test, seeds, acc_cache=None, sk_models=None,
                   extra=None):
    rows = []
    n = X.shape[0]
    for alpha in ALPHAS:
        sk = (sk_models or {}).get(alpha)
        if sk is None:
            sk = make_sk(alpha, n, SK_TOLS[-1])
            fit_sk_quiet(sk, augment(X), y)
        acc_np = float(sk.score(augment(X_test), y_test))
        w_norm = float(np.linalg.norm(sk.coef_))
        per_eps = {}
        for eps in EPSILONS:
            accs, sigmas = [], []
            for seed in seeds:
                key = (alpha, eps, seed)
                if acc_cache is not None and key in acc_cache:
                    acc, sigma = acc_cache[key]
                else:
                    dp = make_dp(alpha, n, epsilon=eps, seed=seed).fit(X, y)
                    acc, sigma = float(dp.score(X_test, y_test)), float(dp.noise_scale_)
                accs.append(acc)
                sigmas.append(sigma)
            per_eps[eps] = {"accuracies": accs, "mean": float(np.mean(accs)),
                            "std": float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0,
                            "noise_scale": float(np.median(sigmas))}
        C.log(f"accuracy {name} alpha={alpha:g}: non-private {acc_np:.4f}, "
              + ", ".join(f"eps={e:g} {v['mean']:.4f}" for e, v in per_eps.items()))
        rows.append({"dataset": name, "alpha": alpha, "n_train": n, "n_test": X_test.shape[0],
                     "p": X.shape[1] + 1,
                     "delta": delta_for(n), "nonprivate_accuracy": acc_np,
                     "nonprivate_coef_norm": w_norm, "dp": per_eps,
                     "majority_accuracy": float(max(np.mean(y_test), 1 - np.mean(y_test))),
                     **(extra or {})})
    return rows


# ------------------------------------------------------------------------ rendering
def render(res):
    q = res["config"]
    info = res["machine"]
    L = []
    L.append("# Convex ERM benchmark: `DPLogisticRegression` vs scikit-learn\n")
    L.append(f"Mode: **{'quick' if q['quick'] else 'full'}** — generated by "
             f"`python benchmarks/bench_convex.py{' --quick' if q['quick'] else ''}` "
             f"in {res['total_wall_s']:.0f} s. All numbers below are written by the script; "
             "raw values (every repeat, gradient-norm traces) are in "
             f"`{res['stem']}.json`.\n")
    L.append("## Machine\n")
    L.append(C.machine_info_markdown(info, res["load"]["total"]) + "\n")
    qw = res["quiet_wait"]
    L.append(f"Before timing, the script waited {qw['waited_s']:.0f} s for other processes to "
             f"drop below {qw['threshold_cores']} cores: "
             f"{'reached' if qw['quiet'] else 'not reached'} (last sample "
             f"{qw['samples'][-1]:.2f} cores). Before each timing round it waited again "
             f"for quiet, {res['quiet_gate']['spent_s']:.0f} s in total out of a budget of "
             f"{res['quiet_gate']['budget_s']:.0f} s.\n")
    ext = {k: v["external_cores"] for k, v in res["load"].items()}
    L.append("Other processes' average CPU use per section (cores): "
             + ", ".join(f"{k} {v:.2f}" for k, v in ext.items())
             + ". Timings on a shared 2-core machine are only as good as this; the ratios "
               "are measured side by side (interleaved rounds) so that load hits both "
               "estimators alike.\n")

    # --- targets
    L.append("## Targets\n")
    rows = []
    for s in res["speed"]:
        r4, r8 = s["ratio"]["sk_0.0001"], s["ratio"]["sk_1e-08"]
        rows.append([f"fit time DP / sklearn, {s['dataset']}, α={s['alpha']:g}, "
                     f"{thread_label(s['threads'])}",
                     f"≤ {TARGET_SPEED_RATIO}", f"{r4:.2f} / {r8:.2f}",
                     f"{C.mark(r4 <= TARGET_SPEED_RATIO)} / {C.mark(r8 <= TARGET_SPEED_RATIO)}"])
    st = res["startup"]["reported_s"]
    rows.append(["import skdp + first fit, fresh process, warm numba cache",
                 f"≤ {TARGET_STARTUP_S:g} s", f"{st:.2f} s", C.mark(st <= TARGET_STARTUP_S)])
    for m in res["memory"]:
        rows.append([f"peak extra memory of a DP fit / X.nbytes, {m['dataset']} ({m['method']})",
                     f"≤ {TARGET_MEMORY_RATIO:g}", f"{m['ratio']:.2f}",
                     C.mark(m["ratio"] <= TARGET_MEMORY_RATIO)])
    L.append(C.md_table(["target", "goal", "measured", "met"], rows, "lrrc") + "\n")
    L.append("Fit-time rows read *vs sklearn at its default tol=1e-4 / vs sklearn at tol=1e-8* "
             "(equal precision).\n")

    # --- setup
    bank = res["datasets"]["bank"]
    syn = res["datasets"]["synthetic"]
    L.append("## Setup\n")
    L.append(
        "- **Same objective.** DP: `DPLogisticRegression(epsilon, delta=1/n², "
        f"data_norm=√(1+s²)={DATA_NORM:.4f}, alpha=μ, intercept_scaling=s={INTERCEPT_SCALING:g})` "
        "minimises mean logistic loss + (μ/2)‖w‖² with the intercept as a regularised "
        "constant column (rows have ‖x‖ ≤ 1, a public bound, so ‖[x, s]‖ ≤ √(1+s²)). "
        "scikit-learn `LogisticRegression(C=1/(nμ), fit_intercept=False, tol, "
        f"max_iter={SK_MAX_ITER})` (lbfgs) gets the augmented design [X, s]; its objective is "
        "nC = 1/μ times ours. Building [X, s] for sklearn is not timed; the DP fit's own "
        "clipped+augmented copy is (it is part of `fit`).\n"
        "- **Timing.** One process; each configuration is first fitted once untimed "
        "(numba kernels loaded, caches warm, instrumented diagnostics), then "
        f"{q['repeats']} interleaved rounds DP → sklearn tol=1e-4 → sklearn tol=1e-8 "
        f"({q['repeats_1thread']} with every library limited to one thread); medians "
        "reported. DP timed at ε = 1 (its fit time does not depend on ε: the noise is added "
        f"after the optimisation). Every timed fit starts after a {SETTLE_S:g} s pause: numba's "
        "OpenMP pool, scikit-learn's own OpenMP runtime and OpenBLAS each leave idle threads "
        "spinning after a parallel region, and on 2 cores a fit started right after the "
        "other library's fit is slowed ~2× by them (a real cost when alternating libraries, "
        "but not one of either estimator).\n"
        "- **Two sklearn references.** tol=1e-4 is sklearn's default (max |gradient| ≤ 1e-4 on "
        "the mean objective). The DP solver certifies ‖∇F‖ ≤ 0.01·L/n (L = data_norm), "
        "i.e. far tighter, so tol=1e-8 is the equal-precision reference. ‖∇F‖ at each "
        "solution is in the profile table.\n"
        f"- **bank**: `skdp.datasets.load_bank` from `{res['data_home']}`, n = "
        f"{bank['n']:,}, d = {bank['d']}; preprocessing (`bunch.preprocessing['rule']`): "
        f"{bank['info']['preprocessing_rule']}; declared row-norm bound "
        f"{bank['info']['row_norm_bound']:g} (tight {bank['info']['row_norm_bound_tight']:.3f}). "
        f"Max row norm observed {bank['info']['max_row_norm_observed']:.3f}. Note: the "
        "loader's min–max scaling uses the min and max over the whole file (dataset "
        "statistics treated as public, as in the paper). Accuracy uses a stratified 80/20 "
        f"split (seed {BANK_SPLIT_SEED}); speed and memory use all rows.\n"
        f"- **synthetic**: n = {fmt_n(syn['n'])} training rows, d = {SYN_D}; "
        f"x ~ N(0, I/d), rows with ‖x‖ > 1 rescaled to norm 1 "
        f"({100 * syn['info']['fraction_rescaled']:.1f} % of rows); w* ~ N(0, "
        f"{SYN_COEF_SCALE ** 2:g} I) (seed {SYN_SEED}), b* = {SYN_INTERCEPT}, "
        f"y ~ Bernoulli(sigmoid(x·w* + b*)); an independent test set of {SYN_N_TEST:,} rows; "
        f"Bayes accuracy {syn['info']['bayes_accuracy']:.4f}.\n"
    )

    # --- speed
    L.append("## 1. Fit time (median of rounds)\n")
    rows = []
    for s in res["speed"]:
        m = s["median_s"]
        r4, r8 = s["ratio"]["sk_0.0001"], s["ratio"]["sk_1e-08"]
        rows.append([s["dataset"], f"{fmt_n(s['n'])} × {s['d']}", f"{s['alpha']:g}",
                     thread_label(s["threads"]),
                     f"{len(s['rounds_used'])} of {s['rounds_run']}"
                     + (" ⚠ contended" if s["contended"] else ""),
                     C.fmt_time(m["dp"]), C.fmt_time(m["sk_0.0001"]), C.fmt_time(m["sk_1e-08"]),
                     f"{r4:.2f} {C.mark(r4 <= TARGET_SPEED_RATIO)}",
                     f"{r8:.2f} {C.mark(r8 <= TARGET_SPEED_RATIO)}",
                     f"{s['dist_to_sk_over_expected_noise']:.2f}",
                     f"{C.median([s['external_cores_per_round'][i] for i in s['rounds_used']]):.2f}"
                     f" (max {max(s['external_cores_per_round']):.2f})"])
    L.append(C.md_table(
        ["dataset", "n × d", "α", "threads", "rounds", "DP fit", "sklearn tol=1e-4",
         "sklearn tol=1e-8", "DP / sk(1e-4)", "DP / sk(1e-8)", "‖w_DP − w_sk‖ / (σ√p)",
         "other procs (cores)"], rows, "lrrlrrrrrrrr") + "\n")
    L.append("‖w_DP − w_sk‖ / (σ√p) checks that both solve the same problem: the DP release "
             "minus the precise sklearn optimum is the privacy noise, whose norm is ≈ σ√p, so "
             "the ratio should be ≈ 1. \"rounds\" counts the rounds used for the medians out "
             f"of those run: a round during which other processes used more than {QUIET_CORES} "
             f"cores is redone (up to {MAX_ROUNDS_FACTOR}× the planned number, while the "
             "waiting budget lasts) and left out; "
             "\"⚠ contended\" marks configurations where fewer than half the planned rounds "
             "were quiet (all rounds are then used). \"1 thread\" limits numba, BLAS and "
             "OpenMP to one thread for both estimators. \"other procs\" is the median CPU use "
             "of other processes during the rounds used (max over all rounds in brackets); with "
             "2 threads on 2 cores a busy core stalls every parallel region.\n")

    # --- profile
    L.append("## 2. Where the time goes\n")
    by_key = {(s["dataset"], s["alpha"], s["threads"]): s for s in res["speed"]}
    rows = []
    for s in res["speed"]:
        dg = s["diagnostics"]
        if dg is None:
            continue
        dp = dg["dp"]
        s4, s8 = dg["sk_0.0001"], dg["sk_1e-08"]
        tte = dp["evals_to_certifiable"]
        n_ev = dp["n_gradient_evals"]
        one = by_key.get((s["dataset"], s["alpha"], 1))

        def per_eval(entry, key, evals):
            if entry is None or not evals:
                return "n/a"
            return C.fmt_time(entry["median_s"][key] / evals)

        share_ev = (dp["s_in_evals"] or 0) / dp["fit_s_instrumented"]
        share_clip = (dp["clip_s"] or 0) / dp["fit_s_instrumented"]
        rows.append([
            s["dataset"], f"{s['alpha']:g}",
            f"{dp['n_iter']} / {n_ev}"
            + (f" + {dp['subsample_pass_equivalents']:.2f}"
               if dp.get("subsample_pass_equivalents") else ""),
            "never" if tte is None else f"{tte} / {n_ev - tte}",
            f"{100 * share_ev:.0f} % / {100 * share_clip:.0f} % / "
            f"{100 * (1 - share_ev - share_clip):.0f} %",
            f"{s4['n_iter']} / {s4['n_evals']}", f"{s8['n_iter']} / {s8['n_evals']}",
            f"{per_eval(s, 'dp', n_ev)} / {per_eval(s, 'sk_1e-08', s8['n_evals'])}",
            f"{per_eval(one, 'dp', n_ev)} / {per_eval(one, 'sk_1e-08', s8['n_evals'])}",
        ])
    L.append(C.md_table(
        ["dataset", "α", "DP iters / full passes (+ warm start)",
         "DP passes until ‖∇F‖ ≤ 0.01L/n / after",
         "DP fit: grad passes / clip+copy / rest", "sk(1e-4) iters / evals",
         "sk(1e-8) iters / evals", "fit time per eval, DP / sk(1e-8), default threads",
         "same, 1 thread"],
        rows, "lrrrrrrrr") + "\n")
    rows = []
    for s in res["speed"]:
        dg = s["diagnostics"]
        if dg is None:
            continue
        dp = dg["dp"]
        tr = dp["grad_norm_trace"]
        rows.append([s["dataset"], f"{s['alpha']:g}", C.fmt_sci(dp["certificate_target"]),
                     C.fmt_sci(tr[-1]) if tr else "n/a", C.fmt_sci(min(tr)) if tr else "n/a",
                     C.fmt_sci(dg["sk_0.0001"]["grad_norm_at_solution"]),
                     C.fmt_sci(dg["sk_1e-08"]["grad_norm_at_solution"])])
    L.append("Precision reached (‖∇F‖₂ of the common objective):\n")
    L.append(C.md_table(["dataset", "α", "DP certificate 0.01L/n", "DP last eval",
                         "DP smallest seen", "sklearn tol=1e-4", "sklearn tol=1e-8"],
                        rows, "lrrrrrr") + "\n")
    L.append("DP iterations, full gradient passes (counted by the wrapper; `n_gradient_evals_` "
             "reports per-example gradients, i.e. passes × n; \"+ warm start\" is the work "
             "spent on a row-subsample warm start, in full-pass units), the time shares "
             "(gradient passes include the warm start) and the ‖∇F‖ "
             "trace come from one untimed instrumented fit at default threads (wrapping the "
             "private `Objective.value_grad` and `clip_and_augment`); sklearn's evaluations "
             "count calls of `LinearModelLoss.loss_gradient`. \"after\" counts DP passes "
             "spent after "
             "the first point that already satisfied the privacy certificate. \"Fit time per "
             "eval\" is the median fit time of §1 divided by the number of evaluations (so it "
             "includes each solver's fixed costs). \"DP last eval\" is ‖∇F‖ at the last "
             "evaluated point (normally the returned one).\n")
    for note in res["profile_notes"]:
        L.append(f"- {note}")
    L.append("")

    # --- startup
    L.append("## 3. `import skdp` + first fit in a fresh process\n")
    rows = []
    for i, r in enumerate(res["startup"]["runs"], 1):
        rows.append([str(i) + (" (reported)" if i == res["startup"]["reported_run"] else ""),
                     C.fmt_time(r["import_skdp_s"]), C.fmt_time(r["import_estimator_s"]),
                     C.fmt_time(r["first_fit_s"]), C.fmt_time(r["total_s"]),
                     C.fmt_time(r["process_wall_s"])])
    L.append(C.md_table(["run", "import skdp", "from skdp import DPLogisticRegression",
                         "first fit (1000 × 10)", "total", "process wall (incl. interpreter)"],
                        rows, "lrrrrr") + "\n")
    cache = res["startup"]["runs"][0].get("numba_cache_dir") or \
        "default (`__pycache__` next to the skdp sources)"
    prof = res["startup"]["import_profile_s"]
    if prof:
        L.append("Where `from skdp import DPLogisticRegression` spends its time (`python -X "
                 "importtime`, cumulative, each package counted where it is first imported, so "
                 "nested entries overlap): "
                 + ", ".join(f"`{k}` {C.fmt_time(v)}" for k, v in
                             sorted(prof.items(), key=lambda kv: -kv[1])) + ".\n")
    L.append(f"Run 1 warms numba's on-disk cache (it may already have been warm); runs 2-3 load "
             f"compiled kernels from it. numba cache dir: {cache}. Measured inside the child "
             "with `time.perf_counter()` from before `import skdp` to after `fit`.\n")

    # --- memory
    L.append("## 4. Peak memory of a fit\n")
    rows = []
    for m in res["memory"]:
        rows.append([m["dataset"], m["method"], f"{m['X_nbytes'] / 2**20:.1f} MiB",
                     f"{m['peak_extra_bytes'] / 2**20:.1f} MiB",
                     f"{m['ratio']:.2f} {C.mark(m['ratio'] <= TARGET_MEMORY_RATIO)}",
                     "n/a" if m.get("sk_ratio") is None else f"{m['sk_ratio']:.2f}"])
    L.append(C.md_table(["dataset", "method", "X.nbytes", "DP peak extra",
                         "DP extra / X.nbytes", "sklearn(1e-4) extra / [X, s].nbytes"],
                        rows, "llrrrr") + "\n")
    L.append("tracemalloc: peak of numpy-tracked allocations during `fit` above the level "
             "before it (misses numba-internal scratch, which is O(d) here). Fresh-process RSS: "
             "a child generates X, warms the kernels on 2000 rows, resets the kernel's peak-RSS "
             "mark (`/proc/self/clear_refs`), fits, and reads VmHWM − VmRSS(before). sklearn's "
             "column is relative to the augmented design it was given.\n")

    # --- accuracy
    L.append("## 5. Test accuracy (mean ± std over seeds of `random_state`)\n")
    rows = []
    for a in res["accuracy"]:
        cells = [a["dataset"], f"{a['alpha']:g}", f"{a['n_train']:,} / {a['n_test']:,}",
                 f"{a['majority_accuracy']:.4f}", f"{a['nonprivate_accuracy']:.4f}"]
        cells += [f"{v['mean']:.4f} ± {v['std']:.4f}" for v in a["dp"].values()]
        rows.append(cells)
    L.append(C.md_table(["dataset", "α", "train / test", "majority class", "non-private"]
                        + [f"ε = {e:g}" for e in EPSILONS], rows, "lrrrr" + "r" * len(EPSILONS))
             + "\n")
    rows = []
    for a in res["accuracy"]:
        rows.append([a["dataset"], f"{a['alpha']:g}", f"{a['delta']:.1e}",
                     f"{a['nonprivate_coef_norm']:.3g}"]
                    + [f"{v['noise_scale']:.3g}" for v in a["dp"].values()])
    L.append("Noise standard deviation σ per coordinate (δ = 1/n²) against the norm of the "
             "non-private solution:\n")
    L.append(C.md_table(["dataset", "α", "δ", "‖ŵ‖ (non-private)"]
                        + [f"σ at ε = {e:g}" for e in EPSILONS], rows,
                        "lrrr" + "r" * len(EPSILONS)) + "\n")
    for a in res["accuracy"]:
        if a["nonprivate_accuracy"] <= a["majority_accuracy"] + 1e-3:
            L.append(f"- {a['dataset']}, α={a['alpha']:g}: the non-private optimum itself scores "
                     f"the majority-class rate ({a['majority_accuracy']:.4f}): this strong a "
                     "regularisation shrinks the optimum until it predicts the majority class, "
                     "so this row cannot show a privacy cost.")
        worst = min(a["dp"].items(), key=lambda kv: kv[1]["mean"])
        if worst[1]["noise_scale"] > a["nonprivate_coef_norm"] / math.sqrt(a["p"]):
            L.append(f"- {a['dataset']}, α={a['alpha']:g}: at ε = {float(worst[0]):g} the noise "
                     f"per coordinate (σ = {worst[1]['noise_scale']:.3g}) exceeds the typical "
                     f"coefficient size ‖ŵ‖/√p ≈ "
                     f"{a['nonprivate_coef_norm'] / math.sqrt(a['p']):.3g} (test accuracy there "
                     f"{worst[1]['mean']:.4f} ± {worst[1]['std']:.4f}).")
    L.append("")
    L.append(f"Non-private = scikit-learn at tol=1e-8 on the same objective. Seeds "
             f"{q['seeds']}; synthetic ε = {EPS_SPEED:g} reuses the fits timed in §1 "
             "(same estimator, same seeds). Synthetic Bayes accuracy: "
             f"{syn['info']['bayes_accuracy']:.4f}.\n")

    L.append("## Reproduce\n")
    L.append("```\npython benchmarks/bench_convex.py          # full run, writes "
             "benchmarks/results/convex.{md,json}\npython benchmarks/bench_convex.py --quick  "
             "# smoke run (n = 10^5), writes convex_quick.{md,json}\n```\n"
             "Data: `$SKDP_DATA` or `../shared/data` next to the repository.")
    return "\n".join(L)


def fmt_n(n):
    return C.fmt_n(n)


def thread_label(setting):
    return "default threads" if setting == "default" else (
        "1 thread" if setting == 1 else f"{setting} threads")


def profile_notes(speed):
    """Observations computed from the measurements (no hand-typed numbers)."""
    notes = []
    for s in speed:
        if s["diagnostics"] is None:
            continue
        dp = s["diagnostics"]["dp"]
        s4, s8 = s["diagnostics"]["sk_0.0001"], s["diagnostics"]["sk_1e-08"]
        n_ev = dp["n_gradient_evals"]
        if not (s4["n_evals"] and s8["n_evals"]):
            continue
        sub = dp.get("subsample_pass_equivalents") or 0.0
        text = (f"{s['dataset']}, α={s['alpha']:g}: the DP solver makes {n_ev} full passes"
                + (f" (plus a warm start worth {sub:.2f} passes)" if sub else "") + ", "
                f"{n_ev / s4['n_evals']:.1f}× sklearn's {s4['n_evals']} at tol=1e-4 and "
                f"{n_ev / s8['n_evals']:.2f}× its {s8['n_evals']} at tol=1e-8")
        if dp["s_per_eval"] and s8["s_per_eval"]:
            text += (f"; in the instrumented fits one DP pass took {C.fmt_time(dp['s_per_eval'])}"
                     f" and one sklearn loss+gradient {C.fmt_time(s8['s_per_eval'])} (other "
                     f"processes used {s['diagnostics'].get('external_cores', float('nan')):.2f} "
                     "cores meanwhile)")
        tte = dp["evals_to_certifiable"]
        if tte is not None and tte < n_ev:
            text += (f"; {n_ev - tte} DP passes ({100 * (n_ev - tte) / n_ev:.0f} %) come after "
                     f"‖∇F‖ first met the certificate (pass {tte})")
        notes.append(text + ".")
    return notes


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="synthetic n = 10^5 and 3 timing rounds (smoke run)")
    ap.add_argument("--n-synthetic", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None, help="timing rounds (5; quick 3)")
    ap.add_argument("--seeds", type=int, default=5, help="random_state seeds for accuracy")
    ap.add_argument("--repeats-1thread", type=int, default=None,
                    help="timing rounds with every library limited to 1 thread (3; quick 2)")
    ap.add_argument("--max-wait", type=float, default=120.0,
                    help="total seconds the timing rounds may wait for other processes to go "
                         "quiet (full mode only)")
    ap.add_argument("--out-dir", default=str(C.RESULTS_DIR))
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child is not None:
        memory_child(args.memory_child)
        return

    n_syn = args.n_synthetic or (10**5 if args.quick else 10**6)
    repeats = args.repeats or (3 if args.quick else 5)
    repeats_1t = args.repeats_1thread or (2 if args.quick else 3)
    seeds = list(range(args.seeds))
    stem = "convex_quick" if args.quick else "convex"
    load_total = C.CpuLoad()
    loads = {}
    res = {"stem": stem, "data_home": str(C.data_home()),
           "config": {"quick": args.quick, "n_synthetic": n_syn, "repeats": repeats,
                      "repeats_1thread": repeats_1t, "thread_settings": THREAD_SETTINGS,
                      "seeds": seeds, "alphas": ALPHAS, "epsilons": EPSILONS,
                      "epsilon_speed": EPS_SPEED, "sk_tols": SK_TOLS,
                      "data_norm": DATA_NORM, "intercept_scaling": INTERCEPT_SCALING}}

    # --- data
    C.log("loading bank and generating synthetic data")
    Xb, yb, bank_info = load_bank_data()
    Xs, ys, syn_info = make_synthetic(n_syn)
    Xs_test, ys_test, test_info = make_synthetic(SYN_N_TEST, stream=2)
    syn_info["bayes_accuracy"] = test_info["bayes_accuracy"]  # reported on the test set
    syn_info_json = {k: v for k, v in syn_info.items()}
    res["datasets"] = {
        "bank": {"n": Xb.shape[0], "d": Xb.shape[1], "info": bank_info},
        "synthetic": {"n": n_syn, "d": SYN_D, "n_test": SYN_N_TEST, "info": syn_info_json},
    }

    # --- 1/2. speed + diagnostics (also warm-up and tracemalloc)
    C.log("warm-up (kernels, imports)")
    warm_up(Xb, yb)
    res["machine"] = C.machine_info()  # after parallel kernels ran: threading layer known
    gate = C.QuietGate(0.0 if args.quick else args.max_wait, threshold=QUIET_CORES)
    res["quiet_wait"] = C.wait_for_quiet(0 if args.quick else 30.0, threshold=QUIET_CORES)
    C.log(f"waited {res['quiet_wait']['waited_s']:.0f}s for a quiet machine: "
          f"{'quiet' if res['quiet_wait']['quiet'] else 'still loaded'} "
          f"({res['quiet_wait']['samples'][-1]:.2f} cores used by others)")
    lt = C.CpuLoad()
    acc_cache_syn = {}
    speed = []
    for name, X, y in (("bank", Xb, yb), ("synthetic", Xs, ys)):
        for alpha in ALPHAS:
            for thread_setting in THREAD_SETTINGS:
                first = thread_setting == THREAD_SETTINGS[0]
                syn_cache = first and name == "synthetic"
                speed.append(bench_speed(
                    name, X, y, alpha, repeats if first else repeats_1t, thread_setting,
                    diagnostics=first,
                    X_test=Xs_test if syn_cache else None,
                    y_test=ys_test if syn_cache else None,
                    acc_cache=acc_cache_syn if syn_cache else None, gate=gate))
    loads["speed"] = lt.stop()
    res["quiet_gate"] = {"budget_s": gate.budget_s, "spent_s": gate.spent_s,
                         "waits": gate.waits}
    sk_precise = {}
    for s in speed:
        model = s.pop("sk_precise_model")
        if s["dataset"] == "synthetic" and s["threads"] == THREAD_SETTINGS[0]:
            sk_precise[s["alpha"]] = model
    res["speed"] = speed
    res["profile_notes"] = profile_notes(speed)

    # --- 3. startup
    lt = C.CpuLoad()
    res["startup"] = bench_startup()
    loads["startup"] = lt.stop()

    # --- 4. memory
    lt = C.CpuLoad()
    memory = []
    for s in speed:
        if s["alpha"] != ALPHAS[0] or s["diagnostics"] is None:
            continue
        dp, sk4 = s["diagnostics"]["dp"], s["diagnostics"]["sk_0.0001"]
        memory.append({"dataset": s["dataset"], "method": "tracemalloc, in process",
                       "X_nbytes": dp["X_nbytes"], "peak_extra_bytes": dp["peak_extra_bytes"],
                       "ratio": dp["peak_extra_bytes"] / dp["X_nbytes"],
                       "sk_ratio": sk4["peak_extra_bytes"] / sk4["Xa_nbytes"]})
    del Xs, ys  # free the big arrays before the child allocates its own copy
    child = bench_memory_fresh(n_syn)
    memory.append({"dataset": "synthetic", "method": "peak RSS, fresh process",
                   "X_nbytes": child["X_nbytes"],
                   "peak_extra_bytes": child["dp"]["peak_extra_bytes"],
                   "ratio": child["dp"]["peak_extra_bytes"] / child["X_nbytes"],
                   "sk_ratio": child["sk_1e-4"]["peak_extra_bytes"] / child["Xa_nbytes"],
                   "child": child})
    res["memory"] = memory
    loads["memory"] = lt.stop()

    # --- 5. accuracy
    lt = C.CpuLoad()
    from sklearn.model_selection import train_test_split

    Xtr, Xte, ytr, yte = train_test_split(Xb, yb, test_size=BANK_TEST_SIZE,
                                          random_state=BANK_SPLIT_SEED, stratify=yb)
    accuracy = bench_accuracy("bank", np.ascontiguousarray(Xtr), ytr, Xte, yte, seeds)
    # The synthetic training set was freed above; regenerate it (deterministic).
    Xs, ys, _ = make_synthetic(n_syn)
    accuracy += bench_accuracy("synthetic", Xs, ys, Xs_test, ys_test, seeds,
                               acc_cache=acc_cache_syn, sk_models=sk_precise,
                               extra={"bayes_accuracy": syn_info["bayes_accuracy"]})
    res["accuracy"] = accuracy
    loads["accuracy"] = lt.stop()

    loads["total"] = load_total.stop()
    res["load"] = loads
    res["total_wall_s"] = loads["total"]["wall_s"]
    md = render(res)
    md_path, json_path = C.write_results(stem, md, res, args.out_dir)
    C.log(f"wrote {md_path} and {json_path}")
    print(md)


if __name__ == "__main__":
    main()
