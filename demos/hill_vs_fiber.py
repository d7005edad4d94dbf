r"""The upper limb with Hill-type muscles next to the fiber model (paper §5.4).
===========================================================================

Same bones, elbow joint, gravity and muscle attachment points as
:mod:`demos.upper_limb` (imported from there; its earlier geometry
``SOFTENING``, without fiber–fiber contact, for which the numbers below were
measured — its triceps is stretched past its force peak, see
``docs/theory.md``), but each of the 2 biceps and
3 triceps fibers is replaced by a Millard (2013) musculotendon actuator
(:class:`skfiber.hill.HillActuator`, OpenSim's default damped-equilibrium
model with an elastic tendon; its fiber length is a state integrated by the
same backward-Euler/Newton step as the elbow angle).  Both models are run
with the time steps of the fiber model's level 1 (256 over 8 s), and the
five default Hill curves are compared with OpenSim 4.6 when ``opensim`` is
installed.

Mapping of the paper's Table 4 fibers to Hill parameters
---------------------------------------------------------
Everything is computed from the fibers of :func:`demos.upper_limb.build_model`
(their law, r0(θ), γM(θ), α(t) and end points), nothing is copied.  For a
fiber of rest length L (biceps 0.3712 m, triceps 0.35 m):

* **path**: straight from the fiber's origin on the upper arm to its
  insertion on the forearm.  No wrapping: the Hill elbow stays below 47°,
  where the straight triceps line still has a moment arm ≥ 5 cm (it would
  vanish near 82°, where the fibers wrap over the elbow cylinder).
* **tendon slack length** l_s = (1 − m̄) L and **optimal fiber length**
  l_o = λ_opt m̄ L, with m̄ = ∫₀¹ γM dθ = 8/15 the muscle share of the fiber
  (eq. 77) and λ_opt = 1.3 the stretch where λ² S_act of the fiber's law
  peaks.  At rest the Hill fiber is at l_o/λ_opt, like the belly at λ = 1.
* **max isometric force** F0 = S_max π r0² at the belly (θ = ½, r0 = 0.12 m,
  γM = 1): 1.90·10⁶ N (biceps), 6.33·10⁵ N (triceps).
* **active force–length curve**: Millard's curve (OpenSim's five-corner
  shape, minimum 0) fitted by least squares to the fiber's
  exp(−|(λ/λ_opt − 1)/ΔW|^ν) on l̃ ∈ [0.4, 1.6] (largest deviation 0.17, on
  the descending limb; the default curve would be much flatter).
* **tendon**: Millard's tendon curve with its strain at F0 fitted so that
  the Hill muscle's static isometric force at the rest length matches the
  fiber's quasi-static isometric force N_iso(α) at 6 activations from
  α_max/30 to α_max (log least squares).  N_iso is computed from the fiber's
  own law and shape: with the ends held at distance L and no inertia, the
  axial force N = π r0²(θ) λ S(λ, θ) is the same at every θ; each section
  takes the smallest stretch that carries N, and N is such that
  ∫₀¹ λ dθ = 1.  Table 4's tendon (μ_T = 10⁶ Pa) is very compliant next to
  its S_max, so the fitted strain at F0 is large (biceps 5.6, triceps 4.3;
  OpenSim's default is 0.049): at the forces reached here (≤ 1 % of F0) the
  tendons stretch by 5–20 %, as the fiber's tendon ends do.  Agreement of the
  isometric forces: within 16 % (biceps) and 7 % (triceps).  With OpenSim's
  stiff default tendon the nominal F0 would give forces 100 times the
  fiber's and the forearm would spin.
* **fiber damping** β from the belly's viscosity: the fiber's viscous
  force 3 η_M π r0² λ̇ with λ̇ = v/(m̄ L) equals β f_o v/v_max for
  β = 3 η_M π r0² v_max/(f_o m̄ L): 9.3·10⁻⁴ (biceps), 2.8·10⁻³ (triceps),
  η_M = 10³ Pa s from the law.  (OpenSim's β = 0.1 would be a damper of
  7·10⁴ N s/m that dominates the active force at the activations of ~1 % of
  f_o used here: the forearm would reach only 19°.)
* **activation** a(t) = α(t) of the fiber (eq. 78; no activation
  dynamics), minimum activation 0 (α_tri(0) = 0).
* the rest: OpenSim's defaults (damped-equilibrium formulation,
  v_max = 10 l_o/s, force–velocity and passive curves, no pennation); the
  fiber model has no force–velocity relation besides its viscosity.

Over the 8 s (level-1 steps) the Hill forearm flexes in phase with the fiber
model's and to a similar peak (46° against 48°; both extend to −6° to −7°),
but it does not hold the flexion: after each peak it falls back within
≈ 0.5 s while the fiber model stays near 45° until t ≈ 0.9 s of each period
(the fibers co-contract at high force there, partly held by the wrapping
cylinder).  Biceps forces peak alike (11.8 kN against 12.7 kN); at the
flexion peaks both Hill muscles relax to ~0.1 kN while the fibers keep 5 kN
and 2 kN.  Correlation of the two angle curves: 0.72.  The Hill elbow angle
with the level-1 step is within 2.1° of a run with 4 times smaller steps.

The last line is ``summary: max_curve_err_vs_opensim=<x> hill_wall_s=<s>
fiber_wall_s=<s>``: x is the largest absolute difference of the five default
curves (201 points each) against OpenSim 4.6, or ``nan`` when ``opensim`` is
not installed; the wall times are those of the time integrations (the Hill
parameter mapping takes about 2 s more).

Outputs (``--output DIR``, default ``hill_vs_fiber_output``):
``hill_vs_fiber.csv`` (t, elbow angle and biceps1/triceps1 forces of both
models) and ``hill_vs_fiber.png`` (elbow angle and forces over time).  The
Hill force is the tension f of the musculotendon (the same at origin and
insertion); the fiber force is the magnitude of the force at the fiber's
upper-arm attachment, as recorded by :func:`demos.upper_limb.run` (it
differs from the insertion force only by the fiber's weight and inertia).

Run::

    python demos/hill_vs_fiber.py                 # 8 s, both models (under a minute)
    python demos/hill_vs_fiber.py --t-end 1       # shorter
"""
from __future__ import annotations

import argparse
import csv
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from skfiber.cli import ArgumentParser, folder_path, output_folder, positive_float, run_script
from skfiber.core.numbers import MAX_STEPS
from skfiber.demos import upper_limb
from skfiber.hill import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    HillActuator,
    Millard2012Muscle,
    MuscleCurves,
    MuscleParameters,
    TendonForceLengthCurve,
)
from skfiber.materials import MaterialPoint
from skfiber.progress import PROGRESS_TERMS
from skfiber.rigid import RigidSystem, simulate_rigid
from skfiber.simulation_result import compile_notice

T_END = upper_limb.T_END
#: the upper limb's earlier attachment geometry (the numbers in the notes are for it)
GEOMETRY = upper_limb.SOFTENING
#: time steps over T_END (the fiber model's level 1)
N_STEPS = upper_limb.LEVELS[1][1]
#: the fibers whose forces are plotted
SHOWN = ("biceps1", "triceps1")
#: the default curves compared with OpenSim 4.6: OpenSim class name → (skfiber class, x range)
CURVES = {
    "ActiveForceLengthCurve": (ActiveForceLengthCurve, (0.0, 2.2)),
    "ForceVelocityCurve": (ForceVelocityCurve, (-1.3, 1.3)),
    "ForceVelocityInverseCurve": (ForceVelocityInverseCurve, (-0.2, 1.6)),
    "FiberForceLengthCurve": (FiberForceLengthCurve, (0.8, 2.0)),
    "TendonForceLengthCurve": (TendonForceLengthCurve, (0.97, 1.08)),
}


# ----------------------------------------------------------------------------- mapping
@dataclass(frozen=True)
class HillMapping:
    """Hill parameters of one fiber and the data they were fitted to (see the module notes)."""

    name: str
    origin: tuple[float, float, float]
    insertion: tuple[float, float, float]
    rest_length: float          #: L (m)
    muscle_share: float         #: m̄ = ∫ γM dθ
    optimal_stretch: float      #: λ_opt of the fiber's law
    max_stress: float           #: S_max of the fiber's law (Pa)
    parameters: MuscleParameters
    active_force_length: ActiveForceLengthCurve    #: fitted to the fiber's active law
    active_fit_error: float     #: max |fitted − fiber| of the active force–length multiplier
    tendon_force_length: TendonForceLengthCurve    #: strain at F0 fitted to the fiber's isometric forces
    calibration_activations: tuple[float, ...]     #: activations α at which ...
    calibration_fiber_forces: tuple[float, ...]    #: ... the fiber's quasi-static isometric force N_iso (N) ...
    calibration_hill_forces: tuple[float, ...]     #: ... and the Hill muscle's static isometric force (N)

    @property
    def activation(self):
        """α(t) of the fiber (:mod:`demos.upper_limb`)."""
        return getattr(upper_limb, f"alpha_{self.name.rstrip('0123456789')}")

    @property
    def calibration_error(self) -> float:
        """max |Hill / fiber − 1| of the isometric forces at the calibration activations."""
        return float(np.max(np.abs(np.divide(self.calibration_hill_forces, self.calibration_fiber_forces) - 1.0)))

    def muscle(self, formulation: str = "damped") -> Millard2012Muscle:
        """The Millard muscle with the mapped parameters and curves."""
        return _muscle(self.parameters, self.active_force_length, self.tendon_force_length, formulation)


def _muscle(parameters, fal, ft, formulation):
    curves = MuscleCurves.for_formulation(formulation, curves=MuscleCurves(active_force_length=fal,
                                                                             tendon_force_length=ft))
    return Millard2012Muscle(parameters, formulation=formulation, curves=curves)


def _active_stress(fiber, lam, *, t: float = 0.0):
    """λ² S_act(λ) of a fiber's law at γM = α = 1 (S(α = 1) − S(α = 0))."""
    def stress(alpha):
        return fiber.law(MaterialPoint(stretch=lam, stretch_rate=np.zeros_like(lam), theta=0.5, t=t,
                                       muscle_fraction=1.0, activation=alpha)).stress

    return (stress(1.0) - stress(0.0)) * lam**2


def muscle_viscosity(fiber) -> float:
    """η_M (Pa s) of a fiber's law: ∂S/∂λ̇ = 3 η_M at λ = 1, γM = 1, α = 0 (eq. 30)."""
    point = MaterialPoint(stretch=1.0, stretch_rate=0.0, theta=0.5, t=0.0, muscle_fraction=1.0, activation=0.0)
    return float(fiber.law(point).d_stretch_rate) / 3.0


def optimal_stretch(fiber) -> tuple[float, float]:
    """(λ_opt, S_max) of a fiber's law: argmax and maximum of λ² S_act(λ)."""
    lam = np.linspace(0.5, 2.5, 20001)
    active = _active_stress(fiber, lam)
    k = int(np.argmax(active))
    return float(lam[k]), float(active[k])


def fit_active_force_length(fiber, lam_opt: float, s_max: float) -> tuple[ActiveForceLengthCurve, float]:
    """Millard's active force–length curve closest (least squares on l̃ ∈ [0.4, 1.6]) to the fiber's
    f(l̃) = λ² S_act(λ)/S_max at λ = λ_opt l̃; returns the curve and the largest deviation."""
    from scipy.optimize import least_squares

    x = np.linspace(0.4, 1.6, 241)
    target = _active_stress(fiber, lam_opt * x) / s_max

    def curve(p):
        return ActiveForceLengthCurve(p[0], p[1], p[2], p[3], minimum_value=0.0, curviness=1.0)

    def residual(p):
        try:
            return curve(p)(x) - target
        except ValueError:  # outside the curve's admissible parameters
            return np.full(x.size, 10.0)

    fit = least_squares(residual, [0.55, 0.75, 1.45, 0.5], bounds=([0.3, 0.5, 1.05, 0.0], [0.9, 0.99, 2.0, 1.5]))
    return curve(fit.x), float(np.max(np.abs(fit.fun)))


def isometric_forces(fiber, activations, *, t: float = 0.0, n_theta: int = 201, n_stretch: int = 3001) -> np.ndarray:
    """Quasi-static axial force N (N) of a fiber held at its rest length, for each constant activation.

    Without inertia and body forces N = π r0(θ)² λ S(λ, 0, θ) is the same at
    every θ; each section takes the smallest stretch that carries N (the
    branch reached by loading from rest), and N is found by bisection so that
    the fiber keeps its length, ∫₀¹ λ dθ = 1 (a straight reference fiber).
    """
    theta = np.linspace(0.0, 1.0, n_theta)
    lam = np.geomspace(0.05, 60.0, n_stretch)
    rows = np.arange(n_theta)
    area = math.pi * fiber.radius_at(theta)[:, None] ** 2
    out = []
    for alpha in np.atleast_1d(activations):
        point = MaterialPoint(stretch=lam[None, :], stretch_rate=np.zeros((1, n_stretch)), theta=theta[:, None],
                              t=t, muscle_fraction=fiber.muscle_fraction_at(theta)[:, None], activation=float(alpha))
        # N(θ, λ), made non-decreasing in λ: the smallest stretch carrying N is then a sorted search
        envelope = np.maximum.accumulate(area * lam[None, :] * fiber.law(point).stress, axis=1)

        def mean_stretch(N):
            j = np.clip((envelope < N).sum(axis=1), 1, n_stretch - 1)
            f0, f1 = envelope[rows, j - 1], envelope[rows, j]
            w = np.clip((N - f0) / np.where(f1 > f0, f1 - f0, 1.0), 0.0, 1.0)
            return float(np.trapezoid(lam[j - 1] + (lam[j] - lam[j - 1]) * w, theta))

        lo, hi = 0.0, float(envelope[:, -1].min())
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if mean_stretch(mid) < 1.0 else (lo, mid)
        out.append(0.5 * (lo + hi))
    return np.array(out)


def hill_mappings(*, formulation: str = "damped") -> list[HillMapping]:
    """The Hill parameters of the 5 fibers of :func:`demos.upper_limb.build_model` (module notes)."""
    from scipy.optimize import least_squares

    model = upper_limb.build_model(1, gravity=False, wrap=False, geometry=GEOMETRY)
    theta = np.linspace(0.0, 1.0, 2001)
    times = np.linspace(0.0, T_END, 4001)
    out = []
    cache: dict = {}
    for fiber in model.fibers:
        ends = fiber.reference_position(np.array([0.0, 1.0]))
        origin, insertion = ends[:, 0], ends[:, 1]
        L = float(np.linalg.norm(insertion - origin))
        share = float(np.trapezoid(fiber.muscle_fraction_at(theta), theta))
        alpha_max = float(np.max([fiber.activation_at(t) for t in times]))
        key = (id(fiber.law), round(L, 12), alpha_max)
        if key not in cache:
            lam_opt, s_max = optimal_stretch(fiber)
            fal, fit_error = fit_active_force_length(fiber, lam_opt, s_max)
            area = math.pi * float(fiber.radius_at(np.array([0.5]))[0]) ** 2
            f0 = s_max * area
            params = MuscleParameters(max_isometric_force=f0, optimal_fiber_length=lam_opt * share * L,
                                      tendon_slack_length=(1.0 - share) * L, minimum_activation=0.0)
            # the belly's viscous force 3 η_M A v/(m̄ L) written as β f_o v/v_max
            beta = 3.0 * muscle_viscosity(fiber) * area * params.max_fiber_velocity / (f0 * share * L)
            params = replace(params, fiber_damping=beta)
            alphas = np.geomspace(alpha_max / 30.0, alpha_max, 6)
            n_iso = isometric_forces(fiber, alphas)

            def hill_forces(log_strain):
                ft = TendonForceLengthCurve(math.exp(float(log_strain[0])))
                return _muscle(params, fal, ft, formulation).static_equilibrium(
                    activation=alphas, musculotendon_length=L).tendon_force

            fit = least_squares(lambda x: np.log(hill_forces(x)) - np.log(n_iso), [0.0])
            ft = TendonForceLengthCurve(math.exp(float(fit.x[0])))
            cache[key] = (lam_opt, s_max, params, fal, fit_error, ft, tuple(alphas), tuple(n_iso),
                          tuple(hill_forces(fit.x)))
        lam_opt, s_max, params, fal, fit_error, ft, alphas, n_iso, n_hill = cache[key]
        out.append(HillMapping(fiber.name, tuple(origin), tuple(insertion), L, share, lam_opt, s_max, params, fal,
                               fit_error, ft, alphas, n_iso, n_hill))
    return out


# ----------------------------------------------------------------------------- the Hill model
@dataclass
class HillRun:
    """Time series of the Hill model."""

    times: np.ndarray
    angle_deg: np.ndarray
    #: tension (N) of the muscles in SHOWN
    forces: dict
    wall_time: float
    newton_iterations: list[int]
    retries: int
    mappings: list[HillMapping]
    #: True when Ctrl-C stopped the run (the series end there)
    interrupted: bool = False

    def until(self, t: float) -> "HillRun":
        """The run restricted to times ≤ t."""
        k = int(np.searchsorted(self.times, t + 1e-12, side="right"))
        return replace(self, times=self.times[:k], angle_deg=self.angle_deg[:k],
                       forces={name: f[:k] for name, f in self.forces.items()})


def build_hill_system(mappings: list[HillMapping], *, formulation: str = "damped"
                      ) -> tuple[RigidSystem, dict[str, HillActuator]]:
    """The upper limb's bones, joint and gravity (from :func:`demos.upper_limb.build_model`) with Hill muscles."""
    system = upper_limb.build_model(1, wrap=False, geometry=GEOMETRY).rigid
    muscles = {}
    for m in mappings:
        muscles[m.name] = system.add(HillActuator(
            m.muscle(formulation),
            [("upper_arm", m.origin), ("forearm", m.insertion)], activation=m.activation, name=m.name))
    system.finalize()
    return system, muscles


def steps_to(t_end: float) -> int:
    """The Hill model's time steps to ``t_end``: those of the fiber model's level 1 (:data:`N_STEPS` over
    :data:`T_END`), at least one."""
    return max(1, int(round(N_STEPS * t_end / T_END)))


def run_hill(*, t_end: float = T_END, n_steps: int | None = None, formulation: str = "damped",
             mappings: list[HillMapping] | None = None) -> HillRun:
    """Simulate the Hill model from rest (q = 0, fibers in static equilibrium) to ``t_end``."""
    mappings = hill_mappings(formulation=formulation) if mappings is None else mappings
    system, muscles = build_hill_system(mappings, formulation=formulation)
    nt = n_steps if n_steps is not None else steps_to(t_end)
    # a throw-away first step keeps numba's compilation (the first run on a machine) out of the wall time
    notice = compile_notice("  compiling the Hill model's kernels (the first run on this machine only; cached for "
                            "later runs) …", delay=2.0)
    try:
        simulate_rigid(system, np.zeros(system.n), np.zeros(system.n), t_end / nt, t_end / nt, on_interrupt="raise")
    finally:
        notice.cancel()
    start = time.perf_counter()
    result = simulate_rigid(system, np.zeros(system.n), np.zeros(system.n), t_end, t_end / nt)
    wall = time.perf_counter() - start
    forces = {}
    for name in SHOWN:
        hill = muscles[name]
        states = hill.states_from(result) if hill.n_states else None
        forces[name] = np.asarray(hill.response(result.q, result.p, result.times, states=states).tendon_force)
    return HillRun(result.times, np.degrees(result.q[:, 0]), forces, wall, result.newton_iterations,
                   result.retries, mappings, result.interrupted)


# ----------------------------------------------------------------------------- OpenSim
def compare_curves_with_opensim(n_points: int = 201) -> dict[str, tuple[float, float]] | None:
    """max |skfiber − OpenSim 4.6| of value and slope of every default curve (None without ``opensim``)."""
    try:
        import opensim
    except ImportError:
        return None
    out = {}
    for name, (cls, (lo, hi)) in CURVES.items():
        mine, theirs = cls(), getattr(opensim, name)()
        x = np.linspace(lo, hi, n_points)
        ev = mine.evaluate(x)
        ref = np.array([[theirs.calcValue(float(v)), theirs.calcDerivative(float(v), 1)] for v in x])
        out[name] = (float(np.max(np.abs(ev.value - ref[:, 0]))), float(np.max(np.abs(ev.derivative - ref[:, 1]))))
    return out


# ----------------------------------------------------------------------------- outputs
def write_outputs(hill: HillRun, fiber, out: Path) -> list[Path]:
    """CSV and (with matplotlib) PNG of both runs; ``fiber`` is an :class:`demos.upper_limb.UpperLimbResult`."""
    out.mkdir(parents=True, exist_ok=True)
    t = hill.times
    fiber_angle = np.interp(t, fiber.times, fiber.angle_deg)
    fiber_bi = np.interp(t, fiber.times, fiber.biceps_origin_force)
    fiber_tri = np.interp(t, fiber.times, fiber.triceps_origin_force)
    path = out / "hill_vs_fiber.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "hill_elbow_angle_deg", "fiber_elbow_angle_deg", "hill_biceps1_force_N",
                    "hill_triceps1_force_N", "fiber_biceps1_force_N", "fiber_triceps1_force_N"])
        for row in zip(t, hill.angle_deg, fiber_angle, hill.forces["biceps1"], hill.forces["triceps1"],
                       fiber_bi, fiber_tri):
            w.writerow([f"{v:.9g}" for v in row])
    files = [path]
    png = plot(hill, fiber, out / "hill_vs_fiber.png")
    if png is not None:
        files.append(png)
    return files


def plot(hill: HillRun, fiber, path: Path) -> Path | None:
    """Elbow angle and muscle forces of both models in one figure (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    ax1.plot(fiber.times, fiber.angle_deg, label="fiber model (level 1)", color="k")
    ax1.plot(hill.times, hill.angle_deg, label="Hill (Millard 2012, damped)", color="tab:green", ls="--")
    ax1.set(ylabel="elbow flexion (deg)", title="Upper limb: fiber model vs Hill-type muscles")
    ax1.legend()
    ax2.plot(fiber.times, fiber.biceps_origin_force, color="tab:red", label="biceps 1, fiber")
    ax2.plot(hill.times, hill.forces["biceps1"], color="tab:red", ls="--", label="biceps 1, Hill")
    ax2.plot(fiber.times, fiber.triceps_origin_force, color="tab:blue", label="triceps 1, fiber")
    ax2.plot(hill.times, hill.forces["triceps1"], color="tab:blue", ls="--", label="triceps 1, Hill")
    ax2.set(xlabel="t (s)", ylabel="muscle force (N)")
    ax2.legend(ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


@dataclass
class Comparison:
    """Everything :func:`main` computed."""

    hill: HillRun
    fiber: object
    curve_errors: dict | None
    files: list[Path]

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the Hill model's run or the fiber model's."""
        return bool(self.hill.interrupted or getattr(self.fiber, "interrupted", False))

    @property
    def max_curve_error(self) -> float:
        if not self.curve_errors:
            return math.nan
        return max(v for v, _ in self.curve_errors.values())


def main(argv: list[str] | None = None) -> Comparison:
    parser = ArgumentParser(description=__doc__.splitlines()[0], epilog=PROGRESS_TERMS,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--t-end", type=positive_float, default=T_END, help="end time in s (default 8)")
    parser.add_argument("--output", "--out", type=folder_path, default=Path("hill_vs_fiber_output"),
                        help="directory for CSV/PNG files (default hill_vs_fiber_output)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines of the fiber model")
    args = parser.parse_args(argv)
    if steps_to(args.t_end) > MAX_STEPS:
        parser.error(f"--t-end must be at most {MAX_STEPS * T_END / N_STEPS:.3g} s ({MAX_STEPS:.0e} steps of "
                     f"{T_END / N_STEPS:g} s), got {args.t_end:g}")
    output_folder(parser, "--output/--out", args.output)

    start = time.perf_counter()
    mappings = hill_mappings()
    print(f"Hill parameters mapped from Table 4 (see the module notes; {time.perf_counter() - start:.1f} s):")
    print("  muscle     L [m]   l_o [m]  l_s [m]  F0 [N]     tendon strain at F0  f^L fit err  isometric force err")
    for m in mappings:
        p = m.parameters
        print(f"  {m.name:9s} {m.rest_length:6.4f}  {p.optimal_fiber_length:6.4f}   {p.tendon_slack_length:6.4f}  "
              f"{p.max_isometric_force:9.4g}  {m.tendon_force_length.strain_at_one_norm_force:8.3f}"
              f"             {m.active_fit_error:6.3f}       {m.calibration_error:6.3f}")

    errors = compare_curves_with_opensim()
    if errors is None:
        print("OpenSim curve comparison skipped: the opensim package is not installed (pip install -e '.[opensim]')")
    else:
        print("default curves vs OpenSim 4.6 (201 points each), max |difference| of value / slope:")
        for name, (ev, ed) in errors.items():
            print(f"  {name:26s} {ev:.2e} / {ed:.2e}")

    n_steps = steps_to(args.t_end)
    print(f"Hill model: 5 muscles, {n_steps} step{'s' if n_steps > 1 else ''} of {args.t_end / n_steps:.4g} s to "
          f"t = {args.t_end:g} s", flush=True)
    hill = run_hill(t_end=args.t_end, mappings=mappings)
    print(f"  wall time {hill.wall_time:.2f} s, Newton iterations mean {np.mean(hill.newton_iterations or [0]):.2f} "
          f"max {max(hill.newton_iterations or [0])}, retries {hill.retries}")
    if hill.interrupted:  # Ctrl-C: report what there is, do not start the fiber model
        print(f"Hill model interrupted at t = {hill.times[-1]:.4g} s; the fiber model was not run")
        err = Comparison(hill, None, errors, []).max_curve_error
        print(f"summary: max_curve_err_vs_opensim={'nan' if math.isnan(err) else f'{err:.3g}'} "
              f"hill_wall_s={hill.wall_time:.2f} fiber_wall_s=nan interrupted_at_s={hill.times[-1]:.4g} interrupted=1")
        return Comparison(hill, None, errors, [])
    print(f"Fiber model: level 1, the upper limb's earlier geometry '{GEOMETRY.name}' (the one the notes measure): "
          "its triceps is stretched past the force peak of its law, which the warnings below report (expected "
          "here; the upper-limb demo's default geometry does not soften)", flush=True)
    fiber = upper_limb.run(1, t_end=args.t_end, progress=not args.quiet, geometry=GEOMETRY)
    print(f"  wall time {fiber.wall_time:.2f} s")
    if fiber.interrupted:  # compare over the time both models reached
        print(f"Fiber model interrupted at t = {fiber.times[-1]:.4g} s; comparing up to there")
        hill = hill.until(float(fiber.times[-1]))

    files = write_outputs(hill, fiber, args.output)
    fiber_angle = np.interp(hill.times, fiber.times, fiber.angle_deg)
    shown = [tp for tp in (0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0) if tp <= hill.times[-1] + 1e-9]
    if hill.times[-1] not in shown:
        shown.append(float(hill.times[-1]))
    print("elbow angle (deg), Hill / fiber:")
    for tp in shown:
        print(f"  t = {tp:5.2f} s: {np.interp(tp, hill.times, hill.angle_deg):8.2f} / "
              f"{np.interp(tp, fiber.times, fiber.angle_deg):8.2f}")
    print(f"largest |Hill - fiber| elbow angle: {np.max(np.abs(hill.angle_deg - fiber_angle)):.2f} deg; "
          f"correlation {np.corrcoef(hill.angle_deg, fiber_angle)[0, 1]:.3f}" if len(hill.times) > 2 else "")
    print("wrote " + ", ".join(str(f) for f in files))
    result = Comparison(hill, fiber, errors, files)
    err = result.max_curve_error
    print(f"summary: max_curve_err_vs_opensim={'nan' if math.isnan(err) else f'{err:.3g}'} "
          f"hill_wall_s={hill.wall_time:.2f} fiber_wall_s={fiber.wall_time:.2f}"
          + (f" interrupted_at_s={fiber.times[-1]:.4g} interrupted=1" if fiber.interrupted else ""))
    return result


if __name__ == "__main__":
    run_script(main)
