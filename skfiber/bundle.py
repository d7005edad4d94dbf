"""A muscle of many fibers: parallel fibers packed in a cross-section between two attachment patches.

:func:`packing` gives the points of a cross-section — a hexagonal lattice or concentric rings, the centre
first, then ring by ring — at unit spacing.  :func:`bundle` lays one straight fiber per point from a patch
around the origin point to a patch around the insertion point, in the plane normal to the muscle's line.
The spacing S is chosen so that the fibers start apart: the smallest gap g = d/(r0 + r0′) − 1 between any
two fibers within 2.5 spacings of each other in the packing, over 201 × 201 points of each pair of
centerlines, is at least ``clearance`` (:func:`smallest_gap`).  Patches of different sizes
(``origin_scale``, ``insertion_scale``; only their ratio matters) make the bundle a truncated cone that
narrows from one end to the other.  ``insertion_layout="row"`` ends the fibers on a line instead (a
tendon's flat insertion on a ridge of bone): a patch that turns with its bone about that line keeps the
fibers apart at every angle, where a two-dimensional patch turned by 90° would line its fibers up along
the muscle.

Examples
--------
>>> import skfiber as sf
>>> fibers = bundle((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, n_elements=4, law=sf.paper_law(), name="biceps")
>>> len(fibers), fibers[0].name, fibers[6].name
(7, 'biceps0', 'biceps6')
>>> packing(7).round(3).tolist()[:3]
[[0.0, 0.0], [1.0, 0.0], [0.5, 0.866]]
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .core.jit import njit
from .core.numbers import checked_real
from .fiber import Fiber

__all__ = ["LAYOUTS", "INSERTION_LAYOUTS", "packing", "row_order", "bundle", "bundle_points", "bundle_curves",
           "smallest_spacing",
           "centerlines", "smallest_gap", "reference_clearance"]

#: the cross-section layouts of :func:`packing`
LAYOUTS = ("hexagonal", "rings")
#: the insertion layouts of :func:`bundle_points`: the packing (scaled), or the fibers in a row
INSERTION_LAYOUTS = ("patch", "row")
_ROW_ANGLE = 0.1  # (rad) the direction of :func:`row_order`'s projection, off the first axis
_SAMPLES = 201  # points of each centerline (θ) for the spacing and the smallest gap
_NEAR = 2.5  # pairs of fibers closer than this many spacings in the packing have their gap measured


def packing(n: int, *, layout: str = "hexagonal") -> np.ndarray:
    """``n`` points of a cross-section at unit spacing, (n, 2): the centre first, then ring by ring.

    ``"hexagonal"``: the points of a hexagonal lattice nearest to the centre (ties in distance by angle from
    the first axis), so that every point has up to 6 neighbours at distance 1 (7 and 19 points are the centre
    with one and two whole rings).  ``"rings"``: the centre and rings of radius k with 6k points each
    (k = 1, 2, …), equally spaced on the ring (neighbours on a ring 2k sin(π/6k) ≥ 1 apart, rings 1 apart).
    A count that does not fill a ring leaves the bundle slightly off-centre (36: one point short of 37).

    Parameters
    ----------
    n
        The number of points.
    layout
        ``"hexagonal"`` or ``"rings"``.

    Returns
    -------
    numpy.ndarray
        (n, 2) points; every two are at least 1 apart.

    Raises
    ------
    ValueError
        For ``n`` not an integer ≥ 1 or an unknown layout.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of fibers must be an integer ≥ 1, got {n!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    rings = 0
    while 1 + 3 * rings * (rings + 1) < n:  # points within `rings` rings of a hexagonal lattice
        rings += 1
    if layout == "rings":
        pts = [(0.0, 0.0)] + [(k * math.cos(2 * math.pi * j / (6 * k)), k * math.sin(2 * math.pi * j / (6 * k)))
                              for k in range(1, rings + 1) for j in range(6 * k)]
        return np.array(pts[:n])
    span = range(-2 * rings - 2, 2 * rings + 3)  # a lattice rhombus that contains the disc of radius `rings`
    pts = np.array([(i + 0.5 * j, 0.5 * math.sqrt(3.0) * j) for i in span for j in span])
    dist = np.hypot(pts[:, 0], pts[:, 1])
    angle = np.mod(np.arctan2(pts[:, 1], pts[:, 0]), 2 * math.pi)
    order = np.lexsort((np.round(angle, 9), np.round(dist, 9)))
    out = pts[order[:n]]
    out[np.abs(out) < 1e-12] = 0.0
    return out


def row_order(points: np.ndarray) -> np.ndarray:
    """The place of each point of a packing (n, 2) in a row: the rank of its projection on a direction
    0.1 rad off the first axis (on the first axis the points of a lattice column would tie).

    Fibers that end in a row in this order keep the sign of their separation along the row from one end to
    the other, so they do not cross there.

    Examples
    --------
    >>> row_order(packing(7)).tolist()
    [3, 6, 5, 2, 0, 1, 4]
    """
    t = points @ np.array([math.cos(_ROW_ANGLE), math.sin(_ROW_ANGLE)])
    rank = np.empty(len(points), dtype=np.int64)
    rank[np.argsort(t, kind="stable")] = np.arange(len(points))
    return rank


def _radius_samples(radius, theta: np.ndarray) -> np.ndarray:
    """r0 at ``theta`` from a number or r0(θ), checked: finite and > 0 (else a ValueError naming it)."""
    try:
        r0 = np.broadcast_to(np.asarray(radius(theta) if callable(radius) else radius, dtype=float), theta.shape)
    except (TypeError, ValueError) as error:
        raise ValueError(f"radius must be r0 in m, a number > 0 or r0(θ) giving one per θ, got {radius!r} "
                         f"({error})") from None
    if not (np.all(np.isfinite(r0)) and np.all(r0 > 0)):
        raise ValueError(f"radius must be finite and > 0 along the fibers, got {radius!r} (smallest "
                         f"{np.nanmin(r0) if np.any(np.isfinite(r0)) else r0.flat[0]!r})")
    return np.array(r0)


def _lagrange(theta: np.ndarray) -> np.ndarray:
    """(len(θ), 3): the quadratic Lagrange weights of the points at θ = 0, 1/2, 1."""
    return np.column_stack([(1 - theta) * (1 - 2 * theta), 4 * theta * (1 - theta), theta * (2 * theta - 1)])


def centerlines(points: np.ndarray, theta) -> np.ndarray:
    """The reference centerlines (n, len(θ), 3) of fibers given by their start, middle and end points
    (n, 3, 3) (:func:`bundle_curves`): the parabolas through them at θ = 0, 1/2, 1 (straight lines when the
    middles are the midpoints).

    Examples
    --------
    >>> P = np.array([[[0.0, 0, 0], [0.5, 0.1, 0], [1.0, 0, 0]]])
    >>> centerlines(P, [0.0, 0.5, 1.0])[0].tolist() == P[0].tolist()
    True
    """
    return np.einsum("sj,njk->nsk", _lagrange(np.atleast_1d(np.asarray(theta, dtype=float))),
                     np.asarray(points, dtype=float))


def smallest_gap(starts: np.ndarray, ends: np.ndarray, r0: np.ndarray, pairs: np.ndarray, *,
                 middles: np.ndarray | None = None) -> float:
    """The smallest gap d/(r0(θa) + r0(θb)) − 1 between the fibers ``starts[i]`` → ``ends[i]`` of the pairs
    (m, 2), over all θa, θb of the samples (``r0`` at equally spaced θ from 0 to 1); +inf for no pair.  The
    fibers are straight, or with ``middles`` the parabolas through the start, ``middles[i]`` (at θ = 1/2) and
    the end.

    Examples
    --------
    >>> import numpy as np
    >>> s, e = np.array([[0, 0, 0], [0, 0.3, 0.0]]), np.array([[1, 0, 0], [1, 0.3, 0.0]])
    >>> round(smallest_gap(s, e, np.full(11, 0.1), np.array([[0, 1]])), 12)   # 0.3 / 0.2 − 1
    0.5
    """
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    middles = 0.5 * (starts + ends) if middles is None else np.asarray(middles, dtype=float)
    n = len(starts)
    for name, value in (("starts", starts), ("ends", ends), ("middles", middles)):
        if value.shape != (n, 3):
            raise ValueError(f"{name} must be (n, 3) points like starts ({n} fibers), got shape {value.shape}")
    r0 = np.asarray(r0, dtype=float)
    if r0.ndim != 1 or r0.size < 2:
        raise ValueError(f"r0 must be the radii at 2 or more equally spaced θ, got shape {r0.shape}")
    pairs = np.asarray(pairs)
    if pairs.size and (pairs.dtype.kind not in "iu" or pairs.ndim != 2 or pairs.shape[1] != 2
                       or pairs.min() < 0 or pairs.max() >= n):
        raise ValueError(f"pairs must be (m, 2) integer indices of the {n} fibers (0 … {n - 1}), got {pairs!r}")
    samples = centerlines(np.stack([starts, middles, ends], axis=1), np.linspace(0.0, 1.0, r0.size))
    inverse_rr = 1.0 / (r0[:, None] + r0[None, :]) ** 2
    return _smallest_gap_loop(samples, inverse_rr, np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2))


@njit(cache=True)
def _smallest_gap_loop(samples, inverse_rr, pairs):  # pragma: no cover - compiled
    """:func:`smallest_gap` of the centerlines sampled at ``samples`` (n, s, 3), ``inverse_rr`` (s, s) =
    1/(r0(θa) + r0(θb))²."""
    n, s = samples.shape[0], samples.shape[1]
    low = np.empty((n, 3))  # the fibers' boxes, to skip pairs that cannot be the closest
    high = np.empty((n, 3))
    for i in range(n):
        for c in range(3):
            low[i, c] = samples[i, :, c].min()
            high[i, c] = samples[i, :, c].max()
    smallest_inverse = inverse_rr.min()
    best = math.inf
    for k in range(pairs.shape[0]):
        i, j = pairs[k, 0], pairs[k, 1]
        box = 0.0
        for c in range(3):
            apart = max(low[i, c] - high[j, c], low[j, c] - high[i, c], 0.0)
            box += apart * apart
        if box * smallest_inverse * (1.0 - 1e-9) > (best + 1.0) ** 2:
            continue  # (the boxes are farther apart than the closest pair so far)
        smallest = math.inf
        for p in range(s):
            for q in range(s):
                dx = samples[i, p, 0] - samples[j, q, 0]
                dy = samples[i, p, 1] - samples[j, q, 1]
                dz = samples[i, p, 2] - samples[j, q, 2]
                ratio = (dx * dx + dy * dy + dz * dz) * inverse_rr[p, q]
                if ratio < smallest:
                    smallest = ratio
        best = min(best, math.sqrt(smallest) - 1.0)
    return best


def smallest_spacing(excess: Callable[[float], float], x: float, *, rtol: float = 1e-5,
                     fails: Callable[[float], Exception] | None = None, widenings: int = 60) -> float:
    """The smallest x ≥ ``x`` (to ``rtol`` of it, from above) with ``excess(x)`` ≥ 0, for an excess that grows
    with x: the spacing (or offset) at which a measured gap reaches its target.

    From ``x`` it widens (1 % the first time, then by the secant through the last two values with a margin
    of 10 %, between 1 % and twice x) until the excess is ≥ 0, then finds the root in the bracket by Brent's
    method (:func:`scipy.optimize.brentq`: a handful of evaluations where bisection takes about 17) and
    returns the nearest x above it with excess ≥ 0.

    Parameters
    ----------
    excess
        The measured value less its target, growing with x.
    x
        The start (where the excess is usually < 0).
    rtol
        The relative tolerance of the result.
    fails
        Makes the error raised (from the last excess) when ``widenings`` widenings did not reach excess ≥ 0;
        default a ValueError that says so.

    Examples
    --------
    >>> round(smallest_spacing(lambda x: x * x - 2.0, 1.0), 4)   # √2 from above
    1.4142
    """
    from scipy.optimize import brentq

    if fails is None:
        def fails(last):
            return ValueError(f"the excess stayed < 0 ({last:.3g}) up to x = {x:.4g}; no x keeps it")
    low = f_low = None
    f = excess(x)
    for _ in range(widenings):
        if f >= 0:
            break
        grown = x + 1.1 * (0.0 - f) * (x - low) / (f - f_low) if low is not None and f > f_low else 1.01 * x
        low, f_low, x = x, f, min(max(grown, 1.01 * x), 2.0 * x)
        f = excess(x)
    else:
        raise fails(f)
    if low is None or f == 0:
        return x
    tol = 0.5 * rtol * low
    root = brentq(excess, low, x, xtol=tol, rtol=4 * np.finfo(float).eps)
    for candidate in (root, root + tol, root + 2 * tol):  # the sign change lies within tol of the root
        if candidate < x and excess(candidate) >= 0:
            return float(candidate)
    return x


def bundle_points(origin: Sequence[float], insertion: Sequence[float], n_fibers: int, *, radius,
                  clearance: float = 0.1, layout: str = "hexagonal", origin_scale: float = 1.0,
                  insertion_scale: float = 1.0, up: Sequence[float] | None = None,
                  insertion_layout: str = "patch") -> tuple[np.ndarray, np.ndarray]:
    """The start and end points (n, 3) of the straight fibers of :func:`bundle` (m); see :func:`bundle_curves`.

    Examples
    --------
    >>> starts, ends = bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, up=(0, 1, 0), insertion_scale=0.5,
    ...                              insertion_layout="row")
    >>> bool(np.allclose(ends[:, [0, 2]], [0, -0.3]))      # on the line x = 0, z = −0.3, along y
    True
    """
    points = bundle_curves(origin, insertion, n_fibers, radius=radius, clearance=clearance, layout=layout,
                           origin_scale=origin_scale, insertion_scale=insertion_scale, up=up,
                           insertion_layout=insertion_layout)
    return points[:, 0], points[:, 2]


def bundle_curves(origin: Sequence[float], insertion: Sequence[float], n_fibers: int, *, radius,
                  clearance: float = 0.1, layout: str = "hexagonal", origin_scale: float = 1.0,
                  insertion_scale: float = 1.0, belly_scale: float | None = None,
                  up: Sequence[float] | None = None, insertion_layout: str = "patch") -> np.ndarray:
    """The start, middle (θ = 1/2) and end points (n, 3, 3) of the fibers of :func:`bundle` (m).

    The cross-section is the plane normal to insertion − origin; its first axis is ``up`` projected onto
    that plane (default: the coordinate axis least aligned with the muscle).  The patch around the origin
    is the packing times the spacing S times ``origin_scale``, that around the insertion times
    ``insertion_scale``.  S starts from the rule S s(θ) ≥ 2 r0(θ) (1 + clearance) at every sampled θ,
    s(θ) = (1 − θ) origin_scale + θ insertion_scale (neighbours at equal θ), and is enlarged until the
    measured smallest gap (:func:`smallest_gap`, pairs closer than 2.5 spacings) is ≥ ``clearance``, to
    10⁻⁵ of S (converging fibers come closer than at equal θ).  ``insertion_layout="row"``: the fibers
    end on the line through the insertion along the first axis, S times ``insertion_scale`` apart, in the
    order of :func:`row_order` (the pairs within 3 places of the row have their gap measured too).
    ``belly_scale``: the fibers are parabolas through the patch points, and half-way through the packing
    times S times ``belly_scale`` around the midpoint of the two centres (a bundle that swells between its
    tendons); ``None``: straight fibers (the middle points are the midpoints).

    Parameters
    ----------
    origin, insertion
        The centres of the patches (m).
    n_fibers
        The number of fibers.
    radius
        r0 (m): a number or r0(θ).
    clearance
        The smallest reference gap d/(r_x + r_y) − 1 between fibers, > 0.
    layout, origin_scale, insertion_scale, up, insertion_layout
        See above and :func:`packing`.
    belly_scale
        The belly's scale (see above), > 0, with the parabolas' scale > 0 all along (always so from
        (origin_scale + insertion_scale)/4 on); ``None``: straight fibers.

    Returns
    -------
    numpy.ndarray
        (n, 3, 3): per fiber its start, middle and end point.

    Raises
    ------
    ValueError
        For bad points, counts, scales, radii or ``up`` (naming the value), and for a bundle wider at its
        origin, belly or insertion than ten times the muscle's length (scales far apart: the spacing that keeps
        the narrowest cross-section admissible spreads the widest one).

    Examples
    --------
    >>> points = bundle_curves((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, origin_scale=0.3, insertion_scale=0.3,
    ...                        belly_scale=1.0)
    >>> points.shape, bool(np.allclose(points[0, 1], [0, 0, -0.15]))     # the centre fiber's middle point
    ((7, 3, 3), True)
    """
    try:
        a = np.asarray(origin, dtype=float)
        b = np.asarray(insertion, dtype=float)
    except (TypeError, ValueError):
        a = b = np.full(3, np.nan)
    if a.shape != (3,) or b.shape != (3,) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"origin and insertion must be finite points with 3 coordinates (m), got {origin!r}, "
                         f"{insertion!r}")
    line = b - a
    length = float(np.linalg.norm(line))
    if length == 0.0:
        raise ValueError(f"origin and insertion are the same point {a.tolist()}; give two distinct points")
    for label, value in (("clearance", clearance), ("origin_scale", origin_scale),
                         ("insertion_scale", insertion_scale)) + ((("belly_scale", belly_scale),)
                                                                  if belly_scale is not None else ()):
        checked_real(label, value, above=0)
    axis = line / length
    if up is None:
        up = np.eye(3)[int(np.argmin(np.abs(axis)))]
    try:
        up_ = np.asarray(up, dtype=float)
    except (TypeError, ValueError):
        up_ = np.zeros(0)
    ok = up_.shape == (3,) and bool(np.all(np.isfinite(up_)))
    e1 = up_ - (up_ @ axis) * axis if ok else np.zeros(3)
    if not np.linalg.norm(e1) > 1e-12 * max(1.0, float(np.linalg.norm(up_)) if ok else 1.0):
        raise ValueError(f"up must be a finite vector with 3 coordinates not along the muscle's line, got {up!r}")
    e1 /= np.linalg.norm(e1)
    e1 -= (e1 @ axis) * axis  # (once more: up nearly along the line)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    if insertion_layout not in INSERTION_LAYOUTS:
        raise ValueError(f"insertion_layout must be one of {INSERTION_LAYOUTS}, got {insertion_layout!r}")
    theta = np.linspace(0.0, 1.0, _SAMPLES)
    r0 = _radius_samples(radius, theta)
    if belly_scale is None:
        scale = (1 - theta) * origin_scale + theta * insertion_scale
    else:
        scale = _lagrange(theta) @ np.array([origin_scale, belly_scale, insertion_scale])
        if not np.all(scale > 0):
            raise ValueError(f"belly_scale={belly_scale!r} with origin_scale={origin_scale!r} and insertion_scale="
                             f"{insertion_scale!r} pinches the bundle to nothing at θ = "
                             f"{theta[int(np.argmin(scale))]:.3g} (the parabolas' cross-section scale must stay "
                             "> 0); give a larger belly_scale: (origin_scale + insertion_scale)/4 or more always works")
    spacing = float(np.max(2.0 * r0 * (1.0 + clearance) / scale))
    unit = packing(n_fibers, layout=layout)
    if insertion_layout == "row":
        rank = row_order(unit)
        last = np.column_stack([rank - 0.5 * (n_fibers - 1), np.zeros(n_fibers)])
    else:
        rank, last = np.zeros(n_fibers, dtype=np.int64), unit
    i, j = np.triu_indices(n_fibers, k=1)
    apart_in_row = np.abs(rank[i] - rank[j])
    keep = (np.hypot(*(unit[i] - unit[j]).T) < _NEAR) | ((apart_in_row > 0) & (apart_in_row <= 3))
    near = np.column_stack([i[keep], j[keep]]).astype(np.int64)

    def ends_at(S):
        start = a + origin_scale * S * (unit[:, :1] * e1 + unit[:, 1:] * e2)
        end = b + insertion_scale * S * (last[:, :1] * e1 + last[:, 1:] * e2)
        middle = 0.5 * (start + end) if belly_scale is None else \
            0.5 * (a + b) + belly_scale * S * (unit[:, :1] * e1 + unit[:, 1:] * e2)
        return start, end, middle

    def gap_at(S):
        start, end, middle = ends_at(S)
        return smallest_gap(start, end, r0, near, middles=middle)

    # the gap grows with S (the distances' components in the cross-section scale with it, the axial ones do
    # not): widen S until the gap is kept, then narrow the bracket to 10⁻⁵ of S
    kept = clearance * (1.0 - 1e-9)  # (the rounding of the sampled distances)
    spacing = smallest_spacing(lambda S: gap_at(S) - kept, spacing, fails=lambda gap: ValueError(
        f"no spacing keeps the fibers {clearance:g} apart with origin_scale={origin_scale!r}, insertion_scale="
        f"{insertion_scale!r} and belly_scale={belly_scale!r} (smallest gap {gap + kept:.3g}); give closer scales"))
    start, end, middle = ends_at(spacing)
    for where, points in (("origin", start), ("belly", middle), ("insertion", end)):
        across = 2.0 * float(np.max(np.linalg.norm(points - points.mean(axis=0), axis=1)))
        if across > 10.0 * length:  # (the outer fibers would run almost across the muscle)
            raise ValueError(
                f"the bundle would be {across:.3g} m across at its {where} for a muscle {length:.3g} m long "
                f"({n_fibers} fibers, r0 up to {float(r0.max()):.3g} m, origin_scale={origin_scale!r}, "
                f"insertion_scale={insertion_scale!r}, belly_scale={belly_scale!r}: the spacing follows the "
                "narrowest cross-section); give scales closer to each other, or fewer or thinner fibers")
    return np.stack([start, middle, end], axis=1)


def bundle(origin: Sequence[float], insertion: Sequence[float], n_fibers: int, *, radius, n_elements: int,
           clearance: float = 0.1, layout: str = "hexagonal", origin_scale: float = 1.0,
           insertion_scale: float = 1.0, belly_scale: float | None = None, up: Sequence[float] | None = None,
           insertion_layout: str = "patch", name: str = "fiber", activation=None, **fiber_options) -> list[Fiber]:
    """``n_fibers`` fibers packed between a patch around ``origin`` and one around ``insertion`` (m): straight,
    or swelling to a belly half-way (``belly_scale``).

    Parameters
    ----------
    origin, insertion
        The centres of the two attachment patches (m).
    n_fibers
        The number of fibers; the first is the centre, then ring by ring (:func:`packing`).
    radius
        r0 (m), a number or r0(θ), the same for every fiber.
    n_elements
        Elements per fiber.
    clearance, layout, origin_scale, insertion_scale, belly_scale, up, insertion_layout
        The cross-section, the patches and the belly (:func:`bundle_curves`).
    name
        The fibers are named ``name0``, ``name1``, ….
    activation
        α of every fiber (a number or α(t)), or a sequence of one per fiber (e.g.
        :func:`skfiber.recruitment.recruitment`); default 0.
    **fiber_options
        The other options of :class:`skfiber.Fiber` (law, density, muscle_fraction, …), the same for all.

    Returns
    -------
    list of Fiber

    Raises
    ------
    ValueError
        For bad points, counts, scales or radii (naming the value), or a sequence of activations whose
        length is not ``n_fibers``.
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a string (the fibers are name0, name1, …), got {name!r}")
    points = bundle_curves(origin, insertion, n_fibers, radius=radius, clearance=clearance, layout=layout,
                           origin_scale=origin_scale, insertion_scale=insertion_scale, belly_scale=belly_scale,
                           up=up, insertion_layout=insertion_layout)
    if isinstance(activation, (list, tuple, np.ndarray)) and np.ndim(activation) == 1:  # one per fiber
        activations = list(activation)
        if len(activations) != n_fibers:
            raise ValueError(f"activation must be one value (or α(t)) or {n_fibers} of them, one per fiber, got "
                             f"{len(activations)}")
    else:  # the same for all (a number, α(t) or None: Fiber checks it)
        activations = [0.0 if activation is None else activation] * n_fibers
    if belly_scale is None:
        return [Fiber.straight(p[0], p[2], n_elements=n_elements, radius=radius, activation=alpha, name=f"{name}{k}",
                               **fiber_options)
                for k, (p, alpha) in enumerate(zip(points, activations))]
    return [Fiber(curve=_parabola(p), tangent=_parabola_tangent(p), n_elements=n_elements, radius=radius,
                  activation=alpha, name=f"{name}{k}", **fiber_options)
            for k, (p, alpha) in enumerate(zip(points, activations))]


def _parabola(points: np.ndarray):
    """X(θ) (3, n) of the parabola through ``points`` (3, 3) at θ = 0, 1/2, 1."""
    P = np.array(points, dtype=float)[None]
    return lambda theta: centerlines(P, theta)[0].T


def _parabola_tangent(points: np.ndarray):
    """X′(θ) (3, n) of :func:`_parabola`."""
    P = np.array(points, dtype=float)

    def tangent(theta):
        th = np.atleast_1d(np.asarray(theta, dtype=float))
        dL = np.column_stack([4 * th - 3, 4 - 8 * th, 4 * th - 1])
        return (dL @ P).T
    return tangent


def reference_clearance(model, contact) -> float:
    """The smallest gap g = d/(r_x + r_y) − 1 of ``contact`` (a fiber–fiber contact) in the model's reference
    configuration (u = 0), at the contact points; +inf when no pair is within the search's reach, which ends
    about 5 % of r_x + r_y beyond touching (so +inf also means "apart by more than that").  > 0: the bundle
    starts apart (admissible with every law).

    Examples
    --------
    >>> import skfiber as sf
    >>> from skfiber.contact import FiberContact, PenaltyLaw
    >>> model = sf.Model(bundle((0, 0, 0), (0, 0, -0.3), 3, radius=0.01, clearance=0.03, n_elements=2,
    ...                         law=sf.paper_law()))
    >>> round(reference_clearance(model, model.add_contact(FiberContact(PenaltyLaw(stiffness=500.0, gamma=3.0)))), 6)
    0.03
    """
    pairs = contact.pairs(model, np.zeros(model.n_dofs))
    return float(pairs.gap.min()) if pairs.gap.size else math.inf
