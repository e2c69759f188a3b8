"""
Private standardisation of data that stays on Dask workers
==========================================================

:class:`~skdp.preprocessing.DPStandardScaler` fits on a ``dask.array.Array`` (or a Dask
DataFrame) partition by partition: every partition is clipped to the public
``feature_bounds`` on its worker, and only two vectors of per-feature sums travel to the
client, where the Gaussian noise is added once.  The rows are never collected.

Below, 2 million rows of 4 features are generated lazily on a local cluster -- they never
exist on the client -- and standardised privately at epsilon = 0.5, delta = 1e-8.  The private means and
standard deviations are compared with the true ones of the distribution; the transform is
lazy too.  (``DPLogisticRegression`` and ``DPHuberRegressor`` fit Dask input the same
way: see the next example.)
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from skdp.preprocessing import DPStandardScaler

true_mean = np.array([1.0, -2.0, 0.5, 10.0])
true_std = np.array([1.0, 3.0, 0.2, 4.0])

with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=":0") as cluster, Client(cluster):
    X = da.random.RandomState(0).normal(size=(2_000_000, 4), chunks=(250_000, 4))
    X = X * true_std + true_mean                       # lazy: nothing computed yet
    scaler = DPStandardScaler(
        epsilon=0.5, delta=1e-8,         # delta << 1/n
        # public bounds, e.g. documented ranges -- never read from the data
        feature_bounds=[[-4.0, -14.0, -0.5, -10.0], [6.0, 10.0, 1.5, 30.0]],
        random_state=0,
    ).fit(X)
    Z = scaler.transform(X)                            # a lazy dask array
    z_mean, z_std = da.compute(Z.mean(axis=0), Z.std(axis=0))

print("rows seen (public):", scaler.n_samples_seen_, " epsilon_:", scaler.epsilon_)
for j in range(4):
    print(f"feature {j}: private mean {scaler.mean_[j]:8.4f} (true {true_mean[j]:6.2f}), "
          f"private std {scaler.scale_[j]:7.4f} (true {true_std[j]:5.2f})")
print("standardised data: mean", np.round(z_mean, 3), "std", np.round(z_std, 3))

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(np.arange(4) - 0.2, scaler.scale_ / true_std, width=0.4, label="private std / true")
ax.bar(np.arange(4) + 0.2, (scaler.mean_ - true_mean) / true_std + 1, width=0.4,
       label="1 + (private mean - true) / std")
ax.axhline(1.0, color="k", lw=0.8)
ax.set_xticks(range(4))
ax.set_xlabel("feature")
ax.set_ylim(0.9, 1.1)
ax.legend(fontsize=7)
ax.set_title("DPStandardScaler on a Dask array, epsilon = 0.5")
fig.tight_layout()
