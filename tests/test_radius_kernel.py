"""The reference radius r0(θ) of fiber–fiber contact compiled from its callable (skfiber.contact.radius_kernel).

Checked against the callable itself (values) and against closed-form derivatives, on every path of
``reference_radius``: one shared callable, several callables, constant and callable radii mixed, a
callable that cannot be traced, and a kernel that cannot be compiled.
"""
import math

import numba
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact.fiber_geometry import fiber_setup, reference_radius
from skfiber.contact.radius_kernel import RadiusKernel, radius_kernel


def eq77(theta):
    return 0.06 * (1.0 + 16.0 * (1.0 - theta) ** 2 * theta**2)


def deq77(theta):
    return 0.06 * 16.0 * (2.0 * (1.0 - theta) ** 2 * theta - 2.0 * (1.0 - theta) * theta**2)


def smooth(theta):
    return 0.04 + 0.01 * np.exp(-theta) * np.cos(3.0 * theta)


def dsmooth(theta):
    return 0.01 * np.exp(-theta) * (-np.cos(3.0 * theta) - 3.0 * np.sin(3.0 * theta))


def branching(theta):
    return np.where(theta < 0.5, 0.05, 0.06)


def _model(*radii, n_elements=4):
    fibers = [sf.Fiber.straight((0, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=n_elements, radius=r)
              for k, r in enumerate(radii)]
    return sf.Model(fibers)


def _points(s, n=60, seed=3):
    rng = np.random.default_rng(seed)
    e = rng.integers(0, s.ne, n).astype(np.int64)
    xi = rng.random(n)
    xi[:4] = [0.0, 1.0, 0.0, 1.0]
    return e, xi, s.theta0[e] + s.h[e] * xi


def _expected(model, s, e, theta, derivatives):
    """r0 from the fibers' callables (or constants) and h dr0/dθ from the closed forms."""
    r, dr = np.empty(e.size), np.empty(e.size)
    for i, (el, th) in enumerate(zip(e, theta)):
        k = int(s.fiber[el])
        f = model.discretization.fibers[k]
        r[i] = f.radius_at(np.array([th]))[0]
        dr[i] = derivatives[k](th) * s.h[el]
    return r, dr


def test_one_shared_callable_is_compiled_with_its_exact_derivative():
    model = _model(eq77, eq77, eq77)
    s = fiber_setup(model.discretization, 5, None, "c")
    assert isinstance(s.r0_kernel, RadiusKernel) and s.r0_kernels == (s.r0_kernel, None, None)
    e, xi, theta = _points(s)
    r, dr = reference_radius(model, s, e, xi)
    want_r, want_dr = _expected(model, s, e, theta, [deq77] * 3)
    np.testing.assert_allclose(r, want_r, rtol=1e-14, atol=0)
    np.testing.assert_allclose(dr, want_dr, rtol=1e-12, atol=1e-15)


def test_several_callables_and_constants_mixed():
    model = _model(eq77, 0.05, smooth, eq77)
    s = fiber_setup(model.discretization, 5, None, "c")
    assert s.r0_kernel is None  # not one callable for all: per-group kernels
    assert s.r0_kernels[1] is None and s.r0_kernels[3] is None  # a constant; a repeat of fiber 0's callable
    assert s.r0_kernels[0] is not None and s.r0_kernels[2] is not None
    e, xi, theta = _points(s, n=80)
    r, dr = reference_radius(model, s, e, xi)
    want_r, want_dr = _expected(model, s, e, theta, [deq77, lambda th: 0.0, dsmooth, deq77])
    np.testing.assert_allclose(r, want_r, rtol=1e-14, atol=0)
    np.testing.assert_allclose(dr, want_dr, rtol=1e-12, atol=1e-15)


def test_a_callable_that_cannot_be_traced_keeps_the_callable():
    model = _model(branching, eq77)
    s = fiber_setup(model.discretization, 5, None, "c")
    assert s.r0_kernels[0] is None and s.r0_kernels[1] is not None
    e, xi, theta = _points(s)
    r, dr = reference_radius(model, s, e, xi)
    np.testing.assert_array_equal(r[s.fiber[e] == 0], branching(theta[s.fiber[e] == 0]))
    np.testing.assert_allclose(r, _expected(model, s, e, theta, [lambda th: 0.0, deq77])[0], rtol=1e-14)


def test_a_trace_that_differs_from_the_callable_is_not_used():
    def two_faced(theta):  # another value for symbolic θ than for numbers: the check at the nodes catches it
        return 0.05 + (0.01 if np.asarray(theta).dtype == object else 0.0) * theta

    assert radius_kernel(two_faced, np.linspace(0, 1, 5)) is None
    model = _model(two_faced, two_faced)
    s = fiber_setup(model.discretization, 5, None, "c")
    e, xi, _ = _points(s)
    np.testing.assert_array_equal(reference_radius(model, s, e, xi)[0], np.full(e.size, 0.05))


def test_a_kernel_that_cannot_be_compiled_warns_once_and_falls_back():
    model = _model(eq77, eq77)
    s = fiber_setup(model.discretization, 5, None, "c")
    broken = RadiusKernel("def evaluate(*args):\n    raise TypeError('no')\n", np.zeros(0), "fiber 0")
    object.__setattr__(s, "r0_kernel", broken)
    object.__setattr__(s, "r0_kernels", (broken, None))
    e, xi, theta = _points(s)
    with pytest.warns(RuntimeWarning, match="could not be compiled"):
        r, dr = reference_radius(model, s, e, xi)
    assert broken.failed
    np.testing.assert_array_equal(r, eq77(theta))  # the callable itself
    # its central difference: close to the exact derivative, not equal to it
    exact = deq77(theta) * s.h[e]
    np.testing.assert_allclose(dr, exact, rtol=1e-5, atol=1e-6)  # (one-sided at the fiber's ends)
    assert np.abs(dr - exact).max() > 0


@pytest.mark.parametrize("radius", [
    lambda th: 0.05 + 0.01 * np.sqrt(th),            # infinite slope at θ = 0 (a node)
    np.vectorize(lambda v: 0.05 + 0.01 * math.sqrt(v + 1.0)),  # math.* on θ (a float() of it)
    numba.njit(lambda th: 0.05 + 0.01 * th),          # a compiled callable: not traceable
], ids=["sqrt", "math", "njit"])
def test_callables_the_kernel_cannot_serve_keep_the_callable(radius):
    assert radius_kernel(radius, np.linspace(0, 1, 5)) is None
    model = _model(radius, radius)
    s = fiber_setup(model.discretization, 5, None, "c")
    assert s.r0_kernel is None and s.r0_kernels == (None, None)
    e, xi, theta = _points(s)
    np.testing.assert_array_equal(reference_radius(model, s, e, xi)[0], radius(theta))


def test_numbers_are_parameters_so_laws_of_one_form_share_a_kernel():
    a = radius_kernel(lambda th: 0.05 * (1 + th**2), np.linspace(0, 1, 3))
    b = radius_kernel(lambda th: 0.07 * (2 + th**2), np.linspace(0, 1, 3))
    assert a.source == b.source and not np.array_equal(a.params, b.params)
