"""Helpers shared by the benchmark scripts (not part of the ``skdp`` package).

Everything here is measurement plumbing: where the data lives, what machine we run on,
how loaded it was while we measured, timing, peak memory, and writing the markdown/JSON
results.  Numbers are never typed in by hand: a script measures, then renders.
"""

import json
import math
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO_ROOT / "benchmarks"
RESULTS_DIR = BENCH_DIR / "results"

CHECK = "✓"
CROSS = "✗"


# --------------------------------------------------------------------------- data
def data_home():
    """``$SKDP_DATA`` if set, else ``<repo>/../shared/data`` (the shared offline copies)."""
    env = os.environ.get("SKDP_DATA")
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data").resolve()


# ------------------------------------------------------------------------ logging
_T0 = time.perf_counter()


def log(msg):
    """Progress line on stderr with the elapsed wall time."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------- machine info
def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _version(module):
    try:
        mod = __import__(module)
        return getattr(mod, "__version__", "?")
    except ImportError:
        return None


THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "NUMBA_THREADING_LAYER",
    "NUMBA_CACHE_DIR",
    "SKDP_DATA",
)


def machine_info():
    """Hardware, library versions and thread settings (call after a parallel numba
    kernel has run, so that numba's threading layer is known)."""
    import numba
    from threadpoolctl import threadpool_info

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        layer = "not yet initialised"
    info = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gib": _mem_total_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            m: _version(m)
            for m in ("numpy", "scipy", "sklearn", "numba", "threadpoolctl", "skdp")
        },
        "numba_num_threads": numba.get_num_threads(),
        "numba_threading_layer": layer,
        "numba_cache_dir": numba.config.CACHE_DIR or "(default: __pycache__ next to sources)",
        "blas": [
            {
                k: d.get(k)
                for k in ("internal_api", "num_threads", "version", "threading_layer")
            }
            for d in threadpool_info()
        ],
        "env": {k: os.environ.get(k) for k in THREAD_ENV_VARS},
        "loadavg_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "git": git_state(),
    }
    return info


def git_state():
    """Commit of the working tree and the files under skdp/ that differ from it."""
    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True,
                                  cwd=str(REPO_ROOT), timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD") or None,
            "skdp_changes": [ln for ln in git("status", "--porcelain", "--", "skdp").splitlines()
                             if ln.strip()]}


def machine_info_markdown(info, load):
    """Render :func:`machine_info` and a :class:`CpuLoad` as a markdown bullet list."""
    v = info["versions"]
    blas = "; ".join(
        f"{b['internal_api']} {b['version']} ({b['num_threads']} threads, {b['threading_layer']})"
        for b in info["blas"]
    ) or "none found"
    env = ", ".join(f"{k}={val}" for k, val in info["env"].items() if val is not None) or "none set"
    lines = [
        f"- date: {info['date_utc']}; CPU: {info['cpu']}; nproc = {info['nproc']} "
        f"(affinity {info['affinity']}); RAM {info['mem_total_gib']:.1f} GiB",
        f"- {info['platform']}, Python {info['python']}",
        f"- numpy {v['numpy']}, scipy {v['scipy']}, scikit-learn {v['sklearn']}, "
        f"numba {v['numba']}, threadpoolctl {v['threadpoolctl']}, skdp {v['skdp']}",
        f"- threads: numba {info['numba_num_threads']} ({info['numba_threading_layer']} "
        f"layer); BLAS: {blas}",
        f"- numba cache dir: {info['numba_cache_dir']}",
        f"- skdp source: git commit {info['git']['commit']}"
        + (f" plus {len(info['git']['skdp_changes'])} uncommitted change(s) under skdp/: "
           + ", ".join(f"`{c}`" for c in info["git"]["skdp_changes"][:10])
           if info["git"]["skdp_changes"] else ", no uncommitted changes under skdp/"),
        f"- thread/data environment variables: {env}",
    ]
    if load is not None:
        lines.append(
            f"- load while measuring: load average {fmt_loadavg(info['loadavg_at_start'])} "
            f"at start, {fmt_loadavg(load['loadavg_end'])} at end; other processes used "
            f"{load['external_cores']:.2f} of {info['nproc']} cores on average over the "
            f"{load['wall_s']:.0f} s run (this process: {load['own_cores']:.2f})"
        )
    return "\n".join(lines)


def fmt_loadavg(la):
    return "n/a" if la is None else " / ".join(f"{x:.2f}" for x in la)


# ------------------------------------------------------------------------ CPU load
def _proc_stat_busy_s():
    """Busy CPU seconds of the whole machine since boot (Linux), or None."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    vals = [int(x) for x in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user]
    busy = sum(vals[:8]) - vals[3] - vals[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_s():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuLoad:
    """Average number of cores used by *other* processes between start and stop."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.busy0 = _proc_stat_busy_s()
        self.own0 = _own_cpu_s()

    def stop(self):
        wall = time.perf_counter() - self.t0
        busy1 = _proc_stat_busy_s()
        own = _own_cpu_s() - self.own0
        ext = None
        if busy1 is not None and self.busy0 is not None and wall > 0:
            ext = max(0.0, (busy1 - self.busy0 - own) / wall)
        return {
            "wall_s": wall,
            "own_cores": own / wall if wall > 0 else float("nan"),
            "external_cores": float("nan") if ext is None else ext,
            "loadavg_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        }


def wait_for_quiet(max_wait_s, threshold=0.25, window_s=2.0):
    """Sleep in ``window_s`` windows until other processes use <= ``threshold`` cores
    (or ``max_wait_s`` has passed).  Returns what was observed."""
    t0 = time.perf_counter()
    samples = []
    while True:
        probe = CpuLoad()
        time.sleep(window_s)
        ext = probe.stop()["external_cores"]
        samples.append(ext)
        waited = time.perf_counter() - t0
        if not ext > threshold or waited >= max_wait_s:  # NaN (no /proc/stat) -> go
            return {"quiet": not ext > threshold, "waited_s": waited, "samples": samples,
                    "threshold_cores": threshold}


class QuietGate:
    """Waits for a quiet machine before each measurement, within a total time budget."""

    def __init__(self, budget_s, threshold=0.25, window_s=1.0):
        self.budget_s = budget_s
        self.threshold = threshold
        self.window_s = window_s
        self.spent_s = 0.0
        self.waits = 0

    @property
    def exhausted(self):
        return self.spent_s >= self.budget_s

    def wait(self):
        if self.exhausted:
            return False
        res = wait_for_quiet(self.budget_s - self.spent_s, self.threshold, self.window_s)
        self.spent_s += res["waited_s"]
        self.waits += 1
        return res["quiet"]


@contextmanager
def threads(setting):
    """``"default"``: leave numba/BLAS/OpenMP as configured; an int: limit all to it."""
    if setting == "default":
        yield
        return
    import numba
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(int(setting))
    try:
        with threadpool_limits(limits=int(setting)):
            yield
    finally:
        numba.set_num_threads(previous)


# --------------------------------------------------------------------------- timing
def timed(fn, *args, **kwargs):
    """``(seconds, result)`` of one call (``perf_counter`` wall time)."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


def median(xs):
    return float(np.median(np.asarray(xs, dtype=float)))


# --------------------------------------------------------------------------- memory
def proc_status_kib(*keys):
    """Selected ``/proc/self/status`` fields in KiB (Linux), e.g. VmRSS, VmHWM."""
    out = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in keys:
                out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def reset_peak_rss():
    """Reset the kernel's peak-RSS mark (VmHWM) of this process; False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


@contextmanager
def traced_peak():
    """Peak bytes allocated (numpy buffers included) above the level at entry.

    numpy reports its data buffers to :mod:`tracemalloc`; memory allocated inside numba
    kernels (NRT) and by BLAS is not seen, so this is a lower bound that misses only
    kernel-local scratch.
    """
    import tracemalloc

    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    box = {}
    try:
        yield box
    finally:
        box["peak_extra_bytes"] = tracemalloc.get_traced_memory()[1] - base
        if started:
            tracemalloc.stop()


# ------------------------------------------------------------------------ processes
def run_python(code=None, args=(), env=None, timeout=600, interpreter_args=(),
               return_stderr=False, executable=None, cwd=None):
    """Run a fresh interpreter (same executable and environment unless ``executable``, in
    ``cwd`` or the repository root) and return stdout (and stderr if asked)."""
    cmd = [executable or sys.executable, *interpreter_args]
    cmd += ["-c", code] if code is not None else []
    cmd += list(args)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=str(cwd or REPO_ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"subprocess failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return (proc.stdout, proc.stderr) if return_stderr else proc.stdout


class CoProcess:
    """A library in its own interpreter (another environment), answering one JSON line on
    stdout for each JSON command line on its stdin; the first line it prints (``hello``)
    says it is ready.  ``close`` sends ``{"cmd": "quit"}`` and waits for it to end."""

    def __init__(self, cmd, name, cwd=None):
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=None if cwd is None else str(cwd))
        self.hello = self._read()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"{self.name} co-process ended (code {self.proc.wait()})")

    def request(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        try:
            self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def import_times(statement, packages):
    """Cumulative import time (s) of ``packages`` (where each is first imported) while a
    fresh interpreter runs ``statement``, from ``python -X importtime``."""
    _, err = run_python(statement, interpreter_args=("-X", "importtime"), return_stderr=True)
    found = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        try:
            cumulative_us = int(parts[1])
        except ValueError:  # the header line
            continue
        name = parts[2].strip()
        if name in packages and name not in found:
            found[name] = cumulative_us * 1e-6
    return found


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON line in output:\n{text[-2000:]}")


# ------------------------------------------------------------------------ rendering
def md_table(headers, rows, align=None):
    """A GitHub markdown table; ``align`` is a string of 'l'/'r'/'c' per column."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = {"l": ":---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep[a] for a in align) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def mark(ok):
    return CHECK if ok else CROSS


def fmt_time(s):
    if s is None or not math.isfinite(s):
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_sci(x, digits=1):
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}e}"


def fmt_n(n):
    """10**6 -> '10^6', 45211 -> '45,211'."""
    e = math.log10(n) if n > 0 else 0
    if n >= 1000 and abs(e - round(e)) < 1e-12:
        return f"10^{round(e)}"
    return f"{n:,}"


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        o = float(o)
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, Path):
        return str(o)
    return o


def write_results(stem, markdown, raw, out_dir=RESULTS_DIR):
    """Write ``<stem>.md`` and ``<stem>.json`` into ``out_dir``; return both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, json_path = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    md_path.write_text(markdown.rstrip() + "\n", encoding="utf-8")
    json_path.write_text(json.dumps(_jsonable(raw), indent=1) + "\n", encoding="utf-8")
    return md_path, json_path
