"""A bundle of fibers, fixed at both ends, sagging under gravity (dynamic).
========================================================================

Three straight fibers of 1 m, side by side, with the material of the
paper's Table 1 (ρ0 = 900 kg/m³, μM = 1e5, μT = 1e6 Pa, ηM = ηT = 1e4 Pa·s,
σ0 = 30 Pa, Smax = 3e5 Pa, r0 = 0.05 m, γM(θ) = 16 (1 − θ)² θ²: tendon at the
ends, muscle in the middle) hang between fixed ends.  Gravity (body force
b0 = ρ0 g per reference volume) is switched on at t = 0, the fibers fall,
overshoot and settle, damped by the viscosity, towards the static
equilibrium (computed with :func:`skfiber.solve_static` for comparison).  The fibers differ only in
their constant activation α = 0, 0.05, 0.1: active stress tightens a fiber,
so it sags less.  Fibers do not touch each other (no contact in the model).

The run goes through :func:`skfiber.run.run_simulation`: a VTK series
(``hanging_bundle.pvd``) for ParaView with checkpoints, resumable with
``--resume``.  Level N uses 8·2^(N−1) elements per fiber and
Δt = 0.01/2^(N−1) s.

Run ``python demos/hanging_bundle.py --out results/bundle`` or
``skfiber run hanging-bundle --out results/bundle``; view with
``skfiber view results/bundle/hanging_bundle.pvd --screenshot bundle.png``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, folder_path, output_folder, positive_float, positive_int, run_script
from skfiber.io import load_checkpoint, read_pvd, read_vtu
from skfiber.progress import PROGRESS_TERMS
from skfiber.run import RunResult, checkpoint_path, run_simulation

__all__ = ["build_model", "HangingBundleResult", "run", "main"]

LENGTH = 1.0  # m
RADIUS = 0.05  # r0 (m), Table 1
SPACING = 0.15  # distance between fiber axes (m)
ACTIVATIONS = (0.0, 0.05, 0.1)
NAME = "hanging_bundle"  # series name: hanging_bundle.pvd
#: the finest level: 1,024 elements a fiber and 6,400 steps over the default 0.5 s
MAX_LEVEL = 8


def table1_muscle_fraction(theta):
    """γM(θ) = 16 (1 − θ)² θ² (Table 1)."""
    theta = np.asarray(theta, dtype=float)
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def build_model(level: int = 1, *, activations=ACTIVATIONS) -> sf.Model:
    """The bundle at refinement ``level`` (8·2^(level−1) elements per fiber)."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 1:
        raise ValueError(f"level must be an integer ≥ 1, got {level!r}")
    n_elements = 8 * 2 ** (level - 1)
    law = sf.paper_law()  # Table 1
    fibers = [
        sf.Fiber.straight(
            (0.0, k * SPACING, 0.0), (LENGTH, k * SPACING, 0.0), n_elements=n_elements,
            radius=RADIUS, density=900.0, law=law, muscle_fraction=table1_muscle_fraction,
            activation=float(alpha), name=f"fiber{k}",
        )
        for k, alpha in enumerate(activations)
    ]
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start")
        model.fix(f, "end")
    model.add_gravity()
    return model


def time_step(level: int) -> float:
    return 0.01 / 2 ** (level - 1)


def sags(model: sf.Model, state: sf.State) -> np.ndarray:
    """Largest downward displacement of each fiber (m), at the points the VTK output samples."""
    d = model.discretization
    theta = np.linspace(0.0, 1.0, 4 * model.fibers[0].n_elements + 1)
    return np.array([0.0 - d.evaluate(state.u, k, theta)[2].min() for k in range(len(d.fibers))])


def sags_from_series(pvd: Path, n_fibers: int, *, until: float) -> tuple[list, list]:
    """Times and sags of the steps of a written series up to ``until`` (from ``displacement``)."""
    times, history = [], []
    for entry in read_pvd(pvd):
        if entry.part != 0 or entry.time > until:
            continue
        try:
            mesh = read_vtu(pvd.parent / entry.file)
        except (OSError, ValueError) as err:
            raise type(err)(f"{err}; --resume rebuilds the sag history before the checkpoint from the series: "
                            "run again without --resume") from err
        fid, z = mesh.point_data["fiber_id"], mesh.point_data["displacement"][:, 2]
        times.append(entry.time)
        history.append(np.array([0.0 - z[fid == k].min() for k in range(n_fibers)]))
    return times, history


@dataclass
class HangingBundleResult:
    """Sag history and the run.

    Attributes
    ----------
    times : s
    sag : (n_times, n_fibers) largest downward displacement of each fiber (m)
    static_sag : (n_fibers,) sag of the static equilibrium (:func:`skfiber.solve_static`),
        which the damped motion approaches
    run : the :class:`skfiber.run.RunResult`
    """

    times: np.ndarray
    sag: np.ndarray
    static_sag: np.ndarray
    run: RunResult

    @property
    def max_sag(self) -> float:
        return float(self.sag.max())

    @property
    def final_sag(self) -> np.ndarray:
        return self.sag[-1]


def run(
    *,
    level: int = 1,
    out: str | None = None,
    t_end: float = 0.5,
    checkpoint_every: int | None = 50,
    resume: bool = False,
    progress: bool = True,
    points_per_element: int = 4,
) -> HangingBundleResult:
    """Run the demo; with ``out`` a VTK series ``hanging_bundle.pvd`` is written there."""
    model = build_model(level)
    # (a resume with another level, or other VTK samples, is refused by name)
    options = {"level": level, "points_per_element": points_per_element}
    if resume:  # the history before the checkpoint comes back from the VTK series
        if out is None:
            raise ValueError("resume needs out (the folder with the checkpoint)")
        checkpoint = load_checkpoint(checkpoint_path(out, NAME))
        # options an earlier version did not record are not checked (the model's fingerprint checks the level)
        options = {key: value for key, value in options.items() if key in checkpoint.options} or None
        t_checkpoint = checkpoint.state.t
        times, history = sags_from_series(Path(out) / f"{NAME}.pvd", len(model.fibers), until=t_checkpoint)
    else:
        times, history = [0.0], [sags(model, model.initial_state())]

    def record(state, info):
        times.append(state.t)
        history.append(sags(model, state))

    result = run_simulation(
        model, t_end=t_end, dt=time_step(level), out_dir=out, name=NAME,
        checkpoint_every=checkpoint_every if out is not None else None, resume=resume,
        progress=progress, points_per_element=points_per_element, callback=record,
        options=options,
    )
    static = sf.solve_static(model, load_steps=10).state
    return HangingBundleResult(np.array(times), np.array(history), sags(model, static), result)


def main(argv=None) -> int:
    parser = ArgumentParser(
        description=__doc__.splitlines()[0], epilog=PROGRESS_TERMS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--level", type=positive_int, default=1,
                        help=f"refinement level N = 1 … {MAX_LEVEL}: 8·2^(N−1) elements per fiber, "
                             "Δt = 0.01/2^(N−1) s (default 1)")
    parser.add_argument("--out", type=folder_path, default=None,
                        help="output folder for the VTK series hanging_bundle.pvd and the checkpoint (default: no files)")
    parser.add_argument("--t-end", type=positive_float, default=0.5, help="end time in s (default 0.5)")
    parser.add_argument("--checkpoint-every", type=positive_int, default=50, help="save the full state every K steps (default 50)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    parser.add_argument("--points-per-element", type=positive_int, default=4, help="polyline samples per element in the VTK output (default 4)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if not 1 <= args.level <= MAX_LEVEL:
        parser.error(f"--level must be 1 … {MAX_LEVEL} (level {MAX_LEVEL}: {8 * 2 ** (MAX_LEVEL - 1)} elements "
                     f"a fiber, {round(0.5 / time_step(MAX_LEVEL))} steps over 0.5 s), got {args.level}")
    if args.resume and args.out is None:
        parser.error("--resume needs --out (the folder with the checkpoint)")
    if args.resume and not checkpoint_path(args.out, NAME).is_file():
        parser.error(f"--resume: no checkpoint at {checkpoint_path(args.out, NAME)}; run without --resume first")
    if args.out is not None:
        output_folder(parser, "--out", args.out)
    tic = time.perf_counter()
    res = run(
        level=args.level, out=args.out, t_end=args.t_end, checkpoint_every=args.checkpoint_every,
        resume=args.resume, progress=not args.no_progress, points_per_element=args.points_per_element,
    )
    wall = time.perf_counter() - tic
    print(f"hanging bundle, level {args.level}: {len(ACTIVATIONS)} fibers, "
          f"{8 * 2 ** (args.level - 1)} elements each, dt = {time_step(args.level):g} s")
    print("   t (s)  " + "  ".join(f"sag a={a:<4g} (m)" for a in ACTIVATIONS))
    stride = max(1, len(res.times) // 10)
    rows = list(range(0, len(res.times), stride))
    if rows[-1] != len(res.times) - 1:
        rows.append(len(res.times) - 1)
    for i in rows:
        print(f"{res.times[i]:8.4f}  " + "  ".join(f"{s:16.5f}" for s in res.sag[i]))
    print("  static  " + "  ".join(f"{s:16.5f}" for s in res.static_sag) + "   (equilibrium, solve_static)")
    if res.run.pvd is not None:
        print(f"VTK series: {res.run.pvd}")
    if res.run.interrupted and res.run.checkpoint is not None and res.run.checkpoint.is_file():
        print(f"interrupted: its checkpoint is {res.run.checkpoint}; continue with the same options and --resume")
    print(
        f"summary: max_sag_m={res.max_sag:.5f} final_sag_m={res.final_sag.max():.5f} "
        f"steps={res.run.steps} newton={res.run.newton_iterations} wall_s={wall:.2f}"
        + (f" resumed_from_step={res.run.resumed_from}" if res.run.resumed_from is not None else "")
        + (f" interrupted_at_s={res.times[-1]:.4g} interrupted=1" if res.run.interrupted else "")
    )
    return 130 if res.run.interrupted else 0


if __name__ == "__main__":
    run_script(main)
