"""The per-step solvers call their numba loops with every argument given.

numba types an omitted argument by its default object, which the on-disk cache cannot match
in another process: a loop called with an optional array left out is compiled anew in every
session (2-3 s before a first fit with a warm cache; ``skdp._numba_cache.with_defaults``).
These tests record each loop's calls during small fits, float and exact noise."""

import inspect
import warnings

import numpy as np
import pytest

import skdp._solvers._dpsgd as dpsgd_module
import skdp._solvers._resque as resque_module
import skdp._solvers._spider as spider_module
import skdp._solvers._zeroth_order as zeroth_order_module
from skdp import DPLogisticRegression, DPNonconvexRegressor
from skdp._numba_cache import with_defaults


def _record(monkeypatch, module, name):
    """Wrap ``module.name`` (a numba kernel) so that each call's argument count is kept;
    returns ``(number of parameters, counts)``."""
    kernel = getattr(module, name)
    counts = []

    def call(*args, **kwargs):
        counts.append(len(args) + len(kwargs))
        return kernel(*args, **kwargs)

    monkeypatch.setattr(module, name, call)
    return len(inspect.signature(kernel.py_func).parameters), counts


def _data(n=1000, d=4):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) * 0.3
    return X, X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), (X[:, 0] > 0).astype(int)


CASES = {
    "dpsgd": (dpsgd_module, "dpsgd_loop", lambda secure: DPLogisticRegression(
        solver="dpsgd", epsilon=1.0, data_norm=1.0, classes=[0, 1], n_steps=20,
        secure_noise=secure, random_state=0)),
    "rrpsgd": (dpsgd_module, "dpsgd_loop", lambda secure: DPNonconvexRegressor(
        solver="rrpsgd", epsilon=10.0, data_norm=1.0, batch_size=32, n_steps=20,
        secure_noise=secure, random_state=0)),
    "resque": (resque_module, "resque_loop", lambda secure: DPLogisticRegression(
        solver="resque", alpha=1e-2, epsilon=1.0, data_norm=1.0, classes=[0, 1],
        secure_noise=secure, random_state=0)),
    "spider": (spider_module, "spider_loop", lambda secure: DPNonconvexRegressor(
        solver="spider", epsilon=10.0, data_norm=1.0, secure_noise=secure, random_state=0)),
    "zeroth_order": (zeroth_order_module, "zo_run", lambda secure: DPNonconvexRegressor(
        solver="zeroth_order", loss="capped_absolute", epsilon=10.0, data_norm=1.0,
        secure_noise=secure, random_state=0)),
}


@pytest.mark.parametrize("secure", [False, "auto"])
@pytest.mark.parametrize("solver", sorted(CASES))
def test_loops_receive_every_argument(monkeypatch, solver, secure):
    module, name, make = CASES[solver]
    n_params, counts = _record(monkeypatch, module, name)
    X, y_reg, y_cls = _data()
    est = make(secure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y_cls if isinstance(est, DPLogisticRegression) else y_reg)
    assert counts and all(c == n_params for c in counts), (counts, n_params)


def test_with_defaults():
    assert with_defaults((), (1, 2.0)) == (1, 2.0)
    assert with_defaults(("a",), (1, 2.0)) == ("a", 2.0)
    assert with_defaults(("a", "b"), (1, 2.0)) == ("a", "b")
