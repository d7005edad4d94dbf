"""Fibers coupled to rigid bodies (paper §3.2, eqs. 49, 54, 58–64).

A fiber end attached to a body point X (``Model.attach``) has the dependent
position DOFs u_D = c(q, t) = ĉ(q, t) − X (eq. 54c); its slope stays free.
With δu_D = C δq (eq. 59) the virtual work of the fibers, the bodies and the
contacts splits into the rows of the independent fiber DOFs u_I and of q:

    G_I(u(z), pose(q))                                                  = 0
    R_rb(q) + C(q)ᵀ G_D(u(z), pose(q)) + Σ_cyl Jp(q)ᵀ R_pose(u(z), pose(q)) = 0

with z = (u_I, q), G the fiber residual (inertia + internal + contact −
external), R_rb the rigid residual M q̈ + h − Q (backward Euler:
:func:`skfiber.rigid.rigid_step`), and for contact cylinders on bodies the
reaction R_pose (:meth:`~skfiber.contact.CylinderContact.body_load`)
chained with the pose Jacobian Jp = ∂(y0, a)/∂q.  Eliminating u_D is the
paper's eqs. 58–63; the Lagrange multiplier (the coupling force, eq. 62) is
−G_D, the force the fiber exerts on the body, reported by
:meth:`skfiber.Model.attachment_forces`.

The consistent tangent (W = dG/dq = K X_D + Gp Jp, X_D = ∂u/∂q: C on the
rows D, Gp = ∂G/∂pose):

    ∂G_I/∂u_I = K_II                 ∂G_I/∂q = W_I
    ∂R_q/∂u_I = X_Dᵀ K_{:,I} + Jpᵀ ∂R_pose/∂u_I
    ∂R_q/∂q  = dR_rb/dq + X_Dᵀ W + Σ_a G_D,a ∂²c_a/∂q² + Jpᵀ (∂R_pose/∂u X_D + ∂R_pose/∂pose Jp)
               + Σ_i R_pose,i ∂²pose_i/∂q²

In backward Euler the velocity of an attached end comes from its positions,
v_D = (c(q⁺) − c(qₙ))/Δt (the fiber's own scheme), so K (with c_v, c_a) is
the whole fiber part.  The linear system is solved by block elimination:
the fiber block K_II (banded LAPACK, or SuperLU when contact widens the
band) with the n + 1 right-hand sides [−G_I, W_I], then the n × n Schur
complement for Δq — q adds no fill to the fiber matrix.

Examples
--------
A fiber hanging from the ground carries a pendulum:

>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.rigid import Body, Revolute, RigidSystem
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> fiber = sf.Fiber.straight((0.5, 0, 0.3), (0.5, 0, 0), n_elements=4, radius=0.005,
...                           law=sf.passive_kelvin_voigt(mu_muscle=1e6, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3))
>>> model = sf.Model([fiber], rigid=system)
>>> model.fix(fiber, "start")
>>> model.attach(fiber, "end", "rod").name
'0.end'
>>> result = sf.simulate(model, t_end=0.05, dt=0.01, progress=False)
>>> result.coordinates.shape
(6, 1)
"""
from __future__ import annotations

import numpy as np

from .attachments import Attachment, AttachmentKinematics, attachment_kinematics
from .core import Evaluation
from .coupled_kernels import (back_substitute, coupled_chain_rule, coupled_rows, dependent_increment, schur_solve,
                              scatter_dependent, stacked_pose_terms)
from .coupling_fast import FastCoupling
from .linalg import ConstrainedSolver
from .rigid import Cylinder, CylinderPose, evaluate_points

__all__ = ["Attachment", "AttachmentKinematics", "attachment_kinematics", "CoupledProblem", "CoupledEvaluation",
           "body_cylinders"]


def body_cylinders(model):
    """``bodies(state)`` for :class:`skfiber.io.VTKSeries` / ``run_simulation``: the
    bodies of the model's rigid system as cylinders at the state's q (VTK output),
    each with the current points of the fiber attachments on it (drawn as levers
    from the bone's axis to the fiber ends).

    Examples
    --------
    >>> import skfiber as sf
    >>> from skfiber.rigid import Body, Revolute, RigidSystem
    >>> system = RigidSystem()
    >>> system.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -0.3), radius=0.03, mass=1.0),
    ...                 joint=Revolute(axis=(0, 1, 0))) and None
    >>> model = sf.Model([sf.Fiber.straight((0.1, 0, 0), (0.1, 0, -0.3), n_elements=2)], rigid=system)
    >>> [c.name for c in body_cylinders(model)(model.initial_state())]
    ['arm']
    """
    if model.rigid is None:
        raise ValueError("the model has no rigid system (Model(fibers, rigid=system))")
    system = model.rigid

    def bodies(state):
        attached = model.attachments
        where = np.zeros((0, 3))
        if attached:  # their current positions, c(q, t) of paper eq. 54c
            where = np.array([a.point.reference for a in attached]) + attachment_kinematics(
                model, state.q, state.t, hessian=False).displacement.reshape(-1, 3)
        on_body = np.array([a.body for a in attached], dtype=object)
        out = []
        for b in system.bodies:
            pose = system.cylinder(b.name).pose(state.q, state.t, hessian=False)
            out.append(Cylinder(pose.start, pose.axis, b.radius, b.name, attachment_points=where[on_body == b.name]))
        return out

    return bodies


_ALL = np.zeros(0, dtype=np.int64)  # "all entries in order" for scatter_dependent


class CoupledEvaluation(Evaluation):
    """Residual of the coupled system on z = (u, q) and what the block solve needs."""

    def __init__(self, residual, *, fiber, blocks, reference_force, roundoff):
        super().__init__(residual, lambda: None, reference_force=reference_force, min_stretch=fiber.min_stretch,
                         roundoff=roundoff, n_active_contacts=fiber.n_active_contacts, margins=fiber.margins)
        self.fiber = fiber
        self.blocks = blocks

    @property
    def element_matrices(self):  # the fiber tangent (the coupled solve uses the blocks)
        return self.fiber.element_matrices


class CoupledProblem:
    """Newton's problem on z = (u, q) for a model with a rigid system.

    The u_D entries of z are not unknowns: :meth:`expand` overwrites them
    with c(q, t).  ``fixed`` marks the entries Newton does not solve for
    (prescribed and dependent fiber DOFs); :meth:`solve_newton` returns the
    increment with Δu_D = C Δq (the linearized motion of the ends, used by
    the safeguard).

    Parameters
    ----------
    model
        A :class:`skfiber.Model` created with ``rigid=``.
    fast
        Evaluate and solve straight on the compiled kernels when every part of
        the model has one (:class:`skfiber.coupling_fast.FastCoupling`: the
        same numbers, less Python); False: always through the model's objects.
    """

    def __init__(self, model, *, fast: bool = True):
        if model.rigid is None:
            raise ValueError("CoupledProblem needs a model with a rigid system (Model(fibers, rigid=system))")
        self.model = model
        self.system = model.rigid
        self.N = model.n_dofs
        self.n = model.rigid.n
        asm = model.discretization.assembler
        self.D = model.dependent_dofs
        self.fiber_solver = ConstrainedSolver(asm, np.concatenate([model.constrained_dofs, self.D]).astype(int))
        self.fixed = np.concatenate([self.fiber_solver.fixed, np.zeros(self.n, dtype=bool)])
        self.body_contacts = [c for c in model.contacts if getattr(c, "body", None) is not None]
        is_D = np.zeros(self.N, dtype=bool)
        is_D[self.D] = True
        self._is_D = is_D
        self.fixed_index = np.flatnonzero(self.fiber_solver.fixed)
        self._dependent_index(asm.element_dofs.T)
        self._kin_memo = None
        self._points = None
        self.end_margins = None  # contact margins of the last converged step (skfiber.solver)

        self._fast = FastCoupling(self) if fast and FastCoupling.supports(model) else None

    # ------------------------------------------------------------------ state
    @property
    def krylov_iterations(self) -> int:
        """GMRES iterations of all Newton increments so far (fibers in touch with each other on the fast
        path; 0 otherwise)."""
        return 0 if self._fast is None else self._fast.krylov_iterations

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return z[:self.N], z[self.N:]

    def expand(self, z: np.ndarray, t: float, *, hessian: bool = False, kinematics: bool = True):
        """(u with u_D = c(q, t), q, attachment kinematics (None with ``kinematics=False``))."""
        q = np.asarray(z[self.N:], dtype=float)
        if not kinematics and self._fast is not None and len(self.model.attachments):
            u = self._fast.expanded(np.ascontiguousarray(z, dtype=float), float(t))  # Newton's last evaluation
            if u is None:
                u = z[:self.N].copy()
                u[self.D] = self._fast.displacement(np.ascontiguousarray(q), t)
            return u, q, None
        u = z[:self.N].copy()
        kin, _ = self.kinematics(q, t)
        u[self.D] = kin.displacement
        return u, q, kin

    def point_layout(self):
        """(body indices (P + 2c,), reference points (P + 2c, 3)): the attachment points, then the start
        and end of each contact cylinder on a body (fixed once the problem is made)."""
        if self._points is None:
            atts = self.model.attachments
            names = [a.body for a in atts]
            points = [a.point.reference for a in atts]
            for c in self.body_contacts:
                b = self.system.body(c.body)
                names += [b.name, b.name]
                points += [b.start, b.end]
            index = self.system.tree.index
            self._points = (np.array([index[name] for name in names], dtype=np.int64),
                            np.array(points, dtype=float).reshape(-1, 3))
        return self._points

    def kinematics(self, q: np.ndarray, t: float):
        """Attachment kinematics and the poses of the contact cylinders on bodies at (q, t).

        All body points in one batched evaluation (the last one is kept: the
        residual, the safeguard and the tangent ask for the same (q, t)).
        The contact cylinders are set to these poses.
        """
        return self._kinematics(q, t)[:2]

    def _kinematics(self, q: np.ndarray, t: float):
        """(attachment kinematics, cylinder poses, [(Jp (6, n), Hp (6, n, n)) per cylinder]) at (q, t), memoized.

        Jp = ∂(y0, a)/∂q and Hp = ∂²(y0, a)/∂q² of each contact cylinder on a body (start y0, axis a).
        """
        key = (q.tobytes(), float(t))
        if self._kin_memo is not None and self._kin_memo[0] == key:
            return self._kin_memo[1]
        bodies, points = self.point_layout()
        n, P = self.n, len(self.model.attachments)
        if not len(bodies):
            out = (AttachmentKinematics(np.zeros(0), np.zeros((0, n)), np.zeros((0, n, n))), [], [])
        else:
            pk = evaluate_points(self.system, bodies, points, q, t, hessian=True)
            kin = AttachmentKinematics((pk.position[:P] - points[:P]).reshape(-1),
                                       pk.jacobian[:P].reshape(3 * P, n), pk.hessian[:P].reshape(3 * P, n, n))
            x, C, H, x_t = pk.position, pk.jacobian, pk.hessian, pk.dt
            for v in (x, C, H, x_t):  # the end points of the cylinders → their axes a = end − start
                v[P + 1::2] -= v[P::2]
            poses, jets = [], []
            for i, c in enumerate(self.body_contacts):
                j = P + 2 * i
                pose = CylinderPose(start=x[j], axis=x[j + 1], radius=c.radius,
                                    start_jacobian=C[j], axis_jacobian=C[j + 1],
                                    start_hessian=H[j], axis_hessian=H[j + 1],
                                    start_dt=x_t[j], axis_dt=x_t[j + 1])
                c.set_coordinates(q)
                c.cache_body_pose(q, t, pose.start, pose.axis)
                poses.append(pose)
                jets.append((C[j:j + 2].reshape(6, n), H[j:j + 2].reshape(6, n, n)))  # rows (y0, a)
            out = (kin, poses, jets)
        self._kin_memo = (key, out)
        return out

    # ------------------------------------------------------------------ residual
    def evaluate(self, z: np.ndarray, t: float, *, fiber_state, rigid_state,
                 load_factor: float = 1.0) -> CoupledEvaluation:
        """Residual (and blocks of the tangent) at z.

        ``fiber_state(u) -> (v, a, c_v, c_a)`` gives the fiber velocity and
        acceleration of the time scheme; ``rigid_state(q) ->`` a
        :class:`skfiber.rigid.RigidStep`-like object (residual R_rb,
        tangent dR_rb/dq, reference_force).  ``load_factor`` scales the
        external fiber loads (static load stepping).
        """
        if self._fast is not None:
            return self._fast.evaluate(z, t, fiber_state=fiber_state, rigid_state=rigid_state, load_factor=load_factor)
        return self.evaluate_general(z, t, fiber_state=fiber_state, rigid_state=rigid_state, load_factor=load_factor)

    def evaluate_general(self, z: np.ndarray, t: float, *, fiber_state, rigid_state,
                          load_factor: float = 1.0) -> CoupledEvaluation:
        """:meth:`evaluate` through the model's objects (the definition)."""
        model = self.model
        N = self.N
        q = np.array(z[N:], dtype=float)
        kin, _, jets = self._kinematics(q, t)
        u = z[:N].copy()
        u[self.D] = kin.displacement
        model.set_coordinates(q)
        v, a, c_v, c_a = fiber_state(u)
        ev = model.evaluate(u, v, a, t, c_v=c_v, c_a=c_a, load_factor=load_factor)
        rs = rigid_state(q)
        n, P = self.n, len(self.D) // 3
        pose_terms = []
        for contact, (Jp, Hp) in zip(self.body_contacts, jets):  # Jp (6, n), Hp (6, n, n)
            load = contact.body_load(model, u, t, tangent=False)  # derivatives on demand (tangent_blocks)
            pose_terms.append((contact, Jp, Hp, load))
        # ∂c/∂q of the attachments (P, 3, n) and of the poses (y0, a) of the cylinders on bodies (2, 3, n) each
        C = np.concatenate([np.reshape(kin.jacobian, (P, 3, n))] + [np.reshape(Jp, (2, 3, n)) for _, Jp, _, _
                                                                      in pose_terms]).astype(float)
        forces = np.array([load.force for *_, load in pose_terms], dtype=float).reshape(len(pose_terms), 6)
        residual, body_force = coupled_rows(np.ascontiguousarray(ev.residual, dtype=float),
                                            np.ascontiguousarray(rs.residual, dtype=float), C, self.D, P, forces,
                                            self.fixed_index)
        ref = max(ev.reference_force, rs.reference_force, body_force)
        blocks = dict(u=u, q=q, kin=kin, rigid=rs, pose_terms=pose_terms, t=t)
        return CoupledEvaluation(residual, fiber=ev, blocks=blocks, reference_force=ref, roundoff=ev.roundoff)

    # ------------------------------------------------------------------ tangent
    def _dependent_index(self, edofs: np.ndarray) -> None:
        """The entries of the element matrices in a row or a column of a dependent DOF (built once).

        ``touch_entries`` = (flat index into the element matrices, global row, global column) of every
        entry (e, i, j) of an element that touches a dependent DOF; ``dependent_rows`` the position of each
        DOF in D (−1 if not dependent).
        """
        pos = -np.ones(self.N, dtype=np.int64)
        pos[self.D] = np.arange(len(self.D))
        self.dependent_rows = pos
        nb = edofs.shape[1]
        touch = np.flatnonzero(self._is_D[edofs].any(axis=1))
        e, i, j = (a.ravel() for a in np.meshgrid(touch, np.arange(nb), np.arange(nb), indexing="ij"))
        row, col = edofs[e, i], edofs[e, j]
        keep = self._is_D[row] | self._is_D[col]
        self.touch_entries = tuple(np.ascontiguousarray(a[keep], dtype=np.int64)
                                    for a in ((e * nb + i) * nb + j, row, col))

    def _dependent_products(self, ev, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(K X (N, n), Xᵀ K (n, N)) for the fiber tangent K and X = ∂u/∂q (C on the rows D, zero elsewhere).

        Only the entries of K in the rows and columns D contribute: one compiled pass over those of the
        touching elements and over the extra blocks (:func:`scatter_dependent`).
        """
        KX = np.zeros((self.N, self.n))
        XK = np.zeros((self.n, self.N))
        C = np.ascontiguousarray(C, dtype=float)
        flat, rows, cols = self.touch_entries
        scatter_dependent(ev.element_matrices.reshape(-1), flat, rows, cols, self.dependent_rows, C, KX, XK)
        for r, c, vals in ev.extra:
            scatter_dependent(vals, _ALL, r, c, self.dependent_rows, C, KX, XK)
        return KX, XK

    def tangent_blocks(self, cev: CoupledEvaluation):
        """(W = ∂G/∂q (N, n), ∂R_q/∂u (n, N), ∂R_q/∂q (n, n)) of the coupled tangent."""
        if getattr(cev, "fast", None) is not None:  # a FastEvaluation
            return self._fast.tangent_blocks(cev)
        b = cev.blocks
        ev = cev.fiber
        kin, n, D = b["kin"], self.n, self.D
        C = np.ascontiguousarray(kin.jacobian, dtype=float)  # X = ∂u/∂q is C on the rows D and zero elsewhere
        W, Rq_u = self._dependent_products(ev, C)
        if b["pose_terms"]:
            self.kinematics(b["q"], b["t"])
            self.model.set_coordinates(b["q"])  # the body cylinders where this evaluation saw them
        jets, forces, derivatives = [], [], []
        for contact, Jp, Hp, load in b["pose_terms"]:
            load = contact.body_load(self.model, b["u"], b["t"], tangent=True)
            Gp = contact.pose_derivative(self.model, b["u"], b["t"])  # (N, 6)
            jets.append((Jp, Hp))
            forces.append(load.force)
            # ∂R_pose/∂u is nonzero on the few columns (k,) only
            derivatives.append((Gp, load.columns, load.d_u_values, load.d_pose))
        Rq_q = coupled_chain_rule(W, Rq_u, np.ascontiguousarray(b["rigid"].tangent, dtype=float), C,
                                  np.ascontiguousarray(kin.hessian, dtype=float).reshape(len(D), n, n),
                                  np.ascontiguousarray(ev.residual, dtype=float), D, self.dependent_rows,
                                  *stacked_pose_terms(self.N, n, jets, forces, derivatives))
        return W, Rq_u, Rq_q

    def tangent_matrix(self, cev: CoupledEvaluation) -> np.ndarray:
        """The whole coupled tangent ∂residual/∂z as a dense matrix (for checks and small problems).

        Rows and columns of the fixed entries (prescribed and dependent
        fiber DOFs) are zero.
        """
        free = np.concatenate([~self.fiber_solver.fixed, np.ones(self.n, dtype=bool)])
        W, Rq_u, Rq_q = self.tangent_blocks(cev)
        K = self.model.tangent_matrix(cev.fiber).toarray()
        T = np.block([[K, W], [Rq_u, Rq_q]])
        T[~free] = 0.0
        T[:, ~free] = 0.0
        return T

    def solve_newton(self, cev: CoupledEvaluation, *, linear_tolerance: float = 0.0) -> np.ndarray:
        """The Newton increment Δz (block elimination of Δu_I, Schur complement for Δq).

        ``linear_tolerance`` is the residual of the linear system the solve may leave (absolute, in the
        norm of Newton's residual; 0: to round-off).  Only GMRES uses it (the fast path with fibers in
        touch with each other, :mod:`skfiber.coupled_krylov`); the direct solves are exact.
        """
        if getattr(cev, "fast", None) is not None:  # a FastEvaluation
            return self._fast.solve_newton(cev, linear_tolerance=linear_tolerance)
        return self.solve_blocks(cev)

    def solve_blocks(self, cev) -> np.ndarray:
        """:meth:`solve_newton` with the fiber solver (band or sparse LU, for any evaluation of this problem), then
        the Schur complement's step that the compiled path takes too (:func:`~skfiber.coupled_kernels.schur_solve`,
        :func:`~skfiber.coupled_kernels.back_substitute`, :func:`~skfiber.coupled_kernels.dependent_increment`)."""
        N, n = self.N, self.n
        G, R_q = cev.residual[:N], cev.residual[N:]
        W, Rq_u, Rq_q = self.tangent_blocks(cev)
        rhs = np.empty((N, n + 1))
        rhs[:, 0] = -G
        rhs[:, 1:] = W
        sol = self.fiber_solver.solve(cev.fiber.element_matrices, rhs, cev.fiber.extra)  # [x0, Y] = K_II⁻¹ [−G, W]
        sol[self.fixed_index] = 0.0  # (the solver's identity rows give 0 there already)
        dq, S, regular = schur_solve(sol, np.ascontiguousarray(Rq_u, dtype=float),
                                     np.ascontiguousarray(Rq_q, dtype=float), np.ascontiguousarray(R_q, dtype=float))
        if not regular:
            raise np.linalg.LinAlgError(f"singular Schur complement of the rigid coordinates ({S[0, 0]})")
        dz = np.zeros(N + n)
        back_substitute(sol, dq, dz)
        dependent_increment(dz, np.ascontiguousarray(cev.blocks["kin"].jacobian, dtype=float), self.D, dq)
        return dz

    # ------------------------------------------------------------------ safeguard
    def max_step(self, z: np.ndarray, dz: np.ndarray, t: float, *, delta_bar: float) -> float:
        """Safeguard (eqs. 69–73) for Δz; body cylinders move with Jp Δq (linearized)."""
        if self._fast is not None:
            return self._fast.max_step(z, dz, t, delta_bar=delta_bar)
        model = self.model
        u, q, _ = self.expand(z, t)
        _, poses = self.kinematics(q, t)
        model.set_coordinates(q)
        pose_of = {id(c): p for c, p in zip(self.body_contacts, poses)}
        du, dq = dz[:self.N], dz[self.N:]
        delta = 1.0
        for contact in model.contacts:
            if id(contact) in pose_of:
                pose = pose_of[id(contact)]
                step = (pose.start_jacobian @ dq, pose.axis_jacobian @ dq)
                d = contact.max_step(model, u, du, t, delta_bar=delta_bar, pose_step=step)
            else:
                d = contact.max_step(model, u, du, t, delta_bar=delta_bar)
            delta = min(delta, float(d))
        return delta
