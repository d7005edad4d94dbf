"""Static equilibrium by Newton with load stepping (and bisection of failed load steps).

Examples
--------
>>> from skfiber import Fiber, Model, paper_law
>>> from skfiber.statics import solve_static
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=paper_law(sigma0=30.0))
>>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
>>> result = solve_static(model, load_steps=2)
>>> result.load_factors[-1]
1.0
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .contact.base import STEP_HINT
from .core import ConvergenceError, NewtonOptions, State, check_state, check_state_of
from .core.numbers import check_finite_time
from .coupling import CoupledProblem
from .linalg import ConstrainedSolver
from .model import Model, one_run
from .newton import newton
from .relaxation import relax
from .rigid import rigid_static
from .threads import one_blas_thread

__all__ = ["StaticResult", "solve_static", "MIN_INCREMENT", "ATTEMPTS_PER_STEP"]

#: the smallest load increment (of the load factor's range [0, 1]); a continuation that needs less stops
MIN_INCREMENT = 1e-10
#: solve_static makes at most this many Newton solves per load step and allowed bisection
ATTEMPTS_PER_STEP = 64



@dataclass
class StaticResult:
    """Equilibrium state and the load steps that led to it."""

    state: State
    load_factors: list[float]
    iterations: list[int]
    #: what was done besides plain Newton, one line per increment (e.g. an increment reached by relaxation)
    notes: list[str] = field(default_factory=list)


@one_blas_thread  # (skfiber.threads: OpenBLAS's spinning threads take the cores from numba's)
@one_run  # (one run for the check of the forms' numbers: Model.run_scope)
def solve_static(
    model: Model,
    *,
    t: float = 0.0,
    load_steps: int = 1,
    state: State | None = None,
    max_bisections: int = 8,
    newton_options: NewtonOptions = NewtonOptions(),
    relaxation: bool = True,
) -> StaticResult:
    """Static equilibrium at time t by Newton with load stepping.

    Without ``state``: external loads and prescribed displacements are scaled
    by a load factor going from 0 to 1 in ``load_steps`` equal steps, starting
    from the reference configuration.  With ``state`` (e.g. a previous
    equilibrium): quasi-static continuation in time from ``state.t`` to ``t``
    in ``load_steps`` steps, loads and prescribed displacements evaluated at
    the intermediate times (``state.t == t`` is one Newton solve from that
    initial guess).  A failing increment is bisected up to ``max_bisections``
    times in a row.  The work is bounded: no increment is smaller than
    :data:`MIN_INCREMENT`, and there are at most :data:`ATTEMPTS_PER_STEP` ·
    load_steps · (max_bisections + 1) Newton solves; a continuation that
    needs more stops with a :class:`~skfiber.core.ConvergenceError` saying
    where it stalled.  Inertia and viscosity are off.

    Slack cables: when Newton fails on a fresh increment (not yet bisected)
    of a fiber-only model and ``relaxation`` is True (default), the increment is tried once more by pseudo-transient
    relaxation (:func:`skfiber.relaxation.relax`: backward-Euler steps of the
    overdamped flow M u̇ = −G(u), then plain Newton), which copes with a singular
    tangent of a straight cable without tension (a law with S(λ = 1) = 0) and
    with the overshoot of Newton's first step under little prestress.
    ``result.notes`` says which increments were reached that way; only
    then does bisection start.

    With rigid bodies (``Model(..., rigid=system)``) Newton runs on the free
    fiber DOFs and q together; the bodies' rows are their static residual
    (gravity, springs, …) plus the fiber forces at the attachments, and the
    returned state has ``q`` (and p = 0).  The load factor then scales only
    the fiber loads and prescribed displacements; the rigid system's own
    forces act in full.  Force elements with internal states (elastic-tendon
    Hill muscles) have no static form here.

    A cable has no bending stiffness: with little or no prestress several
    equilibria may exist (e.g. the sag up or down of a straight cable under a
    transverse load); the one found depends on the path.  Check the branch.

    Parameters
    ----------
    model
        The model (fibers, loads, contacts, rigid bodies).
    t
        The time (s) of the loads, activations and prescribed displacements.
    load_steps
        Equal load (or time) increments from the start to ``t``.
    state
        The start (default: the reference configuration at load factor 0).
    max_bisections
        Halvings of a failing increment in a row.
    newton_options
        Newton's settings (:class:`~skfiber.NewtonOptions`).
    relaxation
        Try a failing fresh increment once more by pseudo-transient relaxation (see above).

    Returns
    -------
    StaticResult
        The equilibrium ``state``, the ``load_factors`` reached, the Newton ``iterations`` of each and
        ``notes``.

    Examples
    --------
    A taut string under its weight sags by about ρ g L² / (8 σ0) (σ0 the prestress):

    >>> import skfiber as sf
    >>> law = sf.prestress(1e5) + sf.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0, eta_tendon=0)
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law)  # ρ = 900 kg/m³
    >>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> result = sf.solve_static(model)
    >>> sag = -float(sf.fiber_fields(model, result.state, fiber, theta=[0.5]).position[2, 0])
    >>> round(sag, 4), round(900 * 9.81 / (8 * 1e5), 4)
    (0.011, 0.011)
    """
    if not isinstance(model, Model):
        raise TypeError(f"solve_static needs a skfiber.Model as its first argument, got {type(model).__name__}")
    if state is not None:
        check_state(state)
    if not isinstance(load_steps, (int, np.integer)) or isinstance(load_steps, bool) or load_steps < 1:
        raise ValueError(f"load_steps must be an integer ≥ 1, got {load_steps!r}")
    if not isinstance(max_bisections, (int, np.integer)) or isinstance(max_bisections, bool) or max_bisections < 0:
        raise ValueError(f"max_bisections must be an integer ≥ 0 (halvings of a failing load increment), "
                         f"got {max_bisections!r}")
    if not isinstance(relaxation, bool):
        raise TypeError(f"relaxation must be True or False, got {relaxation!r}")
    if not isinstance(newton_options, NewtonOptions):
        raise TypeError(f"newton_options must be a skfiber.NewtonOptions, got {type(newton_options).__name__}")
    check_finite_time(t=t)
    if state is not None:  # (its velocities are not used)
        check_state_of(state, model.n_dofs, 0 if model.rigid is None else model.rigid.n, velocities=False)
    check_supported(model)
    if state is not None or model.rigid is not None:
        start = model.initial_state(t) if state is None else state
        check_admissible_start(model, start.u, start.t, start.q)
    else:  # the load ramp starts at the reference configuration (prescribed displacements scaled by 0)
        check_admissible_start(model, np.zeros(model.n_dofs), t)
    N = model.n_dofs
    zero = np.zeros(N)
    if model.rigid is None:  # Newton on the fiber DOFs
        solver = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
        z = zero.copy() if state is None else state.u.copy()

        def evaluate(zz, t_k, factor):
            return model.evaluate(zz, zero, zero, t_k, c_v=0.0, c_a=0.0, load_factor=factor)

        def safeguard(zz, dz, t_k):
            return model.max_step(zz, dz, t_k, delta_bar=newton_options.safeguard)

        def finish(zz, t_k):
            return zz
    else:  # Newton on z = (u_I, q), the rigid rows static (skfiber.rigid.rigid_static)

        system = model.rigid
        if state is not None and state.q.shape != (system.n,):
            raise ValueError(f"state.q must have {system.n} entries (the rigid coordinates), "
                             f"got shape {state.q.shape}")
        solver = CoupledProblem(model)
        z = np.concatenate([zero, model.initial_state(t).q] if state is None else [state.u, state.q])

        def fiber_state(u):
            return zero, zero, 0.0, 0.0

        def evaluate(zz, t_k, factor):
            return solver.evaluate(zz, t_k, fiber_state=fiber_state, load_factor=factor,
                                   rigid_state=lambda q: rigid_static(system, q, t=t_k))

        def safeguard(zz, dz, t_k):
            return solver.max_step(zz, dz, t_k, delta_bar=newton_options.safeguard)

        def finish(zz, t_k):  # the attached ends where the bodies put them
            u, q, _ = solver.expand(zz, t_k)
            return np.concatenate([u, q])

    c = model.constrained_dofs
    t_start = t if state is None else state.t
    factors, iterations = [], []
    s, ds_ = 0.0, 1.0 / load_steps
    # bounded work: increments of at least MIN_INCREMENT (a continuation used to creep on below the float
    # spacing of s, without end) and at most max_attempts Newton solves in all
    max_attempts = ATTEMPTS_PER_STEP * load_steps * (max_bisections + 1)
    attempts = 0
    notes: list[str] = []
    relax_on = relaxation  # until a relaxation fails
    bisections = 0
    what = "load factor" if state is None else "continuation fraction"

    def stalled(why: str, err: ConvergenceError) -> ConvergenceError:
        relaxed = "" if relax_on == relaxation else " (relaxation was tried and did not help)"
        return ConvergenceError(
            f"load stepping stalled at {what} {s:.6g} ({len(factors)} increments converged): {why}{relaxed}; try "
            f"more load_steps or max_bisections, or another path. The last failure: {err.reason}", t=err.t,
            step=err.step, residual_history=err.residual_history)

    while s < 1.0 - 1e-14:
        s_new = min(1.0, s + ds_)
        if s_new > 1.0 - 1e-12:  # the last increment ends at exactly 1 (not at a sum of rounded increments)
            s_new = 1.0
        if state is None:  # load factor ramp at time t
            t_k, factor = t, s_new
        else:  # continuation in time
            t_k, factor = t_start + s_new * (t - t_start), 1.0
        trial = z.copy()
        trial[c] = model.prescribed_displacement(t_k, factor)
        label = f"load factor {s_new:.4g}" if state is None else f"continuation to t = {t_k:.4g}"
        attempts += 1
        try:
            z_new, report = newton(lambda zz: evaluate(zz, t_k, factor), trial, solver, options=newton_options,
                                   t=t_k, step=label,
                                   max_step=(lambda zz, dz: safeguard(zz, dz, t_k)) if model.contacts else None)
        except ConvergenceError as err:
            relaxed = None
            if relax_on and model.rigid is None and bisections == 0:  # a slack or nearly slack cable: relax
                try:
                    relaxed = relax(model, trial, t=t_k, load_factor=factor, newton_options=newton_options,
                                    step=label)
                except ConvergenceError as failure:  # not what relaxation cures: bisection only from here on
                    relax_on = False
                    attempts += failure.newton_solves
                    notes.append(f"{label}: relaxation failed too ({failure.reason}); not tried again")
            if relaxed is not None:
                z_new, info = relaxed
                attempts += info.newton_solves
                notes.append(f"{label}: Newton from the last equilibrium failed ({err.reason}); "
                             f"reached by {info.describe()}")
                z, s = finish(z_new, t_k), s_new
                factors.append(s)
                iterations.append(info.iterations)
                ds_ = min(1.5 * ds_, 1.0 / load_steps)
                continue
            bisections += 1  # consecutive bisections of this increment
            failed, ds_ = ds_, ds_ / 2
            if bisections > max_bisections:
                raise stalled(f"{max_bisections} bisections of an increment of {failed * 2**max_bisections:.3g} "
                              "did not help (max_bisections)", err) from err
            if ds_ < MIN_INCREMENT:
                raise stalled(f"the next increment, {ds_:.3g}, is below the least, {MIN_INCREMENT:g}", err) from err
            if attempts >= max_attempts:
                raise stalled(f"{attempts} Newton solves, the most for load_steps = {load_steps} and "
                              f"max_bisections = {max_bisections}", err) from err
            continue
        z, s = finish(z_new, t_k), s_new
        factors.append(s)
        iterations.append(report.iterations)
        bisections = 0
        ds_ = min(1.5 * ds_, 1.0 / load_steps)  # grow back after a bisection
    if model.rigid is None:
        return StaticResult(State(t, z, zero.copy()), factors, iterations, notes)
    return StaticResult(State(t, z[:N], zero.copy(), q=z[N:].copy(), p=np.zeros(model.rigid.n)), factors, iterations,
                        notes)


# --------------------------------------------------------------------------- dynamics


def check_admissible_start(model: Model, u: np.ndarray, t: float, q: np.ndarray | None = None) -> None:
    """ValueError when the contacts are inadmissible (1 + γg ≤ 0) already at the start state: no step size
    or penalty stiffness helps then, the fibers and cylinders must start apart."""
    if not model.contacts:
        return
    if model.rigid is not None and q is not None:
        model.set_coordinates(q)
    for contact in model.contacts:
        try:
            contact.evaluate(model, u, t, tangent=False)
        except FloatingPointError as err:
            diagnosis = str(err).replace("; " + STEP_HINT, "")
            raise ValueError(f"the start state is inadmissible: {diagnosis}. Smaller steps cannot help here: "
                             "move the fibers or the cylinders so that they start apart (outside each other's "
                             "admissible penetration, 1 + γg > 0)") from None


def check_supported(model: Model) -> None:
    """ValueError when a fiber of a fiber-only model without contacts has no end fixed, prescribed or
    attached: a free cable has no static equilibrium (its rigid motions are free)."""
    if model.rigid is not None or model.contacts:
        return
    held = model.held_fibers()
    free = [k for k in range(len(model.fibers)) if k not in held]
    if free:
        names = ", ".join(f"{k}" + (f" ({model.fibers[k].name!r})" if model.fibers[k].name else "") for k in free)
        raise ValueError(f"fiber {names} has no boundary condition: nothing holds it, so it has no static "
                         "equilibrium; fix an end with model.fix(fiber, 'start') (or prescribe or attach it)")
