"""The ``skdp`` command line, run as a user would: in a subprocess."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import skdp

ENV = dict(os.environ, PYTHONWARNINGS="ignore")


def run(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "skdp", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


def test_version_and_plain_help():
    res = run("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"skdp {skdp.__version__}"
    res = run("--help")
    assert res.returncode == 0
    for command in ("demo", "ledger summary PATH", "audit SPEC"):
        assert command in res.stdout
    assert "``" not in res.stdout and ":func:" not in res.stdout   # no raw reStructuredText
    assert run().returncode == 0                                   # no command: the help


def test_console_script_is_declared_and_runs():
    import tomllib

    with open(os.path.join(os.path.dirname(skdp.__file__), "..", "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts == {"skdp": "skdp.__main__:main"}
    exe = shutil.which("skdp")
    if exe is None:
        pytest.skip("the package is not installed with its console script here")
    res = subprocess.run([exe, "--version"], capture_output=True, text=True, env=ENV)
    assert res.returncode == 0 and res.stdout.strip() == f"skdp {skdp.__version__}"


def test_demo_quick_prints_a_narrow_table(tmp_path):
    res = run("demo", "--quick", "--plot", str(tmp_path / "curve.png"))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("skdp demo:") and lines[1].startswith("estimator")
    rows = [line for line in lines if re.match(r"(DP\w+|make_private_pipeline) ", line)]
    assert len(rows) == 4 and all(" 1 " in r for r in rows)        # one epsilon: 1
    assert rows[1].startswith("make_private_pipeline raw adult")   # the headline feature
    assert max(len(line) for line in lines if "saved to" not in line) <= 100
    assert lines[-1] == f"privacy-utility curve saved to {tmp_path / 'curve.png'}"
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_ledger_summary(tmp_path):
    from skdp.accounting import PrivacyLedger, gaussian_event

    path = tmp_path / "study.sqlite"
    ledger = PrivacyLedger(epsilon=2.0, delta=1e-6, path=str(path))
    ledger.record(gaussian_event(8.0, 1.0), source="DPStandardScaler")
    ledger.close()
    res = run("ledger", "summary", str(path))
    assert res.returncode == 0, res.stderr
    assert "DPStandardScaler" in res.stdout and "2" in res.stdout
    assert res.stdout == PrivacyLedger.open(str(path)).summary() + "\n"
    missing = run("ledger", "summary", str(tmp_path / "nope.sqlite"))
    assert missing.returncode == 2 and "error" in missing.stderr


def test_audit_honest_and_refused_specs():
    spec = "skdp:DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1])"
    res = run("audit", spec, "--fits", "200", "--n-samples", "50")
    assert res.returncode == 0, res.stderr
    m = re.search(r"epsilon lower bound: ([0-9.]+) at 95% confidence", res.stdout)
    assert m and float(m.group(1)) <= 1.0 and "claimed epsilon: 1.0" in res.stdout
    for bad in ("skdp:DPLogisticRegression(epsilon=1.0)",             # no data_norm
                "skdp:DPLogisticRegression(epsilon=__import__('os'))",  # not a literal
                "skdp:NoSuchEstimator()", "no-colon"):
        res = run("audit", bad, "--fits", "10")
        assert res.returncode == 2 and "error" in res.stderr, (bad, res.stderr)


def test_audit_without_a_guarantee_claims_inf_and_says_why_once():
    """classes=None: every fit reads the label set from the data (epsilon_ = inf).  The
    audit reports that claim, not the epsilon parameter, explains it once, prints the
    PrivacyLeakWarning at most once (not once per fit) and exits with status 4."""
    spec = "skdp:DPLogisticRegression(epsilon=1.0, data_norm=1.0)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}   # warnings on
    res = subprocess.run([sys.executable, "-m", "skdp", "audit", spec, "--fits", "20",
                          "--n-samples", "50"], capture_output=True, text=True,
                         timeout=600, env=env)
    assert res.returncode == 4, res.stderr
    assert "claimed epsilon: inf" in res.stdout
    assert "claimed epsilon: 1.0" not in res.stdout
    text = res.stdout + res.stderr
    assert text.count("the label set is read from the private data") == 1, text
    assert "classes=[...]" in text and "privacy_guaranteed_ = False" in text
    assert "Traceback" not in text and len(text.splitlines()) < 25


def test_parse_spec_executes_nothing():
    from skdp.__main__ import parse_spec

    cls, kw = parse_spec("skdp:DPHuberRegressor(epsilon=0.5, data_norm=2, huber_threshold=1.0)")
    assert cls is skdp.DPHuberRegressor and kw == dict(epsilon=0.5, data_norm=2,
                                                       huber_threshold=1.0)
    with pytest.raises(ValueError):
        parse_spec("skdp:DPHuberRegressor(epsilon=open('x'))")
