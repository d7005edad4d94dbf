"""The fixed-height parallelogram pennation model of Millard et al. (2013), eqs. (4)–(7).

Examples
--------
>>> pen = FixedHeightPennation(0.1, pennation_angle_at_optimal=0.0)
>>> float(pen.pennation_angle(0.05)), round(pen.minimum_fiber_length, 12)
(0.0, 0.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import SIGNIFICANT_REAL, check_positive

__all__ = ["FixedHeightPennation"]


@dataclass(frozen=True)
class FixedHeightPennation:
    """Fixed-height parallelogram pennation model, eq. (6): l^M sin α = h = l_o^M sin α_o.

    The angle is capped at `maximum_pennation_angle`, which sets the minimum
    fiber length h / sin α_max (1 % of l_o^M for unpennated muscles, as in
    OpenSim's ``MuscleFixedWidthPennationModel``).

    Examples
    --------
    >>> pen = FixedHeightPennation(0.1, pennation_angle_at_optimal=math.pi / 6)
    >>> round(float(pen.pennation_angle(0.1)), 12) == round(math.pi / 6, 12)
    True
    >>> round(float(pen.fiber_length(0.3, 0.2)), 12)   # √(h² + (l^MT − l^T)²)
    0.111803398875
    """

    optimal_fiber_length: float
    pennation_angle_at_optimal: float = 0.0
    maximum_pennation_angle: float = math.acos(0.1)

    def __post_init__(self):
        check_positive("optimal_fiber_length", self.optimal_fiber_length)
        if not (0.0 <= self.pennation_angle_at_optimal < math.pi / 2):
            raise ValueError(f"pennation_angle_at_optimal={self.pennation_angle_at_optimal!r} rad "
                             "is outside the allowed range [0, pi/2)")
        if not (0.0 <= self.maximum_pennation_angle <= math.pi / 2):
            raise ValueError(f"maximum_pennation_angle={self.maximum_pennation_angle!r} rad is outside "
                             "the allowed range [0, pi/2]")

    @property
    def height(self) -> float:
        """Parallelogram height h = l_o^M sin α_o (m)."""
        return self.optimal_fiber_length * math.sin(self.pennation_angle_at_optimal)

    @property
    def minimum_fiber_length(self) -> float:
        """Fiber length at the maximum pennation angle (m)."""
        if self.maximum_pennation_angle > SIGNIFICANT_REAL:
            return self.height / math.sin(self.maximum_pennation_angle)
        return 0.01 * self.optimal_fiber_length

    @property
    def _pennated(self) -> bool:
        return self.pennation_angle_at_optimal > np.finfo(float).eps

    def pennation_angle(self, fiber_length) -> np.ndarray:
        """α(l^M) = asin(h / l^M), capped at the maximum pennation angle (rad)."""
        lce = np.asarray(fiber_length, dtype=float)
        if not self._pennated:
            return np.zeros_like(lce)
        with np.errstate(divide="ignore", invalid="ignore"):
            sin_phi = self.height / lce
            phi = np.arcsin(np.clip(sin_phi, 0.0, 1.0))
        capped = (lce <= self.minimum_fiber_length) | (sin_phi >= math.sin(self.maximum_pennation_angle))
        return np.where(capped, self.maximum_pennation_angle, phi)

    def d_pennation_angle_d_fiber_length(self, fiber_length) -> np.ndarray:
        """dα/dl^M = −tan α / l^M (zero where the angle is capped)."""
        lce = np.asarray(fiber_length, dtype=float)
        phi = self.pennation_angle(lce)
        capped = phi >= self.maximum_pennation_angle
        with np.errstate(divide="ignore", invalid="ignore"):
            d = -np.tan(phi) / lce
        return np.where(capped | ~self._pennated, 0.0, d)

    def fiber_length(self, musculotendon_length, tendon_length) -> np.ndarray:
        """l^M from eqs. (4) and (6): √(h² + (l^MT − l^T)²), at least the minimum length."""
        l_at = np.asarray(musculotendon_length, dtype=float) - np.asarray(tendon_length, dtype=float)
        l_min = self.minimum_fiber_length
        l_min_at = l_min * math.cos(self.maximum_pennation_angle)
        return np.where(l_at >= l_min_at, np.sqrt(self.height**2 + np.maximum(l_at, 0.0) ** 2), l_min)

    def tendon_length(self, musculotendon_length, fiber_length) -> np.ndarray:
        """l^T = l^MT − l^M cos α, eq. (4)."""
        lce = np.asarray(fiber_length, dtype=float)
        return np.asarray(musculotendon_length, dtype=float) - lce * np.cos(self.pennation_angle(lce))

    def pennation_angular_velocity(self, fiber_length, fiber_velocity) -> np.ndarray:
        """α̇ = −v^M sin α / (l^M cos α), eq. (7)."""
        lce = np.asarray(fiber_length, dtype=float)
        return -np.asarray(fiber_velocity, dtype=float) * np.tan(self.pennation_angle(lce)) / lce

    def fiber_velocity(self, fiber_length, musculotendon_velocity, tendon_velocity=0.0) -> np.ndarray:
        """v^M from eqs. (5) and (7): (v^MT − v^T) cos α."""
        phi = self.pennation_angle(fiber_length)
        return (np.asarray(musculotendon_velocity, dtype=float) - tendon_velocity) * np.cos(phi)
