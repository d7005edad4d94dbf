"""Newton's method with the safeguard and line search, on any residual (paper §4.4).

:func:`newton` takes ``evaluate(x)`` → :class:`~skfiber.core.Evaluation` (residual, tangent, force
scales, contact margins), a linear solver with the constraints (:func:`make_solver`), and the
safeguard ``max_step`` of the contacts (paper eqs. 69–73); the static and dynamic solvers
(:mod:`skfiber.statics`, :mod:`skfiber.solver`) call it.

Examples
--------
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
from .linalg import ConstrainedSolver, Factorization
from .model import Model

__all__ = ["NewtonReport", "IterationMatrix", "newton", "make_solver", "STATIC_STAGNATION_WINDOW", "ROUNDOFF_UPDATE"]

#: modified Newton keeps its factorization only while the contraction rate θ promises convergence within this many
#: more iterations (‖G‖ θ^k ≤ tolerance), as Radau5 does (Hairer & Wanner)
REUSE_ITERATIONS = 3
#: the longest run of steps that start with a fresh tangent after carrying a factorization failed (IterationMatrix)
MAX_CARRY_BACKOFF = 16
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


class IterationMatrix:
    """The factorized Newton matrix kept across iterations and time steps (modified Newton), and counts.

    A run of :func:`skfiber.simulate` makes one and hands it to every step
    (:func:`skfiber.time_step.implicit_step`), which hands it to :func:`newton`
    with the time scheme's (c_v, c_a).  With
    :attr:`~skfiber.core.NewtonOptions.jacobian_reuse` Newton solves with the
    kept factorization while it contracts well and makes a fresh tangent and
    factorization otherwise; without, it counts the tangents of full Newton.

    Attributes
    ----------
    tangent_builds : int
        Tangents assembled (one per factorization, the rare fallback of the block LU to the band LU apart).
    factorizations : int
        Matrices factorized.
    reused_solves : int
        Newton increments solved with a factorization made at an earlier iterate or step.
    restarts : int
        Newton solves that failed with a kept factorization and were redone by full Newton.

    Examples
    --------
    >>> from skfiber import Fiber, Model, simulate
    >>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    >>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> r = simulate(model, t_end=0.1, dt=0.01, method="bdf2", progress=False)
    >>> r.step_counts.factorizations < r.step_counts.newton_iterations
    True
    """

    def __init__(self):
        self.factorization: Factorization | None = None
        #: (c_v, c_a) of the kept factorization
        self.coefficients: tuple[float, float] = (0.0, 0.0)
        self.tangent_builds = 0
        self.factorizations = 0
        self.reused_solves = 0
        self.restarts = 0
        self._skip = 0  # steps that start with a fresh tangent before a carried factorization is tried again
        self._backoff = 0

    def take(self, coefficients: tuple[float, float], max_change: float) -> Factorization | None:
        """The kept factorization if its (c_v, c_a) differ from ``coefficients`` by at most ``max_change``
        (relative) and carrying it into a new step has not failed just before (see :meth:`carried`), else
        None; it is handed out (kept again by :meth:`keep` after a converged solve)."""
        lu, self.factorization = self.factorization, None
        if lu is None:
            return None
        if self._skip:
            self._skip -= 1
            return None
        for old, new in zip(self.coefficients, coefficients):
            if abs(new - old) > max_change * abs(old):
                return None
        return lu

    def carried(self, success: bool) -> None:
        """Report whether a step that started with a carried factorization converged without a fresh one.
        After a failure the next 1, 2, 4, … :data:`MAX_CARRY_BACKOFF` steps (doubling while it keeps
        failing) start with a fresh tangent: where the tangent changes much from step to step, carrying
        costs an iteration per step and saves nothing."""
        if success:
            self._backoff = 0
        else:
            self._backoff = min(max(1, 2 * self._backoff), MAX_CARRY_BACKOFF)
            self._skip = self._backoff

    def keep(self, lu: Factorization | None, coefficients: tuple[float, float]) -> None:
        self.factorization = lu
        self.coefficients = coefficients

    def snapshot(self) -> tuple:
        """What :meth:`take`, :meth:`carried` and :meth:`keep` change, for :meth:`restore` (the counts apart)."""
        return self.factorization, self.coefficients, self._skip, self._backoff

    def restore(self, snapshot: tuple) -> None:
        """Undo :meth:`take`, :meth:`carried` and :meth:`keep` since ``snapshot`` (a solve to be redone)."""
        self.factorization, self.coefficients, self._skip, self._backoff = snapshot


def newton(
    evaluate: Callable[..., Evaluation],
    u0: np.ndarray,
    solver: ConstrainedSolver,
    *,
    options: NewtonOptions = NewtonOptions(),
    t: float = 0.0,
    step: int | str = 0,
    max_step: Callable[[np.ndarray, np.ndarray], float] | None = None,
    first: Evaluation | None = None,
    matrix: IterationMatrix | None = None,
    scheme: tuple[float, float] | None = None,
) -> tuple[np.ndarray, NewtonReport]:
    """Solve G(u) = 0 on the free DOFs starting from u0 (constrained DOFs as in u0).

    ``max_step(u, du)`` is the safeguard (paper eqs. 69–73): the update is
    u + δ du with δ = max_step(u, du) ∈ (0, 1].  When every contact checks
    eq. 71 at the end of the step (``safeguard="trial"``, the evaluations
    carry ``margins``), the full step is evaluated first and kept if
    :func:`~skfiber.contact.base.margins_kept` holds; ``max_step`` is only
    called when it does not.  ``first`` is the evaluation at u0 when the
    caller has it already.

    **Modified Newton.**  Given an :class:`IterationMatrix` ``matrix`` and the
    time scheme's ``scheme`` = (c_v, c_a) (the iteration matrix is
    c_a M + ∂F/∂u + c_v ∂F/∂v), with ``options.jacobian_reuse`` and a solver
    that keeps its factors (:meth:`~skfiber.linalg.ConstrainedSolver.factor_solve`),
    an increment is solved with the factorization kept from an earlier
    iterate or step, made for a (c_v, c_a) within
    ``options.reuse_max_change``.  A fresh tangent is made and factorized at
    the current iterate instead when there is none, when the contraction rate
    θ = ‖Δuₖ‖/‖Δuₖ₋₁‖ of two full increments of the same factorization exceeds
    ``options.reuse_max_rate``, when the increment's full step fails the line
    search's decrease test or is inadmissible, or when the residual stagnates
    (the line search and the stagnation test act on fresh tangents only).
    ``evaluate`` is then called as ``evaluate(u, tangent=False)`` where a
    kept factorization will probably serve: the evaluation need not prepare
    its tangent (it makes it when asked).  The
    convergence test is the same residual test, so the solution differs
    from full Newton's only within the tolerance.  When a solve that used a
    kept factorization fails, it is redone from u0 by full Newton (counted
    in :attr:`IterationMatrix.restarts`), so that reuse never splits a step
    that full Newton solves.
    """
    reuse = (matrix is not None and scheme is not None and options.jacobian_reuse
             and hasattr(solver, "factor_solve") and not hasattr(solver, "solve_newton"))
    if not reuse:
        return _attempt(evaluate, u0, solver, options, t, step, max_step, first, matrix, None, [False])
    used_kept = [False]
    try:
        return _attempt(evaluate, u0, solver, options, t, step, max_step, first, matrix, scheme, used_kept)
    except ConvergenceError as err:
        if not used_kept[0]:
            raise  # full Newton met the same iterates
        matrix.restarts += 1
        u, report = _attempt(evaluate, u0, solver, options, t, step, max_step, None, matrix, None, used_kept)
        report.iterations += len(err.residual_history) - 1
        report.residual_history = err.residual_history + report.residual_history
        return u, report


def _attempt(evaluate, u0, solver, options, t, step, max_step, first, matrix, scheme, used_kept):
    """:func:`newton`'s iteration; modified Newton when ``scheme`` is given (then ``used_kept[0]`` is set
    when an increment came from a factorization made before the current iterate)."""
    reuse = scheme is not None
    fractions: list[float] = []
    u = u0.copy()
    history: list[float] = []
    free = getattr(solver, "free", None)
    if free is None:
        free = ~solver.fixed
    coupled = hasattr(solver, "solve_newton")  # fibers + rigid bodies (skfiber.coupling)
    lu = matrix.take(scheme, options.reuse_max_change) if reuse else None
    lu_scheme = matrix.coefficients if reuse else None  # the (c_v, c_a) lu was made with
    lu_norm = None  # ‖Δu‖ of the last full increment made with lu (for the contraction rate)
    carried = lu is not None  # made in an earlier step
    refresh_next = False
    built = False  # a factorization was made in this solve
    stale: list[bool] = []  # per iteration: its increment came from a factorization made at an earlier iterate

    def evaluate_checked(uu, tangent=False):
        try:
            ev_ = evaluate(uu, tangent=tangent) if reuse else evaluate(uu)
        except FloatingPointError as err:
            return None, err  # (its message is made only if Newton fails: it may cost an evaluation)
        return checked(ev_)

    def checked(ev_):
        if not (ev_.min_stretch > 0 and math.isfinite(ev_.min_stretch)):
            return None, f"inadmissible state: stretch λ = {ev_.min_stretch:.3g} (the fiber folded onto itself or blew up)"
        res_ = getattr(ev_, "free_norm", None)  # (the coupled fast path's evaluations have none)
        if res_ is None:
            r = ev_.residual[free]
            res_ = math.sqrt(float(r.dot(r)))  # np.linalg.norm bit for bit, without its overhead
        if not math.isfinite(res_):
            return None, "the residual is not finite"
        return (ev_, res_), ""

    def fresh_increment(ev_, tol_):
        """Δu from the tangent at the current iterate (counted; kept when reusing); an iterative solve to
        ``options.linear_fraction`` of Newton's tolerance ``tol_`` (‖G(u + Δu)‖ ≈ ‖G + T Δu‖ + O(‖Δu‖²))."""
        nonlocal lu, lu_norm, lu_scheme, built
        if carried and not built:
            matrix.carried(False)
        built = True
        try:
            if coupled:
                du_ = solver.solve_newton(ev_, linear_tolerance=options.linear_fraction * tol_)
            elif reuse:
                du_, lu = solver.factor_solve(ev_.element_matrices, -ev_.residual, ev_.extra)
                lu_norm, lu_scheme = None, scheme
            else:
                du_ = solver.solve(ev_.element_matrices, -ev_.residual, ev_.extra)
        except (np.linalg.LinAlgError, RuntimeError) as err:
            raise ConvergenceError(f"singular tangent ({err})", t=t, step=step, residual_history=history) from err
        if matrix is not None:
            matrix.tangent_builds += 1
            matrix.factorizations += 1
        return du_

    # without a kept factorization the first iteration factorizes the tangent at u0: prepare it
    trial, why = evaluate_checked(u, lu is None) if first is None else checked(first)
    if trial is None:
        raise ConvergenceError(str(why), t=t, step=step, residual_history=history)
    ev, res = trial
    last_update = None  # (step fraction, increment) of the last iteration
    for it in range(options.max_iterations + 1):
        history.append(res)
        tol = options.rtol * ev.reference_force + options.atol + ev.roundoff
        if res <= tol:
            if reuse:
                matrix.keep(lu, lu_scheme)
                if carried and not built:
                    matrix.carried(True)
            return u, NewtonReport(it, history, fractions, ev.n_active_contacts, ev.margins)
        if it == options.max_iterations:
            break
        w = STATIC_STAGNATION_WINDOW if options.stagnation_window is None else options.stagnation_window
        refresh = False
        if w and it >= w and res > 0.9 * history[it - w]:
            if (last_update is not None and res <= math.sqrt(options.rtol) * ev.reference_force
                    and last_update[0] * float(np.max(np.abs(last_update[1])))
                    <= ROUNDOFF_UPDATE * max(1.0, float(np.max(np.abs(u))))):
                if reuse:
                    matrix.keep(lu, lu_scheme)
                return u, NewtonReport(it, history, fractions, ev.n_active_contacts, ev.margins)
            if not any(stale[it - w:]):
                raise ConvergenceError(
                    f"Newton stagnates: the residual did not drop by 10 % in {w} iterations "
                    f"({history[it - w]:.3e} → {res:.3e}; NewtonOptions.stagnation_window)",
                    t=t, step=step, residual_history=history,
                )
            refresh = True  # a kept factorization was in use: try a fresh tangent before giving up
        old = lu is not None and not refresh and not refresh_next
        refresh_next = False
        if old:  # modified Newton: the kept factorization, while it contracts fast enough
            du = lu.solve(-ev.residual)
            matrix.reused_solves += 1
            used_kept[0] = True
            norm = math.sqrt(float(du.dot(du)))
            if lu_norm is not None:  # θ = ‖Δuₖ‖/‖Δuₖ₋₁‖
                old = _contracts(norm / lu_norm, res, tol, options)
            if old and math.isfinite(norm):
                full = _reused_step(evaluate_checked, u, du, res, ev, max_step, options)
                old = full is not None
            else:
                old = False
        if not old:
            du = fresh_increment(ev, tol)
            norm = math.sqrt(float(du.dot(du)))
            if not math.isfinite(norm) and not np.isfinite(du).all():  # (a finite du may overflow its norm)
                raise ConvergenceError("the Newton increment is not finite (singular tangent?)", t=t, step=step,
                                       residual_history=history)
        stale.append(old)
        if old:  # the full step, checked by _reused_step
            if lu_norm is None:  # no θ yet: judge the first increment by the residual's drop
                refresh_next = not _contracts(full[1][1] / res, full[1][1], tol, options)
            s, u, (ev, res) = 1.0, full[0], full[1]
            lu_norm = norm
        else:
            s, u, (ev, res) = _line_search(evaluate_checked, u, du, res, ev, max_step, options, t, step, history)
            lu_norm = norm if (reuse and s == 1.0) else None
        fractions.append(s)
        last_update = (s, du)
    raise ConvergenceError(
        f"no convergence in {options.max_iterations} iterations", t=t, step=step, residual_history=history
    )


def _contracts(rate: float, res: float, tol: float, options: NewtonOptions) -> bool:
    """Whether modified Newton may go on at contraction rate ``rate`` from residual ``res``: the rate is at
    most ``options.reuse_max_rate`` and promises ‖G‖ ≤ ``tol`` within :data:`REUSE_ITERATIONS` iterations."""
    return rate <= options.reuse_max_rate and res * rate**REUSE_ITERATIONS <= tol


def _reused_step(evaluate_checked, u, du, res, ev, max_step, options):
    """(u + du, (evaluation, ‖G‖) there) for an increment of a kept factorization, or None when that full
    step is not admissible (safeguard, inadmissible state) or does not decrease ‖G‖ enough (line search's test)."""
    if max_step is not None and ev.margins is None and not max_step(u, du) >= 1.0:
        return None
    u_new = u + du
    trial, _ = evaluate_checked(u_new)
    if trial is None or not trial[1] <= (1.0 - options.line_search_decrease) * res:
        return None
    if max_step is not None and ev.margins is not None and not (
            trial[0].margins is not None and margins_kept(ev.margins, trial[0].margins, options.safeguard)):
        return None  # eq. 71 at the end of the full step, from its evaluation
    return u_new, trial


def _line_search(evaluate_checked, u, du, res, ev, max_step, options, t, step, history):
    """(step fraction s, u + s du, (evaluation, ‖G‖) there): the safeguard δ, then backtracking on ‖G‖ (Armijo)."""
    full = None  # the evaluation at u + du, when the safeguard is checked from it
    u_full = u + du
    if max_step is None:
        delta = 1.0
    else:
        delta = None
        if ev.margins is not None:  # eq. 71 at the end of the full step, from its evaluation
            full, _ = evaluate_checked(u_full)
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
    # halve the safeguarded step until the residual decreases enough; after `line_search` halvings the
    # last trial is taken anyway (if admissible)
    s = min(delta, 1.0)
    fallback = None
    why = ""
    for k in range(options.line_search + 1):
        u_new = u_full if s == 1.0 else u + s * du
        if k == 0 and s == 1.0 and full is not None:
            trial, why = full, ""
        else:
            trial, why = evaluate_checked(u_new)
        if trial is not None:
            fallback = (s, u_new, trial)
            if trial[1] <= (1.0 - options.line_search_decrease * s) * res:
                break
        if k < options.line_search:
            s *= 0.5
    if fallback is None:
        raise ConvergenceError(str(why), t=t, step=step, residual_history=history)
    return fallback


# --------------------------------------------------------------------------- statics


def make_solver(model: Model):
    """The linear solver of the model's Newton systems: fibers only, or coupled to rigid bodies."""
    if model.rigid is not None:

        return CoupledProblem(model)
    return ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
