"""Work against error for a stiff transient: backward Euler, BDF2 (fixed and adaptive) and PyElastica.

The case: one fiber, L = 1 m, r0 = 0.05 m, ρ = 900 kg/m³, pinned at both ends (positions
fixed, slopes free), released from straight under gravity (9.81 m/s²) and run for T = 1 s.
The middle 60 % is soft, the 20 % at each end is stiff tendon:

    S = E(θ) (λ − 1)/λ² + 3 η λ̇/λ³,   E = 3e5 Pa (0.2 ≤ θ ≤ 0.8), 3e7 Pa (tendon),  η = 1e3 Pa·s.

The measure is the midpoint's vertical displacement z(t) at the 100 times k·10 ms:
e = max_k |z(t_k) − z_ref(t_k)| / max_k |z_ref(t_k)|.  Each code is measured against its
own fine reference (skfiber: BDF2 with Δt = 2.5e-5 s; PyElastica: Δt = 1/4 of its largest
stable step), since the cable and PyElastica's Cosserat rod differ by about 10 % in this
transient (shear, rotary inertia and bending stiffness of the rod).  For each setting the
script prints the error and the CPU time; then each code's cheapest setting with
e ≤ 1 % (CPU time of the whole run, ``time.process_time``, after a warm-up run that compiles the kernels:
on a shared machine the wall time measures the other processes as much as this one).  BDF2 at
Δt = 1 ms also runs with full Newton (``NewtonOptions(jacobian_reuse=False)``), the A/B of modified Newton.
Each code's cheapest setting is then run again, ``--repeats`` runs in all (default 5), the codes
alternated so that a slow spell of a shared machine hits all of them; the summary gives each code's
least CPU time of these runs.

PyElastica (``pip install pyelastica``, the ``bench`` extra) gets the same geometry,
per-element Young's moduli (axial E A and bending E I of each element; shear modulus
E/3), position-pinned ends, gravity, and the cable's viscous axial force
N = 3 η A0 λ̇/λ² added by a forcing class; position Verlet at its largest stable Δt: the first
stable one of 4e-4, 2e-4, 1e-4, … s (a run is stable when it stays finite and its midpoint moves less
than 1 m), refined by bisection over 10 ms / k up to the unstable one before it, asking of each step
that its error stays within 1 % (near the limit a run can stay finite and be 25 % off).  Each row
prints CPU and wall time; the comparison uses CPU time.

Run: ``python benchmarks/bench_transient.py [--quick] [--elements N] [--repeats K] [--plot PNG]``
(``--plot``: the error against CPU time of every setting, drawn into PNG).  Ends with
``summary: bdf2_s_at_1pct=… euler_s_at_1pct=… pyelastica_s_at_1pct=… speedup_vs_pyelastica=…``
(speedup = PyElastica's time / the faster skfiber method's; nan when a code has no setting
reaching 1 %).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, output_file, positive_int, run_script
from skfiber.materials import SYMBOLS, SymbolicLaw

LENGTH, RADIUS, DENSITY = 1.0, 0.05, 900.0
E_SOFT, E_TENDON, ETA = 3e5, 3e7, 1e3
T_END, OUTPUT_DT, TARGET = 1.0, 0.01, 0.01
GRAVITY = 9.81


def muscle_fraction(theta):
    """1 in the soft middle (0.2 ≤ θ ≤ 0.8), 0 in the tendons."""
    theta = np.asarray(theta, dtype=float)
    return ((theta >= 0.2) & (theta <= 0.8)).astype(float)


def build_model(n_elements: int) -> sf.Model:
    lam, lamdot, gm = SYMBOLS["stretch"], SYMBOLS["stretch_rate"], SYMBOLS["muscle_fraction"]
    E = gm * E_SOFT + (1 - gm) * E_TENDON
    law = SymbolicLaw(E * (lam - 1) / lam**2 + 3 * ETA * lamdot / lam**3, name="stiff tendon")
    fiber = sf.Fiber.straight((0, 0, 0), (LENGTH, 0, 0), n_elements=n_elements, law=law, radius=RADIUS,
                              density=DENSITY, muscle_fraction=muscle_fraction)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity((0.0, 0.0, -GRAVITY))
    return model


def midpoint_z(model: sf.Model, result) -> np.ndarray:
    d = model.discretization
    return np.array([d.evaluate(u, 0, [0.5])[2, 0] for u in result.displacements])


def run_skfiber(model, *, method: str, dt: float | None = None, rtol: float | None = None, reuse: bool = True):
    """(times, z, CPU s, steps, newton iterations, wall s) of one run, z at the 10 ms grid."""
    options = sf.NewtonOptions(jacobian_reuse=reuse, compiled_step=True)
    start, wall = time.process_time(), time.perf_counter()
    if rtol is None:
        every = int(round(OUTPUT_DT / dt))
        r = sf.simulate(model, t_end=T_END, dt=dt, method=method, store_every=every, progress=False,
                        newton_options=options, on_interrupt="raise")
        steps = len(r.newton_iterations)
    else:
        r = sf.simulate(model, t_end=T_END, dt=OUTPUT_DT, method=method, rtol=rtol, atol=rtol * 1e-2,
                        progress=False, newton_options=options, on_interrupt="raise")
        steps = r.step_counts.accepted + r.step_counts.rejected
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    return r.times, midpoint_z(model, r), cpu, steps, int(np.sum(r.newton_iterations)), wall


def relative_error(z, z_ref) -> float:
    return float(np.max(np.abs(z - z_ref)) / np.max(np.abs(z_ref)))


# --------------------------------------------------------------------------- PyElastica
def run_pyelastica(n_elements: int, dt: float):
    """(times, z, CPU s, steps, wall s) of a PyElastica run, or None when it blew up."""
    import elastica as ea

    class Simulator(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.CallBacks):
        pass

    class AxialViscosity(ea.NoForces):
        """The cable's viscous axial force N = 3 η A0 λ̇/λ² on each element, along it."""

        def __init__(self, eta, area):
            super().__init__()
            self.eta, self.area = eta, area

        def apply_forces(self, system, time=0.0):
            x, v, l0 = system.position_collection, system.velocity_collection, system.rest_lengths
            dx = x[:, 1:] - x[:, :-1]
            length = np.sqrt(np.einsum("ij,ij->j", dx, dx))
            t = dx / length
            lam = length / l0
            lamdot = np.einsum("ij,ij->j", t, v[:, 1:] - v[:, :-1]) / l0
            f = (3.0 * self.eta * self.area * lamdot / lam**2) * t
            system.external_forces[:, :-1] += f
            system.external_forces[:, 1:] -= f

    class Midpoint(ea.CallBackBaseClass):
        def __init__(self, every, out):
            super().__init__()
            self.every, self.out = every, out

        def make_callback(self, system, time, current_step):
            if current_step % self.every == 0:
                self.out.append((time, float(system.position_collection[2, n_elements // 2])))

    sim = Simulator()
    rod = ea.CosseratRod.straight_rod(n_elements, np.zeros(3), np.array([1.0, 0, 0]), np.array([0, 0, 1.0]),
                                      LENGTH, RADIUS, DENSITY, youngs_modulus=E_TENDON,
                                      shear_modulus=E_TENDON / 3.0)
    centers = (np.arange(n_elements) + 0.5) / n_elements
    E_el = np.where(muscle_fraction(centers) > 0, E_SOFT, E_TENDON)
    rod.shear_matrix[:] *= (E_el / E_TENDON)[None, None, :]   # E A on the axis, G A = E A/3 across
    E_vor = 0.5 * (E_el[1:] + E_el[:-1])
    rod.bend_matrix[:] *= (E_vor / E_TENDON)[None, None, :]
    sim.append(rod)
    sim.constrain(rod).using(ea.GeneralConstraint, constrained_position_idx=(0, -1),
                             translational_constraint_selector=np.array([True, True, True]),
                             rotational_constraint_selector=np.array([False, False, False]))
    sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -GRAVITY]))
    sim.add_forcing_to(rod).using(AxialViscosity, eta=ETA, area=math.pi * RADIUS**2)
    out: list = []
    steps = int(round(T_END / dt))
    every = max(1, int(round(OUTPUT_DT / dt)))
    sim.collect_diagnostics(rod).using(Midpoint, every=every, out=out)
    sim.finalize()
    stepper = ea.PositionVerlet()
    start, wall = time.process_time(), time.perf_counter()
    t = 0.0
    for k in range(steps):
        t = stepper.step(sim, t, dt)
        if k % 100 == 0:
            zm = rod.position_collection[2, n_elements // 2]
            if not (math.isfinite(zm) and abs(zm) < 1.0):
                return None
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    times, z = np.array(out).T
    return times, z, cpu, steps, wall


COARSE_STEPS = (4e-4, 2e-4, 1e-4, 5e-5, 2.5e-5, 1.25e-5)


def first_stable_step(n_elements: int) -> float | None:
    """The first step of :data:`COARSE_STEPS` at which PyElastica's run stays finite (None: none)."""
    for dt in COARSE_STEPS:
        if run_pyelastica(n_elements, dt) is not None:
            return dt
    return None


def largest_step_reaching(n_elements: int, dt: float, z_ref: np.ndarray) -> float:
    """The largest Δt = 10 ms / k whose PyElastica run stays finite with an error ≤ the target, by bisection
    between ``dt`` (which must meet it) and the next larger step of :data:`COARSE_STEPS`.  Near its stability
    limit a run can stay finite and still be far off (a growing oscillation that has not blown up by T),
    so the bisection asks for the error, not only for a finite run."""
    i = COARSE_STEPS.index(dt)
    if i == 0:
        return dt
    good_k, bad_k = round(OUTPUT_DT / dt), round(OUTPUT_DT / COARSE_STEPS[i - 1])  # k: steps per 10 ms
    while good_k - bad_k > 1:
        k = (good_k + bad_k) // 2
        out = run_pyelastica(n_elements, OUTPUT_DT / k)
        if out is not None and relative_error(out[1], z_ref) <= TARGET:
            good_k = k
        else:
            bad_k = k
    return OUTPUT_DT / good_k


# --------------------------------------------------------------------------- driver
def cheapest(rows):
    """The row with the smallest CPU time among those with error ≤ TARGET (or None)."""
    ok = [r for r in rows if r["error"] <= TARGET]
    return min(ok, key=lambda r: r["cpu"]) if ok else None


def plot_work_precision(rows: list, path: Path) -> None:
    """Error against CPU time of every setting, one line per scheme, the 1 % target dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for code, label, style in (("skf-euler", "skfiber, backward Euler (fixed Δt)", "o-"),
                               ("skf-bdf2", "skfiber, BDF2 (fixed Δt)", "s-"),
                               ("skf-bdf2-adapt", "skfiber, BDF2 (error control)", "^-"),
                               ("pyelastica", "PyElastica, position Verlet", "d-")):
        pts = sorted((r["cpu"], r["error"]) for r in rows if r["code"] == code)
        if pts:
            ax.loglog(*np.array(pts).T, style, label=label)
    ax.axhline(TARGET, color="0.5", ls="--", lw=1)
    ax.set_xlabel("CPU time of the run [s]")
    ax.set_ylabel("error of the midpoint z(t), relative to max |z_ref|")
    ax.set_title("Stiff tendon, 1 s: each code against its own fine reference")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rerun(model, n_elements: int, row: dict) -> float:
    """CPU seconds of one more run of a table row's setting."""
    if row["code"] == "pyelastica":
        return run_pyelastica(n_elements, row["dt"])[2]
    return run_skfiber(model, method=row["method"], **row["setting"])[2]


def time_cheapest(model, n_elements: int, best: dict, *, repeats: int) -> dict:
    """The smallest CPU time of each code's cheapest setting over ``repeats`` runs, alternated between codes.

    A single run of 0.1–0.5 s on a shared machine is as much a measure of the machine's load as of the code;
    the runs of the codes are therefore interleaved (code A, code B, code C, A, B, C, …) so that a slow spell
    hits all of them, and each code's least time is taken, as ``timeit`` does.
    """
    rows = {name: row for name, row in best.items() if row is not None}
    times: dict = {name: [row["cpu"]] for name, row in rows.items()}
    for _ in range(repeats - 1):
        for name, row in rows.items():
            times[name].append(rerun(model, n_elements, row))
    for name, values in times.items():
        print(f"timed {name:>10} ({rows[name]['label']}): {len(values)} runs, CPU s min {min(values):.3f}, "
              f"median {float(np.median(values)):.3f}, max {max(values):.3f}")
    return {name: min(values) for name, values in times.items()}


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer settings, coarser reference")
    parser.add_argument("--elements", type=positive_int, default=20,
                        help="elements of the fiber and the rod (a multiple of 5; default 20)")
    parser.add_argument("--repeats", type=positive_int, default=5,
                        help="runs of each code's cheapest setting, alternated between the codes; the least CPU time "
                             "counts (default 5)")
    parser.add_argument("--plot", type=Path, default=None, metavar="PNG",
                        help="also draw the error against CPU time of every setting into this file")
    args = parser.parse_args(argv)
    if args.elements % 5:
        parser.error(f"argument --elements: must be a multiple of 5 (the tendons take a fifth of the fiber at each "
                     f"end), got {args.elements}")
    if args.plot is not None:  # checked before the runs: a path that cannot be written is refused at once
        output_file(parser, "--plot", args.plot, figure=True)
    ne = args.elements
    model = build_model(ne)
    print(f"stiff tendon: Ne = {ne}, T = {T_END} s, error of the midpoint z(t) on the 10 ms grid, 1 % target")
    run_skfiber(model, method="bdf2", dt=0.01)  # compile the kernels
    ref_dt = 1e-4 if args.quick else 2.5e-5
    _, z_ref, cpu_ref, *_ = run_skfiber(model, method="bdf2", dt=ref_dt)
    print(f"skfiber reference: BDF2, dt = {ref_dt:g} s ({cpu_ref:.1f} s); max |z| = {np.abs(z_ref).max():.4f} m")
    rows = []
    settings = [("euler", dict(dt=dt)) for dt in ((1e-3, 2e-4, 1e-4, 5e-5) if args.quick else
                                                    (1e-3, 5e-4, 2e-4, 1e-4, 5e-5, 2.5e-5))]
    settings += [("bdf2", dict(dt=dt)) for dt in (1e-2, 5e-3, 2e-3, 1.25e-3, 1e-3, 5e-4)]
    settings += [("bdf2", dict(dt=1e-3, reuse=False))]
    settings += [("bdf2", dict(rtol=r)) for r in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4)]
    print(f"{'code':>10} {'setting':>14} {'steps':>7} {'newton':>7} {'error':>10} {'cpu [s]':>9} {'wall [s]':>9} "
          f"{'us/step':>8}")
    for method, kw in settings:
        _, z, cpu, steps, its, wall = run_skfiber(model, method=method, **kw)
        err = relative_error(z, z_ref)
        label = f"dt={kw['dt']:g}" if "dt" in kw else f"rtol={kw['rtol']:g}"
        code = "skf-" + method + ("-adapt" if "rtol" in kw else "") + ("-full" if not kw.get("reuse", True) else "")
        rows.append(dict(code=code, method=method, label=label, error=err, cpu=cpu, steps=steps, setting=kw))
        print(f"{code:>10} {label:>14} {steps:>7d} {its:>7d} {err:>10.3e} {cpu:>9.2f} {wall:>9.2f} "
              f"{1e6 * cpu / steps:>8.0f}", flush=True)
    try:
        import elastica  # noqa: F401
        have_elastica = True
    except ImportError:
        have_elastica = False
        print("PyElastica is not installed (pip install pyelastica, or the bench extra): skipped")
    el_rows = []
    if have_elastica:
        stable = first_stable_step(ne)
        if stable is None:
            print(f"PyElastica: no stable dt down to {COARSE_STEPS[-1]:g} s")
        else:
            ref = run_pyelastica(ne, stable / 4)
            z_el_ref = ref[1]
            print(f"PyElastica reference: dt = {stable / 4:g} s ({ref[2]:.1f} s); max |z| = {np.abs(z_el_ref).max():.4f} m "
                  f"(skfiber's: {np.abs(z_ref).max():.4f} m)")
            largest = largest_step_reaching(ne, stable, z_el_ref)
            print(f"PyElastica: largest dt reaching 1 %: {largest:.4g} s (10 ms / {round(OUTPUT_DT / largest)}; the "
                  f"next larger 10 ms / k fails or blows up; first stable of the coarse list: {stable:g} s)")
            for dt in (largest, largest / 2):
                out = run_pyelastica(ne, dt)
                err = relative_error(out[1], z_el_ref)
                el_rows.append(dict(code="pyelastica", method="pyelastica", label=f"dt={dt:.4g}", error=err, cpu=out[2],
                                    steps=out[3], dt=dt))
                print(f"{'pyelastica':>10} {'dt=%.4g' % dt:>14} {out[3]:>7d} {'-':>7} {err:>10.3e} {out[2]:>9.2f} "
                      f"{out[4]:>9.2f} {1e6 * out[2] / out[3]:>8.0f}", flush=True)
    best = {name: cheapest([r for r in rows if r["method"] == name]) for name in ("euler", "bdf2")}
    best["pyelastica"] = cheapest(el_rows)
    for name, row in best.items():
        text = "none reaches 1 %" if row is None else f"{row['code']} {row['label']}: error {row['error']:.2e}, {row['cpu']:.2f} s"
        print(f"cheapest at 1 %: {name:>10}: {text}")
    if args.plot is not None:
        plot_work_precision(rows + el_rows, args.plot)
        print(f"work–precision plot: {args.plot}")
    timed = time_cheapest(model, ne, best, repeats=args.repeats)
    secs = {k: timed.get(k, float("nan")) for k in ("bdf2", "euler")}
    el = timed.get("pyelastica", float("nan"))
    fastest = np.nanmin([secs["bdf2"], secs["euler"]]) if not all(math.isnan(x) for x in secs.values()) else float("nan")
    print(f"summary: bdf2_s_at_1pct={secs['bdf2']:.2f} euler_s_at_1pct={secs['euler']:.2f} "
          f"pyelastica_s_at_1pct={el:.2f} speedup_vs_pyelastica={el / fastest:.2f}")
    return 0


if __name__ == "__main__":
    run_script(main)
