"""benchmarks/bench_pipeline_latency.py runs: its instrumentation wraps skdp functions by
name, and a renamed or removed one made it fail on every tree (c07b11e removed
check_model_fits; the benchmark failed until ced5d08).  A one-round run on a small table,
nothing written."""

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pipeline_latency.py"


def test_the_latency_benchmark_runs_on_a_small_table():
    out = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "600", "--rounds", "1",
                          "--no-write"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| this | 600 | 1 |" in out.stdout
