"""The demo gallery's hooks for sphinx-gallery (docs/conf.py).

In a module of their own so that Sphinx can pickle the configuration that names them.
"""
from __future__ import annotations

import ast
import atexit
import shutil
import tempfile
from pathlib import Path

QUICK_DEMOS = {
    "custom_law": ["--plot", "{out}/custom_law.png"],
    "custom_term": ["--plot", "{out}/custom_term.png"],
    "manufactured_solution": ["--plot", "{out}/manufactured_solution.png"],
    "upper_limb": ["--level", "1", "--quiet", "--output", "{out}"],
}
_demo_outputs: dict[str, Path] = {}


def _demo_output(src_file: str) -> Path:
    """A fresh folder for the files that the demo ``src_file`` writes (removed at exit)."""
    if src_file not in _demo_outputs:
        _demo_outputs[src_file] = Path(tempfile.mkdtemp(prefix="skfiber-gallery-"))
        atexit.register(shutil.rmtree, _demo_outputs[src_file], ignore_errors=True)
    return _demo_outputs[src_file]


class DemoArguments:
    """sphinx-gallery's ``reset_argv``: the command line of each demo that runs.

    It also gives the demo its module docstring back (sphinx-gallery runs the code with
    ``__doc__ = ""``; the demos' command lines take their description from it).
    """

    def __call__(self, gallery_conf, script_vars):
        source = Path(script_vars["src_file"]).read_text(encoding="utf-8")
        script_vars["example_globals"]["__doc__"] = ast.get_docstring(ast.parse(source), clean=False)
        name = Path(script_vars["src_file"]).stem
        out = _demo_output(script_vars["src_file"])
        return [arg.format(out=out) for arg in QUICK_DEMOS.get(name, [])]

    def __repr__(self):  # sphinx-gallery compares configurations by it
        return f"DemoArguments({QUICK_DEMOS!r})"


class DemoFigures:
    """An image scraper: the PNG files that the demo wrote into its output folder."""

    def __call__(self, block, block_vars, gallery_conf):
        from sphinx_gallery.scrapers import figure_rst

        folder = _demo_outputs.get(block_vars["src_file"])
        if folder is None:
            return ""
        images = []
        for png, target in zip(sorted(folder.rglob("*.png")), block_vars["image_path_iterator"]):
            shutil.copyfile(png, target)
            images.append(target)
        return figure_rst(images, gallery_conf["src_dir"])

    def __repr__(self):
        return "DemoFigures()"
