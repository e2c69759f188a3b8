"""Floating-point-safe noise: what the exact grid noise buys and what it costs, side by side.

Writes ``results/secure_noise.md`` / ``.json``.  Parts, each secure vs float in one run:

1. **The precision attack** (tests/linear_model/test_precision_attack.py): 95 % lower bound on
   epsilon from the event "|coef[1]| < |W1|/2 and coef[1] not a multiple of ulp(W1)/2" on the
   two neighbouring datasets, ``N_ATTACK`` fits per side, claimed epsilon = 1.
2. **One-shot cost**: the time of one release (``release_gaussian`` / ``release_laplace``)
   of ``p`` coordinates, exact vs float, p = 10 .. 10^4 (median of repeats, warm).
3. **Default fits on adult** (DPLogisticRegression, objective perturbation) and on bike
   (DPHuberRegressor), rows of norm <= 1 by the loaders' public scaling, at epsilon = 1:
   fit time and test score over ``N_SEEDS`` seeds, exact vs float -- the accuracy change
   against the seed-to-seed standard deviation.
3b. **DP-SGD** at its default schedule on adult and on n = 2e5, d = 20: warm fit time and
   training accuracy, exact vs float (target: exact <= 1.5x float).
4. **Cold compile** of the exact sampler in a fresh interpreter with an empty numba cache,
   and the cached reload.

Run: ``python benchmarks/bench_secure_noise.py [--quick]`` (about 3 minutes; ``--quick``:
fewer fits).
"""

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    data_home, git_state, log, machine_info, machine_info_markdown, md_table, median,
    run_python, write_results,
)

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor  # noqa: E402
from skdp import datasets  # noqa: E402
from skdp._mechanisms import new_word_source, release_gaussian, release_laplace  # noqa: E402
from skdp.audit import epsilon_lower_bound  # noqa: E402


def attack(n_fits):
    X0 = np.tile([[0.6, 0.0]], (200, 1))
    y = np.arange(200) % 2
    X1 = X0.copy()
    X1[0] = [0.0, 0.8]
    w1 = -0.019760030
    half_ulp = np.spacing(abs(w1)) / 2
    rows = []
    for secure in ("auto", False):
        est = DPLogisticRegression(solver="output_perturbation", epsilon=1.0, delta=1e-5,
                                   data_norm=1.0, alpha=0.1, fit_intercept=False,
                                   classes=[0, 1], secure_noise=secure)
        ev = []
        for k, X in enumerate((X0, X1)):
            c = np.array([est.set_params(random_state=k * n_fits + i).fit(X, y).coef_[0, 1]
                          for i in range(n_fits)])
            ev.append(((np.abs(c) < abs(w1) / 2) & (c % half_ulp != 0.0)).astype(float))
        b = epsilon_lower_bound(ev[0], ev[1], delta=1e-5, random_state=0)
        rows.append({"noise": "exact grid (default)" if secure else "float",
                     "P(E|D0)": ev[0].mean(), "P(E|D1)": ev[1].mean(),
                     "epsilon_lower_bound": b.epsilon_lower_bound})
        log(f"attack {rows[-1]}")
    return rows


def one_shot_cost(repeats):
    """Median time of one release of ``p`` coordinates.  The exact releases are timed on
    both samplers: the plain-Python copy that a process's first ``PY_BUDGET`` integers take
    (``p <= PY_MAX_DRAWS``; its budget is reset before each repeat so every repeat runs
    it) and the compiled kernels (budget spent)."""
    from skdp._mechanisms import _exact

    rows = []
    rng = np.random.default_rng(0)
    src = new_word_source(0)
    _exact._python_draws = _exact.PY_BUDGET
    release_gaussian(np.zeros(4), 1.0, 0.1, rng, src)      # compiled samplers loaded
    release_laplace(np.zeros(4), 0.1, 1.0, rng, src)

    def timed(fn, python):
        times = []
        for _ in range(repeats):
            _exact._python_draws = 0 if python else _exact.PY_BUDGET
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        _exact._python_draws = _exact.PY_BUDGET
        return median(times) * 1e3

    for p in (10, 100, 256, 1_000, 10_000):
        v = rng.normal(size=p)
        gauss = lambda: release_gaussian(v, 0.3, 0.01, rng, src, bound=10.0)  # noqa: E731
        lap = lambda: release_laplace(v, 0.01, 1.0, rng, src, bound=10.0)    # noqa: E731
        row = {"p": p,
               "gauss exact": timed(gauss, False),
               "gauss float": timed(lambda: release_gaussian(v, 0.3, 0.01, rng, None), False),
               "laplace exact": timed(lap, False),
               "laplace float": timed(lambda: release_laplace(v, 0.01, 1.0, rng, None), False)}
        if p <= _exact.PY_MAX_DRAWS:
            row["gauss exact python"] = timed(gauss, True)
            row["laplace exact python"] = timed(lap, True)
        rows.append(row)
        log(f"one-shot p={p}: {row}")
    return rows


def objective_perturbation_noise_cost(repeats):
    """Median time of objective perturbation's two noise vectors at ``p`` coefficients, as
    its solver draws them (``_coupled_objective_noise``: ``coupled_gaussian_noise`` for the
    linear term ``b``, then ``release_gaussian`` of the output), exact against float (``b`` from the
    Generator, the output by the float release); compiled samplers."""
    from skdp._mechanisms import _exact
    from skdp._mechanisms._exact import coupled_gaussian_noise

    rng = np.random.default_rng(1)
    src = new_word_source(1)
    _exact._python_draws = _exact.PY_BUDGET
    rows = []
    for p in (1_000, 10_000):
        W = rng.normal(size=p) * 0.1

        def exact():
            b, _, _ = coupled_gaussian_noise(src, 0.05, p)
            return release_gaussian(W, 0.3, 0.01, rng, src, bound=10.0), b

        def floating():
            b = 0.05 * rng.standard_normal(p)
            return release_gaussian(W, 0.3, 0.01, rng, None), b

        row = {"p": p}
        for name, fn in (("exact", exact), ("float", floating)):
            fn()
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            row[name] = median(times) * 1e3
        rows.append(row)
        log(f"objective perturbation noise p={p}: {row}")
    return rows


def default_fits(n_seeds):
    home = data_home()
    adult = datasets.load_adult(data_home=home)
    bike = datasets.load_bike_sharing(data_home=home, target_scale=200.0)
    cases = [("adult, DPLogisticRegression", adult, lambda **kw: DPLogisticRegression(
        epsilon=1.0, data_norm=1.0, classes=[0, 1], **kw)),
        ("bike, DPHuberRegressor", bike, lambda **kw: DPHuberRegressor(
            epsilon=1.0, data_norm=1.0, y_bound=5.0, **kw))]
    rows = []
    for name, b, make in cases:
        n = b.data.shape[0]
        idx = np.random.default_rng(0).permutation(n)
        tr, te = idx[: int(0.7 * n)], idx[int(0.7 * n):]
        for secure in ("auto", False):
            scores, times = [], []
            for seed in range(n_seeds):
                est = make(random_state=seed, secure_noise=secure)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(b.data[tr], b.target[tr])
                times.append(time.perf_counter() - t0)
                scores.append(est.score(b.data[te], b.target[te]))
            rows.append({"case": name, "noise": "exact" if est.secure_noise_ else "float",
                         "solver": est.solver_, "score_mean": float(np.mean(scores)),
                         "score_sd": float(np.std(scores, ddof=1)),
                         "fit_s_median": median(times)})
            log(f"defaults {rows[-1]}")
    return rows


def per_step_cost(n_seeds):
    """The per-step solvers, exact vs float noise: warm fit time (noise calibration cached
    by the first fit) and training score over seeds -- DP-SGD at its default schedule on
    adult and on n = 2e5, d = 20; resque and rrpsgd on adult / bike; warm_gd and
    zeroth_order (the DPNonconvexRegressor defaults of the smooth and the nonsmooth losses)
    and spider on bike."""
    home = data_home()
    adult = datasets.load_adult(data_home=home)
    bike = datasets.load_bike_sharing(data_home=home, target_scale=200.0)
    Xs, ys = datasets.make_private_classification(200_000, 20, random_state=1)
    logistic = dict(epsilon=1.0, data_norm=1.0, classes=[0, 1])
    cases = [
        ("dpsgd", "adult", adult.data, adult.target,
         lambda **kw: DPLogisticRegression(solver="dpsgd", **logistic, **kw)),
        ("dpsgd", "n=2e5, d=20", Xs, ys,
         lambda **kw: DPLogisticRegression(solver="dpsgd", **logistic, **kw)),
        ("resque", "adult", adult.data, adult.target,
         lambda **kw: DPLogisticRegression(solver="resque", alpha=1e-4, **logistic, **kw)),
        ("resque", "n=2e5, d=20", Xs, ys,
         lambda **kw: DPLogisticRegression(solver="resque", alpha=1e-4, **logistic, **kw)),
        ("rrpsgd", "bike", bike.data, bike.target,
         lambda **kw: DPNonconvexRegressor(solver="rrpsgd", epsilon=10.0, data_norm=1.0,
                                           batch_size=512, n_steps=1000, **kw)),
        ("warm_gd (default)", "bike", bike.data, bike.target,
         lambda **kw: DPNonconvexRegressor(epsilon=10.0, data_norm=1.0, **kw)),
        ("zeroth_order (default, capped absolute)", "bike", bike.data, bike.target,
         lambda **kw: DPNonconvexRegressor(loss="capped_absolute", epsilon=10.0,
                                           data_norm=1.0, **kw)),
        ("spider", "bike", bike.data, bike.target,
         lambda **kw: DPNonconvexRegressor(solver="spider", epsilon=10.0, data_norm=1.0,
                                           **kw)),
    ]
    rows = []
    for solver, name, X, y, factory in cases:
        res = {}
        for secure in ("auto", False):
            make = lambda seed: factory(secure_noise=secure, random_state=seed)  # noqa: E731
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make(99).fit(X, y)   # compile and calibrate
                times, scores = [], []
                for seed in range(n_seeds):
                    est = make(seed)
                    t0 = time.perf_counter()
                    est.fit(X, y)
                    times.append(time.perf_counter() - t0)
                    scores.append(est.score(X, y))
            assert est.secure_noise_ == (secure == "auto"), (solver, secure, est.secure_noise_)
            res[secure] = (median(times), float(np.mean(scores)), float(np.std(scores, ddof=1)))
        rows.append({"solver": solver, "case": name, "exact_s": res["auto"][0],
                     "float_s": res[False][0], "ratio": res["auto"][0] / res[False][0],
                     "exact_acc": res["auto"][1:], "float_acc": res[False][1:],
                     "schedule": {k: v for k, v in
                                  (getattr(est, "solver_params_", None) or {}).items()
                                  if v is not None}})
        log(f"per-step {rows[-1]}")
    return rows


COLD = """
import time, numpy as np
t0 = time.perf_counter()
from skdp._mechanisms import new_word_source, release_gaussian
release_gaussian(np.zeros({size}), 1.0, 0.1, None, new_word_source(0))
print(time.perf_counter() - t0)
"""


def cold_compile():
    """First release in a fresh interpreter: 3 coordinates (drawn by the Python copy of
    the samplers: nothing to compile) and 4,096 (the compiled parallel sampler)."""
    out = {}
    for label, size in (("small", 3), ("large", 4096)):
        with tempfile.TemporaryDirectory() as cache:
            env = {"NUMBA_CACHE_DIR": cache}
            first = float(run_python(COLD.format(size=size), env=env).strip())
            again = float(run_python(COLD.format(size=size), env=env).strip())
        out[label] = {"cold_s": first, "cached_s": again}
        log(f"{label}: cold {first:.2f} s, cached {again:.2f} s")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--per-step-only", action="store_true",
                    help="re-run section 3b only, on top of the existing results file")
    ap.add_argument("--one-shot-only", action="store_true",
                    help="re-run section 2 only (in a fresh process, nothing fitted before "
                         "it), on top of the existing results file")
    args = ap.parse_args()
    n_attack, repeats, n_seeds = (2_000, 20, 3) if args.quick else (8_000, 50, 10)
    info = machine_info()
    if args.per_step_only or args.one_shot_only:
        import json

        from _common import RESULTS_DIR

        res = json.loads((RESULTS_DIR / "secure_noise.json").read_text())
        res.pop("dpsgd", None)
        if args.per_step_only:
            res["per_step"] = per_step_cost(min(n_seeds, 5))
            res["per_step_machine"], res["per_step_git"] = info, git_state()
        if args.one_shot_only:
            res["one_shot_ms"] = one_shot_cost(repeats)
            res["objective_perturbation_ms"] = objective_perturbation_noise_cost(repeats)
            res["one_shot_machine"], res["one_shot_git"] = info, git_state()
        info = res["machine"]
        n_attack, n_seeds = res["n_attack"], res["n_seeds"]
    else:
        res = {"attack": attack(n_attack), "one_shot_ms": one_shot_cost(repeats),
               "objective_perturbation_ms": objective_perturbation_noise_cost(repeats),
               "defaults": default_fits(n_seeds), "per_step": per_step_cost(min(n_seeds, 5)),
               "compile": cold_compile(),
               "machine": info, "git": git_state(), "n_attack": n_attack, "n_seeds": n_seeds}
    A = []
    A.append("# Floating-point-safe noise: the attack, the cost\n")
    A.append("Generated by `benchmarks/bench_secure_noise.py`; exact grid noise "
             "(`secure_noise`, `doc/floating_point.rst`) and float noise measured side by side "
             "in one run.\n")
    A.append(f"## 1. Precision attack ({n_attack:,} fits per side, claimed epsilon = 1)\n")
    A.append(md_table(["noise", "P(E given D0)", "P(E given D1)", "epsilon lower bound (95 %)"],
                      [[r["noise"], f"{r['P(E|D0)']:.4f}", f"{r['P(E|D1)']:.4f}",
                        f"{r['epsilon_lower_bound']:.2f}"] for r in res["attack"]]))
    A.append("\n## 2. One-shot release cost (ms, median, warm)\n")
    if "one_shot_git" in res:
        A.append("Re-run alone (`--one-shot-only`, warm numba cache) at commit "
                 f"{res['one_shot_git']['commit']}.\n")
    rows = res["one_shot_ms"]
    def py(r, key):
        return f"{r[key]:.3f}" if key in r else "-"

    def added(r, kind):     # the slower exact sampler minus float
        exact = max(r[f"{kind} exact"], r.get(f"{kind} exact python", 0.0))
        return f"{exact - r[f'{kind} float']:.3f}"

    A.append("Exact: compiled sampler; exact (Python): the plain-Python copy that a "
             "process's first 8,192 integers take, up to 256 per release (same integers); "
             "added: the larger exact time minus the float one.\n")
    A.append(md_table(["p", "Gaussian exact", "Gaussian exact (Python)", "Gaussian float",
                       "added", "Laplace exact", "Laplace exact (Python)", "Laplace float",
                       "added"],
                      [[f"{r['p']:,}", f"{r['gauss exact']:.3f}", py(r, "gauss exact python"),
                        f"{r['gauss float']:.3f}", added(r, "gauss"),
                        f"{r['laplace exact']:.3f}", py(r, "laplace exact python"),
                        f"{r['laplace float']:.3f}", added(r, "laplace")]
                       for r in rows]))
    if "objective_perturbation_ms" in res:
        A.append("\nObjective perturbation draws two vectors, the linear term ``b`` and the "
                 "output noise, timed together as its solver draws them (exact: "
                 "``coupled_gaussian_noise`` then the exact output release; float: a "
                 "Generator's normals then the float release):\n")
        A.append(md_table(["p", "exact (ms)", "float (ms)", "added (ms)"],
                          [[f"{r['p']:,}", f"{r['exact']:.3f}", f"{r['float']:.3f}",
                            f"{r['exact'] - r['float']:.3f}"]
                           for r in res["objective_perturbation_ms"]]))
    A.append(f"\n## 3. Default fits at epsilon = 1 ({n_seeds} seeds, 70/30 split)\n")
    A.append(md_table(["case", "noise", "solver", "test score (mean ± sd)", "fit s (median)"],
                      [[r["case"], r["noise"], r["solver"],
                        f"{r['score_mean']:.4f} ± {r['score_sd']:.4f}",
                        f"{r['fit_s_median']:.3f}"] for r in res["defaults"]]))
    A.append("\n## 3b. The per-step solvers (warm fits, median time; training score: accuracy "
             "or R^2, mean ± sd over seeds; DP-SGD at its default schedule and resque at "
             "alpha = 1e-4, epsilon = 1; rrpsgd, warm_gd, zeroth_order and spider at "
             "epsilon = 10 -- rrpsgd's score "
             "varies with its random round, and the exact and float runs draw different "
             "rounds)\n")
    A.append(md_table(["solver", "case", "schedule", "exact s", "float s", "exact / float",
                       "train score exact", "train score float"],
                      [[r["solver"], r["case"],
                        ", ".join(f"{k}={v}" for k, v in r["schedule"].items()
                                  if v is not None),
                        f"{r['exact_s']:.3f}", f"{r['float_s']:.3f}", f"{r['ratio']:.2f}",
                        f"{r['exact_acc'][0]:.4f} ± {r['exact_acc'][1]:.4f}",
                        f"{r['float_acc'][0]:.4f} ± {r['float_acc'][1]:.4f}"]
                       for r in res["per_step"]]))
    c = res["compile"]
    A.append("\n## 4. Compile\n\nFirst exact release in a fresh interpreter (import "
             "included), with an empty numba cache and cached: 3 coordinates (the Python "
             f"copy of the samplers, numba not imported) {c['small']['cold_s']:.2f} s and "
             f"{c['small']['cached_s']:.2f} s; 4,096 coordinates (the compiled parallel "
             f"sampler) {c['large']['cold_s']:.2f} s and {c['large']['cached_s']:.2f} s.\n")
    A.append("\n" + machine_info_markdown(info, None))
    write_results("secure_noise", "\n".join(A), res)


if __name__ == "__main__":
    main()
