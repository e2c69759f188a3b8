"""Every gallery script in examples/ runs to completion (non-interactive backend)."""

import pathlib
import runpy

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[2] / "examples").glob("plot_*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    namespace = runpy.run_path(str(path), run_name="__main__")
    assert plt.get_fignums(), f"{path.name} drew no figure"
    assert namespace  # the script ran to its end and defined its names
    plt.close("all")
