"""User terms: explicit and complex-step tangents against finite differences."""
import warnings

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
def foundation(v, w):  # reads the displacement x − X (and its derivative): the reference X as well
    return 5e3 * (dot(w.x - w.X, v) + dot(d1(w.x) - d1(w.X), d1(v)) / w.J**2) * w.J


@LinearForm
def one_sided_foundation(v, w):  # x − X in a branch (np.maximum: compiled; complex step on the numpy path)
    return 5e3 * np.maximum(w.X[2] - w.x[2], 0.0) * (-v[2]) * w.J


@pytest.mark.parametrize("form", [foundation, one_sided_foundation])
@pytest.mark.parametrize("compiled", [False, True])
def test_a_term_that_reads_the_reference_configuration_has_its_tangent_on_both_paths(form, compiled):
    """w.X beside w.x in a term without a tangent: the complex step perturbs x and gives X the same axes (before,
    x − X did not broadcast on the numpy path); compiled, the tangent is derived."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law())], compiled=compiled)
    model.fix(model.fibers[0], "start")
    model.add_gravity()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the one-sided term cannot be compiled: it says so)
        model.add_term(form, name="foundation")
        state = model.initial_state()
        u = state.u.copy()
        u[2::6] = -0.01 * np.arange(u[2::6].size)  # the fiber below its reference: the one-sided term acts
        error = sf.check_tangent(model, sf.State(0.0, u, state.v), dt=0.01, parts=["foundation"], perturbation=0.05)
    assert error < 1e-6


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


@LinearForm
def stiffer_internal_force(v, w):  # the cable's internal force plus a linear spring in the stretch
    return w.area * (w.S + 1e5 * (w.lam - 1)) * dot(w.x_s, sf.forms.ds(v, w)) * w.J


def test_the_output_of_a_model_with_a_replaced_internal_force_says_whose_force_it_is():
    """fiber_fields and recovered_axial_force give the law's π r0² λ S: with internal_force replaced they warn,
    and the end force of the replaced form is the residual's (here larger than the law's)."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=sf.paper_law())
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (0.1, 0.0, 0.0))
    state = sf.solve_static(model, load_steps=1).state
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sf.fiber_fields(model, state, fiber)  # the library's own internal force: no warning
    model.replace_term("internal_force", stiffer_internal_force)
    state = sf.solve_static(model, load_steps=1).state
    with pytest.warns(UserWarning, match="internal_force is a replaced form"):
        law_force = sf.fiber_fields(model, state, fiber).force.max()
    with pytest.warns(UserWarning, match="internal_force is a replaced form"):
        sf.recovered_axial_force(model, state, fiber)
    zero = np.zeros_like(state.u)
    end_force = model.evaluate(state.u, zero, zero, 0.0, c_v=0.0, c_a=0.0).residual.reshape(-1, 6)[-1, 0]
    assert end_force == pytest.approx(law_force + np.pi * 0.05**2 * 1.1 * 1e5 * 0.1, rel=1e-6)


@pytest.mark.parametrize("name, message", [(3, "non-empty string"), ("", "non-empty string"),
                                           ("loads", r"names in use: \[.*'loads'")])
def test_a_term_s_name_is_checked_when_it_is_added(name, message):
    model = numpy_model(2)
    with pytest.raises(ValueError, match=message):
        model.add_term(bending, name=name)
    with pytest.raises(ValueError, match="non-empty string"):
        sf.Term(bending, None, 3)
