"""Every subpackage ships in a non-editable install; the package's names are imported on first use."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_all_subpackages_are_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "skfiber").rglob("__init__.py")}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert "skfiber.demos" in listed


def test_dir_lists_the_lazy_names():
    """``run_simulation`` is imported on first use, and tab completion (``dir``) offers it all the same."""
    import skfiber

    assert "run_simulation" in dir(skfiber) and set(skfiber.__all__) <= set(dir(skfiber))
    assert callable(skfiber.run_simulation)


LAZY_IMPORT = """
import sys
import skfiber
heavy = [m for m in ("numba", "sympy", "skfem", "skfiber.model", "skfiber.solver") if m in sys.modules]
print(repr(heavy), repr(sorted(n for n in skfiber.__all__ if n in vars(skfiber))))
import os
print(os.environ.get("OMP_WAIT_POLICY"))
"""


def test_import_skfiber_imports_the_model_layer_only_when_a_name_is_used():
    """A fresh ``import skfiber`` loads neither numba nor sympy nor scikit-fem nor the model layer (the ``skfiber``
    command loads them where a Ctrl-C is reported in one line), holds none of its public names yet, and has set
    numba's OpenMP wait policy (the environment has none here)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", LAZY_IMPORT], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout.splitlines()
    assert out == ["[] []", "PASSIVE"]


def test_modules_and_names_resolve_on_first_use():
    """Public names and ``skfiber.<module>`` (the demos included) resolve when first used; ``skfiber.viz``
    (optional pyvista) says how to import it; an unknown name is an AttributeError."""
    import skfiber

    assert skfiber.Model.__module__ == "skfiber.model" and skfiber.rigid.__name__ == "skfiber.rigid"
    assert skfiber.demos.__name__ == "skfiber.demos" and {"rigid", "demos", "Model"} <= set(dir(skfiber))
    assert "viz" not in dir(skfiber) or "skfiber.viz" in sys.modules
    if "skfiber.viz" not in sys.modules:  # (another test of this process may have imported it)
        with pytest.raises(AttributeError, match="import skfiber.viz"):
            skfiber.viz
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        skfiber.no_such_name
