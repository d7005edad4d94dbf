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

Example
-------
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence, TextIO

import numpy as np

from .core import State
from .fiber_step import decide_compiled_step
from .io import Checkpoint, VTKSeries, atomic_temporaries, load_checkpoint, model_fingerprint, save_checkpoint
from .model import Model
from .progress import RemainingTime, format_duration
from .solver import ConvergenceError, NewtonOptions, StepInfo, simulate

__all__ = ["RunResult", "Progress", "run_simulation", "checkpoint_path", "resume_point"]


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

    def summary(self) -> str:
        """One line for logs."""
        state = "interrupted" if self.interrupted else "done"
        per = self.newton_iterations / max(self.steps, 1)
        text = (
            f"{state}: {self.steps}/{self.n_steps} steps to t = {self.final_state.t:.6g} s, "
            f"{self.newton_iterations} Newton iterations ({per:.1f}/step), {self.retries} retries, "
            f"wall {self.wall_time:.2f} s (output {self.output_time:.2f} s)"
        )
        if self.resumed_from is not None:
            text += f", resumed from step {self.resumed_from}"
        if self.pvd is not None:
            text += f"; {self.output_files} files, {self.output_bytes / 1e6:.2f} MB -> {self.pvd}"
        return text


class Progress:
    """A one-line progress bar on a stream (default stderr).

    On a terminal the line is redrawn in place; otherwise (logs, pipes) a
    line is printed at most every ``interval`` seconds and at the end.
    ``extra`` texts (e.g. active contact points) are appended to the line.
    The ETA comes from the pace of the recent steps and is left out until it
    is known (:class:`skfiber.progress.RemainingTime`); the words are
    explained in :data:`skfiber.progress.PROGRESS_TERMS`.
    """

    def __init__(self, *, stream: TextIO | None = None, width: int = 24, interval: float = 2.0):
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = -math.inf
        self._start = _time.perf_counter()
        self._remaining = RemainingTime()

    def update(self, *, step: int, n_steps: int, t: float, t_end: float, newton: int, retries: int | None = None,
               extra: str = "") -> None:
        now = _time.perf_counter()
        frac = step / max(n_steps, 1)
        remaining = self._remaining.update(frac, now=now)
        done = step == n_steps
        if not done and now - self._last < (0.1 if self.tty else self.interval):
            return
        self._last = now
        filled = int(round(self.width * frac))
        bar = "#" * filled + "." * (self.width - filled)
        line = (
            f"[{bar}] {100 * frac:3.0f}%  t = {t:.4g}/{t_end:.4g} s  step {step}/{n_steps}  Newton {newton} it  "
            + (f"retries {retries}  " if retries is not None else "")
            + f"elapsed {format_duration(now - self._start)}"
            + (f"  ETA {format_duration(remaining)}" if remaining is not None and not done else "")
        )
        if extra:
            line += "  " + extra
        if self.tty:
            print("\r" + line + "\033[K", end="\n" if done else "", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)

    def message(self, text: str) -> None:
        if self.tty:
            print("\r\033[K", end="", file=self.stream)
        print(text, file=self.stream, flush=True)


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

    Example
    -------
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


def _substeps(substeps: Callable[[int], int] | None, step: int) -> int:
    """The number of substeps of ``step`` that ``substeps`` asks for (an integer ≥ 1)."""
    if substeps is None:
        return 1
    k = substeps(step)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"substeps({step}) must be an integer ≥ 1, got {k!r}")
    return int(k)


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
    callback: Callable[[State, StepInfo], None] | None = None,
    progress_extra: Callable[[State], str] | None = None,
    newton_options: NewtonOptions = NewtonOptions(),
    max_halvings: int = 4,
    method: str = "euler",
    substeps: Callable[[int], int] | None = None,
) -> RunResult:
    """Integrate ``model`` to ``t_end`` writing VTK output and checkpoints.

    Parameters
    ----------
    t_end, dt
        End time and step size (s); step n ends at t_start + n dt, the last
        one at t_end.
    out_dir
        Output folder for the VTK series ``name.pvd`` (see :mod:`skfiber.io`)
        and the checkpoint; None: no VTK series (and a checkpoint only at
        ``checkpoint_file``).
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
        keeps its steps up to the checkpoint.  ``t_end`` may be later than the
        original one.
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
        :class:`Progress`).
    points_per_element, bodies, extra_fields
        Passed to :class:`skfiber.io.VTKSeries`.
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
        For steps chosen by error control call :func:`skfiber.simulate` with
        ``rtol``/``atol`` and ``output_times`` and write the states in its
        callback.
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
    """
    for key, value in (("output_every", output_every), ("checkpoint_every", checkpoint_every)):
        if value is None and key == "checkpoint_every":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} must be an integer ≥ 1, got {value!r}")
    if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
    location = (Path(checkpoint_file) if checkpoint_file is not None
                else checkpoint_path(out_dir, name) if out_dir is not None else None)
    if resume and location is None:
        raise ValueError("resume=True needs out_dir (where the checkpoint is) or checkpoint_file")
    stored_options = _json_options(options)
    if checkpoint_extra is not None and not callable(checkpoint_extra):
        raise TypeError(f"checkpoint_extra must be a function returning a dict of arrays, got {checkpoint_extra!r}")
    started = _time.perf_counter()
    bar = progress if isinstance(progress, Progress) else (Progress() if progress else None)
    ckpt_file = location if checkpoint_every else None
    fingerprint = model_fingerprint(model)
    totals = {"newton_iterations": 0, "retries": 0}
    resumed_from = None
    if resume:
        ckpt = resume_point(location, dt=dt, options=stored_options, fingerprint=fingerprint)
        state, step0, t_start = ckpt.state, ckpt.step, ckpt.t_start
        totals.update({k: int(ckpt.stats.get(k, 0)) for k in totals})
        resumed_from = step0
    else:
        state = model.initial_state() if state is None else state.copy()
        step0, t_start = 0, float(state.t)
    if not math.isfinite(t_end) or t_end < state.t or (t_end == state.t and not resume):
        raise ValueError(f"t_end = {t_end!r} must be a finite time after the start time {state.t!r}")
    # the step grid t_start + k dt; k0 is the grid index of the next step (a resumed run
    # may stand off the grid after a shortened last step)
    k0 = int(math.floor((state.t - t_start) / dt + 1e-9)) + 1
    k_end = int(math.ceil((t_end - t_start) / dt - 1e-9))
    n_steps = step0 + (max(k_end - k0 + 1, 1) if t_end > state.t else 0)
    # the compiled fiber step is chosen for the whole run, not per one-step simulate call
    newton_options = decide_compiled_step(model, newton_options, n_steps=n_steps - step0)

    series = None
    output_time = 0.0
    if location is not None:
        for tmp in atomic_temporaries(location):  # of a run killed while saving its checkpoint
            tmp.unlink(missing_ok=True)
        if not resume:
            location.unlink(missing_ok=True)  # belongs to an older run
    if out_dir is not None:
        tic = _time.perf_counter()
        series = VTKSeries(
            out_dir, model, name=name, points_per_element=points_per_element, bodies=bodies,
            extra_fields=extra_fields, resume_time=state.t if resume else None,
        )
        if not resume:
            series.write(state, 0)
        output_time += _time.perf_counter() - tic
    if bar is not None and resume:
        bar.message(f"resuming from step {step0} (t = {state.t:.6g} s) of {n_steps}")

    def save(st: State, step: int) -> float:
        if ckpt_file is None:
            return 0.0
        tic = _time.perf_counter()
        extra = {} if checkpoint_extra is None else dict(checkpoint_extra())
        save_checkpoint(ckpt_file, Checkpoint(st, step, float(dt), t_start, fingerprint, dict(totals),
                                              stored_options, extra))
        return _time.perf_counter() - tic

    interrupted = False
    step = saved = step0
    try:
        inner = [None]  # StepInfo of the inner simulate() call (active contacts)
        while step < n_steps:
            # one simulate() call per step: every step ends exactly at t_start + n dt,
            # whatever step the run was resumed from
            t_next = t_end if step + 1 == n_steps else t_start + (k0 + step - step0) * dt
            parts = _substeps(substeps, step + 1)
            result = simulate(
                model, t_end=t_next, dt=dt / parts, state=state, max_halvings=max_halvings,
                newton_options=newton_options, progress=False, method=method,
                callback=lambda _s, info: inner.__setitem__(0, info),
            )
            if result.interrupted:
                interrupted = True
                break
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
    except KeyboardInterrupt:
        interrupted = True
    except ConvergenceError as err:
        if saved != step:
            save(state, step)
        if bar is not None:
            bar.message(f"failed after step {step} (t = {state.t:.6g} s); "
                        + (f"checkpoint of that step in {ckpt_file}" if ckpt_file else "no checkpoint"))
        raise err.keep(None)  # (what the failing step's simulate call kept is the step's own substeps only)
    if interrupted:
        if series is not None and series.times and series.times[-1] != state.t:
            series.write(state, step)
        if saved != step:
            output_time += save(state, step)
    wall = _time.perf_counter() - started
    run = RunResult(
        final_state=state, steps=step, n_steps=n_steps,
        newton_iterations=totals["newton_iterations"], retries=totals["retries"],
        wall_time=wall, solve_time=wall - output_time, output_time=output_time,
        pvd=series.pvd_path if series is not None else None, checkpoint=ckpt_file,
        resumed_from=resumed_from, interrupted=interrupted,
        output_bytes=series.bytes_written if series is not None else 0,
        output_files=series.files_written if series is not None else 0,
    )
    if bar is not None:
        bar.message(run.summary())
    return run
