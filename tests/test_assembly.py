"""The batched form evaluation equals scikit-fem's own assembly."""
import numpy as np
import pytest
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber import forms
from skfiber.assembly import InvalidForm
from skfiber.terms import d2

from conftest import straight_model


@pytest.fixture
def model_and_w(rng):
    fibers = [
        sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=5, muscle_fraction=lambda t: 16 * (1 - t) ** 2 * t**2, activation=0.4),
        sf.Fiber.polyline([(0, 0, 0), (0.5, 0.2, 0), (1, 0, 0.3), (1.2, 0.1, 0.5)], n_elements=3, radius=0.03),
    ]
    model = sf.Model(fibers)
    u = 0.05 * rng.standard_normal(model.n_dofs)
    v = rng.standard_normal(model.n_dofs)
    w = model.coefficients(u, v, 0.3, c_v=7.0)
    return model, w


def _skfem_params(w):
    keys = ["J", "area", "rho", "x_s", "xdot_s", "lam", "lamdot", "S", "dS_dlam", "dS_dlamdot", "c_v"]
    return {k: w[k] for k in keys}


@BilinearForm
def stress_stiffness(u, v, w):
    """A bilinear form with arc-length derivatives and pointwise coefficients (S, ∂S/∂λ, x_s, λ)."""
    du_s, xi_s = forms.ds(u, w), forms.ds(v, w)
    return w.area * (w.S * dot(du_s, xi_s) + w.dS_dlam * dot(w.x_s, du_s) * dot(w.x_s, xi_s) / w.lam) * w.J


@pytest.mark.parametrize("form", [stress_stiffness, forms.mass])
def test_bilinear_equals_skfem(model_and_w, form):
    model, w = model_and_w
    basis = model.discretization.basis
    asm = model.discretization.assembler
    reference = form.assemble(basis, **_skfem_params(w)).toarray()
    ours = asm.to_csr(asm.bilinear(form, w)).toarray()
    assert np.max(np.abs(ours - reference)) <= 1e-12 * np.max(np.abs(reference))


def test_linear_equals_skfem(model_and_w):
    model, w = model_and_w
    basis = model.discretization.basis
    asm = model.discretization.assembler
    reference = forms.internal_force.assemble(basis, **_skfem_params(w))
    ours = asm.vector(asm.linear(forms.internal_force, w))
    assert np.max(np.abs(ours - reference)) <= 1e-12 * np.max(np.abs(reference))
    q = np.random.default_rng(0).standard_normal((3,) + w["J"].shape)
    ref_q = forms.line_load.assemble(basis, q=q, J=w["J"])
    ours_q = asm.vector(asm.linear(forms.line_load, asm.parameters(q=q, J=w["J"])))
    assert np.max(np.abs(ours_q - ref_q)) <= 1e-12 * np.max(np.abs(ref_q))


def test_second_derivative_forms_equal_skfem(model_and_w, rng):
    """Forms using hessians (bending) take the full jets."""
    model, w = model_and_w
    basis = model.discretization.basis
    asm = model.discretization.assembler

    @BilinearForm
    def bending(u, v, w):
        return dot(d2(u), d2(v)) / w.J**3 + 0.5 * dot(u, v)

    @LinearForm
    def bending_residual(v, w):
        return dot(d2(w.x), d2(v)) / w.J**3

    ref = bending.assemble(basis, J=w["J"]).toarray()
    ours = asm.to_csr(asm.bilinear(bending, w)).toarray()
    assert np.max(np.abs(ours - ref)) <= 1e-11 * np.max(np.abs(ref))
    x = model.discretization.reference_dofs + 0.01 * rng.standard_normal(model.n_dofs)
    ref_r = bending_residual.assemble(basis, x=x, J=w["J"])
    ours_r = asm.vector(asm.linear(bending_residual, asm.parameters(x=x, J=w["J"])))
    assert np.max(np.abs(ours_r - ref_r)) <= 1e-11 * np.max(np.abs(ref_r))


def test_interpolation_equals_skfem(model_and_w, rng):
    model, _ = model_and_w
    basis = model.discretization.basis
    y = rng.standard_normal(model.n_dofs)
    a = basis.interpolate(y)
    b = model.discretization.assembler.interpolate(y)
    assert np.allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-13)
    assert np.allclose(a.grad, b.grad, rtol=0, atol=1e-12)
    assert np.allclose(a.hess, b.hess, rtol=0, atol=1e-10)


def test_tangent_is_banded():
    model, _ = straight_model(6, fibers=3)
    assert model.discretization.assembler.bandwidth == 11


@pytest.mark.parametrize("form, mistake", [
    (LinearForm(lambda v, w: w.J * v), r"returns \(3,\) values per point, not one number"),
    (LinearForm(lambda v, w: w.J * (1.0 + v[0])), "residual form is not linear in the test function"),
    (LinearForm(lambda v, w: w.J), "residual form is not linear in the test function"),
])
def test_a_linear_form_that_is_not_one_linear_number_is_refused(model_and_w, form, mistake):
    """skfem's own assembly runs these forms (a constant part is integrated against every basis function as
    if it were one); the batched evaluation refuses them, naming the fix."""
    model, w = model_and_w
    with pytest.raises(InvalidForm, match=mistake):
        model.discretization.assembler.linear(form, w)


@pytest.mark.parametrize("form, mistake", [
    (BilinearForm(lambda u, v, w: dot(u, v) * w.J + v[0]), "tangent form is not linear in the trial function"),
    (BilinearForm(lambda u, v, w: dot(u, v) * w.J + u[0]), "tangent form is not linear in the test function"),
    (BilinearForm(lambda u, v, w: u * v), r"returns \(3,\) values per point"),
    # no part without either field, but quadratic in one, or a branch on its sign: the degree check
    (BilinearForm(lambda u, v, w: dot(u, u) * v[0] * w.J), "tangent form is not linear in the trial function"),
    (BilinearForm(lambda u, v, w: u[0] * dot(v, v) * w.J), "tangent form is not linear in the test function"),
    (BilinearForm(lambda u, v, w: np.maximum(dot(u, v), 0.0) * w.J), "tangent form is not linear in the test"),
])
def test_a_bilinear_form_that_is_not_bilinear_is_refused(model_and_w, form, mistake):
    model, w = model_and_w
    with pytest.raises(InvalidForm, match=mistake):
        model.discretization.assembler.bilinear(form, w)


def test_a_part_without_the_test_function_is_found_where_it_is_finite(model_and_w):
    """The check looks at the finite values only: a NaN state is the residual's own report, not the form's."""
    model, w = model_and_w
    asm = model.discretization.assembler
    w_nan = type(w)(w)
    w_nan["S"] = np.where(np.arange(w["S"].size).reshape(w["S"].shape) == 0, np.nan, w["S"])
    r = asm.linear(forms.internal_force, w_nan)
    assert np.isnan(r[0]).any() and np.isfinite(r[1:]).all()


def test_a_form_whose_coefficients_vanish_at_first_is_checked_when_they_do_not(model_and_w):
    """The degree check tests nothing where every value is 0 (an activation still 0 at the first assembly):
    the form is checked again at its next call, and refused there if it is not bilinear."""
    model, w = model_and_w
    asm = model.discretization.assembler
    k = [0.0]
    form = BilinearForm(lambda u, v, w: k[0] * dot(u, u) * v[0] * w.J)
    asm.bilinear(form, w)   # all zero: nothing to check yet
    k[0] = 1.0
    with pytest.raises(InvalidForm, match="tangent form is not linear in the trial function"):
        asm.bilinear(form, w)


def test_an_elementwise_product_with_v_compiles_and_is_named_on_numpys_path():
    """(a * v).sum(axis=0) is dot(a, v) for scikit-fem and for the compiler; numpy's batched path puts v's jets
    on axes of their own, where it cannot broadcast: the error says so and gives the form that runs."""
    elementwise = LinearForm(lambda v, w: 1e3 * ((w.x - w.X) * v).sum(axis=0) * w.J)
    with_dot = LinearForm(lambda v, w: 1e3 * dot(w.x - w.X, v) * w.J)
    residuals = []
    for form in (elementwise, with_dot):
        model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0), n_elements=4)])
        model.add_term(form, name="spring")
        u = 0.01 * np.random.default_rng(4).standard_normal(model.n_dofs)
        z = np.zeros_like(u)
        residuals.append(model.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual)
    np.testing.assert_allclose(residuals[0], residuals[1], rtol=1e-13, atol=1e-13)
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0), n_elements=4)], compiled=False)
    model.add_term(elementwise, name="spring")
    z = np.zeros(model.n_dofs)
    with pytest.raises(ValueError, match=r"could not be broadcast.*write it as dot\(a, v\)"):
        model.evaluate(z, z, z, 0.0, c_v=0.0, c_a=0.0)
