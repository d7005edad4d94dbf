"""Adaptive steps for BDF2: local error control, rejection, step limits and output at requested times.

:func:`run_adaptive` drives any one-step function ``advance(payload, h, k)``
that makes a backward-Euler step from a state without history and a BDF2
step from a state that knows its earlier point (:mod:`skfiber.core.bdf`).
It sees each state as one flat vector (positions, then their velocities,
then other unknowns such as muscle states) and

* estimates the local error by Milne's device (:func:`~skfiber.core.bdf.error_weights`:
  corrector minus the quadratic predictor through the last three points) on
  every entry; in the first two steps, before three points exist, on the
  positions only, from a predictor that uses the velocities
  (uₙ + h vₙ after the first step, the quadratic Hermite predictor through
  uₙ₋₁, uₙ, vₙ after the second);
* accepts the step when the weighted RMS norm
  ‖e / (atol + rtol max(|yₙ|, |yₙ₊₁|))‖ ≤ 1 and proposes the next step
  h · min(max_growth, safety · err^(−1/(p+1))) (p = 2, or 1 for the
  backward-Euler start), within [h_min, h_max]; a rejected step is redone
  with h · max(max_shrink, safety · err^(−1/(p+1))); a step whose Newton
  fails with half the step; below h_min it raises :class:`ConvergenceError`;
* gives the state at each requested output time by the quadratic through
  the last three accepted points (BDF2's own interpolant), or the state
  itself at a step that lands on it.

Examples
--------
>>> import numpy as np
>>> def advance(y, h, k):  # y' = −y as (position, velocity) = (y, −y), backward Euler
...     t, x = y
...     x1 = x / (1 + h)
...     return (t + h, x1), 1
>>> out = []
>>> control = ErrorControl(rtol=1e-3, atol=1e-6, h_min=1e-9, h_max=1.0)
>>> _, counts = run_adaptive(advance, lambda y: np.array([y[1], -y[1]]), (0.0, 1.0), t0=0.0, t_end=1.0,
...                          control=control, n_positions=1, output_times=np.array([0.5, 1.0]),
...                          emit=lambda t, x, y: out.append(t))
>>> out, counts.accepted > 0
([0.5, 1.0], True)
"""
from __future__ import annotations

import copy
import math
import re
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .bdf import error_constant, error_weights, interpolate
from .errors import ConvergenceError
from .numbers import checked_real

__all__ = ["ErrorControl", "StepCounts", "AdaptiveCursor", "run_adaptive", "output_grid", "DEFAULT_OUTPUT_INTERVALS"]

#: a step that would leave less than this fraction of itself before t_end is stretched to t_end
STRETCH_TO_END = 0.01
#: without output_times or an output interval, an adaptive run gives the states at this many equal intervals
DEFAULT_OUTPUT_INTERVALS = 100


@dataclass(frozen=True)
class ErrorControl:
    """Tolerances and step limits of an adaptive run (times in s).

    ``rtol``/``atol`` weigh the local error of every entry (positions in m or
    the coordinates' units, velocities per s); ``h_initial`` is the first
    step (None: min(h_max, (t_end − t0)/100)).
    """

    rtol: float
    atol: float
    h_min: float
    h_max: float
    h_initial: float | None = None
    safety: float = 0.9
    max_growth: float = 2.0
    max_shrink: float = 0.2

    def __post_init__(self):
        for name in ("rtol", "atol"):
            checked_real(name, getattr(self, name), at_least=0)
        for name in ("h_min", "h_max"):
            checked_real(name, getattr(self, name), above=0, unit="s")
        if not (self.rtol > 0 or self.atol > 0):
            raise ValueError("rtol and atol are both 0: give a positive tolerance (e.g. rtol=1e-4, atol=1e-7)")
        if not 0 < self.h_min <= self.h_max:
            raise ValueError(f"need 0 < h_min ≤ h_max, got h_min = {self.h_min!r}, h_max = {self.h_max!r}")
        if self.h_initial is not None:
            checked_real("h_initial", self.h_initial, above=0)
        if not 1.0 < self.max_growth < 1.0 + math.sqrt(2.0):
            raise ValueError(f"max_growth must lie in (1, 1 + √2) (BDF2's zero-stability), got {self.max_growth!r}")


@dataclass
class StepCounts:
    """What an adaptive run did: step counts and per-step statistics (compact arrays)."""

    accepted: int = 0
    #: steps rejected by the error test
    rejected: int = 0
    #: steps whose Newton iteration failed (redone with half the step)
    newton_failures: int = 0
    newton_iterations: int = 0
    #: tangents assembled, and matrices factorized (one each per Newton iteration unless Newton reuses its
    #: factorization: NewtonOptions.jacobian_reuse)
    tangent_builds: int = 0
    factorizations: int = 0
    #: size and Newton iterations of each accepted step (left out of the repr: a long run has many)
    step_sizes: array = field(default_factory=lambda: array("d"), repr=False)
    step_iterations: array = field(default_factory=lambda: array("i"), repr=False)

    def line(self) -> str:
        """The counts for a progress line."""
        return (f"accepted {self.accepted} rejected {self.rejected} newton-failed {self.newton_failures} "
                f"newton {self.newton_iterations} tangents {self.tangent_builds} "
                f"factorizations {self.factorizations}")


@dataclass
class AdaptiveCursor:
    """Where an adaptive run stands after an accepted step: all :func:`run_adaptive` needs to go on from
    there exactly as it would have (a checkpoint of the driver; the payload is kept by the caller).

    Attributes
    ----------
    points : the last (up to three) accepted points (t, vector), newest first
    h : the step proposed next (s)
    grow_ok : whether that step may grow (False after a rejection or a failed Newton)
    k : steps attempted so far
    next_output : the index of the next output time
    counts : the counts so far
    """

    points: list
    h: float
    grow_ok: bool
    k: int
    next_output: int
    counts: StepCounts

    def arrays(self) -> dict[str, np.ndarray]:
        """The cursor as named arrays (for a checkpoint file; :meth:`from_arrays` reads them back)."""
        c = self.counts
        return {"times": np.array([p[0] for p in self.points]), "vectors": np.array([p[1] for p in self.points]),
                "h": np.array(self.h), "grow_ok": np.array(self.grow_ok), "k": np.array(self.k),
                "next_output": np.array(self.next_output),
                "counts": np.array([c.accepted, c.rejected, c.newton_failures, c.newton_iterations,
                                    c.tangent_builds, c.factorizations]),
                # (a copied cursor shares the arrays of the counts, which grow with later steps)
                "step_sizes": np.array(c.step_sizes[:c.accepted], dtype=float),
                "step_iterations": np.array(c.step_iterations[:c.accepted], dtype=np.int32)}

    @classmethod
    def from_arrays(cls, data) -> "AdaptiveCursor":
        """The cursor of :meth:`arrays`."""
        accepted, rejected, failures, iterations, builds, factorizations = (int(x) for x in data["counts"])
        counts = StepCounts(accepted, rejected, failures, iterations, builds, factorizations,
                            array("d", np.asarray(data["step_sizes"], dtype=float).tolist()),
                            array("i", np.asarray(data["step_iterations"]).astype(int).tolist()))
        points = [(float(t), np.array(x, dtype=float)) for t, x in zip(data["times"], data["vectors"])]
        return cls(points, float(data["h"]), bool(data["grow_ok"]), int(data["k"]), int(data["next_output"]),
                   counts)


def _count_work(counts: StepCounts, work, iterations: int) -> None:
    """Tangents and factorizations into ``counts``: from ``work()``, or one each per Newton iteration."""
    if work is None:
        counts.tangent_builds += iterations
        counts.factorizations += iterations
    else:
        counts.tangent_builds, counts.factorizations = work()


def _error_norm(e: np.ndarray, y0: np.ndarray, y1: np.ndarray, control: ErrorControl) -> float:
    """RMS of e / (atol + rtol max(|y₀|, |y₁|)); with atol = 0 an entry that is 0 at both ends (a fixed DOF)
    counts 0 if its error is 0 (not 0/0 = NaN) and ∞ otherwise."""
    scale = control.atol + control.rtol * np.maximum(np.abs(y0), np.abs(y1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = e / scale
    if control.atol == 0:
        r[(scale == 0) & (e == 0)] = 0.0
    return math.sqrt(float(r @ r) / max(len(r), 1))


def _estimate(points, t1: float, x1: np.ndarray, n_pos: int, control: ErrorControl) -> tuple[float, int]:
    """(weighted error norm, order p of the estimated error) of the step to (t1, x1) from ``points``
    (accepted (t, x), newest first)."""
    t0, x0 = points[0]
    h = t1 - t0
    if len(points) == 1:  # backward Euler: e = (u₁ − u₀ − h v₀)/2 (its O(h²) error: p = 1)
        pos = slice(0, n_pos)
        e = 0.5 * (x1[pos] - x0[pos] - h * x0[n_pos:2 * n_pos])
        return _error_norm(e, x0[pos], x1[pos], control), 1
    if len(points) == 2:  # BDF2 with two points: Hermite predictor from uₙ₋₁, uₙ, vₙ (positions only)
        tm, xm = points[1]
        h1 = t0 - tm
        pos = slice(0, n_pos)
        v0 = x0[n_pos:2 * n_pos]
        curv = (xm[pos] - x0[pos] + h1 * v0) / h1**2
        pred = x0[pos] + h * v0 + h * h * curv
        e_p = -h * h * (h + h1) / 6.0
        e_c = error_constant(np.array([-h, -h - h1]), 2)
        e = e_c / (e_c - e_p) * (x1[pos] - pred)
        return _error_norm(e, x0[pos], x1[pos], control), 2
    E, c = error_weights(t1, [p[0] for p in points], 2)
    pred = c[0] * points[0][1] + c[1] * points[1][1] + c[2] * points[2][1]
    return _error_norm(E * (x1 - pred), x0, x1, control), 2


def run_adaptive(advance: Callable[[Any, float, int], tuple[Any, int]], flatten: Callable[[Any], np.ndarray],
                 payload0: Any, *, t0: float, t_end: float, control: ErrorControl, n_positions: int,
                 output_times: np.ndarray, emit: Callable[[float, np.ndarray | None, Any], None],
                 on_step: Callable[[Any, StepCounts, float], None] | None = None,
                 work: Callable[[], tuple[int, int]] | None = None, cursor: AdaptiveCursor | None = None,
                 on_accept: Callable[[Any, AdaptiveCursor], None] | None = None) -> tuple[Any, StepCounts]:
    """Integrate from ``payload0`` at t0 to t_end with adaptive steps; returns (last payload, counts).

    Parameters
    ----------
    advance
        ``advance(payload, h, k)`` → (payload at t + h, Newton iterations): one step (backward Euler
        from ``payload0``, BDF2 afterwards); raises :class:`ConvergenceError` when Newton fails.
    flatten
        The payload as one vector: ``n_positions`` positions, their velocities, then other entries.
    output_times
        Increasing times in (t0, t_end]; ``emit(t, x, payload)`` is called at each, with the
        interpolated vector x (payload None), or with the payload (x None) at a step that lands on t.
    on_step
        ``on_step(payload, counts, h)`` after each accepted step (progress lines).
    work
        ``work()`` → (tangents built, matrices factorized) so far, for the counts; None: one of each per
        Newton iteration.
    cursor
        Go on from this :class:`AdaptiveCursor` (``payload0`` its last point's payload; t0 and
        ``output_times`` those of the run that made it) instead of starting at t0.
    on_accept
        ``on_accept(payload, cursor)`` after each accepted step and its outputs, with the cursor to go on
        from there (a checkpoint).
    """
    span = t_end - t0
    outputs = [float(x) for x in output_times]
    if cursor is None:
        counts = StepCounts()
        points = [(t0, flatten(payload0))]
        t = t0
        h = control.h_initial if control.h_initial is not None else min(control.h_max, span / 100.0)
        h = min(max(h, control.h_min), control.h_max)
        next_out = 0
        grow_ok = True
        k = 0
    else:
        counts, points, h, next_out, grow_ok, k = (cursor.counts, list(cursor.points), cursor.h, cursor.next_output,
                                                   cursor.grow_ok, cursor.k)
        t = points[0][0]
    payload = payload0
    failures: list[tuple[float, str]] = []  # (h, reason) of the failed attempts since the last accepted step
    while t_end - t > 1e-12 * max(abs(t_end), span):
        if t + (1.0 + STRETCH_TO_END) * h >= t_end:
            h = t_end - t
        elif t + 2.0 * h > t_end:
            h = 0.5 * (t_end - t)  # two equal steps rather than a long one and a sliver
        k += 1
        try:
            new, iterations = advance(payload, h, k)
        except ConvergenceError as err:
            counts.newton_failures += 1
            counts.newton_iterations += max(len(err.residual_history) - 1, 0)
            _count_work(counts, work, max(len(err.residual_history) - 1, 0))
            failures.append((h, err.reason))
            if h <= control.h_min:
                raise ConvergenceError(f"{err.reason}; still failing at the smallest step h_min = {control.h_min:.3g} s"
                                       f"{_failure_summary(failures)}. {AT_H_MIN_HINT}", t=err.t, step=k,
                                       residual_history=err.residual_history) from err
            h = max(0.5 * h, control.h_min)
            grow_ok = False
            continue
        failures = []
        counts.newton_iterations += iterations
        _count_work(counts, work, iterations)
        t1 = t + h
        x1 = flatten(new)
        err, p = _estimate(points, t1, x1, n_positions, control)
        factor = control.safety * err ** (-1.0 / (p + 1)) if err > 0 else control.max_growth
        if not err <= 1.0:
            counts.rejected += 1
            if h <= control.h_min:
                hint = ("; with atol = 0 the error of an entry that starts at rest is measured against that "
                        "entry's own small motion: give atol > 0 (e.g. rtol/100)") if control.atol == 0 else ""
                raise ConvergenceError(f"the local error {err:.3g} × tolerance is not met at the smallest step "
                                       f"h_min = {control.h_min:.3g} s (loosen rtol/atol or lower h_min){hint}", t=t1,
                                       step=k, residual_history=[], failed="the error control failed")
            h = max(h * max(control.max_shrink, min(factor, 0.9)), control.h_min)
            grow_ok = False
            continue
        counts.accepted += 1
        counts.step_sizes.append(h)
        counts.step_iterations.append(iterations)
        points = [(t1, x1)] + points[:2]
        while next_out < len(outputs) and outputs[next_out] <= t1 + 1e-12 * max(abs(t1), span):
            to = outputs[next_out]
            if abs(to - t1) <= 1e-12 * max(abs(t1), span):
                emit(to, None, new)
            else:
                emit(to, interpolate([q[0] for q in points], np.array([q[1] for q in points]), to), None)
            next_out += 1
        payload, t = new, t1
        if on_step is not None:
            on_step(payload, counts, h)
        factor = min(factor, control.max_growth) if grow_ok else min(factor, 1.0)
        grow_ok = True
        h = min(max(h * factor, control.h_min), control.h_max)
        if on_accept is not None:  # (the counts copied: later attempts change them; the arrays only grow)
            on_accept(payload, AdaptiveCursor(list(points), h, grow_ok, k, next_out, copy.copy(counts)))
    return payload, counts


#: what a failure that no step size cures usually means, and what to do (appended to its message)
AT_H_MIN_HINT = ("A step that fails at every size down to h_min has usually met a jump of the model, not "
                 "stiffness: with fiber–fiber contact, most often the closest point of a contact point jumping "
                 "between two equally distant points of the partner of different radius, where g jumps "
                 "(docs/theory.md, 'The gap can jump'). Error control cannot step over a jump: the smallest gap "
                 "(FiberContact(..., gap='smallest')) is continuous there; fixed steps (dt without rtol/atol) may "
                 "also pass")


def _failure_summary(failures: list[tuple[float, str]]) -> str:
    """What made the step shrink: the failure at the largest step (often the cause, the smaller steps
    repeating it or hitting round-off) and the most frequent kind of failure, with counts."""
    if len(failures) < 2:
        return ""
    kinds: dict[str, list] = {}
    for h, reason in failures:  # a kind: the reason up to its first ':' (or whole), numbers masked
        kind = re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", reason.split(":")[0])
        kinds.setdefault(kind, []).append((h, reason))
    largest_h, first_reason = failures[0]
    common = max(kinds.values(), key=len)
    text = (f"; the step shrank from {largest_h:.3g} s in {len(failures)} attempts. At {largest_h:.3g} s: "
            f"{first_reason}")
    if common[0][1] != first_reason and len(common) > 1:
        text += f". Most often ({len(common)} of {len(failures)}, from {common[0][0]:.3g} s down): {common[0][1]}"
    return text


def output_grid(t0: float, t_end: float, *, output_times=None, output_dt: float | None = None) -> np.ndarray:
    """The output times of an adaptive run in (t0, t_end], t_end included.

    ``output_times`` as given (checked), else every ``output_dt`` (a remainder
    shorter than 1 % of it is joined to the last interval), else
    :data:`DEFAULT_OUTPUT_INTERVALS` equal intervals.

    Examples
    --------
    >>> output_grid(0.0, 1.0, output_dt=0.25).tolist()
    [0.25, 0.5, 0.75, 1.0]
    """
    if output_times is not None:
        times = np.asarray(output_times, dtype=float).ravel()
        if times.size == 0 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
            raise ValueError(f"output_times must be finite and increasing, got {output_times!r}")
        if times[0] <= t0 or times[-1] > t_end:
            raise ValueError(f"output_times must lie in (t0, t_end] = ({t0}, {t_end}], got {times[0]} … {times[-1]}")
        return times if times[-1] == t_end else np.append(times, t_end)
    if output_dt is not None:
        n = max(1, int(math.ceil((t_end - t0) / output_dt - 1e-9)))
        if n > 1 and (t_end - t0) - (n - 1) * output_dt < 0.01 * output_dt:
            n -= 1
        return np.append(t0 + output_dt * np.arange(1, n), t_end)
    return np.linspace(t0, t_end, DEFAULT_OUTPUT_INTERVALS + 1)[1:]
