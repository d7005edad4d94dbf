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
