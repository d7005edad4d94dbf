"""Ctrl-C in a study on dask: the study's process stops its workers, the workers leave Ctrl-C alone.

A terminal sends Ctrl-C (SIGINT) to every process of the job: the study's own and those of a local
cluster's workers.  Left to Python's default handler, each worker died with a traceback of its own, and the
study's ``KeyboardInterrupt`` could land in one of dask's callbacks, which swallow it.  So:

* the workers of the clusters a study starts ignore SIGINT from their start: they are forked by
  multiprocessing's fork server, started with SIGINT ignored (:func:`forkserver_ignoring_ctrl_c`), a worker
  that a nanny restarts after a crash included; where there is no fork server, a dask preload
  (:func:`dask_setup`) makes them ignore it once they have imported dask;
* while a study waits for its runs, Ctrl-C sets a flag (:func:`ctrl_c_flag`) that the waiting loop reads,
  so that the study stops where it can: it writes its table, cancels its runs on a cluster of the user's
  and closes its own.

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
import multiprocessing
import signal
import threading
from multiprocessing import forkserver

__all__ = ["CtrlC", "ctrl_c_flag", "forkserver_ignoring_ctrl_c", "dask_setup", "PRELOAD"]

#: the dask preload of the clusters a study starts (``distributed.worker.preload``): this module
PRELOAD = __name__


class CtrlC:
    """Whether Ctrl-C was pressed within :func:`ctrl_c_flag` (``requested``)."""

    __slots__ = ("requested",)

    def __init__(self):
        self.requested = False


@contextlib.contextmanager
def ctrl_c_flag():
    """Within it, Ctrl-C sets ``requested`` of the :class:`CtrlC` it gives instead of raising
    ``KeyboardInterrupt``; the handler before it is put back at its end.

    Nothing changes (``requested`` stays False) outside the main thread, where signals cannot be handled, and
    where SIGINT is ignored or has a handler that Python cannot put back.  The handler only sets a flag: it
    takes no lock, which the interrupted code might hold.
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

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def forkserver_ignoring_ctrl_c() -> bool:
    """Start multiprocessing's fork server, if it is not running, with SIGINT ignored for the moment it is
    forked: the processes it forks later (a cluster's workers, and a worker that a nanny restarts) ignore
    Ctrl-C from their first instruction on (the fork server gives them the SIGINT handler it started with).
    False where there is no fork server (Windows) or this is not the main thread (it is then started, if at
    all, as multiprocessing does)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)
    return True


def dask_setup(worker) -> None:
    """dask's preload hook, run in each worker process of a cluster a study starts: the worker ignores
    SIGINT (the study's process stops it)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
