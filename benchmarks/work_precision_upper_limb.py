"""Work–precision of the upper-limb demo: backward Euler at fixed steps against error-controlled BDF2.

Runs ``demos/upper_limb.py`` at one level over ``t_end`` seconds and compares the elbow
angle of each run with a reference solution, then prints one line per run (error, CPU and
wall time, steps, rejected steps, Newton iterations, Newton retries) and a summary line.

The runs:

* the reference: fixed-step BDF2 with ``--ref-steps-per-s`` steps per second (default
  4096, i.e. Δt = 1/4096 s), checked against a run with twice its step (``--no-ref-check``
  skips it).  The difference bounds the coarser run's error; at second order the
  reference's own error would be a quarter of it, but the upper limb converges more slowly
  (``docs/performance.md``, "Upper limb with error control");
* backward Euler at the level's Table-5 step (8 s / 256 at level 1) times each factor of
  ``--euler-factors``.  The demo takes the first 1/8 s in substeps of at most
  ``start_dt`` = 1/256 s; ``--euler-start scaled`` (default) divides ``start_dt`` by the same
  factor, so that the whole run is refined; ``demo`` keeps 1/256 s (the error of the start
  transient then stays that of 1/256 s steps); ``none``: uniform steps from the start;
* backward Euler at the Table-5 step with a finer start only: ``start_dt`` = 1/256 s divided
  by each of ``--euler-start-divisors`` (the demo's start substeps as a hand-made step control);
* BDF2 with error control at each ``--rtols`` tolerance, ``atol = rtol × --atol-ratio``
  (output at the level's step times; the error control chooses the steps; no start
  substeps).

Notes
-----
The error of a run is the largest |angle − reference angle| (degrees) at the level's output
times (every 8 s / 256 at level 1; the reference is exact there, the run interpolated
linearly where it has no output), over the whole run (column "error") and over the times
after the start transient, t > 1/8 s (column "after").

Each run's cost is that of the stepping only: the wall time the demo reports
(``UpperLimbResult.wall_time``: without the model build, the throw-away first step and the
run checks) and the CPU time (``time.process_time``) of the :func:`skfiber.simulate` calls
after that first step, less that of the run checks.  The CPU time is the measure to compare
on a shared machine.

Fiber–fiber contact is off by default (the smooth model).  With ``--fiber-contact on`` (the
demo's default model) and the paper's gap the contact gap can jump and an adaptive run may stop;
such a run is printed with its error message, and a scheme without a run that reached the target
gives ``nan`` in the summary.  ``--contact-gap smallest`` takes the continuous gap in every run.

The summary line (one line)::

    summary: level=<L> t_end_s=<s> fiber_contact=<0|1> reference_steps=<n> reference_check_deg=<deg>
    target_deg=<deg> euler_cpu_s_at_target=<s> bdf2_cpu_s_at_target=<s> ratio_euler_over_bdf2=<x>
    euler_cpu_s_at_target_after_start=<s> bdf2_cpu_s_at_target_after_start=<s> ratio_after_start=<x>

``reference_steps``: the reference's steps over ``t_end``; ``reference_check_deg``: the
largest angle difference between the reference and the run with twice its step (``nan``
when skipped); ``euler_cpu_s_at_target`` and ``bdf2_cpu_s_at_target``: the smallest CPU time
of a backward-Euler run (any of them, also those with a finer start only) and of an
error-controlled BDF2 run whose error is at most ``--target`` degrees (``nan`` if none
reached it); ``ratio_euler_over_bdf2``: their ratio (> 1: error control is cheaper at that
accuracy); the ``…_after_start`` keys: the same with the error after the start transient.

The demo is imported from the checkout (``demos`` with the repository root on
``PYTHONPATH``), else from the installed ``skfiber.demos``.  The defaults (level 1 over
2 s) take one to two minutes on a 2-core VM; the paper's 8 s with finer lists take longer
(level 1, 8 s, the lists of ``docs/performance.md``: about 5 minutes).

Examples
--------
``python benchmarks/work_precision_upper_limb.py`` (level 1, 2 s, the defaults), or::

    python benchmarks/work_precision_upper_limb.py --level 1 --t-end 8 \
        --euler-factors 1 2 4 8 16 32 64 --euler-start-divisors 4 8 16 32 64 \
        --rtols 3e-2 1e-2 3e-3 1e-3 1e-4 --atol-ratio 0.01 --ref-steps-per-s 4096 --target 0.1
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings

import numpy as np

import skfiber
from skfiber.cli import ArgumentParser, positive_float, positive_int, run_script

try:   # the checkout's demos (PYTHONPATH with the repository root), else the installed ones
    from demos import upper_limb
except ImportError:   # pragma: no cover
    from skfiber.demos import upper_limb


@contextlib.contextmanager
def _timed_checks(check_cpu: list):
    """Add the CPU seconds of the demo's run checks (on the sampled states) to ``check_cpu[0]``."""
    original = upper_limb.History

    class History(original):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            checker = self.checker

            def timed(state):
                cpu = time.process_time()
                try:
                    return checker(state)
                finally:
                    check_cpu[0] += time.process_time() - cpu

            self.checker = timed

    upper_limb.History = History
    try:
        yield
    finally:
        upper_limb.History = original


@contextlib.contextmanager
def _recording_simulate(calls: list):
    """Record (CPU seconds, wall seconds, result) of every :func:`skfiber.simulate` call made inside the block."""
    original = skfiber.simulate

    def simulate(*args, **kwargs):
        cpu, wall = time.process_time(), time.perf_counter()
        result = None
        try:
            result = original(*args, **kwargs)
        finally:   # also the CPU time of a call that stopped
            calls.append((time.process_time() - cpu, time.perf_counter() - wall, result))
        return result

    skfiber.simulate = simulate
    try:
        yield
    finally:
        skfiber.simulate = original


def timed_run(level: int, t_end: float, **options) -> dict:
    """One run of the demo and its cost.

    Parameters
    ----------
    level
        The demo's level (1–4).
    t_end
        Simulated time, s.
    **options
        Passed to ``upper_limb.run`` (``method``, ``rtol``, ``atol``, ``n_steps``, ``start_dt``,
        ``fiber_contact``, …).

    Returns
    -------
    dict
        ``result`` (the ``UpperLimbResult``; None if the run stopped), ``stopped`` (the error
        message of a run that stopped, else None), ``wall_s`` (the stepping; of a stopped run:
        its simulate calls), ``cpu_s`` (the stepping, without the run checks), ``steps``
        (accepted steps, substeps counted), ``rejected`` (by the error test; adaptive runs
        only), ``newton`` (Newton iterations) and ``retries`` (Newton failures redone with a
        smaller step).
    """
    calls: list = []
    check_cpu = [0.0]
    stopped = None
    with _recording_simulate(calls), _timed_checks(check_cpu), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # softening warnings: the runs are compared, not checked
        try:
            result = upper_limb.run(level, t_end=t_end, progress=False, **options)
        except (skfiber.ConvergenceError, RuntimeError) as error:
            result, stopped = None, f"{type(error).__name__}: {error}"
    if result is not None and result.interrupted:  # Ctrl-C: a part of the run is no measurement; stop
        raise KeyboardInterrupt
    steps_calls = calls[1:]   # the first call is the demo's throw-away step
    counts = [c.step_counts for _, _, c in steps_calls if getattr(c, "step_counts", None) is not None]
    done = [c for _, _, c in steps_calls if c is not None]
    out = dict(result=result, stopped=stopped, cpu_s=sum(cpu for cpu, _, _ in steps_calls) - check_cpu[0],
               wall_s=result.wall_time if result is not None else sum(wall for _, wall, _ in steps_calls))
    if counts:
        out.update(steps=sum(c.accepted for c in counts), rejected=sum(c.rejected for c in counts),
                   newton=sum(c.newton_iterations for c in counts), retries=sum(c.newton_failures for c in counts))
    else:
        out.update(steps=sum(len(c.newton_iterations) for c in done), rejected=0,
                   newton=int(sum(int(np.sum(c.newton_iterations)) for c in done)),
                   retries=sum(int(c.retries) for c in done))
    return out


def angle_error(run, reference, times: np.ndarray) -> float:
    """Largest |elbow angle of ``run`` − of ``reference``| (deg) at ``times``.

    Parameters
    ----------
    run, reference
        Results with ``times`` and ``angle_deg``, interpolated linearly at ``times``.
    times
        The comparison times, s.

    Returns
    -------
    float
        The largest difference, degrees.
    """
    a = np.interp(times, run.times, run.angle_deg)
    b = np.interp(times, reference.times, reference.angle_deg)
    return float(np.abs(a - b).max())


def main(argv: list[str] | None = None) -> dict:
    """Run the comparison and print its table and summary line.

    Parameters
    ----------
    argv
        The command-line arguments (None: ``sys.argv[1:]``); ``--help`` lists them.

    Returns
    -------
    dict
        ``rows`` (one dict of :func:`timed_run` per run, with ``scheme``, ``setting``, ``error``
        and ``after`` added), ``reference`` (the reference's) and ``check`` (the reference check, deg).
    """
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=1, choices=sorted(upper_limb.LEVELS),
                        help="refinement level of the mesh (default 1)")
    parser.add_argument("--t-end", type=positive_float, default=2.0,
                        help="simulated time in s (default 2; the paper: 8)")
    parser.add_argument("--ref-steps-per-s", type=positive_int, default=4096,
                        help="steps per second of the fixed-step BDF2 reference (default 4096)")
    parser.add_argument("--no-ref-check", action="store_true",
                        help="skip the run with twice the reference's step (its convergence check)")
    parser.add_argument("--euler-start", choices=["scaled", "demo", "none"], default="scaled",
                        help="backward Euler's start substeps: start_dt = 1/256 s divided by the factor (scaled, "
                             "default), 1/256 s (demo), none")
    parser.add_argument("--euler-factors", type=positive_int, nargs="+", default=[1, 2, 4, 8, 16, 32],
                        help="backward Euler with these multiples of the level's Table-5 steps (default 1 2 4 8 16 32)")
    parser.add_argument("--euler-start-divisors", type=positive_int, nargs="*", default=[8, 32],
                        help="backward Euler at the Table-5 step, the start substeps 1/256 s divided by these "
                             "(default 8 32; none: skip)")
    parser.add_argument("--rtols", type=positive_float, nargs="+", default=[3e-2, 1e-2, 1e-3],
                        help="relative tolerances of the adaptive BDF2 runs (default 3e-2 1e-2 1e-3)")
    parser.add_argument("--atol-ratio", type=positive_float, default=0.01, help="atol = rtol × this (default 0.01)")
    parser.add_argument("--fiber-contact", choices=["on", "off"], default="off",
                        help="fiber–fiber contact (default off: the smooth model)")
    parser.add_argument("--contact-gap", choices=["closest_point", "smallest"], default="closest_point",
                        help="gap of fiber–fiber contact in every run (default: the paper's closest_point; smallest "
                             "is continuous, which error control needs)")
    parser.add_argument("--target", type=positive_float, default=0.1,
                        help="the accuracy of the summary, deg (default 0.1)")
    parser.add_argument("--newton-rtol", type=positive_float, default=1e-9,
                        help="Newton's relative tolerance of every run (default 1e-9, the library's; the demo's "
                             "default at fixed steps is 1e-5)")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.t_end) and args.t_end > 0):
        parser.error(f"--t-end must be a finite time > 0 in s, got {args.t_end}")
    level, t_end = args.level, args.t_end
    contact = args.fiber_contact == "on"
    if not 0 < args.newton_rtol < 1:
        parser.error(f"--newton-rtol must lie in (0, 1), got {args.newton_rtol}")
    # one Newton tolerance for every run (the demo's default depends on the scheme)
    model = dict(fiber_contact=contact, contact_gap=args.contact_gap, newton_rtol=args.newton_rtol)
    ne, nt5 = upper_limb.LEVELS[level]
    nt = max(1, int(round(nt5 * t_end / upper_limb.T_END)))   # the level's steps over t_end
    times = np.linspace(0.0, t_end, nt + 1)
    late = times[times > upper_limb.START_TIME + 1e-12]
    if late.size == 0:
        late = times[-1:]
    print(f"upper limb (demo {upper_limb.__file__}), level {level} ({ne} elements per fiber), t_end = {t_end:g} s, "
          f"fiber–fiber contact {'on' if contact else 'off'}; errors at the {nt + 1} times of the level's "
          f"step {t_end / nt:.6g} s", flush=True)

    n_ref = max(1, int(round(args.ref_steps_per_s * t_end)))
    rows = []

    def show(row):
        print(f"{row['scheme']:<8} {row['setting']:<26} {row['error']:>10.4g} {row['after']:>9.4g} "
              f"{row['cpu_s']:>9.2f} "
              f"{row['wall_s']:>9.2f} {row['steps']:>8d} {row['rejected']:>6d} {row['newton']:>8d} "
              f"{row['retries']:>5d}" + (f"  {row['stopped']}" if row['stopped'] else ""), flush=True)

    print(f"{'scheme':<8} {'setting':<26} {'error [°]':>10} {'after':>9} {'CPU [s]':>9} {'wall [s]':>9} {'steps':>8} "
          f"{'rej.':>6} {'Newton':>8} {'retr.':>5}", flush=True)
    ref = timed_run(level, t_end, method="bdf2", n_steps=n_ref, **model)
    if ref["result"] is None:
        raise SystemExit(f"the reference stopped: {ref['stopped']}")
    reference = ref["result"]
    check = float("nan")
    if not args.no_ref_check:
        coarse = timed_run(level, t_end, method="bdf2", n_steps=max(1, n_ref // 2), **model)
        if coarse["result"] is not None:
            check = angle_error(coarse["result"], reference, times)
            coarse.update(scheme="bdf2", setting=f"check: {max(1, n_ref // 2)} steps", error=check,
                          after=angle_error(coarse["result"], reference, late))
            rows.append(coarse)
    ref.update(scheme="bdf2", setting=f"reference: {n_ref} steps", error=0.0, after=0.0)
    show(ref)
    if not args.no_ref_check and coarse["result"] is not None:
        show(coarse)
    def scored(run: dict, scheme: str, setting: str) -> None:
        """Label a run and add its largest angle errors (whole run, after the start) against the reference."""
        ok = run["result"] is not None
        run.update(scheme=scheme, setting=setting,
                   error=angle_error(run["result"], reference, times) if ok else math.nan,
                   after=angle_error(run["result"], reference, late) if ok else math.nan)

    for factor in args.euler_factors:
        start_dt = dict(scaled=upper_limb.START_DT / factor, demo=upper_limb.START_DT, none=None)[args.euler_start]
        run = timed_run(level, t_end, method="euler", n_steps=factor * nt, **model, start_dt=start_dt)
        scored(run, "euler", f"{factor} × {nt} steps")
        rows.append(run)
        show(run)
    for divisor in args.euler_start_divisors:
        start_dt = upper_limb.START_DT / divisor
        run = timed_run(level, t_end, method="euler", n_steps=nt, **model, start_dt=start_dt)
        scored(run, "euler", f"{nt} steps, start 1/{round(1 / start_dt)} s")
        rows.append(run)
        show(run)
    for rtol in args.rtols:
        atol = rtol * args.atol_ratio
        run = timed_run(level, t_end, method="bdf2", rtol=rtol, atol=atol, **model)
        scored(run, "bdf2-ec", f"rtol {rtol:g}, atol {atol:g}")
        rows.append(run)
        show(run)

    def best(scheme, key="error"):
        cpus = [r["cpu_s"] for r in rows if r["scheme"] == scheme and r[key] <= args.target]
        return min(cpus) if cpus else math.nan

    euler, bdf2 = best("euler"), best("bdf2-ec")
    euler_after, bdf2_after = best("euler", "after"), best("bdf2-ec", "after")
    print(f"summary: level={level} t_end_s={t_end:g} fiber_contact={int(contact)} reference_steps={n_ref} "
          f"reference_check_deg={check:.3g} target_deg={args.target:g} euler_cpu_s_at_target={euler:.3g} "
          f"bdf2_cpu_s_at_target={bdf2:.3g} ratio_euler_over_bdf2={euler / bdf2:.3g} "
          f"euler_cpu_s_at_target_after_start={euler_after:.3g} bdf2_cpu_s_at_target_after_start={bdf2_after:.3g} "
          f"ratio_after_start={euler_after / bdf2_after:.3g}", flush=True)
    return dict(rows=rows, reference=ref, check=check)


if __name__ == "__main__":
    run_script(main)
