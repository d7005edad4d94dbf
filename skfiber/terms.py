"""User-defined terms of the weak form.

A term adds a residual ``R(ξ)`` (a scikit-fem ``LinearForm``) to the cable
equations.  The model compiles it with its other terms (:mod:`skfiber.compile`):
the form is evaluated on symbolic jets, its tangent ``∂R/∂u`` (with
c_v ∂/∂ẋ + c_a ∂/∂ẍ) is derived symbolically, and one numba kernel runs them all.
A tangent may be given as a ``BilinearForm``; it is then compiled instead of the
derived one.  On the numpy path (``Model(compiled=False)``, or a form the
compiler cannot trace) a term without a tangent gets one by the complex step
along every local basis function at once.  Terms see in ``w`` the current state:

=============  =====================================================
``x``          current centerline (value (3, e, q), ``.grad``, ``.hess``)
``xdot``       its velocity (same layout)
``xddot``      its acceleration (same layout)
``X``          reference centerline
``theta``      fiber parameter θ; ``t`` time (s)
``J``          ``|A1|``; ``area`` π r0²; ``rho``; ``gamma_m`` γM; ``alpha`` α(t)
``x_s``        ``x′/|A1|``; ``xdot_s`` ``ẋ′/|A1|``; ``lam``, ``lamdot`` λ, λ̇; ``S`` the fiber's stress
``dS_dlam``    ∂S/∂λ, and ``dS_dlamdot`` ∂S/∂λ̇ (a term reading them needs the compiled path or its tangent)
``h``          the element's length in θ (scikit-fem's; a form reading it runs with numpy)
``c_v, c_a``   ∂v/∂u, ∂a/∂u of the time scheme (tangent forms only)
=============  =====================================================

(:data:`skfiber.assembly.COEFFICIENTS`; a form that reads another name is an ``InvalidForm``.)

Sign convention: the residual is what stands on the left of "= 0" in the
weak form (internal minus external), e.g. a bending term EI ∫ x_ss · ξ_ss dS.

Examples
--------
>>> from skfem import LinearForm
>>> from skfem.helpers import dot
>>> from skfiber.terms import Term, d2
>>> EI = 1e-4
>>> @LinearForm
... def bending(v, w):
...     return EI * dot(d2(w.x), d2(v)) / w.J**3
>>> term = Term(bending, name="bending")   # tangent derived
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
from skfem import BilinearForm, LinearForm
from skfem.element import DiscreteField

from .assembly import BatchedAssembler, form_function
from .forms import cable_kinematics

__all__ = ["Term", "d1", "d2", "complex_step_tangent"]

COMPLEX_STEP = 1e-30
#: what ``w`` holds that the complex step cannot perturb: the law's first partials (∂S/∂λ, ∂S/∂λ̇)
SECOND_DERIVATIVE_KEYS = ("dS_dlam", "dS_dlamdot")


def d1(v):
    """First θ-derivative of a (stacked) vector field: v′, shape (3, …).

    In a form: ``d1(w.x)`` is x′ at the quadrature points, ``d1(v)`` the test function's ξ′.

    Examples
    --------
    >>> import numpy as np
    >>> from skfiber import Fiber
    >>> from skfiber.discretization import Discretization
    >>> X = Discretization([Fiber(lambda th: np.array([th, 0 * th, th**2]), 2)]).reference_field  # X = (θ, 0, θ²)
    >>> d1(X).shape                                   # (3, elements, quadrature points)
    (3, 2, 4)
    >>> theta = X[0]                                  # θ at the quadrature points (X1 = θ)
    >>> np.allclose(d1(X), [np.ones_like(theta), 0 * theta, 2 * theta])   # X′ = (1, 0, 2θ)
    True
    """
    return v.grad[:, 0]


def d2(v):
    """Second θ-derivative of a (stacked) vector field: v″, shape (3, …).

    In a form: ``d2(w.x)`` is x″ at the quadrature points, ``d2(v)`` the test function's ξ″ (see the module's
    bending term).

    Examples
    --------
    >>> import numpy as np
    >>> from skfiber import Fiber
    >>> from skfiber.discretization import Discretization
    >>> X = Discretization([Fiber(lambda th: np.array([th, 0 * th, th**2]), 2)]).reference_field  # X = (θ, 0, θ²)
    >>> np.allclose(d2(X), np.reshape([0.0, 0.0, 2.0], (3, 1, 1)))   # X″ = (0, 0, 2) at every quadrature point
    True
    """
    if v.hess is None:
        raise ValueError("this field has no second derivatives (cubic Hermite fields do)")
    return v.hess[:, 0, 0]


@dataclass(frozen=True)
class Term:
    """An extra term of the weak form.

    Parameters
    ----------
    residual
        ``LinearForm`` (or plain function ``(v, w)``) giving the term's
        contribution to the residual.
    tangent
        ``BilinearForm`` (or function ``(u, v, w)``) giving ∂residual/∂u in
        direction u, including c_v ∂/∂ẋ for rate-dependent terms.  ``None``:
        derived — symbolically by the form compiler, or by the complex step
        on the numpy path (use arithmetic, ``np.sqrt``, ``np.exp``, and for branches ``np.maximum``,
        ``np.minimum``, ``np.abs``, ``np.clip``, ``np.where`` or a comparison read as 1 or 0; an ``if`` on
        a value cannot be compiled and runs with numpy).
    name
        Shown in reports and usable in :func:`skfiber.check_tangent`.

    Examples
    --------
    >>> from skfem import LinearForm
    >>> from skfem.helpers import dot
    >>> from skfiber import Fiber, Model
    >>> @LinearForm
    ... def drag(v, w):                        # c ∫ ẋ · ξ dS, c = 2 N·s/m²
    ...     return 2.0 * dot(w.xdot, v) * w.J
    >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)])
    >>> model.add_term(Term(drag, name="drag")).name      # the tangent derived
    'drag'
    """

    residual: LinearForm | object
    tangent: BilinearForm | object | None = None
    name: str = "term"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a term's name must be a non-empty string (for parts= and reports), got {self.name!r}")
        if not _takes(form_function(self.residual), 2):
            raise TypeError(f"Term {self.name!r}: residual must be a LinearForm or a function (v, w), got "
                            f"{_described(self.residual)}")
        if self.tangent is not None and not _takes(form_function(self.tangent), 3):
            raise TypeError(f"Term {self.name!r}: tangent must be a BilinearForm, a function (u, v, w) or None, got "
                            f"{_described(self.tangent)}")


def _takes(function, n: int) -> bool:
    """Whether ``function`` is callable with ``n`` positional arguments (callable and True when Python cannot
    tell the arguments)."""
    if not callable(function):
        return False
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*range(n))
    except TypeError:
        return False
    return True


def _described(form) -> str:
    """A form for an error message: its name and arguments when it has them."""
    function = form_function(form)
    if not callable(function):
        return f"a {type(form).__name__}"
    try:
        return f"{getattr(function, '__name__', type(function).__name__)}{inspect.signature(function)}"
    except (TypeError, ValueError):
        return repr(function)


def _perturbed(field: DiscreteField, direction: DiscreteField, scale: complex) -> DiscreteField:
    """field + scale · direction, the direction's two stacked jet axes kept."""
    value = np.asarray(field)[:, None, None] + scale * np.asarray(direction)
    grad = field.grad[:, :, None, None] + scale * direction.grad
    hess = None
    if field.hess is not None and direction.hess is not None:
        hess = field.hess[:, :, :, None, None] + scale * direction.hess
    return DiscreteField(value, grad=grad, hess=hess)


#: the fields the complex step perturbs or derives again from the perturbed ones (the others only gain the jet axes)
_PERTURBED_KEYS = ("x", "xdot", "xddot", "x_s", "xdot_s", "lam", "lamdot", "S")


def _jet_axes(value):
    """A coefficient of ``w`` with the two jet axes of the perturbed fields inserted before its last two axes
    (elements, quadrature points), so that it broadcasts against them: a DiscreteField field by field (X and
    its derivatives), an array with axes of its own before (e, q) likewise; others as they are."""
    if isinstance(value, DiscreteField):
        parts = value.astuple
        return DiscreteField(*(None if a is None else _jet_axes(np.asarray(a)) for a in parts))
    if isinstance(value, np.ndarray) and value.ndim >= 2:
        return value.reshape(value.shape[:-2] + (1, 1) + value.shape[-2:])
    return value


def complex_step_tangent(residual, assembler: BatchedAssembler, w) -> np.ndarray:
    """Element tangents (e, nb, nb) of a residual form by the complex step.

    x → x + ih δ, ẋ → ẋ + ih c_v δ and ẍ → ẍ + ih c_a δ for every unit jet δ
    at once (on the trial axis), and with them what ``w`` derives from x and ẋ:
    x_s, ẋ_s, λ, λ̇ (:func:`skfiber.forms.cable_kinematics` on the perturbed
    fields) and S (S + ∂S/∂λ Δλ + ∂S/∂λ̇ Δλ̇: exact in the imaginary part, which
    is all the complex step reads).  The pointwise tangent is Im R / h,
    contracted like any bilinear form by :meth:`BatchedAssembler.contract`.

    Raises
    ------
    ValueError
        If the form reads ``w.dS_dlam`` or ``w.dS_dlamdot``: their dependence on u
        needs the law's second derivatives (give such a term its tangent form).
    """
    h = COMPLEX_STEP
    fn = form_function(residual)

    def run(hess):
        jets = assembler.probe(axis=1, naxes=2, hess=hess)
        wc = type(w)({key: value if key in _PERTURBED_KEYS else _jet_axes(value) for key, value in w.items()})
        wc["x"] = _perturbed(w["x"], jets, 1j * h)
        wc["xdot"] = _perturbed(w["xdot"], jets, 1j * h * w["c_v"])
        if "xddot" in w:
            wc["xddot"] = _perturbed(w["xddot"], jets, 1j * h * w["c_a"])
        if "lam" in w:  # the kinematics and stress of the perturbed state, as the forms see them
            kin = cable_kinematics(wc["x"], wc["xdot"], w["J"])
            wc["x_s"], wc["xdot_s"], wc["lam"], wc["lamdot"] = kin.x_s, kin.xdot_s, kin.lam, kin.lamdot
            if "S" in w:
                wc["S"] = (w["S"] + w["dS_dlam"] * (kin.lam - w["lam"])
                           + w["dS_dlamdot"] * (kin.lamdot - w["lamdot"]))
        for key in SECOND_DERIVATIVE_KEYS:  # their perturbation needs the law's second derivatives
            wc.pop(key, None)
        try:
            return np.asarray(fn(assembler.probe(axis=0, naxes=2, hess=hess), wc))
        except AttributeError as err:
            if any(f"'{key}'" in str(err) for key in SECOND_DERIVATIVE_KEYS):
                raise ValueError(
                    f"the residual {_described(residual)} reads ∂S/∂λ or ∂S/∂λ̇ (w.dS_dlam, w.dS_dlamdot): on the "
                    "numpy path its tangent cannot be derived (it needs the law's second derivatives); give the "
                    "term its tangent form (Model.add_term(residual, tangent)), or use the compiled path") from None
            raise

    values, hess = assembler.call_form(residual, 2, run)
    J = assembler.n_jets[hess]
    D = np.broadcast_to(values, (J, J, assembler.nelems, assembler.nqp)).imag / h
    return assembler.contract(D, hess)
