"""A form's parameters changed between evaluations or runs act on the compiled and the numpy path alike."""
import sys

import numpy as np
import pytest
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.compile.form_numbers import number_sources, read_numbers

STIFFNESS = 100.0
PARAMETERS = {"drag": 2.0}


@LinearForm
def spring(v, w):
    """A spring to the reference position, of the module's STIFFNESS (N/m²)."""
    return STIFFNESS * dot(w.x - w.X, v) * w.J


def drag_coefficient():
    """A helper of the user's that the form calls: its global is read through it."""
    return PARAMETERS["drag"]


@LinearForm
def drag(v, w):
    return drag_coefficient() * dot(w.xdot, v) * w.J


def _model(compiled, *terms):
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0), n_elements=4)], compiled=compiled)
    for name, form in terms:
        model.add_term(form, name=name)
    return model


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return 0.01 * rng.standard_normal(model.n_dofs), 0.1 * rng.standard_normal(model.n_dofs)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_changed_global_acts_on_the_next_evaluation(compiled, monkeypatch):
    model = _model(compiled, ("spring", spring))
    u, v = _state(model)
    z = np.zeros_like(u)
    before = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"])
    K_before = model.tangent_matrix(before).toarray()
    monkeypatch.setattr(sys.modules[__name__], "STIFFNESS", 300.0)
    after = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"])
    np.testing.assert_allclose(after.residual, 3.0 * before.residual, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(model.tangent_matrix(after).toarray(), 3.0 * K_before, rtol=1e-13, atol=1e-12)


def test_a_closure_variable_and_a_helpers_dict_entry(monkeypatch):
    def spring_of(k):
        box = [k]

        @LinearForm
        def form(v, w):
            return box[0] * dot(w.x - w.X, v) * w.J
        return form, box

    form, box = spring_of(50.0)
    models = [_model(c, ("spring", form), ("drag", drag)) for c in (True, False)]
    u, v = _state(models[0], seed=1)
    z = np.zeros_like(u)
    first = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0).residual for m in models]
    box[0] = 150.0
    monkeypatch.setitem(PARAMETERS, "drag", 7.0)
    second = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0).residual for m in models]
    # the change is the two terms' change: spring (k 50 → 150) and drag (2 → 7), on both paths
    reference = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0, parts=["spring", "drag"]).residual for m in models]
    box[0], PARAMETERS["drag"] = 50.0, 2.0
    old_terms = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0, parts=["spring", "drag"]).residual for m in models]
    for k in range(2):
        np.testing.assert_allclose(second[k] - first[k], reference[k] - old_terms[k], rtol=1e-12, atol=1e-12)
        assert np.abs(second[k] - first[k]).max() > 1e-3
    np.testing.assert_allclose(second[0], second[1], rtol=1e-12, atol=1e-12)


def test_a_second_run_takes_the_new_value_as_a_fresh_model_does(monkeypatch):
    def run(model):
        fiber = model.fibers[0]
        model.fix(fiber, "start")
        return sf.simulate(model, t_end=0.02, dt=0.01, progress=False).final_state.u

    model = _model(True, ("spring", spring))
    model.add_gravity()
    first = run(model)
    monkeypatch.setattr(sys.modules[__name__], "STIFFNESS", 1000.0)
    second = sf.simulate(model, t_end=0.02, dt=0.01, progress=False).final_state.u
    fresh = _model(True, ("spring", spring))
    fresh.add_gravity()
    np.testing.assert_allclose(second, run(fresh), rtol=1e-12, atol=1e-15)
    assert np.abs(second - first).max() > 1e-6


def test_sources_compare_by_value():
    nan_box, array = [float("nan")], np.arange(3.0)

    def form(v, w):
        return nan_box[0] * array[0] * np.sqrt(w.J) * v

    sources = number_sources([form])
    values = read_numbers(sources)
    assert len(sources) == 2  # the two closure cells; np (a module) and np.sqrt (a library's) are not sources
    assert read_numbers(sources) == values  # a nan equals itself
    array[1] = 5.0
    assert read_numbers(sources) != values


def test_an_attribute_is_not_seen():
    class Parameters:
        k = 1.0

    p = Parameters()

    def form(v, w):
        return p.k * v

    values = read_numbers(number_sources([form]))
    p.k = 2.0
    assert read_numbers(number_sources([form])) == values  # documented: held in an object, read at the trace
