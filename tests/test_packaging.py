"""Every subpackage ships in a non-editable install."""
from pathlib import Path

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
