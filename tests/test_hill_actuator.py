"""HillActuator: a Millard muscle along a path of body points as a force element
of the rigid system, its states integrated by the backward-Euler/Newton step."""
import math

import numpy as np
import pytest
from scipy.optimize import brentq

from skfiber.hill import HillActuator, Millard2012Muscle, MuscleParameters
from skfiber.rigid import (
    Body,
    GeneralizedForce,
    JointSpringDamper,
    Revolute,
    RigidSystem,
    backward_euler_rigid,
    rigid_step,
    simulate_rigid,
)
from skfiber.rigid.element_states import state_layout, state_scales
from skfiber.rigid.integrate import element_state_names, initial_element_states

G = 9.81
EXCITATION = lambda t: 0.3 + 0.2 * math.sin(5 * t)  # noqa: E731


def double_pendulum(formulation="damped", *, excitation=True, gravity=True, **muscle_options):
    """Two links hinged about y; a muscle from the ground over a via point on link 1 to link 2."""
    system = RigidSystem(gravity=(0, 0, -G) if gravity else (0, 0, 0))
    system.add_body(Body("l1", start=(0, 0, 0), axis=(0, 0, -0.3), radius=0.02, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    system.add_body(Body("l2", start=(0, 0, -0.3), axis=(0, 0, -0.3), radius=0.02, mass=0.8), parent="l1",
                    joint=Revolute(axis=(0, 1, 0), point=(0, 0, -0.3)))
    params = dict(max_isometric_force=100.0, optimal_fiber_length=0.1, tendon_slack_length=0.35,
                  pennation_angle_at_optimal=0.2)
    params.update(muscle_options)
    muscle = Millard2012Muscle(MuscleParameters(**params), formulation=formulation)
    source = dict(excitation=EXCITATION) if excitation else dict(activation=EXCITATION)
    hill = system.add(HillActuator(muscle, [("ground", (0.05, 0, 0.05)), ("l1", (0.03, 0, -0.2)),
                                            ("l2", (0.02, 0, -0.4))], name="m", **source))
    system.finalize()
    return system, hill


def pendulum(muscle, *, origin=(0.1, 0, 0.0), insertion=(0, 0, -0.25), mass=1.0, **source):
    """A rod of 0.5 m hinged at the origin about y (q > 0 swings the tip to −x), held by one muscle."""
    system = RigidSystem(gravity=(0, 0, -G))
    system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=mass),
                    joint=Revolute(axis=(0, 1, 0)))
    hill = system.add(HillActuator(muscle, [("ground", origin), ("rod", insertion)], name="m", **source))
    system.finalize()
    return system, hill


def central_difference(fn, x, h):
    x = np.asarray(x, dtype=float)
    cols = []
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h * max(1.0, abs(x[j]))
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * e[j]))
    return np.stack(cols, axis=-1)


# ----------------------------------------------------------------------------- path kinematics
def test_path_length_and_jacobian_match_finite_differences():
    system, hill = double_pendulum("rigid", excitation=False)
    rng = np.random.default_rng(0)
    for q in rng.uniform(-0.8, 0.8, size=(5, 2)):
        J = hill.path_jacobian(q)
        J_fd = central_difference(lambda x: hill.path_length(x), q, 1e-6)
        np.testing.assert_allclose(J, J_fd, rtol=1e-8, atol=1e-10)
    # the length by hand: three points, the via point on the moving link 1
    q = np.array([0.4, -0.3])
    pts = [np.array([0.05, 0, 0.05]), system.point("l1", (0.03, 0, -0.2)).position(q),
           system.point("l2", (0.02, 0, -0.4)).position(q)]
    assert hill.path_length(q) == pytest.approx(sum(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:])), rel=1e-14)
    # batches: (B, n) in, (B,) / (B, n) out
    Q = rng.uniform(-0.5, 0.5, size=(4, 2))
    np.testing.assert_allclose(hill.path_length(Q), [hill.path_length(x) for x in Q], rtol=1e-14)
    np.testing.assert_allclose(hill.path_jacobian(Q), [hill.path_jacobian(x) for x in Q], rtol=1e-14)


def test_path_velocity_and_generalized_force():
    """ℓ̇ = (∂ℓ/∂q) q̇ reaches the muscle (rigid tendon, no pennation: v^M = ℓ̇); Q = −(∂ℓ/∂q)ᵀ f."""
    system, hill = double_pendulum("rigid", excitation=False, pennation_angle_at_optimal=0.0,
                                   tendon_slack_length=0.33)
    q = np.array([0.3, -0.2])
    J = hill.path_jacobian(q)
    qd = np.sign(J) * np.array([0.7, 1.1])                          # the muscle lengthens
    r = hill.response(q, qd, 0.1)
    assert float(r.fiber_velocity) == pytest.approx(J @ qd, rel=1e-12)
    assert float(r.tendon_force) > 0
    np.testing.assert_allclose(hill.generalized_force(q, qd, 0.1), -J * float(r.tendon_force), rtol=1e-14)
    np.testing.assert_allclose(system.force_contributions(q, qd, 0.1)["m"], -J * float(r.tendon_force), rtol=1e-14)
    # the muscle only pulls: its power is negative while it lengthens
    assert hill.generalized_force(q, qd, 0.1) @ qd < 0 < J @ qd


# ----------------------------------------------------------------------------- step tangent
@pytest.mark.parametrize("formulation, excitation", [("damped", True), ("damped", False), ("equilibrium", False),
                                                     ("rigid", True), ("rigid", False)])
def test_step_tangent_with_muscle_states_matches_finite_differences(formulation, excitation):
    system, hill = double_pendulum(formulation, excitation=excitation)
    q_n, p_n = np.array([0.18, -0.08]), np.array([0.5, -0.3])
    s_n = initial_element_states(system, q_n, p_n, 0.0)
    assert len(s_n) == hill.n_states == int(formulation != "rigid") + int(excitation)
    assert element_state_names(system) == hill.state_names
    dt, t = 0.01, 0.01
    q, s = np.array([0.2, -0.1]), s_n * 1.01  # a non-converged iterate
    kw = dict(q_prev=q_n, p_prev=p_n, dt=dt, t=t)
    if hill.n_states:
        kw["states_prev"] = s_n
    x = np.concatenate([q, s])

    def residual(x):
        extra = dict(states=x[2:]) if hill.n_states else {}
        return rigid_step(system, x[:2], tangent=False, **kw, **extra).residual

    step = rigid_step(system, q, **kw, **(dict(states=s) if hill.n_states else {}))
    assert step.residual.shape == (2 + hill.n_states,) and step.n_states == hill.n_states
    K_fd = central_difference(residual, x, 1e-7)
    scale = np.abs(step.tangent).max()
    assert np.abs(step.tangent - K_fd).max() < 1e-8 * scale
    # the muscle really couples: the state rows depend on q, the rigid rows on s
    if formulation != "rigid":
        assert np.abs(step.tangent[2, :2]).max() > 0 and np.abs(step.tangent[:2, 2]).max() > 0


def test_newton_converges_quadratically_with_states():
    system, hill = double_pendulum("damped", excitation=True)
    s0 = initial_element_states(system, [0, 0], [0, 0], 0.0)
    q, p, rep = backward_euler_rigid(system, [0.0, 0.0], [0.0, 0.0], 0.0, 0.01, states_prev=s0)
    assert rep.iterations <= 5 and rep.states.shape == (2,)
    h = rep.residual_history
    assert h[-1] < 1e-9 * max(h[0], 1.0)
    assert len(rep.state_residual_history) == len(h)



def test_a_step_with_states_converges_in_the_state_rows_too():
    """The rigid rows already met (atol of 1 kN) do not end Newton while the muscle's state rows are off: the
    step returns a state whose rows, evaluated again, are below rtol."""
    from skfiber import NewtonOptions

    system, hill = double_pendulum("damped", excitation=True)
    s0 = initial_element_states(system, [0, 0], [0, 0], 0.0)
    options = NewtonOptions(atol=1e3)
    q, p, rep = backward_euler_rigid(system, [0.0, 0.0], [0.0, 0.0], 0.0, 0.01, states_prev=s0, options=options)
    assert rep.iterations >= 1 and rep.state_residual_history[0] > 1e-3
    again = rigid_step(system, q, q_prev=[0.0, 0.0], p_prev=[0.0, 0.0], dt=0.01, t=0.01, states=rep.states,
                       states_prev=s0)
    assert np.abs(again.residual[2:]).max() <= options.rtol


def test_newton_moves_a_muscle_state_by_at_most_a_quarter_of_its_scale_an_iteration(monkeypatch):
    """The trust region on the states: a fiber length starting at half its optimal length (0.05 m against the
    0.096 m the step ends near) moves by at most STATE_STEP × 0.1 m an iteration, the first iteration by
    exactly that, and the step still converges."""
    import skfiber.rigid.backward_euler as be

    system, hill = double_pendulum("damped", excitation=True)
    s0 = initial_element_states(system, [0, 0], [0, 0], 0.0)
    s0[0] = 0.05
    tried = []

    def spying(*args, **kwargs):
        tried.append(np.array(kwargs["states"]))
        return rigid_step(*args, **kwargs)

    monkeypatch.setattr(be, "rigid_step", spying)
    q, p, rep = backward_euler_rigid(system, [0.0, 0.0], [0.0, 0.0], 0.0, 0.01, states_prev=s0)
    scale = state_scales(state_layout(system))[0]  # the fiber length's: its optimal length, 0.1 m
    moves = np.abs(np.diff([x[0] for x in tried])) / scale
    assert moves.max() <= be.STATE_STEP * (1 + 1e-12)
    assert moves[0] == pytest.approx(be.STATE_STEP, rel=1e-12)
    assert rep.states[0] > 0.08 and rep.state_residual_history[-1] <= 1e-9


# ----------------------------------------------------------------------------- statics
def test_isometric_rigid_tendon_force_times_moment_arm():
    """At fixed geometry with ℓ = l_s + l_o (no pennation): f = a f_o, Q = f × the moment arm by hand."""
    a, f0, lopt = 0.35, 500.0, 0.1
    origin, insertion = np.array([0.1, 0, 0.0]), np.array([0.0, 0, -0.25])
    q = 0.3
    c, s = math.cos(q), math.sin(q)
    x_ins = np.array([insertion[0] * c + insertion[2] * s, 0.0, -insertion[0] * s + insertion[2] * c])  # about +y
    ell = float(np.linalg.norm(x_ins - origin))
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=f0, optimal_fiber_length=lopt,
                                                tendon_slack_length=ell - lopt), formulation="rigid")
    system, hill = pendulum(muscle, activation=a)
    assert hill.path_length([q]) == pytest.approx(ell, rel=1e-14)
    # moment about +y of the force f e at the insertion, e towards the origin: (x × f e)·ŷ
    e = (origin - x_ins) / ell
    moment = np.cross(x_ins, a * f0 * e)[1]
    r = hill.response([q], [0.0], 0.0)
    assert float(r.tendon_force) == pytest.approx(a * f0, rel=1e-12)
    assert hill.generalized_force([q], [0.0])[0] == pytest.approx(moment, rel=1e-12)


def test_isometric_damped_muscle_relaxes_to_static_equilibrium():
    """Body locked by a stiff joint spring: the fiber-length state settles where eq. (1) holds."""
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=300.0, optimal_fiber_length=0.1,
                                                tendon_slack_length=0.15, pennation_angle_at_optimal=0.3))
    system, hill = pendulum(muscle, activation=0.6)
    system.add(JointSpringDamper("rod", stiffness=1e5, damping=50.0, rest=0.2))
    q_lock = 0.2
    ell = hill.path_length([q_lock])
    rest = muscle.static_equilibrium(activation=0.6, musculotendon_length=ell)
    l_start = float(rest.fiber_length) * 1.05                     # start off equilibrium
    result = simulate_rigid(system, [q_lock], [0.0], 0.6, 0.01, states0=[l_start])
    assert result.state_names == ("m.fiber_length",)
    l_end = result.states[-1, 0]
    assert abs(result.q[-1, 0] - q_lock) < 1e-3
    ell_end = hill.path_length(result.q[-1])
    expected = muscle.static_equilibrium(activation=0.6, musculotendon_length=ell_end)
    assert l_end == pytest.approx(float(expected.fiber_length), rel=1e-6)
    r = hill.response(result.q[-1], result.p[-1], result.times[-1], states=hill.states_from(result)[-1])
    assert float(r.tendon_force) == pytest.approx(float(expected.tendon_force), rel=1e-5)
    assert abs(float(r.equilibrium_residual)) < 1e-4 * float(r.tendon_force)


@pytest.mark.parametrize("formulation", ["damped", "rigid"])
def test_hanging_pendulum_held_at_rest(formulation):
    """The activation that balances gravity at q* keeps the pendulum there; the moments cancel."""
    q_star, mass = -0.4, 1.0                                          # the tip swings towards the muscle
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=200.0, optimal_fiber_length=0.1,
                                                tendon_slack_length=0.15), formulation=formulation)
    system, hill = pendulum(muscle, activation=0.5, mass=mass)
    ell, J = hill.path_length([q_star]), hill.path_jacobian([q_star])[0]
    gravity_moment = -mass * G * 0.25 * math.sin(q_star)           # about +y; the rod's center is 0.25 m down
    f_needed = gravity_moment / J                                    # −J f + gravity = 0
    assert f_needed > 0

    def force(a):
        return float(muscle.static_equilibrium(activation=a, musculotendon_length=ell).tendon_force)

    a_star = brentq(lambda a: force(a) - f_needed, 0.01, 1.0, xtol=1e-15)
    system, hill = pendulum(muscle, activation=a_star, mass=mass)
    result = simulate_rigid(system, [q_star], [0.0], 0.3, 0.01)
    assert np.max(np.abs(result.q[:, 0] - q_star)) < 1e-7
    states = hill.states_from(result)[-1] if hill.n_states else None
    Q_muscle = hill.generalized_force(result.q[-1], result.p[-1], 0.3, states=states)[0]
    Q_gravity = system.elements[0].force(system.context(result.q[-1:], result.p[-1:], 0.3))[0, 0]
    assert Q_gravity == pytest.approx(gravity_moment, rel=1e-6)
    assert Q_muscle == pytest.approx(-gravity_moment, rel=1e-6)


# ----------------------------------------------------------------------------- sanity
@pytest.mark.parametrize("formulation", ["damped", "rigid"])
def test_tension_is_never_negative(formulation):
    """A pendulum swinging through the muscle's slack range: f ≥ 0 always, and 0 while slack."""
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=50.0, optimal_fiber_length=0.08,
                                                tendon_slack_length=0.2), formulation=formulation)
    system, hill = pendulum(muscle, activation=lambda t: 0.5 * (1 + math.sin(7 * t)))
    result = simulate_rigid(system, [-0.6], [4.0], 1.0, 0.01)
    states = hill.states_from(result) if hill.n_states else None
    f = np.asarray(hill.response(result.q, result.p, result.times, states=states).tendon_force)
    assert np.all(f >= 0.0)
    assert np.any(f == 0.0) and f.max() > 10.0                     # slack at times, pulling at others
    assert np.all(np.isfinite(result.q))


def test_activation_state_follows_the_excitation():
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=100.0, optimal_fiber_length=0.1,
                                                tendon_slack_length=0.15), formulation="rigid")
    system = RigidSystem()
    system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    system.add(JointSpringDamper("rod", stiffness=1e3, damping=10.0))
    hill = system.add(HillActuator(muscle, [("ground", (0.1, 0, 0.0)), ("rod", (0, 0, -0.25))],
                                   excitation=lambda t: 1.0 if t > 0.021 else 0.0, initial_activation=0.05))
    result = simulate_rigid(system, [0.0], [0.0], 0.2, 0.002)
    a = hill.states_from(result)[:, 0]
    on = result.times > 0.021
    assert a[0] == 0.05 and np.all(np.diff(a[~on]) < 0) and np.all(a[~on] > muscle.parameters.minimum_activation)
    assert np.all(np.diff(a[on]) > 0) and a[-1] > 0.99                 # τ_act = 10 ms (0.5 + 1.5 a)
    # backward Euler of da/dt = (u − a)/τ(a, u) at the end of the first rising step
    k = int(np.argmax(on))
    rate = muscle.activation_rate(a[k], 1.0)
    assert a[k] == pytest.approx(a[k - 1] + 0.002 * float(rate), rel=1e-8)


def test_stateless_actuator_needs_no_states():
    """A rigid-tendon muscle driven by a(t) adds nothing to the unknowns (usable by the coupled solver)."""
    system, hill = double_pendulum("rigid", excitation=False)
    assert hill.n_states == 0 and element_state_names(system) == ()
    step = rigid_step(system, [0.1, 0.2], q_prev=[0.1, 0.2], p_prev=[0.0, 0.0], dt=0.01, t=0.01)
    assert step.residual.shape == (2,) and step.n_states == 0
    assert simulate_rigid(system, [0.0, 0.0], [0.0, 0.0], 0.02, 0.01).states.shape == (3, 0)


# ----------------------------------------------------------------------------- errors
def test_bad_inputs_give_clear_errors():
    muscle = Millard2012Muscle()
    path = [("ground", (0.1, 0, 0)), ("rod", (0, 0, -0.25))]
    with pytest.raises(ValueError, match="at least 2 points"):
        HillActuator(muscle, [("rod", (0, 0, 0))], activation=0.5)
    with pytest.raises(ValueError, match="on body 'rod'"):
        HillActuator(muscle, [("rod", (0, 0, 0)), ("rod", (0, 0, -0.2))], activation=0.5)
    with pytest.raises(ValueError, match="exactly one of activation"):
        HillActuator(muscle, path)
    with pytest.raises(ValueError, match="exactly one of activation"):
        HillActuator(muscle, path, activation=0.5, excitation=0.5)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        HillActuator(muscle, path, activation=1.5)
    with pytest.raises(ValueError, match="initial_activation needs excitation"):
        HillActuator(muscle, path, activation=0.5, initial_activation=0.2)
    with pytest.raises(TypeError, match="Millard2012Muscle"):
        HillActuator("biceps", path, activation=0.5)
    with pytest.raises(ValueError, match=r"\(body name, point\) pair"):
        HillActuator(muscle, [("ground", (0, 0, 0)), (0.1, 0.2, 0.3)], activation=0.5)

    def system_with(path):
        s = RigidSystem()
        s.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
                   joint=Revolute(axis=(0, 1, 0)))
        s.add(HillActuator(muscle, path, activation=0.5, name="m"))
        return s

    with pytest.raises(ValueError, match="unknown body 'forearm'"):
        system_with([("ground", (0.1, 0, 0)), ("forearm", (0, 0, -0.25))]).finalize()
    with pytest.raises(ValueError, match="coincide in the reference configuration"):
        system_with([("ground", (0.1, 0, 0)), ("rod", (0.1, 0, 0)), ("rod", (0, 0, -0.2))]).finalize()
    with pytest.raises(ValueError, match="3 finite numbers"):
        system_with([("ground", (0.1, 0)), ("rod", (0, 0, -0.25))]).finalize()

    s = system_with(path).finalize()
    hill = s.elements[-1]
    with pytest.raises(ValueError, match="internal states"):        # the coupled solver's call
        rigid_step(s, [0.0], q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01)
    with pytest.raises(ValueError, match="internal states"):
        s.generalized_forces([0.0], [0.0])
    with pytest.raises(ValueError, match="pass states="):
        hill.response([0.0])
    with pytest.raises(ValueError, match="states must be 1 finite values"):
        hill.response([0.0], states=[0.1, 0.2])
    with pytest.raises(ValueError, match="states_prev must be 1 finite values"):
        rigid_step(s, [0.0], q_prev=[0.0], p_prev=[0.0], dt=0.01, t=0.01, states=[0.1], states_prev=[np.nan])
    unbound = HillActuator(muscle, path, activation=0.5)
    with pytest.raises(ValueError, match="not bound to a RigidSystem"):
        unbound.path_length([0.0])
    other = RigidSystem()
    other.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
                   joint=Revolute(axis=(0, 1, 0)))
    other.add(GeneralizedForce([0.0]))
    with pytest.raises(ValueError, match="no force element of the system has internal states"):
        simulate_rigid(other, [0.0], [0.0], 0.01, 0.01, states0=[0.1])
    # an activation function leaving [0, 1] is refused with its value and time (it was clipped silently)
    s, _ = double_pendulum("rigid", excitation=False)
    s.elements[-1].activation = lambda t: 1.0 + t
    assert np.isfinite(s.generalized_forces([0.1, 0.2], [0.0, 0.0], t=0.0)).all()
    with pytest.raises(ValueError, match=r"m: activation\(t\) must be a number in \[0, 1\]; it gave 1.5 at t = 0.5"):
        s.generalized_forces([0.1, 0.2], [0.0, 0.0], t=0.5)


def test_rigid_tendon_actuator_next_to_fibers_in_the_coupled_model():
    """A stateless Hill muscle in a model with fibers: the coupled tangent (fibers, contact,
    attachments, rigid dynamics and the muscle's Q = −(∂ℓ/∂q)ᵀ f) against finite differences,
    and a short coupled run in which the muscle pulls."""
    import skfiber as sf
    from conftest import coupled_tangent_and_differences, perturbed_step, two_link_model

    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=20.0, optimal_fiber_length=0.3,
                                                tendon_slack_length=0.3), formulation="rigid")
    hill = HillActuator(muscle, [("ground", (0.0, 0, 0.2)), ("b2", (0.6, 0, 0))], activation=lambda t: 0.3,
                        name="hill")
    model = two_link_model(elements=[lambda system: hill])
    system = model.rigid
    assert hill.n_states == 0

    dt = 0.01
    prob, state, z, fs, rs = perturbed_step(model, 3, dt)
    N = prob.N
    cev = prob.evaluate(z, dt, fiber_state=fs, rigid_state=rs)
    # the muscle pulls: its generalized force is a real part of the q rows
    ctx = system.context(z[N:][None, :], ((z[N:] - state.q) / dt)[None, :], dt)
    assert np.abs(np.real(hill.force(ctx))[0]).max() > 0.5
    T, FD, _ = coupled_tangent_and_differences(prob, cev, z, dt, fiber_state=fs, rigid_state=rs)
    assert np.abs(T - FD).max() <= 1e-6 * np.abs(T).max()
    # the same model runs; switching the muscle off changes the motion
    run = sf.simulate(model, t_end=0.1, dt=0.01, progress=False)
    hill.activation = lambda t: 0.0
    off = sf.simulate(model, t_end=0.1, dt=0.01, progress=False)
    assert np.all(np.isfinite(run.coordinates))
    assert np.abs(run.coordinates[-1] - off.coordinates[-1]).max() > 1e-3


@pytest.mark.parametrize("formulation", ["damped", "rigid"])
def test_step_tangent_while_the_muscle_deactivates_matches_finite_differences(formulation):
    """The activation above the excitation (u < a: the deactivation branch of the activation dynamics, whose
    derivative in a differs from the activation branch's), the step tangent against central differences."""
    system, hill = double_pendulum(formulation, excitation=True)
    q_n, p_n = np.array([0.18, -0.08]), np.array([0.5, -0.3])
    s_n = initial_element_states(system, q_n, p_n, 0.0)
    k = next(i for i, name in enumerate(hill.state_names) if "activation" in name)
    s_n[k] = 0.9  # the excitation is 0.3 + 0.2 sin(5 t) ≤ 0.5
    dt, t = 0.01, 0.01
    q, s = np.array([0.2, -0.1]), s_n * 1.01
    kw = dict(q_prev=q_n, p_prev=p_n, dt=dt, t=t, states_prev=s_n)
    x = np.concatenate([q, s])

    def residual(x):
        return rigid_step(system, x[:2], tangent=False, states=x[2:], **kw).residual

    step = rigid_step(system, q, states=s, **kw)
    K_fd = central_difference(residual, x, 1e-7)
    assert np.abs(step.tangent - K_fd).max() < 1e-8 * np.abs(step.tangent).max()
    assert EXCITATION(t) < s[k]  # (the branch this test is for)


@pytest.mark.parametrize("returned, says", [(lambda t: np.array([0.5, 0.5]), "array"), (lambda t: "high", "'high'")])
def test_an_activation_that_is_not_one_number_is_named(returned, says):
    system, _ = pendulum(Millard2012Muscle(), activation=returned)
    with pytest.raises(ValueError, match=rf"m: activation\(t\) must return one number in \[0, 1\]; it gave .*{says}"):
        simulate_rigid(system, [0.0], [0.0], t_end=0.02, dt=0.01)


def test_activation_rate_derivative_is_one_sided_at_its_bounds():
    """∂(da/dt)/∂a of the activation state against difference quotients of the muscle's activation_rate (a clamped
    to [a_min, 1]): 0 below a_min and above 1 (both quotients 0), the right-hand quotient at a_min, the left-hand
    one at 1, the central one inside; rising (u = 0.7) and falling (u = 0.2) excitation. δ = 10⁻⁷, error
    O(δ ∂²): measured ≤ 3·10⁻⁷ relative, 10⁻⁵ allowed."""
    muscle = Millard2012Muscle(MuscleParameters(pennation_angle_at_optimal=0.2))
    hill = HillActuator(muscle, [("ground", (0, 0, 0)), ("rod", (0, 0, -0.3))], excitation=0.5)
    a_min, step = muscle.parameters.minimum_activation, 1e-7
    a = np.array([0.5 * a_min, a_min, 0.4, 1.0, 1.2])
    for u in (0.7, 0.2):
        rate, exact = hill._activation_rate(a, u)
        np.testing.assert_array_equal(rate, muscle.activation_rate(a, u))
        left = (muscle.activation_rate(a, u) - muscle.activation_rate(a - step, u)) / step
        right = (muscle.activation_rate(a + step, u) - muscle.activation_rate(a, u)) / step
        assert exact[0] == left[0] == right[0] == 0 and exact[4] == left[4] == right[4] == 0
        assert left[1] == 0 and right[3] == 0 and abs(right[1]) > 1 and abs(left[3]) > 1
        np.testing.assert_allclose(exact[1:4], [right[1], 0.5 * (left[2] + right[2]), left[3]], rtol=1e-5)
