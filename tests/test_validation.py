"""Bad input raises ValueError/TypeError naming the parameter and the fix."""
import numpy as np
import pytest

import skfiber as sf


def fiber(**kw):
    kw.setdefault("n_elements", 4)
    return sf.Fiber.straight((0, 0, 0), (1, 0, 0), **kw)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(radius=0.0), "radius"),
        (dict(radius=-0.01), "radius"),
        (dict(radius=lambda th: 0.05 - 0.1 * th), "radius"),
        (dict(radius=np.nan), "radius"),
        (dict(muscle_fraction=1.5), "muscle_fraction"),
        (dict(muscle_fraction=lambda th: th - 0.5), "muscle_fraction"),
        (dict(density=0.0), "density"),
        (dict(density=np.inf), "density"),
        (dict(n_elements=0), "n_elements"),
        (dict(activation=np.nan), "activation"),
    ],
)
def test_bad_fiber_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fiber(**kwargs)


def test_bad_types():
    with pytest.raises(TypeError, match="n_elements"):
        fiber(n_elements=2.5)
    with pytest.raises(TypeError, match="law"):
        fiber(law="neo-Hooke")
    with pytest.raises(TypeError, match="curve"):
        sf.Fiber(curve=[0, 1], n_elements=3)
    with pytest.raises(TypeError, match="Fiber"):
        sf.Model(["not a fiber"])


def test_zero_length_fiber():
    with pytest.raises(ValueError, match="zero-length"):
        sf.Fiber.straight((1, 2, 3), (1, 2, 3), n_elements=2)
    with pytest.raises(ValueError, match="zero length"):
        sf.Fiber(curve=lambda th: np.zeros((3, np.size(th))), n_elements=2)


@pytest.mark.parametrize(
    "points, match",
    [
        ([(0, 0, 0)], "shape"),
        ([(0, 0), (1, 1)], "shape"),
        ([(0, 0, 0), (0, 0, 0), (1, 0, 0)], "coincide"),
        ([(0, 0, 0), (np.nan, 0, 0)], "non-finite"),
    ],
)
def test_bad_polyline(points, match):
    with pytest.raises(ValueError, match=match):
        sf.Fiber.polyline(points, n_elements=3)


def test_bad_end_points():
    with pytest.raises(ValueError, match="start"):
        sf.Fiber.straight((0, 0), (1, 0, 0), n_elements=2)
    with pytest.raises(ValueError, match="end"):
        sf.Fiber.straight((0, 0, 0), (np.inf, 0, 0), n_elements=2)


def test_curve_of_wrong_shape():
    with pytest.raises(ValueError, match=r"\(3, n\)"):
        sf.Fiber(curve=lambda th: np.vstack([th, th]), n_elements=2)


def test_boundary_conditions_on_unknown_fiber_or_end():
    f = fiber()
    other = fiber()
    model = sf.Model([f])
    with pytest.raises(ValueError, match="not part of the model"):
        model.fix(other, "start")
    with pytest.raises(ValueError, match="out of range"):
        model.fix(3, "start")
    with pytest.raises(ValueError, match="unknown fiber name"):
        model.fix("biceps", "start")
    with pytest.raises(ValueError, match="'start'.*'end'"):
        model.fix(f, "middle")
    model.fix(f, "start")
    with pytest.raises(ValueError, match="already"):
        model.fix(f, 0)
    with pytest.raises(ValueError, match="3 numbers"):
        model.prescribe(f, "end", lambda t: (0.0, 1.0))
    with pytest.raises(TypeError, match="callable"):
        model.prescribe(f, "end", (0.0, 0.0, 1.0))


def test_bad_loads():
    model = sf.Model([fiber()])
    with pytest.raises(ValueError, match="shape"):
        model.add_body_force((0.0, 1.0))
    with pytest.raises(ValueError, match="finite"):
        model.add_line_load((0.0, np.nan, 1.0))
    with pytest.raises(ValueError, match="3 components"):
        model.add_gravity((0, -9.81))


def test_bad_time_arguments():
    f = fiber()
    model = sf.Model([f])
    model.fix(f, "start"); model.fix(f, "end")
    with pytest.raises(ValueError, match="dt"):
        sf.simulate(model, t_end=1.0, dt=0.0, progress=False)
    with pytest.raises(ValueError, match="dt"):
        sf.simulate(model, t_end=1.0, dt=-0.1, progress=False)
    with pytest.raises(ValueError, match="t_end"):
        sf.simulate(model, t_end=-1.0, dt=0.1, progress=False)
    with pytest.raises(ValueError, match="t_end"):
        sf.simulate(model, t_end=np.nan, dt=0.1, progress=False)
    with pytest.raises(ValueError, match="state has 3 fiber DOFs, the model 30: a state of another model"):
        sf.simulate(model, t_end=1.0, dt=0.1, state=sf.State(0.0, np.zeros(3), np.zeros(3)), progress=False)
    with pytest.raises(ValueError, match="load_steps"):
        sf.solve_static(model, load_steps=0)


def test_bad_newton_options():
    with pytest.raises(ValueError, match="rtol"):
        sf.NewtonOptions(rtol=0.0)
    with pytest.raises(ValueError, match="max_iterations"):
        sf.NewtonOptions(max_iterations=0)


def test_bad_fields_request():
    model = sf.Model([fiber()])
    with pytest.raises(ValueError, match="points_per_element"):
        sf.fiber_fields(model, model.initial_state(), 0, points_per_element=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sf.fiber_fields(model, model.initial_state(), 0, theta=[1.5])


def test_duplicate_term_name_and_bad_term():
    model = sf.Model([fiber()])
    from skfem import LinearForm
    from skfem.helpers import dot

    model.add_term(LinearForm(lambda v, w: dot(w.x, v)), name="spring")
    with pytest.raises(ValueError, match="spring"):
        model.add_term(LinearForm(lambda v, w: dot(w.x, v)), name="spring")
    with pytest.raises(TypeError, match="residual"):
        sf.Term(residual=3.0)
    with pytest.raises(ValueError, match="unknown parts"):
        model.evaluate(np.zeros(model.n_dofs), np.zeros(model.n_dofs), np.zeros(model.n_dofs), 0.0, c_v=0, c_a=0, parts=["springs"])
