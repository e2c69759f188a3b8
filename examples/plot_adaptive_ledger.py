"""
A budget for an interactive session
===================================

An analyst rarely fixes every fit in advance.  She fits a model at a small epsilon, looks
at what it released, and decides the next fit from that: more budget if the model still
moves from one fit to the next, stop when it has settled.  The epsilon of each fit then
depends on earlier releases -- the fits are *adaptive* -- and composing the events that
happened, as a :class:`~skdp.accounting.PrivacyLedger` does by default, is no longer a
proof that the session stayed within its budget (Rogers, Roth, Ullman & Vadhan 2016).

``PrivacyLedger(epsilon, delta, adaptive=True)`` makes the budget check a Rényi filter of
one order fixed at creation (Feldman & Zrnic 2021): whatever the analyst chooses, every fit
it admits keeps the whole session ``(epsilon, delta)``-DP.  It admits somewhat less than
the exact composition -- at ``(1, 1e-6)``, about 0.82 of the Gaussian budget -- and it has
no running total: its guarantee is the budget, and
:attr:`~skdp.accounting.PrivacyLedger.remaining` tells the epsilon of the largest Gaussian
fit it still admits.

Below, the analyst doubles the epsilon of the next fit while the accuracy of the released
model on a public test set still improves, and never asks for more than the ledger admits.
The rule reads released models, public rows and the ledger only, so it is a legitimate
adaptive choice.  ``remaining`` is the figure for a Gaussian release; the default solver's
record (objective perturbation, a zCDP curve) costs more at the same epsilon, so the
analyst asks :meth:`~skdp.accounting.PrivacyLedger.largest_epsilon` instead: it plans
*this* fit at candidate epsilons from public quantities (the estimator, the number of
rows and columns) and returns the largest one the filter admits.  A fit that asks for
more is refused before it reads the data.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp import DPLogisticRegression
from skdp.accounting import PrivacyLedger, compose, get_epsilon
from skdp.datasets import load_demo_adult
from skdp.exceptions import BudgetExceededError

adult = load_demo_adult()
X, y = adult.data[:8000], adult.target[:8000]  # private training rows
X_public, y_public = adult.data[8000:12000], adult.target[8000:12000]  # a public test set
EPSILON, DELTA = 1.0, 1e-6

ledger = PrivacyLedger(epsilon=EPSILON, delta=DELTA, adaptive=True)
print(f"filter: order {ledger.renyi_filter.order:g}; the first fit may ask for up to "
      f"epsilon = {ledger.remaining:.3f} (Gaussian)")

fit_epsilon, best, session = 0.05, 0.0, []
for seed in range(20):
    model = DPLogisticRegression(
        classes=[0, 1], epsilon=fit_epsilon, delta=1e-7, data_norm=adult.row_norm_bound,
        random_state=seed, privacy_ledger=ledger)
    try:
        model.fit(X, y)
    except BudgetExceededError as exc:     # not reached: the rule asks within the edge
        print(f"fit {seed + 1} at epsilon = {fit_epsilon:.3g} refused: {exc}")
        break
    accuracy = model.score(X_public, y_public)
    # the largest epsilon the next fit of this model may ask for: planned from public
    # quantities (the estimator, X's shape), nothing written
    edge = ledger.largest_epsilon(model, X.shape)
    session.append((fit_epsilon, accuracy, edge))
    print(f"fit {seed + 1}: epsilon = {fit_epsilon:.3g}, public accuracy {accuracy:.3f}; "
          f"the next fit may ask for up to epsilon = {edge:.3f} (a Gaussian release: "
          f"{ledger.remaining:.3f})")
    # the adaptive rule: a function of released models, public rows and the ledger only
    if accuracy < best + 0.002 or edge < 0.02:
        break
    best = max(best, accuracy)
    fit_epsilon = min(2 * fit_epsilon, edge)

print(ledger.summary())
# The exact composition of the same events: a valid total only had the fits been fixed
# in advance.  The session's guarantee is the filter's, (epsilon, delta) = the budget.
exact = get_epsilon(compose(*[entry.event for entry in ledger.entries()]), DELTA)
print(f"{len(ledger)} fits admitted; their exact composition would read epsilon = "
      f"{exact:.3f}, a bound only for fits fixed in advance; the filter proves "
      f"epsilon = {ledger.epsilon_spent():g}")
ledger.close()

fig, ax = plt.subplots(figsize=(6, 4))
fits = np.arange(1, len(session) + 1)
ax.bar(fits, [s[0] for s in session], color="C0", alpha=0.6,
       label="epsilon of the fit (public accuracy below)")
ax.plot(fits, [s[2] for s in session], "o-", color="C3",
        label="largest epsilon the next fit may ask for")
for k, (_, accuracy, _) in enumerate(session, 1):
    ax.annotate(f"{accuracy:.3f}", (k, 0.02), ha="center", fontsize=8)
ax.set_xlabel("fit in the session")
ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
ax.set_title(f"An adaptive session under a filter of (epsilon, delta) = ({EPSILON:g}, {DELTA:g})")
ax.legend(loc="upper right")
fig.tight_layout()
plt.show()
