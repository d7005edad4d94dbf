"""How accurate the axial force N at a point is: a straight fiber without load, whose exact N is constant.

The fiber has the upper limb's r0(θ) and γM(θ) (paper eq. 77) and the biceps' law at α(1 s); both ends
are fixed at the mean stretch of biceps1 in the upper limb at t = 1 s (0.8804).  Without load N is
constant along it, and the stretch follows from N(λ, θ) = N at every θ with ∫ λ dθ = 0.8804: a closed
form up to root finding, independent of the finite elements.  The finite-element N (``fiber_fields``:
from the stretch of the cubic Hermite field) wiggles about it like the upper limb's N(θ) at the same
mesh, and the error falls like h³ (``docs/theory.md``, upper limb).
"""
import numpy as np
import pytest
from scipy.optimize import brentq

import skfiber as sf
from skfiber.demos import upper_limb
from skfiber.materials import MaterialPoint
from skfiber.statics import solve_static

LENGTH = 0.37        # the biceps' reference length (m)
MEAN_STRETCH = 0.8804
ALPHA = upper_limb.alpha_biceps(1.0)
LAW = upper_limb.biceps_law()


def _coefficients(theta, constant):
    if constant:
        return np.full_like(theta, 0.09), np.full_like(theta, 0.5)
    return upper_limb.radius(theta), upper_limb.muscle_fraction(theta)


def _axial_force(lam, theta, constant):
    r0, gm = _coefficients(theta, constant)
    S = LAW(MaterialPoint(lam, np.zeros_like(lam), theta=theta, t=1.0, muscle_fraction=gm, activation=ALPHA)).stress
    return np.pi * r0**2 * lam * S


def exact_force(constant=False, bracket=(1500.0, 4500.0)):
    """The constant N of the load-free fiber: λ(N, θ) by bisection on [0.6, 1.25] (N rises with λ there),
    ∫ λ dθ by 200-point Gauss, N in ``bracket`` by Brent's method."""
    x, w = np.polynomial.legendre.leggauss(200)
    theta, w = (x + 1) / 2, w / 2

    def mean_stretch(N):
        lo, hi = np.full_like(theta, 0.6), np.full_like(theta, 1.25)
        assert np.all(_axial_force(lo, theta, constant) < N) and np.all(_axial_force(hi, theta, constant) > N)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = _axial_force(mid, theta, constant) < N
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return w @ (0.5 * (lo + hi))

    return brentq(lambda N: mean_stretch(N) - MEAN_STRETCH, *bracket, xtol=1e-10)


def solve(n_elements, constant=False, *, recovered=False):
    """The static solution: N at given θ (a function; ``recovered``: :func:`skfiber.recovered_axial_force`) and
    the forces at the two ends (the residual there)."""
    r0, gm = (0.09, 0.5) if constant else (upper_limb.radius, upper_limb.muscle_fraction)
    fiber = sf.Fiber.straight((0, 0, 0), (0, 0, -LENGTH), n_elements=n_elements, radius=r0, muscle_fraction=gm,
                              density=900.0, law=LAW, activation=ALPHA, name="fiber")
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.prescribe(fiber, "end", lambda t: (0.0, 0.0, LENGTH * (1.0 - MEAN_STRETCH)))
    state = solve_static(model, load_steps=32).state
    residual = model.evaluate(state.u, 0 * state.u, 0 * state.u, state.t, c_v=0.0, c_a=0.0, tangent=False).residual

    def force(theta):
        if recovered:
            return sf.recovered_axial_force(model, state, fiber, theta=np.ravel(theta))
        return sf.fiber_fields(model, state, fiber, theta=np.ravel(theta)).force

    return force, [residual[model.discretization.end_dofs(fiber, end)] for end in ("start", "end")]


def projection_on_quadratics(force, n_elements):
    """The L2 projection (4 Gauss points per element, the cable's quadrature) of N onto the continuous piecewise
    quadratics (the θ-derivatives of the cubic Hermite test functions), values at the 2 n + 1 nodes."""
    x, w = np.polynomial.legendre.leggauss(4)
    xi, w = (x + 1) / 2, w / 2 / n_elements
    B = np.array([2 * (xi - 0.5) * (xi - 1), 4 * xi * (1 - xi), 2 * xi * (xi - 0.5)])
    n = 2 * n_elements + 1
    M, b = np.zeros((n, n)), np.zeros(n)
    for e in range(n_elements):
        idx = [2 * e, 2 * e + 1, 2 * e + 2]
        M[np.ix_(idx, idx)] += (B * w) @ B.T
        b[idx] += (B * w) @ force((e + xi) / n_elements)
    return np.linalg.solve(M, b)


@pytest.fixture(scope="module")
def exact():
    return exact_force()


def test_pointwise_force_wiggles_and_converges_like_h_cubed(exact):
    """Measured: exact N = 3000.24 N; largest |N − N_exact|/N_exact at the demo's samples (4 per element)
    10.5 %, 1.11 %, 0.146 % at 8, 16, 32 elements (rates 3.2 and 2.9), the largest deviation of a sample
    from its neighbours' mean 11.0 % of the mean at 8 elements (biceps1 in the upper limb at t = 1 s:
    11.1 %)."""
    assert exact == pytest.approx(3000.24, abs=0.01)
    errors = {}
    for n in (8, 16, 32):
        N = solve(n)[0](np.linspace(0.0, 1.0, 4 * n + 1))
        errors[n] = np.abs(N - exact).max() / exact
        if n == 8:
            wiggle = np.abs(N[1:-1] - 0.5 * (N[:-2] + N[2:])).max() / N.mean()
            assert 0.08 < wiggle < 0.14, wiggle
    assert 0.08 < errors[8] < 0.13, errors
    assert np.log2(errors[8] / errors[16]) > 2.5 and np.log2(errors[16] / errors[32]) > 2.5, errors


def test_force_in_the_weak_sense_is_constant_and_accurate(exact):
    """Galerkin: the projection of N onto the derivatives of the test functions is constant, as equilibrium
    without load demands, equals the force at the fixed ends (the residual there) and is far more accurate
    than N at a point: measured 3002.00 N (5.9e-4) at 8 elements, 3000.249 N (4.2e-6) at 16 against
    3000.237 N."""
    for n, tol in ((8, 1e-3), (16, 1e-5)):
        force, (start, end) = solve(n)
        P = projection_on_quadratics(force, n)
        assert np.ptp(P) < 1e-6 * exact, (n, np.ptp(P))
        assert abs(P.mean() - exact) < tol * exact, (n, P.mean(), exact)
        assert np.allclose(start, [0.0, 0.0, P.mean()], rtol=1e-7, atol=1e-6 * exact), (n, start, P.mean())
        assert np.allclose(end, -start, rtol=1e-7, atol=1e-6 * exact), (n, start, end)


def test_constant_coefficients_give_a_constant_force():
    """With r0 and γM constant the stretch is uniform, the cubic Hermite field represents it exactly, and N at
    the samples is the exact constant (measured: 5831.298 N, to 1e-9 or better)."""
    exact = exact_force(constant=True, bracket=(4000.0, 8000.0))
    N = solve(8, constant=True)[0](np.linspace(0.0, 1.0, 33))
    assert np.abs(N - exact).max() < 1e-7 * exact


def test_recovered_force_is_the_projection_and_is_accurate(exact):
    """``recovered_axial_force`` is the L2 projection above (the test's own, with numpy) and, on the load-free
    fiber, a constant within 1e-3 of the exact N at 8 elements where N at a point is 10 % off."""
    for n in (8, 16):
        pointwise, _ = solve(n)
        recovered, _ = solve(n, recovered=True)
        nodes = np.linspace(0.0, 1.0, 2 * n + 1)
        np.testing.assert_allclose(recovered(nodes), projection_on_quadratics(pointwise, n), rtol=1e-10)
        samples = recovered(np.linspace(0.0, 1.0, 4 * n + 1))
        assert np.abs(samples - exact).max() < (1e-3 if n == 8 else 1e-5) * exact, (n, samples)
        wiggle = np.abs(samples[1:-1] - 0.5 * (samples[:-2] + samples[2:])).max() / samples.mean()
        assert wiggle < 1e-8, (n, wiggle)
