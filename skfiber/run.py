"""A run driver: time integration with VTK output, checkpoints, resume and a progress bar.

:func:`run_simulation` wraps :func:`skfiber.simulate`; the demos and the
``skfiber`` command share it.

Exact resume: every step is one call of :func:`skfiber.simulate` from the
state of the previous step to t_start + n·dt, so the time grid does not
depend on where a run started.  The checkpoint holds that state (all fields
of :class:`skfiber.State`), so a run resumed from any checkpoint repeats the
same floating-point operations as an uninterrupted one and ends with the
same state, bit for bit (each call starts Newton afresh: modified Newton keeps its
factorization within the step only, where one :func:`skfiber.simulate` run would carry it to
the next step).  Checkpoints are written every ``checkpoint_every``
steps, at the end, on Ctrl-C and after a step that failed, atomically (a
temporary file renamed).  A caller that records its own history (a time
series, sampled checks) stores it in the same checkpoint through
``checkpoint_extra`` and reads it back with :func:`resume_point` before it
resumes; the options it names in ``options`` must be the same on resume
(:func:`resume_point` names the ones that differ).

Examples
--------
>>> import tempfile, skfiber as sf
>>> from skfiber.run import run_simulation
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
>>> model.add_gravity()
>>> out = tempfile.mkdtemp()
>>> result = run_simulation(model, t_end=0.02, dt=0.01, out_dir=out, progress=False)
>>> result.steps, result.pvd.name
(2, 'result.pvd')
"""
from __future__ import annotations

import json
import math
import sys
import time as _time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .adaptive import error_control, simulate_adaptive
from .coupling import body_cylinders
from .core import AdaptiveCursor, State, StepCounts, check_state_of, output_grid
from .core.files import writable_file, writable_folder
from .core.interrupt import CTRL_C, handle_ctrl_c
from .core.numbers import check_step_count, checked_real, is_real
from .core.warn import warn
from .fiber_step import decide_compiled_step
from .io import (Checkpoint, VTKSeries, atomic_temporaries, check_run_name, hold_run, load_checkpoint,
                 model_fingerprint, save_checkpoint)
from .model import Model, one_run
from .progress import Progress, progress_bar
from .solver import ConvergenceError, NewtonOptions, StepInfo, adaptive_scheme, simulate
from .statics import check_admissible_start

__all__ = ["RunResult", "run_simulation", "checkpoint_path", "checkpoint_options", "resume_point", "INTERRUPT_FRAME"]

#: the checkpoint's count that marks a VTK frame written by a Ctrl-C off the output grid (every output_every
#: steps): the resumed run drops it, so that its series is that of the run never stopped
INTERRUPT_FRAME = "interrupt_frame"


@dataclass
class RunResult:
    """What a run did.

    Attributes
    ----------
    final_state : the last finished state
    steps : steps done since the start of the run (including those before a resume)
    n_steps : steps of the whole run
    newton_iterations : Newton iterations of all steps (including before a resume)
    retries : steps that had to be split
    wall_time : seconds of this call; ``solve_time`` and ``output_time`` split it
    pvd : the .pvd file (None without output)
    checkpoint : the checkpoint file (None without checkpoints)
    resumed_from : the step the run was resumed from (None: fresh start)
    interrupted : stopped by Ctrl-C (the last finished step is checkpointed)
    output_bytes, output_files : size and number of the .vtu files written by this call
    step_counts : accepted and rejected steps, Newton iterations, tangents of an error-controlled run
        (its ``steps`` and ``n_steps`` count output times); None with fixed steps
    """

    final_state: State
    steps: int
    n_steps: int
    newton_iterations: int
    retries: int
    wall_time: float
    solve_time: float
    output_time: float
    pvd: Path | None = None
    checkpoint: Path | None = None
    resumed_from: int | None = None
    interrupted: bool = False
    output_bytes: int = 0
    output_files: int = 0
    step_counts: StepCounts | None = None

    def summary(self) -> str:
        """One line for logs."""
        state = "interrupted" if self.interrupted else "done"
        if self.step_counts is None:
            per = self.newton_iterations / max(self.steps, 1)
            text = (
                f"{state}: {self.steps}/{self.n_steps} steps to t = {self.final_state.t:.6g} s, "
                f"{self.newton_iterations} Newton iterations ({per:.1f}/step), {self.retries} retries, "
                f"wall {self.wall_time:.2f} s, of it {self.output_time:.2f} s writing files"
            )
        else:
            c = self.step_counts
            text = (
                f"{state}: {self.steps}/{self.n_steps} output times to t = {self.final_state.t:.6g} s, "
                f"{c.accepted} steps ({c.rejected} rejected, {c.newton_failures} Newton failures), "
                f"{c.newton_iterations} Newton iterations, {c.tangent_builds} tangents, "
                f"wall {self.wall_time:.2f} s, of it {self.output_time:.2f} s writing files"
            )
        if self.resumed_from is not None:
            text += f", resumed from step {self.resumed_from}"
        if self.pvd is not None:
            text += f"; {self.output_files} files, {self.output_bytes / 1e6:.2f} MB -> {self.pvd}"
        return text


def checkpoint_path(out_dir: str | Path, name: str = "result") -> Path:
    """Where :func:`run_simulation` keeps the checkpoint of series ``name`` (unless given ``checkpoint_file``)."""
    return Path(out_dir) / f"{name}_checkpoint.npz"


def _json_options(options: Mapping[str, object] | None) -> dict:
    """``options`` as the JSON data a checkpoint stores (TypeError naming what cannot be stored)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping of names to values, got {type(options).__name__}")
    try:
        return json.loads(json.dumps(dict(options), sort_keys=True))
    except (TypeError, ValueError) as err:
        raise TypeError(f"options must hold JSON data (str, int, float, bool, None, lists and dicts of them): {err}") \
            from None


def checkpoint_options(options: Mapping[str, object] | None, *, rtol: float | None = None,
                       atol: float | None = None, h_min: float | None = None, h_max: float | None = None,
                       t_end: float | None = None, method: str = "euler") -> dict:
    """The options a checkpoint of :func:`run_simulation` records (and a resume must repeat): ``options``
    as JSON data, with tolerances (an error-controlled run) ``error_control``: the tolerances, the step
    limits and ``t_end`` (which fixes the output times), and for a fixed-step run whose ``options`` do not
    name its ``method`` already, ``time_scheme``: ``method`` when it is not backward Euler (the default; an
    error-controlled run is BDF2).

    Examples
    --------
    >>> checkpoint_options({"level": 1}, rtol=1e-2, atol=1e-4, t_end=8.0)["error_control"]["rtol"]
    0.01
    """
    stored = _json_options(options)
    if rtol is not None or atol is not None:
        if "error_control" in stored:
            raise ValueError("options may not name 'error_control': run_simulation records the tolerances under "
                             "that name; rename the option")
        values = {}
        for key, value in dict(rtol=rtol, atol=atol, h_min=h_min, h_max=h_max, t_end=t_end).items():
            try:
                values[key] = None if value is None else float(value)
            except (TypeError, ValueError):
                raise TypeError(f"{key} must be a number, got {value!r}") from None
        stored["error_control"] = values
    if "time_scheme" in stored:
        raise ValueError("options may not name 'time_scheme': run_simulation records its method under that "
                         "name; rename the option")
    if method != "euler" and "error_control" not in stored and stored.get("method") != method:
        stored["time_scheme"] = str(method)
    return stored


def resume_point(path: str | Path, *, dt: float, options: Mapping[str, object] | None = None,
                 fingerprint: str | None = None) -> Checkpoint:
    """Load the checkpoint at ``path`` and check that it belongs to the run about to continue from it.

    ``options`` (the run's named options, e.g. a demo's level and geometry) must
    equal those the checkpoint was written with, ``dt`` its step size and
    ``fingerprint`` (:func:`skfiber.io.model_fingerprint`; None: not checked)
    its model's.  :func:`run_simulation` calls it on resume; a caller that keeps
    its own history in ``Checkpoint.extra`` calls it first to read it back.

    Raises
    ------
    FileNotFoundError
        No checkpoint at ``path``.
    ValueError
        Not a skfiber checkpoint, truncated or damaged; or written by another
        run: the message names the options that differ (one line), or says
        that the model differs, or names dt.

    Examples
    --------
    >>> import tempfile, skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    >>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
    >>> out = tempfile.mkdtemp()
    >>> _ = run_simulation(model, t_end=0.02, dt=0.01, out_dir=out, progress=False, options={"level": 1})
    >>> resume_point(checkpoint_path(out), dt=0.01, options={"level": 2})
    Traceback (most recent call last):
    ...
    ValueError: the checkpoint .../result_checkpoint.npz was written with level=1; this run has level=2: resume with the same options, or start afresh (without resume)
    """
    path = Path(path)
    ckpt = load_checkpoint(path)
    if options is not None:
        wanted = _json_options(options)
        keys = sorted(k for k in set(wanted) | set(ckpt.options)
                      if json.dumps(wanted.get(k), sort_keys=True) != json.dumps(ckpt.options.get(k), sort_keys=True))
        if keys:
            def listing(values: dict) -> str:
                return ", ".join(f"{k}={values[k]!r}" if k in values else f"{k} not set" for k in keys)

            raise ValueError(f"the checkpoint {path} was written with {listing(ckpt.options)}; this run has "
                             f"{listing(wanted)}: resume with the same options, or start afresh (without resume)")
    if fingerprint is not None and ckpt.fingerprint != fingerprint:
        raise ValueError(
            f"the checkpoint {path} belongs to another model (mesh, fibers, materials, activations, loads, "
            "boundary conditions or contacts differ); resume with the same model or start afresh"
        )
    if ckpt.dt != dt:
        raise ValueError(f"the checkpoint {path} was written with dt = {ckpt.dt!r}; resume with the same dt "
                         f"(got {dt!r}), or start afresh (without resume)")
    return ckpt


def _error_controlled(model: Model, state: State, *, t_end: float, dt: float, t_start: float, step0: int,
                      n_steps: int, cursor: AdaptiveCursor | None, series: VTKSeries | None, output_every: int,
                      save: Callable[..., float] | None, checkpoint_every: int | None, callback, totals: dict,
                      output_time: float, bar: Progress | None, newton_options: NewtonOptions,
                      rtol, atol, h_min, h_max):
    """:func:`run_simulation` with steps by error control: (last accepted state, output times done, output
    times checkpointed, interrupted, step counts, output time)."""
    done = {"step": step0, "saved": step0, "output_time": output_time, "state": state, "cursor": cursor,
            "saved_cursor": cursor}
    if cursor is not None and step0 >= n_steps:  # a finished run: nothing left to do
        return state, step0, step0, False, cursor.counts, output_time
    if cursor is None:
        check_admissible_start(model, state.u, state.t, state.q)

    def on_output(st: State, info: StepInfo) -> None:
        step = info.step
        written = series is not None and (step % output_every == 0 or step == n_steps)
        if step <= step0:  # handed out before the checkpoint (a Ctrl-C during a step's outputs): once only
            if written and st.t not in series.times:
                series.write(st, step)
            return
        done["step"] = step
        if callback is not None:
            callback(st, info)
        if written:
            tic = _time.perf_counter()
            series.write(st, step)
            done["output_time"] += _time.perf_counter() - tic

    def checkpoint(st: State, position: AdaptiveCursor) -> float:
        totals["newton_iterations"] = position.counts.newton_iterations
        totals["retries"] = position.counts.newton_failures
        seconds = save(st, done["step"], position.arrays())
        done["saved"], done["saved_cursor"] = done["step"], position
        return seconds

    def unsaved() -> bool:
        """Whether a step was accepted since the last checkpoint (or the resumed one)."""
        return save is not None and done["cursor"] is not None and done["cursor"] is not done["saved_cursor"]

    def on_accept(st: State, position: AdaptiveCursor) -> bool:
        done["state"], done["cursor"] = st, position
        if save is None or not checkpoint_every or done["step"] - done["saved"] < checkpoint_every:
            return False
        done["output_time"] += checkpoint(st, position)
        return True

    interrupted = False
    try:
        with warnings.catch_warnings():  # (said below, with the checkpoint)
            warnings.filterwarnings("ignore", message="simulation interrupted", category=UserWarning)
            result = simulate_adaptive(model, state, t_end=t_end, method="bdf2", rtol=rtol, atol=atol, h_min=h_min,
                                       h_max=h_max, output_dt=dt, store_every=sys.maxsize,
                                       newton_options=newton_options, callback=on_output, progress=bar or False,
                                       t_start=t_start, cursor=cursor, on_accept=on_accept)
        interrupted = result.interrupted
        counts = result.step_counts
    except ConvergenceError as err:
        if unsaved():
            checkpoint(done["state"], done["cursor"])
        if bar is not None:
            kept = save is not None and done["saved_cursor"] is not None
            bar.message(f"failed after output {done['step']} (t = {done['state'].t:.6g} s); "
                        + ("checkpoint of the last accepted step" if kept else "no checkpoint"))
        raise err.keep(None)
    if counts is not None:
        totals["newton_iterations"], totals["retries"] = counts.newton_iterations, counts.newton_failures
    if interrupted:
        if unsaved():
            done["output_time"] += checkpoint(done["state"], done["cursor"])
        if bar is not None:
            kept = save is not None and done["saved_cursor"] is not None
            bar.message(f"interrupted after output {done['step']} of {n_steps} (last step at t = "
                        f"{done['state'].t:.6g} s)" + ("; checkpointed" if kept else ""))
        return done["state"], done["step"], done["saved"], True, counts, done["output_time"]
    state = result.final_state
    if checkpoint_every and unsaved():
        done["output_time"] += checkpoint(state, done["cursor"])
    return state, done["step"], done["saved"], False, counts, done["output_time"]


def _substeps(substeps: Callable[[int], int] | None, step: int) -> int:
    """The number of substeps of ``step`` that ``substeps`` asks for (an integer ≥ 1)."""
    if substeps is None:
        return 1
    k = substeps(step)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"substeps({step}) must be an integer ≥ 1, got {k!r}")
    return int(k)


def _say_if_unfinished(location: Path) -> None:
    """Warn when a fresh run is about to remove the checkpoint of a run that did not reach its end."""
    if not location.is_file():
        return
    try:
        old = load_checkpoint(location)
    except (OSError, ValueError):  # (damaged or foreign: nothing to continue)
        return
    t_end = old.stats.get("t_end")
    if is_real(t_end) and old.state.t < t_end:
        warn(f"{location} held a run stopped at t = {old.state.t:.6g} s of {t_end:g} s; this run starts afresh and "
             "removes it (to continue that run instead, run again with its options and resume=True, or --resume on "
             "the command line)")


@one_run  # (one run for the check of the forms' numbers: Model.run_scope)
def run_simulation(
    model: Model,
    *,
    t_end: float,
    dt: float,
    out_dir: str | Path | None = None,
    name: str = "result",
    state: State | None = None,
    output_every: int = 1,
    checkpoint_every: int | None = 50,
    checkpoint_file: str | Path | None = None,
    resume: bool = False,
    options: Mapping[str, object] | None = None,
    checkpoint_extra: Callable[[], Mapping[str, np.ndarray]] | None = None,
    progress: bool | Progress = True,
    points_per_element: int = 4,
    bodies: Sequence | Callable[[State], Sequence] | None = None,
    extra_fields=None,
    extra_units: Mapping[str, str] | None = None,
    callback: Callable[[State, StepInfo], None] | None = None,
    progress_extra: Callable[[State], str] | None = None,
    newton_options: NewtonOptions = NewtonOptions(),
    max_halvings: int = 4,
    method: str = "euler",
    substeps: Callable[[int], int] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    h_min: float | None = None,
    h_max: float | None = None,
) -> RunResult:
    """Integrate ``model`` to ``t_end`` writing VTK output and checkpoints.

    Parameters
    ----------
    model
        The model to integrate (as for :func:`skfiber.simulate`).
    t_end, dt
        End time and step size (s); step n ends at t_start + n dt, the last
        one at t_end.
    out_dir
        Output folder for the VTK series ``name.pvd`` (see :mod:`skfiber.io`)
        and the checkpoint; None: no VTK series (and a checkpoint only at
        ``checkpoint_file``).
    name
        The run's name: the files ``name.pvd``, ``name_*.vtu`` and ``name_checkpoint.npz`` (a plain file
        name: letters, digits, ``_``, ``.`` and ``-``).
    state
        Start state (default: rest at t = 0); ignored when resuming.
    output_every
        Write VTK every k-th step (the start and the last step always).
    checkpoint_every
        Save the full state every K steps and at the end (None: never).
    checkpoint_file
        The checkpoint's file (default ``out_dir/NAME_checkpoint.npz``, see
        :func:`checkpoint_path`); it may lie in another folder than the series.
    resume
        Continue from the checkpoint (it must exist and belong to the same
        model, dt and ``options``, see :func:`resume_point`); the VTK series
        keeps its steps up to the checkpoint, but for the step a Ctrl-C wrote off
        the output grid (every ``output_every`` steps), so that it lists the steps
        of a run that was never stopped.  ``t_end`` may be later than the
        original one (fixed steps; with tolerances it must stay the same); the
        series then keeps the earlier run's last step as well.
    options
        The run's named options (JSON data, e.g. ``{"level": 2}``), stored in
        the checkpoint; a resume with other values is refused with a message
        that names them.
    checkpoint_extra
        ``checkpoint_extra() -> {name: array}``: the caller's own history up to
        the step being checkpointed (called after that step's ``callback``),
        saved with the state; read it back with ``resume_point(...).extra``.
    progress
        Print a progress bar and a final summary to stderr (or pass a
        :class:`skfiber.progress.Progress`, e.g. on another stream).  With
        tolerances the line is that of :func:`skfiber.simulate`'s error control
        (``progress_extra`` is not used).
    points_per_element, bodies, extra_fields, extra_units
        Passed to :class:`skfiber.io.VTKSeries`.  ``bodies`` defaults to the bones of the model's rigid
        system, if it has one (:func:`skfiber.coupling.body_cylinders`); ``bodies=()`` writes none.
    callback
        ``callback(state, info)`` after every step, before its output and
        checkpoint; ``info.step`` and ``info.n_steps`` count from the start of
        the whole run.
    progress_extra
        ``progress_extra(state) -> str`` appended to the progress line
        (e.g. the number of active contact points).
    newton_options, max_halvings
        Passed to :func:`skfiber.simulate`.
    method
        The time scheme, ``"euler"`` or ``"bdf2"`` (fixed steps dt; the
        checkpoint keeps BDF2's earlier point, so a resumed run stays exact).
    rtol, atol, h_min, h_max
        Steps chosen by error control (``method="bdf2"``; as in
        :func:`skfiber.simulate`): ``dt`` is then the interval of the output
        times, and ``step``, ``n_steps``, ``output_every``,
        ``checkpoint_every`` and the callback's ``info.step`` count output
        times.  The checkpoint also holds the step control (the last three
        accepted points, the next step, the counts) and is written after the
        accepted step that follows an output time; a run resumed from a
        regular checkpoint takes the same steps and ends with the same state,
        bit for bit (at a checkpoint the uninterrupted run, too, drops its
        kept factorization), one resumed from the checkpoint of a Ctrl-C or a
        failed step differs at Newton's tolerance (at the error
        control's tolerance where that tips an accept/reject decision).  ``t_end`` and the tolerances
        must stay the same on resume.
    substeps
        ``substeps(n) -> k``: take step ``n`` (counted from 1 over the whole
        run) as k ≥ 1 equal substeps of dt / k, within the step's solver
        call; the step still ends at t_start + n dt, and the callback, the
        output and the checkpoints see the step's end only.  For a start
        transient taken with a smaller step than the rest of the run (the
        upper-limb demo).  None: one substep per step.  A resumed run asks
        it again for the steps after the checkpoint, so it must be the same
        function of n (record it in ``options``).

    Raises
    ------
    ConvergenceError
        From the solver; the last finished step is checkpointed first and the
        .pvd holds every finished output step.

    Notes
    -----
    Memory does not grow with the number of steps: each step is a call of
    :func:`skfiber.simulate` whose result is dropped once its state is written.

    Examples
    --------
    >>> import tempfile
    >>> import skfiber as sf
    >>> from skfiber.run import run_simulation
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(sigma0=30.0))
    >>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> with tempfile.TemporaryDirectory() as out:
    ...     run = run_simulation(model, t_end=0.05, dt=0.01, out_dir=out, name="sag", checkpoint_every=2,
    ...                          progress=False)
    ...     run.steps, run.pvd.name, run.checkpoint.name
    (5, 'sag.pvd', 'sag_checkpoint.npz')
    """
    for key, value in (("output_every", output_every), ("checkpoint_every", checkpoint_every)):
        if value is None and key == "checkpoint_every":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} must be an integer ≥ 1, got {value!r}")
    checked_real("dt", dt, above=0)
    adaptive = adaptive_scheme(method=method, dt=dt, rtol=rtol, atol=atol)
    if not isinstance(newton_options, NewtonOptions):
        raise TypeError(f"newton_options must be a skfiber.NewtonOptions, got {type(newton_options).__name__}")
    bar = progress_bar(progress)
    if adaptive and substeps is not None:
        raise ValueError("substeps belong to fixed steps; with rtol/atol the error control chooses the steps")
    if not adaptive and (h_min is not None or h_max is not None):
        raise ValueError("h_min and h_max belong to error-controlled runs: give rtol and/or atol too")
    if out_dir is not None:  # (the name of its files)
        check_run_name(name)
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ValueError(f"out_dir {str(out_dir)!r} is a file; give a folder (it is made if missing)")
    location = (Path(checkpoint_file) if checkpoint_file is not None
                else checkpoint_path(out_dir, name) if out_dir is not None else None)
    if resume and location is None:
        raise ValueError("resume=True needs out_dir (where the checkpoint is) or checkpoint_file")
    stored_options = checkpoint_options(options, rtol=rtol, atol=atol, h_min=h_min, h_max=h_max, t_end=t_end,
                                        method=method)
    if checkpoint_extra is not None and not callable(checkpoint_extra):
        raise TypeError(f"checkpoint_extra must be a function returning a dict of arrays, got {checkpoint_extra!r}")
    started = _time.perf_counter()
    ckpt_file = location if checkpoint_every else None
    fingerprint = model_fingerprint(model)
    totals = {"newton_iterations": 0, "retries": 0}
    resumed_from = None
    interrupt_frame = False
    cursor = None
    series_of_checkpoint = None
    if resume:
        ckpt = resume_point(location, dt=dt, options=stored_options, fingerprint=fingerprint)
        series_of_checkpoint = ckpt.series or None
        state, step0, t_start = ckpt.state, ckpt.step, ckpt.t_start
        totals.update({k: int(ckpt.stats.get(k, 0)) for k in totals})
        resumed_from = step0
        interrupt_frame = bool(ckpt.stats.get(INTERRUPT_FRAME, 0))
        if adaptive:
            cursor = AdaptiveCursor.from_arrays(ckpt.control)
    else:
        if state is not None:  # (before step 0 is written)
            check_state_of(state, model.n_dofs, 0 if model.rigid is None else model.rigid.n)
        state = model.initial_state() if state is None else state.copy()
        step0, t_start = 0, float(state.t)
    if not math.isfinite(t_end) or t_end < state.t or (t_end == state.t and not resume):
        start = f"the checkpoint's time {state.t!r} (resume)" if resume else f"the start time {state.t!r}"
        raise ValueError(f"t_end = {t_end!r} must be a finite time after {start}")
    if t_end > state.t:
        check_step_count(dt=dt, t_start=float(state.t), t_end=t_end)
    if adaptive:  # the tolerances and step limits checked before any file is touched
        limits = stored_options["error_control"]
        error_control(rtol=limits["rtol"], atol=limits["atol"], h_min=limits["h_min"], h_max=limits["h_max"],
                      span=t_end - t_start, output_dt=dt)
    # the step grid t_start + k dt; k0 is the grid index of the next step (a resumed run
    # may stand off the grid after a shortened last step)
    k0 = int(math.floor((state.t - t_start) / dt + 1e-9)) + 1
    k_end = int(math.ceil((t_end - t_start) / dt - 1e-9))
    if adaptive:  # output times
        n_steps = len(output_grid(t_start, t_end, output_dt=dt))
    else:
        n_steps = step0 + (max(k_end - k0 + 1, 1) if t_end > state.t else 0)
        # the compiled fiber step is chosen for the whole run, not per one-step simulate call
        newton_options = decide_compiled_step(model, newton_options, n_steps=n_steps - step0)

    series = None
    output_time = 0.0
    # the folders made once the run is checked, before it starts: its results are not lost to one that cannot be
    # written; the run held against another process writing one of the same name there before any of its files
    # is touched, and let go however the run ends
    if out_dir is not None:
        writable_folder(out_dir, what="out_dir")
    elif ckpt_file is not None:
        writable_folder(location.parent, what="checkpoint_file")
    holding = (hold_run(out_dir, name) if out_dir is not None
               else hold_run(location.parent, location.stem) if ckpt_file is not None else None)
    try:
        if location is not None and checkpoint_every:  # (an existing checkpoint opened for appending: left as it is)
            writable_file(location, what="checkpoint_file" if checkpoint_file is not None else "the checkpoint")
        if location is not None:
            for tmp in atomic_temporaries(location):  # of a run killed while saving its checkpoint
                tmp.unlink(missing_ok=True)
            if not resume:
                _say_if_unfinished(location)
                location.unlink(missing_ok=True)  # belongs to an older run
        if out_dir is not None:
            tic = _time.perf_counter()
            # a resumed series keeps the outputs up to the checkpoint's (an error-controlled run's last
            # accepted step may lie before the last output handed out, after a Ctrl-C during the outputs)
            last_output = (state.t if not adaptive else t_start if step0 == 0
                           else float(output_grid(t_start, t_end, output_dt=dt)[step0 - 1]))
            if bodies is None and model.rigid is not None and model.rigid.bodies:
                bodies = body_cylinders(model)  # the bones move with q
            series = VTKSeries(
                out_dir, model, name=name, points_per_element=points_per_element, bodies=bodies,
                extra_fields=extra_fields, extra_units=extra_units, resume_time=last_output if resume else None,
                series_id=series_of_checkpoint,
            )
            if not resume:
                series.write(state, 0)
            elif interrupt_frame and step0 % output_every and t_end > state.t:
                # (a Ctrl-C wrote it off this run's output grid; the run never stopped has not)
                series.drop_time(state.t)
            output_time += _time.perf_counter() - tic
        if bar is not None and resume:
            bar.message(f"resuming from step {step0} (t = {state.t:.6g} s) of {n_steps}")

        def save(st: State, step: int, control: dict | None = None, *, frame_off_grid: bool = False) -> float:
            if ckpt_file is None:
                return 0.0
            tic = _time.perf_counter()
            extra = {} if checkpoint_extra is None else dict(checkpoint_extra())
            stats = dict(totals, t_end=float(t_end), **({INTERRUPT_FRAME: 1} if frame_off_grid else {}))
            save_checkpoint(ckpt_file, Checkpoint(st, step, float(dt), t_start, fingerprint, stats,
                                                  stored_options, extra, control or {},
                                                  "" if series is None else series.series_id))
            return _time.perf_counter() - tic

        interrupted = False
        step = saved = step0
        step_counts = None
        if adaptive:
            state, step, saved, interrupted, step_counts, output_time = _error_controlled(
                model, state, t_end=t_end, dt=dt, t_start=t_start, step0=step0, n_steps=n_steps, cursor=cursor,
                series=series, output_every=output_every, save=save if ckpt_file is not None else None,
                checkpoint_every=checkpoint_every, callback=callback, totals=totals,
                output_time=output_time, bar=bar, newton_options=newton_options, rtol=rtol, atol=atol, h_min=h_min,
                h_max=h_max)
        try:
            inner = [None]  # StepInfo of the inner simulate() call (active contacts)
            while not adaptive and step < n_steps:
                # one simulate() call per step: every step ends exactly at t_start + n dt,
                # whatever step the run was resumed from
                t_next = t_end if step + 1 == n_steps else t_start + (k0 + step - step0) * dt
                parts = _substeps(substeps, step + 1)
                result = simulate(
                    model, t_end=t_next, dt=dt / parts, state=state, max_halvings=max_halvings,
                    newton_options=newton_options, progress=False, method=method,
                    callback=lambda _s, info: inner.__setitem__(0, info), on_interrupt="raise",  # (said below)
                )
                state, step = result.final_state, step + 1
                n_it = int(sum(result.newton_iterations))
                totals["newton_iterations"] += n_it
                totals["retries"] += result.retries
                contacts = inner[0].active_contacts if inner[0] is not None else 0
                if callback is not None:  # first: what it records belongs to this step's checkpoint
                    callback(state, StepInfo(step, n_steps, t_end, n_it, result.retries, _time.perf_counter() - started,
                                             contacts))
                tic = _time.perf_counter()
                if series is not None and (step % output_every == 0 or step == n_steps):
                    series.write(state, step)
                if checkpoint_every and (step % checkpoint_every == 0 or step == n_steps):
                    save(state, step)
                    saved = step
                output_time += _time.perf_counter() - tic
                if bar is not None:
                    extra = progress_extra(state) if progress_extra is not None else ""
                    if model.contacts and inner[0] is not None:
                        extra = f"contacts {contacts}" + (f"  {extra}" if extra else "")
                    bar.update(step=step, n_steps=n_steps, t=state.t, t_end=t_end, newton=n_it,
                               retries=totals["retries"], extra=extra)
        except CTRL_C as err:
            handle_ctrl_c(err)
            interrupted = True
        except ConvergenceError as err:
            if saved != step:
                save(state, step)
            if bar is not None:
                bar.message(f"failed after step {step} (t = {state.t:.6g} s); "
                            + (f"checkpoint of that step in {ckpt_file}" if ckpt_file else "no checkpoint"))
            raise err.keep(None)  # (what the failing step's simulate call kept is the step's own substeps only)
        except Exception:  # any other error (a load, a callback): the last finished step is kept as well
            if ckpt_file is not None and saved != step:
                try:
                    save(state, step)
                except Exception:  # (the error itself may be the checkpoint's: the first one is the one to report)
                    pass
                else:
                    if bar is not None:
                        bar.message(f"stopped by an error after step {step} (t = {state.t:.6g} s); checkpoint of that "
                                    f"step in {ckpt_file}")
            raise
        finally:  # (a terminal's line ends before the messages below, or before the error the caller prints)
            if bar is not None:
                bar.end()
        if interrupted and not adaptive:
            unwritten = series is not None and bool(series.times) and series.times[-1] != state.t
            off_grid = unwritten and step % output_every != 0 and step != n_steps
            if unwritten:  # what the run reached, to look at; off the output grid, a resume drops it (INTERRUPT_FRAME)
                series.write(state, step)
            if saved != step or off_grid:
                output_time += save(state, step, frame_off_grid=off_grid)
        wall = _time.perf_counter() - started
        run = RunResult(
            final_state=state, steps=step, n_steps=n_steps,
            newton_iterations=totals["newton_iterations"], retries=totals["retries"],
            wall_time=wall, solve_time=wall - output_time, output_time=output_time,
            pvd=series.pvd_path if series is not None else None, checkpoint=ckpt_file,
            resumed_from=resumed_from, interrupted=interrupted,
            output_bytes=series.bytes_written if series is not None else 0,
            output_files=series.files_written if series is not None else 0,
            step_counts=step_counts,
        )
        if bar is not None:
            bar.message(run.summary())
        return run
    finally:
        if series is not None:
            series.close()
        if holding is not None:
            holding.release()
