"""The fibers' share of a model's residual: its terms and loads, summed, with the lazy tangent.

:func:`fiber_part` is the first half of :meth:`skfiber.Model.evaluate`: the
residual terms run in the model's compiled kernel (:mod:`skfiber.compile`),
terms the kernel does not have (untraceable, or ``compiled=False``) with
numpy; the loads are subtracted; the result carries the reference force (the
largest norm of a term's or the loads' vector), Newton's round-off floor, the
smallest stretch and a function that makes the element tangent when Newton
asks for it.  In the common case — every term compiled — the rows are summed
by one compiled call (:func:`sum_rows`) instead of a dozen numpy calls: this
runs in every Newton iteration, on vectors of a few hundred entries where
numpy's call overhead is most of the cost.

Examples
--------
>>> import numpy as np
>>> rows = np.array([[1.0, 2.0], [3.0, -2.0]])
>>> R, ref, mag, lam_min, finite = sum_rows(rows, np.array([1.0, 0.0]), 1.0, np.ones(2), np.full((1, 2), 1.1))
>>> R.tolist(), round(ref, 6), finite
([3.0, 0.0], 3.605551, True)
"""
from __future__ import annotations

import math
import numpy as np

from .assembly import named_term
from .core import ROUNDOFF_FACTOR
from .core.jit import njit
from .terms import complex_step_tangent

__all__ = ["FiberPart", "fiber_part", "sum_rows", "vector_norm"]

_EPS = float(np.finfo(float).eps)


def vector_norm(x: np.ndarray) -> float:
    """‖x‖₂ of a 1D array (np.linalg.norm costs several times more on the short vectors here)."""
    return math.sqrt(float(x.dot(x)))


class FiberPart:
    """Residual R (the loads subtracted), reference force, round-off floor, smallest stretch, whether R is
    finite, and ``tangent_fn()`` → element tangent (e, nb, nb) of :func:`fiber_part`."""

    __slots__ = ("residual", "reference_force", "roundoff", "min_stretch", "finite", "tangent_fn")

    def __init__(self, residual, reference_force, roundoff, min_stretch, finite, tangent_fn):
        self.residual, self.reference_force, self.roundoff = residual, reference_force, roundoff
        self.min_stretch, self.finite, self.tangent_fn = min_stretch, finite, tangent_fn


@njit(cache=True)
def sum_rows(rows, external, load_factor, magnitude, stretch):  # pragma: no cover - compiled
    """(R, reference force, ‖magnitude‖, min λ, finite) of R = Σₖ rows[k] − load_factor · external.

    The reference force is the largest of the rows' norms and of the load's;
    R is summed row by row in order (as ``R = rows[0].copy(); R += rows[1] …``).
    ``finite`` is False when an entry of R is inf or nan.
    """
    R = rows[0].copy()
    ref = math.sqrt(np.dot(rows[0], rows[0]))
    for k in range(1, rows.shape[0]):
        R += rows[k]
        ref = max(ref, math.sqrt(np.dot(rows[k], rows[k])))
    if load_factor != 0.0:
        F = load_factor * external
        R -= F
        ref = max(ref, math.sqrt(np.dot(F, F)))
    finite = True
    for i in range(R.shape[0]):
        if not math.isfinite(R[i]):
            finite = False
            break
    return R, ref, math.sqrt(np.dot(magnitude, magnitude)), stretch.min(), finite


def fiber_part(model, u, v, a, t: float, *, c_v: float, c_a: float, load_factor: float, parts, every: bool,
               tangent: bool) -> FiberPart:
    """The chosen terms (``parts``; ``every``: all of the model's) and loads of ``model`` at (u, v, a, t).

    ``tangent``: let the compiled kernel compute its pointwise tangent in the
    same pass; otherwise the tangent function makes it by a second pass when
    asked (modified Newton rarely asks).
    """
    d = model.discretization
    asm = d.assembler
    terms = model.all_terms if every else [term for term in model.all_terms if term.name in parts]
    out = kernel = None
    if model.compiled and terms:
        kernel = model.form_kernel
        if kernel.active:
            mask = None if every else kernel.mask(parts)  # None: all of the kernel's terms
            if mask is None or mask.any():  # the residual and the pointwise tangent; its matrix when Newton asks
                alpha = model.activations(t).ravel()
                out = kernel(u, v, a, t, alpha=alpha, c_v=c_v, c_a=c_a, mask=mask, tangent=tangent)
    in_kernel = () if out is None else kernel.names
    numpy_terms = [] if len(in_kernel) == len(terms) else [term for term in terms if term.name not in in_kernel]

    def tangent_fn():
        if out is not None:  # assembled from the kernel's pointwise tangent (a second pass if not prepared)
            Ke = (out if tangent else kernel(u, v, a, t, alpha=alpha, c_v=c_v, c_a=c_a, mask=mask,
                                             tangent=True)).element_matrices
        else:
            Ke = np.zeros((asm.nelems,) + (asm.nbfun,) * 2)
        for term in numpy_terms:
            with named_term(term.name):
                Ke = Ke + (complex_step_tangent(term.residual, asm, w) if term.tangent is None
                           else asm.bilinear(term.tangent, w))
        return Ke

    w = None
    loads = "loads" in parts
    if out is not None and every and not numpy_terms:  # all terms in the kernel: one compiled call sums them
        R, ref, magnitude, lam_min, finite = sum_rows(out.residuals, model.external_force(t),
                                                      float(load_factor) if loads else 0.0, out.magnitude,
                                                      out.stretch)
        return FiberPart(R, ref, ROUNDOFF_FACTOR * _EPS * magnitude, lam_min, finite, tangent_fn)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a non-finite R is reported by evaluate
        ref = 0.0
        lam = None
        if out is not None:
            R = None
            for name, row in zip(in_kernel, out.residuals):
                if every or name in parts:
                    R = row.copy() if R is None else R.__iadd__(row)
                    ref = max(ref, vector_norm(row))
            magnitude = out.magnitude
            lam = out.stretch
        else:
            R = np.zeros(model.n_dofs)
            magnitude = np.zeros(model.n_dofs)
        if numpy_terms or lam is None:
            w = model.coefficients(u, v, t, c_v=c_v, a=a, c_a=c_a)
            lam = w["lam"]
        for term in numpy_terms:
            with named_term(term.name):
                Ft, Ft_magnitude = asm.linear_vector(term.residual, w, magnitude=True)
            R += Ft
            magnitude = magnitude + Ft_magnitude
            ref = max(ref, vector_norm(Ft))
        if loads:
            Fe = load_factor * model.external_force(t)
            R -= Fe
            ref = max(ref, vector_norm(Fe))
        finite = bool(np.isfinite(R).all())
    return FiberPart(R, ref, ROUNDOFF_FACTOR * _EPS * vector_norm(magnitude), float(lam.min()), finite, tangent_fn)
