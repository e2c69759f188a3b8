r"""Gaussian-smoothed margin losses (closed forms) and raw subgradients of GLM losses.

For a generalised linear loss ``f(w; (a, y)) = l(a.w; y)`` the Gaussian convolution in
parameter space, ``f_rho(w) = E_{u ~ N(0, rho^2 I)} f(w + u; (a, y))``, depends on ``w``
only through the margin ``m = a.w`` and the margin noise ``a.u ~ N(0, s^2)``,
``s = rho ||a||``:

    f_rho(w) = l_s(a.w; y),      l_s(m; y) = E_{Z ~ N(0, 1)} l(m + s Z; y),
    grad f_rho(w) = l_s'(a.w; y) a.

So the smoothing is one-dimensional.  Closed forms, with
``Phi``/``phi`` the standard normal CDF/density:

* absolute ``l = |m - y|``, ``r = m - y``:
  ``l_s = r (2 Phi(r/s) - 1) + s sqrt(2/pi) exp(-r^2/(2 s^2))``,
  ``l_s' = 2 Phi(r/s) - 1``;
* hinge ``l = max(0, 1 - y m)`` (``y = ±1``), ``u = 1 - y m``:
  ``l_s = u Phi(u/s) + s phi(u/s)``, ``l_s' = -y Phi(u/s)``;
* Huber with threshold ``tau > 0``, ``r = m - y``, ``b = (tau - r)/s``, ``c = (-tau - r)/s``,
  ``P = Phi(b) - Phi(c)``:
  ``l_s' = tau (1 - Phi(b)) - tau Phi(c) + r P + s (phi(c) - phi(b))``,
  ``l_s = (r^2 P + 2 r s (phi(c) - phi(b)) + s^2 (P + c phi(c) - b phi(b)))/2
  + tau (r (1 - Phi(b)) + s phi(b) - r Phi(c) + s phi(c)) - tau^2 (1 - P)/2``
  (truncated normal moments on the three pieces);
* logistic: already smooth (``l'' <= 1/4``); not smoothed here.

Constants (``|l'| <= L_l``, rows ``||a|| <= C``): ``l_s' = E[l'(m + sZ)]`` so
``|l_s'| <= L_l`` (the Lipschitz constant ``L = L_l C`` is unchanged);
``l_s'' = E[l'(m + sZ) Z]/s`` so ``|l_s''| <= L_l E|Z|/s = sqrt(2/pi) L_l / s`` and
``||hess f_rho|| = |l_s''| ||a||^2 <= sqrt(2/pi) L_l C / rho`` (no dimension factor);
``0 <= l_s - l <= L_l s E|Z| = sqrt(2/pi) L_l s`` for convex ``l`` (Jensen; Lipschitz), i.e.
``0 <= f_rho - f <= sqrt(2/pi) L rho``.

The loss ids ``ABSOLUTE`` and ``HINGE`` extend those of :mod:`skdp._losses._kernels`; they
are understood only by the kernels of this module and of the ``phased``/``resque`` solvers.
"""

import math
from dataclasses import dataclass


from ._ids import HUBER, LOGISTIC, MULTINOMIAL
from ._ids import SMOOTHED_ABSOLUTE as ABSOLUTE
from ._ids import SMOOTHED_HINGE as HINGE
from .._numba_cache import ensure_cache_locator, kernel

__all__ = ["ABSOLUTE", "HINGE", "AbsoluteLoss", "HingeLoss", "smoothed_margin_loss",
           "raw_margin_derivative", "smoothed_margin_arrays", "smoothing_smoothness"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class AbsoluteLoss:
    """Absolute loss ``|a.w - y|`` (``DPHuberRegressor(huber_threshold=0)``).

    ``|l'| <= 1`` so ``L = C``; not smooth (``smoothness`` is infinite: the solvers smooth
    it, see the module docstring); ``l(0; y) = |y| <= y_bound``.
    """

    loss_id: int = ABSOLUTE
    param: float = 0.0

    def lipschitz(self, data_norm):
        return float(data_norm)

    def smoothness(self, data_norm):
        return math.inf

    def sup_loss_at_zero(self, y_bound=None):
        return math.inf if y_bound is None else float(y_bound)


@dataclass(frozen=True)
class HingeLoss:
    """Hinge loss ``max(0, 1 - y a.w)``, ``y = ±1`` (solver tests only).

    ``|l'| <= 1`` so ``L = C``; not smooth; ``l(0) = 1``.
    """

    loss_id: int = HINGE
    param: float = 0.0

    def lipschitz(self, data_norm):
        return float(data_norm)

    def smoothness(self, data_norm):
        return math.inf

    def sup_loss_at_zero(self, y_bound=None):
        return 1.0


def smoothing_smoothness(loss, data_norm, rho):
    """Smoothness ``beta`` of ``f_rho`` for rows with ``||a|| <= data_norm``.

    ``min(beta(f), sqrt(2/pi) L / rho)`` for the losses smoothed here (module docstring),
    ``beta(f)`` for logistic and multinomial (not smoothed), ``inf`` for a nonsmooth loss
    at ``rho = 0``.
    """
    beta = float(loss.smoothness(data_norm))
    if loss.loss_id in (LOGISTIC, MULTINOMIAL) or not rho > 0.0:
        return beta
    return min(beta, SQRT_2_OVER_PI * float(loss.lipschitz(data_norm)) / float(rho))


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _ncdf(x):
    return 0.5 * math.erfc(-x * _INV_SQRT2)


@kernel
def _npdf(x):
    return _INV_SQRT2PI * math.exp(-0.5 * x * x)


@kernel
def raw_margin_derivative(m, y, loss_id, param):
    """A subgradient ``l'(m; y)`` of the unsmoothed scalar-margin loss ``loss_id``.

    LOGISTIC ``-y sigmoid(-y m)``; HUBER ``clip(m - y, -tau, tau)``; ABSOLUTE
    ``sign(m - y)`` (0 at 0); HINGE ``-y 1{y m < 1}``.  ``|l'| <= L_l`` for every input
    (NaN propagates and is dropped by the callers' finiteness checks).
    """
    if loss_id == LOGISTIC:
        t = -y * m
        e = math.exp(-abs(t))
        num = 1.0 if t > 0.0 else e  # a select, not a branch (same bits as -y/(1+e), -y e/(1+e))
        return -y * num / (1.0 + e)
    if loss_id == HUBER:
        r = m - y
        if r > param:
            return param
        if r < -param:
            return -param
        return r
    if loss_id == ABSOLUTE:
        r = m - y
        if r > 0.0:
            return 1.0
        if r < 0.0:
            return -1.0
        return 0.0 * r  # 0, or NaN for NaN
    # HINGE
    if y * m < 1.0:
        return -y
    return 0.0 * m


@kernel
def _raw_value(m, y, loss_id, param):
    if loss_id == LOGISTIC:
        t = -y * m
        if t > 0.0:
            return t + math.log1p(math.exp(-t))
        return math.log1p(math.exp(t))
    if loss_id == HUBER:
        r = abs(m - y)
        if r <= param:
            return 0.5 * r * r
        return param * (r - 0.5 * param)
    if loss_id == ABSOLUTE:
        return abs(m - y)
    return max(0.0, 1.0 - y * m)


@kernel
def smoothed_margin_loss(m, y, loss_id, param, s):
    """``(l_s(m; y), l_s'(m; y))``: the Gaussian-smoothed loss at margin noise ``s``.

    Closed forms of the module docstring for HUBER, ABSOLUTE and HINGE; the unsmoothed
    loss when ``s <= 0`` or for LOGISTIC (already smooth).  ``|l_s'| <= L_l``.  Smoothed
    Huber beyond ``|r| > tau + 40 s`` is the linear piece, ``(tau (|r| - tau/2), +-tau)``:
    there the exact values differ from it by less than ``tau e^-800``, while the closed
    form would carry the rounding of ``r P``, ``O(u |r|)`` (``phased``'s rounding
    allowance needs the derivative's error to stay ``O(u (tau + s))``).
    """
    if not s > 0.0 or loss_id == LOGISTIC:
        return _raw_value(m, y, loss_id, param), raw_margin_derivative(m, y, loss_id, param)
    if loss_id == HINGE:
        u = 1.0 - y * m
        v = u / s
        P = _ncdf(v)
        return u * P + s * _npdf(v), -y * P
    r = m - y
    if loss_id == ABSOLUTE:
        v = r / s
        deriv = 2.0 * _ncdf(v) - 1.0
        value = r * deriv + 2.0 * s * _npdf(v)
        if deriv > 1.0:  # rounding guard: |l_s'| <= L_l exactly
            deriv = 1.0
        elif deriv < -1.0:
            deriv = -1.0
        return value, deriv
    # HUBER
    tau = param
    if abs(r) > tau + 40.0 * s:  # saturated: the unsmoothed linear piece (docstring)
        return _raw_value(m, y, loss_id, param), (tau if r > 0.0 else -tau)
    b = (tau - r) / s
    c = (-tau - r) / s
    Pb = _ncdf(b)
    Pc = _ncdf(c)
    pb = _npdf(b)
    pc = _npdf(c)
    P = Pb - Pc
    deriv = tau * (1.0 - Pb) - tau * Pc + r * P + s * (pc - pb)
    value = 0.5 * (r * r * P + 2.0 * r * s * (pc - pb) + s * s * (P + c * pc - b * pb)) \
        + tau * (r * (1.0 - Pb) + s * pb - r * Pc + s * pc) - 0.5 * tau * tau * (1.0 - P)
    if deriv > tau:  # rounding guard: |l_s'| <= L_l exactly
        deriv = tau
    elif deriv < -tau:
        deriv = -tau
    return value, deriv


@kernel
def smoothed_margin_arrays(m, y, loss_id, param, s, value, deriv):
    """Vectorised :func:`smoothed_margin_loss` (``s`` per entry; ``s[i] = 0``: raw)."""
    for i in range(m.shape[0]):
        v, g = smoothed_margin_loss(m[i], y[i], loss_id, param, s[i])
        value[i] = v
        deriv[i] = g
