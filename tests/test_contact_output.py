"""The contact line force on the fibers as output: CylinderContact.line_force and the VTK field contact_force."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.demos import upper_limb
from skfiber.io import CONTACT_FIELDS, FIBER_FIELDS, fiber_mesh

LAW = PenaltyLaw(stiffness=500.0, gamma=4.0)


def pressed_fiber(n_elements=8):
    """A straight 2 m fiber along x over a finite cylinder along y that reaches past one of its ends."""
    law = sf.passive_kelvin_voigt(mu_muscle=10, mu_tendon=10, eta_muscle=0, eta_tendon=0)
    fiber = sf.Fiber.straight((-1, 0, 0), (1, 0, 0), n_elements=n_elements, radius=0.05, law=law)
    model = sf.Model([fiber])
    return model, fiber


def kernel_line_force(cyl, gaps):
    """F(g) ν at the contact points, from the compiled narrow phase (gaps)."""
    F, _ = cyl.law.force(gaps.gap)
    return F[..., None] * gaps.normal


@pytest.mark.parametrize("length", [None, 0.15])
def test_line_force_equals_the_kernel_at_the_contact_points(length, rng):
    model, _ = pressed_fiber(32)
    # axis along y through (0.1, −0.2, −0.23): the finite one (y ∈ [−0.2, −0.05]) ends before the fiber (y = 0),
    # which lies on its capsule cap
    cyl = CylinderContact(point=(0.1, -0.2, -0.23), axis=(0, 1, 0), radius=0.2, law=LAW, length=length)
    u = 0.003 * rng.standard_normal(model.n_dofs)
    gaps = cyl.gaps(model, u, 0.0)
    expected = kernel_line_force(cyl, gaps)
    assert (np.abs(expected).sum(axis=-1) > 0).sum() >= 10          # points in touch, and points not
    assert (np.abs(expected).sum(axis=-1) == 0).sum() >= 5
    got = cyl.line_force(gaps.x.reshape(-1, 3), gaps.radius.ravel())
    np.testing.assert_allclose(got, expected.reshape(-1, 3), rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_line_force_in_closed_form_and_bad_input():
    cyl = CylinderContact(point=(0, 0, 0), axis=(0, 0, 2), radius=0.1, law=PenaltyLaw(stiffness=100.0, gamma=4.0))
    # d = 0.18 from the axis with r = 0.1: g = 0.18/0.2 − 1 = −0.1, F = 100 · 0.1 / 0.6, along −y
    f = cyl.line_force([[0.0, -0.18, 3.0], [0.0, 0.5, 0.0], [0.0, 0.1, 0.0]], [0.1, 0.1, 0.1])
    np.testing.assert_allclose(f[0], [0.0, -100 * 0.1 / 0.6, 0.0], rtol=1e-14)
    assert not f[1].any()                     # out of reach
    # 1 + γ g = 1 + 4 (0.1/0.2 − 1) < 0, out of the law's range: the force capped at its value at 1 + γ g = 1e-3,
    # κ (1 − m)/(γ m) = 100 · 0.999 / 0.004, pointing away from the axis (finite: no NaN in the VTK field)
    np.testing.assert_allclose(f[2], [0.0, 100 * 0.999 / 0.004, 0.0], rtol=1e-12)
    g = np.linspace(-0.3, 0.1, 41)              # the cap is continuous and keeps the force monotone in the gap
    near = cyl.line_force(np.column_stack([np.zeros_like(g), 0.2 * (1 + g), np.zeros_like(g)]), np.full(g.size, 0.1))
    assert np.isfinite(near).all() and np.all(np.diff(near[:, 1]) <= 1e-9 * f[2][1])
    np.testing.assert_allclose(near[:, 1].max(), f[2][1], rtol=1e-12)
    assert np.array_equal(cyl.line_force([[0.0, 0.0, 1.0]], [0.1]), [[0.0, 0.0, 0.0]])   # on the axis: 0
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        cyl.line_force([0.0, 0.0, 0.0], [0.1])
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        cyl.line_force([[0.0, 0.0, 0.0]], [0.1, 0.2])


def test_line_force_of_a_body_cylinder_moves_with_q():
    """The cylinder of the second link of the two-link model (tests/conftest.py), at two configurations q."""
    from conftest import two_link_model

    model = two_link_model()
    cyl = model.contacts[0]
    state = model.initial_state()
    q0, q1 = state.q, state.q + [0.0, 0.05]
    for q in (q0, q1):
        model.set_coordinates(q)
        gaps = cyl.gaps(model, state.u, 0.0)
        expected = kernel_line_force(cyl, gaps)
        assert np.abs(expected).max() > 0
        got = cyl.line_force(gaps.x.reshape(-1, 3), gaps.radius.ravel(), t=0.0, q=q)
        np.testing.assert_allclose(got, expected.reshape(-1, 3), rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    # the same points with the other pose of the body: another force
    assert not np.allclose(cyl.line_force(gaps.x.reshape(-1, 3), gaps.radius.ravel(), q=q0), got)
    with pytest.raises(ValueError, match="give the rigid coordinates q"):
        cyl.line_force(gaps.x.reshape(-1, 3), gaps.radius.ravel())
    with pytest.raises(ValueError, match="q must have 2 entries"):
        cyl.line_force(gaps.x.reshape(-1, 3), gaps.radius.ravel(), q=[0.0])


def test_vtk_field_integrates_to_the_contact_force():
    """The upper limb at rest, the triceps lying on the elbow cylinder: ∫ contact_force ds over the fibers
    (trapezoid on the VTK samples) = −(force on the cylinder) of the solver's contact quadrature
    (CylinderContact.resultant)."""
    model = upper_limb.build_model(8)
    state = model.initial_state()
    cyl = model.contacts[0]
    per_element = 64
    mesh = fiber_mesh(model, state, points_per_element=per_element)
    assert set(mesh.point_data) == set(FIBER_FIELDS) | set(CONTACT_FIELDS)
    f = mesh.point_data["contact_force"]
    fiber_id = mesh.point_data["fiber_id"]
    d = model.discretization
    total = np.zeros(3)
    touched = []
    for k, fiber in enumerate(d.fibers):
        theta = mesh.point_data["theta"][fiber_id == k]
        a1 = d.evaluate(d.reference_dofs + state.u, k, theta, 1)        # ds = |a1| dθ
        total += np.trapezoid(f[fiber_id == k] * np.linalg.norm(a1, axis=0)[:, None], theta, axis=0)
        touched.append(bool(np.abs(f[fiber_id == k]).max() > 0))
    assert touched == [cyl.acts_on(model, k) and "triceps" in fiber.name for k, fiber in enumerate(d.fibers)]
    model.set_coordinates(state.q)
    force, _ = cyl.resultant(model, state.u, state.t)
    assert np.linalg.norm(force) > 1.0
    # measured: 6.2e-4 relative with 64 to 256 samples per element, the 5-point Gauss rule's own error
    # on the contact integral (its integrand has a kink where contact starts) at 8 elements per fiber
    np.testing.assert_allclose(total, -force, rtol=2e-3, atol=2e-3 * np.linalg.norm(force))


def test_models_without_cylinders_write_no_contact_field():
    model, _ = pressed_fiber(4)
    mesh = fiber_mesh(model, model.initial_state())
    assert set(mesh.point_data) == set(FIBER_FIELDS)
    with pytest.raises(ValueError, match="clashes with a built-in field"):
        cyl = CylinderContact(point=(0, 0, -5), axis=(0, 1, 0), radius=0.2, law=LAW)
        model.add_contact(cyl)
        fiber_mesh(model, model.initial_state(), extra_fields=lambda m, s, k, th: {"contact_force": np.zeros(th.size)})
