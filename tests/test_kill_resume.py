"""A writer killed (SIGKILL) at a random step leaves a loadable series, and the resume ends bit for bit
where the uninterrupted run ends.

The writers: :func:`skfiber.run.run_simulation` and the command ``skfiber run hanging-bundle`` (the
demos that write checkpoints; the upper-limb demo writes no checkpoint).  The kill comes between two
steps, or in the middle of writing a file (after its temporary copy is written, before the rename).
"""
import dataclasses
import signal
import subprocess
import sys
import textwrap

import meshio
import numpy as np
import pytest

from skfiber import cli
from skfiber import io as sio
from skfiber.demos.hanging_bundle import NAME, build_model
from skfiber.run import checkpoint_path, run_simulation

DT, T_END, EVERY = 0.01, 0.12, 3
STEPS = round(T_END / DT)

# the child runs a writer and kills itself: at the end of step KILL_STEP (callback), or at the
# KILL_WRITE-th rename of a written file (the temporary file is complete, the rename never happens)
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from skfiber import cli
    from skfiber import io as sio
    from skfiber.demos.hanging_bundle import build_model
    from skfiber.run import run_simulation
    out, writer, kill_step, kill_write = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    renames = [0]
    real_replace = os.replace

    def replace(src, dst):
        renames[0] += 1
        if renames[0] == kill_write:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)

    sio.os = type(os)("os_with_kill")  # skfiber.io's os, with a replace that can kill
    sio.os.__dict__.update(os.__dict__)
    sio.os.replace = replace

    def at_step(state, info):
        if info.step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    if writer == "api":
        run_simulation(build_model(1), t_end=%(T_END)r, dt=%(DT)r, out_dir=out, checkpoint_every=%(EVERY)r,
                       progress=False, callback=at_step)
    else:
        cli.main(["run", "hanging-bundle", "--out", out, "--t-end", "%(T_END)r", "--checkpoint-every",
                  "%(EVERY)r", "--no-progress"])
    """ % {"T_END": T_END, "DT": DT, "EVERY": EVERY}
)


def _series(folder, name):
    """(times, displacement arrays) of the fibers part of a series; every listed file must load."""
    entries = [e for e in sio.read_pvd(folder / f"{name}.pvd") if e.part == 0]
    return [e.time for e in entries], [meshio.read(folder / e.file).point_data["displacement"] for e in entries]


def _check_killed_folder(out, name):
    times, _ = _series(out, name)  # loadable: the XML parses and every listed .vtu reads
    assert times == [k * DT for k in range(len(times))]
    ckpt = sio.load_checkpoint(checkpoint_path(out, name))
    assert ckpt.step % EVERY == 0 or ckpt.step == STEPS
    return ckpt


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """The uninterrupted runs of both writers."""
    api = tmp_path_factory.mktemp("ref_api")
    run_simulation(build_model(1), t_end=T_END, dt=DT, out_dir=api, checkpoint_every=EVERY, progress=False)
    command = tmp_path_factory.mktemp("ref_cli")
    assert cli.main(["run", "hanging-bundle", "--out", str(command), "--t-end", repr(T_END), "--checkpoint-every",
                     str(EVERY), "--no-progress"]) == 0
    return {"api": (api, "result"), "cli": (command, NAME)}


@pytest.mark.parametrize("writer, how", [("api", "between steps"), ("cli", "while writing")])
def test_kill_at_a_random_step_and_resume(writer, how, references, tmp_path, capsys):
    rng = np.random.default_rng(sum(map(ord, writer + how)))
    # per step: one .vtu and the .pvd, and a checkpoint every EVERY steps; step 0 writes 2 files
    kill_step = int(rng.integers(EVERY, STEPS)) if how == "between steps" else 0
    kill_write = int(rng.integers(2 + 2 * EVERY + 1, 2 + 2 * STEPS)) if how == "while writing" else 0
    out = tmp_path / "out"
    child = subprocess.run([sys.executable, "-c", CHILD, str(out), writer, str(kill_step), str(kill_write)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    ref_folder, name = references[writer]
    ckpt = _check_killed_folder(out, name)
    assert 0 < ckpt.step < STEPS
    if how == "while writing":  # the killed write left its temporary file behind, the resume removes it
        assert list(out.glob(".*tmp*"))
    # resume (in this process) and compare with the uninterrupted run: bit for bit
    if writer == "api":
        run_simulation(build_model(1), t_end=T_END, dt=DT, out_dir=out, checkpoint_every=EVERY, resume=True,
                       progress=False)
    else:
        assert cli.main(["run", "hanging-bundle", "--out", str(out), "--t-end", repr(T_END), "--checkpoint-every",
                         str(EVERY), "--resume", "--no-progress"]) == 0
    capsys.readouterr()
    final, ref = sio.load_checkpoint(checkpoint_path(out, name)), sio.load_checkpoint(checkpoint_path(ref_folder, name))
    assert final.step == ref.step == STEPS
    for field in dataclasses.fields(final.state):  # t, u, v, a, … : every field of the state
        assert np.array_equal(getattr(final.state, field.name), getattr(ref.state, field.name)), field.name
    times, fields = _series(out, name)
    ref_times, ref_fields = _series(ref_folder, name)
    assert times == ref_times and len(times) == STEPS + 1
    assert all(np.array_equal(a, b) for a, b in zip(fields, ref_fields))
    assert not list(out.glob(".*tmp*"))
