r"""A new stress law written as a plain Python function.
====================================================

A researcher who wants another constitutive law for the fiber writes the
physical 2nd Piola–Kirchhoff stress S(λ, λ̇, θ, t) as an ordinary function
with ``sympy`` functions in it (``sp.exp`` instead of ``np.exp``).
:func:`skfiber.law_from_function` calls it once with symbols, differentiates
it exactly (∂S/∂λ and ∂S/∂λ̇ for the consistent tangent, paper Appendix
A.1–A.2) and compiles it to numpy.  Laws add up, so built-in terms such as
:func:`skfiber.prestress` are composed with ``+``.

The law of this demo is an exponentially stiffening (Fung-type) muscle/tendon
blend with a stiffening exponent that grows towards the fiber ends (collagen
richer near the tendons), plus the paper's viscosity and prestress::

    S = 3 μ(γM)/(2 k(θ)) · (exp(k(θ) (λ² − 1)) − 1)  +  3 η λ̇ / λ³  +  σ0 / λ²
    μ(γM) = γM μM + (1 − γM) μT,    k(θ) = k_mid + (k_end − k_mid) (2θ − 1)²

Its small-strain stiffness ∂S/∂λ(1) = 3 μ equals that of the paper's passive
law μ (1 − λ⁻³) (eq. 30), so both laws agree for small stretches and differ
by the stiffening only.

The demo

1. checks ∂S/∂λ, ∂S/∂λ̇ against finite differences
   (:func:`skfiber.check_law_derivatives`),
2. verifies two closed forms of a static uniaxial stretch (end displaced by
   δ, no load): a homogeneous fiber (γM = 1, k_end = k_mid) has λ = 1 + δ/L
   and axial force N = π r0² λ S(λ); the graded fiber (γM(θ) of Table 1 and
   k(θ)) has a constant N with λ(θ) solving N = π r0² λ S(λ, θ) and
   ∫ λ dS = L + δ (a scalar root problem solved here independently of the
   finite elements),
3. hangs a pre-stretched fiber, fixed at both ends, under gravity (body force
   b0 = ρ0 g per reference volume) and compares midpoint sag and maximal axial
   force with the paper's law (Table 1): statics, checked against the cable
   solved independently (constant horizontal force H, N = √(H² + V²),
   λ(θ) from N, H from the span), and a backward-Euler run in which gravity
   is switched on suddenly.

Run ``python demos/custom_law.py [--small] [--plot FILE.png]``; the last line
of the output is ``summary: law_derivative_error=… midpoint_sag_custom_m=… …``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from scipy.optimize import brentq

import skfiber as sf
from skfiber.cli import ArgumentParser, nonnegative_float, output_file, positive_float, positive_int, run_script
from skfiber.reference import hanging_cable, stretch_for_force

__all__ = [
    "stiffening_law",
    "table1_muscle_fraction",
    "UniaxialCheck",
    "HangingFiber",
    "CustomLawResult",
    "uniaxial_stretch",
    "graded_stretch_force",
    "hanging_cable_sag",
    "hanging_fiber",
    "run",
    "plot",
    "main",
]

RADIUS = 0.05  # r0 (m), Table 1
DENSITY = 900.0  # ρ0 (kg/m³), Table 1
SIGMA0 = 30.0  # prestress (Pa), Table 1
MU_MUSCLE, MU_TENDON, ETA = 1e5, 1e6, 1e4  # Table 1 (Pa, Pa, Pa·s)


def stiffening_law(
    *,
    mu_muscle: float = MU_MUSCLE,
    mu_tendon: float = MU_TENDON,
    eta: float = ETA,
    k_mid: float = 5.0,
    k_end: float = 20.0,
    sigma0: float = SIGMA0,
):
    """The demo's law: exponential stiffening + viscosity, plus the built-in prestress.

    Parameters
    ----------
    mu_muscle, mu_tendon
        Small-strain moduli as in the paper's passive law (Pa): ∂S/∂λ(1) = 3 μ.
    eta
        Viscosity (Pa·s), the paper's 3 η λ̇/λ³ term.
    k_mid, k_end
        Stiffening exponent at the middle (θ = ½) and at the ends of the fiber.
    sigma0
        Prestress σ0 (Pa), added as :func:`skfiber.prestress`.

    Returns
    -------
    skfiber.SymbolicLaw
    """

    # --- this is all a researcher writes: S(λ, λ̇, θ, t) with sympy functions
    def exp_stiffening(lam, lamdot, theta, t, *, muscle_fraction):
        mu = muscle_fraction * mu_muscle + (1 - muscle_fraction) * mu_tendon
        k = k_mid + (k_end - k_mid) * (2 * theta - 1) ** 2
        elastic = 3 * mu / (2 * k) * (sp.exp(k * (lam**2 - 1)) - 1)
        viscous = 3 * eta * lamdot / lam**3
        return elastic + viscous

    return sf.law_from_function(exp_stiffening) + sf.prestress(sigma0)


def table1_muscle_fraction(theta):
    """γM(θ) = 16 (1 − θ)² θ² (paper, Table 1): tendon at the ends, muscle in the middle."""
    theta = np.asarray(theta, dtype=float)
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def _homogeneous_guess(model: sf.Model, fiber: sf.Fiber, stretch: float) -> sf.State:
    """u = (λ − 1)(X − X(0)): a homogeneous stretch as Newton's start."""
    d = model.discretization
    X = d.reference_dofs.reshape(-1, 6).copy()
    X[:, :3] -= fiber.reference_position(np.zeros(1))[:, 0]
    u = (stretch - 1.0) * X.ravel()
    return sf.State(0.0, u, np.zeros_like(u))


def _stretched_fiber(law, *, length, stretch, n_elements, muscle_fraction, gravity):
    fiber = sf.Fiber.straight(
        (0, 0, 0), (length, 0, 0), n_elements=n_elements, radius=RADIUS,
        density=DENSITY, law=law, muscle_fraction=muscle_fraction,
    )
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    delta = (stretch - 1.0) * length
    model.prescribe(fiber, "end", lambda t: (delta, 0.0, 0.0))
    if gravity:
        model.add_gravity()
    return fiber, model


@dataclass(frozen=True)
class UniaxialCheck:
    """A static uniaxial stretch: FE axial force against the closed form.

    Attributes
    ----------
    stretch : imposed mean stretch (L + δ)/L
    force_fe : axial force N of the finite-element solution (N), mean along the fiber
    force_exact : closed form (N)
    force_spread : (max N − min N)/N along the fiber (equilibrium: 0)
    """

    stretch: float
    force_fe: float
    force_exact: float
    force_spread: float

    @property
    def error(self) -> float:
        """Relative error of the FE force."""
        return abs(self.force_fe - self.force_exact) / abs(self.force_exact)


def uniaxial_stretch(law, *, stretch: float, n_elements: int = 8, length: float = 1.0, graded: bool = False) -> UniaxialCheck:
    """Static stretch of a fiber by δ = (stretch − 1) L, checked against its closed form.

    Parameters
    ----------
    law
        The stress law.
    stretch
        Mean stretch imposed by the end displacement.
    graded
        False: homogeneous muscle (γM = 1), closed form N = π r0² λ S(λ)
        (the law must not depend on θ then).
        True: γM(θ) of Table 1, closed form from :func:`graded_stretch_force`
        (any θ-dependence of the law allowed).
    """
    gm = table1_muscle_fraction if graded else 1.0
    fiber, model = _stretched_fiber(
        law, length=length, stretch=stretch, n_elements=n_elements, muscle_fraction=gm, gravity=False
    )
    result = sf.solve_static(model, state=_homogeneous_guess(model, fiber, stretch))
    forces = sf.fiber_fields(model, result.state, fiber).force
    if graded:
        exact = graded_stretch_force(law, stretch=stretch)
    else:
        S = law(sf.MaterialPoint(np.array(stretch), np.array(0.0), theta=0.5, muscle_fraction=1.0)).stress
        exact = math.pi * RADIUS**2 * stretch * float(S)
    mean = float(np.mean(forces))
    return UniaxialCheck(stretch, mean, float(exact), float((forces.max() - forces.min()) / mean))


def _local_stretch(law, N, theta):
    """λ(θ) with π r0² λ S(λ, θ) = N (statics, γM(θ) of Table 1)."""
    return stretch_for_force(law, N, radius=RADIUS, theta=theta, muscle_fraction=table1_muscle_fraction(theta))


def graded_stretch_force(law, *, stretch: float, quadrature_points: int = 400) -> float:
    """Axial force of a graded fiber (γM(θ) of Table 1) stretched statically to a mean stretch.

    In equilibrium without loads N = π r0² λ S(λ, θ) is the same at every θ;
    λ(θ) follows pointwise from N (the map λ ↦ λ S is increasing) and N is
    fixed by ∫₀¹ λ(θ) dθ = stretch.  Two nested scalar root searches,
    independent of the finite elements.
    """
    nodes, weights = np.polynomial.legendre.leggauss(quadrature_points)
    theta = 0.5 * (nodes + 1.0)
    weights = 0.5 * weights
    N_hi = 1.01 * float(np.max(math.pi * RADIUS**2 * stretch * law(
        sf.MaterialPoint(np.full_like(theta, stretch), np.zeros_like(theta), theta=theta, t=0.0,
                         muscle_fraction=table1_muscle_fraction(theta), activation=0.0)).stress))
    return float(brentq(lambda N: weights @ _local_stretch(law, N, theta) - stretch, 0.0, N_hi,
                        xtol=1e-13, rtol=1e-14))


def hanging_cable_sag(law, *, q: float, span: float, quadrature_points: int = 200) -> tuple[float, float]:
    """Static midpoint sag and end force of a graded cable of length 1 m (γM(θ) of
    Table 1) between two points at distance ``span``, load q per reference length
    (:func:`skfiber.reference.hanging_cable`).  Returns (sag, N at the ends)."""
    return hanging_cable(law, q=q, radius=RADIUS, span=span, muscle_fraction=table1_muscle_fraction,
                         quadrature_points=quadrature_points)


@dataclass(frozen=True)
class HangingFiber:
    """A pre-stretched fiber fixed at both ends, hanging under gravity.

    Attributes
    ----------
    law_name : "custom" or "paper"
    sag_static : downward displacement of the midpoint at static equilibrium (m)
    sag_exact : the same from the independent cable solution :func:`hanging_cable_sag` (m)
    end_force_exact : axial force at the ends from :func:`hanging_cable_sag` (N)
    max_force_static : largest axial force along the fiber (N), recovered by L2 projection
        (:func:`skfiber.recovered_axial_force`; the pointwise force wiggles on coarse meshes)
    min_force_static : smallest axial force along the fiber (N), recovered likewise
    sag_peak_dynamic : largest midpoint sag after gravity is switched on suddenly (m)
    sag_end_dynamic : midpoint sag at the end of the dynamic run (m)
    t_end : end of the dynamic run (s)
    weight_balance_error : (vertical end forces N t_z(1) − N t_z(0)) / weight − 1
        in statics (global equilibrium; 0 up to discretization error)
    theta, sag_curve : static sag along the fiber (for plots)
    """

    law_name: str
    sag_static: float
    sag_exact: float
    end_force_exact: float
    max_force_static: float
    min_force_static: float
    sag_peak_dynamic: float
    sag_end_dynamic: float
    t_end: float
    weight_balance_error: float
    theta: np.ndarray
    sag_curve: np.ndarray


def hanging_fiber(
    law,
    *,
    law_name: str,
    prestretch: float = 0.02,
    n_elements: int = 16,
    t_end: float = 1.0,
    dt: float = 0.01,
) -> HangingFiber:
    """Hang a fiber pre-stretched by ``prestretch`` under gravity: statics and dynamics.

    The fiber ((0,0,0) → (1,0,0), r0, ρ0, γM(θ) of Table 1) is first
    stretched without load (Newton from a homogeneous stretch), then gravity
    is applied: in statics by load stepping from the stretched state, in
    dynamics suddenly at t = 0 (backward Euler, ``dt``, until ``t_end``).
    The static sag is compared with :func:`hanging_cable_sag`.
    """
    stretch = 1.0 + prestretch
    fiber, unloaded = _stretched_fiber(
        law, length=1.0, stretch=stretch, n_elements=n_elements,
        muscle_fraction=table1_muscle_fraction, gravity=False,
    )
    model = sf.Model([fiber])  # same fiber, with gravity
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (prestretch, 0.0, 0.0))
    model.add_gravity()

    stretched = sf.solve_static(unloaded, state=_homogeneous_guess(unloaded, fiber, stretch)).state
    static = sf.solve_static(model, state=stretched, load_steps=2).state
    fields = sf.fiber_fields(model, static, fiber)
    theta = fields.theta
    sag_curve = -fields.position[2]
    mid = sf.fiber_fields(model, static, fiber, theta=np.array([0.5]))
    d = model.discretization
    ends = np.array([0.0, 1.0])
    end_force = sf.fiber_fields(model, static, fiber, theta=ends).force
    a1 = d.evaluate(d.reference_dofs + static.u, fiber, ends, 1)
    vertical = end_force * a1[2] / np.linalg.norm(a1, axis=0)
    q = DENSITY * 9.81 * math.pi * RADIUS**2  # weight per reference length (N/m)
    weight = q * 1.0
    sag_exact, end_force_exact = hanging_cable_sag(law, q=q, span=stretch)

    recovered = sf.recovered_axial_force(model, static, fiber)  # (N at a point wiggles on coarse meshes)
    sim = sf.simulate(model, t_end=t_end, dt=dt, state=stretched, progress=False,
                      on_interrupt="raise")  # the comparison needs the whole run
    # X_z = 0, so the vertical displacement is the height
    z_mid = np.array([d.evaluate(u, fiber, np.array([0.5]))[2, 0] for u in sim.displacements])
    return HangingFiber(
        law_name=law_name,
        sag_static=float(-mid.position[2, 0]),
        sag_exact=sag_exact,
        end_force_exact=end_force_exact,
        max_force_static=float(recovered.max()),
        min_force_static=float(recovered.min()),
        sag_peak_dynamic=float(-z_mid.min()),
        sag_end_dynamic=float(-z_mid[-1]),
        t_end=float(sim.times[-1]),
        weight_balance_error=float((vertical[1] - vertical[0]) / weight - 1.0),
        theta=theta,
        sag_curve=sag_curve,
    )


@dataclass(frozen=True)
class CustomLawResult:
    """Everything the demo computes.

    Attributes
    ----------
    law_derivative_error : relative error of ∂S/∂λ, ∂S/∂λ̇ of the custom law (central FD)
    paper_derivative_error : same for the paper's law
    uniaxial : homogeneous static stretches against N = π r0² λ S(λ)
    graded : graded fiber (γM(θ)) against the scalar closed form
    custom, paper : the hanging fiber with the custom and the paper's law
    """

    law_derivative_error: float
    paper_derivative_error: float
    uniaxial: list[UniaxialCheck]
    graded: UniaxialCheck
    custom: HangingFiber
    paper: HangingFiber

    @property
    def cable_sag_error(self) -> float:
        """Largest relative error of the static FE sag against the cable solution."""
        return max(abs(h.sag_static - h.sag_exact) / h.sag_exact for h in (self.custom, self.paper))

    @property
    def summary(self) -> str:
        """The one-line ``summary:`` of the demo."""
        worst = max(c.error for c in self.uniaxial)
        return (
            f"summary: law_derivative_error={self.law_derivative_error:.3e} "
            f"uniaxial_force_error={worst:.3e} graded_force_error={self.graded.error:.3e} "
            f"cable_sag_error={self.cable_sag_error:.3e} "
            f"midpoint_sag_custom_m={self.custom.sag_static:.6f} "
            f"midpoint_sag_paper_m={self.paper.sag_static:.6f} "
            f"max_force_custom_N={self.custom.max_force_static:.4f} "
            f"max_force_paper_N={self.paper.max_force_static:.4f}"
        )


#: the dynamic run's length (s), and with ``small``
T_END, SMALL_T_END = 1.0, 0.3
#: the largest --prestretch: measured to run at 0.5 (at 0.4 the custom fiber pulls with 2.3 MN already); at
#: 0.55 the root search of the independent cable solution (skfiber.reference.hanging_cable) finds no bracket
MAX_PRESTRETCH = 0.5


def run(
    *,
    n_elements: int | None = None,
    prestretch: float = 0.02,
    stretches: tuple[float, ...] = (1.05, 1.1, 1.2),
    t_end: float | None = None,
    dt: float = 0.01,
    small: bool = False,
) -> CustomLawResult:
    """Run the demo.

    Parameters
    ----------
    n_elements
        Elements of the hanging fiber (the stretch checks use half of them; default 16, 8 with ``small``).
    prestretch
        Relative end displacement of the hanging fiber before gravity.
    stretches
        Mean stretches of the homogeneous uniaxial checks.
    t_end, dt
        Length (default 1 s, 0.3 s with ``small``) and step of the dynamic run.
    small
        Quick version for tests: 8 elements and t_end = 0.3 s unless given.
    """
    n_elements = (8 if small else 16) if n_elements is None else n_elements
    t_end = (SMALL_T_END if small else T_END) if t_end is None else t_end
    if not dt < t_end:
        raise ValueError(f"the time step dt = {dt:g} s must be shorter than t_end = {t_end:g} s")
    custom = stiffening_law()
    homogeneous = stiffening_law(k_end=5.0)  # k(θ) = k_mid: no θ-dependence left
    paper = sf.paper_law()
    n_check = max(4, n_elements // 2)
    return CustomLawResult(
        law_derivative_error=sf.check_law_derivatives(custom),
        paper_derivative_error=sf.check_law_derivatives(paper),
        uniaxial=[uniaxial_stretch(homogeneous, stretch=s, n_elements=n_check) for s in stretches],
        graded=uniaxial_stretch(custom, stretch=1.1, n_elements=n_elements, graded=True),
        custom=hanging_fiber(custom, law_name="custom", prestretch=prestretch, n_elements=n_elements, t_end=t_end, dt=dt),
        paper=hanging_fiber(paper, law_name="paper", prestretch=prestretch, n_elements=n_elements, t_end=t_end, dt=dt),
    )


def _print_report(result: CustomLawResult) -> None:
    print("custom law: S = 3μ(γM)/(2k(θ)) (exp(k(θ)(λ²−1)) − 1) + 3ηλ̇/λ³ + σ0/λ²")
    print(f"derivative check (relative error vs central differences): custom {result.law_derivative_error:.2e}, "
          f"paper {result.paper_derivative_error:.2e}")
    print()
    print("static uniaxial stretch, homogeneous fiber (γM = 1, k = k_mid): N = π r0² λ S(λ)")
    print(f"{'λ':>6} {'N FE (N)':>14} {'N exact (N)':>14} {'rel. error':>11}")
    for c in result.uniaxial:
        print(f"{c.stretch:6.3f} {c.force_fe:14.6f} {c.force_exact:14.6f} {c.error:11.2e}")
    g = result.graded
    print(f"graded fiber γM(θ), k(θ), mean λ = {g.stretch:.2f}: N FE {g.force_fe:.6f} N, "
          f"exact {g.force_exact:.6f} N, rel. error {g.error:.2e}, spread along fiber {g.force_spread:.1e}")
    print()
    c = result.custom
    print(f"fiber (0,0,0)→(1,0,0), γM(θ), pre-stretched, both ends fixed, under gravity (body force ρ0 g); "
          f"dynamics: gravity on at t = 0, end at t = {c.t_end:g} s")
    print(f"{'law':>8} {'sag static (m)':>15} {'sag cable (m)':>14} {'N max (N)':>11} {'N end cable':>12} "
          f"{'N min (N)':>11} {'ΣV/W − 1':>10} {'sag peak dyn (m)':>17} {'sag end dyn (m)':>16}")
    for h in (result.custom, result.paper):
        print(f"{h.law_name:>8} {h.sag_static:15.8f} {h.sag_exact:14.8f} {h.max_force_static:11.4f} "
              f"{h.end_force_exact:12.4f} {h.min_force_static:11.4f} {h.weight_balance_error:10.1e} "
              f"{h.sag_peak_dynamic:17.6f} {h.sag_end_dynamic:16.6f}")
    print("(sag cable, N end cable: the independent cable solution, quadrature + root search)")


def plot(result: CustomLawResult, filename: str) -> None:
    """Save the static sag curves of both laws to ``filename`` (needs matplotlib)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.subplots()
    for h in (result.custom, result.paper):
        ax.plot(h.theta, -h.sag_curve, label=f"{h.law_name} law")
    ax.set_xlabel("θ")
    ax.set_ylabel("z (m)")
    ax.set_title("pre-stretched fiber under gravity (statics)")
    ax.legend()
    fig.savefig(filename, dpi=120)


def main(argv=None) -> CustomLawResult:
    """Command line: print the tables, end with the ``summary:`` line."""
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=positive_int, default=None,
                        help="elements of the hanging fiber (default 16, 8 with --small)")
    parser.add_argument("--prestretch", type=nonnegative_float, default=0.02,
                        help=f"relative end displacement before gravity (default 0.02, at most {MAX_PRESTRETCH:g}: "
                             "beyond it the custom law's exponential stiffening pulls with meganewtons, and the "
                             "root search of the cable solution it is compared with fails)")
    parser.add_argument("--t-end", type=positive_float, default=None,
                        help="length of the dynamic run in s (default 1, 0.3 with --small)")
    parser.add_argument("--dt", type=positive_float, default=0.01, help="time step in s (default 0.01)")
    parser.add_argument("--small", action="store_true",
                        help="quick run (8 elements and 0.3 s, unless --elements or --t-end is given)")
    parser.add_argument("--plot", metavar="FILE.png", help="save the static sag curves (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.prestretch > MAX_PRESTRETCH:
        parser.error(f"argument --prestretch: must be at most {MAX_PRESTRETCH:g} (beyond it the custom law's "
                     f"exponential stiffening pulls with meganewtons), got {args.prestretch:g}")
    t_end = args.t_end if args.t_end is not None else (SMALL_T_END if args.small else T_END)
    if not args.dt < t_end:
        parser.error(f"argument --dt: must be shorter than the run's {t_end:g} s (--t-end), got {args.dt:g}")
    if args.plot:
        output_file(parser, "--plot", args.plot, figure=True)
    result = run(n_elements=args.elements, prestretch=args.prestretch, t_end=args.t_end, dt=args.dt, small=args.small)
    _print_report(result)
    if args.plot:
        plot(result, args.plot)
        print(f"plot saved to {args.plot}")
    print(result.summary)
    return result


if __name__ == "__main__":
    run_script(main)
