r"""Fiber–cylinder contact as compiled loops (numba), used by :mod:`skfiber.contact.cylinder`.

The contact of a few fibers with a cylinder touches a few dozen quadrature
points per Newton iteration; evaluated through numpy it costs a few hundred
small-array calls per state, far more than the arithmetic.  The three kernels
here do the same work in one pass each (no Python loop over elements or
points; the formulas are those of the :mod:`skfiber.contact.cylinder` and
:mod:`skfiber.contact.cylinder_body` module notes):

* :func:`broad_phase` — the elements whose Bézier ball (grown by a bound of
  the radius, and for a step ``du`` and a moving pose by the motion) reaches
  the cylinder (:meth:`~skfiber.contact.cylinder.CylinderContact.candidates`);
* :func:`contact_points` — the narrow phase on those elements: per contact
  point the centerline (x, a1 = x′, λ, current radius r), the closest axis
  point, the distance, normal and gap, the penalty force (paper eq. 44), and
  the assembled residual G_c, the reaction R_pose on the body and the count
  of points in contact;
* :func:`contact_derivatives` — for the elements with a point in contact:
  the COO triplets of ∂G_c/∂u, ∂G_c/∂(y0, a) (dense, N × 6), ∂R_pose/∂u at the
  DOFs it depends on and ∂R_pose/∂(y0, a).

Each unpacks :class:`KernelData` (and the cylinder length, :func:`length_args`)
into the arguments of its compiled loop (:func:`broad_phase_loop`,
:func:`contact_points_loop`, :func:`contact_derivatives_loop`); the coupled
solver's kernels (:mod:`skfiber.coupled_kernels`) call these loops from their
own compiled code.

Per point the narrow phase writes the columns of a (m, q, :data:`NF`) array
(``COL_X``, ``COL_A1``, … below; vectors take 3 columns).  The element data
(DOFs, Hermite weights S and dS, r0, |A1|, element length h, rule weights w)
are those of :func:`skfiber.contact.geometry.element_shapes`.

Examples
--------
>>> import numpy as np
>>> from skfiber import Fiber
>>> from skfiber.discretization import Discretization
>>> from skfiber.contact.geometry import element_shapes, gauss_legendre
>>> d = Discretization([Fiber.straight((-1, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)])
>>> sh = element_shapes(d, *gauss_legendre(3))
>>> data = KernelData.of(sh, d)
>>> u = np.zeros(d.n_dofs)
>>> cyl = dict(point=np.array([0.0, 0.0, -0.22]), tangent=np.array([0.0, 1.0, 0.0]), radius=0.2)
>>> el = broad_phase(data, u, np.arange(4), cyl["point"], cyl["tangent"], cyl["radius"], None)
>>> el.tolist()   # the two middle elements reach the cylinder under x = 0
[1, 2]
>>> out = contact_points(data, u, el, cyl["point"], cyl["tangent"], 1.0, cyl["radius"], None, 500.0, 4.0)
>>> pts, adm, residual, force, n_active, act, bad = out
>>> x, g = pts[0, 2, COL_X], pts[0, 2, COL_G]   # the point of element 1 next to θ = 0
>>> bool(np.isclose(g, np.hypot(x, 0.22) / 0.25 - 1)), n_active, bad
(True, 2, -1)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.jit import njit
from .base import penalty_force
from .gap import admissibility, current_radius, normalized_gap

__all__ = ["NF", "KernelData", "broad_phase", "contact_points", "contact_derivatives", "length_args",
           "broad_phase_loop", "contact_points_loop", "contact_derivatives_loop"]

# columns of the per-point array of contact_points
COL_X = 0  # x (3)
COL_A1 = 3  # a1 = x′ (3)
COL_A1N = 6  # |a1|
COL_LAM = 7  # λ = |a1| / |A1|
COL_RAD = 8  # current radius r = r0 / √λ
COL_P = 9  # x − y0 (3)
COL_SC = 12  # clamped axial coordinate of the closest point
COL_SIDE = 13  # 1 on the lateral surface, 0 on a cap
COL_Y = 14  # closest point y (3)
COL_D = 17  # d = |x − y|
COL_NU = 18  # ν = (x − y) / d (3)
COL_RHO = 21  # r_RB + r
COL_G = 22  # g = d / ρ − 1
COL_F = 23  # F(g)
COL_DF = 24  # dF/dg
COL_W = 25  # θ-weight of the point (rule weight × element length)
NF = 26


@dataclass(frozen=True)
class KernelData:
    """The element data of a contact rule as contiguous arrays for the kernels.

    Attributes
    ----------
    reference : (N,) reference DOFs X
    dofs : (e, 12) int64 global DOFs of each element
    S, dS : (e, q, 4) value and θ-derivative weights of the Hermite groups
    r0, A1 : (e, q) reference radius and |A1| at the points
    h : (e,) element length in θ; w : (q,) rule weights on [0, 1]
    r0_max, A1_max : (e,) maxima of r0 and |A1| over each element's points
    """

    reference: np.ndarray
    dofs: np.ndarray
    S: np.ndarray
    dS: np.ndarray
    r0: np.ndarray
    A1: np.ndarray
    h: np.ndarray
    w: np.ndarray
    r0_max: np.ndarray
    A1_max: np.ndarray

    @classmethod
    def of(cls, shapes, discretization) -> "KernelData":
        """The data of ``shapes`` (:class:`~skfiber.contact.geometry.ElementShapes` of ``discretization``).

        Writable C-contiguous copies, so that every call has the kernels' one signature.
        """
        def c(a, dtype=float):
            return np.array(a, dtype=dtype, order="C")

        return cls(c(discretization.reference_dofs), c(shapes.dofs, np.int64), c(shapes.S), c(shapes.dS),
                   c(shapes.r0), c(shapes.A1), c(shapes.h), c(shapes.w), c(shapes.r0_max), c(shapes.A1_max))


def length_args(length) -> tuple[bool, float]:
    """The kernels' (finite, L) arguments of a cylinder length (None: an infinite cylinder)."""
    return (False, 0.0) if length is None else (True, float(length))


def broad_phase(data: KernelData, u: np.ndarray, elements: np.ndarray, point: np.ndarray, tangent: np.ndarray,
                radius: float, length: float | None, du: np.ndarray | None = None,
                motion: tuple[float, float] | None = None) -> np.ndarray:
    """The elements of ``elements`` (sorted int64) that may touch the cylinder.

    An element is kept when d(c) − ρ_b < r_RB + r̄_E: c and ρ_b the centre and
    half diagonal of the box of its Bézier control points (of u, and with
    ``du`` also of u + du), r̄_E = max r0 √(max |A1| / s_min) with s_min a lower
    bound of |x′| from the hodograph's control points (projected on their
    mean direction), d(c) the distance of c to the axis (segment).  With
    ``motion`` = (|Δy0|, τ) (τ ≥ |t(1) − t(0)|, the turn of the axis over the
    step) the distance is lowered by |Δy0| + min(L, |c − y0| + |Δy0|) τ.
    """
    finite, L = length_args(length)
    moving = motion is not None
    dy0_abs, tau = motion if moving else (0.0, 0.0)
    du = _EMPTY if du is None else du
    return broad_phase_loop(data.reference, u, data.dofs, data.h, data.r0_max, data.A1_max, elements, point,
                            tangent, float(radius), finite, L, du, moving, float(dy0_abs), float(tau))


_EMPTY = np.zeros(0)


def contact_points(data: KernelData, u: np.ndarray, elements: np.ndarray, point: np.ndarray, tangent: np.ndarray,
                   axis_norm: float, radius: float, length: float | None, stiffness: float, gamma: float):
    """Narrow phase, force, residual and body reaction on ``elements``.

    Returns
    -------
    pts : (m, q, NF) per-point data (columns ``COL_X``, ``COL_A1``, … of this module)
    adm : (m, q) 1 + γ g
    residual : (N,) G_c = −Σ_k F ν · ξ |a1| w_k
    force : (6,) R_pose = [Σ f ; Q Σ s f], f = F ν |a1| w_k, Q = (I − t⊗t)/|a|
    n_active : number of points with g < 0
    act : (k,) rows of ``elements`` with a point in contact
    bad : flat index (row × q + point) of the first point with 1 + γ g ≤ 0,
        d ≤ 0 or a non-finite radius (−1 if none)
    """
    finite, L = length_args(length)
    return contact_points_loop(data.reference, u, data.dofs, data.S, data.dS, data.r0, data.A1, data.h, data.w,
                               elements, point, tangent, float(axis_norm), float(radius), finite, L,
                               float(stiffness), float(gamma))


def contact_derivatives(data: KernelData, pts: np.ndarray, elements: np.ndarray, act: np.ndarray,
                        tangent: np.ndarray, axis_norm: float, n_dofs: int):
    """Derivatives on the rows ``act`` of ``pts`` (the elements with a point in contact).

    Returns
    -------
    rows, cols, values : COO triplets (k · 144,) of ∂G_c/∂u
    d_pose_fiber : (N, 6) ∂G_c/∂(y0, a)
    columns : sorted DOFs where ∂R_pose/∂u may be nonzero
    d_u_values : (6, columns.size) ∂R_pose/∂u there
    d_pose : (6, 6) ∂R_pose/∂(y0, a)
    """
    return contact_derivatives_loop(pts, elements, act, data.dofs, data.S, data.dS, tangent, float(axis_norm),
                                    int(n_dofs))


# --------------------------------------------------------------------------- compiled
_JIT = dict(cache=True, fastmath=False, error_model="numpy")


@njit(**_JIT)
def broad_phase_loop(ref, u, dofs, h, r0max, A1max, elements, y0, tt, radius, finite, L, du, moving, dy0_abs,
                     tau):  # pragma: no cover - compiled
    m = elements.size
    keep = np.zeros(m, dtype=np.bool_)
    two = du.size > 0
    Yc = np.empty((2, 4, 3))
    lo = np.empty(3)
    hi = np.empty(3)
    Hd = np.empty((6, 3))  # hodograph control points (3, or 6 with du)
    for r in range(m):
        e = elements[r]
        nset = 2 if two else 1
        for a in range(4):
            for i in range(3):
                k = dofs[e, 3 * a + i]
                Yc[0, a, i] = ref[k] + u[k]
                if two:
                    Yc[1, a, i] = Yc[0, a, i] + du[k]
        hs = h[e] / 3.0
        h3 = 3.0 / h[e]
        for i in range(3):
            lo[i] = np.inf
            hi[i] = -np.inf
        for s in range(nset):
            for i in range(3):
                c0 = Yc[s, 0, i]
                c1 = Yc[s, 0, i] + hs * Yc[s, 1, i]
                c2 = Yc[s, 2, i] - hs * Yc[s, 3, i]
                c3 = Yc[s, 2, i]
                lo[i] = min(lo[i], c0, c1, c2, c3)
                hi[i] = max(hi[i], c0, c1, c2, c3)
                Hd[3 * s, i] = Yc[s, 1, i]
                Hd[3 * s + 1, i] = h3 * (Yc[s, 2, i] - Yc[s, 0, i]) - Yc[s, 1, i] - Yc[s, 3, i]
                Hd[3 * s + 2, i] = Yc[s, 3, i]
        nh = 3 * nset
        # lower bound of |x′|: projection of the hodograph hull on the mean direction
        mean0 = 0.0
        mean1 = 0.0
        mean2 = 0.0
        for j in range(nh):
            mean0 += Hd[j, 0]
            mean1 += Hd[j, 1]
            mean2 += Hd[j, 2]
        mean0 /= nh
        mean1 /= nh
        mean2 /= nh
        nm = np.sqrt(mean0 * mean0 + mean1 * mean1 + mean2 * mean2)
        if not nm > 0:
            nm = 1.0
        proj = np.inf
        for j in range(nh):
            proj = min(proj, (Hd[j, 0] * mean0 + Hd[j, 1] * mean1 + Hd[j, 2] * mean2) / nm)
        speed = max(proj, 0.0)
        rbar = current_radius(r0max[e], A1max[e], speed) if speed > 0 else np.inf
        # distance of the box centre to the axis (segment) and half diagonal of the box
        ball2 = 0.0
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        for i in range(3):
            span = hi[i] - lo[i]
            ball2 += span * span
        ball = 0.5 * np.sqrt(ball2)
        p0 = 0.5 * (lo[0] + hi[0]) - y0[0]
        p1 = 0.5 * (lo[1] + hi[1]) - y0[1]
        p2 = 0.5 * (lo[2] + hi[2]) - y0[2]
        s = p0 * tt[0] + p1 * tt[1] + p2 * tt[2]
        if finite:
            s = min(max(s, 0.0), L)
        w0 = p0 - s * tt[0]
        w1 = p1 - s * tt[1]
        w2 = p2 - s * tt[2]
        dc = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        if moving:
            arm = np.sqrt(p0 * p0 + p1 * p1 + p2 * p2) + dy0_abs
            if finite:
                arm = min(arm, L)
            dc = dc - dy0_abs - arm * tau
        keep[r] = dc - ball < radius + rbar
    return elements[keep]


@njit(**_JIT)
def contact_points_loop(ref, u, dofs, S, dS, r0, A1, h, w, elements, y0, tt, anorm, radius, finite, L, kappa,
                        gamma):  # pragma: no cover - compiled
    m = elements.size
    nq = w.size
    pts = np.empty((m, nq, NF))
    adm = np.empty((m, nq))
    res = np.zeros(ref.size)
    fsum = np.zeros(3)
    V = np.zeros(3)  # Σ s f
    act = np.empty(m, dtype=np.int64)
    n_act = 0
    n_active = 0
    bad = -1
    Ye = np.empty((4, 3))
    for r in range(m):
        e = elements[r]
        for a in range(4):
            for i in range(3):
                k = dofs[e, 3 * a + i]
                Ye[a, i] = ref[k] + u[k]
        touching = False
        for q in range(nq):
            pt = pts[r, q]
            for i in range(3):
                xi = 0.0
                ai = 0.0
                for a in range(4):
                    xi += S[e, q, a] * Ye[a, i]
                    ai += dS[e, q, a] * Ye[a, i]
                pt[COL_X + i] = xi
                pt[COL_A1 + i] = ai
            a1n = np.sqrt(pt[COL_A1] ** 2 + pt[COL_A1 + 1] ** 2 + pt[COL_A1 + 2] ** 2)
            lam = a1n / A1[e, q]
            rad = current_radius(r0[e, q], A1[e, q], a1n)
            pt[COL_A1N] = a1n
            pt[COL_LAM] = lam
            pt[COL_RAD] = rad
            # closest point on the axis (segment)
            s = 0.0
            for i in range(3):
                pt[COL_P + i] = pt[COL_X + i] - y0[i]
                s += pt[COL_P + i] * tt[i]
            side = 1.0
            if finite:
                side = 1.0 if (s > 0.0) and (s < L) else 0.0
                s = min(max(s, 0.0), L)
            pt[COL_SC] = s
            pt[COL_SIDE] = side
            d2 = 0.0
            for i in range(3):
                y = y0[i] + s * tt[i]
                pt[COL_Y + i] = y
                wi = pt[COL_X + i] - y
                pt[COL_NU + i] = wi
                d2 += wi * wi
            d = np.sqrt(d2)
            for i in range(3):
                pt[COL_NU + i] /= d
            rho = radius + rad
            g = normalized_gap(d, radius, rad)
            pt[COL_D] = d
            pt[COL_RHO] = rho
            pt[COL_G] = g
            sg = admissibility(g, gamma)
            Fk, dFk = penalty_force(g, kappa, gamma)  # the penalty law (paper eq. 44)
            pt[COL_F] = Fk
            pt[COL_DF] = dFk
            wk = h[e] * w[q]
            pt[COL_W] = wk
            adm[r, q] = sg
            if bad < 0 and not (sg > 0.0 and d > 0.0 and np.isfinite(rad)):
                bad = r * nq + q
            if g < 0.0:
                n_active += 1
                touching = True
            if Fk != 0.0:
                c = Fk * a1n * wk
                for i in range(3):
                    fi = c * pt[COL_NU + i]
                    fsum[i] += fi
                    V[i] += s * fi
                    for a in range(4):
                        res[dofs[e, 3 * a + i]] -= S[e, q, a] * fi
        if touching:
            act[n_act] = r
            n_act += 1
    force = np.empty(6)
    tV = tt[0] * V[0] + tt[1] * V[1] + tt[2] * V[2]
    for i in range(3):
        force[i] = fsum[i]
        force[3 + i] = (V[i] - tV * tt[i]) / anorm  # Q V, Q = (I − t⊗t)/|a|
    return pts, adm, res, force, n_active, act[:n_act], bad


@njit(**_JIT)
def contact_derivatives_loop(pts, elements, act, dofs, S, dS, tt, anorm, N):  # pragma: no cover - compiled
    nq = pts.shape[1]
    na = act.size
    rows = np.empty(na * 144, dtype=np.int64)
    cols = np.empty(na * 144, dtype=np.int64)
    vals = np.empty(na * 144)
    Dfib = np.zeros((N, 6))  # ∂G_c/∂(y0, a)
    Du = np.zeros((6, N))  # ∂R_pose/∂u (dense, compressed at the end)
    used = np.zeros(N, dtype=np.bool_)
    Pm = np.empty((3, 3))  # I − t⊗t
    Q = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            Pm[i, j] = (1.0 if i == j else 0.0) - tt[i] * tt[j]
            Q[i, j] = Pm[i, j] / anorm
    C = np.empty((3, 3))
    CM = np.empty((3, 3))
    Bp = np.empty((3, 3))
    CT = np.empty((3, 3))
    CTQ = np.empty((3, 3))
    Rx = np.empty((6, 3))  # ∂R_pose/∂x per point
    Rxp = np.empty((6, 3))  # ∂R_pose/∂x′ per point
    Ke = np.empty((12, 12))
    Re = np.empty((12, 6))
    De = np.empty((12, 6))  # De[3a + j, r] = ∂R_pose[r]/∂Y[a, j]
    Rx_sum = np.zeros((6, 3))
    CTQ_sum = np.zeros((3, 3))
    sCTQ_sum = np.zeros((3, 3))
    Qf_dsda = np.zeros((3, 3))
    V = np.zeros(3)
    nu = np.empty(3)
    a1 = np.empty(3)
    p = np.empty(3)
    f = np.empty(3)
    Qf = np.empty(3)
    Qp = np.empty(3)
    Mnu = np.empty(3)
    U = np.empty(12)
    Z = np.empty(12)
    sig_side = np.empty((4, 4))  # Σ c2 S_a S_b over the points on the lateral surface (M = P)
    sig_cap = np.empty((4, 4))  # … on the caps (M = I)
    for n in range(na):
        r = act[n]
        e = elements[r]
        Ke[:] = 0.0
        sig_side[:] = 0.0
        sig_cap[:] = 0.0
        Re[:] = 0.0
        De[:] = 0.0
        for q in range(nq):
            pt = pts[r, q]
            Fk = pt[COL_F]
            dFk = pt[COL_DF]
            if Fk == 0.0 and dFk == 0.0:
                continue  # not in contact: every derivative below vanishes
            d = pt[COL_D]
            rho = pt[COL_RHO]
            J = pt[COL_A1N]
            wk = pt[COL_W]
            JW = J * wk
            side = pt[COL_SIDE] != 0.0
            s = pt[COL_SC]
            for i in range(3):
                nu[i] = pt[COL_NU + i]
                a1[i] = pt[COL_A1 + i]
                p[i] = pt[COL_P + i]
                f[i] = Fk * JW * nu[i]
            # C = ∂f/∂w = JW [F′/ρ ν⊗ν + F/d (I − ν⊗ν)]
            c1 = JW * (dFk / rho)
            c2 = JW * (Fk / d) if Fk != 0.0 else 0.0
            for i in range(3):
                for j in range(3):
                    nn = nu[i] * nu[j]
                    C[i, j] = c1 * nn + c2 * ((1.0 if i == j else 0.0) - nn)
            # CM = C M = c2 M + (c1 − c2) ν⊗Mν (M = P on the lateral surface, I on the caps)
            tn = tt[0] * nu[0] + tt[1] * nu[1] + tt[2] * nu[2]
            for i in range(3):
                Mnu[i] = nu[i] - tn * tt[i] if side else nu[i]
            for i in range(3):
                for j in range(3):
                    CM[i, j] = c2 * (Pm[i, j] if side else (1.0 if i == j else 0.0)) + (c1 - c2) * nu[i] * Mnu[j]
            # Bp = ∂f/∂x′ = b ν⊗a1
            b = wk * (dFk * d * pt[COL_RAD] / (2.0 * rho * rho * J) + Fk / J)
            for i in range(3):
                for j in range(3):
                    Bp[i, j] = b * nu[i] * a1[j]
            # C T Q, T = s I + [side] t⊗(x − y0)
            for i in range(3):
                ct = C[i, 0] * tt[0] + C[i, 1] * tt[1] + C[i, 2] * tt[2]
                for j in range(3):
                    CT[i, j] = s * C[i, j] + (ct * p[j] if side else 0.0)
            for i in range(3):
                for j in range(3):
                    CTQ[i, j] = CT[i, 0] * Q[0, j] + CT[i, 1] * Q[1, j] + CT[i, 2] * Q[2, j]
            # reaction on the body: Rx = [CM ; Qf⊗∂s/∂x + s Q CM], Rxp = [Bp ; s Q Bp]
            for i in range(3):
                Qf[i] = Q[i, 0] * f[0] + Q[i, 1] * f[1] + Q[i, 2] * f[2]
                Qp[i] = (Q[i, 0] * p[0] + Q[i, 1] * p[1] + Q[i, 2] * p[2]) if side else 0.0
            for i in range(3):
                for j in range(3):
                    Rx[i, j] = CM[i, j]
                    Rxp[i, j] = Bp[i, j]
                    qcm = Q[i, 0] * CM[0, j] + Q[i, 1] * CM[1, j] + Q[i, 2] * CM[2, j]
                    qbp = Q[i, 0] * Bp[0, j] + Q[i, 1] * Bp[1, j] + Q[i, 2] * Bp[2, j]
                    Rx[3 + i, j] = (Qf[i] * tt[j] if side else 0.0) + s * qcm
                    Rxp[3 + i, j] = s * qbp
            for i in range(6):
                for j in range(3):
                    Rx_sum[i, j] += Rx[i, j]
            for i in range(3):
                V[i] += s * f[i]
                for j in range(3):
                    CTQ_sum[i, j] += CTQ[i, j]
                    sCTQ_sum[i, j] += s * CTQ[i, j]
                    Qf_dsda[i, j] += Qf[i] * Qp[j]
            # element blocks; the tangent −Σ_k S_a (CM S_b + Bp dS_b) as
            #   c2 S_a S_b M  +  (S_a ν) ⊗ ((c1 − c2) S_b Mν + b dS_b a1)   (one rank-1 update per point)
            for a in range(4):
                for i in range(3):
                    U[3 * a + i] = S[e, q, a] * nu[i]
                    Z[3 * a + i] = (c1 - c2) * S[e, q, a] * Mnu[i] + b * dS[e, q, a] * a1[i]
            for i in range(12):
                for j in range(12):
                    Ke[i, j] += U[i] * Z[j]
            sig = sig_side if side else sig_cap
            for a in range(4):
                for bb in range(4):
                    sig[a, bb] += c2 * S[e, q, a] * S[e, q, bb]
            for a in range(4):
                sa = S[e, q, a]
                dsa = dS[e, q, a]
                for i in range(3):
                    for j in range(3):
                        Re[3 * a + i, j] += sa * CM[i, j]
                        Re[3 * a + i, 3 + j] += sa * CTQ[i, j]
                for j in range(3):
                    for k in range(6):
                        De[3 * a + j, k] += sa * Rx[k, j] + dsa * Rxp[k, j]
        for a in range(4):
            for bb in range(4):
                for i in range(3):
                    for j in range(3):
                        Ke[3 * a + i, 3 * bb + j] = -(Ke[3 * a + i, 3 * bb + j] + sig_side[a, bb] * Pm[i, j]
                                                      + (sig_cap[a, bb] if i == j else 0.0))
        base = 144 * n
        for i in range(12):
            gi = dofs[e, i]
            used[gi] = True
            for j in range(12):
                rows[base + 12 * i + j] = gi
                cols[base + 12 * i + j] = dofs[e, j]
                vals[base + 12 * i + j] = Ke[i, j]
            for k in range(6):
                Dfib[gi, k] += Re[i, k]
                Du[k, gi] += De[i, k]
    columns = np.flatnonzero(used)
    d_u = np.empty((6, columns.size))
    for k in range(6):
        for c in range(columns.size):
            d_u[k, c] = Du[k, columns[c]]
    # ∂R_pose/∂(y0, a): translation invariance for y0, the formulas of the cylinder_body notes for a
    d_pose = np.empty((6, 6))
    QV = np.empty(3)
    for i in range(3):
        QV[i] = Q[i, 0] * V[0] + Q[i, 1] * V[1] + Q[i, 2] * V[2]
    tV = tt[0] * V[0] + tt[1] * V[1] + tt[2] * V[2]
    for i in range(6):
        for j in range(3):
            d_pose[i, j] = -Rx_sum[i, j]
    for i in range(3):
        for j in range(3):
            d_pose[i, 3 + j] = -CTQ_sum[i, j]
            qs = Q[i, 0] * sCTQ_sum[0, j] + Q[i, 1] * sCTQ_sum[1, j] + Q[i, 2] * sCTQ_sum[2, j]
            d_pose[3 + i, 3 + j] = (-(QV[i] * tt[j] + tV * Q[i, j] + tt[i] * QV[j]) / anorm
                                    + Qf_dsda[i, j] - qs)
    return rows, cols, vals, Dfib, columns, d_u, d_pose
