"""What a run of :func:`skfiber.simulate` returns and reports: :class:`SimulationResult`, :class:`StepInfo`,
the bounded store of states, and the compile notice of the first step.

Examples
--------
>>> import numpy as np
>>> from skfiber.core import State
>>> store = StateStore(State(0.0, np.zeros(2), np.zeros(2)))
>>> store.add(State(0.1, np.ones(2), np.zeros(2)), [1e-3, 1e-12])
>>> store.result(np.array([1], dtype=np.int32), 0, 0.0, False, None, None).times.tolist()
[0.0, 0.1]
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from .core import State, StepCounts

__all__ = ["StepInfo", "SimulationResult", "StateStore", "compile_notice", "MAX_STORED_STATES", "FIRST_STEP_NOTICE_S"]

#: simulate keeps at most about this many states by default (store_every=None): memory stays bounded
MAX_STORED_STATES = 1000
#: simulate(progress=True) explains a first step slower than this (s): numba compiling the kernels
FIRST_STEP_NOTICE_S = 3.0

@dataclass(frozen=True)
class StepInfo:
    """What a callback learns about the step just finished."""

    step: int
    n_steps: int
    t_end: float
    newton_iterations: int
    #: failed Newton attempts in this step (each one split a (sub)step in two)
    retries: int
    elapsed: float
    active_contacts: int = 0


@dataclass
class SimulationResult:
    """Time series of a run of :func:`skfiber.simulate`.

    ``displacements[i]`` and ``velocities[i]`` belong to ``times[i]`` (the
    kept steps, or output times of an adaptive run).  ``newton_iterations``
    holds the Newton iterations of every step (int32 array; of every
    accepted step of an adaptive run), ``residual_histories`` those of the
    kept steps only (none in adaptive runs).  ``step_counts`` sums up
    accepted and rejected steps, Newton iterations and tangent builds
    (:class:`~skfiber.core.StepCounts`).  ``interrupted`` is True when the
    run was stopped by Ctrl-C, or failed (the result then comes as the
    :class:`~skfiber.ConvergenceError`'s ``partial``); everything computed
    until then is kept, and ``final_state`` is the last converged state.

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    >>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.add_gravity()
    >>> r = sf.simulate(model, t_end=0.02, dt=0.01, progress=False)
    >>> r.times.tolist(), r.displacements.shape == (3, model.n_dofs)
    ([0.0, 0.01, 0.02], True)
    >>> r.state(1).t, r.final_state.t
    (0.01, 0.02)
    """

    times: np.ndarray
    displacements: np.ndarray
    velocities: np.ndarray
    newton_iterations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    residual_histories: list[list[float]] = field(default_factory=list)
    retries: int = 0
    wall_time: float = 0.0
    interrupted: bool = False
    last_state: State | None = None
    #: rigid coordinates q and velocities p at ``times`` (shape (len(times), n); n = 0 without bodies)
    coordinates: np.ndarray | None = None
    rigid_velocities: np.ndarray | None = None
    step_counts: StepCounts | None = None

    @property
    def final_state(self) -> State:
        """The last state, with the acceleration the next step's predictor uses: continuing from it
        reproduces an uninterrupted run (bit for bit with ``NewtonOptions(jacobian_reuse=False)``; with
        modified Newton within Newton's tolerance, since the factorization it carries from step to step
        is not part of the state)."""
        if self.last_state is not None:
            return self.last_state.copy()
        return self.state(-1)

    def state(self, i: int) -> State:
        """The i-th kept state (t, u, v and, with rigid bodies, q, p) as a :class:`~skfiber.State`; its
        accelerations are not kept (zero)."""
        q = p = None
        if self.coordinates is not None:
            q, p = self.coordinates[i].copy(), self.rigid_velocities[i].copy()
        return State(float(self.times[i]), self.displacements[i].copy(), self.velocities[i].copy(), q=q, p=p)


class StateStore:
    """The states a run keeps (copies), with the residual histories of their steps."""

    def __init__(self, state: State):
        self.times, self.us, self.vs, self.qs, self.ps = [], [], [], [], []
        self.histories: list[list[float]] = []
        self.add(state, None)

    def add(self, state: State, history: list[float] | None) -> None:
        """Keep a copy of ``state`` (and the residual history of its step, if not None)."""
        self.times.append(state.t); self.us.append(state.u.copy()); self.vs.append(state.v.copy())
        self.qs.append(state.q.copy()); self.ps.append(state.p.copy())
        if history is not None:
            self.histories.append(history)

    def result(self, iterations: np.ndarray, retries: int, wall_time: float, interrupted: bool, last: State | None,
               counts: StepCounts | None) -> SimulationResult:
        return SimulationResult(
            np.array(self.times), np.array(self.us), np.array(self.vs), np.asarray(iterations, dtype=np.int32),
            self.histories, retries, wall_time, interrupted, None if last is None else last.copy(), np.array(self.qs),
            np.array(self.ps), counts)


def compile_notice(message: str, *, enabled: bool = True, delay: float | None = None,
                   file=None) -> threading.Timer:
    """A timer that prints ``message`` after ``delay`` s (default :data:`FIRST_STEP_NOTICE_S`) unless cancelled first.

    For work that is slow only on the first run on a machine, while numba
    compiles the kernels (later runs load them from its cache): start it
    before, ``cancel()`` it after.  With ``enabled=False`` it never prints.

    Examples
    --------
    >>> notice = compile_notice("compiling …", enabled=False)
    >>> notice.cancel()
    """
    notice = threading.Timer(FIRST_STEP_NOTICE_S if delay is None else delay, print, args=(message,), kwargs={"file": file, "flush": True})
    notice.daemon = True  # never keeps the interpreter alive
    if enabled:
        notice.start()
    return notice
