"""Reproduce Table 3 of Zhang, Zheng, Mou & Wang (IJCAI 2017), every row, side by side.

Five UCI sets (bank, adult, credit card: logistic; wine red+white, bike hourly: Huber) x
mu in {0, 0.1} (classification) / {0, 0.5} (regression) x epsilon in {0.1, 0.5, 1, 2},
delta = 1e-3 -- the paper's 40 rows -- with three private solvers called directly on the
loss specs:

* ``op_paper``: :func:`skdp._solvers.solve_output_perturbation`, ``calibration="paper"``
  (Algorithm 1 with the paper's sensitivities, noise and iteration counts);
* ``op_tight``: the same solver, ``calibration="tight"``;
* ``dpsgd``: :func:`skdp._solvers._dpsgd.solve_dpsgd` (the BST14 baseline, Poisson
  mini-batches of expected size 50, ``T = ceil(n^2/50^2)`` steps, PLD-calibrated noise);
* ``dpsgd_paper``: the same with ``calibration="paper"`` (BST14's printed noise, the
  baseline the paper compared against).

Two feature/target scalings are run (the paper states neither): config A (primary) keeps
min-max/one-hot columns in [0, 1] and raw targets, C_x = sqrt(d + 1); config B normalises
rows to ||x|| <= 1 and scales targets by a public range (paper-mode and tight output
perturbation only).

Metric: mean excess empirical risk ``F(w_priv) - F(w_hat)`` on the training data,
``F = mean loss + (mu/2)||w||^2`` with the intercept as a regularised constant column,
recomputed in numpy (``_table3_reference.py``) from the released coef/intercept on the
clipped and augmented design; ``w_hat`` from a Newton-polished non-private solve.  Fit
time: median CPU seconds of the solver call (one thread per worker).

Usage (from the repository root)::

    python benchmarks/table3.py --quick     # 10 repetitions (fewer real fits), ~10-12 min
    python benchmarks/table3.py             # 100 repetitions, every one a real fit (hours)

Writes ``benchmarks/results/table3.md``, ``table3.png`` and ``table3.json``.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

# One thread per worker process: set before numpy/numba are imported anywhere (the
# spawned workers inherit the environment).
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import multiprocessing as mp  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table3_paper import EPSILONS, MUS  # noqa: E402

METHODS = ("op_paper", "op_tight", "dpsgd", "dpsgd_paper")
_T0 = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def data_home():
    env = os.environ.get("SKDP_DATA")
    return Path(env) if env else (HERE.parent.parent / "shared" / "data").resolve()


def _cpu_jiffies():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    try:
        vals = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        return None
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def _own_cpu():
    import resource
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _cost(task, n_of):
    """Rough single-thread cost estimate, to start the longest tasks first."""
    config, dataset, mu, eps, method, reps, n_real = task[:7]
    n, d = n_of[dataset]
    if method.startswith("dpsgd"):
        return n_real * n * n / 50.0 * (d + 1) * 3.0
    steps = 3000.0 * (eps ** (2 / 3)) if mu == 0 else 300.0
    if method == "op_tight" and mu == 0:
        steps *= 2.3
    return n_real * steps * n * (d + 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="10 repetitions; fewer real fits and dpsgd repetitions (see below)")
    ap.add_argument("--reps", type=int, default=None,
                    help="repetitions per cell (default 100, quick 10)")
    ap.add_argument("--op-fits", type=int, default=None,
                    help="real output-perturbation solver calls per cell (default: all "
                         "repetitions; quick 2); the rest are exact resamples of the noise")
    ap.add_argument("--dpsgd-reps", type=int, default=None,
                    help="dpsgd repetitions (all real fits; default = reps, quick 3)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--configs", default="A,B",
                    help="comma-separated scaling configurations (A = primary)")
    ap.add_argument("--datasets", default="bank,adult,credit,wine,bike")
    ap.add_argument("--seed", type=int, default=20170819)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--render-only", metavar="JSON",
                    help="re-render table3.md/png/json from a previous table3.json (no fits)")
    args = ap.parse_args(argv)
    if args.render_only:
        return render_only(Path(args.render_only), Path(args.out_dir))

    reps = args.reps or (10 if args.quick else 100)
    op_fits = min(reps, args.op_fits or (2 if args.quick else reps))
    dpsgd_reps = args.dpsgd_reps or (3 if args.quick else reps)
    configs = args.configs.split(",")
    datasets = args.datasets.split(",")
    os.environ.setdefault("SKDP_DATA", str(data_home()))
    mode = "quick" if args.quick else "full"
    log(f"mode={mode} reps={reps} op_fits={op_fits} dpsgd_reps={dpsgd_reps} "
        f"workers={args.workers} configs={configs}")

    ctx = mp.get_context("spawn")
    jiff0, own0, wall0 = _cpu_jiffies(), _own_cpu(), time.perf_counter()
    with ctx.Pool(args.workers) as pool:
        # Phase 1: non-private references.
        ref_tasks = [(c, ds, mu) for c in configs for ds in datasets for mu in MUS[ds]]
        refs = {}
        for key, info in pool.imap_unordered(_ref, ref_tasks):
            refs[key] = info
            log(f"reference {key}: F={info['F']:.10g} ||w||={info['norm']:.4g} "
                f"attained={info['attained']} ({info['cpu_s']:.1f} s)")
        n_of = {ds: (refs[(configs[0], ds, MUS[ds][0])]["n"],
                     refs[(configs[0], ds, MUS[ds][0])]["d"]) for ds in datasets}

        # Phase 2: private fits.
        tasks = []
        for ci, c in enumerate(configs):
            for di, ds in enumerate(datasets):
                for mi, mu in enumerate(MUS[ds]):
                    ref = refs[(c, ds, mu)]
                    for ei, eps in enumerate(EPSILONS):
                        for k, method in enumerate(METHODS):
                            if c != "A" and (method.startswith("dpsgd") or
                                             (method == "op_tight" and mu == 0)):
                                continue  # secondary scaling: paper mode (+ tight, mu > 0)
                            if method.startswith("dpsgd"):
                                r, nr = dpsgd_reps, dpsgd_reps
                            else:
                                r, nr = reps, op_fits
                            seed = [args.seed, ci, di, mi, ei, k]
                            tasks.append((c, ds, float(mu), float(eps), method, r, nr,
                                          ref["F"], ref["norm"], seed))
        tasks.sort(key=lambda t: -_cost(t, n_of))
        log(f"{len(tasks)} fit cells")
        results = []
        for i, out in enumerate(pool.imap_unordered(_fit, tasks), 1):
            results.append(out)
            log(f"[{i}/{len(tasks)}] {out['config']} {out['dataset']} mu={out['mu']} "
                f"eps={out['epsilon']} {out['method']}: err={out['error_mean']:.4g} "
                f"cpu={out['cpu_median_s']:.3f}s T={out['n_iter']}")
    wall = time.perf_counter() - wall0
    jiff1, own1 = _cpu_jiffies(), _own_cpu()
    load = None
    if jiff0 and jiff1:
        hz = os.sysconf("SC_CLK_TCK")
        busy_cores = (jiff1[0] - jiff0[0]) / hz / wall
        load = {"all_processes_cores": busy_cores,
                "this_run_cores": (own1 - own0) / wall,
                "other_processes_cores": max(0.0, busy_cores - (own1 - own0) / wall)}

    from _table3_report import write_outputs

    meta = {
        "mode": mode, "reps": reps, "op_real_fits": op_fits, "dpsgd_reps": dpsgd_reps,
        "workers": args.workers, "configs": configs, "datasets": datasets,
        "seed": args.seed, "total_wall_s": wall, "load": load,
        "command": "python benchmarks/table3.py "
                   + " ".join(sys.argv[1:] if argv is None else argv),
    }
    write_outputs(Path(args.out_dir), meta, refs, results)
    log(f"done in {wall:.0f} s")


def render_only(json_path, out_dir):
    """Rebuild the outputs from the raw numbers of a previous run (report code changes)."""
    from _table3_report import write_outputs

    J = json.loads(json_path.read_text())
    refs = {}
    for key, info in J["references"].items():
        c, ds, mu = key.split("|")
        refs[(c, ds, float(mu))] = info
    write_outputs(out_dir, J["meta"], refs, J["results"])
    log(f"re-rendered {out_dir} from {json_path}")


def _ref(task):
    from _table3_worker import reference_task
    return reference_task(task)


def _fit(task):
    from _table3_worker import fit_task
    return fit_task(task)


if __name__ == "__main__":
    main()
