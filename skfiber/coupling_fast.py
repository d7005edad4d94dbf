"""The coupled residual and Newton increment straight on the compiled kernels.

:class:`~skfiber.coupling.CoupledProblem` evaluates the coupled system
through the model's objects: :meth:`Model.evaluate <skfiber.Model.evaluate>`,
each contact's ``evaluate``, ``body_load`` and ``pose_derivative`` (with
their memos keyed on the state), the attachment kinematics.  That is the
general path, and the definition.  For the few hundred DOFs of the upper-limb
demo its Python costs more than the arithmetic (docs/performance.md), so for
models whose parts all have kernels this module computes the same numbers
with the layers removed:

* the fibers through :meth:`Model._fiber_part_compiled` (a compiled model
  without custom terms);
* every contact a :class:`~skfiber.contact.CylinderContact` (fixed, moving
  with ``pose(t)``, or on a body of the model's rigid system): broad phase,
  contact points and their derivatives, one kernel call each
  (:mod:`skfiber.contact.cylinder_kernels`);
* the body points (attachments, ends of the contact cylinders on bodies) in
  one :func:`~skfiber.rigid.kernels.body_point_jets` call.

The kernels and the order of the sums are those of the general path, so the
residuals agree bit for bit and the increments to round-off
(``tests/test_coupling_fast.py``).  An evaluation that the general path would
reject (a non-finite residual, an inadmissible contact point) is redone by the
general path, which raises its error with the diagnosis.
"""
from __future__ import annotations

import math

import numpy as np

from . import cable_kernels
from .contact import cylinder_kernels as ck
from .contact.cylinder import CylinderContact
from .coupled_kernels import OK, coupled_increment
from .coupling import AttachmentKinematics, _scatter_dependent
from .linalg import PIVOT_TOL, RESIDUAL_TOL
from .model import ROUNDOFF_FACTOR, Evaluation
from .rigid.kernels import body_point_jets

__all__ = ["FastCoupling", "FastEvaluation"]

_EPS = float(np.finfo(float).eps)

_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUE = np.zeros(0)


class _Cylinder:
    """What the kernels need of one cylinder contact (fixed for a problem)."""

    def __init__(self, contact: CylinderContact, d, row: int):
        self.contact = contact
        self.name = contact.name
        self.data = contact._kernel_data(d)
        self.elements = np.ascontiguousarray(contact._fiber_elements(d), dtype=np.int64)
        self.radius = float(contact.radius)
        self.length = contact.length
        self.stiffness = float(contact.law.stiffness)
        self.gamma = float(contact.law.gamma)
        self.trial = contact.safeguard == "trial"
        self.n_points = contact.xi.size
        self.row = row  # its start among the body points (−1: not on a body)


class _Contact:
    """One contact at one state: elements in reach and the kernel outputs (None: none in reach)."""

    __slots__ = ("cylinder", "point", "tangent", "axis_norm", "elements", "out", "Jp", "Hp", "_derivatives")

    def __init__(self, cylinder, point, tangent, axis_norm, elements, out, Jp, Hp):
        self.cylinder = cylinder
        self.point, self.tangent, self.axis_norm = point, tangent, axis_norm
        self.elements = elements
        self.out = out
        self.Jp, self.Hp = Jp, Hp
        self._derivatives = None

    @property
    def active(self) -> bool:
        return self.out is not None and self.out[5].size > 0

    def derivatives(self, n_dofs: int):
        """:func:`~skfiber.contact.cylinder_kernels.contact_derivatives` (computed once)."""
        if self._derivatives is None:
            pts, act = self.out[0], self.out[5]
            self._derivatives = ck.contact_derivatives(self.cylinder.data, pts, self.elements, act, self.tangent,
                                                       self.axis_norm, n_dofs)
        return self._derivatives


class FastEvaluation:
    """A coupled evaluation of the fast path: what Newton reads (``residual``, ``reference_force``,
    ``roundoff``, ``min_stretch``, ``margins``, ``n_active_contacts``) and what the solve needs.

    ``fiber`` is the fiber part as a :class:`~skfiber.model.Evaluation` (made on first access: the
    dense tangent of :meth:`CoupledProblem.tangent_matrix` asks for it).
    """

    def __init__(self, residual, *, reference_force, roundoff, min_stretch, margins, n_active_contacts,
                 fiber_residual, law, kinematics, c_v, c_a, kin, rigid_tangent, contacts, fast):
        self.residual = residual
        self.reference_force = reference_force
        self.roundoff = roundoff
        self.min_stretch = min_stretch
        self.margins = margins
        self.n_active_contacts = n_active_contacts
        self.fiber_residual = fiber_residual  # G (N,): inertia + internal + contact − external
        self._law, self._kinematics, self._c = law, kinematics, (c_v, c_a)
        self.kin = kin
        self.rigid_tangent = rigid_tangent
        self.contacts = contacts
        self._element_matrices = None
        self._fiber = None
        self.fast = fast  # the FastCoupling that made it

    @property
    def element_matrices(self) -> np.ndarray:
        """c_a M + ∂(internal force)/∂u per element (e, nb, nb), computed once."""
        if self._element_matrices is None:
            self._element_matrices = self.fast._tangent(self)
        return self._element_matrices

    @property
    def extra(self) -> list:
        """COO triplets of the contact tangents."""
        N = self.fiber_residual.shape[0]
        return [c.derivatives(N)[:3] for c in self.contacts if c.active]

    @property
    def fiber(self) -> Evaluation:
        if self._fiber is None:
            self._fiber = Evaluation(self.fiber_residual, lambda: self.element_matrices,
                                     reference_force=self.reference_force, min_stretch=self.min_stretch,
                                     extra=self.extra, roundoff=self.roundoff,
                                     n_active_contacts=self.n_active_contacts, margins=self.margins)
        return self._fiber

    @property
    def _blocks(self):  # what CoupledProblem.solve_newton reads of an evaluation
        return {"kin": self.kin, "fast": True}


class FastCoupling:
    """The fast path of :meth:`CoupledProblem.evaluate` and :meth:`CoupledProblem.solve_newton`.

    Made by :class:`~skfiber.coupling.CoupledProblem` when :meth:`supports`
    the model; ``CoupledProblem(model, fast=False)`` keeps the general path.
    """

    def __init__(self, problem):
        self.problem = problem
        model = problem.model
        d = model.discretization
        self.model = model
        bodies, points = problem._point_layout()
        self._bodies, self._points = bodies, points
        self._P = len(model.attachments)
        body_contacts = {id(c): i for i, c in enumerate(problem.body_contacts)}
        self._cylinders = [_Cylinder(c, d, self._P + 2 * body_contacts[id(c)] if id(c) in body_contacts else -1)
                           for c in model.contacts]
        if model._jets is None:
            model._jets = cable_kernels.gradient_jets(d.assembler)
        c = np.ascontiguousarray
        self._jets = model._jets
        shape = d.theta.shape
        self._area, self._dx, self._J = (c(np.broadcast_to(np.asarray(a, dtype=float), shape))
                                         for a in (d.area, d.assembler.dx, d.jacobian))
        self._reference = c(d.reference_dofs, dtype=float)
        self._theta, self._muscle = c(d.theta, dtype=float).ravel(), c(d.muscle_fraction, dtype=float).ravel()
        self._mass = c(model._mass_elements, dtype=float)
        self._no_mass = np.zeros((0,) + self._mass.shape[1:])
        self._laws = None  # [(compiled function, point indices, parameters)] once the laws compiled

    @staticmethod
    def supports(model) -> bool:
        """True when every part of ``model`` has a kernel (see the module notes)."""
        if not model.compiled or model.terms:
            return False
        for c in model.contacts:
            if type(c) is not CylinderContact:
                return False
            if c.body is not None and c.system is not model.rigid:
                return False
        return True

    # ------------------------------------------------------------------ residual
    def _stress(self, lam, lamdot, t):
        """S, ∂S/∂λ, ∂S/∂λ̇ (e, q): the laws' compiled functions called directly (Model._stress the first
        time, which compiles them, and for laws without a kernel)."""
        model = self.model
        if self._laws is None:
            out = model._stress(lam, lamdot, t)
            plan = model._law_kernels or []
            if plan and all(k._function is not None for k, _ in plan):
                self._laws = [(k._function, idx, k.params) for k, idx in plan]
            else:
                self._laws = []
            return tuple(np.asarray(v, dtype=float) for v in out)
        if not self._laws:
            return tuple(np.asarray(v, dtype=float) for v in model._stress(lam, lamdot, t))
        S, dS, dR = np.empty_like(lam), np.empty_like(lam), np.empty_like(lam)
        alpha = model.activations(t).ravel()
        lam_, lamdot_, S_, dS_, dR_ = lam.ravel(), lamdot.ravel(), S.ravel(), dS.ravel(), dR.ravel()
        nq = lam.shape[1]
        t = float(t)
        for function, idx, params in self._laws:
            function(lam_, lamdot_, self._theta, t, self._muscle, alpha, nq, idx, params, S_, dS_, dR_)
        return S, dS, dR

    def displacement(self, q: np.ndarray, t: float) -> np.ndarray:
        """u_D = c(q, t) of the attachments (3P,) in one kernel call (no derivatives)."""
        P = self._P
        x = body_point_jets(q[None, :], self._bodies[:P], self._points[:P], False,
                            *self.problem.system._plan().point_args(t))[0]
        return (x - self._points[:P]).reshape(-1)

    def evaluate(self, z: np.ndarray, t: float, *, fiber_state, rigid_state, load_factor: float = 1.0):
        """:meth:`CoupledProblem.evaluate` (None: redo it with the general path, which raises)."""
        p = self.problem
        model, N, n, P = self.model, p.N, p.n, self._P
        q = z[N:].copy()
        if len(self._bodies):
            x, C, H, _, _, _ = body_point_jets(q[None, :], self._bodies, self._points, True,
                                               *p.system._plan().point_args(t))
            if len(self._bodies) > P:  # the end points of the cylinders → their axes a = end − start
                for v in (x, C, H):
                    v[P + 1::2] -= v[P::2]
            kin = AttachmentKinematics((x[:P] - self._points[:P]).reshape(-1), C[:P].reshape(3 * P, n),
                                       H[:P].reshape(3 * P, n, n))
        else:
            kin = AttachmentKinematics(np.zeros(0), np.zeros((0, n)), np.zeros((0, n, n)))
        u = z[:N].copy()
        u[p.D] = kin.displacement
        model.set_coordinates(q)
        v, a, c_v, c_a = fiber_state(u)
        g, comp, dofs = self._jets
        x_s, xdot_s, lam, lamdot = cable_kernels._kinematics(g, comp, dofs, self._reference + u, v, self._J)
        S, dS, dR = self._stress(lam, lamdot, t)
        R = np.empty(N)
        n_int, n_mag, n_inertia, n_ext = cable_kernels._residual(
            g, comp, dofs, self._area * S * self._dx, x_s, self._mass, a, model.external_force(t),
            float(load_factor), R)
        ref = max(n_int, n_inertia, n_ext)
        if not math.isfinite(R.dot(R)):
            return None
        margins = {} if self._cylinders else None
        n_active = 0
        contacts = []
        for cyl in self._cylinders:
            Jp = Hp = None
            if cyl.row >= 0:
                j = cyl.row
                point, axis = x[j], x[j + 1]
                axis_norm = math.sqrt(float(axis @ axis))
                tangent = axis / axis_norm
                Jp, Hp = C[j:j + 2].reshape(6, n), H[j:j + 2].reshape(6, n, n)  # rows (y0, a)
            else:
                pose = cyl.contact.pose_at(t)
                point, tangent, axis_norm = pose.point, pose.tangent, pose.axis_norm
            el = cyl.elements
            if el.size:
                el = ck.broad_phase(cyl.data, u, el, point, tangent, cyl.radius, cyl.length)
            out = None
            if el.size:
                out = ck.contact_points(cyl.data, u, el, point, tangent, axis_norm, cyl.radius, cyl.length,
                                        cyl.stiffness, cyl.gamma)
                adm, res = out[1], out[2]
                if out[6] >= 0 or not adm.min() > 0:
                    return None  # inadmissible: the general path says where
                R += res
                norm = math.sqrt(res.dot(res))
                if not math.isfinite(norm):
                    return None
                ref = max(ref, norm)
                n_active += int(out[4])
            if margins is not None:
                if not cyl.trial:
                    margins = None
                else:
                    margins[cyl.name] = (el, out[1] if out is not None else np.zeros((0, cyl.n_points)))
            contacts.append(_Contact(cyl, point, tangent, axis_norm, el, out, Jp, Hp))
        if model._remember_residual and load_factor == 1.0:
            model._last_residual = (model._state_key(u, v, a, t), R.copy())
        terms = getattr(rigid_state, "terms", None)
        if terms is not None:
            rigid_residual, rigid_tangent, rigid_ref = terms(q)
        else:
            rs = rigid_state(q)
            rigid_residual, rigid_tangent, rigid_ref = rs.residual, rs.tangent, rs.reference_force
        R_q = rigid_residual + kin.jacobian.T @ R[p.D]
        ref = max(ref, rigid_ref)
        for c in contacts:
            if c.Jp is None:
                continue
            force = c.out[3] if c.active else np.zeros(6)
            R_q = R_q + c.Jp.T @ force
            f = force[:3]
            ref = max(ref, math.sqrt(float(f @ f)))
        residual = np.empty(N + n)
        residual[:N] = R
        residual[N:] = R_q
        residual[p._fixed_index] = 0.0
        return FastEvaluation(residual, reference_force=ref, roundoff=ROUNDOFF_FACTOR * _EPS * n_mag,
                              min_stretch=float(lam.min()), margins=margins, n_active_contacts=n_active,
                              fiber_residual=R, law=(S, dS, dR), kinematics=(x_s, xdot_s, lam, lamdot), c_v=c_v,
                              c_a=c_a, kin=kin, rigid_tangent=rigid_tangent, contacts=contacts, fast=self)

    # ------------------------------------------------------------------ tangent
    def _tangent(self, ev: FastEvaluation) -> np.ndarray:
        """c_a M + the cable tangent per element (:func:`skfiber.cable_kernels.internal_tangent`)."""
        g, comp, _ = self._jets
        S, dS, dR = ev._law
        x_s, xdot_s, lam, lamdot = ev._kinematics
        c_v, c_a = ev._c
        return cable_kernels._law_tangent(g, comp, self._area, self._dx, self._J, S, dS, dR, lam, lamdot,
                                          float(c_v), x_s, xdot_s, self._mass if c_a else self._no_mass,
                                          float(c_a))

    def tangent_blocks(self, ev: FastEvaluation):
        """(W, ∂R_q/∂u, ∂R_q/∂q) of :meth:`CoupledProblem.tangent_blocks` from a fast evaluation."""
        p = self.problem
        kin, n, N, D = ev.kin, p.n, p.N, p.D
        C = np.ascontiguousarray(kin.jacobian)
        W = np.zeros((N, n))
        Rq_u = np.zeros((n, N))
        flat, rows, cols = p._touch_entries
        _scatter_dependent(ev.element_matrices.reshape(-1), flat, rows, cols, p._pos_D, C, W, Rq_u)
        N_ = ev.fiber_residual.shape[0]
        for c in ev.contacts:
            if c.active:
                r, cc, vals = c.derivatives(N_)[:3]
                _scatter_dependent(vals, _NO_INDEX, r, cc, p._pos_D, C, W, Rq_u)
        G_D = ev.fiber_residual[D]
        Rq_q = ev.rigid_tangent + (G_D @ kin.hessian.reshape(len(G_D), n * n)).reshape(n, n)
        X = None
        for c in ev.contacts:
            if c.Jp is None:
                continue
            Jp, Hp = c.Jp, c.Hp
            if c.active:
                _, _, _, Gp, cols, dRu, d_pose = c.derivatives(N)
                force = c.out[3]
            else:
                Gp, cols, dRu, d_pose = np.zeros((N, 6)), _NO_INDEX, np.zeros((6, 0)), np.zeros((6, 6))
                force = np.zeros(6)
            if X is None:
                X = np.zeros((N, n))
                X[D] = C
            W = W + Gp @ Jp
            Rq_u[:, cols] += Jp.T @ dRu
            dRu_X = dRu @ X[cols]
            Rq_q = Rq_q + Jp.T @ (dRu_X + d_pose @ Jp) + (force @ Hp.reshape(6, n * n)).reshape(n, n)
        Rq_q = Rq_q + C.T @ W[D]
        return W, Rq_u, Rq_q

    def solve_newton(self, ev: FastEvaluation) -> np.ndarray:
        """:meth:`CoupledProblem.solve_newton` for a fast evaluation: one compiled call
        (:func:`skfiber.coupled_kernels.coupled_increment`) when the fiber block is block tridiagonal,
        else (or when its block LU is rejected) :meth:`solve_blocks`."""
        p = self.problem
        fs = p.fiber_solver
        if fs._block_index is None:
            return self.solve_blocks(ev)
        N, n = p.N, p.n
        K = ev.element_matrices
        triplets = ev.extra
        if len(triplets) == 1:
            rows, cols, vals = triplets[0]
        elif triplets:
            rows, cols, vals = (np.concatenate(a) for a in zip(*triplets))
        else:
            rows, cols, vals = _NO_INDEX, _NO_INDEX, _NO_VALUE
        pose = [c for c in ev.contacts if c.Jp is not None and c.active]
        if pose:
            derivs = [c.derivatives(N) for c in pose]
            Jp = np.array([c.Jp for c in pose])
            Hp = np.array([c.Hp for c in pose])
            force = np.array([c.out[3] for c in pose])
            Gp = np.array([d[3] for d in derivs])
            columns = np.concatenate([d[4] for d in derivs])
            offsets = np.cumsum([0] + [d[4].size for d in derivs]).astype(np.int64)
            dRu = np.ascontiguousarray(np.concatenate([d[5] for d in derivs], axis=1))
            d_pose = np.array([d[6] for d in derivs])
        else:
            Jp, Hp, force, Gp = (np.zeros((0, 6, n)), np.zeros((0, 6, n, n)), np.zeros((0, 6)),
                                 np.zeros((0, N, 6)))
            columns, offsets, dRu, d_pose = _NO_INDEX, np.zeros(1, dtype=np.int64), np.zeros((6, 0)), np.zeros((0, 6, 6))
        kin = ev.kin
        flat, trows, tcols = p._touch_entries
        dz, status = coupled_increment(
            K, rows, cols, vals, fs._block_index, fs._block_fixed, fs._block_diag_fixed, flat, trows, tcols,
            p._pos_D, kin.jacobian, kin.hessian, ev.fiber_residual, ev.residual[N:], ev.rigid_tangent, p.D,
            fs.constrained, Jp, Hp, force, Gp, columns, offsets, dRu, d_pose, PIVOT_TOL, RESIDUAL_TOL)
        if status != OK:
            return self.solve_blocks(ev)  # the general linear algebra (band or sparse LU, its errors)
        fs.last_method = "block"
        return dz

    def solve_blocks(self, ev: FastEvaluation) -> np.ndarray:
        """:meth:`CoupledProblem.solve_newton` for a fast evaluation, with numpy and the fiber solver
        (band or sparse LU when the block LU does not apply or is rejected, and their errors)."""
        return self.problem._solve_blocks(ev)
