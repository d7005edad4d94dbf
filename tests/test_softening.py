"""The softening check: force peak of N(λ) = π r0² λ S and material past it."""
import warnings

import numpy as np
import pytest
import sympy as sp

import skfiber as sf
from skfiber.materials import MaterialPoint, law_from_function
from skfiber.softening import (SofteningCheck, SofteningLog, SofteningWarning, force_minimum_stretch,
                               force_peak_stretch,
                               force_slope, past_force_peak, warn_if_past_force_peak)

#: Table 4 of the paper, triceps (the upper-limb demo's law)
TRICEPS = sf.paper_law(sigma0=16.0, s_max=1.4e7, mu_muscle=2e4, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3)


def bump(lam0):
    """λ S = 1e4 exp(−(λ − λ0)²) + 10 λ̇: its force peaks at λ0 exactly (the rate does not count)."""
    return law_from_function(lambda lam, lamdot, theta, t: 1e4 * sp.exp(-(lam - lam0) ** 2) / lam + 10 * lamdot)


def test_slope_is_the_derivative_of_lambda_s():
    """force_slope = d(λ S)/dλ at λ̇ = 0, against central differences of λ S, for the paper's law."""
    lam = np.linspace(0.8, 3.0, 23)
    h = 1e-6

    def lam_s(x):
        return x * TRICEPS(MaterialPoint(x, 0.0, theta=0.5, t=0.0, muscle_fraction=0.7, activation=0.01)).stress

    fd = (lam_s(lam + h) - lam_s(lam - h)) / (2 * h)
    # a nonzero rate must not change the static slope
    got = force_slope(TRICEPS, MaterialPoint(lam, 0.3, theta=0.5, t=0.0, muscle_fraction=0.7, activation=0.01))
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("lam0", [1.2, 1.7, 2.5])
def test_peak_of_a_closed_form_law(lam0):
    peak = force_peak_stretch(bump(lam0), stretch_max=3.0, samples=401)
    assert abs(float(peak) - lam0) < 1e-4   # the linear interpolation of the slope's zero (grid 5e-3)
    # broadcast over several (γM, α): one peak each
    assert force_peak_stretch(bump(lam0), muscle_fraction=[0.0, 1.0], activation=0.5).shape == (2,)


def test_peak_at_the_start_and_none():
    falling = law_from_function(lambda lam, lamdot, theta, t: 100.0 / lam**2)   # λ S = 100/λ falls everywhere
    assert float(force_peak_stretch(falling)) == 1.0
    rising = sf.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0.0, eta_tendon=0.0)
    assert float(force_peak_stretch(rising, stretch_max=10.0)) == np.inf


def test_table4_triceps_peak_and_the_old_geometrys_band():
    """Table 4's triceps at its pure-muscle belly (γM = 1) and peak activation 0.016: N(λ) peaks at λ ≈ 1.15;
    the old geometry stretched a band there to λ ≈ 3.3–4 (past the peak).  The tendon ends (γM = 0) and the
    passive muscle (α = 0) have no peak; a stiffer muscle (Table 1's μM = 1e5) moves it out, to λ ≈ 1.43."""
    peak = float(force_peak_stretch(TRICEPS, muscle_fraction=1.0, activation=0.016))
    assert 1.13 < peak < 1.17
    # the peak is a maximum of λ S: larger than at stretches on either side
    lam = np.array([peak - 0.05, peak, peak + 0.05])
    lam_s = lam * TRICEPS(MaterialPoint(lam, 0.0, theta=0.5, t=0.0, muscle_fraction=1.0, activation=0.016)).stress
    assert lam_s[1] > lam_s[0] and lam_s[1] > lam_s[2]
    old_band = MaterialPoint(np.array([1.0, 1.1, 3.3, 4.0]), 0.0, theta=0.5, t=1.0, muscle_fraction=1.0, activation=0.016)
    assert past_force_peak(TRICEPS, old_band).tolist() == [False, False, True, True]
    assert not past_force_peak(TRICEPS, MaterialPoint(np.array([3.3, 4.0]), 0.0, theta=0.0, t=1.0, muscle_fraction=0.0, activation=0.016)).any()
    assert not past_force_peak(TRICEPS, MaterialPoint(np.array([3.3, 4.0]), 0.0, theta=0.5, t=1.0, muscle_fraction=1.0, activation=0.0)).any()
    stiff = sf.paper_law(sigma0=16.0, s_max=1.4e7, mu_muscle=1e5, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3)
    assert 1.4 < float(force_peak_stretch(stiff, muscle_fraction=1.0, activation=0.016)) < 1.46   # measured 1.431


def test_warning_names_the_fiber():
    band = MaterialPoint(np.array([1.05, 3.3]), 0.0, theta=0.5, t=1.0, muscle_fraction=1.0, activation=0.016)
    with pytest.warns(SofteningWarning, match=r"triceps1: 1 material point\(s\) stretched past the force peak .*λ = 3\.3"):
        assert warn_if_past_force_peak("triceps1", TRICEPS, band)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_past_force_peak("triceps1", TRICEPS, MaterialPoint(np.array([1.05]), 0.0, theta=0.5, t=1.0, muscle_fraction=1.0, activation=0.016))


@pytest.mark.parametrize("kwargs, message", [
    (dict(stretch_min=2.0, stretch_max=1.0), "need 0 < stretch_min < stretch_max"),
    (dict(stretch_min=0.0), "need 0 < stretch_min < stretch_max"),
    (dict(stretch_max=np.inf), "need 0 < stretch_min < stretch_max"),
    (dict(samples=1), "samples must be an integer ≥ 2"),
    (dict(samples=2.5), "samples must be an integer ≥ 2"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        force_peak_stretch(TRICEPS, **kwargs)


def trough(lam1):
    """λ S = 1e4 (λ − λ1)²: N(λ) has its minimum at λ1 < 1 and rises from there through the reference."""
    return law_from_function(lambda lam, lamdot, theta, t: 1e4 * (lam - lam1) ** 2 / lam)


@pytest.mark.parametrize("lam1", [0.5, 0.8, 0.95])
def test_minimum_of_a_closed_form_law_and_the_points_shortened_past_it(lam1):
    """Shortened below the minimum of N(λ) a fiber pulls harder as it shortens (dN/dλ < 0): flagged, above it
    not; the reference and stretched points of this law (no peak) never."""
    assert abs(float(force_minimum_stretch(trough(lam1), stretch_min=0.1)) - lam1) < 1e-4
    lam = np.array([lam1 + 0.02, lam1 - 0.02, 0.3 * lam1, 1.0, 1.5])
    assert past_force_peak(trough(lam1), MaterialPoint(lam, 0.0)).tolist() == [False, True, True, False, False]


def test_minimum_at_the_reference_and_none():
    """N falling through the reference (100/λ): every shortened point is past (the minimum is the reference);
    a passive law rises everywhere: none (0), nothing flagged."""
    falling = law_from_function(lambda lam, lamdot, theta, t: 100.0 / lam**2)
    assert float(force_minimum_stretch(falling)) == 1.0
    assert past_force_peak(falling, MaterialPoint(np.array([0.999, 0.5]), 0.0)).all()
    rising = sf.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0.0, eta_tendon=0.0)
    assert float(force_minimum_stretch(rising, stretch_min=0.05)) == 0.0
    assert not past_force_peak(rising, MaterialPoint(np.array([0.9, 0.3, 0.05]), 0.0)).any()


def test_active_optimum_below_the_reference_is_found_when_shortened():
    """The paper's law with λopt = 0.7 (Table 1 otherwise, Smax 1e5, α = 1): N(λ) rises through the reference
    and has a minimum at λ ≈ 0.965, where the slope d(λS)/dλ changes sign (checked on either side); a fiber
    shortened to 0.9 is on the falling branch, one at 0.98 not."""
    law = sf.paper_law(s_max=1e5, lam_opt=0.7)
    least = float(force_minimum_stretch(law, muscle_fraction=1.0, activation=1.0))
    slope = force_slope(law, MaterialPoint(np.array([least - 0.01, least + 0.01]), 0.0, muscle_fraction=1.0,
                                           activation=1.0))
    assert 0.95 < least < 0.98 and slope[0] < 0 < slope[1]
    message = r"f: 1 material point\(s\) shortened past the force minimum of the law \(down to λ = 0\.9\)"
    with pytest.warns(SofteningWarning, match=message):
        assert warn_if_past_force_peak("f", law, MaterialPoint(np.array([0.98, 0.9]), 0.0, muscle_fraction=1.0,
                                                               activation=1.0))


def _stretched(model, factors):
    """The model's state with fiber k scaled by factors[k] about the origin: λ = factors[k] everywhere on it."""
    import dataclasses

    d = model.discretization
    u = np.zeros_like(d.reference_dofs)
    nodal, ref = u.reshape(-1, 6), d.reference_dofs.reshape(-1, 6)
    for k, s in enumerate(factors):
        fd = d.fiber_dofs[k]
        rows = slice(fd.first_node, fd.first_node + fd.n_nodes)
        nodal[rows] = (s - 1.0) * ref[rows]
    return dataclasses.replace(model.initial_state(), u=u)


def test_softening_check_of_a_model_state_per_fiber():
    """SofteningCheck on fibers stretched or shortened uniformly (λ known exactly): per fiber the stretch range
    and whether it lies off its own law's rising branch, fibers of one law searched together."""
    peak_at_1_2, trough_at_0_95 = bump(1.2), trough(0.95)
    fibers = [sf.Fiber.straight((0, 0, 0), (0.1, 0, 0), n_elements=3, radius=0.01, density=1000.0, law=law,
                                name=f"f{k}") for k, law in enumerate([peak_at_1_2, peak_at_1_2, trough_at_0_95,
                                                                       trough_at_0_95])]
    model = sf.Model(fibers)
    check = SofteningCheck(model)
    found = check(_stretched(model, [1.3, 1.1, 0.9, 0.97]))
    np.testing.assert_allclose(found.max_stretch, [1.3, 1.1, 0.9, 0.97], rtol=1e-12)
    np.testing.assert_allclose(found.min_stretch, [1.3, 1.1, 0.9, 0.97], rtol=1e-12)
    assert found.past.tolist() == [True, False, True, False]
    assert check(model.initial_state()).past.tolist() == [False] * 4
    with pytest.raises(ValueError, match="points_per_element must be an integer ≥ 1, got 0"):
        SofteningCheck(model, points_per_element=0)


def test_softening_log_sums_up_states_per_fiber_and_survives_a_checkpoint():
    """SofteningLog over three states with known uniform stretches: per fiber the range, the count of states off
    the rising branch and the first such time; the warning names the fibers; arrays/restore round-trip."""
    import dataclasses

    law = bump(1.2)
    fibers = [sf.Fiber.straight((0, 0, 0), (0.1, 0, 0), n_elements=3, radius=0.01, density=1000.0, law=law,
                                name=f"f{k}") for k in range(2)]
    model = sf.Model(fibers)
    log = SofteningLog(model)
    for t, factors in ((0.0, [1.0, 1.0]), (0.5, [1.3, 1.1]), (1.0, [1.25, 0.9])):
        log(dataclasses.replace(_stretched(model, factors), t=t))
    assert log.states == 3 and log.softening
    np.testing.assert_allclose(log.max_stretch, [1.3, 1.1], rtol=1e-12)
    np.testing.assert_allclose(log.min_stretch, [1.0, 0.9], rtol=1e-12)
    assert log.past_states.tolist() == [2, 0] and log.first_past[0] == 0.5 and np.isnan(log.first_past[1])
    assert log.softened() == {"f0": (2, 0.5)}
    assert log.describe().startswith("strain softening: WARNING, material left the rising branch of its law")
    with pytest.warns(SofteningWarning, match=r"in 1 fiber\(s\) \(f0\), first at t = 0\.5 s"):
        assert log.warn()
    again = SofteningLog(model)
    again.restore(log.arrays())
    assert again.states == 3 and again.softened() == log.softened()
    np.testing.assert_array_equal(again.max_stretch, log.max_stretch)
    with pytest.raises(ValueError, match="the softening record is of another model: 1 fibers here"):
        SofteningLog(sf.Model(fibers[:1])).restore(log.arrays())
    with pytest.raises(ValueError, match="the softening record lacks first_past: it was not made by"):
        again.restore({key: value for key, value in log.arrays().items() if key != "first_past"})


def test_points_that_share_the_law_parameters_are_searched_once_with_the_same_verdict():
    """The search runs once per distinct (γM, α) of a law that does not read θ; a hand-written law (whose
    parameters the search cannot see) is searched point by point: the same peaks and verdicts, to the bit."""
    rng = np.random.default_rng(3)
    gm = rng.choice([0.0, 0.3, 1.0], size=40)
    alpha = rng.choice([0.01, 0.5], size=40)
    theta = np.linspace(0.0, 1.0, 40)                 # every point its own θ, which the paper's law does not read
    lam = 1.0 + 0.6 * rng.random(40)

    def by_hand(point):
        return TRICEPS(point)

    shared = force_peak_stretch(TRICEPS, muscle_fraction=gm, activation=alpha, theta=theta, stretch_max=1.7)
    each = force_peak_stretch(by_hand, muscle_fraction=gm, activation=alpha, theta=theta, stretch_max=1.7)
    np.testing.assert_array_equal(shared, each)
    assert np.isfinite(shared[gm == 1.0]).all() and np.isinf(shared[gm == 0.0]).all()
    point = MaterialPoint(lam, 0.0, theta=theta, muscle_fraction=gm, activation=alpha)
    np.testing.assert_array_equal(past_force_peak(TRICEPS, point), past_force_peak(by_hand, point))
    # a law that reads θ (its peak at λ = 1.2 + 0.2 θ) keeps θ apart: the peaks move with it
    reads_theta = law_from_function(lambda lam, lamdot, theta, t: 1e4 * sp.exp(-(lam - 1.2 - 0.2 * theta) ** 2) / lam)
    theta_pairs = np.repeat([0.0, 0.5, 1.0], 4)
    peaks = force_peak_stretch(reads_theta, theta=theta_pairs, stretch_max=2.0)
    np.testing.assert_allclose(peaks, 1.2 + 0.2 * theta_pairs, atol=2e-3)
    np.testing.assert_array_equal(peaks, force_peak_stretch(lambda p: reads_theta(p), theta=theta_pairs,
                                                            stretch_max=2.0))
