"""Losses of the linear models: numba kernels plus the public constants the proofs use.

Each loss is a frozen spec object holding the integer id its kernels dispatch on and the
constants that the privacy proofs need, computed **only from public bounds**:

* ``lipschitz(data_norm)``: ``L`` with ``||grad_W l(x W, y)||_F <= L`` for every row with
  ``||x|| <= data_norm`` and every admissible label, at every ``W``;
* ``smoothness(data_norm)``: ``beta`` with ``grad_W l`` beta-Lipschitz in ``W``;
* ``sup_loss_at_zero(y_bound)``: ``sup_xi l(0; xi)`` (bounds ``||w_hat||`` publicly).

Derivations (``C = data_norm`` bounds the row *including* the intercept column):

* Binary logistic: ``grad = l'(z) x`` with ``|l'| <= 1`` so ``L = C``; ``l'' <= 1/4`` so
  ``beta = C^2/4``; ``l(0) = ln 2``.
* Multinomial logistic (``W`` is d x K, Frobenius norm): ``grad = x (p - e_y)^T``,
  ``||p - e_y||_2^2 = (1 - p_y)^2 + sum_{k != y} p_k^2 <= 2 (1 - p_y)^2 <= 2``, so
  ``L = sqrt(2) C``.  The Hessian is ``(diag(p) - p p^T) (x) x x^T``; by Gershgorin the
  eigenvalues of ``diag(p) - p p^T`` are at most ``max_k 2 p_k (1 - p_k) <= 1/2``, so
  ``beta = C^2/2``; ``l(0) = ln K``.
* Huber with threshold ``h``: ``|l'| <= h`` so ``L = h C`` whatever ``y`` is (no target
  bound needed); ``l'' in {0, 1}`` so ``beta = C^2``; ``l(0; y) = huber(|y|) <= huber(y_bound)``.
* Nonconvex robust losses (Tukey, Welsch, Cauchy with scale ``loss_scale``): also
  ``hessian_lipschitz(data_norm)`` (``rho``); derivations next to their classes below.
"""

import abc
import math
from dataclasses import dataclass

import numpy as np

from ._ids import CAUCHY, HUBER, LOGISTIC, MULTINOMIAL, TUKEY, WELSCH

#: kernels re-exported lazily (:func:`__getattr__`): importing the loss specs must not
#: import numba, which the default (numpy) fits never call
_KERNEL_EXPORTS = ("margin_curvatures", "margin_derivatives", "robust_derivatives")


def __getattr__(name):
    if name in _KERNEL_EXPORTS:
        from . import _kernels

        return getattr(_kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "LogisticLoss",
    "MultinomialLoss",
    "HuberLoss",
    "LOGISTIC",
    "MULTINOMIAL",
    "HUBER",
    "TukeyLoss",
    "WelschLoss",
    "CauchyLoss",
    "ROBUST_LOSSES",
    "TUKEY",
    "WELSCH",
    "CAUCHY",
    "margin_derivatives",
    "margin_curvatures",
    "robust_derivatives",
]


@dataclass(frozen=True)
class LogisticLoss:
    """Binary logistic loss ``log(1 + exp(-y x.w))``, ``y in {-1, +1}``."""

    loss_id: int = LOGISTIC
    param: float = 0.0

    def lipschitz(self, data_norm):
        return float(data_norm)

    def smoothness(self, data_norm):
        return float(data_norm) ** 2 / 4.0

    def sup_loss_at_zero(self, y_bound=None):
        return float(np.log(2.0))


@dataclass(frozen=True)
class MultinomialLoss:
    """Multinomial logistic (softmax cross-entropy) loss with ``n_classes`` outputs."""

    n_classes: int = 3
    loss_id: int = MULTINOMIAL
    param: float = 0.0

    def lipschitz(self, data_norm):
        return float(np.sqrt(2.0) * data_norm)

    def smoothness(self, data_norm):
        return float(data_norm) ** 2 / 2.0

    def sup_loss_at_zero(self, y_bound=None):
        return float(np.log(self.n_classes))


@dataclass(frozen=True)
class HuberLoss:
    """Huber loss of the residual ``x.w - y`` with threshold ``huber_threshold > 0``."""

    huber_threshold: float = 1.0
    loss_id: int = HUBER

    @property
    def param(self):
        return float(self.huber_threshold)

    def lipschitz(self, data_norm):
        return float(self.huber_threshold * data_norm)

    def smoothness(self, data_norm):
        return float(data_norm) ** 2

    def sup_loss_at_zero(self, y_bound=None):
        """``sup_y huber(|y|)``; ``inf`` without a public target bound."""
        if y_bound is None:
            return float("inf")
        h, c = float(self.huber_threshold), float(y_bound)
        return 0.5 * c * c if c <= h else h * (c - 0.5 * h)


# ---------------------------------------------------------------------------------------
# Nonconvex robust losses of a linear model (DPNonconvexRegressor; the constants of Liu &
# Talwar 2025, v2).  f(w; (a, y)) = l(a.w - y) with scale c = loss_scale.
#
# With rows clipped to ||a|| <= R (intercept column included):
#   grad f = l'(r) a                      => ||grad f|| <= L1 R                    = G
#   grad f(w) - grad f(w') = (l'(r) - l'(r')) a, |l'(r) - l'(r')| <= L2 |a.(w - w')|
#                                         => M = L2 R^2  (smoothness)
#   hess f = l''(r) a a^T, |l''(r) - l''(r')| <= L3 |a.(w - w')|
#                                         => rho = L3 R^3 (Hessian-Lipschitz, op norm)
# with L1 = sup|l'|, L2 = sup|l''|, L3 = Lipschitz constant of l'' (= sup|l'''| where l''' is
# defined; Tukey's l''' jumps at |u| = 1 but l'' is continuous and piecewise C^1 there, so
# the sup of |l'''| over both pieces is its Lipschitz constant).  In u = r/c:
#
# * Tukey:  l' = c u (1-u^2)^2 is maximal where (1-u^2)(1-5u^2) = 0, u^2 = 1/5:
#           L1 = 16 c/(25 sqrt 5).  l'' = (1-u^2)(1-5u^2) in [-4/5, 1]: L2 = 1.
#           l''' = (20u^3 - 12u)/c; on [0, 1] |.| peaks at u = 1 (8/c) vs 3.58/c at
#           u^2 = 1/5: L3 = 8/c.
# * Welsch: l' = c u e^{-u^2}, max at u^2 = 1/2: L1 = c/sqrt(2e).  l'' = (1-2u^2)e^{-u^2} in
#           [-2e^{-3/2}, 1]: L2 = 1.  |l'''| = |6u - 4u^3| e^{-u^2}/c, stationary where
#           8u^4 - 24u^2 + 6 = 0, u^2 = (3 - sqrt 6)/2: L3 = 1.95178.../c.
# * Cauchy: l' = c u/(1+u^2), max at u = 1: L1 = c/2.  l'' = (1-u^2)/(1+u^2)^2 in [-1/8, 1]:
#           L2 = 1.  |l'''| = |2u^3 - 6u|/(c (1+u^2)^3), max at u = sqrt 2 - 1:
#           L3 = (3 + 2 sqrt 2)/(4 c) = 1.45711.../c.
#
# B (bound on F(0) - inf F from x_0 = 0): inf F >= 0 and F(0) = mean l(-y) <= sup l:
# Tukey c^2/6, Welsch c^2/2 (bounded losses, no target bound needed); Cauchy is unbounded,
# so B = (c^2/2) ln(1 + Y^2/c^2) needs the public target bound Y = y_bound (targets
# clipped to it).  Privacy never needs a target bound: l' and l'' are bounded.


def _welsch_l3():
    u2 = (3.0 - math.sqrt(6.0)) / 2.0
    u = math.sqrt(u2)
    return u * (6.0 - 4.0 * u2) * math.exp(-u2)


@dataclass(frozen=True)
class _RobustLoss(abc.ABC):
    loss_scale: float = 1.0

    @property
    def param(self):
        return float(self.loss_scale)

    @abc.abstractmethod
    def derivative_bounds(self):
        """``(L1, L2, L3)``: sup|l'|, sup|l''| and the Lipschitz constant of l''."""

    def lipschitz(self, data_norm):
        """``G = L1 R``: bound on ``||grad_w f||`` for rows with ``||a|| <= R``."""
        return self.derivative_bounds()[0] * float(data_norm)

    def smoothness(self, data_norm):
        """``M = L2 R^2``: Lipschitz constant of ``grad_w f``."""
        return self.derivative_bounds()[1] * float(data_norm) ** 2

    def hessian_lipschitz(self, data_norm):
        """``rho = L3 R^3``: Lipschitz constant of ``hess_w f`` in operator norm."""
        return self.derivative_bounds()[2] * float(data_norm) ** 3

    def constants(self, data_norm):
        """``(G, M, rho)`` for rows with ``||a|| <= data_norm``.

        Examples
        --------
        >>> from skdp._losses import WelschLoss
        >>> [round(v, 4) for v in WelschLoss(1.0).constants(2.0)]
        [0.8578, 4.0, 15.6143]
        """
        return self.lipschitz(data_norm), self.smoothness(data_norm), \
            self.hessian_lipschitz(data_norm)


@dataclass(frozen=True)
class TukeyLoss(_RobustLoss):
    """Tukey biweight ``(c^2/6)(1 - (1 - (r/c)^2)^3)`` for ``|r| <= c``, else ``c^2/6``."""

    loss_scale: float = 1.0
    loss_id: int = TUKEY

    def derivative_bounds(self):
        c = float(self.loss_scale)
        return 16.0 * c / (25.0 * math.sqrt(5.0)), 1.0, 8.0 / c

    def sup_loss_at_zero(self, y_bound=None):
        return float(self.loss_scale) ** 2 / 6.0


@dataclass(frozen=True)
class WelschLoss(_RobustLoss):
    """Welsch (Leclerc) loss ``(c^2/2)(1 - exp(-(r/c)^2))``."""

    loss_scale: float = 1.0
    loss_id: int = WELSCH

    def derivative_bounds(self):
        c = float(self.loss_scale)
        return c / math.sqrt(2.0 * math.e), 1.0, _welsch_l3() / c

    def sup_loss_at_zero(self, y_bound=None):
        return 0.5 * float(self.loss_scale) ** 2


@dataclass(frozen=True)
class CauchyLoss(_RobustLoss):
    """Cauchy (Lorentzian) loss ``(c^2/2) ln(1 + (r/c)^2)``."""

    loss_scale: float = 1.0
    loss_id: int = CAUCHY

    def derivative_bounds(self):
        c = float(self.loss_scale)
        return 0.5 * c, 1.0, (3.0 + 2.0 * math.sqrt(2.0)) / (4.0 * c)

    def sup_loss_at_zero(self, y_bound=None):
        """``(c^2/2) ln(1 + Y^2/c^2)``; ``inf`` without a public target bound ``Y``."""
        if y_bound is None:
            return float("inf")
        c = float(self.loss_scale)
        return 0.5 * c * c * math.log1p((float(y_bound) / c) ** 2)


ROBUST_LOSSES = {"tukey": TukeyLoss, "welsch": WelschLoss, "cauchy": CauchyLoss}
