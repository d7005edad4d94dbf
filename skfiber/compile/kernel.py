"""The compiled kernel of a model's residual forms.

:class:`FormKernel` traces every residual term of a model (the built-in
internal force and inertia, and the terms added with ``add_term``) on
symbolic jets, with each fiber's :class:`~skfiber.materials.SymbolicLaw`
inlined for the stress ``w.S`` (:mod:`skfiber.compile.tracer`), derives the
consistent tangent symbolically and generates one numba module per model
(:mod:`skfiber.compile.codegen`): ``evaluate`` returns the residual of every
term and the pointwise tangent in one pass, ``assemble`` the element tangent
from the pointwise one when Newton uses it.  The source is written to skfiber's cache
folder under a name derived from its text, and numba caches its machine code
there: an edited form gives a new source and compiles anew, an unchanged one
loads in milliseconds.

A term that cannot be traced is reported in :attr:`FormKernel.untraced`
(name → construct); the model evaluates it with numpy and warns.

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = sf.Model([fiber])
>>> kernel = model.form_kernel
>>> kernel.names
('internal_force', 'inertia')
"""
from __future__ import annotations

import sys
import time

import numpy as np
import sympy as sp

from ..assembly import named_term
from ..core.warn import warn
from .cache import cache_is_temporary, forget_module, load_module
from .codegen import (abstract_numbers, basis_products, branch_expressions, gather_table, kernel_source,
                      product_layouts, tangent_pairs)
from .tracer import Traced, Untraceable, trace, trace_tangent, traced_coefficients

__all__ = ["FormKernel", "KernelOutput"]

#: the symbols of λ and λ̇ in the traced forms (computed first at each point; see branch_expressions)
STRETCH, STRETCH_RATE = sp.symbols("stretch_ stretch_rate_", real=True)
#: the derived expressions of each branch and the source of each kernel made in this process, by their
#: structure (expressions with their numbers as parameters): a model built again – every run of a parameter
#: study, a sweep in a loop – skips the symbolic work (at most MEMO_SIZE of each, the oldest dropped first)
_BRANCHES: dict = {}
_SOURCES: dict = {}
MEMO_SIZE = 64


def _remember(memo: dict, key, value):
    """Keep ``value`` under ``key`` in ``memo`` (at most :data:`MEMO_SIZE` entries) and return it."""
    if len(memo) >= MEMO_SIZE:
        memo.pop(next(iter(memo)))
    memo[key] = value
    return value


#: first calls slower than this are reported as a compilation (numba loaded from its cache is faster)
REPORT_SECONDS = 0.5


class KernelOutput:
    """What one kernel call returns: ``residuals`` (terms, N) one row per term, ``magnitude`` (N) the sum of
    the absolute contributions per DOF, ``stretch`` (e, q) λ at the quadrature points and, when a tangent
    was asked for, ``coefficients`` (e, q, pairs), the pointwise tangent, and ``element_matrices``
    (e, nb, nb), the element tangent, assembled from it on first access (None without a tangent)."""

    __slots__ = ("residuals", "magnitude", "coefficients", "stretch", "_assemble", "_element_matrices")

    def __init__(self, residuals, magnitude, coefficients, stretch, assemble=None):
        self.residuals, self.magnitude = residuals, magnitude
        self.coefficients, self.stretch = coefficients, stretch
        self._assemble = assemble
        self._element_matrices = None

    @property
    def element_matrices(self) -> np.ndarray | None:
        if self._element_matrices is None and self._assemble is not None:
            self._element_matrices = self._assemble(self.coefficients)
        return self._element_matrices


def _law_coefficients(law, w, law_symbols: dict) -> dict:
    """``S``, ``dS_dlam``, ``dS_dlamdot`` of a symbolic law (``expression``, ``d_stretch``, ``d_rate`` in the
    symbols ``law_symbols``) at the traced kinematics of ``w``."""
    exprs = [getattr(law, name, None) for name in ("expression", "d_stretch", "d_rate")]
    if not all(isinstance(e, sp.Basic) for e in exprs):
        raise Untraceable(f"the stress law {law!r} is not symbolic (no expression to inline)")
    function = getattr(law, "uncompilable", None)
    if function is not None:
        raise Untraceable(f"the stress law {getattr(law, 'name', law)!r} uses {function}, which has no compiled kernel")
    values: list[float] = []
    exprs = [abstract_numbers(e, values) for e in exprs]
    at = dict(stretch="lam", stretch_rate="lamdot", theta="theta", t="t", muscle_fraction="gamma_m",
              activation="alpha")
    subs = {law_symbols[key]: w[name].expr for key, name in at.items()}
    S, dS, dR = (Traced(e.xreplace(subs)) for e in exprs)
    return dict(S=S, dS_dlam=dS, dS_dlamdot=dR), values


class FormKernel:
    """One compiled kernel for the residual terms of a model.

    Parameters
    ----------
    terms
        (name, residual form, tangent form or None) triples, in the order of the kernel's rows; a tangent
        form, when given, is compiled as the term's tangent instead of the derived one.
    discretization
        The model's :class:`~skfiber.discretization.Discretization`.
    law_symbols
        The symbols of a symbolic law's expression by meaning (:data:`skfiber.materials.SYMBOLS`).
    kinematics
        ``kinematics(x, xdot, J)`` → object with ``x_s``, ``xdot_s``, ``lam``, ``lamdot`` (the model's
        definition, :func:`skfiber.forms.cable_kinematics`), applied to the traced fields.
    """

    def __init__(self, terms, discretization, *, kinematics, law_symbols: dict):
        self.discretization = d = discretization
        self.trace_seconds = 0.0
        self.compile_seconds = None  # measured on the first call
        start = time.perf_counter()
        asm = d.assembler
        B = np.asarray(asm.basis_jets)  # (e, q, jets, nb)
        moves = np.any(B[:, :, 0:6, :] != 0, axis=(0, 1)).reshape(2, 3, -1).any(axis=0)  # (3, nb)
        if B.shape[2] != 9 or not np.all(moves.sum(axis=0) == 1) or len(set(moves.sum(axis=1))) != 1:
            raise ValueError("the form compiler needs a 3-component cubic Hermite field on a line")
        members = np.array([np.flatnonzero(m) for m in moves])  # (3, nb/3): the basis functions of each component
        self._members = np.ascontiguousarray(members, dtype=np.int64)
        # the scalar jets G (e, q, order, nb/3): basis function members[c, a] of every component c has the
        # jets G[..., a] in component c (checked)
        G = np.stack([B[:, :, 3 * o + 0, members[0]] for o in range(3)], axis=2)
        for c in (1, 2):
            if not np.array_equal(np.stack([B[:, :, 3 * o + c, members[c]] for o in range(3)], axis=2), G):
                raise ValueError("the form compiler needs a vector element whose components share their shape functions")
        self._G = np.ascontiguousarray(G)
        # the global DOFs of each element by component (e, 3, nb/3): gathered and scattered per component
        self._dofs = np.ascontiguousarray(asm.element_dofs.T[:, members], dtype=np.int64)
        shape = d.theta.shape

        def per_point(a):
            return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=float), shape))

        self._dx, self._J, self._area, self._rho = (per_point(a) for a in (asm.dx, d.jacobian, d.area, d.density))
        self._theta, self._gamma = per_point(d.theta), per_point(d.muscle_fraction)
        self._X = np.ascontiguousarray(d.reference_dofs, dtype=float)
        self.untraced: dict[str, str] = {}
        # trace every term once per law group
        traced = []  # per law group: ([integrand per term], λ, parameter values)
        for law, _ in d.law_groups:
            w = traced_coefficients()
            kin = kinematics(w["x"], w["xdot"], w["J"])
            # λ and λ̇ by their symbols (the stress depends on them): the tangent takes them by the chain rule
            intermediates = [(STRETCH, kin.lam.expr), (STRETCH_RATE, kin.lamdot.expr)]
            w.update(x_s=kin.x_s, xdot_s=kin.xdot_s, lam=Traced(STRETCH), lamdot=Traced(STRETCH_RATE))
            values: list[float] = []
            try:
                law_w, values = _law_coefficients(law, w, law_symbols)
                w.update(law_w)
            except Untraceable as error:
                law_error = error
            else:
                law_error = None
            integrands, tangents = [], []
            for name, form, tangent_form in terms:
                integrands.append(None)
                tangents.append(None)
                if name in self.untraced:
                    continue
                try:
                    with named_term(name):
                        integrands[-1] = trace(form, w)
                        if tangent_form is not None:
                            w_t = type(w)(w)
                            w_t.update(c_v=Traced(sp.Symbol("c_v", real=True)), c_a=Traced(sp.Symbol("c_a", real=True)))
                            tangents[-1] = trace_tangent(tangent_form, w_t)
                except Untraceable as error:
                    if law_error is not None and (_uses_stress(form) or _uses_stress(tangent_form)):
                        error = law_error  # the law, not the form, cannot be traced
                    self.untraced[name] = error.construct
            traced.append((integrands, tangents, intermediates, values))
        self.names = tuple(name for name, _, _ in terms if name not in self.untraced)
        keep = [i for i, (name, _, _) in enumerate(terms) if name not in self.untraced]
        # branches: groups with the same structure once their numbers are parameters share code
        branch_of_group, keys, branches, params = [], {}, [], []
        for integrands, tangents, intermediates, law_values in traced:
            values = list(law_values)
            exprs = [abstract_numbers(integrands[i], values) for i in keep]
            given = [None if tangents[i] is None else abstract_numbers(tangents[i], values) for i in keep]
            inter = [(sym, abstract_numbers(e, values)) for sym, e in intermediates]
            key = sp.srepr(exprs) + sp.srepr(given) + sp.srepr(inter) + f"|{len(values)}"
            if key not in keys:
                keys[key] = len(branches)
                branch = _BRANCHES.get(key)
                if branch is None:
                    branch = _remember(_BRANCHES, key, branch_expressions(exprs, STRETCH, len(values), given, inter))
                branches.append(branch)
            branch_of_group.append(keys[key])
            params.append(values)
        self.n_branches = len(branches)
        pairs = tangent_pairs(branches)
        self.n_pairs = len(pairs)  # the columns of the pointwise tangent D
        self._products = basis_products(G, product_layouts(pairs))  # of the basis functions' jets (mesh only)
        self._gather = gather_table(members, pairs)  # element tangent entry → where assemble keeps it
        ne = shape[0]
        self._branch = np.zeros(ne, dtype=np.int64)
        self._params = np.zeros((ne, max([len(p) for p in params] + [1])))
        for g, (_, mask) in enumerate(d.law_groups):
            self._branch[mask] = branch_of_group[g]
            self._params[mask, :len(params[g])] = params[g]
        header = "terms: " + ", ".join(self.names)
        self.source = None
        if self.names:
            source_key = (tuple(keys), header)
            self.source = _SOURCES.get(source_key)
            if self.source is None:
                self.source = _remember(_SOURCES, source_key, kernel_source(branches, header=header))
        self.trace_seconds = time.perf_counter() - start
        self._function = self._assemble_function = None
        self.failed = None  # the error message when the kernel could not be compiled
        nb = B.shape[3]
        self._K = np.empty((ne, nb, nb))  # the shape of the element tangent
        self._D = np.empty(shape + (self.n_pairs,))  # the shape of the pointwise tangent
        self._no_D = np.empty((0, 0, self.n_pairs))  # what the kernel gets when no tangent is asked for
        self._lam = np.empty(shape)
        self._all = np.ones(len(self.names))
        self._masks: dict = {}

    @property
    def active(self) -> bool:
        """Whether the kernel evaluates at least one term."""
        return bool(self.names) and self.failed is None

    def mask(self, names) -> np.ndarray:
        """The kernel's term mask (1.0 for the terms in ``names``; one array per distinct choice)."""
        key = frozenset(n for n in self.names if n in names)
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = np.array([1.0 if n in key else 0.0 for n in self.names])
        return mask

    def arguments(self, u, v, a, t, *, alpha, c_v, c_a, mask, tangent, R, mag, D, lam) -> tuple:
        """The generated ``evaluate``'s arguments, in order."""
        X = self._X
        return (self._G, self._dofs, self._members, self._dx, X + u, v, a, X, self._J, self._area, self._rho,
                self._theta, self._gamma, alpha, float(t), self._branch, self._params, float(c_v), float(c_a),
                mask, tangent, R, mag, D, lam)

    def compile(self) -> bool:
        """Compile the kernel now (or load it from numba's cache) with a call at the reference state; False
        when it cannot be compiled (warned; the model then evaluates its forms with numpy)."""
        if self.compile_seconds is not None or not self.active:
            return self.active
        zero = np.zeros(self.discretization.n_dofs)
        return self(zero, zero, zero, 0.0, alpha=np.zeros(self._theta.shape[0]), c_v=0.0, c_a=0.0) is not None

    def output(self, *, tangent: bool) -> KernelOutput:
        """Fresh output arrays for one call."""
        d = self.discretization
        return KernelOutput(np.empty((len(self.names), d.n_dofs)), np.empty(d.n_dofs),
                            np.empty_like(self._D) if tangent else self._no_D, np.empty_like(self._lam),
                            self.assemble if tangent else None)

    def assemble(self, coefficients: np.ndarray) -> np.ndarray:
        """The element tangent (e, nb, nb) from the pointwise tangent of a call (its ``coefficients``)."""
        K = np.empty_like(self._K)
        self.assemble_function(self._products, self._gather, coefficients, K.reshape(len(K), -1))
        return K

    def tangent_tables(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(products, gather, nb): the generated ``assemble``'s tables and the element's basis size, for a
        compiled caller that assembles the element tangent (e, nb · nb) itself (:mod:`skfiber.fiber_step`)."""
        return self._products, self._gather, self._K.shape[1]

    def fused_arguments(self, t, *, alpha, output: KernelOutput, mask=None) -> tuple:
        """The arguments of the generated ``evaluate`` but the fields x, ẋ, ẍ, c_v, c_a and ``tangent``, as
        one tuple (G, dofs, members, dx, X, J, area, ρ, θ, γM, α, t, branch, params, mask, R, magnitude,
        D, λ): for a compiled caller that computes the fields (:mod:`skfiber.evaluation_kernel`)."""
        mask = self._all if mask is None else mask
        return (self._G, self._dofs, self._members, self._dx, self._X, self._J, self._area, self._rho,
                self._theta, self._gamma, alpha, float(t), self._branch, self._params, mask, output.residuals,
                output.magnitude, output.coefficients, output.stretch)

    @property
    def function(self):
        """The compiled ``evaluate`` (its module loaded; compiled on its first call, which :meth:`__call__`
        makes, with its fallback)."""
        if self._function is None:
            if self.failed is not None or not self.names:
                raise RuntimeError(f"the model's forms have no compiled kernel ({self.failed or 'no terms'})")
            module = load_module(self.source, kind="forms")
            self._function, self._assemble_function = module.evaluate, module.assemble
        return self._function

    @property
    def assemble_function(self):
        """The compiled ``assemble`` (pointwise tangent → element tangent) of the kernel's module."""
        if self._assemble_function is None:
            self.function
        return self._assemble_function

    def __call__(self, u, v, a, t, *, alpha, c_v: float, c_a: float, mask=None, tangent: bool = True):
        """Residual rows, magnitude, tangent (assembled on first access) and λ at a state (see
        :class:`KernelOutput`).

        ``alpha`` is the activation per element (e,); ``tangent`` True (residual and tangent) or False (residual
        only).  Returns None when
        the kernel cannot be compiled (warned once; the caller evaluates the forms with numpy).
        """
        if self.failed is not None or not self.names:
            return None
        mask = self._all if mask is None else mask
        mode = int(bool(tangent))
        out = self.output(tangent=bool(mode))
        args = self.arguments(np.asarray(u, dtype=float), np.ascontiguousarray(v, dtype=float),
                              np.ascontiguousarray(a, dtype=float), t, alpha=alpha, c_v=c_v, c_a=c_a, mask=mask,
                              tangent=mode, R=out.residuals, mag=out.magnitude, D=out.coefficients,
                              lam=out.stretch)
        if self.compile_seconds is None:
            if not self._first_call(args):
                return None
        else:
            self._function(*args)
        return out

    def _first_call(self, args) -> bool:
        start = time.perf_counter()
        for attempt in (0, 1):  # the second time without numba's cached code (stale or broken)
            try:
                self.function(*args)
                self.assemble(np.zeros_like(self._D))
                break
            except Exception as error:  # numba typing errors, unwritable folders, …
                forget_module(self.source, kind="forms")
                self._function = None
                if attempt:
                    first = str(error).splitlines()[0] if str(error) else ""
                    self.failed = f"{type(error).__name__}: {first}"
                    warn(f"the model's forms could not be compiled ({self.failed}); they run with numpy",
                         RuntimeWarning)
                    return False
        self.compile_seconds = time.perf_counter() - start
        if self.compile_seconds > REPORT_SECONDS:
            laws = f"{self.n_branches} law structure{'s' if self.n_branches > 1 else ''} among the fibers"
            print(f"skfiber: compiled the model's forms ({', '.join(self.names)}; {laws}, a code branch each) in "
                  f"{self.trace_seconds:.1f} s tracing + {self.compile_seconds:.1f} s numba; "
                  + ("not cached (the cache folder is not writable)" if cache_is_temporary()
                     else "cached for later runs"),
                  file=sys.stderr)
        return True


def _uses_stress(form) -> bool:
    """Whether a form's code names the stress (w.S) — for blaming a non-symbolic law, not the form."""
    if form is None:
        return False
    fn = getattr(form, "form", None) or form
    code = getattr(fn, "__code__", None)
    return code is not None and any(name in ("S", "dS_dlam", "dS_dlamdot") for name in code.co_names)
