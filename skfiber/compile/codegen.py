"""From traced integrands to one numba kernel (the code-generation half of the form compiler).

Given, per *branch* (a group of elements whose integrands have the same
structure), the integrand of every term as a sympy expression in the jets of
x, ẋ, ẍ, X, the test jets ξ and the coefficients, :func:`branch_expressions`
derives

* the residual coefficients r_j = ∂(integrand)/∂ξ_j (the integrand is linear
  in ξ), one per test jet j,
* the pointwise tangent D_jk = ∂r_j/∂x_k + c_v ∂r_j/∂ẋ_k + c_a ∂r_j/∂ẍ_k,
  kept as its three parts so that c_v and c_a stay run-time arguments,

and :func:`kernel_source` prints them, after common-subexpression elimination,
as two functions.  ``evaluate`` is straight-line code inside one loop over
elements and quadrature points: Rₑ = Σ_q Bᵀ r dx, accumulated per element in
component blocks (each basis function of a vector element moves one component,
with the same scalar jets G for every component) and scattered once per
element, and — when a tangent is asked for — the pointwise tangent
D_jk dx with c_v and c_a applied, stored per point.  ``assemble`` turns D into
the element tangent Kₑ = Σ_q Bᵀ D B.  Newton evaluates far more residuals than it
factors tangents (every converged state is a residual without a solve), so
the accumulation, which costs as much as the rest, runs only when the matrix
is used.  Numbers of the expressions (sympy ``Float``) become entries of a
parameter table, so models that differ only in their numbers (a parameter
sweep, the biceps and the triceps) share one source and one compiled kernel.

Example
-------
>>> import sympy as sp
>>> x = sp.Symbol("x")
>>> replacements, reduced = cse_products([sp.exp(x) * x**2, sp.exp(x)])
>>> reduced[1]
x0
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.codegen.rewriting import create_expand_pow_optimization, optimize
from sympy.printing.pycode import PythonCodePrinter

from .tracer import JET_FIELDS, N_JETS, SCALARS, jet_symbols, test_symbols, trial_symbols

__all__ = ["cse_products", "abstract_numbers", "Branch", "branch_expressions", "tangent_pairs", "product_layouts", "symmetric_blocks",
           "gather_table", "basis_products", "kernel_source"]

_EXPAND_POW = create_expand_pow_optimization(4, base_req=lambda base: True)


def cse_products(exprs, symbols=None):
    """Common subexpressions (named by ``symbols``, default x0, x1, …), then x**n → x*x*… (n ≤ 4).

    A general power is slow (and numpy's is slower still for a negative base);
    products are exact and cheap.  Applied after the cse so that the expanded
    products are not folded back into powers.
    """
    replacements, reduced = sp.cse(exprs) if symbols is None else sp.cse(exprs, symbols=symbols)
    replacements = [(sym, optimize(e, [_EXPAND_POW])) for sym, e in replacements]
    return replacements, [optimize(e, [_EXPAND_POW]) for e in reduced]


def abstract_numbers(expr: sp.Expr, values: list[float], prefix: str = "p") -> sp.Expr:
    """``expr`` with every ``Float`` occurrence replaced by a new symbol ``p<k>`` (k counting on from
    ``len(values)``), its value appended to ``values``.  Equal numbers stay apart, so that the structure of
    the result does not depend on coincidences between them."""
    def walk(e):
        if isinstance(e, sp.Float):
            values.append(float(e))
            return sp.Symbol(f"{prefix}{len(values) - 1}", real=True)
        if not e.args:
            return e
        return e.func(*[walk(a) for a in e.args])
    return walk(sp.sympify(expr))


@dataclass
class Branch:
    """The derived expressions of one branch: ``intermediates`` [(symbol, definition)] computed first at
    each point, ``stretch`` (λ, for the caller's checks), per term the residual coefficients {j: r_j} and the
    tangent parts {(j, k): (∂/∂x, ∂/∂ẋ, ∂/∂ẍ)}, and the parameter count."""

    intermediates: list
    stretch: sp.Expr
    residual: list[dict[int, sp.Expr]]
    tangent: list[dict[tuple[int, int], tuple[sp.Expr, sp.Expr, sp.Expr]]]
    n_params: int
    fields: set = field(default_factory=set)  # the jet fields it reads


def branch_expressions(integrands: list[sp.Expr], stretch: sp.Expr, n_params: int,
                       tangents: list | None = None, intermediates=()) -> Branch:
    """Residual coefficients and tangent parts of traced integrands (one per term).

    ``tangents[t]``, when not None, is the traced integrand of the term's own tangent form (bilinear in the
    trial and test jets, with ``c_v`` and ``c_a`` as symbols): its coefficients are the term's tangent
    instead of the derived one.  ``intermediates`` [(symbol, definition in the jets)] are quantities the
    integrands use by their symbol (the stretch λ and its rate, on which the stress depends): the tangent
    takes them by the chain rule, ∂r/∂y + Σ_m ∂r/∂I_m dI_m/dy, which keeps its expressions short.
    """
    xi = test_symbols()
    du = trial_symbols()
    tangents = tangents or [None] * len(integrands)
    jets = {name: jet_symbols(name) for name in JET_FIELDS}
    unknowns = (jets["x"], jets["xdot"], jets["xddot"])
    zero = sp.Integer(0)
    # total derivatives of the intermediates by every unknown jet, each written with the earlier ones' symbols
    inter, total = [], {}
    for sym, definition in intermediates:
        for earlier, earlier_def in inter:
            definition = definition.subs(earlier_def, earlier)
        dI = []
        for unknown in unknowns:
            row = []
            for k in range(N_JETS):
                d = sp.diff(definition, unknown[k])
                for earlier, _ in inter:
                    if earlier in definition.free_symbols:
                        d += sp.diff(definition, earlier) * total[earlier][len(dI)][k]
                for earlier, earlier_def in inter + [(sym, definition)]:
                    d = d.subs(earlier_def, earlier)
                row.append(d)
            dI.append(row)
        total[sym] = dI
        inter.append((sym, definition))

    def derivative(r, w, k):  # d r / d unknowns[w][k], through the intermediates
        d = sp.diff(r, unknowns[w][k]) if unknowns[w][k] in r.free_symbols else zero
        for sym, _ in inter:
            if sym in r.free_symbols and total[sym][w][k] != 0:
                d += sp.diff(r, sym) * total[sym][w][k]
        return d
    residual, tangent = [], []
    used = set().union(*(d.free_symbols for _, d in inter)) if inter else set()
    for expr, given in zip(integrands, tangents):
        r_term, d_term = {}, {}
        for j in range(N_JETS):
            r = expr.xreplace({s: (1 if i == j else 0) for i, s in enumerate(xi)})
            if r != 0:
                r_term[j] = r
            if given is not None:
                row = given.xreplace({s: (1 if i == j else 0) for i, s in enumerate(xi)})
                for k in range(N_JETS):
                    entry = row.xreplace({s: (1 if i == k else 0) for i, s in enumerate(du)}) if row != 0 else zero
                    if entry != 0:
                        d_term[(j, k)] = (entry, zero, zero)
                continue
            if r == 0:
                continue
            for k in range(N_JETS):
                parts = tuple(derivative(r, w, k) for w in range(3))
                if any(p != 0 for p in parts):
                    d_term[(j, k)] = parts
        residual.append(r_term)
        tangent.append(d_term)
        for r in r_term.values():
            used |= r.free_symbols
        for parts in d_term.values():
            used |= set().union(*(p.free_symbols for p in parts))
    used |= stretch.free_symbols
    fields = {name for name, syms in jets.items() if used & set(syms)}
    return Branch(inter, stretch, residual, tangent, n_params, fields)


_HELPERS = '''\
_OPTIONS = dict(cache=True, inline="always", error_model="numpy")


@numba.njit(**_OPTIONS)
def _jet(G, e, q, local, order, c):
    s = 0.0
    for a in range(G.shape[3]):
        s += G[e, q, order, a] * local[c, a]
    return s


@numba.njit(**_OPTIONS)
def _vector(Re, Me, term, c, G, e, q, order, value):
    for a in range(G.shape[3]):
        contribution = value * G[e, q, order, a]
        Re[term, c, a] += contribution
        Me[c, a] += abs(contribution)


@numba.njit(**_OPTIONS)
def _scatter(R, mag, Re, Me, dofs, e):
    for c in range(3):
        for a in range(Re.shape[2]):
            dof = dofs[e, c, a]
            mag[dof] += Me[c, a]
            for t in range(Re.shape[0]):
                R[t, dof] += Re[t, c, a]


@numba.njit(**_OPTIONS)
def _accumulate(Ke, offset, products, e, q, o, d, size):
    for m in range(size):
        Ke[offset + m] += d * products[e, q, o, m]


@numba.njit(**_OPTIONS)
def _gather(K, Ke, gather, e):
    for m in range(gather.shape[0]):
        K[e, m] = Ke[gather[m]]
'''


class _Printer(PythonCodePrinter):
    """Python code with powers numba evaluates cheaply: b**(n/2) as a power of math.sqrt(b), b**(-n) as
    1.0/b**n (integer powers become products; a general pow costs tens of nanoseconds)."""

    def _print_Pow(self, expr, rational=False):
        base, exponent = expr.as_base_exp()
        if exponent.is_Rational and exponent.q == 2 and abs(exponent.p) <= 9:
            root = f"math.sqrt({self._print(base)})"
            power = root if abs(exponent.p) == 1 else f"{root}**{abs(exponent.p)}"
            return f"(1.0/({power}))" if exponent.p < 0 else f"({power})"
        if exponent.is_Integer and exponent < 0:
            inverse = sp.Pow(base, -exponent, evaluate=False)
            return f"(1.0/({self._print(inverse)}))"
        return super()._print_Pow(expr, rational=rational)


_PRINTER = _Printer({"fully_qualified_modules": True})


def _code(e: sp.Expr) -> str:
    return _PRINTER.doprint(e)


def _dependencies(replacements, roots) -> set:
    """The replacement symbols that the expressions ``roots`` need, directly or through others."""
    defined = {sym: e for sym, e in replacements}
    needed, stack = set(), [s for r in roots for s in r.free_symbols if s in defined]
    while stack:
        s = stack.pop()
        if s in needed:
            continue
        needed.add(s)
        stack.extend(t for t in defined[s].free_symbols if t in defined)
    return needed


def _branch_body(branch: Branch, indent: str, slots: dict) -> list[str]:
    """The statements of one branch at one quadrature point; ``slots`` maps every (test jet, trial jet) pair of
    the kernel's tangent to its column of the pointwise tangent D (e, q, pairs)."""
    n_terms = len(branch.residual)
    res_exprs, res_slots = [branch.stretch], [("stretch",)]
    for t, r_term in enumerate(branch.residual):
        for j, r in sorted(r_term.items()):
            res_exprs.append(r)
            res_slots.append(("r", t, j))
    tan_exprs, tan_slots = [], []
    for (j, k) in sorted({pair for d in branch.tangent for pair in d}):
        for t in range(n_terms):
            parts = branch.tangent[t].get((j, k))
            if parts is None:
                continue
            for which, p in enumerate(parts):
                if p != 0:
                    tan_exprs.append(p)
                    tan_slots.append((j, k, t, which))
    replacements, reduced = cse_products(res_exprs + tan_exprs)
    res_reduced, tan_reduced = reduced[:len(res_exprs)], reduced[len(res_exprs):]
    early = _dependencies(replacements, res_reduced)
    lines = [f"{indent}p{k} = params[e, {k}]" for k in range(branch.n_params)]
    definitions = [d for _, d in branch.intermediates]
    used = set().union(*(e.free_symbols for e in res_exprs + tan_exprs + definitions))
    for name in JET_FIELDS:
        if name in branch.fields:
            lines += [f"{indent}{s} = _jet(G, e, q, {name}_local, {j // 3}, {j % 3})"
                      for j, s in enumerate(jet_symbols(name)) if s in used]
    if definitions:  # the intermediates first (their own common subexpressions: k0, k1, …)
        pre, pre_reduced = cse_products(definitions, symbols=sp.numbered_symbols("k"))
        lines += [f"{indent}{sym} = {_code(e)}" for sym, e in pre]
        lines += [f"{indent}{sym} = {_code(e)}" for (sym, _), e in zip(branch.intermediates, pre_reduced)]
    lines += [f"{indent}{sym} = {_code(e)}" for sym, e in replacements if sym in early]
    for slot, e in zip(res_slots, res_reduced):
        if slot[0] == "stretch":
            lines.append(f"{indent}lam[e, q] = {_code(e)}")
        else:
            _, t, j = slot
            lines.append(f"{indent}if on[{t}]:")
            lines.append(f"{indent}    _vector(Re, Me, {t}, {j % 3}, G, e, q, {j // 3}, ({_code(e)}) * w_)")
    if slots:
        lines.append(f"{indent}if tangent:")
        inner = indent + "    "
        lines += [f"{inner}{sym} = {_code(e)}" for sym, e in replacements if sym not in early]
        by_pair: dict = {}
        for (j, k, t, which), e in zip(tan_slots, tan_reduced):
            by_pair.setdefault((j, k), {}).setdefault(t, []).append((which, e))
        factor = ("", " * c_v", " * c_a")
        for pair, slot in slots.items():
            terms = by_pair.get(pair)
            if not terms:
                lines.append(f"{inner}D[e, q, {slot}] = 0.0")
                continue
            lines.append(f"{inner}d = 0.0")
            for t, parts in terms.items():
                total = " + ".join(f"({_code(e)}){factor[which]}" for which, e in parts)
                lines.append(f"{inner}if on[{t}]:")
                lines.append(f"{inner}    d += {total}")
            lines.append(f"{inner}D[e, q, {slot}] = d * w_")
    return lines


def tangent_pairs(branches: list[Branch]) -> list[tuple[int, int]]:
    """The (test jet, trial jet) pairs of the kernel's pointwise tangent D: the union over its branches, in
    the order of D's columns (test jet j = 3·order + component, the same for the trial jet)."""
    return sorted({pair for b in branches for d in b.tangent for pair in d})


def product_layouts(pairs: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """The basis products the assembly reads, in the order of the third axis of :func:`basis_products`:
    (test order, trial order, packed) — packed (the upper triangle) for a pair whose block is symmetric
    (:func:`symmetric_blocks`), all n² products otherwise."""
    symmetric = symmetric_blocks(pairs)
    return sorted({(j // 3, k // 3, (j % 3, k % 3) in symmetric) for j, k in pairs})


def symmetric_blocks(pairs: list[tuple[int, int]]) -> set:
    """The component blocks (cj, ck) of the element tangent that only equal orders reach: each is a
    symmetric n × n matrix (a sum of G_o G_oᵀ), accumulated as its upper triangle (n(n+1)/2 numbers)."""
    blocks: dict = {}
    for j, k in pairs:
        blocks.setdefault((j % 3, k % 3), set()).add(j // 3 == k // 3)
    return {block for block, equal in blocks.items() if equal == {True}}


def gather_table(members: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """For entry (i, j) of an element tangent (nb × nb, flat), where ``assemble`` keeps it: in the flat
    (3, 3, n·n) component blocks, a symmetric block (:func:`symmetric_blocks`) as its upper triangle row by
    row, and 9·n² (a zero) for a block no pair reaches."""
    n = members.shape[1]
    nb = 3 * n
    symmetric = symmetric_blocks(pairs)
    reached = {(j % 3, k % 3) for j, k in pairs}
    packed = np.empty((n, n), dtype=np.int64)
    for m, (a, b) in enumerate((a, b) for a in range(n) for b in range(a, n)):
        packed[a, b] = packed[b, a] = m
    where = {int(i): (c, a) for c in range(3) for a, i in enumerate(members[c])}
    table = np.empty(nb * nb, dtype=np.int64)
    for i in range(nb):
        cj, a = where[i]
        for j in range(nb):
            ck, b = where[j]
            offset = (3 * cj + ck) * n * n
            if (cj, ck) not in reached:
                table[i * nb + j] = 9 * n * n
            elif (cj, ck) in symmetric:
                table[i * nb + j] = offset + packed[a, b]
            else:
                table[i * nb + j] = offset + a * n + b
    return table


def basis_products(G: np.ndarray, layouts: list[tuple[int, int, bool]]) -> np.ndarray:
    """G_oj[a] G_ok[b] at every point (e, q, len(layouts), n·n) for the assembly, laid out as
    :func:`product_layouts` says (packed: the upper triangle first, row by row).  They depend on the mesh
    only."""
    ne, nq, _, n = G.shape
    products = np.zeros((ne, nq, max(len(layouts), 1), n * n))
    upper = np.triu_indices(n)
    for i, (oj, ok, packed) in enumerate(layouts):
        outer = G[:, :, oj, :, None] * G[:, :, ok, None, :]
        if packed:
            products[:, :, i, :upper[0].size] = outer[:, :, upper[0], upper[1]]
        else:
            products[:, :, i, :] = outer.reshape(ne, nq, n * n)
    return products


def kernel_source(branches: list[Branch], *, header: str = "") -> str:
    """Python source of the kernel's two functions (see :mod:`skfiber.compile.kernel` for their arguments):
    ``evaluate``, the residual rows and the pointwise tangent D at the quadrature points, and ``assemble``,
    the element tangent Kₑ = Σ_q Σ_(j,k) D_jk Bⱼᵀ Bₖ from D (called only when Newton needs the matrix)."""
    fields = set().union(*(b.fields for b in branches)) | {"x"}
    scalars = [s for s in SCALARS if s != "t"]
    pairs = tangent_pairs(branches)
    slots = {pair: i for i, pair in enumerate(pairs)}
    body = ["# generated by skfiber.compile from a model's forms (do not edit; safe to delete)"]
    body += [f"# {line}" for line in header.splitlines()]
    body += ["import math", "", "import numba", "import numpy as np", "", "", _HELPERS, ""]
    body.append("@numba.njit(cache=True, error_model=\"numpy\")")
    body.append("def evaluate(G, dofs, members, dx, x, xdot, xddot, X, " + ", ".join(f"{s}_" for s in scalars)
                + ", t, branch, params, c_v, c_a, mask, tangent, R, mag, D, lam):")
    body.append("    ne, nq, no, n = G.shape")
    body.append("    on = mask != 0.0  # the terms evaluated; tangent: 0 the residual, 1 also the pointwise tangent D")
    body.append("    R[:, :] = 0.0")
    body.append("    mag[:] = 0.0")
    body.append("    Re = np.empty((R.shape[0], 3, n))")
    body.append("    Me = np.empty((3, n))")
    for name in JET_FIELDS:
        if name in fields:
            body.append(f"    {name}_local = np.empty((3, n))")
    body.append("    for e in range(ne):")
    body.append("        Re[:] = 0.0")
    body.append("        Me[:] = 0.0")
    body.append("        for c in range(3):")
    body.append("            for a in range(n):")
    body.append("                dof = dofs[e, c, a]")
    for name in JET_FIELDS:
        if name in fields:
            body.append(f"                {name}_local[c, a] = {name}[dof]")
    body.append("        b = branch[e]")
    body.append("        alpha = alpha_[e]")
    body.append("        for q in range(nq):")
    body.append("            w_ = dx[e, q]")
    for s in scalars:
        if s != "alpha":
            body.append(f"            {s} = {s}_[e, q]")
    for n, branch in enumerate(branches):
        body.append(f"            {'if' if n == 0 else 'elif'} b == {n}:")
        body += _branch_body(branch, " " * 16, slots)
    body.append("        _scatter(R, mag, Re, Me, dofs, e)")
    body.append("")
    body.append("")
    body.append("@numba.njit(cache=True, error_model=\"numpy\")")
    body.append("def assemble(products, gather, D, K):")
    body.append("    ne, nq, _, full = products.shape")
    body.append("    n = int(round(math.sqrt(full)))")
    body.append("    triangle = n * (n + 1) // 2")
    body.append("    Ke = np.zeros(9 * full + 1)  # the 3 × 3 component blocks, flat, and a zero")
    body.append("    for e in range(ne):")
    body.append("        Ke[:-1] = 0.0")
    body.append("        for q in range(nq):")
    layouts = product_layouts(pairs)
    symmetric = symmetric_blocks(pairs)
    for i, (j, k) in enumerate(pairs):
        packed = (j % 3, k % 3) in symmetric
        layout = layouts.index((j // 3, k // 3, packed))
        body.append(f"            _accumulate(Ke, {3 * (j % 3) + k % 3} * full, products, e, q, {layout}, D[e, q, {i}], "
                    f"{'triangle' if packed else 'full'})")
    if not pairs:
        body.append("            pass")
    body.append("        _gather(K, Ke, gather, e)")
    body.append("")
    return "\n".join(body)
