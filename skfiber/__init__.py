"""skfiber: skeletal muscles as 1D continuum cables on scikit-fem.

The fiber-based muscle model of Gfrerer & Simeon (Multibody System Dynamics,
2021): fibers are cables discretized with cubic Hermite elements
(``ElementVector(ElementLineHermite(), 3)`` on a ``MeshLine``), the weak form
is declared as scikit-fem forms (:mod:`skfiber.forms`).

Examples
--------
>>> import skfiber as sf
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=sf.paper_law())
>>> model = sf.Model([fiber])
>>> model.fix(fiber, "start"); model.fix(fiber, "end")
>>> model.add_gravity()
>>> result = sf.simulate(model, t_end=0.05, dt=0.01, progress=False)
"""
import importlib as _importlib
import os as _os
import pkgutil as _pkgutil
import typing as _typing

# OpenMP's waiting threads sleep instead of spinning (see skfiber.threads): numba reads the policy when it starts
# its threads, at the first parallel kernel, so it is set here, before any module of the package can start one
# (and without importing numba, which takes about a tenth of a second: ``import skfiber`` stays instant)
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

if _typing.TYPE_CHECKING:  # (for type checkers and editors; at run time the names are imported when first used)
    from .checks import check_tangent
    from .core import ConvergenceError, NewtonOptions, State
    from .fiber import Fiber
    from .materials import (MaterialPoint, StressResponse, SymbolicLaw, active_stress, check_law_derivatives,
                            law_from_function, paper_law, passive_kelvin_voigt, prestress)
    from .model import Model
    from .postprocess import FiberFields, fiber_fields, recovered_axial_force
    from .run import run_simulation
    from .solver import SimulationResult, simulate, solve_static
    from .terms import Term

__version__ = "0.1.0"

__all__ = [
    "Fiber",
    "Model",
    "State",
    "Term",
    "MaterialPoint",
    "StressResponse",
    "SymbolicLaw",
    "paper_law",
    "prestress",
    "active_stress",
    "passive_kelvin_voigt",
    "law_from_function",
    "check_law_derivatives",
    "check_tangent",
    "simulate",
    "solve_static",
    "NewtonOptions",
    "ConvergenceError",
    "SimulationResult",
    "FiberFields",
    "fiber_fields",
    "recovered_axial_force",
    "run_simulation",
]


#: where each public name lives: ``import skfiber`` imports none of these modules (nor sympy, scikit-fem and the
#: model layer that they import); the first use of a name imports its module
_HOME = {
    "check_tangent": ".checks",
    "ConvergenceError": ".core", "NewtonOptions": ".core", "State": ".core",
    "Fiber": ".fiber",
    **{name: ".materials" for name in ("MaterialPoint", "StressResponse", "SymbolicLaw", "active_stress",
                                       "check_law_derivatives", "law_from_function", "paper_law",
                                       "passive_kelvin_voigt", "prestress")},
    "Model": ".model",
    "FiberFields": ".postprocess", "fiber_fields": ".postprocess", "recovered_axial_force": ".postprocess",
    "run_simulation": ".run",
    "SimulationResult": ".solver", "simulate": ".solver", "solve_static": ".solver",
    "Term": ".terms",
}


def __getattr__(name: str):
    """The public names, imported from their modules when first used (and kept); ``skfiber.<module>`` for a
    module of the package that is not imported yet (but :mod:`skfiber.viz`, which needs the optional pyvista and
    is imported explicitly)."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(_importlib.import_module(home, __name__), name)
        globals()[name] = value
        return value
    if name in _modules():
        return _importlib.import_module(f".{name}", __name__)
    if name == "viz":
        raise AttributeError("skfiber.viz is imported explicitly: import skfiber.viz (it needs pyvista: "
                             "pip install 'skfiber[viz]')")
    raise AttributeError(f"module 'skfiber' has no attribute {name!r}")


_MODULES: set[str] = set()


def _modules() -> set[str]:
    """The package's modules that ``skfiber.<module>`` imports on first use: all but ``viz`` and private ones,
    and ``demos`` (the repository's folder, mapped into the package).  Looked up once."""
    if not _MODULES:
        _MODULES.update({m.name for m in _pkgutil.iter_modules(__path__) if not m.name.startswith("_")} - {"viz"})
        _MODULES.add("demos")
    return _MODULES


def __dir__() -> list[str]:
    """The module's names with the public names and modules not imported yet (tab completion offers them)."""
    return sorted(name for name in set(globals()) | set(__all__) | _modules()
                  if not name.startswith("_") or name.startswith("__"))
