"""Numbers given by users: one definition of "a finite real number", and the error that names a bad one.

A finite real number is a Python or numpy integer or float that is finite; ``True`` and ``False`` are not
numbers here (``dt=True`` is a mistake, not a step of 1 s), nor are other number types (sympy numbers,
fractions, decimals, 0-d arrays), which would travel on unconverted into compiled code.

Examples
--------
>>> from skfiber.core.numbers import checked_real, is_real
>>> is_real(0.5), is_real(True), is_real(float("nan")), is_real("1")
(True, False, False, False)
>>> checked_real("density", 1060, above=0, unit="kg/m³")
1060.0
>>> checked_real("density", -1.0, above=0, unit="kg/m³")
Traceback (most recent call last):
    ...
ValueError: density must be a finite number > 0 (kg/m³), got -1.0
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["is_real", "checked_real", "check_finite_time", "check_step_count", "MAX_STEPS"]


def is_real(value) -> bool:
    """Whether ``value`` is a finite real number (module notes): a Python or numpy int or float, not a bool,
    not NaN or ±∞ (nor an int too large for a float)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def checked_real(name: str, value, *, above: float | None = None, at_least: float | None = None,
                 unit: str = "", hint: str = "") -> float:
    """``value`` as a float, or a ValueError naming ``name`` and the value.

    Parameters
    ----------
    name
        What the value is, as the message names it (``"dt"``, ``"contact stiffness κ"``).
    value
        Anything.
    above, at_least
        The bound the value must keep: > ``above``, ≥ ``at_least`` (none by default).
    unit
        Its unit, shown after the condition (``"m"``, ``"kg/m³"``).
    hint
        Text appended to the message (the fix).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        "``name`` must be a finite number > ``above`` (``unit``), got ``value``" and the hint.
    """
    ok = is_real(value)
    if ok:
        number = float(value)
        ok = (above is None or number > above) and (at_least is None or number >= at_least)
    if not ok:
        bound = (f" > {above:g}" if above is not None else "") + (f" ≥ {at_least:g}" if at_least is not None else "")
        raise ValueError(f"{name} must be a finite number{bound}{f' ({unit})' if unit else ''}, got {value!r}{hint}")
    return number


def check_finite_time(**values: float) -> None:
    """ValueError naming the first of ``values`` that is not a finite number."""
    for key, value in values.items():
        checked_real(key, value)


#: the most time steps a run may have (a smaller dt is a mistake in its unit, or round-off)
MAX_STEPS = 10**9


def check_step_count(*, dt: float, t_start: float, t_end: float) -> None:
    """ValueError when the step size ``dt`` > 0 cannot be resolved: 1/dt² overflows, t_start + dt equals
    t_start in floating point, or the run would take more than :data:`MAX_STEPS` steps."""
    steps = (t_end - t_start) / dt
    if not (math.isfinite(1.0 / dt**2 if dt > 1e-154 else math.inf) and t_start + dt > t_start and steps <= MAX_STEPS):
        raise ValueError(f"dt = {dt!r} s is too small for the run from t = {t_start!r} to {t_end!r} s "
                         f"({steps:.3g} steps, at most {MAX_STEPS:.0e}; t + dt must differ from t); "
                         "give dt in seconds")
