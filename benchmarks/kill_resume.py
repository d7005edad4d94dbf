"""Kill a writer with SIGKILL at random moments, check what it leaves, resume, and compare bit for bit.

The writers: :func:`skfiber.run.run_simulation` (``api``) and the command ``skfiber run
hanging-bundle`` (``cli``); both write a VTK series and checkpoints (the upper-limb demo writes no
checkpoint).  A child process runs a writer on the hanging bundle (level 1, t_end = 0.12 s, Δt = 0.01 s,
a checkpoint every 3 steps) and kills itself

* ``between steps``: at the end of a random step (its callback), or
* ``while writing``: at a random rename of a written file — the temporary file is complete, the rename
  never happens (what a kill in the middle of writing leaves).

Then: the series must load (the .pvd parses, every listed .vtu reads, the times are the steps
0, Δt, 2Δt, …), the checkpoint must load, and the resumed run must end with every field of the
uninterrupted run's final state and every written step's displacements equal bit for bit.

Run ``python benchmarks/kill_resume.py [--kills N] [--seed S]`` (default 20 kills, alternating the
writers and the moments).  Ends with ``summary: kills=… loadable=… resumed_identical=… wall_s=…``.
"""
from __future__ import annotations

import argparse
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
from skfiber.demos.hanging_bundle import NAME, build_model
from skfiber.run import checkpoint_path, run_simulation

DT, T_END, EVERY = 0.01, 0.12, 3
STEPS = round(T_END / DT)
SERIES = {"api": "result", "cli": NAME}


def write(out: Path, writer: str, *, resume: bool = False, callback=None) -> None:
    """Run a writer into ``out`` (in this process)."""
    if writer == "api":
        run_simulation(build_model(1), t_end=T_END, dt=DT, out_dir=out, checkpoint_every=EVERY, resume=resume,
                       progress=False, callback=callback)
    else:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # the demo's table
            code = cli.main(["run", "hanging-bundle", "--out", str(out), "--t-end", repr(T_END), "--checkpoint-every",
                             str(EVERY), "--no-progress"] + (["--resume"] if resume else []))
        if code != 0:
            raise RuntimeError(f"skfiber run hanging-bundle exited with {code}")


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
        if info.step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    write(out, writer, callback=at_step if writer == "api" else None)


def moment(rng: np.random.Generator, how: str) -> tuple[int, int]:
    """(kill_step, kill_write) of a random kill: a step after the first checkpoint, or a rename after it
    (step 0 writes 2 files, each step a .vtu and the .pvd, every EVERY-th step the checkpoint too; a kill
    before the first checkpoint leaves a loadable series but nothing to resume from)."""
    if how == "between steps":
        return int(rng.integers(EVERY, STEPS)), 0
    return 0, int(rng.integers(2 + 2 * EVERY + 2, 2 + 2 * STEPS))  # + 1 is the first checkpoint's rename


def kill(out: Path, writer: str, kill_step: int, kill_write: int) -> int:
    """Run the killed writer in a child process; its return code (−SIGKILL when the kill came)."""
    if writer == "cli" and kill_step:
        raise ValueError("the command is killed while writing only (it has no callback)")
    return subprocess.run([sys.executable, __file__, "--child", str(out), writer, str(kill_step), str(kill_write)],
                          capture_output=True, text=True, timeout=600).returncode


def series(folder: Path, name: str) -> tuple[list[float], list[np.ndarray]]:
    """(times, displacements) of the fibers part of a series; every listed file must load."""
    entries = [e for e in sio.read_pvd(folder / f"{name}.pvd") if e.part == 0]
    return [e.time for e in entries], [meshio.read(folder / e.file).point_data["displacement"] for e in entries]


def loadable(out: Path, name: str) -> str:
    """'' when the series and the checkpoint of a killed run load as they should, else what is wrong."""
    try:
        times, _ = series(out, name)
        step = sio.load_checkpoint(checkpoint_path(out, name)).step
    except Exception as err:  # noqa: BLE001 - what fails is the finding
        return f"{type(err).__name__}: {err}"
    if times != [k * DT for k in range(len(times))]:
        return f"times {times}"
    if not (0 < step < STEPS and step % EVERY == 0):
        return f"checkpoint at step {step}"
    return ""


def identical(out: Path, reference: Path, name: str) -> str:
    """'' when the resumed run equals the uninterrupted one bit for bit, else the first difference."""
    final, ref = sio.load_checkpoint(checkpoint_path(out, name)), sio.load_checkpoint(checkpoint_path(reference, name))
    if final.step != ref.step:
        return f"step {final.step} ≠ {ref.step}"
    for field in dataclasses.fields(final.state):
        if not np.array_equal(getattr(final.state, field.name), getattr(ref.state, field.name)):
            return f"state.{field.name} differs"
    (times, fields), (ref_times, ref_fields) = series(out, name), series(reference, name)
    if times != ref_times:
        return "the series' times differ"
    if not all(np.array_equal(a, b) for a, b in zip(fields, ref_fields)):
        return "a written step differs"
    if list(out.glob(".*tmp*")):
        return "temporary files left"
    return ""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), argv[2], int(argv[3]), int(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="number of kills (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random moments (default 0)")
    args = parser.parse_args(argv)
    tic = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    plans = [("api", "between steps"), ("api", "while writing"), ("cli", "while writing")]
    counts = {"kills": 0, "loadable": 0, "resumed_identical": 0}
    with tempfile.TemporaryDirectory() as tmp:
        references = {}
        for writer, name in SERIES.items():
            references[writer] = Path(tmp) / f"reference_{writer}"
            write(references[writer], writer)
        for k in range(args.kills):
            writer, how = plans[k % len(plans)]
            kill_step, kill_write = moment(rng, how)
            out = Path(tmp) / f"kill{k}"
            code = kill(out, writer, kill_step, kill_write)
            name = SERIES[writer]
            problem = "" if code == -signal.SIGKILL else f"the child ended with {code}, not by the kill"
            problem = problem or loadable(out, name)
            counts["kills"] += code == -signal.SIGKILL
            counts["loadable"] += not problem
            if not problem:
                write(out, writer, resume=True)
                problem = identical(out, references[writer], name)
                counts["resumed_identical"] += not problem
            at = f"step {kill_step}" if kill_step else f"rename {kill_write}"
            print(f"{writer:3s} killed {how:13s} at {at:10s}: {problem or 'loadable, resumed bit for bit'}",
                  flush=True)
    wall = time.perf_counter() - tic
    print(f"summary: kills={counts['kills']} loadable={counts['loadable']} "
          f"resumed_identical={counts['resumed_identical']} wall_s={wall:.1f}")
    return 0 if counts["resumed_identical"] == args.kills else 1


if __name__ == "__main__":
    raise SystemExit(main())
