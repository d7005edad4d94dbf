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

__all__ = ["writable_folder", "writable_file", "check_file_name"]


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
