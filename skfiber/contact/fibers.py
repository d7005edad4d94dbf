"""Contact between fibers, two-half-pass (paper §2.4, §4.3, §4.4, Appendix A.3).

Every contact quadrature point x (Gauss–Legendre, ``quadrature_points`` per
element, default 5) of a taking-part fiber A finds, on **each other** fiber B
within reach, its closest point y (all real roots in [0, 1] of the quintic
eq. 67 on every candidate element of B, plus the element ends; see
:mod:`skfiber.contact.closest_point`).  With the *current* radii
r = r0/√λ, λ = |x′|/|X′| at x and at y (eqs. 21, 97),

    g = d / (r_x + r_y) − 1,   d = |y − x|,   n = (y − x)/d      (eqs. 40, 41, 43)

and the rational penalty law F(g) (eq. 44).  The line force −F n (per current
length) acts on fiber A only and pushes it away from y; the other half pass
(the roles of A and B swapped) gives the reaction on B.  (The paper writes
t̄ = F n, eq. 42; taken literally that pulls the fibers together — the
physical sign is used here and checked by a test.)  With G = internal −
external the contribution is (eq. 65)

    G_c = Σ_k F(g_k) n_k · ξ(x_k) |x′(x_k)| w_k            (w_k in ξ; |x′| dξ = ds)

**Tangent** (Appendix A.3, rederived): the closest-point parameter ξ_y
depends on both fibers' DOFs: at an interior closest point by the implicit
function theorem on f = (y − x)·y′ = 0 (eq. 66, 94–95),
δξ_y = −(∂f/∂q δq)/(y′·y′ + (y − x)·y″); at a fiber end ξ_y is fixed.  Then
δd = n·(δy − δx) (eq. 96), δn = (I − n⊗n)(δy + y′ δξ_y − δx)/d,
δr_x = −r_x (x′·δx′)/(2|x′|²), δr_y = r_y [∂_ξ ln r_y δξ_y − (y′·δy′)/(2|y′|²)]
with ∂_ξ ln r_y = h r0′/r0 + (Y′·Y″)/(2|Y′|²) − (y′·y″)/(2|y′|²) (eqs. 97–101),
δg = δd/(r_x + r_y) − d (δr_x + δr_y)/(r_x + r_y)² (eqs. 92–93) and
δ|x′| = x′·δx′/|x′| (eq. 89).  Per contact pair this is a 12 × 24 block
(rows: element of x; columns: element of x and element of y); the blocks are
summed per element (x–x) and per element pair (x–y) and returned as COO
triplets.  Where the closest point sits on an interior node of B, y″ jumps
(C¹ elements) and the closest-point map has a kink: there the mean of the two
one-sided y″ is used (an element of the generalized Jacobian).

**Broad phase** (:mod:`skfiber.contact.broadphase`): Bézier boxes of the
elements inflated by a bound r̄_E of the current radius on the element (1.1 ×
the largest current radius sampled at 9 points), pairs from a k-d tree; then
per contact point a lower bound of the distance to each candidate element
(box, then "fat chord": distance to the chord P0–P3 minus the distance of
P1, P2 from it) against r_x + r̄_B, and candidates whose lower bound exceeds
an upper bound of the distance to fiber B (points of the other candidates)
are dropped.

**Safeguard** (:meth:`FiberContact.max_step`, eqs. 69–73): for every contact
point x_k and every element E′ of another fiber whose box, swept over the step
(control points of u and of u + Δu), is within reach, with d_k = d(x_k, E′)
now,

    e(δ) = 1 + γ [ (d_k − δ m_k) / (r_x(δ) + χ_E′(δ)) − 1 ],
    m_k = max_{y ∈ E′} |Δu(y) − Δu(x_k)|,
    r_x(δ) = r_x √(|x′| / (|x′| − δ |Δu′(x_k)|)),
    χ_E′(δ) = max_E′ r0 √(max_E′ |X′| / (min_E′ |x′| − δ max_E′ |Δu′|))

is a lower estimate of 1 + γ g(u + δ Δu) at x_k.  It is eq. 72–73 with two
refinements that keep it a lower bound: the distance can only shrink by the
*relative* motion m_k (the paper: the sum of the largest motions), and the
terms of x_k are taken at the point instead of the element maximum.  Maxima
over an element come from the Bézier control points (of Δu, Δu′), which
bound them.  δ is the largest value in (0, 1] with e(δ) > δ̄ min(1 + γ g_k, 1)
for all pairs, g_k the current gap (eq. 71; the min with 1 lets pairs not yet
in contact approach up to penetration (1 − δ̄)/γ in one step).  When the
estimate stops short of 1, it is restarted from the state reached (exact
distances there), at most 8 times: an admissible step is not cut to the
first, crude estimate.

Example
-------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.fibers import FiberContact
>>> a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
>>> b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.5, 0.5, 0.09), n_elements=4, radius=0.05)
>>> model = sf.Model([a, b])
>>> contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))
>>> ev = contact.evaluate(model, np.zeros(model.n_dofs), 0.0)
>>> ev.n_active > 0, bool(ev.residual[2:30:6].sum() > 0)   # fiber a pushed down: G_z > 0
(True, True)
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import scipy.sparse as sps

from ..discretization import hermite_shape
from .base import ContactEvaluation, PenaltyLaw
from .broadphase import box_pairs
from .closest_point import BEZIER_FROM_HERMITE, POWER_FROM_HERMITE, closest_points
from .geometry import gauss_legendre

__all__ = ["FiberContact", "ContactPairs"]

_N_SAMPLES = 9  # points per element for the radius bounds
_RADIUS_SAFETY = 1.1  # broad-phase radius bound = this × sampled maximum
_CHUNK = 50000  # contact pairs per tangent chunk (memory ≈ _CHUNK × 3 kB)
_NODE_TOL = 1e-9  # closest points this close (in ξ) to an interior node are "at the node"
_SAFEGUARD_ROUNDS = 8  # restarts of the safeguard estimate along a step
_DR0 = 1e-6  # θ step of the central difference of a callable r0(θ)


# --------------------------------------------------------------------------- setup
@dataclass(frozen=True)
class _Setup:
    """Reference data of one discretization (cached)."""

    ne: int
    nq: int
    nf: int
    xi: np.ndarray  # (q,) contact points on [0, 1]
    w: np.ndarray  # (q,) weights on [0, 1]
    H0: np.ndarray  # (q, 4) Hermite values at the contact points (slopes per unit ξ)
    H1: np.ndarray  # (q, 4) their ξ-derivatives
    Hs0: np.ndarray  # (s, 4) at the sample points
    Hs1: np.ndarray
    h: np.ndarray  # (e,) element length in θ
    theta0: np.ndarray  # (e,) θ at ξ = 0
    fiber: np.ndarray  # (e,) fiber of each element
    first: np.ndarray  # (e,) element starts its fiber
    last: np.ndarray  # (e,) element ends its fiber
    dofs: np.ndarray  # (e, 4, 3) global DOFs of the Hermite groups × components
    scale: np.ndarray  # (e, 4): (1, h, 1, h), θ-slopes → ξ-slopes
    c_ref: np.ndarray  # (e, 4, 3) reference power coefficients (ξ)
    Xp: np.ndarray  # (e, q) |X′| per unit ξ at the contact points
    r0: np.ndarray  # (e, q) r0 at the contact points
    Xp_s: np.ndarray  # (e, s) |X′| per unit ξ at the samples
    r0_s: np.ndarray  # (e, s)
    r0_const: np.ndarray  # (f,) r0 of fibers with constant radius, NaN for r0(θ) callables
    elements: np.ndarray  # taking-part elements
    names: tuple  # fiber names


@dataclass
class _State:
    """Current geometry of all elements."""

    Qs: np.ndarray  # (e, 4, 3) Hermite coefficients, slopes per unit ξ
    c: np.ndarray  # (e, 4, 3) power coefficients
    P: np.ndarray  # (e, 4, 3) Bézier control points
    x: np.ndarray  # (e*q, 3) contact points
    xp: np.ndarray  # (e*q, 3) x′ per unit ξ
    xp_norm: np.ndarray  # (e*q,)
    rx: np.ndarray  # (e*q,) current radius
    reach: np.ndarray  # (e,) bound of the current radius on the element
    min_speed: np.ndarray  # (e,) sampled min |x′| per unit ξ
    deviation: np.ndarray  # (e,) the segment lies within this distance of its chord P0–P3


@dataclass
class ContactPairs:
    """Contact point – partner fiber pairs (one row each) at a state.

    ``point`` indexes the contact points (element × quadrature point, in that
    order), ``element_x``/``element_y`` the elements of x and of its closest
    point y, ``xi_y`` its parameter on ``element_y``; ``gap`` is g (eq. 40)
    and ``admissibility`` 1 + γ g.
    """

    point: np.ndarray
    element_x: np.ndarray
    element_y: np.ndarray
    xi_y: np.ndarray
    fixed: np.ndarray  # closest point at a fiber end (ξ_y does not move)
    x: np.ndarray
    y: np.ndarray
    distance: np.ndarray
    radius_x: np.ndarray
    radius_y: np.ndarray
    gap: np.ndarray
    admissibility: np.ndarray
    fiber_x: np.ndarray
    fiber_y: np.ndarray


def _fiber_label(names, k: int) -> str:
    return f"fiber {k}" + (f" ({names[k]!r})" if names[k] else "")


class FiberContact:
    """Fiber–fiber contact with the rational penalty law (paper §2.4).

    Parameters
    ----------
    law
        :class:`~skfiber.contact.base.PenaltyLaw` (κ in N/m, γ > 0).
    fibers
        The fibers that take part (objects, indices or names); default all.
        Contact is between different fibers only (never a fiber with itself).
    quadrature_points
        Gauss–Legendre contact points per element (default 5, as the paper).
    name
        Name of the contribution (``parts`` of :meth:`skfiber.Model.evaluate`).

    Raises
    ------
    TypeError, ValueError
        For a law that is not a PenaltyLaw, a bad number of points, or an
        unknown fiber (when the model is first evaluated).
    """

    def __init__(self, law: PenaltyLaw, *, fibers: Iterable | None = None, quadrature_points: int = 5,
                 name: str = "fiber_contact"):
        if not isinstance(law, PenaltyLaw):
            raise TypeError(
                f"law must be a PenaltyLaw, got {law!r}; e.g. FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))"
            )
        if isinstance(quadrature_points, bool) or not isinstance(quadrature_points, (int, np.integer)) \
                or not 1 <= quadrature_points <= 20:
            raise ValueError(
                f"quadrature_points must be an integer in 1 … 20 (contact points per element), got {quadrature_points!r}"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.law = law
        self.fibers = None if fibers is None else list(fibers)
        if self.fibers is not None and len(self.fibers) < 2:
            raise ValueError(
                f"fiber–fiber contact needs at least 2 taking-part fibers, got {len(self.fibers)}; "
                "pass fibers=None for all fibers of the model"
            )
        self.quadrature_points = int(quadrature_points)
        self.name = name
        self._setups: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return (f"FiberContact(κ={self.law.stiffness:g}, γ={self.law.gamma:g}, "
                f"quadrature_points={self.quadrature_points}, name={self.name!r})")

    # ------------------------------------------------------------------ setup
    def _setup(self, model) -> _Setup:
        d = model.discretization
        s = self._setups.get(d)
        if s is None:
            s = self._build_setup(d)
            self._setups[d] = s
        return s

    def _build_setup(self, d) -> _Setup:
        xi, w = gauss_legendre(self.quadrature_points)
        ne = int(d.element_fiber.size)
        t = d.mesh.t
        h = d.mesh.p[0, t[1]] - d.mesh.p[0, t[0]]
        fiber = np.asarray(d.element_fiber, dtype=np.int64)
        theta0 = d.node_theta[t[0]]
        first = np.r_[True, fiber[1:] != fiber[:-1]]
        last = np.r_[fiber[1:] != fiber[:-1], True]
        dofs = np.ascontiguousarray(d.assembler.element_dofs.T).reshape(ne, 4, 3).astype(np.int64)
        scale = np.stack([np.ones_like(h), h, np.ones_like(h), h], axis=1)
        Qref = d.reference_dofs[dofs] * scale[:, :, None]
        c_ref = np.matmul(POWER_FROM_HERMITE, Qref)
        H0, H1 = hermite_shape(xi).T, hermite_shape(xi, 1).T
        xs = np.linspace(0.0, 1.0, _N_SAMPLES)
        Hs0, Hs1 = hermite_shape(xs).T, hermite_shape(xs, 1).T
        Xp = np.linalg.norm(np.matmul(H1, Qref), axis=2)
        Xp_s = np.linalg.norm(np.matmul(Hs1, Qref), axis=2)
        nf = len(d.fibers)
        r0 = np.empty((ne, xi.size))
        r0_s = np.empty((ne, xs.size))
        r0_const = np.full(nf, np.nan)
        for fd, f in zip(d.fiber_dofs, d.fibers):  # one vectorized call per fiber
            el = fd.elements
            r0[el] = f.radius_at(theta0[el, None] + h[el, None] * xi[None, :])
            r0_s[el] = f.radius_at(theta0[el, None] + h[el, None] * xs[None, :])
            if not callable(f.radius):
                r0_const[fd.index] = float(f.radius)
        if self.fibers is None:
            taking = np.arange(nf)
        else:
            taking = np.unique([d.fiber_index(f) for f in self.fibers])
            if taking.size < 2:
                raise ValueError(f"fiber–fiber contact {self.name!r} needs at least 2 distinct fibers, got {taking.tolist()}")
        elements = np.flatnonzero(np.isin(fiber, taking))
        return _Setup(
            ne=ne, nq=xi.size, nf=nf, xi=xi, w=w, H0=H0, H1=H1, Hs0=Hs0, Hs1=Hs1, h=h, theta0=theta0,
            fiber=fiber, first=first, last=last, dofs=dofs, scale=scale, c_ref=c_ref, Xp=Xp, r0=r0,
            Xp_s=Xp_s, r0_s=r0_s, r0_const=r0_const, elements=elements,
            names=tuple(f.name for f in d.fibers),
        )

    def _r0(self, model, s: _Setup, e: np.ndarray, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """r0 and dr0/dξ at parameter ξ of elements e."""
        fib = s.fiber[e]
        r0 = s.r0_const[fib]
        dr0 = np.zeros_like(r0)
        var = np.flatnonzero(np.isnan(r0))
        if var.size:
            fibers = model.discretization.fibers
            theta = s.theta0[e[var]] + s.h[e[var]] * xi[var]
            for k in np.unique(fib[var]):  # one vectorized call per fiber with r0(θ)
                m = fib[var] == k
                th = theta[m]
                lo, hi = np.maximum(th - _DR0, 0.0), np.minimum(th + _DR0, 1.0)
                f = fibers[k]
                r0[var[m]] = f.radius_at(th)
                dr0[var[m]] = (f.radius_at(hi) - f.radius_at(lo)) / (hi - lo) * s.h[e[var[m]]]
        return r0, dr0

    # ------------------------------------------------------------------ state
    def _state(self, s: _Setup, model, u: np.ndarray) -> _State:
        d = model.discretization
        u = np.asarray(u, dtype=float)
        if u.shape != (d.n_dofs,):
            raise ValueError(f"u must have shape ({d.n_dofs},), got {u.shape}")
        if not np.all(np.isfinite(u)):
            raise FloatingPointError(f"fiber–fiber contact {self.name!r}: the displacement is not finite")
        Qs = (d.reference_dofs + u)[s.dofs] * s.scale[:, :, None]
        c = np.matmul(POWER_FROM_HERMITE, Qs)
        P = np.matmul(BEZIER_FROM_HERMITE, Qs)
        x = np.matmul(s.H0, Qs).reshape(-1, 3)
        xp = np.matmul(s.H1, Qs).reshape(-1, 3)
        xp_norm = np.linalg.norm(xp, axis=1)
        speed_s = np.linalg.norm(np.matmul(s.Hs1, Qs), axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            rx = s.r0.ravel() * np.sqrt(s.Xp.ravel() / xp_norm)
            r_s = s.r0_s * np.sqrt(s.Xp_s / speed_s)
        reach = _RADIUS_SAFETY * np.maximum(r_s.max(axis=1), rx.reshape(s.ne, s.nq).max(axis=1))
        return _State(Qs, c, P, x, xp, xp_norm, rx, reach, speed_s.min(axis=1), _chord_deviation(P))

    # ------------------------------------------------------------------ pairs
    def _point_candidates(self, s: _Setup, st: _State, lo, hi, reach, extra=None):
        """(contact point, element) candidates of different fibers, pruned by distance bounds."""
        el = s.elements
        ep = box_pairs(lo[el], hi[el], s.fiber[el], reach[el])
        if ep.shape[0] == 0:
            z = np.zeros(0, dtype=np.int64)
            return z, z
        eA, eB = el[ep[:, 0]], el[ep[:, 1]]
        k = (eA[:, None] * s.nq + np.arange(s.nq)[None, :]).ravel()
        eB = np.repeat(eB, s.nq)
        xk = st.x[k]
        # lower bound of the distance from x_k to element eB: box, and fat chord
        lb = np.linalg.norm(np.maximum(np.maximum(lo[eB] - xk, xk - hi[eB]), 0.0), axis=1)
        if extra is not None:  # swept boxes over a step: x_k moves by at most extra[k]
            keep = lb < st.rx[k] + reach[eB] + extra[k]
            return k[keep], eB[keep]
        keep = np.flatnonzero(lb < st.rx[k] + reach[eB])
        k, eB, lb = k[keep], eB[keep], lb[keep]
        lb = np.maximum(lb, _chord_distance(st.P[eB], st.x[k]) - st.deviation[eB])
        keep = lb < st.rx[k] + reach[eB]
        k, eB, lb = k[keep], eB[keep], lb[keep]
        if k.size == 0:
            return k, eB
        # upper bound of the distance to the partner fiber: points on the element
        t = _chord_parameter(st.P[eB], st.x[k])
        y = np.matmul((t[:, None] ** np.arange(4))[:, None, :], st.c[eB])[:, 0]
        ub = np.minimum(np.linalg.norm(y - st.x[k], axis=1),
                        np.minimum(np.linalg.norm(st.P[eB, 0] - st.x[k], axis=1),
                                   np.linalg.norm(st.P[eB, 3] - st.x[k], axis=1)))
        key = k * s.nf + s.fiber[eB]
        order = np.argsort(key, kind="stable")
        ks = key[order]
        new = np.r_[True, ks[1:] != ks[:-1]]
        gmin = np.minimum.reduceat(ub[order], np.flatnonzero(new))
        gid = np.cumsum(new) - 1
        keep_s = lb[order] <= gmin[gid] * (1 + 1e-9)
        sel = np.sort(order[keep_s])
        return k[sel], eB[sel]

    def pairs(self, model, u: np.ndarray, *, method: str = "auto") -> ContactPairs:
        """Contact point – partner fiber pairs within reach at displacement u."""
        s = self._setup(model)
        st = self._state(s, model, u)
        return self._pairs(model, s, st, method=method)

    def _pairs(self, model, s: _Setup, st: _State, *, method: str = "auto") -> ContactPairs:
        lo, hi = st.P.min(axis=1), st.P.max(axis=1)
        k, eB = self._point_candidates(s, st, lo, hi, st.reach)
        cp = closest_points(st.c[eB], st.x[k], method=method)
        # best element of each partner fiber
        key = k * s.nf + s.fiber[eB]
        order = np.lexsort((cp.distance, key))
        ks = key[order]
        best = order[np.r_[True, ks[1:] != ks[:-1]]] if ks.size else order
        k, eB, xi, dist, stat = k[best], eB[best], cp.xi[best], cp.distance[best], cp.stationary[best]
        fixed = ~stat & (((xi == 0.0) & s.first[eB]) | ((xi == 1.0) & s.last[eB]))
        eA = k // s.nq
        y = _power_eval(st.c[eB], xi, 0)
        yp = _power_eval(st.c[eB], xi, 1)
        Yp = _power_eval(s.c_ref[eB], xi, 1)
        r0y, _ = self._r0(model, s, eB, xi)
        with np.errstate(divide="ignore", invalid="ignore"):
            ry = r0y * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
            g = dist / (st.rx[k] + ry) - 1.0
        return ContactPairs(k, eA, eB, xi, fixed, st.x[k], y, dist, st.rx[k], ry, g,
                            1.0 + self.law.gamma * g, s.fiber[eA], s.fiber[eB])

    def _check(self, s: _Setup, pr: ContactPairs, t: float) -> None:
        bad = ~(pr.admissibility > 0) | ~(pr.distance > 0) | ~np.isfinite(pr.radius_y) | ~np.isfinite(pr.radius_x)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[np.argmin(np.where(np.isnan(pr.admissibility[bad]), -np.inf, pr.admissibility[bad]))])
            fa, fb = int(s.fiber[pr.element_x[i]]), int(s.fiber[pr.element_y[i]])
            q = pr.point[i] % s.nq
            th_x = s.theta0[pr.element_x[i]] + s.h[pr.element_x[i]] * s.xi[q]
            th_y = s.theta0[pr.element_y[i]] + s.h[pr.element_y[i]] * pr.xi_y[i]
            raise FloatingPointError(
                f"inadmissible fiber–fiber contact in {self.name!r} at t = {t:.6g} s: "
                f"{_fiber_label(s.names, fa)} at θ = {th_x:.4g} and {_fiber_label(s.names, fb)} at θ = {th_y:.4g} "
                f"penetrate too far: 1 + γg = {pr.admissibility[i]:.3g} ≤ 0 (distance {pr.distance[i]:.4g} m, "
                f"r_x + r_y = {pr.radius_x[i] + pr.radius_y[i]:.4g} m, γ = {self.law.gamma:g}); "
                f"the fibers may not come closer than (1 − 1/γ)(r_x + r_y). Take smaller (load) steps, "
                f"use the safeguard, or increase κ"
            )

    # ------------------------------------------------------------------ evaluate
    def evaluate(self, model, u: np.ndarray, t: float, *, tangent: bool = True) -> ContactEvaluation:
        """Residual contribution, tangent blocks and admissibility at displacement u.

        Raises
        ------
        FloatingPointError
            If a contact point penetrates beyond the law's limit (1 + γ g ≤ 0),
            two centerlines meet (d = 0), or the state is not finite.
        """
        s = self._setup(model)
        # the last state's contact search is kept: Newton asks for the residual of a trial
        # state first and for the tangent at the same state when it solves with it
        key = (id(model.discretization), np.asarray(u, dtype=float).tobytes(), self.law)
        memo = getattr(self, "_last", None)
        if memo is not None and memo[0] == key:
            st, pr = memo[1]
        else:
            st = self._state(s, model, u)
            pr = self._pairs(model, s, st)
            self._check(s, pr, t)
            self._last = (key, (st, pr))
        F, dF = self.law.force(pr.gap)
        active = np.flatnonzero(pr.gap < 0)
        N = model.discretization.n_dofs
        R = np.zeros(N)
        if active.size:
            a = active
            k, eA, q = pr.point[a], pr.element_x[a], pr.point[a] % s.nq
            n = (pr.y[a] - pr.x[a]) / pr.distance[a, None]
            T = (s.w[q] * F[a] * st.xp_norm[k])[:, None] * n  # (p, 3)
            phiA = s.H0[q] * s.scale[eA]
            R = np.bincount(s.dofs[eA].ravel(), weights=(phiA[:, :, None] * T[:, None, :]).ravel(), minlength=N)
        ev = ContactEvaluation(R, admissibility=pr.admissibility.copy(), n_active=int(active.size))
        if tangent and active.size:
            ev.rows, ev.cols, ev.values = self._tangent(model, s, st, pr, active, F, dF)
        return ev

    def _tangent(self, model, s, st, pr, active, F, dF):
        """COO triplets of the tangent: x–x blocks summed per element of x, x–y blocks per element pair.

        The block of pair p is the outer product of its weights w φ_a(ξ_k) (4)
        with ∂T_p/∂(q_x, q_y) (3 × 8 × 3); the sums over the pairs of an
        element (pair) are one sparse × dense product.
        """
        order = active[np.lexsort((pr.element_y[active], pr.element_x[active]))]
        rows, cols, vals = [], [], []
        for chunk in np.array_split(order, max(1, math.ceil(order.size / _CHUNK))):
            weights, dT = self._pair_derivatives(model, s, st, pr, chunk, F[chunk], dF[chunk])
            eA, eB = pr.element_x[chunk], pr.element_y[chunk]
            p = chunk.size
            for part, key, col_el in ((dT[:, :, :4], eA, eA), (dT[:, :, 4:], eA * s.ne + eB, eB)):
                new = np.r_[True, key[1:] != key[:-1]]  # keys are sorted
                group = np.cumsum(new) - 1
                starts = np.flatnonzero(new)
                G = starts.size
                M = sps.csr_matrix(
                    (weights.ravel(), ((4 * group[:, None] + np.arange(4)).ravel(), np.repeat(np.arange(p), 4))),
                    shape=(4 * G, p),
                )
                blocks = (M @ part.reshape(p, 36)).reshape(G, 4, 3, 4, 3)  # [a, i, b, j]
                r = s.dofs[eA[starts]]  # (G, 4, 3)
                c = s.dofs[col_el[starts]]
                rows.append(np.broadcast_to(r[:, :, :, None, None], (G, 4, 3, 4, 3)).ravel())
                cols.append(np.broadcast_to(c[:, None, None, :, :], (G, 4, 3, 4, 3)).ravel())
                vals.append(blocks.ravel())
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def _pair_derivatives(self, model, s, st, pr, a, F, dF):
        """Weights w φ_a(ξ_k) (p, 4) and ∂T/∂(q_x, q_y) (p, 3, 8, 3) of the pairs a, T = F |x′| n.

        With s_b = −φ_b(ξ_k) (groups of x) or φ_b(ξ_y) (groups of y),
        δ(y − x) = s δq + y′ δξ_y, and
        δT = (F J/d) s_b δq_b + y′ (F J/d) δξ_y + n [F′ J δg − (F J/d) δd + F δJ].
        """
        p = a.size
        k, eA, eB, xi = pr.point[a], pr.element_x[a], pr.element_y[a], pr.xi_y[a]
        q = k % s.nq
        x, xp, y = pr.x[a], st.xp[k], pr.y[a]
        c = st.c[eB]
        yp, ypp = _power_eval(c, xi, 1), _power_eval(c, xi, 2)
        Yp, Ypp = _power_eval(s.c_ref[eB], xi, 1), _power_eval(s.c_ref[eB], xi, 2)
        # at an interior node y″ jumps (C¹ elements): the closest-point map has a kink there;
        # use the mean of both sides (an element of the generalized Jacobian, semismooth Newton)
        at0 = (xi <= _NODE_TOL) & ~s.first[eB]
        at1 = (xi >= 1 - _NODE_TOL) & ~s.last[eB]
        if np.any(at0 | at1):
            for mask, other, xo in ((at0, eB - 1, 1.0), (at1, eB + 1, 0.0)):
                i = np.flatnonzero(mask)
                if i.size:
                    xo = np.full(i.size, xo)
                    ypp[i] = 0.5 * (ypp[i] + _power_eval(st.c[other[i]], xo, 2))
                    Ypp[i] = 0.5 * (Ypp[i] + _power_eval(s.c_ref[other[i]], xo, 2))
        d, rx, ry = pr.distance[a], pr.radius_x[a], pr.radius_y[a]
        S = rx + ry
        rel = y - x
        n = rel / d[:, None]
        J = st.xp_norm[k]
        r0y, dr0y = self._r0(model, s, eB, xi)
        phiA = s.H0[q] * s.scale[eA]  # (p, 4)
        dphiA = s.H1[q] * s.scale[eA]
        phiB = hermite_shape(xi).T * s.scale[eB]
        dphiB = hermite_shape(xi, 1).T * s.scale[eB]
        sb = np.concatenate([-phiA, phiB], axis=1)  # (p, 8)

        # δξ_y (eq. 95); zero at a fiber end
        fxi = _dot(yp, yp) + _dot(rel, ypp)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(pr.fixed[a] | (np.abs(fxi) <= 1e-300), 0.0, 1.0 / fxi)
        dxi = np.empty((p, 8, 3))
        dxi[:, :4] = phiA[:, :, None] * yp[:, None, :]
        dxi[:, 4:] = -(phiB[:, :, None] * yp[:, None, :] + dphiB[:, :, None] * rel[:, None, :])
        dxi *= inv[:, None, None]
        # δd = n · δ(y − x)
        dd = sb[:, :, None] * n[:, None, :] + _dot(n, yp)[:, None, None] * dxi
        # radii (eqs. 97–101)
        drx = np.zeros((p, 8, 3))
        drx[:, :4] = -0.5 * (rx / J**2)[:, None, None] * dphiA[:, :, None] * xp[:, None, :]
        yp2 = _dot(yp, yp)
        dlnr = dr0y / r0y + 0.5 * _dot(Yp, Ypp) / _dot(Yp, Yp) - 0.5 * _dot(yp, ypp) / yp2
        dry = (ry * dlnr)[:, None, None] * dxi
        dry[:, 4:] -= 0.5 * (ry / yp2)[:, None, None] * dphiB[:, :, None] * yp[:, None, :]
        dg = dd / S[:, None, None] - (d / S**2)[:, None, None] * (drx + dry)
        dJ = np.zeros((p, 8, 3))
        dJ[:, :4] = dphiA[:, :, None] * (xp / J[:, None])[:, None, :]
        alpha = F * J / d
        v = (dF * J)[:, None, None] * dg - alpha[:, None, None] * dd + F[:, None, None] * dJ
        dT = n[:, :, None, None] * v[:, None, :, :] + yp[:, :, None, None] * (alpha[:, None, None] * dxi)[:, None, :, :]
        diag = alpha[:, None] * sb  # (p, 8): the α s_b δ_ij part
        for i in range(3):
            dT[:, i, :, i] += diag
        return s.w[q][:, None] * phiA, dT

    # ------------------------------------------------------------------ safeguard
    def max_step(self, model, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float) -> float:
        """Largest δ ∈ (0, 1] keeping e(δ) > δ̄ min(1 + γ g, 1) at every contact point (eqs. 69–73).

        The estimate is applied from δ = 0 and then again from the state it
        reached (at most ``_SAFEGUARD_ROUNDS`` times): every restart uses the
        exact distances there, so a step that is admissible is not cut to
        the crude first estimate.
        """
        if not (isinstance(delta_bar, (int, float, np.floating)) and 0 < delta_bar < 1):
            raise ValueError(f"delta_bar δ̄ must lie in (0, 1), got {delta_bar!r}")
        s = self._setup(model)
        st = self._state(s, model, u)
        du = np.asarray(du, dtype=float)
        if du.shape != (model.discretization.n_dofs,) or not np.all(np.isfinite(du)):
            raise ValueError(f"du must be a finite array of shape ({model.discretization.n_dofs},)")
        if not np.any(du):
            return 1.0
        dQs = du[s.dofs] * s.scale[:, :, None]
        dP = np.matmul(BEZIER_FROM_HERMITE, dQs)
        dUp = np.linalg.norm(3.0 * np.diff(dP, axis=1), axis=2).max(axis=1)  # max_E |Δu′| per unit ξ
        P1 = st.P + dP
        lo = np.minimum(st.P.min(axis=1), P1.min(axis=1))
        hi = np.maximum(st.P.max(axis=1), P1.max(axis=1))
        speed1 = st.min_speed - dUp  # radius bound over the whole step
        with np.errstate(divide="ignore", invalid="ignore"):
            chi0 = s.r0_s.max(axis=1) * np.sqrt(s.Xp_s.max(axis=1) / st.min_speed)
            chi1 = s.r0_s.max(axis=1) * np.sqrt(s.Xp_s.max(axis=1) / speed1)
        reach = _RADIUS_SAFETY * np.where(speed1 > 0, np.maximum(chi1, chi0), 2 * chi0)
        dx = np.matmul(s.H0, dQs).reshape(-1, 3)
        dxp = np.matmul(s.H1, dQs).reshape(-1, 3)
        k, eB = self._point_candidates(s, st, lo, hi, reach, extra=np.linalg.norm(dx, axis=1))
        if k.size == 0:
            return 1.0
        # |Δu(y) − Δu(x_k)| ≤ max_i |ΔP_i(E′) − Δu(x_k)| for y on E′ (convex hull)
        move = np.linalg.norm(dP[eB] - dx[k][:, None, :], axis=2).max(axis=1)
        dJ = np.linalg.norm(dxp[k], axis=1)
        gam = self.law.gamma
        target = None
        delta = 0.0
        for round_ in range(_SAFEGUARD_ROUNDS):
            if round_:
                st = self._state(s, model, u + delta * du)
            dist, eps = self._distances(model, s, st, k, eB)
            data = _StepData(
                d=dist, move=move, rx=st.rx[k], J=st.xp_norm[k], dJ=dJ, rmax=s.r0_s.max(axis=1)[eB],
                Xmax=s.Xp_s.max(axis=1)[eB], vmin=st.min_speed[eB], dv=dUp[eB], gamma=gam,
            )
            e0 = data.estimate(0.0)
            if target is None:
                target = delta_bar * np.minimum(eps, 1.0)
                # where the estimate is too coarse already at δ = 0, compare it with itself;
                # where it is not even positive it says nothing (evaluate still rejects bad states)
                target = np.where(e0 <= target, delta_bar * e0, target)
                watch = e0 > 0
            elif np.any(watch & ~(e0 > target)):
                return delta  # the restart does not reach further
            left = 1.0 - delta
            limiting = np.flatnonzero(watch & ~(data.estimate(left) > target))
            if limiting.size == 0:
                return 1.0
            # bisection for the largest step all pairs allow (each e decreases with δ); a pair
            # that passes below the current upper end passes everywhere below: drop it
            sub = data.take(limiting)
            tgt = target[limiting]
            lo_d, hi_d = 0.0, left
            for _ in range(30):
                mid = 0.5 * (lo_d + hi_d)
                ok = sub.estimate(mid) > tgt
                if ok.all():
                    lo_d = mid
                else:
                    hi_d = mid
                    fail = np.flatnonzero(~ok)
                    sub, tgt = sub.take(fail), tgt[fail]
            step = lo_d
            delta += step
            if step < 0.05 * left:  # little progress: stop here
                break
        return float(max(delta, np.finfo(float).tiny))

    def _distances(self, model, s: _Setup, st: _State, k: np.ndarray, eB: np.ndarray):
        """Distance from x_k to element eB and 1 + γ g for it.

        Exact within reach; elsewhere a lower bound of the distance (box and
        fat chord) and 1 + γ g = +∞ (out of reach: not in contact).
        """
        xk = st.x[k]
        lo, hi = st.P.min(axis=1), st.P.max(axis=1)
        dist = np.linalg.norm(np.maximum(np.maximum(lo[eB] - xk, xk - hi[eB]), 0.0), axis=1)
        reach = st.rx[k] + st.reach[eB]
        inside = np.flatnonzero(dist < reach)
        dist[inside] = np.maximum(dist[inside], _chord_distance(st.P[eB[inside]], xk[inside]) - st.deviation[eB[inside]])
        near = inside[dist[inside] < reach[inside]]
        eps = np.full(k.size, np.inf)
        if near.size:
            e = eB[near]
            cp = closest_points(st.c[e], xk[near])
            dist[near] = cp.distance
            yp = _power_eval(st.c[e], cp.xi, 1)
            Yp = _power_eval(s.c_ref[e], cp.xi, 1)
            r0y, _ = self._r0(model, s, e, cp.xi)
            with np.errstate(divide="ignore", invalid="ignore"):
                ry = r0y * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
                eps[near] = 1.0 + self.law.gamma * (cp.distance / (st.rx[k[near]] + ry) - 1.0)
        return dist, eps


# --------------------------------------------------------------------------- helpers
@dataclass
class _StepData:
    """Per (contact point, partner element) data of the safeguard estimate (eqs. 72–73)."""

    d: np.ndarray  # distance now
    move: np.ndarray  # max over y ∈ E′ of |Δu(y) − Δu(x_k)|
    rx: np.ndarray  # r_x now
    J: np.ndarray  # |x′| now (per unit ξ)
    dJ: np.ndarray  # |Δu′(x_k)|
    rmax: np.ndarray  # max_E′ r0
    Xmax: np.ndarray  # max_E′ |X′|
    vmin: np.ndarray  # min_E′ |x′|
    dv: np.ndarray  # max_E′ |Δu′|
    gamma: float

    def take(self, i: np.ndarray) -> "_StepData":
        return _StepData(**{k: (v if k == "gamma" else v[i]) for k, v in self.__dict__.items()})

    def estimate(self, delta) -> np.ndarray:
        """e(δ) ≤ 1 + γ g(u + δ Δu); −∞ where a radius bound breaks down."""
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = self.J - delta * self.dJ
            sy = self.vmin - delta * self.dv
            r_x = np.where(sx > 0, self.rx * np.sqrt(self.J / sx), np.inf)
            chi = np.where(sy > 0, self.rmax * np.sqrt(self.Xmax / sy), np.inf)
            e = 1.0 + self.gamma * ((self.d - delta * self.move) / (r_x + chi) - 1.0)
        return np.where(np.isfinite(e), e, -np.inf)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of (n, 3) arrays."""
    return (a * b).sum(axis=-1)


def _power_eval(c: np.ndarray, xi: np.ndarray, derivative: int) -> np.ndarray:
    """Derivative of Σ c_j ξ^j (c (n, 4, 3)) at ξ (n,), (n, 3)."""
    if derivative == 0:
        w = np.stack([np.ones_like(xi), xi, xi**2, xi**3], axis=1)
    elif derivative == 1:
        w = np.stack([np.zeros_like(xi), np.ones_like(xi), 2 * xi, 3 * xi**2], axis=1)
    else:
        w = np.stack([np.zeros_like(xi), np.zeros_like(xi), 2 * np.ones_like(xi), 6 * xi], axis=1)
    return np.matmul(w[:, None, :], c)[:, 0]


def _chord_parameter(P: np.ndarray, x: np.ndarray) -> np.ndarray:
    e = P[:, 3] - P[:, 0]
    ee = _dot(e, e)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _dot(x - P[:, 0], e) / ee
    return np.clip(np.where(ee > 0, t, 0.0), 0.0, 1.0)


def _chord_distance(P: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Distance from x to the chord segment P0–P3."""
    t = _chord_parameter(P, x)
    return np.linalg.norm(x - P[:, 0] - t[:, None] * (P[:, 3] - P[:, 0]), axis=1)


def _chord_deviation(P: np.ndarray) -> np.ndarray:
    """Largest distance of P1, P2 from the chord: the segment lies within it of the chord."""
    return np.maximum(_chord_distance(P, P[:, 1]), _chord_distance(P, P[:, 2]))
