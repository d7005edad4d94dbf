"""Fibers coupled to rigid bodies (paper §3.2, eq. 64): tangent, dynamics, reactions, errors."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.coupling import CoupledProblem
from skfiber.rigid import Body, Fixed, Revolute, RigidSystem

from conftest import coupled_tangent_and_differences, perturbed_step, step_functions, two_link_model


@pytest.mark.parametrize("fast", [True, False])
def test_coupled_tangent_matches_finite_differences(fast):
    """Fiber + contact with a moving body cylinder + attachments + rigid dynamics: the whole tangent, of the
    compiled coupling and of the general path."""
    model = two_link_model()
    dt = 0.01
    prob, state, z, fs, rs = perturbed_step(model, 1, dt, fast=fast)
    N = prob.N
    cev = prob.evaluate(z, dt, fiber_state=fs, rigid_state=rs)
    assert cev.n_active_contacts > 10  # the contact with the moving cylinder is active
    T, FD, free = coupled_tangent_and_differences(prob, cev, z, dt, fiber_state=fs, rigid_state=rs)
    scale = np.abs(T).max()
    for rows, cols in [(slice(0, N), slice(0, N)), (slice(0, N), slice(N, None)),
                       (slice(N, None), slice(0, N)), (slice(N, None), slice(N, None))]:
        block, fd = T[rows, cols], FD[rows, cols]
        assert np.abs(block).max() > 1.0  # every block is really there
        assert np.abs(block - fd).max() <= 1e-6 * scale
    # the block elimination solves the same system
    dz = prob.solve_newton(cev)
    ref = np.linalg.solve(T[np.ix_(free, free)], -cev.residual[free])
    assert np.allclose(dz[free], ref, rtol=0, atol=1e-7 * np.abs(ref).max())


@pytest.mark.parametrize("gap", ["closest_point", "smallest"])
@pytest.mark.parametrize("fast", [True, False])
def test_coupled_tangent_with_fiber_fiber_contact_matches_finite_differences(fast, gap):
    """Two fibers pressed into each other, both ends attached to the two moving links, lying on the
    cylinders of both links: the whole coupled tangent against central differences, the fiber–fiber
    contact's blocks between the two fibers and the terms of two contact cylinders on bodies included."""
    model = two_link_model(fiber_contact=gap)
    dt = 0.01
    prob, state, z, fs, rs = perturbed_step(model, 2, dt, fast=fast, scale=0.5)
    N = prob.N
    cev = prob.evaluate(z, dt, fiber_state=fs, rigid_state=rs)
    model.set_coordinates(z[N:])
    active = {c.name: c.evaluate(model, z[:N], dt, tangent=False).n_active for c in model.contacts}
    assert active["b1"] > 0 and active["b2"] > 0  # two cylinders on bodies in touch
    assert active["fiber_contact"] >= 40  # (2 fibers × 8 elements × 5 points: most of them in touch)
    T, FD, free = coupled_tangent_and_differences(prob, cev, z, dt, fiber_state=fs, rigid_state=rs)
    scale = np.abs(T).max()
    b, c = (6 * fd.first_node + np.arange(6 * fd.n_nodes) for fd in model.discretization.fiber_dofs[1:])
    assert np.abs(T[np.ix_(b, c)]).max() > 1e-3 * scale  # the contact couples the two fibers' rows
    assert np.abs(T - FD).max() <= 1e-6 * scale


def test_tangent_check_catches_a_missing_term():
    """The check above can fail: dropping the ∂C/∂q term changes the tangent 100× more than its tolerance."""
    model = two_link_model()
    prob = CoupledProblem(model)
    state = model.initial_state()
    fs, rs = step_functions(model, state, 0.01)
    z = np.concatenate([state.u, [0.2, -0.3]])
    cev = prob.evaluate(z, 0.01, fiber_state=fs, rigid_state=rs)
    T = prob.tangent_matrix(cev)
    kin = cev.blocks["kin"]
    object.__setattr__(kin, "hessian", np.zeros_like(kin.hessian))
    T_wrong = prob.tangent_matrix(cev)
    N = prob.N
    assert np.abs(T_wrong[N:, N:] - T[N:, N:]).max() > 1e-4 * np.abs(T).max()


def pendulum_model(n_elements=2, rho=1e-4):
    """A rod (1 kg, 0.5 m, hinged about y at the origin) hanging on an elastic, viscous fiber."""
    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0), joint=Revolute(axis=(0, 1, 0)))
    law = sf.passive_kelvin_voigt(mu_muscle=1e6, mu_tendon=1e6, eta_muscle=2e3, eta_tendon=2e3) + sf.prestress(1e4)
    fiber = sf.Fiber.straight((0.5, 0, 0.4), (0.5, 0, 0), n_elements=n_elements, radius=0.005, law=law, density=rho)
    model = sf.Model([fiber], rigid=system)
    model.fix(fiber, "start")
    model.attach(fiber, "end", "rod", name="tip")
    return model


def pendulum_ode(t_end):
    """Independent reference: I θ̈ = Q_gravity + tip force · ∂tip/∂θ with the fiber as a massless spring–damper."""
    m, L, r, g = 1.0, 0.5, 0.01, 9.81
    I = m * (L**2 / 3 + r**2 / 4)
    r0, l0, mu, eta, s0 = 0.005, 0.4, 1e6, 2e3, 1e4
    anchor = np.array([0.5, 0, 0.4])

    def rhs(t, y):
        th, om = y
        tip = np.array([L * np.cos(th), 0, -L * np.sin(th)])
        dtip = np.array([-L * np.sin(th), 0, -L * np.cos(th)])
        d = anchor - tip
        ell = np.linalg.norm(d)
        lam = ell / l0
        lamdot = -(d @ dtip) * om / ell / l0
        S = s0 / lam**2 + mu * (1 - lam**-3) + 3 * eta * lamdot / lam**3
        force = np.pi * r0**2 * lam * S * d / ell
        Q = 0.5 * L * m * g * np.cos(th) + force @ dtip
        return [om, Q / I]

    return solve_ivp(rhs, (0, t_end), [0.0, 0.0], method="Radau", rtol=1e-11, atol=1e-12, dense_output=True)


def test_fiber_carrying_a_pendulum_agrees_with_an_ode():
    """Backward Euler converges to the ODE at first order; Richardson extrapolation removes it."""
    t_end = 0.2
    ref = pendulum_ode(t_end)
    errors, runs = [], []
    for dt in (0.004, 0.002, 0.001):
        model = pendulum_model()
        res = sf.simulate(model, t_end=t_end, dt=dt, progress=False)
        runs.append(res)
        errors.append(np.abs(res.coordinates[:, 0] - ref.sol(res.times)[0]).max())
    amplitude = np.abs(ref.sol(np.linspace(0, t_end, 50))[0]).max()
    assert amplitude > 0.02  # the rod really swings
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all((rates > 0.8) & (rates < 1.2)), (errors, rates)  # backward Euler: first order
    extrapolated = 2 * runs[2].coordinates[::2, 0] - runs[1].coordinates[:, 0]
    extrapolation_error = np.abs(extrapolated - ref.sol(runs[1].times)[0]).max()  # measured 1.8e-4
    assert extrapolation_error < 0.25 * errors[-1] and extrapolation_error < 0.01 * amplitude


def test_bdf2_of_the_fiber_carrying_a_pendulum_converges_to_the_ode_at_second_order():
    """BDF2 against the same independent ODE: the largest error in θ over 0.2 s falls at rate 2 (measured
    1.1e-3, 2.8e-4 and 7.1e-5 at 40, 80 and 160 steps: rates 1.93 and 1.98; 1.99 on to 320 steps)."""
    t_end = 0.2
    ref = pendulum_ode(t_end)
    errors = []
    for steps in (40, 80, 160):
        res = sf.simulate(pendulum_model(), t_end=t_end, dt=t_end / steps, method="bdf2", progress=False,
                          store_every=1)
        errors.append(np.abs(res.coordinates[:, 0] - ref.sol(res.times)[0]).max())
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(rates - 2.0) < 0.1), (errors, rates)
    assert errors[-1] < 1e-4


def test_reactions_balance_at_rest():
    """At rest the fiber pulls the fixed frame and the rod with equal and opposite forces,
    and the rod's moment balance about the hinge holds."""
    model = pendulum_model()
    res = sf.simulate(model, t_end=3.0, dt=0.02, progress=False)
    state = res.final_state
    assert np.abs(state.p).max() < 1e-6  # at rest
    tip = model.attachment_forces(state)["tip"]  # the fiber's pull on the rod
    u = state.u
    G = model.evaluate(u, state.v, state.a, state.t, c_v=0.0, c_a=0.0).residual
    anchor = -G[model.constrained_dofs]  # the fiber's pull on the fixed support
    assert np.allclose(anchor + tip, 0.0, atol=1e-6 * np.linalg.norm(tip))
    th = state.q[0]
    arm = np.array([0.5 * np.cos(th), 0, -0.5 * np.sin(th)])
    gravity = np.array([0, 0, -9.81])
    moment = np.cross(arm, tip)[1] + np.cross(0.5 * arm, gravity)[1]
    assert abs(moment) < 1e-6 * np.linalg.norm(np.cross(arm, tip))
    assert tip[2] == pytest.approx(9.81 / 2, rel=1e-3)  # it carries half the rod's weight


def test_restart_from_final_state_is_exact():
    model = pendulum_model()
    full = sf.simulate(model, t_end=0.1, dt=0.01, progress=False)
    half = sf.simulate(model, t_end=0.05, dt=0.01, progress=False)
    rest = sf.simulate(model, t_end=0.1, dt=0.01, state=half.final_state, progress=False)
    assert rest.times[-1] == full.times[-1]
    assert np.allclose(rest.coordinates[-1], full.coordinates[-1], rtol=1e-12, atol=0)
    assert np.allclose(rest.displacements[-1], full.displacements[-1], rtol=1e-10, atol=1e-15)


def test_bad_models_give_clear_errors():
    system = RigidSystem()
    system.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -0.3), radius=0.02, mass=1.0), joint=Revolute(axis=(0, 1, 0)))
    fiber = sf.Fiber.straight((0, 0, 0.2), (0, 0, -0.2), n_elements=2, radius=0.01)
    with pytest.raises(ValueError, match="needs a rigid system"):
        sf.Model([fiber]).attach(fiber, "end", "arm")
    model = sf.Model([fiber], rigid=system)
    with pytest.raises(ValueError, match="unknown body 'leg'"):
        model.attach(fiber, "end", "leg")
    with pytest.raises(ValueError, match="body 'arm' has no point named 'elbow'"):
        model.attach(fiber, "end", "arm", point="elbow")
    with pytest.raises(ValueError, match="0.1 m away from the reference position"):
        model.attach(fiber, "end", "arm", point=(0, 0, -0.3))
    # a micrometre off is refused too (the end would stay off its bone point the whole run)
    with pytest.raises(ValueError, match="1e-06 m away from the reference position"):
        model.attach(fiber, "end", "arm", point=(0, 0, -0.2 + 1e-6))
    model.attach(fiber, "end", "arm")
    with pytest.raises(ValueError, match="already attached to body 'arm'"):
        model.attach(fiber, "end", "arm")
    with pytest.raises(ValueError, match="already attached"):
        model.fix(fiber, "end")
    model.fix(fiber, "start")
    with pytest.raises(ValueError, match="already has a boundary condition"):
        model.attach(fiber, "start", "arm")
    with pytest.raises(TypeError, match="RigidSystem"):
        sf.Model([fiber], rigid="bones")
    bad = RigidSystem()
    bad.add_body(Body("free", start=(0, 0, 0), axis=(0, 0, -0.3), radius=0.02, mass=0.0), joint=Revolute(axis=(0, 1, 0)))
    with pytest.raises(ValueError, match="mass"):
        sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)], rigid=bad)
    with pytest.raises(ValueError, match="zero length"):
        Revolute(axis=(0, 0, 0))
    other = RigidSystem()
    other.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -0.3), radius=0.02, mass=1.0), joint=Fixed())
    with pytest.raises(ValueError, match="another rigid system"):
        model.add_contact(CylinderContact.on_body(other, "arm", law=PenaltyLaw(stiffness=1.0, gamma=1.0)))
    with pytest.raises(ValueError, match="q must have 1 entries"):
        model.initial_state(q=[0.0, 1.0])


def test_solve_static_with_bodies_equals_the_dynamic_rest_state():
    """solve_static with a rigid body: the same equilibrium the damped dynamics comes to rest in."""
    model = pendulum_model()
    rest = sf.simulate(model, t_end=3.0, dt=0.02, progress=False).final_state
    assert np.abs(rest.p).max() < 1e-6
    static = sf.solve_static(model)
    st = static.state
    assert st.q.shape == (1,) and np.all(st.p == 0)
    assert st.q[0] == pytest.approx(rest.q[0], abs=1e-7)
    assert np.abs(st.u - rest.u).max() < 1e-6 * np.abs(rest.u).max()
    tip = model.attachment_forces(st)["tip"]
    assert tip[2] == pytest.approx(9.81 / 2, rel=1e-4)  # about half the rod's weight (the fiber tilts slightly)
    th = st.q[0]  # the moment balance about the hinge holds to Newton's tolerance
    arm = np.array([0.5 * np.cos(th), 0, -0.5 * np.sin(th)])
    moment = np.cross(arm, tip)[1] + np.cross(0.5 * arm, [0, 0, -9.81])[1]
    assert abs(moment) < 1e-9 * np.linalg.norm(np.cross(arm, tip))
    # continuation from the equilibrium is one Newton solve with nothing left to do
    again = sf.solve_static(model, state=st)
    assert again.iterations == [0]


def test_solve_static_with_bodies_and_a_moving_contact_cylinder_converges():
    """Fibers (with their weight, ramped by the load factor) hold two hinged links that press a
    fiber onto the second link's cylinder.  (With the links' own weight the start q = 0 is
    far from equilibrium and the contact safeguard allows only steps of ~0.5 %: statics
    from a far-off start is for simulate() with damping.)"""
    model = two_link_model(body_gravity=False)
    result = sf.solve_static(model, load_steps=2)
    state = result.state
    prob = CoupledProblem(model)
    zero = np.zeros(model.n_dofs)
    from skfiber.rigid import rigid_static

    cev = prob.evaluate(np.concatenate([state.u, state.q]), 0.0,
                        fiber_state=lambda u: (zero, zero, 0.0, 0.0),
                        rigid_state=lambda q: rigid_static(model.rigid, q, t=0.0))
    free = np.concatenate([~prob.fiber_solver.fixed, np.ones(prob.n, dtype=bool)])
    assert np.linalg.norm(cev.residual[free]) <= 1e-8 * cev.reference_force
    assert result.load_factors[-1] == 1.0 and np.abs(state.q).max() > 1e-3  # the links moved
    assert cev.n_active_contacts > 0


def test_rigid_static_tangent_and_errors():
    from skfiber.rigid import rigid_static

    model = two_link_model()
    system = model.rigid
    q = np.array([0.3, -0.2])
    st = rigid_static(system, q, t=0.0)
    h = 1e-7
    fd = np.column_stack([(rigid_static(system, q + h * e, t=0.0, tangent=False).residual
                           - rigid_static(system, q - h * e, t=0.0, tangent=False).residual) / (2 * h)
                          for e in np.eye(2)])
    assert np.abs(st.tangent - fd).max() < 1e-6 * np.abs(st.tangent).max()
    with pytest.raises(ValueError, match="q must be 2 finite values"):
        rigid_static(system, [0.1], t=0.0)


@pytest.mark.parametrize("wide", [False, True])
def test_constrained_solver_matches_a_dense_solve(wide):
    """Banded LAPACK (and SuperLU when the extra entries leave the band): K Δu = r on the free DOFs, Δu = 0 on
    the constrained ones, with element matrices and extra entries summed (also into constrained rows/columns)."""
    from skfiber.linalg import ConstrainedSolver

    model = two_link_model()
    asm = model.discretization.assembler
    N, ne = asm.N, asm.element_dofs.shape[1]
    rng = np.random.default_rng(7)
    nb = asm.element_dofs.shape[0]
    Ke = rng.normal(size=(ne, nb, nb)) + 20.0 * np.eye(nb)
    r = rng.integers(0, N, size=40)
    c = np.clip(r + rng.integers(-asm.bandwidth, asm.bandwidth + 1, size=40), 0, N - 1)
    if wide:
        c[0] = (r[0] + asm.bandwidth + 5) % N
    extra = [(r, c, rng.normal(size=40))]
    constrained = np.array([0, 1, 2, 17, N - 1])
    solver = ConstrainedSolver(asm, constrained)
    K = np.zeros((N, N))
    np.add.at(K, (asm.rows, asm.cols), Ke.ravel())
    np.add.at(K, (r, c), extra[0][2])
    free = np.setdiff1d(np.arange(N), constrained)
    rhs = rng.normal(size=(N, 3))
    x = solver.solve(Ke, rhs, extra)
    assert solver.last_method == ("splu" if wide else "banded")
    ref = np.zeros((N, 3))
    ref[free] = np.linalg.solve(K[np.ix_(free, free)], rhs[free])
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    np.testing.assert_allclose(solver.solve(Ke, rhs[:, 0], extra), ref[:, 0], rtol=0, atol=1e-11 * np.abs(ref).max())


def heavy_fiber_on_a_rod(n_elements=4):
    """A rod (1 kg, 0.5 m, hinged about y at the origin) carrying a heavy fiber (0.5 kg) along its axis from
    x = 0.1 to 0.5 m, attached to it at both ends and taut (σ0 = 4·10⁷ Pa: its sag under the swing's
    accelerations, ρ a ℓ²/8σ0, is about 10⁻⁵ m), swinging down under gravity from the horizontal."""
    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    law = sf.passive_kelvin_voigt(mu_muscle=1e8, mu_tendon=1e8, eta_muscle=1e3, eta_tendon=1e3) + sf.prestress(4e7)
    fiber = sf.Fiber.straight((0.1, 0, 0), (0.5, 0, 0), n_elements=n_elements, radius=0.02, law=law, density=1000.0)
    model = sf.Model([fiber], rigid=system)
    model.add_gravity((0, 0, -9.81))
    model.attach(fiber, "start", "rod", name="inner")
    model.attach(fiber, "end", "rod", name="outer")
    return model


def test_a_heavy_fiber_moved_by_its_attachments_adds_its_inertia_and_weight_to_the_body():
    """The fiber's inertia and weight reach the body only through the attached ends' motion u_D = c(q) and the
    rows Cᵀ G_D: against the ODE of the rod with the fiber as a rigid line mass m_f between a and b
    (I += m_f (b³ − a³)/(3(b − a)), moment += m_f g (a + b)/2 cos θ), backward Euler converges at first order
    (measured: errors 9.8e-3, 4.9e-3 and 2.5e-3 rad at Δt = 4, 2 and 1 ms, rates 0.99 and 1.00) and Richardson's
    extrapolation of the two finer runs lies within 1.0e-5 rad of it, while leaving out the fiber's mass moves the
    ODE's angle by 7.0e-3 rad."""
    m, L, r, g = 1.0, 0.5, 0.01, 9.81
    a, b = 0.1, 0.5
    fiber_mass = 1000.0 * np.pi * 0.02**2 * (b - a)
    t_end = 0.2

    def ode(line_mass):
        inertia = m * (L**2 / 3 + r**2 / 4) + line_mass * (b**3 - a**3) / (3 * (b - a))
        moment = (m * L / 2 + line_mass * (a + b) / 2) * g
        return solve_ivp(lambda t, y: [y[1], moment * np.cos(y[0]) / inertia], (0, t_end), [0.0, 0.0],
                         method="Radau", rtol=1e-11, atol=1e-12, dense_output=True)

    ref, without = ode(fiber_mass), ode(0.0)
    runs = [sf.simulate(heavy_fiber_on_a_rod(), t_end=t_end, dt=dt, progress=False) for dt in (0.004, 0.002, 0.001)]
    errors = [np.abs(res.coordinates[:, 0] - ref.sol(res.times)[0]).max() for res in runs]
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all((rates > 0.9) & (rates < 1.1)), (errors, rates)
    extrapolated = 2 * runs[2].coordinates[::2, 0] - runs[1].coordinates[:, 0]
    times = runs[1].times
    mass_effect = np.abs(ref.sol(times)[0] - without.sol(times)[0]).max()
    assert mass_effect > 5e-3  # (the fiber's mass matters at this resolution)
    assert np.abs(extrapolated - ref.sol(times)[0]).max() < 0.01 * mass_effect
