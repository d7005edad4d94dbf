r"""Calibration of the fiber model: find Smax of the biceps and of the triceps from the elbow-angle curve.
======================================================================================================

A run with hidden parameters (the maximal active stresses Smax of the biceps and of the
triceps, different from Table 4) gives the target curve: the elbow angle over time.  Starting from the middle of
the parameters' ranges, :func:`skfiber.study.calibrate` fits them by least squares
(``scipy.optimize.least_squares``, trust-region reflective within the ranges); the runs of
each finite-difference Jacobian go to a local dask cluster as one batch (``--serial``: in
this process).  A recovered pair equal to the hidden one, with the residual at round-off,
shows that the angle curve determines both parameters and that the chain works.

Run: ``python demos/calibrate.py [--t-end T] [--serial] [--workers K]``.
Ends with ``summary: smax_biceps=… smax_triceps=… biceps_error=… triceps_error=… residual_deg=… runs=… wall_s=…``.
"""
from __future__ import annotations

import time

from skfiber.cli import ArgumentParser, positive_float, positive_int, run_script
from skfiber.study import Parameter, calibrate, serial_conflict

#: the hidden parameters of the target run, and the ranges searched
HIDDEN = {"smax_biceps": 4.8e7, "smax_triceps": 1.2e7}
PARAMETERS = (Parameter("smax_biceps", 3e7, 5.5e7), Parameter("smax_triceps", 1.0e7, 1.8e7))


def angle_curve(params: dict, t_end: float) -> dict:
    """The upper limb at level 1 over ``t_end`` seconds: its elbow angle (deg) under ``series``."""
    from skfiber.demos.upper_limb import study_run

    return study_run(params, t_end=t_end)


def run(*, t_end: float = 2.0, scheduler="serial") -> dict:
    """The target curve from :data:`HIDDEN`, then the calibration; returns what the summary prints."""
    start = time.perf_counter()
    target = angle_curve(HIDDEN, t_end)["series"]["angle_deg"]
    # forward differences of 1 % of each range: a run is as exact as its Newton tolerance, and smaller steps
    # see that noise (1e-3 stalled at 0.2–0.9 % errors)
    result = calibrate(_Curve(t_end), PARAMETERS, "angle_deg", target, scheduler=scheduler, step=1e-2,
                       tolerance=1e-8)
    errors = {k: abs(result.parameters[k] - HIDDEN[k]) / HIDDEN[k] for k in HIDDEN}
    return dict(found=result.parameters, errors=errors, residual=result.residual_norm, runs=result.runs,
                wall_s=time.perf_counter() - start, t_end=t_end)


class _Curve:
    """The run function of the calibration (a picklable object: the workers import this module)."""

    def __init__(self, t_end: float):
        self.t_end = t_end

    def __call__(self, params: dict) -> dict:
        return angle_curve(params, self.t_end)


def main(argv=None) -> dict:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-end", type=positive_float, default=2.0, help="simulated time of each run in s (default 2)")
    parser.add_argument("--serial", action="store_true", help="run in this process, without dask")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="local dask workers (default: one per core)")
    parser.add_argument("--scheduler", default=None,
                        help="a running dask scheduler, e.g. tcp://host:8786 (default: a local cluster)")
    args = parser.parse_args(argv)
    conflict = serial_conflict(serial=args.serial, workers=args.workers, scheduler=args.scheduler)
    if conflict:
        parser.error(conflict)
    scheduler = "serial" if args.serial else args.scheduler
    if scheduler is None and args.workers is not None:
        from distributed import Client, LocalCluster

        scheduler = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None))
    r = run(t_end=args.t_end, scheduler=scheduler)
    print(f"hidden: Smax_biceps = {HIDDEN['smax_biceps']:.4g} Pa, Smax_triceps = {HIDDEN['smax_triceps']:.4g} Pa; searched in "
          + ", ".join(f"{p.name} ∈ [{p.low:g}, {p.high:g}]" for p in PARAMETERS) + " from the middle")
    print(f"found:  Smax_biceps = {r['found']['smax_biceps']:.6g} Pa (error {r['errors']['smax_biceps']:.1e}), "
          f"Smax_triceps = {r['found']['smax_triceps']:.6g} Pa (error {r['errors']['smax_triceps']:.1e})")
    print(f"residual ‖angle − target‖ = {r['residual']:.3e}° over {r['t_end']:g} s; {r['runs']} runs")
    print(f"summary: smax_biceps={r['found']['smax_biceps']:.6g} smax_triceps={r['found']['smax_triceps']:.6g} "
          f"biceps_error={r['errors']['smax_biceps']:.2e} triceps_error={r['errors']['smax_triceps']:.2e} "
          f"residual_deg={r['residual']:.3e} runs={r['runs']} wall_s={r['wall_s']:.1f}")
    return r


if __name__ == "__main__":
    run_script(main)
