"""Timing of the upper-limb model (paper §5.4, Table 5) at levels 1–4.

Runs ``demos/upper_limb.py`` (8/16/32/64 elements per fiber, 256/512/1024/2048
backward-Euler steps over 8 s) and prints per level: wall time, the paper's
d.o.f. count, Newton unknowns, Newton iterations (mean/max), retries, the
ratio to the paper's MATLAB timings (66.0, 281.3, 958.2, 5579.6 s on a
Ryzen 7 3700X), and the largest elbow-angle difference between levels 3 and 4.

Newton's tolerance is the demo's (``--newton-rtol`` sets another, e.g. 1e-9, the library's default).

With ``--bending EI`` (default 1e-4 N·m²; 0: skip) it also runs level 1 with the
bending form added as a user term (``demos/upper_limb.py --bending``), right after
the plain level-1 run, and prints the ratio of the two wall times: the cost of a
user term in the compiled path.

Run: ``python benchmarks/bench_upper_limb.py [--levels 1 2 3 4] [--bending EI] [--newton-rtol R]``.  Ends with
``summary: level1_s=<s> level2_s=<s> level3_s=<s> level4_s=<s> max_angle_diff_l3_l4_deg=<deg>
ff_contacts_max=<n> level1_bending_s=<s> bending_ratio=<x>`` (``nan`` for what was not run).  Each run makes one throw-away step first, which
compiles the numba kernels on a first run on the machine (or loads them from the
cache); its time is printed separately and is not in the wall times.
"""
from __future__ import annotations

import math

import numpy as np

from skfiber.cli import ArgumentParser, nonnegative_float, positive_float, run_script
from skfiber.demos import upper_limb


def main(argv: list[str] | None = None) -> dict:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3, 4], choices=sorted(upper_limb.LEVELS),
                        help="refinement levels to time (default 1 2 3 4)")
    parser.add_argument("--progress", action="store_true", help="show progress lines of each run")
    parser.add_argument("--fiber-contact", choices=["on", "off"], default="on",
                        help="fiber–fiber contact (default on, as the demo; off: the paper's Table 5 comparison "
                             "as measured before the contact was compiled)")
    parser.add_argument("--bending", type=nonnegative_float, default=1e-4, metavar="EI",
                        help="also run level 1 with a bending term EI (N·m², default 1e-4; 0: skip)")
    parser.add_argument("--newton-rtol", type=positive_float, default=None, metavar="R",
                        help="Newton's relative tolerance (default: the demo's, 1e-5 at its fixed steps; 1e-9 was "
                             "the default before)")
    args = parser.parse_args(argv)
    if args.newton_rtol is not None and not 0 < args.newton_rtol < 1:
        parser.error(f"--newton-rtol must lie in (0, 1), got {args.newton_rtol}")
    if not (math.isfinite(args.bending) and args.bending >= 0):
        parser.error(f"--bending must be finite and >= 0 (N·m²), got {args.bending}")
    results = {}
    bent = None
    for level in args.levels:
        ne, nt = upper_limb.LEVELS[level]
        print(f"level {level}: {ne} elements per fiber, {nt} steps …", flush=True)
        results[level] = upper_limb.run(level, progress=args.progress, fiber_contact=args.fiber_contact == "on",
                                        newton_rtol=args.newton_rtol)
        r = results[level]
        if r.interrupted:  # Ctrl-C: a part of the run is no measurement; stop
            raise KeyboardInterrupt
        print(f"  warm-up step (numba kernels compiled on a first run, else loaded): {r.warmup_time:.2f} s", flush=True)
        its = np.asarray(r.newton_iterations)
        ff = int(r.checks.fiber_contacts.max()) if r.checks is not None else 0
        print(f"  fiber–fiber contact points active: at most {ff}", flush=True)
        print(f"  wall {r.wall_time:.2f} s, d.o.f. {r.dofs}, unknowns {r.unknowns}, Newton {its.mean():.2f}/{its.max()} "
              f"(mean/max), retries {r.retries}, paper {upper_limb.PAPER_TABLE5[level][1]} s "
              f"(ratio {upper_limb.PAPER_TABLE5[level][1] / r.wall_time:.1f}×), Newton to ‖G‖ ≤ {r.newton_rtol:g} × "
              "the largest force", flush=True)
        if level == 1 and args.bending > 0:
            bent = upper_limb.run(1, progress=args.progress, bending=args.bending,
                                  fiber_contact=args.fiber_contact == "on", newton_rtol=args.newton_rtol)
            if bent.interrupted:
                raise KeyboardInterrupt
            print(f"  with bending EI = {args.bending:g} N·m²: warm-up {bent.warmup_time:.2f} s, wall "
                  f"{bent.wall_time:.2f} s ({bent.wall_time / r.wall_time:.2f}× the run without)", flush=True)
    print(upper_limb.report(list(results.values())))
    diff = math.nan
    if 3 in results and 4 in results:
        a, b = results[3], results[4]
        diff = upper_limb.angle_difference(a, b)
        print(f"largest elbow-angle difference between levels 3 and 4 (at level 3's times): {diff:.3f} deg; "
              f"attachment forces within {100 * upper_limb.force_difference(a, b):.2f} % "
              f"({100 * upper_limb.force_difference(a, b, since=0.1):.2f} % from t = 0.1 s on)")
    secs = {k: (results[k].wall_time if k in results else math.nan) for k in (1, 2, 3, 4)}
    bent_s = bent.wall_time if bent is not None else math.nan
    ratio = bent_s / secs[1] if bent is not None and 1 in results else math.nan
    ff_max = max((int(r.checks.fiber_contacts.max()) for r in results.values() if r.checks is not None), default=0)
    print(f"summary: level1_s={secs[1]:.2f} level2_s={secs[2]:.2f} level3_s={secs[3]:.2f} "
          f"level4_s={secs[4]:.2f} max_angle_diff_l3_l4_deg={diff:.3f} ff_contacts_max={ff_max} "
          f"level1_bending_s={bent_s:.2f} bending_ratio={ratio:.2f}")
    return results


if __name__ == "__main__":
    run_script(main)
