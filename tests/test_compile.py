"""``skdp compile``: it fills numba's cache, and a later first fit reads its kernels from it.

Run as a user would, in subprocesses with their own empty ``NUMBA_CACHE_DIR``.  No timing is
asserted: whether a fit compiled is read from numba's own compile events and cache counters.
"""

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from skdp import _compile

ENV = dict(os.environ, PYTHONWARNINGS="ignore")

#: a fresh process fits ``expr`` on rows in C and in Fortran order and reports the skdp kernels numba compiled
#: (compile events: a kernel loaded from the cache fires none) and the cache hits of
#: ``KERNEL``
FIRST_FIT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from skdp._compile import _CompileCounter
    counter = _CompileCounter()
    counter.install()
    compiled = counter.names
    import skdp
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (300, 4)) / 2.0
    y = {labels}
    warnings.simplefilter("ignore")
    for layout in (np.ascontiguousarray, np.asfortranarray):   # a DataFrame's: Fortran
        skdp.{expr}.fit(layout(X), y)
    import importlib
    module, name = "{kernel}".rsplit(".", 1)
    kernel = getattr(importlib.import_module(module), name)
    print(json.dumps({{"compiled": compiled,
                      "hits": sum(kernel.stats.cache_hits.values()),
                      "misses": sum(kernel.stats.cache_misses.values())}}))
""")


def _compile_cli(cache, *groups, quiet=True):
    env = dict(ENV, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "skdp", "compile", *groups]
                          + (["--quiet"] if quiet else []),
                          capture_output=True, text=True, timeout=1200, env=env)


def _first_fit(cache, expr, kernel, labels="(X[:, 0] > 0).astype(int)"):
    env = dict(ENV, NUMBA_CACHE_DIR=str(cache))
    code = FIRST_FIT.format(expr=expr, kernel=kernel, labels=labels)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=1200, env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cache_files(cache):
    return [name for _, _, files in os.walk(cache) for name in files
            if name.endswith((".nbi", ".nbc"))]


PHASED = ("DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], "
          "solver='phased', random_state=0)")


def test_every_solver_has_a_group():
    from skdp._solvers import SOLVER_OPTIONS

    assert set(SOLVER_OPTIONS) <= set(_compile.GROUP_NAMES)
    assert len(set(_compile.GROUP_NAMES)) == len(_compile.GROUPS)


def test_compile_fills_the_cache_and_the_first_fit_reads_it(tmp_path):
    # without the command, the first fit compiles its kernels (the check below can fail)
    cold = _first_fit(tmp_path / "cold", PHASED, "skdp._solvers._phased.phased_phase")
    assert "phased_phase" in cold["compiled"] and cold["hits"] == 0

    cache = tmp_path / "numba"
    res = _compile_cli(cache, "phased", quiet=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("skdp compile:")
    assert f"numba cache: {cache} (NUMBA_CACHE_DIR)" in lines
    assert any(line.split()[:1] == ["phased"] and "kernels compiled" in line
               for line in lines)
    assert lines[-1].startswith("done in ") and "0 groups failed" in lines[-1]
    assert _cache_files(cache)

    # a new process: every kernel of the fits comes from the cache, none is compiled
    warm = _first_fit(cache, PHASED, "skdp._solvers._phased.phased_phase")
    assert warm["compiled"] == [] and warm["hits"] >= 1 and warm["misses"] == 0

    # run again: nothing left to compile, and --quiet prints nothing
    res = _compile_cli(cache, "phased")
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""


@pytest.mark.slow
def test_compile_covers_the_multinomial_default(tmp_path):
    """The default that compiles most (DP-SGD, issue 48): nothing left after the command."""
    cache = tmp_path / "numba"
    res = _compile_cli(cache, "secure_noise", "dpsgd")
    assert res.returncode == 0, res.stderr
    warm = _first_fit(cache, "DPLogisticRegression(epsilon=1.0, data_norm=1.0, "
                      "classes=[0, 1, 2], random_state=0)",
                      "skdp._solvers._dpsgd_kernel.dpsgd_loop",
                      labels="np.digitize(X[:, 0], [-0.2, 0.2])")
    assert warm["compiled"] == [] and warm["hits"] >= 2


def test_a_failing_group_is_reported_and_the_others_run(monkeypatch):
    ran = []

    def broken(float32):
        raise RuntimeError("no luck")

    monkeypatch.setattr(_compile, "GROUPS", (
        ("first", "a group that fails", broken),
        ("second", "a group that works", lambda float32: ran.append(float32)),
    ))
    out, err = io.StringIO(), io.StringIO()
    assert _compile.run_compile(out=out, err=err) == 1
    assert ran == [False]
    assert "skdp compile: error: first: RuntimeError: no luck" in err.getvalue()
    assert "FAILED" in out.getvalue() and "1 groups failed" in out.getvalue()
    # --quiet: nothing on stdout, the error still on stderr, the same status
    out, err = io.StringIO(), io.StringIO()
    assert _compile.run_compile(["first"], quiet=True, out=out, err=err) == 1
    assert out.getvalue() == "" and "no luck" in err.getvalue()


def test_no_writable_cache_is_an_error(monkeypatch):
    monkeypatch.setattr(_compile, "cache_location", lambda: (None, "no writable place"))
    monkeypatch.setattr(_compile, "GROUPS", (("never", "must not run", None),))
    err = io.StringIO()
    assert _compile.run_compile(quiet=True, out=io.StringIO(), err=err) == 1
    assert "NUMBA_CACHE_DIR" in err.getvalue()


def test_cache_location_names_numba_cache_dir(monkeypatch, tmp_path):
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    assert _compile.cache_location() == (str(tmp_path), "NUMBA_CACHE_DIR")


def test_unknown_group_is_a_usage_error():
    res = subprocess.run([sys.executable, "-m", "skdp", "compile", "no_such_group"],
                         capture_output=True, text=True, env=ENV, timeout=120)
    assert res.returncode == 2 and "no group 'no_such_group'" in res.stderr
    assert res.stdout == ""
