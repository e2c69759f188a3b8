"""Ledger store problems surface as skdp errors naming the path and the cause, and never as a
silently empty ledger; permissions are enforced by running unprivileged (tests/_unprivileged)."""

import json
import os
import sqlite3
import textwrap

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skdp import DPLogisticRegression
from skdp.accounting import (
    LedgerCorruptError,
    LedgerError,
    LedgerPermissionError,
    LedgerUnreachableError,
    PrivacyLedger,
    gaussian_event,
)

from .._unprivileged import run_python


def _store(tmp_path, name="study.sqlite", adaptive=False):
    path = tmp_path / name
    ledger = PrivacyLedger(epsilon=5.0, path=path, adaptive=adaptive)
    ledger.record(gaussian_event(4.0, 1.0))
    return path


def _scenario(body):
    """Run ``body`` unprivileged and return what it printed: the exception's class, then
    its message."""
    code = textwrap.dedent("""
        from skdp.accounting import PrivacyLedger, gaussian_event
        try:
        {body}
        except Exception as exc:
            print(type(exc).__name__)
            print(exc)
        else:
            print("no error")
    """).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_store_in_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    path = ro / "s.sqlite"
    out = _scenario(f"PrivacyLedger(epsilon=1.0, path={str(path)!r})")
    assert out.startswith("LedgerPermissionError"), out
    assert str(path) in out and "directory" in out and "not writable" in out
    assert not path.exists()


def test_read_only_store_refuses_writes_but_reads(tmp_path):
    path = _store(tmp_path)
    path.chmod(0o444)
    out = _scenario(f"PrivacyLedger.open({str(path)!r}).record(gaussian_event(4.0, 1.0))")
    assert out.startswith("LedgerPermissionError"), out
    assert str(path) in out and "readonly" in out
    out = _scenario(f"print(len(PrivacyLedger.open({str(path)!r})))")
    assert out.startswith("1"), out      # reading still works: one entry, nothing added


def test_corrupt_header_is_corrupt_not_unreachable(tmp_path):
    path = _store(tmp_path)
    handle = PrivacyLedger.open(path)
    with open(path, "r+b") as f:
        f.write(b"this is no longer SQLite")
    with pytest.raises(LedgerCorruptError, match=str(path)):
        PrivacyLedger.open(path)
    with pytest.raises(LedgerCorruptError, match="corrupt") as info:
        handle.epsilon_spent()
    assert not isinstance(info.value, LedgerUnreachableError)
    assert "not reachable" not in str(info.value)


def test_corrupt_budget_in_header(tmp_path):
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '\"lots\"' WHERE key = 'epsilon'")
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError, match="header"):
        PrivacyLedger.open(path)


@pytest.mark.parametrize("adaptive", [False, True])
def test_entry_with_bad_json_never_reads_as_zero(tmp_path, adaptive):
    path = _store(tmp_path, adaptive=adaptive)
    ledger = PrivacyLedger.open(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE entries SET event = '{not json'")
    con.commit()
    con.close()
    for call in (ledger.epsilon_spent, ledger.entries, lambda: ledger.dp_event,
                 ledger.summary, lambda: ledger.record(gaussian_event(4.0, 1.0)),
                 lambda: ledger.remaining, ledger.delta_spent):
        with pytest.raises(LedgerCorruptError, match=str(path)):
            call()
    # a fit under it is refused and leaves the estimator unfitted
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = DPLogisticRegression(data_norm=2.0, classes=[0, 1], privacy_ledger=ledger)
    with pytest.raises(LedgerCorruptError):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_") and not hasattr(clf, "n_features_in_")
    assert len(sqlite3.connect(path).execute("SELECT * FROM entries").fetchall()) == 1


def test_entry_with_unknown_event_type(tmp_path):
    path = _store(tmp_path)
    con = sqlite3.connect(path)
    con.execute("UPDATE entries SET event = ?", (json.dumps({"__event__": "Nope"}),))
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError):
        PrivacyLedger.open(path).epsilon_spent()


def test_not_a_ledger_sqlite_file(tmp_path):
    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(LedgerCorruptError, match="not a PrivacyLedger store"):
        PrivacyLedger.open(path)


@pytest.mark.parametrize("epsilon", ["1", -1.0, 0.0, float("inf"), float("nan")])
def test_budget_is_validated_as_the_estimators_do(epsilon):
    with pytest.raises((InvalidParameterError, ValueError)):
        PrivacyLedger(epsilon=epsilon)
    with pytest.raises(InvalidParameterError):
        PrivacyLedger(epsilon=1.0, delta="1e-6")


def test_error_hierarchy():
    assert issubclass(LedgerCorruptError, LedgerError) and issubclass(LedgerCorruptError,
                                                                      ValueError)
    assert issubclass(LedgerPermissionError, PermissionError)
    assert issubclass(LedgerUnreachableError, LedgerError)
    assert os.fspath  # keep the import list honest
