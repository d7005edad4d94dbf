"""Newton's method with the safeguard and line search, on any residual (paper §4.4).

:func:`newton` takes ``evaluate(x)`` → :class:`~skfiber.core.Evaluation` (residual, tangent, force
scales, contact margins), a linear solver with the constraints (:func:`make_solver`), and the
safeguard ``max_step`` of the contacts (paper eqs. 69–73); the static and dynamic solvers
(:mod:`skfiber.statics`, :mod:`skfiber.solver`) call it.

Example
-------
>>> import numpy as np
>>> from skfiber import Fiber, Model
>>> from skfiber.newton import make_solver
>>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
>>> type(make_solver(model)).__name__
'ConstrainedSolver'
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .contact.base import margins_kept
from .core import ConvergenceError, Evaluation, NewtonOptions
from .coupling import CoupledProblem
from .linalg import ConstrainedSolver
from .model import Model

__all__ = ["NewtonReport", "newton", "make_solver", "STATIC_STAGNATION_WINDOW", "ROUNDOFF_UPDATE"]

#: NewtonOptions.stagnation_window = None means this many iterations in static solves
#: (skfiber.solver passes its own default for time steps)
STATIC_STAGNATION_WINDOW = 5
#: a stagnating Newton counts as converged when its last update moved no entry by more than this
#: times max(1, ‖u‖∞) and the residual is below √rtol·F_ref: the residual is then at its round-off
#: floor (e.g. c_a M u with c_a = 1/Δt² ≈ 1e10 in the small steps of an adaptive run near a contact)
ROUNDOFF_UPDATE = 1e-12


@dataclass
class NewtonReport:
    iterations: int
    residual_history: list[float]
    #: step fractions of each iteration (safeguard δ × line search; 1.0 = full Newton step)
    step_fractions: list[float] = field(default_factory=list)
    active_contacts: int = 0
    #: contact margins of the converged state's evaluation (see Evaluation.margins)
    margins: dict | None = None


def newton(
    evaluate: Callable[[np.ndarray], Evaluation],
    u0: np.ndarray,
    solver: ConstrainedSolver,
    *,
    options: NewtonOptions = NewtonOptions(),
    t: float = 0.0,
    step: int | str = 0,
    max_step: Callable[[np.ndarray, np.ndarray], float] | None = None,
    first: Evaluation | None = None,
) -> tuple[np.ndarray, NewtonReport]:
    """Solve G(u) = 0 on the free DOFs starting from u0 (constrained DOFs as in u0).

    ``max_step(u, du)`` is the safeguard (paper eqs. 69–73): the update is
    u + δ du with δ = max_step(u, du) ∈ (0, 1].  When every contact checks
    eq. 71 at the end of the step (``safeguard="trial"``, the evaluations
    carry ``margins``), the full step is evaluated first and kept if
    :func:`~skfiber.contact.base.margins_kept` holds; ``max_step`` is only
    called when it does not.  ``first`` is the evaluation at u0 when the
    caller has it already.
    """
    fractions: list[float] = []
    u = u0.copy()
    history: list[float] = []
    free = ~solver.fixed

    def evaluate_checked(uu):
        try:
            ev_ = evaluate(uu)
        except FloatingPointError as err:
            return None, err  # (its message is made only if Newton fails: it may cost an evaluation)
        return checked(ev_)

    def checked(ev_):
        if not (ev_.min_stretch > 0 and math.isfinite(ev_.min_stretch)):
            return None, f"inadmissible state: stretch λ = {ev_.min_stretch:.3g} (the fiber folded onto itself or blew up)"
        r = ev_.residual[free]
        res_ = math.sqrt(float(r.dot(r)))  # np.linalg.norm bit for bit, without its overhead
        if not math.isfinite(res_):
            return None, "the residual is not finite"
        return (ev_, res_), ""

    trial, why = evaluate_checked(u) if first is None else checked(first)
    if trial is None:
        raise ConvergenceError(str(why), t=t, step=step, residual_history=history)
    ev, res = trial
    last_update = None  # (step fraction, increment) of the last iteration
    for it in range(options.max_iterations + 1):
        history.append(res)
        if res <= options.rtol * ev.reference_force + options.atol + ev.roundoff:
            return u, NewtonReport(it, history, fractions, ev.n_active_contacts, ev.margins)
        if it == options.max_iterations:
            break
        w = STATIC_STAGNATION_WINDOW if options.stagnation_window is None else options.stagnation_window
        if (w and it >= w and res > 0.9 * history[it - w] and last_update is not None
                and res <= math.sqrt(options.rtol) * ev.reference_force
                and last_update[0] * float(np.max(np.abs(last_update[1])))
                <= ROUNDOFF_UPDATE * max(1.0, float(np.max(np.abs(u))))):
            return u, NewtonReport(it, history, fractions, ev.n_active_contacts, ev.margins)
        if w and it >= w and res > 0.9 * history[it - w]:
            raise ConvergenceError(
                f"Newton stagnates: the residual did not drop by 10 % in {w} iterations "
                f"({history[it - w]:.3e} → {res:.3e}; NewtonOptions.stagnation_window)",
                t=t, step=step, residual_history=history,
            )
        try:
            if hasattr(solver, "solve_newton"):  # coupled fibers + rigid bodies (skfiber.coupling)
                du = solver.solve_newton(ev)
            else:
                du = solver.solve(ev.element_matrices, -ev.residual, ev.extra)
        except (np.linalg.LinAlgError, RuntimeError) as err:
            raise ConvergenceError(f"singular tangent ({err})", t=t, step=step, residual_history=history) from err
        if not np.isfinite(du).all():
            raise ConvergenceError("the Newton increment is not finite (singular tangent?)", t=t, step=step, residual_history=history)
        full = None  # the evaluation at u + du, when the safeguard is checked from it
        if max_step is None:
            delta = 1.0
        else:
            delta = None
            if ev.margins is not None:  # eq. 71 at the end of the full step, from its evaluation
                full, _ = evaluate_checked(u + du)
                if (full is not None and full[0].margins is not None
                        and margins_kept(ev.margins, full[0].margins, options.safeguard)):
                    delta = 1.0
            if delta is None:
                delta = float(max_step(u, du))
        if not delta >= options.min_step:
            raise ConvergenceError(
                f"no admissible step: the contact safeguard allows only δ = {delta:.3g} of the Newton step",
                t=t, step=step, residual_history=history,
            )
        # backtracking on ‖G‖ (Armijo): halve the safeguarded step until the residual decreases
        # enough; after `line_search` halvings the last trial is taken anyway (if admissible)
        s = min(delta, 1.0)
        fallback = None
        for k in range(options.line_search + 1):
            if k == 0 and s == 1.0 and full is not None:
                trial, why = full, ""
            else:
                trial, why = evaluate_checked(u + s * du)
            if trial is not None:
                fallback = (s, trial)
                if trial[1] <= (1.0 - options.line_search_decrease * s) * res:
                    break
            if k < options.line_search:
                s *= 0.5
        if fallback is None:
            raise ConvergenceError(str(why), t=t, step=step, residual_history=history)
        s, (ev, res) = fallback
        fractions.append(s)
        u = u + s * du
        last_update = (s, du)
    raise ConvergenceError(
        f"no convergence in {options.max_iterations} iterations", t=t, step=step, residual_history=history
    )


# --------------------------------------------------------------------------- statics


def make_solver(model: Model):
    """The linear solver of the model's Newton systems: fibers only, or coupled to rigid bodies."""
    if model.rigid is not None:

        return CoupledProblem(model)
    return ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
