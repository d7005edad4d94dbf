"""The state of a model and an evaluation of its discrete equations.

* :class:`State` — displacement, velocity and acceleration of all Hermite DOFs, and the rigid
  coordinates with their rates, at one time;
* :class:`Evaluation` — residual and (lazy) tangent at a state, what Newton reads;
* :class:`EulerRates` — the rates of a backward-Euler step as functions of the new displacement.

Examples
--------
>>> import numpy as np
>>> from skfiber.core import State
>>> State(0.0, np.zeros(6), np.zeros(6)).q.shape
(0,)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["State", "Evaluation", "EulerRates", "ResidualMemo", "ROUNDOFF_FACTOR", "check_state", "check_state_of"]

# Newton's residual floor: this many machine epsilons of the summed element force magnitudes
ROUNDOFF_FACTOR = 1e4
_NONE = np.zeros(0)
_NONE.flags.writeable = False


@dataclass
class State:
    """Displacement u, velocity v and acceleration a of all Hermite DOFs at time t,
    and the rigid coordinates q, velocities p and accelerations b.

    ``a`` and ``b`` are the backward-Euler accelerations of the step that led
    here, ``a_prev`` and ``b_prev`` those of the step before it and ``dt_last``
    the size of the step that led here; they only serve the predictor of the
    next step (:func:`skfiber.solver.predicted_accelerations`; default zero,
    and empty / 0 for unknown).  ``u_prev``, ``v_prev``, ``q_prev`` and
    ``p_prev`` are the state at t − ``dt_last``, the earlier point of a BDF2
    step (:mod:`skfiber.core.bdf`; empty: unknown, the next step is backward
    Euler).  Without a rigid system q, p and b are empty.

    Examples
    --------
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> state = model.initial_state()   # at rest in the reference configuration, t = 0
    >>> state.t, state.u.shape, state.q.shape
    (0.0, (18,), (0,))
    """

    t: float
    u: np.ndarray
    v: np.ndarray
    a: np.ndarray | None = None
    q: np.ndarray | None = None
    p: np.ndarray | None = None
    b: np.ndarray | None = None
    a_prev: np.ndarray | None = None
    b_prev: np.ndarray | None = None
    dt_last: float = 0.0
    u_prev: np.ndarray | None = None
    v_prev: np.ndarray | None = None
    q_prev: np.ndarray | None = None
    p_prev: np.ndarray | None = None

    def __post_init__(self):
        if self.a is None:
            self.a = np.zeros_like(np.asarray(self.v, dtype=float))
        if self.q is None:
            self.q = np.zeros(0)
        self.q = np.asarray(self.q, dtype=float)
        if self.p is None:
            self.p = np.zeros_like(self.q)
        if self.b is None:
            self.b = np.zeros_like(self.q)
        self.a_prev = np.zeros(0) if self.a_prev is None else np.asarray(self.a_prev, dtype=float)
        self.b_prev = np.zeros(0) if self.b_prev is None else np.asarray(self.b_prev, dtype=float)
        self.dt_last = float(self.dt_last)
        # the earlier point: float arrays, or the shared read-only empty array (unknown)
        self.u_prev = _NONE if self.u_prev is None else np.asarray(self.u_prev, dtype=float)
        self.v_prev = _NONE if self.v_prev is None else np.asarray(self.v_prev, dtype=float)
        self.q_prev = _NONE if self.q_prev is None else np.asarray(self.q_prev, dtype=float)
        self.p_prev = _NONE if self.p_prev is None else np.asarray(self.p_prev, dtype=float)

    @property
    def has_history(self) -> bool:
        """Whether the state at t − ``dt_last`` is known (a BDF2 step can start from here)."""
        return (self.dt_last > 0 and self.u_prev.shape == self.u.shape and self.v_prev.shape == self.v.shape
                and self.q_prev.shape == self.q.shape and self.p_prev.shape == self.p.shape)

    def without_history(self) -> "State":
        """A copy that forgets the earlier point and the accelerations (the next step starts afresh)."""
        return State(self.t, self.u.copy(), self.v.copy(), self.a.copy(), self.q.copy(), self.p.copy(), self.b.copy())

    def copy(self) -> "State":
        """A deep copy (every array copied): a state to change without changing this one."""
        return State(self.t, self.u.copy(), self.v.copy(), self.a.copy(), self.q.copy(), self.p.copy(), self.b.copy(),
                     self.a_prev.copy(), self.b_prev.copy(), self.dt_last, self.u_prev.copy(), self.v_prev.copy(),
                     self.q_prev.copy(), self.p_prev.copy())


def check_state(state, *, name: str = "state") -> None:
    """Raise TypeError unless ``state`` is a :class:`State`, naming where one comes from.

    Examples
    --------
    >>> check_state(State(0.0, np.zeros(6), np.zeros(6)))
    >>> check_state(0)
    Traceback (most recent call last):
    ...
    TypeError: state must be a skfiber.State, e.g. model.initial_state(), result.final_state of simulate or result.state of solve_static; got int
    """
    if not isinstance(state, State):
        raise TypeError(f"{name} must be a skfiber.State, e.g. model.initial_state(), result.final_state of simulate "
                        f"or result.state of solve_static; got {type(state).__name__}")


def check_state_of(state, n_dofs: int, n_coordinates: int, *, name: str = "state",
                   velocities: bool = True) -> None:
    """:func:`check_state`, then the state's arrays against a model of ``n_dofs`` fiber DOFs and ``n_coordinates``
    rigid coordinates (a state of another model is named as such), and finite (u, and with ``velocities`` v and
    p, and q).

    Examples
    --------
    >>> check_state_of(State(0.0, np.zeros(6), np.zeros(6)), 12, 0)
    Traceback (most recent call last):
    ...
    ValueError: state has 6 fiber DOFs, the model 12: a state of another model (e.g. another level or mesh); start from model.initial_state() or a state of this model
    """
    check_state(state, name=name)
    arrays = [("u", state.u, n_dofs), ("q", state.q, n_coordinates)]
    if velocities:
        arrays += [("v", state.v, n_dofs), ("p", state.p, n_coordinates)]
    for field, values, size in arrays:
        if values.shape != (size,):
            what = "fiber DOFs" if field in "uv" else "rigid coordinates"
            raise ValueError(f"{name} has {values.size} {what}, the model {size}: a state of another model (e.g. "
                             f"another level or mesh); start from model.initial_state() or a state of this model")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"{name}.{field} is not finite at index {int(bad[0])} ({complex(values[bad[0]]).real}"
                             + (f", and {bad.size - 1} more" if bad.size > 1 else "")
                             + "): give a state of finite numbers")


class Evaluation:
    """Residual and tangent of the discrete equations at one state.

    ``residual`` = internal + inertia + terms − external.  The tangent
    ``∂residual/∂u`` is computed on first access of ``element_matrices``
    (e, nb, nb); ``extra`` holds COO triplets (rows, cols, values) of blocks
    outside the cable mesh pattern.  ``margins`` maps each contact's name to
    its :attr:`~skfiber.contact.base.ContactEvaluation.margins` when every
    contact supports the end-of-step safeguard check, else None.
    ``free_norm`` is ‖residual‖₂ on the DOFs Newton solves for, when the
    evaluation computed it (else Newton does).
    """

    def __init__(self, residual, tangent_fn, *, reference_force: float, min_stretch: float, extra=None,
                 roundoff: float = 0.0, n_active_contacts: int = 0, margins: dict | None = None,
                 free_norm: float | None = None):
        self.residual = residual
        self.free_norm = free_norm
        self.margins = margins
        self.n_active_contacts = n_active_contacts
        self.roundoff = roundoff
        self._tangent_fn = tangent_fn
        self._element_matrices = None
        self._extra = extra if callable(extra) else list(extra or [])
        self.reference_force = reference_force
        self.min_stretch = min_stretch

    @property
    def element_matrices(self) -> np.ndarray:
        if self._element_matrices is None:
            self._element_matrices = self._tangent_fn()
        return self._element_matrices

    @property
    def extra(self) -> list:
        """COO triplets (rows, cols, values) of the contact tangents (computed on first access)."""
        if callable(self._extra):
            self._extra = list(self._extra())
        return self._extra


class EulerRates:
    """The fiber rates of a backward-Euler step as a function of the new displacement u:
    v = (u − uₙ)/Δt, a = (v − vₙ)/Δt, with their derivatives c_v = ∂v/∂u = 1/Δt and
    c_a = ∂a/∂u = 1/Δt² — the ``fiber_state`` of :meth:`skfiber.coupling.CoupledProblem.evaluate`
    (a BDF2 step is the same quotient with the anchors û, v̂ and ĥ of :mod:`skfiber.core.bdf`
    in place of uₙ, vₙ and Δt)
    (the coupled fast path computes them inside its kernels).

    Examples
    --------
    >>> import numpy as np
    >>> rates = EulerRates(u_prev=np.zeros(2), v_prev=np.ones(2), dt=0.5)
    >>> v, a, c_v, c_a = rates(np.array([1.0, 0.5]))
    >>> v.tolist(), a.tolist(), c_v, c_a
    ([2.0, 1.0], [2.0, 0.0], 2.0, 4.0)
    """

    def __init__(self, *, u_prev: np.ndarray, v_prev: np.ndarray, dt: float):
        self.u_prev = np.ascontiguousarray(u_prev, dtype=float)
        self.v_prev = np.ascontiguousarray(v_prev, dtype=float)
        self.dt = float(dt)
        self.c_v = 1.0 / self.dt
        self.c_a = 1.0 / self.dt**2

    def __call__(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        v = (u - self.u_prev) / self.dt
        return v, (v - self.v_prev) / self.dt, self.c_v, self.c_a


class ResidualMemo:
    """The residual of the last full evaluation of a model and the state it was made at.

    :func:`skfiber.simulate` turns it on (``enabled``) while it runs, so that
    :meth:`skfiber.Model.attachment_forces` in a callback takes the residual of the
    step's last Newton evaluation instead of evaluating again; any change of the model
    clears it.  The arrays kept are copies or fresh arrays that nobody changes.

    Examples
    --------
    >>> import numpy as np
    >>> memo = ResidualMemo()
    >>> memo.enabled = True
    >>> z = np.zeros(2)
    >>> memo.store(z, z, z, 0.5, None, np.ones(2))
    >>> memo.lookup(z, z, z, 0.5, None).tolist(), memo.lookup(z, z, z, 0.6, None)
    ([1.0, 1.0], None)
    """

    def __init__(self):
        self.enabled = False
        self._entry = None  # ((u, v, a, t, q), R)

    def clear(self) -> None:
        self._entry = None

    def store(self, u, v, a, t: float, q, residual: np.ndarray) -> None:
        """Keep ``residual`` as the one at (u, v, a, t, q) (q: the rigid coordinates or None), when enabled."""
        if self.enabled:
            self._entry = ((u, v, a, float(t), q), residual)

    def lookup(self, u, v, a, t: float, q) -> np.ndarray | None:
        """The kept residual if it was made at exactly this state (bit for bit), else None."""
        if self._entry is None:
            return None
        (u0, v0, a0, t0, q0), residual = self._entry
        if float(t) != t0 or (q is None) != (q0 is None):
            return None
        pairs = [(u, u0), (v, v0), (a, a0)] + ([] if q is None else [(q, q0)])
        if all(np.asarray(x, dtype=float).tobytes() == np.asarray(y).tobytes() for x, y in pairs):
            return residual
        return None
