"""Modified Newton (skfiber.newton.IterationMatrix): the kept factorization, its contraction-rate test and
step-size test, the same converged solutions as full Newton; the block LU's kept factors; the fiber-only
step evaluation in one compiled call against Model.evaluate."""
import dataclasses

import numpy as np
import pytest

import skfiber as sf
from skfiber.core import EulerRates
from skfiber.fiber_part import sum_rows
from skfiber.fiber_step import FiberStep, applies
from skfiber.newton import IterationMatrix, make_solver, newton
from skfiber.time_step import implicit_step

FULL = sf.NewtonOptions(jacobian_reuse=False)


def stiff_tendon(n_elements=10):
    """One fiber, pinned ends, soft middle and stiff tendons (E 3e5 / 3e7 Pa), viscous, under gravity."""
    lam, lamdot, gm = (sf.materials.SYMBOLS[k] for k in ("stretch", "stretch_rate", "muscle_fraction"))
    E = gm * 3e5 + (1 - gm) * 3e7
    law = sf.materials.SymbolicLaw(E * (lam - 1) / lam**2 + 3e3 * lamdot / lam**3, name="stiff tendon")
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n_elements, law=law, radius=0.05, density=900.0,
                              muscle_fraction=lambda th: ((th >= 0.2) & (th <= 0.8)).astype(float))
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model


def bundle(n_fibers=3, n_elements=8):
    """Fibers with the paper's law (Table 1) and constant activations, ends fixed, under gravity."""
    fibers = [sf.Fiber.straight((0, 0.15 * k, 0), (1, 0.15 * k, 0), n_elements=n_elements, law=sf.paper_law(),
                                activation=0.05 * k) for k in range(n_fibers)]
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start"); model.fix(f, "end")
    model.add_gravity()
    return model


# --------------------------------------------------------------------------- same solutions
@pytest.mark.parametrize("case", ["tendon-bdf2", "bundle-euler", "tendon-adaptive"])
def test_reuse_gives_the_full_newton_solution_and_saves_factorizations(case):
    """Reuse on and off: the same trajectory to Newton's tolerance (rtol 1e-9 on the forces), with fewer
    factorizations than Newton iterations (fixed steps; adaptive steps change c_v, c_a from step to step)."""
    if case == "bundle-euler":
        model, kw = bundle(), dict(t_end=0.3, dt=0.005, method="euler")
    elif case == "tendon-bdf2":
        model, kw = stiff_tendon(), dict(t_end=0.2, dt=1e-3, method="bdf2")
    else:
        model, kw = stiff_tendon(), dict(t_end=0.05, dt=0.01, method="bdf2", rtol=1e-4, atol=1e-6)
    on = sf.simulate(model, progress=False, **kw)
    off = sf.simulate(model, progress=False, newton_options=FULL, **kw)
    scale = np.abs(off.displacements).max()
    assert np.abs(on.displacements - off.displacements).max() <= 1e-8 * scale
    assert np.abs(on.velocities - off.velocities).max() <= 1e-8 * scale / kw["dt"] * 10
    c_on, c_off = on.step_counts, off.step_counts
    assert c_off.tangent_builds == c_off.factorizations == c_off.newton_iterations
    assert c_on.factorizations == c_on.tangent_builds
    if "rtol" in kw:
        assert c_on.accepted == c_off.accepted and c_on.factorizations <= c_on.newton_iterations
    else:
        assert c_on.factorizations < 0.8 * c_off.factorizations


# --------------------------------------------------------------------------- the rate and step-size tests
def step_problem(model, state, dt):
    """evaluate(u, tangent) and the (c_v, c_a) of a backward-Euler step from ``state``."""
    rates = EulerRates(u_prev=state.u, v_prev=state.v, dt=dt)
    t1 = state.t + dt

    def evaluate(u, tangent=True):
        v, a, c_v, c_a = rates(u)
        return model.evaluate(u, v, a, t1, c_v=c_v, c_a=c_a, tangent=tangent)
    return evaluate, (rates.c_v, rates.c_a), state.u + dt * state.v


def kept_factorization(model, solver, evaluate, u, scale):
    """An IterationMatrix holding the factorization of ``scale`` × the tangent at u."""
    ev = evaluate(u)
    _, lu = solver.factor_solve(scale * ev.element_matrices, np.ones(model.n_dofs), ev.extra)
    return lu


@pytest.mark.parametrize("scale, refreshed", [(1.001, False), (3.0, True)])
def test_a_slowly_contracting_kept_factorization_is_refreshed(scale, refreshed):
    """The kept iteration matrix is the step's tangent times ``scale``: modified Newton contracts at
    about |1 − 1/scale| (1e-3: kept to the end; 0.67 > reuse_max_rate: a fresh tangent is made).  Either way
    the solution is full Newton's to the tolerance."""
    model = bundle(n_fibers=1)
    state = sf.simulate(model, t_end=0.05, dt=0.01, progress=False).final_state
    solver = make_solver(model)
    evaluate, scheme, u0 = step_problem(model, state, 0.01)
    ref, _ = newton(evaluate, u0, solver, options=FULL.with_stagnation_window(1))
    u0 = ref + 1e-7 * np.sin(np.arange(ref.size))  # near the solution, where G is nearly linear
    u0[model.constrained_dofs] = ref[model.constrained_dofs]
    matrix = IterationMatrix()
    matrix.keep(kept_factorization(model, solver, evaluate, u0, scale), scheme)
    options = sf.NewtonOptions().with_stagnation_window(1)
    u, report = newton(evaluate, u0, solver, options=options, matrix=matrix, scheme=scheme)
    assert np.abs(u - ref).max() <= 1e-9 * np.abs(ref).max()
    assert (matrix.tangent_builds > 0) == refreshed and matrix.reused_solves >= 1
    if not refreshed:  # every increment from the kept matrix, contracting at ≈ 1e-3
        hist = np.array(report.residual_history)
        assert matrix.reused_solves == report.iterations and np.all(hist[1:] / hist[:-1] < 1e-2)
    assert matrix.factorization is not None  # kept for the next step


def test_a_step_size_change_drops_the_kept_factorization():
    """A step ĥ → ĥ/f scales c_v = 1/ĥ by f and c_a = 1/ĥ² by f²: within reuse_max_change (0.3) of the kept
    ones the factorization is handed out, beyond it dropped (a fresh tangent)."""
    matrix = IterationMatrix()
    lu = object()
    for f, kept in ((1.1, True), (0.9, True), (1.2, False), (0.8, False)):  # c_a: +21 %, −19 %, +44 %, −36 %
        matrix.keep(lu, (100.0, 1e4))
        assert (matrix.take((100.0 * f, 1e4 * f**2), 0.3) is lu) == kept, f
        assert matrix.factorization is None  # handed out (kept again after a converged solve)


def test_carrying_that_fails_backs_off():
    """A step whose carried factorization needed a fresh one makes the next 1, 2, 4 … steps start fresh."""
    matrix = IterationMatrix()
    lu = object()
    skipped = []
    for _ in range(3):
        matrix.carried(False)
        n = 0
        matrix.keep(lu, (1.0, 1.0))
        while matrix.take((1.0, 1.0), 0.3) is None:
            n += 1
            matrix.keep(lu, (1.0, 1.0))
        skipped.append(n)
    assert skipped == [1, 2, 4]
    matrix.carried(True)
    matrix.keep(lu, (1.0, 1.0))
    assert matrix.take((1.0, 1.0), 0.3) is lu


def test_a_failing_modified_newton_solve_is_redone_by_full_newton():
    """A kept factorization of a wrong matrix (10 × the tangent) and as many iterations as full Newton needs:
    modified Newton runs out of iterations, and the solve is redone by full Newton from u0 (the same
    solution, bit for bit), so that the step is not split."""
    model = bundle(n_fibers=1)
    state = sf.simulate(model, t_end=0.05, dt=0.01, progress=False).final_state
    solver = make_solver(model)
    evaluate, scheme, u0 = step_problem(model, state, 0.01)
    _, first = newton(evaluate, u0, solver, options=FULL.with_stagnation_window(1))
    options = sf.NewtonOptions(max_iterations=first.iterations, reuse_max_rate=0.95).with_stagnation_window(1)
    ref, ref_report = newton(evaluate, u0, solver, options=dataclasses.replace(options, jacobian_reuse=False))
    matrix = IterationMatrix()
    matrix.keep(kept_factorization(model, solver, evaluate, u0, 10.0), scheme)
    u, report = newton(evaluate, u0, solver, options=options, matrix=matrix, scheme=scheme)
    assert matrix.restarts == 1 and np.array_equal(u, ref)
    assert report.iterations > ref_report.iterations


def test_counts_reach_the_result_and_the_progress_line(capsys):
    model = stiff_tendon(4)
    r = sf.simulate(model, t_end=0.02, dt=1e-3, method="bdf2", progress=True)
    err = capsys.readouterr().err
    assert f"tangents {r.step_counts.tangent_builds} factorizations {r.step_counts.factorizations}" in err
    assert 0 < r.step_counts.factorizations < r.step_counts.newton_iterations


def test_bad_reuse_options_are_refused():
    with pytest.raises(ValueError, match="reuse_max_rate"):
        sf.NewtonOptions(reuse_max_rate=1.5)
    with pytest.raises(ValueError, match="reuse_max_change"):
        sf.NewtonOptions(reuse_max_change=-0.1)
    with pytest.raises(TypeError, match="jacobian_reuse"):
        sf.NewtonOptions(jacobian_reuse="yes")


# --------------------------------------------------------------------------- the step evaluation
def test_fiber_step_evaluation_equals_the_model_evaluation():
    """FiberStep (one compiled call) against Model.evaluate: residual, reference force, round-off floor,
    smallest stretch, Newton's norm on the free DOFs, and the tangent from one pass or two."""
    model = bundle(n_fibers=2, n_elements=6)
    state = sf.simulate(model, t_end=0.03, dt=0.01, method="bdf2", progress=False).final_state
    assert applies(model)
    solver = make_solver(model)
    h, t1 = 0.007, state.t + 0.01
    u_hat, v_hat = state.u - 0.001, state.v * 0.9
    rates = EulerRates(u_prev=u_hat, v_prev=v_hat, dt=h)
    step = FiberStep(model, u_hat=u_hat, v_hat=v_hat, h=h, c_v=rates.c_v, c_a=rates.c_a, t=t1, free=solver.free)
    u = state.u + 0.01 * state.v
    v, a, c_v, c_a = rates(u)
    ref = model.evaluate(u, v, a, t1, c_v=c_v, c_a=c_a)
    for tangent in (True, False):
        ev = step(u, tangent=tangent)
        np.testing.assert_array_equal(ev.residual, ref.residual)
        assert (ev.reference_force, ev.roundoff, ev.min_stretch) == (ref.reference_force, ref.roundoff, ref.min_stretch)
        r = ref.residual[solver.free]
        assert ev.free_norm == pytest.approx(np.sqrt(r @ r), rel=1e-14)
        np.testing.assert_array_equal(ev.element_matrices, ref.element_matrices)


def test_fiber_step_reports_an_inadmissible_state_like_the_model():
    model = bundle(n_fibers=1, n_elements=4)
    solver = make_solver(model)
    s = model.initial_state()
    step = FiberStep(model, u_hat=s.u, v_hat=s.v, h=0.01, c_v=100.0, c_a=1e4, t=0.01, free=solver.free)
    u = s.u.copy()
    u[7] = np.inf  # a blown-up state
    with pytest.raises(FloatingPointError, match="non-finite residual"):
        step(u)
    assert not applies(sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)], compiled=False))


def test_sum_rows_is_the_numpy_sum():
    rng = np.random.default_rng(3)
    rows, f, mag, lam = rng.normal(size=(3, 12)), rng.normal(size=12), rng.random(12), rng.random((4, 2)) + 0.5
    R, ref, m, lam_min, finite = sum_rows(rows, f, 2.0, mag, lam)
    expect = rows[0] + rows[1] + rows[2] - 2.0 * f
    np.testing.assert_allclose(R, expect, rtol=1e-15, atol=1e-15)
    assert ref == pytest.approx(max(np.linalg.norm(rows, axis=1).max(), np.linalg.norm(2 * f)), rel=1e-15)
    assert m == pytest.approx(np.linalg.norm(mag)) and lam_min == lam.min() and finite
    rows[1, 3] = np.nan
    assert not sum_rows(rows, f, 2.0, mag, lam)[4]


def test_implicit_step_without_a_matrix_is_full_newton():
    """implicit_step called alone (no IterationMatrix) keeps nothing and builds a tangent per iteration."""
    model = stiff_tendon(4)
    solver = make_solver(model)
    s1, rep = implicit_step(model, model.initial_state(), 1e-3, solver, method="bdf2")
    matrix = IterationMatrix()
    s2, rep2 = implicit_step(model, model.initial_state(), 1e-3, solver, method="bdf2", options=FULL, matrix=matrix)
    assert np.array_equal(s1.u, s2.u) and matrix.tangent_builds == rep2.iterations == rep.iterations


# --------------------------------------------------------------------------- the compiled step
def python_steps(monkeypatch):
    """Take every step in Python (time_step.implicit_step without its compiled fiber-only step)."""
    import skfiber.time_step as time_step
    monkeypatch.setattr(time_step, "compiled_step", lambda *args, **kwargs: None)


def counting_compiled_steps(monkeypatch) -> dict:
    """Count the steps the compiled call took (``done``) and handed back to Python (``declined``)."""
    import skfiber.time_step as time_step
    original = time_step.compiled_step
    counts = {"done": 0, "declined": 0}

    def counted(*args, **kwargs):
        out = original(*args, **kwargs)
        counts["done" if out is not None else "declined"] += 1
        return out

    monkeypatch.setattr(time_step, "compiled_step", counted)
    return counts


def compiled_and_python_runs(model, kw: dict, monkeypatch):
    """(simulate with the compiled step, simulate with Python steps only, the compiled call's counts)."""
    with monkeypatch.context() as m:
        counts = counting_compiled_steps(m)
        fast = sf.simulate(model, **kw)
    with monkeypatch.context() as m:
        python_steps(m)
        slow = sf.simulate(model, **kw)
    return fast, slow, counts


@pytest.mark.parametrize("case", ["tendon-bdf2", "bundle-euler", "bundle-bdf2"])
@pytest.mark.parametrize("reuse", [True, False])
def test_compiled_step_equals_the_python_step(case, reuse, monkeypatch):
    """The fiber-only step as one compiled call: the same states bit for bit, the same Newton iterations,
    tangents and factorizations as the Python step (simulate with and without it)."""
    name, method = case.split("-")
    model = stiff_tendon(8) if name == "tendon" else bundle(n_fibers=2, n_elements=6)
    kw = dict(t_end=0.06, dt=2e-3 if name == "tendon" else 5e-3, method=method, progress=False,
              newton_options=sf.NewtonOptions(jacobian_reuse=reuse, compiled_step=True))
    fast, slow, counts = compiled_and_python_runs(model, kw, monkeypatch)
    assert counts["done"] > 0 and counts["declined"] == 0
    np.testing.assert_array_equal(np.array(fast.displacements), np.array(slow.displacements))
    np.testing.assert_array_equal(np.array(fast.velocities), np.array(slow.velocities))
    np.testing.assert_array_equal(fast.newton_iterations, slow.newton_iterations)
    for key in ("newton_iterations", "tangent_builds", "factorizations", "newton_failures"):
        assert getattr(fast.step_counts, key) == getattr(slow.step_counts, key)
    assert fast.residual_histories == slow.residual_histories


@pytest.mark.parametrize("reuse", [True, False])
def test_compiled_step_cuts_the_line_search_as_the_python_step_does(reuse, monkeypatch):
    """The compiled step's own line search keeps a cut step s on Armijo's test
    ‖G(u + sΔu)‖ ≤ (1 − c s) ‖G(u)‖, as Python's does.  With c = 0.5 and steps of 0.01 s the Python run keeps cut steps whose residual ratio lies
    between 1 − c and 1 − c s, and some of them in steps the compiled run takes itself (checked below): a
    compiled test against 1 − c, or without the line search's s, would cut those steps further, and the states
    and residual histories would differ."""
    import skfiber.newton as newton_module

    line_search = newton_module._line_search
    decrease = 0.5

    def recording(kept: list):
        def recorded(evaluate_checked, u, du, res, *args, **kwargs):
            out = line_search(evaluate_checked, u, du, res, *args, **kwargs)
            s, ratio = out[0], out[2][1] / res
            if s < 1.0 and 1.0 - decrease < ratio <= 1.0 - decrease * s:  # kept by 1 − c s, not by 1 − c
                kept.append((s, ratio))
            return out
        return recorded

    kw = dict(t_end=0.06, dt=0.01, method="bdf2", progress=False,
              newton_options=sf.NewtonOptions(line_search_decrease=decrease, jacobian_reuse=reuse, compiled_step=True))
    in_python, in_all = [], []
    with monkeypatch.context() as m:
        counts = counting_compiled_steps(m)
        m.setattr(newton_module, "_line_search", recording(in_python))  # the steps the compiled call declined
        fast = sf.simulate(stiff_tendon(8), **kw)
    with monkeypatch.context() as m:
        python_steps(m)
        m.setattr(newton_module, "_line_search", recording(in_all))
        slow = sf.simulate(stiff_tendon(8), **kw)
    assert counts["done"] > 0
    assert len(in_all) > len(in_python), (in_all, in_python)
    np.testing.assert_array_equal(np.array(fast.displacements), np.array(slow.displacements))
    assert fast.residual_histories == slow.residual_histories
    assert fast.step_counts == slow.step_counts


@pytest.mark.parametrize("method", ["euler", "bdf2"])
def test_compiled_step_takes_activation_and_loads_at_the_step_s_end(method, monkeypatch):
    """Activations and a line load that change in time: the compiled step evaluates both at the end of the
    step, as the Python step does (the same states bit for bit); a step that took them at its start would
    lag by one step, and the states differ from the first step on."""
    fibers = [sf.Fiber.straight((0, 0.15 * k, 0), (1, 0.15 * k, 0), n_elements=6, law=sf.paper_law(),
                                activation=lambda t, k=k: 0.5 * (1 + k) * min(1.0, t / 0.04)) for k in range(2)]
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start"); model.fix(f, "end")
    model.add_line_load(lambda theta, t: np.multiply.outer([0.0, 2.0, -5.0], np.sin(np.pi * theta) * (1 + 40 * t)))
    kw = dict(t_end=0.05, dt=5e-3, method=method, progress=False,
              newton_options=sf.NewtonOptions(compiled_step=True))
    fast, slow, counts = compiled_and_python_runs(model, kw, monkeypatch)
    assert counts["done"] > 0 and counts["declined"] == 0
    np.testing.assert_array_equal(np.array(fast.displacements), np.array(slow.displacements))
    lagged = model.activations(0.0).ravel(), model.external_force(0.0)
    assert np.any(lagged[0] != model.activations(kw["dt"]).ravel())
    assert np.any(lagged[1] != model.external_force(kw["dt"]))


def test_compiled_step_equals_the_python_step_in_adaptive_runs(monkeypatch):
    """Adaptive BDF2 (its steps are implicit_step's too): the same accepted and rejected steps and states."""
    model = stiff_tendon(8)
    kw = dict(t_end=0.05, dt=0.01, method="bdf2", rtol=1e-3, atol=1e-5, progress=False,
              newton_options=sf.NewtonOptions(compiled_step=True))
    fast, slow, counts = compiled_and_python_runs(model, kw, monkeypatch)
    assert counts["done"] > 0
    np.testing.assert_array_equal(np.array(fast.displacements), np.array(slow.displacements))
    assert fast.step_counts == slow.step_counts


def test_compiled_step_hands_failing_steps_to_python(monkeypatch):
    """Steps whose Newton fails (too few iterations allowed) are declined by the compiled call and split by
    simulate as before: the same substeps, retries and states as the Python step, the matrix as it was."""
    model = stiff_tendon(6)
    kw = dict(t_end=0.1, dt=0.02, method="bdf2", progress=False,
              newton_options=sf.NewtonOptions(max_iterations=2, compiled_step=True))
    fast, slow, counts = compiled_and_python_runs(model, kw, monkeypatch)
    assert counts["declined"] > 0 and counts["done"] > 0
    assert fast.step_counts.newton_failures > 0
    np.testing.assert_array_equal(np.array(fast.displacements), np.array(slow.displacements))
    assert fast.step_counts == slow.step_counts


def test_the_compiled_step_is_chosen_per_run(monkeypatch):
    """NewtonOptions(compiled_step=None), the default: the Python step for a short run of forms whose step
    was never compiled; the compiled step once a run compiled it (a record in skfiber's cache), and for a
    fixed-step run of COMPILE_PAYOFF_STEPS steps; True and False are kept; a clear error for other values."""
    import skfiber.fiber_step as fiber_step
    model = stiff_tendon(6)
    kw = dict(t_end=0.01, dt=2e-3, method="bdf2", progress=False)
    with monkeypatch.context() as m:  # never compiled: the Python step
        m.setattr(fiber_step, "compiled_before", lambda model: False)
        counts = counting_compiled_steps(m)
        sf.simulate(model, **kw)
        assert counts == {"done": 0, "declined": 0}
        decide = fiber_step.decide_compiled_step
        assert decide(model, sf.NewtonOptions(), n_steps=fiber_step.COMPILE_PAYOFF_STEPS).compiled_step is True
        assert decide(model, sf.NewtonOptions(), n_steps=fiber_step.COMPILE_PAYOFF_STEPS - 1).compiled_step is False
        assert decide(model, sf.NewtonOptions(), n_steps=None).compiled_step is False
        assert decide(model, sf.NewtonOptions(compiled_step=True), n_steps=1).compiled_step is True
    sf.simulate(model, newton_options=sf.NewtonOptions(compiled_step=True), **kw)  # compiles (or loads) it
    assert fiber_step.compiled_before(model)
    with monkeypatch.context() as m:
        counts = counting_compiled_steps(m)
        sf.simulate(model, **kw)
        assert counts["done"] > 0 and counts["declined"] == 0
        counts = counting_compiled_steps(m)
        sf.simulate(model, newton_options=sf.NewtonOptions(compiled_step=False), **kw)
        assert counts == {"done": 0, "declined": 0}
        counts = counting_compiled_steps(m)
        sf.simulate(model, rtol=1e-3, atol=1e-5, **kw)  # adaptive: chosen the same way
        assert counts["done"] > 0
    import numba
    with monkeypatch.context() as m:  # another numba compiles again: the record does not count
        m.setattr(numba, "__version__", "0.0.0")
        assert not fiber_step.compiled_before(model)
    with monkeypatch.context() as m:  # nor after an update of skfiber (the cache is keyed on its text)
        m.setattr(fiber_step, "package_digest", lambda: "another-version")
        assert not fiber_step.compiled_before(model)
    assert fiber_step.compiled_before(model)
    numpy_model = sf.Model(model.fibers, compiled=False)
    assert not fiber_step.compiled_before(numpy_model)
    assert fiber_step.decide_compiled_step(numpy_model, sf.NewtonOptions(), n_steps=10**6).compiled_step is False
    with pytest.raises(TypeError, match="compiled_step must be True, False or None"):
        sf.NewtonOptions(compiled_step="yes")


def test_a_long_run_of_the_run_driver_decides_once(monkeypatch, tmp_path):
    """run_simulation takes one simulate call per step: it decides the compiled step for the whole run
    (its number of steps), not for each call."""
    import skfiber.fiber_step as fiber_step
    from skfiber.run import run_simulation
    model = stiff_tendon(6)
    with monkeypatch.context() as m:
        m.setattr(fiber_step, "compiled_before", lambda model: False)
        m.setattr(fiber_step, "COMPILE_PAYOFF_STEPS", 4)
        counts = counting_compiled_steps(m)
        run_simulation(model, t_end=0.01, dt=2e-3, progress=False, checkpoint_every=None)
        assert counts["done"] > 0 and counts["declined"] == 0
        m.setattr(fiber_step, "COMPILE_PAYOFF_STEPS", 6)
        counts = counting_compiled_steps(m)
        run_simulation(model, t_end=0.01, dt=2e-3, progress=False, checkpoint_every=None)
        assert counts == {"done": 0, "declined": 0}


def test_compiled_step_declines_what_it_does_not_cover():
    """Models with contacts, bodies or numpy forms, a solver without the block LU and arrays that are not
    float: None (Python steps)."""
    from skfiber.fiber_step import compiled_step
    model = bundle(n_fibers=1, n_elements=4)
    state = model.initial_state()
    solver = make_solver(model)
    options = sf.NewtonOptions().with_stagnation_window(1)
    start = dict(u0=state.u.copy(), u_hat=state.u, v_hat=state.v, h=0.01, options=options)  # backward Euler, a = 0
    assert compiled_step(model, state, 0.01, solver, **start) is not None
    numpy_model = sf.Model(model.fibers, compiled=False)
    numpy_model.fix(model.fibers[0], "start")
    assert compiled_step(numpy_model, state, 0.01, make_solver(numpy_model), **start) is None
    from skfiber.linalg import ConstrainedSolver
    band = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs, block=False)
    assert compiled_step(model, state, 0.01, band, **start) is None
    integers = np.zeros(model.n_dofs, dtype=int)
    assert compiled_step(model, state, 0.01, solver, **{**start, "u0": integers, "u_hat": integers}) is None


def test_iteration_matrix_snapshot_restores_take_carried_and_keep():
    matrix = IterationMatrix()
    matrix.keep("lu", (1.0, 2.0))
    snapshot = matrix.snapshot()
    assert matrix.take((1.0, 2.0), 0.3) == "lu"
    matrix.carried(False)
    matrix.keep(None, (3.0, 4.0))
    matrix.restore(snapshot)
    assert (matrix.factorization, matrix.coefficients, matrix.snapshot()) == ("lu", (1.0, 2.0), snapshot)


def test_a_damped_increment_gives_no_contraction_rate():
    """θ = ‖Δuₖ‖/‖Δuₖ₋₁‖ compares full increments of one factorization only: after a step cut by the line search
    (Δu = −2 halved) the next increment of the kept factorization (−0.8) is judged by the residual its full step
    reaches, not by θ = 0.4 > reuse_max_rate against the cut one, so no second factorization is made."""
    from types import SimpleNamespace

    residual_at = {0.0: 1.0, -2.0: 3.0, -1.0: 0.4, -1.8: 0.01, -1.82: 0.0}

    def evaluate(u, tangent=True):
        return SimpleNamespace(residual=np.array([residual_at[round(float(u[0]), 12)]]), min_stretch=1.0,
                               reference_force=1.0, roundoff=0.0, n_active_contacts=0, margins=None,
                               element_matrices=None, extra=[])

    slope = 0.5  # every factorization's: Δu = −G / 0.5
    kept = SimpleNamespace(solve=lambda rhs: rhs / slope)
    solver = SimpleNamespace(fixed=np.zeros(1, dtype=bool), factor_solve=lambda K, rhs, extra: (rhs / slope, kept))
    matrix = IterationMatrix()
    options = sf.NewtonOptions(atol=1e-3, rtol=1e-9)
    assert options.reuse_max_rate < 0.4
    u, report = newton(evaluate, np.zeros(1), solver, options=options, matrix=matrix, scheme=(1.0, 1.0))
    assert u[0] == pytest.approx(-1.82) and report.step_fractions == [0.5, 1.0, 1.0]
    assert (matrix.factorizations, matrix.reused_solves) == (1, 2)


def test_a_stagnation_after_an_increment_of_the_kept_factorization_tries_a_fresh_tangent():
    """The stagnation test does not give up while an increment of its window came from a kept factorization:
    there it makes a fresh tangent.  Here a reused increment lowers ‖G‖ by only 2 % (0.05 → 0.049, window of
    one iteration); the fresh tangent at that iterate then converges."""
    from types import SimpleNamespace

    residual_at = {0.0: 1.0, -2.0: 0.05, -2.1: 0.049, -2.198: 0.0}

    def evaluate(u, tangent=True):
        return SimpleNamespace(residual=np.array([residual_at[round(float(u[0]), 12)]]), min_stretch=1.0,
                               reference_force=1.0, roundoff=0.0, n_active_contacts=0, margins=None,
                               element_matrices=None, extra=[])

    kept = SimpleNamespace(solve=lambda rhs: rhs / 0.5)
    solver = SimpleNamespace(fixed=np.zeros(1, dtype=bool), factor_solve=lambda K, rhs, extra: (rhs / 0.5, kept))
    matrix = IterationMatrix()
    options = sf.NewtonOptions(atol=1e-4, rtol=1e-9, stagnation_window=1)
    u, report = newton(evaluate, np.zeros(1), solver, options=options, matrix=matrix, scheme=(1.0, 1.0))
    assert u[0] == pytest.approx(-2.198) and report.residual_history == [1.0, 0.05, 0.049, 0.0]
    assert (matrix.factorizations, matrix.reused_solves) == (2, 1)
