"""Why a private pipeline fixes its model's event before any row: the numbers quoted in
:func:`skdp.linear_model._budget.width_rule_pins`.

A pipeline releases ``A`` (knots, categories: their number is the model's width ``w``), then
a model ``M_w``.  For neighbours with ``A``'s privacy loss ``L_A`` at its output ``a``, the
composition's privacy profile is ``E_a[delta_{M_w(a)}(eps - L_A(a))]``.  Before this was
fixed, each width's model was calibrated on its own so that ``A`` composed with it meets
``(eps, delta)``.  This script computes, with ``A`` a Gaussian release of GDP parameter
``mu_A`` (its privacy loss ``N(mu_A^2/2, mu_A^2)`` on its worst pair):

1. **a toy**: branch ``B`` Gaussian, branch ``R`` randomized response (pure DP), each
   calibrated to compose with ``A`` to exactly ``(eps, delta)``; a threshold rule on the
   released value picks one -- the adaptive composition's ``delta`` on the worst pair;
2. **DP-SGD schedules**: two DP-SGD branches of ``T1`` and ``T2`` steps (the epoch rule
   reads the width), each calibrated after ``A`` by skdp's own calibration
   (``calibrate_poisson_gaussian_after``); the envelope bound ``E max_w delta_w(eps - L_A)``
   of any width rule, from their PLD profiles (dp-accounting), against ``delta``.

Usage::

    python benchmarks/bench_adaptive_composition.py

Writes ``results/adaptive_composition.{md,json}``.  Pure arithmetic (a few seconds).
"""

import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).parent))
from _common import git_state, write_results  # noqa: E402


def gaussian_profile(t, mu):
    """delta(t) of a mu-GDP Gaussian pair, every real t (Balle & Wang 2018, Thm 8)."""
    return norm.cdf(-t / mu + mu / 2) - np.exp(t) * norm.cdf(-t / mu - mu / 2)


def rr_profile(t, eps0):
    """delta(t) of randomized response at eps0: (e^eps0 - e^t)_+ / (1 + e^eps0)."""
    return np.maximum(0.0, np.exp(eps0) - np.exp(t)) / (1.0 + np.exp(eps0))


def loss_grid(mu_a):
    xs = np.linspace(mu_a ** 2 / 2 - 14 * mu_a, mu_a ** 2 / 2 + 14 * mu_a, 200001)
    return xs, norm.pdf(xs, mu_a ** 2 / 2, mu_a)


def composed_delta(eps, mu_a, profile):
    xs, w = loss_grid(mu_a)
    return float(np.trapezoid(w * profile(eps - xs), xs))


def toy(eps, delta, mu_a):
    mu_b = brentq(lambda m: composed_delta(eps, mu_a, lambda t: gaussian_profile(t, m))
                  - delta, 1e-3, 20)
    eps_r = brentq(lambda e: composed_delta(eps, mu_a, lambda t: rr_profile(t, e)) - delta,
                   1e-4, 20)
    xs, w = loss_grid(mu_a)
    b, r = gaussian_profile(eps - xs, mu_b), rr_profile(eps - xs, eps_r)
    worst = max(float(np.trapezoid(w * np.where(xs > tau, hi, lo), xs))
                for tau in np.linspace(-3, 3, 601) for hi, lo in ((b, r), (r, b)))
    return {"eps": eps, "delta": delta, "mu_A": mu_a, "gaussian_branch_mu": mu_b,
            "rr_branch_eps": eps_r, "threshold_rule_delta": worst}


def dpsgd(eps, delta, n, share, steps):
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    from skdp.accounting import gaussian_mu_for
    from skdp.accounting._events import NEIGHBORING_RELATION
    from skdp.accounting._sampled import (calibrate_poisson_gaussian_after,
                                          poisson_gaussian_event)

    mu_a = math.sqrt(share) * gaussian_mu_for(eps, delta)
    prior = [dp_accounting.GaussianDpEvent(noise_multiplier=2.0 / mu_a)]
    batch = min(n, max(64, round(4 * math.sqrt(n))))
    ts = np.linspace(-6, eps + 12 * mu_a, 3000)
    profiles, branches = [], []
    for T in steps:
        z = calibrate_poisson_gaussian_after(prior, eps, delta, batch / n, T)
        event = poisson_gaussian_event(batch / n, z, T)
        acc = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=1e-4)
        acc.compose(event)
        profiles.append(np.asarray(acc._pld.get_delta_for_epsilon(ts)))
        both = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=1e-4)
        both.compose(dp_accounting.ComposedDpEvent(prior + [event]))
        branches.append({"steps": T, "noise_multiplier": z,
                         "composed_delta": float(both.get_delta(eps))})
    xs, w = loss_grid(mu_a)
    envelope = float(np.trapezoid(
        w * np.max([np.interp(eps - xs, ts, p) for p in profiles], axis=0), xs))
    return {"eps": eps, "delta": delta, "n": n, "transformer_mu2_share": share,
            "batch": batch, "branches": branches, "envelope_delta": envelope}


def main():
    toys = [toy(1.0, d, m) for d, m in ((1e-6, 0.1), (1e-5, 0.12), (1e-3, 0.2))]
    schedules = [dpsgd(1.0, 1e-6, 30000, 0.1, (866, 433)),
                 dpsgd(1.0, 1e-6, 30000, 0.1, (866, 50)),
                 dpsgd(10.0, 1e-6, 30000, 0.1, (866, 100))]
    lines = ["# Adaptive composition: a model calibrated at the released width",
             "", f"`benchmarks/bench_adaptive_composition.py`, git {git_state()}.  "
             "A is a Gaussian release of GDP parameter mu_A; each branch is calibrated "
             "so that A composed with it alone is (eps, delta)-DP.", "",
             "## Toy: Gaussian or randomized-response branch, picked by a threshold", "",
             "| eps | delta | mu_A | Gaussian branch mu | RR branch eps | adaptive delta |",
             "|---|---|---|---|---|---|"]
    for t in toys:
        lines.append(f"| {t['eps']:g} | {t['delta']:g} | {t['mu_A']:g} | "
                     f"{t['gaussian_branch_mu']:.4f} | {t['rr_branch_eps']:.4f} | "
                     f"{t['threshold_rule_delta']:.3e} |")
    lines += ["", "## DP-SGD schedules after the transformers (10 % of mu^2)", "",
              "| eps | delta | n | steps | each branch's composed delta | envelope bound |",
              "|---|---|---|---|---|---|"]
    for s in schedules:
        steps = " / ".join(str(b["steps"]) for b in s["branches"])
        each = " / ".join(f"{b['composed_delta']:.3e}" for b in s["branches"])
        lines.append(f"| {s['eps']:g} | {s['delta']:g} | {s['n']} | {steps} | {each} | "
                     f"{s['envelope_delta']:.3e} |")
    lines += ["", "The envelope bound is `E max_w delta_w(eps - L_A)`, an upper bound on "
              "what any width rule can reach; where it is above delta the per-width "
              "calibration does not prove the budget."]
    write_results("adaptive_composition", "\n".join(lines),
                  {"git": git_state(), "toys": toys, "dpsgd": schedules})
    print("\n".join(lines))


if __name__ == "__main__":
    main()
