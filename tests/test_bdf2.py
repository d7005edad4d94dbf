"""BDF2 and adaptive steps: the scheme's coefficients and error estimate, its order on the pendulum chain,
a coupled fiber–body model and muscle states, error control with contact, output times, restarts, errors."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import skfiber as sf
from skfiber.core import AdaptiveCursor, ErrorControl, StepCounts, output_grid, run_adaptive
from skfiber.core.bdf import anchor, error_weights, interpolate, ramp_levels
from skfiber.core.step_control import _estimate
from skfiber.demos import pendulum_chain as pc
from skfiber.io import Checkpoint, load_checkpoint, save_checkpoint
from skfiber.rigid import simulate_rigid
from skfiber.rigid import simulate as rigid_module
from skfiber import solver as solver_module

from conftest import two_link_model
from test_coupling import pendulum_model, pendulum_ode
from test_hill_actuator import double_pendulum


def rate(sizes, errors) -> float:
    return float(np.polyfit(np.log(sizes), np.log(errors), 1)[0])


# --------------------------------------------------------------------------- the scheme
@pytest.mark.parametrize("ratio", [0.3, 1.0, 2.2])
def test_anchor_differentiates_quadratics_exactly_at_variable_steps(ratio):
    """(y(tₙ₊₁) − ŷ)/ĥ = y'(tₙ₊₁) for any quadratic y on a grid with step ratio ω = h/hₙ₋₁."""
    c = np.array([[0.3, -1.2], [2.0, 0.5], [-0.7, 1.5]])  # y = c0 + c1 t + c2 t², two components
    y = lambda t: c[0] + c[1] * t + c[2] * t**2  # noqa: E731
    h_prev, h = 0.1, 0.1 * ratio
    t_n = 0.4
    y_hat, h_eff = anchor(h, h_prev, y(t_n), y(t_n - h_prev))
    np.testing.assert_allclose((y(t_n + h) - y_hat) / h_eff, c[1] + 2 * c[2] * (t_n + h), rtol=1e-11)
    same, dt = anchor(h, h_prev, y(t_n), None)  # no earlier point: backward Euler
    assert same is not None and np.array_equal(same, y(t_n)) and dt == h


def test_error_estimate_matches_the_local_error():
    """y' = cos t from exact past values at uneven steps: Milne's estimate E (y_C − y_P) against the true
    local error y_C − sin(tₙ₊₁) of BDF2 (ratio → 1 as h → 0)."""
    ratios = []
    for h in (0.02, 0.01):
        t = np.array([0.0, 1.3 * h, 2.1 * h]) + 0.7    # tₙ₋₂, tₙ₋₁, tₙ
        t1 = t[-1] + h
        y_hat, h_eff = anchor(h, t[2] - t[1], np.sin(t[2]), np.sin(t[1]))
        y_c = y_hat + h_eff * np.cos(t1)
        E, c = error_weights(t1, t[::-1], 2)
        estimate = E * (y_c - c @ np.sin(t[::-1]))
        ratios.append(estimate / (y_c - np.sin(t1)))
    assert abs(ratios[-1] - 1) < 0.05 and abs(ratios[-1] - 1) < abs(ratios[0] - 1)


def test_dense_output_is_exact_for_quadratics():
    times, values = [0.3, 0.1, 0.0], np.array([[0.09], [0.01], [0.0]])
    assert interpolate(times, values, 0.2)[0] == pytest.approx(0.04, rel=1e-12)


# --------------------------------------------------------------------------- order
def test_pendulum_chain_converges_at_second_order():
    """The damped, driven chain (n = 2, 8) against solve_ivp: rate 2.0 ± 0.1 (backward Euler: ≈ 0.9)."""
    study = pc.driven_study((2, 8), (50, 100, 200, 400), method="bdf2")
    assert np.all(np.abs(study.error_rates - 2.0) <= 0.1), study.tables()
    euler = pc.driven_study((2,), (50, 100, 200, 400))
    assert euler.error_rates[0] < 1.1 and study.error[0, -1] < 0.05 * euler.error[0, -1]


def test_the_rigid_bdf2_start_has_a_local_error_of_third_order():
    """BDF2's first fixed step (backward Euler extrapolated from two half steps and one whole) against
    solve_ivp on the damped, driven chain: its error after one step falls like Δt³, one order above a step
    of backward Euler (Δt²), so that the start does not spoil the scheme's second order."""
    system = pc.build_chain(3)
    q0, p0 = pc.initial_state(3)
    sizes = np.array([0.01, 0.005, 0.0025, 0.00125])
    reference = pc.library_reference(system, q0, p0, sizes[0])
    errors = {}
    for method in ("bdf2", "euler"):
        errors[method] = [np.max(np.abs(simulate_rigid(system, q0, p0, h, h, method=method).q[-1]
                                        - reference.q(np.array([h]))[0])) for h in sizes]
    assert abs(rate(sizes, errors["bdf2"]) - 3.0) < 0.2, errors
    assert abs(rate(sizes, errors["euler"]) - 2.0) < 0.2, errors


def test_conservative_chain_energy_drift_against_the_tolerance():
    """No dampers, fixed base: the energy drift (relative to max T) of fixed-step BDF2 falls at least at
    second order (measured 2.27, finest pair 2.19; backward Euler: 0.95); with error control it falls with
    the tolerance and stays below 20 × tol (measured 5 … 12 ×)."""
    fixed = pc.energy_study((4,), (50, 100, 200, 400), method="bdf2")
    assert fixed.rates[0] >= 1.9 and fixed.drift[0, -1] < 1e-4, fixed.table()
    system = pc.build_chain(4, damped=False, driven=False)
    q0, p0 = pc.initial_state(4)
    drifts = []
    for tol in (1e-4, 1e-5, 1e-6):
        res = simulate_rigid(system, q0, p0, 1.0, 0.01, method="bdf2", rtol=tol, atol=tol)
        T = system.relative_kinetic_energy(res.q, res.p)
        E = T + system.potential_energy(res.q)
        drifts.append(np.max(np.abs(E - E[0])) / T.max())
        assert drifts[-1] < 20 * tol, (tol, drifts)
        assert np.allclose(res.times, np.linspace(0, 1, 101), rtol=0, atol=1e-12)
    assert drifts[0] > drifts[1] > drifts[2]


def test_coupled_fiber_and_body_converge_at_second_order():
    """A rod hanging on a viscous fiber (attachment, rigid Newton block): BDF2 at fixed steps, fitted rate
    2 ± 0.15 of the largest error in q over the run against one with 8× smaller steps (measured 2.03; local
    1.64, 2.07, 2.35); backward Euler's error on the finest steps is 40× larger."""
    model = pendulum_model(n_elements=2)
    state = model.initial_state(q=[0.3])
    T, steps = 0.2, (20, 40, 80, 160)
    ref = sf.simulate(model, t_end=T, dt=T / 1280, method="bdf2", state=state, store_every=1, progress=False)
    errors = {}
    for method in ("bdf2", "euler"):
        errors[method] = [np.abs(sf.simulate(model, t_end=T, dt=T / n, method=method, state=state,
                                             progress=False).coordinates[:, 0]
                                 - ref.coordinates[::1280 // n, 0]).max() for n in steps]
    assert abs(rate(1.0 / np.array(steps), errors["bdf2"]) - 2.0) <= 0.15, errors
    assert errors["bdf2"][-1] < 0.05 * errors["euler"][-1], errors


def _hill_pendulum_ode(system, hill, q0, p0, s0, t_end):
    """Independent reference: the double pendulum's q̈ = M⁻¹ (Q − h) and the muscle's ṡ (fiber length and
    activation) as one explicit ODE, integrated by scipy's Radau to 1e-10."""
    n = system.n

    def rhs(t, y):
        q, qd, s = y[:n], y[n:2 * n], y[2 * n:]
        ctx = system.context(q[None], qd[None], t)
        ctx.element_states = {hill.name: s[None]}
        M, h = system.inertia_terms(ctx)
        Q = sum(system.element_forces(ctx).values(), np.zeros_like(h))
        return np.concatenate([qd, np.linalg.solve(M[0], Q[0] - h[0]), hill.state_rates(ctx)[0]])

    return solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, p0, s0]), method="Radau", rtol=1e-10, atol=1e-12,
                     dense_output=True)


def test_muscle_states_converge_to_an_independent_ode_at_the_schemes_orders():
    """The Millard muscle on the double pendulum against scipy's Radau on the same equations written as an
    explicit ODE (so a wrong sign or term in the implicit step's residual, or in how the states feed back,
    cannot converge to its own limit): the largest error in q and the states falls at rate 2 with BDF2 and 1
    with backward Euler (measured 4.9e-4, 1.2e-4, 3.0e-5: rates 2.01, 2.01; 8.0e-3, 4.0e-3, 2.0e-3: 0.98, 0.99)."""
    system, hill = double_pendulum("damped")
    q0, p0 = np.array([0.2, -0.1]), np.zeros(2)
    T, steps, n = 0.2, (40, 80, 160), system.n
    s0 = simulate_rigid(system, q0, p0, T / 40, T / 40).states[0]   # the muscle's own start (static fiber length)
    ref = _hill_pendulum_ode(system, hill, q0, p0, s0, T)
    assert ref.status == 0
    for method, order in (("bdf2", 2.0), ("euler", 1.0)):
        errors = []
        for k in steps:
            r = simulate_rigid(system, q0, p0, T, T / k, method=method)
            y = ref.sol(r.times)
            errors.append(max(np.abs(r.q - y[:n].T).max(), np.abs(r.states - y[2 * n:].T).max()))
        assert abs(rate(1.0 / np.array(steps), errors) - order) <= 0.1, (method, errors)
    assert errors[-1] < 0.01 * np.abs(ref.sol(np.linspace(0, T, 50))[:n]).max()   # (backward Euler's, small)


def test_muscle_states_converge_at_second_order():
    """A Millard muscle with elastic tendon (fiber length and activation states) on a double pendulum:
    q and the states at second order with simulate_rigid(method="bdf2") (measured local rates 2.03, 2.08)."""
    system, hill = double_pendulum("damped")
    q0, p0 = np.array([0.2, -0.1]), np.zeros(2)
    T, steps = 0.2, (40, 80, 160)
    ref = simulate_rigid(system, q0, p0, T, T / 640, method="bdf2")
    errs = []
    for n in steps:
        r = simulate_rigid(system, q0, p0, T, T / n, method="bdf2")
        errs.append(max(np.abs(r.q - ref.q[::640 // n]).max(), np.abs(r.states - ref.states[::640 // n]).max()))
    assert abs(rate(1.0 / np.array(steps), errs) - 2.0) <= 0.1, errs


# --------------------------------------------------------------------------- adaptive steps
def test_adaptive_run_with_contact_meets_its_tolerance():
    """Fibers, two bodies, attachments and a contact on a moving body cylinder, with error control: regular
    output times, rejected steps near the contact, and tighter tolerances converge to a fine fixed-step run."""
    model = two_link_model()
    T = 0.1
    outputs = np.linspace(0.01, T, 10)
    loose = sf.simulate(model, t_end=T, method="bdf2", rtol=1e-3, atol=1e-5, output_times=outputs, progress=False)
    tight = sf.simulate(model, t_end=T, method="bdf2", rtol=1e-5, atol=1e-7, output_times=outputs, progress=False)
    fine = sf.simulate(model, t_end=T, dt=T / 400, method="bdf2", progress=False)
    np.testing.assert_array_equal(tight.times[1:], outputs)
    counts = tight.step_counts
    assert counts.accepted > loose.step_counts.accepted and counts.rejected > 0
    assert counts.newton_iterations == counts.tangent_builds >= counts.accepted
    assert len(tight.newton_iterations) == counts.accepted
    err_loose = np.abs(loose.coordinates[-1] - fine.coordinates[-1]).max()
    err_tight = np.abs(tight.coordinates[-1] - fine.coordinates[-1]).max()
    assert err_tight < 1e-4 and err_tight < err_loose


def test_output_between_steps_is_interpolated_to_the_scheme_accuracy(capsys):
    """A sagging string: the states at output times that fall between steps agree with a fine run; the
    callback sees each output time once; the progress line reports the counts."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    seen = []
    r = sf.simulate(model, t_end=0.2, dt=0.01, method="bdf2", rtol=1e-6, atol=1e-8,
                    callback=lambda s, info: seen.append((s.t, info.step, info.n_steps)), progress=True)
    assert [s[0] for s in seen] == pytest.approx(list(np.linspace(0.01, 0.2, 20)), abs=1e-12)
    assert [s[1] for s in seen] == list(range(1, 21)) and seen[0][2] == 20
    err = capsys.readouterr().err
    assert "accepted" in err and "rejected" in err and "tangents" in err
    fine = sf.simulate(model, t_end=0.2, dt=2e-4, method="bdf2", progress=False, store_every=50)
    np.testing.assert_allclose(fine.times, r.times, rtol=0, atol=1e-12)
    assert np.abs(r.displacements - fine.displacements).max() < 2e-4


def test_error_control_gives_up_at_the_smallest_step():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    with pytest.raises(sf.ConvergenceError, match="h_min"):
        sf.simulate(model, t_end=0.1, method="bdf2", rtol=1e-14, atol=1e-16, h_min=0.01, progress=False)


def test_relative_error_control_without_atol_says_why_it_gives_up():
    """With atol = 0 an entry that stays 0 (a fixed DOF) counts 0 in the error norm, not 0/0 = NaN; a model
    that starts at rest cannot meet a purely relative tolerance, and the error says to give atol."""
    from skfiber.core.step_control import _error_norm

    control = ErrorControl(rtol=1e-3, atol=0.0, h_min=1e-6, h_max=1.0)
    y = np.array([0.0, 1.0])
    assert _error_norm(np.array([0.0, 1e-3]), y, y, control) == pytest.approx(np.sqrt(0.5))
    assert _error_norm(np.array([1e-9, 0.0]), y, y, control) == np.inf
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    with pytest.raises(sf.ConvergenceError,
                       match=r"^the error control failed at t = .*with atol = 0 .* give atol > 0") as err:
        sf.simulate(model, t_end=0.1, method="bdf2", rtol=1e-3, h_min=1e-4, progress=False)
    assert "nan" not in str(err.value)


# --------------------------------------------------------------------------- the step controller alone
OMEGA, U0, V0 = np.array([2.0, 5.0]), np.array([0.3, -0.2]), np.array([0.5, 1.1])


def _oscillators(t: float) -> np.ndarray:
    """Two oscillators u'' = −ω² u in closed form, flattened as the driver sees a state: positions,
    velocities, then one other unknown (held at 7)."""
    u = U0 * np.cos(OMEGA * t) + V0 / OMEGA * np.sin(OMEGA * t)
    v = -U0 * OMEGA * np.sin(OMEGA * t) + V0 * np.cos(OMEGA * t)
    return np.concatenate([u, v, [7.0]])


def _implicit_step(u_hat, v_hat, h_eff):
    """u = û + ĥ v, v = v̂ − ĥ ω² u solved for (u, v): backward Euler from (û, v̂) with step ĥ."""
    u = (u_hat + h_eff * v_hat) / (1.0 + (h_eff * OMEGA) ** 2)
    return np.concatenate([u, v_hat - h_eff * OMEGA**2 * u, [7.0]])


#: atol 1, rtol 0: the error norm is the RMS of the estimated position errors themselves
ABSOLUTE = ErrorControl(rtol=0.0, atol=1.0, h_min=1e-12, h_max=1.0)


def test_start_up_error_estimate_of_the_backward_euler_step_is_its_true_error():
    """The first step (backward Euler, no history): the estimate against the true position error of that step
    from the closed-form solution, RMS over two oscillators; ratio 1 + O(h) (measured 1.039 at h = 10⁻², 1.0035
    at 10⁻³: 2 % allowed; a factor 2 off or the velocity of the step's end in place of its start fail)."""
    ratios = []
    for h in (1e-2, 1e-3):
        x0 = _oscillators(0.0)
        x1 = _implicit_step(x0[:2], x0[2:4], h)
        estimate, order = _estimate([(0.0, x0)], h, x1, 2, ABSOLUTE)
        assert order == 1  # backward Euler: local error O(h²), the next step scales with err^(−1/2)
        ratios.append(estimate / math.sqrt(np.mean((x1[:2] - _oscillators(h)[:2]) ** 2)))
    assert abs(ratios[1] - 1.0) < 0.02 and abs(ratios[1] - 1.0) < abs(ratios[0] - 1.0), ratios


@pytest.mark.parametrize("ratio", [0.6, 1.0, 1.7])
def test_start_up_error_estimate_of_the_second_step_is_its_true_error(ratio):
    """The second step (BDF2 from two points, Hermite predictor through uₙ₋₁, uₙ, vₙ) from exact past states at
    step ratio ω = h/hₙ₋₁: the estimate against the true position error of the BDF2 step, ratio 1 + O(h)
    (measured 1.100–1.102 at h = 10⁻², 1.0085–1.009 at 10⁻³: 2 % allowed)."""
    ratios = []
    for h in (1e-2, 1e-3):
        t0 = 0.4
        tm, t1 = t0 - h / ratio, t0 + h
        xm, x0 = _oscillators(tm), _oscillators(t0)
        u_hat, h_eff = anchor(h, h / ratio, x0[:2], xm[:2])
        v_hat, _ = anchor(h, h / ratio, x0[2:4], xm[2:4])
        x1 = _implicit_step(u_hat, v_hat, h_eff)
        estimate, order = _estimate([(t0, x0), (tm, xm)], t1, x1, 2, ABSOLUTE)
        assert order == 2
        ratios.append(estimate / math.sqrt(np.mean((x1[:2] - _oscillators(t1)[:2]) ** 2)))
    assert abs(ratios[1] - 1.0) < 0.02 and abs(ratios[1] - 1.0) < abs(ratios[0] - 1.0), ratios


class _Stop(Exception):
    """Ends a run of the driver after the attempts a test looks at."""


def _cubic_attempts(control: ErrorControl, n: int, *, t0: float = 0.0, cursor=None) -> list[float]:
    """The first n step sizes run_adaptive attempts on u = t³ (v = 3t²), each step landing on the exact
    solution (so that the local error estimates are known in closed form)."""
    attempts = []

    def advance(payload, h, k):
        attempts.append(h)
        if len(attempts) > n:
            raise _Stop
        return payload + h, 1

    with pytest.raises(_Stop):
        run_adaptive(advance, lambda t: np.array([t**3, 3.0 * t**2]), t0, t0=0.0, t_end=100.0, control=control,
                     n_positions=1, output_times=np.array([100.0]), emit=lambda *a: None, cursor=cursor)
    return attempts[:n]


def test_a_rejected_start_is_redone_with_the_exponent_of_backward_euler_and_does_not_grow_next():
    """First step from t = 0 on u = t³: the estimate (u₁ − u₀ − h v₀)/2 is h³/2, so with atol = h₀³/16 the
    first attempt has err = 8 and is rejected; it is redone with h₀ · 0.9 · 8^(−1/2) (backward Euler's
    exponent 1/(p + 1) = 1/2); that step passes (err = 0.26) with a proposed factor 0.9 err^(−1/2) = 1.77, but
    the step after a rejection may not grow: the third attempt equals the second."""
    h0, err0 = 0.1, 8.0
    control = ErrorControl(rtol=0.0, atol=h0**3 / (2 * err0), h_min=1e-9, h_max=10.0, h_initial=h0)
    attempts = _cubic_attempts(control, 3)
    h1 = h0 * 0.9 * err0 ** (-1 / 2)
    assert attempts[:2] == pytest.approx([h0, h1], rel=1e-12)  # (the same formula: equal to round-off)
    err1 = h1**3 / (2 * control.atol)
    assert err1 < 1 and 0.9 * err1 ** (-1 / 2) > 1.5  # (accepted, and the controller alone would grow it)
    assert attempts[2] == pytest.approx(h1, rel=1e-12)


@pytest.mark.parametrize("grow_ok", [True, False])
@pytest.mark.parametrize("err", [0.1, 1e-3])
def test_bdf2_step_size_follows_the_cube_root_of_the_error(grow_ok, err):
    """Three exact points of u = t³ at t = 0.8, 0.9, 1.0 and a next step h = 0.1 (a cursor): the predictor
    (quadratic through them) misses u(1.1) by u‴/6 · h·2h·3h = 6h³ and BDF2 at equal steps has Milne's
    factor E = (2/9)/(2/9 + 1) = 2/11 (corrector error 2h³/9 · u‴, predictor −h³ · u‴); v = 3t² is quadratic
    and predicted exactly. With atol set for an RMS error err over (u, v), the next step is
    h · min(2, 0.9 err^(−1/3)) (1.94 h at err = 0.1, capped at 2 h at 10⁻³); after a rejection or failure
    (grow_ok False) the step is kept once (h), then grows by that factor."""
    h = 0.1
    atol = 12 * h**3 / 11 / math.sqrt(2) / err
    control = ErrorControl(rtol=0.0, atol=atol, h_min=1e-9, h_max=10.0)
    points = [(t, np.array([t**3, 3 * t**2])) for t in (1.0, 0.9, 0.8)]
    cursor = AdaptiveCursor(points, h, grow_ok, 3, 0, StepCounts())
    factor = min(2.0, 0.9 * err ** (-1 / 3))
    expected = [h, h * factor] if grow_ok else [h, h, h * factor]
    assert _cubic_attempts(control, len(expected), t0=1.0, cursor=cursor) == pytest.approx(expected, rel=1e-10)


# --------------------------------------------------------------------------- restart, inputs
def test_bdf2_restart_from_the_final_state_and_a_checkpoint_is_exact(tmp_path):
    """The state keeps BDF2's earlier point: two runs, with a checkpoint between them, end where one run does
    (to round-off: the second run's step times are 0.05 + k dt, not k dt)."""
    model = pendulum_model(n_elements=2)
    state = model.initial_state(q=[0.2])
    full = sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", state=state, progress=False).final_state
    first = sf.simulate(model, t_end=0.05, dt=0.01, method="bdf2", state=state, progress=False).final_state
    assert first.has_history
    save_checkpoint(tmp_path / "c.npz", Checkpoint(first, 5, 0.01, 0.0, "x"))
    back = load_checkpoint(tmp_path / "c.npz").state
    second = sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", state=back, progress=False).final_state
    assert np.abs(second.u - full.u).max() <= 1e-12 and np.abs(second.q - full.q).max() <= 1e-12
    fresh = sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", state=back.without_history(), progress=False)
    assert np.abs(fresh.final_state.q - full.q).max() > 1e-6  # restarting without the history differs


def test_bad_scheme_inputs_say_what_to_do():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
    with pytest.raises(ValueError, match="unknown method 'rk4'"):
        sf.simulate(model, t_end=0.1, dt=0.01, method="rk4", progress=False)
    with pytest.raises(ValueError, match="needs method='bdf2'"):
        sf.simulate(model, t_end=0.1, rtol=1e-4, progress=False)
    with pytest.raises(ValueError, match="give dt"):
        sf.simulate(model, t_end=0.1, method="bdf2", progress=False)
    with pytest.raises(ValueError, match="adaptive runs"):
        sf.simulate(model, t_end=0.1, dt=0.01, output_times=[0.05], progress=False)
    with pytest.raises(ValueError, match="output_times must lie"):
        sf.simulate(model, t_end=0.1, method="bdf2", rtol=1e-4, output_times=[0.05, 0.2], progress=False)
    with pytest.raises(ValueError, match="increasing"):
        sf.simulate(model, t_end=0.1, method="bdf2", rtol=1e-4, output_times=[0.05, 0.04], progress=False)
    with pytest.raises(ValueError, match="both 0"):
        ErrorControl(rtol=0.0, atol=0.0, h_min=1e-6, h_max=1.0)
    with pytest.raises(ValueError, match="max_growth"):
        ErrorControl(rtol=1e-3, atol=0.0, h_min=1e-6, h_max=1.0, max_growth=3.0)
    system = pc.build_chain(1)
    with pytest.raises(ValueError, match="needs method='bdf2'"):
        simulate_rigid(system, [0.1], [0.0], 1.0, 0.1, rtol=1e-3)
    with pytest.raises(ValueError, match="unknown method"):
        simulate_rigid(system, [0.1], [0.0], 1.0, 0.1, method="radau")


# --------------------------------------------------------------------------- long runs
def _energy(model, state):
    """Kinetic + elastic + gravity energy of a fiber model with a conservative law plus viscosity:
    ½ v·M v, ∫₀¹ u·R_int(s u, v = 0) ds (8-point Gauss: the elastic energy from the reference) and u·R_loads."""
    u, v, zero = state.u, state.v, np.zeros_like(state.u)
    kinetic = 0.5 * v @ model.evaluate(u, zero, v, state.t, c_v=0.0, c_a=0.0, parts=["inertia"]).residual
    s, w = np.polynomial.legendre.leggauss(8)
    s, w = 0.5 * (s + 1), 0.5 * w
    elastic = sum(wi * (u @ model.evaluate(si * u, zero, zero, state.t, c_v=0.0, c_a=0.0,
                                           parts=["internal_force"]).residual) for si, wi in zip(s, w))
    gravity = u @ model.evaluate(u, zero, zero, state.t, c_v=0.0, c_a=0.0, parts=["loads"]).residual
    return kinetic + elastic + gravity


@pytest.mark.parametrize("method", ["euler", "bdf2"])
def test_long_run_keeps_bounded_memory_and_its_energy_decays(method):
    """10,000 steps of a damped string: the result keeps at most MAX_STORED_STATES + 1 states by default
    (0.67 MB here whatever the number of steps; peak RSS growth measured 2.4 and 0.8 MB), and the energy
    of the kept states decreases monotonically."""
    import resource

    law = sf.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e5, eta_muscle=2e2, eta_tendon=2e2)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, law=law, radius=0.02)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    sf.simulate(model, t_end=1e-3, dt=1e-4, method=method, progress=False)  # kernels compiled or loaded first
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = sf.simulate(model, t_end=1.0, dt=1e-4, method=method, progress=False)
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert len(r.newton_iterations) == 10_000 and r.newton_iterations.dtype == np.int32
    assert len(r.times) <= sf.solver.MAX_STORED_STATES + 1 and len(r.residual_histories) == len(r.times) - 1
    kept = r.displacements.nbytes + r.velocities.nbytes
    assert kept < 2e6 and growth_mb < 20, (kept, growth_mb)
    E = np.array([_energy(model, r.state(i)) for i in range(0, len(r.times), 10)])
    assert E[0] == pytest.approx(0.0, abs=1e-12) and E[-1] < 0
    assert np.all(np.diff(E) <= 1e-9 * abs(E).max()), np.diff(E).max()
    print(f"{method}: RSS growth {growth_mb:.1f} MB, result {kept / 1e6:.2f} MB, {len(r.times)} states kept")


def test_run_driver_with_bdf2_equals_simulate_and_resumes_exactly(tmp_path):
    """run_simulation(method="bdf2") steps one simulate call at a time: the state carries BDF2's earlier
    point, so it equals one simulate run (within Newton's tolerance: one simulate run carries Newton's
    factorization from step to step, run_simulation starts each step afresh), and a run resumed from its
    checkpoint ends at the same state, bit for bit."""
    from skfiber.demos.hanging_bundle import build_model
    from skfiber.run import run_simulation

    model = build_model(1)
    ref = sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", progress=False).final_state
    run = run_simulation(model, t_end=0.1, dt=0.01, method="bdf2", progress=False).final_state
    assert np.abs(run.u - ref.u).max() <= 1e-9 * np.abs(ref.u).max()
    run_simulation(model, t_end=0.05, dt=0.01, method="bdf2", out_dir=tmp_path, checkpoint_every=1, progress=False)
    resumed = run_simulation(model, t_end=0.1, dt=0.01, method="bdf2", out_dir=tmp_path, checkpoint_every=1,
                             resume=True, progress=False).final_state
    assert np.array_equal(resumed.u, run.u) and np.array_equal(resumed.v, run.v)


def test_a_step_that_fails_down_to_h_min_says_what_made_it_shrink():
    """The error names the failure at the largest step (often the cause) and the most frequent kind."""
    from skfiber.core import run_adaptive

    def advance(payload, h, k):
        if h >= 0.05:
            raise sf.ConvergenceError("Newton stagnates: the residual did not drop (2.5e+04 → 2.4e+04)",
                                      t=0.1, step=k, residual_history=[2.5e4, 2.4e4])
        raise sf.ConvergenceError(f"inadmissible contact at t = {0.1 + h:.6g} s: 1 + γg = -0.0003 ≤ 0",
                                  t=0.1 + h, step=k, residual_history=[1.0])

    control = ErrorControl(rtol=1e-3, atol=1e-6, h_min=1e-3, h_max=1.0, h_initial=0.1)
    with pytest.raises(sf.ConvergenceError) as info:
        run_adaptive(advance, lambda p: np.zeros(2), None, t0=0.0, t_end=1.0, control=control, n_positions=1,
                     output_times=np.array([1.0]), emit=lambda *a: None)
    text = str(info.value)
    assert "still failing at the smallest step h_min = 0.001 s" in text
    assert "the step shrank from 0.1 s in 8 attempts" in text
    assert "At 0.1 s: Newton stagnates" in text
    assert "Most often (6 of 8, from 0.025 s down): inadmissible contact" in text
    assert "has usually met a jump of the model" in text and "gap='smallest'" in text
    assert "fixed steps (dt without rtol/atol) may" in text


def test_dense_output_between_long_steps_is_of_second_order_at_least():
    """y′ = −y stepped exactly (each step lands on e^(−t)) with steps up to h_max = 0.2 and an output every
    5 ms: the outputs between the points are interpolated, and their error stays within the bound of a
    quadratic through three of them, h³ max|y‴| / (9√3) (a linear one through two would be h² max|y″| / 8)."""
    from skfiber.core import run_adaptive

    def advance(payload, h, k):
        t, _ = payload
        return (t + h, math.exp(-(t + h))), 1

    def flatten(payload):
        return np.array([payload[1], -payload[1]])  # the position and its velocity

    outputs = np.linspace(0.005, 2.0, 400)
    errors = []

    def emit(t, x, payload):
        y = x[0] if x is not None else payload[1]
        errors.append(abs(y - math.exp(-t)))

    control = ErrorControl(rtol=1e-2, atol=1e-2, h_min=1e-4, h_max=0.2)
    run_adaptive(advance, flatten, (0.0, 1.0), t0=0.0, t_end=2.0, control=control, n_positions=1,
                 output_times=outputs, emit=emit)
    assert len(errors) == outputs.size
    assert max(errors) <= 0.2**3 / (9 * math.sqrt(3)) * 1.0, max(errors)
    assert max(errors) > 1e-6  # (the steps are long: the outputs are interpolated, not landed on)


def _taut_string(n=4):
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model, fiber


def _exact_steps(control, t_end, *, fail=None):
    """Accepted step sizes of run_adaptive on u = 0 (every step exact: err = 0)."""
    def advance(payload, h, k):
        if fail is not None and fail(h, k):
            raise sf.ConvergenceError("fails", t=payload + h, step=k, residual_history=[1.0, 1.0])
        return payload + h, 1

    def flatten(t):
        return np.array([0.0, 0.0])

    _, counts = run_adaptive(advance, flatten, 0.0, t0=0.0, t_end=t_end, control=control, n_positions=1,
                             output_times=np.array([t_end]), emit=lambda *a: None)
    return list(counts.step_sizes)


def test_the_last_stretch_is_two_equal_steps_not_a_step_and_a_sliver():
    """Error control on an exactly integrated problem: a remainder under two steps is split in two equal steps
    (0.4, 0.3, 0.3 to t = 1)."""
    control = ErrorControl(rtol=0.0, atol=1.0, h_min=1e-9, h_max=0.4, h_initial=0.4)
    assert _exact_steps(control, 1.0) == pytest.approx([0.4, 0.3, 0.3], rel=1e-12)


def test_a_step_that_would_leave_a_sliver_under_one_percent_is_stretched_to_the_end():
    """A step that would leave less than 1 % of a step is stretched to the end (0.5, 0.504 to t = 1.004)."""
    control = ErrorControl(rtol=0.0, atol=1.0, h_min=1e-9, h_max=0.5, h_initial=0.5)
    assert _exact_steps(control, 1.004) == pytest.approx([0.5, 0.504], rel=1e-12)


def test_the_step_after_a_newton_failure_does_not_grow():
    """After a step that Newton failed and was redone shorter, the next step keeps that size once before
    growing."""
    control = ErrorControl(rtol=0.0, atol=1.0, h_min=1e-9, h_max=10.0, h_initial=0.1)
    fails = {"n": 0}

    def fail(h, k):
        if k == 2 and not fails["n"]:
            fails["n"] += 1
            return True
        return False
    steps = _exact_steps(control, 10.0, fail=fail)
    # 0.1 (grows ×2 next), 0.2 fails -> 0.1 accepted, then kept once (0.1), then ×2
    assert steps[:4] == pytest.approx([0.1, 0.1, 0.1, 0.2], rel=1e-12)


def test_a_step_with_a_nan_state_is_never_accepted():
    """A step whose state holds a NaN is rejected (the error test is written to fail for NaN): the run fails and
    outputs nothing."""
    def advance(payload, h, k):
        return payload + h, 1

    def flatten(t):
        return np.array([math.nan if t > 0.3 else t, 1.0])

    control = ErrorControl(rtol=1e-3, atol=1e-3, h_min=1e-3, h_max=1.0, h_initial=0.1)
    emitted = []
    with pytest.raises(sf.ConvergenceError):
        run_adaptive(advance, flatten, 0.0, t0=0.0, t_end=1.0, control=control, n_positions=1,
                     output_times=np.array([0.5, 1.0]), emit=lambda t, x, p: emitted.append(t))
    assert emitted == []


def test_a_remainder_under_one_percent_joins_the_last_output_interval():
    """output_grid joins a remainder under 1 % of the output interval to the last interval (its docstring)."""
    assert output_grid(0.0, 1.001, output_dt=0.25).tolist() == [0.25, 0.5, 0.75, 1.001]


def test_error_control_defaults():
    """The documented defaults: h_max the span, h_min 1e-10 of it, h_initial a tenth of the shorter of the span
    and the output interval."""
    from skfiber.adaptive import error_control
    c = error_control(rtol=1e-3, atol=None, h_min=None, h_max=None, span=0.5, output_dt=2.0)
    assert c.h_max == 0.5 and c.h_min == pytest.approx(0.5e-10, rel=1e-12) and c.h_initial == pytest.approx(0.05)


def _output_and_step_errors(rtol):
    """The fiber carrying a pendulum (BDF2, ``rtol``) against its independent ODE: the largest errors of the
    rod's angular velocity and of the fiber end's velocity (which moves with the rod's tip) at 40 output times
    that fall between steps, and at the run's own step times (the same steps, a second run with its output
    there)."""
    T, L = 0.2, 0.5
    ref = pendulum_ode(T)

    def errors(result, times):
        th, om = ref.sol(times)
        tip = np.stack([-L * np.sin(th) * om, 0 * th, -L * np.cos(th) * om], axis=1)
        end = result_model.discretization.fiber_dofs[0].position_dofs(-1)
        return (np.abs(result.rigid_velocities[1:, 0] - om).max(), np.abs(result.velocities[1:, end] - tip).max())

    outputs = np.linspace(0.005, T, 40)
    result_model = pendulum_model()
    between = sf.simulate(result_model, t_end=T, method="bdf2", rtol=rtol, atol=rtol / 100, output_times=outputs,
                          progress=False)
    steps = np.cumsum(between.step_counts.step_sizes)
    at_steps = sf.simulate(pendulum_model(), t_end=T, method="bdf2", rtol=rtol, atol=rtol / 100, output_times=steps,
                           progress=False)
    assert np.array_equal(np.cumsum(at_steps.step_counts.step_sizes), steps)   # the same steps
    assert np.abs(outputs[:-1, None] - steps[None, :]).min() > 1e-5           # the outputs lie between them
    return errors(between, outputs), errors(at_steps, steps)


def test_interpolated_states_of_a_coupled_model_are_as_accurate_as_the_steps(monkeypatch):
    """Output times between steps of a model with a body: the interpolated angular velocity and fiber
    velocities are as close to the independent ODE as the steps' own states (measured: ratios 0.996 at
    rtol 1e-4); a zeroth-order hold in place of the interpolation is 4.6 times farther off and fails."""
    between, at_steps = _output_and_step_errors(1e-4)
    assert all(b <= 1.2 * a for b, a in zip(between, at_steps)), (between, at_steps)
    assert at_steps[0] < 0.1 * np.abs(pendulum_ode(0.2).sol(np.linspace(0, 0.2, 50))[1]).max()
    monkeypatch.setattr("skfiber.core.step_control.interpolate", lambda times, values, t: np.asarray(values)[0])
    held, at_steps = _output_and_step_errors(1e-4)
    assert all(h > 3 * a for h, a in zip(held, at_steps)), (held, at_steps)


def test_the_callbacks_newton_iterations_add_up_to_the_runs():
    """The callback's Newton iterations per output add up to the run's count."""
    model, _ = _taut_string()
    seen = []
    r = sf.simulate(model, t_end=0.05, method="bdf2", rtol=1e-4, atol=1e-6, output_times=np.linspace(0.01, 0.05, 5),
                    callback=lambda s, info: seen.append(info.newton_iterations), progress=False)
    assert sum(seen) == r.step_counts.newton_iterations


def test_the_last_output_is_kept_whatever_store_every():
    """The last output is stored whatever store_every, as on fixed steps."""
    model, _ = _taut_string()
    r = sf.simulate(model, t_end=0.05, method="bdf2", rtol=1e-4, atol=1e-6, output_times=np.linspace(0.01, 0.05, 5),
                    store_every=2, progress=False)
    assert r.times[-1] == 0.05


def test_an_error_controlled_run_starts_afresh_from_a_state_with_history():
    """An error-controlled run from a state with BDF history starts as from the state without it (bit for bit)."""
    model, _ = _taut_string()
    first = sf.simulate(model, t_end=0.03, dt=0.01, method="bdf2", progress=False).final_state
    assert first.has_history
    kw = dict(t_end=0.06, method="bdf2", rtol=1e-4, atol=1e-6, progress=False)
    a = sf.simulate(model, state=first, **kw)
    b = sf.simulate(model, state=first.without_history(), **kw)
    assert np.array_equal(a.final_state.u, b.final_state.u) and a.step_counts == b.step_counts


@pytest.mark.parametrize("h_prev", [1 / 16, 0.3, 0.49, 0.5, 0.51, 1e-6, 2.0, 0.0])
def test_ramp_levels_cover_the_step_and_grow_by_at_most_two(h_prev):
    """The substeps add up to the step, each at most twice the one before (the first: twice h_prev), and a
    split step ends on h/2 (so the next whole step grows by 2 again); no split where 2 h_prev ≥ h."""
    levels = ramp_levels(1.0, h_prev)
    lengths = [2.0**-e for e in levels]
    assert math.fsum(lengths) == 1.0
    if h_prev == 0.0 or h_prev >= 0.5:
        assert levels == [0]
        return
    assert len(levels) > 1 and lengths[-1] == 0.5
    ratios = np.array(lengths) / np.array([h_prev] + lengths[:-1])
    assert ratios.max() <= 2.0 * (1 + 1e-12)
    assert lengths[0] > h_prev  # the smallest such split: half of its first substep would not reach h_prev
    assert ratios[0] > 1.0


def _forced_split_steps(monkeypatch, module, name, read, fails, *, ramp=True):
    """Make ``module.name`` (a step function) fail where ``fails(t_start, h)``; returns the list that collects
    the (h, h_prev) of every BDF2 step taken (``read(*args, **kwargs)`` gives t_start, h and h_prev, 0 for no
    earlier point).  ``ramp=False`` switches the grow-back off (the code before it)."""
    real = getattr(module, name)
    steps = []

    def step(*args, **kwargs):
        t_start, h, h_prev = read(*args, **kwargs)
        if fails(t_start, h):
            raise sf.ConvergenceError("forced failure", t=t_start + h, step=0, residual_history=[])
        if h_prev:
            steps.append((h, h_prev))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, step)
    if not ramp:
        monkeypatch.setattr(module, "ramp_levels", lambda h, h_prev: [0])
    return steps


@pytest.mark.parametrize("ramp", [True, False])
def test_fixed_bdf2_after_a_split_step_grows_back_by_at_most_two(monkeypatch, ramp):
    """A step split down to Δt/16 at its end (every substep longer than Δt/16 that ends there fails): the next
    step is taken as Δt/8, Δt/8, Δt/4, Δt/2 (ratios ≤ 2; BDF2's zero-stability needs < 1 + √2), not at once
    as Δt (ratio 16, which the run without the grow-back takes); the run ends where an unsplit run ends to
    within BDF2's error at this step."""
    model = pendulum_model(n_elements=2)
    state = model.initial_state(q=[0.3])
    dt, end = 0.005, 0.015

    def fails(t_start, h):
        return abs(t_start + h - end) < 1e-9 and t_start >= end - dt - 1e-12 and h > dt / 16 * (1 + 1e-9)

    plain = sf.simulate(model, t_end=0.05, dt=dt, method="bdf2", state=state, progress=False)
    steps = _forced_split_steps(monkeypatch, solver_module, "implicit_step",
                                lambda model, s, h, *a, **k: (s.t, h, s.dt_last if s.has_history else 0.0), fails,
                                ramp=ramp)
    run = sf.simulate(model, t_end=0.05, dt=dt, method="bdf2", state=state, progress=False)
    ratios = np.array([h / h_prev for h, h_prev in steps])
    assert run.retries == plain.retries + 4
    if not ramp:
        assert ratios.max() == pytest.approx(16.0)
        return
    assert ratios.max() <= 2.0 * (1 + 1e-9), ratios
    assert run.final_state.t == pytest.approx(0.05)
    assert abs(run.coordinates[-1, 0] - plain.coordinates[-1, 0]) < 1e-3


@pytest.mark.parametrize("ramp", [True, False])
def test_fixed_rigid_bdf2_after_a_split_step_grows_back_by_at_most_two(monkeypatch, ramp):
    """The rigid integrator's retry splits a failing step into 2**level equal substeps: after a step done in 16
    the next one starts with Δt/8, Δt/8, Δt/4, Δt/2 (ratios ≤ 2), not Δt (16)."""
    system = double_pendulum(excitation=False)[0]
    dt = 0.01

    def read(system_, point, t_prev, h, method, *a, **k):
        return t_prev, h, point.prev[3] if method == "bdf2" and point.prev is not None else 0.0

    def fails(t_start, h):
        return 2 * dt - 1e-12 <= t_start < 3 * dt - 1e-12 and h > dt / 16 * (1 + 1e-9)

    steps = _forced_split_steps(monkeypatch, rigid_module, "_advance", read, fails, ramp=ramp)
    result = simulate_rigid(system, [0.3, -0.2], [0.0, 0.0], t_end=0.1, dt=dt, method="bdf2")
    ratios = np.array([h / h_prev for h, h_prev in steps])
    assert result.retries == 4
    if not ramp:
        assert ratios.max() == pytest.approx(16.0)
        return
    assert ratios.max() <= 2.0 * (1 + 1e-9), ratios
    assert result.times[-1] == pytest.approx(0.1)


def test_a_failing_grow_back_substep_is_split_like_any_other(monkeypatch):
    """A run continued with a step 40 times longer grows back in substeps down to Δt/32, below Δt/2**max_halvings;
    when the first of them fails it is still halved (failures' halvings count, the grow-back's do not), and a
    substep that keeps failing names its halvings, not a split the step never had."""
    model = pendulum_model(n_elements=2)
    start = sf.simulate(model, t_end=0.0015, dt=0.0005, method="bdf2", state=model.initial_state(q=[0.3]),
                        progress=False).final_state
    calls = []

    def read(model_, s, h, *a, **k):
        calls.append(h)
        return s.t, h, s.dt_last if s.has_history else 0.0

    steps = _forced_split_steps(monkeypatch, solver_module, "implicit_step", read,
                                lambda t_start, h: len(calls) == 1)  # the first grow-back substep fails once
    run = sf.simulate(model, t_end=start.t + 0.02, dt=0.02, method="bdf2", state=start, progress=False,
                      max_halvings=2)
    assert run.retries == 1 and calls[0] == pytest.approx(0.02 / 32) and calls[1] == pytest.approx(0.02 / 64)
    assert max(h / h_prev for h, h_prev in steps) <= 2.0 * (1 + 1e-9)
    monkeypatch.setattr(solver_module, "implicit_step", lambda *a, **k: (_ for _ in ()).throw(
        sf.ConvergenceError("forced failure", t=start.t, step=0, residual_history=[])))
    with pytest.raises(sf.ConvergenceError, match=r"still failing after 2 halvings of a substep that grew back "
                                                  r"from shorter steps \(Δt = 0\.000156 s\)"):
        sf.simulate(model, t_end=start.t + 0.02, dt=0.02, method="bdf2", state=start, progress=False,
                    max_halvings=2)
