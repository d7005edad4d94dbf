"""The contact line force of a cylinder at any centre-line points (the VTK field ``contact_force``).

The integrand of the cylinder's contact residual (:mod:`skfiber.contact.cylinder`:
g = d/(r_RB + r) − 1 with the current fiber radius r, ν = (x − y)/d the unit
normal from the axis to the point, F the penalty law), evaluated at arbitrary
points along the fibers rather than only at the contact quadrature points:
:meth:`skfiber.contact.cylinder.CylinderContact.line_force` and
:func:`skfiber.io.fiber_mesh`.

Examples
--------
>>> from skfiber.contact.base import PenaltyLaw
>>> from skfiber.contact.cylinder_pose import make_pose
>>> pose = make_pose((0, 0, 0), (0, 0, 1))
>>> f = penalty_line_force(pose, np.array([[0.18, 0, 0.5]]), np.array([0.1]), cylinder_radius=0.1,
...                        length=None, law=PenaltyLaw(stiffness=100.0, gamma=4.0))
>>> f.round(3).tolist()
[[16.667, 0.0, 0.0]]
"""
from __future__ import annotations

import numpy as np

from .base import PenaltyLaw
from .cylinder_pose import CylinderPose
from .gap import normalized_gap
from .geometry import norm3

__all__ = ["penalty_line_force", "OUT_OF_RANGE_MARGIN"]

#: 1 + γ g at which the written line force is capped (VTK output only; see penalty_line_force)
OUT_OF_RANGE_MARGIN = 1e-3


def penalty_line_force(pose: CylinderPose, x: np.ndarray, r: np.ndarray, *, cylinder_radius: float,
                       length: float | None, law: PenaltyLaw) -> np.ndarray:
    """Line force F(g) ν on the points x (per current fiber length).

    Parameters
    ----------
    pose
        The cylinder's pose.
    x
        (n, 3) centre-line points (m).
    r
        (n,) current fiber radius at them (m).
    cylinder_radius
        r_RB (m).
    length
        L (m) of a finite cylinder (capsule rule: the closest point of the
        axis segment), or None.
    law
        The penalty law.

    Returns
    -------
    numpy.ndarray
        (n, 3), N/m, finite: 0 where the cylinder does not touch.  The force
        is capped at its value at 1 + γ g = m = OUT_OF_RANGE_MARGIN,
        κ (1 − m)/(γ m): that value also stands where the penalty law is out of
        range (1 + γ g ≤ 0, its value infinite or undefined), which can happen
        between the contact quadrature points, where the solver does not
        enforce admissibility.  A point on the axis (d = 0) gets 0.
    """
    s = (x - pose.point) @ pose.tangent
    if length is not None:  # finite cylinder: the closest point of the axis segment (capsule rule)
        s = np.clip(s, 0.0, length)
    w = x - (pose.point + s[:, None] * pose.tangent)
    d = norm3(w)
    g = np.maximum(normalized_gap(d, cylinder_radius, r), (OUT_OF_RANGE_MARGIN - 1.0) / law.gamma)
    F, _ = law.force(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (F / d)[:, None] * w
    f[(F == 0.0) | (d == 0.0)] = 0.0
    return f
