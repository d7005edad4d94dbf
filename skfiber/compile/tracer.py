"""Evaluate scikit-fem forms on symbolic jets (the tracing half of the form compiler).

A residual form ``(v, w)`` of skfiber is, at one quadrature point, a function
of the *jets* of the fields it reads — value, first and second θ-derivatives
of the centerline x, its rate ẋ, its acceleration ẍ and the reference X —,
of scalar coefficients (|A1|, π r0², ρ0, θ, t, γM, α) and of the jets of the
test function ξ, in which it is linear.  :func:`trace` calls the *unchanged*
form once with those jets made of :class:`Traced` scalars (sympy expressions
that numpy's object loops and :mod:`skfem.helpers` handle like numbers) and
returns the sympy expression of its integrand.

What cannot be traced raises :class:`Untraceable` naming the construct:
a comparison or a branch on a value (``np.maximum``, ``np.where``, ``if``),
a conversion to ``float``, a numpy function without a symbolic counterpart,
a coefficient the tracer does not provide.

Examples
--------
>>> from skfem.helpers import dot
>>> from skfiber.compile.tracer import trace, traced_coefficients
>>> w = traced_coefficients()
>>> expr = trace(lambda v, w: dot(w.x, v) * w.J, w)
>>> sorted(str(s) for s in expr.free_symbols)[:3]
['J', 'x_0', 'x_1']
"""
from __future__ import annotations

import math
import numbers
import os
import sys

import numpy as np
import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair
from skfem.assembly.form.form import FormExtraParams
from skfem.element import DiscreteField

from ..assembly import (InvalidForm, missing_coefficient, not_linear, not_linear_degree, not_one_number,
                        returns_no_number, unknown_coefficient)
from ..core.warn import PACKAGE_FOLDER

__all__ = ["absolute", "Untraceable", "InvalidForm", "Traced", "JET_FIELDS", "SCALARS", "jet_symbols", "test_symbols",
           "trial_symbols", "symbolic_field", "traced_coefficients", "trace", "trace_tangent", "N_JETS"]

#: jets of a 3-vector on a line: value (3), first (3) and second (3) θ-derivatives; jet j is order j // 3 of
#: component j % 3 (the order of :class:`skfiber.assembly.BatchedAssembler`)
N_JETS = 9
#: the fields whose jets a form may read, by their name in ``w``
JET_FIELDS = ("x", "xdot", "xddot", "X")
#: the scalar coefficients per quadrature point, by their name in ``w``
SCALARS = ("J", "area", "rho", "theta", "t", "gamma_m", "alpha")


class Untraceable(Exception):
    """A form or law that cannot be evaluated symbolically; ``construct`` says what stopped it."""

    def __init__(self, construct: str):
        super().__init__(construct)
        self.construct = construct


def _as_expr(value):
    """A sympy expression for an operand, or NotImplemented (arrays: numpy's object loops take over)."""
    if isinstance(value, Traced):
        return value.expr
    if isinstance(value, (bool, np.bool_)):
        raise Untraceable("a boolean used as a number")
    if isinstance(value, numbers.Integral):
        return sp.Integer(int(value))
    if isinstance(value, numbers.Real):
        if math.isnan(float(value)):  # (wrong whatever runs the form: its residual would be nan)
            raise InvalidForm(f"the form holds a nan constant ({value!r}): a parameter of it is nan; give a number")
        if not math.isfinite(float(value)):
            raise Untraceable(f"a non-finite constant ({value!r})")
        return sp.Float(float(value))
    if isinstance(value, sp.Basic):
        return value
    return NotImplemented


def _unary(function, name):
    def method(self):
        return Traced(function(self.expr))
    method.__name__ = name
    return method


class Traced:
    """A scalar sympy expression that behaves like a float under numpy's object loops.

    Arithmetic builds the expression; ``np.sqrt``, ``np.exp``, … on object
    arrays call the methods of the same name.  Comparisons, ``bool`` and
    ``float`` raise :class:`Untraceable`: the value is not known.
    """

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = sp.sympify(expr)

    def _binary(self, other, op):
        o = _as_expr(other)
        if o is NotImplemented:
            return NotImplemented
        return Traced(op(self.expr, o))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __truediv__(self, other):
        return self._binary(other, lambda a, b: a / b)

    def __rtruediv__(self, other):
        return self._binary(other, lambda a, b: b / a)

    def __pow__(self, other):
        return self._binary(other, lambda a, b: a ** b)

    def __rpow__(self, other):
        return self._binary(other, lambda a, b: b ** a)

    def __neg__(self):
        return Traced(-self.expr)

    def __pos__(self):
        return self

    def __abs__(self):
        return Traced(absolute(self.expr))

    def _value_needed(self, *_):
        raise Untraceable(BRANCH)

    __bool__ = _value_needed

    def _compared(self, other, relation):
        o = _as_expr(other)
        if o is NotImplemented:
            return NotImplemented
        return TracedCondition(relation(self.expr, o))

    def __lt__(self, other):
        return self._compared(other, sp.Lt)

    def __le__(self, other):
        return self._compared(other, sp.Le)

    def __gt__(self, other):
        return self._compared(other, sp.Gt)

    def __ge__(self, other):
        return self._compared(other, sp.Ge)

    def __eq__(self, other):
        self._value_needed()

    __ne__ = __eq__
    __hash__ = object.__hash__

    def clip(self, a_min, a_max, out=None, **kwargs):
        """``np.clip`` of a traced value: Max(a_min, Min(x, a_max))."""
        if out is not None or kwargs:
            raise Untraceable("np.clip with out= or other options")
        return _clip_traced(self, _bound(a_min), _bound(a_max))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """np.maximum, np.minimum (and fmax, fmin), np.abs, np.sign and np.clip of traced values as sympy's Max,
        Min, Piecewise; every other ufunc as numpy's object loop runs it (the methods and operators of this
        class)."""
        if method == "__call__" and not kwargs and ufunc in _TRACED_UFUNCS:
            return _elementwise(_TRACED_UFUNCS[ufunc], inputs)
        if method == "__call__" and not kwargs and ufunc.__name__ == "clip" and len(inputs) == 3:
            return _clip_traced(inputs[0], _bound(inputs[1]), _bound(inputs[2]))
        if method == "__call__" and not kwargs and ufunc in _RELATIONS and len(inputs) == 2 \
                and not any(isinstance(x, np.ndarray) and x.ndim for x in inputs):
            return TracedCondition(_RELATIONS[ufunc](*map(_operand, inputs)))
        out = getattr(ufunc, method)(*(np.asarray(x, dtype=object) if isinstance(x, (Traced, TracedCondition))
                                       else x for x in inputs), **kwargs)
        return out.item() if isinstance(out, np.ndarray) and out.ndim == 0 else out

    def __float__(self):
        raise Untraceable("a conversion to float (float(), math.*, np.float64(), …)")

    __int__ = __index__ = __complex__ = __float__

    # numpy's object loops call these for np.sqrt, np.exp, … on object arrays
    sqrt = _unary(sp.sqrt, "sqrt")
    exp = _unary(sp.exp, "exp")
    log = _unary(sp.log, "log")
    sin = _unary(sp.sin, "sin")
    cos = _unary(sp.cos, "cos")
    tan = _unary(sp.tan, "tan")
    arcsin = _unary(sp.asin, "arcsin")
    arccos = _unary(sp.acos, "arccos")
    arctan = _unary(sp.atan, "arctan")
    sinh = _unary(sp.sinh, "sinh")
    cosh = _unary(sp.cosh, "cosh")
    tanh = _unary(sp.tanh, "tanh")
    arcsinh = _unary(sp.asinh, "arcsinh")
    arccosh = _unary(sp.acosh, "arccosh")
    arctanh = _unary(sp.atanh, "arctanh")
    log1p = _unary(lambda e: sp.log(1 + e), "log1p")
    expm1 = _unary(lambda e: sp.exp(e) - 1, "expm1")
    cbrt = _unary(lambda e: _real_cbrt(e), "cbrt")

    def conjugate(self):  # real quantities
        return self

    @property
    def real(self):  # (a form written for the numpy path's complex step reads a.real in its conditions)
        return self

    def __repr__(self):
        return f"Traced({self.expr})"


#: the message of a branch the tracer cannot follow
BRANCH = ("a branch on a value (`if`, `and`, `or`, `==`, a comparison inside np.maximum of arrays, …; np.maximum, "
          "np.minimum, np.abs, np.clip and np.where of numbers are traced)")


class TracedCondition:
    """A comparison of traced values.  Its truth is not known (``if``, ``bool``: :class:`Untraceable`), but
    ``np.where`` takes it (a sympy Piecewise), ``&``, ``|`` and ``~`` combine it, and arithmetic reads it as 1
    or 0 (``(w.t > 0.5) * f``)."""

    __slots__ = ("condition",)

    def __init__(self, condition):
        self.condition = condition

    def __bool__(self):
        raise Untraceable(BRANCH)

    def __eq__(self, other):
        raise Untraceable(BRANCH)

    __ne__ = __eq__
    __hash__ = object.__hash__

    def as_number(self) -> Traced:
        return Traced(sp.Piecewise((sp.S.One, self.condition), (sp.S.Zero, True)))

    def _combined(self, other, combine):
        if not isinstance(other, TracedCondition):
            return NotImplemented
        return TracedCondition(combine(self.condition, other.condition))

    def __and__(self, other):
        return self._combined(other, sp.And)

    def __or__(self, other):
        return self._combined(other, sp.Or)

    def __invert__(self):
        return TracedCondition(sp.Not(self.condition))

    def __mul__(self, other):
        return self.as_number() * other

    def __rmul__(self, other):
        return other * self.as_number()

    def __add__(self, other):
        return self.as_number() + other

    def __radd__(self, other):
        return other + self.as_number()

    def __sub__(self, other):
        return self.as_number() - other

    def __rsub__(self, other):
        return other - self.as_number()

    def __truediv__(self, other):
        return self.as_number() / other

    def __pow__(self, other):
        return self.as_number() ** other

    def __neg__(self):
        return -self.as_number()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.as_number() if isinstance(x, TracedCondition) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and len(args) == 3 and not kwargs:
            condition, a, b = args
            a, b = (x.as_number() if isinstance(x, TracedCondition) else x for x in (a, b))
            return _elementwise(lambda c, x, y: sp.Piecewise((x, c), (y, True)), (condition, a, b))
        return NotImplemented

    def __repr__(self):
        return f"TracedCondition({self.condition})"


def _operand(value):
    """A sympy operand of a traced branch: a traced value's or condition's expression, or a number."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, TracedCondition):
        return value.condition
    if isinstance(value, (bool, np.bool_)):
        return sp.true if value else sp.false
    expr = _as_expr(value)
    if expr is NotImplemented:
        raise Untraceable(f"a {type(value).__name__} inside a traced np.maximum, np.minimum or np.where")
    return expr


def _elementwise(function, inputs):
    """``function`` of the sympy operands of ``inputs`` (traced values, conditions, numbers, or object arrays of
    them, broadcast), as traced values."""
    apply = np.frompyfunc(lambda *args: Traced(function(*map(_operand, args))), len(inputs), 1)
    out = apply(*(x if isinstance(x, np.ndarray) else np.asarray(x, dtype=object) for x in inputs))  # (no dispatch)
    return out.item() if isinstance(out, np.ndarray) and out.ndim == 0 else out


def absolute(e: sp.Expr) -> sp.Expr:
    """|e| as a Piecewise: its derivative is ±e′, the positive side's at e = 0 (sympy's Abs of an expression it
    cannot prove real, a square root or a logarithm, differentiates through re and im and divides by |e|: nan
    where e = 0).  ``expression.replace(sympy.Abs, absolute)`` rewrites every |·| of an expression.

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x", real=True)
    >>> sp.diff(absolute(sp.sqrt(x) - 1), x).subs(x, 1)
    1/2
    """
    return sp.Piecewise((-e, e < 0), (e, True))


def _clipped(x, lo, hi):
    """numpy's clip, min(max(x, lo), hi), a bound None left out (:func:`_bound`)."""
    if lo is not None:
        x = sp.Max(x, lo)
    if hi is not None:
        x = sp.Min(x, hi)
    return x


def _bound(value):
    """A bound of np.clip: None for None or ±inf (no bound), else itself."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isinf(float(value)):
        return None
    return value


def _clip_traced(x, lo, hi):
    """np.clip of traced values (a bound None: none)."""
    def clip(value, *given):
        bounds = iter(given)
        return _clipped(value, None if lo is None else next(bounds), None if hi is None else next(bounds))
    return _elementwise(clip, (x,) + tuple(b for b in (lo, hi) if b is not None))


def _real_cbrt(e: sp.Expr) -> sp.Expr:
    """np.cbrt, the real cube root (sympy's cbrt is the principal root, complex for e < 0)."""
    third = sp.Rational(1, 3)
    return sp.Piecewise((-(-e) ** third, e < 0), (e ** third, True))


def _sign(e: sp.Expr) -> sp.Expr:
    """np.sign as a Piecewise of −1, 0 and 1: its derivative is 0 (sympy's sign would give a DiracDelta)."""
    return sp.Piecewise((-1, e < 0), (1, e > 0), (0, True))


_TRACED_UFUNCS = {np.maximum: lambda a, b: sp.Max(a, b), np.fmax: lambda a, b: sp.Max(a, b),
                  np.minimum: lambda a, b: sp.Min(a, b), np.fmin: lambda a, b: sp.Min(a, b),
                  np.absolute: absolute, np.sign: _sign}
_RELATIONS = {np.less: sp.Lt, np.less_equal: sp.Le, np.greater: sp.Gt, np.greater_equal: sp.Ge}


def jet_symbols(field: str) -> list[sp.Symbol]:
    """The 9 jet symbols of a field of :data:`JET_FIELDS` (``x_0`` … ``x_8``)."""
    return [sp.Symbol(f"{field}_{j}", real=True) for j in range(N_JETS)]


def test_symbols() -> list[sp.Symbol]:
    """The 9 jet symbols of the test function ξ."""
    return jet_symbols("xi")


def symbolic_field(symbols) -> DiscreteField:
    """A vector field on a line made of 9 jet symbols: value (3,), grad (3, 1), hess (3, 1, 1)."""
    traced = np.array([Traced(s) for s in symbols], dtype=object)
    return DiscreteField(traced[0:3], grad=traced[3:6].reshape(3, 1), hess=traced[6:9].reshape(3, 1, 1))


def traced_coefficients(extra: dict | None = None) -> FormExtraParams:
    """``w`` made of symbols: the jet fields of :data:`JET_FIELDS` and the scalars of :data:`SCALARS`,
    plus ``extra`` (name → value)."""
    w = FormExtraParams({name: symbolic_field(jet_symbols(name)) for name in JET_FIELDS})
    for name in SCALARS:
        w[name] = Traced(sp.Symbol(name, real=True))
    w.update(extra or {})
    return w


def trial_symbols() -> list[sp.Symbol]:
    """The 9 jet symbols of the trial function (the direction of a tangent form)."""
    return jet_symbols("du")


def trace_tangent(form, w: FormExtraParams) -> sp.Expr:
    """The integrand of a tangent form ``(u, v, w)`` at one point, bilinear in :func:`trial_symbols` and
    :func:`test_symbols` (``w`` may hold the symbols ``c_v`` and ``c_a`` of the time scheme).

    Raises
    ------
    Untraceable, InvalidForm
        As :func:`trace` (InvalidForm also for a part without the trial function).
    """
    du = symbolic_field(trial_symbols())
    return trace(lambda v, w_: (getattr(form, "form", None) or form)(du, v, w_), w, zero_without=trial_symbols())


def trace(form, w: FormExtraParams, *, zero_without=()) -> sp.Expr:
    """The integrand of a residual form ``(v, w)`` at one point, as a sympy expression in the symbols of
    ``w`` and of :func:`test_symbols`.

    Raises
    ------
    Untraceable
        With the construct that stopped the evaluation.
    InvalidForm
        When the form does not give one number per point, or has a part without the test function.
    """
    fn = getattr(form, "form", None) or form
    v = symbolic_field(test_symbols())
    try:
        with np.errstate(all="ignore"):
            out = fn(v, w)
    except InvalidForm:
        raise
    except Untraceable as error:
        raise Untraceable(error.construct + _form_line(error)) from None
    except KeyError as error:
        raise Untraceable(f"the coefficient w.{error.args[0]} (the compiled path provides "
                          f"{', '.join(sorted(w))}){_form_line(error)}") from error
    except AttributeError as error:
        missing = missing_coefficient(error)
        if missing is not None:
            raise InvalidForm(unknown_coefficient(missing)) from None
        raise Untraceable(f"{error}{_form_line(error)}") from error
    except TypeError as error:
        raise Untraceable(f"a numpy function without a symbolic counterpart ({error}){_form_line(error)}") from error
    except Exception as error:
        raise Untraceable(f"{type(error).__name__}: {error}{_form_line(error)}") from error
    value = np.asarray(out, dtype=object)
    if value.size != 1:
        raise InvalidForm(not_one_number(value.shape))
    value = value.reshape(()).item()
    if value is None or isinstance(value, (str, bytes)):
        raise InvalidForm(returns_no_number(value))
    expr = _as_expr(value)
    if expr is NotImplemented:
        raise Untraceable(f"the form returns a {type(value).__name__}, not a number")
    kind = "tangent" if zero_without else "residual"
    for symbols, what in ((test_symbols(), "test function"), (list(zero_without), "trial function")):
        part = expr.xreplace({s: 0 for s in symbols}) if symbols else sp.S.Zero
        if not (part == 0 or part.is_zero):  # (a float 0.0 is a sympy Float, not equal to the integer 0)
            raise InvalidForm(not_linear(kind, what))
        if symbols and not _homogeneous(expr, symbols):
            raise InvalidForm(not_linear_degree(kind, what))
    return expr


def _form_line(error: BaseException) -> str:
    """`` at FILE:LINE``: the innermost line of ``error``'s traceback in the user's code (not in skfiber, the
    standard library or an installed package), where the form did what stopped the tracer; or ''."""
    libraries = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
                      | {os.path.dirname(os.path.abspath(np.__file__)), PACKAGE_FOLDER.rstrip(os.sep)})
    found = ""
    tb = error.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not name.startswith(libraries) and "site-packages" not in name and not name.startswith("<"):
            found = f" at {os.path.basename(name)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def _homogeneous(expr: sp.Expr, symbols) -> bool:
    """Whether ``expr`` is of degree 1 in ``symbols`` (it has no part without them, checked before): f(2s) = 2 f(s)
    and f(−s) = −f(s) at two points of the other symbols' values in [0.5, 1.5] (a part of degree 2 or more, or
    one under a nonlinear function such as max(ξ·a, 0), breaks it at almost every point; round-off is allowed
    for), for ``expr`` and for each of its branch variants (:func:`_branch_variants`: a part of degree 2 in a
    branch that the sampled values do not take, such as (t > 2) ξ·ξ, shows there)."""
    return all(_homogeneous_at_samples(e, symbols) for e in [expr, *_branch_variants(expr)])


def _branch_variants(expr: sp.Expr) -> list[sp.Expr]:
    """``expr`` with every Piecewise, Max and Min replaced by its k-th branch or argument (the last one where it
    has fewer), for k = 0, 1, …: each branch of a branch on the state is met in one variant."""
    nodes = list(expr.atoms(sp.Piecewise, sp.Max, sp.Min))
    if not nodes:
        return []
    widths = max(len(n.args) for n in nodes)

    def pick(k):
        def branch(*args, **_):
            arg = args[min(k, len(args) - 1)]
            return arg.expr if isinstance(arg, ExprCondPair) else arg  # (a Piecewise's: (expression, condition))
        return branch

    return [expr.replace(sp.Piecewise, pick(k)).replace(sp.Max, pick(k)).replace(sp.Min, pick(k))
            for k in range(widths)]


def _homogeneous_at_samples(expr: sp.Expr, symbols) -> bool:
    """The test of :func:`_homogeneous` on one expression."""
    rng = np.random.default_rng(0)
    chosen = set(symbols)
    others = sorted(expr.free_symbols - chosen, key=str)
    for _ in range(2):
        values = {s: sp.Float(rng.uniform(0.5, 1.5)) for s in others}
        at = {s: sp.Float(rng.uniform(-1.0, 1.0)) for s in symbols}
        try:
            one, two, minus = (complex(expr.xreplace({**values, **{s: c * x for s, x in at.items()}}).evalf())
                               for c in (1, 2, -1))
        except Exception:  # (not a number there — a relational, a value outside a function's domain: no verdict)
            return True
        if not all(math.isfinite(abs(z)) for z in (one, two, minus)):
            return True
        scale = max(abs(two), abs(2 * one), 1e-300)
        if abs(two - 2 * one) > 1e-9 * scale or abs(minus + one) > 1e-9 * scale:  # (degree 1: odd and doubling)
            return False
    return True
