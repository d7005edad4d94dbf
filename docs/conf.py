"""Sphinx configuration of the skfiber documentation site (``sphinx-build -W docs docs/_build/html``)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

project = "skfiber"
author = "skfiber developers"
copyright = "skfiber developers, BSD-3-Clause"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "img/README*"]
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]
html_theme = "furo"
html_title = "skfiber"
