"""
Weak signal: the private model falls back to the base rate instead of guessing
==============================================================================

When the features say little about the label, a private logistic model is mostly noise:
its accuracy can land *below* the trivial rule "always predict the majority class".
Binary :class:`~skdp.DPLogisticRegression` fits check this privately
(``base_rate_fallback="auto"``, included in ``epsilon_``): one noisy count of the rows the
released model classifies right and of the positives.  If the majority class does better,
the model keeps its ranking (same ROC AUC) but predicts the majority class, with
probabilities at the private base rate.

Here the labels are independent of the features (20 % positive).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score

from skdp import DPLogisticRegression

rng = np.random.default_rng(0)
n, p = 3000, 20
X = rng.uniform(0.0, 1.0, (2 * n, p)) / np.sqrt(p)   # rows of norm <= 1: data_norm=1
y = (rng.random(2 * n) < 0.2).astype(int)
X_train, X_test, y_train, y_test = X[:n], X[n:], y[:n], y[n:]
majority = max(y_test.mean(), 1 - y_test.mean())

results = {}
for setting in ("auto", False):
    acc, fell = [], 0
    for seed in range(10):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=seed, base_rate_fallback=setting)
        clf.fit(X_train, y_train)
        acc.append(clf.score(X_test, y_test))
        fell += clf.base_rate_fallback_
    results[setting] = acc
    print(f"base_rate_fallback={setting!r}: accuracy {np.mean(acc):.3f} "
          f"(majority {majority:.3f}), fell back in {fell}/10 fits, "
          f"epsilon_ = {clf.epsilon_:.3f}, last AUC "
          f"{roc_auc_score(y_test, clf.decision_function(X_test)):.3f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.boxplot([results[False], results["auto"]])
ax.set_xticks([1, 2], ["no check", "base-rate check"])
ax.axhline(majority, ls="--", c="grey", label="majority class")
ax.set_ylabel("test accuracy (10 noise seeds)")
ax.legend()
fig.tight_layout()
plt.show()
