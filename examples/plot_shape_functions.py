"""
What a private pipeline learnt: shape functions
===============================================

The model :func:`skdp.make_private_pipeline` releases is additive in the raw columns:

.. math:: f(x) = b + \\sum_j g_j(x_j), \\qquad g_j(v) = w_j^\\top B_j(v),

where :math:`B_j` is column :math:`j`'s basis -- B-splines on its private knots and a
missing indicator, or the one-hot block of its private categories with ``other`` and
``missing`` -- and :math:`w_j` the model's coefficients on it.  Each :math:`g_j` is the
column's exact effect on the log-odds, as in an explainable boosting machine's
``explain_global``.  :func:`skdp.inspection.shape_functions` evaluates them on public
points (a grid over the released knots, the released categories), so showing them is
post-processing of the release: **no privacy cost**.

:func:`skdp.inspection.term_importances` summarises each column in one number -- on the
public grid (free), or on rows you pass, which is then a function of those rows and **not
differentially private** if they are private.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.datasets import DatasetNotFoundError, load_adult
from skdp.inspection import ShapeFunctionDisplay, shape_functions, term_importances

try:
    X, y = load_adult(as_frame=True, return_X_y=True)
except DatasetNotFoundError:  # no data home: the raw adult.data shipped with skdp
    from importlib import resources

    names = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
             "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
             "hours-per-week", "native-country", "income"]
    with resources.as_file(resources.files("skdp.datasets") / "data/adult.data.gz") as path:
        X = pd.read_csv(path, header=None, names=names, skipinitialspace=True,
                        na_values=["?"], keep_default_na=False)
    y = X.pop("income").str.startswith(">50K").astype(np.int64).to_numpy()
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)
numeric = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
categorical = ["workclass", "marital-status", "occupation", "relationship", "sex"]
pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                             numeric=numeric, categorical=categorical,
                             random_state=0).fit(X_train, y_train)
print(f"epsilon_ = {pipe.epsilon_:.3f}, test accuracy {pipe.score(X_test, y_test):.3f}")

# %%
# The shape functions as a table
# ------------------------------
# One tidy row per (column, public point); the intercept is its own row.  Summing a row's
# contributions and the intercept gives the pipeline's ``decision_function`` exactly.
sf = shape_functions(pipe)
print(sf[sf["column"] == "relationship"].to_string(index=False))
print(sf[sf["kind"] == "intercept"].to_string(index=False))

# %%
# Drawn
# -----
# Lines for numeric columns (the private knots ticked on the axis; beyond the boundary
# knots the basis is clamped, so the shape is flat there), bars for categories and the
# ``other`` bucket, a diamond for the missing bucket.
disp = ShapeFunctionDisplay.from_estimator(pipe, n_cols=5)
disp.figure_.set_size_inches(17, 6.5)
disp.figure_.suptitle("Private additive model of Adult at epsilon = 1 (log-odds)")

# %%
# Term importances
# ----------------
# The mean absolute deviation of each column's contribution: on the public grid (free,
# shareable with the model) and on the training rows (a function of the private rows:
# not DP, keep it private).
public = term_importances(pipe)
on_rows = term_importances(pipe, X_train)
print(public.merge(on_rows, on="column", suffixes=(" (public grid)", " (training rows)"))
      .drop(columns=["source (public grid)", "source (training rows)"])
      .round(3).to_string(index=False))
plt.show()
