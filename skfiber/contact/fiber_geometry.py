"""The fibers' geometry for fiber–fiber contact: reference data once, current geometry per state.

:func:`fiber_setup` gathers what does not change with the displacement (cached
per discretization by :class:`~skfiber.contact.fibers.FiberContact`): the
Gauss–Legendre contact points of each element and their Hermite weights, the
element DOFs, the reference power coefficients, |X′| and r0 at the contact
points and at :data:`N_SAMPLES` sample points per element.
:func:`fiber_state` evaluates the current geometry of all elements at u:
Hermite, power and Bézier coefficients, the contact points x, x′, the
current radius r_x = r0 √(|X′| / |x′|) there, a bound of the current radius
on each element (:data:`RADIUS_SAFETY` × the sampled maximum) and the
distance within which each segment lies of its chord P0–P3 (the largest
distance of P1, P2 from it), in one compiled loop (:func:`state_loop`).

Parameters along an element are ξ ∈ [0, 1] (slopes per unit ξ: the Hermite
slopes times the element length h in θ).

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.05),
...                   sf.Fiber.straight((0, 1, 0), (1, 1, 0), n_elements=2, radius=0.05)])
>>> s = fiber_setup(model.discretization, 3, None, "contact")
>>> st = fiber_state(s, model, np.zeros(model.n_dofs), "contact")
>>> s.ne, s.nq, st.x.shape, float(st.rx.max())
(4, 3, (12, 3), 0.05)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..core.jit import njit
from ..discretization import hermite_shape
from .closest_point import BEZIER_FROM_HERMITE, POWER_FROM_HERMITE
from .fiber_kernels import RADIUS_SAFETY, chord_distance
from .gap import current_radius
from .geometry import gauss_legendre
from .radius_kernel import RadiusKernel, radius_kernel
from .smallest_gap import radius_polynomials

__all__ = ["N_SAMPLES", "RADIUS_SAFETY", "FiberSetup", "FiberState", "fiber_setup", "fiber_state", "fiber_label",
           "reference_radius", "state_loop"]

N_SAMPLES = 9  # points per element for the radius bounds
_DR0 = 1e-6  # θ step of the central difference of a callable r0(θ)


@dataclass(frozen=True)
class FiberSetup:
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
    radius_group: np.ndarray  # (f,) the first fiber with the same r0(θ) callable (one call serves them all)
    r0_poly: np.ndarray  # (e, 6) r0 on each element as a quintic in ξ (the smallest gap's radius)
    r0_kernels: tuple[RadiusKernel | None, ...]  # per fiber: its compiled r0(θ), or None (constant, callable)
    r0_kernel: RadiusKernel | None  # the compiled r0(θ) when all fibers share one callable (the common case)
    elements: np.ndarray  # taking-part elements
    names: tuple  # fiber names


@dataclass
class FiberState:
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
    lo: np.ndarray  # (e, 3) the box of the control points P: smallest coordinates
    hi: np.ndarray  # (e, 3) and largest


def fiber_setup(d, quadrature_points: int, fibers, name: str) -> FiberSetup:
    """The reference data of a discretization for fiber–fiber contact.

    Parameters
    ----------
    d
        The model's :class:`~skfiber.discretization.Discretization`.
    quadrature_points
        Gauss–Legendre contact points per element.
    fibers
        The taking-part fibers (objects, indices or names), or None for all.
    name
        The contact's name (for the message).

    Returns
    -------
    FiberSetup

    Raises
    ------
    ValueError
        If fewer than 2 distinct fibers take part.
    """
    xi, w = gauss_legendre(quadrature_points)
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
    xs = np.linspace(0.0, 1.0, N_SAMPLES)
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
    radius_group = np.array([next(j for j, g in enumerate(d.fibers) if g.radius is f.radius) for f in d.fibers],
                            dtype=np.int64)
    names = tuple(f.name for f in d.fibers)
    r0_kernels = tuple(  # one per r0(θ) callable, checked at the nodes of all fibers that use it
        radius_kernel(f.radius, np.unique(d.node_theta[np.isin(d.node_fiber, np.flatnonzero(radius_group == k))]),
                      label=fiber_label(names, k))
        if callable(f.radius) and radius_group[k] == k else None
        for k, f in enumerate(d.fibers))
    taking = np.arange(nf) if fibers is None else np.unique([d.fiber_index(f) for f in fibers])
    if taking.size < 2:
        raise ValueError(f"fiber–fiber contact {name!r} needs at least 2 distinct fibers, got {taking.tolist()} "
                         f"(the model has {nf}); a fiber does not touch itself here: drop the FiberContact "
                         "or add fibers")
    elements = np.flatnonzero(np.isin(fiber, taking))
    return FiberSetup(
        ne=ne, nq=xi.size, nf=nf, xi=xi, w=w, H0=H0, H1=H1, Hs0=Hs0, Hs1=Hs1, h=h, theta0=theta0,
        fiber=fiber, first=first, last=last, dofs=dofs, scale=scale, c_ref=c_ref, Xp=Xp, r0=r0,
        Xp_s=Xp_s, r0_s=r0_s, r0_const=r0_const, radius_group=radius_group, r0_poly=radius_polynomials(d),
        r0_kernels=r0_kernels, r0_kernel=r0_kernels[0] if (radius_group == 0).all() else None, elements=elements,
        names=names,
    )


def reference_radius(model, s: FiberSetup, e: np.ndarray, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """r0 and dr0/dξ at parameter ξ of elements e.

    Parameters
    ----------
    model
        The fiber model (its fibers' ``radius_at`` for r0(θ) callables).
    s
        The setup.
    e
        (n,) element indices.
    xi
        (n,) parameters in [0, 1].

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        r0 and dr0/dξ: for a callable r0, from its compiled trace with the exact derivative
        (:mod:`~skfiber.contact.radius_kernel`), or, when it cannot be traced, the callable with a central
        difference in θ; 0 for a constant r0.
    """
    if s.r0_kernel is not None:  # one compiled r0(θ) for all fibers (the common case)
        rv, dv = np.empty(e.size), np.empty(e.size)
        if _compiled(s.r0_kernel, s, e, xi, rv, dv):
            return rv, dv
    fib = s.fiber[e]
    r0 = s.r0_const[fib]
    var = np.isnan(r0)
    if not var.any():
        return r0, np.zeros_like(r0)
    every = bool(var.all())  # (the common case: no masks)
    ev, xv, group = (e, xi, s.radius_group[fib]) if every else (e[var], xi[var], s.radius_group[fib[var]])
    n = ev.size
    if (group == group[0]).all():  # one r0(θ) callable (the common case): no masks
        parts = [(int(group[0]), slice(None))]
    else:
        parts = [(int(k), np.flatnonzero(group == k)) for k in np.unique(group)]
    rv, dv = np.empty(n), np.empty(n)
    fibers = model.discretization.fibers
    for k, m in parts:
        ek, xk = ev[m], xv[m]
        rk, dk = (rv, dv) if isinstance(m, slice) else (np.empty(ek.size), np.empty(ek.size))
        kernel = s.r0_kernels[k]
        if kernel is None or not _compiled(kernel, s, ek, xk, rk, dk):  # the callable: at θ, θ + Δ, θ − Δ
            h = s.h[ek]
            theta = s.theta0[ek] + h * xk
            lo, hi = np.maximum(theta - _DR0, 0.0), np.minimum(theta + _DR0, 1.0)
            r = fibers[k].radius_at(np.concatenate([theta, hi, lo]))
            rk[:] = r[:ek.size]
            dk[:] = (r[ek.size:2 * ek.size] - r[2 * ek.size:]) / (hi - lo) * h
        if not isinstance(m, slice):
            rv[m], dv[m] = rk, dk
    if every:
        return rv, dv
    dr0 = np.zeros_like(r0)
    r0[var], dr0[var] = rv, dv
    return r0, dr0


def _compiled(kernel: RadiusKernel, s: FiberSetup, e: np.ndarray, xi: np.ndarray, r: np.ndarray,
              dr: np.ndarray) -> bool:
    """r0 and dr0/dξ from a compiled r0(θ) into r, dr; False when it cannot serve (not compiled, or a
    power of zero with a negative exponent, which numba raises as Python does: the callable decides)."""
    try:
        return kernel(s.theta0, s.h, e, xi, r, dr)
    except ArithmeticError:
        return False


def fiber_label(names: Sequence[str], k: int) -> str:
    """How messages name fiber ``k`` of a model whose fibers are called ``names``: "fiber 2 ('biceps')".

    Examples
    --------
    >>> fiber_label(("", "biceps"), 1), fiber_label(("", "biceps"), 0)
    ("fiber 1 ('biceps')", 'fiber 0')
    """
    return f"fiber {k}" + (f" ({names[k]!r})" if names[k] else "")


def fiber_state(s: FiberSetup, model, u: np.ndarray, name: str) -> FiberState:
    """The current geometry of all elements at displacement u.

    Parameters
    ----------
    s
        The setup of ``model``'s discretization.
    model
        The fiber model.
    u
        (N,) displacement DOF vector.
    name
        The contact's name (for the message).

    Returns
    -------
    FiberState

    Raises
    ------
    ValueError
        If ``u`` does not have N entries.
    FloatingPointError
        If ``u`` is not finite.
    """
    d = model.discretization
    u = np.asarray(u, dtype=float)
    if u.shape != (d.n_dofs,):
        raise ValueError(f"u must have shape ({d.n_dofs},), got {u.shape}")
    *fields, finite = state_loop(d.reference_dofs, u, s.dofs, s.scale, POWER_FROM_HERMITE, BEZIER_FROM_HERMITE,
                                 s.H0, s.H1, s.Hs1, s.r0, s.Xp, s.r0_s, s.Xp_s, RADIUS_SAFETY)
    if not finite:
        raise FloatingPointError(f"fiber–fiber contact {name!r}: the displacement is not finite")
    return FiberState(*fields)


@njit(cache=True, error_model="numpy")
def state_loop(X, u, dofs, scale, power, bez, H0, H1, Hs1, r0, Xp, r0_s, Xp_s, safety):  # pragma: no cover - compiled
    """The fields of :class:`FiberState` from the DOF values q = X + u, element by element, and whether every
    entry of u is finite (the fields are not meant to be read when not)."""
    for i in range(u.shape[0]):
        if not np.isfinite(u[i]):
            return (np.empty((0, 4, 3)), np.empty((0, 4, 3)), np.empty((0, 4, 3)), np.empty((0, 3)),
                    np.empty((0, 3)), np.empty(0), np.empty(0), np.empty(0), np.empty(0), np.empty(0),
                    np.empty((0, 3)), np.empty((0, 3)), False)
    ne, nq, ns = dofs.shape[0], H0.shape[0], Hs1.shape[0]
    Qs = np.empty((ne, 4, 3))
    c = np.zeros((ne, 4, 3))
    P = np.zeros((ne, 4, 3))
    x = np.zeros((ne * nq, 3))
    xp = np.zeros((ne * nq, 3))
    xp_norm = np.empty(ne * nq)
    rx = np.empty(ne * nq)
    reach = np.empty(ne)
    min_speed = np.empty(ne)
    deviation = np.empty(ne)
    lo = np.empty((ne, 3))
    hi = np.empty((ne, 3))
    v = np.empty(3)
    for e in range(ne):
        for a in range(4):
            for m in range(3):
                j = dofs[e, a, m]
                Qs[e, a, m] = (X[j] + u[j]) * scale[e, a]
        for i in range(4):
            for a in range(4):
                for m in range(3):
                    c[e, i, m] += power[i, a] * Qs[e, a, m]
                    P[e, i, m] += bez[i, a] * Qs[e, a, m]
        r_max = -np.inf
        for j in range(nq):
            k = e * nq + j
            for a in range(4):
                for m in range(3):
                    x[k, m] += H0[j, a] * Qs[e, a, m]
                    xp[k, m] += H1[j, a] * Qs[e, a, m]
            xp_norm[k] = np.sqrt(xp[k, 0] ** 2 + xp[k, 1] ** 2 + xp[k, 2] ** 2)
            rx[k] = current_radius(r0[e, j], Xp[e, j], xp_norm[k])
            r_max = max(r_max, rx[k])
        s_min = np.inf
        for j in range(ns):
            v[:] = 0.0
            for a in range(4):
                for m in range(3):
                    v[m] += Hs1[j, a] * Qs[e, a, m]
            speed = np.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
            s_min = min(s_min, speed)
            r_max = max(r_max, current_radius(r0_s[e, j], Xp_s[e, j], speed))
        reach[e] = safety * r_max
        min_speed[e] = s_min
        deviation[e] = max(chord_distance(P[e], P[e, 1]), chord_distance(P[e], P[e, 2]))
        for m in range(3):  # the box of P (NaN when a coordinate is, as numpy's min and max give it)
            low = high = P[e, 0, m]
            for a in range(1, 4):
                p = P[e, a, m]
                if p < low or p != p:
                    low = p
                if p > high or p != p:
                    high = p
            lo[e, m], hi[e, m] = low, high
    return Qs, c, P, x, xp, xp_norm, rx, reach, min_speed, deviation, lo, hi, True
