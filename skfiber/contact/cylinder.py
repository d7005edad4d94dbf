"""Contact of fibers with a rigid cylinder (paper §3.3, eq. 51; §4.3; Appendix A.4).

A cylinder is a point y0 on its axis, an axis direction a (t = a/|a|), a
radius r_RB and optionally a length L.  A contact quadrature point x of a
fiber (Gauss–Legendre, ``quadrature_points`` per element, default 5) has the
closest axis point y = y0 + ((x − y0) · t) t (the paper's eq. 51 text has a
minus sign there, a misprint) and the gap (eq. 51) with the *current* fiber
radius

    g = d / (r_RB + r) − 1,   d = |x − y|,   r = r0(θ) / √λ,   λ = |x′| / |X′|.

The fiber feels the line force F(g) ν per current length, F the rational
penalty law (eq. 44, :class:`~skfiber.contact.base.PenaltyLaw`) and
ν = (x − y)/d the unit normal pointing *from the axis to the fiber*: the force
pushes the fiber out of the cylinder.  (The paper writes t̄ = F n with
n = (y − x)/d, eqs. 42–43, and subtracts ∫ t̄ · ξ in eq. 56; taken literally
that pulls the fiber towards the axis, so the physical sign is used here and
checked by a test.)  With the residual G = internal − external, the
contribution is (paper eq. 65)

    G_c = − Σ_k F(g_k) ν_k · ξ(x_k) |a1(x_k)| w_k,      w_k = Gauss weight × element length in θ.

**Finite cylinders** (``length=L``): the axis is the segment y0 + s t,
s ∈ [0, L], and y is the closest point of that *segment* (the axial
coordinate clamped to [0, L]).  The contact body is thus a capsule: the
lateral surface of the cylinder closed by hemispherical caps of radius r_RB.
The force stays continuous when a fiber slides over an end (an open tube or
flat discs would make it jump).  ``length=None`` is an infinite cylinder.

**Consistent tangent** (Appendix A.4, rederived with the physical sign): with
w = x − y, M = ∂w/∂x (P = I − t⊗t on the lateral surface, I on the caps),
ρ = r_RB + r, J = |a1|, W = w_k,

    δ(F ν J W) = W [ F′ J/ρ ν⊗ν + F J (I − ν⊗ν)/d ] M δx
               + W [ F′ d r / (2 ρ² J) + F / J ] ν (a1 · δx′),

the second line from δr = −r (a1 · δx′)/(2 J²) (radius through λ) and
δJ = a1 · δx′ / J.  Blocks are (12 × 12) per element in COO form, only for
elements with a point in contact.

**Moving cylinders**: ``pose(t) -> (y0, axis)``.  :meth:`pose_derivative`
returns ∂G_c/∂(y0, a) (N, 6) for the chain rule with rigid coordinates q:
∂G_c/∂q = ∂G_c/∂y0 · ∂y0/∂q + ∂G_c/∂a · ∂a/∂q.

**Reaction on the body** (:meth:`body_load`): the fibers push the body of the
cylinder with −f_k at the body material point y_k = y0 + s_k t(a) (s_k = sc_k,
the clamped axial coordinate, frozen as a material coordinate).  By virtual
work its contribution to the body's residual (inertia + internal − external,
as for the fiber), conjugate to the pose (y0, a), is

    R_pose = [ Σ_k f_k ;  Q Σ_k s_k f_k ],   Q = ∂t/∂a = (I − t⊗t)/|a|,
    f_k = F(g_k) ν_k J_k W_k,

and a rigid body with pose (y0, a)(q) gets R_q = Jpᵀ R_pose.  Its exact
derivative uses, per point, ∂f/∂x = C M, ∂f/∂x′ = b ν⊗a1 (b the factor of the
second tangent line above), ∂f/∂y0 = −C M, ∂f/∂a = −C T Q with
T = s I + [lateral] t⊗(x − y0); ∂s/∂x = −∂s/∂y0 = [lateral] t and
∂s/∂a = [lateral] Q (x − y0) (s is constant on the caps); and, for a fixed
vector v, ∂(Q v)/∂a = −((Q v)⊗t + (t·v) Q + t⊗(Q v))/|a|.  Hence

    ∂R_pose/∂x_k = [ C M ;  Q f⊗∂s/∂x + s Q C M ],   ∂R_pose/∂x′_k = [ 1 ; s Q ] b ν⊗a1,
    ∂R_pose/∂y0 = −Σ_k ∂R_pose/∂x_k,
    ∂R_pose/∂a  = [ −Σ C T Q ;  ∂(Q V)/∂a|_V + Σ (Q f⊗∂s/∂a − s Q C T Q) ],   V = Σ s f.

The moment about y0 of the forces on the cylinder is m = −t × V, so
R_pose[3:] · (e × a) = −m · e for every e, and G_c · δu + R_pose · δpose = 0
for any rigid motion of fiber and cylinder together (Newton's third law).

**Broad phase**: an element is evaluated only if the ball around the box of its
Bézier control points, grown by a bound of its current radius, reaches the
(capsule of the) cylinder.

**Implementation**: the broad phase, the narrow phase with the penalty force,
residual and body reaction, and all derivatives (tangent triplets, pose
derivative, body load derivatives) are three compiled loops over the elements
and their contact points (:mod:`skfiber.contact.cylinder_kernels`, numba):
with a few dozen contact points per state, numpy's per-call overhead would
dominate.  One state (u, pose) is computed once and kept (:class:`_ContactState`):
the residual call, the tangent call, the body load and the pose derivative of
one Newton iteration share it.  The tests compare the kernels with numpy
computations of the same formulas and the derivatives with finite differences.

**Safeguard** (:meth:`max_step`, eqs. 69–73 for a rigid partner): per element
E near the cylinder, d(δ) ≥ min_E d − δ max_E |Δu| (the distance to a line or
segment is 1-Lipschitz) and r(δ) ≤ χ_E(δ) = max_E r0 √(max_E |A1| /
(min_E |a1| − δ max_E |Δu′|)) give e_E(δ) ≤ 1 + γ g at every contact point
of E (min/max over its contact points); the step is the largest δ with
e_E(δ) > δ̄ min(e_E(0), 1) for every element.  ``safeguard="point"`` applies
the same bound to each contact point alone (sharper, same cost).

**Safeguard with a moving cylinder** (``max_step(..., pose_step=(Δy0, Δa))``,
the pose moving as y0 + δ Δy0, a + δ Δa): let s_δ be the (clamped) axial
coordinate of the closest point at δ.  As s_δ is admissible at δ = 0 too,
d(0) ≤ |x(0) − y0 − s_δ t(0)|, hence

    d(δ) ≥ d(0) − δ (|Δu| + |Δy0|) − |s_δ| |t(δ) − t(0)|,
    |t(δ) − t(0)| ≤ τ(δ) = min(2, δ |Δa| / (|a| − δ |Δa|))   (2 if |a| ≤ δ |Δa|),
    |s_δ| ≤ ρ(δ) = min(L, |x − y0| + δ (|Δu| + |Δy0|))     (no L if infinite),

the τ bound from |dt/dδ| ≤ |Δa| / |a(δ)| ≤ |Δa| / (|a| − δ |Δa|) integrated
(−ln(1 − z) ≤ z/(1 − z)), the ρ bound because |s_δ| ≤ |x(δ) − y0(δ)|: the arm
grows along the step (the term beyond d(0) − δ (|Δu| + |Δy0| + ρ0 |Δa| /
(|a| − δ |Δa|)) with ρ0 = max |x − y0| at δ = 0).  The broad phase grows its
reach by |Δy0| + min(L, |c − y0| + |Δy0|) τ(1) accordingly.

**Inadmissible states**: a contact point with 1 + γ g ≤ 0 (or on the axis)
makes :meth:`evaluate` raise FloatingPointError naming the fiber, θ and the
cylinder; the model turns it into a Newton failure.

Example
-------
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

import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Sequence

import numpy as np

from . import cylinder_kernels as ck
from .base import ContactEvaluation, PenaltyLaw
from .geometry import CenterlineSample, element_shapes, gauss_legendre, norm3

__all__ = ["CylinderContact", "CylinderPose", "CylinderGaps", "CylinderBodyLoad"]

# empty triplets of an evaluation without tangent (read-only: shared by all of them)
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUE = np.zeros(0)
_NO_INDEX.setflags(write=False)
_NO_VALUE.setflags(write=False)

@dataclass(frozen=True)
class CylinderPose:
    """The cylinder at one time: point y0, raw axis a, unit axis t = a/|a|."""

    point: np.ndarray
    axis: np.ndarray
    tangent: np.ndarray
    axis_norm: float


@dataclass(frozen=True)
class CylinderGaps:
    """Contact points of the elements in reach and their gaps.

    Attributes
    ----------
    elements : (m,) element indices; fiber : (m,) their fibers
    theta : (m, q) fiber parameter of the points
    x : (m, q, 3) points; closest : (m, q, 3) closest points y on the axis
    distance : (m, q) d = |x − y|; radius : (m, q) current fiber radius r
    gap : (m, q) g = d/(r_RB + r) − 1; normal : (m, q, 3) ν = (x − y)/d
    admissibility : (m, q) 1 + γ g
    """

    elements: np.ndarray
    fiber: np.ndarray
    theta: np.ndarray
    x: np.ndarray
    closest: np.ndarray
    distance: np.ndarray
    radius: np.ndarray
    gap: np.ndarray
    normal: np.ndarray
    admissibility: np.ndarray


@dataclass(frozen=True)
class CylinderBodyLoad:
    """Reaction of the fibers on the cylinder's body, conjugate to the pose (y0, a).

    Attributes
    ----------
    force : (6,) R_pose = [Σ f_k ; Q Σ s_k f_k] (residual contribution of the
        body: the forces −f_k act on it; see the module notes)
    n_dofs : N, the number of fiber DOFs
    n_active : number of contact points with g < 0
    columns : (k,) sorted DOF indices where ∂R_pose/∂u may be nonzero, or None
        without tangent
    d_u_values : (6, k) ∂R_pose/∂u at ``columns``, or None without tangent
    d_pose : (6, 6) ∂R_pose/∂(y0, a) (columns y0_x, y0_y, y0_z, a_x, a_y, a_z),
        or None without tangent
    """

    force: np.ndarray
    n_dofs: int
    n_active: int = 0
    columns: np.ndarray | None = None
    d_u_values: np.ndarray | None = None
    d_pose: np.ndarray | None = None

    @cached_property
    def d_u(self) -> np.ndarray | None:
        """∂R_pose/∂u as a dense (6, N) array (None without tangent)."""
        if self.d_u_values is None:
            return None
        D = np.zeros((6, self.n_dofs))
        D[:, self.columns] = self.d_u_values
        return D


def _column(start: int, stop: int | None = None, doc: str = "") -> property:
    """A property giving one column (or 3 columns: a vector) of ``_Narrow.pts`` as a view."""
    if stop is None:
        return property(lambda self: self.pts[..., start], doc=doc)
    return property(lambda self: self.pts[..., start:stop], doc=doc)


class _Narrow:
    """The contact points of some elements and their data at one state (internal).

    The output of :func:`~skfiber.contact.cylinder_kernels.contact_points`:
    ``pts`` (m, q, NF) holds the per-point data, exposed as views below
    (x, closest point y, distance d, normal ν, gap g, …); ``adm`` = 1 + γ g;
    ``residual``, ``force`` (R_pose), ``n_active``, ``act`` (rows with a point
    in contact) and ``bad`` (first inadmissible point or −1).  ``sample``
    gives the centerline data as a :class:`CenterlineSample`.
    """

    def __init__(self, elements: np.ndarray, pose: CylinderPose, shapes, element_fiber: np.ndarray, out: tuple):
        self.elements = elements
        self.pose = pose
        self._shapes = shapes
        self._element_fiber = element_fiber
        self.pts, self.adm, self.residual, self.force, self.n_active, self.act, self.bad = out
        self.adm.setflags(write=False)  # handed out by evaluate (admissibility, margins) without a copy

    x = _column(ck.COL_X, ck.COL_X + 3, "x (m, q, 3)")
    p = _column(ck.COL_P, ck.COL_P + 3, "x − y0 (m, q, 3)")
    sc = _column(ck.COL_SC, doc="clamped axial coordinate of the closest point (m, q)")
    closest = _column(ck.COL_Y, ck.COL_Y + 3, "closest axis point y (m, q, 3)")
    d = _column(ck.COL_D, doc="d = |x − y| (m, q)")
    nu = _column(ck.COL_NU, ck.COL_NU + 3, "ν = (x − y)/d (m, q, 3)")
    rho = _column(ck.COL_RHO, doc="r_RB + r (m, q)")
    g = _column(ck.COL_G, doc="gap g = d/ρ − 1 (m, q)")
    radius = _column(ck.COL_RAD, doc="current fiber radius r (m, q)")

    @property
    def side(self) -> np.ndarray:
        """True on the lateral surface, False on a cap (m, q)."""
        return self.pts[..., ck.COL_SIDE] != 0.0

    @cached_property
    def sample(self) -> CenterlineSample:
        """The centerline at the points (what :func:`~skfiber.contact.geometry.sample_centerline` gives)."""
        sh, el, pts = self._shapes, self.elements, self.pts
        return CenterlineSample(
            elements=el, dofs=sh.dofs[el], fiber=self._element_fiber[el], theta=sh.theta[el], S=sh.S[el],
            dS=sh.dS[el], x=self.x, a1=pts[..., ck.COL_A1:ck.COL_A1 + 3], a1_norm=pts[..., ck.COL_A1N],
            A1_norm=sh.A1[el], r0=sh.r0[el], stretch=pts[..., ck.COL_LAM], radius=self.radius,
            weight=pts[..., ck.COL_W])


class _ContactState:
    """The contact at one state (u, pose) and what is derived from it (internal).

    Made once per state by :meth:`CylinderContact._state`: the narrow phase
    (:class:`_Narrow`) already holds the residual, the admissibility and the
    body reaction; the derivatives (tangent triplets, pose derivative, body
    load derivatives) come from one kernel call on first use and are kept, so
    that the residual call, the tangent call, the body load and the pose
    derivative of one Newton iteration share the work.  ``nar`` is None when no
    element is in reach.
    """

    def __init__(self, contact: "CylinderContact", n_dofs: int, elements: np.ndarray, nar: "_Narrow | None",
                 data: "ck.KernelData"):
        self.contact = contact
        self.n_dofs = n_dofs
        self.elements = elements
        self.nar = nar
        self.data = data

    def check(self, model, t: float) -> np.ndarray:
        """1 + γ g of the points in reach (m, q); raises FloatingPointError (at time t) on an inadmissible state."""
        if self.nar.bad >= 0:
            self.contact._check(model, self.nar, t)
        return self.nar.adm

    @property
    def residual(self) -> np.ndarray:
        """G_c (N,)."""
        return self.nar.residual

    @property
    def body_force(self) -> np.ndarray:
        """R_pose = [Σ f ; Q Σ s f] (6,)."""
        return self.nar.force

    @property
    def n_active(self) -> int:
        return self.nar.n_active

    @property
    def act(self) -> np.ndarray:
        """Rows (elements) of ``nar`` with a point in contact."""
        return self.nar.act

    @cached_property
    def derivatives(self) -> tuple:
        """:func:`~skfiber.contact.cylinder_kernels.contact_derivatives` on the elements in contact (read-only)."""
        nar = self.nar
        out = ck.contact_derivatives(self.data, nar.pts, nar.elements, nar.act, nar.pose.tangent,
                                     nar.pose.axis_norm, self.n_dofs)
        for a in out:
            a.setflags(write=False)
        return out

    def tangent_triplets(self):
        """COO (rows, cols, values) of ∂G_c/∂u on the elements in contact (read-only arrays)."""
        return self.derivatives[:3]

    def pose_derivative(self) -> np.ndarray:
        """∂G_c/∂(y0, a) (N, 6)."""
        return self.derivatives[3].copy()

    def body_tangent(self):
        """(columns, ∂R_pose/∂u at them (6, k), ∂R_pose/∂(y0, a) (6, 6))."""
        columns, values, d_pose = self.derivatives[4:]
        return columns.copy(), values.copy(), d_pose.copy()


def _vector(value, name: str, fix: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"cylinder {name} must be 3 numbers, got {value!r}; {fix}") from err
    if arr.shape != (3,):
        raise ValueError(f"cylinder {name} must be 3 numbers, got shape {arr.shape}; {fix}")
    x, y, z = arr.tolist()  # scalar checks: much cheaper than numpy calls on 3 numbers
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ValueError(f"cylinder {name} must be finite, got {arr.tolist()}; {fix}")
    return arr


def _positive_number(value) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float, np.floating, np.integer))
            and math.isfinite(value) and value > 0)


def _make_pose(point, axis) -> CylinderPose:
    y0 = _vector(point, "point", "give a point on the cylinder axis in metres, e.g. point=(0.5, 0.5, -0.2)")
    a = _vector(axis, "axis", "give the axis direction, e.g. axis=(1, 1, 0)")
    n = _norm(a)
    if not n > 0:
        raise ValueError(f"cylinder axis must be a nonzero direction, got {a.tolist()}; give e.g. axis=(1, 1, 0)")
    return CylinderPose(np.array(y0), a, a / n, n)  # a copy of y0: contiguous and writable for the kernels


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
        if not _positive_number(radius):
            raise ValueError(f"cylinder radius r_RB must be a finite number > 0 (m), got {radius!r}; "
                             "give the radius of the rigid cylinder in metres")
        if length is not None and not _positive_number(length):
            raise ValueError(f"cylinder length must be a finite number > 0 (m), or None for an infinite "
                             f"cylinder; got {length!r}")
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
            self._fixed = _make_pose(point, axis)
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
        self._masks: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._data: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # kernel data per discretization
        self._memo: dict = {}  # last broad/narrow phase (evaluate, body_load, … ask for the same state)

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

        Example
        -------
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

        def pose(t):
            key = (holder["q"].tobytes(), float(t))
            if holder["key"] != key:  # the pose is asked for many times per evaluation
                p = cylinder.pose(holder["q"], t, hessian=False)
                holder["key"], holder["value"] = key, (p.start, p.axis)
            return holder["value"]

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
        pose = _make_pose(point, axis)
        self._pose_cache = (value, pose)
        return pose

    def _fiber_elements(self, discretization) -> np.ndarray:
        """Indices of the elements of the fibers this cylinder acts on."""
        el = self._masks.get(discretization)
        if el is None:
            if self.fibers is None:
                el = np.arange(discretization.element_fiber.size)
            else:
                ks = [discretization.fiber_index(f) for f in self.fibers]
                el = np.flatnonzero(np.isin(discretization.element_fiber, ks))
            self._masks[discretization] = el
        return el

    def candidates(self, model, u: np.ndarray, t: float, du: np.ndarray | None = None, *,
                   pose_step: tuple | None = None) -> np.ndarray:
        """Broad phase: elements whose contact points may touch the cylinder.

        The box of an element's Bézier control points (of u and, with ``du``,
        also of u + du: then for every u + δ du, δ ∈ [0, 1]) is enclosed in
        its circumscribed ball (centre c, radius ρ_b); a contact point x of the
        element has d(x) ≥ d(c) − ρ_b and r(x) ≤ r̄_E = max r0 √(max |A1| /
        min |x′|) with min |x′| bounded below by the derivative's control
        points.  The element is kept when d(c) − ρ_b < r_RB + r̄_E.

        With ``pose_step=(Δy0, Δa)`` the cylinder moves along the step too
        (y0 + δ Δy0, a + δ Δa, δ ∈ [0, 1]) and the reach grows by
        |Δy0| + min(L, |c − y0| + |Δy0|) τ(1) (see the module notes).
        """
        d = model.discretization
        el = self._fiber_elements(d)
        if el.size == 0:
            return el
        pose = self.pose_at(t)
        if du is None and pose_step is None:  # the same state is queried by evaluate, body_load, …
            return self._state(model, u, t).elements
        return self._broad(d, u, pose, el, du, None if pose_step is None else _pose_step(pose_step))

    def _broad(self, d, u: np.ndarray, pose: CylinderPose, el: np.ndarray, du: np.ndarray | None = None,
               pose_step: tuple | None = None) -> np.ndarray:
        """The broad phase of :meth:`candidates` on the elements ``el`` (no memo; one compiled call).

        ``pose_step`` is (Δy0, Δa) as validated by :func:`_pose_step`, or None.
        """
        motion = None
        if pose_step is not None:
            dy0, da = pose_step
            motion = (_norm(dy0), _turn_bound(1.0, _norm(da), pose.axis_norm))
        du = None if du is None else _kernel_vector(du, d.n_dofs, "du")
        return ck.broad_phase(self._kernel_data(d), _kernel_vector(u, d.n_dofs), np.asarray(el, dtype=np.int64),
                              pose.point, pose.tangent, self.radius, self.length, du, motion)

    def _kernel_data(self, d) -> "ck.KernelData":
        """The :class:`~skfiber.contact.cylinder_kernels.KernelData` of the rule on ``d`` (kept per discretization,
        with its :class:`~skfiber.contact.geometry.ElementShapes` in ``self._data[d][0]``)."""
        out = self._data.get(d)
        if out is None:
            shapes = element_shapes(d, self.xi, self.weights)
            out = self._data[d] = (shapes, ck.KernelData.of(shapes, d))
        return out[1]

    def _state(self, model, u: np.ndarray, t: float) -> "_ContactState":
        """Broad and narrow phase at (u, pose(t)) and everything derived from them, memoized.

        :meth:`evaluate` (residual, then tangent), :meth:`body_load`,
        :meth:`pose_derivative` and :meth:`candidates` all ask for the same
        state within one Newton iteration; the contact points are found and
        their forces and derivatives computed once (:class:`_ContactState`).
        """
        d = model.discretization
        pose = self.pose_at(t)
        u = _kernel_vector(u, d.n_dofs)
        key = (id(d), u.tobytes(), _pose_key(pose))
        memo = self._memo.get("state")
        if memo is not None and memo[0] == key:
            return memo[1]
        el = self._fiber_elements(d)
        data = self._kernel_data(d)
        if el.size:
            el = ck.broad_phase(data, u, el, pose.point, pose.tangent, self.radius, self.length)
        nar = self._narrow_new(model, u, pose, el) if el.size else None
        state = _ContactState(self, d.n_dofs, el, nar, data)
        self._memo["state"] = (key, state)
        if nar is not None:  # _narrow on these elements finds it too
            self._memo["narrow"] = (("narrow", id(d), key[1], el.tobytes(), key[2]), nar)
        return state

    def _narrow(self, model, u: np.ndarray, t: float, elements: np.ndarray) -> _Narrow:
        pose = self.pose_at(t)
        u = _kernel_vector(u, model.discretization.n_dofs)
        elements = np.asarray(elements, dtype=np.int64)
        key = ("narrow", id(model.discretization), u.tobytes(), elements.tobytes(), _pose_key(pose))
        if self._memo.get("narrow", (None,))[0] == key:
            return self._memo["narrow"][1]
        out = self._narrow_new(model, u, pose, elements)
        self._memo["narrow"] = (key, out)
        return out

    def _narrow_new(self, model, u: np.ndarray, pose: CylinderPose, elements: np.ndarray) -> _Narrow:
        """Narrow phase on ``elements`` (int64): one :func:`~skfiber.contact.cylinder_kernels.contact_points` call."""
        d = model.discretization
        data = self._kernel_data(d)
        out = ck.contact_points(data, _kernel_vector(u, d.n_dofs), elements, pose.point, pose.tangent,
                                pose.axis_norm, self.radius, self.length, self.law.stiffness, self.law.gamma)
        return _Narrow(elements, pose, self._data[d][0], d.element_fiber, out)

    def _check(self, model, nar: _Narrow, t: float) -> np.ndarray:
        """1 + γ g; raises FloatingPointError on an inadmissible state."""
        adm = nar.adm
        bad = ~(adm > 0) | ~(nar.d > 0) | ~np.isfinite(nar.radius)
        if np.any(bad):
            m, k = np.unravel_index(np.argmax(bad), bad.shape)
            fk = int(nar.sample.fiber[m])
            fname = model.discretization.fibers[fk].name
            label = f"fiber {fk}" + (f" ({fname!r})" if fname else "")
            raise FloatingPointError(
                f"inadmissible contact with cylinder {self.name!r} at t = {t:.6g} s: {label} at "
                f"θ = {nar.sample.theta[m, k]:.4g} penetrates too far (1 + γg = {adm[m, k]:.3g} ≤ 0; "
                f"distance to the axis {nar.d[m, k]:.4g} m, r_RB + r = {nar.rho[m, k]:.4g} m, γ = {self.law.gamma:g}); "
                "smaller load or time steps, or a larger penalty stiffness κ"
            )
        return adm

    def gaps(self, model, u: np.ndarray, t: float = 0.0) -> CylinderGaps:
        """Gaps and closest points at the contact points of the elements in reach (no check)."""
        el = self.candidates(model, u, t)
        nar = self._narrow(model, u, t, el)
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
        nar = self._narrow(model, u, t, el)
        self._check(model, nar, t)
        F, _ = self.law.force(nar.g)
        f = -(F * nar.sample.a1_norm * nar.sample.weight)[..., None] * nar.nu  # on the cylinder
        arm = nar.closest - nar.pose.point
        return f.sum(axis=(0, 1)), np.cross(arm, f).sum(axis=(0, 1))

    def acts_on(self, model, fiber) -> bool:
        """Whether this cylinder acts on ``fiber`` (object, index or name) of ``model``."""
        d = model.discretization
        k = d.fiber_index(fiber)
        return self.fibers is None or any(d.fiber_index(f) == k for f in self.fibers)

    def line_force(self, points, radius, *, t: float = 0.0, q=None) -> np.ndarray:
        """Contact line force F(g) ν on fiber centre-line points, N per metre of current fiber length.

        The integrand of the contact residual (module notes: g = d/(r_RB + r) − 1
        with the current radius r, ν the unit normal from the axis to the point, F
        the penalty law), at any points along the fibers rather than only at the
        contact quadrature points: the VTK field ``contact_force``
        (:func:`skfiber.io.fiber_mesh`).  Points the cylinder does not touch get 0,
        inadmissible ones (1 + γ g ≤ 0) NaN.

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

        Example
        -------
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
            pose = _make_pose(p.start, p.axis)
        else:
            pose = self.pose_at(t)
        s = (x - pose.point) @ pose.tangent
        if self.length is not None:  # finite cylinder: the closest point of the axis segment (capsule rule)
            s = np.clip(s, 0.0, self.length)
        w = x - (pose.point + s[:, None] * pose.tangent)
        d = norm3(w)
        F, _ = self.law.force(d / (self.radius + r) - 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = (F / d)[:, None] * w
        f[F == 0.0] = 0.0
        return f

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
            R_q = Jpᵀ R_pose, Jp = ∂(y0, a)/∂q.  Formulas in the module notes.

        Raises
        ------
        ValueError
            If ``u`` is not a finite vector of length N.
        FloatingPointError
            If a contact point is inadmissible (1 + γ g ≤ 0), as :meth:`evaluate`.
        """
        N = model.discretization.n_dofs
        u = _state_vector(u, N)
        st = self._state(model, u, t)
        if st.nar is not None:
            st.check(model, t)  # raises on an inadmissible state
        if st.nar is None or st.act.size == 0:
            return CylinderBodyLoad(np.zeros(6), N, 0,
                                    *((np.zeros(0, dtype=np.int64), np.zeros((6, 0)), np.zeros((6, 6)))
                                      if tangent else (None, None, None)))
        force = st.body_force.copy()
        if not tangent:
            return CylinderBodyLoad(force, N, st.n_active)
        columns, values, d_pose = st.body_tangent()
        return CylinderBodyLoad(force, N, st.n_active, columns, values, d_pose)

    # --- safeguard ----------------------------------------------------------
    def max_step(self, model, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float,
                 pose_step: tuple | None = None) -> float:
        """Largest δ ∈ (0, 1] keeping every contact point admissible (eqs. 69–73).

        For each element E that the broad phase finds along the whole step,
        e_E(δ) = 1 + γ ((min_E d − δ max_E |Δu|) / (r_RB + χ_E(δ)) − 1) with
        χ_E(δ) = max_E r0 √(max_E |A1| / (min_E |a1| − δ max_E |Δu′|)) (min/max over
        the element's contact points) is a lower bound of 1 + γ g(u + δ Δu) at
        each of them.  δ is the largest value with e_E(δ) > δ̄ min(e_E(0), 1)
        for all E: points in contact keep the fraction δ̄ of their margin
        (paper eq. 71), points not in contact may approach down to
        1 + γ g = δ̄.  Where the element-wise bound is too coarse
        (e_E(0) ≤ 0), or with ``safeguard="point"``, the same bound is used
        point by point (E = one contact point).  Returns 1.0 when
        no element is near, 0.0 when u itself is inadmissible.

        Parameters
        ----------
        model, u, du, t
            Model, state, full Newton step of the fiber DOFs and time.
        delta_bar
            δ̄ ∈ (0, 1), the fraction of the margin to keep.
        pose_step
            ``(Δy0, Δa)``, the change of the cylinder's pose over the full
            step (it moves as y0 + δ Δy0, a + δ Δa), or None (default) for a
            cylinder that does not move during the step.  The distance bound
            is then min_E d − δ (max_E |Δu| + |Δy0|) − ρ_E(δ) τ(δ) with
            ρ_E(δ) = min(L, max_E |x − y0| + δ (max_E |Δu| + |Δy0|)) and
            τ(δ) = min(2, δ |Δa| / (|a| − δ |Δa|)) (module notes).

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
            pose_step = _pose_step(pose_step)
            motion = (_norm(pose_step[0]), _norm(pose_step[1]), pose.axis_norm)
        d = model.discretization
        el = self._fiber_elements(d)
        if el.size:
            el = self._broad(d, u, pose, el, du, pose_step)
        if el.size == 0:
            return 1.0
        nar = self._narrow(model, u, t, el)
        if nar.bad >= 0 and not (np.all(nar.d > 0) and np.all(nar.adm > 0)):
            return 0.0
        if self.safeguard == "trial":
            return self._trial_step(model, u, du, t, nar, el, delta_bar, pose_step)
        s = nar.sample
        du_abs = norm3(s.field(du))
        dup_abs = norm3(s.field(du, 1))
        elem = [nar.d.min(1), du_abs.max(1), s.r0.max(1), s.A1_norm.max(1), s.a1_norm.min(1), dup_abs.max(1)]
        points = [nar.d, du_abs, s.r0, s.A1_norm, s.a1_norm, dup_abs]
        if motion is not None:
            arm = norm3(nar.p)  # |x − y0|
            elem.append(arm.max(1))
            points.append(arm)
        e0 = self._estimate(*elem, 0.0, motion=motion)
        coarse = ~(e0 > 0) | (self.safeguard == "point")
        args = [np.concatenate([a[~coarse], b[coarse].ravel()]) for a, b in zip(elem, points)]
        target = delta_bar * np.minimum(self._estimate(*args, 0.0, motion=motion), 1.0)
        ok = self._estimate(*args, 1.0, motion=motion) > target
        if np.all(ok):
            return 1.0
        args = [a[~ok] for a in args]
        target = target[~ok]
        lo, hi = np.zeros(target.size), np.ones(target.size)
        for _ in range(30):  # bisection, all elements at once (e is decreasing in δ)
            mid = 0.5 * (lo + hi)
            good = self._estimate(*args, mid, motion=motion) > target
            lo = np.where(good, mid, lo)
            hi = np.where(good, hi, mid)
        return float(lo.min())

    def _trial_step(self, model, u, du, t, nar: _Narrow, el, delta_bar: float, pose_step) -> float:
        """``safeguard="trial"``: eq. 71 checked exactly at the end of the step.

        δ = 1, 1/2, 1/4, … until every contact point of the elements in reach
        has 1 + γ g(u + δ Δu) > δ̄ min(1 + γ g(u), 1) (the pose moved by
        δ (Δy0, Δa)).  No bound in between: the residual is only evaluated
        at the end of the step.
        """
        target = delta_bar * np.minimum(nar.adm, 1.0)
        pose = self.pose_at(t)
        delta = 1.0
        for _ in range(40):
            moved = pose if pose_step is None else _make_pose(pose.point + delta * pose_step[0],
                                                              pose.axis + delta * pose_step[1])
            trial = self._narrow_new(model, u + delta * du, moved, el)
            # target > 0, so the points pass when all of them keep their margin and none is flagged
            # (d ≤ 0 or a non-finite radius: ``bad``)
            if trial.bad < 0 and (trial.adm > target).all():
                return delta
            delta *= 0.5
        return 0.0

    def _estimate(self, dmin, du, r0max, A1max, a1min, dup, *rest, motion=None):
        """e(δ) of eq. 72 (broadcasting; −∞ … 1 + γ(… − 1)).

        ``rest`` is (δ,) for a cylinder at rest, (ρ, δ) with ``motion`` =
        (|Δy0|, |Δa|, |a|) for a moving one, ρ bounding |x − y0| at δ = 0.
        """
        if motion is None:
            (delta,) = rest
            dlow = dmin - delta * du
        else:
            arm0, delta = rest
            dy0_abs, da_abs, a_norm = motion
            move = du + dy0_abs
            arm = arm0 + delta * move
            if self.length is not None:
                arm = np.minimum(arm, self.length)
            dlow = dmin - delta * move - arm * _turn_bound(delta, da_abs, a_norm)
        speed = a1min - delta * dup
        ok = speed > 0
        chi = r0max * np.sqrt(A1max / np.where(ok, speed, 1.0))
        ratio = np.where(ok, np.maximum(dlow, 0.0) / (self.radius + chi), 0.0)
        return 1.0 + self.law.gamma * (ratio - 1.0)


def _norm(v: np.ndarray) -> float:
    """|v| of a vector (np.linalg.norm bit for bit, without its overhead)."""
    return math.sqrt(v.dot(v))


def _turn_bound(delta, da_abs: float, a_norm: float):
    """τ(δ) ≥ |t(a + δ Δa) − t(a)|: min(2, δ |Δa| / (|a| − δ |Δa|)), 2 if |a| ≤ δ |Δa|."""
    if isinstance(delta, float):  # one δ: the same arithmetic on Python floats
        den = a_norm - delta * da_abs
        return min(delta * da_abs / den, 2.0) if den > 0 else 2.0
    den = a_norm - np.multiply(delta, da_abs)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(den > 0, np.multiply(delta, da_abs) / np.where(den > 0, den, 1.0), 2.0)
    return np.minimum(tau, 2.0)


def _pose_step(pose_step) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``pose_step=(Δy0, Δa)``: two finite 3-vectors."""
    fix = "give pose_step=(dy0, da), the change of the axis point and of the raw axis over the full step"
    try:
        dy0, da = pose_step
    except (TypeError, ValueError) as err:
        raise ValueError(f"pose_step must be a pair (dy0, da) of 3-vectors, got {pose_step!r}; {fix}") from err
    out = []
    for value, name in ((dy0, "dy0"), (da, "da")):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"pose_step {name} must be 3 numbers, got {value!r}; {fix}") from err
        if arr.shape != (3,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"pose_step {name} must be 3 finite numbers, got {value!r}; {fix}")
        out.append(arr)
    return out[0], out[1]


def _state_vector(u, n: int) -> np.ndarray:
    """``u`` as a finite float vector of length n (ValueError otherwise)."""
    try:
        arr = np.asarray(u, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"u must be a vector of {n} numbers (the model's DOFs), got {type(u).__name__}") from err
    if arr.shape != (n,):
        raise ValueError(f"u must be a vector of the model's {n} DOFs, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("u must be finite (it has NaN or inf entries)")
    return arr


def _kernel_vector(u, n: int, name: str = "u") -> np.ndarray:
    """``u`` as a writable C-contiguous float vector of length n for the kernels (copies only if needed).

    One array type for every call (one compiled signature); the length is
    checked here because the compiled loops index it without bounds checks.
    """
    if not (type(u) is np.ndarray and u.dtype == np.float64 and u.flags.c_contiguous and u.flags.writeable):
        u = np.require(u, dtype=np.float64, requirements="CW")
    if u.shape != (n,):
        raise ValueError(f"{name} must be a vector of the model's {n} DOFs, got shape {u.shape}")
    return u


def _pose_key(pose: CylinderPose) -> bytes:
    return pose.point.tobytes() + pose.axis.tobytes()

