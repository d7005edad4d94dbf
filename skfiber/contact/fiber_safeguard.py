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
crude estimate (:func:`step_bound`).  The candidates, the distances and the
bisection for δ are compiled loops (:func:`step_geometry`,
:func:`step_candidates`, :func:`partner_loop`, :func:`step_fraction`);
r0(θ) at the closest points is one vectorized call per round.

Examples
--------
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

from ..core.jit import njit
from .closest_point import BEZIER_FROM_HERMITE, closest_point_one
from .fiber_geometry import RADIUS_SAFETY, FiberSetup, FiberState, fiber_state, reference_radius
from .fiber_kernels import chord_distance, neighbours_of, power_point
from .gap import admissibility, current_radius, normalized_gap

__all__ = ["SAFEGUARD_ROUNDS", "SHORT_STEP", "StepData", "step_bound", "step_motion", "short_step",
           "end_state_kept", "end_check_decides", "short_fractions", "partner_distances", "partner_loop",
           "step_fraction", "step_geometry", "step_candidates"]

SAFEGUARD_ROUNDS = 8  # restarts of the safeguard estimate along a step
_BISECTIONS = 30  # halvings of the step fraction
_JIT = dict(cache=True, error_model="numpy")


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

    def arrays(self) -> tuple:
        """The per-pair arrays (d, move, rx, J, dJ, rmax, Xmax, vmin, dv) of the compiled loops."""
        return tuple(np.ascontiguousarray(getattr(self, k), dtype=float)
                     for k in ("d", "move", "rx", "J", "dJ", "rmax", "Xmax", "vmin", "dv"))

    def estimate(self, delta) -> np.ndarray:
        """e(δ) ≤ 1 + γ g(u + δ Δu); −∞ where a radius bound breaks down."""
        return _estimate_loop(self.arrays(), float(self.gamma), float(delta))


@njit(inline="always", **_JIT)
def _estimate(data, i, gamma, delta):  # pragma: no cover - compiled
    """e_i(δ) of :class:`StepData` (its arrays ``data``); −∞ where the distance's lower bound d − δ m reaches 0
    (with γ < 1, e stays ≥ 1 − γ > 0 up to the partner's centerline)."""
    d, move, rx, J, dJ, rmax, Xmax, vmin, dv = data
    if not d[i] - delta * move[i] > 0:
        return -np.inf
    sx = J[i] - delta * dJ[i]
    sy = vmin[i] - delta * dv[i]
    r_x = current_radius(rx[i], J[i], sx) if sx > 0 else np.inf
    chi = current_radius(rmax[i], Xmax[i], sy) if sy > 0 else np.inf
    e = admissibility(normalized_gap(d[i] - delta * move[i], r_x, chi), gamma)
    return e if np.isfinite(e) else -np.inf


@njit(**_JIT)
def _estimate_loop(data, gamma, delta):  # pragma: no cover - compiled
    out = np.empty(data[0].size)
    for i in range(out.size):
        out[i] = _estimate(data, i, gamma, delta)
    return out


@njit(**_JIT)
def step_fraction(data, gamma, target, watch, left):  # pragma: no cover - compiled
    """Largest step in [0, left] with e(δ) > target for the watched pairs (bisection); −1 if ``left`` passes.

    Each e decreases with δ: a pair that passes below the current upper end
    passes everywhere below, and is dropped.
    """
    idx = np.empty(target.size, dtype=np.int64)
    m = 0
    for i in range(target.size):
        if watch[i] and not _estimate(data, i, gamma, left) > target[i]:
            idx[m] = i
            m += 1
    if m == 0:
        return -1.0
    lo, hi = 0.0, left
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        fail = 0
        for j in range(m):
            i = idx[j]
            if not _estimate(data, i, gamma, mid) > target[i]:
                idx[fail] = i
                fail += 1
        if fail == 0:
            lo = mid
        else:
            hi = mid
            m = fail
    return lo


@njit(**_JIT)
def step_geometry(du, dofs, scale, bez, H0, H1, P, min_speed, r0_s, Xp_s, safety):  # pragma: no cover - compiled
    """Per element, over the step du: the swept boxes lo, hi (control points of u and u + du), the radius bound
    r̄_E over the step, ΔP (Bézier points of Δu), Δu and Δu′ at the contact points, and max_E |Δu′| (hodograph)."""
    ne, nq = dofs.shape[0], H0.shape[0]
    lo = np.empty((ne, 3))
    hi = np.empty((ne, 3))
    reach = np.empty(ne)
    dP = np.zeros((ne, 4, 3))
    dx = np.zeros((ne * nq, 3))
    dxp = np.zeros((ne * nq, 3))
    dUp = np.empty(ne)
    dQ = np.empty((4, 3))
    for e in range(ne):
        for a in range(4):
            for m in range(3):
                dQ[a, m] = du[dofs[e, a, m]] * scale[e, a]
        for i in range(4):
            for a in range(4):
                for m in range(3):
                    dP[e, i, m] += bez[i, a] * dQ[a, m]
        for q in range(nq):
            for a in range(4):
                for m in range(3):
                    dx[e * nq + q, m] += H0[q, a] * dQ[a, m]
                    dxp[e * nq + q, m] += H1[q, a] * dQ[a, m]
        top = 0.0  # max_E |Δu′| per unit ξ
        for i in range(3):
            v2 = 0.0
            for m in range(3):
                v2 += (3.0 * (dP[e, i + 1, m] - dP[e, i, m])) ** 2
            top = max(top, np.sqrt(v2))
        dUp[e] = top
        for m in range(3):
            lo[e, m] = np.inf
            hi[e, m] = -np.inf
            for i in range(4):
                lo[e, m] = min(lo[e, m], min(P[e, i, m], P[e, i, m] + dP[e, i, m]))
                hi[e, m] = max(hi[e, m], max(P[e, i, m], P[e, i, m] + dP[e, i, m]))
        speed1 = min_speed[e] - top  # radius bound over the whole step
        chi0 = current_radius(r0_s[e].max(), Xp_s[e].max(), min_speed[e])
        chi1 = current_radius(r0_s[e].max(), Xp_s[e].max(), speed1)
        reach[e] = safety * (max(chi1, chi0) if speed1 > 0 else 2 * chi0)
    return lo, hi, reach, dP, dx, dxp, dUp


@njit(**_JIT)
def step_candidates(ptr, nbr, elements, nq, x, rx, reach, lo, hi, dP, dx, dxp, dUp, r0_s,
                    Xp_s):  # pragma: no cover - compiled
    """(k, E′) candidates over a step and their per-pair data of :class:`StepData` that does not change.

    A pair is kept when the swept box of E′ is within r_x + r̄_E′ + |Δu(x_k)|
    of x_k (``ptr, nbr``: the broad phase of the swept boxes).  Returns k, E′,
    move = max_i |ΔP_i(E′) − Δu(x_k)| (≥ |Δu(y) − Δu(x_k)| on E′, convex
    hull), |Δu′(x_k)|, max_E′ r0, max_E′ |X′| and max_E′ |Δu′|; in the order
    (element of x, element of y, point).
    """
    cap = ptr[-1] * nq
    out_k = np.empty(cap, dtype=np.int64)
    out_e = np.empty(cap, dtype=np.int64)
    move = np.empty(cap)
    dJ = np.empty(cap)
    rmax = np.empty(cap)
    Xmax = np.empty(cap)
    dv = np.empty(cap)
    n = 0
    for ia in range(elements.size):
        eA = elements[ia]
        for r in range(ptr[ia], ptr[ia + 1]):
            eB = elements[nbr[r]]
            for q in range(nq):
                k = eA * nq + q
                extra = np.sqrt(dx[k, 0] ** 2 + dx[k, 1] ** 2 + dx[k, 2] ** 2)
                d2 = 0.0
                for m in range(3):
                    v = max(max(lo[eB, m] - x[k, m], x[k, m] - hi[eB, m]), 0.0)
                    d2 += v * v
                if not np.sqrt(d2) < rx[k] + reach[eB] + extra:
                    continue
                out_k[n], out_e[n] = k, eB
                mv = 0.0
                for i in range(4):
                    mv = max(mv, np.sqrt((dP[eB, i, 0] - dx[k, 0]) ** 2 + (dP[eB, i, 1] - dx[k, 1]) ** 2
                                         + (dP[eB, i, 2] - dx[k, 2]) ** 2))
                move[n] = mv
                dJ[n] = np.sqrt(dxp[k, 0] ** 2 + dxp[k, 1] ** 2 + dxp[k, 2] ** 2)
                rmax[n] = r0_s[eB].max()
                Xmax[n] = Xp_s[eB].max()
                dv[n] = dUp[eB]
                n += 1
    return out_k[:n], out_e[:n], move[:n], dJ[:n], rmax[:n], Xmax[:n], dv[:n]


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
    lo, hi, reach, dP, dx, dxp, dUp = step_geometry(du, s.dofs, s.scale, BEZIER_FROM_HERMITE, s.H0, s.H1, st.P,
                                                     st.min_speed, s.r0_s, s.Xp_s, RADIUS_SAFETY)
    ptr, nbr = neighbours_of(s.elements, s.fiber, lo, hi, reach)
    k, eB, move, dJ, rmax, Xmax, dv = step_candidates(ptr, nbr, s.elements, s.nq, st.x, st.rx, reach, lo, hi, dP, dx,
                                                      dxp, dUp, s.r0_s, s.Xp_s)
    if k.size == 0:
        return 1.0
    target = None
    delta = 0.0
    for round_ in range(SAFEGUARD_ROUNDS):
        if round_:
            st = fiber_state(s, model, u + delta * du, name)
        dist, eps = partner_distances(model, s, st, k, eB, gamma)
        data = StepData(d=dist, move=move, rx=st.rx[k], J=st.xp_norm[k], dJ=dJ, rmax=rmax, Xmax=Xmax,
                        vmin=st.min_speed[eB], dv=dv, gamma=gamma).arrays()
        e0 = _estimate_loop(data, gamma, 0.0)
        if target is None:
            target = delta_bar * np.minimum(eps, 1.0)
            # where the estimate is too coarse already at δ = 0, compare it with itself;
            # where it is not even positive it says nothing (evaluate still rejects bad states)
            target = np.where(e0 <= target, delta_bar * e0, target)
            watch = e0 > 0
        elif np.any(watch & ~(e0 > target)):
            return delta  # the restart does not reach further
        left = 1.0 - delta
        step = step_fraction(data, float(gamma), target, watch, left)
        if step < 0:
            return 1.0
        delta += step
        if step < 0.05 * left:  # little progress: stop here
            break
    return float(max(delta, np.finfo(float).tiny))


#: a step is short when no control point of a contact fiber moves by more than this fraction of the smallest
#: current radius at a contact point (:func:`short_step`)
SHORT_STEP = 0.1


@njit(**_JIT)
def _control_motion(du, dofs, scale, bez):  # pragma: no cover - compiled
    """max over the elements and their Bézier control points of |ΔP| (bounds |Δu| on every element)."""
    top = 0.0
    dQ = np.empty((4, 3))
    for e in range(dofs.shape[0]):
        for a in range(4):
            for m in range(3):
                dQ[a, m] = du[dofs[e, a, m]] * scale[e, a]
        for i in range(4):
            v2 = 0.0
            for m in range(3):
                p = 0.0
                for a in range(4):
                    p += bez[i, a] * dQ[a, m]
                v2 += p * p
            top = max(top, v2)
    return np.sqrt(top)


def step_motion(s: FiberSetup, du: np.ndarray) -> float:
    """M = the largest motion of a point of a contact fiber over the step du (its Bézier control points bound it).

    Parameters
    ----------
    s
        Setup.
    du
        (N,) step.

    Returns
    -------
    float
    """
    return float(_control_motion(np.ascontiguousarray(du, dtype=float), s.dofs, s.scale, BEZIER_FROM_HERMITE))


def short_step(s: FiberSetup, st: FiberState, motion: float) -> bool:
    """Whether the step's largest motion is at most :data:`SHORT_STEP` × the smallest current contact radius.

    Such a step may be checked at its two ends (:func:`end_state_kept`).

    Parameters
    ----------
    s, st
        Setup and current geometry.
    motion
        :func:`step_motion` of the step.

    Returns
    -------
    bool
    """
    return bool(motion <= SHORT_STEP * float(np.min(st.rx))) if st.rx.size else True


@njit(**_JIT)
def end_check_decides(gamma, smallest) -> bool:  # pragma: no cover - compiled
    """Whether :func:`end_state_kept` can accept a step: not with the smallest gap and γ ≤ 1 (its bound of the
    closest distance, (1 − 1/γ) r_x, is then ≤ 0)."""
    return not (smallest and not gamma > 1)


@njit(**_JIT)
def _end_kept(point0, fiber0, adm0, dist0, rx0, point1, fiber1, adm1, dist1, radii1, rx1, n_fibers,
              delta_bar, gamma, motion, smallest):  # pragma: no cover - compiled
    m2 = motion * motion
    # the smallest gap's pairs carry the distance at the gap's point, not the closest distance: the closest
    # distance of an admissible pair exceeds (1 − 1/γ) r_x (its gap is at least the smallest), which must
    # exceed M; else the estimate decides
    if not end_check_decides(gamma, smallest):
        return False
    # the start's pairs by key (contact point, partner fiber), sorted, with the least 1 + γg and distance of each
    # key (+∞ for a key not in reach at the start): memory and work grow with the pairs, not with points × fibers
    n0 = point0.shape[0]
    keys0 = np.empty(n0, dtype=np.int64)
    for i in range(n0):
        closest = (1 - 1 / gamma) * rx0[i] if smallest else dist0[i]  # (a lower bound of) the least distance
        if not closest > motion:
            return False
        keys0[i] = point0[i] * n_fibers + fiber0[i]
    order = np.argsort(keys0, kind="mergesort")
    keys = np.empty(n0, dtype=np.int64)
    adm_min = np.empty(n0)
    dist_min = np.empty(n0)
    u = -1
    for r in range(n0):
        i = order[r]
        if u < 0 or keys0[i] != keys[u]:
            u += 1
            keys[u], adm_min[u], dist_min[u] = keys0[i], np.inf, np.inf
        adm_min[u] = min(adm_min[u], adm0[i])  # (from +∞: a NaN is passed over, whatever the order)
        dist_min[u] = min(dist_min[u], dist0[i])
    keys = keys[:u + 1]
    for i in range(point1.shape[0]):
        key = point1[i] * n_fibers + fiber1[i]
        j = np.searchsorted(keys, key)
        found = j < keys.size and keys[j] == key
        before_i = adm_min[j] if found else np.inf
        d_before_i = dist_min[j] if found else np.inf
        target = delta_bar * min(before_i, 1.0)
        if smallest:
            if not (1 - 1 / gamma) * rx1[i] > motion:
                return False
            # for every partner point y, d(y) ≥ φ_min (r_x + r_y(y)) at both ends, so along the step
            # d(y)/(r_x + r_y(y)) ≥ √(φ_min² − (M/r_x)²), φ_min the smaller smallest gap + 1 of the two ends
            phi = 1.0 + (min(before_i, adm1[i]) - 1.0) / gamma
            lowest = admissibility(np.sqrt(max(phi * phi - m2 / (rx1[i] * rx1[i]), 0.0)) - 1.0, gamma)
        else:
            if not dist1[i] > motion:
                return False
            d = min(d_before_i, dist1[i])  # the distance along the step is ≥ √(d² − M²)
            lowest = adm1[i] - gamma * (dist1[i] - np.sqrt(d * d - m2)) / radii1[i]
        if not lowest > target:
            return False
    return True


def short_fractions(before, after, delta_bar: float) -> tuple[float, ...]:
    """The parts δ of a short step to check from their two ends (:func:`end_state_kept`) when its end breaks eq. 71.

    The first is where the smallest 1 + γg, interpolated linearly between the step's start (A₀) and end
    (A₁), reaches the bound δ̄ min(A₀, 1), with a margin: 0.9 (A₀ − δ̄ min(A₀, 1)) / (A₀ − A₁), within
    [1/8, 0.9]; 1/2 when the end state is inadmissible (``after`` None) or the margin does not fall.  Then
    its half and its quarter.  Each is only a candidate: the check decides.

    Parameters
    ----------
    before, after
        :class:`~skfiber.contact.fiber_pairs.ContactPairs` at the start and at the end of the step (or None).
    delta_bar
        δ̄ ∈ (0, 1).

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> import numpy as np
    >>> [round(f, 4) for f in short_fractions(P(admissibility=np.array([0.0666])),
    ...                                       P(admissibility=np.array([0.0100])), 0.25)]
    [0.7943, 0.3971, 0.1986]
    """
    a0 = float(np.min(before.admissibility)) if before.admissibility.size else 1.0
    first = 0.5
    if after is not None and after.admissibility.size:
        a1 = float(np.min(after.admissibility))
        bound = delta_bar * min(a0, 1.0)
        if a1 < a0 and a0 > bound:
            first = min(max(0.9 * (a0 - bound) / (a0 - a1), 0.125), 0.9)
    return first, first / 2, first / 4


def end_state_kept(s: FiberSetup, before, after, delta_bar: float, *, gamma: float, motion: float,
                   smallest: bool = False) -> bool:
    """Eq. 71 along a short step, from its two ends.

    Each point of a contact fiber moves by at most M = ``motion`` (:func:`step_motion`), so the
    vector between a contact point and any point of a partner fiber is a + δ b with |b| ≤ 2M, and
    |a + δ b|² — convex in δ, with second derivative ≤ 8M² — stays above min(d₀, d₁)² − M² on the
    step (d₀, d₁: the pair's distances at its two ends; +∞ where out of reach).  Hence:

    * if every pair has d > M at both ends, no centerline crosses another within the step;
    * the margin with that lowest distance, 1 + γ (√(min(d₀, d₁)² − M²)/(r_x + r_y) − 1) with the radii
      at the end, above δ̄ min(1 + γ g₀, 1) for every pair in reach at the end (δ̄ for a pair out of reach
      at the start, where g > 0), bounds eq. 71 on the whole step (the radii change along the step at
      second order: |x′| is convex in δ).

    With the smallest gap (``smallest``) a pair's distance is that at the gap's point, not the least one.
    Then: a pair's closest distance exceeds (1 − 1/γ) r_x at both ends (its gap there is at least the
    smallest, and 1 + γ g > 0), which must exceed M (γ ≤ 1: the estimate decides); and every partner point
    y has d(y) ≥ φ_min (r_x + r_y(y)) at both ends (φ_min = 1 + the smaller smallest gap of the two), so
    along the step d(y)/(r_x + r_y(y)) ≥ √(φ_min² − (M/r_x)²), the margin compared with
    δ̄ min(1 + γ g₀, 1).

    Parameters
    ----------
    s
        Setup.
    before, after
        :class:`~skfiber.contact.fiber_pairs.ContactPairs` at the start and at the end of the step.
    delta_bar
        δ̄ ∈ (0, 1).
    gamma
        γ of the penalty law.
    motion
        M of the step.
    smallest
        The pairs are those of the smallest gap (``find_pairs(..., smallest=True)``).

    Returns
    -------
    bool
    """
    return bool(_end_kept(before.point, before.fiber_y, before.admissibility, before.distance, before.radius_x,
                          after.point,
                          after.fiber_y, after.admissibility, after.distance, after.radius_x + after.radius_y,
                          after.radius_x, int(s.nf), float(delta_bar), float(gamma), float(motion),
                          bool(smallest)))


@njit(**_JIT)
def partner_loop(k, eB, x, rx, P, c, c_ref, deviation, reach, certify):  # pragma: no cover - compiled
    """Per pair (x_k, E′): the distance (exact within reach, else box / fat-chord lower bound), near,
    and at the near pairs the closest point's ξ, |y′| and |Y′|."""
    n = k.size
    dist = np.empty(n)
    near = np.zeros(n, dtype=np.bool_)
    xi = np.zeros(n)
    yp_norm = np.ones(n)
    Yp_norm = np.ones(n)
    a = np.empty(6)
    scratch = np.empty((9, 7))
    v = np.empty(3)
    for i in range(n):
        e = eB[i]
        xk = x[k[i]]
        d2 = 0.0
        for m in range(3):
            lo = min(min(P[e, 0, m], P[e, 1, m]), min(P[e, 2, m], P[e, 3, m]))
            hi = max(max(P[e, 0, m], P[e, 1, m]), max(P[e, 2, m], P[e, 3, m]))
            w = max(max(lo - xk[m], xk[m] - hi), 0.0)
            d2 += w * w
        d = np.sqrt(d2)
        bound = rx[k[i]] + reach[e]
        if d < bound:
            d = max(d, chord_distance(P[e], xk) - deviation[e])
            if d < bound:
                near[i] = True
                xi[i], d, _ = closest_point_one(c[e], xk, certify, a, scratch)
                power_point(c[e], xi[i], 1, v)
                yp_norm[i] = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
                power_point(c_ref[e], xi[i], 1, v)
                Yp_norm[i] = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
        dist[i] = d
    return dist, near, xi, yp_norm, Yp_norm


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
    dist, near, xi, yp_norm, Yp_norm = partner_loop(k, eB, st.x, st.rx, st.P, st.c, s.c_ref, st.deviation,
                                                    st.reach, True)
    eps = np.full(k.size, np.inf)
    near = np.flatnonzero(near)
    if near.size:
        r0y, _ = reference_radius(model, s, eB[near], xi[near])
        with np.errstate(divide="ignore", invalid="ignore"):
            ry = current_radius(r0y, Yp_norm[near], yp_norm[near])
            eps[near] = admissibility(normalized_gap(dist[near], st.rx[k[near]], ry), gamma)
    return dist, eps
