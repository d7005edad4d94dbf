"""Variable-step BDF2 as an anchored backward-Euler step, its error estimate and its dense output.

BDF2 on a grid tₙ₋₁, tₙ, tₙ₊₁ = tₙ + h (ω = h/hₙ₋₁, hₙ₋₁ = tₙ − tₙ₋₁) approximates

    y'(tₙ₊₁) ≈ α₀ yₙ₊₁ + α₁ yₙ + α₂ yₙ₋₁,
    α₀ = (1 + 2ω)/((1 + ω)h),  α₁ = −(1 + ω)/h,  α₂ = ω²/((1 + ω)h).

Written as (yₙ₊₁ − ŷ)/ĥ with ĥ = 1/α₀ = (1 + ω)h/(1 + 2ω) and the anchor
ŷ = ((1 + ω)² yₙ − ω² yₙ₋₁)/(1 + 2ω), it is a backward-Euler quotient from ŷ
with step ĥ.  Applied to positions and velocities alike (v = (u − û)/ĥ,
a = (v − v̂)/ĥ), a BDF2 step of a second-order system is a backward-Euler
step with (û, v̂, ĥ) in place of (uₙ, vₙ, Δt): the model's residual and
tangent are reused unchanged with c_v = 1/ĥ and c_a = 1/ĥ².  Backward Euler
is the anchor (yₙ, h) itself (:func:`anchor` with no earlier point).

:func:`error_weights` gives Milne's estimate of the local error from the
corrector and a quadratic predictor; :func:`interpolate` the dense output.

Examples
--------
>>> import numpy as np
>>> y_hat, h_eff = anchor(0.1, 0.1, np.array([1.0]), np.array([0.5]))
>>> y_hat.round(6).tolist(), round(h_eff, 6)
([1.166667], 0.066667)
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["anchor", "anchor_weights", "bdf2_coefficients", "error_constant", "error_weights", "interpolate",
           "MAX_STEP_RATIO", "RAMP_GROWTH", "ramp_levels"]

#: variable-step BDF2 is zero-stable for step ratios ω = h/hₙ₋₁ < 1 + √2
MAX_STEP_RATIO = 1.0 + math.sqrt(2.0)
#: the largest step ratio of fixed-step BDF2 after shorter steps (:func:`ramp_levels`; the error control's default
#: growth, :class:`~skfiber.core.step_control.ErrorControl`, is the same)
RAMP_GROWTH = 2.0


def ramp_levels(h: float, h_prev: float) -> list[int]:
    """How to cover a step of length ``h`` after one of ``h_prev`` with BDF2's step ratio at most 2.

    A fixed-step run takes shorter substeps where Newton failed; the step after them would be up to
    2**levels times as long, beyond BDF2's zero-stability (ω < 1 + √2, :data:`MAX_STEP_RATIO`).  The step is then
    split into substeps of h/2**m, h/2**m, h/2**(m−1), …, h/2 (they add up to h), m the smallest with
    h/2**m ≤ 2 h_prev: every ratio is at most :data:`RAMP_GROWTH`, and the next step of h follows one of h/2.

    Returns
    -------
    list[int]
        The exponents ℓ of the substeps h/2**ℓ in order: ``[0]`` (the whole step) when h ≤ 2 h_prev or there is
        no earlier step (``h_prev`` ≤ 0).

    Examples
    --------
    >>> ramp_levels(1.0, 1 / 16)      # after a substep of 1/16: 1/8, 1/8, 1/4, 1/2
    [3, 3, 2, 1]
    >>> ramp_levels(1.0, 0.5), ramp_levels(1.0, 0.0)
    ([0], [0])
    """
    if not h_prev > 0 or h <= RAMP_GROWTH * h_prev * (1.0 + 1e-12):
        return [0]
    m = 1
    while h / 2**m > RAMP_GROWTH * h_prev * (1.0 + 1e-12):
        m += 1
    return [m] + list(range(m, 0, -1))


def bdf2_coefficients(h: float, h_prev: float) -> tuple[float, float, float]:
    """(α₀, α₁, α₂) of y'(tₙ₊₁) ≈ α₀ yₙ₊₁ + α₁ yₙ + α₂ yₙ₋₁ for steps h = tₙ₊₁ − tₙ and h_prev = tₙ − tₙ₋₁."""
    w = h / h_prev
    return (1.0 + 2.0 * w) / ((1.0 + w) * h), -(1.0 + w) / h, w * w / ((1.0 + w) * h)


def anchor(h: float, h_prev: float, y_n: np.ndarray, y_prev: np.ndarray | None) -> tuple[np.ndarray, float]:
    """(ŷ, ĥ) with y'(tₙ₊₁) ≈ (yₙ₊₁ − ŷ)/ĥ: BDF2 from (yₙ₋₁, yₙ), backward Euler (yₙ, h) when
    ``y_prev`` is None or ``h_prev`` ≤ 0 (no earlier point)."""
    if y_prev is None or not h_prev > 0:
        return y_n, h
    (p, q, d), h_eff = anchor_weights(h, h_prev)
    return (p * y_n - q * y_prev) / d, h_eff


def anchor_weights(h: float, h_prev: float) -> tuple[tuple[float, float, float], float]:
    """((p, q, d), ĥ) of BDF2's anchor ŷ = (p yₙ − q yₙ₋₁)/d (:func:`anchor`, computed in this order):
    p = (1 + ω)², q = ω², d = 1 + 2ω, ĥ = (1 + ω) h/(1 + 2ω), ω = h/h_prev > 0."""
    w = h / h_prev
    return ((1.0 + w) ** 2, w * w, 1.0 + 2.0 * w), (1.0 + w) * h / (1.0 + 2.0 * w)


def error_constant(taus: np.ndarray, order: int) -> float:
    """e with y_corrector − y(tₙ₊₁) ≈ e y''' (non-stiff, y' exact): BDF of ``order`` applied to y = τ³/6,
    τ = t − tₙ₊₁, ``taus`` = (τₙ, τₙ₋₁) (< 0)."""
    y = taus**3 / 6.0
    if order == 1:  # (y₁ − yₙ)/h = y'(0) = 0
        return float(y[0])
    a0, a1, a2 = bdf2_coefficients(-taus[0], taus[0] - taus[1])
    return float(-(a1 * y[0] + a2 * y[1]) / a0)


def error_weights(t_new: float, past_times, order: int) -> tuple[float, np.ndarray]:
    """Milne's estimate of the local error of a BDF step of ``order`` (1 or 2) to ``t_new``.

    With the predictor y_P = Σⱼ cⱼ yⱼ, the quadratic through the last three
    points ``past_times`` (newest first, extrapolated to t_new), the local
    error of the corrector y_C is E (y_C − y_P).  Returns (E, c).  Both
    errors are proportional to y''' to leading order: y_C − y = e_C y''',
    y_P − y = e_P y''', so E = e_C/(e_C − e_P) (2/11 for BDF2 at constant
    steps).  For backward Euler (order 1) the estimate is of the h³ term
    only, so callers use it on the positions, whose O(h²) error it reads
    through y_C − y_P as well (see :mod:`skfiber.core.step_control`).

    Examples
    --------
    >>> E, c = error_weights(3.0, [2.0, 1.0, 0.0], 2)
    >>> round(E, 6), c.tolist()
    (0.181818, [3.0, -3.0, 1.0])
    """
    taus = np.asarray(past_times, dtype=float)[:3] - float(t_new)
    c = _lagrange_weights(taus, 0.0)
    e_p = float(-np.prod(-taus)) / 6.0  # y_P − y = −Π(0 − τⱼ) y'''/6
    e_c = error_constant(taus[:2], order)
    return e_c / (e_c - e_p), c


def _lagrange_weights(nodes: np.ndarray, x: float) -> np.ndarray:
    """Weights wⱼ of the Lagrange interpolant through ``nodes`` evaluated at x: p(x) = Σ wⱼ yⱼ."""
    w = np.ones(len(nodes))
    for j, xj in enumerate(nodes):
        for m, xm in enumerate(nodes):
            if m != j:
                w[j] *= (x - xm) / (xj - xm)
    return w


def interpolate(times, values, t: float) -> np.ndarray:
    """The polynomial through the points (times[j], values[j]) (up to three, of the last steps) at t:
    BDF2's dense output (of its order); values (k, n).

    Examples
    --------
    >>> interpolate([0.0, 1.0, 2.0], np.array([[0.0], [1.0], [4.0]]), 1.5).tolist()
    [2.25]
    """
    w = _lagrange_weights(np.asarray(times, dtype=float), float(t))
    return w @ np.asarray(values)
