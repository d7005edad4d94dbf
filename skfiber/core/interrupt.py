"""What a run does on Ctrl-C: keep the steps it has done, or let the interruption through.

:func:`skfiber.simulate` and :func:`skfiber.rigid.simulate_rigid` take ``on_interrupt``:

* ``"keep"`` (their default): Ctrl-C ends the run with a warning, and the result holds the steps done
  (``result.interrupted`` is True), for an interactive session that should not lose them;
* ``"raise"``: ``KeyboardInterrupt`` goes on to the caller, for code that needs the whole run (a comparison,
  a convergence study, a parameter sweep that should stop), which would otherwise go on with a part of it.

Examples
--------
>>> check_on_interrupt("raise")
'raise'
>>> check_on_interrupt("stop")
Traceback (most recent call last):
...
ValueError: on_interrupt must be 'keep' (Ctrl-C ends the run and returns the steps done) or 'raise' (Ctrl-C raises KeyboardInterrupt to the caller), got 'stop'
"""
from __future__ import annotations

__all__ = ["ON_INTERRUPT", "check_on_interrupt"]

#: the values of ``on_interrupt``
ON_INTERRUPT = ("keep", "raise")


def check_on_interrupt(value: object) -> str:
    """``value`` when it is one of :data:`ON_INTERRUPT`, else a ValueError that names it and the choices."""
    if not (isinstance(value, str) and value in ON_INTERRUPT):
        raise ValueError("on_interrupt must be 'keep' (Ctrl-C ends the run and returns the steps done) or 'raise' "
                         f"(Ctrl-C raises KeyboardInterrupt to the caller), got {value!r}")
    return value
