"""A muscle of many fibers: parallel fibers packed in a cross-section between two attachment patches.

:func:`packing` gives the points of a cross-section — a hexagonal lattice or concentric rings, the centre
first, then ring by ring — at unit spacing.  :func:`bundle` lays one straight fiber per point from a patch
around the origin point to a patch around the insertion point, in the plane normal to the muscle's line.
The spacing is chosen from the fibers' radius r0(θ) so that neighbours start apart: at every θ the
distance between neighbouring centerlines, at equal θ, is at least 2 r0(θ) (1 + ``clearance``).  With
patches of different sizes (``origin_scale``, ``insertion_scale``: a muscle that narrows towards its
tendons) the fibers converge; their closest distance is then slightly below the equal-θ one, and the
clearance covers it while the convergence is gentle (:func:`reference_clearance` measures it with the
contact search).

Example
-------
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

from .fiber import Fiber

__all__ = ["LAYOUTS", "packing", "bundle", "bundle_points", "reference_clearance"]

#: the cross-section layouts of :func:`packing`
LAYOUTS = ("hexagonal", "rings")
_RADIUS_SAMPLES = 201  # θ samples of a callable r0(θ) for the spacing


def packing(n: int, *, layout: str = "hexagonal") -> np.ndarray:
    """``n`` points of a cross-section at unit spacing, (n, 2): the centre first, then ring by ring.

    ``"hexagonal"``: the points of a hexagonal lattice nearest to the centre (ties in distance by angle from
    the first axis), so that every point has up to 6 neighbours at distance 1.  ``"rings"``: the centre and
    rings of radius k with 6k points each (k = 1, 2, …), equally spaced on the ring (neighbours on a ring
    2πk/(6k) > 1 apart, rings 1 apart).

    Raises
    ------
    ValueError
        For ``n`` not an integer ≥ 1 or an unknown layout.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1 (the number of fibers), got {n!r}")
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


def _radius_profile(radius) -> Callable[[np.ndarray], np.ndarray]:
    if callable(radius):
        return lambda th: np.broadcast_to(np.asarray(radius(th), dtype=float), np.shape(th))
    r = float(radius)
    return lambda th: np.full(np.shape(th), r)


def bundle_points(origin: Sequence[float], insertion: Sequence[float], n_fibers: int, *, radius,
                  clearance: float = 0.1, layout: str = "hexagonal", origin_scale: float = 1.0,
                  insertion_scale: float = 1.0, up: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The start and end points (n, 3) of the fibers of :func:`bundle` (m).

    The cross-section is the plane normal to insertion − origin; its first axis is ``up`` projected onto
    that plane (default: the coordinate axis least aligned with the muscle).  The patch around the origin
    is the packing times the spacing S times ``origin_scale``, that around the insertion times
    ``insertion_scale``; S is the smallest spacing with S s(θ) ≥ 2 r0(θ) (1 + clearance) at every θ,
    s(θ) = (1 − θ) origin_scale + θ insertion_scale.
    """
    a = np.asarray(origin, dtype=float)
    b = np.asarray(insertion, dtype=float)
    if a.shape != (3,) or b.shape != (3,) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"origin and insertion must be finite points with 3 coordinates (m), got {origin!r}, "
                         f"{insertion!r}")
    line = b - a
    length = float(np.linalg.norm(line))
    if length == 0.0:
        raise ValueError(f"origin and insertion are the same point {a.tolist()}; give two distinct points")
    for label, value in (("clearance", clearance), ("origin_scale", origin_scale),
                         ("insertion_scale", insertion_scale)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
                or not math.isfinite(value) or value < 0 or (value == 0 and label != "clearance"):
            raise ValueError(f"{label} must be a finite number {'≥' if label == 'clearance' else '>'} 0, "
                             f"got {value!r}")
    axis = line / length
    if up is None:
        up = np.eye(3)[int(np.argmin(np.abs(axis)))]
    up_ = np.asarray(up, dtype=float)
    e1 = up_ - (up_ @ axis) * axis if up_.shape == (3,) else np.zeros(3)
    if not np.linalg.norm(e1) > 1e-12 * max(1.0, float(np.linalg.norm(up_))):
        raise ValueError(f"up must be a vector with 3 coordinates not along the muscle's line, got {up!r}")
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    theta = np.linspace(0.0, 1.0, _RADIUS_SAMPLES)
    r0 = _radius_profile(radius)(theta)
    if not (np.all(np.isfinite(r0)) and np.all(r0 > 0)):
        raise ValueError("the radius r0(θ) must be finite and > 0 along the fibers")
    scale = (1 - theta) * origin_scale + theta * insertion_scale
    spacing = float(np.max(2.0 * r0 * (1.0 + clearance) / scale))
    offsets = packing(n_fibers, layout=layout) * spacing
    plane = offsets[:, :1] * e1 + offsets[:, 1:] * e2
    return a + origin_scale * plane, b + insertion_scale * plane


def bundle(origin: Sequence[float], insertion: Sequence[float], n_fibers: int, *, radius, n_elements: int,
           clearance: float = 0.1, layout: str = "hexagonal", origin_scale: float = 1.0,
           insertion_scale: float = 1.0, up: Sequence[float] | None = None, name: str = "fiber",
           activation=None, **fiber_options) -> list[Fiber]:
    """``n_fibers`` straight fibers packed between a patch around ``origin`` and one around ``insertion`` (m).

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
    clearance, layout, origin_scale, insertion_scale, up
        The cross-section (:func:`bundle_points`).
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
    starts, ends = bundle_points(origin, insertion, n_fibers, radius=radius, clearance=clearance, layout=layout,
                                 origin_scale=origin_scale, insertion_scale=insertion_scale, up=up)
    if activation is None or callable(activation) or isinstance(activation, (int, float, np.floating)):
        activations = [0.0 if activation is None else activation] * n_fibers
    else:
        activations = list(activation)
        if len(activations) != n_fibers:
            raise ValueError(f"activation must be one value (or α(t)) or {n_fibers} of them, one per fiber, got "
                             f"{len(activations)}")
    return [Fiber.straight(s, e, n_elements=n_elements, radius=radius, activation=alpha, name=f"{name}{k}",
                           **fiber_options)
            for k, (s, e, alpha) in enumerate(zip(starts, ends, activations))]


def reference_clearance(model, contact) -> float:
    """The smallest gap g = d/(r_x + r_y) − 1 of ``contact`` (a fiber–fiber contact) in the model's reference
    configuration (u = 0); +inf when no pair is within the search's reach (about 5 % of r_x + r_y beyond
    touching).  > 0: the bundle starts apart (admissible with every law)."""
    pairs = contact.pairs(model, np.zeros(model.n_dofs))
    return float(pairs.gap.min()) if pairs.gap.size else math.inf
