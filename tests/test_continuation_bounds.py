"""Bounded work: load stepping that stalls says where (no endless creeping), a sliver of a last time step
is joined to the step before it."""
import numpy as np
import pytest

import skfiber as sf
import skfiber.statics as statics
from skfiber.core import ConvergenceError
from skfiber.newton import NewtonReport


def tensioned_fiber():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(sigma0=30.0))
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity()
    return model


def test_stalled_load_stepping_stops_with_where(monkeypatch):
    """Newton fails for every load factor above 0.5 (a stand-in for a limit point): the continuation
    stops after a bounded number of solves, naming the load factor where it stalled."""
    real = statics.newton
    calls = []

    def newton(evaluate, z, solver, *, step, **kwargs):
        calls.append(step)
        if float(step.split()[-1]) > 0.5:
            raise ConvergenceError("stand-in failure", t=0.0, step=step, residual_history=[1.0])
        return real(evaluate, z, solver, step=step, **kwargs)

    monkeypatch.setattr(statics, "newton", newton)
    with pytest.raises(ConvergenceError, match=r"load stepping stalled at load factor 0\.5 .*8 bisections of an increment of 0\.5 did not help"):
        sf.solve_static(tensioned_fiber(), load_steps=2, max_bisections=8, relaxation=False)
    assert len(calls) == 1 + 9  # 0 → 0.5, then 0.5 and its 8 halvings fail


def test_creeping_continuation_is_bounded(monkeypatch):
    """Newton succeeds only for tiny increments: the continuation creeps (bisect, succeed, grow by 1.5,
    bisect …) and used to go on without end; it stops after the bounded number of solves."""
    calls = []
    last = [0.0]

    def newton(evaluate, z, solver, *, step, **kwargs):
        calls.append(step)
        s = float(step.split()[-1])
        if s - last[0] > 1e-3:
            raise ConvergenceError("stand-in failure", t=0.0, step=step, residual_history=[1.0])
        last[0] = s
        return z, NewtonReport(1, [0.0])  # "converged" (the stand-in does not solve)

    monkeypatch.setattr(statics, "newton", newton)
    with pytest.raises(ConvergenceError, match=r"load stepping stalled at load factor .*Newton solves, the most"):
        sf.solve_static(tensioned_fiber(), load_steps=1, max_bisections=10, relaxation=False)
    assert len(calls) <= statics.ATTEMPTS_PER_STEP * 11 + 1


@pytest.mark.parametrize("value", [-3, 2.5, True])
def test_max_bisections_is_checked(value):
    with pytest.raises(ValueError, match="max_bisections must be an integer"):
        sf.solve_static(tensioned_fiber(), max_bisections=value)


def test_sliver_last_step_is_joined():
    """t_end = 0.3000065 with dt = 0.01 left a last step of 6.5e-6 s, where Newton stagnated at round-off;
    now the last step is 0.0100065 s and the run ends at t_end."""
    model = tensioned_fiber()
    result = sf.simulate(model, t_end=0.3000065, dt=0.01, progress=False)
    assert len(result.times) == 31 and result.times[-1] == 0.3000065
    assert np.diff(result.times)[-1] == pytest.approx(0.0100065, rel=1e-9)
    # a last step of 2 % of dt stays a step of its own
    result = sf.simulate(model, t_end=0.0302, dt=0.01, progress=False)
    assert len(result.times) == 5 and result.times[-1] == 0.0302
