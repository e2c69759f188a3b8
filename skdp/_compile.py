"""``skdp compile``: compile every numba kernel of skdp's solvers into numba's on-disk cache.

skdp's solvers run numba kernels, compiled on their first call and then cached on disk
(:mod:`skdp._numba_cache`).  A fit whose kernels are not cached yet pays their compilation:
0 s for the binary logistic and Huber defaults (objective perturbation draws its noise in
plain Python and needs no kernel), but 12-13 s on a quiet two-core machine for a first
multinomial ``DPLogisticRegression`` or ``make_private_pipeline(DPLogisticRegression(...))``
fit (both DP-SGD: its parallel batch sum, its loop, the exact noise sampler; numba's own
typing and lowering, which no optimisation level removes:
``benchmarks/results/startup_opt_levels.md``), and up to 10 s for each other solver
(``benchmarks/results/startup.md``).  This
command pays all of it once, group by group, so that the first fit of every session after
it reads its kernels from the cache.

Why the first fit cannot simply compile less (issue 48 asked for at most 3 s): in a
multinomial default fit every skdp kernel compiles exactly one signature, all are cached,
and the kernels of unused solvers never compile; what remains is DP-SGD's chain (13.8-14.1
s of compiling CPU time, thread time, on a loaded two-core machine).  Two levers were
measured and not taken: compiling the parallel batch sum with ``parallel={"prange": True}``
only (the other parfor passes off) cost 2 s *more* (the allocations compile as separate
functions); pruning DP-SGD's unused row forms (CSR, copy) and its float-noise branch by
passing None saved 1.5 s (11.7-13.1 s, coefficients bitwise equal) but would make the
dense and CSR designs and the float noise compile a loop each, so a session fitting both,
and this command, would compile more.  Neither brings a first fit near 3 s.

How: each group runs tiny fits of the public estimators (a few rows, a few steps) with the
arguments that select each compiled variant -- dense float64 rows in C and Fortran order
(a pandas DataFrame gives Fortran order), CSR rows for the solvers that fit them without a
copy, a design wide enough for DP-SGD's batch sum in parts, every loss family -- and draws
enough exact noise to run the compiled samplers (small draws run in plain Python).  numba
compiles one variant per argument type, so float32 rows (``--float32``) or non-contiguous
views compile their own on first use.  A user-defined loss (``DPNonconvexRegressor(loss=
callable)``) is compiled per process and never cached.

Where the cache lives: ``NUMBA_CACHE_DIR`` if set, else numba's default, the ``__pycache__``
folder next to each kernel module (when the install is writable), else the user-wide cache
(``~/.cache/numba``).  With none of them writable skdp falls back to a temporary cache that
is removed at exit (:func:`skdp._numba_cache.ensure_cache_locator`): then there is nothing
to keep, and the command says so and exits with status 1.

**Why a command, not a shipped cache or an install step.**  numba's cache is keyed by the
source file's path and modification time, the numba version and the CPU it was compiled
for (its name and features: the code is tuned to that CPU), so a cache built elsewhere is
rejected or stale on most machines; a wheel cannot ship one that works portably.  ``pip
install`` cannot compile either: a wheel runs no code at install, and a build step would
compile for the build machine, not the user's.  Hence a one-time command, run after
installing (or after upgrading skdp or numba, which invalidates the cache).

Exit status: 0 when every group compiled; 1 when one failed (its error is printed) or the
cache cannot be kept.
"""

import os
import sys
import time
import warnings

__all__ = ["GROUPS", "cache_location", "run_compile"]


# -- the data of the warm-up fits (public, synthetic, rows of norm <= 1) -------------------

def _data(n, d, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)          # ||x||_2 <= 1
    w = rng.normal(size=d)
    z = X @ w
    y2 = (z > 0).astype(int)
    y2[:2] = (0, 1)                                            # both classes present
    y3 = np.digitize(z, np.quantile(z, [1 / 3, 2 / 3]))
    yr = np.clip(z, -1.0, 1.0)
    return X, y2, y3, yr


def _layouts(X, float32):
    """The dense forms numba compiles apart: float64 in C and Fortran order (and float32)."""
    import numpy as np

    forms = [np.ascontiguousarray(X), np.asfortranarray(X)]
    if float32:
        forms += [np.ascontiguousarray(X, dtype=np.float32),
                  np.asfortranarray(X, dtype=np.float32)]
    return forms


def _fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


# -- the groups -------------------------------------------------------------------------------

def _secure_noise(float32):
    """The exact discrete Gaussian and Laplace samplers (ChaCha20 words), serial and in
    parallel chunks: every release's noise (``secure_noise``, the default)."""
    from ._mechanisms import _exact

    for size in (_exact.PY_MAX_DRAWS + 1, max(_exact.PARALLEL_MIN, _exact.PY_MAX_DRAWS + 1)):
        source = _exact.new_word_source(0)
        _exact._draw(source, 1 << 20, size, True)
        _exact._draw(source, 1 << 20, size, False)


def _convex(solver, *, sparse=False, wide=False, multinomial=True):
    """The three convex models (binary and multinomial logistic, Huber) by ``solver`` on
    dense float64 rows in both orders (``sparse``: and CSR rows; ``wide``: and a design wide
    enough for DP-SGD's batch sum in parts, :func:`skdp._solvers._dpsgd.batch_parts`)."""

    def run(float32):
        from .linear_model import DPHuberRegressor, DPLogisticRegression

        extra = {"n_steps": 4} if solver == "dpsgd" else {}
        common = dict(epsilon=1.0, data_norm=1.0, solver=solver, random_state=0)
        X, y2, y3, yr = _data(80, 3)
        designs = _layouts(X, float32)
        if sparse:
            import scipy.sparse as sp

            designs.append(sp.csr_matrix(X))
        for Xf in designs:
            _fit(DPLogisticRegression(classes=[0, 1], **common, **extra), Xf, y2)
            if multinomial:
                _fit(DPLogisticRegression(classes=[0, 1, 2], **common, **extra), Xf, y3)
            _fit(DPHuberRegressor(huber_threshold=0.1, y_bound=1.0, **common, **extra), Xf,
                 yr)
        if wide:
            # batch_size x coefficients >= PARTS_MIN_WORK and >= 4 rows a part
            X, y2, _, _ = _data(64, 700)
            designs = _layouts(X, float32)
            if sparse:
                import scipy.sparse as sp

                designs.append(sp.csr_matrix(X))
            for Xf in designs:
                _fit(DPLogisticRegression(classes=[0, 1], batch_size=50, **common,
                                          **extra), Xf, y2)
    return run


def _nonconvex(solver, *, wide=False):
    """``DPNonconvexRegressor`` by ``solver`` with a smooth robust loss and a nonsmooth one,
    on dense float64 rows in both orders (``wide``: and a design for the batch sum in
    parts)."""

    def run(float32):
        from .linear_model import DPNonconvexRegressor

        extra = {"n_steps": 4} if solver in ("rrpsgd", "dpsgd", "warm_gd") else {}
        if solver == "dpsgd":
            extra["max_coef_norm"] = 1.0
        losses = ("auto", "capped_absolute") if solver.startswith("zeroth_order") else \
            ("auto",)
        common = dict(epsilon=5.0, data_norm=1.0, y_bound=1.0, loss_scale=0.3,
                      solver=solver, random_state=0)
        # spider refuses fewer rows than its accuracy target needs (1015 at epsilon 5)
        X, _, _, yr = _data(1100 if solver == "spider" else 80, 3)
        for Xf in _layouts(X, float32):
            for loss in losses:
                _fit(DPNonconvexRegressor(loss=loss, **common, **extra), Xf, yr)
        if wide:
            X, _, _, yr = _data(64, 700)
            for Xf in _layouts(X, float32):
                _fit(DPNonconvexRegressor(batch_size=50, **common, **extra), Xf, yr)
    return run


def _pipeline(float32):
    """``make_private_pipeline`` on a raw table (a numeric and a categorical column): the
    private spline basis and one-hot encoding, then the model on their CSR design
    (DP-SGD below epsilon 5, objective perturbation above, Huber); needs pandas."""
    import numpy as np

    try:
        import pandas as pd
    except ImportError:
        return "skipped: pandas is not installed"
    from ._pipeline import make_private_pipeline
    from .linear_model import DPHuberRegressor, DPLogisticRegression

    rng = np.random.default_rng(0)
    n = 400
    age = rng.integers(18, 90, n)
    frame = pd.DataFrame({"age": age.astype(float),
                          "job": rng.choice(np.array(["a", "b", "c"], dtype=object), n)})
    y = (age > 40).astype(int)
    schema = dict(numeric=["age"], categorical=["job"], random_state=0)
    for epsilon in (1.0, 10.0):
        _fit(make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=epsilon,
                                   **schema), frame, y)
    pipe = _fit(make_private_pipeline(DPHuberRegressor(huber_threshold=0.1, y_bound=1.0),
                                      **schema), frame, (age - 50.0) / 40.0)
    # a Dask fit's compact basis (its encode and expand kernels, on the workers)
    from .preprocessing._compact_basis import CompactBasis

    recipe = CompactBasis.of(pipe[:-1])
    recipe.expand(recipe.encode(frame))
    return None


def _preprocessing(float32):
    """The private scalers (their releases: means, variances, quantiles)."""
    from .preprocessing import DPRobustScaler, DPStandardScaler

    X, _, _, _ = _data(400, 3)
    for Xf in _layouts(X, float32):
        _fit(DPStandardScaler(feature_bounds=(-1.0, 1.0), random_state=0), Xf, None)
        _fit(DPRobustScaler(random_state=0), Xf, None)


#: ``(name, what it serves, warm-up(float32) -> None or a note)``, in the order run.  Every
#: solver of ``skdp._solvers.SOLVER_OPTIONS`` has a group (a test checks it).
GROUPS = (
    ("secure_noise", "exact noise of every release", _secure_noise),
    ("dpsgd", "multinomial default; pipeline below epsilon 5",
     _convex("dpsgd", sparse=True, wide=True)),
    ("pipeline", "make_private_pipeline on a raw table", _pipeline),
    ("objective_perturbation", "binary logistic and Huber default",
     _convex("objective_perturbation", sparse=True, multinomial=False)),
    ("output_perturbation", "solver='output_perturbation'",
     _convex("output_perturbation", sparse=True)),
    ("phased", "solver='phased'", _convex("phased")),
    ("resque", "solver='resque'", _convex("resque", multinomial=False)),
    ("warm_gd", "DPNonconvexRegressor default", _nonconvex("warm_gd")),
    ("spider", "solver='spider'", _nonconvex("spider")),
    ("rrpsgd", "solver='rrpsgd'", _nonconvex("rrpsgd", wide=True)),
    ("zeroth_order", "solver='zeroth_order'", _nonconvex("zeroth_order")),
    ("zeroth_order_naive", "solver='zeroth_order_naive'", _nonconvex("zeroth_order_naive")),
    ("nonconvex_dpsgd", "DPNonconvexRegressor(solver='dpsgd')", _nonconvex("dpsgd", wide=True)),
    ("preprocessing", "DPStandardScaler, DPRobustScaler", _preprocessing),
)

GROUP_NAMES = tuple(name for name, _, _ in GROUPS)


# -- where the cache is -----------------------------------------------------------------------

def cache_location():
    """``(directory or None, how numba chose it)`` for skdp's kernels, without importing
    them: ``NUMBA_CACHE_DIR``, the in-tree ``__pycache__`` folders, the user-wide cache, or
    None (nothing writable: a temporary cache removed at exit)."""
    from numba.core import config

    from ._numba_cache import _user_wide_cache_dir, _writable_dir

    if config.CACHE_DIR and _writable_dir(config.CACHE_DIR):
        return os.path.abspath(config.CACHE_DIR), "NUMBA_CACHE_DIR"
    package = os.path.dirname(os.path.abspath(__file__))
    if _writable_dir(os.path.join(package, "_solvers", "__pycache__")):
        return package, ("numba's default: the __pycache__ folder next to each kernel "
                         "module; set NUMBA_CACHE_DIR to put it elsewhere")
    user = _user_wide_cache_dir()
    if _writable_dir(user):
        return user, ("numba's user-wide cache (skdp's install is read-only); set "
                      "NUMBA_CACHE_DIR to put it elsewhere")
    return None, "no writable place"


def _cache_files(directory):
    """``(files, bytes)`` of numba cache files (``*.nbi``, ``*.nbc``) under ``directory``."""
    count = size = 0
    for root, _, files in os.walk(directory):
        for name in files:
            if name.endswith((".nbi", ".nbc")):
                count += 1
                try:
                    size += os.path.getsize(os.path.join(root, name))
                except OSError:
                    pass
    return count, size


class _CompileCounter:
    """Records the skdp kernels numba compiles (not those it loads from the cache): their
    qualified names in ``names``, in compile order."""

    def __init__(self):
        self.names = []

    @property
    def count(self):
        return len(self.names)

    def install(self):
        from numba.core import event

        counter = self

        class Listener(event.Listener):
            def on_start(self, ev):
                pass

            def on_end(self, ev):
                func = getattr(ev.data.get("dispatcher"), "py_func", None)
                if getattr(func, "__module__", "").startswith("skdp."):
                    counter.names.append(func.__qualname__)

        event.register("numba:compile", Listener())


# -- the command --------------------------------------------------------------------------------

def run_compile(groups=None, *, quiet=False, float32=False, out=None, err=None):
    """Compile the kernels of ``groups`` (names of :data:`GROUPS`; None: all) into numba's
    cache, printing one line per group (none with ``quiet``).  Returns the exit status:
    0, or 1 when a group failed or the cache cannot be kept."""
    from ._progress import Progress

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    selected = [g for g in GROUPS if groups is None or g[0] in groups]
    sink = open(os.devnull, "w") if quiet else None
    progress = Progress(sink or out)
    try:
        progress.line("skdp compile: compiling skdp's numba kernels into numba's on-disk "
                      "cache, once (about a minute on two cores)")
        progress.step("importing numba ...")
        directory, how = cache_location()
        if directory is None:
            print("skdp compile: error: numba cannot keep compiled code here: neither "
                  "NUMBA_CACHE_DIR, nor skdp's install folder, nor the user cache "
                  "(~/.cache/numba) is writable. Set NUMBA_CACHE_DIR to a writable "
                  "directory and run skdp compile again.", file=err, flush=True)
            return 1
        progress.line(f"numba cache: {directory} ({how})")
        counter = _CompileCounter()
        counter.install()
        failed = []
        start = time.perf_counter()
        width = max(len(name) for name, _, _ in selected)
        for name, serves, warm in selected:
            progress.step(f"{name}: compiling ({serves}) ...")
            before, t0 = counter.count, time.perf_counter()
            try:
                note = warm(float32)
            except Exception as exc:     # report, go on with the other groups
                failed.append(name)
                progress.line(f"  {name:<{width}}  FAILED after "
                              f"{time.perf_counter() - t0:.1f} s")
                print(f"skdp compile: error: {name}: {type(exc).__name__}: {exc}",
                      file=err, flush=True)
                continue
            compiled = counter.count - before
            status = note or (f"{compiled} kernels compiled" if compiled else
                              "already cached")
            progress.line(f"  {name:<{width}}  {time.perf_counter() - t0:5.1f} s  {status}"
                          f"  ({serves})")
        files, size = _cache_files(directory)
        progress.line(f"done in {time.perf_counter() - start:.1f} s: {counter.count} kernels "
                      f"compiled, {len(failed)} groups failed; {files} cache files "
                      f"({size / 2**20:.1f} MiB) under {directory}")
        return 1 if failed else 0
    finally:
        progress.close()
        if sink is not None:
            sink.close()
