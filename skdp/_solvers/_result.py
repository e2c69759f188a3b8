"""What every solver returns."""

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np


@dataclass(frozen=True)
class SolverResult:
    """Output of a private solver.

    Attributes
    ----------
    coef : ndarray of shape (n_features, n_outputs)
        Private coefficients (noise included), intercept column removed.
    intercept : ndarray of shape (n_outputs,)
        Private intercepts (zeros without ``fit_intercept``).
    n_iter : int
        Optimiser iterations.
    n_gradient_evals : int
        Per-example gradient evaluations (a full pass over the data counts ``n``), the
        unit in which solvers are compared.
    noise_scale : float
        Standard deviation of the Gaussian noise per coordinate, or the scale
        ``Delta/epsilon`` of the norm-Laplace noise when ``delta = 0``.
    sensitivity : float
        Replace-one L2 sensitivity of the released (noise-free) vector.
    dp_event : dp_accounting.DpEvent
        Everything the fit released, for the accountant.
    data_norm : float
        The row-norm bound enforced (intercept column included).
    details : dict
        Public solver quantities (step size, iteration budget, certificate used, ...).
    epsilon, delta : float or None
        The certified guarantee when the solver proves one tighter than what an
        accountant reads from ``dp_event`` (objective perturbation: the privacy profile,
        while ``dp_event`` is a dominating record for composition); None otherwise.
    """

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: int
    n_gradient_evals: int
    noise_scale: float
    sensitivity: float
    dp_event: Any
    data_norm: float
    details: dict
    epsilon: Optional[float] = None
    delta: Optional[float] = None


def split_intercept(W, fit_intercept, intercept_scaling):
    """``(coef, intercept)`` of a released vector ``W`` of the augmented model.

    With ``fit_intercept`` the last coordinate multiplies the constant column
    ``intercept_scaling``, so the intercept is ``W[-1] * intercept_scaling``
    (post-processing: no privacy cost).  ``W`` has shape ``(p, K)`` or ``(p,)``; the
    intercept always has shape ``(K,)`` (``(1,)`` for a vector).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._solvers._result import split_intercept
    >>> split_intercept(np.array([1.0, 2.0, 3.0]), True, 2.0)
    (array([1., 2.]), array([6.]))
    >>> split_intercept(np.ones((2, 3)), False, 1.0)[1]
    array([0., 0., 0.])
    """
    n_outputs = W.shape[1] if W.ndim == 2 else 1
    if fit_intercept:
        return W[:-1], np.atleast_1d(W[-1] * intercept_scaling)
    return W, np.zeros(n_outputs)
