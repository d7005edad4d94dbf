"""Quintic-Bézier muscle curves (skfiber.hill.curves): derivatives, shapes,
parameter checks and, when OpenSim is installed, agreement with OpenSim 4.6."""
import math

import hill_reference
import numpy as np
import pytest

from skfiber.hill import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    SmoothSegmentedCurve,
    TendonForceLengthCurve,
    corner_control_points,
)

# each curve with an x-range covering its Bézier segments and both linear ends
CURVES = {
    "active_force_length": (ActiveForceLengthCurve(), (0.2, 2.0)),
    "active_force_length_min0": (ActiveForceLengthCurve(minimum_value=0.0), (0.2, 2.0)),
    "force_velocity": (ForceVelocityCurve(), (-1.3, 1.3)),
    "force_velocity_inverse": (ForceVelocityInverseCurve(), (-0.2, 1.6)),
    "fiber_force_length": (FiberForceLengthCurve(), (0.8, 2.0)),
    "tendon_force_length": (TendonForceLengthCurve(), (0.97, 1.08)),
    "tendon_custom": (TendonForceLengthCurve(0.04, stiffness_at_one_norm_force=40.0,
                                             norm_force_at_toe_end=0.5, curviness=0.3), (0.97, 1.07)),
}


@pytest.mark.parametrize("name", CURVES)
def test_derivatives_match_central_differences(name):
    curve, (lo, hi) = CURVES[name]
    x = np.linspace(lo, hi, 401)
    h = 1e-6
    ev = curve.evaluate(x, order=2)
    fd1 = (curve(x + h) - curve(x - h)) / (2 * h)
    h2 = 1e-8  # the toe corners have third derivatives ~1e7: keep the O(h f''') error small
    fd2 = (curve.derivative(x + h2) - curve.derivative(x - h2)) / (2 * h2)
    np.testing.assert_allclose(ev.derivative, fd1, rtol=0, atol=2e-6 * (1 + np.abs(ev.derivative).max()))
    np.testing.assert_allclose(ev.second_derivative, fd2, rtol=0,
                               atol=2e-5 * (1 + np.abs(ev.second_derivative).max()))
    # the convenience methods agree with evaluate()
    np.testing.assert_array_equal(curve(x), ev.value)
    np.testing.assert_array_equal(curve.derivative(x, 2), ev.second_derivative)


@pytest.mark.parametrize("name", CURVES)
def test_parameter_solve_is_accurate_everywhere(name):
    curve, _ = CURVES[name]
    x0, x1 = curve.domain
    joins = curve.curve.x_points[:, 0]
    x = np.concatenate([np.linspace(x0, x1, 2001), joins, [x1], np.nextafter(joins, np.inf)])
    x = x[(x >= x0) & (x <= x1)]
    seg, u = curve.curve.parameter(x)
    assert np.all((u >= 0) & (u <= 1))
    coeffs = curve.curve.x_points[seg]
    bern = np.stack([math.comb(5, k) * u**k * (1 - u) ** (5 - k) for k in range(6)], axis=1)
    assert np.max(np.abs(np.sum(bern * coeffs, axis=1) - x)) < 1e-13


def test_shapes_are_preserved():
    fal = ActiveForceLengthCurve()
    x = np.linspace(0.5, 1.5, 12).reshape(3, 4)
    assert fal(x).shape == (3, 4)
    assert fal.derivative(x).shape == (3, 4)
    assert np.ndim(fal(1.0)) == 0
    assert fal(np.array([])).shape == (0,)


def test_active_force_length_peak_and_plateaus():
    fal = ActiveForceLengthCurve()
    x = np.linspace(0.0, 2.5, 25001)
    y = fal(x)
    assert fal(1.0) == pytest.approx(1.0, abs=1e-14)
    assert fal.derivative(1.0) == pytest.approx(0.0, abs=1e-12)
    assert x[np.argmax(y)] == pytest.approx(1.0, abs=1e-4)
    assert y.max() <= 1.0 + 1e-12
    outside = (x <= fal.min_norm_active_fiber_length) | (x >= fal.max_norm_active_fiber_length)
    np.testing.assert_allclose(y[outside], 0.1, atol=1e-14)
    assert np.all(y >= 0.1 - 1e-12)
    # ascending limb rises, descending limb falls
    assert np.all(np.diff(y[(x > 0.45) & (x < 1.0)]) >= -1e-12)
    assert np.all(np.diff(y[(x > 1.0) & (x < 1.8)]) <= 1e-12)
    assert np.all(np.isfinite(fal.derivative(x, 2)))


def test_force_velocity_values():
    fv = ForceVelocityCurve()
    assert fv(0.0) == pytest.approx(1.0, abs=1e-14)
    assert fv.derivative(0.0) == pytest.approx(5.0, rel=1e-12)      # isometric slope
    assert fv(-1.0) == pytest.approx(0.0, abs=1e-14)
    assert fv(1.0) == pytest.approx(1.4, abs=1e-14)
    assert fv(-2.0) == 0.0 and fv(3.0) == pytest.approx(1.4)        # flat ends (slopes 0)
    v = np.linspace(-1.5, 1.5, 3001)
    assert np.all(np.diff(fv(v)) >= -1e-14)


def test_force_velocity_inverse_is_the_inverse():
    inv = ForceVelocityInverseCurve()
    fv = ForceVelocityCurve(concentric_slope_at_vmax=0.1, eccentric_slope_at_vmax=0.1)
    v = np.linspace(-1.2, 1.2, 1201)        # beyond ±1 the linear ends invert too
    np.testing.assert_allclose(inv(fv(v)), v, atol=1e-11)
    f = np.linspace(-0.05, 1.5, 1201)
    np.testing.assert_allclose(fv(inv(f)), f, atol=1e-11)
    np.testing.assert_allclose(inv.derivative(fv(v)) * fv.derivative(v), 1.0, rtol=1e-9)
    assert ForceVelocityInverseCurve.of(fv) == inv
    # the end slopes shape the whole curve: the default f^V (end slopes 0) is not
    # inverted exactly by the default inverse (end slopes 0.1)
    fv0 = ForceVelocityCurve()
    assert np.max(np.abs(inv(fv0(v)) - v)) > 1e-3
    other = ForceVelocityCurve(concentric_slope_at_vmax=0.05, eccentric_slope_at_vmax=0.05)
    np.testing.assert_allclose(ForceVelocityInverseCurve.of(other)(other(v)), v, atol=1e-11)


def test_fiber_force_length_values():
    fpe = FiberForceLengthCurve()
    assert fpe(1.7) == pytest.approx(1.0, abs=1e-14)                    # strain 0.7 → 1
    assert fpe.derivative(1.7) == pytest.approx(2.0 / 0.7, rel=1e-12)
    assert fpe(1.0) == pytest.approx(0.0, abs=1e-15) and fpe(0.5) == 0.0
    assert fpe(2.0) == pytest.approx(1.0 + 0.3 * 2.0 / 0.7)            # linear beyond
    x = np.linspace(0.9, 2.0, 2001)
    assert np.all(np.diff(fpe(x)) >= -1e-15)
    shifted = FiberForceLengthCurve(strain_at_zero_force=0.1, strain_at_one_norm_force=0.6)
    assert shifted(1.1) == pytest.approx(0.0, abs=1e-15) and shifted(1.6) == pytest.approx(1.0)


def test_tendon_force_length_values():
    ft = TendonForceLengthCurve()
    assert ft(1.049) == pytest.approx(1.0, abs=1e-14)                   # strain 0.049 → 1
    assert ft.derivative(1.049) == pytest.approx(1.375 / 0.049, rel=1e-12)
    assert ft(1.0) == 0.0 and ft.derivative(1.0) == 0.0 and ft(0.9) == 0.0
    x_toe = 1.049 + (2.0 / 3.0 - 1.0) / (1.375 / 0.049)
    assert ft(x_toe) == pytest.approx(2.0 / 3.0, abs=1e-14)            # end of the toe region
    x = np.linspace(1.0, 1.08, 2001)
    assert np.all(np.diff(ft(x)) > 0)
    assert np.all(ft.derivative(x, 2) >= -1e-9)                          # convex toe


def test_corner_control_points_and_curve_checks():
    xp, yp = corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 0.5)
    curve = SmoothSegmentedCurve(xp[None], yp[None], 0.0, 2.0)
    assert curve(0.5) > 0 and curve.derivative(0.0) == 0.0
    with pytest.raises(ValueError, match="C-shaped"):
        corner_control_points(0.0, 0.0, 1.0, 1.0, 0.5, 2.0, 0.5)          # tangents meet beyond the end
    with pytest.raises(ValueError, match="curviness"):
        corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 1.5)
    with pytest.raises(ValueError, match="non-decreasing"):
        SmoothSegmentedCurve(xp[::-1][None], yp[None], 0.0, 0.0)
    with pytest.raises(ValueError, match="order"):
        curve.evaluate(0.5, order=3)


@pytest.mark.parametrize("factory, kwargs, name", [
    (ActiveForceLengthCurve, dict(min_norm_active_fiber_length=0.8), "min_norm_active_fiber_length"),
    (ActiveForceLengthCurve, dict(transition_norm_fiber_length=1.2), "transition_norm_fiber_length"),
    (ActiveForceLengthCurve, dict(max_norm_active_fiber_length=0.9), "max_norm_active_fiber_length"),
    (ActiveForceLengthCurve, dict(shallow_ascending_slope=5.0), "shallow_ascending_slope"),
    (ActiveForceLengthCurve, dict(minimum_value=-0.1), "minimum_value"),
    (ActiveForceLengthCurve, dict(curviness=2.0), "curviness"),
    (ForceVelocityCurve, dict(max_eccentric_velocity_force_multiplier=1.0), "max_eccentric"),
    (ForceVelocityCurve, dict(concentric_slope_at_vmax=-0.1), "concentric_slope_at_vmax"),
    (ForceVelocityCurve, dict(concentric_slope_near_vmax=1.5), "concentric_slope_near_vmax"),
    (ForceVelocityCurve, dict(isometric_slope=0.5), "isometric_slope"),
    (ForceVelocityCurve, dict(eccentric_slope_near_vmax=0.5), "eccentric_slope_near_vmax"),
    (ForceVelocityCurve, dict(eccentric_curviness=-0.1), "eccentric_curviness"),
    (ForceVelocityInverseCurve, dict(concentric_slope_at_vmax=0.0), "concentric_slope_at_vmax"),
    (ForceVelocityInverseCurve, dict(eccentric_slope_at_vmax=0.0), "eccentric_slope_at_vmax"),
    (FiberForceLengthCurve, dict(strain_at_one_norm_force=-0.1), "strain_at_one_norm_force"),
    (FiberForceLengthCurve, dict(stiffness_at_one_norm_force=1.0), "stiffness_at_one_norm_force"),
    (FiberForceLengthCurve, dict(stiffness_at_low_force=0.0), "stiffness_at_low_force"),
    (FiberForceLengthCurve, dict(curviness=1.1), "curviness"),
    (TendonForceLengthCurve, dict(strain_at_one_norm_force=0.0), "strain_at_one_norm_force"),
    (TendonForceLengthCurve, dict(stiffness_at_one_norm_force=10.0), "stiffness_at_one_norm_force"),
    (TendonForceLengthCurve, dict(norm_force_at_toe_end=1.0), "norm_force_at_toe_end"),
    (TendonForceLengthCurve, dict(curviness=-1.0), "curviness"),
])
def test_bad_parameters_name_the_value_and_range(factory, kwargs, name):
    with pytest.raises(ValueError, match=name) as info:
        factory(**kwargs)
    assert "range" in str(info.value)
    assert repr(next(iter(kwargs.values()))) in str(info.value)


def test_curves_are_frozen_and_comparable():
    fal = ActiveForceLengthCurve()
    with pytest.raises(AttributeError):
        fal.minimum_value = 0.0
    assert fal == ActiveForceLengthCurve() and fal != ActiveForceLengthCurve(minimum_value=0.0)


# Values printed by OpenSim 4.6 (opensim-4.6 wheel, Python 3.11): calcValue and
# calcDerivative(x, 1) of the default curves, so the shapes are checked even where
# OpenSim cannot be installed.
OPENSIM_REFERENCE = {
    "ActiveForceLengthCurve": [
        (0.5, 0.11765335492808801, 1.7272178050555629),
        (0.6, 0.4511018783255816, 3.5411692717917744),
        (0.8, 0.87067661327986, 0.8685816945595795),
        (0.97, 0.9995094593935314, 0.06587794871369744),
        (1.2, 0.823680970871459, -1.3874587616057144),
        (1.5, 0.4033687054999136, -1.402586937692131),
        (1.75, 0.10273360518469589, -0.177597127915613),
    ],
    "ForceVelocityCurve": [
        (-0.95, 0.0028515625000000164, 0.12500000000000128),
        (-0.6, 0.10408841810335902, 0.44580905715757035),
        (-0.2, 0.4518981699924525, 1.3857607825356164),
        (0.1, 1.225153837753858, 0.684734392201829),
        (0.5, 1.3311315693144758, 0.16319551409785818),
        (0.95, 1.3991328124999998, 0.0749999999999759),
    ],
    "ForceVelocityInverseCurve": [
        (0.02, -0.8900013117036606, 3.998415308211559),
        (0.3, -0.3324914487249688, 0.9997056657147139),
        (0.8, -0.04286314202878086, 0.24871294184919532),
        (1.1, 0.022003184370783066, 0.2719561266986661),
        (1.3, 0.3501357505936645, 5.214556567247655),
        (1.39, 0.916691168077089, 6.700780381416725),
    ],
    "FiberForceLengthCurve": [
        (1.01, 9.529054962971643e-05, 0.03386567050644026),
        (1.1, 0.01704483509737836, 0.2273483592659682),
        (1.3, 0.12611118348262854, 1.070514371194866),
        (1.5, 0.4602615047912092, 2.3024398443553764),
        (1.65, 0.857425125459553, 2.839030331430211),
    ],
    "TendonForceLengthCurve": [
        (1.002, 0.007316946624299866, 7.948332578535417),
        (1.01, 0.09967827012198324, 13.8360369282014),
        (1.02, 0.2609359826149298, 19.584008318410284),
        (1.03, 0.47939871234804565, 23.74160249737328),
        (1.045, 0.8877551020408145, 28.06122448979592),
    ],
}
DEFAULTS = {
    "ActiveForceLengthCurve": ActiveForceLengthCurve,
    "ForceVelocityCurve": ForceVelocityCurve,
    "ForceVelocityInverseCurve": ForceVelocityInverseCurve,
    "FiberForceLengthCurve": FiberForceLengthCurve,
    "TendonForceLengthCurve": TendonForceLengthCurve,
}


@pytest.mark.parametrize("name", OPENSIM_REFERENCE)
def test_defaults_reproduce_recorded_opensim_values(name):
    x, value, slope = np.array(OPENSIM_REFERENCE[name]).T
    curve = DEFAULTS[name]()
    np.testing.assert_allclose(curve(x), value, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(curve.derivative(x), slope, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------
# OpenSim 4.6 (optional): every default curve and some custom ones
# ---------------------------------------------------------------------------
def _opensim_pairs(osim):
    return [
        ("ActiveForceLengthCurve", ActiveForceLengthCurve(), osim.ActiveForceLengthCurve(), (0.0, 2.2)),
        ("ActiveForceLengthCurve custom",
         ActiveForceLengthCurve(0.5, 0.75, 1.7, 0.5, 0.0),
         osim.ActiveForceLengthCurve(0.5, 0.75, 1.7, 0.5, 0.0), (0.3, 1.9)),
        ("ForceVelocityCurve", ForceVelocityCurve(), osim.ForceVelocityCurve(), (-1.3, 1.3)),
        ("ForceVelocityCurve custom",
         ForceVelocityCurve(0.05, 0.3, 4.0, 0.02, 0.2, 1.6, 0.3, 0.7),
         osim.ForceVelocityCurve(0.05, 0.3, 4.0, 0.02, 0.2, 1.6, 0.3, 0.7), (-1.3, 1.3)),
        ("ForceVelocityInverseCurve", ForceVelocityInverseCurve(), osim.ForceVelocityInverseCurve(),
         (-0.2, 1.6)),
        ("FiberForceLengthCurve", FiberForceLengthCurve(), osim.FiberForceLengthCurve(), (0.8, 2.0)),
        ("FiberForceLengthCurve custom",
         FiberForceLengthCurve(0.1, 0.6, stiffness_at_low_force=0.3, stiffness_at_one_norm_force=4.0,
                               curviness=0.5),
         osim.FiberForceLengthCurve(0.1, 0.6, 0.3, 4.0, 0.5), (0.9, 1.9)),
        ("TendonForceLengthCurve", TendonForceLengthCurve(), osim.TendonForceLengthCurve(), (0.97, 1.08)),
        ("TendonForceLengthCurve custom",
         TendonForceLengthCurve(0.04, stiffness_at_one_norm_force=40.0, norm_force_at_toe_end=0.5,
                                curviness=0.3),
         osim.TendonForceLengthCurve(0.04, 40.0, 0.5, 0.3), (0.97, 1.07)),
    ]


def test_curves_match_opensim():
    osim = pytest.importorskip(
        "opensim", reason="OpenSim's Python package is not installed (pip install -e '.[opensim]') - "
                          "comparison with OpenSim 4.6 skipped")
    report = []
    for name, mine, theirs, (lo, hi) in _opensim_pairs(osim):
        x = np.linspace(lo, hi, 201)
        ev = mine.evaluate(x, order=2)
        ref = np.array([[theirs.calcValue(float(xi)), theirs.calcDerivative(float(xi), 1),
                         theirs.calcDerivative(float(xi), 2)] for xi in x])
        err = np.abs(np.stack([ev.value, ev.derivative, ev.second_derivative], axis=1) - ref)
        report.append(f"{name}: value {err[:, 0].max():.1e}, slope {err[:, 1].max():.1e}, "
                      f"2nd {err[:, 2].max():.1e}")
        assert err[:, 0].max() < 1e-6, report[-1]
        assert err[:, 1].max() < 1e-6 * max(1.0, np.abs(ref[:, 1]).max()), report[-1]
        assert err[:, 2].max() < 1e-6 * max(1.0, np.abs(ref[:, 2]).max()), report[-1]
    print("\nmax |skfiber - OpenSim| over 201 points:\n  " + "\n  ".join(report))


# ---------------------------------------------------------------------------
# the compiled evaluation (skfiber.hill.curve_kernels) against the numpy reference (tests/hill_reference.py)
# ---------------------------------------------------------------------------
def _all_curves():
    """Every default curve of both elastic formulations, the curves above and the custom OpenSim ones."""
    from skfiber.hill import MuscleCurves

    out = {}
    for formulation in ("damped", "equilibrium"):
        mc = MuscleCurves.for_formulation(formulation)
        for field in mc.__dataclass_fields__:
            out[f"{formulation} {field}"] = getattr(mc, field).curve
    out.update({name: c.curve for name, (c, _) in CURVES.items()})
    out["active_force_length custom"] = ActiveForceLengthCurve(0.5, 0.75, 1.7, 0.5, 0.0).curve
    out["force_velocity custom"] = ForceVelocityCurve(0.05, 0.3, 4.0, 0.02, 0.2, 1.6, 0.3, 0.7).curve
    out["fiber_force_length custom"] = FiberForceLengthCurve(0.1, 0.6, stiffness_at_low_force=0.3,
                                                             stiffness_at_one_norm_force=4.0, curviness=0.5).curve
    xp, yp = corner_control_points(0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 0.5)
    out["one corner, integer slopes"] = SmoothSegmentedCurve(xp[None], yp[None], 0, 2)
    return out


ALL_CURVES = _all_curves()


def _assert_same_bits(compiled, reference, what):
    """Equal bit for bit (NaN equal to NaN)."""
    compiled, reference = np.asarray(compiled), np.asarray(reference)
    assert compiled.shape == reference.shape, what
    same = (compiled.view(np.int64) == reference.view(np.int64)) | (np.isnan(compiled) & np.isnan(reference))
    bad = np.flatnonzero(~same.ravel())
    assert bad.size == 0, (f"{what}: {bad.size} of {same.size} differ, e.g. {compiled.ravel()[bad[:3]]} "
                           f"against {reference.ravel()[bad[:3]]}")


def _assert_paths_agree(curve, x, what):
    for order in (0, 1, 2):
        compiled, reference = curve.evaluate(x, order=order), hill_reference.evaluate(curve, x, order=order)
        for field in ("value", "derivative", "second_derivative"):
            _assert_same_bits(getattr(compiled, field), getattr(reference, field), f"{what}, order {order}, {field}")


def _probe_points(curve, rng):
    """Inside, at and next to the joints and domain ends, outside, the table's own samples, NaN and ±inf."""
    x0, x1 = curve.domain
    w = x1 - x0
    joins = curve.x_points[:, 0]
    ends = np.array([x0, x1])
    x = np.concatenate([
        np.linspace(x0 - 0.3 * w, x1 + 0.3 * w, 3001), rng.uniform(x0, x1, 3000), joins, ends,
        np.nextafter(joins, np.inf), np.nextafter(joins, -np.inf), np.nextafter(ends, np.inf),
        np.nextafter(ends, -np.inf), curve.tables.table_x, [np.nan, np.inf, -np.inf, -1e300, 1e300]])
    return rng.permutation(x)


@pytest.mark.parametrize("name", ALL_CURVES)
def test_compiled_evaluation_equals_numpy_bit_for_bit(name, rng):
    curve = ALL_CURVES[name]
    x = _probe_points(curve, rng)
    with np.errstate(invalid="ignore", over="ignore"):   # ±inf and ±1e300 far outside
        _assert_paths_agree(curve, x, name)
        _assert_paths_agree(curve, np.sort(x), f"{name} (sorted)")
        # shapes, scalars and empty input
        _assert_paths_agree(curve, x[:12].reshape(3, 4), f"{name} (3 × 4)")
        _assert_paths_agree(curve, float(x[0]), f"{name} (scalar)")
        _assert_paths_agree(curve, np.array([]), f"{name} (empty)")
        # read-only and strided input
        ro = x.copy()
        ro.flags.writeable = False
        _assert_paths_agree(curve, ro, f"{name} (read-only)")
        _assert_paths_agree(curve, x[::3], f"{name} (strided)")
    # the convenience methods go through the compiled path
    xi = np.linspace(*curve.domain, 101)
    _assert_same_bits(curve(xi), hill_reference.evaluate(curve, xi, order=0).value, f"{name}: __call__")
    _assert_same_bits(curve.derivative(xi, 2), hill_reference.evaluate(curve, xi, order=2).second_derivative,
                      f"{name}: derivative(x, 2)")


def test_compiled_evaluation_follows_numpy_interp_guess():
    """At a segment joint the tabulated x(u) can decrease by an ulp; numpy's interp then answers
    by where it searched from (the previous point's index), and the Newton polish keeps a trace of
    that start.  The kernel repeats the search: evaluated point by point or in one call, in any
    order, it matches numpy."""
    differs = 0
    for name, curve in ALL_CURVES.items():
        tx = curve.tables.table_x
        drops = np.flatnonzero(np.diff(tx) < 0)
        if drops.size == 0:
            continue
        near = np.unique(np.concatenate([tx[max(k - 3, 0):k + 5] for k in drops]))
        near = np.unique(np.concatenate([near, 0.5 * (near[1:] + near[:-1])]))
        single = np.array([hill_reference.evaluate(curve, np.array([v])).value[0] for v in near])
        differs += int(np.sum(single != hill_reference.evaluate(curve, near).value))
        for xs in (near, near[::-1]):
            _assert_paths_agree(curve, xs, f"{name} near the joints")
        for v in near:
            _assert_paths_agree(curve, np.array([v]), f"{name} at {v!r}")
    assert differs > 0, "no point where numpy's interp guess matters: the test no longer checks it"


def test_compiled_evaluation_takes_the_safeguarded_fallback(monkeypatch):
    """x(u) = 10u³ − 15u⁴ + 6u⁵ (control points 0, 0, 0, 1, 1, 1) has x′ = x″ = 0 at both ends: near
    them three Newton steps from the table miss the tolerance and the bracketed Newton loop runs."""
    curve = SmoothSegmentedCurve(np.array([[0, 0, 0, 1, 1, 1.0], [1, 1, 1, 2, 2, 2]]),
                                 np.array([[0, 0.1, 0.3, 0.6, 0.9, 1.0], [1, 1.1, 1.3, 1.6, 1.9, 2]]), 0.0, 0.5)
    small = np.geomspace(1e-14, 1e-3, 200)
    x = np.concatenate([small, 1 - small, 1 + small, 2 - small, np.linspace(-0.5, 2.5, 301)])
    fallback = []
    original = hill_reference.parameter_safeguarded

    def spy(xs, cx):
        fallback.append(xs.size)
        return original(xs, cx)

    monkeypatch.setattr(hill_reference, "parameter_safeguarded", spy)
    with np.errstate(divide="ignore", invalid="ignore"):    # x′ = 0 at the joints: infinite slopes
        _assert_paths_agree(curve, x, "smoothstep curve")
    assert min(fallback) > 100        # most points near the flat ends took the fallback
    inside = x[(x >= 0) & (x <= 2)]
    seg, u = curve.parameter(inside)
    assert np.all((u >= 0) & (u <= 1))
    want_seg, want_u = hill_reference.parameter(curve, inside)
    _assert_same_bits(u, want_u, "smoothstep curve: parameter")
    assert np.array_equal(seg, want_seg)


@pytest.mark.parametrize("name", ALL_CURVES)
def test_compiled_parameter_equals_numpy_bit_for_bit(name, rng):
    """SmoothSegmentedCurve.parameter (the compiled kernel) against the numpy reference: inside the
    domain, where it is meant for, and outside it, NaN and ±inf included."""
    curve = ALL_CURVES[name]
    x = _probe_points(curve, rng)
    x0, x1 = curve.domain
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for xs, what in ((x[(x >= x0) & (x <= x1)], "inside"), (x, "everywhere"), (np.array([]), "empty"),
                         (x[:12].reshape(3, 4), "3 × 4")):
            seg, u = curve.parameter(xs)
            want_seg, want_u = hill_reference.parameter(curve, xs)
            assert seg.dtype == want_seg.dtype and np.array_equal(seg, want_seg), f"{name} {what}: segments"
            _assert_same_bits(u, want_u, f"{name} {what}: u")
