"""The hanging-bundle demo: the damped motion settles on the static equilibrium."""
import numpy as np
import pytest

from skfiber import run as run_module
from skfiber.demos import hanging_bundle
from skfiber.run import run_simulation

from conftest import interrupted_at_first_step


def test_bundle_settles_on_static_equilibrium():
    res = hanging_bundle.run(level=1, t_end=1.5, progress=False)
    assert res.run.steps == 150 and res.times[-1] == 1.5
    np.testing.assert_allclose(res.final_sag, res.static_sag, rtol=5e-3)
    # activation tightens a fiber: less sag for larger α
    assert res.static_sag[0] > res.static_sag[1] > res.static_sag[2] > 0.03
    # it overshoots on the way down
    assert res.max_sag > 1.1 * res.static_sag[0]


def test_main_prints_summary(capsys):
    assert hanging_bundle.main(["--t-end", "0.03", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("summary: max_sag_m=") and "steps=3" in lines[-1]


def test_a_checkpoint_without_the_level_still_resumes(tmp_path):
    """A checkpoint of an earlier version records no options: its resume is checked by the model's fingerprint
    alone (the same level resumes), one that records the level is checked by it too."""
    model = hanging_bundle.build_model(1)
    run_simulation(model, t_end=0.02, dt=hanging_bundle.time_step(1), out_dir=tmp_path, name=hanging_bundle.NAME,
                   checkpoint_every=1, progress=False)  # (no options, as before)
    res = hanging_bundle.run(level=1, out=str(tmp_path), t_end=0.04, resume=True, progress=False)
    assert res.run.steps == 4 and res.times[-1] == 0.04
    with pytest.raises(ValueError, match="belongs to another model"):
        hanging_bundle.run(level=2, out=str(tmp_path), t_end=0.06, resume=True, progress=False)


def test_resume_checks_the_samples_and_the_series(tmp_path):
    """A resume with other VTK samples is refused by name (the series would mix them); a damaged step of the
    series the history is read back from is named, with the fix."""
    hanging_bundle.run(level=1, out=str(tmp_path), t_end=0.04, checkpoint_every=2, progress=False)
    with pytest.raises(ValueError, match="points_per_element=4; this run has points_per_element=1"):
        hanging_bundle.run(level=1, out=str(tmp_path), t_end=0.06, resume=True, progress=False, points_per_element=1)
    damaged = tmp_path / f"{hanging_bundle.NAME}_fibers_000002.vtu"
    damaged.write_bytes(damaged.read_bytes()[:300])
    with pytest.raises(ValueError, match="000002.vtu cannot be read.*run again without --resume"):
        hanging_bundle.run(level=1, out=str(tmp_path), t_end=0.06, resume=True, progress=False)
    damaged.unlink()
    with pytest.raises(FileNotFoundError, match="000002.vtu"):
        hanging_bundle.run(level=1, out=str(tmp_path), t_end=0.06, resume=True, progress=False)


def test_an_interrupted_run_says_how_to_continue_and_the_resumed_summary_says_where_it_began(capsys, monkeypatch,
                                                                                         tmp_path):
    simulate, calls = run_module.simulate, []

    def second_step_interrupted(*args, **kwargs):  # (run_simulation calls simulate once a step)
        calls.append(1)
        return (interrupted_at_first_step(simulate) if len(calls) == 2 else simulate)(*args, **kwargs)

    monkeypatch.setattr(run_module, "simulate", second_step_interrupted)
    assert hanging_bundle.main(["--t-end", "0.03", "--no-progress", "--out", str(tmp_path)]) == 130
    out = capsys.readouterr().out
    assert "continue with the same options and --resume" in out and "interrupted=1" in out.splitlines()[-1]
    monkeypatch.undo()
    assert hanging_bundle.main(["--t-end", "0.03", "--no-progress", "--out", str(tmp_path), "--resume"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "steps=3" in last and "resumed_from_step=1" in last and "interrupted" not in last
