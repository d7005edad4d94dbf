"""The coupled residual and Newton increment straight on the compiled kernels.

:class:`~skfiber.coupling.CoupledProblem` evaluates the coupled system
through the model's objects: :meth:`Model.evaluate <skfiber.Model.evaluate>`,
each contact's ``evaluate``, ``body_load`` and ``pose_derivative`` (with
their memos keyed on the state), the attachment kinematics.  That is the
general path, and the definition.  For the few hundred DOFs of the upper-limb
demo its Python costs more than the arithmetic (docs/performance.md), so for
models whose parts all have kernels this module computes the same numbers
with the layers removed:

* the fibers through the model's generated form kernel
  (:attr:`Model.form_kernel <skfiber.Model.form_kernel>`: the built-in and
  added residual terms with their pointwise tangent in one call, the element
  tangent assembled from it when Newton solves), when the
  form compiler traced every term;
* every contact a :class:`~skfiber.contact.CylinderContact` (fixed, moving
  with ``pose(t)``, or on a body of the model's rigid system), through the
  kernels of :mod:`skfiber.contact.cylinder_kernels`;
* the body points (attachments, ends of the contact cylinders on bodies)
  through :func:`~skfiber.rigid.kernels.body_point_jets`;
* a :class:`~skfiber.contact.fibers.FiberContact` (fiber–fiber) through its
  own implementation, its residual added in the model's order of contacts, its
  tangent triplets made when Newton solves and its safeguard its ``max_step``.
  Fibers in touch with each other couple their blocks of K_II, which is then
  not block tridiagonal: such a Newton step is solved by GMRES preconditioned
  with the block elimination of the rest (:mod:`skfiber.coupled_krylov`), and
  with the general linear algebra (:meth:`FastCoupling.solve_blocks`) if GMRES
  falls short of its tolerance.

The evaluation is one compiled call (:mod:`skfiber.evaluation_kernel`: the
fibers, the body points, the rigid step and one cylinder) and, after it in
the model's order of contacts, the fiber–fiber contacts; otherwise a few
compiled calls around the form kernel (:mod:`skfiber.coupled_kernels`).  The kernels and the order of the sums of the
fiber rows are those of the general path, and the rows of q are the same compiled
:func:`~skfiber.coupled_kernels.coupled_rows` on both paths, so the residual agrees bit
for bit; the increments agree to round-off (``tests/test_coupling_fast.py``).
Where the general path raises (a non-finite residual, an inadmissible contact
point) the fast path raises :class:`InadmissibleState`, whose message is the
general path's diagnosis, made when read.
"""
from __future__ import annotations

import math

import numpy as np
from numba.core.errors import NumbaError

from .contact import cylinder_kernels as ck
from .contact.cylinder import CylinderContact
from .contact.cylinder_safeguard import trial_step
from .contact.fibers import FiberContact
from .core.warn import warn
from .coupled_kernels import (IN_REACH, INADMISSIBLE, OK, coupled_chain_rule, coupled_increment, coupled_positions,
                              coupled_rows, cylinder_contact, newton_increment, scatter_dependent, stacked_pose_terms)
from .attachments import AttachmentKinematics
from .evaluation_kernel import fused_evaluation
from .fiber_part import sum_rows
from .linalg import PIVOT_TOL, RESIDUAL_TOL
from .core import ROUNDOFF_FACTOR, Evaluation, EulerRates, InadmissibleState
from .rigid.integrate import EulerStep
from .rigid.kernels import body_point_jets

__all__ = ["FastCoupling", "FastEvaluation", "InadmissibleState"]

_EPS = float(np.finfo(float).eps)
#: fiber–fiber contact among at least this many fibers (a bundle) is solved by the sparse direct path
#: (:meth:`FastCoupling.solve_blocks`: SuperLU on the assembled tangent) instead of GMRES: there every fiber
#: presses on several others, the block-diagonal preconditioner misses most of the coupling and GMRES took
#: 59 iterations a solve on a 9-fiber biceps, 3.1 times the time of the sparse LU (docs/performance.md);
#: fewer fibers (the upper limb's 5) keep GMRES.  A rule on the model, not on the history of the run, so that
#: a run resumed from a checkpoint takes the same path.
DIRECT_FROM_FIBERS = 6


def _norm(x: np.ndarray) -> float:
    return math.sqrt(float(x.dot(x)))


_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUE = np.zeros(0)
_NO_BLOCK_DOFS = np.zeros((0, 12), dtype=np.int64)
_NO_BLOCKS = np.zeros((0, 12, 12))
_ZERO3 = np.zeros(3)
#: the cylinder arguments of the fused evaluation (skfiber.evaluation_kernel) without a cylinder: no element,
#: nothing in reach
_NO_CYLINDER = (np.zeros(0), np.zeros((0, 12), dtype=np.int64), np.zeros((0, 1, 4)), np.zeros((0, 1, 4)),
                np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(0), np.zeros(1), np.zeros(0), np.zeros(0), _NO_INDEX,
                np.zeros(3), np.array([1.0, 0.0, 0.0]), 1.0, False, 0.0, 0.0, 0.0, -1, 0)
#: the contact arguments of newton_increment when no contact is in touch
_NO_CONTACT = (np.zeros((0, 1, 1)), _NO_INDEX, _NO_INDEX, np.zeros((0, 12), dtype=np.int64), np.zeros((0, 1, 4)),
               np.zeros((0, 1, 4)), np.zeros(3), 1.0, -1, np.zeros(6))


def _joined(parts: list, empty: tuple) -> tuple:
    """The arrays of ``parts`` (a list of equal-length tuples) concatenated position by position (no copy
    for one part; ``empty`` for none)."""
    if len(parts) == 1:
        return parts[0]
    if parts:
        return tuple(np.concatenate(a) for a in zip(*parts))
    return empty


class _Cylinder:
    """What the kernels need of one cylinder contact (fixed for a problem)."""

    def __init__(self, contact: CylinderContact, d, body: int, row: int, n_body: int):
        self.contact = contact
        self.name = contact.name
        data = contact.kernel_data(d)
        self.data = data
        # the arguments of coupled_kernels.cylinder_contact after u
        self.shapes = (data.dofs, data.S, data.dS, data.r0, data.A1, data.h, data.w, data.r0_max, data.A1_max)
        self.elements = np.ascontiguousarray(contact.fiber_elements(d), dtype=np.int64)
        self.radius = float(contact.radius)
        self.finite, self.L = ck.length_args(contact.length)
        self.stiffness = float(contact.law.stiffness)
        self.gamma = float(contact.law.gamma)
        self.body = body  # its index among the cylinders on bodies (−1: not on a body)
        self.row = row  # its start point among the body points (−1: not on a body)
        #: its arguments of skfiber.evaluation_kernel's evaluate (point and axis: placeholders)
        self.fused_args = (data.reference, *self.shapes, self.elements, _ZERO3, _ZERO3, self.radius, self.finite,
                           self.L, self.stiffness, self.gamma, body, n_body)


class _Contact:
    """One contact at one state: the elements in reach and the kernel outputs."""

    __slots__ = ("cylinder", "tangent", "axis_norm", "elements", "pts", "force", "act", "_derivatives")

    def __init__(self, cylinder, tangent, axis_norm, elements, pts, force, act):
        self.cylinder = cylinder
        self.tangent, self.axis_norm = tangent, axis_norm
        self.elements = elements
        self.pts, self.force, self.act = pts, force, act
        self._derivatives = None

    @property
    def active(self) -> bool:
        return self.act.size > 0

    def derivatives(self, n_dofs: int):
        """:func:`~skfiber.contact.cylinder_kernels.contact_derivatives` (computed once)."""
        if self._derivatives is None:
            self._derivatives = ck.contact_derivatives(self.cylinder.data, self.pts, self.elements, self.act,
                                                       self.tangent, self.axis_norm, n_dofs)
        return self._derivatives


class _FiberContactTerm:
    """A fiber–fiber contact at one state: its residual now, its tangent triplets when Newton solves (the
    contact keeps its search of the last state, so the tangent does not search again)."""

    __slots__ = ("contact", "model", "u", "t", "n_active", "_tangent")

    def __init__(self, contact: FiberContact, model, u: np.ndarray, t: float, n_active: int):
        self.contact, self.model, self.u, self.t = contact, model, u, t
        self.n_active = n_active
        self._tangent = None

    @property
    def active(self) -> bool:
        return self.n_active > 0

    def _evaluation(self):
        if self._tangent is None:
            self._tangent = self.contact.evaluate(self.model, self.u, self.t, tangent=True)
        return self._tangent

    def triplets(self):
        """(rows, cols, values) of its tangent (COO, fiber DOFs)."""
        ce = self._evaluation()
        return ce.rows, ce.cols, ce.values

    def blocks(self):
        """(row DOFs, column DOFs, values) of its tangent as 12 × 12 element blocks."""
        return self._evaluation().blocks


class FastEvaluation:
    """A coupled evaluation of the fast path: what Newton reads (``residual``, ``reference_force``,
    ``roundoff``, ``min_stretch``, ``margins``, ``n_active_contacts``) and what the solve needs.

    ``fiber`` is the fiber part as a :class:`~skfiber.model.Evaluation` (made on first access: the
    dense tangent of :meth:`CoupledProblem.tangent_matrix` asks for it).
    """

    def __init__(self, residual, *, reference_force, roundoff, min_stretch, margins, n_active_contacts,
                 fiber_residual, form_output, points, rigid_tangent, contacts, fast, fiber_contacts=()):
        self.residual = residual
        self.reference_force = reference_force
        self.roundoff = roundoff
        self.min_stretch = min_stretch
        self.margins = margins
        self.n_active_contacts = n_active_contacts
        self.fiber_residual = fiber_residual  # G (N,): inertia + internal + contact − external
        self._points = points  # (x, C, H) of coupled_positions
        self.rigid_tangent = rigid_tangent
        self.contacts = contacts
        self.fiber_contacts = fiber_contacts  # _FiberContactTerm of each fiber–fiber contact
        self._form_output = form_output  # the form kernel's KernelOutput (its element tangent made when used)
        self._fiber = None
        self._kin = None
        self.fast = fast  # the FastCoupling that made it

    @property
    def kin(self) -> AttachmentKinematics:
        """The attachments' u_D = c(q, t), C and ∂C/∂q."""
        if self._kin is None:
            x, C, H = self._points
            P, n = self.fast._P, C.shape[2]
            self._kin = AttachmentKinematics((x[:P] - self.fast._points[:P]).reshape(-1), C[:P].reshape(3 * P, n),
                                             H[:P].reshape(3 * P, n, n))
        return self._kin

    def pose_jets(self, contact: _Contact):
        """(Jp (6, n), Hp (6, n, n)) = ∂(y0, a)/∂q and ∂²(y0, a)/∂q² of a contact cylinder on a body."""
        _, C, H = self._points
        j, n = contact.cylinder.row, C.shape[2]
        return C[j:j + 2].reshape(6, n), H[j:j + 2].reshape(6, n, n)

    @property
    def element_matrices(self) -> np.ndarray:
        """∂(residual terms)/∂u per element (e, nb, nb), c_v and c_a included (the form kernel's, assembled
        on first access)."""
        return self._form_output.element_matrices

    @property
    def extra(self) -> list:
        """COO triplets of the contact tangents."""
        N = self.fiber_residual.shape[0]
        return ([c.derivatives(N)[:3] for c in self.contacts if c.active]
                + [c.triplets() for c in self.fiber_contacts if c.active])

    @property
    def fiber(self) -> Evaluation:
        if self._fiber is None:
            self._fiber = Evaluation(self.fiber_residual, lambda: self.element_matrices,
                                     reference_force=self.reference_force, min_stretch=self.min_stretch,
                                     extra=self.extra, roundoff=self.roundoff,
                                     n_active_contacts=self.n_active_contacts, margins=self.margins)
        return self._fiber

    @property
    def blocks(self):  # what CoupledProblem.solve_blocks reads of an evaluation
        return {"kin": self.kin}


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
        bodies, points = problem.point_layout()
        self._bodies, self._points = bodies, points
        self._P = len(model.attachments)
        body_contacts = {id(c): i for i, c in enumerate(problem.body_contacts)}
        self._cylinders = []
        self._fiber_contacts = [c for c in model.contacts if type(c) is FiberContact]
        self._direct = any((len(model.fibers) if c.fibers is None else len(c.fibers)) >= DIRECT_FROM_FIBERS
                           for c in self._fiber_contacts)
        self._in_order = []  # the cylinders' _Cylinder and the fiber–fiber contacts, in the model's order
        for c in model.contacts:
            if type(c) is FiberContact:
                self._in_order.append(c)
                continue
            i = body_contacts.get(id(c), -1)
            self._cylinders.append(_Cylinder(c, d, i, self._P + 2 * i if i >= 0 else -1, len(problem.body_contacts)))
            self._in_order.append(self._cylinders[-1])
        self._n_body_cylinders = len(problem.body_contacts)
        # the fused evaluation (one cylinder) serves when every fiber–fiber contact comes after the cylinder
        kinds = [type(c) is FiberContact for c in model.contacts]
        self._fiber_contacts_last = kinds == sorted(kinds)
        self._kernel = model.form_kernel  # the fibers' residual terms and element tangent
        self._fused = None  # skfiber.evaluation_kernel's function (False: not available)
        self._fused_ready = False  # whether it has run (compiled) once
        self._last = None  # (z as bytes, t, u, q, body points x, their Jacobian C) of the last evaluation
        self.krylov_iterations = 0  # GMRES iterations of the increments with fibers in touch (all so far)
        self.fallbacks = 0  # increments redone by solve_blocks (block LU rejected, GMRES short of its tolerance)

    @staticmethod
    def supports(model) -> bool:
        """True when every part of ``model`` has a kernel (see the module notes)."""
        if not model.compiled:
            return False
        kernel = model.form_kernel
        if set(kernel.names) != set(model.term_names) or not kernel.compile():
            return False
        for c in model.contacts:
            if type(c) is FiberContact:
                continue
            if type(c) is not CylinderContact:
                return False
            if c.body is not None and c.system is not model.rigid:
                return False
        return True

    # ------------------------------------------------------------------ residual
    def _last_at(self, z: np.ndarray, t: float) -> tuple | None:
        """(u, q, x, C) of the last evaluation if it was at (z, t), else None (not copies)."""
        last = self._last
        if last is None or last[1] != t or last[0] != z.tobytes():
            return None
        return last[2:]

    def expanded(self, z: np.ndarray, t: float) -> np.ndarray | None:
        """u with u_D = c(q, t) at z if the last evaluation was at (z, t) (a copy), else None."""
        last = self._last_at(z, t)
        return None if last is None else last[0].copy()

    def displacement(self, q: np.ndarray, t: float) -> np.ndarray:
        """u_D = c(q, t) of the attachments (3P,) in one kernel call (no derivatives)."""
        P = self._P
        x = body_point_jets(q[None, :], self._bodies[:P], self._points[:P], False,
                            *self.problem.system.plan().point_args(t))[0]
        return (x - self._points[:P]).reshape(-1)

    def evaluate(self, z: np.ndarray, t: float, *, fiber_state, rigid_state, load_factor: float = 1.0):
        """:meth:`CoupledProblem.evaluate`.

        Raises :class:`InadmissibleState` (a FloatingPointError) where the general path raises: a
        non-finite residual, a contact point with 1 + γg ≤ 0.
        """
        p = self.problem
        model, N = self.model, p.N
        kernel = model.form_kernel  # (the forms' numbers read again: traced anew when one has changed)
        if kernel is not self._kernel:
            if kernel.function is not self._kernel.function and self._fused is not False:
                self._fused, self._fused_ready = None, False  # (another machine code: fuse it anew)
            self._kernel = kernel
        t = float(t)
        z = np.ascontiguousarray(z, dtype=float)
        fused = None
        if (type(fiber_state) is EulerRates and len(self._cylinders) <= 1 and self._fiber_contacts_last
                and self._fused is not False
                and type(rigid_state) is EulerStep and rigid_state.direct and rigid_state.t == t
                and rigid_state.system is p.system):
            fused = self._evaluate_fused(z, fiber_state, rigid_state, t, load_factor)  # the common case
        if fused is not None:
            fused, out = fused
        contacts, fiber_contacts = [], []
        margins = {} if self._cylinders else None
        n_active = 0
        if fused is not None:
            (q, u, x, C, H, v, a, rigid_residual, forces, rigid_tangent, rigid_ref, residual, body_force, R, ref,
             finite, *outcome) = fused
            if not finite:
                raise self._inadmissible(z, t, fiber_state, rigid_state, load_factor, "the fiber residual is not finite")
            if self._cylinders:
                ref, n_active, margins = self._contact(self._cylinders[0], outcome, ref, margins, contacts, z, t,
                                                       fiber_state, rigid_state, load_factor)
            if self._fiber_contacts:  # after the cylinder: the general path's order of the sums
                for contact in self._fiber_contacts:
                    R, ref, n = self._fiber_contact(contact, u, t, R, ref, fiber_contacts, z, fiber_state,
                                                    rigid_state, load_factor)
                    n_active += n
                margins = None  # (their safeguard is max_step's)
                residual, body_force = coupled_rows(R, rigid_residual, C, p.D, self._P, forces, p.fixed_index)
        else:
            q, u, x, C, H = coupled_positions(z, N, p.D, self._P, self._bodies, self._points,
                                              *p.system.plan().point_args(t))
            v, a, c_v, c_a = fiber_state(u)
            v, a = (np.ascontiguousarray(w, dtype=float) for w in (v, a))
            out = self._kernel(u, v, a, t, alpha=model.activations(t).ravel(), c_v=c_v, c_a=c_a)
            R, ref, _, _, finite = sum_rows(out.residuals, model.external_force(t), float(load_factor),
                                            out.magnitude, out.stretch)
            if not finite:
                raise self._inadmissible(z, t, fiber_state, rigid_state, load_factor,
                                         "the fiber residual is not finite")
            forces = np.zeros((self._n_body_cylinders, 6))
            for item in self._in_order:  # the contacts in the model's order (the general path's sums)
                if type(item) is FiberContact:
                    R, ref, n = self._fiber_contact(item, u, t, R, ref, fiber_contacts, z, fiber_state, rigid_state,
                                                    load_factor)
                    n_active += n
                    margins = None  # (its safeguard is max_step's)
                    continue
                cyl = item
                point, axis = self._pose(cyl, x, t)
                outcome = cylinder_contact(cyl.data.reference, u, *cyl.shapes, cyl.elements, point, axis,
                                           cyl.radius, cyl.finite, cyl.L, cyl.stiffness, cyl.gamma, R)
                ref, n, margins = self._contact(cyl, outcome, ref, margins, contacts, z, t, fiber_state,
                                                rigid_state, load_factor)
                n_active += n
                if outcome[0] == IN_REACH and cyl.body >= 0:
                    forces[cyl.body] = outcome[6]
            terms = getattr(rigid_state, "terms", None)
            if terms is not None:
                rigid_residual, rigid_tangent, rigid_ref = terms(q)
            else:
                rs = rigid_state(q)
                rigid_residual, rigid_tangent, rigid_ref = rs.residual, rs.tangent, rs.reference_force
            residual, body_force = coupled_rows(R, np.ascontiguousarray(rigid_residual, dtype=float), C, p.D,
                                                self._P, forces, p.fixed_index)
        self._last = (z.tobytes(), t, u, q, x, C)  # u with u_D = c(q, t) at this z (expand, max_step)
        if load_factor == 1.0:
            model.memo.store(u, v, a, t, q, R)  # fresh arrays, never changed
        ref = max(ref, rigid_ref, body_force)
        return FastEvaluation(residual, reference_force=ref, roundoff=ROUNDOFF_FACTOR * _EPS * _norm(out.magnitude),
                              min_stretch=float(out.stretch.min()), margins=margins, n_active_contacts=n_active,
                              fiber_residual=R, form_output=out, points=(x, C, H),
                              rigid_tangent=rigid_tangent, contacts=contacts, fast=self,
                              fiber_contacts=fiber_contacts)

    def _evaluate_fused(self, z, rates, rigid_state, t: float, load_factor) -> tuple | None:
        """(the returns of :mod:`skfiber.evaluation_kernel`'s generated ``evaluate``, the form kernel's
        outputs), or None when it cannot be compiled (warned once, and the separate calls are used from then
        on)."""
        p, model, kernel = self.problem, self.model, self._kernel
        if self._fused is None:
            try:
                self._fused = fused_evaluation(kernel.function)
            except Exception as error:  # the form kernel not compiled, an unwritable folder, …
                return self._no_fused(error)
        cyl = self._cylinders[0] if self._cylinders else None
        if cyl is None:
            cylinder, row = _NO_CYLINDER, -1
        elif cyl.row >= 0:  # on a body: the kernel takes its pose from the body points
            cylinder, row = cyl.fused_args, cyl.row
        else:
            point, axis = self._pose(cyl, None, t)
            cylinder, row = cyl.fused_args[:11] + (point, axis) + cyl.fused_args[13:], -1
        out = kernel.output(tangent=True)
        head = (z, p.N, p.D, self._P, self._bodies, self._points, rates.u_prev, rates.v_prev, rates.dt)
        args = (head, rigid_state.kernel_args(),
                kernel.fused_arguments(t, alpha=model.activations(t).ravel(), output=out),
                (model.external_force(t), float(load_factor)), cylinder, row, p.fixed_index)
        if self._fused_ready:
            return self._fused(*args), out
        try:  # the first call compiles (or loads numba's cached machine code)
            result = self._fused(*args)
        except NumbaError as error:
            return self._no_fused(error)
        self._fused_ready = True
        return result, out

    def _fiber_contact(self, contact: FiberContact, u, t, R, ref, terms: list, z, fiber_state, rigid_state,
                       load_factor):
        """(R, force scale, points in contact) with a fiber–fiber contact's residual added (its own
        implementation); its :class:`_FiberContactTerm` appended to ``terms``."""
        try:
            ce = contact.evaluate(self.model, u, t, tangent=False)
        except FloatingPointError:
            raise self._inadmissible(z, t, fiber_state, rigid_state, load_factor,
                                     f"inadmissible fiber–fiber contact {contact.name!r}") from None
        R += ce.residual
        terms.append(_FiberContactTerm(contact, self.model, u, t, ce.n_active))
        return R, max(ref, _norm(ce.residual)), ce.n_active

    def _no_fused(self, error: Exception) -> None:
        self._fused = False
        first_line = str(error).splitlines()[0] if str(error) else ""
        warn(f"the fused evaluation kernel could not be made ({type(error).__name__}: {first_line}); "
             "the fast path runs its kernels one by one", RuntimeWarning)
        return None

    @staticmethod
    def _pose(cyl: _Cylinder, x: np.ndarray, t: float) -> tuple:
        """(point, raw axis) of a contact cylinder: from the body points x, or its pose at t."""
        if cyl.row >= 0:
            return x[cyl.row], x[cyl.row + 1]
        pose = cyl.contact.pose_at(t)
        return pose.point, pose.axis

    def _contact(self, cyl: _Cylinder, outcome, ref: float, margins, contacts: list, z, t, fiber_state, rigid_state,
                 load_factor):
        """What Newton reads of one cylinder's :func:`~skfiber.coupled_kernels.cylinder_contact` ``outcome``:
        (force scale, number of points in contact, margins); its :class:`_Contact` appended to ``contacts``.
        Raises :class:`InadmissibleState` for an inadmissible or non-finite contact."""
        status, el, tangent, axis_norm, pts, adm, force, n, act, norm = outcome
        if status == INADMISSIBLE:
            raise self._inadmissible(z, t, fiber_state, rigid_state, load_factor,
                                     f"inadmissible contact with cylinder {cyl.name!r} at t = {t:.6g} s")
        if status != IN_REACH:
            n = 0
        elif not math.isfinite(norm):
            raise self._inadmissible(z, t, fiber_state, rigid_state, load_factor,
                                     f"the residual of contact {cyl.name!r} is not finite")
        else:
            ref = max(ref, norm)
        if margins is not None:
            if cyl.contact.safeguard == "trial":
                margins[cyl.name] = (el, adm)
            else:
                margins = None
        contacts.append(_Contact(cyl, tangent, axis_norm, el, pts, force, act))
        return ref, n, margins

    def _inadmissible(self, z, t, fiber_state, rigid_state, load_factor, what: str) -> InadmissibleState:
        """The error for a state the fast path rejects, with the general path's message."""
        z = z.copy()

        def explain() -> str:
            try:
                self.problem.evaluate_general(z, t, fiber_state=fiber_state, rigid_state=rigid_state,
                                               load_factor=load_factor)
            except FloatingPointError as err:
                return str(err)
            return what  # (the general path accepted it: not expected)

        return InadmissibleState(explain)

    def max_step(self, z: np.ndarray, dz: np.ndarray, t: float, *, delta_bar: float) -> float:
        """:meth:`CoupledProblem.max_step` with the body points from one kernel call: each contact's
        ``max_step``, a cylinder on a body moving with (C_y0 Δq, C_a Δq)."""
        p, model = self.problem, self.model
        N, t = p.N, float(t)
        z = np.ascontiguousarray(z, dtype=float)
        last = self._last_at(z, t)
        if last is not None:  # Newton's last evaluation (the usual case)
            u, q, x, C = last
        else:
            q, u, x, C, _ = coupled_positions(z, N, p.D, self._P, self._bodies, self._points,
                                              *p.system.plan().point_args(t))
        model.set_coordinates(q)
        du, dq = dz[:N], dz[N:]
        delta = 1.0
        for cyl in self._cylinders:
            contact = cyl.contact
            if contact.safeguard == "trial" and 0 < delta_bar < 1:  # one compiled call
                if cyl.row >= 0:
                    j = cyl.row
                    point, axis, dy0, da, moving = x[j], x[j + 1], C[j] @ dq, C[j + 1] @ dq, True
                else:
                    pose = contact.pose_at(t)
                    point, axis, dy0, da, moving = pose.point, pose.axis, _ZERO3, _ZERO3, False
                d = trial_step(cyl.data.reference, u, du, *cyl.shapes, cyl.elements, point, axis, dy0, da, moving,
                               cyl.radius, cyl.finite, cyl.L, cyl.stiffness, cyl.gamma, float(delta_bar))
                if not math.isnan(d):
                    delta = min(delta, d)
                    continue  # (nan: the method below says what is wrong)
            if cyl.row >= 0:
                j = cyl.row
                contact.cache_body_pose(q, t, x[j], x[j + 1])  # its pose at q
                d = contact.max_step(model, u, du, t, delta_bar=delta_bar, pose_step=(C[j] @ dq, C[j + 1] @ dq))
            else:
                d = contact.max_step(model, u, du, t, delta_bar=delta_bar)
            delta = min(delta, float(d))
        if self._fiber_contacts:
            z_end = z + dz  # the state Newton evaluates next for δ = 1 (u_D = c(q + Δq, t), not linearized)
            u_end = z_end[:N].copy()
            if self._P:
                u_end[p.D] = self.displacement(np.ascontiguousarray(z_end[N:]), t)
            for contact in self._fiber_contacts:
                delta = min(delta, float(contact.max_step(model, u, du, t, delta_bar=delta_bar, u_end=u_end)))
        return delta

    # ------------------------------------------------------------------ tangent
    def tangent_blocks(self, ev: FastEvaluation):
        """(W, ∂R_q/∂u, ∂R_q/∂q) of :meth:`CoupledProblem.tangent_blocks` from a fast evaluation."""
        p = self.problem
        kin, n, N, D = ev.kin, p.n, p.N, p.D
        C = np.ascontiguousarray(kin.jacobian)
        W = np.zeros((N, n))
        Rq_u = np.zeros((n, N))
        flat, rows, cols = p.touch_entries
        scatter_dependent(ev.element_matrices.reshape(-1), flat, rows, cols, p.dependent_rows, C, W, Rq_u)
        N_ = ev.fiber_residual.shape[0]
        for c in ev.contacts:
            if c.active:
                r, cc, vals = c.derivatives(N_)[:3]
                scatter_dependent(vals, _NO_INDEX, r, cc, p.dependent_rows, C, W, Rq_u)
        for c in ev.fiber_contacts:
            if c.active:
                r, cc, vals = c.triplets()
                scatter_dependent(vals, _NO_INDEX, r, cc, p.dependent_rows, C, W, Rq_u)
        Rq_q = coupled_chain_rule(W, Rq_u, np.ascontiguousarray(ev.rigid_tangent, dtype=float), C,
                                  np.ascontiguousarray(kin.hessian), ev.fiber_residual, D, p.dependent_rows,
                                  *self._pose_arrays(ev))
        return W, Rq_u, Rq_q

    def solve_newton(self, ev: FastEvaluation, *, linear_tolerance: float = 0.0) -> np.ndarray:
        """:meth:`CoupledProblem.solve_newton` for a fast evaluation: compiled when the fibers' own blocks are
        block tridiagonal — one call (:func:`skfiber.coupled_kernels.newton_increment`) with at most one
        cylinder contact in touch and no fibers in touch with each other, else the tangent, the contact
        derivatives and :func:`~skfiber.coupled_kernels.coupled_increment` (with fibers in touch: GMRES
        preconditioned by the block elimination, :mod:`skfiber.coupled_krylov`, to ``linear_tolerance``) —
        and :meth:`solve_blocks` otherwise, when the block LU or GMRES is rejected, and for fibers in touch
        in a contact among :data:`DIRECT_FROM_FIBERS` fibers or more."""
        fs = self.problem.fiber_solver
        if fs.block_index is None:
            return self.solve_blocks(ev)
        active = [c for c in ev.contacts if c.active]
        if self._direct and any(c.active for c in ev.fiber_contacts):  # a bundle in touch (DIRECT_FROM_FIBERS)
            return self.solve_blocks(ev)
        if len(active) <= 1 and not any(c.active for c in ev.fiber_contacts):
            dz, status, iterations = self._fused_increment(ev, active[0] if active else None)
        else:
            dz, status, iterations = self._separate_increment(ev, float(linear_tolerance))
        self.krylov_iterations += iterations
        if status != OK:
            self.fallbacks += 1
            return self.solve_blocks(ev)  # the general linear algebra (band or sparse LU, its errors)
        fs.last_method = "block+gmres" if iterations else "block"
        return dz

    def _fused_increment(self, ev: FastEvaluation, contact: _Contact | None):
        """(Δz, status, 0) of :func:`~skfiber.coupled_kernels.newton_increment`: ``contact`` the only one in touch."""
        p = self.problem
        fs = p.fiber_solver
        if contact is None:
            args = _NO_CONTACT
        else:
            cyl = contact.cylinder
            args = (contact.pts, contact.elements, contact.act, cyl.data.dofs, cyl.data.S, cyl.data.dS,
                    contact.tangent, contact.axis_norm, cyl.row, contact.force)
        flat, rows, cols = p.touch_entries
        _, C, H = ev._points
        return newton_increment(ev.element_matrices, *args, fs.block_index, fs.block_fixed,
                                fs.block_diag_fixed, flat, rows, cols, p.dependent_rows, C, H, self._P, ev.fiber_residual,
                                ev.residual[p.N:], ev.rigid_tangent, p.D, fs.constrained, PIVOT_TOL, RESIDUAL_TOL)

    def _separate_increment(self, ev: FastEvaluation, linear_tolerance: float):
        """(Δz, status, GMRES iterations) of :func:`~skfiber.coupled_kernels.coupled_increment` for any number of
        contacts (fiber–fiber ones included), its inputs (element matrices, contact derivatives) from their own
        kernels; GMRES to the absolute residual ``linear_tolerance`` (0: to round-off)."""
        p = self.problem
        fs = p.fiber_solver
        N, n = p.N, p.n
        P = self._P
        flat, trows, tcols = p.touch_entries
        K = ev.element_matrices
        triplets = [c.derivatives(N)[:3] for c in ev.contacts if c.active]
        blocks = [c.blocks() for c in ev.fiber_contacts if c.active]
        block_rows, block_cols, block_values = _joined(blocks, (_NO_BLOCK_DOFS, _NO_BLOCK_DOFS, _NO_BLOCKS))
        rows, cols, vals = _joined(triplets, (_NO_INDEX, _NO_INDEX, _NO_VALUE))
        _, C_all, H_all = ev._points
        return coupled_increment(
            K, rows, cols, vals, block_rows, block_cols, block_values, fs.block_index, fs.block_fixed, fs.block_diag_fixed, flat, trows, tcols,
            p.dependent_rows, C_all[:P].reshape(3 * P, n), H_all[:P].reshape(3 * P, n, n), ev.fiber_residual,
            ev.residual[N:], ev.rigid_tangent, p.D,
            fs.constrained, *self._pose_arrays(ev), PIVOT_TOL, RESIDUAL_TOL, linear_tolerance)

    def _pose_arrays(self, ev: FastEvaluation) -> tuple:
        """(Jp, Hp, force, Gp, columns, offsets, dRu, d_pose): the cylinders on bodies in touch at ``ev``, stacked
        as :func:`~skfiber.coupled_kernels.coupled_chain_rule` takes them."""
        p = self.problem
        N, n = p.N, p.n
        pose = [c for c in ev.contacts if c.cylinder.row >= 0 and c.active]
        _, C_all, H_all = ev._points
        if len(pose) == 1:  # views, no copies
            c = pose[0]
            j = c.cylinder.row
            _, _, _, Gp, columns, dRu, d_pose = c.derivatives(N)
            Jp, Hp = C_all[j:j + 2].reshape(1, 6, n), H_all[j:j + 2].reshape(1, 6, n, n)
            force, Gp, d_pose = c.force.reshape(1, 6), Gp.reshape(1, N, 6), d_pose.reshape(1, 6, 6)
            offsets = np.array([0, columns.size], dtype=np.int64)
            return Jp, Hp, force, Gp, columns, offsets, np.ascontiguousarray(dRu), d_pose
        return stacked_pose_terms(N, n, [ev.pose_jets(c) for c in pose], [c.force for c in pose],
                                  [c.derivatives(N)[3:] for c in pose])

    def solve_blocks(self, ev: FastEvaluation) -> np.ndarray:
        """:meth:`CoupledProblem.solve_newton` for a fast evaluation, with numpy and the fiber solver
        (band or sparse LU when the block LU does not apply or is rejected, and their errors)."""
        return self.problem.solve_blocks(ev)
