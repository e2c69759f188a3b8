"""
From a raw table to a private model, with one epsilon
=====================================================

The Adult census table as it comes: numbers on their own scales, strings, and missing
values (``NaN``).  Min-max scaling or a one-hot encoding fitted on these rows would read
bounds and categories from the private data and void the guarantee of the model trained on
them.  :func:`skdp.make_private_pipeline` learns them privately instead -- spline knots at
private quantiles for the numeric columns, categories discovered by thresholded noisy
counts for the others -- and spends **one** budget ``(epsilon, delta)`` on the whole fit.
The estimator takes the basis' public row bound (``data_norm="auto"``) at no cost.

The learnt per-column shape functions are then plotted: the model is additive, so they are
post-processing of the release (free), as are the private knots marked on the axes.
:func:`skdp.datasets.load_adult` with ``as_frame=True`` reads the UCI file from
``SKDP_DATA``, else the same file shipped inside the package: no network is needed.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, SplineTransformer

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.datasets import load_adult

X, y = load_adult(as_frame=True, return_X_y=True)   # shipped with skdp: no network
print(X.head(3).to_string(), "\nmissing values per column:",
      X.isna().sum()[lambda s: s > 0].to_dict())
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)

# %%
# One budget for the whole pipeline
# ---------------------------------
# the public schema: which columns are numeric and which categorical (stated, not read
# from dtypes, which a stray string in a file can change)
numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
categorical = [c for c in X.columns if c not in numeric]
pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                             numeric=numeric, categorical=categorical,
                             random_state=0).fit(X_train, y_train)
print(f"epsilon_ = {pipe.epsilon_:.4f}, delta_ = {pipe.delta_:g}, "
      f"privacy_guaranteed_ = {pipe.privacy_guaranteed_}")
for step, share in pipe.budget_split_.items():
    print(f"  {step:<22} {share}")
print("data_norm_ of the model:", pipe.named_steps["model"].data_norm_,
      "(public bound of the basis: sqrt(number of columns))")

# %%
# The design the model fits is sparse: a piecewise-linear basis has at most two non-zero
# values per numeric column and row, a one-hot block one per string column.  The pipeline
# builds it as a CSR matrix (``sparse_design="auto"``), which the model's solvers read
# without a dense copy; the released model is the dense design's bit for bit.
Z = pipe[:-1].transform(X_train)
print(f"design {Z.shape[0]} x {Z.shape[1]} ({type(Z).__name__}): {Z.nnz / Z.shape[0]:.0f} "
      f"stored entries a row, {(Z.data.nbytes + Z.indices.nbytes) / 2**20:.1f} MiB "
      f"against {Z.shape[0] * Z.shape[1] * 8 / 2**20:.1f} MiB dense")

# %%
# Against non-private scikit-learn
# --------------------------------
# The same shape of model, with knots and categories read from the private rows.
baseline = make_pipeline(
    make_column_transformer(
        (SplineTransformer(n_knots=16, knots="quantile"),
         make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"),
         make_column_selector(dtype_exclude="number")), sparse_threshold=0.0),
    LogisticRegression(solver="newton-cholesky")).fit(X_train, y_train)
for name, model in (("skdp, epsilon = 1", pipe), ("scikit-learn (not private)", baseline)):
    auc = roc_auc_score(y_test, model.decision_function(X_test))
    print(f"{name:<28} accuracy {model.score(X_test, y_test):.3f}   AUC {auc:.3f}")

# %%
# Learnt shape functions
# ----------------------
# For numeric column ``j``, ``f_j(v) - f_j(r_j)``: the decision function on rows that
# differ only in column ``j`` (every other column at a fixed reference, which cancels in
# the difference), i.e. the column's slice of ``coef_`` times its spline basis.  The
# reference ``r_j`` is its middle knot.  The grid and the plotted range come from the
# private knots only: between the boundary knots, which the release keeps one noise rank
# inside the data (values beyond them are clamped: the shape is flat there).  The capital
# columns are over 90 % zeros: their knots merge into a zero knot and one in the tail.
spline = pipe.named_steps["columns"].named_transformers_["numeric"]
numeric = list(spline.feature_names_in_)
middle = {c: knots[len(knots) // 2] for c, knots in zip(numeric, spline.knots_)}
reference = pd.DataFrame({c: pd.Series([middle.get(c)], dtype=float if c in middle
                                       else object) for c in X.columns})  # strings: missing

fig, axes = plt.subplots(2, 3, figsize=(12, 6.5), sharey=True)
for ax, column, knots in zip(axes.ravel(), numeric, spline.knots_):
    lo, hi = knots[0], knots[-1]
    grid = np.linspace(lo, hi, 200)
    rows = reference.loc[np.zeros(grid.size + 1, dtype=int)].reset_index(drop=True)
    rows[column] = np.append(grid, reference[column].iloc[0])
    f = pipe.decision_function(rows)
    ax.plot(grid, f[:-1] - f[-1], color="C0")
    inside = knots[(knots >= lo) & (knots <= hi)]
    ax.plot(inside, np.zeros_like(inside), "|", color="C3", ms=12, mew=1.5,
            transform=ax.get_xaxis_transform(), clip_on=False)
    ax.axhline(0.0, color="gray", lw=0.5)
    ax.set_title(f"{column} ({len(knots)} private knots)", fontsize=10)
    ax.set_xlabel(column)
axes[0, 0].set_ylabel("effect on the log-odds")
axes[1, 0].set_ylabel("effect on the log-odds")
fig.suptitle("Private additive model of Adult at epsilon = 1 (knots in red)")
fig.tight_layout()
plt.show()
