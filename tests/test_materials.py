"""Stress laws: closed forms, composition, and homogeneous uniaxial stretch."""
import math
import warnings

import numpy as np
import pytest
import sympy as sp

import skfiber as sf
from skfiber import materials
from skfiber.materials import MaterialPoint

LAM = np.linspace(0.8, 1.5, 15)
RATE = np.linspace(-0.3, 0.4, 15)
GM, ALPHA = 0.3, 0.6


def closed_forms():
    z = (LAM / 1.3 - 1) / 0.3
    return {
        "prestress": (materials.prestress(30.0), 30.0 / LAM**2),
        "active": (materials.active_stress(3e5), GM * ALPHA * 3e5 / LAM**2 * np.exp(-np.abs(z) ** 4)),
        "passive": (
            materials.passive_kelvin_voigt(mu_muscle=1e5, mu_tendon=1e6, eta_muscle=1e4, eta_tendon=2e4),
            GM * (1e5 * (1 - LAM**-3) + 3e4 * RATE / LAM**3) + (1 - GM) * (1e6 * (1 - LAM**-3) + 6e4 * RATE / LAM**3),
        ),
    }


@pytest.mark.parametrize("name", ["prestress", "active", "passive"])
def test_paper_terms_closed_form(name):
    law, expected = closed_forms()[name]
    out = law(MaterialPoint(LAM, RATE, theta=0.5, t=0.0, muscle_fraction=GM, activation=ALPHA))
    np.testing.assert_allclose(out.stress, expected, rtol=1e-14, atol=1e-9)


def test_active_with_non_integer_exponent():
    law = materials.active_stress(1e5, lam_opt=1.2, delta_w=0.4, nu=2.5)
    z = (LAM / 1.2 - 1) / 0.4
    out = law(MaterialPoint(LAM, 0.0, theta=0.5, t=0.0, muscle_fraction=1.0, activation=1.0))
    np.testing.assert_allclose(out.stress, 1e5 / LAM**2 * np.exp(-np.abs(z) ** 2.5), rtol=1e-13)
    assert sf.check_law_derivatives(law, stretch=np.linspace(0.7, 1.15, 20)) < 1e-6


def test_paper_law_is_sum_of_terms():
    laws = closed_forms()
    total = sum(v[1] for v in laws.values())
    law = materials.paper_law(eta_tendon=2e4)
    out = law(MaterialPoint(LAM, RATE, theta=0.5, t=0.0, muscle_fraction=GM, activation=ALPHA))
    np.testing.assert_allclose(out.stress, total, rtol=1e-13)


def test_mixed_sum_with_handwritten_law():
    class Linear:
        def __call__(self, p):
            lam = np.asarray(p.stretch, float)
            return sf.StressResponse(1e3 * (lam - 1), 1e3 + 0 * lam, 0 * lam)

    law = materials.prestress(10.0) + Linear()
    out = law(MaterialPoint(LAM, RATE))
    np.testing.assert_allclose(out.stress, 10 / LAM**2 + 1e3 * (LAM - 1), rtol=1e-14)
    assert sf.check_law_derivatives(law) < 1e-6


def test_laws_add_with_sum_scale_and_subtract():
    """``sum(laws)`` (which starts from 0), a hand-written law on the left, ``c * law``, ``-law`` and ``a - b``."""
    class Linear:
        def __call__(self, p):
            lam = np.asarray(p.stretch, float)
            return sf.StressResponse(1e3 * (lam - 1), 1e3 + 0 * lam, 0 * lam)

    prestress, passive = materials.prestress(10.0), closed_forms()["passive"][0]
    point = MaterialPoint(LAM, RATE, theta=0.5, t=0.0, muscle_fraction=GM, activation=ALPHA)
    expected = {"sum": 10 / LAM**2 + closed_forms()["passive"][1], "scaled": 2.5 * 10 / LAM**2,
                "difference": closed_forms()["passive"][1] - 10 / LAM**2, "hand first": 1e3 * (LAM - 1) + 10 / LAM**2}
    laws = {"sum": sum([prestress, passive]), "scaled": 2.5 * prestress, "difference": passive - prestress,
            "hand first": Linear() + prestress}
    for name, law in laws.items():
        np.testing.assert_allclose(law(point).stress, expected[name], rtol=1e-12, err_msg=name)
        assert sf.check_law_derivatives(law) < 1e-6, name
    assert isinstance(laws["sum"], materials.SymbolicLaw) and isinstance(-prestress, materials.SymbolicLaw)
    with pytest.raises(ValueError, match="the factor of a law must be a finite number, got nan"):
        float("nan") * prestress


def test_law_from_function_rejects_numpy_functions():
    with pytest.raises(TypeError, match="sympy"):
        sf.law_from_function(lambda lam, lamdot, theta, t: np.exp(lam))


def test_law_from_function_keywords():
    law = sf.law_from_function(lambda lam, lamdot, theta, t, muscle_fraction, activation: muscle_fraction * activation * lam)
    out = law(MaterialPoint(np.array([2.0]), 0.0, theta=0.0, t=0.0, muscle_fraction=0.5, activation=0.25))
    assert out.stress[0] == pytest.approx(0.25)
    assert out.d_stretch[0] == pytest.approx(0.125)


@pytest.mark.parametrize("bad", [dict(sigma0=np.nan), dict(sigma0=np.inf)])
def test_prestress_rejects_nonfinite(bad):
    with pytest.raises(ValueError, match="sigma0"):
        materials.prestress(**bad)


@pytest.mark.parametrize(
    "kwargs, key",
    [(dict(s_max=-1.0), "s_max"), (dict(s_max=1.0, lam_opt=0.0), "lam_opt"), (dict(s_max=1.0, delta_w=-0.1), "delta_w"), (dict(s_max=1.0, nu=np.nan), "nu")],
)
def test_active_rejects_bad_parameters(kwargs, key):
    with pytest.raises(ValueError, match=key):
        materials.active_stress(**kwargs)


@pytest.mark.parametrize("nu", [0.5, 1.0])
def test_active_refuses_an_exponent_with_a_kinked_curve(nu):
    """ν ≤ 1 gives exp(−|z|^ν) an infinite or jumping slope at λopt: refused, naming ν and why."""
    with pytest.raises(ValueError, match=r"nu must be > 1, got .*lam_opt"):
        materials.active_stress(1e5, lam_opt=1.0, nu=nu)


def test_active_slope_is_continuous_at_the_optimum_for_nu_above_one():
    """ν = 1.5: ∂S/∂λ at and beside λopt is finite and equals central differences of S (an independent check)."""
    law = materials.active_stress(1e5, lam_opt=1.1, delta_w=0.4, nu=1.5)

    def stress(lam):
        return float(law(materials.MaterialPoint(lam, 0.0, theta=0.5, muscle_fraction=1.0, activation=1.0)).stress)

    for lam in (1.1, 1.1 + 1e-3, 1.1 - 1e-3):
        slope = float(law(materials.MaterialPoint(lam, 0.0, theta=0.5, muscle_fraction=1.0,
                                                  activation=1.0)).d_stretch)
        h = 1e-7
        assert np.isfinite(slope)
        assert slope == pytest.approx((stress(lam + h) - stress(lam - h)) / (2 * h), rel=1e-5, abs=1e-2)


def test_passive_rejects_negative_viscosity():
    with pytest.raises(ValueError, match="eta_muscle"):
        materials.passive_kelvin_voigt(mu_muscle=1.0, mu_tendon=1.0, eta_muscle=-1.0, eta_tendon=0.0)


def test_symbolic_law_rejects_unknown_symbols():
    with pytest.raises(ValueError, match="unknown symbols"):
        sf.SymbolicLaw(sp.Symbol("E") * materials.SYMBOLS["stretch"])


# --- homogeneous uniaxial stretch through the whole FE pipeline -------------
STABLE_LAWS = {
    # a cable is stable in tension with dN/dλ > 0 only (no bending stiffness):
    # pure active stress softens (N ∝ 1/λ near λ_opt) and is not tested alone
    "prestress": lambda: materials.prestress(30.0),
    "prestress+passive": lambda: materials.prestress(30.0) + closed_forms()["passive"][0],
    "paper": lambda: materials.paper_law(eta_tendon=2e4),
}


@pytest.mark.parametrize("name", sorted(STABLE_LAWS))
@pytest.mark.parametrize("stretch", [1.1, 1.25])
def test_static_uniaxial_stretch(name, stretch):
    """A straight fiber stretched by prescribing its end: S(λ) and N = π r0² λ S."""
    law = STABLE_LAWS[name]()
    r0, L = 0.05, 2.0
    fiber = sf.Fiber.straight((0, 0, 0), (L, 0, 0), n_elements=4, law=law, radius=r0, muscle_fraction=GM, activation=ALPHA)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: ((stretch - 1) * L, 0.0, 0.0))
    result = sf.solve_static(model, load_steps=2)
    fields = sf.fiber_fields(model, result.state, fiber)
    S = law(MaterialPoint(np.array([stretch]), np.array([0.0]), theta=0.0, t=0.0, muscle_fraction=GM, activation=ALPHA)).stress[0]
    np.testing.assert_allclose(fields.stretch, stretch, rtol=1e-10)
    np.testing.assert_allclose(fields.stress, S, rtol=1e-9, atol=1e-9 * abs(S) + 1e-12)
    np.testing.assert_allclose(fields.force, np.pi * r0**2 * stretch * S, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fields.radius, r0 / np.sqrt(stretch), rtol=1e-10)


def test_dynamic_uniaxial_stretch_rate():
    """End pulled at constant speed with negligible inertia: viscous stress 3ηλ̇/λ³."""
    eta, mu, V, L = 1e4, 1e5, 0.2, 1.0
    law = materials.passive_kelvin_voigt(mu_muscle=mu, mu_tendon=mu, eta_muscle=eta, eta_tendon=eta)
    fiber = sf.Fiber.straight((0, 0, 0), (L, 0, 0), n_elements=3, law=law, density=1e-9)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (V * t, 0.0, 0.0))
    result = sf.simulate(model, t_end=0.5, dt=0.05, progress=False)
    fields = sf.fiber_fields(model, result.final_state, fiber)
    lam = 1 + V * 0.5 / L
    lamdot = V / L
    np.testing.assert_allclose(fields.stretch, lam, rtol=1e-9)
    np.testing.assert_allclose(fields.stretch_rate, lamdot, rtol=1e-7)
    np.testing.assert_allclose(fields.stress, mu * (1 - lam**-3) + 3 * eta * lamdot / lam**3, rtol=1e-7)


@pytest.mark.parametrize("wrong", ["stretch", "stretch_rate"])
def test_check_law_derivatives_catches_a_wrong_partial(wrong):
    """The check can fail: a hand-written law whose ∂S/∂λ or ∂S/∂λ̇ is 1 % off scores about 10⁻²."""
    class Cubic:
        def __call__(self, p):
            lam, rate = np.asarray(p.stretch, float), np.asarray(p.stretch_rate, float)
            d_lam, d_rate = 3e4 * (lam - 1) ** 2 + 1e3, 50.0 + 0 * lam
            if wrong == "stretch":
                d_lam = 1.01 * d_lam
            else:
                d_rate = 1.01 * d_rate
            return sf.StressResponse(1e4 * (lam - 1) ** 3 + 1e3 * (lam - 1) + 50.0 * rate, d_lam, d_rate)

    assert 5e-3 < sf.check_law_derivatives(Cubic()) < 2e-2


@pytest.mark.parametrize("length", [0.37, 2.0])
def test_end_force_is_the_physical_stress_times_the_area_whatever_the_fiber_s_length(length):
    """The assembled residual of a straight fiber at uniform stretch λ pulls its end nodes with
    N = π r0² λ S(λ) for the active and the prestress terms, whatever its reference length L = |A1|:
    the active term of the law is a physical stress (a literal reading of the paper's eqs. 31/36 with
    θ ∈ [0, 1] would scale it by L²)."""
    law = materials.active_stress(3e5) + materials.prestress(30.0)
    r0, lam, n = 0.01, 1.2, 4
    fiber = sf.Fiber.straight((0, 0, 0), (length, 0, 0), n_elements=n, law=law, radius=r0, muscle_fraction=GM,
                              activation=ALPHA)
    model = sf.Model([fiber])
    u = np.zeros(model.n_dofs)
    per_node = u.reshape(-1, 6)  # (u1, u2, u3, u1', u2', u3') at each node, ′ = d/dθ
    per_node[:, 0] = (lam - 1) * length * np.linspace(0.0, 1.0, n + 1)
    per_node[:, 3] = (lam - 1) * length
    zero = np.zeros_like(u)
    residual = model.evaluate(u, zero, zero, 0.0, c_v=0.0, c_a=0.0).residual.reshape(-1, 6)
    z = (lam / 1.3 - 1) / 0.3  # active_stress's defaults: λopt = 1.3, ΔW = 0.3, ν = 4
    S = 30.0 / lam**2 + GM * ALPHA * 3e5 / lam**2 * np.exp(-abs(z) ** 4)
    N = np.pi * r0**2 * lam * S
    np.testing.assert_allclose(residual[[0, -1], 0], [-N, N], rtol=1e-12)
    np.testing.assert_allclose(residual[1:-1, :3], 0.0, atol=1e-12 * N)


@pytest.mark.parametrize("make, message", [
    (lambda lam: float("nan") * (1 - lam**-3), "non-finite number"),
    (lambda lam: sp.oo * lam, "non-finite number"),
    (lambda lam: 1e4 * sp.sign(lam - 1) * (lam - 1) ** 2, "DiracDelta.*sympy.Piecewise"),
    (lambda lam: 1e4 * sp.floor(4 * lam) * lam, "a derivative sympy cannot take"),
    (lambda lam: None, "returned None"),
])
def test_a_law_no_path_can_evaluate_is_refused_when_it_is_made(make, message):
    """A nan parameter, a derivative that no path evaluates (DiracDelta, an unevaluated derivative) or a law
    that returns no expression: a ValueError or TypeError naming it, instead of a wrong diagnosis ("not linear
    in the test function") or a traceback deep in sympy."""
    with pytest.raises((ValueError, TypeError), match=message):
        sf.law_from_function(lambda lam, lamdot, theta, t: make(lam))


def test_a_law_undefined_on_a_branch_and_a_law_without_a_kernel_are_accepted():
    """nan as the value of a Piecewise branch marks where a law is not defined (not a nan parameter); a
    function without a compiled kernel (the gamma function's derivative, polygamma) runs with numpy through
    scipy, with a warning naming it."""
    sf.law_from_function(lambda lam, lamdot, theta, t: sp.Piecewise((1e4 * (lam - lam**-2), lam > 0.2), (sp.nan, True)))
    law = sf.law_from_function(lambda lam, lamdot, theta, t: 1e4 * sp.gamma(lam) * (lam - 1) + 30 / lam**2,
                               name="gamma law")
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sf.check_tangent(model, dt=0.01) < 1e-6
    assert any("'gamma law' uses polygamma, which has no compiled kernel" in str(w.message) for w in caught)


def test_a_law_with_a_scipy_special_function_runs_on_the_numpy_path():
    law = sf.law_from_function(lambda lam, lamdot, theta, t: 1e4 * sp.erf(lam - 1) + 30 / lam**2)
    assert sf.check_law_derivatives(law) < 1e-6
    stress = law(MaterialPoint(LAM, RATE, theta=0.5, t=0.0, muscle_fraction=GM, activation=ALPHA)).stress
    np.testing.assert_allclose(stress, 1e4 * np.array([math.erf(x - 1) for x in LAM]) + 30 / LAM**2, rtol=1e-13)


def test_check_law_derivatives_of_a_kinked_law_with_a_sample_on_the_kink():
    """Tension only, S = 2·10⁴ (λ − 1) for λ > 1 and 0 else, with a damping only in extension: the default
    samples hold λ = 1 and λ̇ = 0, where central differences straddle the kinks (error 0.5 before); the
    one-sided differences there match, and a derivative 1 % off on one side is still caught."""
    def tension_only(scale):
        return sf.law_from_function(lambda lam, lamdot, theta, t: sp.Piecewise((2e4 * scale * (lam - 1), lam > 1),
                                                                               (0, True))
                                    + sp.Piecewise((100 * lamdot, lamdot > 0), (0, True)))

    law = tension_only(1.0)
    assert sf.check_law_derivatives(law) < 1e-6

    class WrongAboveKink:
        def __call__(self, point):
            r = law(point)
            return sf.StressResponse(r.stress, np.where(np.asarray(point.stretch) > 1, 1.01, 1.0) * r.d_stretch,
                                     r.d_stretch_rate)

    assert 5e-3 < sf.check_law_derivatives(WrongAboveKink()) < 2e-2


@pytest.mark.parametrize("jump", [30.0, 1.0])
def test_check_law_derivatives_fails_a_stress_that_jumps_at_a_sample(jump):
    """A prestress that only tension switches on jumps at λ = 1: the stress has no derivative there, and the
    one-sided difference that matches one side must not hide it (it halves with the step only where the stress is
    continuous); the error is about the jump over the central difference's span, J/(2·10⁻⁶) against 2·10⁴."""
    law = sf.law_from_function(lambda lam, lamdot, theta, t: sp.Piecewise((jump + 2e4 * (lam - 1), lam > 1),
                                                                           (0, True)))
    assert sf.check_law_derivatives(law) == pytest.approx(jump / 2e-6 / 2e4, rel=0.05)


def test_abs_of_an_expression_sympy_cannot_prove_real():
    """|√λ − 1| (λ not known positive to sympy): its derivative was nan at the kink, λ = 1, the reference state,
    so every run failed; now the positive side's slope, 0 there, and the law runs on both paths."""
    law = sf.law_from_function(lambda lam, lamdot, theta, t: 1e5 * sp.Abs(sp.sqrt(lam) - 1) * (lam - 1)
                               + 1e3 * lamdot + 30.0)
    at_kink = law(sf.MaterialPoint(1.0, 0.0))
    assert at_kink.d_stretch == 0.0 and at_kink.d_stretch_rate == 1e3
    assert sf.check_law_derivatives(law) < 1e-6  # (a one-sided difference at the kink, λ = 1)
    lam = np.array([0.81, 1.44])  # |√λ − 1| = 0.1, 0.2
    np.testing.assert_allclose(law(sf.MaterialPoint(lam, np.zeros(2))).stress,
                               1e5 * np.array([0.1, 0.2]) * (lam - 1) + 30.0, rtol=1e-14)
    for compiled in (True, False):
        fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.02, law=law)
        model = sf.Model([fiber], compiled=compiled)
        model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
        assert sf.simulate(model, t_end=0.02, dt=0.01, progress=False).final_state.t == 0.02


def test_abs_in_a_condition_and_of_a_real_argument_stay():
    """|λ̇| in a Piecewise's condition stays an Abs (a Piecewise there broke numpy's select), and so does |λ − λ₀|
    of a real argument (its derivative sign · 1, the mean of the two slopes at the kink)."""
    lam, rate = materials.LAM, materials.LAMDOT
    law = materials.SymbolicLaw(1e4 * (lam - 1) + sp.Piecewise((0.0, sp.Abs(rate) < 1e-3), (10.0 * rate, True))
                                + 5e3 * sp.Abs(lam - 1.2))
    assert law.expression.count(sp.Abs) == 2 and law.expression.count(sp.Piecewise) == 1
    out = law(sf.MaterialPoint(np.array([1.1, 1.2, 1.3]), np.array([0.0, 0.5, 0.0])))
    np.testing.assert_allclose(out.stress, [1000.0 + 500.0, 2000.0 + 5.0, 3000.0 + 500.0], rtol=1e-13)
    np.testing.assert_allclose(out.d_stretch, [1e4 - 5e3, 1e4, 1e4 + 5e3], rtol=1e-13)


def test_abs_of_an_expression_with_a_branch_stays_and_runs():
    """|·| of an expression holding an Abs or a Piecewise is left an Abs (written as a Piecewise, its condition
    would hold a branch, which numpy's select cannot evaluate): the law evaluates on numpy's path."""
    lam = materials.LAM
    for inner in (sp.Abs(sp.sqrt(lam) - 1) - 0.1,
                  sp.Piecewise((sp.sqrt(lam) - 1, lam > 1), (0.5 * (sp.sqrt(lam) - 1), True)) - 0.05):
        law = materials.SymbolicLaw(1e4 * (lam - 1) + 1e3 * sp.Abs(inner))
        stress = law(sf.MaterialPoint(np.array([0.64, 1.21]), np.zeros(2))).stress
        expected = [1e4 * (x - 1) + 1e3 * abs(float(inner.subs(lam, x))) for x in (0.64, 1.21)]
        np.testing.assert_allclose(stress, expected, rtol=1e-13)


def test_abs_around_an_abs_of_a_real_argument_is_rewritten():
    """|(√λ − 1) |λ − 1||: the inner |·| of a real argument does not keep the outer one from its Piecewise (its
    derivative at λ = 1 was nan again)."""
    lam = materials.LAM
    law = materials.SymbolicLaw(1e4 * (lam - 1) + 1e3 * sp.Abs((sp.sqrt(lam) - 1) * sp.Abs(lam - 1)))
    at_one = law(sf.MaterialPoint(1.0, 0.0))
    assert at_one.d_stretch == 1e4
    assert sf.check_law_derivatives(law) < 1e-6


def test_a_symbolic_law_takes_lists_and_numbers_as_well_as_arrays():
    """MaterialPoint entries given as lists (as a user types them) evaluate like arrays: σ0/λ² and −2σ0/λ³."""
    law = sf.prestress(30.0)
    response = law(sf.MaterialPoint([1.0, 2.0], 0.0))
    np.testing.assert_allclose(response.stress, [30.0, 7.5], rtol=1e-15)
    np.testing.assert_allclose(response.d_stretch, [-60.0, -7.5], rtol=1e-15)
    same = law(sf.MaterialPoint(np.array([1.0, 2.0]), np.zeros(2)))
    np.testing.assert_array_equal(response.stress, same.stress)
