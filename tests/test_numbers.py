"""One definition of "a finite real number" for the numbers users give (skfiber.core.numbers), and the
inputs it refuses where skfiber takes numbers."""
import fractions

import numpy as np
import pytest
import sympy as sp

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.core import ErrorControl
from skfiber.core.numbers import checked_real, is_real


@pytest.mark.parametrize("value", [0, 1, -2.5, 1e300, 10**300, np.float32(0.5), np.int64(3)])
def test_real_numbers(value):
    assert is_real(value)
    assert checked_real("x", value) == float(value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), float("nan"), float("inf"), -np.inf, "1", None,
                                   [1.0], np.array([1.0]), np.array(2.0), 1 + 0j, 10**400, fractions.Fraction(1, 2),
                                   sp.Float(0.01), sp.Integer(2)])
def test_not_real_numbers(value):
    assert not is_real(value)
    with pytest.raises(ValueError, match="x must be a finite number, got"):
        checked_real("x", value)


def test_bounds_and_message():
    assert checked_real("r", 0.0, at_least=0) == 0.0
    with pytest.raises(ValueError, match=r"^r must be a finite number > 0 \(m\), got 0.0; give a radius$"):
        checked_real("r", 0.0, above=0, unit="m", hint="; give a radius")
    with pytest.raises(ValueError, match="r must be a finite number ≥ 1, got 0.5"):
        checked_real("r", 0.5, at_least=1)


def _fixed_fiber_model():
    fiber = sf.Fiber.straight((0, 0, 0), (0, 0, -0.3), n_elements=2, radius=0.01)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    return model


@pytest.mark.parametrize("call, name", [
    (lambda: sf.simulate(_fixed_fiber_model(), t_end=0.01, dt=True, progress=False), "dt"),
    (lambda: sf.simulate(_fixed_fiber_model(), t_end="1", dt=0.01, progress=False), "t_end"),
    (lambda: sf.paper_law(sigma0=True), "sigma0"),
    (lambda: PenaltyLaw(stiffness="1e4", gamma=2.0), "contact stiffness κ"),
    (lambda: sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, density=np.nan), "density"),
    (lambda: ErrorControl(rtol="1e-3", atol=1e-6, h_min=1e-6, h_max=0.1), "rtol"),
    (lambda: sf.check_tangent(_fixed_fiber_model(), dt="0.01"), "dt"),
])
def test_skfiber_names_a_number_that_is_not_one(call, name):
    """Booleans, strings and NaN are refused by name where skfiber takes a number (a bool used to pass as 0
    or 1 in some places, and a string to fail inside a comparison)."""
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        call()


def test_the_smallest_step_is_refused_as_the_bound_it_must_keep():
    """h_min ≤ 0 is refused as "> 0" (it said "≥ 0", and then refused 0 in another message)."""
    for h_min in (-1.0, 0.0):
        with pytest.raises(ValueError, match=r"h_min must be a finite number > 0 \(s\)"):
            ErrorControl(rtol=1e-3, atol=1e-6, h_min=h_min, h_max=0.1)


def test_rigid_simulation_names_a_bad_step():
    from skfiber.rigid import Body, Revolute, RigidSystem, simulate_rigid

    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.03, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0), point=(0, 0, 0)))
    system.finalize()
    for dt in ("0.01", True, -1.0):
        with pytest.raises(ValueError, match="dt must be a finite number > 0"):
            simulate_rigid(system, np.zeros(1), np.zeros(1), 0.1, dt)


@pytest.mark.parametrize("value", [True, "0.5", float("nan")])
def test_a_hill_curve_parameter_that_is_not_a_number_is_called_so(value):
    from skfiber.hill.checks import check_range

    with pytest.raises(ValueError, match=r"curviness=.* must be a finite number in \[0, 1\]"):
        check_range("curviness", value, 0.0, 1.0)
    with pytest.raises(ValueError, match="is outside the allowed range"):
        check_range("curviness", 1.5, 0.0, 1.0)
