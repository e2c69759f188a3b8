r"""AdaSSP (Wang 2018): a reference for private linear regression, in numpy.

Yu-Xiang Wang, "Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain", UAI 2018, Algorithm 2.  Ridge regression
from noisy sufficient statistics, with the ridge chosen from a private lower bound of the
smallest eigenvalue of ``X^T X``:

1. ``lmin~ = max(0, lambda_min(X^T X) + s1 Z - s1 Phi^{-1}(1 - rho/3))``: a noisy value,
   shifted down so it is a lower bound with probability ``1 - rho/3``;
2. ``lambda = max(0, s2 sqrt(p log(2 p^2 / rho)) - lmin~)``: enough ridge to dominate the
   noise matrix's spectral norm (the paper's bound) minus the curvature the data already has;
3. ``XtX~ = X^T X + s2 E`` (``E`` symmetric, i.i.d. N(0, 1) upper triangle),
   ``Xty~ = X^T y + s3 e``;
4. ``theta = (XtX~ + lambda I)^{-1} Xty~``.

Privacy, replace-one neighbours (skdp's relation), rows ``||x|| <= R`` (the intercept
column included) and ``|y| <= Y``, both enforced by clipping before anything is computed:

* ``lambda_min``: ``X^T X`` changes by ``A = x x^T - x' x'^T`` with ``-R^2 I <= A <= R^2 I``,
  so by Weyl's inequality ``lambda_min`` moves by at most ``R^2``;
* the upper triangle of ``X^T X``: its L2 norm is at most ``||A||_F``, and
  ``||A||_F^2 = ||x||^4 + ||x'||^4 - 2 (x.x')^2 <= 2 R^4``: sensitivity ``sqrt(2) R^2``;
* ``X^T y``: ``||x y - x' y'|| <= 2 R Y``.

The three Gaussian releases share the budget in Gaussian DP: with ``mu`` the GDP parameter
of ``(epsilon, delta)`` (:func:`skdp.accounting.gaussian_mu_for`), each gets
``mu / sqrt(3)`` (``sum mu_i^2 = mu^2``), ``s_k = Delta_k sqrt(3) / mu``.  The paper splits
``(epsilon/3, delta/3)`` with the classical Gaussian bound and add/remove neighbours; the
GDP split and the tight calibration only make this reference stronger.

The target is centred at a public constant (the midpoint of its public range) so its bound
is half the range -- what a careful user of AdaSSP would do.  ``fit_intercept`` adds the
column of ones (so ``R = sqrt(data_norm^2 + 1)``).
"""

import math

import numpy as np
from scipy.stats import norm

from skdp.accounting import gaussian_mu_for


class AdaSSP:
    """AdaSSP ridge regression; ``fit(X, y)`` / ``predict(X)`` / ``score``.

    Parameters
    ----------
    epsilon, delta : float
        The (replace-one) budget.
    data_norm : float
        Public bound on the feature rows (rows are clipped to it).
    y_range : (float, float)
        Public range of the target (clipped to it).
    rho : float
        Failure probability of the eigenvalue bound (the paper's ``rho``; 0.05).
    random_state : int or None
    """

    def __init__(self, epsilon, delta, data_norm, y_range, rho=0.05, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.y_range = y_range
        self.rho = rho
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.default_rng(self.random_state)
        X = np.asarray(X, dtype=float)
        norms = np.linalg.norm(X, axis=1)
        X = X * np.minimum(1.0, self.data_norm / np.maximum(norms, 1e-300))[:, None]
        lo, hi = self.y_range
        centre, Y = 0.5 * (lo + hi), 0.5 * (hi - lo)
        y = np.clip(np.asarray(y, dtype=float), lo, hi) - centre
        Xa = np.hstack([X, np.ones((X.shape[0], 1))])
        p = Xa.shape[1]
        R2 = self.data_norm ** 2 + 1.0
        mu = gaussian_mu_for(self.epsilon, self.delta) / math.sqrt(3.0)
        s1, s2, s3 = R2 / mu, math.sqrt(2.0) * R2 / mu, 2.0 * math.sqrt(R2) * Y / mu

        XtX = Xa.T @ Xa
        Xty = Xa.T @ y
        lmin = float(np.linalg.eigvalsh(XtX)[0])
        lmin_noisy = max(0.0, lmin + s1 * rng.standard_normal()
                         - s1 * norm.ppf(1.0 - self.rho / 3.0))
        lam = max(0.0, s2 * math.sqrt(p * math.log(2.0 * p * p / self.rho)) - lmin_noisy)
        E = np.triu(rng.standard_normal((p, p)))
        E = E + np.triu(E, 1).T
        XtX_noisy = XtX + s2 * E
        Xty_noisy = Xty + s3 * rng.standard_normal(p)
        theta = np.linalg.lstsq(XtX_noisy + lam * np.eye(p), Xty_noisy, rcond=None)[0]
        self.coef_ = theta[:-1]
        self.intercept_ = float(theta[-1]) + centre
        self.alpha_ = lam
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float) @ self.coef_ + self.intercept_
