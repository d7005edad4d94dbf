"""The start transient of the upper limb: every level takes it with the same step (and the run driver's substeps)."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import upper_limb
from skfiber.demos.hanging_bundle import build_model
from skfiber.run import run_simulation

DT = 0.01


def _first_two_in_quarters(n):
    return 4 if n <= 2 else 1


def test_run_simulation_takes_the_substeps_asked_for():
    """substeps(n) = 4 for the first two steps: the run equals per-step simulate calls with dt/4 there and dt after,
    bit for bit; the callback sees the step ends only; without substeps the run differs."""
    model = build_model(1)
    seen = []
    run = run_simulation(model, t_end=0.04, dt=DT, progress=False, checkpoint_every=None,
                         substeps=_first_two_in_quarters, callback=lambda s, info: seen.append((s.t, info.step)))
    assert seen == [(0.01, 1), (0.02, 2), (0.03, 3), (0.04, 4)]
    state = model.initial_state()
    for n in range(1, 5):
        state = sf.simulate(model, t_end=n * DT, dt=DT / _first_two_in_quarters(n), state=state,
                            progress=False).final_state
    np.testing.assert_array_equal(run.final_state.u, state.u)
    np.testing.assert_array_equal(run.final_state.v, state.v)
    whole = run_simulation(model, t_end=0.04, dt=DT, progress=False, checkpoint_every=None)
    assert np.abs(whole.final_state.u - state.u).max() > 1e-9


def test_a_resume_inside_the_substepped_steps_is_exact(tmp_path):
    """Checkpointed after step 1 (of the two substepped ones) and resumed: the same end state bit for bit."""
    model = build_model(1)
    whole = run_simulation(model, t_end=0.04, dt=DT, progress=False, checkpoint_every=None,
                           substeps=_first_two_in_quarters)
    run_simulation(model, t_end=0.01, dt=DT, out_dir=tmp_path, progress=False, checkpoint_every=1,
                   substeps=_first_two_in_quarters)
    resumed = run_simulation(model, t_end=0.04, dt=DT, out_dir=tmp_path, progress=False, resume=True,
                             substeps=_first_two_in_quarters)
    assert resumed.resumed_from == 1
    np.testing.assert_array_equal(resumed.final_state.u, whole.final_state.u)


@pytest.mark.parametrize("bad", [0, 1.5, True])
def test_substeps_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match=r"substeps\(1\) must be an integer ≥ 1"):
        run_simulation(build_model(1), t_end=0.02, dt=DT, progress=False, checkpoint_every=None,
                       substeps=lambda n: bad)


def test_start_substeps_of_the_levels():
    """Table 5's steps: levels 1–3 take the first 1/8 s in substeps of the level-4 step 1/256 s; level 4 is
    unchanged; start_dt None keeps every step whole."""
    assert upper_limb.START_DT == 1 / 256 and upper_limb.START_TIME == 0.125
    wanted = {1: (4, 8), 2: (8, 4), 3: (16, 2), 4: (0, 1)}
    for level, (_, n_steps) in upper_limb.LEVELS.items():
        dt = upper_limb.T_END / n_steps
        assert upper_limb.start_substeps(dt) == wanted[level]
        assert upper_limb.start_substeps(dt, None) == (0, 1)
        assert upper_limb.run_options(level)[3]["start_dt"] == 1 / 256
    assert upper_limb.start_substeps(0.1) == (2, 26)   # dt not a multiple: substeps ≤ START_DT
    with pytest.raises(ValueError, match="start_dt"):
        upper_limb.start_substeps(1 / 32, -1.0)


def test_levels_three_and_four_agree_in_the_start_transient():
    """The biceps force rings in the first 0.06 s (1.3 kN at 8 ms, slack near 30 ms).  Taken with the same step
    at both levels, the level-3 and level-4 meshes agree there (measured over 1/16 s: forces 0.03 % of the
    largest, elbow angle 7e-5°); with Table 5's uniform steps (1/128 and 1/256 s) they differ by 21 % and
    0.52°: the difference is the time step's, not the mesh's."""
    same = [upper_limb.run(level, t_end=0.0625, progress=False) for level in (3, 4)]
    assert upper_limb.force_difference(*same) < 0.002 and upper_limb.angle_difference(*same) < 0.01
    uniform3 = upper_limb.run(3, t_end=0.0625, progress=False, start_dt=None)
    assert len(uniform3.times) == len(same[0].times) == 9   # the recorded times are the level's steps
    assert np.array_equal(uniform3.times, same[0].times)
    assert upper_limb.force_difference(uniform3, same[1]) > 0.1
    assert upper_limb.angle_difference(uniform3, same[1]) > 0.3


def test_a_checkpoint_of_other_start_steps_is_refused(tmp_path):
    path = tmp_path / "c.npz"
    upper_limb.run(1, t_end=0.0625, progress=False, checkpoint=path, fiber_contact=False)
    with pytest.raises(ValueError, match="start_dt=0.00390625; this run has start_dt=None"):
        upper_limb.run(1, t_end=0.125, progress=False, checkpoint=path, resume=True, fiber_contact=False,
                       start_dt=None)
