"""What every solver returns."""

from dataclasses import dataclass
from typing import Any

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
