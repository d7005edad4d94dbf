"""Calibration: parameters that make a run's time series match a measured one, by least squares, with the
finite-difference Jacobian's columns run as one parallel batch.

:func:`calibrate` minimizes ½‖y(p) − y*‖² over the parameters' ranges with
:func:`scipy.optimize.least_squares` (trust-region reflective, bounds = the
ranges), in scaled variables s ∈ [0, 1]ᵈ (:meth:`Parameter.scale`).  Each
Jacobian is d forward differences; their d runs are submitted together to the
dask cluster (or run one by one with ``scheduler="serial"``), so a calibration
of d parameters takes about as long per iteration as one run on d + 1 workers.

Examples
--------
>>> import numpy as np
>>> from skfiber.study import Parameter
>>> def line(p):                                  # y(t) = a t + b
...     t = np.linspace(0, 1, 5)
...     return {"series": {"y": p["a"] * t + p["b"]}}
>>> result = calibrate(line, [Parameter("a", 0, 5), Parameter("b", -1, 1)], "y", 2.0 * np.linspace(0, 1, 5) - 0.5,
...                    scheduler="serial")
>>> {k: round(v, 6) for k, v in result.parameters.items()}
{'a': 2.0, 'b': -0.5}
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..threads import threads_of_kernels
from .design import Parameter, parameter_list
from .execute import check_loadable, close_own, connect
from .interrupts import CtrlC, ctrl_c_flag

__all__ = ["CalibrationResult", "calibrate"]


@dataclass
class CalibrationResult:
    """``parameters`` found, the ``residual_norm`` ‖y(p) − y*‖ there, the number of ``runs``, and scipy's
    ``optimize`` result."""

    parameters: dict
    residual_norm: float
    runs: int
    optimize: object


def _series(outputs: dict, name: str) -> np.ndarray:
    series = outputs.get("series") if isinstance(outputs, dict) else None
    if not isinstance(series, dict) or name not in series:
        raise ValueError(f"the run function must return the time series {name!r} under 'series', "
                         f"e.g. {{'series': {{{name!r}: array}}}}")
    return np.asarray(series[name], dtype=float)


def _run_series(run, params, name, kernel_threads=None):  # module level: what the workers get
    with threads_of_kernels(kernel_threads):  # one run per core on the workers (see execute_run)
        return _series(run(dict(params)), name)


def calibrate(run: Callable[[dict], dict], parameters, series: str, target, *, start: dict | None = None,
              fixed: dict | None = None, scheduler="serial", step: float = 1e-3, max_runs: int = 200,
              tolerance: float = 1e-10) -> CalibrationResult:
    """The parameters (within their ranges) whose run's time series ``series`` best matches ``target``.

    Parameters
    ----------
    run
        Parameter dict → outputs with ``{"series": {series: array}}`` (a study target's run function).
    parameters
        The :class:`Parameter` s to find (their ranges are the bounds).
    series, target
        The name of the time series and its measured values (the same length).
    start
        Start values (default: the middle of each range).
    fixed
        Other parameters passed to every run as they are.
    scheduler
        ``"serial"`` (default), None (a local dask cluster, one worker per core), an address or a Client:
        where the Jacobian's runs go, as one batch.
    step
        Forward-difference step in the scaled variables (a fraction of each range).
    max_runs, tolerance
        Bounds of the search: runs of the model (at most ``max_runs``: the search stops after
        ``max_runs // (d + 1)`` evaluations of the residual, each with at most d runs of its Jacobian, d the
        number of parameters), and the relative change of the cost that ends it.

    Raises
    ------
    ValueError
        For a target that is not finite or whose length differs from the run's series.

    Examples
    --------
    >>> import numpy as np
    >>> from skfiber.study import Parameter, calibrate
    >>> t = np.linspace(0.0, 1.0, 6)
    >>> def decay(p):                                   # y(t) = exp(−k t)
    ...     return {"series": {"y": np.exp(-p["k"] * t)}}
    >>> result = calibrate(decay, [Parameter("k", 0.1, 10.0)], "y", np.exp(-3.0 * t))
    >>> round(result.parameters["k"], 6), result.residual_norm < 1e-8
    (3.0, True)
    """
    parameters = parameter_list(parameters)
    target = np.asarray(target, dtype=float)
    if target.ndim != 1 or not np.all(np.isfinite(target)):
        raise ValueError(f"target must be a finite 1-D array, got shape {target.shape}")
    if not (0 < step < 0.5):
        raise ValueError(f"step must lie in (0, 0.5) (a fraction of each range), got {step!r}")
    fixed = dict(fixed or {})
    start = dict(start or {})
    unknown = sorted(set(start) - {p.name for p in parameters})
    if unknown:
        raise ValueError(f"start names parameters that are not calibrated: {unknown}")
    both = sorted(set(fixed) & {p.name for p in parameters})
    if both:
        raise ValueError(f"{both[0]!r} is both calibrated and fixed; leave it out of fixed= or of the parameters")
    for p in parameters:
        if p.name in start and not p.low <= float(start[p.name]) <= p.high:
            raise ValueError(f"start {p.name}={start[p.name]!r} lies outside its range [{p.low:g}, {p.high:g}]")
    if isinstance(max_runs, bool) or not isinstance(max_runs, (int, np.integer)) or max_runs < len(parameters) + 1:
        raise ValueError(f"max_runs must be an integer ≥ {len(parameters) + 1} (one residual and its Jacobian's "
                         f"{len(parameters)} runs), got {max_runs!r}")

    def values(s) -> dict:
        return {**fixed, **{p.name: float(p.scale(np.clip(si, 0.0, 1.0))) for p, si in zip(parameters, s)}}

    def unit(p: Parameter, value: float) -> float:
        if p.log:
            return (np.log(value) - np.log(p.low)) / (np.log(p.high) - np.log(p.low))
        return (value - p.low) / (p.high - p.low)

    s0 = np.array([unit(p, float(start[p.name])) if p.name in start else 0.5 for p in parameters])
    client, own = None, False
    count = [0]
    cache: dict = {}
    interrupt = CtrlC()

    def on_cluster(points: list[dict]) -> list[np.ndarray]:
        """The series of runs at ``points`` on the cluster; Ctrl-C (:mod:`skfiber.study.interrupts`) cancels
        them on the user's cluster and raises KeyboardInterrupt."""
        futures = client.map(_run_series, [run] * len(points), points, [series] * len(points), kernel_threads=1,
                             pure=False)
        while not interrupt.requested and not all(f.done() for f in futures):
            time.sleep(0.05)
        if interrupt.requested:
            if not own:
                client.cancel(futures)
            raise KeyboardInterrupt
        return client.gather(futures)

    def batch(points) -> list[np.ndarray]:
        todo = [tuple(np.round(s, 15)) for s in points]
        new = [k for k in dict.fromkeys(todo) if k not in cache]
        if client is None:
            results = [_run_series(run, values(np.array(k)), series) for k in new]
        else:
            results = on_cluster([values(np.array(k)) for k in new])
        count[0] += len(new)
        for k, y in zip(new, results):
            if y.shape != target.shape:
                raise ValueError(f"the run's series {series!r} has {y.size} values, the target {target.size}")
            cache[k] = y
        return [cache[k] for k in todo]

    def residual(s):
        return batch([s])[0] - target

    def jacobian(s):
        h = np.where(s + step <= 1.0, step, -step)  # forward differences inside [0, 1]
        points = [s] + [s + h[i] * np.eye(len(s))[i] for i in range(len(s))]
        base, *moved = batch(points)
        return np.column_stack([(y - base) / h[i] for i, y in enumerate(moved)])

    from scipy.optimize import least_squares

    with contextlib.ExitStack() as stack:
        if scheduler != "serial":  # a serial run stops at Ctrl-C as any Python code does
            interrupt = stack.enter_context(ctrl_c_flag())
            with interrupt.raising():  # the cluster's start: Ctrl-C stops it at once
                client, own = connect(scheduler)
            if own:
                stack.callback(close_own, client)
            with interrupt.raising():
                check_loadable(client, {"run function": run})
        opt = least_squares(residual, s0, jac=jacobian, bounds=(0.0, 1.0), x_scale=1.0, ftol=tolerance,
                            xtol=tolerance, gtol=tolerance, max_nfev=max_runs // (len(parameters) + 1))
        if interrupt.requested:  # after the last batch
            raise KeyboardInterrupt
    found = {p.name: float(p.scale(np.clip(si, 0.0, 1.0))) for p, si in zip(parameters, opt.x)}
    return CalibrationResult(found, float(np.linalg.norm(opt.fun)), count[0], opt)
