"""The pose of a contact cylinder and its change along a step.

A cylinder is a point y0 on its axis, a raw axis a (any nonzero length) and
the unit axis t = a/|a| (:class:`CylinderPose`, made and validated by
:func:`make_pose`).  A moving cylinder (``pose(t)``, or the cylinder of a rigid
body) may also move during a Newton step, as y0 + δ Δy0, a + δ Δa for
δ ∈ [0, 1] (``pose_step=(Δy0, Δa)``, validated by :func:`check_pose_step`);
then the unit axis turns by at most

    |t(δ) − t(0)| ≤ τ(δ) = min(2, δ |Δa| / (|a| − δ |Δa|))   (2 if |a| ≤ δ |Δa|)

(:func:`turn_bound`), from |dt/dδ| ≤ |Δa| / |a(δ)| ≤ |Δa| / (|a| − δ |Δa|)
integrated (−ln(1 − z) ≤ z/(1 − z)).  The broad phase and the safeguard of
:class:`~skfiber.contact.cylinder.CylinderContact` use this bound.

Examples
--------
>>> pose = make_pose((0, 0, 1), (0, 0, 2))
>>> pose.tangent.tolist(), pose.axis_norm
([0.0, 0.0, 1.0], 2.0)
>>> turn_bound(0.5, 1.0, 2.0)   # δ |Δa| / (|a| − δ |Δa|) = 0.5 / 1.5
0.3333333333333333
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CylinderPose", "make_pose", "pose_key", "vector_norm", "turn_bound",
           "check_pose_step"]


@dataclass(frozen=True)
class CylinderPose:
    """The cylinder at one time: point y0, raw axis a, unit axis t = a/|a|."""

    point: np.ndarray
    axis: np.ndarray
    tangent: np.ndarray
    axis_norm: float


def _vector(value, name: str, fix: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"cylinder {name} must be 3 numbers, got {value!r}; {fix}") from err
    if arr.shape != (3,):
        raise ValueError(f"cylinder {name} must be 3 numbers, got shape {arr.shape}; {fix}")
    x, y, z = arr.tolist()  # scalar checks: much cheaper than numpy calls on 3 numbers
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ValueError(f"cylinder {name} must be finite, got {arr.tolist()}; {fix}")
    return arr


def vector_norm(v: np.ndarray) -> float:
    """|v| of a vector (np.linalg.norm bit for bit, without its overhead).

    Parameters
    ----------
    v
        A float vector.

    Returns
    -------
    float
    """
    return math.sqrt(v.dot(v))


def make_pose(point, axis) -> CylinderPose:
    """The pose of a cylinder from a point on its axis and its (raw) axis, validated.

    Parameters
    ----------
    point
        y0, 3 finite numbers (m).
    axis
        a, 3 finite numbers, not all zero.

    Returns
    -------
    CylinderPose
        With a copy of y0 (contiguous and writable for the kernels).

    Raises
    ------
    ValueError
        If ``point`` or ``axis`` is not 3 finite numbers, or the axis is zero.
    """
    y0 = _vector(point, "point", "give a point on the cylinder axis in metres, e.g. point=(0.5, 0.5, -0.2)")
    a = _vector(axis, "axis", "give the axis direction, e.g. axis=(1, 1, 0)")
    n = vector_norm(a)
    if not n > 0:
        raise ValueError(f"cylinder axis must be a nonzero direction, got {a.tolist()}; give e.g. axis=(1, 1, 0)")
    return CylinderPose(np.array(y0), a, a / n, n)  # a copy of y0: contiguous and writable for the kernels


def pose_key(pose: CylinderPose) -> bytes:
    """The bytes of (y0, a): equal keys mean the same pose (a memo key).

    Parameters
    ----------
    pose
        A cylinder pose.

    Returns
    -------
    bytes
    """
    return pose.point.tobytes() + pose.axis.tobytes()


def turn_bound(delta, da_abs: float, a_norm: float):
    """τ(δ) ≥ |t(a + δ Δa) − t(a)|: min(2, δ |Δa| / (|a| − δ |Δa|)), 2 if |a| ≤ δ |Δa|.

    Parameters
    ----------
    delta
        δ, a float or an array (broadcast).
    da_abs
        |Δa|.
    a_norm
        |a|.

    Returns
    -------
    float or numpy.ndarray
        A float for a float δ (the same arithmetic on Python floats), else an array.
    """
    if isinstance(delta, float):  # one δ: the same arithmetic on Python floats
        den = a_norm - delta * da_abs
        return min(delta * da_abs / den, 2.0) if den > 0 else 2.0
    den = a_norm - np.multiply(delta, da_abs)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(den > 0, np.multiply(delta, da_abs) / np.where(den > 0, den, 1.0), 2.0)
    return np.minimum(tau, 2.0)


def check_pose_step(pose_step) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``pose_step=(Δy0, Δa)``: two finite 3-vectors.

    Parameters
    ----------
    pose_step
        The change of the axis point and of the raw axis over the full step.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Δy0 and Δa as float arrays.

    Raises
    ------
    ValueError
        If it is not a pair of 3 finite numbers each.
    """
    fix = "give pose_step=(dy0, da), the change of the axis point and of the raw axis over the full step"
    try:
        dy0, da = pose_step
    except (TypeError, ValueError) as err:
        raise ValueError(f"pose_step must be a pair (dy0, da) of 3-vectors, got {pose_step!r}; {fix}") from err
    out = []
    for value, name in ((dy0, "dy0"), (da, "da")):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"pose_step {name} must be 3 numbers, got {value!r}; {fix}") from err
        if arr.shape != (3,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"pose_step {name} must be 3 finite numbers, got {value!r}; {fix}")
        out.append(arr)
    return out[0], out[1]
