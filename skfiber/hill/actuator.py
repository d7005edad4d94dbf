"""A Millard (2013) musculotendon actuator as a force element of the rigid system.

The muscle runs along a path of body-fixed points x₀ (origin), x₁ … (via
points), x_K (insertion), each given like the points of
:class:`~skfiber.rigid.PointSpringDamper`: a body name (or ``"ground"``) and
the point in the reference configuration (world coordinates, q = 0) or the
name of one of the body's ``points``.  With e_k = (x_{k+1} − x_k)/|x_{k+1} − x_k|

    ℓ(q, t) = Σ_k |x_{k+1} − x_k|,     ∂ℓ/∂q = Σ_k e_kᵀ (C_{k+1} − C_k),
    ℓ̇ = Σ_k e_k · (ẋ_{k+1} − ẋ_k)  (= ∂ℓ/∂q q̇ without prescribed motion),

and the tension f ≥ 0 of the musculotendon model (:class:`Millard2012Muscle`)
at l^MT = ℓ, v^MT = ℓ̇ gives the generalized force

    Q = −(∂ℓ/∂q)ᵀ f

(the sum of the point forces f e at the segment ends: it pulls the insertion
towards the origin; via points are frictionless).

Internal states (the optional state protocol of :mod:`skfiber.rigid.integrate`):

* ``formulation="rigid"``: none (stateless: usable anywhere, also in the coupled
  fiber model) unless the activation follows an excitation;
* ``"damped"`` / ``"equilibrium"`` (elastic tendon): the fiber length l^M, with
  d l^M/dt = v^M(a, ℓ, l^M) (eqs. 1–3), initialized in static equilibrium;
* with ``excitation=u(t)``: also the activation a, da/dt = (u − a)/τ(a, u)
  (:class:`FirstOrderActivation`).

The states are unknowns of the same backward-Euler/Newton step as q
(:func:`skfiber.rigid.simulate_rigid`).  The Millard curves are not
complex-step safe, so the element propagates the imaginary parts of a
complex-step evaluation through the model's analytic tangent
(:class:`MusculotendonResponse` ``d_*`` fields): the step tangent stays exact.

Examples
--------
A pendulum held by a muscle from the ground to the middle of the rod:

>>> import numpy as np
>>> from skfiber.hill import HillActuator, Millard2012Muscle, MuscleParameters
>>> from skfiber.rigid import Body, Revolute, RigidSystem, simulate_rigid
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=200.0, optimal_fiber_length=0.1,
...                                             tendon_slack_length=0.15))
>>> m = system.add(HillActuator(muscle, [("ground", (0.1, 0, 0)), ("rod", (0, 0, -0.25))],
...                             activation=0.2, name="holder"))
>>> m.state_names
('holder.fiber_length',)
>>> result = simulate_rigid(system, [0.0], [0.0], t_end=0.05, dt=0.01)
>>> result.states.shape
(6, 1)
>>> r = m.response(result.q, result.p, result.times, states=m.states_from(result))  # time series
>>> r.tendon_force.shape, bool(np.all(r.tendon_force > 0))
((6,), True)
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .musculotendon import Millard2012Muscle, MusculotendonResponse

__all__ = ["HillActuator"]

TimeFunction = Callable[[float], float]


def _time_function(value, what: str) -> TimeFunction:
    if callable(value):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be a number in [0, 1] or a function of t, got {value!r}") from err
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"{what} must be in [0, 1], got {v!r}")
    return lambda t: v


def _slice_response(r: MusculotendonResponse, rows: slice) -> MusculotendonResponse:
    return MusculotendonResponse(**{k: np.asarray(getattr(r, k))[rows] for k in r.__dataclass_fields__})


def _linearized(value, terms):
    """value + i Σ d·Im(x) for (d, x) in terms: the complex step through an analytic tangent."""
    imag = [(d, np.imag(x)) for d, x in terms if np.iscomplexobj(x)]
    if not imag:
        return value
    return value + 1j * sum(d * x for d, x in imag)


class HillActuator:
    """A Hill-type muscle along a path of body points, as a force element of a RigidSystem.

    Parameters
    ----------
    muscle
        The :class:`Millard2012Muscle` (its formulation decides the states).
    path
        ``[(body, point), …]``, origin first, insertion last, optional via
        points between: at least 2 points, consecutive points apart in the
        reference configuration, and not all on one body.  ``body`` is a body
        name or ``"ground"``; ``point`` 3 numbers (reference configuration,
        world coordinates) or the name of a point of the body.
    activation
        a(t): a number in [0, 1] or a function of t (no activation state).
    excitation
        u(t) instead of ``activation``: the activation becomes a state with the
        muscle's first-order ``activation_dynamics``.
    initial_activation
        a(t₀) with ``excitation`` (default u(t₀), clamped to [a_min, 1]).
    name
        Element name (default ``"hill[<origin body>–<insertion body>]"``);
        states are named ``"<name>.fiber_length"``, ``"<name>.activation"``.

    Examples
    --------
    >>> from skfiber.hill import HillActuator, Millard2012Muscle
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -0.4), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, -1, 0))) and None
    >>> hill = system.add(HillActuator(Millard2012Muscle(formulation="rigid"),
    ...                                [("ground", (0.05, 0, 0.2)), ("arm", (0.03, 0, -0.05))],
    ...                                activation=lambda t: 0.5))
    >>> system.finalize() and None
    >>> hill.n_states, round(hill.path_length([0.0]), 6), hill.path_jacobian([0.0]).round(6).tolist()
    (0, 0.250799, [-0.033892])
    """

    def __init__(self, muscle: Millard2012Muscle, path: Sequence[tuple[str, Sequence[float] | str]], *,
                 activation: float | TimeFunction | None = None,
                 excitation: float | TimeFunction | None = None,
                 initial_activation: float | None = None, name: str | None = None):
        if not isinstance(muscle, Millard2012Muscle):
            raise TypeError(f"muscle must be a skfiber.hill.Millard2012Muscle, got {type(muscle).__name__}")
        self.muscle = muscle
        try:
            path = [tuple(entry) for entry in path]
        except TypeError as err:
            raise TypeError("path must be a sequence of (body, point) pairs, origin first") from err
        if len(path) < 2:
            raise ValueError(f"a muscle path needs at least 2 points (origin and insertion), got {len(path)}")
        for k, entry in enumerate(path):
            if len(entry) != 2 or not isinstance(entry[0], str):
                raise ValueError(f"path point {k} must be a (body name, point) pair, got {entry!r}")
        if len({body for body, _ in path}) < 2:
            raise ValueError(f"all path points are on body {path[0][0]!r}: the path length could not change; "
                             "put the origin and the insertion on different bodies")
        self.path = path
        if name is None:
            name = f"hill[{path[0][0]}–{path[-1][0]}]"
        self.name = str(name)
        if (activation is None) == (excitation is None):
            raise ValueError(f"{self.name}: give exactly one of activation= (a(t)) and excitation= "
                             "(u(t), with first-order activation dynamics)")
        self.activation = None if activation is None else _time_function(activation, f"{self.name}: activation")
        self.excitation = None if excitation is None else _time_function(excitation, f"{self.name}: excitation")
        if initial_activation is not None:
            if excitation is None:
                raise ValueError(f"{self.name}: initial_activation needs excitation= (activation dynamics)")
            initial_activation = float(initial_activation)
            if not (0.0 <= initial_activation <= 1.0):
                raise ValueError(f"{self.name}: initial_activation must be in [0, 1], got {initial_activation!r}")
        self.initial_activation = initial_activation
        self._elastic = muscle.formulation != "rigid"
        self._activation_state = excitation is not None
        self._points: tuple[int, ...] = ()
        self._system = None
        self._cache = None
        self._peers = None

    def __repr__(self):
        return (f"HillActuator({self.name!r}, formulation={self.muscle.formulation!r}, "
                f"path={[body for body, _ in self.path]})")

    # -- state protocol ---------------------------------------------------------
    @property
    def n_states(self) -> int:
        """Number of internal states: fiber length (elastic tendon) and activation (with excitation)."""
        return int(self._elastic) + int(self._activation_state)

    @property
    def state_names(self) -> tuple[str, ...]:
        names = [f"{self.name}.fiber_length"] if self._elastic else []
        return tuple(names + ([f"{self.name}.activation"] if self._activation_state else []))

    @property
    def state_scale(self) -> np.ndarray:
        """Scales of the backward-Euler state rows: l_o^M (m) for l^M, 1 for a."""
        scale = [self.muscle.parameters.optimal_fiber_length] if self._elastic else []
        return np.array(scale + ([1.0] if self._activation_state else []))

    # -- force-element protocol ---------------------------------------------------
    def bind(self, system) -> None:
        """Resolve the path points and register them with ``system``."""
        X = [system.resolve_point(body, point, self.name) for body, point in self.path]
        for k in range(len(X) - 1):
            if float(np.linalg.norm(X[k + 1] - X[k])) <= 1e-12:
                raise ValueError(f"{self.name}: path points {k} and {k + 1} coincide in the reference "
                                 f"configuration at {X[k].tolist()}; the segment direction is undefined")
        self._points = tuple(system.register_point(body, x, self.name) for (body, _), x in zip(self.path, X))
        self._system = system
        self._cache = None
        self._peers = None

    def force(self, ctx) -> np.ndarray:
        """Q = −(∂ℓ/∂q)ᵀ f (B, n)."""
        ev = self._evaluate(ctx)
        return -ev["force"][:, None] * ev["dl_dq"]

    def state_rates(self, ctx) -> np.ndarray:
        """ṡ (B, m): d l^M/dt and/or da/dt."""
        return self._evaluate(ctx)["rates"]

    def initial_states(self, ctx) -> np.ndarray:
        """s₀ (B, m): activation u(t₀) (or ``initial_activation``), fiber length in static equilibrium."""
        B = ctx.B
        t = self._times(ctx, B)
        cols = []
        if self._activation_state:
            if self.initial_activation is not None:
                a0 = np.full(B, self.initial_activation)
            else:
                a_min = self.muscle.parameters.minimum_activation
                a0 = np.clip(self._call(self.excitation, t, "excitation"), a_min, 1.0)
        else:
            a0 = self._call(self.activation, t, "activation")
        if self._elastic:
            ell = np.real(self._path(ctx)[0])
            rest = self.muscle.static_equilibrium(activation=a0, musculotendon_length=ell)
            cols.append(np.asarray(rest.fiber_length, dtype=float))
        if self._activation_state:
            cols.append(a0)
        return np.stack(cols, axis=1) if cols else np.zeros((B, 0))

    # -- evaluation -----------------------------------------------------------------
    def _times(self, ctx, B):
        return np.broadcast_to(np.atleast_1d(np.asarray(ctx.t, dtype=float)), (B,))

    def _number(self, fn, t: float, what: str) -> float:
        """The user's activation(t) or excitation(t) at one time as a float, or a ValueError naming what it gave."""
        value = fn(t)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name}: {what}(t) must return one number in [0, 1]; it gave {value!r} at "
                             f"t = {t!r} s") from None

    def _call(self, fn, t, what):
        """The user's activation(t) or excitation(t) at the times t: finite and in [0, 1], or ValueError."""
        values = {ti: self._number(fn, float(ti), what) for ti in np.unique(t)}
        out = np.array([values[ti] for ti in t])
        bad = ~(np.isfinite(out) & (out >= 0.0) & (out <= 1.0))
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{self.name}: {what}(t) must be a number in [0, 1]; it gave {float(out[k])!r} at "
                             f"t = {float(t[k])!r} s")
        return out

    def _call_batch(self, fn, ctx, B, what):
        """fn(t) at the B configurations of ``ctx``: one call when they share one time (the usual step)."""
        if np.ndim(ctx.t) == 0:
            value = self._number(fn, float(ctx.t), what)
            if 0.0 <= value <= 1.0:
                return np.full(B, value)
        return self._call(fn, self._times(ctx, B), what)  # (raises the error for a bad value)

    def _path(self, ctx):
        """ℓ (B,), ∂ℓ/∂q (B, n) and ℓ̇ (B,) (None without q̇), complex-step safe."""
        pts = self._points
        ell = 0.0
        dl = 0.0
        ell_dot = 0.0 if ctx.qd is not None else None
        for a, b in zip(pts[:-1], pts[1:]):
            d = ctx.position(b) - ctx.position(a)
            length = np.sqrt(np.sum(d * d, axis=-1))  # no abs: complex-step safe
            if np.any(np.real(length) <= 0):
                raise FloatingPointError(f"{self.name}: two consecutive path points coincide; the direction "
                                         "of the muscle force is undefined")
            e = d / length[:, None]
            ell = ell + length
            dl = dl + np.einsum("xc,xcn->xn", e, ctx.jacobian(b) - ctx.jacobian(a))
            if ell_dot is not None:
                ell_dot = ell_dot + np.sum(e * (ctx.velocity(b) - ctx.velocity(a)), axis=-1)
        return ell, dl, ell_dot

    def _states(self, ctx):
        states = getattr(ctx, "element_states", None)
        s = None if states is None else states.get(self.name)
        if s is None:
            raise ValueError(f"{self.name}: this {self.muscle.formulation!r} muscle has internal states "
                             f"{list(self.state_names)}; evaluate the system through simulate_rigid / "
                             "backward_euler_rigid / rigid_step(states=...), or use HillActuator.response "
                             "with states=")
        return s

    def _inputs(self, ctx) -> dict:
        """Path, activation and states of this element in ``ctx`` (possibly complex)."""
        B = ctx.B
        ell, dl_dq, ell_dot = self._path(ctx)
        s = self._states(ctx) if self.n_states else None
        if self._activation_state:
            a, u = s[:, -1], self._call_batch(self.excitation, ctx, B, "excitation")
        else:
            a, u = self._call_batch(self.activation, ctx, B, "activation"), None
        return {"ell": ell, "dl_dq": dl_dq, "vmt": np.zeros(B) if ell_dot is None else ell_dot,
                "lce": s[:, 0] if self._elastic else None, "a": a, "u": u}

    def _group(self, ctx) -> list:
        """This element and the other HillActuators of the system with an equal muscle whose
        inputs ``ctx`` holds: one vectorized muscle evaluation serves them all (its cost is
        mostly per call, not per muscle)."""
        if self._peers is None:
            self._peers = [e for e in ctx.system.elements if isinstance(e, HillActuator) and e is not self
                           and e._activation_state == self._activation_state
                           and (e.muscle is self.muscle or e.muscle == self.muscle)]
        states = getattr(ctx, "element_states", None) or {}
        return [self] + [e for e in self._peers if e.n_states == 0 or e.name in states]

    def _evaluate(self, ctx) -> dict:
        if self._cache is not None and self._cache[0] is ctx:
            return self._cache[1]
        group = self._group(ctx)
        inputs = [e._inputs(ctx) for e in group]

        def cat(key):
            return np.concatenate([np.real(i[key]) for i in inputs])

        if self._elastic:
            r_all = self.muscle.evaluate(activation=cat("a"), musculotendon_length=cat("ell"),
                                         fiber_length=cat("lce"), musculotendon_velocity=cat("vmt"), checked=False)
        else:
            r_all = self.muscle.evaluate(activation=cat("a"), musculotendon_length=cat("ell"),
                                         musculotendon_velocity=cat("vmt"), checked=False)
        B = ctx.B
        for k, (e, inp) in enumerate(zip(group, inputs)):
            r = _slice_response(r_all, slice(k * B, (k + 1) * B))
            e._cache = (ctx, e._outputs(inp, r))
        return self._cache[1]

    def _outputs(self, inp, r) -> dict:
        """Force and state rates, with the complex-step parts carried by the analytic tangent."""
        ell, vmt, lce, a = inp["ell"], inp["vmt"], inp["lce"], inp["a"]
        if self._elastic:
            force = _linearized(r.tendon_force, [(r.d_tendon_force_d_musculotendon_length, ell),
                                                 (r.d_tendon_force_d_fiber_length, lce),
                                                 (r.d_tendon_force_d_activation, a)])
            rates = [_linearized(r.fiber_velocity, [(r.d_fiber_velocity_d_musculotendon_length, ell),
                                                    (r.d_fiber_velocity_d_fiber_length, lce),
                                                    (r.d_fiber_velocity_d_activation, a)])]
        else:
            force = _linearized(r.tendon_force, [(r.d_tendon_force_d_musculotendon_length, ell),
                                                 (r.d_tendon_force_d_musculotendon_velocity, vmt),
                                                 (r.d_tendon_force_d_activation, a)])
            rates = []
        if self._activation_state:
            rate, d_rate = self._activation_rate(np.real(a), inp["u"])
            rates.append(_linearized(rate, [(d_rate, a)]))
        B = len(ell)
        return {"force": force, "dl_dq": inp["dl_dq"], "rates": np.stack(rates, axis=1) if rates else np.zeros((B, 0)),
                "response": r}

    def _activation_rate(self, a, u):
        """(da/dt, ∂(da/dt)/∂a) of the first-order activation dynamics."""
        act = self.muscle.activation_dynamics
        a_min = self.muscle.parameters.minimum_activation
        rate = act.derivative(a, u, minimum_activation=a_min)
        ac = np.clip(a, a_min, 1.0)
        free = (a >= a_min) & (a <= 1.0)
        s = 0.5 + 1.5 * ac
        tau_up = act.activation_time_constant * s
        up = u > ac
        d_up = -1.0 / tau_up - (u - ac) * 1.5 * act.activation_time_constant / tau_up**2
        d_down = (-s + 1.5 * (u - ac)) / act.deactivation_time_constant
        return (rate, np.where(free, np.where(up, d_up, d_down), 0.0))

    # -- inspection -----------------------------------------------------------------
    def _bound_system(self):
        if self._system is None:
            raise ValueError(f"{self.name}: not bound to a RigidSystem yet; add it with system.add(...) and "
                             "call system.finalize() (simulate_rigid and the system's evaluations do that)")
        self._system.finalize()
        return self._system

    def _context(self, q, qd, t, states=None, *, need_states: bool = True):
        """A context for one configuration (q (n,)) or a batch (q (B, n), t scalar or (B,))."""
        system = self._bound_system()
        q = np.asarray(q, dtype=float)
        single = q.ndim == 1
        q = np.atleast_2d(q)
        if q.ndim != 2 or q.shape[1] != system.n:
            raise ValueError(f"q must have {system.n} entries {list(system.coordinate_names)} (or be a (B, "
                             f"{system.n}) batch), got shape {np.shape(q)}")
        B = len(q)
        if qd is not None:
            try:
                qd = np.broadcast_to(np.asarray(qd, dtype=float), q.shape)
            except ValueError as err:
                raise ValueError(f"qd must have the shape of q {q.shape}, got {np.shape(qd)}") from err
        t = np.asarray(t, dtype=float)
        if t.ndim > 1 or (t.ndim == 1 and len(t) != B):
            raise ValueError(f"t must be a number or {B} times, got shape {t.shape}")
        ctx = system.context(q, qd, float(t) if t.ndim == 0 else t)
        if self.n_states and (need_states or states is not None):
            if states is None:
                raise ValueError(f"{self.name}: pass states= ({list(self.state_names)}; see states_from)")
            s = np.asarray(states, dtype=float)
            if s.ndim == 1:
                s = np.broadcast_to(s, (B, len(s)))
            if s.shape != (B, self.n_states) or not np.all(np.isfinite(s)):
                raise ValueError(f"{self.name}: states must be {self.n_states} finite values "
                                 f"{list(self.state_names)} per configuration, got shape {np.shape(states)}")
            if self._elastic and not np.all(s[:, 0] > 0):
                raise ValueError(f"{self.name}: the fiber length (states[..., 0]) must be > 0 (m), got "
                                 f"{s[:, 0].min():g}")
            ctx.element_states = {self.name: s}
        return ctx, single

    def path_length(self, q, t: float = 0.0):
        """ℓ(q, t), the musculotendon length (m) (a float, or (B,) for a batch q (B, n))."""
        ctx, single = self._context(q, None, t, need_states=False)
        ell = np.real(self._path(ctx)[0])
        return float(ell[0]) if single else ell

    def path_jacobian(self, q, t: float = 0.0) -> np.ndarray:
        """∂ℓ/∂q (n,) (or (B, n)); −∂ℓ/∂q are the moment arms (m per rad for revolute joints)."""
        ctx, single = self._context(q, None, t, need_states=False)
        dl = np.real(self._path(ctx)[1])
        return dl[0] if single else dl

    def states_from(self, result) -> np.ndarray:
        """This element's columns of ``result.states`` (a :class:`~skfiber.rigid.RigidResult`): (N, m)."""
        names = list(getattr(result, "state_names", ()))
        missing = [n for n in self.state_names if n not in names]
        if missing:
            raise ValueError(f"{self.name}: the result has no states {missing}; its states are {names}")
        return np.asarray(result.states)[:, [names.index(n) for n in self.state_names]]

    def response(self, q, qd=None, t=0.0, *, states=None) -> MusculotendonResponse:
        """The musculotendon state at (q, q̇, t): forces, lengths, velocities.

        One configuration (q (n,)) or a batch (q (B, n), q̇ (B, n), t (B,),
        states (B, m)), e.g. a whole time series of
        :func:`~skfiber.rigid.simulate_rigid` with ``states=hill.states_from(result)``.
        ``states`` (this element's ``state_names``) are required when
        ``n_states > 0``.  ``tendon_force`` is the tension f along the path.
        """
        ctx, single = self._context(q, qd, t, states)
        self._cache = None
        r = self._evaluate(ctx)["response"]
        self._cache = None
        return _slice_response(r, 0) if single else r

    def generalized_force(self, q, qd=None, t=0.0, *, states=None) -> np.ndarray:
        """Q = −(∂ℓ/∂q)ᵀ f (n,) (or (B, n)) at (q, q̇, t) and the given states."""
        ctx, single = self._context(q, qd, t, states)
        self._cache = None
        Q = np.real(self.force(ctx))
        self._cache = None
        return Q[0] if single else Q
