"""The compiled cable kernels (skfiber.cable_kernels) equal the forms of skfiber.forms."""
import numpy as np
import pytest

import skfiber as sf
from skfiber import cable_kernels, forms


def _model(*, compiled: bool) -> sf.Model:
    """Two laws (the gather/scatter path), a curved fiber, varying radius and γM."""
    law_a = sf.paper_law(sigma0=30.0, s_max=3e5, eta_muscle=40.0)
    law_b = sf.paper_law(sigma0=10.0, s_max=1e5, eta_muscle=10.0, eta_tendon=5.0)
    fibers = [
        sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=5, law=law_a, radius=lambda t: 0.02 + 0.01 * t,
                          muscle_fraction=lambda t: 16 * (1 - t) ** 2 * t**2, activation=lambda t: 0.3 + 0.1 * t),
        sf.Fiber.polyline([(0, 0, 0), (0.5, 0.2, 0), (1, 0, 0.3), (1.2, 0.1, 0.5)], n_elements=3, radius=0.03,
                          law=law_b, activation=0.2),
        sf.Fiber.straight((0, 1, 0), (0, 1, 1), n_elements=4, law=law_a),
    ]
    model = sf.Model(fibers, compiled=compiled)
    model.add_gravity()
    return model


@pytest.fixture
def state(rng):
    n = _model(compiled=False).n_dofs
    return 0.03 * rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)


def test_residual_and_tangent_equal_the_forms(state):
    u, v, a = state
    fast, forms_model = _model(compiled=True), _model(compiled=False)
    for c_v, c_a in [(0.0, 0.0), (50.0, 2500.0)]:
        e1 = fast.evaluate(u, v, a, 0.7, c_v=c_v, c_a=c_a)
        e2 = forms_model.evaluate(u, v, a, 0.7, c_v=c_v, c_a=c_a)
        scale = np.abs(e2.residual).max()
        assert np.abs(e1.residual - e2.residual).max() <= 1e-12 * scale
        K1, K2 = e1.element_matrices, e2.element_matrices
        assert np.abs(K1 - K2).max() <= 1e-12 * np.abs(K2).max()
        assert e1.min_stretch == pytest.approx(e2.min_stretch, rel=1e-14)
        assert e1.roundoff == pytest.approx(e2.roundoff, rel=1e-12)
        assert e1.reference_force == pytest.approx(e2.reference_force, rel=1e-12)


def test_kernels_equal_form_pieces(state):
    """Kinematics, force vector with its magnitude, and element matrices one by one."""
    u, v, _ = state
    model = _model(compiled=False)
    d = model.discretization
    asm = d.assembler
    w = model.coefficients(u, v, 0.4, c_v=13.0)
    jets = cable_kernels.gradient_jets(asm)
    x_s, xdot_s, lam, lamdot = cable_kernels.cable_kinematics(jets, d.reference_dofs + u, v, d.jacobian)
    assert np.allclose(np.moveaxis(x_s, 2, 0), w["x_s"], rtol=0, atol=1e-13)
    assert np.allclose(np.moveaxis(xdot_s, 2, 0), w["xdot_s"], rtol=0, atol=1e-12)
    assert np.allclose(lam, w["lam"], rtol=1e-14, atol=0)
    assert np.allclose(lamdot, w["lamdot"], rtol=0, atol=1e-12)
    F, M = cable_kernels.internal_force(jets, d.n_dofs, S=w["S"], area=d.area, dx=asm.dx, x_s=x_s)
    F_ref, M_ref = asm.linear_vector(forms.internal_force, w, magnitude=True)
    assert np.abs(F - F_ref).max() <= 1e-12 * np.abs(F_ref).max()
    assert np.abs(M - M_ref).max() <= 1e-12 * np.abs(M_ref).max()
    K = cable_kernels.internal_tangent(jets, S=w["S"], dS_dlam=w["dS_dlam"], dS_dlamdot=w["dS_dlamdot"], c_v=13.0,
                                       lam=lam, lamdot=lamdot, x_s=x_s, xdot_s=xdot_s, area=d.area, dx=asm.dx,
                                       J=d.jacobian)
    K_ref = asm.bilinear(forms.internal_tangent, w)
    assert np.abs(K - K_ref).max() <= 1e-12 * np.abs(K_ref).max()
    args = dict(S=w["S"], dS_dlam=w["dS_dlam"], dS_dlamdot=w["dS_dlamdot"], c_v=13.0, lam=lam, lamdot=lamdot,
                x_s=x_s, xdot_s=xdot_s, area=d.area, dx=asm.dx, J=d.jacobian)
    mass = model._mass_elements
    both = cable_kernels.internal_tangent(jets, **args, mass=mass, c_a=400.0)  # + c_a M in the same pass
    assert np.abs(both - 400.0 * mass - K).max() <= 1e-12 * np.abs(both).max()
    with pytest.raises(ValueError, match="mass must be"):
        cable_kernels.internal_tangent(jets, **args, mass=np.zeros((2, 12, 12)), c_a=1.0)


def test_compiled_tangent_against_finite_differences():
    """The kernel tangent (the default path) is the derivative of the kernel residual."""
    model = _model(compiled=True)
    assert sf.check_tangent(model, dt=0.01, parts=["cable"], perturbation=0.05) < 1e-6
    assert sf.check_tangent(model, parts=["cable"], perturbation=0.05) < 1e-6


def test_extra_terms_run_as_forms(rng):
    """With an extra term the cable is evaluated from the forms too (one w for all; the laws stay compiled)."""
    from skfem import LinearForm
    from skfem.helpers import dot

    drag = LinearForm(lambda v, w: 2.0 * dot(w.xdot, v) * w.J)
    fast, slow = _model(compiled=True), _model(compiled=False)
    for m in (fast, slow):
        m.add_term(drag, name="drag")
    u = 0.01 * rng.standard_normal(fast.n_dofs)
    v = rng.standard_normal(fast.n_dofs)
    e1 = fast.evaluate(u, v, v, 0.1, c_v=10.0, c_a=100.0)
    e2 = slow.evaluate(u, v, v, 0.1, c_v=10.0, c_a=100.0)
    assert np.abs(e1.residual - e2.residual).max() <= 1e-12 * np.abs(e2.residual).max()
    assert np.abs(e1.element_matrices - e2.element_matrices).max() <= 1e-12 * np.abs(e2.element_matrices).max()


def test_bad_compiled_option():
    with pytest.raises(TypeError, match="compiled must be True or False"):
        sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)], compiled="yes")


def test_gradient_jets_need_a_3d_vector_line_basis():
    from types import SimpleNamespace

    with pytest.raises(ValueError, match="3-component field on a line"):
        cable_kernels.gradient_jets(SimpleNamespace(ncomp=1, dim=1))
    with pytest.raises(ValueError, match="3-component field on a line"):
        cable_kernels.gradient_jets(SimpleNamespace(ncomp=3, dim=2))


def test_load_factor_scales_the_loads_on_both_paths(state):
    u, v, a = state
    fast, forms_model = _model(compiled=True), _model(compiled=False)
    e1 = fast.evaluate(u, v, a, 0.7, c_v=50.0, c_a=2500.0, load_factor=0.25)
    e2 = forms_model.evaluate(u, v, a, 0.7, c_v=50.0, c_a=2500.0, load_factor=0.25)
    e0 = fast.evaluate(u, v, a, 0.7, c_v=50.0, c_a=2500.0, load_factor=0.0)
    scale = np.abs(e2.residual).max()
    assert np.abs(e1.residual - e2.residual).max() <= 1e-12 * scale
    # the residual is affine in the load factor: R(0.25) = R(0) − 0.25 F_ext
    F_ext = fast.external_force(0.7)
    assert np.abs(e1.residual - (e0.residual - 0.25 * F_ext)).max() <= 1e-12 * scale
    assert e1.reference_force == pytest.approx(e2.reference_force, rel=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_non_finite_stress_names_the_fiber(compiled):
    """A law that is not finite at the state: FloatingPointError naming the fiber and the stretch range."""
    import sympy as sp

    lam = sf.materials.SYMBOLS["stretch"]
    law = sf.SymbolicLaw(1e4 * sp.sqrt(1.02 - lam), name="only up to 2 % stretch")
    fibers = [sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2),
              sf.Fiber.straight((0, 1, 0), (1, 1, 0), n_elements=2, law=law)]
    model = sf.Model(fibers, compiled=compiled)
    d = model.discretization
    u = d.reference_dofs * np.r_[0.05, 0, 0, 0.05, 0, 0][np.arange(d.n_dofs) % 6]  # 5 % stretch along x
    with pytest.raises(FloatingPointError, match=r"fiber 1 .*only up to 2 % stretch.*λ ∈ \[1\.05"):
        model.evaluate(u, u * 0, u * 0, 0.0, c_v=0.0, c_a=0.0)
