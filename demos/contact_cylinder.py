"""A fiber pressed onto a rigid cylinder: the contact integration study (paper §5.2, Table 2).
===========================================================================================

A straight homogeneous fiber from (−1, 0, 0) to (1, 0, 0) m, r0 = 0.05 m,
passive μ = 10 Pa with prestress σ0 = 10 Pa (no viscosity, no activation:
``passive_kelvin_voigt(10, 10, 0, 0) + prestress(10)``), **both ends fixed**,
lies over a rigid infinite cylinder through (0.5, 0.5, −0.2) m with axis
(1, 1, 0) and radius 0.2 m: it crosses under the fiber at 45°, and the
fiber's centerline touches the cylinder surface at x = 0, so the fiber
starts penetrated (g = −0.2, 1 + γg = 0.2).  Contact: κ = 500 N/m, γ = 4
(:class:`skfiber.contact.cylinder.CylinderContact`).  A vertical load
b_z = −1000 presses the fiber down.  The result is the minimal vertical
displacement min_θ u_z, versus the number of contact quadrature points per
element (1 … 8, 32 elements) and versus the number of elements (4 … 128,
5 points), each compared with the finest.

**The load is read per volume**: b0 = (0, 0, −1000) N/m³ (a body force,
``Model.add_body_force``), i.e. π r0² b0 = −7.85 N per metre of fiber.  The
paper says "line load b_z = −1000 N/m", but its body-force term (eq. 57) is
π r0² ∫ b0 · ξ, and the literal reading is out of reach: the Table 2 cable
is extremely soft (axial stiffness π r0² (3μ − σ0) ≈ 0.16 N, prestress force
π r0² σ0 ≈ 0.079 N).  Without the cylinder it sags 6366 m under 1000 N/m
(50 m under 7.85 N/m), and with the cylinder Newton does not get through
the first 0.1 % of 1000 N/m.  Neither reading gives a small deformation.
Under 7.85 N/m the fiber drapes over the cylinder and hangs in two loops
about 12.3 m deep, stretched up to λ ≈ 50 at the fixed ends and λ ≈ 20–35
next to the cylinder.  The paper's Figs. 4b/5 (the deformed fiber and its
displacement against the contact points) are not compared with here.  What the paper claims can be checked,
and holds (see below).

**Why the rule matters so much here**: next to the cylinder an element
(0.0625 m of reference length at 32 elements) is stretched to about 2 m, so
only 2–6 contact points hold the fiber on a cylinder 0.4 m across.  With too
few points per element, or too few elements, the fiber slips through the
cylinder between two points.  Then the draped equilibrium ends at a limit
point of the load path.  A Newton with line search and 300 load steps found
these ends at load factors 0.114 (1 point), 0.338 (2), 0.85 (3) for 32
elements, and 0.435 (4 elements) and 0.91 (8 elements) for 5 points.  The
fiber then falls and hangs free: the free-hanging equilibrium (min u_z ≈
−49.97 m, no contact point in reach) is reported for these cases.

**Which equilibrium**: a half turn about the z axis maps the problem onto
itself, and load stepping from the straight fiber follows the symmetric
equilibrium.  Beyond about 1.9 % of the load that equilibrium is
*unstable*: the tangent gets a negative eigenvalue, and the fiber could
slide over the frictionless cylinder towards one side, like a chain over a
pulley.  A static solve does not care.  Draped equilibria are close
together, so the path matters below about 0.5 %.  For example, 128
elements gave −12.406 m with the element-wise safeguard but −12.477 m with
a point-wise one.

Procedure: each case is solved the same way, from the straight fiber, with
:func:`skfiber.solve_static`.  The load ramps as s = τ^1.5 over
``LOAD_STEPS`` equal steps of a pseudo-time τ (continuation with
``state=``).  Newton uses the contact safeguard, with ``MAX_BISECTIONS``
bisections of a failing step.

Measured (2 cores, shared, 2026-12-01, the kernels cached): the full run takes
about 7 s and ``--small`` about 3 s.  At 32 elements, 4–8 points differ from 8 points by at most
0.22 % (paper: < 1 % from 4 points on), and 1–3 points slip through.  With
5 points, 16/32/64/128 elements give −12.0738/−12.2863/−12.3623/−12.4060 m,
so the error at 32 elements against 128 is 0.96 % (paper: < 1 % from 32
elements on), and 4 and 8 elements slip through.

Run ``python demos/contact_cylinder.py`` (``--small``: 5 and 8 points;
16, 32 and 64 elements; ``--plot FILE.png``: the deformed fiber and both
studies).  The summary's ``qp4_change_pct`` is the largest change of the
rules of 4 points and more against the finest rule run, ``ne32_error_pct``
the change at 32 elements against the finest mesh run: with ``--small`` those
are 8 points and 64 elements (no 4-point rule; 0.22 % and 0.61 %), in the
full run 8 points and 128 elements (0.22 % and 0.96 %).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, output_file, run_script
from skfiber.contact import PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.core.interrupt import CTRL_C, handle_ctrl_c

__all__ = ["build_model", "min_vertical_displacement", "solve", "ContactCylinderResult", "run", "main"]

# Table 2
START, END = (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0)  # m
RADIUS = 0.05  # r0 (m)
MU, SIGMA0 = 10.0, 10.0  # Pa
CYLINDER_POINT, CYLINDER_AXIS, CYLINDER_RADIUS = (0.5, 0.5, -0.2), (1.0, 1.0, 0.0), 0.2
KAPPA, GAMMA = 500.0, 4.0  # N/m, –
LOAD = -1000.0  # b_z, read as N/m³ (see the module notes)

LOAD_STEPS = 30  # pseudo-time steps of the load ramp
RAMP_EXPONENT = 1.5  # load factor s = τ^1.5: small first increments while the contact settles
MAX_BISECTIONS = 3
NEWTON = sf.NewtonOptions(max_iterations=20)
QP_LEVELS = (1, 2, 3, 4, 5, 6, 7, 8)
QP_SMALL = (5, 8)
ELEMENT_LEVELS = (4, 8, 16, 32, 64, 128)
ELEMENTS_SMALL = (16, 32, 64)
BASE_ELEMENTS, BASE_POINTS = 32, 5
#: the warm-up case solved before the timed ones (the cases' times then leave out the kernels' compilation):
#: the coarsest mesh that drapes the fiber over the cylinder (4 and 8 elements slip through it on the way)
WARM_UP_ELEMENTS = 16
SAMPLES_PER_ELEMENT = 64  # where min u_z is searched (then refined by a parabola)


def build_model(n_elements: int, quadrature_points: int = BASE_POINTS, *, contact: bool = True,
                ramp: bool = False) -> tuple[sf.Model, CylinderContact | None]:
    """The Table 2 model with ``n_elements`` and a contact rule of ``quadrature_points``.

    ``ramp``: the load is b0 τ^1.5 at (pseudo-)time τ instead of constant;
    ``contact=False``: without the cylinder.
    """
    law = sf.passive_kelvin_voigt(mu_muscle=MU, mu_tendon=MU, eta_muscle=0.0, eta_tendon=0.0) + sf.prestress(SIGMA0)
    fiber = sf.Fiber.straight(START, END, n_elements=n_elements, radius=RADIUS, law=law, name="fiber")
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    if ramp:
        model.add_body_force(lambda theta, t: np.array([0.0, 0.0, LOAD * t**RAMP_EXPONENT])[:, None, None]
                             * np.ones_like(theta))
    else:
        model.add_body_force((0.0, 0.0, LOAD))
    cylinder = None
    if contact:
        cylinder = model.add_contact(CylinderContact(
            point=CYLINDER_POINT, axis=CYLINDER_AXIS, radius=CYLINDER_RADIUS,
            law=PenaltyLaw(stiffness=KAPPA, gamma=GAMMA), quadrature_points=quadrature_points,
        ))
    return model, cylinder


def min_vertical_displacement(model: sf.Model, u: np.ndarray) -> float:
    """min over θ of u_z(θ) (m): dense sampling, then a parabola through the best three samples."""
    d = model.discretization
    n = SAMPLES_PER_ELEMENT * model.fibers[0].n_elements
    theta = np.linspace(0.0, 1.0, n + 1)
    z = d.evaluate(u, 0, theta)[2]
    i = int(np.argmin(z))
    if i in (0, n):
        return float(z[i])
    z0, z1, z2 = z[i - 1:i + 2]
    curv = z0 - 2 * z1 + z2
    if curv <= 0:
        return float(z1)
    s = 0.5 * (z0 - z2) / curv  # vertex offset in samples, |s| ≤ 1/2
    return float(min(z1, d.evaluate(u, 0, [theta[i] + s / n])[2, 0]))


def free_hanging(n_elements: int) -> np.ndarray:
    """Equilibrium of the same cable without the cylinder (m)."""
    model, _ = build_model(n_elements, contact=False)
    return sf.solve_static(model, load_steps=20).state.u


@dataclass
class Case:
    """One solve.

    Attributes
    ----------
    n_elements, points : mesh and contact rule
    min_uz : min_θ u_z (m) of the equilibrium reached
    reached : 1.0 when the load path reached full load draped over the
        cylinder; otherwise the last load factor Newton reached on it (the
        fiber slips through the cylinder between contact points) and
        ``min_uz`` is the free-hanging equilibrium (checked: no contact point
        in reach)
    newton_iterations, seconds : cost
    """

    n_elements: int
    points: int
    min_uz: float
    reached: float
    newton_iterations: int
    seconds: float
    model: sf.Model = field(repr=False)
    u: np.ndarray = field(repr=False)

    @property
    def fell_through(self) -> bool:
        return self.reached < 1.0


def solve(n_elements: int, points: int) -> Case:
    """Load stepping from the straight fiber (load factor s = τ^1.5, τ in ``LOAD_STEPS`` equal steps)."""
    model, contact = build_model(n_elements, points, ramp=True)
    tic = time.perf_counter()
    zero = np.zeros(model.n_dofs)
    try:
        result = sf.solve_static(model, t=1.0, state=sf.State(0.0, zero, zero), load_steps=LOAD_STEPS,
                                 max_bisections=MAX_BISECTIONS, newton_options=NEWTON)
        u, reached, its = result.state.u, 1.0, int(sum(result.iterations))
    except sf.ConvergenceError as err:
        reached, its = float(err.t) ** RAMP_EXPONENT, 0
        u = free_hanging(n_elements)
        ev = contact.evaluate(model, u, 1.0, tangent=False)  # raises if inadmissible
        if ev.n_active:
            raise RuntimeError(f"{n_elements} elements, {points} points: the load path ends at load factor "
                               f"{reached:.3g} and the free-hanging fiber touches the cylinder") from err
    return Case(n_elements, points, min_vertical_displacement(model, u), reached, its,
                time.perf_counter() - tic, model, u)


@dataclass
class ContactCylinderResult:
    """The two studies.

    Attributes
    ----------
    by_points : cases at ``points_elements`` elements, one per number of contact points
    by_elements : cases with 5 contact points, one per number of elements
    points_elements : the fixed number of elements of the first study
    """

    by_points: list[Case]
    by_elements: list[Case]
    points_elements: int
    seconds: float

    @staticmethod
    def _change(cases: list[Case]) -> np.ndarray:
        ref = cases[-1].min_uz
        return 100.0 * np.array([abs(c.min_uz - ref) / abs(ref) for c in cases])

    @property
    def points_change_pct(self) -> np.ndarray:
        """% change of min u_z versus the most points."""
        return self._change(self.by_points)

    @property
    def elements_change_pct(self) -> np.ndarray:
        """% change of min u_z versus the most elements."""
        return self._change(self.by_elements)

    @property
    def qp4_change_pct(self) -> float:
        """Largest % change between ≥ 4 points and the finest rule."""
        return float(max(p for c, p in zip(self.by_points, self.points_change_pct) if c.points >= 4))

    @property
    def ne32_error_pct(self) -> float:
        """% error at 32 elements versus the finest mesh (NaN when 32 is not in the study)."""
        for c, p in zip(self.by_elements, self.elements_change_pct):
            if c.n_elements == 32:
                return float(p)
        return float("nan")


def run(*, small: bool = False, solved: list[Case] | None = None) -> ContactCylinderResult:
    """Both studies at 32 elements / 5 points; ``small``: 5 and 8 points, 16 … 64 elements.  Each case is
    appended to ``solved`` (if given) as it is solved, so that a caller keeps them when Ctrl-C stops the run."""
    solve(WARM_UP_ELEMENTS, BASE_POINTS)  # untimed: a machine's first run compiles the kernels here
    tic = time.perf_counter()
    points = QP_SMALL if small else QP_LEVELS
    element_levels = ELEMENTS_SMALL if small else ELEMENT_LEVELS
    solved = [] if solved is None else solved

    def solved_case(n_elements: int, n_points: int) -> Case:
        solved.append(solve(n_elements, n_points))
        return solved[-1]

    base = solved_case(BASE_ELEMENTS, BASE_POINTS)
    by_points = [base if p == BASE_POINTS else solved_case(BASE_ELEMENTS, p) for p in points]
    by_elements = [base if n == BASE_ELEMENTS else solved_case(n, BASE_POINTS) for n in element_levels]
    return ContactCylinderResult(by_points, by_elements, BASE_ELEMENTS, time.perf_counter() - tic)


def _table(title: str, key: str, cases: list[Case], change: np.ndarray) -> list[str]:
    lines = [title, f"  {key:>8}  {'min u_z (m)':>12}  {'vs finest (%)':>13}  {'Newton it':>9}  {'time (s)':>8}  remark"]
    for c, p in zip(cases, change):
        remark = (f"lost at load factor {c.reached:.3g}: slips through the cylinder, hangs free"
                  if c.fell_through else "draped over the cylinder")
        lines.append(f"  {getattr(c, key):>8}  {c.min_uz:12.5f}  {p:13.4f}  {c.newton_iterations:9d}  "
                     f"{c.seconds:8.2f}  {remark}")
    return lines


def plot(result: ContactCylinderResult, path: str) -> None:
    """The deformed fiber (finest mesh) and both studies, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    case = result.by_elements[-1]
    d = case.model.discretization
    theta = np.linspace(0, 1, 1001)
    x = d.evaluate(d.reference_dofs + case.u, 0, theta)
    ax[0].plot(x[0], x[2], label="fiber (x–z)")
    phi = np.linspace(0, 2 * np.pi, 200)
    # the cylinder's cross-section by the plane y = 0: the ellipse x²/2 + (z + 0.2)² = r²
    ax[0].plot(np.sqrt(2) * CYLINDER_RADIUS * np.cos(phi), -0.2 + CYLINDER_RADIUS * np.sin(phi), "k", label="cylinder at y = 0")
    ax[0].set_xlabel("x (m)"); ax[0].set_ylabel("z (m)"); ax[0].set_aspect("equal", adjustable="datalim")
    ax[0].legend(); ax[0].set_title(f"equilibrium, {case.n_elements} elements")
    ax[1].plot([c.points for c in result.by_points], [c.min_uz for c in result.by_points], "o-")
    ax[1].set_xlabel("contact points per element"); ax[1].set_ylabel("min u_z (m)")
    ax[1].set_title(f"{result.points_elements} elements")
    ax[2].loglog([c.n_elements for c in result.by_elements[:-1]], result.elements_change_pct[:-1], "o-")
    ax[2].set_xlabel("elements"); ax[2].set_ylabel("|change| vs finest (%)"); ax[2].set_title("5 contact points")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    parser = ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--small", action="store_true",
                        help="only 5 and 8 points (32 elements) and 16, 32, 64 elements (faster; the summary then "
                             "compares with 8 points and 64 elements, the finest run)")
    parser.add_argument("--plot", metavar="FILE.png", default=None, help="save a figure (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:
        output_file(parser, "--plot", args.plot, figure=True)
    solved: list[Case] = []
    tic = time.perf_counter()
    try:
        res = run(small=args.small, solved=solved)
    except CTRL_C as err:
        handle_ctrl_c(err)
        if not solved:
            print(f"interrupted (Ctrl-C) after {time.perf_counter() - tic:.1f} s, before any case was solved")
        else:
            print(f"interrupted (Ctrl-C) after {time.perf_counter() - tic:.1f} s; the cases solved so far:")
            print(f"  {'elements':>8}  {'points':>6}  {'min u_z (m)':>12}  {'Newton it':>9}  {'time (s)':>8}")
        for c in solved:
            print(f"  {c.n_elements:>8}  {c.points:>6}  {c.min_uz:12.5f}  {c.newton_iterations:9d}  {c.seconds:8.2f}")
        print("summary: qp4_change_pct=nan ne32_error_pct=nan interrupted=1")
        return 130
    print("fiber over a rigid cylinder (paper §5.2, Table 2): both ends fixed, "
          f"b0 = (0, 0, {LOAD:g}) N/m³ per volume (= {np.pi * RADIUS**2 * LOAD:.3f} N/m), κ = {KAPPA:g} N/m, γ = {GAMMA:g}")
    lines = _table(f"min vertical displacement vs contact points per element ({res.points_elements} elements):",
                   "points", res.by_points, res.points_change_pct)
    lines += _table("min vertical displacement vs elements (5 contact points):", "n_elements",
                    res.by_elements, res.elements_change_pct)
    print("\n".join(lines))
    if args.plot:
        plot(res, args.plot)
        print(f"figure: {args.plot}")
    print(f"wall time {res.seconds:.1f} s")
    print(f"summary: qp4_change_pct={res.qp4_change_pct:.4f} ne32_error_pct={res.ne32_error_pct:.4f}")
    return 0


if __name__ == "__main__":
    run_script(main)
