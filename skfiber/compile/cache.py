r"""The disk cache of generated modules: a source is written once under a name made from its text.

``$SKFIBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/skfiber`` or ``~/.cache/skfiber``
(a temporary folder when that is not writable).  numba's ``cache=True`` keeps
the machine code next to each module, so a later process loads it instead of
compiling again; another source (an edited form or law) gets another name.

Examples
--------
>>> from skfiber.compile.cache import load_module
>>> load_module("def evaluate():\n    return 42\n", kind="example").evaluate()
42
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numba
import numpy as np

from ..core import files
from ..core.jit import cache_lock
from ..core.warn import warn

__all__ = ["cache_folder", "writable_folder", "cache_is_temporary", "source_key", "load_module", "forget_module",
           "unload_module", "first_call", "GeneratedKernel"]

_MODULES: dict[str, object] = {}  # source hash → imported module (one import and compile per process)
_TEMP_FOLDER: list[Path] = []


def cache_folder() -> Path:
    """Where generated modules (laws, forms) and numba's machine code are kept."""
    if os.environ.get("SKFIBER_CACHE_DIR"):
        root = Path(os.environ["SKFIBER_CACHE_DIR"])
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skfiber"
    return root / "laws"


def writable_folder() -> Path:
    """:func:`cache_folder`, made if needed, or a temporary folder when it is not writable.

    In that case a warning (once a process) names the folder, the reason and how to keep the compiled code;
    the temporary folder is removed when the process ends (:func:`cache_is_temporary` tells).
    """
    folder = cache_folder()
    try:
        return files.writable_folder(folder, what="the cache of compiled code")
    except OSError as made_err:
        err = made_err.__cause__ if isinstance(made_err.__cause__, OSError) else made_err  # (the system's reason)
        if not _TEMP_FOLDER:
            _TEMP_FOLDER.append(Path(tempfile.mkdtemp(prefix="skfiber-cache-")))
            atexit.register(shutil.rmtree, _TEMP_FOLDER[0], ignore_errors=True)
            given = "SKFIBER_CACHE_DIR" if os.environ.get("SKFIBER_CACHE_DIR") else "the default cache folder"
            warn(f"the cache of compiled code, {folder} ({given}), cannot be written ({err.strerror or err}): "
                 f"the kernels are compiled for this run only, into {_TEMP_FOLDER[0]}, and compiled again next time; "
                 "set SKFIBER_CACHE_DIR to a writable folder to keep them", RuntimeWarning)
        return _TEMP_FOLDER[0]


def cache_is_temporary() -> bool:
    """Whether this process compiles into a temporary folder (the cache folder was not writable)."""
    return bool(_TEMP_FOLDER)


def source_key(source: str) -> str:
    """The name of a generated source in the cache: a hash of its text."""
    return hashlib.sha1(source.encode()).hexdigest()[:20]


def forget_module(source: str, kind: str = "law") -> None:
    """Drop the module of a source and numba's cached machine code for it (a stale or broken cache)."""
    key = source_key(source)
    _MODULES.pop(key, None)
    sys.modules.pop(f"skfiber_{kind}_{key}", None)
    folders = {folder / "__pycache__" for folder in {writable_folder(), cache_folder()}}
    if numba.config.CACHE_DIR:  # NUMBA_CACHE_DIR set: numba keeps its files there, in a folder per source folder
        root = Path(numba.config.CACHE_DIR)
        folders |= {path.parent for path in root.glob(f"*/{kind}_{key}.*")} if root.is_dir() else set()
    for folder in folders:
        if not folder.is_dir():
            continue
        with cache_lock(folder, exclusive=True):  # not while another process reads or writes numba's index there
            for path in folder.glob(f"{kind}_{key}.*"):
                try:
                    path.unlink()
                except OSError:
                    pass


def load_module(source: str, kind: str = "law"):
    """The module of a generated source (``kind``: its file name prefix), written to the cache folder once."""
    key = source_key(source)
    if key in _MODULES:
        return _MODULES[key]
    folder = writable_folder()
    path = folder / f"{kind}_{key}.py"
    if not path.exists() or path.read_text() != source:
        tmp = folder / f".{kind}_{key}.{os.getpid()}.tmp"
        tmp.write_text(source)
        os.replace(tmp, path)  # atomic: other processes see the old or the whole new file
    name = f"skfiber_{kind}_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache looks the module up by name
    spec.loader.exec_module(module)
    _MODULES[key] = module
    return module


def unload_module(source: str, kind: str = "law") -> None:
    """Forget the loaded module of a source (its files stay): the next :func:`load_module` imports it anew,
    as a new process would."""
    key = source_key(source)
    _MODULES.pop(key, None)
    sys.modules.pop(f"skfiber_{kind}_{key}", None)


def first_call(source: str, kind: str, args: tuple, *, what: str) -> Callable | None:
    """The ``evaluate`` function of a generated source, called once (which compiles it or loads numba's
    machine code).

    Parameters
    ----------
    source
        The module's source (:func:`load_module`).
    kind
        Its file name prefix in the cache.
    args
        The arguments of the first call.
    what
        What the warning calls the source when it cannot be compiled.

    Returns
    -------
    callable or None
        The function, or None when it cannot be compiled (also after a second try without numba's cached
        code, which may be stale or broken); a RuntimeWarning then says that ``what`` runs with numpy.
    """
    for attempt in (0, 1):
        try:
            function = load_module(source, kind).evaluate
            function(*args)
            return function
        except Exception as error:  # numba typing errors, unwritable folders, …
            forget_module(source, kind)
            if attempt:
                first_line = str(error).splitlines()[0] if str(error) else ""
                warn(f"{what} could not be compiled ({type(error).__name__}: {first_line}); it runs with "
                     "numpy", RuntimeWarning)
                return None


class GeneratedKernel:
    """The ``evaluate`` function of a generated source with its parameter vector, compiled on the first call.

    Subclasses set :attr:`kind` (the file name prefix in the cache), say what they compile
    (:meth:`describe`) and call :meth:`run`.  When the source
    cannot be compiled, :meth:`run` warns once and returns False from then on: the caller evaluates with
    numpy instead.
    """

    kind = "kernel"

    def __init__(self, source: str, params: np.ndarray, name: str):
        self.source = source
        self.params = params
        self.name = name
        self._function = None
        self.failed = False

    def describe(self) -> str:
        """What the warning calls this kernel's source."""
        return repr(self.name)

    def run(self, args: tuple) -> bool:
        """Call ``evaluate(*args)``; False when it cannot be compiled."""
        if self.failed:
            return False
        if self._function is None:
            self._function = first_call(self.source, self.kind, args, what=self.describe())
            self.failed = self._function is None
            return not self.failed
        self._function(*args)
        return True
