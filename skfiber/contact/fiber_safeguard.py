"""The step bound of fiber–fiber contact: Newton's safeguard (paper eqs. 69–73).

For every contact point x_k and every element E′ of another fiber whose box,
swept over the step (control points of u and of u + Δu), is within reach,
with d_k = d(x_k, E′) now,

    e(δ) = 1 + γ [ (d_k − δ m_k) / (r_x(δ) + χ_E′(δ)) − 1 ],
    m_k = max_{y ∈ E′} |Δu(y) − Δu(x_k)|,
    r_x(δ) = r_x √(|x′| / (|x′| − δ |Δu′(x_k)|)),
    χ_E′(δ) = max_E′ r0 √(max_E′ |X′| / (min_E′ |x′| − δ max_E′ |Δu′|))

is a lower estimate of 1 + γ g(u + δ Δu) at x_k (:class:`StepData`).  It is
eq. 72–73 with two refinements that keep it a lower bound: the distance can
only shrink by the *relative* motion m_k (the paper: the sum of the largest
motions), and the terms of x_k are taken at the point instead of the element
maximum.  Maxima over an element come from the Bézier control points (of Δu,
Δu′), which bound them.  δ is the largest value in (0, 1] with
e(δ) > δ̄ min(1 + γ g_k, 1) for all pairs, g_k the current gap (eq. 71; the
min with 1 lets pairs not yet in contact approach up to penetration
(1 − δ̄)/γ in one step).  When the estimate stops short of 1, it is restarted
from the state reached (exact distances there), at most
:data:`SAFEGUARD_ROUNDS` times: an admissible step is not cut to the first,
crude estimate (:func:`step_bound`).

Example
-------
>>> import numpy as np
>>> data = StepData(d=np.array([0.2]), move=np.array([0.1]), rx=np.array([0.05]), J=np.array([1.0]),
...                 dJ=np.array([0.0]), rmax=np.array([0.05]), Xmax=np.array([1.0]), vmin=np.array([1.0]),
...                 dv=np.array([0.0]), gamma=2.0)
>>> data.estimate(1.0).round(12).tolist()   # 1 + 2 ((0.2 − 0.1) / 0.1 − 1)
[1.0]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .closest_point import BEZIER_FROM_HERMITE, closest_points
from .fiber_geometry import (RADIUS_SAFETY, FiberSetup, FiberState, chord_distance, fiber_state, power_eval,
                             reference_radius)
from .fiber_pairs import point_candidates

__all__ = ["SAFEGUARD_ROUNDS", "StepData", "step_bound", "partner_distances"]

SAFEGUARD_ROUNDS = 8  # restarts of the safeguard estimate along a step


@dataclass
class StepData:
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

    def take(self, i: np.ndarray) -> "StepData":
        """The rows ``i``."""
        return StepData(**{k: (v if k == "gamma" else v[i]) for k, v in self.__dict__.items()})

    def estimate(self, delta) -> np.ndarray:
        """e(δ) ≤ 1 + γ g(u + δ Δu); −∞ where a radius bound breaks down."""
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = self.J - delta * self.dJ
            sy = self.vmin - delta * self.dv
            r_x = np.where(sx > 0, self.rx * np.sqrt(self.J / sx), np.inf)
            chi = np.where(sy > 0, self.rmax * np.sqrt(self.Xmax / sy), np.inf)
            e = 1.0 + self.gamma * ((self.d - delta * self.move) / (r_x + chi) - 1.0)
        return np.where(np.isfinite(e), e, -np.inf)


def step_bound(model, s: FiberSetup, st: FiberState, u: np.ndarray, du: np.ndarray, delta_bar: float, *,
               gamma: float, name: str) -> float:
    """Largest δ ∈ (0, 1] keeping e(δ) > δ̄ min(1 + γ g, 1) at every contact point (eqs. 69–73).

    The estimate is applied from δ = 0 and then again from the state it
    reached (at most :data:`SAFEGUARD_ROUNDS` times).

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry at u.
    u, du
        (N,) state and full Newton step (finite, du not zero).
    delta_bar
        δ̄ ∈ (0, 1).
    gamma
        γ of the penalty law.
    name
        The contact's name (for messages).

    Returns
    -------
    float
    """
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
    reach = RADIUS_SAFETY * np.where(speed1 > 0, np.maximum(chi1, chi0), 2 * chi0)
    dx = np.matmul(s.H0, dQs).reshape(-1, 3)
    dxp = np.matmul(s.H1, dQs).reshape(-1, 3)
    k, eB = point_candidates(s, st, lo, hi, reach, extra=np.linalg.norm(dx, axis=1))
    if k.size == 0:
        return 1.0
    # |Δu(y) − Δu(x_k)| ≤ max_i |ΔP_i(E′) − Δu(x_k)| for y on E′ (convex hull)
    move = np.linalg.norm(dP[eB] - dx[k][:, None, :], axis=2).max(axis=1)
    dJ = np.linalg.norm(dxp[k], axis=1)
    target = None
    delta = 0.0
    for round_ in range(SAFEGUARD_ROUNDS):
        if round_:
            st = fiber_state(s, model, u + delta * du, name)
        dist, eps = partner_distances(model, s, st, k, eB, gamma)
        data = StepData(
            d=dist, move=move, rx=st.rx[k], J=st.xp_norm[k], dJ=dJ, rmax=s.r0_s.max(axis=1)[eB],
            Xmax=s.Xp_s.max(axis=1)[eB], vmin=st.min_speed[eB], dv=dUp[eB], gamma=gamma,
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


def partner_distances(model, s: FiberSetup, st: FiberState, k: np.ndarray, eB: np.ndarray, gamma: float):
    """Distance from x_k to element eB and 1 + γ g for it.

    Exact within reach; elsewhere a lower bound of the distance (box and
    fat chord) and 1 + γ g = +∞ (out of reach: not in contact).

    Parameters
    ----------
    model
        The fiber model.
    s, st
        Setup and current geometry.
    k, eB
        (n,) contact point indices and partner elements.
    gamma
        γ of the penalty law.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Distances and 1 + γ g, (n,) each.
    """
    xk = st.x[k]
    lo, hi = st.P.min(axis=1), st.P.max(axis=1)
    dist = np.linalg.norm(np.maximum(np.maximum(lo[eB] - xk, xk - hi[eB]), 0.0), axis=1)
    reach = st.rx[k] + st.reach[eB]
    inside = np.flatnonzero(dist < reach)
    dist[inside] = np.maximum(dist[inside], chord_distance(st.P[eB[inside]], xk[inside]) - st.deviation[eB[inside]])
    near = inside[dist[inside] < reach[inside]]
    eps = np.full(k.size, np.inf)
    if near.size:
        e = eB[near]
        cp = closest_points(st.c[e], xk[near])
        dist[near] = cp.distance
        yp = power_eval(st.c[e], cp.xi, 1)
        Yp = power_eval(s.c_ref[e], cp.xi, 1)
        r0y, _ = reference_radius(model, s, e, cp.xi)
        with np.errstate(divide="ignore", invalid="ignore"):
            ry = r0y * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
            eps[near] = 1.0 + gamma * (cp.distance / (st.rx[k[near]] + ry) - 1.0)
    return dist, eps
