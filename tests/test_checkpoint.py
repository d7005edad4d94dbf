"""Checkpoints and resume: a resumed run ends with the same state as an uninterrupted one."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest

import skfiber as sf
from skfiber import io as sio
from skfiber import run as srun
from skfiber.demos.hanging_bundle import build_model
from skfiber.run import checkpoint_path, run_simulation

from conftest import stopping_at_call, wait_for_file

DT = 0.01


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted run of the driver (0.3 s, 30 steps, no output)."""
    model = build_model(1)
    return model, run_simulation(model, t_end=0.3, dt=DT, progress=False)


def _diff(a: sf.State, b: sf.State) -> float:
    return max(np.max(np.abs(a.u - b.u)), np.max(np.abs(a.v - b.v)), abs(a.t - b.t))


def test_driver_equals_simulate(reference):
    """The driver makes one simulate call per step.  With full Newton that is one simulate run bit for bit;
    with modified Newton (the default) within Newton's tolerance, since one simulate run carries Newton's
    factorization from step to step and the driver starts each step afresh (which keeps resuming exact)."""
    model, ref = reference
    full = sf.NewtonOptions(jacobian_reuse=False)
    run = run_simulation(model, t_end=0.3, dt=DT, progress=False, newton_options=full)
    sim = sf.simulate(model, t_end=0.3, dt=DT, progress=False, newton_options=full)
    assert run.steps == run.n_steps == 30
    assert _diff(run.final_state, sim.final_state) == 0.0
    assert run.newton_iterations == sum(sim.newton_iterations)
    sim = sf.simulate(model, t_end=0.3, dt=DT, progress=False)
    assert 0.0 < np.abs(ref.final_state.u - sim.final_state.u).max() <= 1e-9 * np.abs(sim.final_state.u).max()
    assert np.abs(ref.final_state.v - sim.final_state.v).max() <= 1e-9 * np.abs(sim.final_state.u).max() / DT


def test_resume_in_process(tmp_path, reference):
    model, ref = reference
    first = run_simulation(model, t_end=0.17, dt=DT, out_dir=tmp_path, checkpoint_every=5, progress=False)
    assert first.steps == 17
    ck = sio.load_checkpoint(checkpoint_path(tmp_path))
    assert ck.step == 17 and ck.state.t == first.final_state.t
    resumed = run_simulation(model, t_end=0.3, dt=DT, out_dir=tmp_path, checkpoint_every=5, resume=True, progress=False)
    assert resumed.resumed_from == 17 and resumed.steps == 30
    assert _diff(resumed.final_state, ref.final_state) <= 1e-12
    assert resumed.newton_iterations == ref.newton_iterations
    times = sorted({e.time for e in sio.read_pvd(tmp_path / "result.pvd")})
    assert times == [n * DT for n in range(31)]
    # nothing left to do: resuming a finished run returns its state
    again = run_simulation(model, t_end=0.3, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    assert again.steps == 30 and _diff(again.final_state, ref.final_state) == 0.0


def test_resume_to_a_later_end_time(tmp_path):
    model = build_model(1)
    run_simulation(model, t_end=0.035, dt=DT, out_dir=tmp_path, progress=False)  # last step shortened
    longer = run_simulation(model, t_end=0.06, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    times = [e.time for e in sio.read_pvd(tmp_path / "result.pvd")]
    assert times == [0.0, 0.01, 0.02, 0.03, 0.035, 0.04, 0.05, 0.06]
    assert longer.steps == 7 and longer.final_state.t == 0.06


def test_resume_after_ctrl_c_off_the_output_grid(tmp_path):
    """Ctrl-C at a step between outputs writes that step (what the run reached); the resumed series drops it
    and lists, and keeps on disk, the same steps as the run that was never stopped."""
    model = build_model(1)
    options = dict(t_end=0.12, dt=DT, output_every=3, checkpoint_every=4, progress=False)
    run_simulation(model, out_dir=tmp_path / "whole", **options)

    def ctrl_c():
        raise KeyboardInterrupt

    callback, _ = stopping_at_call(7, ctrl_c)
    stopped = run_simulation(model, out_dir=tmp_path / "stopped", callback=callback, **options)
    assert stopped.interrupted and stopped.steps == 7
    assert [e.time for e in sio.read_pvd(tmp_path / "stopped" / "result.pvd")] == [0.0, 0.03, 0.06, 0.07]
    resumed = run_simulation(model, out_dir=tmp_path / "stopped", resume=True, **options)
    assert resumed.resumed_from == 7 and resumed.steps == 12
    listed = [(e.time, e.file) for e in sio.read_pvd(tmp_path / "stopped" / "result.pvd")]
    assert listed == [(e.time, e.file) for e in sio.read_pvd(tmp_path / "whole" / "result.pvd")]
    assert [t for t, _ in listed] == [0.0, 0.03, 0.06, 0.09, 0.12]
    vtu = sorted(p.name for p in (tmp_path / "stopped").glob("*.vtu"))
    assert vtu == sorted(p.name for p in (tmp_path / "whole").glob("*.vtu"))


def _listed_files_exist(folder) -> bool:
    return all((folder / e.file).is_file() for e in sio.read_pvd(folder / "result.pvd"))


def test_a_resume_keeps_the_series_consistent(tmp_path):
    """A finished run resumed to the same end deletes nothing; a run stopped on its output grid and resumed
    with another output_every keeps the outputs it wrote (only a frame a Ctrl-C wrote off the grid goes), and
    every file the .pvd lists exists at every point."""
    model = build_model(1)
    done = tmp_path / "done"
    run_simulation(model, t_end=0.07, dt=DT, out_dir=done, output_every=5, checkpoint_every=1, progress=False)
    before = [(e.time, e.file) for e in sio.read_pvd(done / "result.pvd")]
    assert [t for t, _ in before] == [0.0, 0.05, 0.07]
    run_simulation(model, t_end=0.07, dt=DT, out_dir=done, output_every=5, checkpoint_every=1, resume=True,
                   progress=False)
    assert [(e.time, e.file) for e in sio.read_pvd(done / "result.pvd")] == before and _listed_files_exist(done)

    def ctrl_c():
        raise KeyboardInterrupt

    stopped = tmp_path / "stopped"
    callback, _ = stopping_at_call(7, ctrl_c)
    run_simulation(model, t_end=0.12, dt=DT, out_dir=stopped, output_every=1, checkpoint_every=4, callback=callback,
                   progress=False)
    assert len(sio.read_pvd(stopped / "result.pvd")) == 8  # steps 0 … 7, all on the grid of output_every = 1
    callback, _ = stopping_at_call(1, ctrl_c)  # stopped again at its first new step (8, off the grid of 5)
    run_simulation(model, t_end=0.12, dt=DT, out_dir=stopped, output_every=5, checkpoint_every=4, resume=True,
                   callback=callback, progress=False)
    times = [e.time for e in sio.read_pvd(stopped / "result.pvd")]
    assert times == pytest.approx([n * DT for n in range(9)]) and _listed_files_exist(stopped)
    run_simulation(model, t_end=0.12, dt=DT, out_dir=stopped, output_every=5, checkpoint_every=4, resume=True,
                   progress=False)
    times = [e.time for e in sio.read_pvd(stopped / "result.pvd")]
    assert times == pytest.approx([n * DT for n in range(8)] + [0.10, 0.12]) and _listed_files_exist(stopped)


def test_checkpoint_roundtrip(tmp_path):
    model = build_model(1)
    state = sf.simulate(model, t_end=0.02, dt=DT, progress=False).final_state
    ck = sio.Checkpoint(state, 2, DT, 0.0, sio.model_fingerprint(model), {"newton_iterations": 7})
    sio.save_checkpoint(tmp_path / "c.npz", ck)
    back = sio.load_checkpoint(tmp_path / "c.npz")
    assert _diff(back.state, state) == 0.0 and back.state.t == state.t
    # what the next step's predictor needs (resuming reproduces an uninterrupted run)
    assert state.a_prev.shape == state.a.shape and state.dt_last == DT
    assert np.array_equal(back.state.a_prev, state.a_prev) and back.state.dt_last == state.dt_last
    assert (back.step, back.dt, back.t_start, back.fingerprint) == (2, DT, 0.0, ck.fingerprint)
    assert back.stats == {"newton_iterations": 7}
    assert sio.model_fingerprint(build_model(2)) != ck.fingerprint


def test_resume_errors(tmp_path):
    model = build_model(1)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        run_simulation(model, t_end=0.1, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="same dt"):
        run_simulation(model, t_end=0.1, dt=0.005, out_dir=tmp_path, resume=True, progress=False)
    with pytest.raises(ValueError, match="another model"):
        run_simulation(build_model(2), t_end=0.1, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    with pytest.raises(ValueError, match="needs out_dir"):
        run_simulation(model, t_end=0.1, dt=DT, resume=True, progress=False)
    with pytest.raises(ValueError, match="checkpoint_every"):
        run_simulation(model, t_end=0.1, dt=DT, checkpoint_every=0, progress=False)


def test_ctrl_c_checkpoints_the_last_step(tmp_path, reference):
    model, ref = reference

    def interrupt(state, info):
        if info.step == 12:
            raise KeyboardInterrupt

    run = run_simulation(model, t_end=0.3, dt=DT, out_dir=tmp_path, checkpoint_every=5, callback=interrupt, progress=False)
    assert run.interrupted and run.steps == 12
    assert sio.load_checkpoint(checkpoint_path(tmp_path)).step == 12
    resumed = run_simulation(model, t_end=0.3, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    assert _diff(resumed.final_state, ref.final_state) <= 1e-12


def test_ctrl_c_while_the_pvd_is_written_keeps_the_series_and_the_checkpoint_in_step(tmp_path, monkeypatch):
    """Ctrl-C inside the .pvd's rewrite of step 6: the series, rewritten at the interrupt, lists every step up
    to the checkpoint's, and the resumed run continues it without a gap."""
    model = build_model(1)
    real, calls = sio.write_pvd, []

    def interrupted_in_step_six(path, entries, **options):
        calls.append(max(e.time for e in entries))
        if len(calls) == 7:  # t = 0 is the first
            raise KeyboardInterrupt
        return real(path, entries, **options)

    monkeypatch.setattr(sio, "write_pvd", interrupted_in_step_six)
    run = run_simulation(model, t_end=0.1, dt=DT, out_dir=tmp_path, checkpoint_every=4, progress=False)
    assert run.interrupted and run.steps == 6
    assert sio.load_checkpoint(checkpoint_path(tmp_path)).step == 6
    assert sorted({e.time for e in sio.read_pvd(tmp_path / "result.pvd")}) == pytest.approx(np.arange(7) * DT)
    monkeypatch.setattr(sio, "write_pvd", real)
    run_simulation(model, t_end=0.1, dt=DT, out_dir=tmp_path, resume=True, progress=False)
    assert sorted({e.time for e in sio.read_pvd(tmp_path / "result.pvd")}) == pytest.approx(np.arange(11) * DT)


def test_failed_step_checkpoints_the_last_good_one(tmp_path, monkeypatch):
    model = build_model(1)
    calls = {"n": 0}
    real = srun.simulate

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:  # as simulate fails: with what the step's call computed (its start and a substep)
            kept = real(*args, **kwargs)
            assert len(kept.times) > 1  # (so that the error would advertise it)
            raise sf.ConvergenceError("test failure", t=0.04, step=4, residual_history=[1.0]).keep(kept)
        return real(*args, **kwargs)

    monkeypatch.setattr(srun, "simulate", failing)
    with pytest.raises(sf.ConvergenceError, match="test failure") as info:
        run_simulation(model, t_end=0.1, dt=DT, out_dir=tmp_path, checkpoint_every=10, progress=False)
    # the run's record is its checkpoint and VTK series, not one step's substeps
    assert info.value.partial is None and ".partial" not in str(info.value)
    assert sio.load_checkpoint(checkpoint_path(tmp_path)).step == 3
    assert sorted({e.time for e in sio.read_pvd(tmp_path / "result.pvd")}) == [0.0, 0.01, 0.02, 0.03]


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from skfiber.demos.hanging_bundle import build_model
    from skfiber.run import run_simulation
    out, resume = sys.argv[1], sys.argv[2] == "resume"
    slow = (lambda state, info: time.sleep(0.05)) if not resume else None
    run_simulation(build_model(1), t_end=0.3, dt=0.01, out_dir=out, checkpoint_every=4,
                   resume=resume, progress=False, callback=slow)
    """
)


def _pvd_steps(path) -> int:
    try:
        return len(ET.parse(path).getroot().find("Collection").findall("DataSet"))
    except (FileNotFoundError, ET.ParseError, AttributeError):
        return 0


def test_killed_run_leaves_valid_series_and_resumes(tmp_path, reference):
    model, ref = reference
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(script), str(out), "fresh"])
    try:
        deadline = time.monotonic() + 60
        while _pvd_steps(out / "result.pvd") < 11 and time.monotonic() < deadline:
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # the series on disk is valid: XML parses, every listed file is complete
    entries = sio.read_pvd(out / "result.pvd")
    n_written = len(entries)
    assert 11 <= n_written < 31
    assert [e.time for e in entries] == [n * DT for n in range(n_written)]
    for e in entries:
        assert meshio.read(out / e.file).points.shape[0] == 99
    try:
        import pyvista as pv
    except ImportError:  # the viz extra is optional; meshio has read every file above
        pv = None
    if pv is not None:
        assert len(pv.get_reader(str(out / "result.pvd")).time_values) == n_written
    ck = sio.load_checkpoint(checkpoint_path(out))
    assert ck.step % 4 == 0 and ck.step >= 8
    # resume in a new process and compare with the uninterrupted run
    done = subprocess.run([sys.executable, str(script), str(out), "resume"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    final = sio.load_checkpoint(checkpoint_path(out))
    assert final.step == 30
    assert _diff(final.state, ref.final_state) <= 1e-12
    assert [e.time for e in sio.read_pvd(out / "result.pvd")] == [n * DT for n in range(31)]
    assert not list(out.glob(".*tmp*")), "temporary files of the killed run were not cleaned up"


def test_an_error_mid_run_keeps_the_last_finished_step(tmp_path):
    """An error that is not a failed step (here a prescribed motion that returns nan after 0.3 s) keeps the
    last finished step in the checkpoint, as a failed step does, though the next periodic checkpoint (every
    50 steps) was far off: the run resumes from there."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)

    def model(bad: bool) -> sf.Model:
        m = sf.Model([fiber]); m.fix(fiber, "start"); m.add_gravity()
        m.prescribe(fiber, "end", lambda t: (np.nan if bad and 0.3 < t < 0.45 else 0.0, 0.0, 0.0))
        return m

    with pytest.raises(ValueError, match="returned"):
        run_simulation(model(True), t_end=0.5, dt=0.01, out_dir=tmp_path, progress=False)
    kept = sio.load_checkpoint(checkpoint_path(tmp_path))
    assert kept.step == 30 and kept.state.t == pytest.approx(0.30)
    resumed = run_simulation(model(False), t_end=0.5, dt=0.01, out_dir=tmp_path, progress=False, resume=True)
    assert resumed.steps == 50 and resumed.resumed_from == 30


def test_run_simulation_reports_to_a_progress_object(tmp_path):
    """progress=Progress(stream=…): the run's lines go to that stream (the documented alternative to True)."""
    import io

    stream = io.StringIO()
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    result = run_simulation(model, t_end=0.03, dt=0.01, out_dir=tmp_path, progress=srun.Progress(stream=stream))
    assert result.steps == 3 and "done: 3/3 steps" in stream.getvalue()


def test_the_frame_of_a_ctrl_c_is_kept_where_the_resumed_run_wants_it(tmp_path):
    """The step a Ctrl-C wrote off the output grid is dropped only when the resumed run goes on past it and has
    it off its own grid: resumed to the checkpoint's own time it is the run's last step, and with an
    output_every that has it on the grid it is an output of the resumed run."""
    model = build_model(1)

    def ctrl_c():
        raise KeyboardInterrupt

    def stopped_at_3(folder):
        callback, _ = stopping_at_call(3, ctrl_c)
        run_simulation(model, t_end=0.12, dt=DT, out_dir=folder, output_every=2, checkpoint_every=4,
                       callback=callback, progress=False)
        assert [e.time for e in sio.read_pvd(folder / "result.pvd")] == pytest.approx([0.0, 0.02, 0.03])

    stopped_at_3(tmp_path / "a")
    run_simulation(model, t_end=0.03, dt=DT, out_dir=tmp_path / "a", output_every=2, checkpoint_every=4,
                   resume=True, progress=False)
    assert [e.time for e in sio.read_pvd(tmp_path / "a" / "result.pvd")] == pytest.approx([0.0, 0.02, 0.03])
    stopped_at_3(tmp_path / "b")
    run_simulation(model, t_end=0.12, dt=DT, out_dir=tmp_path / "b", output_every=3, checkpoint_every=4,
                   resume=True, progress=False)
    assert [e.time for e in sio.read_pvd(tmp_path / "b" / "result.pvd")] == pytest.approx(
        [0.0, 0.02, 0.03, 0.06, 0.09, 0.12])
    assert _listed_files_exist(tmp_path / "a") and _listed_files_exist(tmp_path / "b")


def test_resume_from_a_time_just_below_its_grid_point(tmp_path, reference):
    """29 steps of 0.01 s end at t = 0.29 in floating point, just below 29 · 0.01: the resumed run still takes its
    next step to 0.30 (it once computed its grid index from the rounded-down quotient and took 0.29 again)."""
    model, ref = reference
    first = run_simulation(model, t_end=0.29, dt=DT, out_dir=tmp_path, checkpoint_every=5, progress=False)
    assert first.final_state.t / DT < 29  # (the case: the quotient falls short of the step count)
    resumed = run_simulation(model, t_end=0.3, dt=DT, out_dir=tmp_path, checkpoint_every=5, resume=True,
                             progress=False)
    assert resumed.steps == 30 and _diff(resumed.final_state, ref.final_state) <= 1e-12


def _taut_string(n=4):
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model, fiber


def test_a_fresh_run_without_checkpoints_removes_an_older_runs_checkpoint(tmp_path):
    """A fresh run in a folder that holds another run's checkpoint removes it, so that a later resume cannot
    continue the other run."""
    model, _ = _taut_string()
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, checkpoint_every=1, progress=False)
    assert checkpoint_path(tmp_path).exists()
    run_simulation(model, t_end=0.03, dt=0.01, out_dir=tmp_path, checkpoint_every=None, progress=False)
    assert not checkpoint_path(tmp_path).exists()   # a later resume cannot pick up the other run's state
    with pytest.raises(FileNotFoundError):
        run_simulation(model, t_end=0.05, dt=0.01, out_dir=tmp_path, resume=True, progress=False)


def test_a_resume_refuses_a_series_that_another_run_wrote_since(tmp_path):
    """Two runs' series in one folder: a run stops with its checkpoint, another run (its own checkpoint file)
    writes the series of the same name there; resuming the first refuses to join the two series, and leaves
    the other run's series as it was.  A series of this run resumes, and a .pvd of an older skfiber (no id)
    is continued."""
    model, _ = _taut_string()
    first = tmp_path / "first.npz"
    run_simulation(model, t_end=0.03, dt=0.01, out_dir=tmp_path, checkpoint_file=first, progress=False)
    first_id = sio.pvd_series_id(tmp_path / "result.pvd")
    assert first_id and sio.load_checkpoint(first).series == first_id
    run_simulation(model, t_end=0.025, dt=0.005, out_dir=tmp_path, checkpoint_file=tmp_path / "other.npz",
                   progress=False)
    other = (tmp_path / "result.pvd").read_text()
    with pytest.raises(ValueError, match="not the series of the run to resume"):
        run_simulation(model, t_end=0.05, dt=0.01, out_dir=tmp_path, checkpoint_file=first, resume=True,
                       progress=False)
    assert (tmp_path / "result.pvd").read_text() == other
    resumed = run_simulation(model, t_end=0.04, dt=0.005, out_dir=tmp_path, checkpoint_file=tmp_path / "other.npz",
                             resume=True, progress=False)
    assert resumed.steps == 8 and sio.pvd_series_id(tmp_path / "result.pvd") != first_id
    # a .pvd without an id (an older skfiber's): continued, and given the checkpoint's id
    entries = sio.read_pvd(tmp_path / "result.pvd")
    sio.write_pvd(tmp_path / "result.pvd", entries)
    assert sio.pvd_series_id(tmp_path / "result.pvd") is None
    run_simulation(model, t_end=0.05, dt=0.005, out_dir=tmp_path, checkpoint_file=tmp_path / "other.npz",
                   resume=True, progress=False)
    assert sio.pvd_series_id(tmp_path / "result.pvd") == sio.load_checkpoint(tmp_path / "other.npz").series


def test_a_fresh_run_says_when_it_replaces_an_unfinished_one(tmp_path):
    """Starting afresh where a run stopped before its end warns, naming the time reached and how to continue;
    replacing a finished run does not."""
    model, _ = _taut_string()
    def ctrl_c():
        raise KeyboardInterrupt

    callback, _ = stopping_at_call(2, ctrl_c)
    stopped = run_simulation(model, t_end=0.05, dt=0.01, out_dir=tmp_path, callback=callback, progress=False)
    assert stopped.interrupted and stopped.final_state.t == pytest.approx(0.02)
    with pytest.warns(UserWarning, match=r"held a run stopped at t = 0\.02 s of 0\.05 s.*resume=True"):
        run_simulation(model, t_end=0.01, dt=0.01, out_dir=tmp_path, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_simulation(model, t_end=0.01, dt=0.01, out_dir=tmp_path, progress=False)


def test_a_series_id_edited_by_hand_counts_as_none(tmp_path):
    model, _ = _taut_string()
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, progress=False)
    pvd = tmp_path / "result.pvd"
    pvd.write_text(pvd.read_text().replace("skfiber series ", "skfiber series edited by hand "))
    assert sio.pvd_series_id(pvd) is None
    resumed = run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path, resume=True, progress=False)
    assert resumed.steps == 4 and sio.pvd_series_id(pvd) == sio.load_checkpoint(checkpoint_path(tmp_path)).series
    with pytest.raises(ValueError, match="series_id must be letters"):
        sio.VTKSeries(tmp_path, model, resume_time=0.04, series_id="a b")


_HOLDER = """
import sys, time
from pathlib import Path
from skfiber.io import hold_run

holds = [hold_run(sys.argv[1], name) for name in sys.argv[3:]]
Path(sys.argv[2]).write_text("held")
time.sleep(60)
"""


def test_a_second_process_writing_the_same_run_is_refused_and_a_killed_one_leaves_no_lock(tmp_path, capsys):
    """While a process writes a run (its series and checkpoint) in a folder, a run of the same name there is
    refused before it touches a file (the API's BlockingIOError, the command's one-line error, exit code 2);
    a run of another name in that folder is not; once the first process dies, even by SIGKILL, it runs."""
    from skfiber.cli import main as cli_main

    out, marker = tmp_path / "out", tmp_path / "held"
    out.mkdir()
    (out / "hanging_bundle.pvd").write_text("the other run's")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), str(marker), "hanging_bundle", "upper_limb"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_file(marker, holder, timeout=60, what="the other process did not take the run")
        model = build_model(1)
        with pytest.raises(BlockingIOError, match="another process is writing the run 'hanging_bundle' there"):
            run_simulation(model, t_end=0.02, dt=0.01, out_dir=out, name="hanging_bundle", progress=False)
        with pytest.raises(BlockingIOError):
            sio.VTKSeries(out, model, name="hanging_bundle")
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["hanging_bundle.pvd"]
        assert (out / "hanging_bundle.pvd").read_text() == "the other run's"  # untouched
        other = run_simulation(model, t_end=0.02, dt=0.01, out_dir=out, name="other", progress=False)
        assert other.steps == 2
        assert cli_main(["run", "hanging-bundle", "--out", str(out), "--", "--t-end", "0.02"]) == 2
        said = capsys.readouterr().err
        assert "another process is writing the run 'hanging_bundle'" in said and "Traceback" not in said
        assert (out / "hanging_bundle.pvd").read_text() == "the other run's"  # (the demo touched nothing either)
        assert cli_main(["run", "upper-limb", "--out", str(out), "--", "--t-end", "0.1"]) == 2  # (its CSV, PNG files)
        said = capsys.readouterr().err
        assert "another process is writing the run 'upper_limb'" in said and "Traceback" not in said
        assert [p.name for p in out.iterdir() if p.suffix in (".csv", ".png", ".npz")] == ["other_checkpoint.npz"]
    finally:
        holder.kill()
        holder.communicate()
    run = run_simulation(build_model(1), t_end=0.02, dt=0.01, out_dir=out,
                         name="hanging_bundle", progress=False)
    assert run.steps == 2 and sio.read_pvd(out / "hanging_bundle.pvd")


def test_one_process_may_write_a_run_again_while_its_series_is_open(tmp_path):
    """The hold is the process's: a notebook that makes a series again, or runs again into the same folder,
    while the earlier objects live, is not refused."""
    model = build_model(1)
    first = sio.VTKSeries(tmp_path, model, name="sag")
    again = sio.VTKSeries(tmp_path, model, name="sag")
    run = run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, name="sag", progress=False)
    assert run.steps == 2
    first.close()
    again.close()
    with pytest.raises(ValueError, match="the series 'sag' .* was closed"):
        first.write(model.initial_state(), 0)


def test_a_run_that_fails_lets_its_folder_go_while_its_error_is_kept(tmp_path):
    """An error in a run (here its callback's) ends the hold at once, not when the error is collected (a notebook
    keeps the last one): another process may then write a run of that name there."""
    def fails(state, info):
        raise RuntimeError("a callback that fails")

    with pytest.raises(RuntimeError) as kept:
        run_simulation(build_model(1), t_end=0.02, dt=0.01, out_dir=tmp_path, name="sag", progress=False,
                       callback=fails)
    other = subprocess.run([sys.executable, "-c", "import sys; from skfiber.io import hold_run; "
                            "hold_run(sys.argv[1], 'sag').release(); print('held')", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert other.stdout.strip() == "held", other.stderr[-2000:]
    assert kept.value is not None


def test_a_folder_that_cannot_be_locked_is_said_and_the_run_goes_on(tmp_path, monkeypatch):
    """A file system without locks (NFS mounted without them, some FUSE mounts): a warning, and the run runs."""
    import filelock

    def no_locks(self, *args, **kwargs):
        raise NotImplementedError("flock: function not implemented")

    monkeypatch.setattr(filelock.FileLock, "acquire", no_locks)
    with pytest.warns(UserWarning, match="cannot be locked .*NotImplementedError.* would not be stopped"):
        run = run_simulation(build_model(1), t_end=0.02, dt=0.01, out_dir=tmp_path, name="sag", progress=False)
    assert run.steps == 2
