"""
Private logistic regression on data that stays on Dask workers
==============================================================

:class:`~skdp.DPLogisticRegression` (binary, its default ``objective_perturbation``
solver) and :class:`~skdp.DPHuberRegressor` fit a ``dask.array.Array`` or a Dask
DataFrame without collecting it: every partition is clipped to the public ``data_norm``
on its worker, and each L-BFGS step brings back one loss sum and one gradient sum per
partition (``p + 1`` numbers); the objective's noise and the output noise are drawn once,
on the client.  The fit's privacy event is the in-memory fit's.

Below, 400,000 rows of 8 features and their labels are generated lazily on a local
cluster -- they never exist on the client -- and a private model is fitted at
epsilon from 0.001 to 0.1, delta = 1e-8.  Its accuracy on a fresh sample of the same distribution is
compared with the noise-free model's, and a fit that releases its own ``data_norm`` is
shown last.  Predictions and scores of Dask rows are computed on the workers too.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from skdp import DPLogisticRegression

rng = np.random.default_rng(0)
w_true = rng.standard_normal(8)


def sample(state, n, chunks):
    """Rows of norm about 0.6 under the public bound 1, labels from a logistic model."""
    rs = da.random.RandomState(state)
    X = rs.normal(size=(n, 8), chunks=(chunks, 8)) * 0.2
    p = 1.0 / (1.0 + da.exp(-(X @ w_true) * 8.0))
    y = (rs.uniform(size=n, chunks=chunks) < p).astype(int)
    return X, y


with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=":0") as cluster, Client(cluster):
    X, y = sample(1, 400_000, 50_000)                     # lazy: nothing computed yet
    curve = []
    for eps in (0.001, 0.003, 0.01, 0.1):
        model = DPLogisticRegression(epsilon=eps, delta=1e-8, data_norm=1.0,
                                     classes=[0, 1], random_state=0).fit(X, y)
        X_test, y_test = sample(2, 50_000, 25_000)      # scored on the workers
        curve.append((eps, model.score(X_test, y_test)))
        print(f"epsilon={eps:5}: solver_={model.solver_}, alpha_={model.alpha_:.2g}, "
              f"test accuracy {curve[-1][1]:.4f}")

    # Without a public bound, data_norm="auto" releases one inside the fit: each worker
    # histograms its rows' norms, only the counts reach the client, and 5 % of the fit's
    # budget releases their 0.95 quantile (the same release as in memory).
    auto = DPLogisticRegression(epsilon=0.1, delta=1e-8, data_norm="auto", classes=[0, 1],
                                random_state=0).fit(X, y)
    split = auto.budget_split_
    print(f"data_norm='auto' at epsilon=0.1: released data_norm_={auto.data_norm_:.3f} "
          f"(epsilon {split['bounds'][0]:.3f} for the bound, {split['model'][0]:.3f} for "
          f"the model), test accuracy {auto.score(X_test, y_test):.4f}")

# the best a model of this family can do on this distribution: the true coefficients
margins = X_test @ (w_true * 8.0)
bayes = float(((margins > 0) == y_test).mean().compute())
print(f"true model's accuracy: {bayes:.4f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.semilogx([e for e, _ in curve], [a for _, a in curve], "o-", label="private, on Dask")
ax.axhline(bayes, color="k", lw=0.8, label="true model")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("DPLogisticRegression on 4e5 rows that stay on the workers")
ax.legend(fontsize=8)
fig.tight_layout()
