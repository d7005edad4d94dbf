"""The remaining time of a run, estimated from its recent pace, and what the progress lines say.

:class:`RemainingTime` gives no estimate until the run has shown its pace: the
first step is left out (on a first run it includes numba's compilation, tens of
seconds), and an estimate needs :data:`MIN_STEPS` more steps and
:data:`MIN_SECONDS` of wall time after it.  The pace is then the mean over the
last :data:`WINDOW_SECONDS` of wall time (a moving window: it follows a run that
slows down when contact sets in, without jumping from step to step).
:data:`PROGRESS_TERMS` explains the words of the progress lines, for the
``--help`` of the commands that print them.

Examples
--------
>>> eta = RemainingTime()
>>> [eta.update(k / 8, now=0.5 * k) for k in range(1, 6)]   # 0.5 s per eighth of the run
[None, None, None, 2.0, 1.5]
>>> format_duration(74.0)
'1:14'
"""
from __future__ import annotations

import collections
import math
import time

__all__ = ["RemainingTime", "format_duration", "PROGRESS_TERMS", "MIN_STEPS", "MIN_SECONDS", "WINDOW_SECONDS"]

#: steps after the first one before an estimate is given
MIN_STEPS = 3
#: wall time (s) after the first step before an estimate is given
MIN_SECONDS = 1.0
#: the pace is measured over about this much of the most recent wall time (s)
WINDOW_SECONDS = 20.0

#: the words of the progress lines of simulate, run_simulation and the demos (for their --help)
PROGRESS_TERMS = """\
progress line (on stderr; redrawn in place on a terminal, every few seconds in a log):
  [####....] P%     the share of the time steps done
  t = T/T_END s     simulated time reached, and the end time
  step K/N          time steps done, and in all
  Newton I it       Newton iterations of the last step (each: assemble the tangent, solve with it)
  retries R         failed Newton attempts so far: each one split its step into two halves that were
                    redone (nothing unconverged is kept); a few are normal in a fast transient
  contacts C        active contact points (quadrature points with a gap g < 0) at the end of the last step
  elapsed, ETA      wall time so far, and the estimated time to the end from the pace of the recent
                    steps (s below a minute, m:ss or h:mm:ss above); no ETA during the first steps or
                    the first second (the first step may include compiling the numba kernels)
  done: …           the last line: steps, Newton iterations (per step), retries, wall time (of it
                    writing output files), and the files written"""


class RemainingTime:
    """The remaining wall time of a run from the pace of its recent steps (see the module notes).

    Call :meth:`update` after every step with the fraction of the run done (steps, or
    simulated time of adaptive runs, over the whole); it returns the estimate in
    seconds, or None while the pace is not known yet.
    """

    def __init__(self, *, min_steps: int = MIN_STEPS, min_seconds: float = MIN_SECONDS,
                 window: float = WINDOW_SECONDS):
        self.min_steps = min_steps
        self.min_seconds = min_seconds
        self.window = window
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        self._first: tuple[float, float] | None = None
        self._updates = 0

    def update(self, fraction: float, *, now: float | None = None) -> float | None:
        """Record that ``fraction`` (0 … 1) of the run is done at wall time ``now``; the remaining seconds or None."""
        now = time.perf_counter() if now is None else now
        if self._first is None:  # the end of the first step: the pace is measured from here
            self._first = (now, fraction)
            self._samples.append(self._first)
            return None
        self._updates += 1
        # thin the samples to about 100 per window; keep one older than the window as its start
        if now - self._samples[-1][0] >= self.window / 100:
            self._samples.append((now, fraction))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window:
            self._samples.popleft()
        if self._updates < self.min_steps or now - self._first[0] < self.min_seconds:
            return None
        t0, f0 = self._samples[0]
        if fraction <= f0 or now <= t0:
            return None
        return (now - t0) / (fraction - f0) * max(1.0 - fraction, 0.0)


def format_duration(seconds: float | None) -> str:
    """``12.3 s`` below a minute, ``m:ss`` or ``h:mm:ss`` above; ``?`` for None or a non-finite value."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
