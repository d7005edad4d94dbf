"""Strain softening of a stress law: where the axial force N(λ) stops growing with stretch.

A cable carries the axial force N = π r0² λ S (r0: reference radius, S: the
physical 2nd Piola–Kirchhoff stress of the law).  In a quasi-static pull the
cable is stable only where N grows with λ: past a local maximum of N(λ)
(a *force peak*), a longer piece of the cable carries the same force with
less stretch elsewhere, so the stretch localizes into a band whose width
the continuum model does not fix — it is set by the mesh (the band is one
or a few elements wide) and so is everything that depends on it (strain
softening; see ``docs/theory.md``).  The paper's active stress (eq. 32)
has such a peak wherever the active part dominates the passive one: its
force–length curve falls past λopt.

This module finds the force peak of any :class:`~skfiber.materials.StressLaw`
from the slope

    dN/dλ ∝ d(λ S)/dλ = S + λ ∂S/∂λ       (at λ̇ = 0, the static branch)

with the law's own ∂S/∂λ, and tells which material points are past it.

Examples
--------
>>> from skfiber.materials import MaterialPoint, paper_law
>>> from skfiber.softening import force_peak_stretch, past_force_peak
>>> triceps = paper_law(sigma0=16.0, mu_muscle=2e4, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3, s_max=1.4e7)
>>> peak = force_peak_stretch(triceps, muscle_fraction=1.0, activation=0.016)
>>> round(float(peak), 2)                           # N(λ) of the pure muscle peaks here …
1.15
>>> past_force_peak(triceps, MaterialPoint(stretch=[1.1, 1.3, 3.3], stretch_rate=0.0,
...                                         muscle_fraction=1.0, activation=0.016)).tolist()
[False, True, True]
>>> float(force_peak_stretch(triceps, muscle_fraction=0.0, activation=0.016))   # … the tendon has none
inf
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .core.warn import warn
from .materials import MaterialPoint, StressLaw

__all__ = ["SofteningWarning", "force_slope", "force_peak_stretch", "past_force_peak", "warn_if_past_force_peak"]


class SofteningWarning(UserWarning):
    """Material past the force peak of its law: the result depends on the mesh."""


def force_slope(law: StressLaw, point: MaterialPoint) -> np.ndarray:
    """d(λ S)/dλ = S + λ ∂S/∂λ (Pa) at the points' stretch, at λ̇ = 0.

    The axial force N = π r0² λ S grows with stretch where this is > 0.

    Examples
    --------
    >>> from skfiber.materials import MaterialPoint, passive_kelvin_voigt
    >>> law = passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0.0, eta_tendon=0.0)
    >>> float(force_slope(law, MaterialPoint(stretch=1.0, stretch_rate=0.0)))   # μ (1 + 2/λ³)
    30000.0
    """
    lam = np.asarray(point.stretch, dtype=float)
    static = dataclasses.replace(point, stretch=lam, stretch_rate=np.zeros_like(lam))
    response = law(static)
    return np.asarray(response.stress + lam * response.d_stretch, dtype=float)


def force_peak_stretch(law: StressLaw, *, muscle_fraction=1.0, activation=0.0, theta=0.0, t: float = 0.0,
                       stretch_min: float = 1.0, stretch_max: float = 4.0, samples: int = 601) -> np.ndarray:
    """λ of the first force peak of N(λ) on [stretch_min, stretch_max]; ∞ where N does not fall there.

    ``muscle_fraction``, ``activation`` and ``theta`` broadcast against each other (one
    peak per combination).  The slope :func:`force_slope` is sampled with the resolution of
    ``samples`` equal steps (a coarse grid of at most 41 stretches, then the interval of the
    first sign change refined: about 60 evaluations per combination); the peak is its first
    sign change from ≥ 0 to < 0, located by linear interpolation between the two samples
    (``stretch_min`` itself where it is < 0 there).

    Raises
    ------
    ValueError
        For a range that is not 0 < stretch_min < stretch_max (finite), or fewer than 2 samples.
    """
    if not (np.isfinite(stretch_min) and np.isfinite(stretch_max) and 0.0 < stretch_min < stretch_max):
        raise ValueError(f"need 0 < stretch_min < stretch_max (finite), got stretch_min={stretch_min!r}, "
                         f"stretch_max={stretch_max!r}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ValueError(f"samples must be an integer ≥ 2, got {samples!r}")
    gm, alpha, th = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (muscle_fraction, activation, theta)))
    shape = gm.shape
    # in two stages with the resolution of `samples` equal steps: a coarse grid of `coarse` + 1 points, then the
    # coarse interval of each first sign change in `fine` steps (about 60 evaluations per point, not `samples`)
    coarse = min(int(samples) - 1, 40)
    fine = max(1, int(np.ceil((int(samples) - 1) / coarse)))

    def slope_at(lam, idx):  # lam (k, m) for the combinations idx (m,)
        return force_slope(law, MaterialPoint(lam, 0.0, theta=th.reshape(-1)[idx][None, :], t=t,
                                              muscle_fraction=gm.reshape(-1)[idx][None, :],
                                              activation=alpha.reshape(-1)[idx][None, :]))

    every = np.arange(gm.size)
    lam = np.broadcast_to(np.linspace(stretch_min, stretch_max, coarse + 1)[:, None], (coarse + 1, gm.size))
    slope = slope_at(lam, every)
    falling = slope < 0.0
    first = np.argmax(falling, axis=0)
    peak = np.full(gm.size, np.inf)
    has = falling.any(axis=0)
    peak[has & (first == 0)] = stretch_min
    inner = np.flatnonzero(has & (first > 0))
    if inner.size:
        i = first[inner]
        lo, hi = lam[i - 1, inner], lam[i, inner]
        lam_f = lo[None, :] + (hi - lo)[None, :] * np.linspace(0.0, 1.0, fine + 1)[:, None]
        slope_f = slope_at(lam_f, inner)
        slope_f[0], slope_f[-1] = slope[i - 1, inner], slope[i, inner]  # (the coarse values, for the same bracket)
        j = np.argmax(slope_f < 0.0, axis=0)  # ≥ 1: the last point falls, the first does not
        cols = np.arange(inner.size)
        s0, s1 = slope_f[j - 1, cols], slope_f[j, cols]
        l0, l1 = lam_f[j - 1, cols], lam_f[j, cols]
        peak[inner] = l0 + (l1 - l0) * s0 / (s0 - s1)
    return peak.reshape(shape)


def past_force_peak(law: StressLaw, point: MaterialPoint, *, stretch_min: float = 1.0,
                    samples: int = 601) -> np.ndarray:
    """True where a material point is stretched beyond the first force peak of its law.

    The peak is searched from ``stretch_min`` (the reference state) up to the largest
    stretch of the points, at each point's muscle fraction, activation, θ and t; points
    at or below ``stretch_min`` are never past it.
    """
    lam = np.asarray(point.stretch, dtype=float)
    gm, alpha, th, lam = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in
                                               (point.muscle_fraction, point.activation, point.theta, lam)))
    past = np.zeros(lam.shape, dtype=bool)
    over = lam > stretch_min
    if over.any():
        peak = force_peak_stretch(law, muscle_fraction=gm[over], activation=alpha[over], theta=th[over], t=point.t,
                                  stretch_min=stretch_min, stretch_max=float(lam[over].max()) * (1 + 1e-9),
                                  samples=samples)
        past[over] = lam[over] > peak
    return past


def warn_if_past_force_peak(name: str, law: StressLaw, point: MaterialPoint, **kwargs) -> bool:
    """Issue a :class:`SofteningWarning` naming ``name`` if any point is past its force peak; True then."""
    past = past_force_peak(law, point, **kwargs)
    if past.any():
        lam = np.broadcast_to(np.asarray(point.stretch, dtype=float), past.shape)
        warn(f"{name}: {int(past.sum())} material point(s) stretched past the force peak of the law "
             f"(up to λ = {lam[past].max():.3g} at t = {point.t:g} s): the axial force falls with stretch "
             "there, the stretch localizes and the result depends on the mesh (strain softening)",
             SofteningWarning)
        return True
    return False
