"""Static and dynamic solvers: independent solutions, failure reporting, retries."""
import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq, fsolve

import skfiber as sf
from skfiber import materials

R0, SIGMA0, MU = 0.05, 2e3, 1e5
AREA = np.pi * R0**2


def axial_force(lam):
    """N(λ) = π r0² λ S(λ) for prestress + neo-Hookean passive stress."""
    return AREA * (SIGMA0 / lam + MU * (lam - lam**-2))


def elastic_catenary_midpoint(q, L):
    """Independent solution of the elastic cable under a line load q (N/m, per reference length).

    Equilibrium d/dS (N t) + q = 0 gives the force vector P(S) = P0 − q S;
    the cable position follows from x′(S) = λ(|P|) P/|P| with N(λ) = |P|.
    P0 is found by shooting so that x(L) = (L, 0, 0).
    """
    q = np.asarray(q, float)

    def lam_of(force):
        return brentq(lambda lam: axial_force(lam) - force, 0.3, 50.0, xtol=1e-15, rtol=1e-15)

    def position(P0, S_end):
        def comp(i):
            def f(S):
                P = P0 - q * S
                n = np.linalg.norm(P)
                return lam_of(n) * P[i] / n
            return quad(f, 0, S_end, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
        return np.array([comp(i) for i in range(3)])

    P0 = fsolve(lambda P: position(P, L) - np.array([L, 0, 0]), x0=np.array([axial_force(1.0), 0, q[2] * L / 2 * -1]), xtol=1e-14)
    return position(P0, L / 2)


@pytest.mark.parametrize("length", [1.0, 0.6])
def test_static_sag_matches_independent_elastic_catenary(length):
    """The FE parameter θ ∈ [0, 1] is the reference arc length over ``length`` (|A1| = length): a term
    integrated with the wrong measure shows at ``length`` ≠ 1."""
    q = np.array([0.0, 0.0, -20.0 / length])
    law = materials.prestress(SIGMA0) + materials.passive_kelvin_voigt(mu_muscle=MU, mu_tendon=MU, eta_muscle=0.0, eta_tendon=0.0)
    exact = elastic_catenary_midpoint(q, length)
    assert exact[2] < -0.03  # a real sag, not a trivial case
    errors = []
    for ne in (8, 16):
        fiber = sf.Fiber.straight((0, 0, 0), (length, 0, 0), n_elements=ne, law=law, radius=R0)
        model = sf.Model([fiber])
        model.fix(fiber, "start")
        model.fix(fiber, "end")
        model.add_line_load(q)
        result = sf.solve_static(model, load_steps=4)
        mid = sf.fiber_fields(model, result.state, fiber, theta=[0.5]).position[:, 0]
        errors.append(np.linalg.norm(mid - exact))
    assert errors[1] < 1e-6 * abs(exact[2])
    assert errors[0] / errors[1] > 8  # converging at high order


def test_body_force_equals_line_load():
    """b0 per volume and q = π r0² b0 per length give the same equilibrium."""
    law = materials.prestress(SIGMA0) + materials.passive_kelvin_voigt(mu_muscle=MU, mu_tendon=MU, eta_muscle=0.0, eta_tendon=0.0)
    out = []
    for kind in ("body", "line"):
        fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, law=law, radius=R0)
        model = sf.Model([fiber])
        model.fix(fiber, 0)
        model.fix(fiber, 1)
        if kind == "body":
            model.add_body_force((0, 0, -2000.0))
        else:
            model.add_line_load((0, 0, -2000.0 * AREA))
        out.append(sf.solve_static(model, load_steps=2).state.u)
    np.testing.assert_allclose(out[0], out[1], rtol=0, atol=1e-13)


def test_gravity_equals_body_force():
    model_a, model_b = (sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, density=900.0)]) for _ in range(2))
    model_a.add_gravity((0, 0, -9.81))
    model_b.add_body_force((0, 0, -9.81 * 900.0))
    np.testing.assert_allclose(model_a.external_force(0.0), model_b.external_force(0.0), rtol=1e-15)


def test_external_force_constant_and_timed_loads():
    """Loads without t are assembled once (one array for all times); callables per t, checked to be finite."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, density=900.0)])
    model.add_gravity((0, 0, -9.81))
    F0 = model.external_force(0.0)
    assert model.external_force(0.3) is F0 and F0[2::6].sum() < 0
    model.add_line_load(lambda theta, t: np.stack([np.zeros_like(theta), np.zeros_like(theta), -t + 0 * theta]))
    F1 = model.external_force(0.5)
    F2 = model.external_force(1.0)
    np.testing.assert_allclose(F2 - F0, 2 * (F1 - F0), rtol=1e-12, atol=1e-12)
    assert model.external_force(0.0) is not F0 and np.array_equal(model.external_force(0.0), F0)
    model.add_line_load(lambda theta, t: np.full((3,) + np.shape(theta), np.inf if t > 2 else 0.0))
    model.external_force(1.5)
    with pytest.raises(ValueError, match="line load f.θ, t. is not finite at t = 3"):
        model.external_force(3.0)


@pytest.mark.parametrize("value, why", [(lambda th, t: 1e4, "a single number gives no direction"),
                                        (lambda th, t: 1e4 * np.ones_like(th), "a single number gives no direction"),
                                        (lambda th, t: np.ones((2,) + np.shape(th)), r"in N/m³$"),
                                        (lambda th, t: np.ones(3 * th.size), r"in N/m³$")])
def test_a_callable_load_that_is_no_vector_is_refused(value, why):
    """One number per point (or a θ-shaped array, or the wrong length) gives no direction: refused, where numpy
    broadcast it to all three components; a vector (3,) returned by the callable is that vector everywhere."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    with pytest.raises(ValueError, match=r"body load f\(θ, t\) returned shape .* or 3 numbers .*" + why):
        model.add_body_force(value)
    constant, vector = (sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)]) for _ in range(2))
    constant.add_body_force((1.0, 2.0, -3.0))
    vector.add_body_force(lambda th, t: np.array([1.0, 2.0, -3.0]))
    np.testing.assert_array_equal(vector.external_force(0.0), constant.external_force(0.0))


def test_dynamic_backward_euler_is_first_order():
    """Two step sizes: the error against a fine reference drops by ~2 per halving."""
    law = materials.paper_law()
    def run(dt):
        fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, law=law, muscle_fraction=0.5)
        model = sf.Model([fiber])
        model.fix(fiber, "start")
        model.fix(fiber, "end")
        model.add_gravity((0, 0, -50.0))
        r = sf.simulate(model, t_end=0.2, dt=dt, progress=False)
        return sf.fiber_fields(model, r.final_state, fiber, theta=[0.5]).position[2, 0]
    ref = run(0.2 / 512)
    e1, e2 = abs(run(0.2 / 16) - ref), abs(run(0.2 / 32) - ref)
    assert 1.7 < e1 / e2 < 2.4


def test_simulation_result_and_callback():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber])
    model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    seen = []
    r = sf.simulate(model, t_end=0.1, dt=0.03, store_every=2, progress=False, callback=lambda s, info: seen.append((s.t, info.step, info.newton_iterations)))
    assert [s[1] for s in seen] == [1, 2, 3, 4]
    assert seen[-1][0] == pytest.approx(0.1)  # last step shortened to hit t_end
    np.testing.assert_allclose(r.times, [0.0, 0.06, 0.1])
    assert all(s[2] >= 1 for s in seen)


def test_newton_failure_names_time_step_and_history():
    law = materials.paper_law()
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity((0, 0, -1e5))
    with pytest.raises(sf.ConvergenceError) as info:
        sf.simulate(model, t_end=0.1, dt=0.1, max_halvings=1, newton_options=sf.NewtonOptions(max_iterations=2), progress=False)
    err = info.value
    assert err.t > 0 and err.step == 1 and len(err.residual_history) >= 1
    assert "t = " in str(err) and "Residual history" in str(err)


def test_retry_with_smaller_steps_recovers():
    """A step too large for Newton succeeds when split, and the retries are counted."""
    law = materials.paper_law(sigma0=30.0)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity((0, 0, -200.0))
    opts = sf.NewtonOptions(max_iterations=8)
    r = sf.simulate(model, t_end=0.4, dt=0.4, newton_options=opts, progress=False, max_halvings=8)
    assert r.retries >= 1
    assert np.all(np.isfinite(r.displacements))


@pytest.mark.parametrize("keep", [False, True])
def test_kept_substeps_start_where_the_last_step_ended_and_double(monkeypatch, keep):
    """A stand-in Newton failure for substeps longer than 0.01 s that start in 0.1 ≤ t < 0.2 s (steps of
    0.04 s).  Without keep_substeps every step tries 0.04 s first, then its halves; with it, the step after a
    split starts with the substep that ended it, and the substep doubles after each step with no split.
    Either way the run reaches the step times, and the retries count the failed attempts."""
    import skfiber.solver

    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity((0, 0, -0.5))
    real_step = skfiber.solver.implicit_step
    tried = []

    def fails_when_long(model_, state, dt, *args, **kwargs):
        fails = 0.1 - 1e-9 <= state.t < 0.2 - 1e-9 and dt > 0.01 + 1e-9
        tried.append((round(state.t, 9), round(dt, 9)) + (("failed",) if fails else ()))
        if fails:
            raise sf.ConvergenceError("stand-in failure", t=state.t + dt, step=0, residual_history=[1.0])
        return real_step(model_, state, dt, *args, **kwargs)

    monkeypatch.setattr(skfiber.solver, "implicit_step", fails_when_long)
    r = sf.simulate(model, t_end=0.4, dt=0.04, keep_substeps=keep, max_halvings=3, progress=False)
    np.testing.assert_allclose(r.times, np.arange(11) * 0.04, atol=1e-12)
    step_4 = [(0.12, 0.04, "failed"), (0.12, 0.02, "failed"), (0.12, 0.01), (0.13, 0.01), (0.14, 0.02, "failed"),
              (0.14, 0.01), (0.15, 0.01)]
    if keep:  # step 5 with 0.01 s (step 4 ended with it), step 6 with 0.02 s, then whole steps
        rest = [(0.16, 0.01), (0.17, 0.01), (0.18, 0.01), (0.19, 0.01), (0.2, 0.02), (0.22, 0.02)]
    else:  # step 5 as step 4
        rest = [(0.16, 0.04, "failed"), (0.16, 0.02, "failed"), (0.16, 0.01), (0.17, 0.01), (0.18, 0.02, "failed"),
                (0.18, 0.01), (0.19, 0.01), (0.2, 0.04)]
    whole = [(0.0, 0.04), (0.04, 0.04), (0.08, 0.04)]
    after = [(0.24, 0.04), (0.28, 0.04), (0.32, 0.04), (0.36, 0.04)]
    assert tried == whole + step_4 + rest + after
    assert r.retries == sum(len(attempt) == 3 for attempt in tried)


def test_kept_substeps_are_of_fixed_steps():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
    with pytest.raises(ValueError, match="keep_substeps belongs to fixed steps"):
        sf.simulate(model, t_end=0.1, dt=0.05, method="bdf2", rtol=1e-3, keep_substeps=True, progress=False)
    with pytest.raises(TypeError, match="keep_substeps must be True or False, got 1"):
        sf.simulate(model, t_end=0.1, dt=0.05, keep_substeps=1, progress=False)


def test_static_problem_without_stiffness_is_relaxed_or_reports_singular_tangent():
    law = materials.passive_kelvin_voigt(mu_muscle=1e3, mu_tendon=1e3, eta_muscle=0.0, eta_tendon=0.0)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    with pytest.raises(sf.ConvergenceError, match="singular"):
        sf.solve_static(model, max_bisections=1, relaxation=False)
    result = sf.solve_static(model, max_bisections=1)  # the straight state's singular tangent: relaxation
    assert "singular tangent" in result.notes[0] and "relaxation" in result.notes[0]


def test_continuing_from_final_state_reproduces_uninterrupted_run():
    def model():
        fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, law=materials.paper_law(), activation=lambda t: 0.3 * t)
        m = sf.Model([fiber])
        m.fix(fiber, "start"); m.fix(fiber, "end"); m.add_gravity((0, 0, -30.0))
        return m
    m = model()
    # full Newton: bit for bit; modified Newton (the default) carries its factorization from step to step, which
    # the state does not hold: the continued run starts afresh and agrees within Newton's tolerance
    for options, tol in ((sf.NewtonOptions(jacobian_reuse=False), 1e-12), (sf.NewtonOptions(), 1e-9)):
        full = sf.simulate(m, t_end=0.2, dt=0.01, progress=False, newton_options=options)
        first = sf.simulate(m, t_end=0.1, dt=0.01, progress=False, newton_options=options)
        second = sf.simulate(m, t_end=0.2, dt=0.01, state=first.final_state, progress=False, newton_options=options)
        assert np.max(np.abs(second.final_state.u - full.final_state.u)) <= tol * max(1.0, np.abs(full.final_state.u).max())
        assert len(full.residual_histories) == 20 and all(len(h) >= 1 for h in full.residual_histories)


def test_static_continuation_in_time():
    law = materials.prestress(SIGMA0) + materials.passive_kelvin_voigt(mu_muscle=MU, mu_tendon=MU, eta_muscle=0.0, eta_tendon=0.0)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, law=law, radius=R0)
    m = sf.Model([fiber])
    m.fix(fiber, "start")
    m.prescribe(fiber, "end", lambda t: (0.1 * t, 0.0, 0.0))
    m.add_line_load(lambda th, t: np.array([0 * th, 0 * th, -20.0 * t + 0 * th]))
    direct = sf.solve_static(m, t=1.0, load_steps=3).state.u
    s0 = sf.solve_static(m, t=0.5, load_steps=3).state
    cont = sf.solve_static(m, t=1.0, state=s0, load_steps=2).state.u
    np.testing.assert_allclose(cont, direct, rtol=0, atol=1e-10)


def test_overflowing_law_is_named_in_the_error():
    import sympy as sp

    law = materials.prestress(100.0) + sf.law_from_function(lambda lam, lamdot, theta, t: 1e3 * sp.exp(2e3 * (lam - 1)), name="explosive")
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (0.5, 0.0, 0.0))
    with pytest.raises(sf.ConvergenceError, match="explosive.*not finite|not finite.*explosive"):
        sf.solve_static(model, max_bisections=0)


def test_stagnation_window_defaults_to_1_in_time_steps_and_5_in_static_solves():
    """Newton on G(u) = u − 1 with a damped update (residual × 0.99 per iteration): it stagnates,
    and gives up after the window; None resolves to 5 (static) unless a caller sets 1 (time steps)."""
    from types import SimpleNamespace

    from skfiber.newton import STATIC_STAGNATION_WINDOW, newton
    from skfiber.solver import STEP_STAGNATION_WINDOW

    def evaluate(u):
        return SimpleNamespace(residual=u - 1.0, min_stretch=1.0, reference_force=1.0, roundoff=0.0,
                               n_active_contacts=0, margins=None, element_matrices=None, extra=[])

    solver = SimpleNamespace(fixed=np.zeros(1, dtype=bool), solve=lambda K, rhs, extra: 0.01 * rhs)
    for options, window in [(sf.NewtonOptions(), STATIC_STAGNATION_WINDOW),
                            (sf.NewtonOptions().with_stagnation_window(STEP_STAGNATION_WINDOW), 1),
                            (sf.NewtonOptions(stagnation_window=3).with_stagnation_window(1), 3)]:
        with pytest.raises(sf.ConvergenceError, match="stagnates") as info:
            newton(evaluate, np.zeros(1), solver, options=options)
        assert len(info.value.residual_history) == window + 1
    assert (STATIC_STAGNATION_WINDOW, STEP_STAGNATION_WINDOW) == (5, 1)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="stagnation_window"):
            sf.NewtonOptions(stagnation_window=bad)


def test_predictor_extrapolates_smooth_accelerations_only():
    from skfiber.solver import PREDICTOR_SMOOTHNESS, predicted_accelerations

    a, a_prev = np.array([1.0, 2.0]), np.array([0.9, 1.9])
    s = sf.State(0.2, np.zeros(2), np.zeros(2), a, q=np.zeros(1), b=np.array([4.0]), a_prev=a_prev, b_prev=[3.9],
                 dt_last=0.1)
    pa, pb = predicted_accelerations(s, 0.05)  # half the last step: half the last change
    assert np.allclose(pa, [1.05, 2.05]) and np.allclose(pb, [4.05])
    jump = 1.01 * PREDICTOR_SMOOTHNESS * np.sqrt(1 + 4 + 16)
    s.a_prev = a - np.array([jump, 0.0])
    pa, pb = predicted_accelerations(s, 0.1)  # not smooth: the last acceleration
    assert pa is s.a and pb is s.b
    unknown = sf.State(0.2, np.zeros(2), np.zeros(2), a)  # a_prev empty, dt_last 0
    assert predicted_accelerations(unknown, 0.1)[0] is unknown.a


def test_admissible_predictor_is_the_state_the_safeguard_checked():
    """x_n + (x0 − x_n) can differ from x0 in the last bit; the predictor returned is the state the safeguard
    saw (so the contact search it made at that state is the evaluation's, not made again)."""
    from types import SimpleNamespace

    from skfiber.time_step import _admissible_predictor

    x_n = np.array([0.1, 1e-3, 3.0])
    x0 = np.array([0.3, 7e-17, 3.0 + 4e-16])
    assert not np.array_equal(x_n + (x0 - x_n), x0)  # the case
    seen = []

    def max_step(x, dx):
        seen.append(x + dx)
        return 1.0

    solver = SimpleNamespace(end_margins=None)
    x, ev = _admissible_predictor(solver, x_n, x0, None, max_step, sf.NewtonOptions(), lambda z: None)
    assert ev is None and np.array_equal(x, seen[0]) and np.abs(x - x0).max() <= 4e-16 * np.abs(x0).max()


def test_step_records_what_the_predictor_needs():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=materials.paper_law())
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.add_gravity()
    r = sf.simulate(model, t_end=0.03, dt=0.01, progress=False)
    s = r.final_state
    assert s.dt_last == pytest.approx(0.01) and s.a_prev.shape == s.a.shape
    assert not np.array_equal(s.a_prev, s.a)


def test_slow_first_step_is_explained(monkeypatch, capsys):
    """simulate(progress=True) says why a first step is slow (numba compiling on a first run)."""
    import time

    import skfiber.simulation_result as result_module
    import skfiber.solver as solver_module

    real = solver_module._step_with_retries

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(result_module, "FIRST_STEP_NOTICE_S", 0.05)
    monkeypatch.setattr(solver_module, "_step_with_retries", slow)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    sf.simulate(model, t_end=0.02, dt=0.01, progress=True)
    err = capsys.readouterr().err
    assert err.count("numba compiles the kernels") == 1  # once, for the first step only
    sf.simulate(model, t_end=0.02, dt=0.01, progress=False)
    assert "numba" not in capsys.readouterr().err


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_failing_run_keeps_what_it_computed(monkeypatch, adaptive):
    """A run whose steps fail from t = 0.05 s on raises, and the error carries the states computed until then,
    equal to those of the same run without the failure; its final_state (the last converged step) continues
    the run with BDF2."""
    import skfiber.adaptive
    import skfiber.solver

    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    tolerances = dict(rtol=1e-4, atol=1e-6) if adaptive else {}
    reference = sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", progress=False, **tolerances)
    module = skfiber.adaptive if adaptive else skfiber.solver
    real_step = module.implicit_step

    def failing_after(model_, state, dt, *args, **kwargs):
        if state.t >= 0.05 - 1e-12:
            raise sf.ConvergenceError("stand-in failure", t=state.t + dt, step=0, residual_history=[1.0])
        return real_step(model_, state, dt, *args, **kwargs)

    monkeypatch.setattr(module, "implicit_step", failing_after)
    with pytest.raises(sf.ConvergenceError, match=r"stand-in failure.*states computed up to t = 0\.05\d* s are kept "
                                                  r"in this error's \.partial") as info:
        sf.simulate(model, t_end=0.1, dt=0.01, method="bdf2", max_halvings=1, progress=False, **tolerances)
    partial = info.value.partial
    assert partial is not None and partial.interrupted
    outputs = 6  # t = 0, 0.01, …, 0.05 (an adaptive run adds its last accepted step, just past 0.05 s)
    assert len(partial.times) == outputs + adaptive
    np.testing.assert_allclose(partial.times[:outputs], reference.times[:outputs], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(partial.displacements[:outputs], reference.displacements[:outputs])
    last = partial.final_state
    assert last.has_history and (0.05 < last.t < 0.06 if adaptive else last.t == pytest.approx(0.05, abs=1e-12))
    np.testing.assert_array_equal(last.u, partial.displacements[-1])


def test_a_run_failing_in_its_first_step_keeps_its_start_without_saying_so():
    """Nothing computed: the error's partial holds the start, and the message does not advertise it."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    with pytest.raises(sf.ConvergenceError) as info:
        sf.simulate(model, t_end=0.1, method="bdf2", rtol=1e-14, atol=1e-16, h_min=0.01, progress=False)
    assert info.value.partial.times.tolist() == [0.0] and ".partial" not in str(info.value)


@pytest.mark.parametrize("options, says", [
    (dict(dt=0.01), "at t = 0.03 s after 3 of 100 steps; the result keeps 4 states (the start included; "
                    "store_every=1)"),
    (dict(dt=0.01, store_every=2), "after 3 of 100 steps; the result keeps 3 states (the start included; "
                                   "store_every=2)"),
    (dict(dt=0.01, method="bdf2", rtol=1e-3, atol=1e-6, store_every=2),
     "the result keeps 2 output states (the start included; store_every=2)"),
])
def test_an_interrupted_run_says_how_far_it_got_and_what_it_keeps(options, says):
    """Ctrl-C in the third step's callback: the warning names the steps done and the states the result
    keeps (as many as it has), which store_every thins."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()

    def ctrl_c(state, info):
        if info.step == 3:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="simulation interrupted") as caught:
        result = sf.simulate(model, t_end=1.0, callback=ctrl_c, progress=False, **options)
    assert result.interrupted
    message = str(caught[0].message)
    assert says in message and f"keeps {len(result.times)} " in message


@pytest.mark.parametrize("options", [dict(dt=0.01), dict(dt=0.01, method="bdf2", rtol=1e-3, atol=1e-6)])
def test_simulate_lets_ctrl_c_through_when_asked(options):
    """on_interrupt="raise": the callback's KeyboardInterrupt reaches the caller, with no warning of a kept
    part (fixed and error-controlled steps), and the model is left as after a finished run."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    steps = []

    def ctrl_c(state, info):
        steps.append(info.step)
        if len(steps) == 3:
            raise KeyboardInterrupt

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a "simulation interrupted" warning would fail the test
        with pytest.raises(KeyboardInterrupt):
            sf.simulate(model, t_end=1.0, callback=ctrl_c, progress=False, on_interrupt="raise", **options)
    assert len(steps) == 3 and not model.memo.enabled
    again = sf.simulate(model, t_end=0.03, dt=0.01, progress=False, on_interrupt="raise")
    assert not again.interrupted and again.times.size == 4


@pytest.mark.parametrize("value", ["stop", True, None])
def test_simulate_names_a_bad_on_interrupt(value):
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
    with pytest.raises(ValueError, match=f"on_interrupt must be 'keep' .* or 'raise' .*, got {value!r}"):
        sf.simulate(model, t_end=0.1, dt=0.05, progress=False, on_interrupt=value)


def test_step_counts_print_without_their_per_step_arrays():
    from array import array
    counts = sf.core.StepCounts(accepted=3, step_sizes=array("d", [0.1] * 3), step_iterations=array("i", [2] * 3))
    assert repr(counts) == ("StepCounts(accepted=3, rejected=0, newton_failures=0, newton_iterations=0, "
                            "tangent_builds=0, factorizations=0)")


def _fixed_fiber(n_elements):
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n_elements)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model


def test_a_state_of_another_model_or_with_nan_is_refused_up_front(tmp_path):
    """A state of another mesh is named as such by every entry point (not numpy's broadcast error after step 0
    was written); a nan in u or v is named with its index (not blamed on the law after halving the step)."""
    from skfiber.run import run_simulation

    model, other = _fixed_fiber(4), _fixed_fiber(5)
    foreign = other.initial_state()
    says = "state has 36 fiber DOFs, the model 30: a state of another model"
    for call in (lambda: sf.simulate(model, t_end=0.05, dt=0.01, state=foreign, progress=False),
                 lambda: sf.solve_static(model, state=foreign),
                 lambda: sf.fiber_fields(model, foreign, 0),
                 lambda: sf.recovered_axial_force(model, foreign, 0),
                 lambda: run_simulation(model, t_end=0.05, dt=0.01, out_dir=tmp_path, state=foreign, progress=False)):
        with pytest.raises(ValueError, match=says):
            call()
    assert not any(tmp_path.iterdir())  # (refused before anything was written)
    for field, index in (("v", 3), ("u", 5)):
        state = model.initial_state()
        getattr(state, field)[index] = np.nan
        with pytest.raises(ValueError, match=rf"state\.{field} is not finite at index {index} \(nan\)"):
            sf.simulate(model, t_end=0.05, dt=0.01, state=state, progress=False)
    state = model.initial_state()
    state.u[5] = np.inf
    with pytest.raises(ValueError, match=r"state\.u is not finite at index 5 \(inf\)"):
        sf.solve_static(model, state=state)


def test_a_stagnating_newton_is_taken_as_converged_only_at_its_round_off_floor():
    """Newton whose updates no longer move u (each 1e-14 of the residual) stops: as converged when the residual
    is below √rtol of the reference force (its round-off floor, e.g. c_a M u in tiny adaptive steps), as a
    failure when it is above (a residual of half the reference force is no solution)."""
    from types import SimpleNamespace

    from skfiber.newton import STATIC_STAGNATION_WINDOW, newton

    def evaluating(level):
        def evaluate(u):
            return SimpleNamespace(residual=np.array([level]) + 0.0 * u, min_stretch=1.0, reference_force=1.0,
                                   roundoff=0.0, n_active_contacts=0, margins=None, element_matrices=None, extra=[])
        return evaluate

    solver = SimpleNamespace(fixed=np.zeros(1, dtype=bool), solve=lambda K, rhs, extra: 1e-14 * rhs)
    options = sf.NewtonOptions(rtol=1e-9, atol=0.0)
    u, report = newton(evaluating(1e-6), np.zeros(1), solver, options=options)  # 1e-6 < √1e-9 ≈ 3.2e-5
    assert report.iterations == STATIC_STAGNATION_WINDOW and u[0] != 0.0  # (after the window, moved a little)
    with pytest.raises(sf.ConvergenceError, match="stagnates"):
        newton(evaluating(0.5), np.zeros(1), solver, options=options)
    with pytest.raises(sf.ConvergenceError, match="stagnates"):
        newton(evaluating(1e-4), np.zeros(1), solver, options=options)  # above √rtol, below the reference


def test_the_line_search_asks_a_cut_step_for_a_decrease_in_proportion_to_its_length():
    """Armijo's test on ‖G‖: a step cut to s is kept when ‖G(u + s Δu)‖ ≤ (1 − c s) ‖G(u)‖.  With c = 0.5 the full
    step (‖G‖ up to 2) is cut; at s = ½ the residual 0.7 ≤ 1 − 0.25 is kept, though it is above 1 − c = 0.5,
    the decrease a full step would owe; a quarter step is not tried."""
    from types import SimpleNamespace

    from skfiber.newton import _line_search

    residual_at = {1.0: 2.0, 0.5: 0.7, 0.25: 0.4, 0.125: 0.3}
    tried = []

    def evaluate_checked(u):
        tried.append(float(u[0]))
        return (SimpleNamespace(margins=None), residual_at[float(u[0])]), ""

    options = sf.NewtonOptions(line_search_decrease=0.5)
    s, u_new, (_, res) = _line_search(evaluate_checked, np.zeros(1), np.ones(1), 1.0, SimpleNamespace(margins=None),
                                      None, options, 0.0, 0, [1.0])
    assert (s, float(u_new[0]), res) == (0.5, 0.5, 0.7) and tried == [1.0, 0.5]
    # the test is strict in proportion: 0.76 at s = ½ is not enough, and the search goes on to s = ¼
    residual_at[0.5] = 0.76
    tried.clear()
    s, _, (_, res) = _line_search(evaluate_checked, np.zeros(1), np.ones(1), 1.0, SimpleNamespace(margins=None),
                                  None, options, 0.0, 0, [1.0])
    assert (s, res) == (0.25, 0.4) and tried == [1.0, 0.5, 0.25]
