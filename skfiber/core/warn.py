"""Warnings that point at the user's line, not at skfiber's.

A warning raised deep in the library (a term that cannot be compiled, a softening
material point) is attributed by Python to the frame ``stacklevel`` up; the depth
differs from one call path to the next.  :func:`warn` counts it: the first frame
outside the ``skfiber`` package (a script, a notebook cell, a demo) is the one named.

Examples
--------
>>> import warnings
>>> from skfiber.core.warn import warn
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warn("a note for the user", RuntimeWarning)
>>> caught[0].category.__name__, caught[0].filename.endswith("warn.py")
('RuntimeWarning', False)
"""
from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn"]

#: the folder of the skfiber package; frames of files in it are the library's
PACKAGE_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the innermost caller outside the skfiber package."""
    frame = sys._getframe(1)  # the library's line that warns
    level = 2
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE_FOLDER):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
