"""The cable weak form (paper eq. 38) as scikit-fem forms.

    π r0² ∫ [ S (x_s · ξ_s) + ρ ẍ · ξ − b0 · ξ ] dS − ∫ q · ξ dS = 0

with ``dS = |A1| dθ``, ``x_s = a1/|A1|`` and ``ξ_s = ξ′/|A1|`` derivatives in
reference arc length, S the physical 2nd Piola–Kirchhoff stress of the fiber's
law.  These forms are the single definition of the cable: the model's terms
``"internal_force"`` (:func:`internal_force`) and ``"inertia"``
(:func:`inertia`) are compiled from them (:mod:`skfiber.compile`: traced on
symbolic jets with the law inlined, tangent derived, one numba kernel), and
on the numpy path evaluated with :class:`skfiber.assembly.BatchedAssembler`;
they assemble unchanged with scikit-fem's own ``form.assemble(basis, **w)``
(tested).  Edit them here, or replace one on a model
(:meth:`skfiber.Model.replace_term`), and every model computes the new form.
Their tangents are derived, not written: symbolically by the compiler, by the
complex step (:func:`skfiber.terms.complex_step_tangent`) on the numpy path.

Coefficients arrive in ``w`` as arrays over (elements, quadrature points):

=============  ======================================================
``J``          ``|A1| = |X′|`` (reference arc length per unit θ)
``area``       π r0² (m²)
``rho``        ρ0 (kg/m³)
``x_s``        current tangent x_s (3, e, q)
``xdot_s``     its rate ẋ_s (3, e, q)
``lam``        stretch ``λ = |x_s|``
``lamdot``     stretch rate λ̇ = x_s · ẋ_s / λ
``S``          stress, ``dS_dlam`` ∂S/∂λ, ``dS_dlamdot`` ∂S/∂λ̇
``c_v``        ∂v/∂u of the time scheme (1/Δt backward Euler, 0 statics)
``c_a``        ∂a/∂u of the time scheme (1/Δt² backward Euler)
``xddot``      the acceleration field (value (3, e, q))
``b0``         body force per reference volume (3, e, q), N/m³
``q``          line load per reference length (3, e, q), N/m
=============  ======================================================
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

__all__ = [
    "ds",
    "CableKinematics",
    "cable_kinematics",
    "stretch_and_rate",
    "internal_force",
    "mass",
    "inertia",
    "body_force",
    "line_load",
]


def ds(v, w):
    """Derivative of a field with respect to reference arc length: ``v′ / |A1|``."""
    return v.grad[:, 0] / w.J


@dataclass(frozen=True)
class CableKinematics:
    """Kinematic quantities at the quadrature points."""

    x_s: np.ndarray  # (3, e, q)
    xdot_s: np.ndarray  # (3, e, q)
    lam: np.ndarray  # (e, q)
    lamdot: np.ndarray  # (e, q)


def cable_kinematics(x, xdot, J: np.ndarray) -> CableKinematics:
    """``λ = |a1|/|A1|`` (eq. 33) and ``λ̇ = a1·ȧ1/(|a1||A1|)`` from interpolated fields."""
    x_s = x.grad[:, 0] / J
    xdot_s = xdot.grad[:, 0] / J
    return CableKinematics(x_s, xdot_s, *stretch_and_rate(x_s, xdot_s))


def stretch_and_rate(x_s: np.ndarray, xdot_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``λ = |x_s|`` and ``λ̇ = x_s · ẋ_s / λ`` from the derivatives along the reference arc length (3, ...).

    Examples
    --------
    >>> lam, lamdot = stretch_and_rate(np.array([[1.2], [0.0], [0.0]]), np.array([[0.6], [0.0], [0.0]]))
    >>> float(lam[0]), float(lamdot[0])
    (1.2, 0.6)
    """
    lam = np.sqrt(np.einsum("i...,i...", x_s, x_s))
    return lam, np.einsum("i...,i...", x_s, xdot_s) / lam


@LinearForm
def internal_force(v, w):
    """π r0² ∫ S x_s · ξ_s dS (eq. 38, first term; eq. 56)."""
    return w.area * w.S * dot(w.x_s, ds(v, w)) * w.J


@BilinearForm
def mass(u, v, w):
    """Consistent mass π r0² ∫ ρ0 u · ξ dS (eq. 55)."""
    return w.area * w.rho * dot(u, v) * w.J


@LinearForm
def inertia(v, w):
    """π r0² ∫ ρ0 ẍ · ξ dS (eq. 38, second term); its tangent is c_a :func:`mass` (derived)."""
    return w.area * w.rho * dot(w.xddot, v) * w.J


@LinearForm
def body_force(v, w):
    """π r0² ∫ b0 · ξ dS (eq. 57); b0 in N/m³."""
    return w.area * dot(w.b0, v) * w.J


@LinearForm
def line_load(v, w):
    """∫ q · ξ dS; q in N per metre of reference length (q = π r0² b0)."""
    return dot(w.q, v) * w.J
