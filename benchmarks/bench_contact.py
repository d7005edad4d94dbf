"""Timing of the fiber–fiber contact: residual + tangent for packed bundles.

Bundles of N = 5, 50, 500 straight fibers (1 m, r0 = 0.05 m, 16 elements,
5 contact points per element) in hexagonal packing — the N lattice sites
nearest to the axis — with axis distance 0.98 · 2 r0, so that neighbours
overlap slightly (g = −0.02: every neighbour pair is in contact along its
whole length; an inner fiber has 6 neighbours).  The state is the reference
configuration plus a random displacement of 1e-4 m.  Timed: one
``FiberContact.evaluate`` (broad phase, closest points, residual, tangent
blocks), median of several calls after a warm-up call that also builds the
cached reference data; ``max_step`` is timed too.

The cost should grow like N (N log N at worst: the broad phase sorts the
elements' boxes); the fitted exponent of time ∝ N^p is printed.

Run: ``python benchmarks/bench_contact.py [--repeat R]``.  Ends with
``summary: scaling_exponent=<p>``.
"""
from __future__ import annotations

import time

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, positive_int, run_script
from skfiber.contact import PenaltyLaw
from skfiber.contact.fibers import FiberContact

RADIUS = 0.05
N_ELEMENTS = 16
SIZES = (5, 50, 500)


def hexagonal_sites(n: int, spacing: float) -> np.ndarray:
    """The n sites of a hexagonal lattice nearest to the origin, (n, 2)."""
    m = int(np.ceil(np.sqrt(n))) + 2
    i, j = np.meshgrid(np.arange(-m, m + 1), np.arange(-m, m + 1))
    p = np.stack([i + 0.5 * j, np.sqrt(3) / 2 * j], axis=-1).reshape(-1, 2) * spacing
    order = np.lexsort((p[:, 1], p[:, 0], np.round(np.linalg.norm(p, axis=1), 9)))
    return p[order[:n]]


def make_bundle(n_fibers: int, *, overlap: float = 0.02):
    law = sf.prestress(100.0)
    sites = hexagonal_sites(n_fibers, 2 * RADIUS * (1 - overlap))
    fibers = [sf.Fiber.straight((0.0, y, z), (1.0, y, z), n_elements=N_ELEMENTS, radius=RADIUS, law=law)
              for y, z in sites]
    return sf.Model(fibers), FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def run(repeat: int = 5) -> dict:
    rows = []
    for n in SIZES:
        model, contact = make_bundle(n)
        rng = np.random.default_rng(0)
        u = 1e-4 * rng.standard_normal(model.n_dofs)
        du = 1e-3 * rng.standard_normal(model.n_dofs)
        t0 = time.perf_counter()
        ev = contact.evaluate(model, u, 0.0)  # warm-up: builds the cached reference data
        first = time.perf_counter() - t0
        reps = max(1, repeat if n < 500 else (repeat + 1) // 2)
        t_eval = median_seconds(lambda: contact.evaluate(model, u, 0.0), reps)
        t_res = median_seconds(lambda: contact.evaluate(model, u, 0.0, tangent=False), reps)
        t_step = median_seconds(lambda: contact.max_step(model, u, du, 0.0, delta_bar=0.25), reps)
        rows.append(dict(n=n, points=model.discretization.element_fiber.size * contact.quadrature_points,
                         active=ev.n_active, entries=ev.values.size, first=first, eval=t_eval,
                         residual=t_res, max_step=t_step))
    n = np.array([r["n"] for r in rows], dtype=float)
    t = np.array([r["eval"] for r in rows])
    exponent = float(np.polyfit(np.log(n), np.log(t), 1)[0])
    return dict(rows=rows, exponent=exponent)


def main(argv=None) -> dict:
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=positive_int, default=5,
                        help="timed calls per size, their median reported (default 5)")
    args = parser.parse_args(argv)
    out = run(args.repeat)
    print(f"fiber–fiber contact, hexagonal bundles × {N_ELEMENTS} elements, 5 contact points per element, g = −0.02")
    print(f"{'fibers':>7} {'points':>8} {'active':>8} {'COO entries':>12} {'first (s)':>10} "
          f"{'res+tan (ms)':>13} {'res only (ms)':>14} {'max_step (ms)':>14} {'µs/point':>9}")
    for r in out["rows"]:
        print(f"{r['n']:>7} {r['points']:>8} {r['active']:>8} {r['entries']:>12} {r['first']:>10.3f} "
              f"{1e3 * r['eval']:>13.1f} {1e3 * r['residual']:>14.1f} {1e3 * r['max_step']:>14.1f} "
              f"{1e6 * r['eval'] / r['points']:>9.1f}")
    print(f"fitted time ∝ N^p (residual + tangent): p = {out['exponent']:.3f} (target ≤ 1.2)")
    print(f"summary: scaling_exponent={out['exponent']:.3f}")
    return out


if __name__ == "__main__":
    run_script(main)
