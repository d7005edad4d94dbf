"""Hermite centerline geometry at contact quadrature points (shared by the contacts).

Contact integrals use their own Gauss–Legendre rule on every element,
independent of the cable quadrature (paper §4.3; default 5 points).  This
module evaluates, for many elements at once (no Python loop over elements or
points), what a contact needs there: the current position x, the tangent
a1 = x′ = dx/dθ, |a1|, the reference |A1|, r0(θ), the stretch λ = |a1|/|A1|,
the current radius r = r0/√λ (paper eq. 21, 97) and the θ-weights.  It also
gives the Bézier control points of each Hermite segment, whose convex hull
contains the segment (broad phase).

Layout: arrays are (elements, points, 3) — components last — and the 12
element DOFs are grouped as (4, 3): Hermite group a = (value at node 0,
θ-slope at node 0, value at node 1, θ-slope at node 1) × component, which is
``assembler.element_dofs`` order (index 3a + i).  An element vector
``r[m, a, i] = Σ_k S[m, k, a] f[m, k, i]`` reshaped to (m, 12) scatters with
``CenterlineSample.dofs``.

Examples
--------
>>> import numpy as np
>>> from skfiber import Fiber
>>> from skfiber.discretization import Discretization
>>> from skfiber.contact.geometry import gauss_legendre, sample_centerline
>>> d = Discretization([Fiber.straight((0, 0, 0), (2, 0, 0), n_elements=4, radius=0.1)])
>>> xi, w = gauss_legendre(3)
>>> s = sample_centerline(d, np.zeros(d.n_dofs), xi, w)
>>> s.x.shape, round(float(s.ds.sum()), 12), float(s.radius.max())
((4, 3, 3), 2.0, 0.1)
"""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass

import numpy as np

from ..discretization import hermite_shape
from .gap import current_radius

__all__ = [
    "gauss_legendre",
    "ElementShapes",
    "element_shapes",
    "CenterlineSample",
    "sample_centerline",
    "element_coefficients",
    "control_points",
    "control_point_list",
    "min_speed_bound",
]


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre points ξ and weights on [0, 1] (weights sum to 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of contact quadrature points must be an integer ≥ 1, got {n!r}")
    x, w = np.polynomial.legendre.leggauss(int(n))
    return 0.5 * (x + 1.0), 0.5 * w


@dataclass(frozen=True)
class ElementShapes:
    """Reference data of a contact rule on all elements of a discretization.

    Attributes
    ----------
    xi, w : (q,) points and weights on [0, 1]
    h : (e,) element length in θ
    dofs : (e, 12) global DOF numbers (``assembler.element_dofs.T``)
    S : (e, q, 4) value weights of the 4 Hermite groups (slopes scaled by h)
    dS : (e, q, 4) θ-derivative weights (x′ = Σ_a dS[..., a] Y_a)
    theta : (e, q) fiber parameter of the points
    r0 : (e, q) reference radius r0(θ)
    A1 : (e, q) reference |A1| = |X′|
    r0_max, A1_max : (e,) their maxima over each element's points
    """

    xi: np.ndarray
    w: np.ndarray
    h: np.ndarray
    dofs: np.ndarray
    S: np.ndarray
    dS: np.ndarray
    theta: np.ndarray
    r0: np.ndarray
    A1: np.ndarray
    r0_max: np.ndarray
    A1_max: np.ndarray


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def element_shapes(discretization, xi: np.ndarray, w: np.ndarray) -> ElementShapes:
    """:class:`ElementShapes` of the rule (ξ, w) — cached per discretization and rule."""
    xi = np.asarray(xi, dtype=float)
    w = np.asarray(w, dtype=float)
    key = (xi.tobytes(), w.tobytes())
    per = _CACHE.setdefault(discretization, {})
    if key in per:
        return per[key]
    d = discretization
    t = d.mesh.t  # (2, e) node indices
    h = d.mesh.p[0, t[1]] - d.mesh.p[0, t[0]]
    dofs = np.ascontiguousarray(d.assembler.element_dofs.T)
    N = hermite_shape(xi).T  # (q, 4)
    dN = hermite_shape(xi, 1).T
    scale = np.stack([np.ones_like(h), h, np.ones_like(h), h], axis=-1)  # (e, 4)
    S = N[None, :, :] * scale[:, None, :]
    dS = dN[None, :, :] * (scale / h[:, None])[:, None, :]
    theta = d.node_theta[t[0]][:, None] + h[:, None] * xi[None, :]
    Y = d.reference_dofs[dofs].reshape(-1, 4, 3)
    A1 = np.linalg.norm(np.einsum("eqa,eai->eqi", dS, Y), axis=-1)
    r0 = np.empty_like(theta)
    for fd, fiber in zip(d.fiber_dofs, d.fibers):  # one call per fiber (vectorized in θ)
        r0[fd.elements] = fiber.radius_at(theta[fd.elements])
    shapes = ElementShapes(xi, w, h, dofs, S, dS, theta, r0, A1, r0.max(axis=1), A1.max(axis=1))
    for a in (S, dS, theta, r0, A1, dofs, h, shapes.r0_max, shapes.A1_max):
        a.setflags(write=False)
    per[key] = shapes
    return shapes


def element_coefficients(discretization, u: np.ndarray, elements: np.ndarray | None = None) -> np.ndarray:
    """Current Hermite coefficients Y (m, 4, 3) of the elements (x = X + u)."""
    dofs = discretization.assembler.element_dofs.T
    if elements is not None:
        dofs = dofs[elements]
    return (discretization.reference_dofs[dofs] + np.asarray(u)[dofs]).reshape(-1, 4, 3)


@dataclass(frozen=True)
class CenterlineSample:
    """The current centerline at the contact points of some elements.

    Attributes
    ----------
    elements : (m,) element indices
    dofs : (m, 12) their global DOFs
    fiber : (m,) fiber index of each element
    theta : (m, q) fiber parameter
    S, dS : (m, q, 4) value and θ-derivative weights of the Hermite groups
    x : (m, q, 3) current position
    a1 : (m, q, 3) x′ = dx/dθ
    a1_norm : (m, q) |a1|
    A1_norm : (m, q) |A1|
    r0 : (m, q) reference radius
    stretch : (m, q) λ = |a1| / |A1|
    radius : (m, q) current radius r = r0 / √λ
    weight : (m, q) θ-weight w_k h of each point (ds = |a1| · weight)
    """

    elements: np.ndarray
    dofs: np.ndarray
    fiber: np.ndarray
    theta: np.ndarray
    S: np.ndarray
    dS: np.ndarray
    x: np.ndarray
    a1: np.ndarray
    a1_norm: np.ndarray
    A1_norm: np.ndarray
    r0: np.ndarray
    stretch: np.ndarray
    radius: np.ndarray
    weight: np.ndarray

    @property
    def ds(self) -> np.ndarray:
        """Current arc-length weights |a1| w_k h (m)."""
        return self.a1_norm * self.weight

    def field(self, dofs_vector: np.ndarray, derivative: int = 0) -> np.ndarray:
        """Another DOF vector (e.g. a Newton increment) at the points, (m, q, 3)."""
        Y = np.asarray(dofs_vector)[self.dofs].reshape(-1, 4, 3)
        return (self.dS if derivative else self.S) @ Y


def sample_centerline(discretization, u: np.ndarray, xi: np.ndarray, w: np.ndarray,
                      elements: np.ndarray | None = None) -> CenterlineSample:
    """Evaluate the current centerline at the rule (ξ, w) on ``elements`` (default all)."""
    shapes = element_shapes(discretization, xi, w)
    el = np.arange(shapes.h.size) if elements is None else np.asarray(elements, dtype=np.int64)
    S, dS = shapes.S[el], shapes.dS[el]
    Y = element_coefficients(discretization, u, el)
    x = S @ Y  # Σ_a S[e, q, a] Y[e, a, i] (a batched matmul: much faster than einsum for small blocks)
    a1 = dS @ Y
    a1_norm = norm3(a1)
    A1 = shapes.A1[el]
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = a1_norm / A1
        radius = current_radius(shapes.r0[el], A1, a1_norm)
    return CenterlineSample(
        elements=el, dofs=shapes.dofs[el], fiber=discretization.element_fiber[el], theta=shapes.theta[el],
        S=S, dS=dS, x=x, a1=a1, a1_norm=a1_norm, A1_norm=A1, r0=shapes.r0[el], stretch=lam,
        radius=radius, weight=shapes.h[el][:, None] * shapes.w[None, :],
    )


def norm3(v: np.ndarray) -> np.ndarray:
    """|v| over the last axis of length 3 (what ``np.linalg.norm(v, axis=-1)`` gives, a few times faster)."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return np.sqrt(x * x + y * y + z * z)


def control_points(Y: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Bézier control points (m, 4, 3) of Hermite segments with coefficients Y (m, 4, 3).

    Y holds (x0, x0′, x1, x1′) with θ-slopes as stored in the DOF vector and
    h (m,) is the element length in θ: P0 = x0, P1 = x0 + h x0′/3,
    P2 = x1 − h x1′/3, P3 = x1; the segment lies in their convex hull.
    """
    return np.stack(control_point_list(Y, h), axis=1)


def control_point_list(Y: np.ndarray, h: np.ndarray) -> list[np.ndarray]:
    """The control points of :func:`control_points` as a list of 4 (m, 3) arrays (P0 … P3).

    Elementwise minima, maxima and sums over this list are much faster than
    reductions over the short middle axis of one (m, 4, 3) array.
    """
    hs = np.asarray(h, dtype=float)[:, None] / 3.0
    return [Y[:, 0], Y[:, 0] + hs * Y[:, 1], Y[:, 2] - hs * Y[:, 3], Y[:, 2]]


def min_speed_bound(Y: np.ndarray, h: np.ndarray, dY: np.ndarray | None = None) -> np.ndarray:
    """Lower bound (m,) of |x′(θ)| on each segment (0 when none is found).

    x′ per unit θ is a quadratic Bézier curve with control points
    3 (P1 − P0, P2 − P1, P3 − P2) / h = (x0′, 3 (x1 − x0)/h − x0′ − x1′, x1′),
    inside their convex hull; projecting on the direction of their mean bounds
    its norm from below.  With ``dY`` (an increment of Y) the bound holds for
    every Y + δ dY, δ ∈ [0, 1] (hull of the control points at δ = 0 and 1).
    """
    h3 = 3.0 / np.asarray(h, dtype=float)[:, None]

    def hodograph(Z):
        return [Z[:, 1], h3 * (Z[:, 2] - Z[:, 0]) - Z[:, 1] - Z[:, 3], Z[:, 3]]

    # the control points as a list of (m, 3) arrays: elementwise operations on them are much
    # faster than reductions over a short middle axis of one (m, k, 3) array
    D = hodograph(Y)
    if dY is not None:
        D += hodograph(Y + dY)
    mean = functools.reduce(np.add, D) / len(D)
    norm = norm3(mean)[:, None]
    e = mean / np.where(norm > 0, norm, 1.0)
    proj = functools.reduce(np.minimum, [norm3_dot(Dk, e) for Dk in D])
    return np.maximum(proj, 0.0)


def norm3_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a · b over the last axis of length 3."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]
