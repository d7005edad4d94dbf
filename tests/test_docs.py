"""The documentation site builds with Sphinx, warnings as errors (the API reference from the docstrings,
the demo gallery from demos/)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_without_warnings(tmp_path):
    """The whole site with -W.  Of the gallery's quick demos only custom_law runs here, to keep
    the suite's time: the others take longer, and they run small in their own tests."""
    for module in ("sphinx", "myst_parser", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme"):
        pytest.importorskip(module)
    env = dict(os.environ, SKFIBER_GALLERY_RUN="custom_law", MPLBACKEND="Agg")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    html = (tmp_path / "html")
    assert (html / "api.html").is_file() and (html / "getting-started.html").is_file()
    api = (html / "generated" / "skfiber.simulate.html").read_text(encoding="utf-8")
    assert "t_end" in api  # the reference is made from the docstrings
    text = re.sub(r"<[^>]+>", "", api)
    assert "Examples" in text and "fiber = Fiber.straight" in text  # numpydoc kept the docstring's example
    forms = re.sub(r"<[^>]+>", "", (html / "api" / "forms.html").read_text(encoding="utf-8"))
    assert "skfiber.forms.internal_force(v, w)" in forms and "eq. 38, first term" in forms  # a form: its function's
    assert "skfiber.forms.mass(u, v, w)" in forms and "A scikit-fem BilinearForm" in forms  # doc, not its class's
    assert "skfiber.threads.blas_threads" in (html / "api" / "run.html").read_text(encoding="utf-8")
    demos = sorted(p.stem for p in (ROOT / "demos").glob("[a-z]*.py"))
    assert sorted(p.stem for p in (html / "demos").glob("[a-z]*.html") if p.stem not in ("index", "sg_execution_times")) == demos
    ran = (html / "demos" / "custom_law.html").read_text(encoding="utf-8")
    assert "sphx-glr-script-out" in ran and "summary: law_derivative_error=" in ran  # its output, its figure:
    assert "sphx_glr_custom_law_001.png" in ran and (html / "_images" / "sphx_glr_custom_law_001.png").is_file()
    shown = (html / "demos" / "whiplash.html").read_text(encoding="utf-8")
    assert "sphx-glr-script-out" not in shown and "sphx_glr_whiplash_001.png" not in shown  # not run


def guide_blocks():
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "guide.md").read_text(encoding="utf-8"), flags=re.S)


def test_guide_examples_run_on_their_own(capsys):
    """Every block of the user guide runs by itself and prints what its text says."""
    import matplotlib
    matplotlib.use("Agg")
    printed = []
    for block in guide_blocks():
        exec(compile(block, "docs/guide.md", "exec"), {})  # noqa: S102 - our own docs
        printed.append(capsys.readouterr().out.strip().splitlines())
    laws, loads, failed, terms, contact, bodies, hill, output, study = (lines[-1] for lines in printed)
    assert laws == "8 belly"
    assert float(loads) > 1.0  # pulled: stretched
    assert failed == "0.0 0.1"  # the failed run kept its start; fixed steps went on from it
    assert terms.endswith("'drag'] True")
    assert -0.05 < float(contact) < -0.035  # resting on the cylinder (top −0.06, fiber radius ≈ 0.02)
    assert bodies == "(11, 1) ['insertion', 'origin']"
    assert abs(float(hill) - 0.2508) < 1e-4
    # fixed steps, then error control: 5 written times (every 0.02 s), more steps
    assert printed[7][-2:] == ["sag.pvd 4 True", "5 True"] and output == "5 True"
    assert study == "3 2"  # a = −1 and −0.5 fail
