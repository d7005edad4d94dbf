"""Millard (2013) musculotendon models (skfiber.hill.musculotendon): pennation
kinematics, the equilibrium, damped and rigid-tendon formulations, tangents,
singular cases and, when OpenSim is installed, agreement with OpenSim 4.6."""
import math

import hill_reference
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from skfiber.hill import (
    ActiveForceLengthCurve,
    FirstOrderActivation,
    FixedHeightPennation,
    ForceVelocityCurve,
    Millard2012Muscle,
    MuscleCurves,
    MuscleParameters,
)
from skfiber.hill import musculotendon
from skfiber.hill.damped import solve_damped_fiber_velocity

PARAMS = MuscleParameters(max_isometric_force=1000.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                          pennation_angle_at_optimal=0.3)


def random_states(rng, n=400):
    """Activations, path lengths and fiber lengths well inside the model's range."""
    return rng.uniform(0.0, 1.0, n), rng.uniform(0.26, 0.34, n), rng.uniform(0.05, 0.16, n)


# ---------------------------------------------------------------------------
# pennation and activation
# ---------------------------------------------------------------------------
def test_fixed_height_pennation_kinematics():
    pen = FixedHeightPennation(0.1, pennation_angle_at_optimal=0.4)
    h = 0.1 * math.sin(0.4)
    assert pen.height == pytest.approx(h)
    lce = np.linspace(0.06, 0.2, 50)
    phi = pen.pennation_angle(lce)
    np.testing.assert_allclose(lce * np.sin(phi), h, rtol=1e-14)                      # eq. (6)
    assert pen.pennation_angle(0.1) == pytest.approx(0.4, rel=1e-14)
    lt = pen.tendon_length(0.3, lce)                                                # eq. (4)
    np.testing.assert_allclose(lt + lce * np.cos(phi), 0.3, rtol=1e-14)
    np.testing.assert_allclose(pen.fiber_length(0.3, lt), lce, rtol=1e-13)
    # eq. (7) against a finite difference of α(l^M(t)) with l^M(t) = lce + v t
    v, dt = 0.37, 1e-7
    fd = (pen.pennation_angle(lce + v * dt) - pen.pennation_angle(lce - v * dt)) / (2 * dt)
    np.testing.assert_allclose(pen.pennation_angular_velocity(lce, v), fd, rtol=1e-6)
    np.testing.assert_allclose(pen.d_pennation_angle_d_fiber_length(lce), fd / v, rtol=1e-6)
    # eqs. (5) and (7) with a rigid tendon: v^MT = v^M cos α − l^M α̇ sin α
    v_mt = 0.25
    v_m = pen.fiber_velocity(lce, v_mt)
    alpha_dot = pen.pennation_angular_velocity(lce, v_m)
    np.testing.assert_allclose(v_m * np.cos(phi) - lce * alpha_dot * np.sin(phi), v_mt, rtol=1e-13)
    # the angle is capped at the maximum pennation angle (minimum fiber length)
    l_min = pen.minimum_fiber_length
    assert l_min == pytest.approx(h / math.sin(math.acos(0.1)))
    capped = pen.pennation_angle(np.array([0.5 * l_min, l_min, 0.0]))
    np.testing.assert_allclose(capped, math.acos(0.1))
    assert pen.fiber_length(0.2 + 0.1 * l_min * 0.1, 0.2) == pytest.approx(l_min)
    assert np.all(pen.d_pennation_angle_d_fiber_length([0.5 * l_min, l_min]) == 0)


def test_unpennated_fiber_has_no_angle():
    pen = FixedHeightPennation(0.1)
    assert np.all(pen.pennation_angle([0.001, 0.1, 1.0]) == 0)
    assert pen.minimum_fiber_length == 0.0
    assert pen.fiber_length(0.35, 0.2) == pytest.approx(0.15)


def test_first_order_activation_dynamics():
    act = FirstOrderActivation()
    assert act.activation_time_constant == 0.010 and act.deactivation_time_constant == 0.040
    a = np.array([0.2, 0.2, 0.9, 0.0])
    u = np.array([1.0, 0.0, 0.1, 0.0])
    expected = [(1 - 0.2) / (0.010 * 0.8), (0 - 0.2) * 0.8 / 0.040, (0.1 - 0.9) * 1.85 / 0.040,
                (0 - 0.01) * 0.515 / 0.040]                                         # a clamped to 0.01
    np.testing.assert_allclose(act.derivative(a, u), expected, rtol=1e-14)
    muscle = Millard2012Muscle(PARAMS)
    np.testing.assert_allclose(muscle.activation_rate(a, u), expected, rtol=1e-14)
    # integrated: a step in excitation raises the activation towards 1, faster than it falls
    up = solve_ivp(lambda t, y: act.derivative(y, 1.0), (0, 0.05), [0.01], rtol=1e-8)
    down = solve_ivp(lambda t, y: act.derivative(y, 0.0), (0, 0.05), [1.0], rtol=1e-8)
    assert up.y[0, -1] > 0.95 and down.y[0, -1] > 0.05 and 1 - up.y[0, -1] < down.y[0, -1]


# ---------------------------------------------------------------------------
# elastic tendon: equilibrium (eqs. 1-2) and damped (eq. 3)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("formulation", ["equilibrium", "damped"])
def test_fiber_velocity_satisfies_force_equilibrium(formulation, rng):
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    a, lmt, lce = random_states(rng)
    r = muscle.evaluate(activation=a, musculotendon_length=lmt, fiber_length=lce)
    assert np.all(np.isfinite(r.fiber_velocity))
    free = ~r.clamped
    assert free.sum() > 300
    beta = 0.0 if formulation == "equilibrium" else PARAMS.fiber_damping
    f0, cos = PARAMS.max_isometric_force, np.cos(r.pennation_angle)
    c = muscle.curves
    lhs = f0 * (r.activation * c.active_force_length(r.normalized_fiber_length)
                * c.force_velocity(r.normalized_fiber_velocity)
                + c.fiber_force_length(r.normalized_fiber_length) + beta * r.normalized_fiber_velocity) * cos
    rhs = f0 * c.tendon_force_length((lmt - r.fiber_length * cos) / PARAMS.tendon_slack_length)
    np.testing.assert_allclose(lhs[free], rhs[free], rtol=0, atol=1e-8)               # eq. (1) / (3)
    np.testing.assert_allclose(r.equilibrium_residual[free], 0, atol=1e-8)
    np.testing.assert_allclose(r.fiber_velocity, r.normalized_fiber_velocity * PARAMS.max_fiber_velocity)
    assert np.all(r.tendon_force >= 0)


@pytest.mark.parametrize("formulation", ["equilibrium", "damped"])
def test_elastic_tangent_matches_finite_differences(formulation, rng):
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    a, lmt, lce = random_states(rng, 200)
    a = np.clip(a, 0.05, 0.95)
    base = dict(activation=a, musculotendon_length=lmt, fiber_length=lce)
    r = muscle.evaluate(**base)
    for name, suffix, h in [("musculotendon_length", "musculotendon_length", 1e-7),
                            ("fiber_length", "fiber_length", 1e-7), ("activation", "activation", 1e-6)]:
        plus = muscle.evaluate(**{**base, name: base[name] + h})
        minus = muscle.evaluate(**{**base, name: base[name] - h})
        ok = ~(r.clamped | plus.clamped | minus.clamped)
        for quantity in ("tendon_force", "fiber_velocity"):
            fd = (getattr(plus, quantity) - getattr(minus, quantity)) / (2 * h)
            exact = getattr(r, f"d_{quantity}_d_{suffix}")
            np.testing.assert_allclose(exact[ok], fd[ok], rtol=1e-5, atol=1e-6 * np.abs(fd).max() + 1e-9,
                                       err_msg=f"d {quantity} / d {name}")
    # the tendon force depends on the path length, not on its velocity
    assert np.all(r.d_tendon_force_d_musculotendon_velocity == 0) and np.all(r.d_tendon_force_d_activation == 0)


def test_damped_state_derivative_relaxes_to_static_equilibrium():
    """d l^M/dt = fiber_velocity, integrated with its exact Jacobian, reaches the static solution."""
    muscle = Millard2012Muscle(MuscleParameters(pennation_angle_at_optimal=0.2))
    a, lmt = 0.6, 0.3
    rest = muscle.static_equilibrium(activation=a, musculotendon_length=lmt)

    def state(y):
        return muscle.evaluate(activation=a, musculotendon_length=lmt, fiber_length=y[0])

    sol = solve_ivp(lambda t, y: state(y).fiber_velocity.reshape(1), (0, 0.1), [0.08], method="Radau",
                    jac=lambda t, y: state(y).d_fiber_velocity_d_fiber_length.reshape(1, 1),
                    rtol=1e-6, atol=1e-10)
    assert sol.success
    start_error = abs(0.08 - float(rest.fiber_length))
    assert abs(sol.y[0, -1] - float(rest.fiber_length)) < 1e-3 * start_error


@pytest.mark.parametrize("formulation", ["equilibrium", "damped"])
def test_static_equilibrium(formulation):
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    a = np.array([[0.0], [0.3], [1.0]])
    lmt = np.array([0.27, 0.3, 0.33, 0.36])
    rest = muscle.static_equilibrium(activation=a, musculotendon_length=lmt)
    assert rest.fiber_length.shape == (3, 4)
    assert np.all(np.abs(rest.fiber_velocity) < 1e-8)
    np.testing.assert_allclose(rest.equilibrium_residual, 0, atol=1e-8)
    assert np.all(rest.fiber_length > muscle.minimum_fiber_length)
    # more activation shortens the fiber against the same path length, stretching the tendon
    assert np.all(np.diff(rest.fiber_length, axis=0) < 0) and np.all(np.diff(rest.tendon_force, axis=0) > 0)
    # a path too short to stretch the tendon: the tendon is slack and carries nothing
    slack = muscle.static_equilibrium(activation=0.5, musculotendon_length=0.22)
    assert slack.tendon_force == 0 and slack.tendon_length < PARAMS.tendon_slack_length


def test_damped_and_equilibrium_agree_at_rest():
    kwargs = dict(activation=np.array([0.1, 0.5, 1.0]), musculotendon_length=0.31)
    damped = Millard2012Muscle(PARAMS).static_equilibrium(**kwargs)
    classic = Millard2012Muscle(PARAMS, formulation="equilibrium").static_equilibrium(**kwargs)
    # only f^L's minimum value differs (0 vs 0.1), far from these fiber lengths
    np.testing.assert_allclose(damped.tendon_force, classic.tendon_force, rtol=1e-9)


# ---------------------------------------------------------------------------
# the compiled paths (skfiber.hill.curve_kernels) against the numpy reference (tests/hill_reference.py)
# ---------------------------------------------------------------------------
def _assert_same_bits(compiled, reference, what):
    """Equal bit for bit (NaN equal to NaN); booleans compared as they are."""
    compiled, reference = np.asarray(compiled), np.asarray(reference)
    assert compiled.shape == reference.shape and compiled.dtype == reference.dtype, what
    if compiled.dtype == bool:
        assert np.array_equal(compiled, reference), what
        return
    same = (compiled.view(np.int64) == reference.view(np.int64)) | (np.isnan(compiled) & np.isnan(reference))
    bad = np.flatnonzero(~same.ravel())
    assert bad.size == 0, (f"{what}: {bad.size} of {same.size} differ, e.g. {compiled.ravel()[bad[:3]]} "
                           f"against {reference.ravel()[bad[:3]]}")


def test_compiled_damped_solve_equals_numpy(rng):
    curves = Millard2012Muscle(PARAMS).curves
    compiled, numpy_solve = solve_damped_fiber_velocity, hill_reference.solve_damped_fiber_velocity
    n = 4000
    a, fal = rng.uniform(0.0, 1.0, n), rng.uniform(0.0, 1.0, n)
    a[:50], fal[50:100] = 0.0, 0.0                      # f^V drops out: r = β ṽ − target
    target = np.concatenate([rng.uniform(-0.3, 2.5, n - 6), [-50.0, 50.0, 0.0, 1.4, np.nan, np.inf]])
    beta, tol = PARAMS.fiber_damping, 1e-12
    with np.errstate(invalid="ignore"):
        _assert_same_bits(compiled(curves, a, fal, target, beta, tol),
                          numpy_solve(curves, a, fal, target, beta, tol), "4000 points")
        # tol = 0: most points stop on the width of the bracket, not on the residual
        _assert_same_bits(compiled(curves, a, fal, target, beta, 0.0),
                          numpy_solve(curves, a, fal, target, beta, 0.0), "tol = 0")
    # small batches (the actuator's muscle groups), a scalar activation, 2-D and 0-D shapes
    for k in range(0, 60, 3):
        rows = slice(k, k + 3)
        _assert_same_bits(compiled(curves, a[rows], fal[rows], target[rows], beta, tol),
                          numpy_solve(curves, a[rows], fal[rows], target[rows], beta, tol), f"rows {rows}")
    grid = target[:12].reshape(3, 4)
    _assert_same_bits(compiled(curves, 0.4, fal[:12].reshape(3, 4), grid, beta, 1e-9),
                      numpy_solve(curves, 0.4, fal[:12].reshape(3, 4), grid, beta, 1e-9), "3 × 4")
    _assert_same_bits(compiled(curves, np.float64(0.5), np.float64(0.8), np.float64(1.0), beta, tol),
                      numpy_solve(curves, np.float64(0.5), np.float64(0.8), np.float64(1.0), beta, tol), "0-D")
    # a tolerance no residual meets: both paths give up at the same points with the same error
    messages = []
    for solve in (compiled, numpy_solve):
        with pytest.raises(RuntimeError, match="did not converge at [1-9][0-9]* points") as info:
            solve(curves, a[:200], fal[:200], target[:200], beta, -1.0)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("formulation", ["damped", "equilibrium", "rigid"])
def test_compiled_muscle_evaluation_equals_numpy(formulation, rng, monkeypatch):
    """The whole musculotendon evaluation (and the static equilibrium) gives the same bits through
    the compiled curves and damped solve as through the numpy reference."""
    from skfiber.hill import SmoothSegmentedCurve

    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    a, lmt, lce = random_states(rng, 300)
    a[:5], lce[5:10] = 0.0, 0.01                         # minimum activation, clamped fibers
    vmt = rng.uniform(-1.0, 1.0, lmt.size)
    lce_arg = None if formulation == "rigid" else lce

    def run():
        r = muscle.evaluate(activation=a, musculotendon_length=lmt, fiber_length=lce_arg, musculotendon_velocity=vmt)
        rest = muscle.static_equilibrium(activation=a[:40], musculotendon_length=lmt[:40])
        return r, rest

    with np.errstate(divide="ignore", invalid="ignore"):
        compiled = run()
        monkeypatch.setattr(SmoothSegmentedCurve, "evaluate", hill_reference.evaluate)
        monkeypatch.setattr(musculotendon, "solve_damped_fiber_velocity", hill_reference.solve_damped_fiber_velocity)
        reference = run()
    for got, want, what in zip(compiled, reference, ("evaluate", "static_equilibrium")):
        for field in want.__dataclass_fields__:
            _assert_same_bits(getattr(got, field), getattr(want, field), f"{formulation} {what}: {field}")


# ---------------------------------------------------------------------------
# rigid tendon (eqs. 4-7)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("alpha_o", [0.0, 0.2, 0.5])
def test_rigid_isometric_force_closed_form(alpha_o):
    params = MuscleParameters(max_isometric_force=800.0, optimal_fiber_length=0.12,
                              tendon_slack_length=0.25, pennation_angle_at_optimal=alpha_o)
    muscle = Millard2012Muscle(params, formulation="rigid")
    a = np.array([0.1, 0.5, 1.0])
    lmt = 0.25 + 0.12 * math.cos(alpha_o)                 # fiber at l_o: f^L = 1, f^PE = 0
    r = muscle.evaluate(activation=a, musculotendon_length=lmt, musculotendon_velocity=0.0)
    np.testing.assert_allclose(r.fiber_length, 0.12, rtol=1e-14)
    np.testing.assert_allclose(r.pennation_angle, alpha_o, atol=1e-14)
    np.testing.assert_allclose(r.tendon_force, a * 800.0 * math.cos(alpha_o), rtol=1e-13)
    np.testing.assert_allclose(r.d_tendon_force_d_activation, 800.0 * math.cos(alpha_o), rtol=1e-13)
    # shortening lowers and lengthening raises the force (force-velocity)
    slow = muscle.evaluate(activation=1.0, musculotendon_length=lmt, musculotendon_velocity=[-0.3, 0.3])
    assert slow.tendon_force[0] < 800.0 * math.cos(alpha_o) < slow.tendon_force[1]


def test_rigid_tangent_matches_finite_differences(rng):
    muscle = Millard2012Muscle(PARAMS, formulation="rigid")
    n = 300
    base = dict(activation=rng.uniform(0.05, 0.95, n), musculotendon_length=rng.uniform(0.21, 0.4, n),
                musculotendon_velocity=rng.uniform(-1.5, 1.5, n))
    r = muscle.evaluate(**base)
    assert r.clamped.sum() > 0 and (~r.clamped).sum() > 200
    for name, h in [("musculotendon_length", 1e-7), ("musculotendon_velocity", 1e-6), ("activation", 1e-6)]:
        plus = muscle.evaluate(**{**base, name: base[name] + h})
        minus = muscle.evaluate(**{**base, name: base[name] - h})
        fd = (plus.tendon_force - minus.tendon_force) / (2 * h)
        smooth = (plus.tendon_force > 0) == (minus.tendon_force > 0)
        np.testing.assert_allclose(getattr(r, f"d_tendon_force_d_{name}")[smooth], fd[smooth], rtol=1e-5,
                                   atol=1e-6 * np.abs(fd).max(), err_msg=name)


def test_rigid_tendon_is_tension_only():
    muscle = Millard2012Muscle(PARAMS, formulation="rigid")
    # fast shortening of a weakly active muscle: the damper would push
    r = muscle.evaluate(activation=0.02, musculotendon_length=0.31, musculotendon_velocity=-3.0)
    assert r.tendon_force == 0 and r.fiber_force == 0 and r.d_tendon_force_d_musculotendon_length == 0
    assert r.active_fiber_force + r.passive_fiber_force + r.damping_force == pytest.approx(0, abs=1e-12)
    # a path shorter than tendon + shortest fiber: the tendon is slack, the fiber clamped
    short = muscle.evaluate(activation=1.0, musculotendon_length=0.21, musculotendon_velocity=-0.5)
    assert short.clamped and short.tendon_force == 0 and short.fiber_velocity == 0
    assert short.fiber_length == pytest.approx(muscle.minimum_fiber_length)


# ---------------------------------------------------------------------------
# singular cases (paper: a → 0, f^L → 0, α → 90°, ∂f^V/∂ṽ → 0)
# ---------------------------------------------------------------------------
def test_zero_activation():
    kwargs = dict(activation=0.0, musculotendon_length=np.array([0.29, 0.3, 0.31]),
                  fiber_length=np.array([0.09, 0.1, 0.11]))
    # damped model: solvable at a = 0 exactly (β carries the tendon force)
    damped = Millard2012Muscle(MuscleParameters(minimum_activation=0.0))
    r = damped.evaluate(**kwargs)
    assert np.all(r.activation == 0) and np.all(np.isfinite(r.fiber_velocity))
    np.testing.assert_allclose(r.equilibrium_residual[~r.clamped], 0, atol=1e-8)
    np.testing.assert_allclose(r.damping_force * np.cos(r.pennation_angle) + r.passive_fiber_force
                               * np.cos(r.pennation_angle), r.tendon_force, atol=1e-8)
    # equilibrium model: a is kept at minimum_activation > 0, eq. (2) stays finite
    classic = Millard2012Muscle(formulation="equilibrium")
    r = classic.evaluate(**kwargs)
    assert np.all(r.activation == 0.01) and np.all(np.isfinite(r.fiber_velocity))
    np.testing.assert_allclose(r.equilibrium_residual[~r.clamped], 0, atol=1e-8)
    with pytest.raises(ValueError, match="minimum_activation=0.0"):
        Millard2012Muscle(MuscleParameters(minimum_activation=0.0), formulation="equilibrium")


def test_active_force_length_and_force_velocity_guards():
    with pytest.raises(ValueError, match="minimum_value=0.0"):
        Millard2012Muscle(formulation="equilibrium",
                          curves=MuscleCurves(active_force_length=ActiveForceLengthCurve(minimum_value=0.0)))
    curves = MuscleCurves.for_formulation("equilibrium")
    assert curves.active_force_length.minimum_value == 0.1
    assert curves.force_velocity.concentric_slope_at_vmax == 0.125       # 0.5 x near-vmax slope > 0
    assert curves.force_velocity.eccentric_slope_at_vmax == 0.075
    steeper = MuscleCurves.for_formulation("equilibrium", curves=MuscleCurves(
        force_velocity=ForceVelocityCurve(concentric_slope_at_vmax=0.2)))
    assert steeper.force_velocity.concentric_slope_at_vmax == 0.2
    assert steeper.force_velocity_inverse.concentric_slope_at_vmax == 0.2
    damped = MuscleCurves.for_formulation("damped")
    assert damped.active_force_length.minimum_value == 0.0
    assert damped.force_velocity.concentric_slope_at_vmax == 0.0
    mismatched = MuscleCurves(active_force_length=ActiveForceLengthCurve(),
                              force_velocity=ForceVelocityCurve(concentric_slope_at_vmax=0.2,
                                                                eccentric_slope_at_vmax=0.1))
    with pytest.raises(ValueError, match="ForceVelocityInverseCurve.of"):
        Millard2012Muscle(formulation="equilibrium", curves=mismatched)
    # fiber lengths where f^L is at its floor: the velocity stays finite
    muscle = Millard2012Muscle(formulation="equilibrium")
    r = muscle.evaluate(activation=1.0, musculotendon_length=0.4, fiber_length=np.array([0.19, 0.25]))
    assert np.all(r.active_force_length_multiplier == pytest.approx(0.1))
    assert np.all(np.isfinite(r.fiber_velocity))
    np.testing.assert_allclose(r.equilibrium_residual, 0, atol=1e-8)


def test_pennation_near_90_degrees():
    params = MuscleParameters(pennation_angle_at_optimal=1.4)            # 80° at l_o, α_max ≈ 84.3°
    for formulation in ("damped", "equilibrium"):
        muscle = Millard2012Muscle(params, formulation=formulation)
        l_min = muscle.minimum_fiber_length
        assert l_min == pytest.approx(0.1 * math.sin(1.4) / 0.995, rel=1e-3)
        lce = np.array([0.5 * l_min, l_min, 1.01 * l_min, 0.1])
        r = muscle.evaluate(activation=1.0, musculotendon_length=0.21, fiber_length=lce)
        assert np.all(np.isfinite(r.fiber_velocity)) and np.all(np.isfinite(r.tendon_force))
        assert np.all(r.pennation_angle <= params.maximum_pennation_angle + 1e-15)
        np.testing.assert_allclose(r.pennation_angle[:2], params.maximum_pennation_angle)
        np.testing.assert_allclose(r.fiber_length[:2], l_min)
        # at the minimum length the fiber may not shorten (unilateral constraint)
        assert np.all(r.fiber_velocity[:2] >= 0)
        assert np.all(r.clamped[:2] == (r.fiber_velocity[:2] == 0))
    with pytest.raises(ValueError, match="maximum_pennation_angle"):
        Millard2012Muscle(MuscleParameters(pennation_angle_at_optimal=1.4, maximum_pennation_angle=math.pi / 2))
    # the rigid tendon accepts α_max = 90°: the force vanishes as cos α → 0
    rigid = Millard2012Muscle(MuscleParameters(pennation_angle_at_optimal=1.4, maximum_pennation_angle=math.pi / 2),
                              formulation="rigid")
    lmt = 0.2 + np.array([0.0, 1e-6, 1e-3, 0.02])
    r = rigid.evaluate(activation=1.0, musculotendon_length=lmt, musculotendon_velocity=0.0)
    assert np.all(np.isfinite(r.tendon_force)) and np.all(np.isfinite(r.d_tendon_force_d_musculotendon_length))
    assert r.tendon_force[0] == 0 and np.all(np.diff(r.tendon_force) > 0)


def test_fiber_below_minimum_is_clamped():
    muscle = Millard2012Muscle(PARAMS, formulation="equilibrium")
    l_min = muscle.minimum_fiber_length
    # slack tendon, active fiber (f^L at its floor 0.1): eq. (2) gives ṽ* = -1, shortening
    r = muscle.evaluate(activation=1.0, musculotendon_length=0.2, fiber_length=np.array([0.9 * l_min, l_min]))
    assert np.all(r.tendon_force == 0) and np.all(r.fiber_force > 0)
    assert np.all(r.clamped) and np.all(r.fiber_velocity == 0) and np.all(r.fiber_length == l_min)
    assert np.all(r.d_fiber_velocity_d_fiber_length == 0) and np.all(r.d_tendon_force_d_fiber_length == 0)
    assert l_min == pytest.approx(max(ActiveForceLengthCurve().min_norm_active_fiber_length * 0.1,
                                      muscle.pennation.minimum_fiber_length))


# ---------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    (dict(max_isometric_force=0.0), "max_isometric_force"),
    (dict(optimal_fiber_length=-0.1), "optimal_fiber_length"),
    (dict(tendon_slack_length=float("nan")), "tendon_slack_length"),
    (dict(max_contraction_velocity=0.0), "max_contraction_velocity"),
    (dict(pennation_angle_at_optimal=2.0), "pennation_angle_at_optimal"),
    (dict(pennation_angle_at_optimal=0.5, maximum_pennation_angle=0.4), "maximum_pennation_angle"),
    (dict(fiber_damping=-1.0), "fiber_damping"),
    (dict(minimum_activation=1.0), "minimum_activation"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MuscleParameters(**kwargs)


def test_usage_errors():
    with pytest.raises(ValueError, match="pick one of damped, equilibrium, rigid"):
        Millard2012Muscle(formulation="hill")
    with pytest.raises(ValueError, match="fiber_damping=0.0"):
        Millard2012Muscle(MuscleParameters(fiber_damping=0.0), formulation="damped")
    with pytest.raises(ValueError, match="fiber_length is the state"):
        Millard2012Muscle().evaluate(activation=0.5, musculotendon_length=0.3)
    with pytest.raises(ValueError, match="do not pass fiber_length"):
        Millard2012Muscle(formulation="rigid").evaluate(activation=0.5, musculotendon_length=0.3,
                                                        fiber_length=0.1)
    with pytest.raises(ValueError, match="activation_time_constant"):
        FirstOrderActivation(activation_time_constant=0.0)


# ---------------------------------------------------------------------------
# OpenSim 4.6 (optional)
# ---------------------------------------------------------------------------
def _opensim_muscle(osim, damping, rigid):
    model = osim.Model()
    body = osim.Body("slider_body", 1.0, osim.Vec3(0), osim.Inertia(1))
    model.addBody(body)
    joint = osim.SliderJoint("slider", model.getGround(), osim.Vec3(0), osim.Vec3(0), body, osim.Vec3(0),
                             osim.Vec3(0))
    model.addJoint(joint)
    muscle = osim.Millard2012EquilibriumMuscle("muscle", 1000.0, 0.1, 0.2, 0.3)
    muscle.setFiberDamping(damping)
    muscle.set_ignore_tendon_compliance(rigid)
    muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0))
    muscle.addNewPathPoint("insertion", body, osim.Vec3(0))
    model.addForce(muscle)
    state = model.initSystem()
    return model, muscle, state, joint.getCoordinate()


#: OpenSim 4.6's Millard2012EquilibriumMuscle on the model of :func:`_opensim_muscle` (recorded 2026-11-29 with
#: the same calls as the live comparison below): elastic tendon, damped (damping 0.1) and undamped
#: (equilibrium): (musculotendon length m, activation, fiber length m, fiber velocity m/s, tendon force N,
#: pennation angle rad); rigid tendon: (musculotendon length m, its velocity m/s, activation, fiber length m,
#: fiber velocity m/s, tendon force N).  For the machines without OpenSim's wheels.
OPENSIM_RECORDED = {
    "damped": [
        (0.3, 0.5, 0.1, -0.08475691081585855, 308.41587058295806, 0.3),
        (0.31, 0.2, 0.09, 30.471827122318057, 3131.2681761443614, 0.3345623160686406),
        (0.28, 1.0, 0.07, 10.730824295700497, 1946.2088590977983, 0.43583966946290587),
        (0.33, 0.05, 0.12, 14.883937788857086, 1546.5978742112711, 0.24882657062107658),
        (0.3, 0.01, 0.1, 3.0883480647247437, 308.41587058295806, 0.3),
        (0.29, 0.7, 0.095, -0.6318192216393516, 0.0, 0.3163227878957626),
    ],
    "equilibrium": [
        (0.3, 0.5, 0.1, -0.09204645629686091, 308.41587058295806, 0.3),
        (0.31, 0.2, 0.09, 213.32654971399595, 3131.2681761443614, 0.3345623160686406),
        (0.28, 1.0, 0.07, 19.653697234013205, 1946.2088590977983, 0.43583966946290587),
        (0.33, 0.05, 0.12, 482.8673998052037, 1546.5978742112711, 0.24882657062107658),
        (0.3, 0.01, 0.1, 412.7797419632991, 308.41587058295806, 0.3),
        (0.29, 0.7, 0.095, -1.0, 0.0, 0.3163227878957626),
    ],
    "rigid": [
        (0.3, 0.0, 1.0, 0.10427522201103963, 0.0, 961.9579877520523),
        (0.31, 0.3, 0.5, 0.11390049133103688, 0.289726581635981, 620.2140239242375),
        (0.28, -0.4, 0.8, 0.08528377293161701, -0.37521792129973575, 140.36545411603183),
        (0.25, -0.4, 0.8, 0.05808030583125064, -0.34435080383545114, 45.435852649374404),
        (0.33, 1.5, 0.3, 0.133316622839958, 1.4626833161989916, 564.6073606226795),
        (0.26, -2.5, 0.05, 0.06688289710719482, -2.2427258161319092, 0.0),
    ],
}


def _elastic_matches(mine, lmt, a, lce, velocity, force, pennation):
    r = mine.evaluate(activation=a, musculotendon_length=lmt, fiber_length=lce)
    assert float(r.fiber_velocity) == pytest.approx(velocity, rel=1e-8, abs=1e-9)
    assert float(r.tendon_force) == pytest.approx(force, rel=1e-10)
    assert float(r.pennation_angle) == pytest.approx(pennation, rel=1e-12)


def _rigid_matches(mine, lmt, v, a, length, velocity, force):
    r = mine.evaluate(activation=a, musculotendon_length=lmt, musculotendon_velocity=v)
    assert float(r.fiber_length) == pytest.approx(length, rel=1e-12)
    assert float(r.fiber_velocity) == pytest.approx(velocity, rel=1e-10, abs=1e-12)
    assert float(r.tendon_force) == pytest.approx(force, rel=1e-10, abs=1e-9)


def test_musculotendon_matches_recorded_opensim():
    """The comparison below against OpenSim's recorded numbers: it runs where OpenSim has no wheel too."""
    for formulation in ("damped", "equilibrium"):
        mine = Millard2012Muscle(PARAMS, formulation=formulation)
        for row in OPENSIM_RECORDED[formulation]:
            _elastic_matches(mine, *row)
    mine = Millard2012Muscle(PARAMS, formulation="rigid")
    for row in OPENSIM_RECORDED["rigid"]:
        _rigid_matches(mine, *row)


def test_musculotendon_matches_opensim():
    osim = pytest.importorskip(
        "opensim", reason="OpenSim's Python package is not installed (pip install -e '.[opensim]') - "
                          "comparison with OpenSim 4.6 skipped")
    osim.Logger.setLevelString("error")
    cases = [(0.30, 0.5, 0.10), (0.31, 0.2, 0.09), (0.28, 1.0, 0.07), (0.33, 0.05, 0.12), (0.30, 0.01, 0.10),
             (0.29, 0.7, 0.095)]
    for formulation, damping in [("damped", 0.1), ("equilibrium", 0.0)]:
        model, theirs, state, q = _opensim_muscle(osim, damping, rigid=False)
        mine = Millard2012Muscle(PARAMS, formulation=formulation)
        for lmt, a, lce in cases:
            q.setValue(state, lmt)
            theirs.setActivation(state, a)
            theirs.setFiberLength(state, lce)
            model.realizeDynamics(state)
            _elastic_matches(mine, lmt, a, lce, theirs.getFiberVelocity(state), theirs.getTendonForce(state),
                             theirs.getPennationAngle(state))
    model, theirs, state, q = _opensim_muscle(osim, 0.1, rigid=True)
    mine = Millard2012Muscle(PARAMS, formulation="rigid")
    for lmt, v, a in [(0.30, 0.0, 1.0), (0.31, 0.3, 0.5), (0.28, -0.4, 0.8), (0.25, -0.4, 0.8), (0.33, 1.5, 0.3),
                      (0.26, -2.5, 0.05)]:
        q.setValue(state, lmt)
        q.setSpeedValue(state, v)
        theirs.setActivation(state, a)
        model.realizeDynamics(state)
        _rigid_matches(mine, lmt, v, a, theirs.getFiberLength(state), theirs.getFiberVelocity(state),
                       theirs.getTendonForce(state))


@pytest.mark.parametrize("call, says", [
    (lambda m: m.static_equilibrium(activation=np.nan, musculotendon_length=0.3), "activation must be finite"),
    (lambda m: m.static_equilibrium(activation=1.0, musculotendon_length=-0.3), "musculotendon_length must be > 0"),
    (lambda m: m.static_equilibrium(activation=[1.0, 1.0, 1.0], musculotendon_length=[0.3, 0.3]),
     r"do not broadcast together: activation \(3,\), musculotendon_length \(2,\)"),
    (lambda m: m.evaluate(activation=1.0, musculotendon_length=0.3, fiber_length=-0.1), "fiber_length must be > 0"),
    (lambda m: m.evaluate(activation=1.0, musculotendon_length=0.3, fiber_length=0.1,
                          musculotendon_velocity=np.inf), "musculotendon_velocity must be finite"),
])
def test_inputs_that_are_not_a_muscle_state_are_refused_by_name(call, says):
    """NaN, non-positive lengths and shapes that do not broadcast gave plausible-looking forces (a tendon force
    of 3.5 F0 for a NaN activation): each is now a ValueError naming the argument."""
    with pytest.raises(ValueError, match=says):
        call(Millard2012Muscle(PARAMS))


def test_a_missing_activation_is_refused():
    with pytest.raises(TypeError, match="activation must be a number"):
        Millard2012Muscle(PARAMS).static_equilibrium(activation=None, musculotendon_length=0.3)


def test_rigid_tendon_just_slack_carries_nothing_while_lengthening():
    # the path 0.5 mm shorter than the tendon's slack length plus the shortest fiber (its pennation from the
    # fixed height h = l_opt sin α_o): the tendon is slack, so even a lengthening path pulls on nothing;
    # 0.5 mm longer, the fiber is free and the lengthening active muscle pulls
    muscle = Millard2012Muscle(PARAMS, formulation="rigid")
    l_min = muscle.minimum_fiber_length
    height = PARAMS.optimal_fiber_length * math.sin(PARAMS.pennation_angle_at_optimal)
    threshold = PARAMS.tendon_slack_length + l_min * math.sqrt(1.0 - (height / l_min) ** 2)
    slack = muscle.evaluate(activation=1.0, musculotendon_length=threshold - 5e-4, musculotendon_velocity=0.5)
    assert slack.tendon_force == 0 and slack.fiber_velocity == 0
    assert slack.tendon_length < PARAMS.tendon_slack_length
    taut = muscle.evaluate(activation=1.0, musculotendon_length=threshold + 5e-4, musculotendon_velocity=0.5)
    assert taut.tendon_force > 0 and taut.fiber_velocity > 0


@pytest.mark.parametrize("formulation", ["damped", "equilibrium"])
def test_tendon_velocity_is_the_rate_of_the_tendon_length(formulation):
    # l^T = l^MT − l^M cos α with the fixed height h = l^M sin α: l^T(t) = l^MT(t) − √(l^M(t)² − h²) along the
    # path's and the fiber's velocities, differentiated by a central difference in time
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    height = PARAMS.optimal_fiber_length * math.sin(PARAMS.pennation_angle_at_optimal)
    lmt, lce, vmt = 0.31, 0.11, 0.4
    r = muscle.evaluate(activation=0.6, musculotendon_length=lmt, fiber_length=lce, musculotendon_velocity=vmt)
    assert abs(float(r.fiber_velocity)) > 1e-3  # (the fiber moves: the α̇ term matters)

    def tendon_length(t):
        return (lmt + vmt * t) - math.sqrt((lce + float(r.fiber_velocity) * t) ** 2 - height**2)

    h = 1e-6
    assert float(r.tendon_velocity) == pytest.approx((tendon_length(h) - tendon_length(-h)) / (2 * h), rel=1e-7)


# ---------------------------------------------------------------------------
# one-sided derivatives at the bounds, and the slope of the static equilibrium's Newton iteration
# ---------------------------------------------------------------------------
def _one_sided_differences(f, x, step):
    """(left, right) difference quotients of f at the points x."""
    return (f(x) - f(x - step)) / step, (f(x + step) - f(x)) / step


@pytest.mark.parametrize("formulation, quantity", [("rigid", "tendon_force"), ("damped", "fiber_velocity")])
def test_activation_derivative_is_one_sided_at_its_bounds(formulation, quantity):
    """a is clamped to [a_min, 1]: below a_min and above 1 the derivative and both difference quotients are 0;
    at a_min it is the right-hand quotient, at 1 the left-hand one (the side inside the range), inside the
    central one. Quotients with δ = 10⁻⁷ (rigid: f linear in a; damped: error O(δ f″)), measured agreement
    ≤ 7·10⁻⁸ relative, 10⁻⁵ allowed; the unclamped derivative outside, or 0 at a bound, fails."""
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    a_min = PARAMS.minimum_activation
    a = np.array([0.5 * a_min, a_min, 0.5, 1.0, 1.3])
    state = dict(musculotendon_length=0.305, musculotendon_velocity=0.2)
    if formulation != "rigid":
        state["fiber_length"] = 0.1

    def f(x):
        return getattr(muscle.evaluate(activation=x, **state), quantity)

    r = muscle.evaluate(activation=a, **state)
    assert not r.clamped.any()
    exact = getattr(r, f"d_{quantity}_d_activation")
    left, right = _one_sided_differences(f, a, 1e-7)
    assert exact[0] == left[0] == right[0] == 0 and exact[4] == left[4] == right[4] == 0
    assert left[1] == 0 and right[3] == 0 and abs(right[1]) > 0.1 and abs(left[3]) > 0.1
    np.testing.assert_allclose(exact[1:4], [right[1], 0.5 * (left[2] + right[2]), left[3]], rtol=1e-5)


@pytest.mark.parametrize("formulation", ["damped", "equilibrium"])
def test_fiber_length_derivatives_vanish_where_the_fiber_is_held_at_its_minimum_length(formulation):
    """l^M is held at l_min: below it the tangent's fiber-length derivatives and both difference quotients
    are 0, at l_min the tangent is that of the held side (0; the right-hand quotient is not), above it the
    central quotient (δ = 10⁻⁹ m, measured agreement 10⁻⁹; 10⁻⁵ relative allowed). The fiber lengthens
    (the tendon is stretched), so nothing is clamped by the velocity."""
    muscle = Millard2012Muscle(PARAMS, formulation=formulation)
    l_min = muscle.minimum_fiber_length
    lce = np.array([0.9 * l_min, l_min, 1.1 * l_min])
    state = dict(activation=0.5, musculotendon_length=1.02 * PARAMS.tendon_slack_length + l_min)
    r = muscle.evaluate(fiber_length=lce, **state)
    assert not r.clamped.any() and np.all(r.fiber_velocity > 0)
    for quantity in ("tendon_force", "fiber_velocity"):
        def f(x):
            return getattr(muscle.evaluate(fiber_length=x, **state), quantity)

        exact = getattr(r, f"d_{quantity}_d_fiber_length")
        left, right = _one_sided_differences(f, lce, 1e-9)
        assert exact[0] == left[0] == right[0] == 0, quantity
        assert exact[1] == left[1] == 0 and abs(right[1]) > 1.0, quantity
        assert exact[2] == pytest.approx(0.5 * (left[2] + right[2]), rel=1e-5), quantity


def test_static_equilibrium_newton_steps_with_the_exact_slope_of_its_residual(monkeypatch):
    """The static equilibrium solves r(l) = (a f^L + f^PE) cos α − f^T(l^T) = 0 (eq. 1 at f^V = 1) by Newton from
    the bracket's midpoint; the fiber lengths it evaluates (spied on the geometry) give the slope it used,
    −r(l₀)/(l₁ − l₀), which must equal a central difference of r (δ = 10⁻⁷ m, measured 10⁻¹⁰ relative; 10⁻⁶
    allowed). At α ≈ 37°–55° the pennation part −g sin α α′ of the slope is 1.6–3.3 % of it."""
    params = MuscleParameters(max_isometric_force=1000.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                              pennation_angle_at_optimal=0.5)
    muscle = Millard2012Muscle(params)
    curves, pen = muscle.curves, muscle.pennation
    a, lmt = np.array([1.0, 0.6, 1.0]), np.array([0.27, 0.30, 0.25])
    seen = []
    geometry = Millard2012Muscle._geometry

    def spy(self, lce):
        seen.append(np.atleast_1d(np.array(lce, dtype=float)))
        return geometry(self, lce)

    monkeypatch.setattr(Millard2012Muscle, "_geometry", spy)
    rest = muscle.static_equilibrium(activation=a, musculotendon_length=lmt)
    lo, l0, l1 = seen[:3]
    hi = pen.fiber_length(lmt, params.tendon_slack_length)
    assert np.all(lo == muscle.minimum_fiber_length) and l0 == pytest.approx(0.5 * (lo + hi), rel=1e-14)
    assert l1.shape == (3,) and np.all(np.abs(rest.fiber_length - l1) < np.abs(rest.fiber_length - l0))

    def residual(lce):
        cos = np.cos(pen.pennation_angle(lce))
        lopt = params.optimal_fiber_length
        return ((a * curves.active_force_length(lce / lopt) + curves.fiber_force_length(lce / lopt)) * cos
                - curves.tendon_force_length((lmt - lce * cos) / params.tendon_slack_length))

    assert np.all(pen.pennation_angle(l0) > 0.6)
    slope = (residual(l0 + 1e-7) - residual(l0 - 1e-7)) / 2e-7
    np.testing.assert_allclose(-residual(l0) / (l1 - l0), slope, rtol=1e-6)
