"""The numbers a form reads through names: what a model compares to notice a changed parameter.

A form is a plain function, and its parameters are the numbers it closes over: a global of its module, a
variable of the function that made it, or an entry of a list, tuple or dict held under such a name
(``EI``, ``params["EI"]``).  The form compiler reads them when it traces the form and hands them to the
kernel as numbers; numpy reads them at every call.  :func:`number_sources` finds where a form reads them,
following the user's own functions it calls (plain functions, ``functools.partial``, bound methods, and
functions reached as attributes of the user's modules), and :class:`FormNumbers` reads them all again: when
a value differs from that of the trace (or a name is bound to another function), the model traces its forms
again (the same machine code, the new numbers), so a parameter changed between two runs, or between two
evaluations, acts on both paths alike.

Not seen: a number held in an object's attribute (``self.EI``, ``params.EI``), or computed inside a
library's function; an array of more than :data:`MAX_ARRAY_SIZE` entries or a list or dict of more than
:data:`MAX_ITEMS` items changed in place (they are compared by identity: give a new one).  Such a form takes
the value of its trace on the compiled path until the model's terms change
(:meth:`skfiber.Model.replace_term`).

Examples
--------
>>> EI = 1e-3
>>> def bending(v, w):
...     return EI * v
>>> numbers = FormNumbers([bending])
>>> numbers.changed()
False
>>> EI = 2e-3
>>> numbers.changed(), numbers.changed()
(True, False)
"""
from __future__ import annotations

import dis
import functools
import types
from typing import Callable, Iterable

import numpy as np

__all__ = ["FormNumbers", "number_sources", "read_numbers", "LIBRARIES", "MAX_ARRAY_SIZE", "MAX_ITEMS"]

#: the functions of these packages that a form calls are not followed (their numbers are the library's)
LIBRARIES = frozenset({"skfiber", "skfem", "numpy", "scipy", "sympy", "numba", "math", "builtins"})
#: arrays up to this size are compared by value; a larger one by identity (reading it would cost each call)
MAX_ARRAY_SIZE = 10_000
#: lists, tuples and dicts up to this many items are compared by value; a larger one by identity
MAX_ITEMS = 10_000
#: how deep calls to the user's own functions, and containers in containers, are followed
MAX_DEPTH = 4
_EMPTY = object()  # an empty closure cell's value


def _numbers(value, depth: int = 0):
    """A comparable copy of ``value`` when it holds numbers (a number, an array of numbers, or a list, tuple or
    dict with numbers among its items); None for anything else.  Other items of a container, large arrays and
    containers, and containers nested too deep are compared by identity."""
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return (type(value).__name__, repr(value))  # (exact, and a nan equals itself)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return None
        if value.size > MAX_ARRAY_SIZE:
            return ("array", id(value), value.shape)
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, (list, tuple, dict)):
        if depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
            return ("container", id(value), len(value))
        items, numbers = [], False
        for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
            copy = _numbers(item, depth + 1)
            numbers = numbers or copy is not None
            key = key if isinstance(key, (str, int, float, tuple)) else ("key", id(key))
            items.append((key, ("object", id(item)) if copy is None else copy))
        return (type(value).__name__, tuple(items)) if numbers else None
    return None


def _globals_read(code: types.CodeType) -> tuple[set[str], set[str]]:
    """(global names, attribute names) that a code object and the functions defined in it load."""
    names, attributes = set(), set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(instruction.argval)
        elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            attributes.add(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = _globals_read(const)
            names |= inner[0]
            attributes |= inner[1]
    return names, attributes


def _library(value) -> bool:
    module = getattr(value, "__module__", None) or getattr(value, "__name__", None) or ""
    return module.split(".")[0] in LIBRARIES


def _callable_parts(value) -> list:
    """The functions and numbers behind a user's callable: a plain function itself; a partial's function and
    arguments; a bound method's function; a callable object's ``__call__``."""
    if isinstance(value, types.FunctionType):
        return [] if _library(value) else [value]
    if isinstance(value, functools.partial):
        return [*_callable_parts(value.func), *value.args, *value.keywords.values()]
    if isinstance(value, types.MethodType):
        return _callable_parts(value.__func__)
    call = getattr(type(value), "__call__", None)
    if callable(value) and isinstance(call, types.FunctionType) and not _library(type(value)):
        return [call]
    return []


def number_sources(functions: Iterable[Callable]) -> tuple:
    """Where ``functions`` (forms: plain functions, or scikit-fem forms holding one as ``.form``) read numbers
    and the user's functions through names: ``(holder, key)`` pairs, a module's globals with a name or a closure
    cell with None, for :func:`read_numbers`.

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

    def source(holder, key, value, depth: int) -> None:
        """Keep ``holder[key]`` (``value``) if it is numbers or a user's callable (followed)."""
        parts = _callable_parts(value)
        if parts or (isinstance(value, types.ModuleType) and not _library(value)):
            sources.append((holder, key))  # (rebinding the name to another function is a change too)
            for part in parts:
                visit(part, depth + 1)
        elif _numbers(value) is not None:
            sources.append((holder, key))

    def visit(function, depth: int) -> None:
        function = getattr(function, "form", function)
        if not isinstance(function, types.FunctionType):
            if _numbers(function) is not None:  # (a partial's number argument: fixed, nothing to read)
                return
            for part in _callable_parts(function):
                visit(part, depth)
            return
        if id(function) in seen or depth > MAX_DEPTH:
            return
        seen.add(id(function))
        names, attributes = _globals_read(function.__code__)
        space = function.__globals__
        for name in sorted(names):
            if name not in space:
                continue
            value = space[name]
            source(space, name, value, depth)
            if isinstance(value, types.ModuleType) and not _library(value):  # (the user's module: its attributes)
                for attribute in sorted(attributes):
                    if attribute in vars(value):
                        source(vars(value), attribute, vars(value)[attribute], depth)
        for cell in function.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # (a cell not yet filled)
                continue
            source(cell, None, value, depth)

    for function in functions:
        if function is not None:
            visit(function, 0)
    return tuple(sources)


def _value(value):
    """What :func:`read_numbers` compares of one source's value: its numbers, or a callable's or a module's
    identity."""
    copy = _numbers(value)
    return copy if copy is not None else ("object", id(value))


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
        values.append(None if value is _EMPTY else _value(value))
    return tuple(values)


class FormNumbers:
    """The numbers a model's forms read (:func:`number_sources`) and their values when last read.

    A copy (``copy.deepcopy``, ``pickle``) starts unread: it finds its sources again from its forms at its
    first :meth:`changed`.

    Parameters
    ----------
    forms
        The forms (None entries skipped).
    """

    def __init__(self, forms: Iterable[Callable | None]):
        self.forms = tuple(forms)
        self._sources = None
        self._values = None

    def changed(self) -> bool:
        """Whether a value differs from the last read (False at the first call, which reads them)."""
        if self._sources is None:
            self._sources = number_sources(self.forms)
            self._values = read_numbers(self._sources)
            return False
        now = read_numbers(self._sources)
        if now == self._values:
            return False
        self._values = now
        return True

    def __reduce__(self):
        return (FormNumbers, (self.forms,))
