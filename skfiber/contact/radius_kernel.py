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
lookup), that numba cannot compile, whose compiled r0 does not reproduce
the callable at the fibers' nodes (:data:`MATCH_TOL`), or whose r0 or
slope is not finite at a node keeps the numpy path of
:func:`~skfiber.contact.fiber_geometry.reference_radius`.

Examples
--------
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
from ..compile.tracer import Traced

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
    # numpy's error model: a singular r0 or slope gives inf or nan (as the callable would), not an exception
    source = numba_module("skfiber.contact.radius_kernel from a fiber's r0(θ)", "theta0, h, e, xi, p, r, dr", body,
                          error_model="numpy")
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
    except Exception:  # Untraceable, or anything a callable written for numbers raises on symbols
        return None
    if expr.free_symbols - {_THETA}:
        return None
    return expr


def radius_kernel(radius, nodes: np.ndarray, *, label: str = "a fiber") -> RadiusKernel | None:
    """The compiled r0(θ) of a vectorized callable ``radius``, or None when it keeps the numpy path.

    The kernel is compiled here and checked at ``nodes`` against the callable.

    Parameters
    ----------
    radius
        The fiber's r0(θ) (m), vectorized over θ.
    nodes
        θ values where the kernel is checked against the callable (the nodes of the fibers that use it).
    label
        What the warnings call the fiber.

    Returns
    -------
    RadiusKernel or None
        None when the callable cannot be traced or its expression cannot be printed or compiled (warned), when
        the kernel's r0 differs from the callable's at ``nodes`` by more than :data:`MATCH_TOL` times the largest
        |r0| there, or when its r0 or slope is not finite there (e.g. √θ at θ = 0).
    """
    expr = _traced(radius)
    if expr is None:
        return None
    try:
        source, params = _source(expr)
    except Exception:  # a function of the trace that the printer does not know
        return None
    kernel = RadiusKernel(source, params, label)
    nodes = np.ascontiguousarray(np.asarray(nodes, dtype=float).reshape(-1))
    n = nodes.size
    r, dr = np.empty(max(n, 1)), np.empty(max(n, 1))
    probe = np.array([0.5 * (nodes.min() + nodes.max()) if n else 0.5])
    if not kernel(probe, np.ones(1), np.zeros(1, dtype=np.int64), np.zeros(1), r, dr):  # compiles (or warns)
        return None
    try:
        kernel(nodes, np.ones(n), np.arange(n, dtype=np.int64), np.zeros(n), r[:n], dr[:n])
        with np.errstate(all="ignore"):
            direct = np.broadcast_to(np.asarray(radius(nodes.copy()), dtype=float), nodes.shape)
    except Exception:  # e.g. 0.0 ** -1 in the slope (numba keeps Python's power), or the callable fails here
        return None
    r, dr = r[:n], dr[:n]
    scale = float(np.max(np.abs(direct))) if n else 0.0
    if not (np.all(np.isfinite(direct)) and np.all(np.isfinite(r)) and np.all(np.isfinite(dr))
            and np.all(np.abs(r - direct) <= MATCH_TOL * scale)):
        return None
    return kernel
