"""
Choosing ``data_norm``: clipping, noise, and the leak without a public bound
============================================================================

Every DP estimator in skdp needs ``data_norm``, a bound on the Euclidean norm of each
feature row (the intercept column is appended afterwards; the row bound the noise scales
with is ``sqrt(data_norm**2 + intercept_scaling**2)``).  Rows are *clipped* to it before anything else runs, and the
noise is proportional to it.  This example shows on the Adult census data

1. what a bound that is **too small** costs (clipping distorts the rows: bias) and what a
   bound that is **too large** costs (more noise), and
2. what goes wrong with ``data_norm=None``: the bound is read from the private data, so
   one person's row decides the noise — the fit warns with
   :class:`~skdp.exceptions.PrivacyLeakWarning`, reports ``privacy_guaranteed_ = False``,
   and a single outlier both reveals itself and destroys the model.

The right choice is the smallest bound you can justify *without looking at the data*:
:func:`skdp.datasets.load_demo_adult` builds its features with public constants, so every
row has norm at most ``sqrt(13)`` by construction: ``data_norm = sqrt(13)``.
"""

import warnings

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullLocator
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import DPLogisticRegression
from skdp.datasets import load_demo_adult
from skdp.exceptions import PrivacyLeakWarning

adult = load_demo_adult()
X_train, X_test, y_train, y_test = train_test_split(
    adult.data, adult.target, test_size=0.2, random_state=0
)
public_norm = adult.row_norm_bound  # the feature rows (the intercept column comes after)
print(f"public bound from the preprocessing: data_norm = {public_norm:.2f}")


def dp_accuracy(epsilon, data_norm, seeds=(0, 1), X=X_train, y=y_train):
    """Mean and spread of the test accuracy over a few noise draws."""
    scores = []
    for seed in seeds:
        clf = DPLogisticRegression(classes=[0, 1],
            epsilon=epsilon, delta=1e-6, data_norm=data_norm, random_state=seed,
        ).fit(X, y)
        scores.append(clf.score(X_test, y_test))
    return np.mean(scores), np.std(scores)


# %%
# Too small, too large
# --------------------
# Sweep ``data_norm`` from well below the public bound to ten times above it.  Below the
# bound, clipping shrinks the rows (the intercept column is kept exactly), which biases the
# model; above it, the noise, which is calibrated to the bound, grows with it (and so does
# the regularisation ``alpha="auto"`` needs).  The share of clipped training rows is computed on the private data
# *for illustration only* — choosing the bound from it would leak.

norms = np.sqrt(np.sum(X_train**2, axis=1) + 1.0)
grid = [1.25, 2.0, 3.0, public_norm, 7.5, 15.0, 37.5]
curves = {}
for eps in (0.1, 1.0):
    curves[eps] = np.array([dp_accuracy(eps, c) for c in grid])
    for c, (m, s) in zip(grid, curves[eps]):
        print(f"epsilon={eps:<4} data_norm={c:6.2f}  accuracy={m:.3f} ± {s:.3f}")
for c in grid:
    print(f"data_norm={c:6.2f}: {np.mean(norms > c):6.1%} of the training rows are clipped")

baseline = LogisticRegression(max_iter=1000).fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test), 1 - np.mean(y_test))

# %%
# ``data_norm=None``: one row decides the noise
# ---------------------------------------------
# Take two neighbouring datasets: the training set, and the same set with the first row
# replaced by a scaled-up copy of itself (an outlier, or a row planted by an attacker).
# Without a public bound, the noise scale is a function of the largest row norm, so it
# differs between the two datasets: anyone who sees ``noise_scale_`` (or the spread of
# the coefficients) learns which dataset was used — no privacy at all for that row — and
# the outlier inflates the noise for everyone.  With the public bound the outlier is
# clipped, and the noise scale is the same on both datasets.

factors = [1, 10, 100, 1000]
leaky_acc, public_acc = [], []
for k in factors:
    X_nb = X_train.copy()
    X_nb[0] *= k
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        leaky = DPLogisticRegression(classes=[0, 1], epsilon=1.0, delta=1e-6,
                                     random_state=0).fit(X_nb, y_train)
    assert any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    public = DPLogisticRegression(classes=[0, 1],
        epsilon=1.0, delta=1e-6, data_norm=public_norm, random_state=0
    ).fit(X_nb, y_train)
    leaky_acc.append(leaky.score(X_test, y_test))
    public_acc.append(public.score(X_test, y_test))
    print(
        f"row 0 scaled x{k:<5} data_norm=None: noise_scale_={leaky.noise_scale_:.4f} "
        f"privacy_guaranteed_={leaky.privacy_guaranteed_}  |  public bound: "
        f"noise_scale_={public.noise_scale_:.4f} "
        f"privacy_guaranteed_={public.privacy_guaranteed_}"
    )
print("data_norm parameter after the leaky fit:", leaky.data_norm, "(never written back)")

# %%
# Plots
# -----

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5.2))
for eps, marker in ((0.1, "s"), (1.0, "o")):
    m, s = curves[eps][:, 0], curves[eps][:, 1]
    ax1.plot(grid, m, marker + "-", label=f"DP, epsilon = {eps}")
    ax1.fill_between(grid, m - s, m + s, alpha=0.2)
ax1.axvline(public_norm, color="C2", ls="-.", label="public bound sqrt(13 + 1)")
ax1.axhline(baseline, color="k", ls="--", label="non-private scikit-learn")
ax1.axhline(majority, color="gray", ls=":", label="majority class")
ax1.set_xscale("log")
ax1.xaxis.set_major_locator(FixedLocator(grid))
ax1.xaxis.set_minor_locator(NullLocator())
ax1.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
ax1.set_xlabel("data_norm (log scale)")
ax1.set_ylabel("test accuracy")
ax1.set_ylim(0.45, 0.88)
ax1.set_title("Too small: clipping bias.  Too large: noise.")
ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)

x = np.arange(len(factors))
ax2.bar(x - 0.2, public_acc, 0.4, label="public data_norm (outlier clipped)")
ax2.bar(x + 0.2, leaky_acc, 0.4, label="data_norm=None (PrivacyLeakWarning)")
ax2.axhline(baseline, color="k", ls="--", label="non-private scikit-learn")
ax2.axhline(majority, color="gray", ls=":", label="majority class")
ax2.set_xticks(x, [f"x{k}" for k in factors])
ax2.set_xlabel("norm of one training row, scaled by")
ax2.set_ylabel("test accuracy (epsilon = 1)")
ax2.set_ylim(0.4, 0.88)
ax2.set_title("One outlier sets the noise without a public bound")
ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
fig.tight_layout()
plt.show()
