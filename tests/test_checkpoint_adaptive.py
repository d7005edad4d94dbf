"""Checkpoints and resume of error-controlled runs (run_simulation with rtol/atol)."""
import shutil

import numpy as np
import pytest

import skfiber as sf
from skfiber import io as sio
from skfiber.demos.hanging_bundle import build_model
from skfiber.run import checkpoint_path, run_simulation

DT = 0.01      # the interval of the output times
T_END = 0.2
TOL = dict(method="bdf2", rtol=1e-3, atol=1e-5)


def same(a: sf.State, b: sf.State) -> bool:
    return a.t == b.t and np.array_equal(a.u, b.u) and np.array_equal(a.v, b.v)


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted error-controlled run with a checkpoint every 4 output times, and the checkpoint
    written after output time 8 (copied by a callback at output time 10)."""
    model = build_model(1)
    folder = __import__("tempfile").mkdtemp()
    kept = {}

    def keep(state, info):
        if info.step == 10:
            kept["checkpoint"] = sio.load_checkpoint(f"{folder}/run.npz")

    run = run_simulation(model, t_end=T_END, dt=DT, checkpoint_file=f"{folder}/run.npz", checkpoint_every=4,
                         callback=keep, progress=False, **TOL)
    return model, run, kept["checkpoint"]


def test_an_error_controlled_run_of_the_driver(reference):
    """Output times on the regular grid, counts of accepted and rejected steps, and a checkpoint of the
    step control; without checkpoints the driver is simulate bit for bit."""
    model, run, mid = reference
    assert run.steps == run.n_steps == 20 and run.final_state.t == T_END
    counts = run.step_counts
    assert counts.accepted > 20 and counts.newton_iterations == run.newton_iterations > 0
    assert "output times" in run.summary() and "rejected" in run.summary()
    assert mid.step == 8 and mid.control and mid.options["error_control"]["rtol"] == 1e-3
    assert mid.state.has_history and mid.state.t >= 8 * DT
    plain = run_simulation(model, t_end=T_END, dt=DT, checkpoint_every=None, progress=False, **TOL)
    sim = sf.simulate(model, t_end=T_END, dt=DT, progress=False, **TOL)
    assert same(plain.final_state, sim.final_state) and plain.step_counts == sim.step_counts
    # the uninterrupted run with checkpoints drops its kept factorization at each: Newton's tolerance apart
    scale = np.abs(sim.final_state.u).max()
    assert np.abs(run.final_state.u - sim.final_state.u).max() <= 1e-6 * scale


def test_resume_from_a_checkpoint_is_exact(tmp_path, reference):
    """Resumed from the checkpoint after output time 8, the run takes the same steps: the same final state
    bit for bit, the same counts."""
    model, run, mid = reference
    sio.save_checkpoint(tmp_path / "mid.npz", mid)
    outputs = []
    resumed = run_simulation(model, t_end=T_END, dt=DT, checkpoint_file=tmp_path / "mid.npz", checkpoint_every=4,
                             resume=True, progress=False, callback=lambda s, info: outputs.append(info.step), **TOL)
    assert resumed.resumed_from == 8 and resumed.steps == 20
    assert outputs == list(range(9, 21))
    assert same(resumed.final_state, run.final_state)
    assert resumed.step_counts == run.step_counts
    # nothing left to do: resuming the finished run returns its state
    again = run_simulation(model, t_end=T_END, dt=DT, checkpoint_file=tmp_path / "mid.npz", resume=True,
                           progress=False, **TOL)
    assert again.steps == 20 and same(again.final_state, run.final_state)


def test_ctrl_c_checkpoints_the_last_accepted_step(tmp_path, reference):
    """Ctrl-C at output time 7: the checkpoint holds the last accepted step; the resumed run fills the VTK
    series on the regular grid and ends within Newton's tolerance of the uninterrupted run."""
    model, run, _ = reference

    def interrupt(state, info):
        if info.step == 7:
            raise KeyboardInterrupt

    first = run_simulation(model, t_end=T_END, dt=DT, out_dir=tmp_path, checkpoint_every=4, callback=interrupt,
                           progress=False, **TOL)
    assert first.interrupted and first.steps == 7
    ck = sio.load_checkpoint(checkpoint_path(tmp_path))
    assert ck.step == 7 and 6 * DT < ck.state.t < 8 * DT   # (the interrupt came during output 7's step)
    outputs = []
    resumed = run_simulation(model, t_end=T_END, dt=DT, out_dir=tmp_path, checkpoint_every=4, resume=True,
                             progress=False, callback=lambda s, info: outputs.append(info.step), **TOL)
    assert resumed.steps == 20 and outputs == list(range(8, 21))
    times = [e.time for e in sio.read_pvd(tmp_path / "result.pvd")]
    np.testing.assert_allclose(times, DT * np.arange(21), rtol=0, atol=1e-12)
    scale = np.abs(run.final_state.u).max()
    assert np.abs(resumed.final_state.u - run.final_state.u).max() <= 1e-6 * scale


def test_error_control_options_of_the_driver(tmp_path):
    model = build_model(1)
    with pytest.raises(ValueError, match="needs method='bdf2'"):
        run_simulation(model, t_end=0.05, dt=DT, rtol=1e-3, progress=False)
    with pytest.raises(ValueError, match="substeps belong to fixed steps"):
        run_simulation(model, t_end=0.05, dt=DT, substeps=lambda n: 2, progress=False, **TOL)
    with pytest.raises(ValueError, match="h_min and h_max belong"):
        run_simulation(model, t_end=0.05, dt=DT, h_max=1e-3, progress=False)
    run_simulation(model, t_end=0.03, dt=DT, out_dir=tmp_path, progress=False)  # fixed steps
    with pytest.raises(ValueError, match="error_control not set"):
        run_simulation(model, t_end=0.05, dt=DT, out_dir=tmp_path, resume=True, progress=False, **TOL)
    shutil.rmtree(tmp_path)
    run_simulation(model, t_end=0.03, dt=DT, out_dir=tmp_path, progress=False, **TOL)
    with pytest.raises(ValueError, match="error_control"):
        run_simulation(model, t_end=0.03, dt=DT, out_dir=tmp_path, resume=True, progress=False,
                       **{**TOL, "rtol": 1e-4})
    with pytest.raises(ValueError, match="error_control"):  # another end: other output times
        run_simulation(model, t_end=0.05, dt=DT, out_dir=tmp_path, resume=True, progress=False, **TOL)


def test_ctrl_c_between_output_times_keeps_the_accepted_steps(tmp_path, monkeypatch):
    """Output times far apart: a Ctrl-C in a Newton step before the first output time still checkpoints the
    last accepted step, and the counts of the interrupted run are reported (also without checkpoints)."""
    import skfiber.adaptive
    model = build_model(1)
    real, calls = skfiber.adaptive.implicit_step, {"n": 0}

    def interrupted_in_step_six(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(skfiber.adaptive, "implicit_step", interrupted_in_step_six)
    first = run_simulation(model, t_end=0.2, dt=0.2, out_dir=tmp_path, progress=False, **TOL)
    assert first.interrupted and first.steps == 0 and first.newton_iterations > 0
    ck = sio.load_checkpoint(checkpoint_path(tmp_path))
    assert ck.step == 0 and ck.state.t > 0 and ck.state.has_history
    calls["n"] = 0
    bare = run_simulation(model, t_end=0.2, dt=0.2, checkpoint_every=None, progress=False, **TOL)
    assert bare.interrupted and bare.newton_iterations == bare.step_counts.newton_iterations > 0
    monkeypatch.setattr(skfiber.adaptive, "implicit_step", real)
    resumed = run_simulation(model, t_end=0.2, dt=0.2, out_dir=tmp_path, resume=True, progress=False, **TOL)
    assert resumed.steps == 1 and resumed.final_state.t == 0.2


def test_error_control_inputs_are_checked_before_anything_is_written(tmp_path):
    model = build_model(1)
    run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False, **TOL)
    files = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match="rtol must be a finite number ≥ 0, got -0.001"):
        run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False, **{**TOL, "rtol": -1e-3})
    with pytest.raises(TypeError, match="rtol must be a number, got 'tight'"):
        run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False, **{**TOL, "rtol": "tight"})
    with pytest.raises(TypeError, match="newton_options must be a skfiber.NewtonOptions, got dict"):
        run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False, newton_options={"rtol": 1e-6})
    with pytest.raises(ValueError, match="may not name 'error_control'"):
        run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path, progress=False, options={"error_control": 1},
                       **TOL)
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    # the tolerances are stored as floats: a numpy scalar is taken (and named if it is not a number)
    other = run_simulation(model, t_end=0.02, dt=DT, out_dir=tmp_path / "f32", progress=False,
                           **{**TOL, "rtol": np.float32(1e-3)})
    assert other.steps == 2


def test_a_ctrl_c_during_the_outputs_checkpoints_consistent_counts(tmp_path):
    """A Ctrl-C while outputs are written: the checkpoint's step sizes, Newton counts and accepted steps agree."""
    def interrupt(state, info):
        if info.step == 3:
            raise KeyboardInterrupt

    model = build_model(1)
    run = run_simulation(model, t_end=0.1, dt=0.01, out_dir=tmp_path, checkpoint_every=4, callback=interrupt,
                         progress=False, method="bdf2", rtol=1e-3, atol=1e-5)
    assert run.interrupted
    control = sio.load_checkpoint(checkpoint_path(tmp_path)).control
    assert len(control["step_sizes"]) == len(control["step_iterations"]) == control["counts"][0]
