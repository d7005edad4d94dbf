"""The errors skfiber's solvers raise.

Examples
--------
>>> from skfiber.core import ConvergenceError
>>> str(ConvergenceError("stagnates", t=0.5, step=3, residual_history=[1.0]))[:24]
'Newton failed at t = 0.5'
"""
from __future__ import annotations

__all__ = ["ConvergenceError", "InadmissibleState"]


class ConvergenceError(RuntimeError):
    """Newton did not converge (or, with ``failed`` naming it, the error control did not meet its tolerance
    at the smallest step): carries time, step and residual history.

    ``partial`` is what the run computed before the failure, its last state the last converged one
    (a :class:`~skfiber.SimulationResult` from :func:`skfiber.simulate`, a
    :class:`~skfiber.rigid.RigidResult` from :func:`skfiber.rigid.simulate_rigid`), or None where
    the error did not come from a run.

    Examples
    --------
    >>> err = ConvergenceError("singular tangent", t=0.25, step=3, residual_history=[1.0, 0.5])
    >>> print(err)
    Newton failed at t = 0.25 s (step 3): singular tangent. Residual history: [1.000e+00, 5.000e-01]
    >>> err.t, err.step, err.partial is None
    (0.25, 3, True)
    """

    def __init__(self, reason: str, *, t: float, step: int | str, residual_history: list[float],
                 failed: str = "Newton failed"):
        self.reason = reason
        self.t = t
        self.step = step
        self.residual_history = list(residual_history)
        self.partial = None
        hist = ", ".join(f"{r:.3e}" for r in self.residual_history) or "none"
        self._text = f"{failed} at t = {t:.6g} s (step {step}): {reason}. Residual history: [{hist}]"
        super().__init__(self._text)

    def keep(self, partial) -> ConvergenceError:
        """Attach the run's result up to the failure (``partial``; None: drop it) and, when the run got past
        its start, say so in the message; returns self."""
        self.partial = partial
        self.args = (self._text,)
        if partial is not None and len(partial.times) > 1:
            self.args = (f"{self._text}. The {len(partial.times)} states computed up to "
                         f"t = {float(partial.times[-1]):.6g} s are kept in this error's .partial (a "
                         f"{type(partial).__name__}; its last state continues the run)",)
        return self


class InadmissibleState(FloatingPointError):
    """What the fast path raises where the general path raises: a state it cannot evaluate.

    The message is the general path's (the diagnosis: which fiber, where, by how much), computed when it
    is first asked for — Newton's safeguard rejects such trial states routinely and never reads it.
    """

    def __init__(self, explain):
        super().__init__()
        self._explain = explain
        self._message = None

    def __str__(self) -> str:
        if self._message is None:
            self._message = self._explain()
        return self._message
