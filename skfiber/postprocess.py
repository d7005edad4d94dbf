"""Quantities along the fibers: position, current radius, stretch, stress, axial force.

:func:`fiber_fields` evaluates them at points of the cubic Hermite solution;
:func:`recovered_axial_force` gives the axial force N(θ) recovered by an L2
projection onto the continuous piecewise quadratics (the θ-derivatives of the
test functions), far more accurate on coarse meshes than N at a point.

Examples
--------
>>> from skfiber import Fiber, Model, fiber_fields
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = Model([fiber])
>>> fields = fiber_fields(model, model.initial_state(), fiber)
>>> float(fields.stretch[0])
1.0
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse.linalg as spla
from skfem import Basis, BilinearForm, ElementLineP2, LinearForm, MeshLine, asm

from .contact.gap import current_radius
from .fiber import Fiber
from .forms import internal_force, stretch_and_rate
from .materials import MaterialPoint
from .core import State, check_state_of
from .core.warn import warn
from .model import Model

__all__ = ["FiberFields", "fiber_fields", "recovered_axial_force"]


@dataclass(frozen=True)
class FiberFields:
    """Fields sampled along one fiber (arrays over the sample points).

    Attributes
    ----------
    theta : fiber parameter θ
    position : current centerline x (3, n), m
    radius : current radius r = r0/√λ (eq. 21), m
    stretch : λ = ‖a1‖/‖A1‖
    stretch_rate : λ̇, 1/s
    stress : physical 2nd Piola–Kirchhoff stress S, Pa
    force : axial force N = π r0² λ S, N
    tangent : unit tangent t = a1/‖a1‖ of the current centerline (3, n);
        the force vector the fiber transmits is N t
    activation : α(t) of the fiber
    muscle_fraction : γM(θ)

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.01, law=sf.prestress(30.0))
    >>> model = sf.Model([fiber])
    >>> fields = fiber_fields(model, model.initial_state(), fiber, points_per_element=2)
    >>> fields.theta.tolist(), fields.stretch.round(12).tolist()
    ([0.0, 0.25, 0.5, 0.75, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    >>> round(float(fields.force[0]), 6)          # N = π r0² λ S = π · 1e-4 · 30
    0.009425
    """

    theta: np.ndarray
    position: np.ndarray
    radius: np.ndarray
    stretch: np.ndarray
    stretch_rate: np.ndarray
    stress: np.ndarray
    force: np.ndarray
    tangent: np.ndarray
    activation: float
    muscle_fraction: np.ndarray


def _parameters(fiber: Fiber, theta: np.ndarray | None, points_per_element: int) -> np.ndarray:
    """θ as a float array in [0, 1] (ValueError otherwise); None: ``points_per_element`` evenly spaced samples
    per element of ``fiber``."""
    if theta is None:
        if not isinstance(points_per_element, (int, np.integer)) or points_per_element < 1:
            raise ValueError(f"points_per_element must be an integer ≥ 1, got {points_per_element!r}")
        theta = np.linspace(0.0, 1.0, fiber.n_elements * points_per_element + 1)
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    if not np.all((theta >= 0) & (theta <= 1)):  # NaN too
        raise ValueError(f"theta (the fiber parameter θ) must lie in [0, 1], got values in "
                         f"[{np.min(theta):g}, {np.max(theta):g}]")
    return theta


def _warn_if_cable_replaced(model: Model) -> None:
    """Warn when the model's ``internal_force`` is not :func:`skfiber.forms.internal_force`: the stress and the
    axial force computed here are the law's, not what a replaced form assembles."""
    term = next((t for t in model.all_terms if t.name == "internal_force"), None)
    if term is not None and term.residual is not internal_force:
        warn("the model's internal_force is a replaced form: the stress and the axial force here are the law's S and "
             "π r0² λ S, not what that form assembles (its forces at the attached ends are in the residual: "
             "Model.attachment_forces)")


def fiber_fields(
    model: Model,
    state: State,
    fiber: Fiber | int | str,
    *,
    theta: np.ndarray | None = None,
    points_per_element: int = 4,
) -> FiberFields:
    """Evaluate the fields of one fiber at parameters θ (default: evenly spaced).

    Parameters
    ----------
    model
        The model the state belongs to.
    state
        A state of ``model`` (:class:`~skfiber.State`: t, u, v), e.g. ``result.final_state`` of
        :func:`skfiber.simulate`.
    fiber
        The fiber: the object, its index or its name.
    theta
        Material parameters θ ∈ [0, 1] of the samples (default: ``points_per_element`` + 1 evenly spaced
        per element, the ends included).
    points_per_element
        Sampling intervals per element when ``theta`` is not given.

    Returns
    -------
    FiberFields
        Positions (m), stretch, stretch rate (1/s), stress (Pa), axial force (N), radius (m) and activation
        at the samples.

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (0.1, 0, 0), n_elements=2)
    >>> model = sf.Model([fiber])
    >>> fields = sf.fiber_fields(model, model.initial_state(), fiber, points_per_element=2)
    >>> fields.stretch.round(6).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]

    Notes
    -----
    Stretch, stress and axial force at a point come from the derivative x′ of the cubic Hermite
    solution (``λ = |x′|/|A1|``), a continuous piecewise quadratic along a straight fiber: their error
    at a point falls like h³, and that of N is ∂N/∂λ times the error of λ.  Where the stretch varies
    strongly along a fiber and N is stiff in λ (the upper limb's fibers, paper eq. 77), N at the
    samples wiggles about its true value on coarse meshes (up to 11 % of N at 8 elements per fiber for a
    fiber whose exact N is constant); the forces at attached or fixed ends, which the weak form gives,
    are far more accurate (6·10⁻⁴ there), and so is N recovered by
    :func:`recovered_axial_force`.  See ``docs/theory.md`` (upper limb).
    """
    check_state_of(state, model.n_dofs, 0 if model.rigid is None else model.rigid.n)
    _warn_if_cable_replaced(model)
    return _fields(model, state, fiber, theta, points_per_element)


def _fields(model: Model, state: State, fiber, theta, points_per_element: int) -> FiberFields:
    """:func:`fiber_fields` without its checks and warning."""
    d = model.discretization
    k = d.fiber_index(fiber)
    f = d.fibers[k]
    theta = _parameters(f, theta, points_per_element)
    x = d.evaluate(d.reference_dofs + state.u, k, theta)
    a1 = d.evaluate(d.reference_dofs + state.u, k, theta, 1)
    A1 = d.evaluate(d.reference_dofs, k, theta, 1)
    a1dot = d.evaluate(state.v, k, theta, 1)
    nA1 = np.linalg.norm(A1, axis=0)
    lam, lamdot = stretch_and_rate(a1 / nA1, a1dot / nA1)  # the cable form's λ and λ̇ (eq. 33)
    r0 = f.radius_at(theta)
    gm = f.muscle_fraction_at(theta)
    alpha = f.activation_at(state.t)
    S = f.law(MaterialPoint(lam, lamdot, theta=theta, t=state.t, muscle_fraction=gm, activation=alpha)).stress
    return FiberFields(
        theta=theta,
        position=x,
        radius=current_radius(r0, 1.0, lam),
        stretch=lam,
        stretch_rate=lamdot,
        stress=S,
        force=np.pi * r0**2 * lam * S,
        tangent=a1 / np.linalg.norm(a1, axis=0),
        activation=alpha,
        muscle_fraction=gm,
    )


@BilinearForm
def _mass(u, v, w):
    """∫ u v dθ: the mass matrix of the recovery space."""
    return u * v


@LinearForm
def _force_load(v, w):
    """∫ N v dθ, N at the quadrature points (``w["N"]``)."""
    return w["N"] * v


@functools.lru_cache(maxsize=32)
def _recovery_space(n_elements: int, points: bytes, weights: bytes):
    """(basis, LU of its mass matrix) of the continuous piecewise quadratics on the fiber's uniform θ-mesh of
    ``n_elements`` elements, with the cable's quadrature (reference points and weights on [0, 1])."""
    X = np.frombuffer(points).reshape(1, -1)
    W = np.frombuffer(weights)
    basis = Basis(MeshLine(np.linspace(0.0, 1.0, n_elements + 1)), ElementLineP2(), quadrature=(X, W))
    return basis, spla.splu(asm(_mass, basis).tocsc())


@functools.lru_cache(maxsize=64)
def _probes(n_elements: int, points: bytes, weights: bytes, theta: bytes):
    """The interpolation matrix of the recovery space at θ (the same samples come back frame after frame)."""
    basis, _ = _recovery_space(n_elements, points, weights)
    return basis.probes(np.frombuffer(theta)[None, :])


def recovered_axial_force(
    model: Model,
    state: State,
    fiber: Fiber | int | str,
    *,
    theta: np.ndarray | None = None,
    points_per_element: int = 4,
) -> np.ndarray:
    """The axial force N(θ) recovered by L2 projection, at parameters θ (default: evenly spaced).

    N_h is the continuous piecewise quadratic on the fiber's elements with
    ∫ N_h v dθ = ∫ N v dθ for every such v, N = π r0² λ S at the quadrature
    points of the cable's weak form (those of the residual).  The continuous
    piecewise quadratics are the θ-derivatives of the cubic Hermite test
    functions, so for a straight fiber the Galerkin equations fix exactly this
    projection of N (the weak form tests N against ψ′): without load N_h is
    constant and equals the force at the ends.  N at a point
    (:func:`fiber_fields`) wiggles on coarse meshes where the stretch varies
    along the fiber; N_h does not (``docs/theory.md``, upper limb).

    Parameters
    ----------
    model, state
        The model and the state to evaluate.
    fiber
        The fiber (object, index or name).
    theta
        Parameters in [0, 1]; default ``points_per_element`` samples per element.
    points_per_element
        Samples per element of the default θ (≥ 1).

    Returns
    -------
    numpy.ndarray
        N_h at θ (N).

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    >>> model = sf.Model([fiber])
    >>> state = model.initial_state()
    >>> state.u[:] = 0.1 * model.discretization.reference_dofs      # stretched uniformly by 10 %
    >>> N = recovered_axial_force(model, state, fiber, theta=np.array([0.0, 0.5, 1.0]))
    >>> bool(np.allclose(N, fiber_fields(model, state, fiber, theta=np.array([0.5])).force))   # N is constant
    True
    """
    check_state_of(state, model.n_dofs, 0 if model.rigid is None else model.rigid.n)
    _warn_if_cable_replaced(model)
    d = model.discretization
    k = d.fiber_index(fiber)
    f = d.fibers[k]
    theta = _parameters(f, theta, points_per_element)
    X, W = d.basis.quadrature
    space = (int(f.n_elements), np.ascontiguousarray(X[0], dtype=float).tobytes(),
             np.ascontiguousarray(W, dtype=float).tobytes())
    basis, mass = _recovery_space(*space)
    points = basis.mapping.F(basis.X)[0]  # (elements, quadrature points): θ of the quadrature points
    N = _fields(model, state, k, points.ravel(), points_per_element).force.reshape(points.shape)
    coefficients = mass.solve(asm(_force_load, basis, N=N))
    return _probes(*space, theta.tobytes()) @ coefficients
