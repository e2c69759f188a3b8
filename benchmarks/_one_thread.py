"""Imported first by a benchmark script, before numpy or skdp: one thread per numba, OpenMP
and BLAS pool unless the caller set them (timings and noise streams comparable across
runs), and ``SKDP_DATA`` defaulting to the shared data folder next to the repository."""

import os
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("SKDP_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
