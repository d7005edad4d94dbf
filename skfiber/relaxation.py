"""Static equilibrium of slack or nearly slack cables by pseudo-transient relaxation.

A cable has no bending stiffness: when the tension vanishes (a law with
S(λ = 1) = 0, no prestress) the tangent of the straight reference state is
singular, and with little prestress Newton's first step overshoots by far (the
geometric stiffness σ0 A is tiny next to the axial one).  Relaxation replaces
G(u) = 0 by a sequence of regularized problems

    κₖ M (u − uₖ) + G(u) = 0,        uₖ₊₁ = u,

backward-Euler steps of the overdamped flow M u̇ = −G(u) with pseudo-time step
1/κₖ (pseudo-transient continuation, Kelley & Keyes 1998).  κ M makes every
tangent κ M + K nonsingular; κ starts so that the first step moves the cable
by :data:`FIRST_MOVE` of its shortest fiber length and follows the residual
(switched evolution relaxation: κₖ₊₁ = κₖ ‖G(uₖ₊₁)‖ / ‖G(uₖ)‖), and every
:data:`NEWTON_EVERY` steps plain Newton (κ = 0) is tried from where the flow
got.  Only plain Newton's converged state is returned: the equilibrium has the
same tolerance as any other static solve.

Examples
--------
>>> from skfiber import Fiber, Model
>>> from skfiber.materials import passive_kelvin_voigt
>>> from skfiber.relaxation import relax
>>> law = passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0, eta_tendon=0)  # S(1) = 0
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=law)
>>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
>>> import numpy as np
>>> u, report = relax(model, np.zeros(model.n_dofs), t=0.0, load_factor=1.0)
>>> report.pseudo_steps > 0
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse.linalg as spl

from .core import ConvergenceError, NewtonOptions
from .linalg import ConstrainedSolver
from .model import Model, one_run
from .newton import newton

__all__ = ["RelaxationReport", "relax", "MAX_PSEUDO_STEPS", "FIRST_MOVE", "NEWTON_EVERY"]

#: at most this many pseudo-time steps (each one Newton solve) per relaxation
MAX_PSEUDO_STEPS = 100
#: the first pseudo-step moves the cable by about this fraction of its shortest fiber's length
FIRST_MOVE = 0.01
#: plain Newton (κ = 0) is tried after every this many pseudo-steps
NEWTON_EVERY = 3


@dataclass(frozen=True)
class RelaxationReport:
    """What a relaxation did: pseudo-steps taken, Newton solves and iterations in all."""

    pseudo_steps: int
    newton_solves: int
    iterations: int

    def describe(self) -> str:
        return (f"pseudo-transient relaxation (κ M (u − uₖ) + G(u) = 0, {self.pseudo_steps} pseudo-steps, "
                f"{self.newton_solves} Newton solves, {self.iterations} iterations)")


@one_run  # (one run for the check of the forms' numbers: Model.run_scope)
def relax(
    model: Model,
    u0: np.ndarray,
    *,
    t: float,
    load_factor: float,
    newton_options: NewtonOptions = NewtonOptions(),
    step: str = "relaxation",
    max_pseudo_steps: int = MAX_PSEUDO_STEPS,
) -> tuple[np.ndarray, RelaxationReport]:
    """Static equilibrium at time t and ``load_factor`` reached by relaxation from ``u0``.

    ``u0`` holds the prescribed displacements already.  Fibers only (no
    rigid system).  Raises :class:`~skfiber.core.ConvergenceError` after
    ``max_pseudo_steps`` pseudo-steps without an equilibrium.
    """
    if model.rigid is not None:
        raise ValueError("relaxation handles fiber-only models; a model with a rigid system is solved by Newton")
    solver = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
    free = ~solver.fixed
    zero = np.zeros(model.n_dofs)
    guard = None
    if model.contacts:
        def guard(zz, dz):
            return model.max_step(zz, dz, t, delta_bar=newton_options.safeguard)

    def static(zz):
        return model.evaluate(zz, zero, zero, t, c_v=0.0, c_a=0.0, load_factor=load_factor)

    def norm(ev):
        r = ev.residual[free]
        return float(np.sqrt(r @ r))

    u = u0.copy()
    try:
        ev = static(u)
    except FloatingPointError as err:
        raise _failure(f"relaxation cannot start: {err}", t, step, [], 0) from err
    g = norm(ev)
    mass = model.mass_matrix.tocsr()[free][:, free].tocsc()
    accel = spl.spsolve(mass, ev.residual[free])
    samples = np.linspace(0.0, 1.0, 33)
    length = min(float(np.linalg.norm(np.diff(f.reference_position(samples), axis=1), axis=0).sum())
                 for f in model.fibers)
    kappa = float(np.max(np.abs(accel))) / (FIRST_MOVE * max(length, 1e-300))
    if not (np.isfinite(kappa) and kappa > 0):
        raise _failure(f"relaxation cannot start: residual ‖G‖ = {g:.3g}", t, step, [g], 0)
    solves = iterations = 0
    history = [g]
    last_error = "no pseudo-step converged"
    for k in range(1, max_pseudo_steps + 1):
        u_k, kap = u.copy(), kappa

        def pseudo(zz, u_k=u_k, kap=kap):
            return model.evaluate(zz, zero, kap * (zz - u_k), t, c_v=0.0, c_a=kap, load_factor=load_factor)

        solves += 1
        try:
            u_new, rep = newton(pseudo, u_k, solver, options=newton_options, t=t, step=f"{step}, pseudo-step {k}",
                                max_step=guard)
        except ConvergenceError as err:
            last_error = err.reason
            kappa *= 10.0  # a shorter pseudo-time step
            continue
        iterations += rep.iterations
        g_new = norm(static(u_new))
        history.append(g_new)
        kappa *= min(10.0, max(0.1, g_new / g))
        u, g = u_new, g_new
        if k % NEWTON_EVERY == 0 or k == max_pseudo_steps:
            solves += 1
            try:
                u_eq, rep = newton(static, u, solver, options=newton_options, t=t, step=step, max_step=guard)
            except ConvergenceError as err:
                last_error = err.reason
                continue
            iterations += rep.iterations
            return u_eq, RelaxationReport(k, solves, iterations)
    raise _failure(f"relaxation found no equilibrium in {max_pseudo_steps} pseudo-steps "
                   f"(‖G‖ {history[0]:.3g} → {g:.3g}); the last failure: {last_error}", t, step, history, solves)


def _failure(reason: str, t: float, step: str, history: list, solves: int) -> ConvergenceError:
    """The ConvergenceError of a failed relaxation, with the work spent (``newton_solves``)."""
    failure = ConvergenceError(reason, t=t, step=step, residual_history=history)
    failure.newton_solves = solves
    return failure
