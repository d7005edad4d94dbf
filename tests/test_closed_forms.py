"""Closed forms for terms whose other checks use the code's own numbers or unit-speed fibers.

* The measure of the reference curve (|A1| = |X′(θ)|, the Jacobian J of the forms): a curved fiber whose
  parameter is not arc length, with a radius that varies along it, carries the mass, weight and line load
  of its true length and cross-sections (integrals by ``scipy.integrate.quad``, independent of the forms).
  The cubic Hermite value functions sum to 1 on every element, so the value DOFs' entries of a load vector
  sum to the integral of the load.
* The rigid bodies' external forces: a point force's generalized force on a hinge is the moment of the
  force about the hinge's axis; a slider under gravity accelerates by g · â along its unit axis â, and its
  points move along â by the coordinate.
"""
import numpy as np
import pytest
from scipy.integrate import quad

import skfiber as sf
from skfiber.rigid import Body, GeneralizedForce, PointForce, Prismatic, Revolute, RigidSystem

RHO = 1100.0


def curve(theta):
    theta = np.asarray(theta, dtype=float)
    return np.array([2.0 * theta + 0.3 * theta**2, 0.1 * np.sin(3.0 * theta), 0.05 * theta**3])


def slope(theta):
    theta = np.asarray(theta, dtype=float)
    return np.array([2.0 + 0.6 * theta, 0.3 * np.cos(3.0 * theta), 0.15 * theta**2])


def radius(theta):
    return 0.01 * (1.0 + 0.5 * np.asarray(theta, dtype=float))


def speed(theta):
    return float(np.linalg.norm(slope(np.array([theta]))[:, 0]))


LENGTH = quad(speed, 0.0, 1.0, epsabs=1e-13, epsrel=1e-13)[0]
MASS = quad(lambda th: RHO * np.pi * radius(th) ** 2 * speed(th), 0.0, 1.0, epsabs=1e-13, epsrel=1e-13)[0]


def fiber(n_elements: int) -> sf.Fiber:
    return sf.Fiber(curve=curve, tangent=slope, n_elements=n_elements, radius=radius, density=RHO)


def value_sums(vector: np.ndarray) -> np.ndarray:
    """Σ over the nodes of the value DOFs' entries, per component (the derivative DOFs left out)."""
    return vector.reshape(-1, 6)[:, :3].sum(axis=0)


def translation(model: sf.Model, a) -> np.ndarray:
    """The DOF vector of a uniform field a: values a at every node, slopes 0."""
    out = np.zeros((model.n_dofs // 6, 6))
    out[:, :3] = a
    return out.ravel()


def weight(n_elements: int, g) -> np.ndarray:
    model = sf.Model([fiber(n_elements)])
    model.add_gravity(g)
    return value_sums(model.external_force(0.0))


def line_load(n_elements: int, q) -> np.ndarray:
    model = sf.Model([fiber(n_elements)])
    model.add_line_load(q)
    return value_sums(model.external_force(0.0))


def inertia(n_elements: int, a, *, tangent: bool) -> np.ndarray:
    """The inertia forces of a uniform acceleration a: from the residual, or from the tangent c_a M (c_a = 1)."""
    model = sf.Model([fiber(n_elements)])
    A = translation(model, a)
    zero = np.zeros(model.n_dofs)
    ev = model.evaluate(zero, zero, A, 0.0, c_v=0.0, c_a=1.0, parts=["inertia"])
    return value_sums(model.tangent_matrix(ev) @ A if tangent else ev.residual)


def mass_matrix(n_elements: int, a) -> np.ndarray:
    """The forces M A of a uniform acceleration a with the model's mass matrix (the relaxation's)."""
    model = sf.Model([fiber(n_elements)])
    return value_sums(model.mass_matrix @ translation(model, a))


G = np.array([0.3, -1.2, -9.81])
Q = np.array([2.0, 0.0, -5.0])
ACCELERATION = np.array([1.5, -0.4, 2.0])
CASES = {
    "weight": (lambda n: weight(n, G), MASS * G),
    "line load": (lambda n: line_load(n, Q), LENGTH * Q),
    "inertia": (lambda n: inertia(n, ACCELERATION, tangent=False), MASS * ACCELERATION),
    "inertia tangent": (lambda n: inertia(n, ACCELERATION, tangent=True), MASS * ACCELERATION),
    "mass matrix": (lambda n: mass_matrix(n, ACCELERATION), MASS * ACCELERATION),
}


def test_the_parameter_is_not_arc_length():
    assert 2.0 < LENGTH < 2.4 and abs(speed(0.0) - speed(1.0)) > 0.5


@pytest.mark.parametrize("case", sorted(CASES))
def test_loads_and_inertia_carry_the_true_length_and_sections(case):
    """Weight ρ0 g ∫ π r0² dS, line load q L and inertia m a of the curved fiber, to the order 4 of the
    cubic Hermite reference geometry (the forms' Jacobian |A1| is that of the interpolated curve)."""
    assemble, exact = CASES[case]
    errors = [np.linalg.norm(assemble(n) - exact) / np.linalg.norm(exact) for n in (4, 8, 16)]
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert errors[-1] < 3e-8, errors
    assert np.all((3.7 < rates) & (rates < 4.3)), (errors, rates)


def rotation(axis, angle):
    """Rodrigues' rotation about the unit ``axis`` by ``angle`` (right-handed)."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def test_point_force_on_a_hinge_is_the_moment_about_its_axis():
    """Q = ((x − O) × f) · â for a force f at the body point x = O + R(q)(X − O) of a hinge at O."""
    hinge, axis = np.array([0.1, -0.2, 0.3]), np.array([0.2, 1.0, -0.1])
    point, f = np.array([0.4, 0.1, -0.5]), np.array([3.0, -1.0, 2.0])
    system = RigidSystem()
    system.add_body(Body("arm", start=hinge, axis=(0.0, 0.0, -0.8), radius=0.03, mass=1.0),
                    joint=Revolute(axis=axis, point=hinge))
    system.add(PointForce("arm", point, f))
    system.finalize()
    for q in (0.0, 0.7, -2.1):
        x = hinge + rotation(axis, q) @ (point - hinge)
        np.testing.assert_allclose(system.point("arm", point).position([q]), x, atol=1e-12)
        expected = np.cross(x - hinge, f) @ (axis / np.linalg.norm(axis))
        np.testing.assert_allclose(system.generalized_forces([q], [0.0], 0.0), [expected], rtol=1e-12, atol=1e-12)


def test_generalized_force_enters_with_its_sign():
    system = RigidSystem()
    system.add_body(Body("arm", start=(0, 0, 0), axis=(0, 0, -1), radius=0.03, mass=1.0), joint=Revolute(axis=(0, 1, 0)))
    system.add(GeneralizedForce(lambda t: [2.0 * t - 1.0]))
    system.finalize()
    np.testing.assert_allclose(system.generalized_forces([0.3], [0.0], 1.5), [2.0])


def test_slider_under_gravity_accelerates_by_g_along_its_unit_axis():
    g, axis = np.array([0.0, 0.0, -9.81]), np.array([0.3, 0.1, -1.0])
    unit = axis / np.linalg.norm(axis)
    system = RigidSystem(gravity=g)
    system.add_body(Body("block", start=(0.1, 0.2, 0.0), axis=(0.0, 0.0, -0.1), radius=0.05, mass=2.0,
                         points={"corner": (0.15, 0.2, -0.05)}), joint=Prismatic(axis=axis))
    system.finalize()
    for q in (0.0, 0.4):
        np.testing.assert_allclose(system.accelerations([q], [0.7]), [g @ unit], rtol=1e-12)
        np.testing.assert_allclose(system.point("block", "corner").position([q]),
                                   np.array([0.15, 0.2, -0.05]) + q * unit, atol=1e-12)
