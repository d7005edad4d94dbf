"""The numbers a form reads through names: what a model compares to notice a changed parameter.

A form is a plain function, and its parameters are the numbers it closes over: a global of its module, a
variable of the function that made it, an entry of a list, tuple or dict held under such a name (``EI``,
``params["EI"]``), or an attribute read from such a name (``params.EI``, ``cfg.tendon.E``, a method's
``self.EI``). The form compiler reads them when it traces the form and hands them to the kernel as numbers;
numpy reads them at every call. :func:`number_sources` finds where a form reads them, following the user's own
functions it calls (plain functions, ``functools.partial``, bound methods and their ``self``, class methods
and their ``cls``, callable objects, and functions reached as attributes of the user's modules, classes and
objects), and :class:`FormNumbers` reads them all again: when a value differs from that of the trace (or a
name is bound to another function or object), the model traces its forms again (the same machine code, the new
numbers), so a parameter changed between two runs, or between two evaluations, acts on both paths alike.

Not seen: a number computed inside a library's function, held where reading it would run code (a property,
``__getattr__``, an object with ``__slots__``), or reached past an expression or another name
(``get_params().EI``, ``models[0].EI``, ``getattr(params, "EI")``, ``p = params`` then ``p.EI``, an attribute
of a partial's argument, of a function or of a metaclass); an array of more than :data:`MAX_ARRAY_SIZE`
entries, a list, tuple or dict of more than :data:`MAX_ITEMS` items, or one nested :data:`MAX_DEPTH` deep,
changed in place (they are compared by identity: give a new one). Such a form takes the value of its trace on
the compiled path until the model's terms change (:meth:`skfiber.Model.replace_term`). A form that reads one
entry of a dict or list reads, for this comparison, the whole of it: an entry it does not use changed (a
history appended to) traces it again.

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

from ..core.warn import warn

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


def _is(value, kinds) -> bool:
    """``isinstance`` by the value's type alone (``isinstance`` also reads a ``__class__`` that may run code)."""
    return issubclass(type(value), kinds)


def _class_attribute(cls: type, name: str):
    """``name`` as the first class of ``cls``'s method resolution order defines it, read from the classes'
    dicts (no metaclass ``__getattr__`` runs), or :data:`_EMPTY`."""
    for c in cls.__mro__:
        if name in vars(c):
            return vars(c)[name]
    return _EMPTY


class _Same:
    """A compared value that is an object's identity: equal only to the same object (kept alive, so that its
    address cannot go to another object while the comparison stands)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is _Same and other.value is self.value

    def __hash__(self):
        return id(self.value)


def _numbers(value, depth: int = 0):
    """A comparable copy of ``value`` when it holds numbers (a number, an array of numbers, or a list, tuple or
    dict with numbers among its items); None for anything else.  Other items of a container are compared by
    identity, and so are arrays of more than :data:`MAX_ARRAY_SIZE` entries, containers of more than
    :data:`MAX_ITEMS` items and containers nested :data:`MAX_DEPTH` deep."""
    if _is(value, (bool, int, float, complex, np.number, np.bool_)):
        return value if value == value else ("nan", type(value).__name__)  # (a nan equals itself here)
    if _is(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return None
        if value.size > MAX_ARRAY_SIZE:
            return ("array", _Same(value), value.shape)
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if _is(value, (list, tuple, dict)):
        base = dict if _is(value, dict) else list if _is(value, list) else tuple  # (not a subclass's methods)
        size = base.__len__(value)
        if depth >= MAX_DEPTH or size > MAX_ITEMS:
            return ("container", _Same(value), size)
        items, numbers = [], False
        for key, item in (dict.items(value) if base is dict else enumerate(base.__iter__(value))):
            copy = _numbers(item, depth + 1)
            numbers = numbers or copy is not None
            key = key if _is(key, (str, int, float, tuple)) else ("key", id(key))
            items.append((key, _Same(item) if copy is None else copy))
        return (type(value).__name__, tuple(items)) if numbers else None
    return None


def _names_read(code: types.CodeType) -> tuple[set[str], set[tuple[str, str, tuple[str, ...]]]]:
    """(global names, attribute chains) that a code object and the functions defined in it load.  A chain is
    (kind, name, attributes) for attributes read one after the other straight from a name: a global's
    (``cfg.K``, ``params.tendon.E``: kind "global"), a closure variable's ("free") or a local's ("fast", which
    only a method's ``self`` resolves) — not from any expression (``w.x`` is a chain of the local ``w``)."""
    names, chains = set(), set()
    root, attributes = None, []

    def close():
        if root is not None and attributes:
            chains.add((root[0], root[1], tuple(attributes)))

    for instruction in dis.get_instructions(code):
        opname = instruction.opname
        if opname in ("EXTENDED_ARG", "CACHE", "NOP"):  # (a long argument's prefix: not a load of its own)
            continue
        if opname in ("LOAD_ATTR", "LOAD_METHOD") and root is not None:
            attributes.append(instruction.argval)
            continue
        close()
        root, attributes = None, []
        name = instruction.argval
        name = name[-1] if isinstance(name, tuple) else name  # (LOAD_FAST_LOAD_FAST's second name is on top)
        if opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            root = ("global", name)
            names.add(name)
        elif opname in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
            root = ("free", name)
        elif "LOAD_FAST" in opname:  # (LOAD_FAST_CHECK, LOAD_FAST_BORROW, STORE_FAST_LOAD_FAST, … of newer Pythons)
            root = ("fast", name)
    close()
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = _names_read(const)
            names |= inner[0]
            chains |= {chain for chain in inner[1] if chain[0] != "fast"}  # (another function's locals)
    return names, chains


def _library(value) -> bool:
    """Whether ``value`` (a function, class or module) belongs to a package of :data:`LIBRARIES`; its module's
    name is read from the dicts and slots that hold it (a module's ``__getattr__`` does not run)."""
    if _is(value, types.ModuleType):
        name = vars(value).get("__name__", "")
    elif _is(value, type):
        name = type.__dict__["__module__"].__get__(value, type)
    elif _is(value, types.FunctionType):
        name = value.__module__
    else:  # (a builtin function or method: its C type's slot)
        name = getattr(value, "__module__", None) if _is(value, types.BuiltinFunctionType) else None
        name = name if name is not None else type.__dict__["__module__"].__get__(type(value), type)
    return str(name or "").split(".")[0] in LIBRARIES


def _callable_parts(value) -> tuple[list, list]:
    """(functions, fixed values) behind a user's callable: a plain function itself; a partial's function, with
    its arguments as fixed values (read again, as they may change in place); a bound method's, a staticmethod's
    or a classmethod's function; a callable object's ``__call__``.  A function of a method comes as
    (function, the object its ``self`` is) — an object's attributes are read through ``self`` too — and any
    other as (function, None)."""
    if _is(value, types.FunctionType):
        return ([] if _library(value) else [(value, None)]), []
    if _is(value, functools.partial):
        functions, fixed = _callable_parts(value.func)
        return functions, [*fixed, *value.args, *value.keywords.values()]
    if _is(value, types.MethodType):
        functions, fixed = _callable_parts(value.__func__)
        return [(function, value.__self__) for function, _ in functions], fixed
    if _is(value, (staticmethod, classmethod)):
        return _callable_parts(value.__func__)
    if _is(value, type) or _is(value, types.ModuleType):
        return [], []
    call = _class_attribute(type(value), "__call__")
    if _is(call, types.FunctionType) and not _library(type(value)):
        return [(call, value)], []
    return [], []


def _instance_dict(owner):
    """The instance dict of ``owner`` through its class's own ``__dict__`` slot (no ``__getattr__``, no property
    called ``__dict__``), or None (``__slots__`` without one)."""
    slot = _class_attribute(type(owner), "__dict__")
    if not _is(slot, (types.GetSetDescriptorType, types.MemberDescriptorType)):
        return None
    instance = slot.__get__(owner, type(owner))
    return instance if type(instance) is dict else None


class _Attributes:
    """A holder of an object's own attributes, read from its instance dict at each read (the object may be given
    another dict): ``holder.get(name, default)``, ``holder[name]``."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def get(self, key, default=None):
        instance = _instance_dict(self.owner)  # (looked up again: the object may have another class now)
        return default if instance is None else instance.get(key, default)

    def __getitem__(self, key):
        return _instance_dict(self.owner)[key]


def _attribute_holders(owner, attribute: str) -> list:
    """The mappings that hold ``owner.attribute`` without running code (a property, ``__getattr__``): a user's
    module's namespace; for a user's object or class, the ``__dict__`` of the first of its classes that
    defines it, after the instance dict and the dicts of the classes before it in the method resolution order
    (where setting the attribute would hide that one; absent now).  The last holder holds the value; an empty
    list for anything else (a library's object, ``__slots__``, a computed attribute, an attribute not there)."""
    if issubclass(type(owner), types.ModuleType):
        space = vars(owner)
        return [space] if not _library(owner) and attribute in space else []
    cls = owner if _is(owner, type) else type(owner)
    if _library(cls):
        return []
    instance = None if _is(owner, type) else _instance_dict(owner)
    if instance is None and not _is(owner, type) and cls.__dictoffset__ != 0:
        return []  # (an instance dict that cannot be read without running code: a __dict__ property)
    own = None if instance is None else _Attributes(owner)
    before = [] if own is None else [own]
    for defining in cls.__mro__:
        if attribute in vars(defining):
            held = vars(defining)[attribute]
            if _class_attribute(type(held), "__set__") is not _EMPTY or _library(defining):
                return []  # (a property or another data descriptor takes precedence over the instance dict)
            if own is not None and attribute in instance:
                return [own]
            if (_class_attribute(type(held), "__get__") is not _EMPTY
                    and not _is(held, (types.FunctionType, staticmethod, classmethod))):
                return []  # (computed when read: cached_property, a library's descriptor)
            return [*before, vars(defining)]
        before.append(vars(defining))
    return [own] if own is not None and attribute in instance else []


class _Fixed:
    """A holder of one value that a source reads again (a partial's argument): ``holder.get(key, default)``."""

    def __init__(self, value):
        self.value = value

    def get(self, key, default=None):
        return self.value


def number_sources(functions: Iterable[Callable], labels: list | None = None) -> tuple:
    """Where ``functions`` (forms: plain functions, or scikit-fem forms holding one as ``.form``) read numbers
    and the user's functions through names: ``(holder, key)`` pairs, a module's globals with a name or a closure
    cell with None, for :func:`read_numbers`.

    Parameters
    ----------
    functions
        The forms, or None entries (skipped).
    labels
        A list to which the sources' names are appended, in the same order (``"EI"``, ``"params.tendon.E"``,
        ``"self.EI"``, ``"a partial's argument"``); none kept when None.

    Returns
    -------
    The sources, in a fixed order.
    """
    sources: list = []
    names: list = []
    seen: set = set()

    def keep(holder, key, label: str) -> None:
        sources.append((holder, key))
        names.append(label)

    def source(holder, key, value, depth: int, label: str) -> bool:
        """Keep ``holder[key]`` (``value``) if it is numbers, a user's callable (followed) or module: whether it
        was kept."""
        functions, fixed = _callable_parts(value)
        if functions or fixed or (_is(value, types.ModuleType) and not _library(value)):
            keep(holder, key, label)  # (rebinding the name to another function is a change too)
            for function, bound in functions:
                visit(function, depth + 1, bound)
            for part in fixed:
                source(_Fixed(part), "value", part, depth + 1, f"an argument of the partial {label}")
            return True
        if _numbers(value) is not None:
            keep(holder, key, label)
            return True
        return False

    def follow(value, attributes: tuple[str, ...], depth: int, label: str, root=None) -> None:
        """The sources along ``value.a.b…``: each attribute's holders (:func:`_attribute_holders`), while there
        are any; the name ``root`` (holder, key) and each object in between are compared by identity
        (rebinding one is a change)."""
        for attribute in attributes:
            holders = _attribute_holders(value, attribute)
            if not holders:
                return
            if root is not None:
                keep(*root, label)
                root = None
            label = f"{label}.{attribute}"
            for hiding in holders[:-1]:
                keep(hiding, attribute, label)  # (absent now; set there, it would hide the value below)
            holder, owner = holders[-1], value
            value = holder[attribute]
            shown = value
            if _is(holder, types.MappingProxyType):  # (read from a class: a method of it)
                if _is(value, types.FunctionType) and not _is(owner, type):
                    shown = types.MethodType(value, owner)
                elif _is(value, classmethod):
                    shown = types.MethodType(value.__func__, owner if _is(owner, type) else type(owner))
            if not source(holder, attribute, shown, depth, label):
                keep(holder, attribute, label)

    def visit(function, depth: int, bound=None) -> None:
        function = getattr(function, "form", function)
        if not isinstance(function, types.FunctionType):
            functions, fixed = _callable_parts(function)
            for part, part_bound in functions:
                visit(part, depth, part_bound)
            for part in fixed:
                source(_Fixed(part), "value", part, depth, "a partial's argument")
            return
        if (id(function), id(bound)) in seen or depth > MAX_DEPTH:
            return
        seen.add((id(function), id(bound)))
        code = function.__code__
        read, chains = _names_read(code)
        space = function.__globals__
        for name in sorted(read):
            if name in space:
                source(space, name, space[name], depth, name)
        cells = dict(zip(code.co_freevars, function.__closure__ or ()))
        for name, cell in cells.items():
            try:
                value = cell.cell_contents
            except ValueError:  # (a cell not yet filled)
                continue
            source(cell, None, value, depth, name)
        own_self = code.co_varnames[0] if bound is not None and code.co_argcount else None
        for kind, name, attributes in sorted(chains):  # (cfg.K, params.tendon.E, self.EI)
            if kind == "global" and name in space:
                follow(space[name], attributes, depth, name, (space, name))
            elif kind == "free" and name in cells:
                try:
                    value = cells[name].cell_contents
                except ValueError:
                    continue
                follow(value, attributes, depth, name, (cells[name], None))
            elif kind in ("fast", "free") and name == own_self:  # (self, also as a cell of an inner function)
                follow(bound, attributes, depth, name)

    for function in functions:
        if function is not None:
            visit(function, 0)
    if labels is not None:
        labels.extend(names)
    return tuple(sources)


def _value(value):
    """What :func:`read_numbers` compares of one source's value: its numbers, or a callable's or a module's
    identity."""
    copy = _numbers(value)
    return copy if copy is not None else _Same(value)


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

    Attributes
    ----------
    changed_names : tuple of str
        What differed at the last change: names of globals, closure variables, attribute chains
        (``"params.tendon.E"``, ``"self.EI"``) or partials' arguments (empty before any change).
    """

    def __init__(self, forms: Iterable[Callable | None], copied: bool = False):
        self.forms = tuple(forms)
        self._copied = copied
        self._sources = None
        self._labels: list = []
        self._values = None
        self._failed = False  # (reading the numbers failed: see changed)
        self.changed_names: tuple[str, ...] = ()

    def changed(self) -> bool:
        """Whether a value differs from the last read (False at the first call, which reads them; True for a
        copy's).  After a change the sources are found again (a name bound to another function reads others).
        Should reading them fail (an object this module did not foresee), that is warned once, True is
        returned (the forms are traced once more with the values of now) and the numbers are taken as unchanged
        from then on."""
        if self._failed:
            return False
        try:
            values = None if self._sources is None else read_numbers(self._sources)
            if values is not None and values == self._values:
                return False
            first = self._sources is None
            if not first:
                self.changed_names = tuple(dict.fromkeys(
                    label for label, a, b in zip(self._labels, values, self._values) if a != b))
            labels: list = []
            sources = number_sources(self.forms, labels)
            self._values = read_numbers(sources)
            self._sources, self._labels = sources, labels
        except Exception as error:  # (not the user's mistake: the forms still run, traced once more now)
            self._failed = True
            warn(f"the numbers the forms read could not be checked ({type(error).__name__}: {error}); they are "
                 "traced once more now, and a parameter changed after that may not act on the compiled path: "
                 "give the form again (Model.replace_term) after changing one", RuntimeWarning)
            return True
        copied, self._copied = self._copied, False
        return copied or not first

    def __reduce__(self):
        return (FormNumbers, (self.forms, True))
