"""Parameter checks of the Hill model and the SimTK tolerances its modules share.

Every constructor of :mod:`skfiber.hill` (curves, muscle parameters, pennation,
activation dynamics) checks its numbers with :func:`check_range` or
:func:`check_positive`, which raise a :class:`ValueError` naming the parameter,
its value and the allowed range.

Examples
--------
>>> check_range("curviness", 0.5, 0.0, 1.0)
>>> check_range("curviness", 1.5, 0.0, 1.0)
Traceback (most recent call last):
...
ValueError: curviness=1.5 is outside the allowed range [0, 1]
"""
from __future__ import annotations

import math

from ..core.numbers import is_real

__all__ = ["ROOT_EPS", "SIGNIFICANT_REAL", "check_range", "check_positive"]

#: √ε of doubles: the smallest gap the curve constructors accept between their points
ROOT_EPS = math.sqrt(2.0**-52)
#: SimTK::SignificantReal for doubles (2⁻⁴⁰ ≈ 9.1e-13)
SIGNIFICANT_REAL = 2.0**-40


def check_range(name: str, value: float, low: float, high: float, *, low_open: bool = False,
                high_open: bool = False, hint: str = "") -> None:
    """Raise ValueError naming `value` unless it is finite and lies in the interval.

    Parameters
    ----------
    name, value : the parameter and its value (named in the message).
    low, high : the interval's ends; ``low_open`` / ``high_open`` exclude them.
    hint : text appended to the message (e.g. the interval in terms of other parameters).
    """
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if not is_real(value):
        raise ValueError(f"{name}={value!r} must be a finite number in {interval}{hint}")
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if not (ok_low and ok_high):
        raise ValueError(f"{name}={value!r} is outside the allowed range {interval}{hint}")


def check_positive(name: str, value: float) -> None:
    """Raise ValueError unless `value` is a positive finite number."""
    if not (is_real(value) and value > 0):
        raise ValueError(f"{name}={value!r} must be a positive finite number")
