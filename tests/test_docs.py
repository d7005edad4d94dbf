"""The documentation site builds with Sphinx, warnings as errors (the API reference from the docstrings)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("furo")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    html = (tmp_path / "html")
    assert (html / "api.html").is_file() and (html / "getting-started.html").is_file()
    api = (html / "generated" / "skfiber.simulate.html").read_text(encoding="utf-8")
    assert "t_end" in api  # the reference is made from the docstrings


def guide_blocks():
    import re
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "guide.md").read_text(encoding="utf-8"), flags=re.S)


def test_guide_examples_run_on_their_own(capsys):
    """Every block of the user guide runs by itself and prints what its text says."""
    import matplotlib
    matplotlib.use("Agg")
    outputs = []
    for block in guide_blocks():
        exec(compile(block, "docs/guide.md", "exec"), {})  # noqa: S102 - our own docs
        outputs.append(capsys.readouterr().out.strip().splitlines()[-1])
    laws, loads, terms, contact, bodies, hill, output, study = outputs
    assert laws == "8 belly"
    assert float(loads) > 1.0  # pulled: stretched
    assert terms.endswith("'drag'] True")
    assert -0.05 < float(contact) < -0.035  # resting on the cylinder (top −0.06, fiber radius ≈ 0.02)
    assert bodies == "(11, 1) ['insertion', 'origin']"
    assert abs(float(hill) - 0.2508) < 1e-4
    assert output == "sag.pvd 4 True"
    assert study == "3 2"  # a = −1 and −0.5 fail
