"""The rigid system: bodies in a kinematic tree, force elements, Lagrangian dynamics.

Equations of motion (paper eq. 48; multibody paper eqs. 39–43), in minimal
coordinates q:

    M(q, t) q̈ + h(q, q̇, t) = Q(q, q̇, t) = Σ_e Q_e(q, q̇, t)

derived from T(q, q̇, t) = Σ_b ½ m_b |v_Sb|² + ½ ω_bᵀ I_b ω_b, V(q, t) and the
dissipation function by projecting the bodies' inertia forces on the
tangent space of the tree (Jourdain / Kane, equivalent to Lagrange's
equations of the second kind):

    M = Σ_b m_b J_Sbᵀ J_Sb + J_ωbᵀ I_b J_ωb,
    h = Σ_b m_b J_Sbᵀ a_Sb⁰ + J_ωbᵀ (I_b α_b⁰ + ω_b × I_b ω_b),

with J_Sb = ∂x_Sb/∂q, J_ωb = ∂ω_b/∂q̇ and a⁰, α⁰ the accelerations at q̈ = 0
(Coriolis, centrifugal and gyroscopic terms, and the transport terms of a
prescribed base motion, γ in the multibody paper's eq. 43).  All Jacobians
are analytic (:mod:`.kinematics`); the Newton tangents are complex-step
derivatives of these analytic expressions (exact to round-off).  M and h are
computed by one compiled pass over the bodies (:func:`.kernels.inertia_terms`),
so the complex step (a batch of n configurations) costs about one evaluation.
The backward-Euler residual of :func:`~skfiber.rigid.rigid_step` fuses the
poses, M, h and gravity into one compiled call (:func:`.kernels.euler_terms`)
with the tree's tables kept per assembled system (:meth:`RigidSystem.plan`, an
:class:`~.plan.EvaluationPlan`); the other force elements see the context
(:class:`~.context.ForceContext`) as here.

Examples
--------
A pendulum: a rod of 1 kg and 0.5 m hinged at its top about y.

>>> import numpy as np
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> rod = system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                       joint=Revolute(axis=(0, 1, 0), point=(0, 0, 0)))
>>> system.coordinate_names
('rod.angle',)
>>> M = system.mass_matrix([0.3]); round(float(M[0, 0]), 6)       # m L²/3 + m r²/4
0.083358
>>> round(float(system.generalized_forces([0.3], [0.0])[0]), 5)  # −m g (L/2) sin q
-0.72476
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .bodies import Body, as_vector
from .complex_step import COMPLEX_STEP, complex_jacobian
from .context import ForceContext
from .forces import Gravity
from .inertia_kernel import inertia_terms as compiled_inertia_terms
from .joints import Fixed, Prescribed, Prismatic, Revolute, skew
from .kinematics import Kinematics
from .plan import EvaluationPlan
from .points import BodyCylinder, BodyPoint
from .tree import GROUND, Tree, build_tree

__all__ = ["RigidSystem", "COMPLEX_STEP", "complex_jacobian"]

_JOINTS = (Fixed, Revolute, Prismatic, Prescribed)


class RigidSystem:
    """Rigid bodies (cylinders) in a kinematic tree, with force elements.

    Build it with :meth:`add_body` and :meth:`add`; it is checked and
    assembled on first use (:meth:`finalize`).  Coordinates q are the joint
    variables of the revolute and prismatic joints, in the order the bodies
    were added (:attr:`coordinate_names`); q = 0 is the reference
    configuration in which bodies, joints and points are given.

    Parameters
    ----------
    gravity
        Gravitational acceleration g (m/s²), e.g. ``(0, 0, -9.81)``.

    Examples
    --------
    >>> from skfiber.rigid import Body, JointSpringDamper, Revolute, RigidSystem
    >>> system = RigidSystem(gravity=(0, 0, -9.81))
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> system.add(JointSpringDamper("arm", stiffness=2.0)).name
    'joint[arm]'
    >>> system.n, system.coordinate_names, [e.name for e in system.elements]
    (1, ('arm.angle',), ['gravity', 'joint[arm]'])
    """

    def __init__(self, *, gravity: Sequence[float] = (0.0, 0.0, 0.0)):
        self.gravity = as_vector(gravity, "gravity")
        self._entries: list[tuple[Body, str, object]] = []
        self._elements: list = []
        self._points: list[tuple[str, np.ndarray]] = []
        self._point_cache = None
        self._tree: Tree | None = None
        self._plan_cache: EvaluationPlan | None = None

    # ------------------------------------------------------------ building
    def add_body(self, body: Body, *, parent: str | Body = GROUND, joint=None) -> Body:
        """Add ``body`` with its ``joint`` to ``parent`` (a body name, a Body, or ``"ground"``).

        ``joint``: :class:`Fixed` (default), :class:`Revolute`,
        :class:`Prismatic` or :class:`Prescribed`.  Bodies may be added in
        any order; parents are resolved when the system is assembled.
        """
        if not isinstance(body, Body):
            raise TypeError(f"add_body takes a skfiber.rigid.Body, got {type(body).__name__}")
        joint = Fixed() if joint is None else joint
        if not isinstance(joint, _JOINTS):
            raise TypeError(
                f"the joint of body {body.name!r} must be one of Fixed(), Revolute(...), Prismatic(...), Prescribed(...); "
                f"got {joint!r}"
            )
        parent = parent.name if isinstance(parent, Body) else parent
        if not isinstance(parent, str):
            raise TypeError(f"parent of body {body.name!r} must be a body name or 'ground', got {parent!r}")
        if any(b.name == body.name for b, _, _ in self._entries):
            raise ValueError(f"a body named {body.name!r} is already in the system; body names must be unique")
        self._entries.append((body, parent, joint))
        self._tree = None
        return body

    def add(self, element):
        """Add a force element (:class:`JointSpringDamper`, :class:`PointSpringDamper`, …); returns it."""
        if not (hasattr(element, "force") and hasattr(element, "bind")):
            raise TypeError(f"a force element needs bind(system) and force(ctx) methods, got {type(element).__name__}")
        self._elements.append(element)
        self._tree = None
        return element

    def body(self, name: str) -> Body:
        """The body called ``name``."""
        for b, _, _ in self._entries:
            if b.name == name:
                return b
        raise ValueError(f"unknown body {name!r}; bodies: {[b.name for b, _, _ in self._entries]}")

    @property
    def bodies(self) -> tuple[Body, ...]:
        """Bodies in the order they were added."""
        return tuple(b for b, _, _ in self._entries)

    @property
    def elements(self) -> tuple:
        """Force elements, gravity first."""
        self.finalize()
        return tuple(self._bound)

    def finalize(self) -> "RigidSystem":
        """Check the model (names, parents, cycles, masses, elements) and build the tree."""
        if self._tree is not None:
            return self
        tree = build_tree(self._entries)
        self._tree = tree
        self._points.clear()  # the elements register their points again
        self._point_cache = None
        try:
            bound = [Gravity(self.gravity)] if np.any(self.gravity != 0) else []
            bound += list(self._elements)
            names = set()
            for element in bound:
                element.bind(self)
                if element.name in names:
                    raise ValueError(f"two force elements are named {element.name!r}; give them distinct names")
                names.add(element.name)
        except Exception:
            self._tree = None
            raise
        self._bound = bound
        return self

    @property
    def tree(self) -> Tree:
        self.finalize()
        return self._tree

    def plan(self) -> EvaluationPlan:
        """The evaluation plan of the assembled system, kept (rebuilt after :meth:`add_body` or :meth:`add`).

        Returns
        -------
        EvaluationPlan
            The tree's tables in the argument order of the compiled kernels, the
            force elements split into gravity and the others, the layout of the
            elements' internal states, and the kernel arguments of the last time
            (:class:`~skfiber.rigid.plan.EvaluationPlan`).  Assembles the system
            first (:meth:`finalize`) if needed.
        """
        plan = self._plan_cache
        if plan is None or plan.tree is not self._tree or self._tree is None:
            self.finalize()
            plan = self._plan_cache = EvaluationPlan(self)
        return plan

    @property
    def n(self) -> int:
        """Number of coordinates."""
        return self.tree.n

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        """``"<body>.angle"`` / ``"<body>.distance"`` for each coordinate."""
        return self.tree.coordinate_names

    def coordinate_index(self, body: str) -> int | None:
        """Index in q of the coordinate of ``body``'s joint (None for Fixed/Prescribed joints)."""
        tree = self.tree
        b = self.body_index(body)
        k = tree.joint_of_body[b] if b < tree.n_bodies else -1
        return None if k < 0 or tree.coordinate[k] < 0 else int(tree.coordinate[k])

    def body_index(self, body: str | Body) -> int:
        """Index of ``body`` (a name, a :class:`Body` or ``"ground"``) in the tree (the ground: the number of bodies).

        Raises
        ------
        ValueError
            If there is no such body.
        """
        name = body.name if isinstance(body, Body) else body
        tree = self.tree
        if name not in tree.index:
            raise ValueError(f"unknown body {name!r}; bodies: {[b.name for b in tree.bodies]} or 'ground'")
        return tree.index[name]

    def register_point(self, body: str, X, owner: str = "a point") -> int:
        """Register a body point whose kinematics a force element needs; called by elements in ``bind``.

        Parameters
        ----------
        body
            Name of the body (or ``"ground"``).
        X
            Reference coordinates of the point (3,).
        owner
            Who asks (the element's name), for the error messages.

        Returns
        -------
        int
            The point's index i for ``ctx.position(i)``, ``ctx.jacobian(i)`` and
            ``ctx.velocity(i)`` of the force context (:class:`~skfiber.rigid.context.ForceContext`).
        """
        if body not in self._tree.index:
            known = [b.name for b, _, _ in self._entries]
            raise ValueError(f"{owner}: unknown body {body!r}; bodies: {known} or 'ground'")
        self._points.append((body, as_vector(X, f"{owner}: point")))
        self._point_cache = None
        return len(self._points) - 1

    def resolve_point(self, body: str, point, owner: str) -> np.ndarray:
        """Reference coordinates (3,) of a point of ``body`` given by coordinates or by name.

        Parameters
        ----------
        body
            Name of the body (or ``"ground"``).
        point
            3 numbers, or the name of one of the body's ``points``.
        owner
            Who asks (the element's name), for the error messages.
        """
        if not isinstance(point, str):
            return as_vector(point, f"{owner}: point")
        if body not in self._tree.index:
            known = [b.name for b, _, _ in self._entries]
            raise ValueError(f"{owner}: unknown body {body!r}; bodies: {known} or 'ground'")
        try:
            return self.point(body, point).reference
        except ValueError as err:
            raise ValueError(f"{owner}: {err}") from err

    def registered_points(self) -> tuple[np.ndarray, np.ndarray]:
        """(body indices (P,), reference coordinates (P, 3)) of the points registered by the
        force elements (:meth:`register_point`), in the order of their indices (kept)."""
        if self._point_cache is None:
            idx = np.array([self._tree.index[b] for b, _ in self._points], dtype=int)
            X = np.array([X for _, X in self._points], dtype=float).reshape(-1, 3)
            self._point_cache = (idx, X)
        return self._point_cache

    # ------------------------------------------------------------ evaluation core
    def _batch(self, q, qd=None):
        n = self.n
        q = np.asarray(q)
        single = q.ndim == 1
        q = np.atleast_2d(q)
        if q.shape[-1] != n:
            raise ValueError(f"q must have {n} entries {list(self.coordinate_names)}, got shape {np.shape(q)}")
        if qd is not None:
            qd = np.broadcast_to(np.asarray(qd), q.shape) if np.ndim(qd) <= q.ndim else np.asarray(qd)
            if qd.shape != q.shape:
                raise ValueError(f"qd must have the shape of q {q.shape}, got {qd.shape}")
        return q, qd, single

    def kinematics(self, q, t: float = 0.0, qd=None) -> Kinematics:
        """Poses and joint twists at q (shape (n,) or (B, n)) and time t."""
        q, qd, _ = self._batch(q, qd)
        return Kinematics(self.tree, q, t, qd)

    def context(self, q, qd, t) -> ForceContext:
        """The context force elements see at a batch of states (see :class:`~skfiber.rigid.context.ForceContext`).

        Parameters
        ----------
        q
            Coordinates (B, n), real or complex.
        qd
            Velocities (B, n) or None.
        t
            Time: a number (the prescribed motion is then kept by the :meth:`plan`), or (B,) times.
        """
        plan = self.plan()
        motion = plan.motion(t) if isinstance(t, (float, int)) and math.isfinite(t) else None  # kept per t
        return ForceContext(self, Kinematics(plan.tree, q, t, qd, motion=motion), q, qd, t)

    def inertia_terms(self, ctx: ForceContext, *, rates: bool = True, frozen: bool = False):
        """M (B, n, n) and, with rates, h (B, n) at the context's state (frozen: relative motion only).

        One compiled pass (:func:`.kernels.inertia_terms`); the centers of mass
        and their twists it computes on the way are kept on ``ctx`` for gravity
        (:meth:`~skfiber.rigid.context.ForceContext.remember_com`).

        Parameters
        ----------
        ctx
            The context (:meth:`context`).
        rates
            Also compute h (else it is None and q̇ is not read).
        frozen
            The velocity terms of the motion relative to the prescribed joints (time frozen).

        Returns
        -------
        M, h
            (B, n, n) and (B, n) or None.
        """
        kin, tree = ctx.kin, ctx.kin.tree
        if not rates:
            zd = np.zeros((ctx.B, len(tree.kind)), kin.dtype)
        elif frozen:
            zd = kin.rates(ctx.qd, frozen=True)
        else:
            zd = kin.zeta_rate
        if zd.dtype != kin.dtype:  # pragma: no cover - Kinematics includes q̇ in its dtype
            raise TypeError(f"rates of dtype {zd.dtype} with kinematics of dtype {kin.dtype}")
        M, h, xS, S = compiled_inertia_terms(kin.R, kin.p, kin.omega, kin.origin, kin.velocity, kin.own_angular,
                                             kin.own_linear, zd, not frozen, rates, tree.path, tree.upstream,
                                             tree.tables.prescribed, tree.tables.q_joints, tree.mass, tree.com,
                                             tree.inertia)
        ctx.remember_com(xS, S)
        return M, (h if rates else None)

    def element_forces(self, ctx: ForceContext, elements=None) -> dict:
        """{name: Q_e (B, n)} of the force elements at the context's state.

        Parameters
        ----------
        ctx
            The context (:meth:`context`).
        elements
            The elements to evaluate (default: all, gravity first).

        Raises
        ------
        ValueError
            If an element returns an array of the wrong shape.
        """
        out = {}
        for element in self._bound if elements is None else elements:
            Q = np.asarray(element.force(ctx))
            if Q.shape != (ctx.B, ctx.n):
                raise ValueError(f"force element {element.name!r} returned shape {Q.shape}, expected {(ctx.B, ctx.n)}")
            out[element.name] = Q
        return out

    def _out(self, value, single):
        return value[0] if single else value

    # ------------------------------------------------------------ dynamics
    def mass_matrix(self, q, t: float = 0.0) -> np.ndarray:
        """M(q, t) (n, n) (symmetric positive definite)."""
        q, _, single = self._batch(q)
        return self._out(self.inertia_terms(self.context(q, None, t), rates=False)[0], single)

    def velocity_terms(self, q, qd, t: float = 0.0) -> np.ndarray:
        """h(q, q̇, t): Coriolis, centrifugal, gyroscopic and base-motion (transport) terms, so that M q̈ + h = Q."""
        q, qd, single = self._batch(q, qd)
        return self._out(self.inertia_terms(self.context(q, qd, t))[1], single)

    def inertial_force(self, q, qd, qdd, t: float = 0.0) -> np.ndarray:
        """M q̈ + h = d/dt ∂T/∂q̇ − ∂T/∂q."""
        q, qd, single = self._batch(q, qd)
        M, h = self.inertia_terms(self.context(q, qd, t))
        return self._out(np.einsum("xkl,xl->xk", M, np.broadcast_to(qdd, q.shape)) + h, single)

    def force_contributions(self, q, qd, t: float = 0.0) -> dict[str, np.ndarray]:
        """Generalized force Q_e(q, q̇, t) of each element (gravity, springs, dampers, loads)."""
        q, qd, single = self._batch(q, qd)
        return {k: self._out(v, single) for k, v in self.element_forces(self.context(q, qd, t)).items()}

    def generalized_forces(self, q, qd, t: float = 0.0) -> np.ndarray:
        """Q(q, q̇, t) = Σ_e Q_e."""
        parts = self.force_contributions(q, qd, t)
        q = np.asarray(q)
        return sum(parts.values(), np.zeros(q.shape, np.result_type(q, float)))

    def accelerations(self, q, qd, t: float = 0.0) -> np.ndarray:
        """q̈ = M⁻¹ (Q − h) (for explicit ODE solvers, e.g. a reference solution)."""
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        M, h = self.inertia_terms(ctx)
        Q = sum(self.element_forces(ctx).values(), np.zeros_like(h))
        return self._out(np.linalg.solve(M, (Q - h)[..., None])[..., 0], single)

    def residual(self, q, qd, qdd, t: float = 0.0) -> np.ndarray:
        """Residual of the equations of motion M q̈ + h − Q."""
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        M, h = self.inertia_terms(ctx)
        Q = sum(self.element_forces(ctx).values(), np.zeros_like(h))
        return self._out(np.einsum("xkl,xl->xk", M, np.broadcast_to(qdd, q.shape)) + h - Q, single)

    # ------------------------------------------------------------ derivatives
    def force_derivatives(self, q, qd, t: float = 0.0):
        """(Q, ∂Q/∂q, ∂Q/∂q̇) at one state (complex step on the analytic expressions)."""
        q, qd = self._state(q, qd)

        def Q(qq, vv):
            ctx = self.context(qq, vv, t)
            return sum(self.element_forces(ctx).values(), np.zeros(qq.shape, complex))

        value, dQ_dq = complex_jacobian(lambda Z: Q(Z, np.broadcast_to(qd, Z.shape)), q)
        _, dQ_dqd = complex_jacobian(lambda Z: Q(np.broadcast_to(q, Z.shape), Z), qd)
        return value, dQ_dq, dQ_dqd

    def inertia_derivatives(self, q, qd, qdd, t: float = 0.0):
        """(F, ∂F/∂q, ∂F/∂q̇, M) of the inertial force F = M(q, t) q̈ + h(q, q̇, t) (complex step)."""
        q, qd = self._state(q, qd)
        qdd = self._state(qdd)[0]

        def F(qq, vv):
            M, h = self.inertia_terms(self.context(qq, vv, t))
            return np.einsum("xkl,l->xk", M, qdd) + h

        value, dF_dq = complex_jacobian(lambda Z: F(Z, np.broadcast_to(qd, Z.shape)), q)
        _, dF_dqd = complex_jacobian(lambda Z: F(np.broadcast_to(q, Z.shape), Z), qd)
        return value, dF_dq, dF_dqd, self.mass_matrix(q, t)

    def _state(self, *arrays):
        out = []
        for a in arrays:
            a = np.asarray(a, dtype=float)
            if a.shape != (self.n,):
                raise ValueError(f"expected {self.n} values {list(self.coordinate_names)}, got shape {a.shape}")
            out.append(a)
        return out

    def mass_matrix_derivatives(self, q, t: float = 0.0):
        """(∂M/∂q (n, n, n) with [i] = ∂M/∂q_i, ∂M/∂t (n, n)), analytic."""
        q, _, _ = self._batch(np.asarray(q, float))
        ctx = self.context(q, None, t)
        dM = self._mass_derivatives(ctx)[0]
        tree = self.tree
        return dM[tree.q_joints], dM[tree.tau_joints].sum(axis=0)  # ∂M/∂t is zero unless tree.mass_depends_on_time

    def _mass_derivatives(self, ctx):
        """∂M/∂ζ_j for every moving joint j → (B, nz, n, n)."""
        kin, tree = ctx.kin, ctx.kin.tree
        nb = tree.n_bodies
        bodies = np.arange(nb)
        xS, S = ctx.com()
        qj = tree.q_joints
        JS = S[:, :, qj]                                          # (B, nb, n, 3)
        HS = kin.second_derivatives(bodies, xS, S)[:, :, :, qj]   # (B, nb, nz, n, 3)
        Jw = kin.angular_jacobian()[:, :, qj]                     # (B, nb, n, 3)
        Aw = kin.angular_second_derivatives()[:, :, qj]           # (B, nz, n, 3)
        dJw = Aw[:, None] * tree.path[:nb][None, :, None, qj, None]  # (B, nb, nz, n, 3)
        Rb = kin.R[:, :nb]
        Iw = Rb @ tree.inertia @ np.swapaxes(Rb, -1, -2)
        W = skew(kin.omega)                                       # (B, nz, 3, 3)
        dIw = (np.einsum("xjcd,xbde->xbjce", W, Iw) - np.einsum("xbcd,xjde->xbjce", Iw, W))
        dIw = dIw * tree.path[:nb][None, :, :, None, None]
        m = tree.mass
        dM = np.einsum("b,xbjkc,xblc->xjkl", m, HS, JS)
        dM = dM + np.swapaxes(dM, -1, -2)
        A = np.einsum("xbjkc,xbcd,xbld->xjkl", dJw, Iw, Jw)
        dM = dM + A + np.swapaxes(A, -1, -2) + np.einsum("xbkc,xbjcd,xbld->xjkl", Jw, dIw, Jw)
        return dM

    # ------------------------------------------------------------ energies and powers
    def kinetic_energy(self, q, qd, t: float = 0.0) -> float:
        """Absolute kinetic energy T(q, q̇, t) (includes the motion of a prescribed base)."""
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        tree, kin = self.tree, ctx.kin
        nb = tree.n_bodies
        xS, S = ctx.com()
        vS = np.einsum("xbkc,xk->xbc", S, kin.zeta_rate)
        w = np.einsum("xbkc,xk->xbc", kin.angular_jacobian(), kin.zeta_rate)
        Rb = kin.R[:, :nb]
        Iw = Rb @ tree.inertia @ np.swapaxes(Rb, -1, -2)
        T = 0.5 * np.einsum("b,xbc,xbc->x", tree.mass, vS, vS) + 0.5 * np.einsum("xbc,xbcd,xbd->x", w, Iw, w)
        return self._out(T, single)

    def relative_kinetic_energy(self, q, qd, t: float = 0.0) -> float:
        """T₂ = ½ q̇ᵀ M q̇: kinetic energy relative to the prescribed motion (multibody paper eq. 49)."""
        q, qd, single = self._batch(q, qd)
        M = self.inertia_terms(self.context(q, None, t), rates=False)[0]
        return self._out(0.5 * np.einsum("xk,xkl,xl->x", qd, M, qd), single)

    def potential_energies(self, q, t: float = 0.0) -> dict[str, float]:
        """Potential energy of each conservative element (gravity, springs)."""
        q, _, single = self._batch(q)
        ctx = self.context(q, np.zeros_like(q), t)
        return {e.name: self._out(e.energy(ctx), single) for e in self._bound if hasattr(e, "energy")}

    def potential_energy(self, q, t: float = 0.0) -> float:
        """V(q, t) = Σ of :meth:`potential_energies`."""
        return sum(self.potential_energies(q, t).values(), 0.0)

    def dissipation_function(self, q, qd, t: float = 0.0) -> float:
        """Rayleigh dissipation function (Σ of the dampers' ∫ f_c) at (q, q̇, t)."""
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        return self._out(sum((e.dissipation(ctx) for e in self._bound if hasattr(e, "dissipation")), np.zeros(len(q))), single)

    def transport_force(self, q, qd, t: float = 0.0) -> np.ndarray:
        """Q* = h_rel − h: the inertia forces of the prescribed motion (multibody paper eq. 50, Q* = −γ).

        h_rel are the velocity terms of the motion relative to the
        prescribed joints (time frozen).  With a prescribed joint inside the
        tree, M depends on t; its power is in :meth:`powers`.
        """
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        h = self.inertia_terms(ctx)[1]
        h_rel = self.inertia_terms(ctx, frozen=True)[1]
        return self._out(h_rel - h, single)

    def powers(self, q, qd, t: float = 0.0) -> dict[str, float]:
        """Power q̇ᵀ Q_e of every element and of the transport terms; they sum to dT₂/dt.

        Multibody paper eqs. 51–54: dT₂/dt = q̇ᵀ (Q + Q*) + ½ q̇ᵀ ∂M/∂t q̇ along
        solutions; the last two terms are reported as ``"transport"``.
        """
        q, qd, single = self._batch(q, qd)
        ctx = self.context(q, qd, t)
        out = {k: np.einsum("xk,xk->x", qd, v) for k, v in self.element_forces(ctx).items()}
        h = self.inertia_terms(ctx)[1]
        h_rel = self.inertia_terms(ctx, frozen=True)[1]
        transport = np.einsum("xk,xk->x", qd, h_rel - h)
        if self.tree.mass_depends_on_time:
            dM = self._mass_derivatives(ctx)[:, self.tree.tau_joints].sum(axis=1)
            transport = transport + 0.5 * np.einsum("xk,xkl,xl->x", qd, dM, qd)
        out["transport"] = transport
        return {k: self._out(v, single) for k, v in out.items()}

    # ------------------------------------------------------------ poses, points and cylinders
    def pose(self, body: str, q, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(R, p) of ``body`` at (q, t): a reference point X is at R X + p."""
        b = self.body_index(body)
        q, _, _ = self._batch(q)
        kin = Kinematics(self.tree, q, t)
        return kin.R[0, b], kin.p[0, b]

    def poses(self, q, t: float = 0.0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """(R, p) of every body at (q, t)."""
        q, _, _ = self._batch(q)
        kin = Kinematics(self.tree, q, t)
        return {b.name: (kin.R[0, i], kin.p[0, i]) for i, b in enumerate(self.tree.bodies)}

    def point(self, body: str, point: Sequence[float] | str):
        """A body-fixed point: reference coordinates or the name of one of the body's ``points``.

        Returns a :class:`~skfiber.rigid.BodyPoint` with c(q, t), C = ∂c/∂q, ∂C/∂q, ….
        """
        return BodyPoint(self, body, point)

    def cylinder(self, body: str):
        """The cylinder of ``body``: its pose and the q-derivatives (see :class:`BodyCylinder`)."""
        return BodyCylinder(self, body)
