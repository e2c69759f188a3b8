"""
Sparse input: hashed categorical features, fitted without densifying
====================================================================

A one-hot or hashed encoding of string columns is mostly zeros: scikit-learn returns it as
a ``scipy.sparse`` matrix, and skdp's estimators fit it as it is.  The default solvers of
:class:`~skdp.DPLogisticRegression` and :class:`~skdp.DPHuberRegressor` work on the
matrix's non-zeros, clip each row on the fly and never copy ``X`` (peak memory of a fit
stays under a quarter of the data's; float32 and Fortran-ordered arrays are not copied
either).

The encoding must not read the private rows.  scikit-learn's ``FeatureHasher`` maps each
``"column=value"`` string to one of ``2**12`` columns by a fixed hash: nothing is learnt,
so it costs no privacy budget, and every row has one entry of magnitude 1 per string column
(two values may collide), so ``data_norm = sqrt(8)`` for the 8 string columns of Adult is
a public bound that the fit enforces by clipping.
"""

import time
import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.model_selection import train_test_split

from skdp import DPLogisticRegression
from skdp.datasets import load_adult

X, y = load_adult(as_frame=True, return_X_y=True)   # shipped with skdp: no network

strings = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
           "sex", "native-country"]
tokens = [[f"{c}={v}" for c, v in zip(strings, row)]
          for row in X[strings].astype(object).fillna("missing").itertuples(index=False)]
hasher = FeatureHasher(n_features=2**12, input_type="string", alternate_sign=False)
Z = hasher.transform(tokens).tocsr()            # public map: no budget spent
Z_train, Z_test, y_train, y_test = train_test_split(Z, y, test_size=0.25, random_state=0,
                                                    stratify=y)
dense_mib = Z_train.shape[0] * Z_train.shape[1] * 8 / 2**20
sparse_mib = (Z_train.data.nbytes + Z_train.indices.nbytes + Z_train.indptr.nbytes) / 2**20
print(f"hashed design {Z_train.shape}: {sparse_mib:.1f} MiB sparse, "
      f"{dense_mib:.0f} MiB if densified")

epsilons, accuracies = (0.5, 1.0, 4.0), []
for epsilon in epsilons:
    model = DPLogisticRegression(epsilon=epsilon, delta=1e-6, data_norm=np.sqrt(8.0),
                                 classes=[0, 1], random_state=0)
    start = time.perf_counter()
    model.fit(Z_train, y_train)
    seconds = time.perf_counter() - start
    accuracies.append(model.score(Z_test, y_test))
    print(f"epsilon={epsilon:>3}: test accuracy {accuracies[-1]:.3f} "
          f"(solver {model.solver_}, fit {seconds:.2f} s, spent epsilon_={model.epsilon_:.3f})")

majority = max(np.mean(y_test), 1 - np.mean(y_test))
print(f"majority class: {majority:.3f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(epsilons, accuracies, "o-", label="DPLogisticRegression on the sparse hashed rows")
ax.axhline(majority, color="grey", ls="--", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()
