"""The README is short, true, and runs as written; stale claims do not come back.

* The README's Python code blocks run, in order, in one namespace, without ``SKDP_DATA``,
  with an empty cache and the network refused (Adult is shipped in the package), and
  print what their comments say.
* Length: at most ``MAX_WORDS`` words, counting **every** whitespace-separated token of
  ``README.md`` -- code blocks, tables and the license included (``len(text.split())``,
  what ``wc -w`` counts); no table cell longer than ``MAX_CELL`` characters and no
  paragraph or bullet outside code blocks longer than ``MAX_PARAGRAPH_WORDS`` words.
* The Quickstart's test command is the one ``.ci/run`` runs verbatim.
* The results quoted in the README's table are the ones in the benchmark file it names.
* ``STALE`` lists claims that were once written and are false (issue 36): each pattern is
  searched in ``README.md``, every ``doc/`` page written by hand (``doc/**/*.rst`` outside
  the generated ``auto_examples/`` and ``generated/``) and the source of the estimators and
  solvers (``skdp/linear_model/*.py``, ``skdp/_solvers/*.py``, ``skdp/_mechanisms/_noise.py``:
  their docstrings).  The claim they contradict is pinned too: every solver an estimator
  accepts has the exact (floating-point-safe) noise path, so ``secure_noise_`` is True by
  default whatever the solver.
"""

import pathlib
import re
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

MAX_WORDS = 900
MAX_CELL = 200
MAX_PARAGRAPH_WORDS = 100


#: (pattern, why it is false); searched case-insensitively, whitespace-insensitively
STALE = [
    (r"float noise (is|are) not hardened",
     "every solver runs with exact noise by default (secure_noise_ = True)"),
    (r"``b``\s+stays\s+float|linear term\W+stays\s+float",
     "objective perturbation's linear term b is an exact lattice draw under secure_noise"),
    (r"per-step noise has no exact path",
     "every solver has an exact path (SECURE_NOISE_SOLVERS)"),
    (r"default of the one-shot\s+solvers",
     "secure noise is the default of every solver, not only the one-shot ones"),
    (r"set only\s+`+epsilon`+\s+and\s+`+data_norm`+",
     "a classifier also needs classes= (or its epsilon_ is inf)"),
    (r"`DPHuberRegressor\(\)`\s+beats",
     "the bare constructor has no data_norm, hence no guarantee"),
    (r"#\s*or\s+python -m skdp demo\s*$",
     "after `skdp demo --quick`, the alternative must be the quick demo too"),
    (r"with the default\s+``solver=\"output_perturbation\"``",
     "solver='auto' takes objective perturbation (binary) or dpsgd (multinomial)"),
    (r"which labels occur is treated as public",
     "without classes= the fit warns and reports epsilon_ = inf"),
    (r"memory: one clipped copy of\s+``X`` \(about",
     "output perturbation clips rows as it reads them (ClippedRows), no copy"),
]


def _readme():
    return README.read_text(encoding="utf-8")


def _outside_code(text):
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.S | re.M)


def _code_blocks(text, lang):
    return re.findall(rf"^```{lang}[ \t]*\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_word_count():
    words = len(_readme().split())
    assert words <= MAX_WORDS, f"README.md has {words} words (all tokens), limit {MAX_WORDS}"


def test_readme_table_cells_are_short():
    for line in _outside_code(_readme()).splitlines():
        if not line.lstrip().startswith("|"):
            continue
        for cell in line.strip().strip("|").split("|"):
            assert len(cell.strip()) <= MAX_CELL, f"table cell too long: {cell.strip()[:80]}..."


def test_readme_paragraphs_are_short():
    text = _outside_code(_readme())
    # paragraphs are separated by blank lines; a bullet starts a new paragraph
    for block in re.split(r"\n\s*\n|\n(?=\* )", text):
        if block.lstrip().startswith("|"):
            continue
        words = len(block.split())
        assert words <= MAX_PARAGRAPH_WORDS, f"{words} words: {block.strip()[:80]}..."


def test_quickstart_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    marker = next(i for i, line in enumerate(ci) if "README Quickstart test command" in line)
    command = ci[marker + 1].strip()
    assert command in [b.strip() for b in _code_blocks(_readme(), "bash")], command


def test_readme_results_are_those_of_the_benchmark_file():
    text = _readme()
    intro = re.search(r"On Adult at total ε = 1 \(.*?`(benchmarks/results/[\w.]+\.md)`\)", text)
    assert intro, "the results table must name its benchmark file"
    results = (ROOT / intro.group(1)).read_text(encoding="utf-8")
    adult = results.split("### adult", 1)[1].split("###", 1)[0]
    row = next(line for line in adult.splitlines() if line.startswith("| 1 |"))
    header = next(line for line in adult.splitlines() if line.startswith("| ε |"))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")],
                     [c.strip() for c in row.strip("|").split("|")]))
    table = text[intro.end():].split("\n\n", 2)[1]
    column = {"skdp `make_private_pipeline`": "skdp bounds-free pipeline",
              "DP-EBM 0.7.8, `learning_rate=0.1`": "DP-EBM lr=0.1 †",
              "diffprivlib 0.6.6, default `C`": "diffprivlib default C †",
              "scikit-learn `LogisticRegression`": "sklearn LR (non-private)"}
    quoted = [[c.strip() for c in line.strip().strip("|").split("|")]
              for line in table.splitlines()[2:]]
    assert len(quoted) == len(column)
    for model, accuracy, auc, _ in quoted:
        measured = cells[column[model]]
        assert measured.startswith(f"{accuracy} ±") and f"/ {auc} ±" in measured, (model, measured)


def test_readme_multiclass_count_is_that_of_the_benchmark_file():
    """'within 0.02 of its best alpha in k of m cells' counts the cells of
    benchmarks/results/multiclass.json whose default - oracle is >= -0.02."""
    import json

    found = re.search(r"multinomial default is within 0\.02 of its best α in (\d+) of (\d+) "
                      r"cells\s+\(`multiclass\.md`\)", re.sub(r"\s+", " ", _readme()))
    assert found, "the README must state the multiclass count and name multiclass.md"
    raw = json.loads((ROOT / "benchmarks" / "results" / "multiclass.json").read_text())
    gaps = [row["default"]["accuracy"] - row["oracle"]["accuracy"]
            for cell in raw["cells"].values() for key, row in cell.items()
            if isinstance(row, dict) and "oracle" in row]
    assert (int(found.group(1)), int(found.group(2))) == \
        (sum(g >= -0.02 for g in gaps), len(gaps))


@pytest.fixture
def adult_data(monkeypatch, tmp_path):
    """A newcomer's machine: no SKDP_DATA, an empty cache, no network.  The README's first
    example must run anyway (load_adult reads the adult.data shipped in the package)."""
    monkeypatch.delenv("SKDP_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))

    def refuse(*args, **kwargs):
        raise AssertionError("the README example must not touch the network")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def test_readme_python_examples_run(adult_data, capsys):
    pytest.importorskip("pandas")
    text = _readme()
    blocks = _code_blocks(text, "python")
    assert blocks, "the README has no Python example"
    first = blocks[0]
    assert "make_private_pipeline" in first and "as_frame=True" in first, (
        "the first example starts from a raw DataFrame")
    namespace = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"README.md python block {i}", "exec"), namespace)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    # what the first block's comments say: "about 0.85", then the guarantee
    assert abs(float(printed[0]) - 0.85) < 0.015, printed
    epsilon, delta, guaranteed = printed[1].split()
    assert float(epsilon) <= 1.0 and float(delta) == 1e-6 and guaranteed == "True", printed


def _searched_files():
    files = [README]
    for page in sorted((ROOT / "doc").rglob("*.rst")):
        rel = page.relative_to(ROOT / "doc").parts
        if rel[0] not in ("auto_examples", "generated", "gen_modules", "_build"):
            files.append(page)
    files += sorted((ROOT / "skdp" / "linear_model").glob("*.py"))
    files += sorted((ROOT / "skdp" / "_solvers").glob("*.py"))
    files.append(ROOT / "skdp" / "_mechanisms" / "_noise.py")
    return files


@pytest.mark.parametrize("pattern, why", STALE, ids=[p for p, _ in STALE])
def test_no_stale_claim(pattern, why):
    found = []
    for path in _searched_files():
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8")) if "$" not in pattern \
            else path.read_text(encoding="utf-8")
        if re.search(pattern, text, flags=re.I | re.M):
            found.append(str(path.relative_to(ROOT)))
    assert not found, f"stale claim /{pattern}/ ({why}) in {found}"


def test_every_solver_has_the_exact_noise_path():
    """What the README and the docstrings say: secure_noise='auto' is exact for every
    solver an estimator accepts."""
    from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
    from skdp._solvers import SECURE_NOISE_SOLVERS

    for est in (DPLogisticRegression(), DPHuberRegressor(), DPNonconvexRegressor()):
        (options,) = [c for c in est._parameter_constraints["solver"] if hasattr(c, "options")]
        solvers = set(options.options) - {"auto"}
        assert solvers and solvers <= SECURE_NOISE_SOLVERS, solvers - SECURE_NOISE_SOLVERS
        for solver in solvers:
            assert est._secure_noise(solver) is True


def test_readme_states_test_duration_and_how_to_run_the_slow_audits():
    """The default run's duration is stated, and the slow audits' command is the one CI
    runs (the default run deselects them: pyproject's addopts has ``-m 'not slow'``)."""
    text = re.sub(r"\s+", " ", _outside_code(_readme()))
    assert re.search(r"Tests \(\d+ min on \d+ busy cores\)", text)
    assert "`python -m pytest -n 2 -m slow`" in text
    assert "python -m pytest -n 2 -m slow" in (ROOT / ".ci" / "run").read_text()
    assert "-m 'not slow'" in (ROOT / "pyproject.toml").read_text()


def test_readme_results_file_ran_on_a_clean_commit():
    """The benchmark file behind the README's headline table records a clean commit."""
    found = re.search(r"`(benchmarks/results/[\w.]+\.md)`", _readme())
    results = (ROOT / found.group(1)).read_text(encoding="utf-8")
    source = re.findall(r"skdp source: git commit ([0-9a-f]{7,40})(.*)", results)
    assert source, "the results file must record the skdp commit it ran on"
    for commit, rest in source:
        assert rest.strip().startswith(", no uncommitted changes"), (commit, rest)
