"""Spec ``private_sosp_spider.md`` §9 tests 5 and 6: the escape subprocedure of the private
SpiderBoost (Alg. 2 [paper]), driven through the solver's own kernels
(:func:`escape_offset`, :func:`escape_direction`, :func:`descent_step`, :func:`left_ball` of
``skdp._solvers._spider_kernel``, the steps ``spider_loop`` runs) with an injected
``(g, H)`` oracle instead of the data, and the solver's own parameter rule
(:func:`spider_parameters`: ``Xi = sqrt(gamma/rho)``, ``Gamma``, ``sigma_esc = gamma /
sqrt(d ln(T/iota))``, ``eta = 1/M``, ``thr = 2 gamma``).

Test 5 (escape unit): exact ``g = 0``, ``H = diag(1, -1)`` at ``x_0 = 0``: the ball of radius
``Xi`` is left within ``Gamma`` steps with ``F`` decreased in >= (1 - iota) of 1000 trials;
control ``H = diag(1, 1)`` (a minimum, no negative curvature): never left.

Test 6 (toy saddle): ``F(x) = x1^2/2 - x2^2/2 + x2^4/4`` started at the saddle 0, gradient
oracle ``grad F + N(0, 0.01^2 I)``, Hessian oracle ``hess F``, privacy off (noise at the
utility floor ``sigma_esc``), the main loop's escape logic: ``|x2|``
ends within ``1 +- 0.1`` and ``F`` drops by >= 0.2 (``min F = -1/4``).  Also with exact
gradients (only the escape noise breaks the symmetry); control: exact gradients, no noise,
escape off => stays at 0 exactly.
"""

import numpy as np
import pytest

from skdp._solvers._spider import IOTA, spider_parameters
from skdp._solvers._spider_kernel import descent_step, escape_direction, escape_offset, left_ball


def _escape_phase(x_a, g_a, H, P, rng):
    """Alg. 2 with the solver's kernels: ``g = g_a + H (x - x_a) + xi``, ``x <- x - eta g``,
    stop when ``||x - x_a|| >= Xi``.  Returns ``(x, steps)``; ``(x_a, None)`` if the ball is
    not left within ``Gamma`` steps (Alg. 2's output ``x_0``)."""
    p = x_a.size
    x, x_prev, v, g = x_a.copy(), x_a.copy(), np.empty(p), np.empty(p)
    for k in range(1, P.Gamma + 1):
        escape_offset(x, x_a, P.Xi, v)
        escape_direction(g_a, H @ v, P.sigma_esc, rng, g)
        descent_step(x, x_prev, g, P.eta, 0.0)
        if left_ball(x, x_a, P.Xi):
            return x, k
    return x_a.copy(), None


# ----------------------------------------------------------------------------- test 5
def _unit_params():
    # (a SpiderParameters dict is not kept at module level: doctest collection probes
    # module attributes for ``__wrapped__``, which a dict with item access refuses)
    return spider_parameters(0.01, p=2, G=1.0, M=1.0, rho=1.0, B=1.0, epsilon=1.0,
                             delta=1e-6)


def _quadratic(H, x):
    return 0.5 * float(x @ H @ x)


def test_escape_unit_leaves_the_ball_and_decreases_f():
    P = _unit_params()
    assert P.eta == 1.0 and P.Xi == pytest.approx(0.1)
    assert P.sigma_esc == pytest.approx(0.01 / np.sqrt(2 * np.log(P.T_max / IOTA)))
    H = np.diag([1.0, -1.0])
    rng = np.random.default_rng(0)
    x0, g = np.zeros(2), np.zeros(2)
    ok, steps = 0, []
    for _ in range(1000):
        x, k = _escape_phase(x0, g, H, P, rng)
        if k is not None and _quadratic(H, x) < _quadratic(H, x0):
            ok += 1
            steps.append(k)
    assert ok >= (1 - IOTA) * 1000
    assert max(steps) <= P.Gamma
    # F decreases by a definite amount: at exit ||x|| >= Xi, mostly along e2
    assert np.median(steps) < P.Gamma / 4


def test_escape_unit_control_at_a_minimum_never_leaves():
    P = _unit_params()
    H = np.eye(2)
    rng = np.random.default_rng(1)
    left = sum(_escape_phase(np.zeros(2), np.zeros(2), H, P, rng)[1] is not None
               for _ in range(100))
    assert left == 0


# ----------------------------------------------------------------------------- test 6
def _toy_params():
    return spider_parameters(0.02, p=2, G=1.0, M=4.0, rho=8.0, B=0.25, epsilon=1.0,
                             delta=1e-6)


def _toy_F(x):
    return 0.5 * x[0] ** 2 - 0.5 * x[1] ** 2 + 0.25 * x[1] ** 4


def _toy_grad(x):
    return np.array([x[0], -x[1] + x[1] ** 3])


def _toy_hess(x):
    return np.diag([1.0, -1.0 + 3.0 * x[1] ** 2])


def _toy_run(seed, grad_noise, escape_on, steps=300):
    """The main loop's gradient / escape logic with injected oracles:
    gradient ``grad F + N(0, grad_noise^2 I)``, frozen model ``(g_a, hess F(x_a))``."""
    P = _toy_params()
    rng = np.random.default_rng(seed)
    x, x_prev = np.zeros(2), np.zeros(2)
    v, g = np.empty(2), np.empty(2)
    frozen, escape, n_escapes = 1, False, 0
    for _ in range(steps):
        gt = _toy_grad(x) + grad_noise * rng.standard_normal(2)
        if escape_on and not escape and frozen <= 0 and np.linalg.norm(gt) <= P.thr:
            escape, frozen, n_escapes = True, P.Gamma, n_escapes + 1
            g_a, H_a, x_a = gt.copy(), _toy_hess(x), x.copy()
        if escape:
            escape_offset(x, x_a, P.Xi, v)
            escape_direction(g_a, H_a @ v, P.sigma_esc, rng, g)
        else:
            g[:] = gt
        descent_step(x, x_prev, g, P.eta, 0.0)
        frozen -= 1
        if escape and (left_ball(x, x_a, P.Xi) or frozen <= 0):
            escape = False
    return x, n_escapes


@pytest.mark.parametrize("grad_noise", [0.01, 0.0])
def test_toy_saddle_is_escaped(grad_noise):
    P = _toy_params()
    assert P.eta == 0.25 and P.thr == pytest.approx(0.04)
    for seed in range(10):
        x, n_escapes = _toy_run(seed, grad_noise, True)
        assert n_escapes >= 1
        assert abs(abs(x[1]) - 1.0) <= 0.1, x
        assert _toy_F(x) <= _toy_F(np.zeros(2)) - 0.2


def test_toy_saddle_control_without_noise_or_escape_stays():
    x, n_escapes = _toy_run(0, 0.0, False)
    assert n_escapes == 0
    assert np.array_equal(x, np.zeros(2))
