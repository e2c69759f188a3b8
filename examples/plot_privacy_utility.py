"""
Privacy–utility curve on census data
====================================

Accuracy of :class:`skdp.DPLogisticRegression` on the Adult census-income data as the
privacy budget epsilon grows, next to non-private scikit-learn on the same features.

Everything that touches the data is either private or public: the features are built with
public constants (:func:`skdp.datasets.load_demo_adult`), so ``data_norm`` — the bound on
each feature row's norm — is known *before* seeing the data; ``solver`` and ``alpha`` are
left at ``"auto"`` (public rules of n, p, epsilon and the bound).  Each point is the mean over 5 noise draws; the
band shows their spread.  At epsilon >= 1 the private model is within about a point of
the non-private one.
"""


import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import DPLogisticRegression
from skdp.datasets import load_demo_adult

adult = load_demo_adult()
X_train, X_test, y_train, y_test = train_test_split(
    adult.data, adult.target, test_size=0.2, random_state=0
)
data_norm = adult.row_norm_bound  # public bound on the feature rows

epsilons = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0]
means, stds = [], []
for eps in epsilons:
    scores = [
        DPLogisticRegression(classes=[0, 1],
            epsilon=eps, delta=1e-6, data_norm=data_norm, random_state=seed,
        ).fit(X_train, y_train).score(X_test, y_test)
        for seed in range(5)
    ]
    means.append(np.mean(scores))
    stds.append(np.std(scores))
    print(f"epsilon={eps:<5} accuracy={means[-1]:.4f} ± {stds[-1]:.4f}")

baseline = LogisticRegression(max_iter=1000).fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test), 1 - np.mean(y_test))

fig, ax = plt.subplots(figsize=(6, 4))
means, stds = np.array(means), np.array(stds)
ax.plot(epsilons, means, "o-", label="DPLogisticRegression (δ = 1e-6)")
ax.fill_between(epsilons, means - stds, means + stds, alpha=0.2)
ax.axhline(baseline, color="k", ls="--", label="non-private scikit-learn")
ax.axhline(majority, color="gray", ls=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("Adult census income: privacy vs accuracy")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
