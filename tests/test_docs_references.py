"""The documentation names functions and modules that exist.

``docs/theory.md`` maps each equation of the paper to the function that implements it, and the guide
and the README point users to functions; a rename that leaves them behind sends readers nowhere.  Every
backquoted dotted name beginning with ``skfiber.`` in these pages must import (a module) or resolve
by attribute access from its module.  (The changelog and the performance log keep historical names on
purpose and are not checked.)
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/theory.md", "docs/guide.md", "docs/architecture.md", "docs/getting-started.md",
         "docs/paraview.md"]
REFERENCE = re.compile(r"`(skfiber(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\([^`]*\))?`")


def resolves(name: str) -> bool:
    """Whether a dotted name is a module of skfiber or an attribute reached from one."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for part in parts[split:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def test_the_check_finds_a_missing_name():
    assert resolves("skfiber.statics.solve_static")
    assert resolves("skfiber.contact")
    assert not resolves("skfiber.statics.solve_statics")
    assert not resolves("skfiber.no_such_module.anything")
    theory = (ROOT / "docs/theory.md").read_text(encoding="utf-8")
    assert len(set(REFERENCE.findall(theory))) > 20  # the map from equations to functions is read


@pytest.mark.parametrize("page", PAGES)
def test_references_resolve(page):
    names = sorted(set(REFERENCE.findall((ROOT / page).read_text(encoding="utf-8"))))
    missing = [name for name in names if not resolves(name)]
    assert not missing, f"{page} names what does not exist: {missing}"
