r"""Nonsmooth (and user-supplied) losses of a linear model, for the zeroth-order solver.

``f(w; (a, y)) = l(a.w, y)`` with the row ``a`` clipped to ``||a|| <= R = data_norm``
(intercept column included).  The zeroth-order solver (:mod:`skdp._solvers._zeroth_order`)
only *evaluates* ``l``; its privacy proof needs one constant, the Lipschitz constant of
``l`` in the prediction ``z = a.w`` (``Lip_l``), from which

    |f(w; a, y) - f(w'; a, y)| <= Lip_l |a.(w - w')| <= Lip_l R ||w - w'||,

so ``L = lipschitz(R) = Lip_l R`` is the Lipschitz constant of ``f`` in ``w`` (the same
convention as the other loss specs: ``lipschitz(data_norm)`` bounds the gradient norm in
``w``).  In the residual ``r = z - y`` with scale ``tau = loss_scale``:

============================  ===========================  ==========  ============
loss                          ``l(r)``                     ``Lip_l``   ``sup l``
============================  ===========================  ==========  ============
``"capped_absolute"``         ``min(|r|, tau)``            1           ``tau``
``"absolute"``                ``|r|``                      1           ``y_bound``
``"truncated_squared"``       ``min(r^2, tau^2)``          ``2 tau``   ``tau^2``
============================  ===========================  ==========  ============

(``min(|r|, tau)`` is the minimum of two 1-Lipschitz functions, so 1-Lipschitz;
``min(r^2, tau^2)`` is constant for ``|r| >= tau`` and has slope ``|2r| <= 2 tau`` inside.)
The smooth robust losses of :mod:`skdp._losses` qualify too, with
``Lip_l = sup|l'|`` (Tukey ``16c/(25 sqrt 5)``, Welsch ``c/sqrt(2e)``, Cauchy ``c/2``).

None of these is differentiable everywhere, so ``smoothness`` is ``inf`` (a first-order
solver with a step rule based on smoothness cannot use them; ``dpsgd`` with ``alpha = 0``
uses a subgradient, see ``skdp._losses._kernels._robust_row``).

A **user loss** (:class:`UserLoss`) is a numba-compilable function ``loss(z, y) -> float``
with a declared ``Lip_l``.  Privacy then rests on the solver's clipping of every finite
difference to ``Lip_l`` times the step (a no-op when the declaration is true), never on the
declaration: a wrong constant biases the estimate but cannot raise the sensitivity.
"""

import abc
import math
from dataclasses import dataclass, field
from typing import Any

from ._ids import ABSOLUTE, CAPPED_ABSOLUTE, TRUNCATED_SQUARED

__all__ = [
    "CappedAbsoluteLoss",
    "AbsoluteLoss",
    "TruncatedSquaredLoss",
    "UserLoss",
    "NONSMOOTH_LOSSES",
    "USER_LOSS",
    "prediction_lipschitz",
]

USER_LOSS = -1
"""Loss id of a :class:`UserLoss` (never dispatched by a cached kernel)."""


@dataclass(frozen=True)
class _NonsmoothLoss(abc.ABC):
    """Shared part of the nonsmooth residual losses: constants from ``prediction_lipschitz``."""

    loss_scale: float = 1.0

    @property
    def param(self):
        return float(self.loss_scale)

    @abc.abstractmethod
    def prediction_lipschitz(self):
        """Lipschitz constant of ``z -> l(z, y)`` in the prediction ``z``."""

    def lipschitz(self, data_norm):
        """``L = Lip_l R``: Lipschitz constant of ``w -> l(a.w, y)`` for ``||a|| <= R``."""
        return self.prediction_lipschitz() * float(data_norm)

    def smoothness(self, data_norm):
        """``inf``: the loss is not differentiable everywhere."""
        return math.inf


@dataclass(frozen=True)
class CappedAbsoluteLoss(_NonsmoothLoss):
    """Capped absolute loss ``min(|r|, tau)``, ``tau = loss_scale`` (1-Lipschitz in ``r``).

    Examples
    --------
    >>> from skdp._losses._nonsmooth import CappedAbsoluteLoss
    >>> loss = CappedAbsoluteLoss(0.5)
    >>> loss.lipschitz(2.0), loss.sup_loss_at_zero()
    (2.0, 0.5)
    """

    loss_scale: float = 1.0
    loss_id: int = CAPPED_ABSOLUTE

    def prediction_lipschitz(self):
        return 1.0

    def sup_loss_at_zero(self, y_bound=None):
        return float(self.loss_scale)


@dataclass(frozen=True)
class AbsoluteLoss(_NonsmoothLoss):
    """Absolute loss ``|r|`` (convex, 1-Lipschitz; ``loss_scale`` unused)."""

    loss_scale: float = 1.0
    loss_id: int = ABSOLUTE

    def prediction_lipschitz(self):
        return 1.0

    def sup_loss_at_zero(self, y_bound=None):
        """``sup_y |y| = y_bound``; ``inf`` without a public target bound."""
        return math.inf if y_bound is None else float(y_bound)


@dataclass(frozen=True)
class TruncatedSquaredLoss(_NonsmoothLoss):
    """Truncated squared loss ``min(r^2, tau^2)``, ``tau = loss_scale`` (``2 tau``-Lipschitz)."""

    loss_scale: float = 1.0
    loss_id: int = TRUNCATED_SQUARED

    def prediction_lipschitz(self):
        return 2.0 * float(self.loss_scale)

    def sup_loss_at_zero(self, y_bound=None):
        return float(self.loss_scale) ** 2


@dataclass(frozen=True)
class UserLoss:
    """A user loss ``function(z, y) -> float`` with declared Lipschitz constant in ``z``.

    ``function`` must be numba-compilable (an ``@njit`` function, or a plain function numba
    can compile in nopython mode).  ``lipschitz_prediction`` is ``Lip_l``; the solver clips
    every finite difference to it, so privacy never depends on it being true.

    Examples
    --------
    >>> from numba import njit
    >>> from skdp._losses._nonsmooth import UserLoss
    >>> @njit
    ... def pinball(z, y):
    ...     r = y - z
    ...     return max(0.3 * r, -0.7 * r)
    >>> UserLoss(pinball, 0.7).lipschitz(2.0)
    1.4
    """

    function: Any = field(compare=False)
    lipschitz_prediction: float = 1.0
    loss_id: int = USER_LOSS
    param: float = 0.0

    def prediction_lipschitz(self):
        return float(self.lipschitz_prediction)

    def lipschitz(self, data_norm):
        return self.prediction_lipschitz() * float(data_norm)

    def smoothness(self, data_norm):
        return math.inf

    def sup_loss_at_zero(self, y_bound=None):
        """Unknown: ``inf`` (the solver then uses a public default for ``F*``)."""
        return math.inf


NONSMOOTH_LOSSES = {
    "capped_absolute": CappedAbsoluteLoss,
    "absolute": AbsoluteLoss,
    "truncated_squared": TruncatedSquaredLoss,
}


def prediction_lipschitz(loss):
    """``Lip_l`` of any loss spec usable by the zeroth-order solver.

    Nonsmooth and user losses state it; the smooth robust losses (Tukey, Welsch, Cauchy) have
    ``Lip_l = sup|l'|`` (their ``derivative_bounds()[0]``).

    Examples
    --------
    >>> from skdp._losses import CauchyLoss
    >>> from skdp._losses._nonsmooth import prediction_lipschitz
    >>> prediction_lipschitz(CauchyLoss(2.0))
    1.0
    """
    if hasattr(loss, "prediction_lipschitz"):
        return float(loss.prediction_lipschitz())
    if hasattr(loss, "derivative_bounds"):
        return float(loss.derivative_bounds()[0])
    raise ValueError(
        f"the zeroth-order solvers need a loss of the residual with a Lipschitz constant "
        f"(capped_absolute, absolute, truncated_squared, tukey, welsch, cauchy or a user "
        f"loss), got {type(loss).__name__}"
    )
