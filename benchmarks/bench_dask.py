"""DPStandardScaler on Dask arrays: throughput and memory, against the in-memory fit.

A ``LocalCluster`` with 2 worker processes (1 thread each) generates the rows lazily on the
workers (``dask.array.random``, partitions of 10^6 rows); the client never holds them.  For
each size it reports the fit's wall time and rows per second, the growth of the client's
peak RSS during the fit (``VmHWM`` after resetting the mark) next to the array's size, and
each worker's peak RSS.  At a size where both fit, the in-memory fit on the same rows (a
NumPy array built first) is timed side by side: rows per second of the Dask fit over the
in-memory one; the same rows persisted in the workers' memory are fitted too (the fit
alone, without the generation the other Dask timings include).  The largest size, 10^8 x 10 (8 GB of float64), is more than this machine
could hold next to a copy.

Only the scaler has a Dask path so far (the estimators refuse Dask input).

Writes ``benchmarks/results/dask.md`` / ``.json``.  Run: ``python benchmarks/bench_dask.py``
(``--quick``: 10^7 rows at most).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine_info, md_table, proc_status_kib, reset_peak_rss, write_results  # noqa: E402,E501

D = 10
CHUNK_ROWS = 1_000_000
BOUNDS = [[-9.0] * D, [11.0] * D]


def _worker_peak_kib():
    from pathlib import Path as _P

    for line in _P("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


def _worker_reset():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return True


def lazy_rows(n, seed=0):
    import dask.array as da

    return da.random.RandomState(seed).normal(size=(n, D), chunks=(CHUNK_ROWS, D)) * 2.0 + 1.0


def dask_fit(client, X):
    from skdp.preprocessing import DPStandardScaler

    client.run(_worker_reset)
    reset_peak_rss()
    before = proc_status_kib("VmRSS")["VmRSS"]
    t0 = time.perf_counter()
    scaler = DPStandardScaler(epsilon=1.0, delta=1e-10, feature_bounds=BOUNDS,
                              random_state=0).fit(X)
    wall = time.perf_counter() - t0
    peak = proc_status_kib("VmHWM")["VmHWM"]
    workers = client.run(_worker_peak_kib)
    return scaler, wall, (peak - before) * 1024, {k: v * 1024 for k, v in workers.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    from skdp.preprocessing import DPStandardScaler

    sizes = (4_000_000, 10_000_000) if args.quick else (4_000_000, 20_000_000, 100_000_000)
    compare_n = 4_000_000
    rows, raw = [], {"sizes": {}}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit="8GiB") as cluster, \
            Client(cluster) as client:
        dask_fit(client, lazy_rows(2 * CHUNK_ROWS))          # warm-up (workers, imports)
        for n in sizes:
            X = lazy_rows(n)
            scaler, wall, client_growth, workers = dask_fit(client, X)
            size = n * D * 8
            entry = {"n": n, "bytes": size, "wall_s": wall, "rows_per_s": n / wall,
                     "client_peak_growth_bytes": client_growth,
                     "worker_peak_bytes": list(workers.values()),
                     "epsilon_": scaler.epsilon_, "mean_": scaler.mean_.tolist()}
            if n == compare_n:
                # the same rows persisted in the workers' memory: the fit alone, without
                # the lazy generation the other Dask timings include
                from distributed import wait

                Xp = X.persist()
                wait(Xp)
                _, entry["persisted_s"], _, _ = dask_fit(client, Xp)
                del Xp
                Xm = X.compute()                               # in memory, same rows
                t0 = time.perf_counter()
                DPStandardScaler(epsilon=1.0, delta=1e-10, feature_bounds=BOUNDS,
                                 random_state=0).fit(Xm)
                entry["in_memory_s"] = time.perf_counter() - t0
                entry["throughput_ratio"] = entry["in_memory_s"] / wall
                entry["persisted_ratio"] = entry["in_memory_s"] / entry["persisted_s"]
                del Xm
            raw["sizes"][n] = entry
            rows.append([f"{n:.0e}", f"{size / 2**30:.2f}", f"{wall:.2f}",
                         f"{n / wall / 1e6:.1f}",
                         f"{client_growth / 2**20:.1f} ({client_growth / size:.2%})",
                         ", ".join(f"{b / 2**30:.2f}" for b in workers.values()),
                         f"{entry['in_memory_s']:.2f}" if "in_memory_s" in entry else "",
                         f"{entry['throughput_ratio']:.2f}" if "throughput_ratio" in entry
                         else "",
                         f"{entry['persisted_s']:.2f} ({entry['persisted_ratio']:.2f})"
                         if "persisted_s" in entry else ""])
            print(rows[-1], flush=True)
    info = machine_info()
    raw["machine"] = info
    text = "\n".join([
        "# DPStandardScaler on Dask arrays: throughput and memory",
        "",
        __doc__.split("\n\n", 1)[1].rsplit("Writes", 1)[0].strip(),
        "",
        f"Machine: {info.get('cpu', '?')}, {info.get('nproc', '?')} cores, "
        f"{info.get('mem_total_gib', 0):.1f} GiB.",
        "",
        md_table(["rows", "array GiB", "Dask fit s", "M rows/s", "client peak growth MiB "
                  "(of the array)", "worker peaks GiB", "in-memory fit s",
                  "Dask rows/s over in-memory",
                  "persisted on the workers: fit s (rows/s over in-memory)"], rows),
    ])
    write_results("dask" if not args.quick else "dask_quick", text, raw)
    print(text.rsplit("\n\n", 1)[-1])


if __name__ == "__main__":
    main()
