"""Contact of fibers with a rigid cylinder (paper §3.3, eq. 51; §4.3; Appendix A.4).

A cylinder is a point y0 on its axis, an axis direction a (t = a/‖a‖), a
radius r_RB and optionally a length L.  A contact quadrature point x of a
fiber (Gauss–Legendre, ``quadrature_points`` per element, default 5) has the
closest axis point y = y0 + ((x − y0) · t) t (the paper's eq. 51 text has a
minus sign there, a misprint) and the gap (eq. 51) with the *current* fiber
radius

    g = d / (r_RB + r) − 1,   d = ‖x − y‖,   r = r0(θ) / √λ,   λ = ‖x′‖ / ‖X′‖.

The fiber feels the line force F(g) ν per current length, F the rational
penalty law (eq. 44, :class:`~skfiber.contact.base.PenaltyLaw`) and
ν = (x − y)/d the unit normal pointing *from the axis to the fiber*: the force
pushes the fiber out of the cylinder.  (The paper writes t̄ = F n with
n = (y − x)/d, eqs. 42–43, and subtracts ∫ t̄ · ξ in eq. 56; taken literally
that pulls the fiber towards the axis, so the physical sign is used here and
checked by a test.)  With the residual G = internal − external, the
contribution is (paper eq. 65)

    G_c = − Σ_k F(g_k) ν_k · ξ(x_k) ‖a1(x_k)‖ w_k,      w_k = Gauss weight × element length in θ.

**Finite cylinders** (``length=L``): the axis is the segment y0 + s t,
s ∈ [0, L], and y is the closest point of that *segment* (the axial
coordinate clamped to [0, L]).  The contact body is thus a capsule: the
lateral surface of the cylinder closed by hemispherical caps of radius r_RB.
The force stays continuous when a fiber slides over an end (an open tube or
flat discs would make it jump).  ``length=None`` is an infinite cylinder.

**Consistent tangent** (Appendix A.4, rederived with the physical sign): with
w = x − y, M = ∂w/∂x (P = I − t⊗t on the lateral surface, I on the caps),
ρ = r_RB + r, J = ‖a1‖, W = w_k,

    δ(F ν J W) = W [ F′ J/ρ ν⊗ν + F J (I − ν⊗ν)/d ] M δx
               + W [ F′ d r / (2 ρ² J) + F / J ] ν (a1 · δx′),

the second line from δr = −r (a1 · δx′)/(2 J²) (radius through λ) and
δJ = a1 · δx′ / J.  Blocks are (12 × 12) per element in COO form, only for
elements with a point in contact.

**Moving cylinders**: ``pose(t) -> (y0, axis)``.  :meth:`pose_derivative`
returns ∂G_c/∂(y0, a) (N, 6) for the chain rule with rigid coordinates q:
∂G_c/∂q = ∂G_c/∂y0 · ∂y0/∂q + ∂G_c/∂a · ∂a/∂q.

**Reaction on the body** (:meth:`body_load`): R_pose = [Σ_k f_k ; Q Σ_k s_k f_k]
conjugate to the pose (y0, a), derived in :mod:`skfiber.contact.cylinder_body`.

**Broad phase**: an element is evaluated only if the ball around the box of its
Bézier control points, grown by a bound of its current radius, reaches the
(capsule of the) cylinder.

**Implementation**: the broad phase, the narrow phase with the penalty force,
residual and body reaction, and all derivatives (tangent triplets, pose
derivative, body load derivatives) are three compiled loops over the elements
and their contact points (:mod:`skfiber.contact.cylinder_kernels`, numba):
with a few dozen contact points per state, numpy's per-call overhead would
dominate.  One state (u, pose) is computed once and kept
(:class:`~skfiber.contact.cylinder_points.CylinderState`): the residual call,
the tangent call, the body load and the pose derivative of one Newton
iteration share it.  The tests compare the kernels with numpy computations of
the same formulas and the derivatives with finite differences.

**Safeguard** (:meth:`max_step`, eqs. 69–73 for a rigid partner, also for a
moving one): bounds derived in :mod:`skfiber.contact.cylinder_safeguard`.

**Inadmissible states**: a contact point with 1 + γ g ≤ 0 (or on the axis)
makes :meth:`evaluate` raise FloatingPointError naming the fiber, θ and the
cylinder; the model turns it into a Newton failure.

:class:`CylinderContact` ties together ``cylinder_pose`` (the pose),
``cylinder_search`` (broad and narrow phase, the last state kept),
``cylinder_points`` (the contact points of one state), ``cylinder_safeguard``,
``cylinder_body`` and ``cylinder_line_force`` (the VTK line force).

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.cylinder import CylinderContact
>>> fiber = sf.Fiber.straight((-1, 0, 0), (1, 0, 0), n_elements=8, radius=0.05)
>>> model = sf.Model([fiber])
>>> cyl = CylinderContact(point=(0, 0, -0.2), axis=(0, 1, 0), radius=0.2,
...                       law=PenaltyLaw(stiffness=500.0, gamma=4.0))
>>> ev = cyl.evaluate(model, np.zeros(model.n_dofs), 0.0)
>>> ev.n_active > 0, bool(ev.residual[2::6].sum() < 0)   # pushed up: G_z < 0
(True, True)
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Callable, Sequence

import numpy as np

from ..core.numbers import checked_real
from . import cylinder_kernels as ck
from .base import ContactEvaluation, PenaltyLaw
from .cylinder_body import CylinderBodyLoad, body_pose_function
from .cylinder_line_force import penalty_line_force
from .cylinder_points import (CylinderGaps, CylinderPoints, CylinderState, check_admissible, kernel_vector,
                              state_vector)
from .cylinder_pose import CylinderPose, check_pose_step, make_pose, vector_norm
from .cylinder_safeguard import bound_step, trial_step
from .cylinder_search import CylinderSearch
from .geometry import gauss_legendre

__all__ = ["CylinderContact", "CylinderPose", "CylinderGaps", "CylinderBodyLoad"]

# empty triplets of an evaluation without tangent (read-only: shared by all of them)
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUE = np.zeros(0)
_NO_INDEX.setflags(write=False)
_NO_VALUE.setflags(write=False)


class CylinderContact:
    """Contact of fibers with a rigid cylinder (paper eq. 51, A.4).

    Give either ``point`` and ``axis`` (a fixed cylinder) or ``pose``.

    Parameters
    ----------
    point
        y0 (m), a point on the axis; for a finite cylinder the centre of the
        end face at axial coordinate 0.
    axis
        Axis direction (any nonzero length; normalized internally).  For a
        finite cylinder it points from the end at y0 to the other end.
    radius
        r_RB (m), > 0.
    law
        :class:`~skfiber.contact.base.PenaltyLaw` (κ in N/m, γ).
    length
        L (m) for a finite cylinder (capsule rule, see the module notes), or
        None (default) for an infinite one.
    fibers
        The fibers it acts on (objects, indices or names); default all.
    quadrature_points
        Gauss–Legendre contact points per element (default 5, as the paper).
    pose
        Callable ``pose(t) -> (y0, axis)`` for a cylinder moving in time.
    safeguard
        ``"element"`` (default): the element-wise estimate of paper eq. 72 in
        :meth:`max_step`; ``"point"``: the same bound per contact point
        (sharper when one element moves a lot, same cost).  ``"trial"``: eq. 71 checked exactly at the end of
        the step, δ halved until it holds (no bound in between; much less
        conservative when the contact force is near the law's singular limit).
    name
        Name of the contact in the model (default ``"cylinder"``).

    Examples
    --------
    >>> from skfiber.contact import CylinderContact, PenaltyLaw
    >>> law = PenaltyLaw(stiffness=1000.0, gamma=2.0)
    >>> bone = CylinderContact((0, 0, 0), (0, 1, 0), 0.05, law=law, length=0.2, name="bone")   # fixed, finite
    >>> bone.radius, bone.length, bone.name
    (0.05, 0.2, 'bone')
    >>> moving = CylinderContact(radius=0.05, law=law, pose=lambda t: ((0, 0, 0.1 * t), (0, 1, 0)), name="roller")
    >>> moving.pose_at(2.0).point.tolist()
    [0.0, 0.0, 0.2]
    """

    def __init__(
        self,
        point: Sequence[float] | None = None,
        axis: Sequence[float] | None = None,
        radius: float | None = None,
        *,
        law: PenaltyLaw,
        length: float | None = None,
        fibers: Iterable | None = None,
        quadrature_points: int = 5,
        pose: Callable[[float], tuple] | None = None,
        safeguard: str = "element",
        name: str = "cylinder",
    ):
        if not isinstance(law, PenaltyLaw):
            raise TypeError(f"law must be a PenaltyLaw(stiffness=κ, gamma=γ), got {law!r}")
        checked_real("cylinder radius r_RB", radius, above=0, unit="m",
                     hint="; give the radius of the rigid cylinder in metres")
        if length is not None:
            checked_real("cylinder length", length, above=0, unit="m", hint="; or None for an infinite cylinder")
        if isinstance(quadrature_points, bool) or not isinstance(quadrature_points, (int, np.integer)) \
                or not 1 <= quadrature_points <= 64:
            raise ValueError(f"contact quadrature_points must be an integer in 1 … 64 (the paper uses 5), "
                             f"got {quadrature_points!r}")
        if safeguard not in ("element", "point", "trial"):
            raise ValueError(f"unknown safeguard estimate {safeguard!r}; "
                             "pick one of 'element' (paper eq. 72), 'point' or 'trial'")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if pose is None:
            if point is None or axis is None:
                raise ValueError("give the cylinder's point and axis, "
                                 "or pose=callable(t) -> (point, axis) for a moving one")
            self._fixed = make_pose(point, axis)
        else:
            if point is not None or axis is not None:
                raise ValueError("give either point and axis (a fixed cylinder) or pose (a moving one), not both")
            if not callable(pose):
                raise TypeError(f"pose must be a callable pose(t) -> (point, axis), got {pose!r}")
            self._fixed = None
        self.pose = pose
        if pose is not None:
            self.pose_at(0.0)  # validates the callable's output
        self.radius = float(radius)
        self.law = law
        self.length = None if length is None else float(length)
        if fibers is not None and (isinstance(fibers, (str, int, np.integer)) or not isinstance(fibers, Iterable)):
            fibers = [fibers]  # one fiber given by itself
        self.fibers = None if fibers is None else list(fibers)
        self.quadrature_points = int(quadrature_points)
        self.safeguard = safeguard
        self.name = name
        self.xi, self.weights = gauss_legendre(self.quadrature_points)
        self._search = CylinderSearch(self)  # broad/narrow phase, kept per discretization and for the last state

    def __repr__(self) -> str:
        where = "moving (pose(t))" if self.pose is not None else (
            f"point={self._fixed.point.tolist()}, axis={self._fixed.axis.tolist()}")
        length = "" if self.length is None else f", length={self.length:g}"
        return (f"CylinderContact({where}, radius={self.radius:g}{length}, κ={self.law.stiffness:g}, "
                f"γ={self.law.gamma:g}, points={self.quadrature_points}, name={self.name!r})")

    # --- cylinders of rigid bodies ------------------------------------------
    #: the rigid system and body this cylinder belongs to (None: fixed or pose(t))
    system = None
    body: str | None = None

    @classmethod
    def on_body(cls, system, body, *, law: PenaltyLaw, fibers: Iterable | None = None,
                quadrature_points: int = 5, safeguard: str = "element", name: str | None = None) -> "CylinderContact":
        """Contact with the cylinder of a rigid body (paper §3.3): it moves with q.

        The cylinder is the body's (start, axis, radius; finite, capsule rule).
        The model sets the coordinates q before each evaluation
        (:meth:`set_coordinates`); the coupled solver adds the reaction on the
        body (:meth:`body_load`) and the q-derivatives (:mod:`skfiber.coupling`).

        Examples
        --------
        >>> from skfiber.rigid import Body, Revolute, RigidSystem
        >>> system = RigidSystem()
        >>> system.add_body(Body("bone", start=(0, 0, 0), axis=(0, 0.2, 0), radius=0.02, mass=1.0),
        ...                 joint=Revolute(axis=(1, 0, 0))) and None
        >>> cyl = CylinderContact.on_body(system, "bone", law=PenaltyLaw(stiffness=100.0, gamma=4.0))
        >>> cyl.name, cyl.radius, cyl.length
        ('bone', 0.02, 0.2)
        """
        if not all(hasattr(system, name) for name in ("body", "cylinder", "n", "bodies")):  # a RigidSystem
            raise TypeError(f"system must be a skfiber.rigid.RigidSystem, got {type(system).__name__}")
        b = system.body(getattr(body, "name", body))  # raises for unknown bodies
        cylinder = system.cylinder(b.name)
        holder = {"q": np.zeros(system.n), "key": None}
        pose = body_pose_function(cylinder, holder)
        out = cls(radius=b.radius, law=law, length=b.length, fibers=fibers, quadrature_points=quadrature_points,
                  pose=pose, safeguard=safeguard, name=name or b.name)
        out.system, out.body, out._holder, out._cylinder = system, b.name, holder, cylinder
        return out

    def set_coordinates(self, q) -> None:
        """Rigid coordinates q of the body this cylinder belongs to (no-op for other cylinders)."""
        if self.body is None:
            return
        q = np.asarray(q, dtype=float)
        if q.shape != (self.system.n,):
            raise ValueError(f"q must have {self.system.n} entries, got shape {q.shape}")
        self._holder["q"] = q

    def cache_body_pose(self, q, t: float, point, axis) -> None:
        """Keep the pose of the body's cylinder at (q, t), computed by the caller (the coupled solver).

        :meth:`pose_at` then returns it without evaluating the body again
        while the coordinates set by :meth:`set_coordinates` are q.

        Parameters
        ----------
        q
            The rigid coordinates the pose belongs to.
        t
            Time (s).
        point
            y0, the start of the body's cylinder at (q, t) (3,).
        axis
            a, its raw axis (end − start) at (q, t) (3,).

        Raises
        ------
        ValueError
            If this cylinder does not belong to a rigid body (:meth:`on_body`).
        """
        if self.body is None:
            raise ValueError(f"cylinder {self.name!r} does not belong to a rigid body; "
                             "cache_body_pose is for cylinders made with CylinderContact.on_body")
        self._holder["key"], self._holder["value"] = (np.asarray(q, dtype=float).tobytes(), float(t)), (point, axis)

    def clear_cache(self) -> None:
        """Forget the last state kept (the next evaluation computes the contact points again)."""
        self._search.clear()

    # --- geometry ---------------------------------------------------------
    def pose_at(self, t: float) -> CylinderPose:
        """Point, axis and unit axis at time t."""
        if self._fixed is not None:
            return self._fixed
        value = self.pose(t)
        cached = getattr(self, "_pose_cache", None)
        if cached is not None and cached[0] is value:  # a body pose, unchanged since the last call
            return cached[1]
        try:
            point, axis = value
        except (TypeError, ValueError) as err:
            raise ValueError(f"pose({t!r}) must return (point, axis), each 3 numbers: {err}") from err
        pose = make_pose(point, axis)
        self._pose_cache = (value, pose)
        return pose

    def fiber_elements(self, discretization) -> np.ndarray:
        """Indices of the elements of the fibers this cylinder acts on (kept per discretization).

        Parameters
        ----------
        discretization
            The model's :class:`~skfiber.discretization.Discretization`.

        Returns
        -------
        numpy.ndarray
            Sorted element indices (shared: do not modify).
        """
        return self._search.fiber_elements(discretization)

    def candidates(self, model, u: np.ndarray, t: float, du: np.ndarray | None = None, *,
                   pose_step: tuple | None = None) -> np.ndarray:
        """Broad phase: elements whose contact points may touch the cylinder.

        The box of an element's Bézier control points (of u and, with ``du``,
        also of u + du: then for every u + δ du, δ ∈ [0, 1]) is enclosed in
        its circumscribed ball (centre c, radius ρ_b); a contact point x of the
        element has d(x) ≥ d(c) − ρ_b and r(x) ≤ r̄_E = max r0 √(max ‖A1‖ /
        min ‖x′‖) with min ‖x′‖ bounded below by the derivative's control
        points.  The element is kept when d(c) − ρ_b < r_RB + r̄_E.

        With ``pose_step=(Δy0, Δa)`` the cylinder moves along the step too
        (y0 + δ Δy0, a + δ Δa, δ ∈ [0, 1]) and the reach grows by
        ‖Δy0‖ + min(L, ‖c − y0‖ + ‖Δy0‖) τ(1) (:mod:`skfiber.contact.cylinder_safeguard`).
        """
        d = model.discretization
        el = self.fiber_elements(d)
        if el.size == 0:
            return el
        pose = self.pose_at(t)
        if du is None and pose_step is None:  # the same state is queried by evaluate, body_load, …
            return self._state(model, u, t).elements
        return self._search.broad(d, u, pose, el, du, None if pose_step is None else check_pose_step(pose_step))

    def kernel_data(self, discretization) -> ck.KernelData:
        """The arrays the compiled contact loops need for this contact rule (kept per discretization).

        Parameters
        ----------
        discretization
            The model's :class:`~skfiber.discretization.Discretization`.

        Returns
        -------
        skfiber.contact.cylinder_kernels.KernelData
            At the ``quadrature_points`` contact points (shared: do not modify).
        """
        return self._search.kernel_data(discretization)

    def _state(self, model, u: np.ndarray, t: float) -> CylinderState:
        """Broad and narrow phase at (u, pose(t)) and everything derived from them, memoized.

        :meth:`evaluate` (residual, then tangent), :meth:`body_load`,
        :meth:`pose_derivative` and :meth:`candidates` all ask for the same
        state within one Newton iteration; the contact points are found and
        their forces and derivatives computed once
        (:class:`~skfiber.contact.cylinder_points.CylinderState`).
        """
        return self._search.state(model, u, self.pose_at(t))

    def contact_points(self, model, u: np.ndarray, t: float, elements: np.ndarray) -> CylinderPoints:
        """Narrow phase: the contact points of ``elements`` at (u, pose(t)), without check (memoized).

        Parameters
        ----------
        model
            The fiber model (``model.discretization``).
        u
            (N,) fiber displacement DOF vector.
        t
            Time (s), for the pose.
        elements
            Element indices, e.g. :meth:`candidates`.

        Returns
        -------
        CylinderPoints
            Per point x, closest point, distance, normal, gap, 1 + γ g, …, and
            the assembled residual and body reaction (shared: do not modify).
        """
        return self._search.points(model, u, self.pose_at(t), elements)

    def gaps(self, model, u: np.ndarray, t: float = 0.0) -> CylinderGaps:
        """Gaps and closest points at the contact points of the elements in reach (no check)."""
        el = self.candidates(model, u, t)
        nar = self.contact_points(model, u, t, el)
        s = nar.sample
        return CylinderGaps(el, s.fiber, s.theta, s.x, nar.closest, nar.d, s.radius, nar.g, nar.nu, nar.adm.copy())

    # --- residual and tangent ----------------------------------------------
    def evaluate(self, model, u: np.ndarray, t: float, *, tangent: bool = True) -> ContactEvaluation:
        """Residual contribution, tangent triplets, admissibility and active count.

        Raises FloatingPointError (naming fiber and cylinder) when a point has
        1 + γ g ≤ 0.
        """
        st = self._state(model, u, t)
        trial = self.safeguard == "trial"  # eq. 71 checked from this and the next evaluation (margins_kept)
        if st.nar is None:
            return ContactEvaluation(np.zeros(st.n_dofs), margins=(st.elements, np.zeros((0, self.xi.size)))
                                     if trial else None)
        adm = st.check(model, t)
        triplets = st.tangent_triplets() if tangent and st.act.size else (_NO_INDEX, _NO_INDEX, _NO_VALUE)
        return ContactEvaluation(st.residual.copy(), *triplets, admissibility=adm.ravel(), n_active=st.n_active,
                                 margins=(st.elements, adm) if trial else None)

    def pose_derivative(self, model, u: np.ndarray, t: float) -> np.ndarray:
        """∂G_c/∂(y0, a) as a dense (N, 6) array: columns y0_x, y0_y, y0_z, a_x, a_y, a_z.

        ``a`` is the raw axis of ``pose`` (not normalized); chain with rigid
        coordinates q as ∂G_c/∂q = D[:, :3] ∂y0/∂q + D[:, 3:] ∂a/∂q.
        """
        st = self._state(model, u, t)
        if st.nar is None:
            return np.zeros((st.n_dofs, 6))
        st.check(model, t)  # raises on an inadmissible state
        if st.act.size == 0:
            return np.zeros((st.n_dofs, 6))
        return st.pose_derivative()

    def resultant(self, model, u: np.ndarray, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Force (N) and moment about y0 (N·m) that the fibers exert on the cylinder."""
        el = self.candidates(model, u, t)
        if el.size == 0:
            return np.zeros(3), np.zeros(3)
        nar = self.contact_points(model, u, t, el)
        check_admissible(self.name, self.law.gamma, model, nar, t)
        F, _ = self.law.force(nar.g)
        f = -(F * nar.sample.a1_norm * nar.sample.weight)[..., None] * nar.nu  # on the cylinder
        arm = nar.closest - nar.pose.point
        return f.sum(axis=(0, 1)), np.cross(arm, f).sum(axis=(0, 1))

    def check_model(self, model) -> None:
        """ValueError when a fiber of ``fibers`` is not part of the model (:meth:`skfiber.Model.add_contact`
        calls it)."""
        for fiber in self.fibers or ():
            model.discretization.fiber_index(fiber)

    def acts_on(self, model, fiber) -> bool:
        """Whether this cylinder acts on ``fiber`` (object, index or name) of ``model``."""
        d = model.discretization
        k = d.fiber_index(fiber)
        return self.fibers is None or any(d.fiber_index(f) == k for f in self.fibers)

    def line_force(self, points, radius, *, t: float = 0.0, q=None) -> np.ndarray:
        """Contact line force F(g) ν on fiber centre-line points, N per metre of current fiber length.

        The integrand of the contact residual (g = d/(r_RB + r) − 1 with the
        current radius r, ν the unit normal from the axis to the point, F the
        penalty law; :mod:`skfiber.contact.cylinder_line_force`), at any points
        along the fibers rather than only at the contact quadrature points: the
        VTK field ``contact_force`` (:func:`skfiber.io.fiber_mesh`).  Points the
        cylinder does not touch get 0; the force is capped at its value at
        1 + γ g = 10⁻³, which also stands where the law is out of range (1 + γ g ≤ 0,
        between contact points): always finite, see the module.

        Parameters
        ----------
        points
            (n, 3) centre-line points x (m).
        radius
            (n,) current fiber radius r = r0/√λ at those points (m).
        t
            Time (s), for the pose of a moving cylinder.
        q
            Rigid coordinates, for the cylinder of a body (required there).

        Returns
        -------
        (n, 3) array: the force per current length on the fiber (N/m).

        Examples
        --------
        >>> cyl = CylinderContact((0, 0, 0), (0, 0, 1), 0.1, law=PenaltyLaw(stiffness=100.0, gamma=4.0))
        >>> cyl.line_force([[0.18, 0, 0.5], [1.0, 0, 0]], [0.1, 0.1]).round(3).tolist()
        [[16.667, 0.0, 0.0], [0.0, 0.0, 0.0]]
        """
        x = np.asarray(points, dtype=float)
        r = np.asarray(radius, dtype=float)
        if x.ndim != 2 or x.shape[1] != 3 or r.shape != x.shape[:1]:
            raise ValueError(f"points must have shape (n, 3) and radius (n,); got {x.shape} and {r.shape}")
        if self.body is not None:
            if q is None:
                raise ValueError(f"cylinder {self.name!r} moves with body {self.body!r}: give the rigid "
                                 "coordinates q (e.g. state.q)")
            q = np.asarray(q, dtype=float)
            if q.shape != (self.system.n,):
                raise ValueError(f"q must have {self.system.n} entries, got shape {q.shape}")
            p = self._cylinder.pose(q, t, hessian=False)
            pose = make_pose(p.start, p.axis)
        else:
            pose = self.pose_at(t)
        return penalty_line_force(pose, x, r, cylinder_radius=self.radius, length=self.length, law=self.law)

    def body_load(self, model, u: np.ndarray, t: float, *, tangent: bool = True) -> CylinderBodyLoad:
        """Reaction of the fibers on the cylinder's rigid body, conjugate to the pose (y0, a).

        Parameters
        ----------
        model
            The fiber model (``model.discretization``).
        u
            (N,) fiber displacement DOF vector.
        t
            Time (s): the pose is ``pose_at(t)``.
        tangent
            Also return ∂R_pose/∂u and ∂R_pose/∂(y0, a) (default True).

        Returns
        -------
        CylinderBodyLoad
            ``force`` = R_pose = [Σ_k f_k ; Q Σ_k s_k f_k] (6,), the body's
            residual contribution (the fibers push it with −f_k at
            y0 + s_k t, s_k frozen); with ``tangent`` its exact derivatives:
            ``d_u_values`` (6, k) at the DOFs ``columns`` (``d_u``: dense
            (6, N)) and ``d_pose`` (6, 6).  Chain with rigid coordinates q as
            R_q = Jpᵀ R_pose, Jp = ∂(y0, a)/∂q.  Formulas in
            :mod:`skfiber.contact.cylinder_body`.

        Raises
        ------
        ValueError
            If ``u`` is not a finite vector of length N.
        FloatingPointError
            If a contact point is inadmissible (1 + γ g ≤ 0), as :meth:`evaluate`.
        """
        N = model.discretization.n_dofs
        u = state_vector(u, N)
        st = self._state(model, u, t)
        if st.nar is not None:
            st.check(model, t)  # raises on an inadmissible state
        return CylinderBodyLoad.of(st, tangent=tangent)

    # --- safeguard ----------------------------------------------------------
    def max_step(self, model, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float,
                 pose_step: tuple | None = None) -> float:
        """Largest δ ∈ (0, 1] keeping every contact point admissible (eqs. 69–73).

        For each element E that the broad phase finds along the whole step, a
        lower bound e_E(δ) of 1 + γ g(u + δ Δu) at its contact points
        (:mod:`skfiber.contact.cylinder_safeguard`); δ is the largest value
        with e_E(δ) > δ̄ min(e_E(0), 1) for all E: points in contact keep the
        fraction δ̄ of their margin (paper eq. 71), points not in contact may
        approach down to 1 + γ g = δ̄.  With ``safeguard="point"`` the bound
        is per point, with ``"trial"`` eq. 71 is checked at the end of the
        step.  Returns 1.0 when no element is near, 0.0 when u itself is
        inadmissible.

        Parameters
        ----------
        model, u, du, t
            Model, state, full Newton step of the fiber DOFs and time.
        delta_bar
            δ̄ ∈ (0, 1), the fraction of the margin to keep.
        pose_step
            ``(Δy0, Δa)``, the change of the cylinder's pose over the full
            step (it moves as y0 + δ Δy0, a + δ Δa), or None (default) for a
            cylinder that does not move during the step.

        Raises
        ------
        ValueError
            If ``delta_bar`` is not in (0, 1) or ``pose_step`` is not two
            finite 3-vectors.
        """
        if not 0 < delta_bar < 1:
            raise ValueError(f"delta_bar must lie in (0, 1), got {delta_bar!r}")
        motion = None
        pose = self.pose_at(t)
        if pose_step is not None:
            pose_step = check_pose_step(pose_step)
            motion = (vector_norm(pose_step[0]), vector_norm(pose_step[1]), pose.axis_norm)
        d = model.discretization
        el = self.fiber_elements(d)
        if self.safeguard == "trial":  # one compiled call: broad phase along the step, narrow phase, halvings
            data = self.kernel_data(d)
            finite, L = ck.length_args(self.length)
            dy0, da = (np.zeros(3), np.zeros(3)) if pose_step is None else pose_step
            vec3 = [np.require(a, dtype=float, requirements="CW") for a in (pose.point, pose.axis, dy0, da)]
            step = trial_step(data.reference, kernel_vector(u, d.n_dofs), kernel_vector(du, d.n_dofs, "du"),
                              data.dofs, data.S, data.dS, data.r0, data.A1, data.h, data.w, data.r0_max,
                              data.A1_max, np.require(el, dtype=np.int64, requirements="CW"), *vec3,
                              pose_step is not None, float(self.radius), finite, L, float(self.law.stiffness),
                              float(self.law.gamma), float(delta_bar))
            if np.isnan(step):
                raise ValueError(f"{self.name}: the cylinder's axis a + δ Δa has zero length within the step "
                                 "(pose_step turns the axis through zero)")
            return float(step)
        if el.size:
            el = self._search.broad(d, u, pose, el, du, pose_step)
        if el.size == 0:
            return 1.0
        nar = self.contact_points(model, u, t, el)
        if nar.bad >= 0 and not (np.all(nar.d > 0) and np.all(nar.adm > 0)):
            return 0.0
        return bound_step(nar, du, delta_bar, radius=self.radius, length=self.length, gamma=self.law.gamma,
                          pointwise=self.safeguard == "point", motion=motion)
