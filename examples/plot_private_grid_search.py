"""
Private hyperparameter search: the budget GridSearchCV silently spends
=======================================================================

Tuning ``alpha`` of :class:`skdp.DPLogisticRegression` with scikit-learn's
``GridSearchCV`` looks harmless -- every fit is (ε, δ)-DP -- but the search trains
``cv x |grid| + 1`` models, each row sits in the training set of ``(cv - 1) |grid| + 1``
of them, and the candidates are compared on *exact* validation scores.  The fits alone
compose to a much larger ε, and the selection itself is not private at all.

:class:`skdp.model_selection.DPGridSearchCV` runs a private selection instead
(Papernot & Steinke 2022 repeat-and-select, noisy validation scores) and reports the
privacy of the whole procedure.  Below, on Adult census data, three ways to tune at a
total budget ε = 1 (δ = 1e-6), each evaluated on a held-out test set:

1. the anti-pattern: ``GridSearchCV`` over candidates with ε = 1 each;
2. ``GridSearchCV`` with the per-fit ε shrunk so that its fits compose to ε = 1 (still
   not private: the scores used to select are exact);
3. ``DPGridSearchCV(epsilon=1)``: the whole procedure is (1, 1e-6)-DP.

The anti-pattern looks best because it silently spends over three times the budget on
its fits (and leaks through its exact scores).  Matching the fits' budget costs
accuracy; selecting privately costs some more (fewer, noisier runs, each seen through a
noisy score) -- that is the price of the only one of the three guarantees that is true.
"ε spent" counts the fits only for ``GridSearchCV`` (its selection is not private at
all) and the whole procedure for ``DPGridSearchCV``.
"""

import math

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split

from skdp import DPLogisticRegression
from skdp.accounting import compose, gaussian_epsilon, gaussian_mu_for, get_epsilon
from skdp.datasets import load_demo_adult
from skdp.model_selection import DPGridSearchCV

EPSILON, DELTA = 1.0, 1e-6
adult = load_demo_adult()
rng = np.random.default_rng(0)
rows = rng.choice(adult.data.shape[0], 12000, replace=False)  # subsample for speed
X_train, X_test, y_train, y_test = train_test_split(
    adult.data[rows], adult.target[rows], test_size=2000, random_state=0
)
data_norm = adult.row_norm_bound  # public bound on the feature rows
grid = {"alpha": [0.004, 0.01, 0.03, 0.1]}  # above the privacy floor of every fit
cv = 3
fits_per_row = (cv - 1) * len(grid["alpha"]) + 1  # training folds of every candidate + refit

# 1. The anti-pattern: epsilon = 1 per fit.
naive = GridSearchCV(
    DPLogisticRegression(classes=[0, 1],
                         epsilon=EPSILON, delta=DELTA, data_norm=data_norm, random_state=0),
    grid, cv=cv,
).fit(X_train, y_train)
fit_event = naive.best_estimator_.dp_event_
naive_eps = get_epsilon(compose(*[fit_event] * fits_per_row), DELTA)

# 2. GridSearchCV with the per-fit budget shrunk so that the fits compose to epsilon = 1
#    (Gaussian-DP composition: mu_fit = mu_total / sqrt(fits per row)).
eps_fit = gaussian_epsilon(DELTA, gaussian_mu_for(EPSILON, DELTA) / math.sqrt(fits_per_row))
shrunk = GridSearchCV(
    DPLogisticRegression(classes=[0, 1],
                         epsilon=eps_fit, delta=DELTA, data_norm=data_norm, random_state=0),
    grid, cv=cv,
).fit(X_train, y_train)
shrunk_eps = get_epsilon(compose(*[shrunk.best_estimator_.dp_event_] * fits_per_row), DELTA)

# 3. The private search, at the same total.  The number of runs is random (that is what
#    makes the selection private), so its result varies more: mean over 3 seeds.
#    repetition_shape=2 concentrates the number of runs around its mean (fewer searches
#    that try a single candidate) for a slightly larger privacy cost of the selection.
private_scores = []
for seed in range(3):
    private = DPGridSearchCV(
        DPLogisticRegression(classes=[0, 1],
                             data_norm=data_norm), grid, epsilon=EPSILON, delta=DELTA,
        n_repetitions=6, repetition_shape=2.0, random_state=seed,
    ).fit(X_train, y_train)
    private_scores.append(private.score(X_test, y_test))
    print(f"DPGridSearchCV seed {seed}: selected {private.best_params_}, test accuracy "
          f"{private_scores[-1]:.4f}, epsilon_ = {private.epsilon_:.4f}")

rows_out = [
    ("GridSearchCV, ε=1 per fit", naive.score(X_test, y_test), naive_eps,
     "not private (exact scores)"),
    (f"GridSearchCV, ε={eps_fit:.2f} per fit", shrunk.score(X_test, y_test), shrunk_eps,
     "not private (exact scores)"),
    ("DPGridSearchCV(ε=1), 3 seeds", np.mean(private_scores), private.epsilon_,
     "private (ε covers all)"),
]
print(f"{'procedure':<32} {'test acc':>8}  {'ε spent':>8}  selection")
for name, acc, eps, sel in rows_out:
    print(f"{name:<32} {acc:8.4f}  {eps:8.2f}  {sel}")
print("DPGridSearchCV budget split:", {
    k: (float(f"{v:.4g}") if isinstance(v, float) else v)
    for k, v in private.budget_split_.items()
})

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
names = ["GridSearchCV\nε=1 per fit", "GridSearchCV\nshrunk per fit", "DPGridSearchCV\nε=1 total"]
colors = ["tab:red", "tab:orange", "tab:green"]
ax1.bar(names, [r[1] for r in rows_out], color=colors)
ax1.plot([2, 2, 2], private_scores, "k.", label="DPGridSearchCV seeds")
ax1.set_ylim(0.6, 0.9)
ax1.axhline(max(np.mean(y_test), 1 - np.mean(y_test)), color="gray", ls=":",
            label="majority class")
ax1.legend(fontsize=7)
ax1.set_ylabel("test accuracy")
ax2.bar(names, [r[2] for r in rows_out], color=colors)
ax2.axhline(EPSILON, color="k", ls="--", label="budget ε = 1")
ax2.set_ylabel("ε spent (GridSearchCV: fits only)")
ax2.legend()
for ax in (ax1, ax2):
    ax.tick_params(axis="x", labelsize=8)
fig.suptitle("Adult: tuning alpha under a total budget (δ = 1e-6); "
             "only DPGridSearchCV selects privately", fontsize=9)
fig.tight_layout()
plt.show()
