"""The step bound of a cylinder contact: Newton's safeguard (paper eqs. 69–73, rigid partner).

Used by :meth:`skfiber.contact.cylinder.CylinderContact.max_step` once the
broad and narrow phases have found the contact points in reach along the step.

**Element bound** (:func:`bound_step`): per element E near the cylinder,
d(δ) ≥ min_E d − δ max_E |Δu| (the distance to a line or segment is
1-Lipschitz) and r(δ) ≤ χ_E(δ) = max_E r0 √(max_E |A1| / (min_E |a1| − δ
max_E |Δu′|)) give e_E(δ) ≤ 1 + γ g at every contact point of E (min/max over
its contact points); the step is the largest δ with e_E(δ) > δ̄ min(e_E(0), 1)
for every element.  ``safeguard="point"`` applies the same bound to each
contact point alone (sharper, same cost).

**Moving cylinder** (``pose_step=(Δy0, Δa)``, the pose moving as y0 + δ Δy0,
a + δ Δa): let s_δ be the (clamped) axial coordinate of the closest point at
δ.  As s_δ is admissible at δ = 0 too, d(0) ≤ |x(0) − y0 − s_δ t(0)|, hence

    d(δ) ≥ d(0) − δ (|Δu| + |Δy0|) − |s_δ| |t(δ) − t(0)|,
    |t(δ) − t(0)| ≤ τ(δ) = min(2, δ |Δa| / (|a| − δ |Δa|))   (2 if |a| ≤ δ |Δa|),
    |s_δ| ≤ ρ(δ) = min(L, |x − y0| + δ (|Δu| + |Δy0|))     (no L if infinite),

the τ bound of :func:`~skfiber.contact.cylinder_pose.turn_bound`, the ρ bound
because |s_δ| ≤ |x(δ) − y0(δ)|: the arm grows along the step (the term beyond
d(0) − δ (|Δu| + |Δy0| + ρ0 |Δa| / (|a| − δ |Δa|)) with ρ0 = max |x − y0| at
δ = 0).  The broad phase grows its reach by |Δy0| + min(L, |c − y0| + |Δy0|)
τ(1) accordingly.

**Trial** (:func:`trial_step`, ``safeguard="trial"``): eq. 71 checked
exactly at the end of the step, δ halved until it holds; one compiled call,
the same for the general and the fast coupled path.

Examples
--------
>>> import numpy as np
>>> e = admissibility_estimate(np.array([0.3]), np.array([0.1]), np.array([0.05]), np.array([1.0]),
...                            np.array([1.0]), np.array([0.0]), 1.0, radius=0.2, length=None, gamma=4.0)
>>> e.round(12).tolist()   # 1 + γ ((0.3 − 0.1) / (0.2 + 0.05) − 1)
[0.2]
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .cylinder_kernels import COL_D, broad_phase_loop, contact_points_loop
from .cylinder_points import CylinderPoints
from .cylinder_pose import turn_bound
from .gap import admissibility, current_radius, normalized_gap
from .geometry import norm3

__all__ = ["admissibility_estimate", "bound_step", "trial_step"]


def admissibility_estimate(dmin, du, r0max, A1max, a1min, dup, *rest, radius: float, length: float | None,
                           gamma: float, motion=None):
    """e(δ) of eq. 72, a lower bound of 1 + γ g (broadcasting; −∞ … 1 + γ(… − 1)).

    Parameters
    ----------
    dmin, du, r0max, A1max, a1min, dup
        min d, max |Δu|, max r0, max |A1|, min |a1| and max |Δu′| over an
        element (or at one point).
    *rest
        (δ,) for a cylinder at rest, (ρ, δ) with ``motion`` for a moving one,
        ρ bounding |x − y0| at δ = 0.
    radius
        r_RB (m).
    length
        L (m), or None for an infinite cylinder.
    gamma
        γ of the penalty law.
    motion
        (|Δy0|, |Δa|, |a|) for a cylinder moving along the step, or None.

    Returns
    -------
    numpy.ndarray
        e(δ), broadcast over the arguments.
    """
    if motion is None:
        (delta,) = rest
        dlow = dmin - delta * du
    else:
        arm0, delta = rest
        dy0_abs, da_abs, a_norm = motion
        move = du + dy0_abs
        arm = arm0 + delta * move
        if length is not None:
            arm = np.minimum(arm, length)
        dlow = dmin - delta * move - arm * turn_bound(delta, da_abs, a_norm)
    speed = a1min - delta * dup
    ok = speed > 0
    chi = current_radius(r0max, A1max, np.where(ok, speed, 1.0))
    gap = normalized_gap(np.where(ok, np.maximum(dlow, 0.0), 0.0), radius, chi)  # −1 where |x′| may vanish
    return admissibility(gap, gamma)


def bound_step(points: CylinderPoints, du: np.ndarray, delta_bar: float, *, radius: float, length: float | None,
               gamma: float, pointwise: bool, motion=None) -> float:
    """Largest δ ∈ (0, 1] with e_E(δ) > δ̄ min(e_E(0), 1) for every element E of ``points``.

    Where the element-wise bound is too coarse (e_E(0) ≤ 0), or with
    ``pointwise``, the same bound is used point by point (E = one contact
    point).  Bisection, all elements at once (e is decreasing in δ).

    Parameters
    ----------
    points
        The contact points in reach at the start of the step (all admissible).
    du
        (N,) the full Newton step of the fiber DOFs.
    delta_bar
        δ̄ ∈ (0, 1).
    radius, length, gamma
        r_RB, L (or None) and γ of the cylinder contact.
    pointwise
        Bound each contact point alone (``safeguard="point"``).
    motion
        (|Δy0|, |Δa|, |a|) for a cylinder moving along the step, or None.

    Returns
    -------
    float
    """
    def estimate(*args):
        return admissibility_estimate(*args, radius=radius, length=length, gamma=gamma, motion=motion)

    s = points.sample
    du_abs = norm3(s.field(du))
    dup_abs = norm3(s.field(du, 1))
    elem = [points.d.min(1), du_abs.max(1), s.r0.max(1), s.A1_norm.max(1), s.a1_norm.min(1), dup_abs.max(1)]
    per_point = [points.d, du_abs, s.r0, s.A1_norm, s.a1_norm, dup_abs]
    if motion is not None:
        arm = norm3(points.p)  # |x − y0|
        elem.append(arm.max(1))
        per_point.append(arm)
    e0 = estimate(*elem, 0.0)
    coarse = ~(e0 > 0) | pointwise
    args = [np.concatenate([a[~coarse], b[coarse].ravel()]) for a, b in zip(elem, per_point)]
    target = delta_bar * np.minimum(estimate(*args, 0.0), 1.0)
    ok = estimate(*args, 1.0) > target
    if np.all(ok):
        return 1.0
    args = [a[~ok] for a in args]
    target = target[~ok]
    lo, hi = np.zeros(target.size), np.ones(target.size)
    for _ in range(30):  # bisection, all elements at once (e is decreasing in δ)
        mid = 0.5 * (lo + hi)
        good = estimate(*args, mid) > target
        lo = np.where(good, mid, lo)
        hi = np.where(good, hi, mid)
    return float(lo.min())


@njit(cache=True)
def trial_step(ref, u, du, dofs, S, dS, r0, A1, h, w, r0max, A1max, elements, point, axis, dy0, da, moving, radius,
               finite, L, kappa, gamma, delta_bar):  # pragma: no cover - compiled
    """``safeguard="trial"``: eq. 71 checked exactly at the end of the step, compiled (one call).

    The broad phase along the whole step (the cylinder moving as y0 + δ Δy0, a + δ Δa when ``moving``),
    the narrow phase at u, then δ = 1, 1/2, 1/4, … until every contact point in reach keeps
    1 + γ g(u + δ Δu) > δ̄ min(1 + γ g(u), 1) (no bound in between: the residual is only evaluated at the
    end of the step).  The arguments are those of :func:`skfiber.coupled_kernels.cylinder_contact` (the
    cylinder's :class:`~skfiber.contact.cylinder_kernels.KernelData`, its pose and size, the law) with
    ``du``, ``dy0``, ``da``, ``moving`` and ``delta_bar`` added.  Returns δ, 0.0 after 40 halvings or when a
    point at u is not admissible, and nan where the axis a + δ Δa has zero length (the caller says why).
    """
    axis_norm = np.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    if not axis_norm > 0:
        return np.nan
    tangent = axis / axis_norm
    dy0_abs = 0.0
    tau = 0.0
    if moving:
        dy0_abs = np.sqrt(dy0[0] * dy0[0] + dy0[1] * dy0[1] + dy0[2] * dy0[2])
        da_abs = np.sqrt(da[0] * da[0] + da[1] * da[1] + da[2] * da[2])
        if not (np.isfinite(dy0_abs) and np.isfinite(da_abs)):
            return np.nan
        den = axis_norm - 1.0 * da_abs
        tau = min(1.0 * da_abs / den, 2.0) if den > 0 else 2.0
    el = elements
    if el.size:
        el = broad_phase_loop(ref, u, dofs, h, r0max, A1max, elements, point, tangent, radius, finite, L, du, moving,
                              dy0_abs, tau)
    if el.size == 0:
        return 1.0
    pts, adm, _, _, _, _, bad = contact_points_loop(ref, u, dofs, S, dS, r0, A1, h, w, el, point, tangent, axis_norm,
                                                    radius, finite, L, kappa, gamma)
    if bad >= 0:
        for r in range(adm.shape[0]):
            for k in range(adm.shape[1]):
                if not (pts[r, k, COL_D] > 0 and adm[r, k] > 0):
                    return 0.0
    target = delta_bar * np.minimum(adm, 1.0)
    delta = 1.0
    for _ in range(40):
        p, t, n = point, tangent, axis_norm
        if moving:
            p = point + delta * dy0
            a = axis + delta * da
            n = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
            if not n > 0:
                return np.nan
            t = a / n
        _, adm_t, _, _, _, _, bad_t = contact_points_loop(ref, u + delta * du, dofs, S, dS, r0, A1, h, w, el, p, t, n,
                                                          radius, finite, L, kappa, gamma)
        if bad_t < 0:
            kept = True
            for r in range(adm_t.shape[0]):
                for k in range(adm_t.shape[1]):
                    if not adm_t[r, k] > target[r, k]:
                        kept = False
            if kept:
                return delta
        delta *= 0.5
    return 0.0
