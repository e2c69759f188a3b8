"""A private pipeline on 10^6 rows x 20 raw columns: warm fit time, stage by stage.

The raw-table issue's scale target: ``make_private_pipeline(DPLogisticRegression(...))`` on
10^6 rows of 10 numeric (log-normal) and 10 string columns (8 to 17 values each) in at most
10 s warm.  Each setting runs in a fresh process (numba's and BLAS's thread counts are
fixed at start): one warm-up fit, then the median of ``--repeats`` timed fits, with the
stages timed separately (the transformers' fit, their transform, the model's fit).

    python benchmarks/bench_raw_scale.py [--rows 1000000] [--repeats 2]

writes ``results/raw_scale.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _table(n_rows, seed=0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    cols = {f"x{j}": rng.lognormal(j % 3, 1.0, n_rows) for j in range(10)}
    for j in range(10):
        cols[f"c{j}"] = rng.choice([f"v{k}" for k in range(8 + j)], n_rows).astype(object)
    df = pd.DataFrame(cols)
    y = (np.log(df["x0"]) + (df["c0"] == "v1") + rng.normal(size=n_rows) > 0.5).astype(int)
    return df, y.to_numpy()


def worker(n_rows, repeats):
    """Runs in the child: the timings of one setting, as JSON on stdout."""
    import numpy as np
    import numba

    from skdp import DPLogisticRegression, make_private_pipeline

    df, y = _table(n_rows)

    def one():
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                     random_state=0)
        t0 = time.perf_counter()
        pipe.fit(df, y)
        total = time.perf_counter() - t0
        return total, pipe

    one()                                            # warm-up: compilation, caches
    totals = []
    for _ in range(repeats):
        total, pipe = one()
        totals.append(total)
    pre, model = pipe[:-1], pipe[-1]
    t0 = time.perf_counter()
    Xt = pre.transform(df)
    t_transform = time.perf_counter() - t0
    from sklearn.base import clone

    m = clone(model).set_params(data_norm=model.data_norm_)   # the model's fit on its own
    t0 = time.perf_counter()
    m.fit(Xt, y)
    t_model = time.perf_counter() - t0
    print(json.dumps({"rows": n_rows, "threads": numba.get_num_threads(),
                      "fit_median_s": float(np.median(totals)), "fits": totals,
                      "transform_s": t_transform, "model_fit_s": t_model,
                      "design_columns": int(Xt.shape[1]), "solver": model.solver_,
                      "epsilon_": pipe.epsilon_}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10 ** 6)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.rows, args.repeats)
        return
    results = []
    for threads in (None, 1):
        env = dict(os.environ)
        if threads:
            for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                        "MKL_NUM_THREADS"):
                env[var] = str(threads)
        out = subprocess.run([sys.executable, __file__, "--worker", "--rows", str(args.rows),
                              "--repeats", str(args.repeats)], env=env, check=True,
                             capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        print(results[-1], flush=True)
    load = os.getloadavg()
    lines = ["# A private pipeline on raw columns at scale", "",
             f"`python benchmarks/bench_raw_scale.py --rows {args.rows} --repeats "
             f"{args.repeats}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"load average {load[0]:.2f} at the end.  {args.rows:,} rows x 20 raw columns "
             "(10 log-normal, 10 strings of 8-17 values), total epsilon 1.  Warm fits "
             "(after one warm-up fit in the same process), median of the repeats; the "
             "transformers' transform and the model's fit on the transformed design timed "
             "once more on their own.", "",
             "| threads (numba) | pipeline fit (s) | of which transform (s) | model fit (s) | "
             "design columns | solver | target ≤ 10 s |", "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['threads']} | {r['fit_median_s']:.2f} | {r['transform_s']:.2f} | "
                     f"{r['model_fit_s']:.2f} | {r['design_columns']} | {r['solver']} | "
                     f"{'yes' if r['fit_median_s'] <= 10 else 'no'} |")
    (RESULTS / "raw_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
