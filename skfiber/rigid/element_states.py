"""Internal states of force elements: their layout in s, names, scales, initial values and checks.

Force elements with internal states (e.g. the fiber length of an
elastic-tendon :class:`skfiber.hill.HillActuator`) declare them with the
optional protocol ``n_states`` (int, fixed once the element is added),
``state_names``, ``state_scale`` (m,), ``initial_states(ctx)`` → (B, m) and
``state_rates(ctx)`` → (B, m); the integrators of :mod:`skfiber.rigid.integrate`
take the states s of all such elements as extra unknowns.  The layout
[(element, slice into s)] is kept by the system's evaluation plan
(:meth:`RigidSystem.plan <skfiber.rigid.RigidSystem.plan>`).

Examples
--------
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> layout = state_layout(system)
>>> layout, layout_size(layout), element_state_names(system)
([], 0, ())
>>> check_states(layout, None, None)
(None, None)
"""
from __future__ import annotations

import numpy as np

from .system import RigidSystem

__all__ = ["state_layout", "layout_size", "state_scales", "check_states", "element_state_names",
           "initial_element_states"]


def state_layout(system: RigidSystem) -> list:
    """[(element, slice into s)] of the force elements with internal states (kept by the system's plan)."""
    return system.plan().layout


def layout_size(layout) -> int:
    """The number m of states of a :func:`state_layout` (the length of s)."""
    return layout[-1][1].stop if layout else 0


def state_scales(layout) -> np.ndarray:
    """The elements' ``state_scale`` of a :func:`state_layout` as one array (m,): the scales of the state rows."""
    if not layout:
        return np.zeros(0)
    return np.concatenate([np.broadcast_to(np.asarray(e.state_scale, dtype=float), (sl.stop - sl.start,))
                           for e, sl in layout])


def element_state_names(system: RigidSystem) -> tuple[str, ...]:
    """Names of the internal states of all force elements, in the order of s."""
    return tuple(name for e, _ in state_layout(system) for name in e.state_names)


def initial_element_states(system: RigidSystem, q, p, t: float = 0.0) -> np.ndarray:
    """The elements' own initial states s₀ (m,) at (q, p, t) (e.g. muscle fibers in static equilibrium)."""
    layout = state_layout(system)
    if not layout:
        return np.zeros(0)
    q = np.asarray(q, dtype=float)[None, :]
    ctx = system.context(q, np.asarray(p, dtype=float)[None, :], float(t))
    return np.concatenate([np.asarray(e.initial_states(ctx), dtype=float).reshape(1, -1)[0] for e, _ in layout])


def check_states(layout, states, states_prev):
    """(s⁺, sₙ) as float arrays (m,) after checking them against a :func:`state_layout`.

    Returns (None, None) when no element has states (and none were given).

    Raises
    ------
    ValueError
        If states are given without stateful elements, missing with them, or
        not m finite values each.
    """
    m = layout_size(layout)
    if m == 0:
        if states is not None and np.size(states) or states_prev is not None and np.size(states_prev):
            raise ValueError("states were given but no force element of the system has internal states")
        return None, None
    if states is None or states_prev is None:
        names = ", ".join(e.name for e, _ in layout)
        raise ValueError(f"force elements with internal states ({names}) need states= and states_prev= "
                         f"({m} values each, see element_state_names); simulate_rigid and backward_euler_rigid "
                         "pass them. The coupled fiber solver does not integrate element states: use elements "
                         "without states there (e.g. a rigid-tendon HillActuator driven by an activation)")
    out = []
    for name, a in (("states", states), ("states_prev", states_prev)):
        a = np.asarray(a, dtype=float)
        if a.shape != (m,) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be {m} finite values {list(n for e, _ in layout for n in e.state_names)}, "
                             f"got {a!r}")
        out.append(a)
    return out
