"""The current radius of a fiber and the normalized gap of contact (paper eqs. 21 and 40), written once.

A fiber is incompressible: stretched by λ = ‖x′‖/‖X′‖ its radius becomes r = r0 √(‖X′‖/‖x′‖) = r0/√λ.
Two bodies of current radii r_a and r_b whose centerlines (or axis) lie a distance d apart have the
normalized gap g = d/(r_a + r_b) − 1, and the rational penalty law (eq. 44) admits them while its
margin 1 + γ g stays positive.  Every contact kernel (fiber–fiber and fiber–cylinder: search, residual,
safeguard), the contact geometry of the numpy path and the output's radius call these three functions;
they are numba functions inlined into the kernels and callable from Python on numbers or numpy arrays.

Examples
--------
>>> import numpy as np
>>> from skfiber.contact.gap import current_radius, normalized_gap, admissibility
>>> r = current_radius(0.002, 1.0, 1.21)            # stretched by 21 %: 2 mm / 1.1
>>> round(r * 1e3, 6)
1.818182
>>> g = normalized_gap(2 * r - 0.0002, r, r)        # pressed together by 0.2 mm
>>> round(g, 6), round(admissibility(g, 2.0), 6)
(-0.055, 0.89)
>>> current_radius(np.array([0.002, 0.002]), np.ones(2), np.array([1.0, 4.0])).tolist()
[0.002, 0.001]
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit

__all__ = ["current_radius", "normalized_gap", "admissibility"]


@njit(inline="always", cache=True, error_model="numpy")
def current_radius(r0, reference_speed, speed):  # pragma: no cover - compiled
    """r = r0 √(‖X′‖/‖x′‖) = r0/√λ: the radius of an incompressible fiber of reference radius r0 (eq. 21).

    ``reference_speed`` ‖X′‖ and ``speed`` ‖x′‖ are the lengths of the reference and current tangents at the
    same parameter; a lower bound of ‖x′‖ gives an upper bound of r.  Infinite where ‖x′‖ = 0.
    """
    return r0 * np.sqrt(reference_speed / speed)


@njit(inline="always", cache=True, error_model="numpy")
def normalized_gap(distance, radius_a, radius_b):  # pragma: no cover - compiled
    """g = d/(r_a + r_b) − 1 (eq. 40): negative where the two bodies overlap, −1 where their axes meet."""
    return distance / (radius_a + radius_b) - 1.0


@njit(inline="always", cache=True, error_model="numpy")
def admissibility(gap, gamma):  # pragma: no cover - compiled
    """1 + γ g: the penalty law's margin (eq. 44); a state is admissible while it is positive."""
    return 1.0 + gamma * gap
