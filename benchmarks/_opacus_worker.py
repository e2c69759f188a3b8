"""Opacus's DP-SGD in its own environment, fitting on request (``bench_dpsgd_peers.py``).

Usage: ``<python with torch and opacus> _opacus_worker.py DATA.npz``.  ``DATA.npz`` holds
``X`` (float64, rows already scaled by public bounds), ``y`` (0/1) and the schedule of the
skdp fit it is compared with: ``sample_rate`` q, ``batch_size`` m (expected), ``n_steps`` T,
``noise_multiplier`` z, ``max_grad_norm`` L, ``lr`` eta, ``weight_decay`` alpha.

The worker prints one JSON line when ready (versions), then answers one JSON command per
line on stdin -- ``{"cmd": "fit", "seed": s, "threads": "1" | "default"}`` -> ``{"fit_s",
"cpu_s", "train_accuracy", "steps", "mean_batch", "process_cpu_s"}``; ``{"cmd": "cpu"}`` ->
``{"process_cpu_s"}`` (this process's CPU seconds so far, so that the caller can tell its
load from other processes'); ``{"cmd": "epsilon", "delta": d}`` -> Opacus's own RDP epsilon
(add/remove neighbours) of the run; ``{"cmd": "quit"}``.

The fit is the same mechanism as skdp's ``solver="dpsgd"``: Poisson sampling at rate q
(Opacus's ``DPDataLoader``), per-example gradients of ``BCEWithLogitsLoss`` on
``nn.Linear(d, 1)`` (weights and bias: skdp's row augmented with an intercept column of 1)
clipped to L, Gaussian noise of standard deviation z L on their sum, the sum divided by the
expected batch size m, plain SGD at the constant step eta with weight decay alpha, T steps
from zero.  The one step left out is skdp's projection onto its public ball, which these
fits never reach.  The time covers everything from the model's creation to the last step
(``make_private`` included), in float64 as skdp computes.
"""

import json
import os
import sys
import time
import warnings

import numpy as np


def _cpu_s():
    t = os.times()
    return t.user + t.system


def fit(data, seed):
    import torch
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader
    from torch.utils.data import TensorDataset

    X = torch.from_numpy(data["X"])
    y = torch.from_numpy(data["y"].astype(np.float64))[:, None]
    n_steps = int(data["n_steps"])
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    t0, c0 = time.perf_counter(), _cpu_s()
    model = torch.nn.Linear(X.shape[1], 1).double()
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=float(data["lr"]),
                                weight_decay=float(data["weight_decay"]))
    loader = DPDataLoader(TensorDataset(X, y), sample_rate=float(data["sample_rate"]),
                          generator=generator)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=float(data["noise_multiplier"]),
        max_grad_norm=float(data["max_grad_norm"]), poisson_sampling=False,
        noise_generator=generator)
    optimizer.expected_batch_size = int(data["batch_size"])
    criterion = torch.nn.BCEWithLogitsLoss()
    steps = rows = 0
    while steps < n_steps:
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            criterion(model(xb), yb).backward()
            optimizer.step()
            steps += 1
            rows += xb.shape[0]
            if steps == n_steps:
                break
    seconds, cpu = time.perf_counter() - t0, _cpu_s() - c0
    with torch.no_grad():
        predicted = (model(X) > 0).double()
    return {"fit_s": seconds, "cpu_s": cpu, "steps": steps, "mean_batch": rows / steps,
            "train_accuracy": float((predicted == y).double().mean())}


def epsilon(data, delta):
    """Opacus's RDP accountant on the run's (q, z, T): add/remove neighbours."""
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(float(data["noise_multiplier"]), float(data["sample_rate"]),
                    int(data["n_steps"]))]
    return acc.get_epsilon(delta=float(delta))


def main(path):
    import opacus
    import torch

    warnings.simplefilter("ignore")
    data = dict(np.load(path, allow_pickle=False))
    default_threads = torch.get_num_threads()
    print(json.dumps({"ready": True, "versions": {
        "opacus": opacus.__version__, "torch": torch.__version__, "numpy": np.__version__,
        "python": sys.version.split()[0]}, "default_threads": default_threads}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "cpu":
            print(json.dumps({"process_cpu_s": _cpu_s()}), flush=True)
            continue
        if cmd["cmd"] == "epsilon":
            print(json.dumps({"epsilon": epsilon(data, cmd["delta"])}), flush=True)
            continue
        threads = default_threads if cmd["threads"] == "default" else int(cmd["threads"])
        torch.set_num_threads(threads)
        out = fit(data, int(cmd["seed"]))
        out["threads"] = torch.get_num_threads()
        out["process_cpu_s"] = _cpu_s()
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
