"""Scalar characteristics of springs and dampers: y = f(x), f′(x), ∫₀ˣ f.

A joint spring gives the moment M(θ) of the joint angle θ (relative to its
rest angle), a point spring the tension of the elongation, a damper the
force of the deformation rate.  Linear laws and the nonlinear joint law of
the multibody paper (eq. 35, M = k tan(θ/2)/cos(θ/2)) are built in; any
other law is a plain function with (optionally) its derivative.

Complex step: the rigid system's tangents are computed by the complex step.
A characteristic is evaluated on the real part of its argument only and its
derivative carries the imaginary part, so user functions never see complex
numbers (``abs``, ``np.where`` … are fine).

Examples
--------
>>> from skfiber.rigid import Characteristic
>>> law = Characteristic.tan_sec(2.0)          # eq. 35, k = 2 N·m
>>> round(float(law(0.5)), 6), float(law.slope(0.0))   # small-angle stiffness k/2
(0.527069, 1.0)
>>> soft = Characteristic(lambda x: x**3, derivative=lambda x: 3 * x**2)
>>> round(float(soft.energy(2.0)), 12)           # ∫₀² x³ dx (Gauss–Legendre)
4.0
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Characteristic", "as_characteristic"]

# Gauss–Legendre rule for the energy ∫₀ˣ f of laws given without integral
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


@dataclass(frozen=True)
class Characteristic:
    """A scalar law y = f(x) with slope f′(x) and energy ∫₀ˣ f(s) ds.

    Parameters
    ----------
    function
        f, vectorized over numpy arrays of real x.
    derivative
        f′; ``None``: central differences of f (relative accuracy ~1e-9,
        enough for Newton; pass it for an exact tangent).
    integral
        ∫₀ˣ f(s) ds (the spring energy); ``None``: 16-point Gauss–Legendre
        quadrature of f.
    name
        Shown in reports.
    """

    function: Callable[[np.ndarray], np.ndarray]
    derivative: Callable[[np.ndarray], np.ndarray] | None = None
    integral: Callable[[np.ndarray], np.ndarray] | None = None
    name: str = "custom"
    #: ``function`` is complex-analytic (arithmetic, sin, tan …): evaluated on complex x directly
    complex_safe: bool = False

    def __post_init__(self):
        for field_name in ("function", "derivative", "integral"):
            value = getattr(self, field_name)
            if value is not None and not callable(value):
                raise TypeError(f"Characteristic.{field_name} must be callable, got {type(value).__name__}")

    # --- evaluation ---------------------------------------------------
    def _f(self, x):
        return _shaped(self.function(x), x)

    def slope(self, x):
        """f′(x) on real x."""
        x = np.asarray(x, dtype=float)
        if self.derivative is not None:
            return _shaped(self.derivative(x), x)
        h = 1e-6 * np.maximum(1.0, np.abs(x))
        return (self._f(x + h) - self._f(x - h)) / (2 * h)

    def __call__(self, x):
        """f(x); for complex x = a + ib: f(a) + i b f′(a) (complex step)."""
        if self.complex_safe:
            return self.function(x)
        if np.iscomplexobj(x):
            real, imag = np.real(x), np.imag(x)
            return self._f(real) + 1j * imag * self.slope(real)
        return self._f(np.asarray(x, dtype=float))

    def energy(self, x):
        """∫₀ˣ f(s) ds on real x."""
        x = np.asarray(x, dtype=float)
        if self.integral is not None:
            return np.asarray(self.integral(x), dtype=float) * np.ones_like(x)
        s = 0.5 * x[..., None] * (_GL_X + 1.0)
        return 0.5 * x * np.sum(_GL_W * self._f(s), axis=-1)

    # --- factories ----------------------------------------------------
    @classmethod
    def linear(cls, k: float) -> "Characteristic":
        """f(x) = k x (a linear spring of stiffness k or a damper of coefficient k)."""
        k = _nonnegative(k, "the coefficient of a linear characteristic")
        return cls(lambda x: k * x, lambda x: np.full(np.shape(x), k), lambda x: 0.5 * k * x**2, name=f"linear({k:g})",
                   complex_safe=True)

    @classmethod
    def tan_sec(cls, k: float) -> "Characteristic":
        """Eq. 35 of the multibody paper: f(θ) = k tan(θ/2)/cos(θ/2).

        A stiffening joint moment: f′(θ) = (k/2)(sec³(θ/2) + tan²(θ/2) sec(θ/2)),
        so the small-angle stiffness is f′(0) = k/2; energy
        ∫₀^θ f = 2k (sec(θ/2) − 1).  Defined for ‖θ‖ < π.
        """
        k = _nonnegative(k, "the stiffness k of eq. 35")

        def f(x):
            return k * np.tan(x / 2) / np.cos(x / 2)

        def df(x):
            sec = 1.0 / np.cos(x / 2)
            return 0.5 * k * (sec**3 + np.tan(x / 2) ** 2 * sec)

        def energy(x):
            return 2.0 * k * (1.0 / np.cos(x / 2) - 1.0)

        return cls(f, df, energy, name=f"tan_sec({k:g})", complex_safe=True)


def _shaped(y, x):
    y = np.asarray(y, dtype=float)
    return y if y.shape == np.shape(x) else np.broadcast_to(y, np.shape(x)).copy()


def _nonnegative(value, what: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be a number, got {value!r}") from err
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"{what} must be finite and ≥ 0, got {value}")
    return value


def as_characteristic(value, what: str) -> Characteristic | None:
    """A number k → ``Characteristic.linear(k)`` (None or 0 → None); a Characteristic as is."""
    if value is None:
        return None
    if isinstance(value, Characteristic):
        return value
    if callable(value):
        raise TypeError(
            f"{what}: wrap the function in skfiber.rigid.Characteristic(f, derivative=...) "
            "so that its derivative is known"
        )
    k = _nonnegative(value, what)
    return None if k == 0 else Characteristic.linear(k)
