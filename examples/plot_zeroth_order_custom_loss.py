"""
Private zeroth-order fitting of a custom loss
=============================================

:class:`skdp.DPNonconvexRegressor` with ``solver="zeroth_order"`` (Zhang, Tran &
Cutkosky 2024) never differentiates the loss: it evaluates it at two points per random
direction, so any loss that is only *Lipschitz* -- nonsmooth, nonconvex, capped -- can be
fitted privately, including a loss you write yourself.  It makes one pass over the data
and returns an approximately Goldstein-stationary point of the smoothed objective.

A user loss is a numba-compilable function ``loss(z, y) -> float`` of the prediction
``z = x.w + b`` and the target, given with a declared Lipschitz constant in ``z``
(``loss_lipschitz``).  **Privacy does not rest on that declaration**: inside the kernel
every finite difference of the loss is clipped to the bound a ``loss_lipschitz``-Lipschitz
loss would satisfy (a non-finite difference counts as 0), and every row's estimate is
clipped to the norm the sensitivity proof uses.  A wrong constant, or a loss returning
NaN, can bias the fit but cannot raise the sensitivity.  The constant also enters the
(public) choice of the run's length, so a loose one costs accuracy.

Here: a line in 3 dimensions (rows in the unit ball from
:func:`skdp.datasets.make_private_regression`), 200,000 training rows of which 20 % have
their target replaced by uniform noise on ``[-3, 3]``.  The zeroth-order solver needs
many rows (its noise term grows like ``p^{3/2}``); at this size it learns at
epsilon = 0.5.  Compared, at the same public bounds (``data_norm = sqrt(2)``,
``y_bound = 3``):

* the default loss of the solver, the capped absolute loss ``min(|r|, 0.5)``;
* a user loss, the capped squared loss ``min(r^2, 0.25)`` (Lipschitz constant 1 in ``z``
  on its uncapped part ``|r| <= 0.5``), and the same function built in
  (``loss="truncated_squared"``);
* the naive private zeroth-order baseline ``solver="zeroth_order_naive"`` (fresh rows and
  fresh noise every round), on the default loss;
* first-order private SGD (``solver="dpsgd"``) on the built-in capped squared loss,
  through its subgradient (a callable loss is only *evaluated*, so ``dpsgd`` cannot take
  it).

The score is the RMSE of the predictions against the noise-free target ``x.w`` on held-out
rows (predicting 0 everywhere scores about 0.45).
"""

import math
import time

import matplotlib.pyplot as plt
import numba
import numpy as np

from skdp import DPNonconvexRegressor
from skdp.datasets import make_private_regression

n = 200_000
X, y, w_true = make_private_regression(
    n_samples=n + 20_000, n_features=3, data_norm=1.0, noise=0.05, coef=True, random_state=0
)
rng = np.random.default_rng(0)
X_train, y_train = X[:n], y[:n].copy()
bad = rng.random(n) < 0.2
y_train[bad] = rng.uniform(-3.0, 3.0, bad.sum())  # gross errors
X_test = X[n:]
f_test = X_test @ w_true


def test_rmse(model):
    return float(np.sqrt(np.mean((model.predict(X_test) - f_test) ** 2)))


@numba.njit
def capped_squared(z, y):
    """User loss: min((z - y)^2, 0.25), 1-Lipschitz in z (|d/dz| = 2|r| <= 1 below the cap)."""
    r = z - y
    return min(r * r, 0.25)


public = dict(data_norm=math.sqrt(2.0), y_bound=3.0)

# %%
# The first fit with a user loss compiles it
# ------------------------------------------
# The cached kernels never take a function argument, so a user loss is compiled into its
# own uncached copy of the kernels at its first fit; later fits reuse it.

for attempt in ("first fit (compiles)", "second fit"):
    start = time.perf_counter()
    DPNonconvexRegressor(epsilon=1.0, solver="zeroth_order", loss=capped_squared,
                         loss_lipschitz=1.0, random_state=0, **public).fit(X_train, y_train)
    print(f"user loss, {attempt}: {time.perf_counter() - start:.1f} s")

# %%
# Test error against epsilon
# --------------------------
# Each point is the mean over 2 noise draws.  ``dpsgd`` runs here as noisy full-batch
# gradient descent (``batch_size = n``, sampling rate 1, 20 steps), projected on the
# public ball ``||w|| <= 3``; Poisson batches of 2% or 10% of the rows are at least as
# accurate, but their noise calibration (PLD accounting of the subsampled steps) takes
# seconds per epsilon here.

methods = {
    "zeroth_order, capped absolute (default)": dict(solver="zeroth_order", loss_scale=0.5),
    "zeroth_order, user capped squared": dict(solver="zeroth_order", loss=capped_squared,
                                              loss_lipschitz=1.0),
    "zeroth_order, built-in capped squared": dict(solver="zeroth_order",
                                                  loss="truncated_squared", loss_scale=0.5),
    "zeroth_order_naive, capped absolute": dict(solver="zeroth_order_naive",
                                                loss="capped_absolute", loss_scale=0.5),
    "dpsgd, built-in capped squared": dict(solver="dpsgd", loss="truncated_squared",
                                           loss_scale=0.5, max_coef_norm=3.0,
                                           batch_size=n, n_steps=20),
}
epsilons = [0.5, 1.0, 2.0, 4.0]
curves = {name: [] for name in methods}
for eps in epsilons:
    for name, kw in methods.items():
        curves[name].append(np.mean([
            test_rmse(DPNonconvexRegressor(epsilon=eps, random_state=seed, **public, **kw)
                      .fit(X_train, y_train))
            for seed in range(2)
        ]))

print("test RMSE to the noise-free target (mean of 2 draws)")
print(f"{'epsilon':>40} | " + " | ".join(f"{eps:>6}" for eps in epsilons))
for name in methods:
    print(f"{name:>40} | " + " | ".join(f"{v:>6.3f}" for v in curves[name]))

fig, ax = plt.subplots(figsize=(6.5, 4))
for (name, values), marker in zip(curves.items(), "os^vd"):
    ax.plot(epsilons, values, marker + "-", label=name)
ax.axhline(float(np.sqrt(np.mean(f_test**2))), color="gray", ls=":", label="predict 0")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xticks(epsilons, [str(eps) for eps in epsilons])
ax.minorticks_off()
ax.set_xlabel("epsilon (delta = 1e-6)")
ax.set_ylabel("test RMSE to the noise-free target")
ax.set_title("n = 200,000, 3 features, 20 % gross errors")
ax.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %%
# With the same loss (capped absolute), the variance-reduced, tree-noised zeroth-order
# solver is well ahead of the naive one (fresh rows and fresh noise every round), most of
# all at small epsilon.  When a subgradient is available, first-order ``dpsgd`` on the
# same loss is much more accurate per row at this size: the zeroth-order method is for
# losses that are only available as a function (or have no useful subgradient), and its
# guarantee is Goldstein stationarity for any Lipschitz loss, not speed.  The user loss
# computes the same values as the built-in ``truncated_squared`` but fits worse: for a
# callable the solver cannot know ``sup_y loss(0, y)``, so it plans the run with the
# looser public value ``loss_lipschitz * y_bound`` (3 instead of 0.25).
