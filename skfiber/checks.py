"""Finite-difference checks of tangents.

Examples
--------
>>> import skfiber as sf
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = sf.Model([fiber])
>>> sf.check_tangent(model, dt=0.01) < 1e-6
True
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .core import State
from .core.numbers import checked_real
from .core.warn import warn
from .model import Model

__all__ = ["check_tangent"]


def check_tangent(
    model: Model,
    state: State | None = None,
    *,
    dt: float | None = None,
    parts: Iterable[str] | None = None,
    directions: int = 3,
    perturbation: float = 1e-3,
    step: float = 1e-6,
    seed: int = 0,
    t: float | None = None,
) -> float:
    """Relative error of the assembled tangent against central differences.

    The residual G(u) of a backward-Euler step of size ``dt`` (or of statics
    when ``dt`` is None) is differentiated numerically along random
    directions d:  err = max_d ‖K d − (G(u + εd) − G(u − εd))/2ε‖ / ‖K d‖.

    Parameters
    ----------
    model
        The model whose assembled tangent (:meth:`Model.tangent_matrix`) is checked.
    state
        Where to check; default: the reference configuration perturbed by a
        random displacement of relative size ``perturbation``, at time ``t``, with a random velocity of
        that displacement per ``dt`` (statics: per second), so that the differences move the step's
        velocity as little, relative to its size, as they move the position.
    dt
        Step size (s) of the backward-Euler residual (inertia and viscosity with c_a = 1/Δt², c_v = 1/Δt);
        None (default): the static residual.
    parts
        Restrict to some contributions (``"cable"``, ``"inertia"``,
        ``"loads"``, term names); default all.
    directions
        Random directions d tried; the worst error is returned.
    perturbation
        Size of the default state's random displacement relative to the largest reference coordinate (its
        velocity: that size per ``dt``, or per second in statics).
    step
        ε relative to the size of u (> 0).
    seed
        Seed of the random state and directions.
    t
        Time (s) of the default state (default 0): a law or term that acts only later (an activation that
        rises from 0, a load switched on) is checked where it acts.  With ``state``, its own time is used.

    Returns
    -------
    float
        The largest relative error over the directions: about 1e-8 or below for a consistent tangent
        (the round-off and O(ε²) of the central differences; up to about 1e-6 for a term nonlinear in the
        velocity, which the differences move by 10⁻³ of itself), order 1 for a wrong one, 1 for a missing one.
        Where the checked parts do not depend on u at all (neither the tangent nor the differences move
        along any direction), 0 with a ``UserWarning`` saying that the check says nothing there.
        ``inf`` with a ``UserWarning`` where the tangent or the differences are not finite (a NaN or an
        infinity in a law's derivative, a tangent form or the residual, or a residual that cannot be evaluated
        at the checked or a perturbed state).

    Raises
    ------
    TypeError
        If ``model`` is not a :class:`skfiber.Model`.
    ValueError
        If the given ``state`` is not finite, or an option is out of range.
    FloatingPointError
        If a contact is inadmissible at the checked or a perturbed state (1 + γg ≤ 0: move the state).

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(), activation=0.3)
    >>> model = sf.Model([fiber]); model.fix(fiber, "start")
    >>> sf.check_tangent(model, dt=0.01) < 1e-6          # inertia, viscosity, the active law
    True
    >>> sf.check_tangent(model, parts=["internal_force"]) < 1e-6   # one term, statics
    True
    """
    if not isinstance(model, Model):
        raise TypeError(f"check_tangent checks a skfiber.Model, got {type(model).__name__}")
    if dt is not None:
        checked_real("dt", dt, above=0, unit="s", hint="; give a time step, or None for statics")
    checked_real("step", step, above=0, hint=" (ε of the differences relative to the size of u, e.g. 1e-6)")
    checked_real("perturbation", perturbation, at_least=0)
    if isinstance(directions, bool) or not isinstance(directions, (int, np.integer)) or directions < 1:
        raise ValueError(f"directions must be an integer ≥ 1 (random directions to check), got {directions!r}")
    if t is not None:
        if state is not None:
            raise ValueError(f"t={t!r} is the time of the default state; a given state has its own (state.t = "
                             f"{state.t!r}): give one or the other")
        checked_real("t", t, unit="s")
    if state is not None and not (np.isfinite(state.t) and all(np.isfinite(x).all() for x in (state.u, state.v))):
        raise ValueError("check_tangent: the given state holds a NaN or an infinity (state.t, state.u or state.v); "
                         "give a finite state")
    rng = np.random.default_rng(seed)
    d = model.discretization
    n = model.n_dofs
    if state is None:
        size = np.max(np.abs(d.reference_dofs))
        u = perturbation * size * rng.standard_normal(n)
        v = perturbation * size / (1.0 if dt is None else dt) * rng.standard_normal(n)
        state = State(0.0 if t is None else float(t), u, v)
    u_n = state.u - (0.0 if dt is None else dt) * state.v
    v_n = state.v * 0.5

    def residual(u):
        if dt is None:
            return model.evaluate(u, state.v, np.zeros(n), state.t, c_v=0.0, c_a=0.0, parts=parts)
        v = (u - u_n) / dt
        a = (v - v_n) / dt
        return model.evaluate(u, v, a, state.t, c_v=1 / dt, c_a=1 / dt**2, parts=parts)

    try:  # (a residual that cannot be evaluated at the state or near it: no tangent there to check)
        ev = residual(state.u)
        K = model.tangent_matrix(ev)
        if not np.isfinite(K.data).all():
            return _not_finite("the tangent holds a NaN or an infinity", parts)
        eps = step * max(np.max(np.abs(state.u + d.reference_dofs)), 1e-300)
        worst = 0.0
        checked = 0
        for _ in range(directions):
            direction = rng.standard_normal(n)
            Kd = K @ direction
            fd = (residual(state.u + eps * direction).residual
                  - residual(state.u - eps * direction).residual) / (2 * eps)
            if not np.isfinite(fd).all():
                return _not_finite("the residual's differences hold a NaN or an infinity", parts)
            scale = max(np.linalg.norm(Kd), np.linalg.norm(fd))  # a missing tangent (Kd = 0) scores 1, not 0
            if scale == 0:  # neither depends on u along d (e.g. parts without a u-dependence): nothing to check
                continue
            checked += 1
            worst = max(worst, float(np.linalg.norm(Kd - fd) / scale))
    except FloatingPointError as err:
        if "inadmissible" in str(err):  # (a contact's state, not the tangent: the caller's to change)
            raise
        return _not_finite(f"the residual cannot be evaluated (at the state or near it): {err}", parts)
    if not checked:
        warn(f"check_tangent: {_which(parts)} do not depend on u at this state (t = {state.t:g} s): neither the tangent "
             "nor the differences change along any direction, so the check says nothing here; check where they "
             "act (a state=, or t= for a term or law that acts later)")
    return worst


def _not_finite(what: str, parts) -> float:
    """inf, with a warning saying ``what`` (a NaN, an infinity: a check that cannot pass)."""
    warn(f"check_tangent ({_which(parts)}): {what}; a NaN or an infinity in a law's derivative, a tangent form or the "
         "residual cannot be right")
    return float("inf")


def _which(parts) -> str:
    """What check_tangent checked, in words: "the model" or "the parts [...]"."""
    return "the model" if parts is None else f"the parts {sorted(parts)}"
