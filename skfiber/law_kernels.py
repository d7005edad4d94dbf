"""Symbolic stress laws compiled to numba loops, cached on disk.

A :class:`~skfiber.materials.SymbolicLaw` evaluates S, ∂S/∂λ and ∂S/∂λ̇ with
numpy (one array expression per common subexpression); on the few thousand
quadrature points of a muscle model that costs more than the rest of the cable
residual.  :func:`law_kernel` turns the same three expressions into one
compiled loop over the points of a law:

* the numbers of the expressions (sympy ``Float``) become entries of a
  parameter vector, so laws of the same form with other parameters — the
  biceps and the triceps of the upper limb, the laws of the tests — share one
  compiled function;
* the source is written once to the cache folder (``$SKFIBER_CACHE_DIR``,
  else ``$XDG_CACHE_HOME/skfiber`` or ``~/.cache/skfiber``; a temporary folder
  when that is not writable) and compiled with numba's ``cache=True``, so later
  runs load the machine code instead of compiling again (≈ 1 s per law form).

A law whose expressions numba cannot compile (a sympy function without a
``math`` counterpart) stays on the numpy path, with a warning.

Examples
--------
>>> import numpy as np
>>> from skfiber.materials import paper_law
>>> kernel = law_kernel(paper_law())
>>> lam = np.array([1.0, 1.2]); zero = np.zeros(2)
>>> S, dS, dR = np.empty(2), np.empty(2), np.empty(2)
>>> kernel(lam, zero, zero, 0.0, np.ones(2), np.zeros(2), 1, np.arange(2), S, dS, dR)
True
>>> bool(np.isclose(S[0], 30.0))  # the prestress σ0 at λ = 1
True
"""
from __future__ import annotations

import weakref

import numpy as np
import sympy as sp

from .compile.cache import GeneratedKernel
from .compile.codegen import abstract_numbers, cse_products, numba_module
from .core.warn import warn
from .materials import ARGUMENTS, MaterialPoint, StressResponse, SymbolicLaw

__all__ = ["LawKernel", "law_kernel", "FiberStress", "checked_response"]

#: the kernel of each law, made on first use (kept as long as the law lives)
_KERNELS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

def _source(expressions) -> tuple[str, np.ndarray]:
    """Python source of the point loop, and the parameter vector of the numbers."""
    values: list[float] = []
    exprs = [abstract_numbers(e, values) for e in expressions]
    params = np.array(values, dtype=float)
    replacements, reduced = cse_products(exprs)
    lam, lamdot, theta, t, gamma_m, alpha = (str(s) for s in ARGUMENTS)
    body = [f"        {lam} = lam_[i]", f"        {lamdot} = lamdot_[i]", f"        {theta} = theta_[i]",
            f"        {gamma_m} = gamma_m_[i]", f"        {alpha} = alpha_[i // nq]"]
    body += [f"        {sym} = {sp.pycode(e, fully_qualified_modules=True)}" for sym, e in replacements]
    for name, e in zip(("S", "dS", "dR"), reduced):
        body.append(f"        {name}[i] = {sp.pycode(e, fully_qualified_modules=True)}")
    unpack = [f"    p{k} = p[{k}]" for k in range(len(params))]
    source = numba_module("skfiber.law_kernels from a SymbolicLaw",
                          f"lam_, lamdot_, theta_, {t}, gamma_m_, alpha_, nq, idx, p, S, dS, dR",
                          [*unpack, "    for k in range(idx.shape[0]):", "        i = idx[k]", *body])
    return source, params


class LawKernel(GeneratedKernel):
    """S, ∂S/∂λ, ∂S/∂λ̇ of one symbolic law at chosen points, written in place.

    Call with flat arrays over all points (``lam``, ``lamdot``, ``theta``,
    ``muscle_fraction``), the time ``t``, the activation per element
    ``alpha`` (point i belongs to element ``i // nq``), the indices ``idx``
    of the points of this law and the output arrays ``S``, ``dS``, ``dR``.
    Returns False (and leaves the outputs alone) when the law cannot be
    compiled; the caller then evaluates it with numpy.
    """

    kind = "law"

    def __call__(self, lam, lamdot, theta, t, muscle_fraction, alpha, nq, idx, S, dS, dR) -> bool:
        args = (lam, lamdot, theta, float(t), muscle_fraction, alpha, int(nq), idx, self.params, S, dS, dR)
        return self.run(args)

    def describe(self) -> str:
        return f"the stress law {self.name!r}"


def law_kernel(law) -> LawKernel | None:
    """The compiled kernel of a :class:`~skfiber.materials.SymbolicLaw` (None for other laws).

    Laws of the same form (only their numbers differ) share one generated
    module and its compiled function; compiling happens on the first call.
    """
    if not isinstance(law, SymbolicLaw):
        return None
    kernel = _KERNELS.get(law)
    if kernel is None:
        reason = None if law.uncompilable is None else f"it uses {law.uncompilable}, which has no compiled kernel"
        if reason is None:
            try:
                source, params = _source([law.expression, law.d_stretch, law.d_rate])
            except Exception as error:  # (what else numba or the generated module refuses)
                reason = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        if reason is None:
            kernel = LawKernel(source, params, law.name)
        else:
            kernel = LawKernel("", np.zeros(0), law.name)
            kernel.failed = True
            warn(f"the stress law {law.name!r} could not be compiled ({reason}); it runs with numpy", RuntimeWarning)
        _KERNELS[law] = kernel
    return kernel


class FiberStress:
    """S, ∂S/∂λ, ∂S/∂λ̇ (e, q) of the fibers' laws at the quadrature points of a discretization, one call per
    distinct law: symbolic laws through their compiled loops (:func:`law_kernel`) when ``compiled``, other
    laws, and laws numba cannot compile, with numpy.  What the numpy path of the forms and the fields of the
    output use (the compiled forms inline the laws).

    Parameters
    ----------
    discretization
        The model's :class:`~skfiber.discretization.Discretization` (its ``law_groups``).
    compiled
        Use the laws' compiled loops.
    """

    def __init__(self, discretization, *, compiled: bool = True):
        self.discretization = discretization
        self.plan = None  # [(LawKernel, point indices)] per law group, [] when one has no kernel
        if compiled:
            nq = discretization.theta.shape[1]  # masks are over elements; the kernels index points
            plan = [(law_kernel(law), np.flatnonzero(np.repeat(mask, nq))) for law, mask in discretization.law_groups]
            self.plan = plan if all(k is not None for k, _ in plan) else []

    def __call__(self, lam: np.ndarray, lamdot: np.ndarray, t: float, alpha: np.ndarray):
        """(S, ∂S/∂λ, ∂S/∂λ̇) at stretches ``lam`` and rates ``lamdot`` (e, q), activations ``alpha`` (e, 1)."""
        d = self.discretization
        if self.plan and lam.flags.c_contiguous and lamdot.flags.c_contiguous:
            S, dS, dSr = np.empty_like(lam), np.empty_like(lam), np.empty_like(lam)
            args = (lam.ravel(), lamdot.ravel(), d.theta.ravel(), t, d.muscle_fraction.ravel(), alpha.ravel(),
                    lam.shape[1])
            outs = (S.ravel(), dS.ravel(), dSr.ravel())
            if all(kernel(*args, idx, *outs) for kernel, idx in self.plan):
                return S, dS, dSr
            self.plan = []  # a law failed to compile (warned): numpy from now on
        if len(d.law_groups) == 1:  # one law for all fibers: no gather/scatter
            law = d.law_groups[0][0]
            return checked_response(law, MaterialPoint(lam, lamdot, theta=d.theta, t=t,
                                                       muscle_fraction=d.muscle_fraction, activation=alpha))
        S, dS, dSr = np.empty_like(lam), np.empty_like(lam), np.empty_like(lam)
        for law, mask in d.law_groups:
            point = MaterialPoint(lam[mask], lamdot[mask], theta=d.theta[mask], t=t,
                                  muscle_fraction=d.muscle_fraction[mask], activation=alpha[mask])
            S[mask], dS[mask], dSr[mask] = checked_response(law, point)
        return S, dS, dSr


def checked_response(law, point: MaterialPoint) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S, ∂S/∂λ, ∂S/∂λ̇) of ``law`` at ``point``, each an array of the stretch's shape; TypeError naming the law
    when it returns something else (a tuple, scalars, arrays of another shape)."""
    resp = law(point)
    if not isinstance(resp, StressResponse):
        raise TypeError(f"the stress law {law!r} returned {type(resp).__name__}, not a "
                        "skfiber.materials.StressResponse(stress, d_stretch, d_stretch_rate); return one")
    shape = np.shape(point.stretch)
    out = tuple(np.asarray(getattr(resp, key)) for key in ("stress", "d_stretch", "d_stretch_rate"))
    for key, value in zip(("stress", "d_stretch", "d_stretch_rate"), out):
        if value.shape != shape or value.dtype.kind not in "fi":
            raise TypeError(f"the stress law {law!r} returned {key} of shape {value.shape} (dtype {value.dtype}) "
                            f"for stretches of shape {shape}; return float arrays of the stretch's shape "
                            "(np.broadcast_to(value, np.shape(point.stretch)) for a constant)")
    return out
