"""The default fits import no numba and no dp-accounting accountant (issue "first-run
experience").

Their objectives run in numpy and their few noise integers are drawn in Python, so
importing numba (0.1-0.2 s) and its kernel modules would only slow a user's first fit; their
events are read in closed form, so dp-accounting's PLD and RDP accountants (and the
``scipy.signal`` they import, ~0.1 s) are not needed either.  Each check runs in a fresh
interpreter; the kernels and accountants stay importable on demand.
"""

import json
import subprocess
import sys

import pytest

FIT = """
import json, sys
import numpy as np
import skdp
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 6)) / 4
y = (X[:, 0] + 0.1 * rng.normal(size=400) > 0).astype(int) if {classify} else X @ np.ones(6)
est = {expr}
est.fit(X, y)
print(json.dumps({{"numba": "numba" in sys.modules, "solver": est.solver_,
                   "dp_accounting": sorted(m for m in sys.modules
                                           if m.startswith("dp_accounting")),
                   "event": type(est.dp_event_).__module__,
                   "kernels": sorted(m for m in sys.modules
                                     if m.startswith("skdp") and "kernel" in m)}}))
"""


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("expr, classify, solver", [
    ("skdp.DPLogisticRegression(epsilon=1.0, data_norm=2.0, random_state=0)", True,
     "objective_perturbation"),
    ("skdp.DPHuberRegressor(epsilon=1.0, data_norm=2.0, random_state=0)", False,
     "objective_perturbation"),
    ("skdp.DPNonconvexRegressor(epsilon=1.0, data_norm=2.0, random_state=0)", False,
     "warm_gd"),
])
def test_default_fit_imports_no_numba(expr, classify, solver):
    seen = _run(FIT.format(expr=expr, classify=classify))
    assert seen["solver"] == solver
    assert not seen["numba"], seen
    assert seen["kernels"] == []
    assert seen["dp_accounting"] == ["dp_accounting.dp_event"], seen
    assert seen["event"] == "dp_accounting.dp_event"


def test_kernel_fit_still_imports_its_kernels():
    seen = _run(FIT.format(
        expr="skdp.DPLogisticRegression(epsilon=1.0, data_norm=2.0, solver='dpsgd', "
             "n_steps=20, batch_size=50, random_state=0)", classify=True))
    assert seen["numba"] and "skdp._solvers._dpsgd_kernel" in seen["kernels"]


def test_thread_counts_match_numba():
    """Before numba is imported, skdp._parallel answers as numba's configuration would;
    after, it answers from numba (set_current_threads reaches numba's setting)."""
    code = """
import json, os
from skdp import _parallel
before = _parallel.available_threads(), _parallel.current_threads()
import numba
after = _parallel.available_threads(), _parallel.current_threads()
_parallel.set_current_threads(1)
one = numba.get_num_threads()
_parallel.set_current_threads(None)
print(json.dumps({"before": before, "after": after, "numba": numba.config.NUMBA_NUM_THREADS,
                  "one": one, "restored": numba.get_num_threads()}))
"""
    for env_threads in (None, "1"):
        env = None
        if env_threads is not None:
            import os
            env = dict(os.environ, NUMBA_NUM_THREADS=env_threads)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300, check=True, env=env).stdout
        seen = json.loads(out.strip().splitlines()[-1])
        assert seen["before"] == [seen["numba"]] * 2
        assert seen["after"] == [seen["numba"]] * 2
        assert seen["one"] == 1 and seen["restored"] == seen["numba"]


def test_lazy_kernel_reexports():
    """The kernel names the modules used to export are still reachable there."""
    from skdp import _losses, _solvers
    from skdp._mechanisms import _clipping, _exact

    assert callable(_losses.margin_derivatives)
    assert callable(_clipping.clip_rows) and callable(_clipping.clip_scalar)
    assert callable(_exact.grid_value) and callable(_exact.discrete_gaussian)
    assert _solvers.SOLVERS["dpsgd"] is _solvers.solve_dpsgd
    assert set(_solvers.SOLVERS) == set(_solvers.SOLVER_OPTIONS)
    with pytest.raises(AttributeError):
        _exact.no_such_kernel
