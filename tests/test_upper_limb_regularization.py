"""The upper-limb demo's optional gradient-of-stretch regularization (strain softening made mesh-independent)."""
import warnings

import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import upper_limb


def stretch_gradient_energy(model, u, c, points=4):
    """W = (c/2) ∫ (dλ/dS)² dS of every fiber, by Gauss–Legendre quadrature on each element (the model's
    rule: 4 points), from the discretization's own x′ and x″ (λ′ = x′·x″ / (|x′| |A1|), dS = |A1| dθ) —
    independent of the form."""
    d = model.discretization
    xi, wq = np.polynomial.legendre.leggauss(points)
    total = 0.0
    for k, fiber in enumerate(d.fibers):
        ne = fiber.n_elements
        theta = ((np.arange(ne)[:, None] + 0.5 * (xi + 1)[None, :]) / ne).ravel()
        weights = np.tile(0.5 * wq / ne, ne)
        xp = d.evaluate(d.reference_dofs + u, k, theta, 1)
        xpp = d.evaluate(d.reference_dofs + u, k, theta, 2)
        J = np.linalg.norm(d.evaluate(d.reference_dofs, k, theta, 1), axis=0)
        lam_p = np.einsum("ij,ij->j", xp, xpp) / (np.linalg.norm(xp, axis=0) * J)
        total += 0.5 * c * np.sum(weights * lam_p**2 / J)
    return total


def test_residual_is_the_variation_of_the_energy():
    """The form's residual r(u) · du equals dW/du · du by central differences of the independent energy."""
    c = 20.0
    model = upper_limb.build_model(4, geometry="softening", wrap=False, gravity=False, stretch_gradient=c)
    rng = np.random.default_rng(7)
    u = 0.01 * rng.standard_normal(model.n_dofs)
    du = rng.standard_normal(model.n_dofs)
    r = model.evaluate(u, 0 * u, 0 * u, 0.0, c_v=0.0, c_a=0.0, parts=["stretch_gradient"]).residual
    h = 1e-6
    fd = (stretch_gradient_energy(model, u + h * du, c) - stretch_gradient_energy(model, u - h * du, c)) / (2 * h)
    assert abs(fd) > 1e-3
    assert abs(r @ du - fd) < 1e-6 * abs(fd), (r @ du, fd)
    assert sf.check_tangent(model, dt=1 / 32, parts=["stretch_gradient"]) < 1e-6
    with pytest.raises(ValueError, match="stretch-gradient modulus c must be finite and ≥ 0"):
        upper_limb.stretch_gradient_form(-1.0)
    assert "stretch_gradient" not in {t.name for t in upper_limb.build_model(2).terms}


@pytest.mark.slow
def test_regularization_makes_the_softening_geometry_converge():
    """The earlier geometry localizes (strain softening): levels 1 and 2 differ by 29° (measured) — with the
    regularization c = 20 N·m² by 1.3° (measured 1.29°), over the whole 8 s, without fiber–fiber contact."""
    def angles(level, c):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the softening warning of the unregularized runs
            return upper_limb.run(level, progress=False, geometry="softening", stretch_gradient=c)

    plain = [angles(level, 0.0) for level in (1, 2)]
    regular = [angles(level, 20.0) for level in (1, 2)]
    assert upper_limb.angle_difference(*plain) > 10.0
    assert upper_limb.angle_difference(*regular) < 2.0
