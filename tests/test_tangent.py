"""Finite-difference checks of every tangent block."""
import numpy as np
import pytest
import sympy as sp
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber import materials

from conftest import straight_model

GAMMA = lambda th: 16 * (1 - th) ** 2 * th**2  # noqa: E731

LAWS = {
    "prestress": materials.prestress(30.0),
    "passive": materials.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e6, eta_muscle=1e4, eta_tendon=2e4),
    "active": materials.active_stress(3e5, lam_opt=1.3, delta_w=0.3, nu=4),
    "paper": materials.paper_law(),
    "custom": sf.law_from_function(lambda lam, lamdot, theta, t: 1e3 * sp.exp(lam - 1) * (1 + theta) + 5 * lamdot * lam),
}


@pytest.mark.parametrize("name", sorted(LAWS))
def test_law_partials_against_fd(name):
    assert sf.check_law_derivatives(LAWS[name]) < 1e-6


@pytest.mark.parametrize("name", sorted(LAWS))
@pytest.mark.parametrize("dt", [None, 0.01])
def test_cable_tangent_against_fd(name, dt):
    """Elastic, viscous (dt given: c_v = 1/Δt, v ≠ 0) and active (α > 0) terms."""
    model, _ = straight_model(6, law=LAWS[name], muscle_fraction=GAMMA, activation=0.7)
    err = sf.check_tangent(model, dt=dt, parts=["cable"], perturbation=0.05)
    assert err < 1e-6


def test_curved_multi_fiber_tangent():
    law = materials.paper_law()
    fibers = [
        sf.Fiber.polyline([(0, 0, 0), (0.4, 0.3, 0.1), (1, 0, 0.2), (1.3, 0.2, 0.2)], n_elements=5, law=law, activation=0.5, muscle_fraction=GAMMA),
        sf.Fiber(curve=lambda th: np.array([np.cos(th), np.sin(th), th]), n_elements=4, law=law, radius=lambda th: 0.02 + 0.01 * th),
    ]
    model = sf.Model(fibers)
    assert sf.check_tangent(model, dt=0.003, perturbation=0.05) < 1e-6


def test_inertia_tangent_against_fd():
    model, _ = straight_model(5)
    assert sf.check_tangent(model, dt=0.02, parts=["inertia"]) < 1e-6


def test_full_tangent_with_loads_and_bcs():
    model, (fiber,) = straight_model(7, muscle_fraction=GAMMA, activation=0.2)
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (0.1 * t, 0.0, 0.0))
    model.add_gravity()
    model.add_line_load(lambda th, t: np.array([0 * th, np.sin(th) + 0 * t, 0 * th]))
    assert sf.check_tangent(model, dt=0.01, perturbation=0.05) < 1e-6


@LinearForm
def cubic_spring(v, w):
    return 1e3 * dot(w.x, w.x) * dot(w.x, v) * w.J


@BilinearForm
def wrong_spring_tangent(u, v, w):  # misses the 2 (x·u) x·v part
    return 1e3 * dot(w.x, w.x) * dot(u, v) * w.J


@BilinearForm
def no_tangent(u, v, w):  # a tangent left out
    return 0.0 * dot(u, v) * w.J


@pytest.mark.parametrize("tangent, low, high", [(wrong_spring_tangent, 1e-3, 1.0), (no_tangent, 1 - 1e-9, 1 + 1e-9)],
                         ids=["wrong", "missing"])
def test_check_tangent_detects_a_wrong_or_missing_tangent(tangent, low, high):
    """The checker itself can fail: a wrong tangent is caught, and a missing one (zero) scores 1, not 0
    (the finite differences are the scale)."""
    model, _ = straight_model(4)
    model.add_term(cubic_spring, tangent, name="spring")
    assert low < sf.check_tangent(model, parts=["spring"]) <= high


@LinearForm
def late_spring(v, w):  # acts from t = 0.5 s on
    return 1e3 * (w.t > 0.5) * dot(w.x, w.x) * dot(w.x, v) * w.J


@BilinearForm
def wrong_late_spring_tangent(u, v, w):  # misses the 2 (x·u) x·v part
    return 1e3 * (w.t > 0.5) * dot(w.x, w.x) * dot(u, v) * w.J


def test_check_tangent_at_a_time_and_where_the_parts_do_nothing():
    """``t=`` puts the default state where a term acts: before, its wrong tangent went unseen at t = 0, where
    the check says, with a warning, that it checked nothing; a state and a time together are refused."""
    model, _ = straight_model(4)
    model.add_term(late_spring, wrong_late_spring_tangent, name="spring")
    with pytest.warns(UserWarning, match="do not depend on u at this state"):
        assert sf.check_tangent(model, parts=["spring"]) == 0.0
    assert sf.check_tangent(model, parts=["spring"], t=1.0) > 1e-3
    with pytest.raises(ValueError, match="a given state has its own"):
        sf.check_tangent(model, model.initial_state(), t=1.0)


def test_fibers_with_different_laws_and_sizes():
    """Each fiber is evaluated with its own law (grouped by law object)."""
    f1 = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3, law=LAWS["paper"], activation=0.4, muscle_fraction=GAMMA)
    f2 = sf.Fiber.straight((0, 1, 0), (2, 1, 0), n_elements=5, law=LAWS["custom"])
    f3 = sf.Fiber.straight((0, 2, 0), (1, 2, 1), n_elements=2, law=LAWS["paper"], activation=0.9)
    model = sf.Model([f1, f2, f3])
    assert len(model.discretization.law_groups) == 2
    assert sf.check_tangent(model, dt=0.01, perturbation=0.05) < 1e-6
    # stress of each fiber equals its own law at the same stretch
    model.fix(f2, "start")
    state = model.initial_state()
    state.u[model.discretization.fiber_dofs[1].nodes * 6] = 0.1 * model.discretization.node_theta[model.discretization.fiber_dofs[1].nodes]
    fields = sf.fiber_fields(model, state, f2)
    from skfiber.materials import MaterialPoint
    expected = LAWS["custom"](MaterialPoint(fields.stretch, 0 * fields.stretch, theta=fields.theta, t=0.0, muscle_fraction=1.0, activation=0.0)).stress
    np.testing.assert_allclose(fields.stress, expected, rtol=1e-12)
    w = model.coefficients(state.u, state.v, 0.0, c_v=0.0)
    fd = model.discretization.fiber_dofs[1]
    lam_q = w["lam"][fd.elements]
    expected_q = LAWS["custom"](MaterialPoint(lam_q, 0 * lam_q, theta=model.discretization.theta[fd.elements], t=0.0, muscle_fraction=1.0, activation=0.0)).stress
    np.testing.assert_allclose(w["S"][fd.elements], expected_q, rtol=1e-12)


def _nan_rate_law(point):
    """A law whose ∂S/∂λ̇ is NaN (a broken derivative)."""
    lam = np.asarray(point.stretch, float)
    return materials.StressResponse(5e4 * (lam - 1), 5e4 * np.ones_like(lam), np.full_like(lam, np.nan))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the numpy fallback, and the NaN's own)
def test_checks_do_not_pass_a_nan():
    """A NaN in a law's derivative, a tangent form or the differences cannot pass the checks (max() of Python
    drops a NaN that comes second)."""
    assert sf.check_law_derivatives(_nan_rate_law) == np.inf
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.02, law=_nan_rate_law)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
    with pytest.warns(UserWarning, match=r"check_tangent \(the model\): the tangent holds a NaN or an infinity"):
        assert sf.check_tangent(model, dt=0.01) == np.inf

    @LinearForm
    def drag(v, w):
        return 2.0 * dot(w.xdot, v) * w.J

    @BilinearForm
    def overflowing(u, v, w):
        return 1e300 * 1e300 * w.c_v * dot(u, v) * w.J

    model, _ = straight_model(4)
    model.add_term(drag, tangent=overflowing, name="drag")
    with pytest.warns(UserWarning, match="NaN or an infinity"):
        assert sf.check_tangent(model, dt=0.01, parts=["drag"]) == np.inf
    @LinearForm
    def outside_its_domain(v, w):
        return np.sqrt(w.x[0] - 5.0) * v[0] * w.J

    bad, _ = straight_model(4)
    bad.add_term(outside_its_domain, name="bad")
    with pytest.warns(UserWarning, match=r"the residual cannot be evaluated \(at the state or near it\): non-finite residual"):
        assert sf.check_tangent(bad, dt=0.01, parts=["bad"]) == np.inf
    with pytest.raises(ValueError, match="step must be a finite number > 0"):
        sf.check_tangent(model, dt=0.01, step=0)
    state = model.initial_state()
    state.v[5] = np.nan
    with pytest.raises(ValueError, match="the given state holds a NaN or an infinity"):
        sf.check_tangent(model, state, dt=0.01)
    with pytest.raises(TypeError, match="check_tangent checks a skfiber.Model, got NoneType"):
        sf.check_tangent(None, dt=0.01)
    with pytest.raises(TypeError, match="checks a stress law"):
        sf.check_law_derivatives(5)


def test_check_tangent_of_a_nonlinear_velocity_term():
    """A drag quadratic in the velocity: the default state's velocity is large enough against the differences'
    step per Δt that the differences change it by 10⁻³ of itself (5e-7 here), not by 10 % (5e-3)."""
    @LinearForm
    def quadratic_drag(v, w):
        return 3.0 * np.sqrt(dot(w.xdot, w.xdot)) * dot(w.xdot, v) * w.J

    model, _ = straight_model(4)
    model.add_term(quadratic_drag, name="drag")
    for dt in (0.01, 1e-4):
        assert sf.check_tangent(model, dt=dt, parts=["drag"]) < 2e-6
    # a wrong tangent still scores order 1
    @BilinearForm
    def linear_only(u, v, w):
        return 3.0 * w.c_v * np.sqrt(dot(w.xdot, w.xdot)) * dot(u, v) * w.J

    wrong, _ = straight_model(4)
    wrong.add_term(quadratic_drag, tangent=linear_only, name="drag")
    assert sf.check_tangent(wrong, dt=0.01, parts=["drag"]) > 0.05


def test_check_tangent_raises_for_an_inadmissible_fiber_contact():
    """Two fibers pressed through the penalty's limit at the checked state: the contact's error, not an inf that
    blames the tangent."""
    from skfiber.contact import FiberContact, PenaltyLaw

    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05),
                      sf.Fiber.straight((0, 0.04, 0), (1, 0.04, 0), n_elements=4, radius=0.05)])
    model.add_contact(FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0)))
    with pytest.raises(FloatingPointError, match="inadmissible fiber–fiber contact"):
        sf.check_tangent(model, model.initial_state(), dt=0.01)
