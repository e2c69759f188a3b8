"""Sphinx configuration of the skdp documentation.

Build: ``python -m pip install -e ".[docs]" && python -m sphinx -W -b html doc doc/_build/html``
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
templates_path = []
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py.md5"]
html_theme = "pydata_sphinx_theme"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
}
