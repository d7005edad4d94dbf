"""Ctrl-C while a compiled kernel runs: numba reports it as ``SystemError: CPUDispatcher(…) returned a result with
an exception set`` whose cause is the KeyboardInterrupt (the signal handler raised it in a call back into Python).
Every place that keeps a run's steps on Ctrl-C takes that SystemError for the Ctrl-C it is; another SystemError
is an error."""
import warnings

import pytest

import skfiber as sf
from skfiber.core.interrupt import caused_by_ctrl_c
from skfiber.rigid import simulate_rigid
from skfiber.run import run_simulation
from skfiber.study.execute import execute_run

from conftest import hanging_rod, stopping_at_call


def numba_ctrl_c():
    """Raise what numba raises for a Ctrl-C in a compiled function."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as cause:
        raise SystemError("CPUDispatcher(<function pairs_loop_parallel>) returned a result with an exception "
                          "set") from cause


def other_system_error():
    raise SystemError("a genuine error")


def sagging_fiber():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model


def at_third_step(raise_it):
    def callback(state, info):
        if info.step == 3:
            raise_it()
    return callback


def test_the_cause_is_found_in_the_chain():
    with pytest.raises(SystemError) as info:
        numba_ctrl_c()
    assert caused_by_ctrl_c(info.value) and not caused_by_ctrl_c(SystemError("a genuine error"))


@pytest.mark.parametrize("options", [dict(dt=0.01), dict(dt=0.01, method="bdf2", rtol=1e-3, atol=1e-6)])
def test_simulate_keeps_the_steps_done(options):
    with pytest.warns(UserWarning, match="simulation interrupted"):
        result = sf.simulate(sagging_fiber(), t_end=1.0, callback=at_third_step(numba_ctrl_c), progress=False,
                             **options)
    assert result.interrupted and result.times.size >= 2


@pytest.mark.parametrize("options", [dict(dt=0.01), dict(dt=0.01, method="bdf2", rtol=1e-3, atol=1e-6)])
def test_simulate_raises_keyboard_interrupt_when_asked(options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyboardInterrupt):
            sf.simulate(sagging_fiber(), t_end=1.0, callback=at_third_step(numba_ctrl_c), progress=False,
                        on_interrupt="raise", **options)


def test_simulate_lets_another_system_error_through():
    with pytest.raises(SystemError, match="a genuine error"):
        sf.simulate(sagging_fiber(), t_end=1.0, dt=0.01, callback=at_third_step(other_system_error), progress=False)


def test_run_simulation_checkpoints_and_reports_the_interruption(tmp_path):
    result = run_simulation(sagging_fiber(), t_end=1.0, dt=0.01, out_dir=tmp_path, progress=False,
                            callback=at_third_step(numba_ctrl_c))
    assert result.interrupted
    assert any(p.name.endswith("_checkpoint.npz") for p in tmp_path.iterdir())


@pytest.mark.parametrize("schedule", [dict(dt=0.01), dict(dt=0.01, method="bdf2", rtol=1e-6, atol=1e-8)])
def test_simulate_rigid_keeps_the_steps_done_and_raises_when_asked(schedule):
    system = hanging_rod()
    stop_at_the_third, calls = stopping_at_call(3, numba_ctrl_c)
    with pytest.warns(UserWarning, match="rigid simulation interrupted"):
        part = simulate_rigid(system, [0.3], [0.0], t_end=0.1, callback=stop_at_the_third, **schedule)
    assert part.interrupted
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        simulate_rigid(system, [0.3], [0.0], t_end=0.1, callback=stop_at_the_third, on_interrupt="raise", **schedule)


def test_a_study_run_stopped_by_ctrl_c_is_not_recorded_as_failed():
    def run(params):
        numba_ctrl_c()

    with pytest.raises(KeyboardInterrupt):
        execute_run(run, 0, {"a": 1.0})
    record, _ = execute_run(lambda params: other_system_error(), 1, {"a": 1.0})
    assert record["status"] == "failed" and "a genuine error" in record["error"]
