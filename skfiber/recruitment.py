"""Motor-unit recruitment by the size principle: the activations of the fibers of a bundle from one drive.

Henneman's size principle: as the neural drive E ∈ [0, 1] rises, motor units are recruited in order of
increasing size, the smallest first.  Here each fiber stands for a group of motor units of one size
(its cross-section, or any size the caller gives).  Unit k is recruited at the threshold

    T_k = last · (size of the units smaller than k) / (size of all units but the largest),

so the thresholds share the recruitment range [0, ``last``] in proportion to the force recruited before
each unit (equal sizes: equal steps; ties in size go by index).  Above its threshold a unit's activation
rises linearly with the drive (rate coding simplified to a ramp) and reaches 1 at E = 1:

    α_k(E) = clip((E − T_k) / (1 − T_k), 0, 1).

Examples
--------
>>> import numpy as np
>>> T = size_principle_thresholds([1.0, 3.0, 2.0], last=0.6)
>>> T.round(12).tolist()             # the smallest first: sizes 1, 2, 3 at 0, 0.2, 0.6
[0.0, 0.6, 0.2]
>>> [round(recruited_activation(0.8, t), 3) for t in T]
[0.8, 0.5, 0.75]
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["size_principle_thresholds", "recruited_activation", "recruitment", "LAST_THRESHOLD"]

#: the drive at which the largest unit is recruited by default (the recruitment range [0, 0.8])
LAST_THRESHOLD = 0.8


def size_principle_thresholds(sizes: Sequence[float], *, last: float = LAST_THRESHOLD) -> np.ndarray:
    """The recruitment thresholds T_k ∈ [0, ``last``] of units of the given sizes (module notes).

    Parameters
    ----------
    sizes
        One size per unit (any unit: a cross-section, a force), each finite and > 0.
    last
        The drive that recruits the largest unit, in [0, 1).

    Returns
    -------
    numpy.ndarray
        T_k, in the order of ``sizes``.

    Raises
    ------
    ValueError
        For sizes that are not finite and > 0, or ``last`` outside [0, 1).
    """
    try:
        s = np.asarray(sizes, dtype=float)
    except (TypeError, ValueError):
        s = np.full(1, np.nan)
    if s.ndim != 1 or s.size == 0 or not (np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError(f"sizes must be a non-empty sequence of finite numbers > 0, got {sizes!r}")
    if isinstance(last, bool) or not isinstance(last, (int, float, np.floating, np.integer)) or not 0 <= last < 1:
        raise ValueError(f"last (the drive that recruits the largest unit) must lie in [0, 1), got {last!r}")
    order = np.argsort(s, kind="stable")
    before = np.concatenate([[0.0], np.cumsum(s[order] / s.max())[:-1]])  # recruited before each, in order
    total = before[-1]
    thresholds = np.empty(s.size)
    thresholds[order] = float(last) * before / total if total > 0 else 0.0
    return thresholds


def recruited_activation(drive: float, threshold: float) -> float:
    """α = clip((E − T) / (1 − T), 0, 1) of a unit with threshold T ∈ [0, 1) at drive E ∈ [0, 1].

    Raises
    ------
    ValueError
        For a drive outside [0, 1] or a threshold outside [0, 1).

    Examples
    --------
    >>> round(recruited_activation(0.5, 0.2), 12), recruited_activation(0.1, 0.2)
    (0.375, 0.0)
    """
    if not 0.0 <= drive <= 1.0:
        raise ValueError(f"the drive must be a number in [0, 1], got {drive!r}")
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"the threshold must lie in [0, 1), got {threshold!r}")
    return float(min(max((drive - threshold) / (1.0 - threshold), 0.0), 1.0))


def recruitment(drive, sizes: Sequence[float], *, last: float = LAST_THRESHOLD) -> list[Callable[[float], float]]:
    """One activation α_k(t) per unit from the drive E(t) (a number or a callable of t, in [0, 1]).

    Pass the result as the ``activation`` of :func:`skfiber.bundle.bundle` (one per fiber).

    Parameters
    ----------
    drive
        E ∈ [0, 1]: a number, or E(t) with t in s.
    sizes, last
        See :func:`size_principle_thresholds`.

    Returns
    -------
    list of callables
        α_k(t); a drive E(t) outside [0, 1] raises a ValueError naming t and E when it is called.

    Raises
    ------
    ValueError
        As :func:`size_principle_thresholds`; a constant drive that is not a number in [0, 1].

    Examples
    --------
    >>> units = recruitment(lambda t: min(t, 1.0), [1.0, 1.0], last=0.5)
    >>> [u(0.75) for u in units]
    [0.75, 0.5]
    """
    thresholds = size_principle_thresholds(sizes, last=last)
    if not callable(drive):
        if isinstance(drive, (bool, str)) or not isinstance(drive, (int, float, np.floating, np.integer)) \
                or not 0.0 <= drive <= 1.0:
            raise ValueError(f"the drive must be a number in [0, 1] or E(t), got {drive!r}")
        value = float(drive)
        drive_at = (lambda t: value)
    else:
        drive_at = drive

    def unit(threshold: float) -> Callable[[float], float]:
        def alpha(t: float) -> float:
            e = float(drive_at(t))
            if not 0.0 <= e <= 1.0:
                raise ValueError(f"the drive E(t) must lie in [0, 1], got E = {e!r} at t = {t!r} s")
            return recruited_activation(e, threshold)
        return alpha

    return [unit(float(T)) for T in thresholds]
