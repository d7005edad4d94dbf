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
library's function; an array of more than :data:`MAX_ARRAY_SIZE` entries, a list, tuple or dict of more than
:data:`MAX_ITEMS` items, or one nested :data:`MAX_DEPTH` deep, changed in place (they are compared by identity:
give a new one).  Such a form takes the value of its trace on the compiled path until the model's terms change
(:meth:`skfiber.Model.replace_term`).  A form that reads one entry of a dict or list reads, for this
comparison, the whole of it: an entry it does not use changed (a history appended to) traces it again.

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
#: lists, tuples and dicts up to this many items are compared by value (each evaluation reads them); a larger
#: one by identity
MAX_ITEMS = 1_000
#: how deep calls to the user's own functions, and containers in containers, are followed
MAX_DEPTH = 4
_EMPTY = object()  # an empty closure cell's value


def _numbers(value, depth: int = 0):
    """A comparable copy of ``value`` when it holds numbers (a number, an array of numbers, or a list, tuple or
    dict with numbers among its items); None for anything else.  Other items of a container are compared by
    identity, and so are arrays of more than :data:`MAX_ARRAY_SIZE` entries, containers of more than
    :data:`MAX_ITEMS` items and containers nested :data:`MAX_DEPTH` deep."""
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return value if value == value else ("nan", type(value).__name__)  # (a nan equals itself here)
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


def _globals_read(code: types.CodeType) -> tuple[set[str], set[tuple[str, str]]]:
    """(global names, (global, attribute) pairs) that a code object and the functions defined in it load: an
    attribute read straight from a global (``cfg.K``), not from any object (``w.x``)."""
    names, pairs = set(), set()
    previous = None
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(instruction.argval)
        elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and previous is not None \
                and previous.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            pairs.add((previous.argval, instruction.argval))
        previous = instruction
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = _globals_read(const)
            names |= inner[0]
            pairs |= inner[1]
    return names, pairs


def _library(value) -> bool:
    """Whether ``value`` (a function, class or module) belongs to a package of :data:`LIBRARIES`."""
    module = getattr(value, "__module__", None) or getattr(value, "__name__", None) or ""
    return module.split(".")[0] in LIBRARIES


def _callable_parts(value) -> tuple[list, list]:
    """(functions, fixed values) behind a user's callable: a plain function itself; a partial's function, with
    its arguments as fixed values (read again, as they may change in place); a bound method's, a staticmethod's
    or a classmethod's function; a callable object's ``__call__``."""
    if isinstance(value, types.FunctionType):
        return ([] if _library(value) else [value]), []
    if isinstance(value, functools.partial):
        functions, fixed = _callable_parts(value.func)
        return functions, [*fixed, *value.args, *value.keywords.values()]
    if isinstance(value, (types.MethodType, staticmethod, classmethod)):
        return _callable_parts(value.__func__)
    call = getattr(type(value), "__call__", None)
    if callable(value) and isinstance(call, types.FunctionType) and not _library(type(value)):
        return [call], []
    return [], []


class _Fixed:
    """A holder of one value that a source reads again (a partial's argument): ``holder.get(key, default)``."""

    def __init__(self, value):
        self.value = value

    def get(self, key, default=None):
        return self.value


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
        """Keep ``holder[key]`` (``value``) if it is numbers, a user's callable (followed) or module."""
        functions, fixed = _callable_parts(value)
        if functions or fixed or (isinstance(value, types.ModuleType) and not _library(value)):
            sources.append((holder, key))  # (rebinding the name to another function is a change too)
            for function in functions:
                visit(function, depth + 1)
            for part in fixed:
                source(_Fixed(part), "value", part, depth + 1)
        elif _numbers(value) is not None:
            sources.append((holder, key))

    def visit(function, depth: int) -> None:
        function = getattr(function, "form", function)
        if not isinstance(function, types.FunctionType):
            functions, fixed = _callable_parts(function)
            for part in functions:
                visit(part, depth)
            for part in fixed:
                source(_Fixed(part), "value", part, depth)
            return
        if id(function) in seen or depth > MAX_DEPTH:
            return
        seen.add(id(function))
        names, pairs = _globals_read(function.__code__)
        space = function.__globals__
        for name in sorted(names):
            if name in space:
                source(space, name, space[name], depth)
        for name, attribute in sorted(pairs):  # (an attribute of the user's module: cfg.K)
            module = space.get(name)
            if isinstance(module, types.ModuleType) and not _library(module) and attribute in vars(module):
                source(vars(module), attribute, vars(module)[attribute], depth)
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

    Parameters
    ----------
    forms
        The forms (None entries skipped).
    copied
        True for a copy (``copy.deepcopy``, ``pickle``): its first :meth:`changed` says True, since the copy's
        kernel was traced with values it does not know.
    """

    def __init__(self, forms: Iterable[Callable | None], copied: bool = False):
        self.forms = tuple(forms)
        self._copied = copied
        self._sources = None
        self._values = None

    def changed(self) -> bool:
        """Whether a value differs from the last read (False at the first call, which reads them; True for a
        copy's).  After a change the sources are found again (a name bound to another function reads others)."""
        if self._sources is not None and read_numbers(self._sources) == self._values:
            return False
        first = self._sources is None
        self._sources = number_sources(self.forms)
        self._values = read_numbers(self._sources)
        copied, self._copied = self._copied, False
        return copied or not first

    def __reduce__(self):
        return (FormNumbers, (self.forms, True))
