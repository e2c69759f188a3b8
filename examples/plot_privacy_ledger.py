"""
The budget a grid search really spends
======================================

``GridSearchCV`` fits its estimator once per candidate and fold, plus a final refit.  Every
one of those fits reads the private data, so the search as a whole spends the
*composition* of all of them -- not the epsilon written on the estimator.  The fold
estimators are thrown away, so nothing on the fitted search shows it.

A :class:`skdp.accounting.PrivacyLedger` passed as ``privacy_ledger`` is shared by every
clone the search makes (also in joblib or Dask worker processes) and records every fit.
Below, a search over 3 values of ``alpha`` with 3 folds (10 fits at epsilon = 0.5 each)
spends epsilon ~ 1.7 at delta = 1e-6 -- about 3.5 times what one fit costs.  With a budget
of epsilon = 1.2 the ledger stops the search with
:class:`~skdp.exceptions.BudgetExceededError` *before* the fit that would overspend reads
the data.

The ledger counts fits; the validation scores a plain ``GridSearchCV`` computes on held-out
private rows are not DP (:meth:`~skdp.accounting.PrivacyLedger.attach` warns about them).
"""


import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV

from skdp import DPLogisticRegression
from skdp.accounting import PrivacyLedger, compose, get_epsilon
from skdp.datasets import load_demo_adult
from skdp.exceptions import BudgetExceededError

adult = load_demo_adult()
X, y = adult.data[:8000], adult.target[:8000]
data_norm = adult.row_norm_bound  # public bound on the feature rows
DELTA = 1e-6

estimator = DPLogisticRegression(classes=[0, 1],
                                 epsilon=0.5, delta=DELTA, data_norm=data_norm, random_state=0)
grid = {"alpha": [0.01, 0.03, 0.1]}

# 1. How much does the whole search spend?
with PrivacyLedger(epsilon=None, delta=DELTA) as ledger:
    search = GridSearchCV(estimator.set_params(privacy_ledger=ledger), grid, cv=3)
    search.fit(X, y)
    print(ledger.summary())
    events = [entry.event for entry in ledger.entries()]
    cumulative = [get_epsilon(compose(*events[: k + 1]), DELTA) for k in range(len(events))]
    spent = ledger.epsilon_spent()
print(f"best alpha {search.best_params_['alpha']}: one fit claims epsilon = 0.5, "
      f"the search spent epsilon = {spent:.2f} over {len(events)} fits")

# 2. A budget stops the search before it overspends.
with PrivacyLedger(epsilon=1.2, delta=DELTA) as ledger:
    search = GridSearchCV(estimator.set_params(privacy_ledger=ledger), grid, cv=3,
                          error_score="raise")
    try:
        search.fit(X, y)
    except BudgetExceededError as exc:
        print(f"stopped after {len(ledger)} fits: {exc}")
    n_allowed, spent_capped = len(ledger), ledger.epsilon_spent()
    estimator.set_params(privacy_ledger=None)

fig, ax = plt.subplots(figsize=(6, 4))
fits = np.arange(1, len(cumulative) + 1)
ax.plot(fits, cumulative, "o-", label="composed epsilon spent (ledger)")
ax.axhline(0.5, color="grey", ls=":", label="epsilon of one fit")
ax.axhline(1.2, color="C3", ls="--", label="budget of the second search")
ax.axvline(n_allowed + 0.5, color="C3", alpha=0.4)
ax.annotate(f"refused: fit {n_allowed + 1}", (n_allowed + 0.6, 0.3), color="C3")
ax.set_xlabel("fits made by GridSearchCV (3 candidates x 3 folds + refit)")
ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
ax.set_title("Privacy spent by a grid search")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()
