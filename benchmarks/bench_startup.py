"""First-run latency: import plus first fit, cold (empty numba cache) and warm, per solver.

Each measurement is a fresh interpreter (``python -c``) with its own ``NUMBA_CACHE_DIR``:
*cold* starts from an empty cache directory (what a user pays on the first fit after an
install), *warm* reuses the directory the cold run filled (every later session; the run
with the median total of ``WARM_REPEATS`` fresh interpreters).  The
process times ``import skdp`` plus ``Estimator(...).fit`` on data of the demo's size (the
embedded Adult data for the classifiers, Bike sharing for the regressors) and reports the
two parts.  *Import* is ``import sklearn.base`` (timed on its own and reported as a
column: skdp imports it anyway, and its cost is scikit-learn's, which varies with the
machine's speed), ``import skdp, skdp.datasets`` plus the first ``skdp.Estimator``
lookup, which imports the estimator's module (``skdp/__init__`` is lazy); loading the
demo data is reported beside the total, not in it.  A last row fits every solver once in
one fresh process with an empty cache: the total compilation a session touching
everything pays, and the demo is timed the same way.  Where the cold time goes is reported
for the default estimators by numba's own compile events
(``numba.core.event``: seconds spent compiling each dispatcher).

The two defaults that run DP-SGD have rows of their own: the multinomial
``DPLogisticRegression`` on scikit-learn's digits (pixels / 128, 10 classes) and
``make_private_pipeline(DPLogisticRegression(...))`` on the raw Adult table (from
``SKDP_DATA``; its load is not in the total).  Then ``skdp compile`` runs once into an
empty cache (timed, its output kept), and the first fit of each default runs in a fresh
process on that cache: the table says how long it took and how many kernels it still
compiled (none, if the command covers it).

``--core-python PATH`` also times the three default fits with the interpreter of a
virtual environment that has skdp and its *core* dependencies only (``python -m venv
ENV && ENV/bin/pip install .``): what ``pip install skdp`` gives.  The development
environment has pandas and pyarrow too (test extras), which scikit-learn's
``sklearn.utils.fixes`` imports whenever they are installed; the table says which of them
each interpreter imported.

Writes ``benchmarks/results/startup.md`` / ``.json``.  Run on a quiet machine:
``python benchmarks/bench_startup.py [--core-python ENV/bin/python]``.  ``--opt-levels``
instead compares numba's optimisation levels (:func:`opt_levels`) and writes
``benchmarks/results/startup_opt_levels.md``.
"""

import inspect
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import (RESULTS_DIR, machine_info, md_table, run_python,  # noqa: E402
                     write_results)

CASES = [
    # (label, data, estimator expression)
    ("DPLogisticRegression() (default)", "adult",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=[0, 1], random_state=0)"),
    ("DPHuberRegressor() (default)", "bike",
     "skdp.DPHuberRegressor(epsilon=1.0, data_norm=norm, huber_threshold=0.1, random_state=0)"),
    ("DPNonconvexRegressor() (default)", "bike",
     "skdp.DPNonconvexRegressor(epsilon=1.0, data_norm=norm, loss_scale=0.3, random_state=0)"),
    ("logistic, output_perturbation", "adult",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=[0, 1], "
     "solver='output_perturbation', random_state=0)"),
    ("logistic, phased", "adult",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=[0, 1], "
     "solver='phased', random_state=0)"),
    ("logistic, resque", "adult",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=[0, 1], "
     "solver='resque', random_state=0)"),
    ("logistic, dpsgd", "adult",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=[0, 1], "
     "solver='dpsgd', random_state=0)"),
    ("nonconvex, spider", "bike",
     "skdp.DPNonconvexRegressor(epsilon=5.0, data_norm=norm, loss_scale=0.3, "
     "solver='spider', random_state=0)"),
    ("nonconvex, rrpsgd", "bike",
     "skdp.DPNonconvexRegressor(epsilon=1.0, data_norm=norm, loss_scale=0.3, "
     "solver='rrpsgd', batch_size=100, n_steps=200, random_state=0)"),
    ("nonconvex, zeroth_order", "bike",
     "skdp.DPNonconvexRegressor(epsilon=1.0, data_norm=norm, loss='capped_absolute', "
     "loss_scale=0.3, solver='zeroth_order', random_state=0)"),
]

#: the first ``N_DEFAULT_CASES`` of ``CASES`` are the three estimators at their defaults
N_DEFAULT_CASES = 3

#: the two defaults that run DP-SGD (issue 48: each default's first fit): the multinomial
#: default on scikit-learn's digits (pixels / 128: rows of norm <= 1, 10 classes, 1,797
#: rows) and the private pipeline on the raw Adult table (32,561 rows, 14 raw columns; needs
#: ``SKDP_DATA``), both at epsilon = 1
DPSGD_DEFAULT_CASES = [
    ("DPLogisticRegression() multinomial (default)", "digits",
     "skdp.DPLogisticRegression(epsilon=1.0, data_norm=norm, classes=list(range(10)), "
     "random_state=0)"),
    ("make_private_pipeline(DPLogisticRegression()) (default)", "adult_raw",
     "skdp.make_private_pipeline(skdp.DPLogisticRegression(classes=[0, 1], random_state=0), "
     "epsilon=1.0, random_state=0)"),
]

#: every default (the rows of the ``skdp compile`` table)
DEFAULT_CASES = CASES[:N_DEFAULT_CASES] + DPSGD_DEFAULT_CASES

#: the data loaders of the snippet beyond the embedded sets
LOADERS = """
class _Bunch:
    def __init__(self, data, target, row_norm_bound):
        self.data, self.target, self.row_norm_bound = data, target, row_norm_bound

def _load_digits():
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return _Bunch(X / 128.0, y, 1.0)

def _load_adult_raw():
    import sys
    sys.path.insert(0, BENCH_DIR)
    from _raw_protocol import load_raw
    X, y = load_raw("adult")
    return _Bunch(X, y, None)
"""

SNIPPET = """
import json, time, warnings
t0 = time.perf_counter()
# scikit-learn first, timed on its own: skdp imports it anyway (the total is unchanged),
# and the split shows how much of the total is scikit-learn's import in this interpreter
import sklearn.base
t_sklearn = time.perf_counter() - t0
import skdp
from skdp import datasets
t1 = time.perf_counter()
compile_s = {{}}
try:
    from numba.core import event as _ev

    class _Listener(_ev.Listener):
        # exclusive time per dispatcher: a nested compile is charged to itself only
        stack = []

        def on_start(self, e):
            self.stack.append([time.perf_counter(), 0.0])

        def on_end(self, e):
            start, children = self.stack.pop()
            total = time.perf_counter() - start
            name = getattr(e.data.get("dispatcher"), "py_func", None)
            key = getattr(name, "__qualname__", "?")
            compile_s[key] = compile_s.get(key, 0.0) + total - children
            if self.stack:
                self.stack[-1][1] += total

    _ev.register("numba:compile", _Listener())
except Exception:
    pass
BENCH_DIR = {bench_dir!r}
{loaders}
data = {{"adult": datasets.load_demo_adult, "bike": datasets.load_demo_bike,
        "digits": _load_digits, "adult_raw": _load_adult_raw}}
import hashlib
import numpy as np
fits = []
fit_each = {{}}
coef_hash = {{}}
warnings.simplefilter("ignore")
t_fit = t_data = t_construct = 0.0
for label, name, expr in {cases!r}:
    t = time.perf_counter()
    bunch = data[name]()
    norm = bunch.row_norm_bound
    t_data += time.perf_counter() - t
    # the first ``skdp.DPxxx`` lookup imports the estimator's module (skdp/__init__ is
    # lazy): that import is part of what a user waits for, so it counts as import time
    t = time.perf_counter()
    est = eval(expr)
    t_construct += time.perf_counter() - t
    t = time.perf_counter()
    est.fit(bunch.data, bunch.target)
    fit_each[label] = time.perf_counter() - t
    t_fit += fit_each[label]
    fits.append(label)
    model = est[-1] if hasattr(est, "steps") else est    # a pipeline's model
    coef_hash[label] = hashlib.sha1(np.ascontiguousarray(model.coef_).tobytes()
                                    + np.ascontiguousarray(model.intercept_).tobytes()
                                    ).hexdigest()
import sys
print(json.dumps({{"import_s": t1 - t0 + t_construct, "fit_s": t_fit, "fits": fits,
                   "package_import_s": t1 - t0, "estimator_import_s": t_construct,
                   "data_s": t_data, "compile_s": compile_s, "sklearn_s": t_sklearn,
                   "fit_each_s": fit_each, "coef_sha1": coef_hash,
                   "imported": [m for m in ("pandas", "pyarrow") if m in sys.modules]}}))
"""


def measure(cases, cache_dir, executable=None, env=None):
    # another interpreter runs outside the repository, so that it imports its installed skdp
    out = run_python(SNIPPET.format(cases=cases, bench_dir=str(Path(__file__).parent),
                                    loaders=LOADERS),
                     env={"NUMBA_CACHE_DIR": str(cache_dir), **(env or {})},
                     timeout=1800, executable=executable,
                     cwd=tempfile.gettempdir() if executable else None)
    return json.loads(out.strip().splitlines()[-1])


#: fresh interpreters per warm measurement (the median total is reported)
WARM_REPEATS = 3


def cold_warm_rows(cases, executable=None, raw=None):
    rows = []
    for label, data, expr in cases:
        with tempfile.TemporaryDirectory() as cache:
            cold = measure([(label, data, expr)], cache, executable)
            warms = [measure([(label, data, expr)], cache, executable)
                     for _ in range(WARM_REPEATS)]
        # the warm run with the median total (the machine's speed varies between runs)
        warm = sorted(warms, key=lambda w: w["import_s"] + w["fit_s"])[len(warms) // 2]
        if raw is not None:
            raw[label] = {"cold": cold, "warm": warm, "warm_runs": warms}
        top = sorted(cold["compile_s"].items(), key=lambda kv: -kv[1])[:3]
        rows.append([label, f"{cold['import_s']:.2f}", f"{cold['fit_s']:.2f}",
                     f"{cold['import_s'] + cold['fit_s']:.2f}", f"{warm['import_s']:.2f}",
                     f"{warm['fit_s']:.2f}", f"{warm['import_s'] + warm['fit_s']:.2f}",
                     f"{warm['sklearn_s']:.2f}",
                     f"{warm['import_s'] + warm['fit_s'] - warm['sklearn_s']:.2f}",
                     f"{warm['data_s']:.2f}",
                     ", ".join(f"{k} {v:.1f} s" for k, v in top),
                     ", ".join(warm.get("imported", [])) or "neither"])
        print(rows[-1], flush=True)
    return rows


def after_compile(cases):
    """``skdp compile`` into an empty cache (timed, its lines kept), then the first fit of
    each of ``cases`` in a fresh process on that cache: what a user pays after running the
    command once.  Returns ``(compile wall s, command output, {label: measurement})``."""
    import time

    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        out = run_python(args=["-m", "skdp", "compile"], env={"NUMBA_CACHE_DIR": cache},
                         timeout=3600)
        compile_wall = time.perf_counter() - t0
        fits = {}
        for case in cases:
            fits[case[0]] = measure([case], cache)
            print(case[0], f"{fits[case[0]]['fit_s']:.2f}",
                  len(fits[case[0]]["compile_s"]), flush=True)
    return compile_wall, out, fits


AFTER_HEADERS = ["fit", "cold first fit s (empty cache)", "first fit s after skdp compile",
                 "kernels compiled in that fit", "warm fit s"]


def after_compile_rows(cases, raw_cases, fits):
    rows = []
    for label, _, _ in cases:
        cold, warm, after = raw_cases[label]["cold"], raw_cases[label]["warm"], fits[label]
        rows.append([label, f"{cold['fit_s']:.2f}", f"{after['fit_s']:.2f}",
                     str(len(after["compile_s"])), f"{warm['fit_s']:.2f}"])
    return rows


SKLEARN_IMPORT = """
import time
t0 = time.perf_counter()
import sklearn.base
print(time.perf_counter() - t0)
"""


def sklearn_import_s(executable=None, repeats=3):
    """Median time of ``import sklearn.base`` alone in a fresh interpreter: the floor under
    every warm time above, and a gauge of the machine's speed during the run (it varies by
    tens of percent between runs on the same virtual machine)."""
    times = [float(run_python(SKLEARN_IMPORT, executable=executable,
                              cwd=tempfile.gettempdir() if executable else None).strip())
             for _ in range(repeats)]
    return float(np.median(times))


HEADERS = ["fit", "cold import s", "cold fit s", "cold total s", "warm import s",
           "warm fit s", "warm total s", "of which import sklearn.base s",
           "skdp's share s (total - sklearn)", "warm data load s (not in total)",
           "largest compiles (cold)", "pandas/pyarrow imported"]


DEMO = """
import contextlib, io, json, time
t0 = time.perf_counter()
from skdp._demo import run_demo
with contextlib.redirect_stdout(io.StringIO()):
    run_demo(quick={quick})
print(json.dumps({{"demo_s": time.perf_counter() - t0}}))
"""


def demo_times(quick):
    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        cold = json.loads(run_python(DEMO.format(quick=quick), env=env, timeout=1800)
                          .strip().splitlines()[-1])["demo_s"]
        warm = json.loads(run_python(DEMO.format(quick=quick), env=env, timeout=1800)
                          .strip().splitlines()[-1])["demo_s"]
    return cold, warm


#: numba optimisation levels compared by ``--opt-levels`` (3 is numba's default)
OPT_LEVELS = (3, 2, 1, 0)
#: interleaved rounds of ``--opt-levels`` (the machine's speed drifts between runs)
OPT_ROUNDS = 2


def opt_levels():
    """The every-solver session at each ``NUMBA_OPT`` level: compilation (cold, empty cache)
    against the warm fits' time, and whether the coefficients keep their bits.

    ``NUMBA_OPT`` is numba's process-wide LLVM optimisation level, so it is not a knob a
    library may turn for its users (it would change how their own numba code compiles);
    this measures what the compile-time target would cost in fit time if it were one.
    Levels are interleaved over ``OPT_ROUNDS`` rounds; each cell is the median."""
    runs = {level: [] for level in OPT_LEVELS}
    for _ in range(OPT_ROUNDS):
        for level in OPT_LEVELS:
            env = {"NUMBA_OPT": str(level)}
            with tempfile.TemporaryDirectory() as cache:
                cold = measure(CASES, cache, env=env)
                warm = measure(CASES, cache, env=env)
            runs[level].append({"cold": cold, "warm": warm})
            print(level, f"{sum(cold['compile_s'].values()):.1f}", f"{warm['fit_s']:.2f}",
                  flush=True)
    report_opt_levels(runs, machine_info())


def report_opt_levels(runs, info):
    """Write ``results/startup_opt_levels.md`` from ``runs`` (``{level: [{"cold", "warm"}]}``);
    ``--opt-levels --report-only`` re-renders it from the stored json."""
    runs = {int(level): value for level, value in runs.items()}
    top, bottom = OPT_LEVELS[0], OPT_LEVELS[-1]
    reference = runs[top][0]["warm"]["coef_sha1"]
    labels = [label for label, _, _ in CASES]
    solvers = labels[N_DEFAULT_CASES:]   # per-fit columns: the explicit solvers
    headers = (["NUMBA_OPT", "compile s (cold)", f"warm fits s ({len(labels)} fits)"]
               + [f"warm {label} s" for label in solvers]
               + [f"coefficients bitwise equal to level {top}"])
    rows = []
    compile_of, warm_of = {}, {}
    for level in OPT_LEVELS:
        compile_s = compile_of[level] = float(np.median(
            [sum(r["cold"]["compile_s"].values()) for r in runs[level]]))
        warm_s = warm_of[level] = float(np.median([r["warm"]["fit_s"] for r in runs[level]]))
        each = [float(np.median([r["warm"]["fit_each_s"][label] for r in runs[level]]))
                for label in solvers]
        same = [label for label in labels
                if all(r[k]["coef_sha1"][label] == reference[label]
                       for r in runs[level] for k in ("cold", "warm"))]
        rows.append([str(level), f"{compile_s:.1f}", f"{warm_s:.2f}",
                     *[f"{v:.2f}" for v in each],
                     "all" if len(same) == len(labels) else f"{len(same)} of {len(labels)}"])
    lines = [
        "# Compilation against fit time at numba's optimisation levels",
        "",
        inspect.cleandoc(opt_levels.__doc__).split("\n\n", 1)[1],
        "",
        f"Machine: {info.get('cpu', '?')}, {info.get('nproc', '?')} cores; load average at "
        f"start {info.get('loadavg_at_start')}.  The session is the last table of "
        f"``startup.md`` ({len(labels)} fits, every solver, data of the demo's size); *warm* "
        "is a second "
        "fresh process on the cache the cold one filled.",
        "",
        md_table(headers, rows),
        "",
        f"Level {bottom} (no LLVM optimisation) compiles {compile_of[bottom]:.1f} s against "
        f"{compile_of[top]:.1f} s at level {top}, {compile_of[top] - compile_of[bottom]:.1f} s "
        f"less, and fits {warm_of[bottom] / warm_of[top]:.1f}x slower; what remains at level "
        f"{bottom} is numba's own "
        "typing and lowering plus LLVM's code generation, which grow with the amount of "
        "code compiled.",
    ]
    write_results("startup_opt_levels", "\n".join(lines),
                  {"runs": {str(k): v for k, v in runs.items()}, "machine": info})
    print("\n".join(lines[-1:]))


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--core-python", default=None,
                    help="interpreter of a virtual environment with the core dependencies "
                         "only (module docstring)")
    ap.add_argument("--opt-levels", action="store_true",
                    help="only compare numba's optimisation levels (opt_levels) and write "
                         "results/startup_opt_levels.md")
    ap.add_argument("--report-only", action="store_true",
                    help="with --opt-levels: re-render the report from the stored json")
    args = ap.parse_args()
    if args.opt_levels and args.report_only:
        stored = json.loads((RESULTS_DIR / "startup_opt_levels.json").read_text())
        report_opt_levels(stored["runs"], stored["machine"])
        return
    if args.opt_levels:
        opt_levels()
        return
    from _common import CpuLoad

    load = CpuLoad()
    raw = {"cases": {}, "sklearn_import_s": sklearn_import_s()}
    table_cases = CASES[:N_DEFAULT_CASES] + DPSGD_DEFAULT_CASES + CASES[N_DEFAULT_CASES:]
    rows = cold_warm_rows(table_cases, raw=raw["cases"])
    compile_wall, compile_out, after = after_compile(DEFAULT_CASES)
    raw["skdp_compile"] = {"wall_s": compile_wall, "output": compile_out, "fits": after}
    core_rows = []
    if args.core_python:
        raw["core_only"] = {}
        raw["core_only_sklearn_import_s"] = sklearn_import_s(args.core_python)
        core_rows = cold_warm_rows(CASES[:N_DEFAULT_CASES], args.core_python, raw["core_only"])
        raw["core_only_versions"] = run_python(
            "import numpy, scipy, sklearn, numba; print(numpy.__version__, scipy.__version__,"
            " sklearn.__version__, numba.__version__)", executable=args.core_python,
            cwd=tempfile.gettempdir()).strip()
    with tempfile.TemporaryDirectory() as cache:
        every = measure(CASES, cache)
    raw["every_solver"] = every
    raw["demo"] = {"full": demo_times(False), "quick": demo_times(True)}
    raw["load"] = load.stop()
    info = machine_info()
    raw["machine"] = info
    threads = (f"numba {info['numba_num_threads']} threads "
               f"(NUMBA_NUM_THREADS={info['env'].get('NUMBA_NUM_THREADS') or 'unset'}), "
               f"OMP_NUM_THREADS={info['env'].get('OMP_NUM_THREADS') or 'unset'}")
    lines = [
        "# First-run latency: import + first fit, cold and warm numba cache",
        "",
        __doc__.split("\n\n", 1)[1].rsplit("Writes", 1)[0].strip(),
        "",
        f"Machine: {info.get('cpu', '?')}, {info.get('nproc', '?')} cores; {threads}; "
        f"skdp at commit {info['git']['commit']} "
        f"({len(info['git']['skdp_changes'])} uncommitted changes under skdp/).  Load: other "
        f"processes used {raw['load']['external_cores']:.2f} of the cores on average over "
        f"the run's {raw['load']['wall_s'] / 60:.0f} min (load average at the end "
        f"{', '.join(f'{x:.1f}' for x in raw['load']['loadavg_end'] or ())}): a shared "
        "machine, so absolute seconds are inflated; the counts of compiled kernels are not.",
        "",
        f"``import sklearn.base`` alone (median of 3 fresh interpreters): "
        f"{raw['sklearn_import_s']:.2f} s.",
        "",
        md_table(HEADERS, rows),
        "",
    ]
    if core_rows:
        lines += [
            "**Core-only install** (``pip install .`` in a fresh virtual environment: numpy, "
            "scipy, scikit-learn, numba, dp-accounting; versions numpy, scipy, scikit-learn, "
            f"numba = {raw['core_only_versions']}; ``import sklearn.base`` alone "
            f"{raw['core_only_sklearn_import_s']:.2f} s):",
            "",
            md_table(HEADERS, core_rows),
            "",
        ]
    lines += [
        f"**After ``skdp compile``** (run once into an empty cache: {compile_wall:.1f} s "
        "wall, every group; then each default's first fit in a fresh process on that cache; "
        "*kernels compiled* counts numba's compile events of skdp kernels in that fit):",
        "",
        md_table(AFTER_HEADERS, after_compile_rows(DEFAULT_CASES, raw["cases"], after)),
        "",
        "``skdp compile``'s own lines:",
        "",
        "```text",
        *[line.rstrip() for line in compile_out.splitlines()],
        "```",
        "",
        f"**Every solver once in one fresh process, empty cache:** import "
        f"{every['import_s']:.2f} s, fits {every['fit_s']:.2f} s "
        f"({len(every['fits'])} fits); numba compilation "
        f"{sum(every['compile_s'].values()):.1f} s of it.",
        "",
        f"**`skdp demo`** (import, data, 9 fits and their scikit-learn references): "
        f"{raw['demo']['full'][0]:.1f} s cold, {raw['demo']['full'][1]:.1f} s warm; "
        f"`--quick` (3 fits): {raw['demo']['quick'][0]:.1f} s cold, "
        f"{raw['demo']['quick'][1]:.1f} s warm.",
    ]
    write_results("startup", "\n".join(lines), raw)
    print("\n".join(lines[-1:]))


if __name__ == "__main__":
    main()
