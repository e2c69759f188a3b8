"""The command line talks: the demo's header comes before any import or fit and a line
announces every fit; errors are one line naming their cause (exit status 2, no
traceback); every option has its help; an audit SPEC is checked before numba (and, for its
syntax, before scikit-learn) is imported.  No test here measures time: order and
``sys.modules`` stand in for "at once"."""

import argparse
import doctest
import io
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import skdp.__main__ as cli
from skdp._progress import Progress

ENV = dict(os.environ, PYTHONWARNINGS="ignore")
HEAVY = ("sklearn", "numba", "dask", "dp_accounting", "scipy")


def run_python(code):
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env=ENV)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_main(argv, capsys):
    """``skdp argv`` in process: (exit status, stdout, stderr)."""
    out = io.StringIO()
    try:
        rc = cli.main(argv, out=out)
    except SystemExit as exc:            # argparse: --help, usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, out.getvalue() + captured.out, captured.err


def assert_error(rc, err, command, *causes):
    assert rc == 2, (rc, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"skdp {command}: error: "), err
    for cause in causes:
        assert cause in lines[-1], (cause, err)


def test_module_doctests():
    # pytest's --doctest-modules does not collect __main__.py
    assert doctest.testmod(cli).failed == 0


# -- --help ----------------------------------------------------------------------------------

def _parsers(parser, path=("skdp",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def test_every_option_of_every_command_has_help(capsys):
    parsers = list(_parsers(cli._parser()))
    assert {" ".join(p) for p, _ in parsers} == {
        "skdp", "skdp demo", "skdp ledger", "skdp ledger summary", "skdp audit",
        "skdp compile"}
    for path, parser in parsers:
        rc, text, _ = run_main([*path[1:], "--help"], capsys)
        assert rc == 0
        for action in parser._actions:
            name = action.option_strings or [action.metavar or action.dest]
            assert action.help and action.help != argparse.SUPPRESS, (path, name)
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:       # each subcommand's line
                    assert choice.help, (path, choice.dest)
                    assert choice.dest in text
                continue
            shown = action.option_strings[-1] if action.option_strings else action.metavar
            assert shown in text, (path, shown)
            assert action.help.split()[0] in text, (path, shown)


def test_audit_help_documents_confidence_and_seed(capsys):
    rc, text, _ = run_main(["audit", "--help"], capsys)
    assert rc == 0
    flat = " ".join(text.split())
    assert "--confidence LEVEL confidence level of the lower bound" in flat
    assert "--seed INT seed of the datasets" in flat
    assert "data_norm" in flat and "random_state" in flat


# -- errors name their cause ----------------------------------------------------------------

def test_ledger_errors_name_their_cause(tmp_path, capsys):
    rc, _, err = run_main(["ledger", "summary", str(tmp_path / "nope.sqlite")], capsys)
    assert_error(rc, err, "ledger", "no such file", "nope.sqlite")
    rc, _, err = run_main(["ledger", "summary", str(tmp_path)], capsys)
    assert_error(rc, err, "ledger", "is a directory")
    notes = tmp_path / "notes.json"
    notes.write_text('{"epsilon": 1}')
    rc, _, err = run_main(["ledger", "summary", str(notes)], capsys)
    assert_error(rc, err, "ledger", "not a privacy ledger's store", "not an SQLite database")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (a)")
    rc, _, err = run_main(["ledger", "summary", str(other)], capsys)
    assert_error(rc, err, "ledger", "is not a PrivacyLedger store")


def test_ledger_bad_json_entry_is_named(tmp_path, capsys):
    from skdp.accounting import PrivacyLedger, gaussian_event

    path = tmp_path / "study.sqlite"
    ledger = PrivacyLedger(epsilon=2.0, delta=1e-6, path=str(path))
    ledger.record(gaussian_event(8.0, 1.0), source="DPStandardScaler")
    ledger.close()
    rc, out, err = run_main(["ledger", "summary", str(path)], capsys)
    assert rc == 0 and "DPStandardScaler" in out and err == ""
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE entries SET event = '{\"type\": \"GaussianDpEvent\", '")
    con.close()
    rc, _, err = run_main(["ledger", "summary", str(path)], capsys)
    assert_error(rc, err, "ledger", "entry", "corrupt")


@pytest.mark.parametrize("spec, causes", [
    ("no-colon", ["module:Class", "no ':'"]),
    ("skdp:DPLogisticRegression(epsilon=1.0", ["not valid Python call syntax",
                                               "was never closed"]),
    ("skdp:DPLogisticRegression(epsilon=1.0)", ["needs a public data_norm"]),
    ("skdp:DPLogisticRegression(data_norm='big')", ["data_norm", "positive finite number"]),
    ("skdp:DPLogisticRegression(epsilon=__import__('os'), data_norm=1)",
     ["epsilon=__import__('os')", "not a Python literal"]),
    ("skdp:DPLogisticRegression(1.0, data_norm=1)", ["key=value parameters only"]),
    ("skdp:DPLogisticRegression(data_norm=1, random_state=3)", ["random_state", "--seed"]),
    ("skdp:NoSuchEstimator(data_norm=1)", ["has no 'NoSuchEstimator'",
                                          "DPLogisticRegression"]),
    ("no_such_module:Model(data_norm=1)", ["'no_such_module'", "cannot be imported"]),
    ("skdp:DPLogisticRegression(data_norm=1, solver='nope')", ["'solver' parameter"]),
    ("skdp:DPLogisticRegression(data_norm=1, epsilon=-1.0)", ["'epsilon' parameter"]),
    ("skdp:DPHuberRegressor(data_norm=1, bogus=3)", ["has no parameter 'bogus'",
                                                     "huber_threshold"]),
    ("skdp:__version__(data_norm=1)", ["not a scikit-learn estimator class"]),
])
def test_bad_audit_spec_is_named(spec, causes, capsys):
    rc, out, err = run_main(["audit", spec, "--fits", "20"], capsys)
    assert_error(rc, err, "audit", *causes)
    assert out == ""                      # refused before the audit starts


@pytest.mark.parametrize("option, value, cause", [
    ("--fits", "18", "at least 19"), ("--fits", "many", "expected an integer"),
    ("--n-samples", "1", "at least 2"), ("--confidence", "95", "between 0 and 1"),
    ("--seed", "-1", "[0, 2**32)"),
])
def test_bad_audit_options_are_named(option, value, cause, capsys):
    rc, out, err = run_main(["audit", "skdp:DPLogisticRegression(data_norm=1)",
                             option, value], capsys)
    assert rc == 2 and "Traceback" not in err
    assert f"skdp audit: error: argument {option}: " in err and cause in err


def test_min_fits_is_the_audits_minimum():
    from skdp.audit import audit_estimator
    from skdp.audit._blackbox import MIN_SAMPLES

    assert cli.MIN_FITS - cli.MIN_FITS // 2 >= MIN_SAMPLES
    fewer = cli.MIN_FITS - 1
    assert fewer - fewer // 2 < MIN_SAMPLES
    with pytest.raises(ValueError, match="too small"):
        audit_estimator(lambda s: None, None, None, None, None, n_fits=fewer, delta=1e-6)


def test_demo_plot_into_a_missing_directory_is_refused_before_the_run(tmp_path, capsys):
    rc, out, err = run_main(["demo", "--quick", "--plot", str(tmp_path / "no" / "c.png")],
                            capsys)
    assert_error(rc, err, "demo", "does not exist", str(tmp_path / "no"))
    assert out == ""


def test_demo_plot_without_matplotlib_is_refused_before_the_run(tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # ``import matplotlib`` fails
    rc, out, err = run_main(["demo", "--quick", "--plot", str(tmp_path / "c.png")], capsys)
    assert_error(rc, err, "demo", "--plot", "matplotlib is not installed")
    assert out == ""                      # refused before the first fit
    assert not (tmp_path / "c.png").exists()


def test_demo_plot_that_cannot_import_matplotlib_after_the_run_fails(tmp_path,
                                                                   monkeypatch):
    from skdp import _demo

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ValueError, match="matplotlib cannot be imported"):
        _demo._plot([], str(tmp_path / "c.png"), io.StringIO())


# -- before heavy imports -------------------------------------------------------------------

PROBE = r"""
import io, json, sys
from skdp.__main__ import main

HEAVY = {heavy!r}
report = {{}}
for name, argv in {cases!r}:
    err = io.StringIO()
    sys.stderr, real = err, sys.stderr
    try:
        rc = main(argv, out=io.StringIO())
    finally:
        sys.stderr = real
    report[name] = dict(rc=rc, err=err.getvalue(),
                        loaded=[m for m in HEAVY if m in sys.modules])
print(json.dumps(report))
"""


def test_errors_are_raised_before_heavy_imports():
    syntax = [("colon", ["audit", "no-colon"]),
              ("syntax", ["audit", "skdp:DPLogisticRegression(epsilon=1.0"]),
              ("no-norm", ["audit", "skdp:DPLogisticRegression(epsilon=1.0)"]),
              ("literal", ["audit", "skdp:DPLogisticRegression(epsilon=open('x'), "
                                    "data_norm=1)"]),
              ("class", ["audit", "skdp:NoSuchEstimator(data_norm=1)"]),
              ("ledger", ["ledger", "summary", "/nonexistent/ledger.sqlite"])]
    params = [("solver", ["audit", "skdp:DPLogisticRegression(data_norm=1, solver='nope')"]),
              ("unknown", ["audit", "skdp:DPHuberRegressor(data_norm=1, bogus=3)"])]
    report = run_python(PROBE.format(heavy=HEAVY, cases=syntax + params))
    for name, _ in syntax:            # refused by the CLI alone: nothing heavy imported
        assert report[name]["rc"] == 2 and "error: " in report[name]["err"], report[name]
        assert report[name]["loaded"] == [], (name, report[name])
    for name, _ in params:            # needs the estimator class, never its kernels
        assert report[name]["rc"] == 2 and "error: " in report[name]["err"], report[name]
        assert "numba" not in report[name]["loaded"] and "dask" not in report[name]["loaded"]
        assert "dp_accounting" not in report[name]["loaded"], (name, report[name])


FIRST_WRITE = r"""
import json, sys
from skdp.__main__ import main

class Stop(Exception):
    pass

class Out:
    text = ""
    def write(self, s):
        self.text += s
        if self.text.count("\n") >= {lines}:
            print(json.dumps(dict(text=self.text, loaded=[m for m in {heavy!r}
                                                          if m in sys.modules])))
            raise Stop
    def flush(self):
        pass
    def isatty(self):
        return False

try:
    main({argv!r}, out=Out())
except Stop:
    pass
"""


def test_demo_header_is_printed_before_anything_heavy_is_imported():
    report = run_python(FIRST_WRITE.format(lines=3, heavy=HEAVY, argv=["demo", "--quick"]))
    lines = report["text"].splitlines()
    assert lines[0].startswith("skdp demo: 4 models x epsilon in [1.0]")
    assert lines[1].startswith("estimator") and set(lines[2]) == {"-"}
    assert report["loaded"] == []


def test_audit_announces_itself_before_numba_is_imported():
    spec = "skdp:DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1])"
    report = run_python(FIRST_WRITE.format(lines=1, heavy=HEAVY, argv=["audit", spec]))
    assert report["text"].startswith("auditing DPLogisticRegression(epsilon=1.0, ")
    assert "400 fits on each of two neighbouring datasets of 200 rows" in report["text"]
    assert "numba" not in report["loaded"] and "dp_accounting" not in report["loaded"]


# -- a line before every fit ----------------------------------------------------------------

def test_demo_announces_every_fit_before_it_starts(monkeypatch):
    """The quick demo on the first 600 rows of each data set (3,000 of the raw Adult table;
    the same code path, fast), with every estimator's ``fit`` wrapped to record the output
    at the moment it starts."""
    import sklearn.linear_model as sk
    import sklearn.pipeline

    import skdp
    import skdp.datasets as datasets

    for loader, rows in (("load_demo_adult", 600), ("load_demo_bike", 600),
                         ("load_adult", 3000)):
        real = getattr(datasets, loader)

        def small(*args, real=real, rows=rows, **kwargs):
            bunch = real(*args, **kwargs)
            bunch.data, bunch.target = bunch.data[:rows], bunch.target[:rows]
            return bunch
        monkeypatch.setattr(datasets, loader, small)

    out = io.StringIO()
    starts, depth = [], [0]
    for cls in (sk.LogisticRegression, sk.HuberRegressor, skdp.DPLogisticRegression,
                skdp.DPHuberRegressor, skdp.DPNonconvexRegressor, sklearn.pipeline.Pipeline,
                skdp.PrivatePipeline):
        def fit(self, *args, _fit=cls.fit, **kwargs):
            if depth[0] == 0:             # the demo's own fits, not those inside a fit
                starts.append((type(self).__name__, out.getvalue()))
            depth[0] += 1
            try:
                return _fit(self, *args, **kwargs)
            finally:
                depth[0] -= 1
        monkeypatch.setattr(cls, "fit", fit)

    from skdp._demo import run_demo

    rows = run_demo(out=out, quick=True)
    assert [name for name, _ in starts] == [
        "LogisticRegression", "DPLogisticRegression", "Pipeline", "PrivatePipeline",
        "HuberRegressor", "DPHuberRegressor", "HuberRegressor", "DPNonconvexRegressor"]
    assert len(rows) == 4
    # the headline feature is shown: a row of the private pipeline on the raw table
    (pipeline_row,) = [r for r in rows if r["estimator"] == "make_private_pipeline"]
    assert pipeline_row["data"] == "raw adult" and pipeline_row["guaranteed"]
    assert pipeline_row["spent"] <= 1.0 and pipeline_row["solver"] == "dpsgd"
    for k, (name, text) in enumerate(starts, 1):
        lines = text.splitlines()
        assert lines[0].startswith("skdp demo:") and lines[1].startswith("estimator")
        shown = "make_private_pipeline" if name == "PrivatePipeline" else name
        assert lines[-1].startswith(f"  fit {k}/8: {shown} on "), (name, lines[-1])
        reference = not (name.startswith("DP") or name == "PrivatePipeline")
        assert ("non-private reference" in lines[-1]) == reference, lines[-1]
    # every announcement fits an 80-column terminal's status line with its timer
    # (Progress.step shows "TEXT 1.7 min" and cuts it at 79 columns)
    announced = [line[2:] for line in out.getvalue().splitlines() if line.startswith("  ")]
    assert len(announced) >= 8
    for text in announced:
        assert len(f"{text} 99.9 min") <= 79, text


# -- the progress output itself -------------------------------------------------------------

def test_progress_plain_lines_off_a_terminal():
    out = io.StringIO()
    progress = Progress(out, tty=False)
    progress.step("loading ...")
    counter = progress.counter(50, "fits")
    for _ in range(50):
        counter.tick()
    progress.line("result")
    progress.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "  loading ..." and lines[-1] == "result"
    counts = [line.split()[1] for line in lines[1:-1]]
    assert counts == [f"{k}/50" for k in (0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50)]


def test_progress_bar_on_a_terminal_is_erased_by_results():
    out = io.StringIO()
    with Progress(out, tty=True) as progress:
        progress.step("importing ...")
        counter = progress.counter(4, "fits")
        for _ in range(4):
            counter.tick()
        assert "fits [" + "#" * 24 + "] 4/4 (100 %)" in out.getvalue()
        assert "fits [" + "." * 24 + "] 0/4 (0 %)" in out.getvalue()
        progress.line("result")
    text = out.getvalue()
    assert "\n" not in text[:text.index("result")]   # status lines rewrite one line
    before, after = text.rsplit("\r", 1)
    assert after == "result\n" and before.endswith(" " * 20)   # erased, then the result
