"""Statics of slack and nearly slack cables: relaxation when Newton fails on an increment."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.materials import passive_kelvin_voigt
from skfiber import relaxation
from skfiber.linalg import ConstrainedSolver
from skfiber.relaxation import relax


def hanging(sigma0=None, n=8):
    law = (passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0.0, eta_tendon=0.0) if sigma0 is None
           else sf.paper_law(sigma0=sigma0))
    f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n, law=law)
    m = sf.Model([f]); m.fix(f, "start"); m.fix(f, "end"); m.add_gravity()
    return m


@pytest.mark.parametrize("load_steps", [1, 10, 100])
def test_slack_cable_converges_for_any_load_steps(load_steps):
    model = hanging(None)  # S(λ = 1) = 0: the straight state's tangent is singular
    result = sf.solve_static(model, load_steps=load_steps)
    assert result.load_factors[-1] == 1.0
    assert any("relaxation" in note for note in result.notes)  # says what was done
    assert "singular tangent" in result.notes[0]
    # independent: continuation in the prestress σ0 = 1e3 → … → 0 Pa by hand, Newton from each equilibrium
    u = None
    for sigma0 in (1e3, 1e2, 10.0, 1.0, 0.1):
        model_p = _with_prestress(sigma0)
        u = (sf.solve_static(model_p, load_steps=10) if u is None
             else sf.solve_static(model_p, state=sf.State(0.0, u, np.zeros_like(u)))).state.u
    by_hand = sf.solve_static(model, state=sf.State(0.0, u, np.zeros_like(u))).state.u
    assert np.max(np.abs(result.state.u - by_hand)) < 1e-8
    assert by_hand[2::6].min() < -0.05  # it sags


def _with_prestress(sigma0):
    law = passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=0.0, eta_tendon=0.0) + sf.materials.prestress(sigma0)
    f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law)
    m = sf.Model([f]); m.fix(f, "start"); m.fix(f, "end"); m.add_gravity()
    return m


@pytest.mark.parametrize("sigma0", [0.0, 1.0, 10.0, 30.0, 100.0])
@pytest.mark.parametrize("mu", [1e3, 1e5])
def test_any_number_of_load_steps_converges_to_one_state(sigma0, mu):
    """Reliability does not depend on load_steps: 1 … 100 all converge, to one equilibrium (without relaxation
    σ0 = 0 failed for every load_steps, σ0 = 1 Pa with μ = 1e5 Pa for 1 and 2, σ0 = 30 Pa for 100)."""
    law = passive_kelvin_voigt(mu_muscle=mu, mu_tendon=mu, eta_muscle=0.0, eta_tendon=0.0) + sf.materials.prestress(sigma0)
    f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law)
    model = sf.Model([f]); model.fix(f, "start"); model.fix(f, "end"); model.add_gravity()
    states = [sf.solve_static(model, load_steps=n).state.u for n in (1, 2, 5, 10, 20, 100)]
    assert max(np.max(np.abs(u - states[0])) for u in states) < 1e-8


def test_relaxation_reports_and_bounds_its_work():
    model = hanging(None, n=4)
    u, report = relax(model, np.zeros(model.n_dofs), t=0.0, load_factor=1.0)
    assert 0 < report.pseudo_steps <= 100 and report.newton_solves >= report.pseudo_steps
    with pytest.raises(sf.ConvergenceError, match="relaxation found no equilibrium in 1 pseudo-steps"):
        relax(model, np.zeros(model.n_dofs), t=0.0, load_factor=1.0, max_pseudo_steps=1)


def test_a_failed_relaxation_is_said_and_not_repeated(monkeypatch):
    import skfiber.statics as statics
    calls = []

    def failing_newton(evaluate, z, solver, *, step, **kwargs):
        raise sf.ConvergenceError("stand-in failure", t=0.0, step=step, residual_history=[1.0])

    def counted_relax(*args, **kwargs):  # a relaxation that fails after 3 Newton solves
        calls.append(1)
        failure = sf.ConvergenceError("relaxation stand-in failure", t=0.0, step="x", residual_history=[1.0])
        failure.newton_solves = 3
        raise failure

    monkeypatch.setattr(statics, "newton", failing_newton)
    monkeypatch.setattr(statics, "relax", counted_relax)
    with pytest.raises(sf.ConvergenceError, match="relaxation was tried and did not help"):
        sf.solve_static(hanging(None, n=4), load_steps=2, max_bisections=2)
    assert len(calls) == 1  # switched off after its failure


def test_the_pseudo_time_step_schedule(monkeypatch):
    """κ (1/Δτ²) grows tenfold after a failed pseudo-step (a shorter pseudo-time step) and follows the
    residual after a converged one, κ ← κ · clip(‖G(uₖ₊₁)‖/‖G(uₖ)‖, 0.1, 10) (switched evolution relaxation);
    the κ of each pseudo-step is read from the Newton call, the norms recomputed here."""
    model = hanging(None, n=4)
    real = relaxation.newton
    pseudo_steps = []  # (κ, uₖ) of each pseudo-step's Newton call

    def recording(function, u, solver, **options):
        if function.__defaults__ is not None:  # a pseudo-step: pseudo(zz, u_k, kap)
            u_k, kappa = function.__defaults__
            pseudo_steps.append((kappa, u_k.copy()))
            if len(pseudo_steps) == 1:
                raise sf.ConvergenceError("a failure forced by the test", t=0.0, step=0, residual_history=[])
        return real(function, u, solver, **options)

    monkeypatch.setattr(relaxation, "newton", recording)
    relax(model, np.zeros(model.n_dofs), t=0.0, load_factor=1.0)
    assert len(pseudo_steps) >= 3
    (k1, u1), (k2, u2), (k3, u3) = pseudo_steps[:3]
    assert k2 == 10.0 * k1 and np.array_equal(u1, u2)  # the failed step is taken again, shorter
    free = ~ConstrainedSolver(model.discretization.assembler, model.constrained_dofs).fixed
    zero = np.zeros(model.n_dofs)

    def norm(u):
        return np.linalg.norm(model.evaluate(u, zero, zero, 0.0, c_v=0.0, c_a=0.0).residual[free])

    assert k3 == pytest.approx(k2 * min(10.0, max(0.1, norm(u3) / norm(u2))), rel=1e-12)
    assert norm(u3) != norm(u2)
