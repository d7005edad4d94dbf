"""Cost of the many-fiber elbow: a 36-fiber biceps for 2 s, the cost against the number of fibers, where a
Newton iteration's time goes, and the same bundle as Cosserat rods in PyElastica.

The run (``demos/elbow_bundle.py``'s model, 16 elements per fiber by default): from rest at full extension
the activation rises to 1 over 0.2 s while the elbow turns at 60°/s (isokinetic from the start), backward
Euler at Δt = 0.01 s (failing steps split and the substep kept for the next steps, as in the demo).  Timed:

1. **36 fibers**, 2 s of that motion (0° → 120°);
2. **scaling**: N = 9, 18, 36, 72, 144 fibers (``--sizes``), the first ``--scaling-time`` seconds (0.1 s:
   the activation, and the turn's first 6°); the exponent p of wall ∝ N^p is fitted by least squares
   to log wall against log N, and given between neighbouring sizes as well;
3. **time split** of a Newton iteration (those of the attempts that failed and split a step included): contact (fiber–fiber and fiber–bone: search, forces,
   tangent, the admissibility safeguard), assembly (the rest of the residual and the tangent: the fibers'
   kernels, the coupling's blocks) and the linear solve (with fibers in touch: SuperLU on the assembled
   tangent, :data:`skfiber.coupling_fast.DIRECT_FROM_FIBERS`), exclusive times, and the rest of the step
   (predictor, Newton's bookkeeping, the callback's force);
4. **PyElastica** (``pip install pyelastica``, the ``bench`` extra): the same 36 curved fibers as
   Cosserat rods with rod–rod contact between neighbours, the same motion and activation, explicit steps,
   stopped at ``--elastica-wall`` seconds of wall time: its wall time per simulated second and peak force.

Ends with ``summary: bundle36_s=… scaling_exponent=… newton_mean=…`` (newton_mean: Newton iterations per
step of the 36-fiber run).  ``--quick`` runs small sizes only (a smoke test).
"""
from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import skfiber as sf  # noqa: E402
from skfiber.cli import ArgumentParser, nonnegative_float, positive_float, positive_int, run_script  # noqa: E402

SPEED_DEG_S = 60.0
DT = 0.01


class PhaseTimer:
    """Wall time spent in wrapped methods, by phase, exclusive: a wrapped call inside another is taken out of
    the outer one's phase and counted in its own."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self._stack: list[str] = []
        self._undo = []

    def wrap(self, cls, name: str, phase: str) -> None:
        original = getattr(cls, name)
        timer = self

        def timed(*args, **kwargs):
            timer._stack.append(phase)
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                timer._stack.pop()
                timer.seconds[phase] += elapsed
                if timer._stack:
                    timer.seconds[timer._stack[-1]] -= elapsed

        setattr(cls, name, timed)
        self._undo.append((cls, name, original))

    def restore(self) -> None:
        for cls, name, original in reversed(self._undo):
            setattr(cls, name, original)
        self._undo.clear()


def instrument() -> PhaseTimer:
    """Time contact, assembly and the linear solve of the coupled Newton iteration."""
    from skfiber.contact import CylinderContact, FiberContact
    from skfiber.coupling import CoupledProblem

    from skfiber.linalg import ConstrainedSolver

    timer = PhaseTimer()
    for cls in (FiberContact, CylinderContact):
        for name in ("evaluate", "max_step"):
            timer.wrap(cls, name, "contact")
    timer.wrap(CoupledProblem, "evaluate", "assembly")
    timer.wrap(CoupledProblem, "max_step", "contact")
    timer.wrap(CoupledProblem, "solve_newton", "assembly")  # the tangent's blocks are summed there
    for name in ("solve", "factor_solve"):
        timer.wrap(ConstrainedSolver, name, "solve")
    return timer


def timed_run(n_fibers: int, n_elements: int, t_end: float, *, split: bool = False, progress: bool = False) -> dict:
    """The benchmark's motion with ``n_fibers`` × ``n_elements`` for ``t_end`` seconds: wall time and counts."""
    import elbow_bundle as eb

    setup = time.perf_counter()
    model, motion = eb.build_model(n_fibers, n_elements)
    motion.activation = lambda t: eb.smooth_step(t / 0.2)
    motion.angle = lambda t: math.radians(SPEED_DEG_S * t)
    setup = time.perf_counter() - setup
    counts = dict(steps=0, newton=0, retries=0, force=0.0)

    def record(state, info):
        counts["steps"] += 1
        counts["newton"] += info.newton_iterations
        counts["retries"] += info.retries
        counts["force"] = max(counts["force"], eb.muscle_force(model, state))
        if progress and info.step % 20 == 0:
            print(f"    t = {state.t:5.2f} s, {time.perf_counter() - start:7.1f} s wall", flush=True)

    timer = instrument() if split else None
    start = time.perf_counter()
    try:
        result = sf.simulate(model, t_end=t_end, dt=DT, callback=record, progress=False, store_every=10**9,
                             max_halvings=eb.MAX_HALVINGS, keep_substeps=eb.KEEP_SUBSTEPS,
                             newton_options=eb.newton_options(), on_interrupt="raise")
        wall = time.perf_counter() - start
    finally:
        if timer is not None:
            timer.restore()
    # every Newton iteration solves with a fresh tangent (full Newton): the tangents count the iterations of
    # the failed attempts as well, which the steps' counts leave out
    counts["newton_all"] = result.step_counts.tangent_builds
    out = dict(n_fibers=n_fibers, n_elements=n_elements, dofs=model.n_dofs, t_end=t_end, wall=wall, setup=setup,
               **counts)
    if timer is not None:
        split = {phase: timer.seconds[phase] for phase in ("contact", "assembly", "solve")}
        out["split"] = dict(split, other=wall - sum(split.values()))
    return out


def failed_iterations(run: dict) -> int:
    """The Newton iterations of a :func:`timed_run`'s failed attempts (those that split a step)."""
    return run["newton_all"] - run["newton"]


def fitted_exponent(sizes, walls) -> float:
    """p of wall ∝ N^p, least squares on the logarithms."""
    return float(np.polyfit(np.log(sizes), np.log(walls), 1)[0])


def main(argv: list[str] | None = None) -> dict:
    parser = ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--elements", type=positive_int, default=16, help="elements per fiber (default 16)")
    parser.add_argument("--time", type=positive_float, default=2.0,
                        help="simulated time of the 36-fiber run (s, default 2)")
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[9, 18, 36, 72, 144],
                        help="fiber counts of the scaling (default 9 18 36 72 144)")
    parser.add_argument("--scaling-time", type=positive_float, default=0.1,
                        help="simulated time per size (s, default 0.1)")
    parser.add_argument("--elastica-wall", type=nonnegative_float, default=300.0,
                        help="wall-time limit of the PyElastica run (s, default 300; 0: skip it)")
    parser.add_argument("--quick", action="store_true", help="small sizes and short runs (a smoke test)")
    args = parser.parse_args(argv)
    if args.elements < 1:
        parser.error(f"--elements must be ≥ 1, got {args.elements}")
    for name in ("time", "scaling_time"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            parser.error(f"--{name.replace('_', '-')} must be a finite number > 0 (s), got {value!r}")
    if len(set(args.sizes)) < 2 or min(args.sizes) < 2:
        parser.error(f"--sizes must be at least two different fiber counts ≥ 2 (for the fitted exponent), got "
                     f"{args.sizes}")
    if not (math.isfinite(args.elastica_wall) and args.elastica_wall >= 0):
        parser.error(f"--elastica-wall must be ≥ 0 (s; 0 skips PyElastica), got {args.elastica_wall!r}")
    if args.quick:
        args.elements, args.time, args.sizes, args.scaling_time = 4, 0.05, [4, 9], 0.03
        args.elastica_wall = min(args.elastica_wall, 5.0)
        print("quick: 9 fibers × 4 elements instead of 36 × 16 (a smoke test; bundle36_s is then the 9-fiber run)")
    n_main = 36 if not args.quick else 9
    print("warm-up (compiling the model's kernels) …", flush=True)
    timed_run(4, args.elements, 2 * DT)
    print(f"{n_main} fibers × {args.elements} elements, {args.time:g} s at {SPEED_DEG_S:g}°/s:", flush=True)
    main_run = timed_run(n_main, args.elements, args.time, split=True, progress=not args.quick)
    steps = max(main_run["steps"], 1)
    newton_mean = main_run["newton"] / steps
    per_iteration = {k: v / max(main_run["newton_all"], 1) for k, v in main_run["split"].items()}
    print(f"  {main_run['dofs']} d.o.f., wall {main_run['wall']:.1f} s (setup {main_run['setup']:.1f} s), "
          f"{steps} steps, {main_run['newton']} Newton iterations ({newton_mean:.2f} per step), "
          f"{main_run['retries']} step splits ({failed_iterations(main_run)} more Newton iterations in the "
          f"attempts that failed), peak force {main_run['force']:.1f} N")
    print(f"  per Newton iteration (all {main_run['newton_all']}): "
          + ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in per_iteration.items()))
    print(f"scaling, {args.scaling_time:g} s each:")
    walls = []
    for n in args.sizes:
        print(f"  N = {n:4d} …", flush=True)
        run = timed_run(n, args.elements, args.scaling_time, progress=n >= 72)
        walls.append(run["wall"])
        print(f"  N = {n:4d}: {run['dofs']:6d} d.o.f., wall {run['wall']:7.2f} s, {run['newton']} Newton iterations "
              f"+ {failed_iterations(run)} in {run['retries']} failed attempts, "
              f"{1e3 * run['wall'] / max(run['newton_all'], 1):.1f} ms per iteration", flush=True)
    exponent = fitted_exponent(args.sizes, walls)
    print(f"  fitted exponent of wall ∝ N^p: p = {exponent:.2f}")
    ordered = sorted(zip(args.sizes, walls))
    print("  between neighbouring sizes: " + ", ".join(
        f"{n0}→{n1} p = {fitted_exponent([n0, n1], [w0, w1]):.2f}"
        for (n0, w0), (n1, w1) in zip(ordered, ordered[1:]) if n1 != n0))
    elastica = None
    if args.elastica_wall > 0:
        elastica = run_elastica(n_main, args.elements, args.time, args.elastica_wall)
    print(f"summary: bundle36_s={main_run['wall']:.1f} scaling_exponent={exponent:.2f} newton_mean={newton_mean:.2f}")
    return dict(main=main_run, walls=walls, exponent=exponent, elastica=elastica)


def run_elastica(n_fibers: int, n_elements: int, t_end: float, wall_limit: float) -> dict | None:
    """The same bundle in PyElastica (Cosserat rods), or None when PyElastica is not installed."""
    import importlib.util

    if importlib.util.find_spec("elastica") is None:
        print("PyElastica is not installed (pip install pyelastica, or the bench extra): skipped")
        return None
    import elbow_bundle as eb
    from _elastica_bundle import neighbour_pairs, run_pyelastica_bundle

    model, _ = eb.build_model(n_fibers, n_elements)
    P = np.stack([f.curve(np.array([0.0, 0.5, 1.0])).T for f in model.fibers])
    starts, middles, ends = P[:, 0], P[:, 1], P[:, 2]
    law = eb.LAW
    pairs = neighbour_pairs(starts, ends, eb.radius, middles=middles)
    print(f"PyElastica: {n_fibers} rods × {n_elements} elements, {len(pairs)} contact pairs, wall limit "
          f"{wall_limit:g} s:", flush=True)
    out = run_pyelastica_bundle(starts, ends, middles=middles, radius=eb.radius, muscle_fraction=eb.muscle_fraction,
                                n_elements=n_elements, pairs=pairs, center=eb.ELBOW, axis=eb.AXIS,
                                angle=lambda t: math.radians(SPEED_DEG_S * t), t_end=t_end, density=eb.DENSITY,
                                mu_muscle=law["mu_muscle"], mu_tendon=law["mu_tendon"], s_max=law["s_max"],
                                lam_opt=law["lam_opt"], delta_w=law["delta_w"], nu=law["nu"],
                                activation=lambda t: eb.smooth_step(t / 0.2),
                                contact_stiffness=eb.FIBER_CONTACT["stiffness"], wall_limit_s=wall_limit,
                                progress=True)
    print(f"  reached t = {out['simulated_s']:.4g} s of {t_end:g} s ({out['reason']}) in {out['wall_s']:.1f} s: "
          f"{out['wall_per_simulated_s']:.0f} s of wall per simulated second, Δt = {out['dt']:.3g} s, "
          f"peak force {out['peak_force_N']:.1f} N; {out['notes']}")
    return out


if __name__ == "__main__":
    run_script(main)
