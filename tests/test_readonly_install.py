"""A read-only install with a read-only HOME imports and fits (the default fit needs no
numba kernel; a kernel fit makes numba fall back to a temporary cache with one warning), run
as a process that file permissions apply to."""

import os
import shutil
import stat
from pathlib import Path

import skdp

from ._unprivileged import run_python

SCRIPT = """
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import numpy as np
    from skdp import DPLogisticRegression
    X = np.random.default_rng(0).normal(size=(300, 2)); y = (X[:, 0] > 0).astype(int)
    clf = DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=0).fit(X, y)
    import sys
    default_fit = ("numba" in sys.modules, len(caught))   # the default fit needs no kernel
    DPLogisticRegression(data_norm=3.0, classes=[0, 1], solver="dpsgd", batch_size=50,
                         n_steps=10, random_state=0).fit(X, y)
import skdp
print(skdp.__file__)
print(clf.score(X, y) > 0.8)
cache = [str(w.message) for w in caught if "numba cannot cache" in str(w.message)]
print(len(cache))
print(cache[0] if cache else "")
print(default_fit)
"""


def _read_only_tree(root):
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_read_only_package_and_home_import_and_fit(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(Path(skdp.__file__).parent, site / "skdp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    home.mkdir()
    _read_only_tree(site)
    _read_only_tree(home)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), PYTHONPATH=str(site))
    proc = run_python(SCRIPT, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == str(site / "skdp" / "__init__.py")   # the read-only copy was used
    assert lines[1] == "True"
    assert lines[2] == "1", proc.stdout                        # warned once
    assert "NUMBA_CACHE_DIR" in lines[3]
    assert lines[4] == "(False, 0)"      # the default fit imported no numba, warned nothing
    assert not list(site.rglob("__pycache__/*.nbi"))           # nothing written there
