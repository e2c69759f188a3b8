"""
Private search and cross-validation over a private pipeline
===========================================================

A raw table, a private pipeline (:func:`skdp.make_private_pipeline`: private spline knots,
privately discovered categories, a DP model), and the two questions that follow: *which*
settings, and *how good* is it?  Answering either on the private rows is itself a release.
:class:`skdp.model_selection.DPGridSearchCV` and
:func:`skdp.model_selection.dp_cross_validate` take the pipeline as it is and report one
total ``(epsilon, delta)`` for everything they release: every candidate's knots,
categories and model, the noisy scores, and the choice.

Each candidate pipeline is one DP step of the search: its own plan splits what the search
hands it (its event is fixed before any row: the search sets ``model_plan="fixed"``), and
the selection is accounted in Renyi DP (Papernot & Steinke 2022), with DP-SGD's subsampled
steps bounded under replace-one neighbours and the categories' thresholds counted once per
fit.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.datasets import load_adult
from skdp.model_selection import DPGridSearchCV, dp_cross_validate

X, y = load_adult(as_frame=True, return_X_y=True)   # shipped with skdp: no network

# 8,000 rows keep the gallery fast; the public schema is stated, not read from dtypes
X, _, y, _ = train_test_split(X, y, train_size=8000, random_state=0, stratify=y)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)
numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
categorical = [c for c in X.columns if c not in numeric]
pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                             numeric=numeric, categorical=categorical)

# %%
# The default pipeline, and what its plan decides before any row is read
# -----------------------------------------------------------------------
print(pipe.plan(X_train))
default = pipe.set_params(random_state=0).fit(X_train, y_train)
print(f"default pipeline: epsilon_ = {default.epsilon_:.4f}, "
      f"test accuracy {default.score(X_test, y_test):.3f}")

# %%
# A private search over the model's and the transformers' parameters
# ------------------------------------------------------------------
search = DPGridSearchCV(pipe, {"model__alpha": [1e-3, 1e-2],
                               "columns__numeric__n_knots": [6, 12]},
                        epsilon=1.0, random_state=0).fit(X_train, y_train)
print(f"search: epsilon_ = {search.epsilon_:.4f} for the whole procedure, "
      f"selected {search.best_params_}, noisy validation accuracy "
      f"{search.best_score_:.3f}, test accuracy {search.score(X_test, y_test):.3f}")
print("per-fit budget of a candidate:",
      {k: round(v, 4) for k, v in search.budget_split_.items()
       if k in ("fit_mu", "fit_epsilon_at_delta", "epsilon_total")})

# %%
# Private cross-validation of the default pipeline
# ------------------------------------------------
cv = dp_cross_validate(pipe, X_train, y_train, epsilon=1.0, cv=4, random_state=0)
print(f"cross-validation: epsilon = {cv['epsilon']:.4f}, noisy fold accuracies "
      f"{np.round(cv['test_score'], 3)}")

fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(["default pipeline\n(epsilon 1)", "searched pipeline\n(epsilon 1 in all)"],
       [default.score(X_test, y_test), search.score(X_test, y_test)],
       color=["tab:blue", "tab:orange"])
ax.axhline(max(np.mean(y_test), 1 - np.mean(y_test)), color="grey", ls="--",
           label="majority class")
ax.set_ylim(0.7, 0.9)
ax.set_ylabel("test accuracy")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
