"""Timings of the cable core: residual, tangent, Newton iteration, and a long run.

Prints ms per residual, per tangent and per Newton iteration (assemble + solve)
for one fiber with Ne = 8 … 2048 and for 5 fibers × 64 elements, then the wall
time of 5 fibers × 64 elements × 2048 backward-Euler steps (ends fixed, body
load 10 g, Table 1 material, T = 8 s as the paper's level 4: Δt = 3.9 ms).

Run: ``python benchmarks/bench_cable.py [--quick]``.  Ends with
``summary: be_5x64x2048_s=<seconds>`` (``be_5x64x256_s`` with ``--quick``: 256 steps).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, run_script
from skfiber.linalg import ConstrainedSolver


def gamma_m(theta):
    return 16 * (1 - theta) ** 2 * theta**2


def make_model(n_fibers: int, n_elements: int) -> sf.Model:
    law = sf.paper_law()
    fibers = [
        sf.Fiber.straight((0, 0.2 * k, 0), (1, 0.2 * k, 0), n_elements=n_elements, law=law, muscle_fraction=gamma_m, activation=0.1)
        for k in range(n_fibers)
    ]
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start")
        model.fix(f, "end")
    model.add_gravity((0.0, 0.0, -98.1))
    return model


def median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def kernel_timings(n_fibers: int, n_elements: int, repeat: int) -> dict:
    model = make_model(n_fibers, n_elements)
    rng = np.random.default_rng(0)
    n = model.n_dofs
    u = 1e-3 * rng.standard_normal(n)
    v = 1e-3 * rng.standard_normal(n)
    solver = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
    kw = dict(c_v=256.0, c_a=256.0**2)

    def residual():
        return model.evaluate(u, v, v, 0.1, **kw).residual

    def tangent():
        return model.evaluate(u, v, v, 0.1, **kw).element_matrices

    def iteration():
        ev = model.evaluate(u, v, v, 0.1, **kw)
        return solver.solve(ev.element_matrices, -ev.residual, ev.extra)

    return dict(
        dofs=n,
        residual_ms=median_ms(residual, repeat),
        tangent_ms=median_ms(tangent, repeat),
        iteration_ms=median_ms(iteration, repeat),
    )


def long_run(n_steps: int) -> tuple[float, float, int]:
    model = make_model(5, 64)
    t0 = time.perf_counter()
    result = sf.simulate(model, t_end=8.0 * n_steps / 2048, dt=8.0 / 2048, progress=False, on_interrupt="raise")
    wall = time.perf_counter() - t0
    return wall, float(np.mean(result.newton_iterations)), model.n_dofs


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and 256 instead of 2048 steps")
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else 21
    print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, cores={os.cpu_count()}")
    print(f"{'case':>14} {'dofs':>7} {'residual ms':>12} {'tangent ms':>11} {'Newton it ms':>13}")
    cases = [(1, ne) for ne in (8, 32, 128, 512, 2048)] + [(5, 64)]
    for nf, ne in cases:
        r = kernel_timings(nf, ne, repeat)
        print(f"{f'{nf} x {ne}':>14} {r['dofs']:>7} {r['residual_ms']:>12.3f} {r['tangent_ms']:>11.3f} {r['iteration_ms']:>13.3f}")
    n_steps = 256 if args.quick else 2048
    wall, its, dofs = long_run(n_steps)
    print(f"backward Euler, 5 fibers x 64 elements ({dofs} dofs), {n_steps} steps of 3.9 ms: "
          f"{wall:.2f} s, {its:.2f} Newton iterations per step, {1e3 * wall / n_steps:.2f} ms per step")
    print(f"summary: be_5x64x{n_steps}_s={wall:.2f}")


if __name__ == "__main__":
    run_script(main)
