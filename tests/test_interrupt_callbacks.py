"""A Ctrl-C that lands while C code runs Python (numba's compiler calling llvmlite's hooks): ctypes prints such an
exception and ignores it; within ``ctrl_c_not_lost`` (the ``skfiber`` command and the demos) it is delivered again
once the callback has returned."""
import ctypes
import os
import signal
import sys
import time

import pytest

from skfiber.core import interrupt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the tests send SIGINT with os.kill, POSIX")


def _c_calling(python_function):
    """``python_function`` called through C (a ctypes function pointer), as llvmlite calls its hooks."""
    return ctypes.CFUNCTYPE(None)(python_function)


def callback_from_c():
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while C code runs this
    for _ in range(1000):  # (the handler runs between two bytecodes of this function)
        pass


def _run_with_ctrl_c_in_the_callback(calls):
    _c_calling(callback_from_c)()
    calls.append("after the callback")
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:  # the delivered-again Ctrl-C lands here
        time.sleep(0.01)
    calls.append("not interrupted")


@pytest.fixture
def python_handler():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def ignored(monkeypatch):
    """The exceptions that ctypes reports as ignored (through sys.unraisablehook)."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(report.exc_type))
    return seen


def test_without_it_ctypes_loses_the_ctrl_c(python_handler, ignored, monkeypatch):
    """The cause, shown: the KeyboardInterrupt raised in the callback is reported as ignored and the program
    goes on."""
    monkeypatch.setattr(time, "monotonic", iter([0.0, 10.0]).__next__)  # (no waiting: one pass of the loop)
    calls = []
    _run_with_ctrl_c_in_the_callback(calls)
    assert calls == ["after the callback", "not interrupted"]
    assert ignored == [KeyboardInterrupt]


def test_a_ctrl_c_in_a_c_callback_is_delivered_after_it(python_handler, ignored, monkeypatch):
    monkeypatch.setattr(interrupt, "C_CALLBACKS", frozenset({"callback_from_c"}))
    calls = []
    with pytest.raises(KeyboardInterrupt):
        with interrupt.ctrl_c_not_lost():
            _run_with_ctrl_c_in_the_callback(calls)
    assert calls == ["after the callback"] and ignored == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # (put back)


def test_elsewhere_a_ctrl_c_is_a_keyboard_interrupt_at_once(python_handler):
    with pytest.raises(KeyboardInterrupt):
        with interrupt.ctrl_c_not_lost():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000_000):
                pass


def test_another_handler_is_left_alone():
    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGINT, mine)
    try:
        with interrupt.ctrl_c_not_lost():
            assert signal.getsignal(signal.SIGINT) is mine
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_callbacks_named_are_llvmlites():
    """The names of C_CALLBACKS are the hooks that llvmlite's execution engine hands to C (a rename in a new
    llvmlite would make the Ctrl-C lost again)."""
    from llvmlite.binding import executionengine

    assert all(callable(getattr(executionengine.ExecutionEngine, name, None)) for name in interrupt.C_CALLBACKS)


def test_a_handler_set_within_the_block_stays(python_handler):
    def mine(signum, frame):
        pass

    with interrupt.ctrl_c_not_lost():
        signal.signal(signal.SIGINT, mine)
    assert signal.getsignal(signal.SIGINT) is mine
