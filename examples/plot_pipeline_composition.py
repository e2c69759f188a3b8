"""
What a scikit-learn Pipeline of DP steps spends
===============================================

A ``Pipeline`` of DP transformers and a DP estimator spends the composition of what its
steps released, which :func:`skdp.accounting.fitted_dp_event` computes.  One detail
matters: a :class:`~skdp.preprocessing.DPOneHotEncoder` that discovers its categories
(and a :class:`~skdp.preprocessing.DPSplineTransformer`, whose equal knots merge)
releases the *width* of the estimator's input.  The estimator's ``auto`` rules
(``alpha``, DP-SGD's schedule) read that width, so its privacy event follows a released
value, and composing the event that happened is not a proof: the pipeline as a whole is a
different mechanism at every width the encoder may release.  ``fitted_dp_event`` then
composes the pair that dominates every ``(epsilon, delta)``-DP release of the estimator
instead -- sound, but looser.

Three ways to fit the same model at the same parameters on the Adult census table:

1. a plain ``Pipeline``: the estimator's rules read the released width, so its event is
   composed as the dominating pair;
2. the same ``Pipeline`` with a public ``auto_n_features`` (the width the rules read,
   chosen before any row): the estimator's exact event composes;
3. :func:`skdp.make_private_pipeline`, which plans the whole split from one budget and
   sets ``auto_n_features`` itself (so do the private searches and cross-validation on a
   plain ``Pipeline``).
"""

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.accounting import fitted_dp_event, get_epsilon
from skdp.datasets import load_adult
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer

X, y = load_adult(as_frame=True, return_X_y=True)   # shipped with skdp: no network
X, y = X.iloc[:10000], y[:10000]
numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
categorical = [c for c in X.columns if c not in numeric]
DELTA = 1e-5


def plain(**model):
    """Spline knots and category discovery at epsilon 0.1 each, then the model at 0.8."""
    columns = make_column_transformer(
        (DPSplineTransformer(epsilon=0.1, random_state=1), numeric),
        (DPOneHotEncoder(epsilon=0.1, random_state=2), categorical))
    return make_pipeline(columns, DPLogisticRegression(
        classes=[0, 1], epsilon=0.8, data_norm=float(len(X.columns)) ** 0.5,
        random_state=3, **model))


# %%
# The estimator's rules read the released width
# ---------------------------------------------
released = plain().fit(X, y)
width = released[-1].n_features_in_
print(f"the encoder and the spline released a design of {width} columns;"
      f" the model's rules read it (auto_n_features_ = {released[-1].auto_n_features_})")
dominated = get_epsilon(fitted_dp_event(released), DELTA)

# %%
# A public width: the exact event composes
# ----------------------------------------
# Any width chosen before the fit will do; here a rough count of the basis columns.
public = plain(auto_n_features=60).fit(X, y)
exact = get_epsilon(fitted_dp_event(public), DELTA)

# %%
# One budget, planned: the private pipeline at the epsilon the plain one spent
# ----------------------------------------------------------------------------
planned = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=exact,
                                delta=DELTA, numeric=numeric, categorical=categorical,
                                random_state=0).fit(X, y)
print(f"private pipeline: epsilon_ = {planned.epsilon_:.3f}, the model's rules read the "
      f"planning width {planned.privacy_plan_.model_width}")

rows = {"plain Pipeline\n(released width)": dominated,
        "plain Pipeline\n(auto_n_features=60)": exact,
        "make_private_pipeline\n(one planned budget)": planned.epsilon_}
for name, eps in rows.items():
    print(f"{name.replace(chr(10), ' '):<45} epsilon = {eps:.3f} at delta = {DELTA:g}")

fig, ax = plt.subplots(figsize=(6.5, 3.5))
ax.barh(list(rows), list(rows.values()), color=["C3", "C0", "C2"])
ax.set_xlabel(f"epsilon spent at delta = {DELTA:g}")
ax.set_title("The same steps, composed three ways")
fig.tight_layout()
plt.show()
