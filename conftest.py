"""Root pytest configuration: the doctests of optional-dependency modules are
skipped when the dependency is not installed (``pip install -e .[viz]``)."""
import importlib.util

collect_ignore = []
if importlib.util.find_spec("pyvista") is None:
    collect_ignore.append("skfiber/viz.py")
