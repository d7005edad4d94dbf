"""skfiber.contact.gap: the current radius (incompressibility, eq. 21) and the normalized gap (eq. 40); the
output's radius, stretch and stretch rate (eq. 33) against closed forms."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact.gap import admissibility, current_radius, normalized_gap
from skfiber.postprocess import fiber_fields


@pytest.mark.parametrize("stretch", [0.7, 1.0, 1.3])
def test_current_radius_keeps_the_volume(stretch):
    # a slice of reference length dS and radius r0 keeps its volume: π r² λ dS = π r0² dS
    r0, reference_speed = 0.002, 0.31
    r = current_radius(r0, reference_speed, stretch * reference_speed)
    assert np.pi * r**2 * stretch == pytest.approx(np.pi * r0**2, rel=1e-14)


def test_current_radius_broadcasts_and_is_infinite_at_zero_speed():
    r = current_radius(np.full((2, 3), 0.01), np.ones((2, 3)), np.array([1.0, 4.0, 0.0]))
    np.testing.assert_allclose(r[:, :2], [[0.01, 0.005]] * 2, rtol=1e-15)
    assert np.isinf(r[:, 2]).all()


def test_gap_and_admissibility_of_two_cylinders():
    # touching: g = 0, margin 1; axes meeting: g = −1, margin 1 − γ; apart by one radius sum: g = 1
    assert normalized_gap(0.5, 0.2, 0.3) == 0.0
    assert normalized_gap(0.0, 0.2, 0.3) == -1.0
    assert normalized_gap(1.0, 0.2, 0.3) == pytest.approx(1.0, rel=1e-15)
    assert admissibility(0.0, 2.0) == 1.0 and admissibility(-1.0, 0.5) == 0.5
    assert admissibility(-0.5, 2.0) == 0.0  # the penalty law's pole


def test_output_radius_of_a_stretched_fiber():
    # a straight fiber scaled by 1.2 (positions and slopes), x = 1.2 X: r = r0/√1.2 everywhere
    fiber = sf.Fiber.straight((0.1, 0.2, 0.3), (1, 0.5, 0), n_elements=4, radius=0.01)
    model = sf.Model([fiber])
    u = 0.2 * model.discretization.reference_dofs
    fields = fiber_fields(model, sf.State(t=0.0, u=u, v=np.zeros_like(u)), 0)
    np.testing.assert_allclose(fields.stretch, 1.2, rtol=1e-12)
    np.testing.assert_allclose(fields.radius, 0.01 / np.sqrt(1.2), rtol=1e-12)


def test_output_stretch_rate_of_a_fiber_of_length_two():
    # a straight fiber of length L = 2 (|A1| = 2) scaled by 1.2 and pulled apart at speed V at its far end,
    # x(θ) = 1.2 X(θ), ẋ = V θ e: λ = 1.2, λ̇ = V/L, r = r0/√1.2
    fiber = sf.Fiber.straight((0.0, 0.0, 0.0), (2.0, 0.0, 0.0), n_elements=4, radius=0.01)
    model = sf.Model([fiber])
    X = model.discretization.reference_dofs
    u = 0.2 * X
    v = 0.35 * X / 2.0  # the velocity field V θ e with V = 0.35 m/s: values V X/L, slopes V A1/L
    fields = fiber_fields(model, sf.State(t=0.0, u=u, v=v), 0)
    np.testing.assert_allclose(fields.stretch, 1.2, rtol=1e-12)
    np.testing.assert_allclose(fields.stretch_rate, 0.35 / 2.0, rtol=1e-12)
    np.testing.assert_allclose(fields.radius, 0.01 / np.sqrt(1.2), rtol=1e-12)
