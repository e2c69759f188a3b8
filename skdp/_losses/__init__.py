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
"""

from dataclasses import dataclass

import numpy as np

from ._kernels import HUBER, LOGISTIC, MULTINOMIAL, margin_curvatures, margin_derivatives

__all__ = [
    "LogisticLoss",
    "MultinomialLoss",
    "HuberLoss",
    "LOGISTIC",
    "MULTINOMIAL",
    "HUBER",
    "margin_derivatives",
    "margin_curvatures",
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
