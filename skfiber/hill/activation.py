"""First-order activation dynamics of a Hill muscle (OpenSim's ``MuscleFirstOrderActivationDynamicModel``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import check_positive

__all__ = ["FirstOrderActivation"]


@dataclass(frozen=True)
class FirstOrderActivation:
    """First-order activation dynamics (OpenSim's ``MuscleFirstOrderActivationDynamicModel``).

    da/dt = (u − a)/τ with τ = τ_act (0.5 + 1.5 a) when u > a and
    τ_deact / (0.5 + 1.5 a) otherwise, a clamped to [a_min, 1].

    Examples
    --------
    >>> act = FirstOrderActivation()
    >>> round(float(act.derivative(0.5, 1.0)), 6)   # (1 - 0.5) / (0.01 * 1.25)
    40.0
    """

    activation_time_constant: float = 0.010
    deactivation_time_constant: float = 0.040

    def __post_init__(self):
        check_positive("activation_time_constant", self.activation_time_constant)
        check_positive("deactivation_time_constant", self.deactivation_time_constant)

    def derivative(self, activation, excitation, *, minimum_activation: float = 0.01) -> np.ndarray:
        """da/dt for activation a and excitation u (arrays broadcast)."""
        a = np.clip(np.asarray(activation, dtype=float), minimum_activation, 1.0)
        u = np.asarray(excitation, dtype=float)
        tau = np.where(u > a, self.activation_time_constant * (0.5 + 1.5 * a),
                       self.deactivation_time_constant / (0.5 + 1.5 * a))
        return (u - a) / tau
