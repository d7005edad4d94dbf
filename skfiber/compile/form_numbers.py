"""The numbers a form reads through names: what a model compares to notice a changed parameter.

A form is a plain function, and its parameters are the numbers it closes over: a global of its module, a
variable of the function that made it, or an entry of a list, tuple or dict held under such a name
(``EI``, ``params["EI"]``).  The form compiler reads them when it traces the form and hands them to the
kernel as numbers; numpy reads them at every call.  :func:`number_sources` finds where a form (and the
user's functions it calls) reads them, :func:`read_numbers` reads them all again: when the values differ
from those of the trace, the model traces its forms again (the same machine code, the new numbers), so a
parameter changed between two runs, or between two evaluations, acts on both paths alike.

Not seen: a number held in an object's attribute (``self.EI``, ``params.EI``), or behind a call; such a
form takes the value of its trace on the compiled path until the model's terms change
(:meth:`skfiber.Model.replace_term`).

Examples
--------
>>> EI = 1e-3
>>> def bending(v, w):
...     return EI * v
>>> sources = number_sources([bending])
>>> before = read_numbers(sources)
>>> EI = 2e-3
>>> read_numbers(sources) == before
False
"""
from __future__ import annotations

import types
from typing import Callable, Iterable

import numpy as np

__all__ = ["number_sources", "read_numbers", "LIBRARIES", "MAX_ARRAY_SIZE"]

#: modules whose functions a form calls are not followed (their numbers are constants of the library)
LIBRARIES = frozenset({"skfiber", "skfem", "numpy", "scipy", "sympy", "numba", "math", "builtins"})
#: arrays up to this size are compared by value; a larger one by identity (reading it would cost each call)
MAX_ARRAY_SIZE = 10_000
#: how deep calls to the user's own functions are followed
MAX_DEPTH = 4
_EMPTY = object()  # an empty closure cell's value


def _numbers(value):
    """A comparable copy of ``value`` when it holds numbers (a number, an array of numbers, or a list, tuple or
    dict of them); None for anything else."""
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return (type(value).__name__, repr(value))  # (exact, and a nan equals itself)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return None
        if value.size > MAX_ARRAY_SIZE:
            return ("array", id(value), value.shape)
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, (list, tuple)):
        items = [_numbers(item) for item in value]
        return ("sequence", tuple(items)) if items and all(i is not None for i in items) else None
    if isinstance(value, dict):
        items = tuple((key, _numbers(item)) for key, item in value.items() if isinstance(key, (str, int)))
        kept = tuple(item for item in items if item[1] is not None)
        return ("dict", kept) if kept else None
    return None


def _names(code: types.CodeType) -> set[str]:
    """The global names a code object and the functions defined in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _followed(value) -> bool:
    """Whether a function a form calls is the user's (followed) rather than a library's."""
    if not isinstance(value, types.FunctionType):
        return False
    module = (value.__module__ or "").split(".")[0]
    return module not in LIBRARIES


def number_sources(functions: Iterable[Callable]) -> tuple:
    """Where ``functions`` (forms: plain functions, or scikit-fem forms holding one as ``.form``) read
    numbers through names: ``(holder, key)`` pairs, a module's globals with a name or a closure cell with
    None, for :func:`read_numbers`.

    Parameters
    ----------
    functions
        The forms, or None entries (skipped).

    Returns
    -------
    The sources, in a fixed order.
    """
    sources: list = []
    seen: set = set()

    def visit(function, depth: int) -> None:
        function = getattr(function, "form", function)
        if not isinstance(function, types.FunctionType) or id(function) in seen or depth > MAX_DEPTH:
            return
        seen.add(id(function))
        code = function.__code__
        for name in sorted(_names(code)):
            if name not in function.__globals__:
                continue
            value = function.__globals__[name]
            if _followed(value):
                visit(value, depth + 1)
            elif _numbers(value) is not None:
                sources.append((function.__globals__, name))
        for cell in function.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # (a cell not yet filled)
                continue
            if _followed(value):
                visit(value, depth + 1)
            elif _numbers(value) is not None:
                sources.append((cell, None))

    for function in functions:
        if function is not None:
            visit(function, 0)
    return tuple(sources)


def read_numbers(sources: tuple) -> tuple:
    """The values at ``sources`` (:func:`number_sources`) now, as one comparable tuple."""
    values = []
    for holder, key in sources:
        if key is None:
            try:
                value = holder.cell_contents
            except ValueError:
                value = _EMPTY
        else:
            value = holder.get(key, _EMPTY)
        values.append(None if value is _EMPTY else _numbers(value))
    return tuple(values)
