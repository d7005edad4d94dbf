"""Rigid multibody system in minimal coordinates (skfiber.rigid).

Derivatives are checked against central finite differences on a 3D tree
that has every joint type (revolute about skew axes, prismatic, a
prescribed base with rotation and translation, a prescribed joint inside
the tree, fixed and massless bodies) and every force element.  The
equations of motion are checked against Lagrange's equations computed
from the kinetic energy alone, the pendulum against closed forms and
solve_ivp, the demo at small size.
"""
import re
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import skfiber as sf
from skfiber.rigid import (
    Body,
    Characteristic,
    Fixed,
    GeneralizedForce,
    JointSpringDamper,
    PointForce,
    PointSpringDamper,
    Prescribed,
    Prismatic,
    Revolute,
    RigidSystem,
    backward_euler_rigid,
    rigid_step,
    simulate_rigid,
)
from skfiber.rigid.joints import rotation_about
from skfiber.rigid.system import complex_jacobian

from conftest import hanging_rod, stopping_at_call

G = 9.81


def Rz(a):
    return rotation_about(np.array([0, 0, 1.0]), np.array([a]))[0]


def Rx(a):
    return rotation_about(np.array([1.0, 0, 0]), np.array([a]))[0]


def tree_system(*, damping=True, prescribed=True, gravity=(0.3, -0.2, -G)):
    """Every joint type and force element; 4 coordinates (a, b angles, c distance, e angle)."""
    s = RigidSystem(gravity=gravity)
    base = (Prescribed(translation=lambda t: (0.1 * np.sin(2 * t), 0.05 * t**2, 0.02 * np.cos(t)),
                       rotation=lambda t: Rz(0.3 * np.sin(t)) @ Rx(0.2 * t), center=(0.1, 0, 0))
            if prescribed else Fixed())
    s.add_body(Body("base", start=(0, 0, 0), axis=(0.2, 0, 0), radius=0.05), joint=base)
    s.add_body(Body("a", start=(0, 0, 0), axis=(0.1, 0.2, -0.5), radius=0.03, mass=1.2, center_of_mass=(0.05, 0.12, -0.2)),
               parent="base", joint=Revolute(axis=(0.2, 1, 0.1), point=(0, 0, 0)))
    # bodies may be added before their parents
    s.add_body(Body("c", start=(0.4, 0.1, -0.9), axis=(0.0, 0.0, -0.3), radius=0.02, mass=0.5),
               parent="b", joint=Prismatic(axis=(0.3, 0.1, -1)))
    s.add_body(Body("b", start=(0.1, 0.2, -0.5), axis=(0.3, -0.1, -0.4), radius=0.03, mass=0.8,
                    inertia=[[0.02, 0.001, 0], [0.001, 0.03, 0.002], [0, 0.002, 0.01]]),
               parent="a", joint=Revolute(axis=(1, 0.3, -0.2), point=(0.1, 0.2, -0.5)))
    inner = (Prescribed(rotation=lambda t: Rx(0.5 * np.sin(3 * t)), translation=lambda t: (0.02 * t, 0, 0),
                        center=(0.1, 0.2, -0.5)) if prescribed else Fixed())
    s.add_body(Body("d", start=(0.1, 0.2, -0.5), axis=(-0.3, 0.0, -0.3), radius=0.02, mass=0.4), parent="a", joint=inner)
    s.add_body(Body("e", start=(-0.2, 0.2, -0.8), axis=(0, 0.3, -0.2), radius=0.02, mass=0.6),
               parent="d", joint=Revolute(axis=(0, 1, 1), point=(-0.2, 0.2, -0.8)))
    s.add_body(Body("f", start=(0.4, 0.1, -1.2), axis=(0.1, 0, 0), radius=0.02), parent="c")  # massless, fixed to c
    c = (lambda v: v) if damping else (lambda v: None)
    s.add(JointSpringDamper("a", stiffness=Characteristic.tan_sec(3.0), damping=c(0.4)))
    s.add(JointSpringDamper("b", stiffness=2.0, damping=c(0.1), rest=0.2))
    s.add(JointSpringDamper("c", stiffness=50.0, damping=c(1.0)))
    s.add(PointSpringDamper("ground", (0.5, 0, 0), "e", (0, 0.5, -1.0), stiffness=30.0, damping=c(0.7)))
    cubic = Characteristic(lambda x: 20 * x + 40 * x**3, derivative=lambda x: 20 + 120 * x**2)
    s.add(PointSpringDamper("b", (0.3, 0.1, -0.7), "f", (0.45, 0.1, -1.2), stiffness=cubic, damping=c(0.3), rest_length=0.2))
    s.add(PointSpringDamper("a", (0.0, 0.1, -0.3), "e", (-0.2, 0.4, -0.9), stiffness=10.0, damping=c(0.2), rest_length=0))
    return s


def add_loads(s):
    s.add(PointForce("e", (0, 0.5, -1.0), lambda t: (np.sin(t), 0.5, -0.2)))
    s.add(GeneralizedForce(lambda t: np.array([0.1, -0.2 * t, 0.3, 0.05])))
    return s


def fd(f, x, eps=1e-6):
    """Central differences of f at x; derivative index last."""
    x = np.asarray(x, dtype=float)
    cols = []
    for j in range(len(x)):
        e = np.zeros(len(x))
        e[j] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, -1)


def rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(scope="module")
def system():
    return add_loads(tree_system())


@pytest.fixture(scope="module")
def state():
    rng = np.random.default_rng(0)
    return rng.normal(size=4) * 0.5, rng.normal(size=4), rng.normal(size=4), 0.37


# --------------------------------------------------------------------------- model and layout
def test_layout(system):
    assert system.coordinate_names == ("a.angle", "c.distance", "b.angle", "e.angle")  # order of add_body
    assert system.coordinate_index("b") == 2 and system.coordinate_index("d") is None
    assert system.n == 4
    assert system.tree.mass_depends_on_time  # the prescribed joint "d" sits below coordinate "a"


def test_solid_cylinder_inertia():
    b = Body("rod", start=(0, 0, 0), axis=(0, 0, -0.6), radius=0.05, mass=2.0)
    np.testing.assert_allclose(np.diag(b.inertia_matrix), [2 * (3 * 0.05**2 + 0.36) / 12] * 2 + [0.5 * 2 * 0.05**2])
    b2 = Body("rod", start=(0, 0, 0), axis=(1, 1, 0), radius=0.1, mass=1.0, inertia=(0.3, 0.7))
    e = np.array([1, 1, 0]) / np.sqrt(2)
    assert b2.inertia_matrix @ e == pytest.approx(0.3 * e)


# --------------------------------------------------------------------------- kinematics
@pytest.mark.parametrize("body, X", [("e", (0, 0.5, -1.0)), ("f", (0.45, 0.1, -1.2)), ("b", (0.3, 0.1, -0.7)),
                                     ("base", (0.1, 0.1, 0.1))])
def test_point_derivatives(system, state, body, X):
    q, qd, qdd, t = state
    pt = system.point(body, X)
    pk = pt.evaluate(q, t, qd)
    J_fd = fd(lambda x: pt.position(x, t), q)
    assert np.abs(pk.jacobian - J_fd).max() < 1e-8 * max(1, np.abs(J_fd).max())
    H = fd(lambda x: pt.jacobian(x, t), q)
    assert np.abs(pk.hessian - H).max() < 1e-8 * max(1, np.abs(H).max())
    assert np.allclose(pk.hessian, np.swapaxes(pk.hessian, 1, 2))
    eps = 1e-6
    assert rel(pk.dt, (pt.position(q, t + eps) - pt.position(q, t - eps)) / (2 * eps)) < 1e-7
    Ct = (pt.jacobian(q, t + eps) - pt.jacobian(q, t - eps)) / (2 * eps)
    assert np.abs(pk.jacobian_dt - Ct).max() < 1e-7 * max(1, np.abs(Ct).max())
    h = 1e-4
    dtt = (pt.position(q, t + h) - 2 * pt.position(q, t) + pt.position(q, t - h)) / h**2
    assert rel(pk.dtt, dtt) < 1e-5

    def along(tau):  # the point along q(t + τ) = q + q̇ τ + q̈ τ²/2
        return pt.position(q + qd * tau + 0.5 * qdd * tau**2, t + tau)

    assert rel(pk.velocity, (along(eps) - along(-eps)) / (2 * eps)) < 1e-7
    acc = (along(h) - 2 * along(0) + along(-h)) / h**2
    assert rel(pk.jacobian @ qdd + pk.acceleration_bias, acc) < 1e-5


def test_poses_place_points(system, state):
    q, _, _, t = state
    X = np.array([0.3, -0.2, 0.5])
    R, p = system.pose("e", q, t)
    np.testing.assert_allclose(R @ X + p, system.point("e", X).position(q, t), atol=1e-14)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
    assert set(system.poses(q, t)) == {"base", "a", "b", "c", "d", "e", "f"}


def test_cylinder_pose_derivatives(system, state):
    q, _, _, t = state
    cyl = system.cylinder("e")
    pose = cyl.pose(q, t)
    assert pose.length == pytest.approx(system.body("e").length)
    assert pose.radius == 0.02
    assert rel(pose.axis_jacobian, fd(lambda x: cyl.pose(x, t, hessian=False).axis, q)) < 1e-8
    assert rel(pose.start_jacobian, fd(lambda x: cyl.pose(x, t, hessian=False).start, q)) < 1e-8
    assert rel(pose.axis_hessian, fd(lambda x: cyl.pose(x, t).axis_jacobian, q)) < 1e-7
    assert rel(pose.direction_jacobian, fd(lambda x: cyl.pose(x, t, hessian=False).direction, q)) < 1e-8
    eps = 1e-6
    assert rel(pose.start_dt, (cyl.pose(q, t + eps).start - cyl.pose(q, t - eps).start) / (2 * eps)) < 1e-7


def test_prescribed_rates_by_differences_match_exact():
    w = 2.0
    exact = Prescribed(rotation=lambda t: Rz(np.sin(w * t)), translation=lambda t: (np.cos(t), t**2, 0),
                       angular_velocity=lambda t: (0, 0, w * np.cos(w * t)),
                       angular_acceleration=lambda t: (0, 0, -w**2 * np.sin(w * t)),
                       velocity=lambda t: (-np.sin(t), 2 * t, 0), acceleration=lambda t: (-np.cos(t), 2, 0))
    numeric = Prescribed(rotation=exact.rotation, translation=exact.translation)
    a, b = exact.motion(0.7), numeric.motion(0.7)
    for name in ("angular_velocity", "angular_acceleration", "velocity", "acceleration"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), atol=1e-7)


# --------------------------------------------------------------------------- compiled kernels
def _numpy_inertia(kin, qd, *, frozen):
    """M and h assembled with numpy from the kinematics of the centers of mass (Kinematics' methods)."""
    tree = kin.tree
    nb, qj = tree.n_bodies, tree.q_joints
    bodies = np.arange(nb)
    xS = kin.positions(bodies, tree.com)
    S = kin.twists(bodies, xS)
    JS, Jw_all = S[:, :, qj], kin.angular_jacobian()
    Jw = Jw_all[:, :, qj]
    Rb = kin.R[:, :nb]
    Iw = Rb @ tree.inertia @ np.swapaxes(Rb, -1, -2)
    M = np.einsum("b,xbkc,xblc->xkl", tree.mass, JS, JS) + np.einsum("xbkc,xbcd,xbld->xkl", Jw, Iw, Jw)
    if frozen:
        zd = kin.rates(qd, frozen=True)
        aS = kin.velocity_product(bodies, xS, S, frozen=True, qd=qd)
        al = kin.angular_velocity_product(frozen=True, qd=qd)
    else:
        zd = kin.zeta_rate
        aS = kin.velocity_product(bodies, xS, S)
        al = kin.angular_velocity_product()
    w = np.einsum("xbkc,xk->xbc", Jw_all, zd)
    Iww = np.einsum("xbcd,xbd->xbc", Iw, w)
    moment = np.einsum("xbcd,xbd->xbc", Iw, al) + np.cross(w, Iww)
    h = np.einsum("b,xbkc,xbc->xk", tree.mass, JS, aS) + np.einsum("xbkc,xbc->xk", Jw, moment)
    return M, h, xS, S


@pytest.mark.parametrize("prescribed", [True, False])
def test_compiled_inertia_terms_match_their_assembly_in_numpy(prescribed):
    """M, h (absolute and relative motion) of the kernel = their assembly with numpy from the
    kinematics of the centers of mass, real and complex, for a batch of configurations with one time each."""
    from skfiber.rigid.kinematics import Kinematics

    system = tree_system(prescribed=prescribed)
    rng = np.random.default_rng(3)
    q = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4)) * 1e-3
    qd = rng.normal(size=(3, 4))
    for qq, t in ((q, np.array([0.1, 0.7, 1.3])), (q.real, 0.4)):
        for frozen in (False, True):
            kin = Kinematics(system.tree, qq, t, qd)
            ctx = system.context(qq, qd, t)
            M, h = system.inertia_terms(ctx, frozen=frozen)
            M_ref, h_ref, xS, S = _numpy_inertia(kin, qd, frozen=frozen)
            assert np.iscomplexobj(M) == np.iscomplexobj(qq)
            np.testing.assert_allclose(M, M_ref, rtol=0, atol=1e-13 * np.abs(M_ref).max())
            np.testing.assert_allclose(h, h_ref, rtol=0, atol=1e-13 * np.abs(h_ref).max())
            np.testing.assert_allclose(ctx.com()[0], xS, rtol=0, atol=1e-14)
            np.testing.assert_allclose(ctx.com()[1], S, rtol=0, atol=1e-14)
            assert np.array_equal(M, np.swapaxes(M, 1, 2))


def test_compiled_point_jets_match_the_kinematics_of_the_points(system, state):
    """evaluate_points (its q- and t-derivatives picked from the joints') = positions, twists and
    second derivatives of Kinematics."""
    from skfiber.rigid import evaluate_points
    from skfiber.rigid.kinematics import Kinematics

    q, qd, _, t = state
    tree = system.tree
    names = ["a", "c", "e", "f", "base", "ground", "d"]
    idx = np.array([tree.index[b] for b in names])
    X = np.random.default_rng(4).normal(size=(len(names), 3))
    kin = Kinematics(tree, q[None], t, qd[None])
    x = kin.positions(idx, X)
    S = kin.twists(idx, x)
    H = kin.second_derivatives(idx, x, S)[0]
    qj, tj = tree.q_joints, tree.tau_joints
    pk = evaluate_points(system, names, X, q, t, qd)
    close = dict(rtol=0, atol=1e-14)
    np.testing.assert_allclose(pk.position, x[0], **close)
    np.testing.assert_allclose(pk.jacobian, np.swapaxes(S[0][:, qj], 1, 2), **close)
    np.testing.assert_allclose(pk.hessian, np.moveaxis(H[:, qj][:, :, qj], -1, 1), **close)
    np.testing.assert_allclose(pk.dt, S[0][:, tj].sum(axis=1), **close)
    np.testing.assert_allclose(pk.jacobian_dt, np.swapaxes(H[:, tj][:, :, qj].sum(axis=1), 1, 2), **close)
    np.testing.assert_allclose(pk.dtt, H[:, tj][:, :, tj].sum(axis=(1, 2)), **close)
    by_index = evaluate_points(system, idx, X, q, t, hessian=False)  # body indices instead of names
    assert by_index.hessian is None
    np.testing.assert_array_equal(by_index.jacobian, pk.jacobian)


def test_kinematics_second_order_terms_against_finite_differences(system, state):
    """Kinematics' second derivatives of points, their accelerations at q̈ = 0 and the bodies' angular
    accelerations at q̈ = 0 (absolute, and with the time frozen) = central differences of its twists,
    positions and angular velocities along q + q̇τ (and t + τ)."""
    from skfiber.rigid.kinematics import Kinematics

    q, qd, _, t = state
    tree = system.tree
    qj, tj = tree.q_joints, tree.tau_joints
    names = ["a", "c", "e", "f", "d", "base"]
    bodies = np.array([tree.index[b] for b in names])
    X = np.random.default_rng(5).normal(size=(len(names), 3))

    def kin(qq, tt):
        return Kinematics(tree, np.asarray(qq)[None], tt, qd[None])

    def twists(qq, tt):
        k = kin(qq, tt)
        return k.twists(bodies, k.positions(bodies, X))[0]

    k0 = kin(q, t)
    x = k0.positions(bodies, X)
    H = k0.second_derivatives(bodies, x, k0.twists(bodies, x))[0]  # (P, nz, nz, 3)
    eps = 1e-6
    for a, joint in enumerate(qj):  # ∂s_k/∂q_a = ∂²x/∂ζ_a∂ζ_k for every joint k
        e = np.zeros_like(q)
        e[a] = eps
        assert rel(H[:, joint], (twists(q + e, t) - twists(q - e, t)) / (2 * eps)) < 1e-7
    assert rel(H[:, tj].sum(axis=1), (twists(q, t + eps) - twists(q, t - eps)) / (2 * eps)) < 1e-7  # ∂s_k/∂t
    assert np.abs(H[:, tj].sum(axis=1)[:, tj]).max() > 1e-3  # the own accelerations of the prescribed joints count

    h = 1e-4
    for frozen, rate in ((False, 1.0), (True, 0.0)):
        def along(tau):
            return kin(q + qd * tau, t + rate * tau).positions(bodies, X)[0]

        acc = (along(h) - 2 * along(0) + along(-h)) / h**2
        assert rel(k0.velocity_product(bodies, x, k0.twists(bodies, x), frozen=frozen, qd=qd[None])[0], acc) < 1e-5

        def angular_velocity(tau):
            k = kin(q + qd * tau, t + rate * tau)
            zd = k.zeta_rate if not frozen else k.rates(qd[None], frozen=True)
            return np.einsum("bkc,k->bc", k.angular_jacobian()[0], zd[0])

        alpha = (angular_velocity(eps) - angular_velocity(-eps)) / (2 * eps)
        assert rel(k0.angular_velocity_product(frozen=frozen, qd=qd[None])[0], alpha) < 1e-7


def test_kinematics_of_points_broadcast_one_point_set_and_refuse_what_does_not_fit(system):
    """Points of one configuration broadcast over a batch (as in numpy); bad body indices and shapes are
    named, never read past an array's end."""
    from skfiber.rigid.kinematics import Kinematics

    tree = system.tree
    rng = np.random.default_rng(7)
    q = rng.normal(size=(3, 4))
    kin = Kinematics(tree, q, 0.4, rng.normal(size=(3, 4)))
    bodies = np.array([tree.index[b] for b in ("c", "f")])
    X = rng.normal(size=(2, 3))
    x = kin.positions(bodies, X)
    S = kin.twists(bodies, x)
    for i in range(3):  # x and S of configuration i alone (batch of one) against the batch's row i
        assert np.allclose(kin.twists(bodies, x[i:i + 1])[i], S[i], rtol=0, atol=1e-14)
        assert np.allclose(kin.second_derivatives(bodies, x[i:i + 1], S[i:i + 1])[i],
                           kin.second_derivatives(bodies, x, S)[i], rtol=0, atol=1e-14)
    assert np.allclose(kin.positions(bodies[:1], X[0])[:, 0], x[:, 0], rtol=0, atol=1e-15)  # one point as (3,)
    Xc = X + 1e-30j  # a complex point keeps its imaginary part
    assert np.all(kin.positions(bodies, Xc).imag != 0)
    ground = tree.path.shape[0] - 1
    assert np.array_equal(kin.positions([-1], X[:1]), kin.positions([ground], X[:1]))
    with pytest.raises(ValueError, match=r"bodies must be a 1-D array of body indices .*got bool"):
        kin.positions(np.array([True, False]), X)
    with pytest.raises(ValueError, match=rf"body index {ground + 1} is outside 0 … {ground}"):
        kin.twists(np.array([0, ground + 1]), x)
    with pytest.raises(ValueError, match=r"X of shape \(3, 3\) does not fit the shape \(2, 3\)"):
        kin.positions(bodies, np.ones((3, 3)))  # a point more than bodies
    with pytest.raises(ValueError, match=r"x of shape \(2, 2, 3\) does not fit the shape \(3, 2, 3\)"):
        kin.velocity_product(bodies, x[:2], S)


def test_batched_kinematics_with_one_time_per_configuration(system):
    """A complex batch with its own time per entry = the entries one by one (the complex step passes through)."""
    from skfiber.rigid.kinematics import Kinematics

    rng = np.random.default_rng(5)
    q = rng.normal(size=(4, 4)) + 1e-30j * np.eye(4)
    t = np.array([0.0, 0.3, 0.9, 2.0])
    kin = Kinematics(system.tree, q, t)
    for i in range(4):
        one = Kinematics(system.tree, q[i:i + 1], float(t[i]))
        for name in ("R", "p", "omega", "origin", "velocity", "own_angular", "own_linear"):
            assert np.array_equal(getattr(kin, name)[i], getattr(one, name)[0]), name
    assert np.abs(kin.R.imag).max() > 0


# --------------------------------------------------------------------------- dynamics
def test_equations_of_motion_are_lagranges(system, state):
    """M q̈ + h = d/dt ∂T/∂q̇ − ∂T/∂q with T computed from body velocities only."""
    q, qd, qdd, t = state

    def dT_dqd(q_, qd_, t_):
        return complex_jacobian(lambda Z: system.kinetic_energy(np.broadcast_to(q_, Z.shape), Z, t_)[:, None], qd_)[1][0]

    def dT_dq(q_, qd_, t_):
        return complex_jacobian(lambda Z: system.kinetic_energy(Z, np.broadcast_to(qd_, Z.shape), t_)[:, None], q_)[1][0]

    h = 1e-5
    momentum = lambda tau: dT_dqd(q + qd * tau + 0.5 * qdd * tau**2, qd + qdd * tau, t + tau)  # noqa: E731
    lagrange = (momentum(h) - momentum(-h)) / (2 * h) - dT_dq(q, qd, t)
    assert rel(system.inertial_force(q, qd, qdd, t), lagrange) < 1e-8


def test_mass_matrix(system, state):
    q, qd, _, t = state
    M = system.mass_matrix(q, t)
    assert np.array_equal(M, M.T) and np.linalg.eigvalsh(M).min() > 0
    # M = ∂²T/∂q̇² (T quadratic in q̇): differences of the kinetic energy's gradient
    grad = lambda v: complex_jacobian(  # noqa: E731
        lambda Z: system.kinetic_energy(np.broadcast_to(q, Z.shape), Z, t)[:, None], v)[1][0]
    assert rel(M, fd(grad, qd)) < 1e-8
    assert system.relative_kinetic_energy(q, qd, t) == pytest.approx(0.5 * qd @ M @ qd)
    dMq, dMt = system.mass_matrix_derivatives(q, t)
    assert rel(dMq, np.moveaxis(fd(lambda x: system.mass_matrix(x, t), q), -1, 0)) < 1e-8
    eps = 1e-6
    assert rel(dMt, (system.mass_matrix(q, t + eps) - system.mass_matrix(q, t - eps)) / (2 * eps)) < 1e-7


def test_force_and_inertia_derivatives(system, state):
    q, qd, qdd, t = state
    Q, dQ_dq, dQ_dqd = system.force_derivatives(q, qd, t)
    np.testing.assert_allclose(Q, system.generalized_forces(q, qd, t))
    assert rel(dQ_dq, fd(lambda x: system.generalized_forces(x, qd, t), q)) < 1e-8
    assert rel(dQ_dqd, fd(lambda x: system.generalized_forces(q, x, t), qd)) < 1e-8
    F, dF_dq, dF_dqd, M = system.inertia_derivatives(q, qd, qdd, t)
    assert rel(dF_dq, fd(lambda x: system.inertial_force(x, qd, qdd, t), q)) < 1e-8
    assert rel(dF_dqd, fd(lambda x: system.inertial_force(q, x, qdd, t), qd)) < 1e-8
    np.testing.assert_allclose(system.residual(q, qd, qdd, t), F - Q, atol=1e-12)


def test_backward_euler_tangent(system, state):
    q, qd, _, t = state
    q_n, p_n, dt = q - 0.01 * qd, 0.9 * qd, 0.01
    step = rigid_step(system, q, q_prev=q_n, p_prev=p_n, dt=dt, t=t)
    K_fd = fd(lambda x: rigid_step(system, x, q_prev=q_n, p_prev=p_n, dt=dt, t=t, tangent=False).residual, q, 1e-7)
    assert rel(step.tangent, K_fd) < 1e-8
    # the residual is eq. 64: M (p⁺ − pₙ)/Δt + h − Q with p⁺ = (q⁺ − qₙ)/Δt
    p1 = (q - q_n) / dt
    np.testing.assert_allclose(step.residual, system.residual(q, p1, (p1 - p_n) / dt, t), atol=1e-10)


def test_batched_evaluation_matches_single(system):
    rng = np.random.default_rng(1)
    Q, V, T = rng.normal(size=(3, 4)) * 0.4, rng.normal(size=(3, 4)), np.array([0.1, 0.5, 0.9])
    batch = system.powers(Q, V, T)
    for k in range(3):
        single = system.powers(Q[k], V[k], T[k])
        for name, value in single.items():
            assert batch[name][k] == pytest.approx(value, rel=1e-12, abs=1e-14)


# --------------------------------------------------------------------------- energy and work
def test_potential_and_dissipation_give_the_forces():
    s = tree_system(prescribed=False)
    rng = np.random.default_rng(2)
    q, qd = rng.normal(size=4) * 0.4, rng.normal(size=4)
    parts_at_rest = s.force_contributions(q, np.zeros(4))
    assert rel(sum(parts_at_rest.values()), -fd(lambda x: np.atleast_1d(s.potential_energy(x)), q)[0]) < 1e-8
    damping = sum(s.force_contributions(q, qd).values()) - sum(parts_at_rest.values())
    dR = fd(lambda v: np.atleast_1d(s.dissipation_function(q, v)), qd)[0]
    assert rel(damping, -dR) < 1e-7


def test_powers_sum_to_the_rate_of_relative_kinetic_energy(system, state):
    """Multibody paper eqs. 51–54 in rate form: dT₂/dt = q̇ᵀ(Q + Q*) + ½ q̇ᵀ ∂M/∂t q̇ along motions."""
    q, qd, _, t = state
    acc = system.accelerations(q, qd, t)

    def T2(tau):
        return system.relative_kinetic_energy(q + qd * tau + 0.5 * acc * tau**2, qd + acc * tau, t + tau)

    powers = system.powers(q, qd, t)
    assert sum(powers.values()) == pytest.approx((T2(1e-5) - T2(-1e-5)) / 2e-5, rel=1e-7)
    assert abs(powers["transport"]) > 1e-3  # the prescribed motions do work here


def test_energy_is_conserved_by_the_equations_and_dissipated_at_first_order_by_backward_euler():
    s = tree_system(damping=False, prescribed=False)
    q0, p0 = np.array([0.3, 0.02, -0.2, 0.4]), np.zeros(4)

    def energy(q, p):
        return s.relative_kinetic_energy(q, p) + s.potential_energy(q)

    def rhs(t, y):
        return np.concatenate([y[4:], s.accelerations(y[:4], y[4:], t)])

    sol = solve_ivp(rhs, (0, 0.3), np.concatenate([q0, p0]), method="DOP853", rtol=1e-11, atol=1e-11)
    E0 = energy(q0, p0)
    assert abs(energy(sol.y[:4, -1], sol.y[4:, -1]) - E0) < 1e-8 * abs(E0)
    drift = []
    for dt in (0.004, 0.002):
        r = simulate_rigid(s, q0, p0, 0.3, dt)
        drift.append(E0 - energy(r.q[-1], r.p[-1]))
    assert drift[0] > drift[1] > 0  # backward Euler dissipates, less with smaller steps
    assert 1.6 < drift[0] / drift[1] < 2.4  # first order


# --------------------------------------------------------------------------- pendulum
def pendulum(axis=(0, 1, 0), length=0.5, mass=1.0):
    s = RigidSystem(gravity=(0, 0, -G))
    s.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -length), radius=0.01, mass=mass),
               joint=Revolute(axis=axis, point=(0, 0, 0)))
    return s


def test_pendulum_small_angle_period():
    s = pendulum()
    b = s.body("rod")
    I_O = b.inertia_matrix[1, 1] + b.mass * (b.length / 2) ** 2
    period = 2 * np.pi * np.sqrt(I_O / (b.mass * G * b.length / 2))
    assert s.mass_matrix([0.0])[0, 0] == pytest.approx(I_O)
    r = simulate_rigid(s, [0.01], [0.0], 2.2 * period, 2e-3)
    q = r.q[:, 0]
    i = np.flatnonzero((q[:-1] > 0) & (q[1:] <= 0))  # downward zero crossings
    crossings = r.times[i] + (r.times[i + 1] - r.times[i]) * q[i] / (q[i] - q[i + 1])
    assert len(crossings) == 2
    # BE lengthens the period by ≈ (ωΔt)²/3 ≈ 4e-5 here; the amplitude correction is 6e-6
    assert crossings[1] - crossings[0] == pytest.approx(period, rel=1e-4)


def test_pendulum_large_angle_against_solve_ivp():
    """A rod on a skew hinge through the origin, released at 2.5 rad: backward Euler converges to the ODE solution."""
    axis = np.array([0.3, 1.0, 0.2])
    axis /= np.linalg.norm(axis)
    s = pendulum(axis=axis)
    b = s.body("rod")
    r_c = b.center_of_mass
    I_O = axis @ (b.inertia_matrix + b.mass * (r_c @ r_c * np.eye(3) - np.outer(r_c, r_c))) @ axis
    g = np.array([0, 0, -G])

    def rhs(t, y):  # I_O θ̈ = a · (Rot(a, θ) r_c × m g)
        R = rotation_about(axis, np.array([y[0]]))[0]
        return [y[1], axis @ np.cross(R @ r_c, b.mass * g) / I_O]

    assert s.accelerations([2.5], [0.3])[0] == pytest.approx(rhs(0, [2.5, 0.3])[1], rel=1e-12)
    T = 0.8
    sol = solve_ivp(rhs, (0, T), [2.5, 0.0], method="Radau", rtol=1e-11, atol=1e-12)
    errors = [abs(simulate_rigid(s, [2.5], [0.0], T, dt).q[-1, 0] - sol.y[0, -1]) for dt in (2e-3, 1e-3)]
    assert errors[1] < 0.02
    assert 1.7 < errors[0] / errors[1] < 2.3


def test_newton_failure_is_reported():
    s = pendulum()
    with pytest.raises(sf.ConvergenceError, match=r"t = 0.5 s.*no convergence in 1 iterations"):
        backward_euler_rigid(s, [2.5], [10.0], 0.0, 0.5, options=sf.NewtonOptions(max_iterations=1))


@pytest.mark.parametrize("tolerances", [{}, dict(rtol=1e-6, atol=1e-8)])
def test_a_failing_rigid_run_keeps_what_it_computed(monkeypatch, tolerances):
    """Steps that fail from t = 0.05 s on: the error carries the states computed until then, equal to those of
    the same run without the failure."""
    import skfiber.rigid.simulate as rs

    s = pendulum()
    reference = simulate_rigid(s, [2.5], [0.0], 0.1, 0.01, method="bdf2", **tolerances)
    real = rs._advance

    def failing_after(system, point, t, h, *args):
        if t >= 0.05 - 1e-12:
            raise sf.ConvergenceError("stand-in failure", t=t + h, step=0, residual_history=[1.0])
        return real(system, point, t, h, *args)

    monkeypatch.setattr(rs, "_advance", failing_after)
    with pytest.raises(sf.ConvergenceError, match=r"stand-in failure.*kept in this error's \.partial \(a RigidResult") as info:
        simulate_rigid(s, [2.5], [0.0], 0.1, 0.01, method="bdf2", max_bisections=1, **tolerances)
    partial = info.value.partial
    outputs = 6  # t = 0, 0.01, …, 0.05 (an adaptive run adds its last accepted step, just past 0.05 s)
    assert partial.interrupted and len(partial.times) == outputs + bool(tolerances)
    np.testing.assert_allclose(partial.times[:outputs], reference.times[:outputs], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(partial.q[:outputs], reference.q[:outputs])
    assert partial.times[-1] >= 0.05 - 1e-12


# --------------------------------------------------------------------------- bad models
def body(name, mass=1.0, **kw):
    return Body(name, start=(0, 0, 0), axis=(0, 0, -1), radius=0.05, mass=mass, **kw)


def test_unknown_parent():
    s = RigidSystem()
    s.add_body(body("a"), parent="nope", joint=Revolute(axis=(0, 1, 0)))
    with pytest.raises(ValueError, match=r"parent 'nope' of body 'a' is not a body.*'ground'"):
        s.finalize()


def test_cycle_of_parents():
    s = RigidSystem()
    s.add_body(body("a"), parent="b", joint=Revolute(axis=(0, 1, 0)))
    s.add_body(body("b"), parent="a", joint=Revolute(axis=(0, 1, 0)))
    s.add_body(body("c"), joint=Revolute(axis=(0, 1, 0)))
    with pytest.raises(ValueError, match=r"'a' → 'b' → 'a' form a cycle"):
        s.finalize()


def test_duplicate_body_name():
    s = RigidSystem()
    s.add_body(body("a"))
    with pytest.raises(ValueError, match="already in the system"):
        s.add_body(body("a"))


@pytest.mark.parametrize("joint", [lambda: Revolute(axis=(0, 0, 0)), lambda: Prismatic(axis=(0, 0, 0))])
def test_zero_length_joint_axis(joint):
    with pytest.raises(ValueError, match="axis of a (revolute|prismatic) joint has zero length"):
        joint()


def test_bad_bodies():
    with pytest.raises(ValueError, match="axis of body 'x' has zero length"):
        Body("x", start=(0, 0, 0), axis=(0, 0, 0), radius=0.1, mass=1)
    with pytest.raises(ValueError, match="mass of body 'x' must be finite and ≥ 0"):
        Body("x", start=(0, 0, 0), axis=(0, 0, 1), radius=0.1, mass=-1)
    with pytest.raises(ValueError, match="radius of body 'x' must be > 0"):
        Body("x", start=(0, 0, 0), axis=(0, 0, 1), radius=0, mass=1)
    with pytest.raises(ValueError, match="negative principal moment"):
        Body("x", start=(0, 0, 0), axis=(0, 0, 1), radius=0.1, mass=1, inertia=np.diag([1, 1, -1]))


def test_free_body_needs_mass_and_inertia():
    s = RigidSystem()
    s.add_body(body("a", mass=0.0), joint=Revolute(axis=(0, 1, 0)))
    with pytest.raises(ValueError, match=r"body 'a' moves with its own coordinate .* mass 0; give it a mass > 0"):
        s.finalize()
    s = RigidSystem()
    s.add_body(body("a", inertia=np.zeros((3, 3))), joint=Revolute(axis=(0, 1, 0)))
    with pytest.raises(ValueError, match="inertia tensor is not positive definite"):
        s.finalize()
    s = RigidSystem()  # fixed and prescribed bodies may be massless
    s.add_body(body("a", mass=0.0))
    s.add_body(body("b", mass=0.0), joint=Prescribed(translation=lambda t: (t, 0, 0)))
    assert s.finalize().n == 0


def test_points_and_elements_on_unknown_bodies():
    s = pendulum()
    with pytest.raises(ValueError, match=r"unknown body 'arm'; bodies: \['rod'\] or 'ground'"):
        s.point("arm", (0, 0, 0))
    s.add(PointSpringDamper("ground", (0, 0, 0), "arm", (0, 0, -1), stiffness=1.0))
    with pytest.raises(ValueError, match=r"spring\[ground–arm\]: unknown body 'arm'"):
        s.finalize()
    s = pendulum()
    s.add_body(body("fixed"), parent="rod")
    s.add(JointSpringDamper("fixed", stiffness=1.0))
    with pytest.raises(ValueError, match="joint of body 'fixed' has no coordinate"):
        s.finalize()
    with pytest.raises(TypeError, match="wrap the function in skfiber.rigid.Characteristic"):
        JointSpringDamper("rod", stiffness=lambda x: x)


def test_named_points():
    s = RigidSystem()
    s.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -1), radius=0.05, mass=1.0, points={"insertion": (0.05, 0, -0.8)}),
               joint=Revolute(axis=(0, 1, 0)))
    tip = s.point("arm", "insertion")
    np.testing.assert_allclose(tip.position([0.0]), [0.05, 0, -0.8])
    with pytest.raises(ValueError, match=r"body 'arm' has no point named 'origin'; its named points: \['insertion'\]"):
        s.point("arm", "origin")
    spring = s.add(PointSpringDamper("ground", (0, 0, 0.2), "arm", "insertion", stiffness=3.0))
    s.finalize()
    assert spring.rest_length == pytest.approx(np.hypot(0.05, 1.0))
    s.add(PointForce("arm", "elbow", (0, 0, 1.0)))
    with pytest.raises(ValueError, match=r"point force\[arm\]: body 'arm' has no point named 'elbow'"):
        s.finalize()


def test_bad_state_shapes():
    s = pendulum()
    with pytest.raises(ValueError, match=r"q must have 1 entries \['rod.angle'\]"):
        s.mass_matrix([0.0, 1.0])
    with pytest.raises(ValueError, match="dt must be > 0"):
        rigid_step(s, [0.0], q_prev=[0.0], p_prev=[0.0], dt=0.0, t=0.0)


# --------------------------------------------------------------------------- demo
def test_pendulum_chain_demo_small():
    from skfiber.demos import pendulum_chain as demo

    res = demo.run(small=True)
    assert res.energy.links == (2,) and len(res.energy.dt) == 4
    assert 0.85 < res.energy.rate < 1.1
    assert np.all(np.diff(res.energy.drift[0]) < 0)
    assert 0.9 < res.driven.work_rates[0] < 1.1
    assert 0.85 < res.driven.error_rates[0] < 1.1
    assert res.driven.work_residual[0, -1] < 0.05 and res.driven.error[0, -1] < 0.015
    assert 0.85 < res.independent.rate < 1.1
    # the skfiber equations and the independently derived sympy equations give the same motion
    assert res.independent.ode_agreement < 1e-8
    np.testing.assert_allclose(res.independent.error, res.driven.error[0], rtol=1e-4)
    parts = res.driven.work_parts[0]
    assert parts["joint dampers"] < 0 and parts["transport"] != 0
    assert re.fullmatch(r"summary: energy_drift_rate=\d\.\d\d work_residual_rate=\d\.\d\d trajectory_rate=\d\.\d\d "
                        r"independent_rate=\d\.\d\d ode_agreement=\d\.\de-\d\d", res.summary)


def test_pendulum_chain_one_and_eight_links():
    """Both ends of the issue's n = 1 … 8: every study converges at first order."""
    from skfiber.demos import pendulum_chain as demo

    res = demo.run(small=True, links=(1, 8))
    assert res.energy.links == (1, 8) and res.independent is None
    for i in range(2):
        assert np.all(np.diff(res.energy.drift[i]) < 0)
        assert np.all(np.diff(res.driven.work_residual[i]) < 0)
        assert np.all(np.diff(res.driven.error[i]) < 0)
    # least-squares rates over Δt = 0.04 … 0.005 s (measured 0.89/0.96, 0.95/0.97, 0.92/0.79):
    # the 8-link chain's fast modes are pre-asymptotic on the coarsest step
    assert np.all((res.energy.rates > 0.85) & (res.energy.rates < 1.1))
    assert np.all((res.driven.work_rates > 0.9) & (res.driven.work_rates < 1.1))
    assert np.all((res.driven.error_rates > 0.7) & (res.driven.error_rates < 1.1))
    assert res.driven.error[1, -1] < 0.02 and res.driven.work_residual[1, -1] < 0.01


def test_pendulum_chain_main(capsys, tmp_path):
    from skfiber.demos import pendulum_chain as demo

    pytest.importorskip("matplotlib")
    png = tmp_path / "chain.png"
    assert demo.main(["--small", "--links", "1", "--plot", str(png)]) == 0
    assert png.stat().st_size > 10_000
    lines = capsys.readouterr().out.strip().splitlines()
    # every key the help names, nan where the chain of 2 links was not run
    assert lines[-1].startswith("summary: energy_drift_rate=")
    assert lines[-1].endswith(" independent_rate=nan ode_agreement=nan")
    with pytest.raises(SystemExit):
        demo.main(["--links", "9"])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        demo.main(["--links", "3", "3"])
    assert "--links names a chain twice, got [3, 3]" in capsys.readouterr().err


def test_simulate_rigid_keeps_the_steps_done_when_interrupted():
    system = hanging_rod()

    def stop_after_three(t, q, p):
        if t > 0.025:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="rigid simulation interrupted at t = 0.03 s"):
        part = simulate_rigid(system, [0.3], [0.0], t_end=0.1, dt=0.01, callback=stop_after_three)
    full = simulate_rigid(system, [0.3], [0.0], t_end=0.1, dt=0.01)
    assert part.interrupted and not full.interrupted
    assert part.times.shape == (4,) and part.q.shape == (4, 1) and len(part.newton_iterations) == 3
    assert np.array_equal(part.q, full.q[:4])


@pytest.mark.parametrize("schedule", [dict(dt=0.01), dict(dt=0.01, method="bdf2", rtol=1e-6, atol=1e-8)])
def test_simulate_rigid_lets_ctrl_c_through_when_asked(schedule):
    """on_interrupt="raise": the callback's KeyboardInterrupt reaches the caller, with no warning of a kept
    part (fixed and error-controlled steps); a bad value is named."""
    system = hanging_rod()

    def ctrl_c():
        raise KeyboardInterrupt

    stop_after_three, calls = stopping_at_call(3, ctrl_c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a "rigid simulation interrupted" warning would fail the test
        with pytest.raises(KeyboardInterrupt):
            simulate_rigid(system, [0.3], [0.0], t_end=0.1, callback=stop_after_three, on_interrupt="raise",
                           **schedule)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="on_interrupt must be 'keep' .* or 'raise' .*, got 'stop'"):
        simulate_rigid(system, [0.3], [0.0], t_end=0.1, dt=0.01, on_interrupt="stop")


# --------------------------------------------------------------------------- fast paths
def _gravity_only_system():
    """Like the upper-limb demo: a fixed body, a revolute one and a massless body fixed to it."""
    s = RigidSystem(gravity=(0.0, 0.0, -G))
    s.add_body(Body("upper", start=(0, 0, 0), axis=(0, 0, -0.35), radius=0.03, mass=1.9), joint=Fixed())
    s.add_body(Body("fore", start=(0, 0, -0.35), axis=(0.05, 0, -0.28), radius=0.03, mass=1.5),
               parent="upper", joint=Revolute(axis=(0, -1, 0), point=(0, 0, -0.35)))
    s.add_body(Body("wrap", start=(0, -0.08, -0.35), axis=(0, 0.16, 0), radius=0.02, mass=0.0), parent="fore")
    return s


class _ScaledGravity(sf.rigid.forces.Gravity):
    """A Gravity subclass: not the built-in class, so it is evaluated through force(ctx)."""

    def force(self, ctx):
        return 0.5 * super().force(ctx)


def _fast_path_systems():
    from demos import pendulum_chain

    custom = _gravity_only_system()
    custom.add(_ScaledGravity(np.array([0.0, 0.3, -2.0]), name="half gravity"))
    custom.add(JointSpringDamper("fore", stiffness=Characteristic.tan_sec(2.0), damping=0.3))
    return {
        "tree": add_loads(tree_system()),                   # prescribed base, every element
        "tree fixed": tree_system(damping=False, prescribed=False),
        "no gravity": tree_system(gravity=(0, 0, 0)),          # no Gravity element at all
        "gravity only": _gravity_only_system(),
        "gravity subclass": custom,
        "chain": pendulum_chain.build_chain(5),              # moving base, joint springs, a ligament
    }


@pytest.mark.parametrize("name", ["tree", "tree fixed", "no gravity", "gravity only", "gravity subclass", "chain"])
def test_fast_rigid_step_equals_the_definition(name):
    """rigid_step (compiled balance, kept tables) = the definition (balance on a full context) on random
    states: residual, tangent (complex step), velocity and force scale, with and without the tangent."""
    from skfiber.rigid.step import rigid_step_definition

    system = _fast_path_systems()[name]
    n = system.n
    rng = np.random.default_rng(7)
    for k in range(3):
        q, q_n, p_n = rng.normal(size=(3, n)) * [[0.5], [0.5], [2.0]]
        dt, t = 10.0 ** rng.uniform(-4, -1), rng.uniform(0, 2)
        for tangent in (True, False):
            fast = rigid_step(system, q, q_prev=q_n, p_prev=p_n, dt=dt, t=t, tangent=tangent)
            ref = rigid_step_definition(system, q, q_prev=q_n, p_prev=p_n, dt=dt, t=t, tangent=tangent)
            scale = ref.reference_force
            assert scale > 0 and fast.reference_force == pytest.approx(scale, rel=1e-13)
            np.testing.assert_allclose(fast.residual, ref.residual, rtol=0, atol=1e-13 * scale)
            np.testing.assert_array_equal(fast.velocity, ref.velocity)
            if tangent:
                K_scale = np.abs(ref.tangent).max()
                np.testing.assert_allclose(fast.tangent, ref.tangent, rtol=0, atol=1e-13 * K_scale)
            else:
                assert fast.tangent is None
    if name == "gravity only":  # the built-in gravity is the only element: no context is built
        from skfiber.rigid.step import compiled_balance

        Q = q[None, :] + 1e-30j
        assert compiled_balance(system, Q, q_n, p_n, 0.01, 0.3)[2] is None


def test_fast_rigid_step_with_element_states_equals_the_definition():
    """The same with a stateful force element (an elastic-tendon muscle with excitation: 2 states)."""
    from test_hill_actuator import double_pendulum

    from skfiber.rigid.integrate import initial_element_states
    from skfiber.rigid.step import rigid_step_definition

    system, hill = double_pendulum("damped", excitation=True)
    system.add(JointSpringDamper("l2", stiffness=1.0, damping=0.05))
    q_n, p_n = np.array([0.18, -0.08]), np.array([0.5, -0.3])
    s_n = initial_element_states(system, q_n, p_n, 0.0)
    assert len(s_n) == 2
    for q, s in ((np.array([0.2, -0.1]), s_n * 1.01), (np.array([0.1, 0.05]), s_n * 0.97)):
        for tangent in (True, False):
            fast = rigid_step(system, q, q_prev=q_n, p_prev=p_n, dt=0.01, t=0.01, tangent=tangent, states=s,
                              states_prev=s_n)
            ref = rigid_step_definition(system, q, q_prev=q_n, p_prev=p_n, dt=0.01, t=0.01, tangent=tangent, states=s,
                                        states_prev=s_n)
            assert fast.n_states == ref.n_states == 2
            assert fast.reference_force == pytest.approx(ref.reference_force, rel=1e-13)
            np.testing.assert_allclose(fast.residual, ref.residual, rtol=0, atol=1e-13 * ref.reference_force)
            if tangent:
                np.testing.assert_allclose(fast.tangent, ref.tangent, rtol=0, atol=1e-13 * np.abs(ref.tangent).max())


def test_step_follows_changes_of_the_system():
    """The kept tables are rebuilt when bodies or elements are added, and gravity is read at each call."""
    system = _gravity_only_system()
    kw = dict(q_prev=[0.1], p_prev=[0.0], dt=0.01, t=0.0)
    before = rigid_step(system, [0.2], **kw).residual
    system.add(JointSpringDamper("fore", stiffness=3.0))
    after = rigid_step(system, [0.2], **kw).residual
    np.testing.assert_allclose(after - before, [3.0 * 0.2], rtol=1e-12)
    system.gravity[2] = -2 * G  # the bound Gravity element shares the array
    doubled = rigid_step(system, [0.2], **kw).residual
    weight = system.force_contributions([0.2], [10.0])["gravity"]
    np.testing.assert_allclose(doubled - after, -0.5 * weight, rtol=1e-12)
    system.add_body(Body("hand", start=(0.05, 0, -0.63), axis=(0, 0, -0.1), radius=0.03, mass=0.4),
                    parent="fore", joint=Revolute(axis=(0, -1, 0), point=(0.05, 0, -0.63)))
    assert rigid_step(system, [0.2, 0.0], q_prev=[0.1, 0.0], p_prev=[0.0, 0.0], dt=0.01, t=0.0).tangent.shape == (2, 2)


def test_step_without_coordinates():
    """A system whose only body moves as prescribed has no coordinates: empty residual and tangent."""
    s = RigidSystem(gravity=(0, 0, -G))
    s.add_body(Body("base", start=(0, 0, 0), axis=(0.2, 0, 0), radius=0.03, mass=1.0),
               joint=Prescribed(translation=lambda t: (0.1 * t, 0, 0)))
    step = rigid_step(s, [], q_prev=[], p_prev=[], dt=0.01, t=0.1)
    assert step.residual.shape == (0,) and step.tangent.shape == (0, 0) and step.reference_force == 0.0


@pytest.mark.parametrize("prescribed", [True, False])
def test_fused_point_jets_equal_the_two_kernels(system, state, prescribed):
    """evaluate_points without q̇ (one fused kernel, the coupled solver's case) = with q̇ (Kinematics and
    point_jets), real and complex q, for several times (the kept prescribed motion follows t)."""
    from skfiber.rigid import evaluate_points

    sys_ = system if prescribed else tree_system(prescribed=False)
    q, qd, _, _ = state
    names = ["a", "c", "e", "f", "base", "ground", "d", "b"]
    X = np.random.default_rng(6).normal(size=(len(names), 3))
    fields = ("position", "jacobian", "hessian", "dt", "jacobian_dt", "dtt")
    for t in (0.37, 0.37, 1.2):
        for qq in (q, q + 1e-20j * np.arange(1, 5)):
            fast = evaluate_points(sys_, names, X, qq, t)
            ref = evaluate_points(sys_, names, X, qq, t, qd)
            for f in fields:
                a, b = getattr(fast, f), getattr(ref, f)
                assert a.dtype == b.dtype and np.iscomplexobj(a) == np.iscomplexobj(qq)
                np.testing.assert_array_equal(a, b, err_msg=f)
            assert fast.velocity is None and fast.acceleration_bias is None
    no_h = evaluate_points(sys_, names, X, q, 0.5, hessian=False)
    assert no_h.hessian is None
    np.testing.assert_array_equal(no_h.jacobian, evaluate_points(sys_, names, X, q, 0.5, qd).jacobian)


def test_compiled_point_data_of_the_context_matches_the_numpy_formulas(system):
    """ctx.position / jacobian / velocity (one compiled call) = Kinematics.positions and twists (numpy),
    for a complex batch with one time per configuration, and without q̇."""
    rng = np.random.default_rng(8)
    q = rng.normal(size=(3, 4)) * 0.5 + 1e-30j * rng.normal(size=(3, 4))
    qd = rng.normal(size=(3, 4))
    t = np.array([0.1, 0.6, 1.4])
    bodies, X = system.finalize().registered_points()
    assert len(bodies) >= 4
    for vel in (qd, None):
        ctx = system.context(q, vel, t)
        kin = ctx.kin
        x = kin.positions(bodies, X)
        S = kin.twists(bodies, x)
        close = dict(rtol=0, atol=1e-14)
        for i in range(len(bodies)):
            np.testing.assert_allclose(ctx.position(i), x[:, i], **close)
            np.testing.assert_allclose(ctx.jacobian(i), np.swapaxes(S[:, i][:, system.tree.q_joints], 1, 2), **close)
            if vel is None:
                with pytest.raises(ValueError, match="point velocities need q̇"):
                    ctx.velocity(i)
            else:
                np.testing.assert_allclose(ctx.velocity(i), np.einsum("bkc,bk->bc", S[:, i], kin.zeta_rate), **close)


@pytest.mark.parametrize("characteristic", [Characteristic.linear(2.5), Characteristic.tan_sec(3.0)],
                         ids=["linear", "tan_sec"])
def test_characteristic_slope_and_energy_against_finite_differences(characteristic):
    # f′ against the central difference of f, and f against that of the energy ∫₀^x f, across |x| < π
    x = np.linspace(-2.8, 2.8, 15)
    h = 1e-6
    np.testing.assert_allclose(characteristic.slope(x), (characteristic(x + h) - characteristic(x - h)) / (2 * h),
                               rtol=1e-7, atol=1e-7)
    energy_slope = (characteristic.energy(x + h) - characteristic.energy(x - h)) / (2 * h)
    np.testing.assert_allclose(characteristic(x), energy_slope, rtol=1e-7, atol=1e-7)
    assert characteristic.energy(0.0) == 0.0
