"""Kill a writer with SIGKILL at random moments, check what it leaves, resume, and compare bit for bit.

The writers, each writing a VTK series and checkpoints:

* ``api``: :func:`skfiber.run.run_simulation` on the hanging bundle (level 1, t_end = 0.12 s,
  Δt = 0.01 s, a checkpoint every 3 steps);
* ``cli``: the command ``skfiber run hanging-bundle`` with the same settings;
* ``limb``: the command ``skfiber run upper-limb`` (level 1, t_end = 0.25 s, Δt = 1/32 s, fiber–fiber
  contact on, a checkpoint every 3 steps; its own time series, checks and figures ride in the
  checkpoint).

A child process runs a writer and is killed

* ``between steps``: at the end of a random step (it kills itself in its step callback),
* ``while writing``: at a random rename of a written file (it kills itself there) — the temporary file is
  complete, the rename never happens (what a kill in the middle of writing leaves), or
* ``at a random time``: by this process, a random time after the first checkpoint appeared (uniform up
  to the time the writer needs from there to its end, measured once per writer; a kill that comes
  after the end finds the child finished, and its resume must still give the same files).

Then: the series must load (the .pvd parses, every listed .vtu reads, the times are the steps
0, Δt, 2Δt, … with none missing or twice), the checkpoint must load, and the resumed run must end
with every field of the uninterrupted run's final state, every written step's displacements and (upper
limb) its CSV tables, figures and recorded history equal bit for bit, with no temporary file left.

Run ``python benchmarks/kill_resume.py [--kills N] [--seed S] [--writers api cli limb]`` (default 20
kills, taking the writers and the moments in turn).  Ends with
``summary: kills=… loadable=… resumed_identical=… ended_before_kill=… wall_s=…``
(ended_before_kill: random-time kills that found the writer finished).
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import meshio
import numpy as np

from skfiber import cli
from skfiber import io as sio
from skfiber.run import run_simulation


@dataclasses.dataclass(frozen=True)
class Writer:
    """A writer under test: its series name, step grid, checkpoint file and the renames it does.

    Each written step renames ``per_step`` files (its .vtu files and the .pvd), the start ``start``
    files, every checkpoint one more; ``outputs``: other files whose bytes must not change.
    """

    series: str
    dt: float
    steps: int
    every: int
    start: int
    per_step: int
    checkpoint: str
    outputs: tuple = ()

    def checkpoints_until(self, step: int) -> int:
        """Checkpoints saved in steps 1 … ``step`` (every ``every``-th and the last)."""
        return step // self.every + (step == self.steps and step % self.every != 0)

    def renames_until(self, step: int) -> int:
        """Renames done by the end of step ``step``."""
        return self.start + self.per_step * step + self.checkpoints_until(step)


WRITERS = {
    "api": Writer("result", 0.01, 12, 3, start=2, per_step=2, checkpoint="result_checkpoint.npz"),
    "cli": Writer("hanging_bundle", 0.01, 12, 3, start=2, per_step=2, checkpoint="hanging_bundle_checkpoint.npz"),
    "limb": Writer("upper_limb", 1 / 32, 8, 3, start=3, per_step=3, checkpoint="upper_limb_level1_checkpoint.npz",
                   outputs=("angle_level1.csv", "axial_force_level1.csv", "angle.png", "forces.png",
                            "axial_force.png")),
}


def write(out: Path, writer: str, *, resume: bool = False, callback=None) -> None:
    """Run a writer into ``out`` (in this process)."""
    spec = WRITERS[writer]
    if writer == "api":
        from skfiber.demos.hanging_bundle import build_model

        result = run_simulation(build_model(1), t_end=spec.dt * spec.steps, dt=spec.dt, out_dir=out,
                                checkpoint_every=spec.every, resume=resume, progress=False, callback=callback)
        if result.interrupted:  # Ctrl-C: a part of the run is no reference; stop
            raise KeyboardInterrupt
        return
    if writer == "cli":
        argv = ["run", "hanging-bundle", "--out", str(out), "--t-end", repr(spec.dt * spec.steps),
                "--checkpoint-every", str(spec.every), "--no-progress"]
    else:
        argv = ["run", "upper-limb", "--out", str(out), "--t-end", repr(spec.dt * spec.steps),
                "--checkpoint-every", str(spec.every), "--quiet"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:  # the tables
        code = cli.main(argv + (["--resume"] if resume else []))
    if code == cli.EXIT_INTERRUPTED:  # Ctrl-C
        raise KeyboardInterrupt
    if code != 0:
        raise RuntimeError(f"skfiber {' '.join(argv[:2])} exited with {code}: {err.getvalue()[-500:]}")


def child(out: Path, writer: str, kill_step: int, kill_write: int) -> None:
    """In the child process: a writer that kills itself (see the module notes)."""
    renames = [0]
    real_replace = os.replace

    def replace(src, dst):
        renames[0] += 1
        if renames[0] == kill_write:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)

    module_os = type(os)("os_with_kill")  # skfiber.io's os, with a rename that can kill
    module_os.__dict__.update(os.__dict__)
    module_os.replace = replace
    sio.os = module_os

    def at_step(state, info):
        if info is not None and info.step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    if writer == "limb" and kill_step:  # the demo's step callback is History.record
        from skfiber.demos._upper_limb_history import History

        record = History.record

        def record_and_kill(self, state, info=None):
            record(self, state, info)
            at_step(state, info)

        History.record = record_and_kill
    write(out, writer, callback=at_step if writer == "api" else None)


def moment(rng: np.random.Generator, how: str, writer: str = "api") -> tuple[int, int]:
    """(kill_step, kill_write) of a random kill after the first checkpoint (a kill before it leaves a loadable
    series but nothing to resume from) and before the last step: a step, or a rename."""
    spec = WRITERS[writer]
    if how == "between steps":  # the step's callback runs before its output and checkpoint
        return int(rng.integers(spec.every + 1, spec.steps)), 0
    first = spec.renames_until(spec.every)  # the first checkpoint's rename
    return 0, int(rng.integers(first + 1, spec.renames_until(spec.steps - 1) + 1))


def _child_command(out: Path, writer: str, kill_step: int = 0, kill_write: int = 0) -> list[str]:
    return [sys.executable, __file__, "--child", str(out), writer, str(kill_step), str(kill_write)]


def _after_first_checkpoint(out: Path, writer: str) -> subprocess.Popen:
    """The writer in a child process, returned once its first checkpoint exists (or it has ended)."""
    proc = subprocess.Popen(_child_command(out, writer), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with _ended_on_error(proc):
        while not (out / WRITERS[writer].checkpoint).exists() and proc.poll() is None:
            time.sleep(0.002)
    return proc


@contextlib.contextmanager
def _ended_on_error(proc: subprocess.Popen):
    """Within the block, an exception (a Ctrl-C) also ends the child ``proc``, which would go on writing."""
    try:
        yield
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def run_time_after_first_checkpoint(folder: Path, writer: str) -> float:
    """Seconds from the first checkpoint of an unkilled child to its end (the window of random kills)."""
    proc = _after_first_checkpoint(folder, writer)
    tic = time.perf_counter()
    with _ended_on_error(proc):
        code = proc.wait(timeout=900)
    if code != 0:
        raise RuntimeError(f"the {writer} writer failed in a child process")
    return time.perf_counter() - tic


def kill_at_random_time(out: Path, writer: str, delay: float) -> int:
    """SIGKILL the writer ``delay`` seconds after its first checkpoint appeared; its return code (0: it ended
    first)."""
    proc = _after_first_checkpoint(out, writer)
    with _ended_on_error(proc):
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        return proc.wait(timeout=900)


def kill(out: Path, writer: str, kill_step: int, kill_write: int) -> int:
    """Run the killed writer in a child process; its return code (−SIGKILL when the kill came)."""
    if writer == "cli" and kill_step:
        raise ValueError("the hanging-bundle command is killed while writing only (it has no callback)")
    return subprocess.run(_child_command(out, writer, kill_step, kill_write), capture_output=True, text=True,
                          timeout=900).returncode


def series(folder: Path, name: str) -> tuple[list[float], list[np.ndarray]]:
    """(times, displacements) of the fibers part of a series; every listed file (all parts) must load."""
    entries = sio.read_pvd(folder / f"{name}.pvd")
    meshes = {e.file: meshio.read(folder / e.file) for e in entries}
    fibers = [e for e in entries if e.part == 0]
    return [e.time for e in fibers], [meshes[e.file].point_data["displacement"] for e in fibers]


def loadable(out: Path, writer: str) -> str:
    """'' when the series and the checkpoint of a killed run load as they should, else what is wrong."""
    spec = WRITERS[writer]
    try:
        times, _ = series(out, spec.series)
        step = sio.load_checkpoint(out / spec.checkpoint).step
    except Exception as err:  # noqa: BLE001 - what fails is the finding
        return f"{type(err).__name__}: {err}"
    if times != [k * spec.dt for k in range(len(times))]:
        return f"times {times}"
    if not (0 < step <= spec.steps and (step % spec.every == 0 or step == spec.steps)):
        return f"checkpoint at step {step}"
    return ""


def identical(out: Path, reference: Path, writer: str) -> str:
    """'' when the resumed run equals the uninterrupted one bit for bit, else the first difference."""
    spec = WRITERS[writer]
    final, ref = sio.load_checkpoint(out / spec.checkpoint), sio.load_checkpoint(reference / spec.checkpoint)
    if final.step != ref.step:
        return f"step {final.step} ≠ {ref.step}"
    for field in dataclasses.fields(final.state):
        if not np.array_equal(getattr(final.state, field.name), getattr(ref.state, field.name)):
            return f"state.{field.name} differs"
    if sorted(final.extra) != sorted(ref.extra):
        return "the recorded history has other entries"
    for key in ref.extra:   # (nan where nothing was recorded, e.g. the time a fiber first softened: equal there)
        a, b = np.asarray(final.extra[key]), np.asarray(ref.extra[key])
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc"):
            return f"the recorded history's {key} differs"
    (times, fields), (ref_times, ref_fields) = series(out, spec.series), series(reference, spec.series)
    if times != ref_times:
        return "the series' times differ"
    if not all(np.array_equal(a, b) for a, b in zip(fields, ref_fields)):
        return "a written step differs"
    for name in spec.outputs:
        if (out / name).read_bytes() != (reference / name).read_bytes():
            return f"{name} differs"
    if list(out.glob(".*tmp*")):
        return "temporary files left"
    return ""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), argv[2], int(argv[3]), int(argv[4]))
        return 0
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=cli.positive_int, default=20, help="number of kills (default 20)")
    parser.add_argument("--seed", type=cli.nonnegative_int, default=0, help="seed of the random moments (default 0)")
    parser.add_argument("--writers", nargs="+", choices=sorted(WRITERS), default=sorted(WRITERS),
                        help="the writers to kill (default all)")
    args = parser.parse_args(argv)
    tic = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    plans = [(w, how) for w in args.writers for how in ("between steps", "while writing", "at a random time")
             if not (w == "cli" and how == "between steps")]
    counts = {"kills": 0, "loadable": 0, "resumed_identical": 0, "ended_before_kill": 0}
    with tempfile.TemporaryDirectory() as tmp:
        references, windows = {}, {}
        for writer in args.writers:
            references[writer] = Path(tmp) / f"reference_{writer}"
            write(references[writer], writer)
            windows[writer] = run_time_after_first_checkpoint(Path(tmp) / f"window_{writer}", writer)
        for k in range(args.kills):
            writer, how = plans[k % len(plans)]
            out = Path(tmp) / f"kill{k}"
            if how == "at a random time":
                delay = float(rng.uniform(0.0, windows[writer]))
                code, at = kill_at_random_time(out, writer, delay), f"+{delay:.3f} s"
                problem = "" if code in (0, -signal.SIGKILL) else f"the child ended with {code}"
            else:
                kill_step, kill_write = moment(rng, how, writer)
                code = kill(out, writer, kill_step, kill_write)
                at = f"step {kill_step}" if kill_step else f"rename {kill_write}"
                problem = "" if code == -signal.SIGKILL else f"the child ended with {code}, not by the kill"
            problem = problem or loadable(out, writer)
            counts["kills"] += code == -signal.SIGKILL or how == "at a random time"
            counts["ended_before_kill"] += code == 0
            counts["loadable"] += not problem
            if not problem:
                write(out, writer, resume=True)
                problem = identical(out, references[writer], writer)
                counts["resumed_identical"] += not problem
            late = " (it had ended)" if code == 0 else ""
            print(f"{writer:4s} killed {how:16s} at {at:10s}{late}: {problem or 'loadable, resumed bit for bit'}",
                  flush=True)
    wall = time.perf_counter() - tic
    print(f"summary: kills={counts['kills']} loadable={counts['loadable']} "
          f"resumed_identical={counts['resumed_identical']} ended_before_kill={counts['ended_before_kill']} "
          f"wall_s={wall:.1f}")
    return 0 if counts["resumed_identical"] == args.kills else 1


if __name__ == "__main__":
    cli.run_script(main)
