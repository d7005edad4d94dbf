"""A fiber's given tangent X′(θ) is checked against differences of its curve X(θ)."""
import numpy as np
import pytest

import skfiber as sf


def test_a_kinked_curve_with_its_one_sided_tangents_is_taken():
    """A corner at a sample (θ = 1/2) has no derivative; the tangent given there (one side's) is not compared,
    and everywhere else it is."""
    def curve(th):
        return np.vstack([th, 0 * th, np.abs(th - 0.5)])

    def tangent(th):
        return np.vstack([1 + 0 * th, 0 * th, np.where(th >= 0.5, 1.0, -1.0)])

    fiber = sf.Fiber(curve, 4, tangent=tangent)
    np.testing.assert_array_equal(fiber.reference_tangent(np.array([0.25, 0.75])), [[1, 1], [0, 0], [-1, 1]])

    def wrong_on_one_side(th):
        return np.vstack([1 + 0 * th, 0 * th, np.where(th >= 0.5, 1.0, -2.0)])

    with pytest.raises(ValueError, match=r"tangent\(θ\) is not dX/dθ of curve\(θ\): at θ = 0\.\d+ it gives "
                                         r"\[1\.0, 0\.0, -2\.0\], differences of curve give \[1\.0, 0\.0, -1\.0\]"):
        sf.Fiber(curve, 4, tangent=wrong_on_one_side)
