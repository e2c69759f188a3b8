"""Non-private inner optimisers used by the output-perturbation solver.

* :func:`gradient_descent` — exactly ``n_steps`` full-batch steps from a data-independent
  start, optional projection onto a public ball.  Its sensitivity has closed forms.
* :func:`certified_minimize` — L-BFGS run until a *rigorous* certificate
  ``||grad F(w)|| + rounding allowance <= mu * tau`` holds, which implies
  ``||w - w_hat|| <= tau`` by mu-strong convexity (``||grad F(w)|| >= mu ||w - w_hat||``).
  If the certificate cannot be reached it falls back to enough gradient-descent steps from
  zero to guarantee ``||w - w_hat|| <= tau`` by contraction; either way the returned point
  is within ``tau`` of the exact minimiser, which is all the privacy proof uses.
"""

import math

import numpy as np
from scipy.optimize import minimize


def gradient_descent(objective, step, n_steps, radius=0.0, W0=None):
    """Run ``n_steps`` of ``W <- Pi_radius(W - step * grad F(W))`` from ``W0`` (default 0)."""
    W = np.zeros(objective.shape) if W0 is None else W0.copy()
    for _ in range(int(n_steps)):
        _, grad = objective.value_grad(W)
        W -= step * grad
        if radius > 0.0:
            nrm = np.linalg.norm(W)
            if nrm > radius:
                W *= radius / nrm
    return W


GTOL_ABSOLUTE = 1e-10


def certified_minimize(objective, mu, tau, smoothness, coef_bound, max_iter):
    """Return ``(W, info)`` with ``||W - argmin F|| <= tau`` guaranteed (mu > 0).

    Parameters
    ----------
    objective : Objective
    mu : float
        Strong-convexity modulus of F (the L2 strength ``alpha``).
    tau : float
        Required distance to the exact minimiser.
    smoothness : float
        ``beta_l``, smoothness of the unregularised loss (for the fallback step size).
    coef_bound : float
        Public bound ``D >= ||argmin F||`` valid for every dataset (fallback iterations).
    max_iter : int
        Iteration cap of L-BFGS.

    L-BFGS is asked for ``||grad||_inf <= min(mu tau/(2 sqrt(p)), 1e-10 C)``: the first term
    makes the certificate pass with room for the rounding allowance, the second keeps small
    problems accurate far beyond the noise (utility only; privacy rests on the certificate).
    """
    p = objective.shape[0] * objective.shape[1]
    target = mu * tau
    cache = {}

    def fun(w):
        value, grad = objective.value_grad_flat(w)
        cache["w"], cache["grad"] = w.copy(), grad
        return value, grad

    res = minimize(
        fun,
        np.zeros(p),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": int(max_iter), "ftol": 0.0,
                 "gtol": min(0.5 * target / math.sqrt(p), GTOL_ABSOLUTE * objective.data_norm),
                 "maxcor": 20},
    )
    w = res.x
    if "w" in cache and np.array_equal(cache["w"], w):
        grad = cache["grad"]
    else:
        _, grad = fun(w)
    W = w.reshape(objective.shape)
    margin = float(np.linalg.norm(grad)) + objective.rounding_allowance(W)
    info = {"inner_solver": "lbfgs", "n_iter": int(res.nit), "certificate": margin}
    if margin <= target:
        return W, info
    # Fallback: GD from 0 with step 2/(beta_l + 2 mu) contracts ||W - W_hat|| by
    # (1 - step*mu) per step (F is mu-SC and (beta_l + mu)-smooth), and ||W_hat|| <= D.
    step = 2.0 / (smoothness + 2.0 * mu)
    rate = 1.0 - step * mu
    n_steps = max(1, math.ceil(math.log(coef_bound / tau) / -math.log(rate)))
    W = gradient_descent(objective, step, n_steps)
    info.update(inner_solver="gd_fallback", n_iter=info["n_iter"] + n_steps, certificate=None)
    return W, info
