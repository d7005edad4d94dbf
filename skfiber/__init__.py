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
from .checks import check_tangent
from .fiber import Fiber
from .materials import (
    MaterialPoint,
    StressResponse,
    SymbolicLaw,
    active_stress,
    check_law_derivatives,
    law_from_function,
    paper_law,
    passive_kelvin_voigt,
    prestress,
)
from .core import State
from .model import Model
from .postprocess import FiberFields, fiber_fields, recovered_axial_force
from .core import ConvergenceError, NewtonOptions
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


def __getattr__(name: str):
    """``run_simulation`` (simulate with VTK output and checkpoints) is imported when first used: it brings
    the output layer (meshio), which a model without files does not need."""
    if name == "run_simulation":
        from .run import run_simulation

        return run_simulation
    raise AttributeError(f"module 'skfiber' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazily imported ones (tab completion offers ``run_simulation`` too)."""
    return sorted(set(globals()) | set(__all__))
