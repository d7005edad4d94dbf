"""Newton's settings (:class:`NewtonOptions`).

Examples
--------
>>> from skfiber.core import NewtonOptions
>>> NewtonOptions(rtol=1e-8).with_stagnation_window(5).stagnation_window
5
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from .numbers import is_real

__all__ = ["NewtonOptions", "with_window"]


@dataclass(frozen=True)
class NewtonOptions:
    """Newton settings.

    Converged when ‖G‖ ≤ rtol · F_ref + atol + F_roundoff on the free DOFs,
    F_ref being the largest of the norms of the internal, inertial and external
    forces, and F_roundoff ≈ 10⁴ ε ‖Σₑ ‖Fₑ‖‖ the floor that round-off puts on
    the assembled internal force (large element forces that cancel).

    Parameters
    ----------
    rtol, atol
        Relative tolerance (of F_ref) and absolute tolerance (N) of the residual.
    max_iterations
        Iterations before Newton gives up (a time step is then split, a load step bisected).
    safeguard, min_step
        The contact safeguard δ̄ of paper eq. 71 and the smallest step fraction it may take.
    line_search, line_search_decrease
        Halvings of the backtracking line search on ‖G‖, and its sufficient decrease.
    stagnation_window
        Give up when ‖G‖ has not dropped by 10 % over this many iterations (0: never; None: 1 in
        time steps, 5 in static solves).
    jacobian_reuse, reuse_max_rate, reuse_max_change
        Modified Newton in time steps, and when it makes a fresh tangent.
    compiled_step
        Fiber-only time steps as one compiled call each (None: chosen per run; True; False).
    linear_fraction
        An iterative linear solve stops at this fraction of Newton's tolerance (inexact Newton).

    Notes
    -----
    The source declares each field with a longer comment (its reasons and measurements).

    Examples
    --------
    >>> from skfiber import NewtonOptions
    >>> options = NewtonOptions(rtol=1e-6, max_iterations=10, stagnation_window=3)
    >>> options.line_search, options.safeguard
    (6, 0.25)
    """

    rtol: float = 1e-9
    atol: float = 1e-12
    max_iterations: int = 25
    #: safeguard δ̄ of paper eq. 71: a step may shrink each contact point's
    #: admissibility margin 1 + γg at most to this fraction
    safeguard: float = 0.25
    #: smallest step fraction δ the safeguard may take before Newton gives up
    min_step: float = 1e-8
    #: backtracking line search on ‖G‖ after the safeguard: at most this many
    #: halvings of the step per iteration (0 = plain, safeguarded Newton)
    line_search: int = 6
    #: sufficient decrease of the line search: accept ‖G(u + s Δu)‖ ≤ (1 − c s) ‖G(u)‖
    line_search_decrease: float = 1e-4
    #: give up early when ‖G‖ stagnates: when the residual has not dropped by
    #: 10 % over this many iterations, Newton stops with a ConvergenceError
    #: instead of running to `max_iterations` (time steps and load steps are
    #: then bisected); 0 = never.  None (default): 1 in backward-Euler steps,
    #: where a failing step is cheaply split in two, and 5 in static solves,
    #: where Newton may creep towards an equilibrium (stiff contact)
    stagnation_window: int | None = None
    #: modified Newton in time steps: keep the factorized iteration matrix across iterations and steps
    #: while it contracts well (see :mod:`skfiber.newton`); False: a fresh tangent in every iteration
    jacobian_reuse: bool = True
    #: … refresh it when the contraction rate ‖Δuₖ₊₁‖/‖Δuₖ‖ of two increments made with it exceeds this
    reuse_max_rate: float = 0.2
    #: … and when the time scheme's c_v or c_a differs from the one it was made with by more than this
    #: fraction (a step-size change)
    reuse_max_change: float = 0.3
    #: fiber-only time steps as one compiled call each (:func:`skfiber.fiber_step.compiled_step`: the same
    #: iterates bit for bit, less Python per step).  Its machine code is compiled once per form, then cached
    #: on disk (the saving and the compile time: docs/performance.md).  None (default): chosen per run
    #: (:func:`skfiber.fiber_step.decide_compiled_step`): when an earlier run on this machine compiled it for
    #: the same forms, or for a fixed-step run long enough to pay for the compilation
    #: (:data:`skfiber.fiber_step.COMPILE_PAYOFF_STEPS` steps); True: always; False: never (the Python step)
    compiled_step: bool | None = None
    #: an iterative solve of the Newton system (GMRES on the coupled path when fibers touch each other) stops
    #: at this fraction of Newton's tolerance: an inexact Newton step, ‖G‖ of the next iterate moves by at
    #: most twice this fraction of the tolerance; 0: to round-off.  Direct solves are exact whatever it is
    linear_fraction: float = 1e-2

    def __post_init__(self):
        for key in ("rtol", "atol", "safeguard", "min_step", "line_search_decrease", "reuse_max_rate",
                    "reuse_max_change", "linear_fraction"):
            value = getattr(self, key)
            if not is_real(value):
                raise TypeError(f"{key} must be a finite number, got {value!r}")
        for key in ("max_iterations", "line_search"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{key} must be an integer, got {value!r}")
        if not self.rtol > 0:
            raise ValueError(f"rtol must be > 0, got {self.rtol}")
        if not self.atol >= 0:
            raise ValueError(f"atol must be ≥ 0, got {self.atol}")
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be ≥ 1, got {self.max_iterations}")
        if not 0 < self.safeguard < 1:
            raise ValueError(f"safeguard δ̄ must lie in (0, 1), got {self.safeguard}")
        if not 0 < self.min_step < 1:
            raise ValueError(f"min_step must lie in (0, 1), got {self.min_step}")
        if self.line_search < 0:
            raise ValueError(f"line_search must be an integer ≥ 0 (number of step halvings), got {self.line_search!r}")
        if not 0 <= self.line_search_decrease < 1:
            raise ValueError(f"line_search_decrease must lie in [0, 1), got {self.line_search_decrease}")
        if not isinstance(self.jacobian_reuse, (bool, np.bool_)):
            raise TypeError(f"jacobian_reuse must be True or False, got {self.jacobian_reuse!r}")
        if self.compiled_step is not None and not isinstance(self.compiled_step, (bool, np.bool_)):
            raise TypeError(f"compiled_step must be True, False or None (chosen per run), got {self.compiled_step!r}")
        if not 0 < self.reuse_max_rate < 1:
            raise ValueError(f"reuse_max_rate must lie in (0, 1) (a contraction rate), got {self.reuse_max_rate}")
        if not self.reuse_max_change >= 0:
            raise ValueError(f"reuse_max_change must be ≥ 0 (a relative change of c_v, c_a), got {self.reuse_max_change}")
        if not 0 <= self.linear_fraction <= 0.1:
            raise ValueError(f"linear_fraction must lie in [0, 0.1] (a fraction of Newton's tolerance; 0: linear "
                             f"solves to round-off), got {self.linear_fraction}")
        w = self.stagnation_window
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0):
            raise ValueError(f"stagnation_window must be an integer ≥ 0 (0 = never give up early) or None "
                             f"(1 in time steps, 5 in static solves), got {w!r}")

    def with_stagnation_window(self, default: int) -> "NewtonOptions":
        """These options with ``stagnation_window`` set to ``default`` if it is None."""
        if self.stagnation_window is not None:
            return self
        return with_window(self, default)


@functools.lru_cache(maxsize=16)
def with_window(options: NewtonOptions, window: int) -> NewtonOptions:
    """``options`` with ``stagnation_window=window`` (made once, not in every step)."""
    return dataclasses.replace(options, stagnation_window=window)
