"""The CI step that tests the dependency floors pins exactly what pyproject.toml declares."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_min_versions_pins_every_declared_floor():
    import tomllib

    out = subprocess.run([sys.executable, str(ROOT / ".ci" / "min_versions.py")],
                         capture_output=True, text=True, check=True).stdout.split()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert out == [d.replace(">=", "==") for d in deps]
    floors = dict(line.split("==") for line in out)
    # the floors below which known defects void the guarantee or hang (doc/install.rst)
    assert tuple(map(int, floors["numba"].split("."))) >= (0, 61)
    assert tuple(map(int, floors["dp-accounting"].split("."))) >= (0, 5)
    assert "smoke_min_versions.py" in (ROOT / ".ci" / "run").read_text()
