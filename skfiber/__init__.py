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
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import threads  # noqa: F401  (its import sets numba's OpenMP wait policy before any kernel starts threads)

if TYPE_CHECKING:  # (for type checkers and editors; at run time the names are imported when first used)
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


#: where each public name lives: ``import skfiber`` imports none of them (numpy, scipy, numba, sympy and
#: scikit-fem take about a second); the first use of a name imports its module
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
    module of the package that is not imported yet."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home, __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'skfiber' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazily imported ones (tab completion offers ``run_simulation`` too)."""
    return sorted(set(globals()) | set(__all__))
