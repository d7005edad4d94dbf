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

import _thread
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["ON_INTERRUPT", "CTRL_C", "check_on_interrupt", "caused_by_ctrl_c", "reraise_as_interrupt", "handle_ctrl_c",
           "ctrl_c_not_lost", "C_CALLBACKS", "REDELIVERY_S"]

#: the values of ``on_interrupt``
ON_INTERRUPT = ("keep", "raise")

#: what a Ctrl-C arrives as: ``KeyboardInterrupt``, or the ``SystemError`` numba raises around it when the
#: signal lands while a compiled function calls back into Python (``CPUDispatcher(…) returned a result with
#: an exception set``, the KeyboardInterrupt its cause).  Catch these, then ask :func:`caused_by_ctrl_c`.
CTRL_C = (KeyboardInterrupt, SystemError)


def caused_by_ctrl_c(err: BaseException) -> bool:
    """Whether a KeyboardInterrupt is ``err`` or in the chain of exceptions that led to it.

    Examples
    --------
    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt as cause:
    ...         raise SystemError("returned a result with an exception set") from cause
    ... except SystemError as err:
    ...     caused_by_ctrl_c(err), caused_by_ctrl_c(SystemError("another"))
    (True, False)
    """
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def reraise_as_interrupt(err: BaseException) -> None:
    """Raise ``err`` again if it is a KeyboardInterrupt, else a KeyboardInterrupt from it (numba's
    SystemError around a Ctrl-C), so that callers see Ctrl-C as Python's ``KeyboardInterrupt``."""
    if isinstance(err, KeyboardInterrupt):
        raise err
    raise KeyboardInterrupt from err


def check_on_interrupt(value: object) -> str:
    """``value`` when it is one of :data:`ON_INTERRUPT`, else a ValueError that names it and the choices."""
    if not (isinstance(value, str) and value in ON_INTERRUPT):
        raise ValueError("on_interrupt must be 'keep' (Ctrl-C ends the run and returns the steps done) or 'raise' "
                         f"(Ctrl-C raises KeyboardInterrupt to the caller), got {value!r}")
    return value


def handle_ctrl_c(err: BaseException, on_interrupt: str = "keep") -> None:
    """What ``except CTRL_C as err:`` does: ``err`` raised again unless a Ctrl-C caused it; a Ctrl-C raised on as
    ``KeyboardInterrupt`` with ``on_interrupt="raise"``; with ``"keep"`` it returns, and the caller keeps the
    steps done."""
    if not caused_by_ctrl_c(err):
        raise err
    if on_interrupt == "raise":
        reraise_as_interrupt(err)


#: Python functions that C code calls back while numba compiles (llvmlite's hooks of its object cache): ctypes
#: prints an exception raised in them ("Exception ignored on calling ctypes callback function") and goes on, so
#: a Ctrl-C that lands in one would be lost, and the run would go on for minutes
C_CALLBACKS = frozenset({"_raw_object_cache_notify", "_raw_object_cache_getbuffer"})
#: seconds after which a Ctrl-C that landed in such a callback is delivered again
REDELIVERY_S = 0.05


def _in_c_callback(frame) -> bool:
    """Whether ``frame`` runs in one of :data:`C_CALLBACKS` (or in a function it called)."""
    while frame is not None:
        if frame.f_code.co_name in C_CALLBACKS:
            return True
        frame = frame.f_back
    return False


def _deliver_ctrl_c(signum, frame) -> None:
    """SIGINT as Python's default handler takes it (KeyboardInterrupt), except inside a C callback: there it
    is sent again a moment later, when the callback has returned."""
    if _in_c_callback(frame):  # (interrupt_main: the main thread's handler runs, as for a Ctrl-C, on any system)
        timer = threading.Timer(REDELIVERY_S, _thread.interrupt_main, (signal.SIGINT,))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


@contextmanager
def ctrl_c_not_lost() -> Iterator[None]:
    """Within the block, a Ctrl-C that lands while numba's compiler runs Python code from C (:data:`C_CALLBACKS`)
    is delivered again once that code has returned, instead of being printed and ignored by ctypes.

    For the main thread of a program that keeps Python's own SIGINT handler (the ``skfiber`` command and the
    demos use it); elsewhere, or under another handler, the block runs as it is.

    Examples
    --------
    >>> with ctrl_c_not_lost():
    ...     pass
    """
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if ours:
        signal.signal(signal.SIGINT, _deliver_ctrl_c)
    try:
        yield
    finally:
        if ours and signal.getsignal(signal.SIGINT) is _deliver_ctrl_c:  # (a handler set within the block stays)
            signal.signal(signal.SIGINT, signal.default_int_handler)
