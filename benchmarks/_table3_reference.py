"""Non-private reference solutions and the objective, in plain numpy, for ``table3.py``.

The excess risk of Table 3 is ``F(w_priv) - F(w_hat)`` with

    F(w) = (1/n) sum_i l(x_i . w, y_i) + (mu/2) ||w||^2

on the clipped design with the intercept as a regularised constant column (exactly the
objective of :mod:`skdp._solvers`).  Everything here is independent of the ``skdp`` kernels
(only the clipping/augmentation is shared), so the benchmark checks the solvers rather than
trusting them.

``w_hat`` is found by a damped Newton method (exact Hessian ``X^T diag(l'') X / n + mu I``,
backtracking line search on ``F``), started from scipy's L-BFGS-B, to ``||grad F|| <= 1e-12``
(or until no further decrease is representable).  For ``mu = 0`` the minimiser of the
logistic risk need not exist (quasi-separated rows: rare one-hot levels whose rows all have
one label); then we follow the path of minimisers of ``F_0 + (lam/2)||w||^2`` for
``lam = 1e-4, 1e-5, ..., 1e-12`` and report ``inf F_0`` as the smallest ``F_0`` seen on the
path (plus the F_0 decrease over the last decade as its uncertainty), and the norm of the
first path point whose ``F_0`` is within ``1e-6`` of that infimum as "``||w_hat||``".
"""


import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

LOGISTIC = "logistic"
HUBER = "huber"


def loss_terms(z, y, kind, h=1.0):
    """Per-row loss, first and second derivative in the margin ``z``."""
    if kind == LOGISTIC:
        m = -y * z
        val = np.logaddexp(0.0, m)
        s = expit(m)  # sigmoid(-y z)
        return val, -y * s, s * (1.0 - s)
    r = z - y
    a = np.abs(r)
    inside = a <= h
    val = np.where(inside, 0.5 * r * r, h * (a - 0.5 * h))
    return val, np.clip(r, -h, h), inside.astype(float)


def objective(w, X, y, kind, mu, h=1.0):
    """``F(w)`` (float)."""
    val, _, _ = loss_terms(X @ w, y, kind, h)
    return float(np.mean(val) + 0.5 * mu * (w @ w))


def objective_many(W, X, y, kind, mu, h=1.0, chunk=32):
    """``F`` at every column of ``W`` (shape ``(p, R)``), in chunks of columns."""
    out = np.empty(W.shape[1])
    for s in range(0, W.shape[1], chunk):
        Wc = W[:, s:s + chunk]
        val, _, _ = loss_terms(X @ Wc, y[:, None], kind, h)
        out[s:s + chunk] = val.mean(axis=0) + 0.5 * mu * np.einsum("ij,ij->j", Wc, Wc)
    return out


def value_grad_hess(w, X, y, kind, mu, h=1.0, hess=True):
    n = X.shape[0]
    val, d1, d2 = loss_terms(X @ w, y, kind, h)
    f = float(np.mean(val) + 0.5 * mu * (w @ w))
    g = X.T @ d1 / n + mu * w
    if not hess:
        return f, g
    H = (X * d2[:, None]).T @ X / n
    H[np.diag_indices_from(H)] += mu
    return f, g, H


def newton(X, y, kind, mu, h=1.0, w0=None, gtol=1e-12, max_iter=200):
    """Damped Newton from ``w0``; returns ``(w, info)``."""
    p = X.shape[1]
    w = np.zeros(p) if w0 is None else w0.copy()
    f, g, H = value_grad_hess(w, X, y, kind, mu, h)
    it = 0
    for it in range(1, max_iter + 1):
        gn = float(np.linalg.norm(g))
        if gn <= gtol:
            break
        # a tiny ridge keeps the Newton system solvable (Huber with few rows in the zone)
        lam = 1e-14 * max(1.0, float(np.trace(H)) / p)
        try:
            step = np.linalg.solve(H + lam * np.eye(p), g)
        except np.linalg.LinAlgError:
            step = g.copy()
        t, decreased = 1.0, False
        for _ in range(60):
            w_new = w - t * step
            f_new = objective(w_new, X, y, kind, mu, h)
            if f_new <= f - 1e-4 * t * float(g @ step) or (f_new <= f and t < 1e-6):
                decreased = True
                break
            t *= 0.5
        if not decreased:
            break  # no representable decrease left
        w = w_new
        f, g, H = value_grad_hess(w, X, y, kind, mu, h)
    f, g = value_grad_hess(w, X, y, kind, mu, h, hess=False)
    return w, {"F": f, "grad_norm": float(np.linalg.norm(g)), "newton_iter": it}


def lbfgs(X, y, kind, mu, h=1.0, w0=None, gtol=1e-12, max_iter=50_000):
    p = X.shape[1]
    res = minimize(
        lambda w: value_grad_hess(w, X, y, kind, mu, h, hess=False),
        np.zeros(p) if w0 is None else w0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "maxfun": 2 * max_iter, "gtol": gtol, "ftol": 0.0,
                 "maxcor": 30},
    )
    return res.x, int(res.nit)


def reference_solution(X, y, kind, mu, h=1.0):
    """Precise non-private ``w_hat``; returns ``(w_hat, info)`` (``info["F"]`` = F(w_hat)).

    For ``mu > 0`` (and for Huber with ``mu = 0``): L-BFGS-B (gtol 1e-12) then Newton.
    For logistic with ``mu = 0``: the continuation path described in the module docstring.
    """
    if mu > 0 or kind == HUBER:
        w, nit = lbfgs(X, y, kind, mu, h)
        w, info = newton(X, y, kind, mu, h, w0=w)
        info.update(method="L-BFGS-B (gtol 1e-12) + Newton", lbfgs_iter=nit,
                    norm=float(np.linalg.norm(w)), attained=True)
        return w, info
    path = []
    w = None
    for k in range(4, 13):
        lam = 10.0 ** -k
        if w is None:
            w, _ = lbfgs(X, y, kind, lam, h)
        w, inf = newton(X, y, kind, lam, h, w0=w)
        f0, g0 = value_grad_hess(w, X, y, kind, 0.0, h, hess=False)
        path.append({"lam": lam, "F0": f0, "norm": float(np.linalg.norm(w)),
                     "grad0": float(np.linalg.norm(g0)), "w": w.copy()})
    # finally plain Newton on F_0 itself from the last path point
    w0, info0 = newton(X, y, kind, 0.0, h, w0=path[-1]["w"])
    path.append({"lam": 0.0, "F0": info0["F"], "norm": float(np.linalg.norm(w0)),
                 "grad0": info0["grad_norm"], "w": w0})
    f_inf = min(q["F0"] for q in path)
    # F_0 decrease over the last decade of lam: an estimate of how far the path still is
    # from the infimum (0 when the minimiser exists)
    uncert = max(0.0, path[-3]["F0"] - f_inf)
    first = next(q for q in path if q["F0"] - f_inf <= 1e-6)
    best = min(path, key=lambda q: q["F0"])
    # The minimiser exists iff the path converges: ||w_lam|| stops growing.  (A tiny
    # gradient alone proves nothing: along a separating direction it decays like e^-||w||.)
    norms = [q["norm"] for q in path[-4:-1]]  # lam = 1e-10, 1e-11, 1e-12
    attained = bool(info0["grad_norm"] <= 1e-9
                    and (max(norms) - min(norms)) <= 1e-3 * max(norms))
    info = {
        "F": f_inf,
        "F_uncertainty": uncert,
        "grad_norm": best["grad0"],
        "norm": first["norm"],
        "norm_at_best": best["norm"],
        "attained": bool(attained),
        "method": ("continuation lam = 1e-4..1e-12 (Newton at each) then Newton on F_0; "
                   "F = smallest F_0 on the path"),
        "path": [{k: v for k, v in q.items() if k != "w"} for q in path],
    }
    return best["w"] if attained else first["w"], info
