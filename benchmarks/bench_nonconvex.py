"""Private robust regression with a nonconvex loss: spider vs dpsgd vs rrpsgd vs non-private Huber.

Writes ``benchmarks/results/nonconvex.md`` (and ``.json``).  For each setting the Welsch
objective ``F`` (scale ``c``) is evaluated at each method's output on fresh data from the
same distribution (outliers included: the population objective), giving ``||grad F||`` and
``lambda_min(hess F)`` (second-order stationarity), the RMSE on *clean* test targets and the
coefficient error where the truth is known, the fit time (kernels warmed first, never timed)
and the per-example gradient evaluations.  The PLD calibration shared by dpsgd and rrpsgd
(seconds at large epsilon) is run once per setting before the timed fits and reported in
dpsgd's note.

Settings: synthetic robust regression (rows ``x ~ N(0, I/d)`` clipped to the unit ball,
``y = x.w* + 0.3 + 0.1 N(0, 1)``, ``||w*|| = 1``, 20 % of the targets replaced by
``U(5, 10)``), ``d in {10, 50}``, ``n in {1e5, 1e6}`` (``--quick``: 1e5 only, plus the
``n = 1e6, d = 50`` timing point); UCI wine quality and bike sharing (the shared data
files, min-max features with ``||x|| <= 1``, target on a public scale) with 10 % of the
training targets replaced by gross outliers.  ``epsilon in {0.5, 1, 2, 8}``,
``delta = min(1e-6, n^-1.1)``.

Methods (same loss, same ``data_norm``, same ``(epsilon, delta)``):

* ``spider`` -- ``DPNonconvexRegressor(solver="spider")``, tight calibration, output the
  average of the last half of the iterates (``selection="average"``, the default:
  post-processing of the released noisy sums, same event as the last iterate);
* ``spider-private`` -- the same with ``selection="private"`` (10 % of the rows held out,
  noisy arg-min of scores of up to 32 iterates);
* ``dpsgd`` -- ``DPNonconvexRegressor(solver="dpsgd")``: Poisson mini-batches of 1000, 5
  epochs, PLD-calibrated, ``alpha = 1e-3`` (steps ``min(1/(alpha t), 1/(beta + alpha))``,
  projection on the public ball ``||w|| <= min(L/alpha, sqrt(2 sup l/alpha))``; its
  ``alpha = 0`` rule ``R/(G sqrt t)`` overshoots into the flat outlier region of the loss);
* ``dpsgd-1pass`` -- the same DP-SGD (batches of 1000, ``alpha``, step rule, public ball,
  PLD calibration) for ``T = n/1000`` steps: one epoch of expected data use, the
  single-pass comparison (spider uses each row at most once);
* ``rrpsgd`` -- ``DPNonconvexRegressor(solver="rrpsgd")`` (Zhang et al. 2017, Alg. 2):
  the same Poisson batches of 1000 and ``T = 5 n/1000`` rounds, constant step
  ``min(1/beta, D_F/(sigma_g sqrt T))``, ``alpha = 0``, output at a uniformly random round
  (so about 2.5 epochs are computed on average); accounted as all ``T`` rounds;
* ``huber`` -- scikit-learn ``HuberRegressor`` (not private), on at most 1e5 rows.

A spider fit that the public data rule refuses (too few rows for any useful accuracy at
that epsilon) is reported as such with the ``n`` it would need.

Planted saddle (issue 4): Welsch ``c = 1`` on rows uniform on the unit circle,
``y = s a.x* + 0.05 N(0, 1)``, ``s = +-1``, ``||x*|| = 1.5``, ``n = 1e5``, no intercept,
``data_norm = 1``: the start 0 is a saddle (``lambda_min ~ -0.18``).  spider (``selection=
"last"``, as in the test), dpsgd, dpsgd-1pass and rrpsgd (same batches/rounds as above) at
the same ``(epsilon, delta) = (1, 1e-6)``, 10 seeds each: ``F(w) - F(0)`` on the training
data (escape = a decrease of at least 0.06), ``||grad F||`` and ``lambda_min``.

Run: ``python benchmarks/bench_nonconvex.py [--quick]`` (``SKDP_DATA`` or ../shared/data).
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_home, log, machine_info, md_table, write_results  # noqa: E402

from skdp import DPNonconvexRegressor  # noqa: E402
from skdp._losses import WelschLoss, robust_derivatives  # noqa: E402
from skdp.accounting import calibrate_poisson_gaussian  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 8.0)
LOSS_SCALE = 0.5
# dpsgd's step rule: with alpha > 0, eta_t = min(1/(alpha t), 1/(beta + alpha)) (capped at
# the inverse smoothness) and projection on the public ball ||w|| <= sqrt(2 f0 / alpha);
# with alpha = 0 its convex rule R/(G sqrt t) overshoots into the flat outlier region.
DPSGD_ALPHA = 1e-3
N_EVAL = 200_000


def _synthetic(n, d, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)

    def draw(m, outliers=True):
        X = rng.normal(size=(m, d)) / math.sqrt(d)
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y_clean = X @ w + 0.3 + 0.1 * rng.normal(size=m)
        y = y_clean.copy()
        if outliers:
            bad = rng.random(m) < 0.2
            y[bad] = rng.uniform(5, 10, bad.sum())
        return X, y, y_clean

    X, y, _ = draw(n)
    Xe, ye, _ = draw(N_EVAL)
    Xt, _, yt = draw(50_000)
    return dict(X=X, y=y, X_eval=Xe, y_eval=ye, X_test=Xt, y_test=yt, w=w, b=0.3,
                data_norm=math.sqrt(2.0))


def _uci(name, seed):
    from sklearn.model_selection import train_test_split

    from skdp.datasets import load_bike_sharing, load_wine_quality

    if name == "wine":
        bunch = load_wine_quality(data_home=data_home())
        y = bunch.target / 10.0  # quality in [0, 10] -> [0, 1] (public scale)
    else:
        bunch = load_bike_sharing(data_home=data_home())
        y = bunch.target / 1000.0  # rentals in thousands (public scale)
    X = np.asarray(bunch.data, dtype=float)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed)
    rng = np.random.default_rng(seed)
    y_bad = y_tr.copy()
    bad = rng.random(len(y_tr)) < 0.1
    y_bad[bad] = rng.uniform(3, 6, bad.sum())
    return dict(X=X_tr, y=y_bad, X_eval=X_tr, y_eval=y_bad, X_test=X_te, y_test=y_te,
                w=None, b=None, data_norm=math.sqrt(2.0))


def _stationarity(coef, intercept, X, y):
    """||grad F|| and lambda_min(hess F) of the Welsch objective in (w, b) on (X, y)."""
    A = np.c_[X, np.ones(len(y))]
    w = np.r_[coef, intercept]
    D = np.empty((len(y), 4))
    robust_derivatives(np.ascontiguousarray(A @ w - y), WelschLoss().loss_id, LOSS_SCALE, D)
    grad = A.T @ D[:, 1] / len(y)
    H = (A.T * D[:, 2]) @ A / len(y)
    return float(np.linalg.norm(grad)), float(np.linalg.eigvalsh(H)[0])


def _methods(eps, delta, n, norm):
    return {
        "spider": lambda: DPNonconvexRegressor(
            epsilon=eps, delta=delta, data_norm=norm, loss="welsch", loss_scale=LOSS_SCALE,
            selection="average", random_state=0),
        "spider-private": lambda: DPNonconvexRegressor(
            epsilon=eps, delta=delta, data_norm=norm, loss="welsch", loss_scale=LOSS_SCALE,
            selection="private", random_state=0),
        "dpsgd": lambda: DPNonconvexRegressor(
            epsilon=eps, delta=delta, data_norm=norm, loss="welsch", loss_scale=LOSS_SCALE,
            solver="dpsgd", batch_size=1000, n_steps=max(1, 5 * n // 1000), alpha=DPSGD_ALPHA,
            random_state=0),
        # single pass: expected data use n_steps * batch_size = n (one epoch); everything
        # else (batch, alpha, step rule, public ball, PLD calibration) as the 5-epoch run
        "dpsgd-1pass": lambda: DPNonconvexRegressor(
            epsilon=eps, delta=delta, data_norm=norm, loss="welsch", loss_scale=LOSS_SCALE,
            solver="dpsgd", batch_size=1000, n_steps=max(1, n // 1000), alpha=DPSGD_ALPHA,
            random_state=0),
        "rrpsgd": lambda: DPNonconvexRegressor(
            epsilon=eps, delta=delta, data_norm=norm, loss="welsch", loss_scale=LOSS_SCALE,
            solver="rrpsgd", batch_size=1000, n_steps=max(1, 5 * n // 1000), random_state=0),
    }


def _evaluate(name, data, eps_list, rows, raw):
    from sklearn.linear_model import HuberRegressor

    n, d = data["X"].shape
    delta = min(1e-6, n ** -1.1)

    def record(method, eps, model, fit_s, evals, note="", n_iter=None):
        gn, lam = _stationarity(model.coef_, model.intercept_, data["X_eval"], data["y_eval"])
        pred = data["X_test"] @ model.coef_ + model.intercept_
        rmse = float(np.sqrt(np.mean((pred - data["y_test"]) ** 2)))
        werr = (float(np.linalg.norm(model.coef_ - data["w"])) if data["w"] is not None
                else float("nan"))
        rows.append([name, f"{n:.0e}", str(d), f"{eps:g}" if eps else "-", method,
                     f"{gn:.2e}", f"{lam:.2e}", f"{rmse:.3f}",
                     f"{werr:.3f}" if werr == werr else "-", f"{fit_s:.2f}",
                     f"{evals / n:.2f}" if evals else "-", note])
        raw.append(dict(setting=name, n=n, d=d, epsilon=eps, method=method, grad_norm=gn,
                        lambda_min=lam, rmse=rmse, coef_err=werr, fit_s=fit_s,
                        grad_evals=evals, note=note, n_iter=n_iter))
        log(" | ".join(rows[-1]))

    m = min(n, 100_000)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hub = HuberRegressor(max_iter=500).fit(data["X"][:m], data["y"][:m])
    record("huber (not private)", None, hub, time.perf_counter() - start, 0,
           f"{m:.0e} rows" if m < n else "")
    for eps in eps_list:
        # dpsgd and rrpsgd calibrate the same PLD event (cached on its exact inputs): warm
        # it once, outside the timed fits, so neither pays for it (reported in the note)
        calib_start = time.perf_counter()
        calibrate_poisson_gaussian(eps, delta, 1000 / n, max(1, 5 * n // 1000))
        calib_s = time.perf_counter() - calib_start
        calib1_start = time.perf_counter()  # the single-pass dpsgd's event, likewise
        calibrate_poisson_gaussian(eps, delta, 1000 / n, max(1, n // 1000))
        calib1_s = time.perf_counter() - calib1_start
        for method, make in _methods(eps, delta, n, data["data_norm"]).items():
            model = make()
            start = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model.fit(data["X"], data["y"])
            except ValueError as exc:
                if "needs at least n" not in str(exc):
                    raise
                need = str(exc).split("n = ")[1].split(" ")[0]
                rows.append([name, f"{n:.0e}", str(d), f"{eps:g}", method, "-", "-", "-", "-",
                             "-", "-", f"refused: needs n >= {need}"])
                raw.append(dict(setting=name, n=n, d=d, epsilon=eps, method=method,
                                refused_needs_n=int(need)))
                log(" | ".join(rows[-1]))
                continue
            fit_s = time.perf_counter() - start
            note = ""
            if any("vacuous" in str(w.message) for w in caught):
                note = "vacuous gamma"
            if method.startswith("spider"):
                note = (note + f" gamma={model.gamma_:.3g}, {model.n_escapes_} esc, "
                        f"{model.n_iter_} steps").strip()
            if method == "rrpsgd":
                note = (note + f" R={model.n_iter_} of {max(1, 5 * n // 1000)}").strip()
            if method == "dpsgd":
                note = (note + f" PLD calibration {calib_s:.2f} s (not in fit s)").strip()
            if method == "dpsgd-1pass":
                note = (note + f" T={max(1, n // 1000)}, PLD calibration {calib1_s:.2f} s "
                        "(not in fit s)").strip()
            record(method, eps, model, fit_s, model.n_gradient_evals_, note,
                   int(model.n_iter_))


def _planted(n, seed):
    """Spec §9 test 7 (as in tests/_solvers/test_spider.py)."""
    rng = np.random.default_rng(seed)
    th = rng.uniform(0, 2 * np.pi, n)
    A = np.c_[np.cos(th), np.sin(th)]
    y = rng.choice([-1.0, 1.0], n) * (A @ np.array([1.5, 0.0])) + 0.05 * rng.normal(size=n)
    return A, y


def _planted_saddle(n_seeds=10, n=100_000):
    """spider / dpsgd / dpsgd-1pass / rrpsgd from the saddle 0 at the same budget; one row
    per method."""
    A, y = _planted(n, 3)
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, fit_intercept=False, loss="welsch",
              loss_scale=1.0)
    makers = {
        "spider": lambda s: DPNonconvexRegressor(**kw, selection="last", random_state=s),
        "dpsgd": lambda s: DPNonconvexRegressor(
            **kw, solver="dpsgd", batch_size=1000, n_steps=5 * n // 1000, alpha=DPSGD_ALPHA,
            random_state=s),
        "dpsgd-1pass": lambda s: DPNonconvexRegressor(
            **kw, solver="dpsgd", batch_size=1000, n_steps=n // 1000, alpha=DPSGD_ALPHA,
            random_state=s),
        "rrpsgd": lambda s: DPNonconvexRegressor(
            **kw, solver="rrpsgd", batch_size=1000, n_steps=5 * n // 1000, random_state=s),
    }

    def stats(w):
        r = A @ w - y
        D = np.empty((n, 4))
        robust_derivatives(np.ascontiguousarray(r), WelschLoss().loss_id, 1.0, D)
        F = float(np.mean(D[:, 0]))
        g = A.T @ D[:, 1] / n
        H = (A.T * D[:, 2]) @ A / n
        return F, float(np.linalg.norm(g)), float(np.linalg.eigvalsh(H)[0])

    F0 = stats(np.zeros(2))[0]
    rows, raw = [], []
    for method, make in makers.items():
        res = []
        for seed in range(n_seeds):
            model = make(seed)
            start = time.perf_counter()
            model.fit(A, y)
            fit_s = time.perf_counter() - start
            F, gn, lam = stats(model.coef_)
            res.append((F - F0, gn, lam, fit_s, model.epsilon_))
        res = np.array(res)
        escaped = int(np.sum(res[:, 0] <= -0.06))
        med = np.median(res, axis=0)
        rows.append([method, f"{escaped}/{n_seeds}", f"{med[0]:+.4f}",
                     f"{res[:, 0].min():+.4f} .. {res[:, 0].max():+.4f}", f"{med[1]:.2e}",
                     f"{med[2]:+.3f}", f"{med[3]:.2f}", f"{res[:, 4].max():.3f}"])
        raw.append(dict(setting="planted saddle", n=n, method=method, escaped=escaped,
                        n_seeds=n_seeds, dF=res[:, 0].tolist(), grad_norm=res[:, 1].tolist(),
                        lambda_min=res[:, 2].tolist(), fit_s=res[:, 3].tolist()))
        log("planted saddle | " + " | ".join(rows[-1]))
    headers = ["method", "escaped (ΔF <= -0.06)", "median F − F(0)", "range",
               "median ‖∇F‖",
               "median λ_min", "median fit s", "max eps_"]
    return md_table(headers, rows), raw, F0


def _warm():
    data = _synthetic(20_000, 3, 99)
    for make in _methods(8.0, 1e-6, 20_000, data["data_norm"]).values():
        make().fit(data["X"], data["y"])


def _sosp(q):
    # second-order measure: max(||grad F||, sqrt(c) (-lambda_min)_+) -- small only at an
    # approximate SOSP (a flat region far from the data has a tiny gradient but negative
    # curvature)
    return max(q["grad_norm"], math.sqrt(LOSS_SCALE) * max(0.0, -q["lambda_min"]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="n = 1e5 for the synthetic sets, plus the 1e6 x 50 timing point")
    args = parser.parse_args()
    _warm()
    rows, raw = [], []
    sizes = [(100_000, 10), (100_000, 50), (1_000_000, 50)]
    if not args.quick:
        sizes.insert(2, (1_000_000, 10))
    for n, d in sizes:
        _evaluate(f"synthetic d={d}", _synthetic(n, d, 0), EPSILONS, rows, raw)
    for name in ("wine", "bike"):
        _evaluate(f"{name} +10% outliers", _uci(name, 0), EPSILONS, rows, raw)
    saddle_table, saddle_raw, F0 = _planted_saddle()

    headers = ["setting", "n", "d", "eps", "method", "‖∇F‖", "λ_min(∇²F)", "test RMSE",
               "‖w − w*‖", "fit s", "grad evals / n", "note"]
    ours = {}
    for r in raw:
        if "grad_norm" in r and r["epsilon"]:
            ours[(r["setting"], r["n"], r["epsilon"], r["method"])] = r

    def compare(a, b):
        """(# settings where a has the smaller ||grad F||, smaller SOSP measure, smaller
        RMSE, # settings where both ran), and the median ratio ||grad F||_a / ||grad F||_b."""
        wins = [0, 0, 0]
        ratios = []
        for (s_, n_, e_, m_), r in ours.items():
            other = ours.get((s_, n_, e_, b))
            if m_ == a and other is not None:
                wins[0] += r["grad_norm"] < other["grad_norm"]
                wins[1] += _sosp(r) < _sosp(other)
                wins[2] += r["rmse"] < other["rmse"]
                ratios.append(r["grad_norm"] / other["grad_norm"])
        return (*wins, len(ratios)), (float(np.median(ratios)) if ratios else float("nan"))

    (w_sd, w_sd2, w_sdr, t_sd), r_sd = compare("spider", "dpsgd")
    (w_s1, w_s12, w_s1r, t_s1), r_s1 = compare("spider", "dpsgd-1pass")
    (w_1d, _, _, t_1d), r_1d = compare("dpsgd-1pass", "dpsgd")
    (w_pd, _, _, t_pd), r_pd = compare("spider-private", "dpsgd")
    (w_p1, _, _, t_p1), r_p1 = compare("spider-private", "dpsgd-1pass")
    (w_ap, _, _, t_ap), r_ap = compare("spider", "spider-private")
    (w_sr, _, w_srr, t_sr), r_sr = compare("spider", "rrpsgd")
    spider_steps = [r["n_iter"] for r in raw if r.get("method") == "spider" and "n_iter" in r]
    one_pass = {}  # ||grad F|| of dpsgd-1pass per synthetic setting, over epsilon
    for (s_, n_, e_, m_), r in ours.items():
        if m_ == "dpsgd-1pass" and s_.startswith("synthetic"):
            one_pass.setdefault((s_, n_), []).append(r["grad_norm"])
    one_pass_spread = max((max(v) / min(v) for v in one_pass.values()), default=float("nan"))
    steps_lo, steps_hi = (min(spider_steps), max(spider_steps)) if spider_steps else ("-", "-")
    (w_rd, _, w_rdr, t_rd), r_rd = compare("rrpsgd", "dpsgd")

    def times(method, n, d):
        return ", ".join(f"{r['fit_s']:.2f} s (eps={r['epsilon']:g})" for r in raw
                         if r.get("n") == n and r.get("d") == d and r.get("method") == method
                         and "fit_s" in r and r["epsilon"])

    lines = [
        "# Nonconvex robust regression: private SpiderBoost vs DP-SGD vs RRPSGD",
        "",
        __doc__.split("\n\n", 1)[1].split("Run:")[0].strip(),
        "",
        f"**Targets.** Against multi-pass dpsgd (5 epochs): spider reaches a smaller ‖∇F‖ in "
        f"{w_sd} of {t_sd} settings where both ran (target: most; "
        + ("met" if 2 * w_sd > t_sd else "NOT met")
        + f"), a smaller second-order measure max(‖∇F‖, √c·(−λ_min)₊) in {w_sd2} of {t_sd}, "
        f"a smaller clean test RMSE in {w_sdr} of {t_sd} (median ratio spider/dpsgd "
        f"{r_sd:.2f}).  Against single-pass dpsgd-1pass (1 epoch, same data use as spider): "
        f"smaller ‖∇F‖ in {w_s1} of {t_s1} (target: most; "
        + ("met" if 2 * w_s1 > t_s1 else "NOT met")
        + f"), smaller second-order measure in {w_s12} of {t_s1}, smaller clean test RMSE in "
        f"{w_s1r} of {t_s1} (median ratio spider/dpsgd-1pass {r_s1:.2f}).  dpsgd-1pass "
        f"beats dpsgd on ‖∇F‖ in {w_1d} of {t_1d} (median ratio {r_1d:.2f}).  spider fit "
        "time at n = 1e6, d = 50: " + times("spider", 1_000_000, 50) + " (target < 30 s).",
        "",
        f"**Output rule.** spider (selection=\"average\") has a smaller ‖∇F‖ than "
        f"spider-private in {w_ap} of {t_ap} settings (median ratio {r_ap:.2f}).  "
        f"spider-private beats dpsgd in {w_pd} of {t_pd} (median ratio {r_pd:.2f}) and "
        f"dpsgd-1pass in {w_p1} of {t_p1} (median ratio {r_p1:.2f}).",
        "",
        f"**rrpsgd.** smaller ‖∇F‖ than dpsgd in {w_rd} of {t_rd} settings (median ratio "
        f"rrpsgd/dpsgd {r_rd:.2f}), smaller clean RMSE in {w_rdr} of {t_rd}; spider beats "
        f"rrpsgd on ‖∇F‖ in {w_sr} of {t_sr} (median ratio spider/rrpsgd {r_sr:.2f}).  "
        "rrpsgd fit time at n = 1e6, d = 50: "
        + times("rrpsgd", 1_000_000, 50) + "; dpsgd: " + times("dpsgd", 1_000_000, 50)
        + "; dpsgd-1pass: " + times("dpsgd-1pass", 1_000_000, 50) + ".",
        "",
        "**Reading.** dpsgd-1pass is the like-for-like comparison for spider, which uses "
        "each row at most once; dpsgd uses each row 5 times in expectation (its PLD "
        f"accounting pays for it).  dpsgd beats spider on ‖∇F‖ in {t_sd - w_sd} of {t_sd} "
        f"settings, dpsgd-1pass in {t_s1 - w_s1} of {t_s1}.  dpsgd-1pass takes only "
        "n/1000 steps of the same schedule: on the synthetic sets its ‖∇F‖ varies by at "
        f"most a factor {one_pass_spread:.2f} from eps = 0.5 to 8, so it is limited by its "
        "number of steps rather than by the noise (a smaller batch would give it more "
        "steps; not tuned here, every method keeps one configuration).  spider's pass "
        "ends after "
        f"{steps_lo}-{steps_hi} steps (privacy sizes its batches, ``b_t`` grows with the "
        "step length), against dpsgd-1pass's n/1000; at these n the paper's advantage is "
        "asymptotic (expected) and spider's constants (doc/solvers/spider.rst) are "
        "conservative -- its output's ‖∇F‖ is far below its target accuracy gamma_.  One "
        "seed (random_state=0) per setting: ratios within about 2x can flip with the seed.  "
        "On wine and bike (5-13k training rows) the public data rule refuses spider "
        "at small epsilon or flags the fit as vacuous.  Fit times are wall-clock on a machine "
        "shared with other jobs: compare methods within a row block, not across runs.",
        "",
        md_table(headers, rows),
        "",
        f"## Planted saddle: F(0) = {F0:.4f}, eps = 1, delta = 1e-6, n = 1e5",
        "",
        saddle_table,
        "",
        "## Machine",
        "",
        "```",
        *(f"{k}: {v}" for k, v in machine_info().items()),
        "```",
    ]
    write_results("nonconvex", "\n".join(lines) + "\n", raw + saddle_raw)


if __name__ == "__main__":
    main()
