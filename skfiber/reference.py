"""Reference solutions for verification, independent of the finite elements.

Examples
--------
>>> import skfiber as sf
>>> from skfiber.reference import hanging_cable
>>> law = sf.prestress(2e3) + sf.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0, eta_tendon=0)
>>> sag, end_force = hanging_cable(law, q=20.0, radius=0.05)
>>> round(sag, 4)
0.0629
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.optimize import brentq

from .materials import MaterialPoint, StressLaw

__all__ = ["stretch_for_force", "hanging_cable", "STRETCH_BRACKET"]

#: the stretches searched for the one that carries a given axial force
STRETCH_BRACKET = (0.5, 3.0)


def stretch_for_force(
    law: StressLaw,
    force: np.ndarray,
    *,
    radius: float,
    theta: np.ndarray | float = 0.5,
    muscle_fraction: np.ndarray | float = 1.0,
    bracket: tuple[float, float] = STRETCH_BRACKET,
) -> np.ndarray:
    """λ with π r0² λ S(λ) = N in statics (λ̇ = 0, α = 0), by vectorized bisection.

    The axial force λ ↦ π r0² λ S(λ) must increase on ``bracket`` (true for
    tension-stiffening laws; not for pure active stress).

    Raises
    ------
    ValueError
        If a force lies outside the axial forces at the bracket's ends (no stretch in the bracket
        carries it): widen ``bracket``.

    Examples
    --------
    >>> import skfiber as sf
    >>> from skfiber.reference import stretch_for_force
    >>> law = sf.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0, eta_tendon=0)
    >>> round(float(stretch_for_force(law, 0.0, radius=0.05)), 12)   # unloaded: unstretched
    1.0
    >>> stretch_for_force(law, 1e9, radius=0.05)
    Traceback (most recent call last):
    ...
    ValueError: no stretch in bracket=(0.5, 3.0) carries the axial force 1e+09 N: the law gives -2748.89 N to 2268.93 N there; widen bracket=
    """
    lam, at_ends, force = _stretch_in_bracket(law, force, radius=radius, theta=theta,
                                              muscle_fraction=muscle_fraction, bracket=bracket)
    _check_carried(force, at_ends, bracket)
    return lam


def _stretch_in_bracket(law, force, *, radius, theta, muscle_fraction, bracket):
    """(λ, the axial forces at the bracket's ends, the force broadcast): λ by bisection, at a bracket end
    where the force lies beyond it (the caller decides whether that may happen)."""
    force = np.asarray(force, dtype=float)
    shape = np.broadcast_shapes(force.shape, np.shape(theta), np.shape(muscle_fraction))
    area = math.pi * radius**2
    lo, hi = np.full(shape, float(bracket[0])), np.full(shape, float(bracket[1]))

    def axial(lam):
        point = MaterialPoint(lam, np.zeros_like(lam), theta=theta, muscle_fraction=muscle_fraction)  # statics, α = 0
        return area * lam * law(point).stress

    at_ends = (np.broadcast_to(axial(lo), shape), np.broadcast_to(axial(hi), shape))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        too_big = axial(mid) > force
        hi = np.where(too_big, mid, hi)
        lo = np.where(too_big, lo, mid)
        if np.max(hi - lo) < 1e-15:
            break
    return 0.5 * (lo + hi), at_ends, np.broadcast_to(force, shape)


def _check_carried(force, at_ends, bracket) -> None:
    """Raise ValueError if a force lies outside the axial forces at the bracket's ends."""
    outside = ~((at_ends[0] <= force) & (force <= at_ends[1]))
    if np.any(outside):
        k = np.flatnonzero(outside.ravel())[0]
        raise ValueError(f"no stretch in bracket={tuple(bracket)} carries the axial force {force.ravel()[k]:g} N: "
                         f"the law gives {at_ends[0].ravel()[k]:g} N to {at_ends[1].ravel()[k]:g} N there; "
                         "widen bracket=")


def hanging_cable(
    law: StressLaw,
    *,
    q: float,
    radius: float,
    length: float = 1.0,
    span: float | None = None,
    muscle_fraction: float | Callable[[np.ndarray], np.ndarray] = 1.0,
    quadrature_points: int = 200,
) -> tuple[float, float]:
    """Midpoint sag and end force of a cable (no bending) hanging between two fixed points.

    A fiber of reference length L carries a load q per reference length
    (N/m, downwards); its ends are fixed at horizontal distance ``span``
    (default L).  Equilibrium: the horizontal force H is constant, the
    vertical one V(s) = q (s − L/2), N = √(H² + V²); the stretch follows from
    N = π r0² λ S(λ, θ) pointwise (statics) and H from ∫ λ H/N ds = span.
    The law must be symmetric about θ = ½ (e.g. γM of eq. 74).

    Returns
    -------
    (sag, N_end)
        Vertical midpoint displacement magnitude (m) and axial force at the ends (N).
    """
    span = length if span is None else span
    nodes, weights = np.polynomial.legendre.leggauss(quadrature_points)
    s = 0.25 * length * (nodes + 1.0)  # half the fiber, [0, L/2]
    weights = 0.25 * length * weights
    theta = s / length
    gm = muscle_fraction(theta) if callable(muscle_fraction) else muscle_fraction
    V = q * (s - 0.5 * length)

    def stretch(N, check=False):  # the root search may try forces past the bracket: λ is its end there
        lam, at_ends, N = _stretch_in_bracket(law, N, radius=radius, theta=theta, muscle_fraction=gm,
                                              bracket=STRETCH_BRACKET)
        if check:
            _check_carried(N, at_ends, STRETCH_BRACKET)
        return lam

    def span_error(H):
        N = np.hypot(H, V)
        return 2 * weights @ (stretch(N) * H / N) - span

    scale = abs(q) * length
    H = brentq(span_error, 1e-6 * scale, 1e6 * scale, xtol=1e-14, rtol=1e-15)
    N = np.hypot(H, V)
    sag = -float(weights @ (stretch(N, check=True) * V / N))  # the solution's forces carried in the bracket
    return sag, float(math.hypot(H, 0.5 * q * length))
