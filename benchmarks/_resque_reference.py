"""Schedule simulator of the paper's accelerated private pipeline (Carmon et al. 2023, Sec. 3-4).

Not private, touches no data.  What it is: the query and depth counts implied by the
scalings of Carmon et al. (FOCS 2023) §3.4 as reconstructed in the spec, with every
universal constant and polylog factor set to 1 (the constants were not recoverable from
the paper's text: the absolute numbers are *shapes*, not predictions).  With L = R = 1 and
the SCO target ``a = 1/sqrt(n) + sqrt(d)/(n eps)``:

* smoothing ``rho = a/sqrt(d)``, ball radius ``r = rho``, ``K = (R/r)^(2/3)`` outer
  (Monteiro-Svaiter / ball-acceleration) iterations;
* queries per ball call ``N = max((R/r)^(2/3)/eps, (R/r)^(4/3)/d)``;
* total queries ``n + K N`` (the FKT20 localization touches every sample once);
* sequential depth ``K (6 + 1)``: a fixed 6-step line search plus one ball call per
  iteration, each one batched ReSQue round;
* DP-SGD (BST14): ``n^2`` queries, ``n^2/b`` rounds at batch ``b``.

It checks the two claims the spec derives: the log-log slope of the total in ``n`` tends to
1 (near-linear) once ``n >> d^2/eps^3``, and the crossover ``n = (n d)^(2/3)/eps`` sits at
``n = d^2/eps^3``.  A runnable NON-PRIVATE implementation of the accelerated pipeline
(Monteiro-Svaiter ball acceleration with ReSQue-SGD ball / line-search / proximal oracles,
one batched query round per oracle call; our constants, stated there) is
``benchmarks/_resque_accel_reference.py``; ``benchmarks/bench_resque_reference.py``
measures its query counts and depth (``benchmarks/results/resque_reference.md``).

    python benchmarks/_resque_reference.py
"""

import math

import numpy as np


def schedule(n, d, eps):
    """Counts of the accelerated pipeline at unit constants (module docstring)."""
    a = 1.0 / math.sqrt(n) + math.sqrt(d) / (n * eps)
    r = a / math.sqrt(d)
    ratio = 1.0 / r
    K = ratio ** (2.0 / 3.0)
    N = max(ratio ** (2.0 / 3.0) / eps, ratio ** (4.0 / 3.0) / d)
    return {"n": n, "d": d, "eps": eps, "target": a, "K": K, "N_per_call": N,
            "total": n + K * N, "depth": 7.0 * K, "dpsgd_queries": float(n) ** 2}


def slope(ns, d, eps):
    """Log-log slope of the total queries in n over the last two grid points."""
    t = [schedule(n, d, eps)["total"] for n in ns[-2:]]
    return math.log(t[1] / t[0]) / math.log(ns[-1] / ns[-2])


def main():
    ns = [10**k for k in range(3, 10)]
    rows = []
    for d in (2, 10, 100, 1000):
        for eps in (0.5, 1.0, 4.0):
            for n in (10**3, 10**4, 10**5, 10**6):
                rows.append(schedule(n, d, eps))
    print("| n | d | eps | K | N per call | total queries | total/n | depth | DP-SGD n^2 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in rows:
        print(f"| {s['n']:.0e} | {s['d']} | {s['eps']} | {s['K']:.3g} | {s['N_per_call']:.3g} "
              f"| {s['total']:.3g} | {s['total'] / s['n']:.3g} | {s['depth']:.3g} "
              f"| {s['dpsgd_queries']:.3g} |")
    print()
    print("| d | eps | crossover d^2/eps^3 | slope of total in n at n = 1e9 |")
    print("|---:|---:|---:|---:|")
    for d in (2, 10, 100, 1000):
        for eps in (0.5, 1.0, 4.0):
            print(f"| {d} | {eps} | {d * d / eps**3:.3g} | {slope(ns, d, eps):.3f} |")
    # the crossover: where the two terms n and K N are equal, compared with d^2/eps^3
    for d, eps in ((100, 1.0), (1000, 0.5)):
        grid = np.logspace(2, 14, 2000)
        diff = [schedule(n, d, eps)["total"] - 2 * n for n in grid]
        idx = int(np.argmax(np.array(diff) < 0))
        print(f"\nd = {d}, eps = {eps}: total < 2n from n ~ {grid[idx]:.3g} "
              f"(d^2/eps^3 = {d * d / eps**3:.3g})")


if __name__ == "__main__":
    main()
