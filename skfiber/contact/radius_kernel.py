"""A fiber's reference radius r0(θ) compiled from its definition, with its exact derivative.

Fiber–fiber contact needs r0 and dr0/dξ at the closest points y of every
search (eq. 40 takes r_y = r0(θ_y) √(|Y′|/|y′|)).  The radius is the user's
vectorized callable; calling it from Python with numpy at every search cost
about a tenth of a coupled Newton iteration of the upper limb.  Like the
forms (:mod:`skfiber.compile`), the callable is traced once on a symbolic θ
(:class:`~skfiber.compile.tracer.Traced`), and the sympy expression and its
exact θ-derivative become one numba loop, written to skfiber's cache and
compiled with numba's ``cache=True``.  Callables of the same form share one
compiled function (their numbers are a parameter vector).

A callable that cannot be traced (a branch on θ, ``np.where``, a table
lookup), whose traced expression does not reproduce the callable at the
fiber's nodes (relative 1e-12), or that numba cannot compile keeps the
numpy path of :func:`~skfiber.contact.fiber_geometry.reference_radius`.

Example
-------
>>> import numpy as np
>>> k = radius_kernel(lambda th: 0.05 * (1 + th**2), np.linspace(0, 1, 5))
>>> r, dr = np.empty(2), np.empty(2)
>>> k(np.array([0.0, 0.5]), np.array([1.0, 0.5]), np.array([0, 1]), np.array([0.5, 0.5]), r, dr)
True
>>> [round(float(v), 6) for v in r], [round(float(v), 6) for v in dr]   # θ = 0.5 and 0.75
([0.0625, 0.078125], [0.05, 0.0375])
"""
from __future__ import annotations


import numpy as np
import sympy as sp

from ..compile.cache import GeneratedKernel
from ..compile.codegen import abstract_numbers, cse_products, numba_module
from ..compile.tracer import Traced, Untraceable

__all__ = ["RadiusKernel", "radius_kernel", "MATCH_TOL"]

#: the traced expression must reproduce the callable to this relative difference at the fiber's nodes
MATCH_TOL = 1e-12

_THETA = sp.Symbol("theta", real=True)


class RadiusKernel(GeneratedKernel):
    """r0 and dr0/dξ = h dr0/dθ at parameters ξ of elements, from the compiled trace of one r0(θ) callable.

    Call with the elements' start θ0 and length h in θ (per element), the element ``e`` and parameter
    ``xi`` of each point and the outputs ``r`` and ``dr`` (written in place).  Returns False, and leaves
    the outputs alone, when the kernel could not be compiled (warned once); the caller then uses the
    callable.
    """

    kind = "radius"

    def __call__(self, theta0: np.ndarray, h: np.ndarray, e: np.ndarray, xi: np.ndarray, r: np.ndarray,
                 dr: np.ndarray) -> bool:
        return self.run((theta0, h, e, xi, self.params, r, dr))

    def describe(self) -> str:
        return f"the radius r0(θ) of {self.name}"


def _source(expr: sp.Expr) -> tuple[str, np.ndarray]:
    """The generated module's source (r0 and h dr0/dθ per point) and the parameter vector of its numbers."""
    values: list[float] = []
    exprs = [abstract_numbers(e, values) for e in (expr, sp.diff(expr, _THETA))]
    replacements, (value, slope) = cse_products(exprs)
    code = lambda e: sp.pycode(e, fully_qualified_modules=True)  # noqa: E731
    body = [
        *[f"    p{k} = p[{k}]" for k in range(len(values))],
        "    for i in range(e.shape[0]):",
        "        el = e[i]",
        "        theta = theta0[el] + h[el] * xi[i]",
        *[f"        {sym} = {code(sub)}" for sym, sub in replacements],
        f"        r[i] = {code(value)}",
        f"        dr[i] = ({code(slope)}) * h[el]",
    ]
    source = numba_module("skfiber.contact.radius_kernel from a fiber's r0(θ)", "theta0, h, e, xi, p, r, dr", body)
    return source, np.array(values, dtype=float)


def _traced(radius) -> sp.Expr | None:
    """The sympy expression of r0(θ), or None when the callable cannot be traced."""
    try:
        with np.errstate(all="ignore"):
            out = radius(np.array([Traced(_THETA)], dtype=object))
        item = np.asarray(out, dtype=object).reshape(-1)
        if item.size != 1:
            return None
        value = item[0]
        expr = value.expr if isinstance(value, Traced) else sp.sympify(float(value))
    except (Untraceable, TypeError, ValueError, AttributeError, ArithmeticError, sp.SympifyError):
        return None
    if expr.free_symbols - {_THETA}:
        return None
    return expr


def radius_kernel(radius, nodes: np.ndarray, *, label: str = "a fiber") -> RadiusKernel | None:
    """The compiled r0(θ) of a vectorized callable ``radius``, or None when it keeps the numpy path.

    Parameters
    ----------
    radius
        The fiber's r0(θ) (m), vectorized over θ.
    nodes
        θ values where the trace is checked against the callable (the fiber's nodes).
    label
        What the warnings call the fiber.

    Returns
    -------
    RadiusKernel or None
        None when the callable cannot be traced, when its trace differs from it at ``nodes`` by more than
        :data:`MATCH_TOL` (relative), or when its expression cannot be printed as Python.
    """
    expr = _traced(radius)
    if expr is None:
        return None
    nodes = np.asarray(nodes, dtype=float).reshape(-1)
    try:
        traced = sp.lambdify(_THETA, expr, modules="numpy")(nodes)
        with np.errstate(all="ignore"):
            direct = np.asarray(radius(nodes.copy()), dtype=float)
        traced = np.broadcast_to(np.asarray(traced, dtype=float), nodes.shape)
        direct = np.broadcast_to(direct, nodes.shape)
        source, params = _source(expr)
    except Exception:  # the printer or lambdify does not know a function of the trace
        return None
    scale = np.maximum(np.abs(direct), np.finfo(float).tiny)
    if not (np.all(np.isfinite(direct)) and np.all(np.abs(traced - direct) <= MATCH_TOL * scale)):
        return None
    return RadiusKernel(source, params, label)
