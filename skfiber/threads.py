"""Threads of skfiber's parallel numba kernels: the fiber–fiber contact search and tangent.

These kernels share the elements out among numba's threads, by default one per core
(numba's ``NUMBA_NUM_THREADS``; ``NUMBA_NUM_THREADS=1`` in the environment runs them
serially), when a call has enough work to pay for waking the threads
(:func:`threads_for`).  Their results do not depend on the number of threads: every
contact point and every tangent block is computed by one thread, in one order.

Waiting threads sleep (``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it): with
OpenMP's default of spinning, the upper limb at level 1 took 4–9× as long on a 2-core
machine whose other core was busy (see ``docs/performance.md``).  The setting acts when
numba starts its OpenMP threads, at the first parallel kernel of the process;
``import skfiber`` sets it.

The BLAS under numpy and scipy (OpenBLAS in their wheels) runs on one thread during
:func:`~skfiber.simulate` and :func:`~skfiber.solve_static` (:func:`one_blas_thread`,
by ``threadpoolctl``): skfiber's BLAS calls are matrix–vector sized, and OpenBLAS's
threads keep spinning after each call, taking the cores from numba's threads and from
the main thread (a 144-fiber bundle ran 1.6 times as long with them).

Examples
--------
>>> from skfiber.threads import threads_of_kernels
>>> with threads_of_kernels(1):   # e.g. one run per core in a parameter study
...     pass
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

import numba
import threadpoolctl

__all__ = ["blas_threads", "kernel_threads", "one_blas_thread", "threads_for", "threads_of_kernels"]


def kernel_threads() -> int:
    """The number of threads the parallel kernels use now (numba's setting of the calling thread)."""
    return int(numba.get_num_threads())


def threads_for(work: int, min_work: int) -> int:
    """The threads for a kernel call of ``work`` units: :func:`kernel_threads`, or 1 (the serial kernel) when
    ``work`` < ``min_work``.

    Waking sleeping threads costs 0.02–0.5 ms per parallel call on a VM, more than a small kernel
    takes: each kernel's ``min_work`` is where its two-thread version was measured faster, about
    0.5–1 ms of its serial work.
    """
    return kernel_threads() if work >= min_work else 1


def _check_count(count) -> None:
    """Raise ValueError unless ``count`` (not None) is an integer ≥ 1."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be None or an integer ≥ 1 (threads), got {count!r}")


@contextmanager
def threads_of_kernels(count: int | None):
    """Within the block, the parallel kernels use ``count`` threads (None: unchanged).

    numba's setting is per calling thread and is restored at the end; ``count`` is capped at
    numba's ``NUMBA_NUM_THREADS``.

    Raises
    ------
    ValueError
        If ``count`` is not None or an integer ≥ 1.
    """
    if count is None:
        yield
        return
    _check_count(count)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


_BLAS_LOCK = threading.Lock()
_blas_open = 0  # blas_threads blocks open in the process (in any thread)
_blas_limiter = None  # threadpoolctl's limit of the first of them, restored when the last closes


@functools.lru_cache(maxsize=1)
def _blas_controller() -> threadpoolctl.ThreadpoolController:
    """threadpoolctl's view of the thread pools loaded in the process, made at the first :func:`blas_threads`
    (``import skfiber`` has loaded numpy's and scipy's BLAS by then)."""
    return threadpoolctl.ThreadpoolController()


@contextmanager
def blas_threads(count: int | None):
    """Within the block, the BLAS libraries under numpy and scipy use ``count`` threads (None: unchanged).

    :func:`~skfiber.simulate` and :func:`~skfiber.solve_static` run with ``blas_threads(1)`` (their callbacks
    too).  The setting is the process's, not the calling thread's: while blocks are open in several threads
    (runs side by side in a thread pool) the first block's count holds, and the last block to close restores
    the count from before the first.

    Raises
    ------
    ValueError
        If ``count`` is not None or an integer ≥ 1.

    Examples
    --------
    >>> import numpy as np
    >>> with blas_threads(1):
    ...     _ = np.ones((200, 200)) @ np.ones(200)
    """
    global _blas_open, _blas_limiter
    if count is None:
        yield
        return
    _check_count(count)
    with _BLAS_LOCK:
        if _blas_open == 0:
            _release_openblas()
            _blas_limiter = _blas_controller().limit(limits=count, user_api="blas")
            _release_openblas()
        _blas_open += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_open -= 1
            if _blas_open == 0:
                _release_openblas()
                _blas_limiter.restore_original_limits()
                _release_openblas()
                _blas_limiter = None


def one_blas_thread(function):
    """``function`` run within ``blas_threads(1)`` (a decorator: :func:`~skfiber.simulate`,
    :func:`~skfiber.solve_static`).

    Examples
    --------
    >>> @one_blas_thread
    ... def run():
    ...     return "done"
    >>> run()
    'done'
    """
    @functools.wraps(function)
    def with_one_blas_thread(*args, **kwargs):
        with blas_threads(1):
            return function(*args, **kwargs)
    return with_one_blas_thread


def _release_openblas() -> None:
    """Let any thread set OpenBLAS's threads next: recent threadpoolctl ignores the calls of every thread but
    the first that set them, while a block may close in another thread than the one that opened it."""
    release = getattr(threadpoolctl.OpenBLASController, "clear_controlling_thread", None)
    if release is not None:
        release(force=True)
