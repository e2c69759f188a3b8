"""Scale benchmark: fit time and peak memory of skdp's default estimators against the
alternatives, dense and sparse, from 10^4 to 10^7 rows (issue 34, "The data path").

Dense synthetic data: n in {10^4, 10^5, 10^6, 10^7}, d in {20, 50}, float64 and float32;
rows ``x ~ N(0, (0.5^2 / d) I)`` (norm about 0.5, rescaled to at most 1), logistic labels
and a linear regression target.  Fits, with the public bounds ``data_norm = 1`` and
``y_bound = 3``:

* ``skdp.linear_model.DPLogisticRegression(epsilon=1, data_norm=1, classes=[0, 1])``
  against scikit-learn's ``LogisticRegression()`` and diffprivlib's
  ``LogisticRegression(epsilon=1, data_norm=1)`` (diffprivlib runs in its own virtual
  environment, ``$SKDP_DIFFPRIVLIB_PYTHON`` or ``/work/venvs/diffprivlib/bin/python``,
  as a co-process holding the same data; skipped with a note when it is missing);
* ``skdp.linear_model.DPHuberRegressor(epsilon=1, data_norm=1, y_bound=3)`` against
  scikit-learn's ``Ridge()`` and ``HuberRegressor()`` (the latter up to 10^6 rows).

Timing: one fresh process per cell generates the data, fits every estimator once untimed
(numba kernels are loaded from the cache; compilation is never timed), then runs
interleaved rounds (skdp, scikit-learn, diffprivlib, ... one fit each per round) with
every library limited to one thread (numba, BLAS, OpenMP) and then at the default threads;
medians are reported, with the CPU use of other processes per round.

Memory: one fresh process per (library, cell) generates the data, warms the estimator up
on a small slice, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``), fits and
reads ``VmHWM``: the peak RSS growth of the fit over ``VmRSS`` before it, as a multiple of
the size of the data (``X.nbytes``; for CSR ``data + indices + indptr``).

Sparse: a one-hot design (10^6 x 10^4, 20 non-zeros per row of value 1/sqrt(20)) and a
TF-IDF-like design (10^5 x 10^5, 50 non-zeros per row, unit rows), skdp's default
``DPLogisticRegression`` against ``LogisticRegression()`` on the same CSR matrix.  A fit
that skdp refuses (``TypeError``/``ValueError``) is recorded as "refused: <message>".  When
skdp accepts sparse input, a 2*10^4 x 2*10^3 one-hot fit is compared with the dense fit
of the same data and ``random_state``.

Dask (optional, when ``dask`` and ``dask_ml`` import): a 2*10^7 x 20 Dask array persisted
on a 2-worker ``LocalCluster`` (1 thread each), skdp's ``DPLogisticRegression`` against
``dask_ml.linear_model.LogisticRegression()``: wall time, the client's peak RSS growth
and each worker's peak RSS.

Run ``python benchmarks/bench_scale.py`` (all sizes, hours) or ``--quick`` (n <= 10^5,
small sparse designs, no Dask; a few minutes); ``--max-n N`` caps the dense rows.
Results: ``benchmarks/results/scale.{md,json}`` (``scale_quick.*`` with ``--quick``).
"""

import argparse
import contextlib
import ctypes
import gc
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The repository's skdp (also when the editable install points elsewhere).  The
# diffprivlib co-process runs this file too; it never imports skdp.
sys.path.insert(1, str(HERE.parent))

import numpy as np  # noqa: E402

import _common as C  # noqa: E402

# ------------------------------------------------------------------------ constants
EPSILON = 1.0
DATA_NORM = 1.0  # public row-norm bound given to every private estimator
Y_BOUND = 3.0  # public target bound of DPHuberRegressor (targets have std ~1)
ROW_NORM = 0.5  # typical row norm of the dense designs (never above 1)
LOGIT_SCALE = 4.0  # w* ~ N(0, 16 I): margins x.w* with std ~2
REG_SCALE = 2.0  # v* ~ N(0, 4 I): regression targets x.v* with std ~1
REG_NOISE = 0.1
SPARSE_COEF_STD = 2.0  # sparse rows have unit norm: margins with std ~2
ZIPF_EXPONENT = 1.1  # word frequencies of the TF-IDF-like design
DATA_SEED = 0
GEN_CHUNK_ROWS = 1_000_000  # dense data is generated in blocks: peak ~ X + one block

DENSE_NS = (10**4, 10**5, 10**6, 10**7)
QUICK_MAX_N = 10**5
DENSE_DS = (20, 50)
DTYPES = ("float64", "float32")
HUBER_MAX_N = 10**6  # scikit-learn's HuberRegressor is slow beyond
SPARSE_CASES = {
    "full": ({"kind": "onehot", "n": 10**6, "n_cols": 10**4, "k": 20},
             {"kind": "tfidf", "n": 10**5, "n_cols": 10**5, "k": 50}),
    "quick": ({"kind": "onehot", "n": 10**5, "n_cols": 10**3, "k": 20},
              {"kind": "tfidf", "n": 10**4, "n_cols": 10**4, "k": 50}),
}
COEF_CASE = {"kind": "onehot", "n": 20_000, "n_cols": 2_000, "k": 20}
DASK_N = 20_000_000

# numba, BLAS and OpenMP limited to 1 thread first, then as configured (2 here).
THREAD_SETTINGS = (1, "default")
# Pause before every timed fit: idle OpenMP/OpenBLAS threads of the previous fit keep
# spinning for a while and slow the next one down on 2 cores (see bench_convex.py).
SETTLE_S = 0.3
# Rounds during which other processes used more cores than this are redone (while the
# waiting budget lasts, up to MAX_ROUNDS_FACTOR x the requested rounds) and left out.
QUIET_CORES = 0.25
MAX_ROUNDS_FACTOR = 2
# Warm-up slices of the memory children span 2 x 2^22 entries: skdp switches from numpy
# to numba kernels at 2^22 entries, so both code paths are loaded before the measured fit.
WARM_ENTRIES = 1 << 23
WARM_SPARSE_ROWS = 20_000
# Address-space limit of every child: an accidental dense copy of a huge sparse matrix
# raises MemoryError instead of waking the kernel's OOM killer.
MEM_LIMIT_FRACTION = 0.85

CLASSIFIERS = ("skdp_logistic", "sklearn_logistic", "diffprivlib_logistic")
REGRESSORS = ("skdp_huber", "sklearn_ridge", "sklearn_huber")
LIBS = {
    "skdp_logistic": {"label": "skdp DPLogisticRegression", "task": "classification"},
    "sklearn_logistic": {"label": "sklearn LogisticRegression", "task": "classification"},
    "diffprivlib_logistic": {"label": "diffprivlib LogisticRegression",
                             "task": "classification"},
    "skdp_huber": {"label": "skdp DPHuberRegressor", "task": "regression"},
    "sklearn_ridge": {"label": "sklearn Ridge", "task": "regression"},
    "sklearn_huber": {"label": "sklearn HuberRegressor", "task": "regression"},
}
CONSTRUCTORS = {
    "skdp_logistic": f"DPLogisticRegression(epsilon={EPSILON:g}, data_norm={DATA_NORM:g}, "
                     "classes=[0, 1], random_state=round)",
    "sklearn_logistic": "LogisticRegression()",
    "diffprivlib_logistic": f"LogisticRegression(epsilon={EPSILON:g}, "
                            f"data_norm={DATA_NORM:g}, random_state=round)",
    "skdp_huber": f"DPHuberRegressor(epsilon={EPSILON:g}, data_norm={DATA_NORM:g}, "
                  f"y_bound={Y_BOUND:g}, random_state=round)",
    "sklearn_ridge": "Ridge()",
    "sklearn_huber": "HuberRegressor()",
}
DEFAULT_DPL_PYTHON = "/work/venvs/diffprivlib/bin/python"


# ----------------------------------------------------------------------------- data
def dense_problem(n, d, dtype, seed=DATA_SEED):
    """``(X, y, y_reg)``: ``X`` (n x d, ``dtype``) with rows ``N(0, ROW_NORM^2 I / d)``
    rescaled to norm <= 1, labels ``y ~ Bernoulli(sigmoid(x.w*))`` and targets
    ``y_reg = x.v* + N(0, REG_NOISE^2)``.  Generated in blocks of ``GEN_CHUNK_ROWS`` rows
    (the smaller sizes are prefixes of the larger ones; float32 is float64 rounded)."""
    w = LOGIT_SCALE * np.random.default_rng([seed, 0, d]).standard_normal(d)
    v = REG_SCALE * np.random.default_rng([seed, 1, d]).standard_normal(d)
    rng = np.random.default_rng([seed, 2, d])
    X = np.empty((n, d), dtype=dtype)
    y = np.empty(n, dtype=np.int64)
    y_reg = np.empty(n, dtype=np.float64)
    for lo in range(0, n, GEN_CHUNK_ROWS):
        hi = min(n, lo + GEN_CHUNK_ROWS)
        block = rng.standard_normal((hi - lo, d))
        block *= ROW_NORM / math.sqrt(d)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        block /= np.maximum(norms, 1.0)[:, None]
        X[lo:hi] = block
        y[lo:hi] = rng.random(hi - lo) < 1.0 / (1.0 + np.exp(-(block @ w)))
        y_reg[lo:hi] = block @ v + REG_NOISE * rng.standard_normal(hi - lo)
    return X, y, y_reg


def _csr(values, columns, n_cols):
    """CSR matrix from ``n x k`` arrays of values and (distinct, sorted) columns."""
    import scipy.sparse as sp

    n, k = columns.shape
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64 if n * k >= 2**31 else np.int32)
    return sp.csr_matrix((values.ravel(), columns.ravel(), indptr), shape=(n, n_cols))


def _sparse_labels(X, rng):
    """Logistic labels of a sparse design: ``w*_j ~ N(0, SPARSE_COEF_STD^2)``."""
    w = SPARSE_COEF_STD * rng.standard_normal(X.shape[1])
    return (rng.random(X.shape[0]) < 1.0 / (1.0 + np.exp(-(X @ w)))).astype(np.int64)


def onehot_problem(n, n_cols, k, seed=DATA_SEED):
    """``(X, y)``: ``k`` categorical features of ``n_cols // k`` uniform levels each,
    one-hot encoded as CSR with values ``1/sqrt(k)`` (unit rows)."""
    levels = n_cols // k
    rng = np.random.default_rng([seed, 3, n_cols])
    codes = rng.integers(0, levels, size=(n, k), dtype=np.int32)
    codes += np.arange(k, dtype=np.int32) * levels
    X = _csr(np.full((n, k), 1.0 / math.sqrt(k)), codes, n_cols)
    return X, _sparse_labels(X, rng)


def tfidf_problem(n, n_cols, k, seed=DATA_SEED):
    """``(X, y)``: ``k`` distinct words per row, drawn from a Zipf law over ``n_cols``
    words (a repeated draw is replaced by a uniform word), term counts ``1 + Poisson(0.5)``
    times scikit-learn's smoothed idf, rows normalised to unit norm (CSR)."""
    rng = np.random.default_rng([seed, 4, n_cols])
    cdf = np.cumsum(1.0 / np.arange(1, n_cols + 1) ** ZIPF_EXPONENT)
    cdf /= cdf[-1]
    cols = np.minimum(np.searchsorted(cdf, rng.random((n, k))), n_cols - 1).astype(np.int32)
    while True:
        cols.sort(axis=1)
        dup = np.zeros(cols.shape, dtype=bool)
        dup[:, 1:] = cols[:, 1:] == cols[:, :-1]
        if not dup.any():
            break
        cols[dup] = rng.integers(0, n_cols, size=int(dup.sum()), dtype=np.int32)
    df = np.bincount(cols.ravel(), minlength=n_cols)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    values = (1.0 + rng.poisson(0.5, size=(n, k))) * idf[cols]
    values /= np.sqrt(np.einsum("ij,ij->i", values, values))[:, None]
    X = _csr(values, cols, n_cols)
    return X, _sparse_labels(X, rng)


def build_data(spec):
    """The arrays a spec describes: ``{"X", "y", "y_reg" (dense only), "nbytes"}``."""
    kind = spec["kind"]
    if kind == "dense":
        X, y, y_reg = dense_problem(spec["n"], spec["d"], spec["dtype"])
        return {"X": X, "y": y, "y_reg": y_reg, "nbytes": X.nbytes}
    make = {"onehot": onehot_problem, "tfidf": tfidf_problem}[kind]
    X, y = make(spec["n"], spec["n_cols"], spec["k"])
    return {"X": X, "y": y, "y_reg": None, "nbytes": csr_nbytes(X)}


def csr_nbytes(X):
    """Bytes of a CSR matrix's three arrays."""
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def warm_rows(spec):
    """Rows of the warm-up slice of a memory child (see ``WARM_ENTRIES``)."""
    if spec["kind"] == "dense":
        return min(spec["n"], max(2_000, WARM_ENTRIES // spec["d"]))
    return min(spec["n"], WARM_SPARSE_ROWS)


def target(data, lib):
    return data["y"] if LIBS[lib]["task"] == "classification" else data["y_reg"]


# ------------------------------------------------------------------------ estimators
def make_estimator(lib, seed=0):
    """The estimator ``lib`` names, as in ``CONSTRUCTORS`` (imports lazily: the
    diffprivlib co-process has neither skdp nor numba)."""
    if lib == "skdp_logistic":
        from skdp.linear_model import DPLogisticRegression

        return DPLogisticRegression(epsilon=EPSILON, data_norm=DATA_NORM, classes=[0, 1],
                                    random_state=seed)
    if lib == "skdp_huber":
        from skdp.linear_model import DPHuberRegressor

        return DPHuberRegressor(epsilon=EPSILON, data_norm=DATA_NORM, y_bound=Y_BOUND,
                                random_state=seed)
    if lib == "diffprivlib_logistic":
        from diffprivlib.models import LogisticRegression

        return LogisticRegression(epsilon=EPSILON, data_norm=DATA_NORM, random_state=seed)
    from sklearn.linear_model import HuberRegressor, LogisticRegression, Ridge

    return {"sklearn_logistic": LogisticRegression, "sklearn_ridge": Ridge,
            "sklearn_huber": HuberRegressor}[lib]()


def fit_quiet(model, X, y):
    """Fit, recording (not printing) warnings; returns ``"Class: first line"`` of each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
                   for w in caught})


def fit_summary(model, n):
    """What a fitted estimator tells about its work (None where it has no such attribute):
    ``passes`` is ``n_gradient_evals_ / n`` (skdp counts per-example gradients)."""
    def attr(name):
        v = getattr(model, name, None)
        if isinstance(v, (np.ndarray, list, tuple)):  # per class: the largest
            v = np.max(v)
        return v.item() if isinstance(v, np.generic) else v

    out = {k: attr(k) for k in ("solver_", "n_iter_", "n_gradient_evals_", "noise_scale_")}
    if out["n_gradient_evals_"] is not None:
        out["passes"] = out["n_gradient_evals_"] / n
    return out


def fit_once(lib, X, y, seed):
    """``(seconds, summary)`` of one fit of ``lib`` on ``(X, y)``."""
    model = make_estimator(lib, seed)
    t0 = time.perf_counter()
    caught = fit_quiet(model, X, y)
    seconds = time.perf_counter() - t0
    summary = fit_summary(model, X.shape[0])
    summary["warnings"] = caught
    return seconds, summary


def refusal(exc):
    """How a refused fit is shown in the tables."""
    return f"refused: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


# --------------------------------------------------------------------- process helpers
def limit_address_space():
    """Cap this process's address space (see ``MEM_LIMIT_FRACTION``); best effort."""
    total = C._mem_total_gib()
    if not total:
        return None
    limit = int(MEM_LIMIT_FRACTION * total * 2**30)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        return None
    return limit


def release_free_memory():
    """Collect garbage and hand free heap pages back to the kernel (glibc
    ``malloc_trim``), so that ``VmRSS`` before a fit holds no recyclable warm-up memory."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def thread_limit(setting, with_numba=True):
    """``C.threads`` in the main interpreter; BLAS/OpenMP only where numba is absent."""
    if with_numba:
        with C.threads(setting):
            yield
        return
    if setting == "default":
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(setting)):
        yield


def thread_report(with_numba=True):
    """Thread counts in force: numba's and every thread pool threadpoolctl sees."""
    from threadpoolctl import threadpool_info

    out = {"threadpools": [{"api": d.get("internal_api"), "prefix": d.get("prefix"),
                            "num_threads": d.get("num_threads")} for d in threadpool_info()]}
    if with_numba:
        import numba

        out["numba"] = numba.get_num_threads()
        try:
            out["numba_layer"] = numba.threading_layer()
        except ValueError:
            out["numba_layer"] = "not initialised"
    return out


def own_cpu_s():
    """CPU seconds (user + system) this process has used."""
    t = os.times()
    return t.user + t.system


def dpl_python(args):
    """Interpreter with diffprivlib, or None (with the reason in ``args.dpl_note``)."""
    if args.no_diffprivlib:
        args.dpl_note = "diffprivlib left out (--no-diffprivlib)"
        return None
    py = os.environ.get("SKDP_DIFFPRIVLIB_PYTHON") or DEFAULT_DPL_PYTHON
    if not Path(py).exists():
        args.dpl_note = (f"diffprivlib skipped: no interpreter at {py} (set "
                         "SKDP_DIFFPRIVLIB_PYTHON to a venv with diffprivlib)")
        return None
    args.dpl_note = None
    return py


def run_child(mode, spec, python=None):
    """Run this script in a fresh interpreter in child ``mode``; its last JSON line, or
    ``{"error": ...}`` if it died (e.g. killed for memory).  stderr streams through."""
    cmd = [python or sys.executable, str(Path(__file__).resolve()), "--child", mode,
           "--spec", json.dumps(spec)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=str(C.REPO_ROOT))
    if proc.returncode != 0:
        return {"error": f"child exited with code {proc.returncode}"}
    try:
        return C.last_json_line(proc.stdout)
    except ValueError as exc:
        return {"error": str(exc)[:300]}


def diffprivlib_server(python, spec):
    """diffprivlib in its own interpreter (:class:`_common.CoProcess`), holding the same
    data as the timing child and fitting on request."""
    return C.CoProcess([python, str(Path(__file__).resolve()), "--child", "dpl-server",
                        "--spec", json.dumps(spec)], "diffprivlib", cwd=C.REPO_ROOT)


# ---------------------------------------------------------------------- child modes
def dpl_server_child(spec):
    """Co-process mode (runs in diffprivlib's environment): generate the same data, then
    answer ``fit``/``threads``/``quit`` commands."""
    limit_address_space()
    data = build_data(spec)
    import diffprivlib
    import sklearn

    versions = {"diffprivlib": diffprivlib.__version__, "scikit-learn": sklearn.__version__,
                "numpy": np.__version__, "python": sys.version.split()[0]}
    print(json.dumps({"ready": True, "versions": versions}), flush=True)
    X, y = data["X"], data["y"]
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            print(json.dumps({"bye": True}), flush=True)
            break
        with thread_limit(cmd.get("threads", "default"), with_numba=False):
            if cmd["cmd"] == "threads":
                print(json.dumps(thread_report(with_numba=False)), flush=True)
                continue
            cpu0 = own_cpu_s()
            seconds, summary = fit_once("diffprivlib_logistic", X, y, cmd.get("seed", 0))
            print(json.dumps({"fit_s": seconds, "summary": summary,
                              "cpu_s": own_cpu_s() - cpu0}), flush=True)


class Fitter:
    """One library in a timing child: in process, or through the diffprivlib co-process."""

    def __init__(self, lib, data, server=None):
        self.lib, self.data, self.server = lib, data, server
        self.status = "ok"

    def fit(self, seed, threads):
        """``(seconds, summary, cpu seconds spent in other processes)``."""
        if self.server is not None:
            rep = self.server.request(cmd="fit", seed=seed, threads=threads)
            return rep["fit_s"], rep["summary"], rep["cpu_s"]
        seconds, summary = fit_once(self.lib, self.data["X"], target(self.data, self.lib), seed)
        return seconds, summary, 0.0


def warm_up(fitters, sparse):
    """One untimed fit of each library on the full data (loads numba kernels, starts the
    thread pools); skdp refusing a sparse matrix is recorded, not raised."""
    for f in fitters:
        C.log(f"  warm-up {f.lib}")
        try:
            f.fit(0, "default")
        except (TypeError, ValueError) as exc:
            if not (sparse and f.lib.startswith("skdp")):
                raise
            f.status = refusal(exc)
        except MemoryError as exc:
            f.status = f"failed: MemoryError {exc}"
    return [f for f in fitters if f.status == "ok"]


def timed_rounds(fitters, threads, repeats, gate):
    """Interleaved rounds (one fit of each library per round) at one thread setting.

    Rounds disturbed by other processes (> QUIET_CORES cores) are redone while the
    waiting budget lasts; medians are over the quiet rounds if at least half of the
    requested rounds were quiet, else over all of them (then ``contended``)."""
    times = {f.lib: [] for f in fitters}
    summaries, ext = {}, []
    r = -1
    while True:
        quiet = sum(e <= QUIET_CORES for e in ext)
        if quiet >= repeats or r + 1 >= MAX_ROUNDS_FACTOR * repeats:
            break
        if r + 1 >= repeats and gate.exhausted:
            break
        r += 1
        gate.wait()
        load = C.CpuLoad()
        foreign = 0.0
        for f in fitters:
            time.sleep(SETTLE_S)
            seconds, summary, cpu = f.fit(r, threads)
            times[f.lib].append(seconds)
            summaries[f.lib] = summary
            foreign += cpu
        stop = load.stop()
        ext.append(max(0.0, stop["external_cores"] - foreign / stop["wall_s"]))
        C.log(f"  threads={threads} round {r + 1}: "
              + ", ".join(f"{lib} {v[-1]:.3f}s" for lib, v in times.items())
              + f" (other processes {ext[-1]:.2f} cores)")
    keep = [i for i, e in enumerate(ext) if e <= QUIET_CORES]
    contended = len(keep) < max(1, (repeats + 1) // 2)
    if contended:
        keep = list(range(len(ext)))
    return {"times_s": times, "rounds_used": keep, "contended": contended,
            "external_cores_per_round": ext,
            "median_external_cores": C.median(ext) if ext else None,
            "median_s": {lib: C.median([v[i] for i in keep]) for lib, v in times.items()},
            "last_fit": summaries}


def time_child(spec):
    """Timing mode: data, co-process, warm-up, then rounds at each thread setting."""
    limit_address_space()
    sparse = spec["kind"] != "dense"
    C.log(f"timing {describe(spec)}: generating data")
    data = build_data(spec)
    server, fitters = None, []
    try:
        for lib in spec["libs"]:
            if lib == "diffprivlib_logistic":
                server = diffprivlib_server(spec["dpl_python"], spec)
                fitters.append(Fitter(lib, data, server))
            else:
                fitters.append(Fitter(lib, data))
        active = warm_up(fitters, sparse)
        gate = C.QuietGate(spec["gate_budget_s"], threshold=QUIET_CORES)
        out = {"spec": spec, "nbytes": data["nbytes"], "settings": {},
               "status": {f.lib: f.status for f in fitters},
               "dpl_versions": server.hello["versions"] if server else None}
        for threads in THREAD_SETTINGS:
            with thread_limit(threads):
                rep = timed_rounds(active, threads, spec["repeats"], gate)
                rep["threads"] = thread_report()
                if server is not None:
                    rep["threads"]["diffprivlib_process"] = server.request(
                        cmd="threads", threads=threads)
            out["settings"][str(threads)] = rep
        out["gate_spent_s"] = gate.spent_s
    finally:
        if server is not None:
            server.close()
    print(json.dumps(C._jsonable(out)), flush=True)


def memory_child(spec):
    """Memory mode: peak RSS growth of one fit of ``spec["lib"]`` in this fresh process."""
    limit_address_space()
    lib = spec["lib"]
    data = build_data(spec)
    X, y = data["X"], target(data, lib)
    out = {"lib": lib, "nbytes": data["nbytes"], "warm_rows": warm_rows(spec)}
    try:
        fit_once(lib, X[:out["warm_rows"]], y[:out["warm_rows"]], 0)
    except (TypeError, ValueError) as exc:
        if spec["kind"] == "dense" or not lib.startswith("skdp"):
            raise
        out["status"] = refusal(exc)
        print(json.dumps(out), flush=True)
        return
    release_free_memory()
    before = C.proc_status_kib("VmRSS")["VmRSS"]
    out["hwm_reset"] = C.reset_peak_rss()
    try:
        out["fit_s"], out["summary"] = fit_once(lib, X, y, 0)
        out["status"] = "ok"
    except MemoryError as exc:
        out["status"] = f"failed: MemoryError {exc}"
    peak = C.proc_status_kib("VmHWM")["VmHWM"]
    out.update(rss_before_kib=before, hwm_after_kib=peak, growth_bytes=(peak - before) * 1024,
               ratio=(peak - before) * 1024 / data["nbytes"])
    print(json.dumps(C._jsonable(out)), flush=True)


def coef_child(spec):
    """Sparse against dense fit of the same small one-hot design and ``random_state``."""
    limit_address_space()
    data = build_data(spec)
    X, y = data["X"], data["y"]
    out = {"spec": spec}
    try:
        sparse_fit = make_estimator("skdp_logistic", 0).fit(X, y)
    except (TypeError, ValueError) as exc:
        out["status"] = refusal(exc)
        print(json.dumps(out), flush=True)
        return
    dense_fit = make_estimator("skdp_logistic", 0).fit(X.toarray(), y)
    diff = np.abs(np.r_[sparse_fit.coef_.ravel(), sparse_fit.intercept_]
                  - np.r_[dense_fit.coef_.ravel(), dense_fit.intercept_])
    out.update(status="ok", max_abs_coef_diff=float(diff.max()),
               sparse=fit_summary(sparse_fit, X.shape[0]),
               dense=fit_summary(dense_fit, X.shape[0]))
    print(json.dumps(C._jsonable(out)), flush=True)


def _worker_rss_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def dask_child(spec):
    """Dask mode: skdp against dask_ml on a persisted Dask array (bench_dask_estimator's
    data and bench_dask's worker-memory helpers)."""
    import dask_ml.linear_model
    from distributed import Client, LocalCluster, wait

    from bench_dask import _worker_peak_kib, _worker_reset
    from bench_dask_estimator import CHUNK_ROWS, D, lazy_problem

    n = spec["n"]
    fits = {"skdp_logistic": lambda: make_estimator("skdp_logistic", 0),
            "dask_ml_logistic": dask_ml.linear_model.LogisticRegression}
    out = {"n": n, "d": D, "nbytes": n * D * 8, "fits": {}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit="10GiB") as cluster, \
            Client(cluster) as client:
        Xw, yw = lazy_problem(2 * CHUNK_ROWS, seed=7)
        for lib, make in fits.items():  # warm-up: imports, numba kernels on the workers
            C.log(f"  dask warm-up {lib}")
            make().fit(Xw, yw)
        X, y = lazy_problem(n)
        X, y = X.persist(), y.persist()
        wait([X, y])
        for lib, make in fits.items():
            C.log(f"  dask fit {lib} ({n} rows)")
            client.run(_worker_reset)
            base = client.run(_worker_rss_kib)
            C.reset_peak_rss()
            before = C.proc_status_kib("VmRSS")["VmRSS"]
            t0 = time.perf_counter()
            model = make()
            caught = fit_quiet(model, X, y)
            wall = time.perf_counter() - t0
            peaks = client.run(_worker_peak_kib)
            out["fits"][lib] = {
                "fit_s": wall, "warnings": caught,
                "client_growth_bytes": (C.proc_status_kib("VmHWM")["VmHWM"] - before) * 1024,
                "worker_rss_before_bytes": [base[w] * 1024 for w in sorted(base)],
                "worker_peak_bytes": [peaks[w] * 1024 for w in sorted(peaks)],
                "summary": fit_summary(model, n)}
    import dask
    import distributed

    out["versions"] = {"dask": dask.__version__, "distributed": distributed.__version__,
                       "dask_ml": getattr(dask_ml, "__version__", "?")}
    print(json.dumps(C._jsonable(out)), flush=True)


CHILD_MODES = {"time": time_child, "memory": memory_child, "dpl-server": dpl_server_child,
               "coef": coef_child, "dask": dask_child}


# ------------------------------------------------------------------------ the parent
def describe(spec):
    """Short name of a data spec, e.g. ``dense 10^6 x 50 float32``."""
    if spec["kind"] == "dense":
        return f"dense {C.fmt_n(spec['n'])} x {spec['d']} {spec['dtype']}"
    return (f"{spec['kind']} {C.fmt_n(spec['n'])} x {C.fmt_n(spec['n_cols'])}, "
            f"{spec['k']} per row")


def dense_specs(max_n):
    """The dense cells up to ``max_n`` rows, smallest first."""
    return [{"kind": "dense", "n": n, "d": d, "dtype": dt}
            for n in DENSE_NS if n <= max_n for d in DENSE_DS for dt in DTYPES]


def parse_cells(text):
    """Specs from ``"1e7x20:float64,1e7x50:float32,onehot"``: dense ``NxD:DTYPE`` cells,
    and the full run's sparse designs by name (``onehot``, ``tfidf``)."""
    specs = []
    sparse = {spec["kind"]: spec for spec in SPARSE_CASES["full"]}
    for item in text.split(","):
        if item.strip() in sparse:
            specs.append(dict(sparse[item.strip()]))
            continue
        shape, _, dtype = item.strip().partition(":")
        n, _, d = shape.lower().partition("x")
        dtype = dtype or "float64"
        if dtype not in DTYPES:
            raise SystemExit(f"--cells: dtype {dtype!r} is not one of {DTYPES}")
        specs.append({"kind": "dense", "n": int(float(n)), "d": int(d), "dtype": dtype})
    return specs


def merge_cells(path, res, load):
    """Add ``res``'s dense and sparse cells to the results JSON at ``path`` (a cell of the
    same shape and dtype, or the same sparse design, is replaced), record where they came
    from, and re-render the markdown."""
    old = json.loads(path.read_text())
    key = lambda c: (c["spec"]["n"], c["spec"]["d"], c["spec"]["dtype"])  # noqa: E731
    new_keys = {key(c) for c in res["dense"]}
    old["dense"] = sorted([c for c in old["dense"] if key(c) not in new_keys] + res["dense"],
                          key=lambda c: (c["spec"]["n"], c["spec"]["d"],
                                         DTYPES.index(c["spec"]["dtype"])))
    kinds = [c["spec"]["kind"] for c in res["sparse"]]
    order = [spec["kind"] for spec in SPARSE_CASES["full"]]
    old["sparse"] = sorted([c for c in old["sparse"] if c["spec"]["kind"] not in kinds]
                           + res["sparse"], key=lambda c: order.index(c["spec"]["kind"]))
    if res["dense"]:
        old["config"]["max_n"] = max(old["config"]["max_n"], res["config"]["max_n"])
    old.setdefault("merged", []).append({
        "argv": res["argv"], "cells": [list(k) for k in sorted(new_keys)] + kinds,
        "date_utc": res["machine"]["date_utc"], "git": C.git_state(),
        "source": source_fingerprint(), "load": load})
    path.write_text(json.dumps(C._jsonable(old), indent=1) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(render(old).rstrip() + "\n", encoding="utf-8")
    return path


def libs_for(spec, dpl_py):
    """Libraries fitted on a data spec."""
    if spec["kind"] != "dense":
        return ["skdp_logistic", "sklearn_logistic"]
    libs = ["skdp_logistic", "sklearn_logistic"]
    if dpl_py:
        libs.append("diffprivlib_logistic")
    libs += ["skdp_huber", "sklearn_ridge"]
    if spec["n"] <= HUBER_MAX_N:
        libs.append("sklearn_huber")
    return libs


def run_cell(spec, libs, dpl_py, repeats, gate_budget):
    """Timing child, then one memory child per library, for one data spec."""
    C.log(f"cell {describe(spec)}: timing {', '.join(libs)}")
    load = C.CpuLoad()
    timing = run_child("time", {**spec, "libs": libs, "repeats": repeats,
                                "dpl_python": dpl_py, "gate_budget_s": gate_budget})
    memory = {}
    for lib in libs:
        C.log(f"cell {describe(spec)}: peak RSS of {lib}")
        py = dpl_py if lib == "diffprivlib_logistic" else None
        memory[lib] = run_child("memory", {**spec, "lib": lib}, python=py)
        if "ratio" in memory[lib]:
            C.log(f"  {lib}: growth {memory[lib]['ratio']:.2f} x data")
    return {"spec": spec, "libs": libs, "timing": timing, "memory": memory,
            "load": load.stop()}


def source_fingerprint():
    """SHA-1 of every ``skdp/**/*.py`` file's path and content: tells whether the
    measured code changed while the benchmark ran (a shared working tree)."""
    h = hashlib.sha1()
    for path in sorted((C.REPO_ROOT / "skdp").rglob("*.py")):
        h.update(str(path.relative_to(C.REPO_ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def dask_available():
    """Why the Dask section is skipped, or None if dask, distributed and dask_ml import."""
    try:
        import dask  # noqa: F401
        import dask_ml  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        return f"Dask section skipped: {exc}"
    return None


def extra_versions():
    """Installed versions of the other libraries involved (None: not installed)."""
    from importlib import metadata

    out = {}
    for dist in ("dask", "distributed", "dask-ml", "dp-accounting", "numba"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="dense n <= 10^5, small sparse designs, no Dask (a few minutes)")
    ap.add_argument("--max-n", type=float, default=None, help="largest dense n (10^7)")
    ap.add_argument("--repeats", type=int, default=3, help="timing rounds per setting (3)")
    ap.add_argument("--max-wait", type=float, default=None,
                    help="total seconds the timing rounds may wait for other processes to "
                         "go quiet (120; quick 0)")
    ap.add_argument("--no-diffprivlib", action="store_true")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--no-sparse", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", default=str(C.RESULTS_DIR))
    ap.add_argument("--cells", metavar="NxD:DTYPE,...",
                    help="only these cells, e.g. 1e7x20:float64 or onehot (with "
                         "--merge-into: added to an earlier run's results)")
    ap.add_argument("--merge-into", metavar="JSON",
                    help="add the dense cells measured now to an earlier run's results JSON "
                         "(replacing cells of the same shape) and re-render its markdown")
    ap.add_argument("--rerender", metavar="JSON",
                    help="rewrite the markdown next to a results JSON from its numbers")
    ap.add_argument("--child", choices=sorted(CHILD_MODES), help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        CHILD_MODES[args.child](json.loads(args.spec))
        return
    if args.rerender:
        path = Path(args.rerender)
        path.with_suffix(".md").write_text(render(json.loads(path.read_text())).rstrip()
                                           + "\n", encoding="utf-8")
        return

    max_n = int(args.max_n) if args.max_n else (QUICK_MAX_N if args.quick else DENSE_NS[-1])
    budget = args.max_wait if args.max_wait is not None else (0.0 if args.quick else 120.0)
    stem = "scale_quick" if args.quick else "scale"
    dpl_py = dpl_python(args)
    dask_note = ("Dask section skipped (--quick)" if args.quick else
                 "Dask section skipped (--no-dask)" if args.no_dask else dask_available())
    total = C.CpuLoad()
    res = {"stem": stem, "argv": sys.argv[1:] if argv is None else list(argv),
           "config": {"quick": args.quick, "max_n": max_n, "repeats": args.repeats,
                      "wait_budget_s": budget, "thread_settings": THREAD_SETTINGS,
                      "epsilon": EPSILON, "data_norm": DATA_NORM, "y_bound": Y_BOUND,
                      "row_norm": ROW_NORM, "constructors": CONSTRUCTORS,
                      "huber_max_n": HUBER_MAX_N},
           "machine": C.machine_info(), "extra_versions": extra_versions(),
           "source_at_start": source_fingerprint(),
           "dpl_python": dpl_py, "dpl_note": args.dpl_note, "dask_note": dask_note,
           "dense": [], "sparse": [], "coef": None, "dask": None}

    def checkpoint():
        """Write what has been measured so far (a long run leaves partial results)."""
        res["load"] = total.stop()
        res["source_now"] = source_fingerprint()
        res["git_now"] = C.git_state()
        return C.write_results(stem, render(res), res, args.out_dir)

    specs = dense_specs(max_n)
    if args.cells:
        specs = parse_cells(args.cells)
        res["config"]["max_n"] = max([sp["n"] for sp in specs if sp["kind"] == "dense"],
                                     default=0)
    spent = 0.0
    if args.merge_into:
        for spec in specs:
            dense = spec["kind"] == "dense"
            py = dpl_py if dense else None
            res["dense" if dense else "sparse"].append(
                run_cell(spec, libs_for(spec, py), py, args.repeats, max(0.0, budget - spent)))
            spent += res["dense" if dense else "sparse"][-1]["timing"].get("gate_spent_s", 0.0)
        path = merge_cells(Path(args.merge_into), res, total.stop())
        C.log(f"merged {len(specs)} cell(s) into {path} and re-rendered its markdown")
        return
    for spec in specs:
        cell = run_cell(spec, libs_for(spec, dpl_py), dpl_py, args.repeats,
                        max(0.0, budget - spent))
        spent += cell["timing"].get("gate_spent_s", 0.0)
        res["dense"].append(cell)
        checkpoint()
    if not args.no_sparse:
        for spec in SPARSE_CASES["quick" if args.quick else "full"]:
            cell = run_cell(spec, libs_for(spec, None), None, args.repeats,
                            max(0.0, budget - spent))
            spent += cell["timing"].get("gate_spent_s", 0.0)
            res["sparse"].append(cell)
            checkpoint()
        C.log(f"sparse vs dense coefficients: {describe(COEF_CASE)}")
        res["coef"] = run_child("coef", COEF_CASE)
    if dask_note is None:
        C.log(f"dask: {C.fmt_n(DASK_N)} x 20")
        res["dask"] = run_child("dask", {"n": DASK_N})
    res["total_wall_s"] = total.stop()["wall_s"]
    md_path, json_path = checkpoint()
    C.log(f"wrote {md_path} and {json_path}")


# ------------------------------------------------------------------------ rendering
def fmt_ratio(a, b):
    if a is None or b is None or not (b > 0):
        return "n/a"
    return f"{a / b:.2f}"


def fmt_mib(nbytes):
    return f"{nbytes / 2**20:,.1f} MiB" if nbytes < 2**30 else f"{nbytes / 2**30:.2f} GiB"


def thread_label(setting):
    return "1" if str(setting) == "1" else "default"


def cell_status(cell, lib):
    """'ok', or why ``lib`` has no time in this cell."""
    timing = cell["timing"]
    if "error" in timing:
        return f"failed: {timing['error']}"
    if lib not in cell["libs"]:
        return "not run"
    return timing["status"].get(lib, "not run")


def median_time(cell, lib, threads):
    """Median fit seconds of ``lib`` at a thread setting, or None."""
    if cell_status(cell, lib) != "ok":
        return None
    return cell["timing"]["settings"][str(threads)]["median_s"].get(lib)


def short_status(status):
    """A refusal or failure in a table cell: its first sentence (the JSON has it all)."""
    head = status.split(". ")[0].rstrip(".")
    return head if len(head) <= 90 else head[:87] + "..."


def time_or_status(cell, lib, threads):
    status = cell_status(cell, lib)
    if status == "not run":
        return "–"
    if status != "ok":
        return short_status(status)
    return C.fmt_time(median_time(cell, lib, threads))


def load_cell(cell, threads):
    """Other processes' median cores over the rounds, with a mark if contended."""
    if "error" in cell["timing"]:
        return "n/a"
    s = cell["timing"]["settings"][str(threads)]
    ext = s.get("median_external_cores")
    return ("n/a" if ext is None else f"{ext:.2f}") + (" ⚠" if s["contended"] else "")


def memory_cell(cell, lib):
    """Peak RSS growth / data size of one library's fresh-process fit."""
    if lib not in cell["libs"]:
        return "–"
    m = cell["memory"].get(lib, {})
    if "error" in m:
        return f"failed: {m['error']}"
    if m.get("status") != "ok":
        return short_status(m.get("status", "n/a"))
    return f"{m['ratio']:.2f}" + ("" if m.get("hwm_reset") else " (no reset)")


def shape_cells(spec, nbytes):
    if spec["kind"] == "dense":
        return [C.fmt_n(spec["n"]), str(spec["d"]), spec["dtype"], fmt_mib(nbytes)]
    return [spec["kind"], f"{C.fmt_n(spec['n'])} × {C.fmt_n(spec['n_cols'])}",
            f"{spec['k']}", fmt_mib(nbytes)]


def cell_nbytes(cell):
    t = cell["timing"]
    if "nbytes" in t:
        return t["nbytes"]
    return next((m["nbytes"] for m in cell["memory"].values() if "nbytes" in m), float("nan"))


def timing_table(cells, skdp_key, others, headers):
    """Fit times of ``skdp_key`` and of each reference in ``others`` (two of them), with
    the ratio skdp / reference after each, per cell and thread setting."""
    rows = []
    for cell in cells:
        for threads in THREAD_SETTINGS:
            sk = median_time(cell, skdp_key, threads)
            row = shape_cells(cell["spec"], cell_nbytes(cell)) + [
                thread_label(threads), time_or_status(cell, skdp_key, threads)]
            for other in others:
                row += [time_or_status(cell, other, threads),
                        fmt_ratio(sk, median_time(cell, other, threads))]
            rows.append(row + [load_cell(cell, threads)])
    return C.md_table(["n", "d", "dtype", "X size", "threads", *headers,
                       "other processes (cores)"], rows, "rrlrlrrrrrr")


def classification_table(cells):
    return timing_table(cells, "skdp_logistic", ["sklearn_logistic", "diffprivlib_logistic"],
                        ["skdp", "sklearn", "skdp / sklearn", "diffprivlib",
                         "skdp / diffprivlib"])


def regression_table(cells):
    return timing_table(cells, "skdp_huber", ["sklearn_ridge", "sklearn_huber"],
                        ["skdp DPHuberRegressor", "sklearn Ridge", "skdp / Ridge",
                         "sklearn HuberRegressor", "skdp / HuberRegressor"])


def memory_table(cells, libs):
    rows = [shape_cells(c["spec"], cell_nbytes(c)) + [memory_cell(c, lib) for lib in libs]
            for c in cells]
    dense = bool(cells) and cells[0]["spec"]["kind"] == "dense"
    heads = ["n", "d", "dtype", "X size"] if dense \
        else ["design", "shape", "non-zeros per row", "CSR size"]
    return C.md_table(heads + [LIBS[lib]["label"] for lib in libs], rows,
                      ("rrlr" if dense else "llrr") + "r" * len(libs))


def skdp_fit_table(cells, libs):
    """What the skdp fits report about their work (last timed fit, default threads)."""
    rows = []
    for cell in cells:
        for lib in libs:
            if cell_status(cell, lib) != "ok":
                continue
            s = cell["timing"]["settings"]["default"]["last_fit"].get(lib, {})
            passes = s.get("passes")
            rows.append(shape_cells(cell["spec"], cell_nbytes(cell))[:3] + [
                LIBS[lib]["label"], str(s.get("solver_")), str(s.get("n_iter_")),
                "n/a" if passes is None else f"{passes:.1f}",
                "n/a" if s.get("noise_scale_") is None else f"{s['noise_scale_']:.3g}"])
    dense = bool(cells) and cells[0]["spec"]["kind"] == "dense"
    heads = ["n", "d", "dtype"] if dense else ["design", "shape", "non-zeros per row"]
    return C.md_table(heads + ["estimator", "solver_", "n_iter_",
                               "passes (n_gradient_evals_ / n)", "noise_scale_"], rows,
                      ("rrl" if dense else "llr") + "llrrr")


def sparse_time_table(cells):
    rows = []
    for cell in cells:
        for threads in THREAD_SETTINGS:
            sk = median_time(cell, "skdp_logistic", threads)
            rows.append(shape_cells(cell["spec"], cell_nbytes(cell)) + [
                thread_label(threads),
                time_or_status(cell, "skdp_logistic", threads),
                time_or_status(cell, "sklearn_logistic", threads),
                fmt_ratio(sk, median_time(cell, "sklearn_logistic", threads)),
                load_cell(cell, threads)])
    return C.md_table(["design", "shape", "non-zeros per row", "CSR size", "threads",
                       "skdp", "sklearn", "skdp / sklearn", "other processes (cores)"],
                      rows, "llrrlrrrr")


def thread_lines(res):
    """Thread counts in force per setting, from the first timing child that reported."""
    cell = next((c for c in res["dense"] + res["sparse"] if "settings" in c["timing"]), None)
    if cell is None:
        return ["- no timing child reported its threads"]
    lines = []
    for threads in THREAD_SETTINGS:
        t = cell["timing"]["settings"][str(threads)]["threads"]
        pools = ", ".join(f"{p['api']} {p['num_threads']}" for p in t["threadpools"])
        line = (f"- {thread_label(threads)} thread setting: numba {t.get('numba')} "
                f"({t.get('numba_layer')} layer); thread pools: {pools}")
        dpl = t.get("diffprivlib_process")
        if dpl:
            line += ("; diffprivlib process: "
                     + ", ".join(f"{p['api']} {p['num_threads']}" for p in dpl["threadpools"]))
        lines.append(line)
    return lines


def with_child_layer(info, res):
    """Machine info with the numba threading layer a timing child saw (the parent runs
    no parallel kernel)."""
    cell = next((c for c in res["dense"] + res["sparse"] if "settings" in c["timing"]), None)
    if cell is None:
        return info
    layer = cell["timing"]["settings"]["default"]["threads"].get("numba_layer")
    return {**info, "numba_threading_layer": layer}


def dpl_versions(res):
    for cell in res["dense"]:
        v = cell["timing"].get("dpl_versions")
        if v:
            return v
    return None


QUIET_WARNINGS = ("DeprecationWarning", "FutureWarning", "PendingDeprecationWarning")


def warnings_notes(cells):
    """Which fits raised warnings (e.g. scikit-learn's ConvergenceWarning at max_iter);
    API deprecations are kept in the JSON only."""
    seen = {}
    for cell in cells:
        for threads, s in cell["timing"].get("settings", {}).items():
            for lib, summary in s["last_fit"].items():
                for w in summary.get("warnings") or []:
                    if w.split(":")[0] in QUIET_WARNINGS:
                        continue
                    seen.setdefault((LIBS[lib]["label"], w), set()).add(describe(cell["spec"]))
    return [f"- {lib} raised `{w}` in: {', '.join(sorted(where))}."
            for (lib, w), where in sorted(seen.items())]


def unexpected_notes(res):
    """Observations computed from the measurements (no hand-typed numbers)."""
    notes = []
    for cell in res["dense"]:
        if "error" in cell["timing"]:
            notes.append(f"- {describe(cell['spec'])}: timing {cell['timing']['error']}.")
        for lib, m in cell["memory"].items():
            if "error" in m or m.get("status") not in (None, "ok"):
                notes.append(f"- {describe(cell['spec'])}: memory child of {lib}: "
                             f"{m.get('error') or m.get('status')}.")
            elif m.get("hwm_reset") is False:
                notes.append(f"- {describe(cell['spec'])}, {lib}: the peak-RSS mark could "
                             "not be reset; growth is VmHWM after the fit − VmRSS before it.")
    settings = [(c, t, s) for c in res["dense"] + res["sparse"]
                for t, s in c["timing"].get("settings", {}).items()]
    contended = [f"{describe(c['spec'])} ({thread_label(t)})"
                 for c, t, s in settings if s["contended"]]
    busy = [s["median_external_cores"] for _, t, s in settings
            if t == "default" and s.get("median_external_cores") is not None]
    if busy and C.median(busy) >= 0.75:
        notes.append(f"- Other processes took a median {C.median(busy):.2f} cores during the "
                     f"default-thread rounds (of {res['machine']['nproc']}): a 2-thread "
                     "parallel region then waits for the busy core, so the default-thread "
                     "timings measure the load more than the libraries; the 1-thread rows "
                     "are the steadier comparison.")
    if contended:
        notes.append(f"- ⚠ contended (fewer than half of the rounds had other processes "
                     f"below {QUIET_CORES} cores; medians over all rounds): "
                     f"{len(contended)} of {len(settings)} cell × thread settings: "
                     f"{'; '.join(contended)}.")
    return notes


def render(res):
    """The markdown report."""
    q, info = res["config"], res["machine"]
    L = ["# Scale benchmark: fit time and peak memory, skdp against the alternatives\n"]
    wall = res.get("total_wall_s")
    cmd = "python benchmarks/bench_scale.py" + ("".join(f" {a}" for a in res["argv"]))
    L.append(f"Mode: **{'quick' if q['quick'] else 'full'}**, dense n ≤ {C.fmt_n(q['max_n'])} "
             f"— generated by `{cmd}`"
             + (f" in {wall:.0f} s" if wall else " (partial: the run is still going)")
             + f". Every number is written by the script; raw values (every round) are in "
             f"`{res['stem']}.json`.\n")
    L.append("## Machine and threads\n")
    L.append(C.machine_info_markdown(with_child_layer(info, res), res.get("load")))
    if res.get("source_now") and res["source_now"] != res["source_at_start"]:
        L.append(f"- ⚠ skdp's sources changed while the benchmark ran (fingerprint "
                 f"{res['source_at_start']} at start, {res['source_now']} at the last write; "
                 f"{len(res['git_now']['skdp_changes'])} uncommitted change(s) under skdp/ "
                 "then): cells measured at different times may have run different code")
    else:
        L.append(f"- skdp sources unchanged during the run (fingerprint "
                 f"{res['source_at_start']})")
    for m in res.get("merged", ()):
        cells = ", ".join([f"{C.fmt_n(c[0])} × {c[1]} {c[2]}" for c in m["cells"]
                           if not isinstance(c, str)]
                          + [f"the {c} design" for c in m["cells"] if isinstance(c, str)])
        L.append(f"- {cells} come from a later run, `python benchmarks/bench_scale.py "
                 f"{' '.join(m['argv'])}`, on {m['date_utc']} at git commit "
                 f"{m['git']['commit']} (skdp fingerprint {m['source']}; other processes "
                 f"used {m['load']['external_cores']:.2f} cores on average over its "
                 f"{m['load']['wall_s']:.0f} s)")
    v = dpl_versions(res)
    if v:
        L.append(f"- diffprivlib {v['diffprivlib']} in its own environment "
                 f"(`{res['dpl_python']}`: scikit-learn {v['scikit-learn']}, numpy "
                 f"{v['numpy']}, Python {v['python']})")
    elif res["dpl_note"]:
        L.append(f"- {res['dpl_note']}")
    ev = ", ".join(f"{k} {val}" for k, val in res["extra_versions"].items() if val)
    if ev:
        L.append(f"- other libraries: {ev}")
    L += thread_lines(res)
    L.append("")
    L.append("## How it measures\n")
    L.append(
        f"Dense data: rows `x ~ N(0, ({ROW_NORM:g}² / d) I)` (norm about {ROW_NORM:g}, "
        f"rescaled to at most 1), labels `y ~ Bernoulli(sigmoid(x·w*))` with "
        f"`w* ~ N(0, {LOGIT_SCALE:g}² I)`, regression targets `x·v* + N(0, {REG_NOISE:g}²)` "
        f"with `v* ~ N(0, {REG_SCALE:g}² I)`; float32 is the float64 data rounded. Public "
        f"bounds: data_norm = {DATA_NORM:g}, y_bound = {Y_BOUND:g}, ε = {EPSILON:g} (skdp's "
        "default δ). Estimators: "
        + "; ".join(f"{LIBS[k]['label'].split()[0]} `{c}`" for k, c in CONSTRUCTORS.items())
        + f" (HuberRegressor up to n = {C.fmt_n(HUBER_MAX_N)}).\n")
    L.append(
        "Timing: one fresh process per cell generates the data and fits each estimator "
        "once untimed on the full data (numba kernels load from the cache, thread pools "
        "start; compilation is never timed); diffprivlib runs in a co-process of its own "
        "environment that holds the same data and fits on request, so its fits interleave "
        f"with the others. Then {q['repeats']} interleaved rounds (one fit of every estimator "
        "per round, `random_state` = round) with numba, BLAS and OpenMP limited to one "
        "thread (`numba.set_num_threads`, `threadpoolctl`), then as many at the default "
        f"threads; {SETTLE_S} s pause before every fit. Medians; a round during which other "
        f"processes used more than {QUIET_CORES} cores is redone while the waiting budget "
        f"({q['wait_budget_s']:.0f} s) lasts. Ratios are skdp's time over the other's "
        "(> 1: skdp slower).\n")
    L.append(
        "Memory: one fresh process per (library, cell) generates the data, fits once on a "
        f"warm-up slice (at most 2^{int(math.log2(WARM_ENTRIES))} entries dense, "
        f"{WARM_SPARSE_ROWS:,} rows sparse), frees it (`gc`, `malloc_trim`), reads VmRSS, "
        "resets the peak-RSS mark (`/proc/self/clear_refs`), fits, and reads VmHWM: growth "
        "= VmHWM − VmRSS, over `X.nbytes` (CSR: data + indices + indptr). \"(no reset)\" "
        "marks a process where the mark could not be reset.\n")

    if res["dense"]:
        L.append("## 1. Logistic regression, dense: fit time\n")
        L.append(classification_table(res["dense"]) + "\n")
        L.append("## 2. Robust/linear regression, dense: fit time\n")
        L.append(regression_table(res["dense"]) + "\n")
        L.append("## 3. Peak RSS growth of a fit / X.nbytes (fresh process)\n")
        L.append(memory_table(res["dense"], CLASSIFIERS + REGRESSORS) + "\n")
        L.append("## 4. What the skdp fits did (last timed fit, default threads)\n")
        L.append(skdp_fit_table(res["dense"], ("skdp_logistic", "skdp_huber")) + "\n")
    if res["sparse"]:
        L.append("## 5. Sparse CSR input: `DPLogisticRegression()` against "
                 "`LogisticRegression()`\n")
        L.append(sparse_time_table(res["sparse"]) + "\n")
        L.append("Peak RSS growth / CSR size (fresh process):\n")
        L.append(memory_table(res["sparse"], ("skdp_logistic", "sklearn_logistic")) + "\n")
        if any(cell_status(c, "skdp_logistic") == "ok" for c in res["sparse"]):
            L.append(skdp_fit_table(res["sparse"], ("skdp_logistic",)) + "\n")
    coef = res.get("coef")
    if coef is not None:
        L.append("## 6. Sparse against dense fit of the same data\n")
        where = describe(COEF_CASE)
        if coef.get("status") == "ok":
            L.append(f"{where}, `random_state=0`: max |coef difference| (intercept "
                     f"included) = {coef['max_abs_coef_diff']:.3g}; noise_scale_ sparse "
                     f"{coef['sparse']['noise_scale_']:.4g}, dense "
                     f"{coef['dense']['noise_scale_']:.4g}"
                     f"; solver_ sparse `{coef['sparse']['solver_']}`, dense "
                     f"`{coef['dense']['solver_']}`.\n")
        else:
            L.append(f"{where}: not compared, the sparse fit was "
                     f"{(coef.get('status') or coef.get('error')).rstrip('.')}.\n")
    L.append("## 7. Dask\n")
    dask = res.get("dask")
    if dask is None:
        L.append(f"{res['dask_note']}.\n")
    elif "error" in dask:
        L.append(f"The Dask child failed: {dask['error']}.\n")
    else:
        rows = [[LIBS.get(lib, {}).get("label", "dask_ml LogisticRegression"),
                 C.fmt_time(f["fit_s"]), fmt_mib(f["client_growth_bytes"]),
                 ", ".join(fmt_mib(b) for b in f["worker_peak_bytes"]),
                 ", ".join(fmt_mib(p - b) for p, b in zip(f["worker_peak_bytes"],
                                                          f["worker_rss_before_bytes"])),
                 str(f["summary"].get("n_iter_"))]
                for lib, f in dask["fits"].items()]
        L.append(f"{C.fmt_n(dask['n'])} × {dask['d']} float64 ({fmt_mib(dask['nbytes'])}) "
                 "persisted on a `LocalCluster` of 2 worker processes with 1 thread each "
                 "(bench_dask_estimator.py's data); one fit each after a warm-up on 2·10^6 "
                 f"rows. Versions: {dask['versions']}.\n")
        L.append(C.md_table(["estimator", "fit", "client peak RSS growth", "worker peak RSS",
                             "worker peak growth", "n_iter_"], rows, "lrrrrr") + "\n")
    notes = warnings_notes(res["dense"] + res["sparse"]) + unexpected_notes(res)
    if notes:
        L.append("## Notes (computed)\n")
        L += notes
        L.append("")
    L.append("## Reproduce\n")
    L.append("```\npython benchmarks/bench_scale.py            # all sizes, writes "
             "results/scale.{md,json}\npython benchmarks/bench_scale.py --quick    # n ≤ "
             "10^5, writes results/scale_quick.{md,json}\npython benchmarks/bench_scale.py "
             "--max-n 1000000 --no-dask\n```")
    return "\n".join(L)


if __name__ == "__main__":
    main()
