"""Evaluating the Hermite fields along a fiber: exact for cubics (the element's polynomials), point by point
and through the evaluation matrix."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.discretization import DOFS_PER_NODE


def _cubic(theta, derivative):
    """A cubic per component and its derivatives in θ."""
    c = np.array([[0.3, -1.0, 2.0, 0.5], [1.0, 0.0, -0.7, 1.5], [-0.2, 0.4, 0.1, -2.0]])  # x_i = Σ c_ij θ^j
    powers = np.array([[t**j for j in range(4)] for t in np.atleast_1d(theta)]).T
    for _ in range(derivative):
        c = c[:, 1:] * np.arange(1, c.shape[1])
        powers = powers[:-1]
    return c @ powers


@pytest.mark.parametrize("derivative", [0, 1, 2])
def test_a_cubic_field_is_evaluated_exactly_by_both_paths(derivative, rng):
    """Nodal values and θ-slopes of a cubic on the second of two fibers reproduce it, its θ-derivative and its
    second derivative anywhere (cubic Hermite elements hold cubics exactly); the matrix gives the same."""
    fibers = [sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3, name="a"),
              sf.Fiber.straight((0, 1, 0), (1, 1, 0), n_elements=5, name="b")]
    d = sf.Model(fibers).discretization
    fd = d.fiber_dofs[1]
    nodal = np.zeros((d.n_dofs // DOFS_PER_NODE, DOFS_PER_NODE))
    nodes_theta = np.linspace(0.0, 1.0, fd.n_nodes)
    nodal[fd.first_node:fd.first_node + fd.n_nodes, :3] = _cubic(nodes_theta, 0).T
    nodal[fd.first_node:fd.first_node + fd.n_nodes, 3:] = _cubic(nodes_theta, 1).T
    dofs = nodal.ravel()
    theta = np.concatenate([rng.random(20), nodes_theta])
    exact = _cubic(theta, derivative)
    np.testing.assert_allclose(d.evaluate(dofs, "b", theta, derivative), exact, rtol=0, atol=1e-11)
    E = d.evaluation_matrix("b", theta, derivative)
    assert E.shape == (3 * theta.size, d.n_dofs)
    np.testing.assert_allclose((E @ dofs).reshape(3, -1), exact, rtol=0, atol=1e-11)
    assert not np.any(d.evaluate(dofs, "a", theta, derivative))     # the other fiber's d.o.f. are zero


def test_a_parameter_outside_the_fiber_is_refused():
    d = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)]).discretization
    for call in (d.evaluate, lambda *a: d.evaluation_matrix(*a[1:])):
        with pytest.raises(ValueError, match=r"theta \(the fiber parameter θ\) must lie in \[0, 1\], got values in "
                                             r"\[-0.1, 0.5\]"):
            call(d.reference_dofs, 0, [-0.1, 0.5])
