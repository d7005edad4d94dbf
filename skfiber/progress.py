"""The progress line of a run, the remaining time estimated from its recent pace, and what the line says.

:class:`Progress` draws the one progress line of :func:`skfiber.simulate` (fixed steps and error
control alike) and :func:`skfiber.run.run_simulation`: redrawn in place on a terminal, printed every
few seconds in a log or a pipe.

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
>>> import io
>>> bar = Progress(stream=io.StringIO())
>>> bar.update(step=4, n_steps=4, t=0.4, t_end=0.4, newton=3)   # the last line is always drawn
>>> bar.stream.getvalue().split("  elapsed")[0]
'[########################] 100%  t = 0.4/0.4 s  step 4/4  Newton 3 it'
>>> eta = RemainingTime()
>>> [eta.update(k / 8, now=0.5 * k) for k in range(1, 6)]   # 0.5 s per eighth of the run
[None, None, None, 2.0, 1.5]
>>> format_duration(74.0)
'1:14'
"""
from __future__ import annotations

import collections
import math
import os
import sys
import time
import warnings
import weakref
from typing import Callable, TextIO

import numpy as np

__all__ = ["Progress", "progress_bar", "terminal_columns", "RemainingTime", "format_duration", "PROGRESS_TERMS",
           "MIN_STEPS", "MIN_SECONDS", "WINDOW_SECONDS"]

#: steps after the first one before an estimate is given
MIN_STEPS = 3
#: wall time (s) after the first step before an estimate is given
MIN_SECONDS = 1.0
#: the pace is measured over about this much of the most recent wall time (s)
WINDOW_SECONDS = 20.0

#: the words of the progress lines of simulate, run_simulation and the demos (for their --help)
PROGRESS_TERMS = """\
progress line (on stderr; redrawn in place on a terminal, every few seconds in a log):
  [####....] P%     the share of the run done (of its time steps; of its simulated time with error control)
  t = T/T_END s     simulated time reached, and the end time
  step K/N          time steps done, and in all (fixed steps)
  Newton I it       Newton iterations of the last step (each: assemble the tangent, solve with it)
  retries R         failed Newton attempts so far: each one split its step into two halves that were
                    redone (nothing unconverged is kept); a few are normal in a fast transient
  elapsed, ETA      wall time so far, and the estimated time to the end from the pace of the recent
                    steps (s below a minute, m:ss or h:mm:ss above); no ETA during the first steps or
                    the first second (the first step may include compiling the numba kernels)
  contacts C        contacts in touch at the end of the last step: quadrature point – partner pairs with a
                    gap g < 0 (a point touching two fibers counts twice)
  tangents, factorizations   tangents assembled and matrices factorized so far (fewer factorizations
                    than Newton iterations when Newton keeps its factorization)
  h H s, accepted, rejected, newton-failed   with error control: the last step's size, the steps accepted
                    and rejected by the error test, and those whose Newton iteration failed (redone halved)
  done: …           the last line of a run with output files: steps, Newton iterations (per step),
                    retries, wall time (of it writing output files), and the files written"""


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


class Progress:
    """The one-line progress of a run on a stream (default stderr); its words are :data:`PROGRESS_TERMS`.

    On a terminal the line is redrawn in place at most every 0.1 s, cut to the terminal's width (a warning
    shown meanwhile ends the line first and keeps its own); otherwise (logs, pipes) a line is printed at
    most every ``interval`` seconds.  The last line of a run (its end time reached) is always drawn, and
    ends the line.  The ETA comes from the pace of the recent steps and is left out until it is
    known (:class:`RemainingTime`).

    Parameters
    ----------
    stream
        Where the lines go (default ``sys.stderr``, looked up when the bar is made).
    width
        Characters of the bar.
    interval
        Seconds between two lines in a log (a terminal's line is redrawn every 0.1 s).

    Examples
    --------
    >>> import io
    >>> bar = Progress(stream=io.StringIO(), interval=0.0)
    >>> bar.update(t=0.05, t_end=0.1, newton=4, extra="h 0.01 s")   # error control: no step count
    >>> "[############............]  50%  t = 0.05/0.1 s  Newton 4 it" in bar.stream.getvalue()
    True
    """

    def __init__(self, *, stream: TextIO | None = None, width: int = 24, interval: float = 2.0):
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = -math.inf
        self._start = time.perf_counter()
        self._remaining = RemainingTime()
        self._open = False  # a terminal's line drawn without its newline yet
        self._steps_before = 0  # steps and retries of the run before the calls that update the bar now
        self._retries_before = 0

    def update(self, *, t: float, t_end: float, newton: int | None, step: int | None = None,
               n_steps: int | None = None, t_start: float = 0.0, retries: int | None = None,
               extra: str = "") -> None:
        """Record a finished step; draw the line when it is due.

        ``step``/``n_steps``: steps done and in all (fixed steps); without them the share done is that of
        the simulated time from ``t_start``.  ``newton``: iterations of the last step (None: not shown);
        ``retries``: failed attempts so far (None: not shown); ``extra``: appended to the line.
        """
        now = time.perf_counter()
        if step is not None and n_steps is not None:
            step, n_steps = step + self._steps_before, n_steps + self._steps_before
            frac, done = step / max(n_steps, 1), step >= n_steps
        else:
            span = t_end - t_start
            frac = min(max((t - t_start) / span, 0.0), 1.0) if span > 0 else 1.0
            done = t >= t_end
        remaining = self._remaining.update(frac, now=now)
        if not done and now - self._last < (0.1 if self.tty else self.interval):
            return
        self._last = now
        filled = int(round(self.width * frac))
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {100 * frac:3.0f}%  t = {t:.4g}/{t_end:.4g} s"
                + (f"  step {step}/{n_steps}" if step is not None and n_steps is not None else "")
                + (f"  Newton {newton} it" if newton is not None else "")
                + (f"  retries {retries + self._retries_before}" if retries is not None else "")
                + f"  elapsed {format_duration(now - self._start)}"
                + (f"  ETA {format_duration(remaining)}" if remaining is not None and not done else "")
                + (f"  {extra}" if extra else ""))
        if self.tty:  # (cut to the terminal's width: a line that wraps is not redrawn in place)
            line = line[:max(terminal_columns(self.stream) - 1, 20)]
            print("\r" + line + "\033[K", end="\n" if done else "", file=self.stream, flush=True)
            self._set_open(not done)
        else:
            print(line, file=self.stream, flush=True)

    def count_on(self, *, steps: int, retries: int = 0) -> None:
        """Count the steps and retries that later calls of :meth:`update` give on from ``steps`` and ``retries``
        done before: a run that one call started (a start transient in substeps, say) and another continues
        shows one count over the whole run.

        Examples
        --------
        >>> import io
        >>> bar = Progress(stream=io.StringIO(), interval=0.0)
        >>> bar.count_on(steps=4, retries=1)
        >>> bar.update(step=2, n_steps=4, t=0.6, t_end=0.8, newton=3, retries=0)   # the continuing call's 2nd of 4
        >>> "step 6/8  Newton 3 it  retries 1" in bar.stream.getvalue()
        True
        """
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"steps must be a whole number ≥ 0 of steps done before, got {steps!r}")
        if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
            raise ValueError(f"retries must be a whole number ≥ 0 of retries before, got {retries!r}")
        self._steps_before, self._retries_before = int(steps), int(retries)

    def end(self) -> None:
        """End a terminal's line drawn in place (before other text); nothing otherwise.  A warning shown
        while the line is open ends it first by itself."""
        if self._open:
            print(file=self.stream, flush=True)
        self._set_open(False)

    def message(self, text: str) -> None:
        """Print ``text`` on a line of its own (on a terminal, in place of the progress line)."""
        if self.tty:
            print("\r\033[K", end="", file=self.stream)
            self._set_open(False)
        print(text, file=self.stream, flush=True)

    def _set_open(self, state: bool) -> None:
        """Record whether a terminal's line is open (see :func:`_ending_open_lines`)."""
        self._open = state
        if state:
            _OPEN_LINES.add(self)
            if not getattr(warnings.showwarning, "ends_progress_lines", False):
                warnings.showwarning = _ending_open_lines(warnings.showwarning)
        else:
            _OPEN_LINES.discard(self)
            current = warnings.showwarning
            if not _OPEN_LINES and getattr(current, "ends_progress_lines", False):
                warnings.showwarning = current.shows  # (the handler from before the lines opened)


def progress_bar(progress) -> Progress | None:
    """The bar a run draws for its ``progress`` option: the :class:`Progress` given, a new one on stderr for
    True, None for False; a ``TypeError`` naming anything else.

    Examples
    --------
    >>> progress_bar(False) is None, type(progress_bar(True)).__name__
    (True, 'Progress')
    """
    if isinstance(progress, Progress):
        return progress
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or a skfiber.progress.Progress, got {progress!r}")
    return Progress() if progress else None


#: the progress lines open on a terminal now
_OPEN_LINES: weakref.WeakSet = weakref.WeakSet()


def _ending_open_lines(show: Callable) -> Callable:
    """``show`` (a ``warnings.showwarning``) after ending the open progress lines: a warning would otherwise run
    on after a bar drawn in place.  Put in place while a terminal's line is open, and ``show`` put back when
    the last one closes."""
    def ending_open_lines(*args, **kwargs):
        for bar in list(_OPEN_LINES):
            bar.end()
        return show(*args, **kwargs)

    ending_open_lines.ends_progress_lines = True
    ending_open_lines.shows = show
    return ending_open_lines


def terminal_columns(stream) -> int:
    """The width of the terminal ``stream`` writes to: ``COLUMNS`` if set, else the terminal's, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):  # (no file descriptor, or not a terminal)
        return 80
