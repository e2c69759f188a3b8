"""DP-SGD noise calibration: time and tightness of ``calibrate_poisson_gaussian``.

For the default DP-SGD schedule (:func:`skdp.linear_model._auto.dpsgd_schedule`) at
``n`` in 1e3..1e7, ``p`` in {2, 21, 101} coefficients and ε in [0.05, 20] (δ = 1e-6), it
times one calibration with every accounting cache cleared (what the first fit of a
session pays) and reports:

* ``reported / target``: ε of the calibrated event from the reporting accountant
  (``get_epsilon``), which must be ``<= 1`` and should be close to 1;
* ``fine / target``: ε of the same event on the finest PLD grid (``1e-4``, the fixed grid
  of earlier versions): how much tighter a 10-100x slower accountant would be;
* for ``p = 21``, the previous calibration (fixed ``1e-4`` grid, noise floor ``z >= 0.5``)
  side by side: its time and the ε it reached.

Writes ``benchmarks/results/calibration.md`` / ``.json``.
Run: ``python benchmarks/bench_calibration.py`` (``--quick``: n <= 1e5, p = 21).
"""

import argparse
import importlib.metadata
import math
import sys
import time
from pathlib import Path

import dp_accounting
from dp_accounting.pld import PLDAccountant

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine_info, md_table, write_results  # noqa: E402

from skdp.accounting import _accountant, _sampled  # noqa: E402
from skdp.accounting import get_epsilon, poisson_gaussian_event  # noqa: E402
from skdp.linear_model._auto import dpsgd_schedule  # noqa: E402

DELTA = 1e-6
NS = (10**3, 10**4, 10**5, 10**6, 10**7)
PS = (2, 21, 101)
EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
TARGET_S = 0.5
DP_ACCOUNTING_VERSION = importlib.metadata.version("dp-accounting")


def clear_caches():
    _sampled._calibrate_cached.cache_clear()
    _accountant._pld_epsilon_cached.cache_clear()
    _accountant._pld_delta_cached.cache_clear()
    _accountant.pld_epsilon_on_grid.cache_clear()


def fine_epsilon(q, z, steps):
    acc = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                        value_discretization_interval=1e-4)
    acc.compose(poisson_gaussian_event(q, z, steps))
    return float(acc.get_epsilon(DELTA))


def previous_calibration(epsilon, q, steps):
    """The calibration of earlier versions: Illinois on the fixed 1e-4 grid, z >= 0.5."""
    log_t = math.log(epsilon)

    def f(x):
        return math.log(fine_epsilon(q, math.exp(x), steps)) - log_t

    lo_lim = math.log(0.5)
    x = max(math.log(_sampled._initial_guess(epsilon, DELTA, q, steps)), lo_lim)
    fx, factor = f(x), math.log(1.25)
    if fx <= 0:
        hi, fhi = x, fx
        while True:
            if hi <= lo_lim:
                return 0.5
            lo = max(hi - factor, lo_lim)
            flo = f(lo)
            if flo > 0:
                break
            hi, fhi, factor = lo, flo, factor * 2
    else:
        lo, flo = x, fx
        while True:
            hi = lo + factor
            fhi = f(hi)
            if fhi <= 0:
                break
            lo, flo, factor = hi, fhi, factor * 2
    w_lo, w_hi, side, evals = flo, fhi, 0, 0
    while evals < 40 and fhi < math.log1p(-0.004) and hi - lo > 1e-6:
        evals += 1
        x = (lo * w_hi - hi * w_lo) / (w_hi - w_lo)
        x = min(max(x, lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
        fx = f(x)
        if fx <= 0:
            hi, fhi, w_hi = x, fx, fx
            w_lo, side = (w_lo * 0.5 if side == 1 else w_lo), 1
        else:
            lo, flo, w_lo = x, fx, fx
            w_hi, side = (w_hi * 0.5 if side == -1 else w_hi), -1
    return math.exp(hi)


def run(ns, ps, epsilons, compare):
    rows = []
    for p in ps:
        for n in ns:
            b, T = dpsgd_schedule(n, p)
            q = b / n
            for eps in epsilons:
                clear_caches()
                t0 = time.perf_counter()
                z = _sampled.calibrate_poisson_gaussian(eps, DELTA, q, T)
                reported = get_epsilon(poisson_gaussian_event(q, z, T), DELTA)
                wall = time.perf_counter() - t0
                row = dict(n=n, p=p, batch=b, steps=T, q=q, epsilon=eps, z=z, seconds=wall,
                           reported=reported, fine=fine_epsilon(q, z, T))
                if compare and p == 21:
                    t0 = time.perf_counter()
                    z_old = previous_calibration(eps, q, T)
                    row.update(old_seconds=time.perf_counter() - t0, old_z=z_old,
                               old_epsilon=fine_epsilon(q, z_old, T))
                rows.append(row)
                print(f"p={p} n={n:.0e} eps={eps:5}: {wall:.2f}s z={z:.4f} "
                      f"reported/target={reported / eps:.4f} fine/target={row['fine'] / eps:.4f}"
                      + (f" | old {row['old_seconds']:.2f}s z={row['old_z']:.4f} "
                         f"eps={row['old_epsilon']:.3f}" if "old_z" in row else ""),
                      flush=True)
    return rows


def render(rows, info):
    worst = max(rows, key=lambda r: r["seconds"])
    lines = [
        "# DP-SGD noise calibration: time and tightness",
        "",
        __doc__.split("\n\n", 1)[1].rsplit("Writes", 1)[0].strip(),
        "",
        f"Machine: {info.get('cpu', '?')}; python {info.get('python', '?')}; "
        f"dp-accounting {DP_ACCOUNTING_VERSION}.",
        "",
        f"**Slowest calibration: {worst['seconds']:.2f} s** (n = {worst['n']:.0e}, "
        f"p = {worst['p']}, ε = {worst['epsilon']}) against the {TARGET_S} s target; "
        f"{sum(r['seconds'] <= TARGET_S for r in rows)} of {len(rows)} cells within it.  "
        f"Reported ε / target: {min(r['reported'] / r['epsilon'] for r in rows):.4f} to "
        f"{max(r['reported'] / r['epsilon'] for r in rows):.4f}; never above 1: "
        f"{all(r['reported'] <= r['epsilon'] for r in rows)}.",
        "",
    ]
    headers = ["p", "n", "steps", "q", "eps", "z", "seconds", "reported/target",
               "fine-grid/target", "previous: seconds", "previous: z", "previous: eps reached"]
    body = []
    for r in rows:
        body.append([r["p"], f"{r['n']:.0e}", r["steps"], f"{r['q']:.2e}", r["epsilon"],
                     f"{r['z']:.4f}", f"{r['seconds']:.2f}", f"{r['reported'] / r['epsilon']:.4f}",
                     f"{r['fine'] / r['epsilon']:.4f}",
                     f"{r['old_seconds']:.2f}" if "old_seconds" in r else "",
                     f"{r['old_z']:.4f}" if "old_z" in r else "",
                     f"{r['old_epsilon']:.3f}" if "old_epsilon" in r else ""])
    lines.append(md_table(headers, body))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip the previous calibration (slow: up to 8 s a cell)")
    args = ap.parse_args()
    ns = NS if not args.quick else NS[:3]
    ps = PS if not args.quick else (21,)
    rows = run(ns, ps, EPSILONS, compare=not args.no_compare)
    info = machine_info()
    md = render(rows, info)
    stem = "calibration" if not args.quick else "calibration_quick"
    write_results(stem, md, {"rows": rows, "machine": info})
    print(md.split("\n\n")[3])


if __name__ == "__main__":
    main()
