"""The floating-point precision attack on a released coefficient, end to end.

D0: 200 rows ``[0.6, 0]`` with alternating labels: the noise-free coefficient 1 is exactly 0.
D1: one row replaced by ``[0, 0.8]``: it is ``W1 = -0.019841`` (the exact minimiser to
six digits).  Event E: ``|coef[1]| < |W1|/2`` and ``coef[1]`` is not a multiple of
``ulp(W1)/2``.  With float noise, a release under D1 is the float sum ``W1 + noise``,
exact in that range (Sterbenz), so E is impossible under D1, while under D0 the release is
the raw noise whose low bits are free: E happens in ~1 % of the D0 fits, which a
Clopper-Pearson audit turns into epsilon >= 1.99 at a claimed 1 with these 8,000 fits per
side (the bound grows with the number of fits).  With the default exact grid noise
(secure_noise="auto") every release is a multiple of the public grid, and the audit finds
nothing beyond the claim.  8,000 fits per side (~25 s each).
"""

import numpy as np
import pytest

from skdp import DPLogisticRegression
from skdp.audit import epsilon_lower_bound

N_FITS = 8_000
EPSILON, DELTA = 1.0, 1e-5


def _datasets():
    X0 = np.tile([[0.6, 0.0]], (200, 1))
    y = np.arange(200) % 2
    X1 = X0.copy()
    X1[0] = [0.0, 0.8]
    return (X0, y), (X1, y)


def _event_indicators(secure_noise):
    est = DPLogisticRegression(solver="output_perturbation", epsilon=EPSILON, delta=DELTA,
                               data_norm=1.0, alpha=0.1, fit_intercept=False, classes=[0, 1],
                               secure_noise=secure_noise)
    d0, d1 = _datasets()
    w1 = -0.019841270   # the noise-free coefficient on D1 (checked below)
    half_ulp = np.spacing(abs(w1)) / 2

    def event(c):
        return float(abs(c) < abs(w1) / 2 and c % half_ulp != 0.0)

    out = []
    for k, (X, y) in enumerate((d0, d1)):
        out.append(np.array([event(est.set_params(random_state=k * N_FITS + i).fit(X, y)
                                   .coef_[0, 1]) for i in range(N_FITS)]))
    return out


def test_noise_free_gap_is_the_attacks_premise(monkeypatch):
    import skdp._solvers._output_perturbation as op

    monkeypatch.setattr(op, "release_gaussian", lambda v, s, *a, **k: (np.array(v), s))
    d0, d1 = _datasets()
    est = DPLogisticRegression(solver="output_perturbation", data_norm=1.0, alpha=0.1,
                               fit_intercept=False, classes=[0, 1], delta=DELTA)
    assert est.fit(*d0).coef_[0, 1] == 0.0
    assert est.fit(*d1).coef_[0, 1] == pytest.approx(-0.019841270, rel=1e-6)


@pytest.mark.slow
def test_exact_noise_defeats_the_precision_attack():
    e0, e1 = _event_indicators("auto")
    bound = epsilon_lower_bound(e0, e1, delta=DELTA, random_state=0)
    assert bound.epsilon_lower_bound <= EPSILON, bound


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="documents the attack: float noise leaks through the "
                   "low-order bits of the sum (secure_noise=False)")
def test_float_noise_falls_to_the_precision_attack():
    e0, e1 = _event_indicators(False)
    assert e0.mean() > 0.005 and e1.sum() == 0          # the event: only under D0
    bound = epsilon_lower_bound(e0, e1, delta=DELTA, random_state=0)
    assert bound.epsilon_lower_bound <= EPSILON, bound  # fails: epsilon >= 1.99 measured
