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

__all__ = ["stretch_for_force", "hanging_cable"]


def stretch_for_force(
    law: StressLaw,
    force: np.ndarray,
    *,
    radius: float,
    theta: np.ndarray | float = 0.5,
    muscle_fraction: np.ndarray | float = 1.0,
    bracket: tuple[float, float] = (0.5, 3.0),
) -> np.ndarray:
    """λ with π r0² λ S(λ) = N in statics (λ̇ = 0, α = 0), by vectorized bisection.

    The axial force λ ↦ π r0² λ S(λ) must increase on ``bracket`` (true for
    tension-stiffening laws; not for pure active stress).
    """
    force = np.asarray(force, dtype=float)
    shape = np.broadcast_shapes(force.shape, np.shape(theta), np.shape(muscle_fraction))
    area = math.pi * radius**2
    lo, hi = np.full(shape, float(bracket[0])), np.full(shape, float(bracket[1]))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        point = MaterialPoint(mid, np.zeros_like(mid), theta, 0.0, muscle_fraction, 0.0)
        too_big = area * mid * law(point).stress > force
        hi = np.where(too_big, mid, hi)
        lo = np.where(too_big, lo, mid)
        if np.max(hi - lo) < 1e-15:
            break
    return 0.5 * (lo + hi)


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

    def stretch(N):
        return stretch_for_force(law, N, radius=radius, theta=theta, muscle_fraction=gm)

    def span_error(H):
        N = np.hypot(H, V)
        return 2 * weights @ (stretch(N) * H / N) - span

    scale = abs(q) * length
    H = brentq(span_error, 1e-6 * scale, 1e6 * scale, xtol=1e-14, rtol=1e-15)
    N = np.hypot(H, V)
    sag = -float(weights @ (stretch(N) * V / N))
    return sag, float(math.hypot(H, 0.5 * q * length))
