"""Model ↔ contact integration and Newton's safeguard, with a minimal contact.

`NodePlaneContact` is a deliberately simple contact (fiber nodes against the
rigid plane z = z0, the paper's rational penalty law on a nodal gap) that
exercises the protocol: extra residual and COO tangent blocks, admissibility,
and `max_step`.
"""
import numpy as np
import pytest

import skfiber as sf
from skfiber import materials
from skfiber.contact import ContactEvaluation, PenaltyLaw


class NodePlaneContact:
    def __init__(self, z0, radius, law, name="plane"):
        self.z0, self.radius, self.law, self.name = z0, radius, law, name

    def _gap(self, model, u):
        d = model.discretization
        z_dofs = 6 * np.arange(d.n_nodes) + 2
        z = d.reference_dofs[z_dofs] + u[z_dofs]
        return z_dofs, (z - self.z0) / self.radius - 1.0

    def evaluate(self, model, u, t, *, tangent=True):
        dofs, g = self._gap(model, u)
        F, dF = self.law.force(g)
        R = np.zeros(model.n_dofs)
        R[dofs] = -F  # the plane pushes up: an external force +F e_z
        return ContactEvaluation(R, dofs, dofs, -dF / self.radius, 1.0 + self.law.gamma * g, int(np.sum(g < 0)))

    def max_step(self, model, u, du, t, *, delta_bar):
        dofs, g = self._gap(model, u)
        s0 = 1.0 + self.law.gamma * g
        rate = self.law.gamma * du[dofs] / self.radius  # ds/dδ
        with np.errstate(divide="ignore"):
            limit = np.where(rate < 0, (1 - delta_bar) * s0 / -rate, np.inf)
        return float(min(1.0, np.min(limit)))


def model_above_plane(load):
    law = materials.prestress(500.0) + materials.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=10.0, eta_tendon=10.0)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law, radius=0.05)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_line_load((0.0, 0.0, load))
    contact = model.add_contact(NodePlaneContact(z0=-0.15, radius=0.05, law=PenaltyLaw(stiffness=2e3, gamma=2.0)))
    return model, fiber, contact


def test_contact_blocks_enter_residual_and_tangent():
    model, _, _ = model_above_plane(-50.0)
    rng = np.random.default_rng(0)
    state = sf.State(0.0, 0.02 * rng.standard_normal(model.n_dofs) - 0.08 * (np.arange(model.n_dofs) % 6 == 2), np.zeros(model.n_dofs))
    ev = model.evaluate(state.u, state.v, state.v, 0.0, c_v=0.0, c_a=0.0)
    assert ev.n_active_contacts > 0 and len(ev.extra) == 1
    assert sf.check_tangent(model, state, parts=["plane"]) < 1e-6
    assert sf.check_tangent(model, state) < 1e-6


def test_safeguard_keeps_static_newton_admissible():
    """A load that drives plain Newton's first step through the plane."""
    model, fiber, _ = model_above_plane(-3000.0)
    result = sf.solve_static(model, load_steps=1)
    _, g = model.contacts[0]._gap(model, result.state.u)
    assert np.all(1 + 2.0 * g > 0)
    assert np.min(g) < 0  # resting on the plane
    # the same solve without a safeguard would have left the admissible zone:
    zero = np.zeros(model.n_dofs)
    u0 = zero.copy()
    ev = model.evaluate(u0, zero, zero, 0.0, c_v=0.0, c_a=0.0)
    from skfiber.linalg import ConstrainedSolver
    du = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs).solve(ev.element_matrices, -ev.residual, ev.extra)
    _, g_full = model.contacts[0]._gap(model, u0 + du)
    assert np.min(1 + 2.0 * g_full) <= 0
    assert model.max_step(u0, du, 0.0, delta_bar=0.25) < 1


def test_fiber_falls_onto_plane_and_stays_admissible():
    model, fiber, _ = model_above_plane(-400.0)
    seen = []
    result = sf.simulate(model, t_end=0.3, dt=0.01, progress=False, callback=lambda s, info: seen.append(info.active_contacts))
    _, g = model.contacts[0]._gap(model, result.final_state.u)
    assert np.all(1 + 2.0 * g > 0)
    assert max(seen) > 0


def test_no_admissible_step_is_reported():
    class Stuck(NodePlaneContact):
        def max_step(self, model, u, du, t, *, delta_bar):
            return 0.0

    model, _, _ = model_above_plane(-50.0)
    model.contacts.clear()
    model.add_contact(Stuck(z0=-0.15, radius=0.05, law=PenaltyLaw(stiffness=2e3, gamma=2.0)))
    with pytest.raises(sf.ConvergenceError, match="no admissible step"):
        sf.solve_static(model, max_bisections=0)


def test_inadmissible_state_raises():
    model, _, _ = model_above_plane(-50.0)
    u = np.zeros(model.n_dofs)
    u[2::6] = -0.2  # all nodes below the plane
    with pytest.raises(FloatingPointError, match="inadmissible contact"):
        model.evaluate(u, u * 0, u * 0, 0.0, c_v=0.0, c_a=0.0)


def test_bad_contacts_rejected():
    model, _, _ = model_above_plane(-50.0)
    with pytest.raises(TypeError, match="not a contact"):
        model.add_contact(object())
    with pytest.raises(ValueError, match="taken"):
        model.add_contact(NodePlaneContact(0.0, 0.05, PenaltyLaw(1.0, 1.0), name="plane"))
    for kwargs in (dict(stiffness=0.0, gamma=1.0), dict(stiffness=1.0, gamma=-1.0), dict(stiffness=np.nan, gamma=1.0)):
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            PenaltyLaw(**kwargs)


def test_penalty_law_values():
    law = PenaltyLaw(stiffness=500.0, gamma=4.0)
    g = np.array([0.2, 0.0, -0.1, -0.2, -0.3])
    F, dF = law.force(g)
    np.testing.assert_allclose(F, [0, 0, 50 / 0.6, 100 / 0.2, np.nan], equal_nan=True)
    h = 1e-7
    Fp, _ = law.force(g[2:4] + h)
    Fm, _ = law.force(g[2:4] - h)
    np.testing.assert_allclose(dF[2:4], (Fp - Fm) / (2 * h), rtol=1e-6)
