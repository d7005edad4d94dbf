"""numba's ``njit`` with a disk cache that processes can share.

numba's ``cache=True`` has two hazards when several processes compile and cache the same functions
(test workers, the processes of a parameter study, two first runs on a fresh install), and a third
after the package's files change:

* **Saving races.**  numba keeps one index file per function (signature → data file) and one data
  file per signature.  Saving reads the index, picks the first free data file name, writes the index
  and then the data, with no lock.  Two processes compiling two signatures of one function at the
  same time can both pick the same name: the index then says "signature B is in file 1" while file 1
  holds the machine code of signature A, and every later process that loads B runs A's code on B's
  arguments (a wrong number, ``TypeError: can't unbox array``, or a crash).
* **Names repeat across processes.**  numba numbers its compilations 1, 2, … in each process and
  names the environment of a compiled function (the Python objects its code uses) by that number.
  A process that loads one function from two caches written by different processes (inside a kernel
  that calls it, and by itself) can find the second environment's name taken and reuse the first,
  whose objects may be numbered otherwise: ``SystemError: CPUDispatcher(...) returned a result with
  an exception set``, caused by ``RuntimeError: In 'NRT_adapt_ndarray_to_python', 'descr' is NULL``.
* **Stale callers.**  numba keeps a function's machine code while the function's own file is unchanged,
  but the code holds the functions it calls from other files too (a contact kernel calls the penalty
  law of another module): after an edit of the called function, or an update of an editable install,
  the caller would run the old code.

:func:`njit` is ``numba.njit`` whose cache holds a file lock on its folder while it saves (exclusive)
and while it reads (shared), so an index and its data files are always written together, and which
numbers the compilations of each process from a random start (:func:`distinct_function_ids`), and
whose cache entries hold for skfiber's modules as they were when compiled (:func:`package_digest`).  Every
compiled function of skfiber, and every module it generates, is made by it.  The lock is POSIX
``flock``; where that is missing (Windows, file systems without it) the cache saves as numba's own.

Examples
--------
>>> import numpy as np
>>> from skfiber.core.jit import njit
>>> @njit  # in a module's file, @njit(cache=True) keeps the machine code on disk
... def total(x):
...     s = 0.0
...     for value in x:
...         s += value
...     return s
>>> total(np.arange(4.0))
6.0
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numba
from numba.core.bytecode import FunctionIdentity
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["njit", "cache_lock", "distinct_function_ids", "package_digest", "sources_at_start", "source_state",
           "source_digest", "PACKAGE_ROOT", "LOCK_NAME"]

LOCK_NAME = ".skfiber-numba-cache.lock"
"""The lock file in each folder of numba's cache (one lock for the functions of that folder)."""


_HELD: dict[tuple[int, str], int] = {}  # (thread, folder) whose lock is held, with the depth: no second flock
# by the thread that holds one (another thread waits for it, as another process does)
_HELD_GUARD = threading.Lock()


def _open_lock_file(folder: str | os.PathLike) -> int | None:
    """A descriptor of the folder's lock file (made if missing), or None when there is none to be had."""
    path = os.path.join(folder, LOCK_NAME)
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):  # flock works on a read-only descriptor too (another
        try:                                              # user's lock file in a shared NUMBA_CACHE_DIR)
            return os.open(path, flags, 0o666)
        except OSError:
            continue
    return None


@contextmanager
def cache_lock(folder: str | os.PathLike, *, exclusive: bool) -> Iterator[bool]:
    """Hold the lock of a cache folder: shared for readers, exclusive for a writer.

    Parameters
    ----------
    folder
        A folder of numba's cache (``__pycache__`` beside a source, or under ``NUMBA_CACHE_DIR``).
    exclusive
        True to write (index and data files), False to read.

    Yields
    ------
    bool
        Whether the lock is held.  It is not when there is no lock file to be had (the folder does
        not exist, so nothing there is being saved, or it cannot be read), when the file system
        refuses ``flock`` (some network file systems) or without ``fcntl`` (Windows): the block then
        runs unlocked, as numba's own cache does.  In a thread that holds the folder's lock already (an
        import while a cache file is read) the block runs under that lock.

    Examples
    --------
    >>> import tempfile
    >>> from skfiber.core.jit import cache_lock
    >>> with cache_lock(tempfile.mkdtemp(), exclusive=True) as held:
    ...     held
    True
    """
    key = (threading.get_ident(), os.path.realpath(folder))
    with _HELD_GUARD:
        nested = key in _HELD
        if nested:
            _HELD[key] += 1
    if nested:
        try:
            yield True
        finally:
            with _HELD_GUARD:
                _HELD[key] -= 1
        return
    handle = _open_lock_file(folder) if fcntl is not None else None
    held = False
    if handle is not None:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            held = True
        except OSError:  # ENOLCK, ENOSYS: a file system without flock
            os.close(handle)
            handle = None
    if held:
        with _HELD_GUARD:
            _HELD[key] = 1
    try:
        yield held
    finally:
        if held:
            with _HELD_GUARD:
                _HELD[key] -= 1
                if _HELD[key] == 0:
                    del _HELD[key]
        if handle is not None:
            os.close(handle)  # releases the lock


_FUNCTION_IDS: list = []  # the counter this module gave numba, once per process


def distinct_function_ids() -> None:
    """Number numba's compilations in this process from a random start (once per process).

    numba numbers the functions it compiles 1, 2, … in each process and puts the number in the names
    of their machine code and of their environments (the Python objects the code uses, such as the
    dtypes of the arrays it returns).  Two processes that compile in the same order give the same
    number to the same function, and the cache keeps that name.  A process that then loads the
    function twice from caches written by different processes (once inside a kernel that calls it,
    once by itself) finds the name taken and reuses the first environment; its objects may be numbered
    otherwise, and the code reads the wrong one or none (``RuntimeError: In
    'NRT_adapt_ndarray_to_python', 'descr' is NULL``).  From a random start of 40 bits the numbers of
    two processes meet with a probability of about 10⁻¹², so every cached environment keeps its own
    name.  :func:`njit` calls this before it makes a dispatcher.

    Examples
    --------
    >>> from skfiber.core.jit import distinct_function_ids
    >>> distinct_function_ids()  # idempotent
    """
    with _HELD_GUARD:
        if _FUNCTION_IDS and FunctionIdentity._unique_ids is _FUNCTION_IDS[0]:
            return
        counter = itertools.count((int.from_bytes(os.urandom(5), "little") << 20) + 1)
        FunctionIdentity._unique_ids = counter
        _FUNCTION_IDS[:] = [counter]


#: the folder of skfiber's modules, whose text :func:`package_digest` hashes
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def package_digest() -> str:
    """A hash of the text of all of skfiber's modules, computed once per process (reading the package's files).

    numba's cache keeps a compiled function's machine code valid as long as the function's own file is
    unchanged, but that code holds the functions it calls, inlined or linked in, from other files too: after
    an edit of a called function (or a ``git pull`` into an editable install) the caller would load the old
    machine code.  skfiber's cache therefore also keys every entry on this digest, so that any change of the
    package compiles its kernels anew.  When the files have changed since this process loaded its first
    kernel module (:func:`sources_at_start`: an edit or a pull while it ran), the code in memory is not the
    code on disk: the digest is then one of this process alone, which no cache entry matches, so that the
    process neither loads machine code compiled from the new files nor leaves its own under their digest.

    Examples
    --------
    >>> from skfiber.core.jit import package_digest
    >>> len(package_digest())
    20
    """
    digest = source_digest(PACKAGE_ROOT)
    if source_state(PACKAGE_ROOT) != sources_at_start():
        return f"{digest}-changed-while-running-{os.getpid()}-{os.urandom(4).hex()}"
    return digest


@functools.cache
def sources_at_start() -> dict[str, tuple[int, int]]:
    """:func:`source_state` of skfiber's modules when this process first made a cached kernel (or asked for
    the digest): the code the process runs."""
    return source_state(PACKAGE_ROOT)


def source_state(root: str | os.PathLike) -> dict[str, tuple[int, int]]:
    """{file: (modification time in ns, size)} of the ``.py`` files under ``root``."""
    root = Path(root)
    return {path.relative_to(root).as_posix(): (info.st_mtime_ns, info.st_size)
            for path in root.rglob("*.py") for info in (path.stat(),)}


def source_digest(root: str | os.PathLike) -> str:
    """A hash of the names and text of the ``.py`` files under ``root`` (:func:`package_digest`'s)."""
    root = Path(root)
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


class _LockedIndexDataCacheFile(IndexDataCacheFile):
    """numba's index and data files, read under the folder's shared lock and saved under its
    exclusive lock, and valid for the function's own file as it is (numba's stamp) and for skfiber's
    modules as they are (:func:`package_digest`)."""

    @property
    def _source_stamp(self):
        return self._own_stamp, package_digest()  # computed on the first load or save, not at import

    @_source_stamp.setter
    def _source_stamp(self, stamp) -> None:  # numba's __init__ sets it
        self._own_stamp = stamp

    def save(self, key, data) -> None:
        # the index read, the choice of a free data file name and both writes are one step for
        # the processes sharing the folder
        with cache_lock(self._cache_path, exclusive=True):
            super().save(key, data)

    def load(self, key):
        with cache_lock(self._cache_path, exclusive=False):
            return super().load(key)

    def flush(self) -> None:
        with cache_lock(self._cache_path, exclusive=True):  # Dispatcher.recompile(): an empty index
            super().flush()


class _LockedFunctionCache(FunctionCache):
    """numba's per-function cache with :class:`_LockedIndexDataCacheFile` for its files."""

    def __init__(self, py_func: Callable) -> None:
        super().__init__(py_func)
        self._cache_file = _LockedIndexDataCacheFile(cache_path=self._cache_path,
                                                     filename_base=self._impl.filename_base,
                                                     source_stamp=self._impl.locator.get_source_stamp())


def njit(function: Callable | None = None, /, **options):
    """``numba.njit`` with a cache that is safe when processes compile at once.

    Parameters
    ----------
    function
        The Python function (``@njit``), or None (``@njit(cache=True, ...)``).  Functions compile on
        their first call; signatures (numba's eager compilation) are not taken.
    **options
        numba's options (``cache``, ``fastmath``, ``error_model``, ``parallel``, ``inline``, …).
        With ``cache=True`` the machine code is kept on disk as numba keeps it, in files written
        under a lock (see the module's text).

    Returns
    -------
    numba's dispatcher, or a decorator that makes one (with ``NUMBA_DISABLE_JIT=1``, numba's: the
    Python function).

    Raises
    ------
    TypeError
        If ``function`` is not a Python function (e.g. a signature).

    Examples
    --------
    >>> from skfiber.core.jit import njit
    >>> @njit(error_model="numpy")  # cache=True needs the function in a file
    ... def half(x):
    ...     return x / 2
    >>> half(3.0)
    1.5
    """
    if function is not None and not inspect.isfunction(function):
        raise TypeError(f"njit takes a Python function (or options only), got {function!r}; skfiber's njit "
                        "compiles on the first call and takes no signature")
    cache = bool(options.pop("cache", False))

    def decorate(python_function: Callable):
        distinct_function_ids()
        compiled = numba.njit(**options)(python_function)
        if cache and isinstance(compiled, Dispatcher):  # not with NUMBA_DISABLE_JIT=1
            sources_at_start()  # the package's files as this process loads them (once; a stat of each)
            # numba's Dispatcher.enable_caching() sets this attribute to a FunctionCache; the
            # subclass changes only how its files are written and read
            compiled._cache = _LockedFunctionCache(python_function)
        return compiled

    return decorate if function is None else decorate(function)
