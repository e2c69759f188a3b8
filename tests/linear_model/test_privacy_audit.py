"""Black-box privacy audits of the estimators.

For each estimator and calibration: two neighbouring datasets built to be (near) worst
case, 10^4 fits on each, a threshold chosen on half of the runs and a 95 % Clopper–Pearson
lower bound on epsilon from the other half (:mod:`skdp.audit`).  The honest fit must give a
lower bound <= the claimed epsilon; a variant with noise 4x too small must be caught
(lower bound > claimed epsilon), which shows the audit has the power to catch the bugs it
is meant for.  The scenarios live in ``benchmarks/audit_convex.py``, which runs the same
audit with 10^5 fits.

Why the under-noised variant is "a quarter of the analytic sigma for the actual gap"
rather than plain sigma/4: in tight mode for Huber the construction attains the bound and
the two coincide (sigma/4.04); elsewhere sigma/4 would still be private, so no audit could
catch it -- the logistic pair reaches only ~0.46 of the bound (|l'| <= 1/2 once the row is
classified correctly) and paper mode's Lemma-3 Delta is >= 2.5x loose with a Gaussian
>= 1.3x conservative.

Error rates: each lower bound holds with probability >= 95 %, so an honest audit fails
with probability <= 5 % *for a fixed seed*; seeds are fixed, so the suite is deterministic.
"""

import importlib.util
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "audit_convex.py"
_SPEC = importlib.util.spec_from_file_location("audit_convex", _PATH)
audit_convex = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(audit_convex)

#: many-fit audits: run by ``pytest -m slow`` (a separate CI step)
pytestmark = pytest.mark.slow

N_FITS = 10_000
CASES = [(k, c) for k in ("huber", "logistic") for c in ("tight", "paper")]


@pytest.mark.parametrize("kind,calibration", CASES)
def test_audit_honest_fit_is_within_claim(kind, calibration):
    result, gap, sensitivity = audit_convex.audit(kind, calibration, N_FITS, False)
    assert result.epsilon_lower_bound <= audit_convex.EPSILON, result
    assert gap <= sensitivity
    if (kind, calibration) == ("huber", "tight"):
        # the worst case is attained here, so the audit is informative (not vacuous, which
        # would be ~0): measured over six seeds, float and exact noise alike, the 95 % lower
        # bound at 10^4 fits ranges from 0.16 to 0.28 (seed-to-seed spread, not a trend)
        assert gap / sensitivity > 0.98
        assert result.epsilon_lower_bound > 0.1, result


@pytest.mark.parametrize("kind,calibration", CASES)
def test_audit_catches_quarter_noise(kind, calibration):
    result, _, _ = audit_convex.audit(kind, calibration, N_FITS, True)
    assert result.epsilon_lower_bound > audit_convex.EPSILON, result


@pytest.mark.parametrize("kind", ["huber", "logistic"])
def test_audit_dpsgd(kind):
    honest = audit_convex.audit_dpsgd(kind, "tight", N_FITS, False)
    assert honest.epsilon_lower_bound <= audit_convex.EPSILON, honest
    weak = audit_convex.audit_dpsgd(kind, "tight", N_FITS, True)
    assert weak.epsilon_lower_bound > audit_convex.EPSILON, weak
