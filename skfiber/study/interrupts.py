"""Ctrl-C in a study on dask: the study's process stops its workers, the workers leave Ctrl-C alone.

A terminal sends Ctrl-C (SIGINT) to every process of the job: the study's own and those of a local
cluster's workers.  Left to Python's default handler, each worker died with a traceback of its own, and the
study's ``KeyboardInterrupt`` could land in one of dask's callbacks, which swallow it.  So:

* the workers of the clusters a study starts ignore SIGINT (:func:`dask_setup`, a dask preload that runs in
  every worker process once it has imported dask, a worker that the nanny restarts after a crash
  included; a Ctrl-C while a worker is starting still ends it, with its traceback);
* while a study waits for its runs, Ctrl-C sets a flag (:func:`ctrl_c_flag`) that the waiting loop reads,
  so that the study stops where it can: it writes its table, cancels its runs on a cluster of the user's
  and closes its own.  Within calls that block (starting the cluster, its warm-up), Ctrl-C raises
  ``KeyboardInterrupt`` at once, as Python's own handler does (:meth:`CtrlC.raising`).

A process that was started with SIGINT ignored (a background job, ``cmd &``) keeps ignoring it.

Examples
--------
>>> from skfiber.study.interrupts import ctrl_c_flag
>>> with ctrl_c_flag() as interrupt:
...     interrupt.requested
False
"""
from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["CtrlC", "ctrl_c_flag", "dask_setup", "PRELOAD"]

#: the dask preload of the clusters a study starts (``distributed.worker.preload``): this module
PRELOAD = __name__


class CtrlC:
    """Whether Ctrl-C was pressed within :func:`ctrl_c_flag` (``requested``), and whether it raises
    ``KeyboardInterrupt`` too (within :meth:`raising`)."""

    __slots__ = ("requested", "raise_now")

    def __init__(self):
        self.requested = False
        self.raise_now = False

    @contextlib.contextmanager
    def raising(self):
        """Within it, Ctrl-C raises ``KeyboardInterrupt`` as well (a call that blocks, and does not read the
        flag, stops at once), and a Ctrl-C that came before raises on entry."""
        if self.requested:
            raise KeyboardInterrupt
        self.raise_now = True
        try:
            yield
        finally:
            self.raise_now = False


@contextlib.contextmanager
def ctrl_c_flag():
    """Within it, Ctrl-C sets ``requested`` of the :class:`CtrlC` it gives instead of raising
    ``KeyboardInterrupt`` (but within :meth:`CtrlC.raising`); the handler before it is put back at its end.

    Nothing changes (``requested`` stays False) outside the main thread, where signals cannot be handled, and
    where SIGINT is ignored or has a handler that Python cannot put back.  Outside :meth:`CtrlC.raising` the
    handler only sets a flag: it takes no lock, which the interrupted code might hold.
    """
    flag = CtrlC()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or previous is None:
        yield flag
        return

    def on_sigint(signum, frame):
        flag.requested = True
        if flag.raise_now:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def dask_setup(worker) -> None:
    """dask's preload hook, run in each worker process of a cluster a study starts: the worker ignores
    SIGINT (the study's process stops it)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
