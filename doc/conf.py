"""Sphinx configuration of the skdp documentation.

Build (from the repository root; warnings are errors)::

    python -m pip install -e ".[docs]" && python -m sphinx -W -b html doc doc/_build/html

``-D plot_gallery=0`` skips running the gallery scripts (their pages are then built without
figures); ``tests/test_docs.py`` builds that way because ``tests/examples/`` already runs
every script.  Nothing here uses the network (no intersphinx), and the built site needs
none either: MathJax ships with it.
"""

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
copyright = "skdp developers, BSD-3-Clause"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax 3 ships with the built site (_static/mathjax/), so math renders offline
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_static/screenshots",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.py.md5",
    "auto_examples/*.codeobj.json",
    "auto_examples/*.zip",
    "auto_examples/sg_execution_times.rst",
]

# autodoc / autosummary / numpydoc
autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()
default_role = "literal"

# MathJax: sphinx-mathjax-offline (the docs extra) copies MathJax 3 into _static/mathjax/
# and points mathjax_path at it, so no page loads anything from a CDN
# (tests/test_docs.py::test_math_renders_offline).

# myst (the benchmark result pages are the markdown files the scripts write)
myst_enable_extensions = []
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# HTML
html_theme = "pydata_sphinx_theme"
html_title = f"skdp {release}"
html_static_path = ["_static"]
html_css_files = ["skdp.css"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "header_links_before_dropdown": 6,
}
html_sidebars = {"index": [], "install": []}

# sphinx-gallery: every examples/plot_*.py is a gallery page (run unless plot_gallery=0)
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(HERE), "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "min_reported_time": 1_000_000,  # keep machine-dependent timings off the pages
    "write_computation_times": False,
    # "Examples using X" on each API page, and links from the example code to the API
    "doc_module": ("skdp",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skdp": None},
}

# Matplotlib in the gallery must not try to open windows.
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")
warnings.filterwarnings(
    "ignore", message="FigureCanvasAgg is non-interactive", category=UserWarning
)
