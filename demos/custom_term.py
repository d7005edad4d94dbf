r"""New terms of the weak form: bending stiffness and tissue drag.
==============================================================

The paper's cable (eq. 38) has no bending stiffness.  A researcher adds one
at the form level, as a scikit-fem ``LinearForm`` for the residual, with or
without a hand-written ``BilinearForm`` tangent.  For a straight reference
fiber θ is proportional to arc length S, so ``x_ss = x″/|A1|²``, ``dS = |A1| dθ`` and ::

    EI ∫ x_ss · ξ_ss dS  =  EI ∫ x″ · ξ″ / |A1|³ dθ          (residual)
    EI ∫ u″ · ξ″ / |A1|³ dθ                                  (tangent)

(``skfiber.terms.d2`` gives x″; Hermite fields carry second derivatives).
For moderate rotations this is the Euler–Bernoulli bending energy ½ EI κ².
The form measures the curvature itself, not its change from the reference:
use it on straight, evenly parametrized fibers (``Fiber.straight``, as the
upper limb's are).  On a curved reference fiber (``Fiber.polyline``, a
bundle's belly) the reference state would carry a bending moment, and where
``|A1|`` varies along θ, ``x″/|A1|²`` is not ``x_ss``; :func:`check_straight_fibers`
names such fibers (the demos call it before they add the term).
A second term is viscous drag of the surrounding tissue, a force −c ẋ per
unit reference length:

    c ∫ ẋ · ξ dS   (residual),     c c_v ∫ u · ξ dS   (tangent, c_v = ∂ẋ/∂u)

Each term is added twice, once with the explicit tangent and once with
``tangent=None``: the form compiler then derives the tangent symbolically
(∂/∂x + c_v ∂/∂ẋ), and both run in the model's generated kernel.
:func:`skfiber.check_tangent` compares both against finite differences.

Closed forms checked here:

* small load q on a pinned–pinned fiber (positions fixed, slopes free: zero
  moment) with tension T = π r0² σ0 and bending stiffness EI: the tensioned
  beam EI w'''' − T w'' = q, w = w'' = 0 at s = 0, L, k = √(T/EI):

      w(s)   = q/(T k²) [cosh(k(s − L/2))/cosh(kL/2) − 1 + k² s (L − s)/2]
      w''(s) = q/T [cosh(k(s − L/2))/cosh(kL/2) − 1]

  so w(L/2) = q/(T k²) (1/cosh(kL/2) − 1) + q L²/(8T);
  5 q L⁴/(384 EI) for T = 0, q L²/(8T) for EI = 0.  The midpoint sag and the
  whole curves w and w'' (the bending moment over EI) are compared: with
  cubic Hermite elements their largest errors along the fiber fall like
  h⁴ and h²;
* a fiber hanging under gravity without bending (EI = 0): the elastic
  cable with the paper's law, solved independently by quadrature and a
  scalar root search for the horizontal force H;
* a free fiber falling under gravity with drag: every backward-Euler step
  gives v ← (v − Δt g)/(1 + Δt c/(ρ0 π r0²)), towards the terminal
  velocity −ρ0 π r0² g / c.

Loads: gravity is the body force ρ0 g per reference volume; the small-load
beam check uses a line load q (N per metre of reference length).

Run ``python demos/custom_term.py [--small] [--plot FILE.png]``; the last line
of the output is ``summary: tangent_error_explicit=… sag_bending_m=… …``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.cli import ArgumentParser, output_file, positive_int, run_script
from skfiber.reference import hanging_cable
from skfiber.terms import Term, d2

__all__ = [
    "bending",
    "bending_tangent",
    "drag",
    "drag_tangent",
    "bending_term",
    "check_straight_fibers",
    "drag_term",
    "tensioned_beam_sag",
    "tensioned_beam_deflection",
    "elastic_cable_sag",
    "TangentChecks",
    "BeamCheck",
    "HangingFiber",
    "FallingFiber",
    "CustomTermResult",
    "check_terms",
    "beam_string_check",
    "hanging_fiber",
    "falling_fiber",
    "run",
    "plot",
    "main",
]

RADIUS = 0.05  # r0 (m), Table 1
AREA = math.pi * RADIUS**2
DENSITY = 900.0  # ρ0 (kg/m³), Table 1
SIGMA0 = 30.0  # prestress (Pa), Table 1
MU = 1e5  # μM (Pa), Table 1; the fibers here are pure muscle (γM = 1)
GRAVITY = 9.81
#: E I of a solid circular section with E = 3 μM (small-strain modulus of μ (1 − λ⁻³))
EI_PHYSICAL = 3 * MU * math.pi * RADIUS**4 / 4


# --------------------------------------------------------------------------- the forms
def bending(EI: float) -> LinearForm:
    """Residual EI ∫ x_ss · ξ_ss dS = EI ∫ x″ · ξ″ / |A1|³ dθ (straight, evenly parametrized reference
    fiber: on a curved one the reference state is not free of bending moment)."""

    @LinearForm
    def bending_residual(v, w):
        return EI * dot(d2(w.x), d2(v)) / w.J**3

    return bending_residual


def bending_tangent(EI: float) -> BilinearForm:
    """Tangent of :func:`bending`: EI ∫ u″ · ξ″ / |A1|³ dθ."""

    @BilinearForm
    def bending_stiffness(u, v, w):
        return EI * dot(d2(u), d2(v)) / w.J**3

    return bending_stiffness


def drag(c: float) -> LinearForm:
    """Residual of tissue drag c ∫ ẋ · ξ dS (c in N s/m² = force per length per velocity)."""

    @LinearForm
    def drag_residual(v, w):
        return c * dot(w.xdot, v) * w.J

    return drag_residual


def drag_tangent(c: float) -> BilinearForm:
    """Tangent of :func:`drag`: c c_v ∫ u · ξ dS (ẋ depends on u through the time scheme)."""

    @BilinearForm
    def drag_damping(u, v, w):
        return c * w.c_v * dot(u, v) * w.J

    return drag_damping


def bending_term(EI: float, *, automatic: bool = False) -> Term:
    """The bending term; ``automatic=True`` leaves the tangent to the form compiler (derived).  Add it to
    a model of straight, evenly parametrized fibers only (:func:`check_straight_fibers`)."""
    return Term(bending(EI), None if automatic else bending_tangent(EI), name="bending")


def check_straight_fibers(model: sf.Model, *, term: str = "bending", points_per_element: int = 4,
                          tolerance: float = 1e-8) -> None:
    """Raise a ValueError naming the fibers of ``model`` on which ``term`` (a form written for straight,
    evenly parametrized reference fibers, as :func:`bending`) would be wrong.

    A fiber passes when its reference X(θ), of length L, has curvature κ with κ L ≤ ``tolerance`` and ``|X′|``
    within ``tolerance`` of its mean at ``points_per_element`` points per element and the ends (θ is then
    proportional to arc length and the reference is free of curvature), both up to the round-off of the
    Hermite field's derivatives (about 100 ε n² max``|X|``/L with n elements: a long straight fiber far from the
    origin passes).  A Hermite polyline rounds its corners over the elements beside them: its curvature there
    is the mesh's, not the polyline's.

    Examples
    --------
    >>> straight = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, name="straight")
    >>> check_straight_fibers(sf.Model([straight]))           # passes
    >>> bent = sf.Fiber.polyline([(0, 0, 0), (1, 0, 0), (1, 1, 0)], n_elements=8, name="bent")
    >>> check_straight_fibers(sf.Model([straight, bent]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the bending term is written for straight, evenly parametrized reference fibers, and bent (its \
curvature up to 4.24 1/m, |X′| varies by 32 % along θ) is not: build such fibers with Fiber.straight, or ...
    """
    if isinstance(points_per_element, bool) or not isinstance(points_per_element, (int, np.integer)) \
            or points_per_element < 1:
        raise ValueError(f"points_per_element must be an integer ≥ 1, got {points_per_element!r}")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a number > 0, got {tolerance!r}")
    d = model.discretization
    wrong = []
    for k, fiber in enumerate(model.fibers):
        n = d.fibers[k].n_elements
        theta = np.linspace(0.0, 1.0, n * int(points_per_element) + 1)
        points, first, second = (d.evaluate(d.reference_dofs, k, theta, order) for order in (0, 1, 2))
        speed = np.linalg.norm(first, axis=0)
        length = float(np.trapezoid(speed, theta))
        curvature = np.linalg.norm(np.cross(first, second, axis=0), axis=0) / speed**3
        spread = float(np.abs(speed / speed.mean() - 1.0).max())
        allowed = tolerance + 100 * np.finfo(float).eps * n**2 * np.abs(points).max() / length
        if curvature.max() * length > allowed or spread > allowed:
            wrong.append(f"{fiber.name} (its curvature up to {curvature.max():.3g} 1/m, |X′| varies by "
                         f"{100 * spread:.2g} % along θ)")
    if wrong:
        raise ValueError(f"the {term} term is written for straight, evenly parametrized reference fibers, and "
                         f"{', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not: build such fibers with "
                         "Fiber.straight, or leave the term out")


def drag_term(c: float, *, automatic: bool = False) -> Term:
    """The drag term; ``automatic=True`` leaves the tangent to the form compiler (derived)."""
    return Term(drag(c), None if automatic else drag_tangent(c), name="drag")


# --------------------------------------------------------------------------- closed forms
def tensioned_beam_sag(q: float, *, tension: float, EI: float, length: float = 1.0) -> float:
    """Midpoint deflection of a pinned–pinned tensioned beam under uniform load q.

    Solves EI w'''' − T w'' = q with w = w'' = 0 at both ends:
    w(L/2) = q/(T k²) (sech(kL/2) − 1) + q L²/(8T), k = √(T/EI), written as
    w(L/2) = q L⁴/EI · f(β), β = kL/2, f(β) = 1/(32β²) − (1 − sech β)/(16β⁴),
    with the series f = 5/384 − 61β²/11520 + … for small β (where the two
    terms cancel).  f(0) = 5/384 is the pinned beam; EI = 0 gives the string
    q L²/(8T).
    """
    L, T = length, tension
    if EI < 0 or T < 0 or (EI == 0 and T == 0):
        raise ValueError(f"need EI ≥ 0, tension ≥ 0 and one of them > 0, got EI={EI}, tension={T}")
    if EI == 0:
        return q * L**2 / (8 * T)
    b = 0.5 * L * math.sqrt(T / EI)
    if b < 0.1:
        b2 = b * b
        # sech x = Σ E₂ₙ x²ⁿ/(2n)! (Euler numbers 1, −1, 5, −61, 1385, −50521, 2702765)
        f = (5 / 384 - 61 * b2 / 11520 + 1385 * b2**2 / 645120 - 50521 * b2**3 / 58060800
             + 2702765 * b2**4 / 7664025600)
    else:
        sech = 2 * math.exp(-b) / (1 + math.exp(-2 * b))
        f = 1 / (32 * b**2) - (1 - sech) / (16 * b**4)
    return q * L**4 / EI * f


def tensioned_beam_deflection(
    s, q: float, *, tension: float, EI: float, length: float = 1.0, derivative: int = 0
) -> np.ndarray:
    """Deflection w(s) (``derivative=0``) or curvature w''(s) (``derivative=2``)
    of a pinned–pinned tensioned beam under a uniform load q (w along q).

    EI w'''' − T w'' = q with w = w'' = 0 at s = 0 and L.  With φ = w'':
    EI φ'' − T φ = q, φ(0) = φ(L) = 0, so φ = q/T [R(s) − 1] with
    R(s) = cosh(k(s − L/2))/cosh(kL/2), k = √(T/EI); integrating twice with
    w(0) = w(L) = 0:

        w(s) = q/(T k²) [R(s) − 1 + k² s (L − s)/2].

    R is evaluated as (e^(−ks) + e^(−k(L−s)))/(1 + e^(−kL)) (no overflow for
    large kL).  For kL/2 < 1, where the bracket cancels down to O(k⁴), it is
    summed as its series in k² (ξ = s − L/2, ℓ = L/2, c = cosh kℓ):

        w   = q/(EI c) [Σ_{n≥2} k^(2n−4) (ξ^2n − ℓ^2n)/(2n)!
                        + (ℓ² − ξ²)/2 · Σ_{m≥1} k^(2m−2) ℓ^2m/(2m)!]
        w'' = q/(EI c) Σ_{n≥1} k^(2n−2) (ξ^2n − ℓ^2n)/(2n)!

    T = 0 gives the pinned beam w = q s (L³ − 2 L s² + s³)/(24 EI); EI = 0
    the string w = q s (L − s)/(2T), w'' = −q/T.
    """
    L, T = length, tension
    if EI < 0 or T < 0 or (EI == 0 and T == 0):
        raise ValueError(f"need EI ≥ 0, tension ≥ 0 and one of them > 0, got EI={EI}, tension={T}")
    if derivative not in (0, 2):
        raise ValueError(f"derivative must be 0 or 2, got {derivative!r}")
    s = np.asarray(s, dtype=float)
    if EI == 0:
        return q * s * (L - s) / (2 * T) if derivative == 0 else np.full_like(s, -q / T)
    k = math.sqrt(T / EI)
    half = 0.5 * L
    if k * half >= 1.0:
        R = (np.exp(-k * s) + np.exp(-k * (L - s))) / (1 + math.exp(-k * L))
        if derivative == 2:
            return q / T * (R - 1)
        return q / (T * k**2) * (R - 1 + k**2 * s * (L - s) / 2)
    xi2, l2, k2 = (s - half) ** 2, half**2, k * k
    first = 2 if derivative == 0 else 1
    total = np.zeros_like(s)
    for n in range(first, 20):  # the last term is below (kℓ)^38/38! ≈ 2e-45 of the first
        total += k2 ** (n - first) * (xi2**n - l2**n) / math.factorial(2 * n)
    if derivative == 0:
        total += 0.5 * (l2 - xi2) * sum(k2 ** (m - 1) * l2**m / math.factorial(2 * m) for m in range(1, 20))
    return q / (EI * math.cosh(k * half)) * total


def elastic_cable_sag(law, *, q: float, length: float = 1.0, quadrature_points: int = 100) -> tuple[float, float]:
    """Midpoint sag and largest axial force of a homogeneous cable (no bending)
    between two fixed points at distance L (:func:`skfiber.reference.hanging_cable`)."""
    return hanging_cable(law, q=q, radius=RADIUS, length=length, quadrature_points=quadrature_points)


# --------------------------------------------------------------------------- models
def _pinned_fiber(*, n_elements: int, sigma0: float, EI: float, automatic: bool = False):
    """Table-1 muscle fiber (0,0,0)→(1,0,0), γM = 1, both end positions fixed."""
    fiber = sf.Fiber.straight(
        (0, 0, 0), (1, 0, 0), n_elements=n_elements, radius=RADIUS, density=DENSITY,
        muscle_fraction=1.0, law=sf.paper_law(sigma0=sigma0),
    )
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    if EI > 0:
        check_straight_fibers(model)
        model.add_term(bending_term(EI, automatic=automatic))
    return fiber, model


def _midpoint_sag(model, state, fiber) -> float:
    return -float(sf.fiber_fields(model, state, fiber, theta=np.array([0.5])).position[2, 0])


@dataclass(frozen=True)
class TangentChecks:
    """Tangents of the terms against finite differences (:func:`skfiber.check_tangent`).

    Attributes
    ----------
    bending_explicit, bending_auto : relative FD error of the bending tangent
    drag_explicit, drag_auto : same for the drag tangent (backward Euler, Δt)
    mismatch : largest |K_explicit − K_auto| / max |K_explicit| over both terms
    """

    bending_explicit: float
    bending_auto: float
    drag_explicit: float
    drag_auto: float
    mismatch: float

    @property
    def explicit(self) -> float:
        return max(self.bending_explicit, self.drag_explicit)

    @property
    def auto(self) -> float:
        return max(self.bending_auto, self.drag_auto)


def check_terms(*, n_elements: int = 8, EI: float = EI_PHYSICAL, c: float = 100.0, dt: float = 0.01) -> TangentChecks:
    """Check both terms with explicit and automatic tangents at a perturbed state."""
    errors = {}
    matrices = {}
    rng = np.random.default_rng(1)
    for automatic in (False, True):
        fiber, model = _pinned_fiber(n_elements=n_elements, sigma0=SIGMA0, EI=EI, automatic=automatic)
        model.add_term(drag_term(c, automatic=automatic))
        key = "auto" if automatic else "explicit"
        for name in ("bending", "drag"):
            errors[name, key] = sf.check_tangent(model, dt=dt, parts=[name])
        if not matrices:  # the same state for both variants
            state = sf.State(0.0, 1e-2 * rng.standard_normal(model.n_dofs), rng.standard_normal(model.n_dofs))
        ev = model.evaluate(state.u, state.v, np.zeros(model.n_dofs), 0.0, c_v=1 / dt, c_a=1 / dt**2,
                            parts=["bending", "drag"])
        matrices[key] = ev.element_matrices
    mismatch = np.max(np.abs(matrices["explicit"] - matrices["auto"])) / np.max(np.abs(matrices["explicit"]))
    return TangentChecks(
        errors["bending", "explicit"], errors["bending", "auto"],
        errors["drag", "explicit"], errors["drag", "auto"], float(mismatch),
    )


@dataclass(frozen=True)
class BeamCheck:
    """Small-load sag of a pinned fiber with tension and bending against the tensioned beam.

    Attributes
    ----------
    kL : L √(T/EI), from pure beam (0) to string-like (large)
    sigma0 : prestress giving T = π r0² σ0 (Pa)
    sag_fe, sag_exact : midpoint deflection (m)
    sag_string : q L²/(8T), the cable without bending (m)
    deflection_error : max |w_FE − w| / max |w| along the fiber (at 16 points per element)
    curvature_error : max |w''_FE − w''| / max |w''| along the fiber (w'' = bending moment / EI;
        largest at the pinned ends, where w'' = 0 holds only weakly, as a natural condition)
    """

    kL: float
    sigma0: float
    sag_fe: float
    sag_exact: float
    sag_string: float
    deflection_error: float = math.nan
    curvature_error: float = math.nan

    @property
    def error(self) -> float:
        return abs(self.sag_fe - self.sag_exact) / self.sag_exact


def beam_string_check(
    *,
    kL: float,
    EI: float = EI_PHYSICAL,
    n_elements: int = 16,
    deflection: float = 1e-5,
    automatic: bool = False,
) -> BeamCheck:
    """Pinned fiber with T = EI (kL/L)² and a line load giving a midpoint deflection ≈ ``deflection``.

    The deflection is kept small (1e-5 m, r0/5000) so that the extra tension
    from stretching is negligible (relative effect ≈ 0.25 EA w²/EI ≈ 4e-8):
    the problem is linear and the tensioned-beam formula is exact.  Newton
    stops at a residual of 1e-6 q L, above the round-off of the internal
    forces of the stiff fiber (≈ 1e-11 N), which the default tolerance
    relative to the tiny load would not reach.
    """
    sigma0 = (kL**2) * EI / AREA
    tension = AREA * sigma0
    q = deflection / tensioned_beam_sag(1.0, tension=tension, EI=EI)
    fiber, model = _pinned_fiber(n_elements=n_elements, sigma0=sigma0, EI=EI, automatic=automatic)
    model.add_line_load((0.0, 0.0, -q))
    options = sf.NewtonOptions(atol=1e-6 * q * 1.0)
    state = sf.solve_static(model, newton_options=options).state
    # the whole curve: θ = s on this fiber (L = 1, straight), w = −z along the load
    d = model.discretization
    theta = np.linspace(0.0, 1.0, 16 * n_elements + 1)
    w_fe = -d.evaluate(d.reference_dofs + state.u, fiber, theta)[2]
    w2_fe = -d.evaluate(d.reference_dofs + state.u, fiber, theta, 2)[2]
    w = tensioned_beam_deflection(theta, q, tension=tension, EI=EI)
    w2 = tensioned_beam_deflection(theta, q, tension=tension, EI=EI, derivative=2)
    return BeamCheck(
        kL=kL,
        sigma0=sigma0,
        sag_fe=_midpoint_sag(model, state, fiber),
        sag_exact=tensioned_beam_sag(q, tension=tension, EI=EI),
        sag_string=q / (8 * tension) if tension > 0 else math.inf,
        deflection_error=float(np.max(np.abs(w_fe - w)) / np.max(np.abs(w))),
        curvature_error=float(np.max(np.abs(w2_fe - w2)) / np.max(np.abs(w2))),
    )


@dataclass(frozen=True)
class HangingFiber:
    """A Table-1 muscle fiber (σ0 = 30 Pa) fixed at both ends, hanging under gravity.

    Attributes
    ----------
    EI : bending stiffness (N m²)
    sag : midpoint sag (m)
    max_force : largest axial force N = π r0² λ S (N)
    newton_iterations : total Newton iterations of the static solve
    theta, sag_curve : sag along the fiber (for plots)
    """

    EI: float
    sag: float
    max_force: float
    newton_iterations: int
    theta: np.ndarray
    sag_curve: np.ndarray


def _parabola(model: sf.Model, sag: float) -> sf.State:
    """Start for Newton: z = −4 sag θ (1 − θ) (values and θ-slopes of the Hermite DOFs)."""
    d = model.discretization
    theta = d.node_theta
    u = np.zeros((d.n_nodes, 6))
    u[:, 2] = -4 * sag * theta * (1 - theta)
    u[:, 5] = -4 * sag * (1 - 2 * theta)
    u = u.ravel()
    return sf.State(0.0, u, np.zeros_like(u))


def hanging_fiber(*, EI: float, n_elements: int = 16, automatic: bool = False) -> HangingFiber:
    """Static sag under gravity (body force ρ0 g) of a fiber fixed at both ends.

    A cable with little prestress has several equilibria (DESIGN notes): the
    Newton iteration starts from a hanging parabola of sag L/10, with the full
    load, which puts it on the physical branch (checked against the elastic
    cable for EI = 0).
    """
    fiber, model = _pinned_fiber(n_elements=n_elements, sigma0=SIGMA0, EI=EI, automatic=automatic)
    model.add_gravity()
    guess = _parabola(model, 0.1)
    result = sf.solve_static(model, state=guess, load_steps=1)
    state = result.state
    fields = sf.fiber_fields(model, state, fiber)
    return HangingFiber(
        EI=EI,
        sag=_midpoint_sag(model, state, fiber),
        max_force=float(fields.force.max()),
        newton_iterations=int(sum(result.iterations)),
        theta=fields.theta,
        sag_curve=-fields.position[2],
    )


@dataclass(frozen=True)
class FallingFiber:
    """A free fiber (no supports, σ0 = 0) falling under gravity with tissue drag c.

    Attributes
    ----------
    c : drag coefficient (N s/m²)
    velocity_fe : vertical velocity of the fiber at t_end (all DOFs), m/s
    velocity_exact : backward-Euler recursion v ← (v − Δt g)/(1 + Δt c/m′), m/s
    terminal_velocity : −m′ g / c with m′ = ρ0 π r0², m/s
    velocity_spread : max − min of the vertical nodal velocities (rigid motion: 0)
    """

    c: float
    velocity_fe: float
    velocity_exact: float
    terminal_velocity: float
    velocity_spread: float

    @property
    def error(self) -> float:
        return abs(self.velocity_fe - self.velocity_exact) / abs(self.velocity_exact)


def falling_fiber(*, c: float, t_end: float = 0.5, dt: float = 0.01, n_elements: int = 8,
                  automatic: bool = False) -> FallingFiber:
    """Drop a free fiber under gravity with drag and compare its velocity with the closed form."""
    fiber = sf.Fiber.straight(
        (0, 0, 0), (1, 0, 0), n_elements=n_elements, radius=RADIUS, density=DENSITY,
        muscle_fraction=1.0, law=sf.paper_law(sigma0=0.0),
    )
    model = sf.Model([fiber])
    model.add_gravity((0.0, 0.0, -GRAVITY))
    model.add_term(drag_term(c, automatic=automatic))
    sim = sf.simulate(model, t_end=t_end, dt=dt, progress=False, on_interrupt="raise")  # the comparison needs it all
    v = sim.velocities[-1].reshape(-1, 6)[:, 2]  # vertical value DOFs
    m = DENSITY * AREA
    v_exact = 0.0
    for h in np.diff(sim.times):  # the steps actually taken
        v_exact = (v_exact - h * GRAVITY) / (1 + h * c / m)
    return FallingFiber(
        c=c,
        velocity_fe=float(np.mean(v)),
        velocity_exact=float(v_exact),
        terminal_velocity=-m * GRAVITY / c,
        velocity_spread=float(np.ptp(v)),
    )


# --------------------------------------------------------------------------- the demo
@dataclass(frozen=True)
class CustomTermResult:
    """Everything the demo computes.

    Attributes
    ----------
    tangents : FD checks of the explicit and automatic tangents
    beam : small-load sag against the tensioned beam, from kL = 0 (pure beam) up
    beam_auto : the kL = 0 case again with the automatic tangent
    hanging : gravity sag for several EI (the first has EI = 0)
    cable_sag_exact, cable_force_exact : the elastic cable (EI = 0), independent
    falling : free fall with drag
    """

    tangents: TangentChecks
    beam: list[BeamCheck]
    beam_auto: BeamCheck
    hanging: list[HangingFiber]
    cable_sag_exact: float
    cable_force_exact: float
    falling: FallingFiber

    @property
    def cable_sag_error(self) -> float:
        return abs(self.hanging[0].sag - self.cable_sag_exact) / self.cable_sag_exact

    @property
    def summary(self) -> str:
        bending = next(h for h in self.hanging if h.EI == EI_PHYSICAL)
        pure_beam = next(b for b in self.beam if b.kL == 0)
        return (
            f"summary: tangent_error_explicit={self.tangents.explicit:.3e} "
            f"tangent_error_auto={self.tangents.auto:.3e} "
            f"tangent_mismatch={self.tangents.mismatch:.3e} "
            f"pinned_beam_sag_error={pure_beam.error:.3e} "
            f"tensioned_beam_sag_error={max(b.error for b in self.beam):.3e} "
            f"tensioned_beam_curve_error={max(b.deflection_error for b in self.beam):.3e} "
            f"cable_sag_error={self.cable_sag_error:.3e} "
            f"sag_no_bending_m={self.hanging[0].sag:.6f} sag_bending_m={bending.sag:.6f} "
            f"drag_velocity_error={self.falling.error:.3e}"
        )


def run(
    *,
    n_elements: int = 16,
    kLs: tuple[float, ...] = (0.0, 2.0, 6.0, 20.0),
    EI_factors: tuple[float, ...] = (0.0, 0.1, 1.0, 10.0),
    drag_coefficient: float = DENSITY * AREA / 0.05,
    small: bool = False,
) -> CustomTermResult:
    """Run the demo.

    Parameters
    ----------
    n_elements
        Elements of the fibers in the beam and gravity cases.
    kLs
        L √(T/EI) of the small-load beam checks (0: pure beam).
    EI_factors
        Bending stiffness of the hanging fibers in units of
        ``EI_PHYSICAL`` = 3 μM π r0⁴/4; must contain 0 (first) and 1.
    drag_coefficient
        Drag coefficient c (N s/m²) of the falling fiber (default: time
        constant ρ0 π r0² / c = 0.05 s).
    small
        Quick version for tests (8 elements).
    """
    if small:
        n_elements = 8
    if EI_factors[0] != 0.0 or 1.0 not in EI_factors:
        raise ValueError(f"EI_factors must start with 0 and contain 1, got {EI_factors}")
    sag, force = elastic_cable_sag(sf.paper_law(sigma0=SIGMA0), q=DENSITY * GRAVITY * AREA)
    return CustomTermResult(
        tangents=check_terms(n_elements=8),
        beam=[beam_string_check(kL=kL, n_elements=n_elements) for kL in kLs],
        beam_auto=beam_string_check(kL=0.0, n_elements=n_elements, automatic=True),
        hanging=[hanging_fiber(EI=f * EI_PHYSICAL, n_elements=n_elements) for f in EI_factors],
        cable_sag_exact=sag,
        cable_force_exact=force,
        falling=falling_fiber(c=drag_coefficient, automatic=True),
    )


def _print_report(r: CustomTermResult) -> None:
    t = r.tangents
    print("tangent check (relative error vs central differences, backward Euler Δt = 0.01 s)")
    print(f"{'term':>8} {'explicit':>10} {'automatic':>10}")
    print(f"{'bending':>8} {t.bending_explicit:10.2e} {t.bending_auto:10.2e}")
    print(f"{'drag':>8} {t.drag_explicit:10.2e} {t.drag_auto:10.2e}")
    print(f"explicit vs automatic tangent: max relative difference {t.mismatch:.2e}")
    print()
    print(f"small line load, pinned ends, EI = {EI_PHYSICAL:.4g} N m²: sag vs tensioned beam "
          "(kL = 0: 5qL⁴/384EI)")
    print(f"{'kL':>5} {'σ0 (Pa)':>10} {'sag FE (m)':>16} {'sag exact (m)':>16} {'string qL²/8T':>14} {'rel. error':>11}"
          f" {'curve w':>9} {'curve w″':>9}")
    for b in r.beam:
        print(f"{b.kL:5.1f} {b.sigma0:10.1f} {b.sag_fe:16.9e} {b.sag_exact:16.9e} {b.sag_string:14.6e} {b.error:11.2e}"
              f" {b.deflection_error:9.2e} {b.curvature_error:9.2e}")
    print("(curve w, w″: largest error along the fiber relative to the largest |w|, |w″| of the closed form)")
    print(f"kL = 0 with the automatic tangent: rel. error {r.beam_auto.error:.2e}")
    print()
    print("Table-1 muscle fiber (σ0 = 30 Pa), both ends fixed, under gravity (body force ρ0 g)")
    print(f"{'EI (N m²)':>10} {'sag (m)':>10} {'N max (N)':>10} {'Newton it':>10}")
    for h in r.hanging:
        print(f"{h.EI:10.4g} {h.sag:10.6f} {h.max_force:10.4f} {h.newton_iterations:10d}")
    print(f"elastic cable (EI = 0), independent: sag {r.cable_sag_exact:.6f} m, N max {r.cable_force_exact:.4f} N; "
          f"rel. error of FE sag {r.cable_sag_error:.2e}")
    print()
    f = r.falling
    print(f"free fiber falling with drag c = {f.c:.4g} N s/m² (automatic tangent): v FE {f.velocity_fe:.10f} m/s, "
          f"backward-Euler closed form {f.velocity_exact:.10f} m/s (rel. error {f.error:.1e}), "
          f"terminal {f.terminal_velocity:.6f} m/s")


def plot(result: CustomTermResult, filename: str) -> None:
    """Save the gravity sag curves for the EI values to ``filename`` (needs matplotlib)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.subplots()
    for h in result.hanging:
        ax.plot(h.theta, -h.sag_curve, label=f"EI = {h.EI:.3g} N m²")
    ax.set_xlabel("θ")
    ax.set_ylabel("z (m)")
    ax.set_title("fiber under gravity, with and without bending")
    ax.legend()
    fig.savefig(filename, dpi=120)


def main(argv=None) -> CustomTermResult:
    """Command line: print the tables, end with the ``summary:`` line."""
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=positive_int, default=None,
                        help="elements per fiber (default 16, 8 with --small)")
    parser.add_argument("--small", action="store_true", help="quick run (8 elements unless --elements says)")
    parser.add_argument("--plot", metavar="FILE.png", help="save the gravity sag curves (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:
        output_file(parser, "--plot", args.plot, figure=True)
    result = run(n_elements=args.elements or (8 if args.small else 16))
    _print_report(result)
    if args.plot:
        plot(result, args.plot)
        print(f"plot saved to {args.plot}")
    print(result.summary)
    return result


if __name__ == "__main__":
    run_script(main)
