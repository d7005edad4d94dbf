"""Output folders and files checked before the work that fills them: made, and tried for writing.

A run's results are not lost to a place that cannot be written: the checks raise the operating system's
error (``PermissionError``, ``FileNotFoundError``, …) with a message that names what the path is for, the
path, the reason and what to do.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     made = writable_folder(Path(tmp) / "out" / "vtk", what="out_dir")
...     shot = writable_file(Path(tmp) / "shots" / "a.png", what="screenshot")
...     made.is_dir(), shot.parent.is_dir(), shot.exists()
(True, True, False)
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from filelock import FileLock, Timeout

from .warn import warn

__all__ = ["writable_folder", "writable_file", "check_file_name", "FolderHold"]


def writable_folder(folder: str | os.PathLike, *, what: str) -> Path:
    """``folder`` made with its parents (an existing one kept) and tried for writing (a file made in it and
    removed), or the OS error naming ``what`` and the folder.

    Raises
    ------
    NotADirectoryError
        When ``folder`` is an existing file.
    OSError
        (its subclass from the system) When the folder cannot be made or written.
    """
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{what} {path} exists and is not a folder; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise type(err)(f"{what} {path}: cannot create the folder ({err.strerror or err}); pick a writable "
                        "place") from err
    try:  # (tried: permissions alone do not tell, root passes every access check, a special file system refuses)
        handle, probe = tempfile.mkstemp(prefix=".probe", dir=path)
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        # (the folder exists, made or found above: the reason is the system's refusal to create a file there, whose
        # own words may be misleading, e.g. /proc's "No such file or directory")
        raise type(err)(f"{what} {path}: cannot write in the folder (it exists, but the system refuses to create "
                        f"a file in it: {err.strerror or err}); pick a writable place") from err
    return path


def check_file_name(file: str | os.PathLike, *, what: str) -> Path:
    """``file`` as a path that can name a file, without touching the disk: not a folder, its folder not a file,
    a name the file system takes (the OS error naming ``what`` otherwise)."""
    path = Path(file)
    try:
        folder = path.is_dir()
    except OSError as err:  # (a name the file system does not take)
        raise type(err)(f"{what} {path}: cannot write the file ({err.strerror or err}); pick another name") from err
    if folder:
        raise IsADirectoryError(f"{what} {path} is a folder; give a file name")
    if path.parent.exists() and not path.parent.is_dir():
        raise NotADirectoryError(f"{what} {path}: its folder {path.parent} is a file; pick another place")
    return path


def writable_file(file: str | os.PathLike, *, what: str) -> Path:
    """``file``'s folder made (:func:`writable_folder`) and the file tried for writing: a new one made and removed
    again, an existing one opened for appending (which leaves it as it is); the OS error naming ``what``
    otherwise.  Permissions alone do not tell: root passes every access check, and a special file system
    refuses what they allow."""
    path = check_file_name(file, what=what)
    writable_folder(path.parent, what=what)
    try:
        if path.exists():
            with open(path, "a"):
                pass
        else:
            with open(path, "x"):
                pass
            path.unlink()
    except OSError as err:
        raise type(err)(f"{what} {path}: cannot write the file ({err.strerror or err}); pick a writable "
                        "place") from err
    return path


class FolderHold:
    """A folder held by this process for one named job (a run's series and checkpoint, a study): another process
    that asks for the same job in the same folder is refused, so that two runs never interleave their files.

    The lock is the operating system's on the file ``.NAME.lock`` in the folder (``filelock``), so it is gone
    when the process ends, however it ends: a killed run leaves no stale lock.  Within one process the hold is
    reentrant (a resumed run in a notebook, a run and its series), and it is released by :meth:`release`, at
    the end of a ``with`` block, or when the object is collected.

    Parameters
    ----------
    folder
        An existing folder (:func:`writable_folder`).
    name
        The job's name (a plain file name).
    busy
        The message of the ``BlockingIOError`` raised when another process holds the job: what the folder is
        for, that another process is at work there, and what to do.

    Raises
    ------
    BlockingIOError
        With ``busy``, when another process holds the job.  A folder that cannot be locked at all (a file
        system without locks, a lock file of another user) gives a warning instead, and the job runs unheld.

    Examples
    --------
    >>> import subprocess, sys, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with FolderHold(folder, "run", busy="busy"):
    ...     code = "import sys; from skfiber.core.files import FolderHold; FolderHold(sys.argv[1], 'run', busy='busy')"
    ...     other = subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True)
    >>> other.returncode, other.stderr.strip().splitlines()[-1]
    (1, 'BlockingIOError: busy')
    """

    def __init__(self, folder: str | os.PathLike, name: str, *, busy: str):
        path = Path(folder) / f".{name}.lock"
        self._held = False
        try:
            self._lock = FileLock(path, timeout=0, is_singleton=True, thread_local=False)
            self._lock.acquire()
        except Timeout:
            raise BlockingIOError(busy) from None
        except (OSError, NotImplementedError) as err:  # (a file system without locks, another user's lock file)
            warn(f"{path} cannot be locked ({type(err).__name__}: {err}): a second process writing the same files "
                 "there at the same time would not be stopped")
            return
        self._held = True

    def release(self) -> None:
        """Let the job go (once; later calls do nothing)."""
        if getattr(self, "_held", False):
            self._held = False
            self._lock.release()

    def __enter__(self) -> "FolderHold":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:  # (at the interpreter's exit the lock's module may be gone; the system drops the lock)
            pass
