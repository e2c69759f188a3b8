"""
Private robust regression with a nonconvex loss
===============================================

A line fitted to data of which 20 % are gross outliers (all on one side).  Least squares
is dragged towards the outliers; a convex Huber fit is pulled less but still biased;
:class:`skdp.DPNonconvexRegressor` with the redescending Welsch loss gives the outliers
(almost) zero weight and recovers the line -- privately, at epsilon = 1.

The private fit runs the single-pass SpiderBoost of Liu & Talwar (2025): it needs a
public bound on the rows (``data_norm``: here the feature lies in [-1, 1], so with the
intercept column ``||[x, 1]|| <= sqrt(2)``) and a public loss scale; the target accuracy
``gamma_`` follows from ``n``, epsilon and those bounds.  The right panel shows the
objective along the line between the two minima ``+-w*`` of a planted problem, and where
the private runs from its saddle point ``0`` end up: every seed escapes the saddle.
"""


import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import HuberRegressor, LinearRegression

from skdp import DPHuberRegressor, DPNonconvexRegressor

rng = np.random.default_rng(0)
n = 100_000
x = rng.uniform(-1, 1, n)
y = 2.0 * x + 0.5 + 0.2 * rng.normal(size=n)
bad = rng.random(n) < 0.2
y[bad] = rng.uniform(4, 8, bad.sum())
X = x[:, None]
data_norm = 1.0  # public: |x| <= 1 (the intercept column is added after clipping)

ols = LinearRegression().fit(X, y)
huber = HuberRegressor().fit(X[:20_000], y[:20_000])
dp_huber = DPHuberRegressor(epsilon=1.0, data_norm=data_norm, huber_threshold=0.5,
                            random_state=0).fit(X, y)
dp_welsch = DPNonconvexRegressor(epsilon=1.0, data_norm=data_norm, loss="welsch",
                                 loss_scale=0.5, random_state=0).fit(X, y)

fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
sub = rng.choice(n, 3000, replace=False)
ax.scatter(x[sub], y[sub], s=3, c=np.where(bad[sub], "tab:red", "0.6"), alpha=0.5)
grid = np.linspace(-1, 1, 2)[:, None]
for model, label, style in [
    (ols, "least squares (not private)", "--"),
    (huber, "Huber (not private)", ":"),
    (dp_huber, "DPHuberRegressor, eps = 1", "-."),
    (dp_welsch, "DPNonconvexRegressor (Welsch), eps = 1", "-"),
]:
    ax.plot(grid[:, 0], model.predict(grid), style, lw=2, label=label)
ax.plot(grid[:, 0], 2.0 * grid[:, 0] + 0.5, "k", lw=0.8, label="true line")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title("20 % gross outliers (red)")
ax.legend(fontsize=8, loc="upper left")

# A planted saddle: y = s a.w* + noise with random signs s; 0 is a saddle of the
# Welsch objective and +-w* are its minima.
th = rng.uniform(0, 2 * np.pi, n)
A = np.c_[np.cos(th), np.sin(th)]
w_star = np.array([1.5, 0.0])
yp = rng.choice([-1.0, 1.0], n) * (A @ w_star) + 0.05 * rng.normal(size=n)


def welsch_objective(w):
    r = A @ w - yp
    return np.mean(0.5 * (1 - np.exp(-r * r)))


ts = np.linspace(-1.3, 1.3, 61)
ax2.plot(ts, [welsch_objective(t * w_star) for t in ts], "k", lw=1)
ends = []
for seed in range(6):
    fit = DPNonconvexRegressor(epsilon=1.0, data_norm=1.0, fit_intercept=False,
                               selection="last", random_state=seed).fit(A, yp)
    ends.append((fit.coef_ @ w_star / (w_star @ w_star), welsch_objective(fit.coef_)))
ends = np.array(ends)
ax2.plot(ends[:, 0], ends[:, 1], "o", color="tab:blue", label="private fits (6 seeds)")
ax2.plot([0], [welsch_objective(np.zeros(2))], "x", color="tab:red", ms=10,
         label="start: saddle point 0")
ax2.set_xlabel("position along the line between -w* and w*")
ax2.set_ylabel("Welsch objective")
ax2.set_title("escaping a saddle point, eps = 1")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

for label, model in [("least squares", ols), ("Huber", huber), ("DP Huber", dp_huber),
                     ("DP Welsch", dp_welsch)]:
    print(f"{label:>13}: slope {model.coef_[0]:.2f} (true 2.0), "
          f"intercept {model.intercept_:.2f} (true 0.5)")
print(f"DP Welsch: gamma_ = {dp_welsch.gamma_:.3f}, {dp_welsch.n_escapes_} escape phases")
