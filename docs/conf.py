"""Sphinx configuration of the skfiber documentation site.

Build: ``python -m sphinx -W -b html docs docs/_build/html``; the gallery runs the quick demos
(``gallery_demos.QUICK_DEMOS``).  ``-D plot_gallery=0`` shows every demo without running it;
the environment variable ``SKFIBER_GALLERY_RUN=name,name`` runs only the demos named.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gallery_demos import QUICK_DEMOS, DemoArguments, DemoFigures  # noqa: E402
from skfem.assembly.form.form import Form  # noqa: E402

project = "skfiber"
author = "skfiber developers"
copyright = "skfiber developers, BSD-3-Clause"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "img/README*", "demos/*.ipynb", "demos/*.py", "demos/*.zip"]
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc: the types are in the docstrings' Parameters sections
numpydoc_show_class_members = False  # autosummary lists the members
numpydoc_class_members_toctree = False
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = "skfiber"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}

# ---------------------------------------------------------------- scikit-fem forms in the API reference
# A form declared with scikit-fem's @LinearForm / @BilinearForm is an instance of the form's class, whose
# docstring and signature autodoc would show: the reference shows the decorated function's instead.


def _form_docstring(app, what, name, obj, options, lines):
    if isinstance(obj, Form):
        lines[:] = [*(inspect.getdoc(obj.form) or "").splitlines(), "",
                    f"A scikit-fem ``{type(obj).__name__}``: ``{name.rsplit('.', 1)[-1]}.assemble(basis, **w)``."]


def _form_signature(app, what, name, obj, options, signature, return_annotation):
    if isinstance(obj, Form):
        return "(" + ", ".join(inspect.signature(obj.form).parameters) + ")", None
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _form_docstring)
    app.connect("autodoc-process-signature", _form_signature)


# ---------------------------------------------------------------- the demo gallery (sphinx-gallery)
# The gallery runs the quick demos of gallery_demos.QUICK_DEMOS, each with its arguments, and
# shows the PNG files they write; the others are shown without running: their text and code.
_run = [name for name in os.environ.get("SKFIBER_GALLERY_RUN", ",".join(QUICK_DEMOS)).split(",") if name]
_unknown = sorted(set(_run) - set(QUICK_DEMOS))
if _unknown:
    raise ValueError(f"SKFIBER_GALLERY_RUN names {_unknown}, not quick demos; choose from {sorted(QUICK_DEMOS)}")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "demos"),
    "gallery_dirs": "demos",
    "filename_pattern": "/(" + "|".join(map(re.escape, _run)) + r")\.py$" if _run else r"^$",
    "ignore_pattern": r"(__init__|(^|/)_\w+)\.py$",  # the package file and the demos' helper modules
    "reset_argv": DemoArguments(),
    "image_scrapers": (DemoFigures(),),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
}
