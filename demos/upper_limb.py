r"""The upper limb of paper §5.4: forearm driven by 2 biceps and 3 triceps fibers.

Model (paper Table 4, eqs. 77–78; coordinates: x anterior, y lateral, z up, metres):

* **Bones** (:mod:`skfiber.rigid`): the upper arm is fixed (start (0, 0, 0),
  axis (0, 0, −0.351), r = 0.035 m, 1.92 kg); the forearm (start
  (0, 0, −0.351), axis (0, 0, −0.287), r = 0.035 m, 1.50 kg, solid cylinder)
  turns about the elbow axis through (0, 0, −0.351) along −y, so the
  coordinate q = elbow flexion (q > 0 lifts the hand forward).  Gravity
  9.81 m/s² on bones and fibers.
* **Wrapping cylinder**: a third body fixed to the forearm, coaxial with
  the elbow axis (length 0.16 m, r_w = 0.025 m); the triceps fibers slide
  over it (contact κ = 768 N/m, γ = 4).  The paper gives no position or
  size.  At rest the triceps bulge (r up to 0.12 m) already rests lightly
  on it (1 + γg ≥ 0.6); flexion presses the triceps onto it.
* **Fibers** (Table 4a, eq. 77): r0(θ) = 0.06 (1 + 16 θ²(1 − θ)²) m and
  γM(θ) = 16 θ²(1 − θ)²; ρ = 900 kg/m³, μM = 2·10⁴, μT = 10⁶, η = 10³ (both),
  λopt = 1.3, ΔW = 0.3, ν = 4; biceps σ0 = 32.7 Pa, Smax = 4.2·10⁷ Pa,
  triceps σ0 = 16 Pa, Smax = 1.4·10⁷ Pa.  Activations (eq. 78):
  α_bi = 0.0704 tanh(πt) + 0.0608 sin(πt), α_tri = 0.008 (1 − cos πt).
* **Attachments** (not given in the paper; chosen and documented here):
  each fiber starts on the upper arm and ends on the forearm (``attach``,
  u_D = c(q)).  Biceps: from (0.06, ±0.02, −0.03) in front of the shoulder
  end to (0.03, ±0.02, −0.40), 5 cm below the elbow in front (moment arm
  3 cm, like the radial tuberosity).  Triceps: from (−0.10, y, −0.05) to
  (−0.10, y, −0.40) behind the arm, y = −0.03, 0, 0.03 (the olecranon
  lever is 0.1 m long because the fat fibers of Table 4 need that room
  around the wrapping cylinder).
* Fiber–fiber contact is **off**: with Table 4's radii (2 r0 = 0.12 m at the
  belly) fibers of one muscle lying side by side overlap far beyond the
  penalty law's admissible range 1 + γg > 0, and the paper does not say
  which pairs touch.
* **Bending stiffness** (optional, ``--bending EI``, off by default; not in
  the paper, whose fibers are cables): adds to every fiber the residual

      EI ∫ x_ss · ξ_ss dS  =  EI ∫ x″ · ξ″ / |A1|³ dθ

  with EI in N·m² (x_ss, ξ_ss: second derivatives in reference arc length;
  exact for the straight reference fibers here), the scikit-fem
  ``LinearForm`` of the README's "A new law, a new term", through
  ``model.add_term(bending_form(EI), name="bending")`` and without a tangent:
  the form compiler derives it and runs the term in the model's generated
  kernel, with the cable.  The fiber ends keep their
  attachments (positions); their slopes stay free, so the bending moment is
  zero there (pinned ends).  EI must be finite and ≥ 0; EI = 0 adds no term.
  For scale: EI = 1e-4 N·m² moves the elbow by ≈ 5e-4° in the first
  1/16 s at level 1 (the Table-4 fibers carry kN).
* At t = 0 the model is at rest in the reference configuration (q = 0: the
  forearm hangs straight down).  With Table 4's small prestress it is close
  to equilibrium there, as the paper says; the start transient is the
  "oscillations related to the initial conditions" of the paper.

Levels (Table 5): 8, 16, 32, 64 elements per fiber with 256, 512, 1024,
2048 backward-Euler steps over T = 8 s.  The d.o.f. count is the paper's
(positions and velocities of all Hermite DOFs plus q, q̇): 542, 1022, 1982,
3902.

Outputs (``--output DIR``, default ``upper_limb_output``), per level L run:
``angle_levelL.csv`` (t, elbow angle, insertion forces) and for all levels run
together ``angle.png`` (paper Fig. 10), ``forces.png`` (Fig. 11: force at the
upper-arm attachment of one biceps and one triceps fiber), ``axial_force.png``,
with ``axial_force_levelL.csv`` per level (Fig. 12:
N(θ) along those fibers at t = 1 s and 4 s), and the timing table next to
the paper's Table 5.

Run::

    python demos/upper_limb.py              # level 1 (seconds)
    python demos/upper_limb.py --level 3    # finer; --levels 1 2 3 4 compares them
    python demos/upper_limb.py --vtk out    # + VTK series out/upper_limb.pvd (fibers, bones)
    python demos/upper_limb.py --out out    # CSV/PNG and the VTK series, all in out/
    python demos/upper_limb.py --bending 1e-4   # with bending stiffness EI = 1e-4 N·m²

The last line of the output is ``summary: level=… dofs=… … bending_EI=…``
(``bending_EI=0`` without bending).
"""
from __future__ import annotations

import argparse
import csv
import math
import numbers
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.rigid import Body, Fixed, Revolute, RigidSystem
from skfiber.terms import d2

T_END = 8.0
#: level → (elements per fiber, time steps)   (paper Table 5)
LEVELS = {1: (8, 256), 2: (16, 512), 3: (32, 1024), 4: (64, 2048)}
#: paper Table 5: level → (d.o.f., elapsed seconds of the authors' MATLAB code)
PAPER_TABLE5 = {1: (542, 66.0), 2: (1022, 281.3), 3: (1982, 958.2), 4: (3902, 5579.6)}
#: times of the axial-force profiles (paper Fig. 12)
PROFILE_TIMES = (1.0, 4.0)

ELBOW = np.array([0.0, 0.0, -0.351])
BICEPS = [((0.06, y, -0.03), (0.03, y, -0.40)) for y in (-0.02, 0.02)]
TRICEPS = [((-0.10, y, -0.05), (-0.10, y, -0.40)) for y in (-0.03, 0.0, 0.03)]
WRAP_RADIUS = 0.025


def radius(theta):
    """r0(θ) of eq. 77 (m)."""
    return 0.06 * (1.0 + 16.0 * (1.0 - theta) ** 2 * theta**2)


def muscle_fraction(theta):
    """γM(θ) of eq. 77."""
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def alpha_biceps(t):
    return 0.0704 * math.tanh(math.pi * t) + 0.0608 * math.sin(math.pi * t)


def alpha_triceps(t):
    return 0.008 * (1.0 - math.cos(math.pi * t))


def bending_stiffness(EI) -> float:
    """EI (N·m²) as a float, or a ``ValueError`` naming the value: finite and ≥ 0 (``None``: 0)."""
    if EI is None:
        return 0.0
    if isinstance(EI, bool) or not isinstance(EI, numbers.Real):
        raise ValueError(f"bending stiffness EI must be a number in N·m², got {EI!r}")
    value = float(EI)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"bending stiffness EI must be finite and ≥ 0 (N·m²), got {EI!r}")
    return value


def bending_form(EI: float) -> LinearForm:
    """The README's bending residual EI ∫ x_ss · ξ_ss dS = EI ∫ x″ · ξ″ / |A1|³ dθ
    (straight reference fibers).

    Added with ``model.add_term(bending_form(EI), name="bending")``, without a tangent (derived by skfiber).
    """
    EI = bending_stiffness(EI)

    @LinearForm
    def bending(v, w):   # EI ∫ x_ss · ξ_ss dS
        return EI * dot(d2(w.x), d2(v)) / w.J**3

    return bending


def build_model(n_elements: int = 8, *, gravity: bool = True, wrap: bool = True,
                bending: float | None = None) -> sf.Model:
    """The upper-limb model with ``n_elements`` per fiber (see the module notes).

    ``bending``: bending stiffness EI (N·m²) of every fiber, added as the term ``"bending"``
    (:func:`bending_form`); ``None`` or 0: none (the paper's cables).
    """
    EI = bending_stiffness(bending)
    g = (0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0)
    system = RigidSystem(gravity=g)
    system.add_body(Body("upper_arm", start=(0, 0, 0), axis=(0, 0, -0.351), radius=0.035, mass=1.92), joint=Fixed())
    system.add_body(Body("forearm", start=tuple(ELBOW), axis=(0, 0, -0.287), radius=0.035, mass=1.50),
                    joint=Revolute(axis=(0, -1, 0), point=tuple(ELBOW)))
    system.add_body(Body("wrap", start=tuple(ELBOW + [0, -0.08, 0]), axis=(0, 0.16, 0), radius=WRAP_RADIUS, mass=0.0),
                    parent="forearm", joint=Fixed())
    common = dict(mu_muscle=2e4, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3, lam_opt=1.3, delta_w=0.3, nu=4.0)
    biceps_law = sf.paper_law(sigma0=32.7, s_max=4.2e7, **common)
    triceps_law = sf.paper_law(sigma0=16.0, s_max=1.4e7, **common)
    fibers = []
    for k, (a, b) in enumerate(BICEPS):
        fibers.append(sf.Fiber.straight(a, b, n_elements=n_elements, radius=radius, muscle_fraction=muscle_fraction,
                                        density=900.0, law=biceps_law, activation=alpha_biceps, name=f"biceps{k + 1}"))
    for k, (a, b) in enumerate(TRICEPS):
        fibers.append(sf.Fiber.straight(a, b, n_elements=n_elements, radius=radius, muscle_fraction=muscle_fraction,
                                        density=900.0, law=triceps_law, activation=alpha_triceps, name=f"triceps{k + 1}"))
    model = sf.Model(fibers, rigid=system)
    for f in fibers:
        model.attach(f, "start", "upper_arm", name=f"{f.name}.origin")
        model.attach(f, "end", "forearm", name=f"{f.name}.insertion")
    if gravity:
        model.add_gravity(g)
    if wrap:
        model.add_contact(CylinderContact.on_body(system, "wrap", law=PenaltyLaw(stiffness=768.0, gamma=4.0), safeguard="trial",
                                                  fibers=[f.name for f in fibers if f.name.startswith("triceps")]))
    if EI > 0:
        model.add_term(bending_form(EI), name="bending")   # tangent derived automatically
    return model


def paper_dofs(model: sf.Model) -> int:
    """The paper's d.o.f. count: positions and velocities of all Hermite DOFs, plus q and q̇."""
    return 2 * model.n_dofs + 2 * model.rigid.n


@dataclass
class UpperLimbResult:
    """Time series and statistics of one run."""

    level: int
    n_elements: int
    n_steps: int
    dofs: int
    unknowns: int
    times: np.ndarray
    angle_deg: np.ndarray
    #: force (N) of biceps1 and triceps1 at their upper-arm attachment, magnitude
    biceps_origin_force: np.ndarray
    triceps_origin_force: np.ndarray
    wall_time: float
    newton_iterations: list[int]
    retries: int
    max_contacts: int
    #: θ and axial force N (N) of biceps1 / triceps1 at PROFILE_TIMES
    profiles: dict = field(default_factory=dict)
    model: sf.Model | None = None
    final_state: sf.State | None = None
    #: the end time asked for, and whether Ctrl-C stopped the run before it
    t_end: float = T_END
    interrupted: bool = False
    #: seconds of the throw-away first step (kernel compilation on a first run), not in wall_time
    warmup_time: float = 0.0
    #: bending stiffness EI (N·m²) of the fibers; 0: no bending term
    bending_EI: float = 0.0

    @property
    def complete(self) -> bool:
        """A full paper run (T = 8 s, not interrupted): only then is the time comparable with Table 5."""
        return not self.interrupted and abs(self.t_end - T_END) < 1e-12


def run(level: int = 1, *, t_end: float = T_END, n_elements: int | None = None, n_steps: int | None = None,
        progress: bool = True, vtk: Path | None = None, vtk_every: int = 4,
        bending: float | None = None, method: str = "euler", rtol: float | None = None,
        atol: float | None = None) -> UpperLimbResult:
    """Simulate one level (or explicit ``n_elements``/``n_steps`` over ``t_end``).

    ``method``, ``rtol``, ``atol``: the time scheme of :func:`skfiber.simulate`; with
    tolerances (``method="bdf2"``) the steps are chosen by error control and the level's
    step Δt is the interval of the output times.

    With ``vtk`` a folder: a VTK series (fibers with their fields, bones as cylinders)
    of every ``vtk_every``-th step, ``upper_limb.pvd`` for ParaView.  ``bending``: bending
    stiffness EI (N·m²) of the fibers (see the module notes); ``None`` or 0: none.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)}, got {level!r}")
    EI = bending_stiffness(bending)
    ne, nt = LEVELS[level]
    ne = ne if n_elements is None else int(n_elements)
    nt = nt if n_steps is None else int(n_steps)
    if t_end != T_END and n_steps is None:
        nt = max(1, int(round(nt * t_end / T_END)))
    dt = t_end / nt
    # building the model and a throw-away first step compile the numba kernels on the first
    # run on a machine (seconds) and load them from numba's cache later: say so if it takes long
    setup = time.perf_counter()
    notice = sf.solver.compile_notice("  compiling the numba kernels (the first run on this machine only; "
                                      "≈ 1 min, cached for later runs) …", enabled=progress, delay=2.0)
    try:
        model = build_model(ne, bending=EI)
    except BaseException:
        notice.cancel()
        raise
    forces = {"t": [0.0], "bi": [], "tri": []}
    writer = None
    if vtk is not None:
        from skfiber.coupling import body_cylinders
        from skfiber.io import VTKSeries

        writer = VTKSeries(vtk, model, name="upper_limb", bodies=body_cylinders(model))
    profiles: dict = {}
    max_contacts = [0]

    def record(state, info=None):
        f = model.attachment_forces(state)
        forces["bi"].append(float(np.linalg.norm(f["biceps1.origin"])))
        forces["tri"].append(float(np.linalg.norm(f["triceps1.origin"])))
        if info is not None:
            forces["t"].append(state.t)
            max_contacts[0] = max(max_contacts[0], info.active_contacts)
        step = 0 if info is None else info.step
        if writer is not None and (step % vtk_every == 0 or (info is not None and step == info.n_steps)):
            writer.write(state, step)
        for tp in PROFILE_TIMES:
            if tp not in profiles and state.t >= tp - 1e-9:
                profiles[tp] = {name: _axial_force(model, state, name) for name in ("biceps1", "triceps1")}

    # the throw-away step keeps the compilation out of the wall time
    start = time.perf_counter()
    try:
        state0 = model.initial_state()
        sf.simulate(model, t_end=dt, dt=dt, state=state0, progress=False)
    finally:
        notice.cancel()
    warmup = time.perf_counter() - start
    if progress and time.perf_counter() - setup > 2.0:
        print(f"  compiled the numba kernels in {time.perf_counter() - setup:.1f} s", flush=True)
    record(state0)
    start = time.perf_counter()
    result = sf.simulate(model, t_end=t_end, dt=dt, callback=record, progress=progress, method=method, rtol=rtol,
                         atol=atol)
    wall = time.perf_counter() - start
    if not profiles:  # a short run: the profile at its end
        profiles[float(result.times[-1])] = {name: _axial_force(model, result.final_state, name)
                                             for name in ("biceps1", "triceps1")}
    return UpperLimbResult(
        level, ne, nt, paper_dofs(model), int(np.count_nonzero(~sf.solver.make_solver(model).fixed)),
        result.times, np.degrees(result.coordinates[:, 0]), np.array(forces["bi"]), np.array(forces["tri"]),
        wall, result.newton_iterations, result.retries, max_contacts[0], profiles, model, result.final_state,
        t_end, result.interrupted, warmup, EI,
    )


def _axial_force(model, state, fiber):
    from skfiber.postprocess import fiber_fields

    ff = fiber_fields(model, state, fiber)
    return ff.theta, ff.force


def write_outputs(results: list[UpperLimbResult], out: Path) -> list[Path]:
    """CSV and PNG files of the runs (see the module notes)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in results:
        path = out / f"angle_level{r.level}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_s", "elbow_angle_deg", "biceps1_origin_force_N", "triceps1_origin_force_N"])
            for row in zip(r.times, r.angle_deg, r.biceps_origin_force, r.triceps_origin_force):
                w.writerow([f"{v:.9g}" for v in row])
        files.append(path)
        path = out / f"axial_force_level{r.level}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_s", "fiber", "theta", "axial_force_N"])
            for tp, prof in sorted(r.profiles.items()):
                for name, (theta, N) in prof.items():
                    for th, n_ in zip(theta, N):
                        w.writerow([tp, name, f"{th:.6g}", f"{n_:.9g}"])
        files.append(path)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plotting is optional
        return files
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        ax.plot(r.times, r.angle_deg, label=f"level {r.level} ({r.n_elements} el./fiber, {r.n_steps} steps)")
    ax.set(xlabel="t (s)", ylabel="elbow flexion (deg)", title="Upper limb: forearm rotation (paper Fig. 10)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "angle.png", dpi=120)
    files.append(out / "angle.png")
    plt.close(fig)
    r = results[-1]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(r.times, r.biceps_origin_force, label="biceps fiber 1", color="tab:red")
    ax.plot(r.times, r.triceps_origin_force, label="triceps fiber 1", color="tab:blue")
    ax.set(xlabel="t (s)", ylabel="force at the upper-arm attachment (N)", title="Paper Fig. 11")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "forces.png", dpi=120)
    files.append(out / "forces.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    for tp, prof in sorted(r.profiles.items()):
        for name, (theta, N) in prof.items():
            ax.plot(theta, N, label=f"{name}, t = {tp:g} s")
    ax.set(xlabel="θ", ylabel="axial force N (N)", title="Paper Fig. 12: forces along the fibers")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "axial_force.png", dpi=120)
    files.append(out / "axial_force.png")
    plt.close(fig)
    return files


def report(results: list[UpperLimbResult]) -> str:
    lines = ["level  el./fiber  steps  d.o.f. (paper)  unknowns  Newton it. (mean/max)  retries  wall [s]  paper [s]  speed-up"]
    for r in results:
        dofs_paper, secs_paper = PAPER_TABLE5.get(r.level, (float("nan"), float("nan")))
        its = np.asarray(r.newton_iterations)
        # the paper's time is for the whole 8 s: a shorter or interrupted run is not comparable
        ratio = f"{secs_paper / r.wall_time:8.1f}×" if r.complete else "       —"
        lines.append(f"{r.level:5d}  {r.n_elements:9d}  {r.n_steps:5d}  {r.dofs:6d} ({dofs_paper})  {r.unknowns:8d}  "
                     f"{its.mean():10.2f} / {its.max():3d}        {r.retries:7d}  {r.wall_time:8.2f}  {secs_paper:9.1f}  "
                     f"{ratio}")
    for r in results:
        if r.interrupted:
            lines.append(f"level {r.level} was interrupted at t = {r.times[-1]:.4g} s "
                         f"({len(r.newton_iterations)} of {r.n_steps} steps): partial results")
    return "\n".join(lines)


def _bending_argument(text: str) -> float:
    """--bending EI: a float, finite and ≥ 0 (argparse turns the error into exit code 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bending stiffness EI must be a number in N·m², got {text!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"bending stiffness EI must be finite and ≥ 0 (N·m²), got {text!r}")
    return value


def main(argv: list[str] | None = None) -> list[UpperLimbResult]:
    # no abbreviations: '--out' (below) and '--output' are different options
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--level", type=int, default=None, choices=sorted(LEVELS), help="one level (default 1)")
    parser.add_argument("--levels", type=int, nargs="+", choices=sorted(LEVELS), help="several levels to compare")
    parser.add_argument("--t-end", type=float, default=T_END, help="end time in s (default 8)")
    parser.add_argument("--output", type=Path, default=Path("upper_limb_output"), help="directory for CSV/PNG files")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--vtk", type=Path, default=None, help="also write a VTK series (every 4th step) to this folder")
    parser.add_argument("--out", type=Path, default=None,
                        help="one folder for everything: the CSV/PNG files and the VTK series upper_limb.pvd "
                             "(what 'skfiber run upper-limb --out DIR' passes; --output/--vtk go to other folders)")
    parser.add_argument("--bending", type=_bending_argument, default=None, metavar="EI",
                        help="add bending stiffness EI (N·m², finite, ≥ 0) to every fiber: the residual "
                             "EI ∫ x_ss · ξ_ss dS as a user term, its tangent derived automatically "
                             "(default: none, the paper's cables; 0 is the same)")
    args = parser.parse_args(argv)
    if args.out is not None:
        if args.output != parser.get_default("output") or args.vtk is not None:
            parser.error("--out names one folder for all files; give either --out or --output/--vtk")
        args.output, args.vtk = args.out, args.out
    levels = args.levels or [args.level or 1]
    if args.bending:
        print(f"bending stiffness EI = {args.bending:g} N·m² on every fiber "
              "(user term, tangent derived automatically)", flush=True)
    results = []
    for level in levels:
        print(f"level {level}: {LEVELS[level][0]} elements per fiber, {LEVELS[level][1]} steps over {T_END:g} s "
              f"(scaled to t_end = {args.t_end:g} s)" if args.t_end != T_END else
              f"level {level}: {LEVELS[level][0]} elements per fiber, {LEVELS[level][1]} steps over {T_END:g} s",
              flush=True)
        vtk = None if args.vtk is None else (args.vtk if len(levels) == 1 else args.vtk / f"level{level}")
        results.append(run(level, t_end=args.t_end, progress=not args.quiet, vtk=vtk, bending=args.bending))
        if results[-1].interrupted:  # Ctrl-C: keep what was computed, run no further level
            break
    files = write_outputs(results, args.output)
    print(report(results))
    r = results[-1]
    print("elbow angle (deg) at t = 0, 0.5, 1, 2, 4, 8 s:",
          ", ".join(f"{np.interp(tp, r.times, r.angle_deg):.2f}" for tp in (0, 0.5, 1, 2, 4, 8) if tp <= r.times[-1]))
    print(f"largest active contact count with the wrapping cylinder: {r.max_contacts}")
    if len(results) > 1:
        a, b = results[-2], results[-1]
        diff = np.abs(np.interp(b.times, a.times, a.angle_deg) - b.angle_deg).max()
        print(f"largest elbow-angle difference between levels {a.level} and {b.level}: {diff:.3f} deg")
    print("wrote " + ", ".join(str(f) for f in files))
    print(f"summary: level={r.level} dofs={r.dofs} steps={r.n_steps} wall_s={r.wall_time:.2f} "
          f"paper_s={PAPER_TABLE5[r.level][1]} max_angle_deg={r.angle_deg.max():.2f} "
          f"final_angle_deg={r.angle_deg[-1]:.2f} newton_mean={np.mean(r.newton_iterations):.2f} "
          f"bending_EI={r.bending_EI:.12g}"
          + (f" interrupted_at_s={r.times[-1]:.4g}" if r.interrupted else ""))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
