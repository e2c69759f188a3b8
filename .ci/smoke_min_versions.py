"""Fit every solver once (and the scaler, a private search, a ledger) on the installed
versions; CI runs it in an environment with the declared *minimum* versions
(.ci/min_versions.py).  Prints the versions, then one line per fit; exits non-zero on the
first failure.  Guards against the defects found with old floors: dp-accounting without
RandomizedResponseDpEvent, and numba's Generator.binomial hanging or returning wrong values
for mid-range n (numba #9493, #9734), which the Poisson batch sampling of dpsgd, rrpsgd and
resque draws from and their accounting assumes."""

import importlib.metadata as md
import math
import time
import warnings

import numpy as np

for pkg in ("numpy", "scipy", "scikit-learn", "numba", "dp-accounting", "pandas"):
    print(f"{pkg} {md.version(pkg)}")

from skdp import (  # noqa: E402
    DPGridSearchCV,
    DPHuberRegressor,
    DPLogisticRegression,
    DPNonconvexRegressor,
    PrivacyLedger,
)
from skdp._solvers import CONVEX_SOLVERS, NONCONVEX_SOLVERS  # noqa: E402
from skdp._solvers._dpsgd_kernel import _sample_batch  # noqa: E402
from skdp.preprocessing import DPStandardScaler  # noqa: E402

# numba's binomial, through the kernel that uses it: mean batch size at mid-range n
n, q, T = 5000, 0.3, 400
rng = np.random.default_rng(0)
idx, perm, stamp = np.empty(n, np.int64), np.arange(n), np.zeros(n, np.int64)
sizes = np.array([_sample_batch(rng, n, q, idx, perm, stamp, t) for t in range(1, T + 1)])
sd = math.sqrt(n * q * (1 - q) / T)
assert abs(sizes.mean() - n * q) < 6 * sd, f"Poisson batch sizes: mean {sizes.mean()}"
print(f"poisson batch sampling: mean {sizes.mean():.1f} (expected {n * q:.0f})")

rng = np.random.default_rng(1)
X = rng.uniform(-1, 1, (3000, 4)) / 2.0
y_cls = (X @ [1.0, -2.0, 1.5, 0.5] + 0.3 * rng.normal(size=3000) > 0).astype(int)
y_reg = X @ [1.0, -2.0, 1.5, 0.5] + 0.1 * rng.normal(size=3000)
cases = [(f"DPLogisticRegression solver={s}", DPLogisticRegression(
    epsilon=2.0, data_norm=1.0, classes=[0, 1], solver=s, random_state=0), y_cls)
    for s in ["auto", *sorted(CONVEX_SOLVERS)]]
cases += [("DPLogisticRegression multinomial", DPLogisticRegression(
    epsilon=2.0, data_norm=1.0, classes=[0, 1, 2], random_state=0), np.arange(3000) % 3)]
cases += [(f"DPHuberRegressor solver={s}", DPHuberRegressor(
    epsilon=2.0, data_norm=1.0, y_bound=3.0, solver=s, random_state=0), y_reg)
    for s in ["auto", *sorted(CONVEX_SOLVERS)]]
cases += [(f"DPNonconvexRegressor solver={s}", DPNonconvexRegressor(
    epsilon=20.0 if s == "spider" else 2.0, data_norm=1.0, y_bound=3.0, alpha=0.01,
    solver=s, random_state=0), y_reg) for s in ["auto", *sorted(NONCONVEX_SOLVERS)]]
for name, est, y in cases:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert est.privacy_guaranteed_ and math.isfinite(est.epsilon_), name
    assert np.all(np.isfinite(est.coef_)), name
    print(f"{name}: epsilon_={est.epsilon_:.3g} score={est.score(X, y):.3f} "
          f"({time.perf_counter() - t0:.1f} s)")

# sparse and float32 input at the floors (CSR passes, clip factors, Newton-CG)
import scipy.sparse as sp  # noqa: E402

S = sp.csr_matrix(np.where(np.abs(X) > 0.25, X, 0.0))
for name, est in [("sparse DPLogisticRegression", DPLogisticRegression(
        epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=0)),
        ("sparse DPHuberRegressor", DPHuberRegressor(
            epsilon=2.0, data_norm=1.0, y_bound=3.0, random_state=0))]:
    target = y_cls if "Logistic" in name else y_reg
    dense = type(est)(**est.get_params()).fit(S.toarray(), target)
    est.fit(S, target)
    assert np.abs(est.coef_ - dense.coef_).max() <= 1e-6 * dense.noise_scale_, name
    est.fit(X.astype(np.float32), target)
    print(f"{name}: score={est.score(S, target):.3f} (float32 fit ok)")
DPStandardScaler(feature_bounds=(-1, 1), with_mean=False, random_state=0).fit(S).transform(S)

scaler = DPStandardScaler(feature_bounds=(-1, 1), random_state=0).fit(X)
assert scaler.privacy_guaranteed_
search = DPGridSearchCV(DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
                        {"alpha": [0.01, 0.1]}, epsilon=2.0, random_state=0).fit(X, y_cls)
assert search.epsilon_ <= 2.0
with PrivacyLedger(epsilon=3.0) as ledger:
    DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="dpsgd",
                         privacy_ledger=ledger, random_state=0).fit(X, y_cls)
    assert 0 < ledger.epsilon_spent() <= 3.0
print("scaler, DPGridSearchCV and PrivacyLedger: ok")

# A raw table as an object array (no DataFrame): numeric columns with NaN through the
# private spline basis, a string column through the private one-hot discovery (its dict
# path), one budget for the pipeline.
from sklearn.compose import ColumnTransformer  # noqa: E402

from skdp import PrivatePipeline  # noqa: E402
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer  # noqa: E402

rng = np.random.default_rng(0)
raw = np.empty((4000, 3), dtype=object)
raw[:, 0] = rng.normal(40, 12, 4000)
raw[::50, 0] = np.nan
raw[:, 1] = rng.lognormal(10, 1, 4000)
raw[:, 2] = rng.choice(["a", "b", "c"], 4000)
labels = (raw[:, 2] == "a").astype(int)
pipe = PrivatePipeline([
    ("columns", ColumnTransformer([("num", DPSplineTransformer(), [0, 1]),
                                   ("cat", DPOneHotEncoder(), [2])])),
    ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0))],
    epsilon=1.0).fit(raw, labels)
assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= 1.0, pipe.epsilon_
print(f"raw-table pipeline: epsilon_={pipe.epsilon_:.4f} score={pipe.score(raw, labels):.3f}")

# The README's first example at the floors (pandas is a core dependency): the raw Adult
# frame from the copy shipped in the package (no data home, no network), 8,000 rows.
import os  # noqa: E402

from sklearn.model_selection import train_test_split  # noqa: E402

from skdp import make_private_pipeline  # noqa: E402
from skdp.datasets import load_adult  # noqa: E402

os.environ.pop("SKDP_DATA", None)
os.environ["XDG_CACHE_HOME"] = os.path.join(os.path.dirname(__file__), "min-env", "empty")
frame, income = load_adult(as_frame=True, return_X_y=True)
frame, _, income, _ = train_test_split(frame, income, train_size=8000, random_state=0)
model = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                              random_state=0).fit(frame, income)
assert model.privacy_guaranteed_ and model.epsilon_ <= 1.0, model.epsilon_
print(f"README example on the shipped Adult frame: score={model.score(frame, income):.3f}")
