"""skfiber.rigid.work_balance and PointSpringDamper.tension against independent computations."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from skfiber.rigid import (
    Body,
    PointSpringDamper,
    Prescribed,
    Revolute,
    RigidSystem,
    simulate_rigid,
    work_balance,
)


def driven_pendulum():
    """A damped double pendulum on a base moving sideways, with a spring–damper from the base to the tip."""
    w = 3.0
    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("base", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.02),
                    joint=Prescribed(translation=lambda t: (0.1 * np.sin(w * t), 0, 0),
                                     velocity=lambda t: (0.1 * w * np.cos(w * t), 0, 0),
                                     acceleration=lambda t: (-0.1 * w * w * np.sin(w * t), 0, 0)))
    for i, parent in enumerate(("base", "a")):
        name = "ab"[i]
        system.add_body(Body(name, start=(0, 0, -0.4 * i), axis=(0, 0, -0.4), radius=0.02, mass=1.0), parent=parent,
                        joint=Revolute(axis=(0, 1, 0), point=(0, 0, -0.4 * i)))
    spring = system.add(PointSpringDamper("base", (0.2, 0, 0), "b", (0, 0, -0.8), stiffness=20.0, damping=0.5,
                                          name="ligament"))
    return system, spring


@pytest.fixture(scope="module")
def dense():
    """The driven pendulum and an accurate dense solution over 1 s (DOP853, 1e-11)."""
    system, spring = driven_pendulum()
    n = system.n
    sol = solve_ivp(lambda t, y: np.concatenate([y[n:], system.accelerations(y[:n], y[n:], t)]), (0, 1.0),
                    [0.4, -0.2, 0, 0], method="DOP853", rtol=1e-11, atol=1e-12, dense_output=True)
    return system, spring, sol.sol


def sample(sol, t_end, n_out):
    t = np.linspace(0, t_end, n_out)
    y = sol(t)
    return t, y[:2].T, y[2:].T


def test_trapezoid_rule_on_an_accurate_motion_converges_at_second_order(dense):
    system, _, sol = dense
    residuals = []
    for n_out in (51, 101, 201):
        t, q, p = sample(sol, 1.0, n_out)
        balance = work_balance(system, t, q, p, rule="trapezoid")
        residuals.append(balance.relative_error)
    rates = np.log2(np.array(residuals[:-1]) / residuals[1:])
    assert np.all((rates > 1.8) & (rates < 2.2)), (residuals, rates)
    assert set(balance.work) == {"gravity", "ligament", "transport"} and balance.work["transport"][-1] != 0


def test_right_rule_on_backward_euler_converges_at_first_order():
    system, _ = driven_pendulum()
    residuals = []
    for dt in (0.005, 0.0025, 0.00125):
        run = simulate_rigid(system, [0.4, -0.2], [0, 0], 1.0, dt)
        residuals.append(work_balance(system, run.times, run.q, run.p).relative_error)
    rates = np.log2(np.array(residuals[:-1]) / residuals[1:])
    assert np.all((rates > 0.85) & (rates < 1.15)), (residuals, rates)


def test_tension_is_the_law_of_the_length_and_its_rate(dense):
    system, spring, sol = dense
    t, q, p = sample(sol, 0.5, 501)
    F = spring.tension(system.context(q, p, t))
    base, tip = system.point("base", (0.2, 0, 0)), system.point("b", (0, 0, -0.8))
    xi = np.array([np.linalg.norm(tip.position(qk, tk) - base.position(qk, tk)) for qk, tk in zip(q, t)])
    xi0 = np.linalg.norm(np.array([0, 0, -0.8]) - np.array([0.2, 0, 0]))
    xi_dot = np.gradient(xi, t, edge_order=2)       # independent: finite differences in time
    np.testing.assert_allclose(F, 20.0 * (xi - xi0) + 0.5 * xi_dot, atol=2e-4 * np.abs(F).max())


def test_bad_input(dense):
    system, spring, sol = driven_pendulum() + (dense[2],)
    t, q, p = sample(sol, 0.1, 5)
    with pytest.raises(ValueError, match="unknown quadrature rule 'simpson'"):
        work_balance(system, t, q, p, rule="simpson")
    with pytest.raises(ValueError, match=r"q and qd must have shape \(5, 2\)"):
        work_balance(system, t, q[:, :1], p)
    with pytest.raises(ValueError, match="times must increase"):
        work_balance(system, t[::-1], q, p)
    with pytest.raises(ValueError, match="needs velocities"):
        spring.tension(system.context(q, None, t))
    zero = PointSpringDamper("base", (0.2, 0, 0), "b", (0, 0, -0.8), stiffness=1.0, rest_length=0.0)
    system.add(zero)
    with pytest.raises(ValueError, match="zero-length"):
        zero.tension(system.context(q, p, t))


def test_ode_motion_against_the_closed_form_oscillator():
    """A block on a linear spring along a prismatic joint: q(t) = q0 cos ωt, whatever the restarts."""
    from skfiber.rigid import JointSpringDamper, Prismatic, ode_motion

    system = RigidSystem()
    system.add_body(Body("block", start=(0, 0, 0), axis=(0.1, 0, 0), radius=0.05, mass=2.0), joint=Prismatic(axis=(1, 0, 0)))
    system.add(JointSpringDamper("block", stiffness=50.0))
    omega = 5.0
    t = np.linspace(0.0, 2.0, 41)
    for breaks in ((), (0.3, 1.1, 5.0)):
        motion = ode_motion(system, [0.1], [0.0], 2.0, rtol=1e-10, atol=1e-12, breaks=breaks)
        np.testing.assert_allclose(motion.q(t)[:, 0], 0.1 * np.cos(omega * t), atol=1e-8)
        np.testing.assert_allclose(motion.p(t)[:, 0], -0.1 * omega * np.sin(omega * t), atol=1e-7)
    assert len(motion.pieces) == 3 and motion.evaluations > 0 and motion.jacobians > 0
    with pytest.raises(ValueError, match=r"times must lie in \[0.0, 2.0\]"):
        motion(3.0)
    with pytest.raises(ValueError, match="q0 and p0 must have 1 entries"):
        ode_motion(system, [0.1, 0.0], [0.0], 1.0)
