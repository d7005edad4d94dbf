"""A fiber: reference centerline X(θ), radius r0(θ), muscle fraction γM(θ), material.

θ ∈ [0, 1] is the fiber parameter (the 1D mesh coordinate).

Examples
--------
>>> from skfiber import Fiber
>>> from skfiber.materials import paper_law
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=16, radius=0.05,
...                        density=900.0, law=paper_law())
"""
from __future__ import annotations

import inspect
import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Callable, Sequence

import numpy as np

from .core.numbers import checked_real
from .materials import StressLaw, paper_law

__all__ = ["Fiber", "MIN_LENGTH"]

#: the shortest fiber (m): shorter ones are coordinates in another unit, or round-off
MIN_LENGTH = 1e-9

ScalarField = float | Callable[[np.ndarray], np.ndarray]
_SAMPLES = np.linspace(0.0, 1.0, 201)


def _evaluate_scalar(value: ScalarField, theta: np.ndarray, name: str) -> np.ndarray:
    if callable(value):
        try:
            out = np.asarray(value(theta), dtype=float)
        except (TypeError, ValueError) as err:
            try:  # one θ at a time works: the function is not vectorized
                float(value(float(np.ravel(theta)[0])))
            except Exception:
                raise type(err)(f"{name}(θ) failed: {err}") from err
            raise ValueError(
                f"{name}(θ) failed when called with an array of θ ({err}); it must be vectorized: write it with "
                "numpy (np.where, np.sin, …) instead of `if` or math.*, e.g. lambda th: np.where(th < 0.5, 1.0, 0.5)"
            ) from err
        try:
            return np.broadcast_to(out, np.shape(theta)).copy()
        except ValueError as err:
            raise ValueError(
                f"{name}(θ) returned shape {out.shape} for θ of shape {np.shape(theta)}; "
                "it must be vectorized (return one value per θ)."
            ) from err
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number or a vectorized callable of θ, got {value!r}")
    return np.full(np.shape(theta), float(value))


def _check_law(law) -> None:
    """Raise TypeError unless ``law`` can be called with one :class:`~skfiber.MaterialPoint` (a plain function
    of the stretch and the other variables belongs in :func:`~skfiber.law_from_function`)."""
    if not isinstance(law, StressLaw):
        raise TypeError(f"law must be a stress law (callable taking a MaterialPoint), got {law!r}")
    try:
        signature = inspect.signature(law)
    except (TypeError, ValueError):  # (a builtin or an extension type: nothing to check)
        return
    required = [p for p in signature.parameters.values() if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) >= 2:  # (one argument, or none that inspect sees, is left to the call)
        raise TypeError(
            f"law must be called with one MaterialPoint, but {getattr(law, '__name__', law)!r} takes {signature}; "
            "for a function of (λ, λ̇, θ, t) use skfiber.law_from_function(function), e.g. "
            "law_from_function(lambda lam, lamdot, theta, t: 2e4 * sympy.log(lam))"
        )


@dataclass(eq=False)
class Fiber:
    """One muscle fiber (a cable).

    Parameters
    ----------
    curve
        Reference centerline X(θ): takes θ of shape (n,), returns (3, n), in m.
    n_elements
        Number of cubic Hermite elements along the fiber.
    radius
        Reference radius r0 (m), a number or a vectorized callable of θ.
    muscle_fraction
        γM ∈ [0, 1] (1 = pure muscle, 0 = tendon), number or callable of θ.
    density
        ρ0 (kg/m³).
    law
        Stress law (see :mod:`skfiber.materials`); default: Table 1 of the paper.
    activation
        α(t) ∈ [0, 1], number or callable of t (a function of t alone: the
        model evaluates it once per time and reuses the value while t and the
        ``activation`` attribute stay the same).
    tangent
        Optional X′(θ) (3, n); by default a 4th-order central difference of
        ``curve``.
    name
        Used to refer to the fiber (boundary conditions, output).

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> arc = sf.Fiber(lambda th: np.array([np.cos(th), np.sin(th), 0 * th]), 8, radius=0.01, name="arc")
    >>> np.round(arc.reference_position(np.array([0.0, 1.0])), 4)   # X(θ) at both ends, (3, n)
    array([[1.    , 0.5403],
           [0.    , 0.8415],
           [0.    , 0.    ]])
    >>> straight = sf.Fiber.straight((0, 0, 0), (0.3, 0, 0), n_elements=4, law=sf.paper_law(), activation=0.5)
    >>> straight.activation_at(0.0)
    0.5
    """

    curve: Callable[[np.ndarray], np.ndarray]
    n_elements: int
    _: KW_ONLY  # the options by name only: Fiber(curve, 8, radius=0.01, law=…)
    radius: ScalarField = 0.05
    muscle_fraction: ScalarField = 1.0
    density: float = 900.0
    law: StressLaw = field(default_factory=paper_law)
    activation: float | Callable[[float], float] = 0.0
    tangent: Callable[[np.ndarray], np.ndarray] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.n_elements, bool) or not isinstance(self.n_elements, (int, np.integer)):
            raise TypeError(f"n_elements must be an integer, got {self.n_elements!r}")
        if self.n_elements < 1:
            raise ValueError(f"n_elements must be ≥ 1, got {self.n_elements}")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string (used to refer to the fiber), got {self.name!r}")
        if not callable(self.curve):
            raise TypeError(
                "curve must be a callable X(θ) returning (3, n); use Fiber.straight "
                "or Fiber.polyline for points"
            )
        _check_law(self.law)
        checked_real("density", self.density, above=0, unit="kg/m³")
        r0 = _evaluate_scalar(self.radius, _SAMPLES, "radius")
        if not np.all(np.isfinite(r0)) or np.any(r0 <= 0):
            raise ValueError(
                f"radius r0 must be finite and > 0 on [0, 1]; got min {np.min(r0):g}. "
                "Give the reference radius in metres."
            )
        gm = _evaluate_scalar(self.muscle_fraction, _SAMPLES, "muscle_fraction")
        if not np.all(np.isfinite(gm)) or np.any(gm < 0) or np.any(gm > 1):
            raise ValueError(
                f"muscle_fraction γM must lie in [0, 1]; got values in [{np.min(gm):g}, {np.max(gm):g}]"
            )
        self.activation_at(0.0)  # checks the number (or what the callable returns)
        X = _vector_field(self.reference_position, "curve", "X(θ)")
        if not np.all(np.isfinite(X)):
            raise ValueError("curve(θ) returned non-finite values on [0, 1]")
        if self.tangent is not None:
            _check_tangent_of_curve(self)
        A1 = np.linalg.norm(self.reference_tangent(_SAMPLES), axis=0)
        length = float(np.trapezoid(A1, _SAMPLES))
        if not np.all(np.isfinite(A1)) or length <= 0 or np.min(A1) <= 1e-12 * max(length, 1e-300):
            raise ValueError(
                f"the reference curve has (nearly) zero length or a point with X′(θ) = 0 "
                f"(length {length:g} m); give distinct end points or a regular curve."
            )
        if length < MIN_LENGTH:
            raise ValueError(
                f"the fiber is {length:.3g} m long, shorter than {MIN_LENGTH:g} m; give its coordinates in metres "
                "(SI units)"
            )

    # --- constructors -------------------------------------------------------
    @classmethod
    def straight(cls, start: Sequence[float], end: Sequence[float], *, n_elements: int, **kwargs) -> "Fiber":
        """A straight fiber from ``start`` to ``end`` (m), θ = 0 at ``start``.

        Parameters
        ----------
        start, end
            The end points (m), distinct.
        n_elements
            Number of cubic Hermite elements along the fiber.
        **kwargs
            The other fields of :class:`Fiber`: ``radius``, ``muscle_fraction``, ``density``, ``law``,
            ``activation``, ``name``.

        Examples
        --------
        >>> from skfiber import Fiber
        >>> fiber = Fiber.straight((0, 0, 0), (0, 0, -0.3), n_elements=8, radius=0.002, name="biceps")
        >>> fiber.reference_position([0.0, 1.0]).T.tolist(), fiber.n_elements
        ([[0.0, 0.0, 0.0], [0.0, 0.0, -0.3]], 8)
        """
        a = _point(start, "start")
        b = _point(end, "end")
        if np.linalg.norm(b - a) == 0:
            raise ValueError(f"zero-length fiber: start and end are both {a.tolist()}; give two distinct points")
        d = b - a
        return cls(
            curve=lambda th: a[:, None] + d[:, None] * np.asarray(th)[None, :],
            tangent=lambda th: np.repeat(d[:, None], np.size(th), axis=1),
            n_elements=n_elements,
            **kwargs,
        )

    @classmethod
    def polyline(cls, points: Sequence[Sequence[float]], *, n_elements: int, **kwargs) -> "Fiber":
        """A fiber through the given points (m), θ proportional to chord length.

        The cable element is C¹, so the polyline is replaced by the cubic
        spline through its vertices (not-a-knot), which passes through every
        point.

        Parameters
        ----------
        points
            The points (n ≥ 2, 3) in m, consecutive ones distinct.
        n_elements
            Number of cubic Hermite elements along the fiber.
        **kwargs
            The other fields of :class:`Fiber` (see :meth:`straight`).

        Examples
        --------
        >>> from skfiber import Fiber
        >>> fiber = Fiber.polyline([(0, 0, 0), (0.01, 0, -0.1), (0, 0, -0.2)], n_elements=4)
        >>> fiber.reference_position([0.5]).ravel().round(3).tolist()
        [0.01, 0.0, -0.1]
        """
        from scipy.interpolate import CubicSpline

        P = np.asarray(points, dtype=float)
        if P.ndim != 2 or P.shape[1] != 3 or P.shape[0] < 2:
            raise ValueError(f"points must have shape (n ≥ 2, 3), got {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ValueError("points contain non-finite values")
        seg = np.linalg.norm(np.diff(P, axis=0), axis=1)
        if np.any(seg == 0):
            raise ValueError(f"consecutive points coincide at index {int(np.argmin(seg))}; remove duplicates")
        s = np.concatenate([[0.0], np.cumsum(seg)]) / seg.sum()
        if len(P) == 2:
            return cls.straight(P[0], P[1], n_elements=n_elements, **kwargs)
        bc = "not-a-knot" if len(P) > 3 else "natural"
        spline = CubicSpline(s, P, axis=0, bc_type=bc)
        dspline = spline.derivative()
        return cls(
            curve=lambda th: spline(np.asarray(th)).T,
            tangent=lambda th: dspline(np.asarray(th)).T,
            n_elements=n_elements,
            **kwargs,
        )

    # --- evaluation ---------------------------------------------------------
    def reference_position(self, theta: np.ndarray) -> np.ndarray:
        """X(θ), shape (3, n)."""
        return np.asarray(self.curve(np.asarray(theta, dtype=float)), dtype=float)

    def reference_tangent(self, theta: np.ndarray) -> np.ndarray:
        """X′(θ), shape (3, n)."""
        theta = np.asarray(theta, dtype=float)
        if self.tangent is not None:
            return np.asarray(self.tangent(theta), dtype=float)
        h = 1e-3
        f = self.reference_position
        return (8 * (f(theta + h) - f(theta - h)) - (f(theta + 2 * h) - f(theta - 2 * h))) / (12 * h)

    def radius_at(self, theta: np.ndarray) -> np.ndarray:
        """r0(θ) (m)."""
        return _evaluate_scalar(self.radius, theta, "radius")

    def muscle_fraction_at(self, theta: np.ndarray) -> np.ndarray:
        """γM(θ)."""
        return _evaluate_scalar(self.muscle_fraction, theta, "muscle_fraction")

    def activation_at(self, t: float) -> float:
        """α(t), checked: one finite number in [0, 1] (else TypeError or ValueError naming the fiber and t)."""
        value = self.activation(t) if callable(self.activation) else self.activation
        if isinstance(value, (float, int)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            return float(value)  # the common case, checked cheaply
        label = f"fiber {self.name!r}" if self.name else "the fiber"
        what = "activation(t)" if callable(self.activation) else "activation"
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) and not (
                isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf"):
            raise TypeError(f"{what} of {label} must give one number α ∈ [0, 1], got {value!r} "
                            f"({type(value).__name__}) at t = {t:g} s; return a float")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{what} of {label} is not finite at t = {t:g} s (α = {value!r}); "
                             "return a number in [0, 1]")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{what} of {label} is α = {value:g} at t = {t:g} s, outside [0, 1]; "
                             "an activation is a fraction: clip it to [0, 1]")
        return value


#: the largest difference of a given tangent X′(θ) from the differences of the curve, relative to max |X′|
TANGENT_TOLERANCE = 1e-4


def _vector_field(function, name: str, symbol: str) -> np.ndarray:
    """``function`` at the sample θ, checked to be (3, n) numbers (TypeError/ValueError naming ``name``)."""
    try:
        value = np.asarray(function(_SAMPLES), dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}(θ) must take an array θ of shape (n,) and return {symbol} as an array of shape "
                        f"(3, n), e.g. np.vstack([θ, 0 * θ, 0 * θ]) (numpy functions, not math's); called with "
                        f"{_SAMPLES.size} values of θ it raised: {err}") from err
    if value.shape != (3, _SAMPLES.size):
        raise ValueError(f"{name}(θ) must return an array of shape (3, n); got {value.shape} for n = "
                         f"{_SAMPLES.size}")
    return value


def _check_tangent_of_curve(fiber: "Fiber") -> None:
    """A given ``tangent`` must be dX/dθ of ``curve``: compared with central differences of the curve inside
    [0, 1] (ValueError naming the worst θ and both values)."""
    T = _vector_field(fiber.tangent, "tangent", "X′(θ)")
    if not np.all(np.isfinite(T)):
        raise ValueError("tangent(θ) returned non-finite values on [0, 1]")
    inner = _SAMPLES[2:-2]
    h = 1e-4
    f = fiber.reference_position
    X0 = f(inner)
    diff = (8 * (f(inner + h) - f(inner - h)) - (f(inner + 2 * h) - f(inner - 2 * h))) / (12 * h)
    scale = np.abs(T).max()
    # a kink of the curve (a C⁰ corner) at a sample has one-sided tangents that differ: not compared there
    kink = np.abs((f(inner + h) - X0) / h - (X0 - f(inner - h)) / h).max(axis=0) > 1e-2 * scale
    error = np.where(kink, 0.0, np.abs(T[:, 2:-2] - diff).max(axis=0))
    worst = int(np.argmax(error))
    if not error[worst] <= TANGENT_TOLERANCE * scale:
        raise ValueError(f"tangent(θ) is not dX/dθ of curve(θ): at θ = {inner[worst]:.4g} it gives "
                         f"{np.round(T[:, 2 + worst], 6).tolist()}, differences of curve give "
                         f"{np.round(diff[:, worst], 6).tolist()} (m per unit θ); return the derivative of curve "
                         "with respect to θ, or leave tangent out (differences of curve are then used)")


def _point(p: Sequence[float], name: str) -> np.ndarray:
    try:
        a = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a point with 3 coordinates (m), got {p!r}") from None
    if a.shape != (3,):
        raise ValueError(f"{name} must be a point with 3 coordinates, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return a
