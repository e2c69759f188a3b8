"""
A regression target in its own units: give its public range
===========================================================

A private linear model is regularised towards 0 -- its intercept too -- so where the data
carry little signal against the noise its predictions shrink towards 0.  For a target far
from 0, in its own units, that is far from every row.  Here the target is the number of
bike rentals in an hour (UCI bike sharing, shipped with skdp): 0 to 1,000, 190 on average.

``DPHuberRegressor(target_range=(0, 1000))`` clips the targets to the public range,
releases their mean with 5 % of the budget (``target_centre_``) and fits the model around
it; ``epsilon_`` covers both.  The range must be public -- a documented range or the
physical domain, never the rows' minimum and maximum.  (Shrinking towards the middle of
the range, 500, would be free but worse here than towards 0: the mean is what the model
should fall back to.)  The fit is also unit-free: the model sees the targets divided by
the range's half-width (``target_scale_``, 500 rentals), and the Huber threshold defaults
to 5 % of the range's width -- 50 rentals, the threshold the raw fit is given here.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from skdp import DPHuberRegressor
from skdp.datasets import load_demo_bike

bike = load_demo_bike()                     # shipped with skdp: no network
X, rentals = bike.data, 1000.0 * bike.target  # rentals per hour, in their own units
X_train, X_test, y_train, y_test = train_test_split(X, rentals, train_size=2000,
                                                    random_state=0)

epsilons = [0.5, 1.0, 2.0, 5.0]
scores = {"raw target": [], "target_range=(0, 1000)": []}
for eps in epsilons:
    for label, kw in [("raw target", {"huber_threshold": 50.0}),
                      ("target_range=(0, 1000)", {"target_range": (0.0, 1000.0)})]:
        r2 = []
        for seed in range(3):
            model = DPHuberRegressor(epsilon=eps, data_norm=bike.row_norm_bound,
                                     random_state=seed, **kw)
            model.fit(X_train, y_train)
            assert model.epsilon_ <= eps
            r2.append(r2_score(y_test, model.predict(X_test)))
        scores[label].append(np.mean(r2))
    print(f"epsilon {eps:>3}: raw R^2 {scores['raw target'][-1]:+.3f}, with the range "
          f"{scores['target_range=(0, 1000)'][-1]:+.3f}")

model = DPHuberRegressor(epsilon=1.0, data_norm=bike.row_norm_bound,
                         target_range=(0.0, 1000.0), random_state=0).fit(X_train, y_train)
print(f"released mean {model.target_centre_:.1f} (the rows' mean: {y_train.mean():.1f}), "
      f"targets divided by {model.target_scale_:g}; budget split {model.budget_split_}")

fig, ax = plt.subplots(figsize=(6, 3.5))
for label, values in scores.items():
    ax.plot(epsilons, values, marker="o", label=label)
ax.axhline(0.0, color="grey", lw=0.8, ls="--")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test R$^2$ (mean of 3 seeds)")
ax.set_title("2,000 hours of bike rentals, DPHuberRegressor")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# The robust regressor takes the same range.  ``DPNonconvexRegressor`` (Welsch loss; its
# default solver starts from the private Huber fit) reads ``loss_scale`` in the target's
# units and divides it by the half-width too (``"auto"``: a twentieth of the half-width,
# 25 rentals here), so the range makes it unit-free in the same way.
from skdp import DPNonconvexRegressor  # noqa: E402

for label, kw in [("raw target", {"loss_scale": 25.0}),
                  ("target_range=(0, 1000)", {"target_range": (0.0, 1000.0)})]:
    r2 = [r2_score(y_test, DPNonconvexRegressor(
        epsilon=1.0, data_norm=bike.row_norm_bound, random_state=seed, **kw).fit(
            X_train, y_train).predict(X_test)) for seed in range(3)]
    print(f"DPNonconvexRegressor, {label}: test R^2 {np.mean(r2):+.3f} at epsilon 1")
