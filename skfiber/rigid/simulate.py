"""A whole backward-Euler run of the rigid system: :func:`simulate_rigid` and its :class:`RigidResult`.

Steps of :func:`~skfiber.rigid.backward_euler_rigid` from t0 to t_end, a
failed step retried in halved substeps, the elements' internal states
integrated with q.  The theory: :mod:`skfiber.rigid.integrate`.

Example
-------
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> result = simulate_rigid(system, [0.1], [0.0], t_end=0.05, dt=0.01)
>>> result.times.round(3).tolist(), result.interrupted
([0.0, 0.01, 0.02, 0.03, 0.04, 0.05], False)
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..core import ConvergenceError
from .backward_euler import backward_euler_rigid
from .element_states import check_states, element_state_names, initial_element_states, layout_size, state_layout
from .system import RigidSystem

__all__ = ["simulate_rigid", "RigidResult"]


@dataclass
class RigidResult:
    """Time series of a rigid backward-Euler run: ``q[i]``, ``p[i]`` (and element ``states[i]``) at ``times[i]``."""

    times: np.ndarray
    q: np.ndarray
    p: np.ndarray
    newton_iterations: list[int] = field(default_factory=list)
    retries: int = 0
    #: internal states of the force elements (len(times), m); m = 0 without stateful elements
    states: np.ndarray | None = None
    #: their names (:func:`element_state_names`)
    state_names: tuple[str, ...] = ()
    #: True when Ctrl-C stopped the run: the arrays hold the steps done until then
    interrupted: bool = False


def simulate_rigid(system: RigidSystem, q0, p0, t_end: float, dt: float, *, t0: float = 0.0,
                   options=None, max_bisections: int = 6,
                   callback=None, states0=None) -> RigidResult:
    """Integrate the rigid system with backward Euler from (q0, p0) at t0 to t_end.

    The step is Δt = (t_end − t0)/N with N = ⌈(t_end − t0)/dt⌉.  A step whose
    Newton iteration fails is retried in 2, 4, … substeps (at most
    ``max_bisections`` halvings).  ``callback(t, q, p)`` after each step.
    ``options``: :class:`skfiber.NewtonOptions` (default settings if None).

    Force elements with internal states are integrated in the same Newton
    iteration (:mod:`skfiber.rigid.integrate`); their initial states are ``states0`` or, by
    default, :func:`initial_element_states` at (q0, p0, t0), and
    ``result.states`` holds their time series.

    Ctrl-C stops the run with a warning and returns the steps done so far
    (``result.interrupted``).
    """
    q0 = np.asarray(q0, dtype=float)
    p0 = np.asarray(p0, dtype=float)
    n = system.n
    if q0.shape != (n,) or p0.shape != (n,):
        raise ValueError(f"q0 and p0 must have {n} entries {list(system.coordinate_names)}, got {q0.shape}, {p0.shape}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be > 0, got {dt!r}")
    if not t_end > t0:
        raise ValueError(f"t_end must be > t0 = {t0}, got {t_end!r}")
    n_steps = max(1, math.ceil((t_end - t0) / dt - 1e-9))
    h = (t_end - t0) / n_steps
    times = t0 + h * np.arange(n_steps + 1)
    layout = state_layout(system)
    m = layout_size(layout)
    if m:
        s0 = initial_element_states(system, q0, p0, t0) if states0 is None else np.asarray(states0, dtype=float)
        check_states(layout, s0, s0)
    elif states0 is not None and np.size(states0):
        raise ValueError("states0 was given but no force element of the system has internal states")
    Q = np.empty((n_steps + 1, n)); P = np.empty((n_steps + 1, n)); S = np.empty((n_steps + 1, m))
    Q[0], P[0] = q0, p0
    if m:
        S[0] = s0
    iterations, retries = [], 0
    a = np.zeros(n)  # last step's acceleration, for the predictor
    sd = np.zeros(m)  # last step's state rate, for the predictor
    done = n_steps
    try:
        for i in range(n_steps):
            q, p, s = Q[i], P[i], S[i]
            for level in range(max_bisections + 1):
                sub = 2**level
                try:
                    qq, pp, ss, its, aa, sdd = q, p, s, 0, a, sd
                    for j in range(sub):
                        q1, p1, rep = backward_euler_rigid(system, qq, pp, times[i] + j * h / sub, h / sub,
                                                           options=options, step=i + 1, a_prev=aa,
                                                           states_prev=ss if m else None,
                                                           state_rate_prev=sdd if m else None)
                        aa = (p1 - pp) / (h / sub)
                        sdd = (rep.states - ss) / (h / sub)
                        qq, pp, ss = q1, p1, rep.states
                        its += rep.iterations
                    a, sd = aa, sdd
                    break
                except ConvergenceError:
                    if level == max_bisections:
                        raise
                    retries += 1
            Q[i + 1], P[i + 1], S[i + 1] = qq, pp, ss
            iterations.append(its)
            if callback is not None:
                callback(times[i + 1], qq, pp)
    except KeyboardInterrupt:
        done = len(iterations)
        warnings.warn(f"rigid simulation interrupted at t = {times[done]:.6g} s; returning the {done + 1} states "
                      "computed so far")
    k = done + 1
    return RigidResult(times[:k], Q[:k], P[:k], iterations, retries, S[:k], element_state_names(system),
                       done < n_steps)
