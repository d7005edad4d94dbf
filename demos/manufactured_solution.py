r"""Manufactured solution for the cable model (paper §5.1, Table 1, eqs. 74–76).
============================================================================

A single fiber X(θ) = (θ, 0, 0), θ ∈ [0, 1], with the Table 1 material
(:func:`skfiber.paper_law` defaults), r0 = 0.05 m, ρ0 = 900 kg/m³ and the
muscle fraction γM(θ) = 16 (1 − θ)² θ² (eq. 74) is driven along the exact
motion (eq. 75)

    x(θ, t) = (θ, 0, 0) + (0, cos θ, sin 8θ) (1 − cos t).

Both end positions are prescribed with this motion (slopes free) and the body
force b0 (N/m³, per reference volume) that makes it an exact solution is
derived with sympy from the stress law itself
(:meth:`skfiber.SymbolicLaw.stress_expression`) with ``λ = |x′|/|X′|`` and
λ̇ = ∂λ/∂t.  It is the strong form of the weak form in :mod:`skfiber.forms`::

    b0 = ρ0 ẍ − (1/|A1|) ∂θ( S x′/|A1| )        (|A1| = |X′| = 1 here).

Choices and departures (also in ``docs/theory.md``):

* **Inertia.**  The paper's eq. (76), b0 = −Div(F S), omits ρ0 ẍ: that is
  the body force of a *static* manufactured solution.  The dynamic study
  here needs ρ0 ẍ, so it is included; the static study drops it (and λ̇).
* **Activation.**  The paper does not give α(t) for §5.1.  This demo uses
  α(t) = 0.05 (1 − cos πt) ∈ [0, 0.1] (smooth, α(0) = α′(0) = 0, maximal
  at t = 1 s), so the active term (eq. 32) contributes to b0.  Larger
  activations are not a good test: for Table 1 (Smax = 3 μM) the axial
  stiffness d(λS)/dλ of pure muscle turns negative on the descending limb of
  the force–length curve (λ ≈ 1.65) once α ≳ 0.18 — a material instability
  (with α(1 s) = 1 the static errors on Ne = 16, 32 were 10× larger and
  Newton needed bisections).
* **Time interval.**  T = 1 s (the paper does not give it); the exact
  motion starts at rest, so the default initial state is exact.

Two studies, each isolating one error source:

:func:`temporal_study`
    backward Euler (:func:`skfiber.simulate`) on a fixed mesh (Ne = 32) with
    Δt = T/N, error e = ‖u2_h(0.5, t) − u2(0.5, t)‖_L2([0, T]) by the
    trapezoidal rule over the step times (the measure of the paper's Fig. 3),
    u2(0.5, t) = cos(0.5) (1 − cos t).  Expected rate 1.
:func:`spatial_study`
    the *static* manufactured problem at t* = T (same x(θ, t*); b0 without
    ρ0 ẍ and with λ̇ = 0; :func:`skfiber.solve_static`), so there is no time
    error: L2([0, 1]) error of the displacement (8-point Gauss per element)
    and the error at θ = 0.5.  Expected rate 4 (cubic Hermite).

Measured (2-core shared VM, with start-up: full run 8–30 s, ``--small`` 3–10 s, over several days):

* Temporal, N = 32 … 2048: e = 1.12e-3 … 2.49e-5, local rates 0.85 → 0.96,
  least-squares rate 0.92; no Newton step was split, and the finest step on
  Ne = 64 changes e by 0.4 %.  For N ≤ 16 the error levels off
  (≈ 2e-3: the motion is nearly quasi-static, inertia and viscosity are small
  against the elastic stress), so the study starts at N = 32.
* Spatial, Ne = 8 … 512: L2 error 7.5e-3 … 1.8e-11; local rates
  3.6, 4.2, 7.9, 4.7, 4.3, 4.0; least-squares rate on Ne = 128 … 512: 4.13.
  The error approaches h⁴ from above; at Ne = 1024 it stalls at 1e-11 …
  4e-11 (round-off: the Newton residual cannot go below ~2e-8 N there), so
  the study stops at 512.
* Quadrature matters here: the stress varies by two orders of magnitude
  along one wave of sin 8θ.  With skfiber's default 4 Gauss points per
  element the quadrature error dominates up to Ne = 128 (errors ×10, ×13, ×3
  at Ne = 32, 64, 128; rate on 128 … 512 then 4.9), so both studies use 6
  points (:data:`QUADRATURE_POINTS`), which agree with 8 points from Ne = 64.
* The static equilibrium is found by Newton from the Hermite interpolant of
  the exact solution (one load step).  Load stepping from the straight
  reference state is unreliable for this cable (prestress σ0 = 30 Pa gives
  it almost no transverse stiffness): with 10 or 40 load steps Newton fails
  for Ne ≥ 16; on Ne = 8 one or 40 load steps end on other equilibria
  (L2 errors 9.6e-2 and 4.6e-2 instead of 7.5e-3).

BDF2 (``temporal_study(method="bdf2")``, on Ne = :data:`BDF2_ELEMENTS` = 64,
whose spatial error is below BDF2's time error; on Ne = 32 it is not from
N = 256 on): ``--small`` N = 256, 512, 1024: e = 1.5e-7, 3.8e-8, 9.9e-9,
local rates 1.96, 1.95, fitted 1.95 (the full run adds N = 128 and 2048 and
the mesh check: local rates 1.90 … 1.96, fitted 1.92).

Run ``python demos/manufactured_solution.py [--small] [--plot FILE.png]``.
The last line of the output is ``summary: temporal_rate=… spatial_rate=… bdf2_temporal_rate=…``.
"""
from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import sympy as sp

import skfiber as sf
from skfiber.cli import ArgumentParser, output_file, run_script
from skfiber.materials import SYMBOLS, SymbolicLaw

__all__ = [
    "RADIUS",
    "DENSITY",
    "T_END",
    "muscle_fraction",
    "activation",
    "exact_displacement",
    "exact_velocity",
    "exact_acceleration",
    "QUADRATURE_POINTS",
    "hermite_interpolant",
    "body_force",
    "build_model",
    "solve_static_manufactured",
    "fitted_rate",
    "TemporalStudy",
    "SpatialStudy",
    "ManufacturedResult",
    "temporal_study",
    "spatial_study",
    "run",
    "plot",
    "main",
]

RADIUS = 0.05  # r0 (m), Table 1
DENSITY = 900.0  # ρ0 (kg/m³), Table 1
T_END = 1.0  # T (s): end of the dynamic run and time t* of the static problem
ALPHA_AMPLITUDE = 0.05  # α(t) = 0.05 (1 − cos πt) ≤ 0.1
MIDPOINT = 0.5  # θ where the paper measures the error
#: Gauss points per element of the cable integrals.  skfiber's default 4 is
#: exact for the mass matrix, but here the stress varies by two orders of
#: magnitude along one wave of sin 8θ and the 4-point rule dominates the
#: spatial error up to Ne ≈ 128 (10× the discretization error at Ne = 32–64).
QUADRATURE_POINTS = 6

#: Newton tolerances.  The residual cannot drop below ~1e-9 N (Ne = 128) in
#: floating point, while the loads of the first steps from rest are tiny: with
#: the default atol = 1e-12 the first step of Ne = 128, Δt = 1/512 never
#: "converges" (residual stalls at 1.02e-9 N).  atol = 1e-8 N is far below the
#: forces that matter (~1e4 N).  The stagnation window is 3 iterations, not the time step's default of 1:
#: the study measures backward Euler at its fixed steps, and with the default the second step of N = 32 gave
#: up after one iteration that cut the residual by 1 % (0.899 → 0.887 N) and was split in two, so that its
#: error was that of shorter steps (1.02e-3 against 1.12e-3) and the fitted rate 0.90 against 0.92.
DYNAMIC_NEWTON = sf.NewtonOptions(rtol=1e-9, atol=1e-8, stagnation_window=3)
#: the BDF2 temporal study's mesh: its errors reach 1e-8, below the spatial error of Ne = 32 (≈ 2e-7)
BDF2_ELEMENTS = 64
STATIC_NEWTON = sf.NewtonOptions(rtol=1e-11, atol=1e-8, max_iterations=40)


# --------------------------------------------------------------------------- data
def muscle_fraction(theta: np.ndarray) -> np.ndarray:
    """γM(θ) = 16 (1 − θ)² θ² (paper eq. 74)."""
    theta = np.asarray(theta, dtype=float)
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def activation(t: float) -> float:
    """α(t) = 0.05 (1 − cos πt) ∈ [0, 0.1] (the paper gives none for §5.1)."""
    return ALPHA_AMPLITUDE * (1.0 - np.cos(np.pi * t))


def _shape(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    theta = np.asarray(theta, dtype=float)
    return np.zeros_like(theta), np.cos(theta), np.sin(8.0 * theta)


def exact_displacement(theta: np.ndarray | float, t: float) -> np.ndarray:
    """u(θ, t) = x − X = (0, cos θ, sin 8θ)(1 − cos t) (eq. 75), shape (3, *θ.shape)."""
    return np.array(_shape(theta)) * (1.0 - np.cos(t))


def exact_velocity(theta: np.ndarray | float, t: float) -> np.ndarray:
    """∂u/∂t, shape (3, *θ.shape)."""
    return np.array(_shape(theta)) * np.sin(t)


def exact_acceleration(theta: np.ndarray | float, t: float) -> np.ndarray:
    """∂²u/∂t², shape (3, *θ.shape)."""
    return np.array(_shape(theta)) * np.cos(t)


def _exact_slope(theta: np.ndarray, t: float, time_derivative: int) -> np.ndarray:
    """∂θ of u (or of its time derivatives), shape (3, *θ.shape)."""
    theta = np.asarray(theta, dtype=float)
    g = (1.0 - np.cos(t), np.sin(t), np.cos(t))[time_derivative]
    return np.array([np.zeros_like(theta), -np.sin(theta), 8.0 * np.cos(8.0 * theta)]) * g


def hermite_interpolant(model: sf.Model, t: float, *, time_derivative: int = 0) -> np.ndarray:
    """DOF vector of the cubic Hermite interpolant of u (or u̇, ü) at time t.

    Nodal values and θ-derivatives of the exact field; used to check the
    consistency of b0 (the discrete residual at the interpolant → 0).
    """
    if time_derivative not in (0, 1, 2):
        raise ValueError(f"time_derivative must be 0, 1 or 2, got {time_derivative!r}")
    d = model.discretization
    theta = d.node_theta
    value = (exact_displacement, exact_velocity, exact_acceleration)[time_derivative](theta, t)
    dofs = np.empty((theta.size, 6))
    dofs[:, :3] = value.T
    dofs[:, 3:] = _exact_slope(theta, t, time_derivative).T
    return dofs.ravel()


# --------------------------------------------------------------------------- body force
@functools.lru_cache(maxsize=1)
def _default_law() -> SymbolicLaw:
    """Table 1 (one object, so the compiled body force is cached)."""
    return sf.paper_law()


@functools.lru_cache(maxsize=8)
def _compiled_body_force(law: SymbolicLaw, static: bool) -> Callable:
    theta, t = SYMBOLS["theta"], SYMBOLS["t"]
    X = sp.Matrix([theta, 0, 0])
    x = X + sp.Matrix([0, sp.cos(theta), sp.sin(8 * theta)]) * (1 - sp.cos(t))
    A1 = X.diff(theta)
    norm_A1 = sp.sqrt(A1.dot(A1))
    a1 = x.diff(theta)
    stretch = sp.sqrt(a1.dot(a1)) / norm_A1
    stress = law.stress_expression(
        stretch=stretch,
        stretch_rate=0 if static else stretch.diff(t),
        theta=theta,
        t=t,
        muscle_fraction=16 * (1 - theta) ** 2 * theta**2,
        activation=sp.Float(ALPHA_AMPLITUDE) * (1 - sp.cos(sp.pi * t)),
    )
    b0 = -(stress * a1 / norm_A1).diff(theta) / norm_A1
    if not static:
        b0 = b0 + sp.Float(DENSITY) * x.diff(t, 2)
    return sp.lambdify((theta, t), list(b0), modules="numpy", cse=True)


def body_force(
    law: SymbolicLaw | None = None, *, static: bool = False
) -> Callable[[np.ndarray, float], np.ndarray]:
    """The exact body force b0(θ, t) (N/m³) of the manufactured motion.

    Parameters
    ----------
    law
        A :class:`skfiber.SymbolicLaw`; default :func:`skfiber.paper_law`
        (Table 1).  It must be the law of the fiber.
    static
        If True, the body force of the static problem whose equilibrium is
        x(θ, t) with t a parameter: no ρ0 ẍ and λ̇ = 0 (paper eq. 76).

    Returns
    -------
    callable
        ``b0(theta, t)`` returning an array of shape (3, *theta.shape), as
        :meth:`skfiber.Model.add_body_force` expects.
    """
    law = _default_law() if law is None else law
    if not isinstance(law, SymbolicLaw):
        raise TypeError(
            f"the manufactured body force needs a SymbolicLaw (sympy expression), got {type(law).__name__}"
        )
    compiled = _compiled_body_force(law, bool(static))

    def b0(theta: np.ndarray, t: float) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        return np.array([np.broadcast_to(c, theta.shape) for c in compiled(theta, float(t))])

    return b0


def build_model(
    n_elements: int,
    *,
    static: bool = False,
    law: SymbolicLaw | None = None,
    quadrature_points: int = QUADRATURE_POINTS,
) -> sf.Model:
    """The §5.1 fiber with both ends prescribed by the exact motion and b0 applied."""
    law = _default_law() if law is None else law
    fiber = sf.Fiber.straight(
        (0.0, 0.0, 0.0),
        (1.0, 0.0, 0.0),
        n_elements=n_elements,
        radius=RADIUS,
        density=DENSITY,
        law=law,
        muscle_fraction=muscle_fraction,
        activation=activation,
        name="fiber",
    )
    model = sf.Model([fiber], quadrature_points=quadrature_points)
    model.prescribe(fiber, "start", lambda t: exact_displacement(0.0, t))
    model.prescribe(fiber, "end", lambda t: exact_displacement(1.0, t))
    model.add_body_force(body_force(law, static=static))
    return model


def fitted_rate(sizes: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(size)."""
    sizes, errors = np.asarray(sizes, float), np.asarray(errors, float)
    if sizes.size < 2:
        raise ValueError("a rate needs at least two points")
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


def _local_rates(sizes: np.ndarray, errors: np.ndarray) -> np.ndarray:
    return np.concatenate([[np.nan], np.diff(np.log(errors)) / np.diff(np.log(sizes))])


def _progress(message: str, enabled: bool) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- temporal
@dataclass(frozen=True)
class TemporalStudy:
    """Backward-Euler errors at θ = 0.5 on one mesh.

    ``errors[i]`` = ‖u2_h(0.5, ·) − u2(0.5, ·)‖_L2([0, T]) with ``steps[i]``
    steps of size ``dt[i]``; ``rate`` is the least-squares slope over all of
    them.  ``retries`` counts steps Newton had to split (a non-uniform time
    grid; 0 in the default studies).  ``mesh_check_error`` is the error of
    the finest step size on a mesh with twice as many elements (NaN if not
    run): its difference to ``errors[-1]`` bounds the spatial part.
    """

    n_elements: int
    t_end: float
    steps: np.ndarray
    dt: np.ndarray
    errors: np.ndarray
    newton_per_step: np.ndarray
    retries: np.ndarray
    wall_times: np.ndarray
    rate: float
    mesh_check_error: float = float("nan")
    method: str = "euler"

    @property
    def local_rates(self) -> np.ndarray:
        return _local_rates(self.dt, self.errors)

    def table(self) -> str:
        scheme = {"euler": "backward Euler", "bdf2": "BDF2"}[self.method]
        lines = [
            f"temporal study: {scheme}, Ne = {self.n_elements}, T = {self.t_end:g} s, "
            f"e = ||u2_h(0.5,t) - u2(0.5,t)||_L2(0,T)",
            f"{'N':>6} {'dt':>10} {'error':>11} {'rate':>6} {'newton/step':>12} "
            f"{'retries':>8} {'wall [s]':>9}",
        ]
        for i, n in enumerate(self.steps):
            r = self.local_rates[i]
            lines.append(
                f"{n:>6d} {self.dt[i]:>10.3e} {self.errors[i]:>11.4e} "
                f"{'' if np.isnan(r) else f'{r:.2f}':>6} {self.newton_per_step[i]:>12.2f} "
                f"{self.retries[i]:>8d} {self.wall_times[i]:>9.2f}"
            )
        if not np.isnan(self.mesh_check_error):
            change = abs(self.mesh_check_error - self.errors[-1]) / self.errors[-1]
            lines.append(
                f"spatial part: N = {self.steps[-1]} on Ne = {2 * self.n_elements} gives error "
                f"{self.mesh_check_error:.4e} ({100 * change:.2g} % change)"
            )
        lines.append(f"fitted temporal rate (least squares, all N): {self.rate:.2f}")
        return "\n".join(lines)


def temporal_study(
    *,
    n_elements: int = 32,
    steps: Sequence[int] = (32, 64, 128, 256, 512, 1024, 2048),
    t_end: float = T_END,
    quadrature_points: int = QUADRATURE_POINTS,
    law: SymbolicLaw | None = None,
    mesh_check: bool = False,
    progress: bool = True,
    method: str = "euler",
) -> TemporalStudy:
    """Time convergence of backward Euler (or ``method="bdf2"``) with the dynamic manufactured solution.

    Parameters
    ----------
    n_elements
        Elements of the (fixed, fine) mesh; keep it even so θ = 0.5 is a node.
    steps
        Numbers of steps N; Δt = t_end / N.
    t_end
        T (s).
    quadrature_points
        Gauss points per element of the cable integrals.
    law
        Stress law (default: Table 1).
    mesh_check
        Also run the smallest step on 2 × ``n_elements`` elements, to show
        that the spatial error does not pollute the table.
    progress
        Print one line per run to stderr.
    """
    steps = np.asarray(sorted(int(n) for n in steps))
    model = build_model(n_elements, static=False, law=law, quadrature_points=quadrature_points)
    errors, newton, retries, walls = [], [], [], []
    for i, n in enumerate(steps):
        start = time.perf_counter()
        error, result = _midpoint_error(model, t_end, int(n), method=method)
        walls.append(time.perf_counter() - start)
        errors.append(error)
        newton.append(float(np.mean(result.newton_iterations)))
        retries.append(int(result.retries))
        _progress(
            f"temporal: N = {n} ({i + 1}/{steps.size})  error {errors[-1]:.3e}  "
            f"newton/step {newton[-1]:.1f}  retries {retries[-1]}  {walls[-1]:.1f} s",
            progress,
        )
    check = float("nan")
    if mesh_check:
        start = time.perf_counter()
        fine = build_model(2 * n_elements, static=False, law=law, quadrature_points=quadrature_points)
        check, _ = _midpoint_error(fine, t_end, int(steps[-1]), method=method)
        _progress(
            f"temporal: N = {steps[-1]} on Ne = {2 * n_elements}  error {check:.3e}  "
            f"{time.perf_counter() - start:.1f} s",
            progress,
        )
    dt = t_end / steps
    errors = np.array(errors)
    return TemporalStudy(
        n_elements=int(n_elements),
        t_end=float(t_end),
        steps=steps,
        dt=dt,
        errors=errors,
        newton_per_step=np.array(newton),
        retries=np.array(retries),
        wall_times=np.array(walls),
        rate=fitted_rate(dt, errors),
        mesh_check_error=check,
        method=method,
    )


def _midpoint_error(model: sf.Model, t_end: float, n_steps: int, *, method: str = "euler"
                    ) -> tuple[float, sf.SimulationResult]:
    """‖u2_h(0.5, ·) − u2(0.5, ·)‖_L2([0, T]) of a fixed-step run (trapezoidal rule over all steps)."""
    d = model.discretization
    result = sf.simulate(
        model, t_end=t_end, dt=t_end / n_steps, method=method, newton_options=DYNAMIC_NEWTON, progress=False,
        store_every=1, on_interrupt="raise",  # a part of the run would give a wrong error
    )
    u2 = np.array([d.evaluate(u, 0, [MIDPOINT])[1, 0] for u in result.displacements])
    exact = np.cos(MIDPOINT) * (1.0 - np.cos(result.times))  # u2(0.5, t)
    return float(np.sqrt(np.trapezoid((u2 - exact) ** 2, result.times))), result


# --------------------------------------------------------------------------- spatial
@dataclass(frozen=True)
class SpatialStudy:
    """Errors of the static manufactured problem against the mesh size.

    ``l2_errors`` are ‖u_h − u‖_L2([0, 1]) (all three components),
    ``midpoint_errors`` |u_h(0.5) − u(0.5)|, ``interpolation_errors`` the L2
    error of the Hermite interpolant of the exact solution (for scale).
    ``rate`` is the least-squares slope of the L2 error over the finest
    ``fit_points`` meshes (the asymptotic range), ``rate_all`` over all.
    """

    t: float
    elements: np.ndarray
    h: np.ndarray
    l2_errors: np.ndarray
    midpoint_errors: np.ndarray
    interpolation_errors: np.ndarray
    newton_iterations: np.ndarray
    wall_times: np.ndarray
    fit_points: int
    rate: float
    rate_all: float
    midpoint_rate: float

    @property
    def local_rates(self) -> np.ndarray:
        return _local_rates(self.h, self.l2_errors)

    def table(self) -> str:
        mid_rates = _local_rates(self.h, self.midpoint_errors)
        lines = [
            f"spatial study: static problem at t* = {self.t:g} s (alpha = {activation(self.t):.3g}), "
            "e = ||u_h - u||_L2(0,1)",
            f"{'Ne':>6} {'h':>10} {'L2 error':>11} {'rate':>6} {'|e(0.5)|':>11} {'rate':>6} "
            f"{'interp. L2':>11} {'newton':>7} {'wall [s]':>9}",
        ]
        for i, ne in enumerate(self.elements):
            r, rm = self.local_rates[i], mid_rates[i]
            lines.append(
                f"{ne:>6d} {self.h[i]:>10.3e} {self.l2_errors[i]:>11.4e} "
                f"{'' if np.isnan(r) else f'{r:.2f}':>6} {self.midpoint_errors[i]:>11.4e} "
                f"{'' if np.isnan(rm) else f'{rm:.2f}':>6} {self.interpolation_errors[i]:>11.4e} "
                f"{self.newton_iterations[i]:>7d} {self.wall_times[i]:>9.2f}"
            )
        fit = self.elements[-self.fit_points:]
        lines.append(
            f"fitted spatial rate (least squares, Ne = {fit[0]}…{fit[-1]}): {self.rate:.2f}  "
            f"(all meshes: {self.rate_all:.2f}; at θ = 0.5: {self.midpoint_rate:.2f})"
        )
        return "\n".join(lines)


def _l2_error(model: sf.Model, dofs: np.ndarray, t: float, *, points: int = 8) -> float:
    d = model.discretization
    ne = d.fibers[0].n_elements
    xi, wi = np.polynomial.legendre.leggauss(points)
    theta = ((np.arange(ne)[:, None] + 0.5 * (xi + 1.0)[None, :]) / ne).ravel()
    weights = np.tile(0.5 * wi / ne, ne)
    diff = d.evaluate(dofs, 0, theta) - exact_displacement(theta, t)
    return float(np.sqrt(np.sum(weights * np.sum(diff**2, axis=0))))


def solve_static_manufactured(model: sf.Model, t: float) -> tuple[sf.State, int]:
    """Static equilibrium x(θ, t) of the manufactured problem (b0 with ``static=True``).

    Newton (:func:`skfiber.solve_static`, one load step) starts from the
    Hermite interpolant of the exact solution: the discrete solution sought is
    the one next to the exact one.  Load stepping from the straight reference
    state (b0 and end displacements scaled by 0 → 1) does not work for this
    cable: with the prestress σ0 = 30 Pa alone it has almost no transverse
    stiffness, and Newton fails or converges to another equilibrium.
    Returns the state and the number of Newton iterations.
    """
    guess = sf.State(t, hermite_interpolant(model, t), np.zeros(model.n_dofs))
    result = sf.solve_static(model, t=t, load_steps=1, state=guess, newton_options=STATIC_NEWTON)
    return result.state, int(sum(result.iterations))


def spatial_study(
    *,
    elements: Sequence[int] = (8, 16, 32, 64, 128, 256, 512),
    t: float = T_END,
    fit_points: int = 3,
    quadrature_points: int = QUADRATURE_POINTS,
    law: SymbolicLaw | None = None,
    progress: bool = True,
) -> SpatialStudy:
    """Mesh convergence with the static manufactured solution x(θ, t).

    Parameters
    ----------
    elements
        Numbers of elements Ne (h = 1/Ne); keep them even (θ = 0.5 a node).
    t
        The time t* whose configuration is the static solution (s).
    fit_points
        The rate is fitted on this many of the finest meshes.
    quadrature_points
        Gauss points per element of the cable integrals (see the module
        docstring for why 6 and not skfiber's default 4).
    law
        Stress law (default: Table 1).
    progress
        Print one line per mesh to stderr.
    """
    elements = np.asarray(sorted(int(n) for n in elements))
    if not 2 <= fit_points <= elements.size:
        raise ValueError(f"fit_points must be in 2 … {elements.size}, got {fit_points!r}")
    l2, mid, interp, its, walls = [], [], [], [], []
    for i, ne in enumerate(elements):
        start = time.perf_counter()
        model = build_model(int(ne), static=True, law=law, quadrature_points=quadrature_points)
        state, n_it = solve_static_manufactured(model, t)
        walls.append(time.perf_counter() - start)
        d = model.discretization
        l2.append(_l2_error(model, state.u, t))
        interp.append(_l2_error(model, hermite_interpolant(model, t), t))
        e_mid = d.evaluate(state.u, 0, [MIDPOINT])[:, 0] - exact_displacement(MIDPOINT, t)
        mid.append(float(np.linalg.norm(e_mid)))
        its.append(n_it)
        _progress(
            f"spatial: Ne = {ne} ({i + 1}/{elements.size})  L2 error {l2[-1]:.3e}  "
            f"newton {n_it}  {walls[-1]:.1f} s",
            progress,
        )
    h = 1.0 / elements
    l2, mid = np.array(l2), np.array(mid)
    return SpatialStudy(
        t=float(t),
        elements=elements,
        h=h,
        l2_errors=l2,
        midpoint_errors=mid,
        interpolation_errors=np.array(interp),
        newton_iterations=np.array(its),
        wall_times=np.array(walls),
        fit_points=int(fit_points),
        rate=fitted_rate(h[-fit_points:], l2[-fit_points:]),
        rate_all=fitted_rate(h, l2),
        midpoint_rate=fitted_rate(h[-fit_points:], mid[-fit_points:]),
    )


# --------------------------------------------------------------------------- driver
@dataclass(frozen=True)
class ManufacturedResult:
    """Both studies and the total wall time (s)."""

    temporal: TemporalStudy
    spatial: SpatialStudy
    wall_time: float
    #: the temporal study with BDF2 (Ne = 64: its errors reach 1e-8, where Ne = 32's spatial error shows)
    temporal_bdf2: TemporalStudy | None = None

    @property
    def summary(self) -> str:
        text = f"summary: temporal_rate={self.temporal.rate:.2f} spatial_rate={self.spatial.rate:.2f}"
        if self.temporal_bdf2 is not None:
            text += f" bdf2_temporal_rate={self.temporal_bdf2.rate:.2f}"
        return text


def run(*, small: bool = False, progress: bool = True) -> ManufacturedResult:
    """Run both studies.

    Parameters
    ----------
    small
        Quick version for the tests: N = 64, 128, 256 and Ne = 16 … 256
        (instead of N = 32 … 2048 with a mesh check, and Ne = 8 … 512).
    progress
        Print one line per run to stderr.
    """
    start = time.perf_counter()
    if small:
        temporal = temporal_study(n_elements=32, steps=(64, 128, 256), progress=progress)
        spatial = spatial_study(elements=(16, 32, 64, 128, 256), progress=progress)
    else:
        temporal = temporal_study(mesh_check=True, progress=progress)
        spatial = spatial_study(progress=progress)
    bdf2 = temporal_study(n_elements=BDF2_ELEMENTS, steps=(256, 512, 1024) if small else (128, 256, 512, 1024, 2048),
                          method="bdf2", mesh_check=not small, progress=progress)
    return ManufacturedResult(temporal, spatial, time.perf_counter() - start, bdf2)


def plot(result: ManufacturedResult, filename: str) -> None:
    """Save both convergence plots (log–log) to ``filename`` (needs matplotlib)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_t, ax_s = fig.subplots(1, 2)
    tmp = result.temporal
    ax_t.loglog(tmp.dt, tmp.errors, "o-", label=f"Ne = {tmp.n_elements} (rate {tmp.rate:.2f})")
    ax_t.loglog(tmp.dt, tmp.errors[-1] * tmp.dt / tmp.dt[-1], "k--", label="slope 1")
    ax_t.set_xlabel("Δt (s)")
    ax_t.set_ylabel("‖u₂ʰ(0.5,t) − u₂(0.5,t)‖_L2(0,T) (m·s^½)")
    ax_t.set_title("backward Euler")
    ax_t.legend()
    sp_ = result.spatial
    ax_s.loglog(sp_.h, sp_.l2_errors, "o-", label=f"‖u_h − u‖_L2 (rate {sp_.rate:.2f})")
    ax_s.loglog(sp_.h, sp_.midpoint_errors, "s-", label="|u_h(0.5) − u(0.5)|")
    ax_s.loglog(sp_.h, sp_.interpolation_errors, "^:", label="Hermite interpolant")
    ax_s.loglog(sp_.h, sp_.l2_errors[-1] * (sp_.h / sp_.h[-1]) ** 4, "k--", label="slope 4")
    ax_s.set_xlabel("h = 1/Ne")
    ax_s.set_ylabel("error (m)")
    ax_s.set_title(f"statics at t* = {sp_.t:g} s")
    ax_s.legend()
    fig.savefig(filename, dpi=120)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print both tables and a final ``summary:`` line."""
    parser = ArgumentParser(
        description="Convergence of the cable model with the manufactured solution of "
        "Gfrerer & Simeon (2021), section 5.1.",
    )
    parser.add_argument("--small", action="store_true", help="fewer step sizes and meshes (seconds instead of tens of seconds)")
    parser.add_argument("--plot", metavar="FILE.png", help="save the convergence plots (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:
        output_file(parser, "--plot", args.plot, figure=True)
    result = run(small=args.small)
    print(result.temporal.table())
    print()
    print(result.temporal_bdf2.table())
    print()
    print(result.spatial.table())
    print(f"total wall time {result.wall_time:.1f} s")
    if args.plot:
        plot(result, args.plot)
        print(f"plot saved to {args.plot}")
    print(result.summary)


if __name__ == "__main__":
    run_script(main)
