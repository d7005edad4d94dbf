"""Stress laws: the physical 2nd Piola–Kirchhoff stress along a fiber.

A stress law maps the state of a material point (stretch λ, stretch rate λ̇,
fiber parameter θ, time t, muscle fraction γM and activation α) to the stress
S together with the partial derivatives ∂S/∂λ and ∂S/∂λ̇ that the consistent
tangent needs (paper Appendix A.1–A.2).

Laws are built symbolically with sympy: the derivatives are exact and the
same expression gives manufactured body forces in closed form.  The paper's
law (eqs. 30, 32, 34) is the sum of :func:`prestress`, :func:`active_stress`
and :func:`passive_kelvin_voigt`; :func:`paper_law` builds it.

Examples
--------
>>> from skfiber.materials import paper_law, law_from_function
>>> law = paper_law(sigma0=30.0)
>>> import sympy as sp
>>> stiffening = law_from_function(lambda lam, lamdot, theta, t: 1e3 * sp.exp(lam - 1))
>>> total = law + stiffening
"""
from __future__ import annotations

import functools
import inspect
import numbers
from dataclasses import KW_ONLY, dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np
import sympy as sp

from .compile.codegen import cse_products, unsupported_function
from .compile.tracer import absolute
from .core.numbers import checked_real

__all__ = [
    "MaterialPoint",
    "StressResponse",
    "StressLaw",
    "SymbolicLaw",
    "law_from_function",
    "prestress",
    "active_stress",
    "passive_kelvin_voigt",
    "paper_law",
    "check_law_derivatives",
    "SYMBOLS",
]


@dataclass(frozen=True)
class MaterialPoint:
    """State of the material points where a law is evaluated.

    All entries broadcast against each other (arrays over elements and
    quadrature points, or scalars).

    Attributes
    ----------
    stretch : λ = ‖a1‖ / ‖A1‖ (–)
    stretch_rate : λ̇ (1/s)
    theta : fiber parameter θ ∈ [0, 1] (–)
    t : time (s)
    muscle_fraction : γM(θ) ∈ [0, 1] (–)
    activation : α(t) ∈ [0, 1] (–)

    All but the stretch and its rate are given by name.

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> point = sf.MaterialPoint(np.array([1.0, 1.2]), np.zeros(2), theta=0.5, muscle_fraction=1.0, activation=0.3)
    >>> response = sf.paper_law()(point)       # S, ∂S/∂λ, ∂S/∂λ̇ at both points
    >>> response.stress.shape
    (2,)
    """

    stretch: np.ndarray
    stretch_rate: np.ndarray
    _: KW_ONLY  # the rest by name: MaterialPoint(λ, λ̇, theta=…, t=…) (θ and t are easily swapped)
    theta: np.ndarray | float = 0.0
    t: float = 0.0
    muscle_fraction: np.ndarray | float = 1.0
    activation: np.ndarray | float = 0.0


@dataclass(frozen=True)
class StressResponse:
    """Physical 2nd Piola–Kirchhoff stress S (Pa) and its partials ∂S/∂λ (Pa) and ∂S/∂λ̇ (Pa·s): what a
    :class:`StressLaw` returns for a :class:`MaterialPoint`.

    Examples
    --------
    >>> response = prestress(30.0)(MaterialPoint(stretch=[1.0, 2.0], stretch_rate=0.0))
    >>> response.stress.tolist(), response.d_stretch.tolist()      # σ0/λ² and −2σ0/λ³
    ([30.0, 7.5], [-60.0, -7.5])
    """

    stress: np.ndarray
    d_stretch: np.ndarray
    d_stretch_rate: np.ndarray


@runtime_checkable
class StressLaw(Protocol):
    """What skfiber needs from a stress law.

    Any object with this method works; its derivatives are checked by
    :func:`check_law_derivatives`.
    """

    def __call__(self, point: MaterialPoint) -> StressResponse:  # pragma: no cover
        ...


# the symbols a symbolic law may use
LAM, LAMDOT, THETA, TIME, GAMMA_M, ALPHA = sp.symbols(
    "lam lamdot theta t gamma_m alpha", real=True
)
SYMBOLS = {
    "stretch": LAM,
    "stretch_rate": LAMDOT,
    "theta": THETA,
    "t": TIME,
    "muscle_fraction": GAMMA_M,
    "activation": ALPHA,
}
ARGUMENTS = (LAM, LAMDOT, THETA, TIME, GAMMA_M, ALPHA)




def _real_abs(expression: sp.Expr) -> sp.Expr:
    """``expression`` with |e| written as a Piecewise (:func:`skfiber.compile.tracer.absolute`) where sympy cannot
    prove e real (a square root or a logarithm of λ): sympy differentiates such an Abs through re and im and
    divides by |e|, nan at e = 0 (at λ = 1 for |√λ − 1|).  An Abs of a real e (its derivative sign(e) e′), of
    an e that holds a Piecewise (the condition e < 0 would hold it, which numpy's path cannot evaluate) and the
    conditions of a Piecewise are left as they are."""
    if isinstance(expression, sp.Abs):
        inner = _real_abs(expression.args[0])
        if inner.is_extended_real or inner.has(sp.Piecewise):  # (a Piecewise in the Piecewise's condition
            return sp.Abs(inner)                                 # breaks numpy's select: left as it is)
        return absolute(inner)
    if isinstance(expression, sp.Piecewise):
        return sp.Piecewise(*((_real_abs(e), c) for e, c in expression.args))
    if not expression.args or not isinstance(expression, sp.Expr):
        return expression
    return expression.func(*map(_real_abs, expression.args))


def _num(value: float) -> sp.Float:
    """A parameter as a sympy number printed with all 17 significant digits."""
    return sp.Float(float(value), 17)


@functools.lru_cache(maxsize=256)
def _numpy_law(expression: sp.Expr):
    """(S, ∂S/∂λ, ∂S/∂λ̇) of an expression as one numpy function of :data:`ARGUMENTS` (one per expression and
    process: a model built again, e.g. by every run of a parameter study, reuses it)."""
    return sp.lambdify(ARGUMENTS, [expression, sp.diff(expression, LAM), sp.diff(expression, LAMDOT)],
                       modules=["numpy", "scipy"], cse=cse_products)


def _non_finite_numbers(expression: sp.Expr) -> list[str]:
    """The nan and infinite numbers of ``expression`` but the values of Piecewise branches (a branch that is
    nan or infinite marks where a law is not defined; a nan parameter makes sympy's whole product nan)."""
    found = []

    def visit(e, branch_value=False):
        if e.is_Number or e is sp.zoo:
            if not branch_value and e.is_finite is not True:  # (nan's is None)
                found.append(str(e))
            return
        if isinstance(e, sp.Piecewise):
            for value, condition in e.args:
                visit(value, branch_value=True)
                visit(condition)
            return
        for arg in e.args:
            visit(arg)

    visit(expression)
    return found


class SymbolicLaw:
    """A stress law given by a sympy expression.

    The expression may use the symbols in :data:`SYMBOLS` (``lam``,
    ``lamdot``, ``theta``, ``t``, ``gamma_m``, ``alpha``).  ∂S/∂λ and ∂S/∂λ̇
    are differentiated symbolically; the numpy function of the three is made
    on the law's first call and shared by the laws of the same expression.

    Parameters
    ----------
    expression
        S(λ, λ̇, θ, t, γM, α) in Pa.
    name
        Shown in ``repr`` and error messages.

    Examples
    --------
    >>> from skfiber.materials import SymbolicLaw, SYMBOLS
    >>> lam = SYMBOLS["stretch"]
    >>> law = SymbolicLaw(1e4 * (1 - lam**-3), name="neo-Hookean cable")
    """

    def __init__(self, expression: sp.Expr, *, name: str = "symbolic law"):
        expression = sp.sympify(expression)
        if getattr(expression, "is_Matrix", False) or not isinstance(expression, sp.Expr):
            raise TypeError(f"{name}: the law is {type(expression).__name__} {expression}, not one scalar "
                            "expression: return the stress S (Pa), a single number at each point")
        unknown = expression.free_symbols - set(ARGUMENTS)
        if unknown:
            names = {str(s) for s in ARGUMENTS}
            twins = sorted(str(s) for s in unknown if str(s) in names)
            raise ValueError(
                f"{name}: the expression uses unknown symbols "
                f"{sorted(map(str, unknown))}; use only {[str(s) for s in ARGUMENTS]} "
                "(see skfiber.materials.SYMBOLS) and numbers for parameters."
                + (f" {twins} share a name with skfiber's symbols but are other symbols (made from a string, or by "
                   "sympy.Symbol without skfiber's assumptions): take them from skfiber.materials.SYMBOLS or from "
                   "the arguments the law's function receives." if twins else "")
            )
        non_finite = _non_finite_numbers(expression)
        if non_finite:
            raise ValueError(f"{name}: the expression holds a non-finite number ({', '.join(non_finite)}) outside "
                             "a branch of a Piecewise: a parameter of the law is nan or infinite; give finite numbers")
        self.expression = _real_abs(expression)
        self.name = name
        for what, part in (("its derivative ∂S/∂λ", self.d_stretch), ("its derivative ∂S/∂λ̇", self.d_rate)):
            if part.has(sp.DiracDelta) or part.has(sp.Derivative):
                cause = ("DiracDelta (the derivative of sympy.sign or Heaviside)" if part.has(sp.DiracDelta) else
                         "a derivative sympy cannot take (of floor, ceiling or a function it does not know)")
                raise ValueError(f"{name}: {what} holds {cause}, which no path can evaluate; write kinks and "
                                 "switches with sympy.Piecewise, sympy.Max or sympy.Min")

    @functools.cached_property
    def uncompilable(self) -> str | None:
        """The function in S or its derivatives that the generated kernels cannot evaluate (the law then runs
        with numpy), or None."""
        return next(filter(None, map(unsupported_function, (self.expression, self.d_stretch, self.d_rate))), None)

    @functools.cached_property
    def d_stretch(self) -> sp.Expr:
        """∂S/∂λ."""
        return sp.diff(self.expression, LAM)

    @functools.cached_property
    def d_rate(self) -> sp.Expr:
        """∂S/∂λ̇."""
        return sp.diff(self.expression, LAMDOT)

    @functools.cached_property
    def _compiled(self):
        # made when the law is first called with numpy (a law that is only a part of a sum, or that runs in
        # the model's compiled kernel, never is), and shared by every law of the same expression in a process
        return _numpy_law(self.expression)

    def __getstate__(self) -> dict:
        # without the numpy function (made again where the law is called): a law pickles, e.g. to a study's
        # workers, whether it has been called or not
        return {k: v for k, v in vars(self).items() if k != "_compiled"}

    def __call__(self, point: MaterialPoint) -> StressResponse:
        args = tuple(np.asarray(a) for a in (  # (lists and numbers too; a complex step stays complex)
            point.stretch,
            point.stretch_rate,
            point.theta,
            point.t,
            point.muscle_fraction,
            point.activation,
        ))
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        s, ds, dr = self._compiled(*args)
        zero = np.zeros(shape)
        return StressResponse(zero + s, zero + ds, zero + dr)

    def stress_expression(self, **substitutions: sp.Expr) -> sp.Expr:
        """The expression with symbols replaced by the given expressions.

        Keys are the names of :data:`SYMBOLS` (``stretch``, ``stretch_rate``,
        ``theta``, ``t``, ``muscle_fraction``, ``activation``).  Used for
        manufactured solutions.
        """
        bad = set(substitutions) - set(SYMBOLS)
        if bad:
            raise ValueError(f"unknown keys {sorted(bad)}; pick from {sorted(SYMBOLS)}")
        return self.expression.subs({SYMBOLS[k]: v for k, v in substitutions.items()})

    def __add__(self, other: "SymbolicLaw") -> "SymbolicLaw":
        if isinstance(other, SymbolicLaw):
            return SymbolicLaw(
                self.expression + other.expression, name=f"{self.name} + {other.name}"
            )
        if isinstance(other, StressLaw):
            return SumLaw((self, other))
        return NotImplemented

    def __radd__(self, other):
        """``0 + law`` (``sum([law1, law2])`` starts from 0) and ``hand_written + law``."""
        if _is_zero(other):
            return self
        if isinstance(other, StressLaw):
            return SumLaw((other, self))
        return NotImplemented

    def __mul__(self, factor) -> "SymbolicLaw":
        """A law scaled by a real number, e.g. ``0.5 * law``."""
        if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, numbers.Real):
            return NotImplemented
        checked_real("the factor of a law", factor)
        return SymbolicLaw(_num(factor) * self.expression, name=f"{factor:g} × {self.name}")

    __rmul__ = __mul__

    def __neg__(self) -> "SymbolicLaw":
        return self * -1.0

    def __sub__(self, other):
        if isinstance(other, SymbolicLaw):
            return self + (-other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"SymbolicLaw({self.name}: S = {self.expression})"


class SumLaw:
    """The sum of stress laws of any kind (symbolic or hand-written)."""

    def __init__(self, laws: tuple):
        self.laws = tuple(laws)

    def __call__(self, point: MaterialPoint) -> StressResponse:
        parts = [law(point) for law in self.laws]
        return StressResponse(
            sum(p.stress for p in parts),
            sum(p.d_stretch for p in parts),
            sum(p.d_stretch_rate for p in parts),
        )

    def __add__(self, other):
        if isinstance(other, StressLaw):
            return SumLaw(self.laws + (other,))
        return NotImplemented

    def __radd__(self, other):
        if _is_zero(other):
            return self
        if isinstance(other, StressLaw):
            return SumLaw((other,) + self.laws)
        return NotImplemented


def _is_zero(value) -> bool:
    """Whether ``value`` is the number 0 (the start of ``sum``)."""
    return isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_)) and value == 0


def law_from_function(function: Callable, *, name: str | None = None) -> SymbolicLaw:
    """Turn a plain Python function of (λ, λ̇, θ, t) into a stress law.

    The function is called once with sympy symbols and must return S in Pa
    built from arithmetic and sympy functions (``sympy.exp``, ``sympy.tanh``,
    ``sympy.Piecewise``, …).  It may also accept the keyword arguments
    ``muscle_fraction`` (γM) and ``activation`` (α).  Derivatives are exact.

    Why sympy: a law written once gives exact ∂S/∂λ, ∂S/∂λ̇ (no step size to
    tune, unlike finite differences; no silent errors with ``abs`` or
    ``max``, unlike complex step) and closed-form manufactured body forces;
    the compiled numpy code is as fast as hand-written code.

    Examples
    --------
    >>> import sympy as sp
    >>> law = law_from_function(lambda lam, lamdot, theta, t: 2e4 * sp.log(lam) + 10 * lamdot)
    """
    if not callable(function):
        raise TypeError(f"law_from_function needs a callable, got {type(function).__name__}")
    params = inspect.signature(function).parameters
    kwargs = {}
    for key in ("muscle_fraction", "activation"):
        if key in params:
            kwargs[key] = SYMBOLS[key]
    name = name or getattr(function, "__name__", "custom law")
    try:
        expression = function(LAM, LAMDOT, THETA, TIME, **kwargs)
    except TypeError as err:
        raise TypeError(
            f"{name}: calling the law with sympy symbols failed ({err}). Write it with "
            "arithmetic and sympy functions (sympy.exp, not numpy.exp; sympy.Piecewise "
            "instead of if/else), with signature f(lam, lamdot, theta, t) and, if it needs them, the keywords "
            "muscle_fraction and activation."
        ) from err
    returned = expression
    if isinstance(returned, str):
        raise TypeError(f"{name}: the law returned the string {returned!r}, not a number or a sympy expression: "
                        "compute the stress from the law's arguments (lam, lamdot, theta, t)")
    try:
        expression = sp.sympify(expression)
    except (sp.SympifyError, TypeError) as err:
        raise TypeError(
            f"{name}: the law returned {type(expression).__name__}, not a sympy "
            "expression; use sympy functions (sympy.exp, …) instead of numpy ones."
        ) from err
    if not isinstance(expression, sp.Expr):
        raise TypeError(f"{name}: the law returned {returned!r} ({type(returned).__name__}), not a number or a "
                        "sympy expression: return the stress S(lam, lamdot, theta, t) (Pa)")
    return SymbolicLaw(expression, name=name)


def _check_finite(**params: float) -> None:
    for key, value in params.items():
        checked_real(key, value)


def _check_nonnegative(**params: float) -> None:
    _check_finite(**params)
    for key, value in params.items():
        if value < 0:
            raise ValueError(f"{key} must be ≥ 0, got {value!r}")


def _check_positive(**params: float) -> None:
    _check_finite(**params)
    for key, value in params.items():
        if value <= 0:
            raise ValueError(f"{key} must be > 0, got {value!r}")


def prestress(sigma0: float) -> SymbolicLaw:
    """Prestress S = σ0 / λ² (paper eq. 34); σ0 ≥ 0 in Pa.

    Examples
    --------
    >>> import skfiber as sf
    >>> law = sf.prestress(100.0)   # laws add up: sf.passive_kelvin_voigt(...) + sf.prestress(...)
    >>> float(law(sf.MaterialPoint(2.0, 0.0, theta=0.5, muscle_fraction=1.0)).stress)   # λ = 2: σ0/4
    25.0
    """
    _check_nonnegative(sigma0=sigma0)  # (it keeps the cable taut; a negative one would compress it everywhere)
    return SymbolicLaw(_num(sigma0) / LAM**2, name=f"prestress(σ0={sigma0:g})")


def active_stress(
    s_max: float, *, lam_opt: float = 1.3, delta_w: float = 0.3, nu: float = 4.0
) -> SymbolicLaw:
    """Active stress S = γM α Smax/λ² exp(−‖(λ/λopt − 1)/ΔW‖^ν) (paper eq. 32).

    Parameters
    ----------
    s_max
        Maximal isometric stress Smax (Pa).
    lam_opt, delta_w, nu
        Optimal stretch, width and exponent of the force–length curve (ν > 1: the slope of the curve is
        continuous at λopt).

    Examples
    --------
    >>> import skfiber as sf
    >>> law = sf.active_stress(3e5, lam_opt=1.0)
    >>> float(law(sf.MaterialPoint(1.0, 0.0, theta=0.5, muscle_fraction=1.0, activation=0.5)).stress)   # at λopt, α = 0.5: α Smax
    150000.0
    """
    _check_nonnegative(s_max=s_max)
    _check_positive(lam_opt=lam_opt, delta_w=delta_w, nu=nu)
    if nu <= 1:
        raise ValueError(f"nu must be > 1, got {nu!r}: the force–length curve exp(−|z|^ν) then has an infinite "
                         "(ν < 1) or jumping (ν = 1) slope at λ = lam_opt, where Newton's tangent breaks down; "
                         "the paper uses ν = 4")
    z = (LAM / _num(lam_opt) - 1) / _num(delta_w)
    nu_s = sp.Integer(int(nu)) if float(nu).is_integer() else _num(nu)
    shape = sp.exp(-sp.Abs(z) ** nu_s)
    return SymbolicLaw(
        GAMMA_M * ALPHA * _num(s_max) / LAM**2 * shape,
        name=f"active(Smax={s_max:g}, λopt={lam_opt:g}, ΔW={delta_w:g}, ν={nu:g})",
    )


def passive_kelvin_voigt(
    *,
    mu_muscle: float,
    mu_tendon: float,
    eta_muscle: float,
    eta_tendon: float,
) -> SymbolicLaw:
    """Passive muscle/tendon blend (paper eq. 30).

    S = Σ_{i=M,T} f_i(γM) [μ_i (1 − λ⁻³) + 3 η_i λ̇ / λ³] with f_M = γM and
    f_T = 1 − γM.  μ in Pa, η in Pa·s.  For a homogeneous fiber give
    ``mu_muscle == mu_tendon`` (then γM does not matter).

    Parameters
    ----------
    mu_muscle, mu_tendon
        Shear moduli μM, μT of muscle and tendon (Pa).
    eta_muscle, eta_tendon
        Viscosities ηM, ηT (Pa·s).

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> law = sf.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e6, eta_muscle=0.0, eta_tendon=0.0)
    >>> point = sf.MaterialPoint(np.array([1.0, 2.0]), np.zeros(2), theta=0.5, muscle_fraction=1.0)  # λ = 1, 2; γM = 1
    >>> law(point).stress.tolist()   # μM (1 − λ⁻³)
    [0.0, 8750.0]
    """
    _check_nonnegative(
        mu_muscle=mu_muscle, mu_tendon=mu_tendon, eta_muscle=eta_muscle, eta_tendon=eta_tendon
    )
    def branch(mu, eta):
        return _num(mu) * (1 - LAM**-3) + 3 * _num(eta) * LAMDOT / LAM**3

    return SymbolicLaw(
        GAMMA_M * branch(mu_muscle, eta_muscle) + (1 - GAMMA_M) * branch(mu_tendon, eta_tendon),
        name=f"passive(μM={mu_muscle:g}, μT={mu_tendon:g}, ηM={eta_muscle:g}, ηT={eta_tendon:g})",
    )


def paper_law(
    *,
    sigma0: float = 30.0,
    mu_muscle: float = 1e5,
    mu_tendon: float = 1e6,
    eta_muscle: float = 1e4,
    eta_tendon: float = 1e4,
    s_max: float = 3e5,
    lam_opt: float = 1.3,
    delta_w: float = 0.3,
    nu: float = 4.0,
) -> SymbolicLaw:
    """The paper's law: prestress + active + passive (eqs. 30, 32, 34).

    S = σ0/λ² + γM α Smax/λ² exp(−``|(λ/λopt − 1)/ΔW|``^ν)
    + Σ_{i=M,T} f_i(γM) [μ_i (1 − λ⁻³) + 3 η_i λ̇/λ³] with f_M = γM, f_T = 1 − γM
    (:func:`prestress`, :func:`active_stress`, :func:`passive_kelvin_voigt`).
    Defaults are Table 1 of the paper (section 5.1).

    Parameters
    ----------
    sigma0
        Prestress σ0 (Pa), ≥ 0.
    mu_muscle, mu_tendon
        Shear moduli μM, μT of muscle and tendon (Pa).
    eta_muscle, eta_tendon
        Viscosities ηM, ηT (Pa·s).
    s_max
        Maximal isometric stress Smax (Pa).
    lam_opt, delta_w, nu
        Optimal stretch λopt, width ΔW and exponent ν (> 1) of the active force–length curve (all –).

    Examples
    --------
    >>> biceps = paper_law(sigma0=32.7, mu_muscle=2e4, eta_muscle=1e3, eta_tendon=1e3, s_max=4.2e7)
    """
    return (
        prestress(sigma0)
        + active_stress(s_max, lam_opt=lam_opt, delta_w=delta_w, nu=nu)
        + passive_kelvin_voigt(
            mu_muscle=mu_muscle, mu_tendon=mu_tendon, eta_muscle=eta_muscle, eta_tendon=eta_tendon
        )
    )


def check_law_derivatives(
    law: StressLaw,
    *,
    stretch: np.ndarray | None = None,
    stretch_rate: np.ndarray | None = None,
    muscle_fraction: float = 0.5,
    activation: float = 0.5,
    t: float = 0.0,
    theta: float = 0.5,
    step: float = 1e-6,
) -> float:
    """Largest relative error of ∂S/∂λ, ∂S/∂λ̇ against finite differences.

    Returns max ‖analytic − FD‖ / max(‖analytic‖, scale) over the sample
    points, where scale is the typical size of the derivative; ``inf`` where the stress or a derivative
    is not finite at a sample point (a NaN or an infinity cannot be right).  At each point FD is the
    central or a one-sided difference, whichever is closest: a law with a kink (a ``Piecewise``, e.g.
    tension only) has a one-sided derivative at a sample on its kink, which only a central difference
    straddling the kink would miss; a wrong derivative misses all three.  One-sided differences count only
    where the stress is continuous (they do not change when the step is halved): a stress that jumps at a
    sample has no derivative there and fails the check.

    Parameters
    ----------
    law
        The law to check (a :class:`StressLaw`, or a function of a :class:`MaterialPoint`).
    stretch, stretch_rate
        The sample points' λ (–) and λ̇ (1/s); default 37 points λ ∈ [0.7, 1.6] with λ̇ ∈ [−0.5, 0.5] 1/s.
    muscle_fraction, activation, t, theta
        γM, α, the time (s) and θ of every sample point.
    step
        The differences' step in λ and λ̇ (default 1e-6).

    Raises
    ------
    TypeError
        If ``law`` is not callable (a :class:`StressLaw` or a function of a :class:`MaterialPoint`).

    Examples
    --------
    >>> from skfiber.materials import paper_law, check_law_derivatives
    >>> check_law_derivatives(paper_law()) < 1e-6
    True
    """
    if not callable(law):
        raise TypeError(f"check_law_derivatives checks a stress law (a StressLaw, or a function of a MaterialPoint "
                        f"returning a StressResponse), got {law!r}")
    checked_real("step", step, above=0, hint=" (the differences' step in λ and λ̇, e.g. 1e-6)")
    lam = np.linspace(0.7, 1.6, 37) if stretch is None else np.asarray(stretch, float)
    rate = np.linspace(-0.5, 0.5, lam.size) if stretch_rate is None else np.asarray(stretch_rate, float)

    def point(lam_, rate_):
        return MaterialPoint(lam_, rate_, theta=theta, t=t, muscle_fraction=muscle_fraction, activation=activation)

    base = law(point(lam, rate))
    S0 = np.broadcast_to(base.stress, np.broadcast(lam, rate).shape)
    errors = []
    for analytic, stress_at in ((base.d_stretch, lambda d: law(point(lam + d, rate)).stress),
                                (base.d_stretch_rate, lambda d: law(point(lam, rate + d)).stress)):
        up, down, up2, down2 = (stress_at(d) for d in (step, -step, step / 2, -step / 2))
        central = (up - down) / (2 * step)
        sides = np.stack(np.broadcast_arrays((up - S0) / step, (S0 - down) / step))
        halves = np.stack(np.broadcast_arrays((up2 - S0) / (step / 2), (S0 - down2) / (step / 2)))
        if not (np.isfinite(analytic).all() and np.isfinite(central).all() and np.isfinite(sides).all()
                and np.isfinite(halves).all() and np.isfinite(S0).all()):
            return float("inf")
        scale = max(np.max(np.abs(analytic)), np.max(np.abs(S0)) * 1e-3, 1e-300)
        # a one-sided difference counts only where the stress is continuous on both sides: there it does not
        # change with the step (a jump J of the stress at the point gives J/step, doubling with half the step)
        continuous = np.all(np.abs(sides - halves) <= 1e-3 * (np.abs(sides) + scale), axis=0)
        error = np.abs(central - analytic)
        one_sided = np.min(np.abs(sides - analytic), axis=0)
        errors.append(np.max(np.where(continuous, np.minimum(error, one_sided), error)) / scale)
    return float(max(errors))
