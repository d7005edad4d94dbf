"""User terms: explicit and complex-step tangents against finite differences."""
import numpy as np
import pytest
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.terms import d1, d2

from conftest import straight_model

EI, C, K = 2e-3, 5.0, 1e3


@LinearForm
def bending(v, w):
    return EI * dot(d2(w.x), d2(v)) / w.J**3


@BilinearForm
def bending_tangent(u, v, w):
    return EI * dot(d2(u), d2(v)) / w.J**3


@LinearForm
def drag(v, w):
    return C * dot(w.xdot, v) * w.J


@BilinearForm
def drag_tangent(u, v, w):
    return C * w.c_v * dot(u, v) * w.J


@LinearForm
def stiffening_spring(v, w):  # nonlinear in x, uses first derivatives
    s = dot(d1(w.x), d1(w.x))
    return K * s * dot(d1(w.x), d1(v)) / w.J


@BilinearForm
def stiffening_spring_tangent(u, v, w):
    s = dot(d1(w.x), d1(w.x))
    return K * (s * dot(d1(u), d1(v)) + 2 * dot(d1(w.x), d1(u)) * dot(d1(w.x), d1(v))) / w.J


TERMS = {"bending": (bending, bending_tangent), "drag": (drag, drag_tangent), "spring": (stiffening_spring, stiffening_spring_tangent)}


def numpy_model(n_elements: int) -> sf.Model:
    """A straight fiber's model on the numpy path (compiled=False): a term without a tangent gets the
    complex-step tangent of :mod:`skfiber.terms` (the compiled path derives it symbolically instead)."""
    return sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n_elements)], compiled=False)


@pytest.mark.parametrize("name", sorted(TERMS))
@pytest.mark.parametrize("tangent_of", ["explicit", "complex step", "compiled"])
def test_term_tangent_against_fd(name, tangent_of):
    residual, tangent = TERMS[name]
    model = numpy_model(6) if tangent_of == "complex step" else straight_model(6)[0]
    model.add_term(residual, tangent if tangent_of == "explicit" else None, name=name)
    assert sf.check_tangent(model, dt=0.01, parts=[name], perturbation=0.05) < 1e-6


@LinearForm
def stretch_spring(v, w):  # reads λ (derived from x)
    return 1e2 * w.lam**2 * dot(w.x, v) * w.J


@LinearForm
def stress_along(v, w):  # reads the fiber's stress S and x_s
    return 1e-3 * w.S * dot(w.x_s, d1(v)) * w.J


@LinearForm
def stretch_rate_drag(v, w):  # reads λ̇ and ẋ_s
    return 50.0 * w.lamdot * dot(w.xdot_s, d1(v)) * w.J


@LinearForm
def added_mass(v, w):  # reads ẍ
    return 3.0 * dot(w.xddot, v) * w.J


DERIVED = {"lam": stretch_spring, "S": stress_along, "lamdot": stretch_rate_drag, "xddot": added_mass}


@pytest.mark.parametrize("compiled", [False, True])
def test_derived_tangent_of_a_term_that_reads_the_kinematics(compiled):
    """A term without a tangent that reads λ, λ̇, S or ẍ gets their dependence on u in its tangent on
    both paths (the complex step perturbs them with x; before, it kept them fixed and scored 1)."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(), activation=0.3)
    model = sf.Model([fiber], compiled=compiled)
    for field, form in DERIVED.items():
        model.add_term(form, name=field)
    for field in DERIVED:
        assert sf.check_tangent(model, dt=0.01, parts=[field], perturbation=0.05) < 1e-6, field


@LinearForm
def stiffness_weighted(v, w):  # reads ∂S/∂λ
    return 1e-5 * w.dS_dlam * dot(w.x_s, d1(v)) * w.J


def test_a_term_reading_the_laws_partials_is_derived_compiled_and_refused_on_the_numpy_path():
    """∂S/∂λ in w: the compiler derives its dependence on u; the complex step cannot (it needs the law's
    second derivatives), so the numpy path refuses with what to do instead of a wrong tangent."""
    def model(compiled):
        fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(), activation=0.3)
        m = sf.Model([fiber], compiled=compiled)
        m.add_term(stiffness_weighted, name="k")
        return m

    assert sf.check_tangent(model(True), dt=0.01, parts=["k"], perturbation=0.05) < 1e-6
    with pytest.raises(ValueError, match=r"reads ∂S/∂λ or ∂S/∂λ̇ .* give the term its tangent form"):
        sf.check_tangent(model(False), dt=0.01, parts=["k"], perturbation=0.05)


@pytest.mark.parametrize("name", sorted(TERMS))
def test_complex_step_equals_explicit_tangent(name, rng):
    residual, tangent = TERMS[name]
    model = numpy_model(5)
    model.add_term(residual, tangent, name="explicit")
    model.add_term(residual, None, name="auto")
    u = 0.05 * rng.standard_normal(model.n_dofs)
    v = rng.standard_normal(model.n_dofs)
    Ks = [model.evaluate(u, v, v, 0.0, c_v=30.0, c_a=0.0, parts=[p]).element_matrices for p in ("explicit", "auto")]
    assert np.max(np.abs(Ks[0] - Ks[1])) <= 1e-10 * np.max(np.abs(Ks[0]))
