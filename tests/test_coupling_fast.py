"""The fast path of the coupled solver (skfiber.coupling_fast, skfiber.coupled_kernels) against the general path."""
import sys
from pathlib import Path

import numpy as np
import pytest
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.coupling import CoupledProblem
from skfiber.coupling_fast import FastCoupling, FastEvaluation, InadmissibleState
from skfiber.rigid import EulerStep, rigid_step
from skfiber.solver import EulerRates, predicted_accelerations

from conftest import perturbed_step, two_link_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from demos import upper_limb  # noqa: E402


def assert_same_evaluation(fast, general):
    """The residual and Newton's scalars bit for bit (the same kernels, the rows of q from the one
    ``coupled_rows``, the same order of the sums), but the force scale (‖G_c‖), which numpy sums in another
    order, to round-off."""
    assert isinstance(fast, FastEvaluation) and not isinstance(general, FastEvaluation)
    np.testing.assert_array_equal(fast.residual, general.residual)
    assert fast.reference_force == pytest.approx(general.reference_force, rel=1e-14)  # (‖G_c‖ summed in order)
    assert fast.roundoff == general.roundoff
    assert fast.min_stretch == general.min_stretch
    assert fast.n_active_contacts == general.n_active_contacts
    assert (fast.margins is None) == (general.margins is None)
    for name, (el, m) in (fast.margins or {}).items():
        np.testing.assert_array_equal(el, general.margins[name][0])
        np.testing.assert_array_equal(m, general.margins[name][1])


def assert_same_solve(prob_fast, prob_general, fast, general, method="block"):
    """Tangent blocks and increments equal to round-off (matrix products summed in another order); the fiber
    block solved by ``method`` (fibers touching each other take a sparse LU, not the block LU)."""
    for a, b in zip(prob_fast.tangent_blocks(fast), prob_general.tangent_blocks(general)):
        assert np.abs(b).max() > 0
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max())
    dz_general = prob_general.solve_newton(general)
    scale = np.abs(dz_general).max()
    np.testing.assert_allclose(prob_fast.solve_newton(fast), dz_general, rtol=0, atol=1e-10 * scale)
    assert prob_fast.fiber_solver.last_method == method  # the compiled increment, not its fallback
    # the numpy variant of the fast solve (used when the compiled one is rejected) agrees too
    np.testing.assert_allclose(prob_fast._fast.solve_blocks(fast), dz_general, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(prob_fast.tangent_matrix(fast), prob_general.tangent_matrix(general), rtol=0,
                               atol=1e-12 * np.abs(prob_general.tangent_matrix(general)).max())


def assert_same_safeguard(prob_fast, prob_general, z, steps, t):
    """The safeguard's δ for each step (the same contact arithmetic on the same poses; with
    ``safeguard="trial"`` the fast path's is the compiled :func:`skfiber.contact.cylinder_safeguard.trial_step`)."""
    deltas = []
    for dz in steps:
        d = prob_fast.max_step(z, dz, t, delta_bar=0.25)
        assert d == prob_general.max_step(z, dz, t, delta_bar=0.25)
        deltas.append(d)
    return deltas


def assert_fused_increment(prob_fast, ev):
    """With at most one contact in touch the increment is one compiled call (newton_increment), bit for bit
    the increment of the separate kernels."""
    fc = prob_fast._fast
    active = [c for c in ev.contacts if c.active]
    assert len(active) <= 1
    fused, status, its = fc._fused_increment(ev, active[0] if active else None)
    separate, status_separate, its_separate = fc._separate_increment(ev, 0.0)
    assert status == status_separate == 0 and its == its_separate == 0
    np.testing.assert_array_equal(fused, separate)
    np.testing.assert_array_equal(prob_fast.solve_newton(ev), fused)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_links_with_a_body_cylinder(seed):
    """Two coordinates, a joint spring (the rigid step through rigid_step), a cylinder on a moving body."""
    model = two_link_model()
    fast, state, z, fs, rs = perturbed_step(model, seed)
    general = CoupledProblem(model, fast=False)
    assert fast._fast is not None and general._fast is None
    t = state.t + 0.01
    ev_fast = fast.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    ev_general = general.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    assert ev_general.n_active_contacts > 0
    assert_same_evaluation(ev_fast, ev_general)
    assert_same_solve(fast, general, ev_fast, ev_general)
    assert_fused_increment(fast, ev_fast)
    dz = general.solve_newton(ev_general)
    assert_same_safeguard(fast, general, z, [dz, 10 * dz, 100 * dz], t)
    # the fibers lifted 10 cm off the cylinder: the fused call without a contact
    N = fast.N
    far = z.copy()
    far[:N][np.arange(N) % 6 == 2] += 0.1  # the z coordinate of each node
    ev_far = fast.evaluate(far, t, fiber_state=fs, rigid_state=rs)
    assert ev_far.n_active_contacts == 0 and not any(c.active for c in ev_far.contacts)
    assert_fused_increment(fast, ev_far)
    assert_same_solve(fast, general, ev_far, general.evaluate(far, t, fiber_state=fs, rigid_state=rs))


def test_upper_limb_state_in_contact(monkeypatch):
    """The demo's earlier ('softening') model, without fiber–fiber contact, a few steps into the run: trial
    safeguard margins, gravity-only rigid step (EulerStep)."""
    model = upper_limb.build_model(4, geometry="softening")
    dt = 8.0 / 128
    state = sf.simulate(model, t_end=6 * dt, dt=dt, progress=False).final_state
    a0, b0 = predicted_accelerations(state, dt)
    z = np.concatenate([state.u + dt * state.v + dt**2 * a0, state.q + dt * state.p + dt**2 * b0])
    t = state.t + dt

    def fiber_state(u):
        v = (u - state.u) / dt
        return v, (v - state.v) / dt, 1.0 / dt, 1.0 / dt**2

    rigid_state = EulerStep(model.rigid, q_prev=state.q, p_prev=state.p, dt=dt, t=t)
    fast, general = CoupledProblem(model), CoupledProblem(model, fast=False)
    ev_fast = fast.evaluate(z, t, fiber_state=fiber_state, rigid_state=rigid_state)
    ev_general = general.evaluate(z, t, fiber_state=fiber_state, rigid_state=rigid_state)
    assert ev_general.n_active_contacts > 0 and ev_general.margins
    assert_same_evaluation(ev_fast, ev_general)
    assert_same_solve(fast, general, ev_fast, ev_general)
    # the step's rates as EulerRates
    rates = EulerRates(u_prev=state.u, v_prev=state.v, dt=dt)
    assert_same_evaluation(fast.evaluate(z, t, fiber_state=rates, rigid_state=rigid_state), ev_general)
    # the Newton step, and the triceps pushed 9 cm forwards through the elbow's cylinder
    d = model.discretization
    push = np.zeros_like(z)
    push[:d.n_dofs][(np.arange(d.n_dofs) % 6 == 0) & np.isclose(d.reference_dofs, -0.10)] = 0.09
    calls = []
    kernel = sf.coupling_fast.trial_step
    monkeypatch.setattr(sf.coupling_fast, "trial_step", lambda *a: calls.append(kernel(*a)) or calls[-1])
    deltas = assert_same_safeguard(fast, general, z, [general.solve_newton(ev_general), push], t)
    assert deltas[0] == 1.0 and deltas[1] < 0.01
    assert calls == deltas  # the compiled safeguard, one call per step (one cylinder)
    assert_fused_increment(fast, ev_fast)


def test_runs_agree(monkeypatch):
    """A short run of the demo's earlier ('softening') model takes the same Newton iterations on both paths, with the same states
    to round-off."""
    results = []
    for fast in (True, False):
        model = upper_limb.build_model(4, geometry="softening")
        monkeypatch.setattr(sf.solver, "make_solver", lambda m, fast=fast: CoupledProblem(m, fast=fast))
        results.append(sf.simulate(model, t_end=0.5, dt=8.0 / 128, progress=False))
    one, two = results
    assert np.array_equal(one.newton_iterations, two.newton_iterations) and sum(one.newton_iterations) > 16
    np.testing.assert_allclose(one.coordinates, two.coordinates, rtol=0, atol=1e-9)
    np.testing.assert_allclose(one.displacements, two.displacements, rtol=0, atol=1e-9)


def test_an_inadmissible_contact_is_reported_by_the_general_path():
    """The fast path raises where the general path raises, with the general path's message (fiber, cylinder)."""
    model = two_link_model()
    fast, state, z, fs, rs = perturbed_step(model, 1)
    general = CoupledProblem(model, fast=False)
    t = state.t + 0.01
    z = z.copy()
    z[fast.N + 1] -= 0.3  # the second link turns into fiber "b"
    with pytest.raises(FloatingPointError) as expected:
        general.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    with pytest.raises(InadmissibleState, match="inadmissible contact") as raised:
        fast.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    assert isinstance(raised.value, FloatingPointError)  # what Newton's safeguard catches
    assert str(raised.value) == str(expected.value)


def test_models_without_kernels_take_the_general_path():
    model = two_link_model()
    assert FastCoupling.supports(model)
    model.add_term(LinearForm(lambda v, w: 2.0 * dot(w.xdot, v) * w.J), name="drag")
    assert FastCoupling.supports(model)  # a traceable term runs in the generated kernel, on the fast path
    model.add_term(LinearForm(lambda v, w: np.maximum(w.x, 0.0)[2] * v[2] * w.J), name="clipped")  # (a vector's)
    with pytest.warns(RuntimeWarning, match="'clipped' cannot be compiled"):
        assert not FastCoupling.supports(model) and CoupledProblem(model)._fast is None
    slow = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)], rigid=model.rigid, compiled=False)
    assert not FastCoupling.supports(slow)


def test_euler_step_terms_equal_rigid_step():
    """EulerStep.terms: one kernel call with gravity only, rigid_step otherwise; the same numbers."""
    for model in (upper_limb.build_model(2, geometry="softening"), two_link_model()):
        system = model.rigid
        n = system.n
        rng = np.random.default_rng(5)
        q_prev, p_prev, q = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        step = EulerStep(system, q_prev=q_prev, p_prev=p_prev, dt=0.01, t=0.3)
        R, K, ref = step.terms(q)
        rs = rigid_step(system, q, q_prev=q_prev, p_prev=p_prev, dt=0.01, t=0.3)
        np.testing.assert_array_equal(R, rs.residual)
        np.testing.assert_array_equal(K, rs.tangent)
        assert ref == rs.reference_force
        assert step(q).residual.tolist() == rs.residual.tolist()
    with pytest.raises(ValueError, match="dt must be > 0"):
        EulerStep(system, q_prev=q_prev, p_prev=p_prev, dt=0.0, t=0.3)


def test_fixed_and_moving_cylinders_next_to_body_ones():
    """Cylinders that are not on a body (fixed, and moving with pose(t)) in a coupled model: both paths agree."""
    from skfiber.contact import PenaltyLaw
    from skfiber.contact.cylinder import CylinderContact

    model = two_link_model()
    law = PenaltyLaw(stiffness=300.0, gamma=4.0)
    model.add_contact(CylinderContact(point=(0.225, -0.1, 0.15), axis=(0, 1, 0), radius=0.02, law=law, fibers=["a"],
                                      name="fixed"))
    model.add_contact(CylinderContact(pose=lambda t: ((0.175, -0.1, 0.22 + 0.01 * t), (0, 1, 0)), radius=0.02,
                                      law=law, fibers=["a"], name="moving"))
    fast, state, z, fs, rs = perturbed_step(model, 2)
    general = CoupledProblem(model, fast=False)
    assert fast._fast is not None
    t = state.t + 0.01
    ev_fast = fast.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    ev_general = general.evaluate(z, t, fiber_state=fs, rigid_state=rs)
    active = {c.cylinder.name: c.active for c in ev_fast.contacts}
    assert active["fixed"] and active["moving"] and active["b2"]
    assert_same_evaluation(ev_fast, ev_general)
    assert_same_solve(fast, general, ev_fast, ev_general)
    dz = general.solve_newton(ev_general)
    assert_same_safeguard(fast, general, z, [dz, 10 * dz], t)


def test_trial_safeguard_in_one_call(monkeypatch):
    """``safeguard="trial"`` on a cylinder of a moving body, a fixed one and one moving with pose(t): the
    compiled bound (contact.cylinder_safeguard.trial_step) gives the contacts' own δ, halvings included."""
    from skfiber.contact import PenaltyLaw
    from skfiber.contact.cylinder import CylinderContact

    model = two_link_model()
    model.contacts[0].safeguard = "trial"
    law = PenaltyLaw(stiffness=300.0, gamma=4.0)
    model.add_contact(CylinderContact(point=(0.225, -0.1, 0.15), axis=(0, 1, 0), radius=0.02, law=law, fibers=["a"],
                                      name="fixed", safeguard="trial"))
    model.add_contact(CylinderContact(pose=lambda t: ((0.175, -0.1, 0.22 + 0.01 * t), (0, 1, 0)), radius=0.02,
                                      law=law, fibers=["a"], name="moving", safeguard="trial"))
    calls = []
    kernel = sf.coupling_fast.trial_step
    monkeypatch.setattr(sf.coupling_fast, "trial_step", lambda *a: calls.append(kernel(*a)) or calls[-1])
    fast, state, z, fs, rs = perturbed_step(model, 1)
    general = CoupledProblem(model, fast=False)
    t = state.t + 0.01
    dz = general.solve_newton(general.evaluate(z, t, fiber_state=fs, rigid_state=rs))
    deltas = assert_same_safeguard(fast, general, z, [s * dz for s in (1, 3, 10, 30, 100, 300)], t)
    assert len(calls) == 3 * len(deltas)  # every cylinder in one call per step
    assert deltas[0] == 1.0 and 0 < min(deltas) < 0.1 and any(0.1 < d < 1 for d in deltas)


@pytest.fixture(scope="module")
def upper_limb_state():
    """The demo's earlier ('softening') model (level 4 fibers, Δt = T/128) six steps into the run, and the wrapping cylinder's pose."""
    model = upper_limb.build_model(4, geometry="softening")
    dt = 8.0 / 128
    state = sf.simulate(model, t_end=6 * dt, dt=dt, progress=False).final_state
    model.set_coordinates(state.q)
    return state, dt, model.contacts[0].pose_at(state.t), model.contacts[0].radius


@pytest.mark.parametrize("moving", [False, True])
def test_fast_evaluation_with_a_cylinder_off_the_bodies(moving, upper_limb_state):
    """The fast path with the model's only cylinder fixed, or moving with pose(t), where the forearm's
    cylinder is: its pose comes from Python, not from the body points; the same numbers as the general
    path."""
    from skfiber.contact import PenaltyLaw
    from skfiber.contact.cylinder import CylinderContact

    state, dt, pose, radius = upper_limb_state
    model = upper_limb.build_model(4, geometry="softening", wrap=False)
    point, axis = pose.point.copy(), pose.axis.copy()
    where = dict(pose=lambda t: (point + [0.0, 0.0, 1e-3 * t], axis)) if moving else dict(point=point, axis=axis)
    model.add_contact(CylinderContact(**where, radius=radius, law=PenaltyLaw(stiffness=768.0, gamma=4.0),
                                      safeguard="trial", fibers=[f"triceps{k}" for k in (1, 2, 3)], name="rest"))
    a0, b0 = predicted_accelerations(state, dt)
    z = np.concatenate([state.u + dt * state.v + dt**2 * a0, state.q + dt * state.p + dt**2 * b0])
    t = state.t + dt
    rates = EulerRates(u_prev=state.u, v_prev=state.v, dt=dt)
    rigid = EulerStep(model.rigid, q_prev=state.q, p_prev=state.p, dt=dt, t=t)
    fast, general = CoupledProblem(model), CoupledProblem(model, fast=False)
    ev = fast.evaluate(z, t, fiber_state=rates, rigid_state=rigid)
    assert ev.n_active_contacts > 0
    ev_general = general.evaluate(z, t, fiber_state=rates, rigid_state=rigid)
    assert_same_evaluation(ev, ev_general)
    assert_same_solve(fast, general, ev, ev_general)


def fiber_contact_model(monkeypatch, n_elements=4):
    """The demo's model (its Table-4 geometry: fiber–fiber contact on all pairs, every pair admissible)."""
    from skfiber.contact.fibers import FiberContact
    model = upper_limb.build_model(n_elements)
    assert any(isinstance(c, FiberContact) for c in model.contacts)
    return model


def fiber_contact_state(model):
    """(z, t, fiber rates, rigid step) of a Newton iterate of the demo's model with fibers in touch: halfway
    into the fourth step of 1/16 s."""
    dt = 8.0 / 128
    state = sf.simulate(model, t_end=3 * dt, dt=dt, progress=False).final_state
    z = np.concatenate([state.u + 0.5 * dt * state.v, state.q + 0.5 * dt * state.p])
    t = state.t + dt
    rates = EulerRates(u_prev=state.u, v_prev=state.v, dt=dt)
    rigid_state = EulerStep(model.rigid, q_prev=state.q, p_prev=state.p, dt=dt, t=t)
    return z, t, rates, rigid_state


def test_fiber_contact_on_the_fast_path(monkeypatch):
    """Fiber–fiber contact joins the fast path (its residual and tangent triplets from its own implementation,
    in the model's order of contacts): the same evaluation, tangent blocks, increment and safeguard as the
    general path."""
    model = fiber_contact_model(monkeypatch)
    assert FastCoupling.supports(model)
    z, t, rates, rigid_state = fiber_contact_state(model)
    fast, general = CoupledProblem(model), CoupledProblem(model, fast=False)
    ev_fast = fast.evaluate(z, t, fiber_state=rates, rigid_state=rigid_state)
    ev_general = general.evaluate(z, t, fiber_state=rates, rigid_state=rigid_state)
    assert ev_fast.fiber_contacts and ev_fast.fiber_contacts[0].active
    assert fast._fast._fused_ready  # the one-call evaluation (fibers, bodies, cylinder), the fiber contact after it
    assert ev_general.n_active_contacts > 0
    assert_same_evaluation(ev_fast, ev_general)
    assert_same_solve(fast, general, ev_fast, ev_general, method="block+gmres")
    dz = general.solve_newton(ev_general)
    deltas = assert_same_safeguard(fast, general, z, [dz, 30 * dz], t)
    assert deltas[1] < 1.0  # the fiber–fiber safeguard cuts the long step


def test_fiber_contact_runs_agree(monkeypatch):
    """A short run with fiber–fiber contact: the same Newton iterations and states on both paths."""
    results = []
    for fast in (True, False):
        model = fiber_contact_model(monkeypatch)
        monkeypatch.setattr(sf.solver, "make_solver", lambda m, fast=fast: CoupledProblem(m, fast=fast))
        results.append(sf.simulate(model, t_end=0.25, dt=8.0 / 128, progress=False))
    one, two = results
    np.testing.assert_array_equal(one.newton_iterations, two.newton_iterations)
    np.testing.assert_allclose(one.coordinates, two.coordinates, rtol=0, atol=1e-9)
    np.testing.assert_allclose(one.displacements, two.displacements, rtol=0, atol=1e-9)


def test_fiber_contact_increment_to_a_linear_tolerance(monkeypatch):
    """With fibers in touch, Newton's increment may stop GMRES at an absolute residual (an inexact Newton
    step): the increment's residual ‖T Δz + G‖ (dense T) is within twice that tolerance, GMRES takes fewer
    iterations than to round-off, and tolerance 0 keeps the increment of the exact solve."""
    model = fiber_contact_model(monkeypatch)
    z, t, rates, rigid_state = fiber_contact_state(model)
    prob = CoupledProblem(model)
    ev = prob.evaluate(z, t, fiber_state=rates, rigid_state=rigid_state)
    assert ev.fiber_contacts and ev.fiber_contacts[0].active
    T = prob.tangent_matrix(ev)
    free = T.any(axis=1)
    G = np.where(free, ev.residual, 0.0)
    g_norm = np.linalg.norm(G)
    iterations = []
    increments = []
    for tau in (0.0, 1e-6 * g_norm, 1e-3 * g_norm):
        before = prob.krylov_iterations
        dz = prob.solve_newton(ev, linear_tolerance=tau)
        assert prob.fiber_solver.last_method == "block+gmres"
        iterations.append(prob.krylov_iterations - before)
        increments.append(dz)
        linear_residual = np.linalg.norm(T @ dz + G)
        assert linear_residual <= max(2 * tau, 1e-11 * g_norm), (tau, linear_residual)
    assert iterations[0] > iterations[1] >= iterations[2], iterations
    exact = prob.solve_blocks(ev)  # the general linear algebra (sparse LU)
    scale = np.abs(exact).max()
    np.testing.assert_allclose(increments[0], exact, rtol=0, atol=1e-10 * scale)
    assert np.abs(increments[1] - exact).max() > 0.0  # (stopped early: not the exact solve)


def test_newton_stops_gmres_at_a_fraction_of_its_tolerance(monkeypatch):
    """Newton passes NewtonOptions.linear_fraction × its tolerance to the coupled solve: fewer GMRES iterations
    than with 0 (to round-off), the same Newton iterations and states to far below Newton's tolerance."""
    runs = []
    for fraction in (0.0, sf.NewtonOptions().linear_fraction):
        model = fiber_contact_model(monkeypatch)
        problems = []
        monkeypatch.setattr(sf.solver, "make_solver", lambda m: problems.append(CoupledProblem(m)) or problems[-1])
        result = sf.simulate(model, t_end=0.25, dt=8.0 / 128, progress=False,
                             newton_options=sf.NewtonOptions(linear_fraction=fraction))
        runs.append((result, sum(p.krylov_iterations for p in problems)))
    (exact, k_exact), (inexact, k_inexact) = runs
    assert 0 < k_inexact < k_exact, (k_inexact, k_exact)
    np.testing.assert_array_equal(exact.newton_iterations, inexact.newton_iterations)
    np.testing.assert_allclose(inexact.coordinates, exact.coordinates, rtol=0, atol=1e-9)
    np.testing.assert_allclose(inexact.displacements, exact.displacements, rtol=0, atol=1e-9)
    for bad in (-0.1, 0.5):
        with pytest.raises(ValueError, match=r"linear_fraction must lie in \[0, 0.1\]"):
            sf.NewtonOptions(linear_fraction=bad)
    with pytest.raises(TypeError, match="linear_fraction must be a finite number"):
        sf.NewtonOptions(linear_fraction=float("nan"))
