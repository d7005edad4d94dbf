"""The contact points of fibers near a cylinder at one state (narrow phase output).

The narrow phase (:func:`~skfiber.contact.cylinder_kernels.contact_points`)
gives per contact point of the elements in reach the centerline, the closest
axis point, the distance, normal, gap and penalty force in one (m, q, NF)
array, plus the assembled residual, the reaction on the body and the
admissibility 1 + γ g.  :class:`CylinderPoints` exposes that array as named
views; :class:`CylinderState` holds one state (u, pose) of a
:class:`~skfiber.contact.cylinder.CylinderContact` and computes its
derivatives once, on first use: the residual call, the tangent call, the body
load and the pose derivative of one Newton iteration share them.

**Inadmissible states**: a contact point with 1 + γ g ≤ 0 (or on the axis,
or with a non-finite radius) makes :func:`check_admissible` raise
FloatingPointError naming the fiber, θ and the cylinder; the model turns it
into a Newton failure.

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.cylinder import CylinderContact
>>> model = sf.Model([sf.Fiber.straight((-1, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)])
>>> cyl = CylinderContact((0, 0, -0.22), (0, 1, 0), 0.2, law=PenaltyLaw(stiffness=500.0, gamma=4.0))
>>> u = np.zeros(model.n_dofs)
>>> pts = cyl.contact_points(model, u, 0.0, cyl.candidates(model, u, 0.0))
>>> pts.elements.tolist(), pts.g.shape, pts.n_active
([1, 2], (2, 5), 4)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import cylinder_kernels as ck
from .base import STEP_HINT
from .cylinder_pose import CylinderPose
from .geometry import CenterlineSample

__all__ = ["CylinderGaps", "CylinderPoints", "CylinderState", "check_admissible", "state_vector",
           "kernel_vector"]


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


def _column(start: int, stop: int | None = None, doc: str = "") -> property:
    """A property giving one column (or 3 columns: a vector) of ``CylinderPoints.pts`` as a view."""
    if stop is None:
        return property(lambda self: self.pts[..., start], doc=doc)
    return property(lambda self: self.pts[..., start:stop], doc=doc)


class CylinderPoints:
    """The contact points of some elements and their data at one state.

    The output of :func:`~skfiber.contact.cylinder_kernels.contact_points`:
    ``pts`` (m, q, NF) holds the per-point data, exposed as views below
    (x, closest point y, distance d, normal ν, gap g, …); ``adm`` = 1 + γ g;
    ``residual``, ``force`` (R_pose), ``n_active``, ``act`` (rows with a point
    in contact) and ``bad`` (first inadmissible point or −1).  ``sample``
    gives the centerline data as a :class:`~skfiber.contact.geometry.CenterlineSample`.

    Parameters
    ----------
    elements
        (m,) the elements (int64).
    pose
        The cylinder's pose.
    shapes
        The :class:`~skfiber.contact.geometry.ElementShapes` of the contact rule.
    element_fiber
        (E,) the fiber of every element of the discretization.
    out
        The tuple returned by :func:`~skfiber.contact.cylinder_kernels.contact_points`.
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


def check_admissible(name: str, gamma: float, model, points: CylinderPoints, t: float) -> np.ndarray:
    """1 + γ g of the points; raises FloatingPointError on an inadmissible state.

    Parameters
    ----------
    name
        The cylinder contact's name (for the message).
    gamma
        γ of its penalty law (for the message).
    model
        The fiber model (fiber names).
    points
        The contact points.
    t
        Time (s), for the message.

    Returns
    -------
    numpy.ndarray
        (m, q) 1 + γ g (read-only).

    Raises
    ------
    FloatingPointError
        When a point has 1 + γ g ≤ 0, d ≤ 0 or a non-finite radius.
    """
    adm = points.adm
    bad = ~(adm > 0) | ~(points.d > 0) | ~np.isfinite(points.radius)
    if np.any(bad):
        m, k = np.unravel_index(np.argmax(bad), bad.shape)
        fk = int(points.sample.fiber[m])
        fname = model.discretization.fibers[fk].name
        label = f"fiber {fk}" + (f" ({fname!r})" if fname else "")
        raise FloatingPointError(
            f"inadmissible contact with cylinder {name!r} at t = {t:.6g} s: {label} at "
            f"θ = {points.sample.theta[m, k]:.4g} penetrates too far (1 + γg = {adm[m, k]:.3g} ≤ 0; "
            f"distance to the axis {points.d[m, k]:.4g} m, r_RB + r = {points.rho[m, k]:.4g} m, γ = {gamma:g}); "
            + STEP_HINT
        )
    return adm


class CylinderState:
    """The contact at one state (u, pose) and what is derived from it.

    Made once per state by :class:`~skfiber.contact.cylinder.CylinderContact`
    (memoized): the narrow phase (:class:`CylinderPoints`) already holds the
    residual, the admissibility and the body reaction; the derivatives (tangent
    triplets, pose derivative, body load derivatives) come from one kernel call
    on first use and are kept.

    Parameters
    ----------
    contact
        The :class:`~skfiber.contact.cylinder.CylinderContact` (its ``name`` and
        ``law`` for :meth:`check`).
    n_dofs
        N, the number of fiber DOFs.
    elements
        The elements in reach (broad phase).
    nar
        Their :class:`CylinderPoints`, or None when no element is in reach.
    data
        The :class:`~skfiber.contact.cylinder_kernels.KernelData` of the rule.
    """

    def __init__(self, contact, n_dofs: int, elements: np.ndarray, nar: CylinderPoints | None,
                 data: "ck.KernelData"):
        self.contact = contact
        self.n_dofs = n_dofs
        self.elements = elements
        self.nar = nar
        self.data = data

    def check(self, model, t: float) -> np.ndarray:
        """1 + γ g of the points in reach (m, q); raises FloatingPointError (at time t) on an inadmissible state."""
        if self.nar.bad >= 0:
            check_admissible(self.contact.name, self.contact.law.gamma, model, self.nar, t)
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
        """Number of contact points with g < 0."""
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


def state_vector(u, n: int) -> np.ndarray:
    """``u`` as a finite float vector of length n.

    Parameters
    ----------
    u
        The fiber DOF vector.
    n
        N, the number of fiber DOFs.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        If ``u`` is not a finite vector of length n.
    """
    try:
        arr = np.asarray(u, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"u must be a vector of {n} numbers (the model's DOFs), got {type(u).__name__}") from err
    if arr.shape != (n,):
        raise ValueError(f"u must be a vector of the model's {n} DOFs, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("u must be finite (it has NaN or inf entries)")
    return arr


def kernel_vector(u, n: int, name: str = "u") -> np.ndarray:
    """``u`` as a writable C-contiguous float vector of length n for the kernels (copies only if needed).

    One array type for every call (one compiled signature); the length is
    checked here because the compiled loops index it without bounds checks.

    Parameters
    ----------
    u
        The vector.
    n
        Its required length.
    name
        Its name in the error message.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        If the length is not n.
    """
    if not (type(u) is np.ndarray and u.dtype == np.float64 and u.flags.c_contiguous and u.flags.writeable):
        u = np.require(u, dtype=np.float64, requirements="CW")
    if u.shape != (n,):
        raise ValueError(f"{name} must be a vector of the model's {n} DOFs, got shape {u.shape}")
    return u
