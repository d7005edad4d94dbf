"""The cable's energy balance: kinetic + elastic energy lost = the viscous work, to the order of the time
scheme.

For a fiber fixed at both ends, with a law whose elastic part depends on the stretch alone (prestress and
passive Kelvin–Voigt), the continuum balances E(T) − E(0) + ∫₀ᵀ v·f_visc dt = 0.  The energy comes from
the residual's separate parts — ½ v·M v (inertia), ∫₀¹ u·R_int(s u, v = 0) ds (the elastic force's work
from the reference: a conservative force field) — and the dissipation from the viscous
part of the internal force, R_int(u, v) − R_int(u, 0).  An elastic force that is not the gradient of an
energy, a force the balance does not count, a viscous force of the wrong sign, or a time step that is not
consistent would each leave a residue that does not vanish; the schemes leave one of order Δt (backward
Euler) and Δt² (BDF2), measured here by its rate.  The balance cannot see the size of the mass matrix or
of the viscosity: the kinetic energy and the dissipation are computed from the same parts of the residual
(those are checked against closed forms in test_closed_forms.py and test_materials.py).  Measured
(2026-11-30; 50, 100, 200 steps over 0.2 s, by then 91–98 % of the initial kinetic energy is elastic):
backward Euler 5.0·10⁻², 2.5·10⁻², 1.3·10⁻² of E(0), rates 0.97–0.99; BDF2 8.5·10⁻⁴, 2.1·10⁻⁴, 5.2·10⁻⁵
(η = 0) and 7.9·10⁻⁴ … 4.8·10⁻⁵ (η = 500 Pa·s), rates 2.01–2.02.
"""
from __future__ import annotations

import numpy as np
import pytest

import skfiber as sf
from skfiber.core import State

T_END = 0.2
STEPS = (50, 100, 200)


def model_and_pluck(*, viscosity: float):
    """A 1 m fiber fixed at both ends, the paper's law (prestress, passive, viscosity; no activation),
    plucked: transverse velocity 0.5 sin(πθ) m/s."""
    law = sf.paper_law(sigma0=2e3, mu_muscle=1e5, mu_tendon=1e5, eta_muscle=viscosity, eta_tendon=viscosity)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8, law=law, radius=0.02)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    nodal = np.zeros((model.n_dofs // 6, 6))
    x = model.discretization.reference_dofs.reshape(-1, 6)[:, 0]
    nodal[:, 1] = 0.5 * np.sin(np.pi * x)  # y velocity, and its slope along θ (the fiber is 1 m long)
    nodal[:, 4] = 0.5 * np.pi * np.cos(np.pi * x)
    return model, State(0.0, model.initial_state().u, nodal.ravel())


def parts_of_energy(model, u, v):
    """(kinetic, elastic) energy of the state (u, v) (J)."""
    zero = np.zeros_like(u)

    def force(uu, vv, aa, part):
        return model.evaluate(uu, vv, aa, 0.0, c_v=0.0, c_a=0.0, parts=[part]).residual

    kinetic = 0.5 * v @ force(u, zero, v, "inertia")
    s, w = np.polynomial.legendre.leggauss(8)
    elastic = sum(0.5 * wi * (u @ force(0.5 * (si + 1) * u, zero, zero, "internal_force")) for si, wi in zip(s, w))
    return kinetic, elastic


def viscous_power(model, u, v) -> float:
    """v·f_visc (W): the viscous part of the internal force, R_int(u, v) − R_int(u, 0), against v."""
    zero = np.zeros_like(u)
    with_v = model.evaluate(u, v, zero, 0.0, c_v=0.0, c_a=0.0, parts=["internal_force"]).residual
    without = model.evaluate(u, zero, zero, 0.0, c_v=0.0, c_a=0.0, parts=["internal_force"]).residual
    return float(v @ (with_v - without))


def balance(method: str, steps: int, viscosity: float) -> tuple[float, float]:
    """(E(T) − E(0) + ∫ dissipation) / E(0), and the elastic energy at T over E(0) (all kinetic)."""
    model, start = model_and_pluck(viscosity=viscosity)
    result = sf.simulate(model, t_end=T_END, dt=T_END / steps, method=method, state=start, progress=False,
                         store_every=1)
    first = parts_of_energy(model, result.displacements[0], result.velocities[0])
    last = parts_of_energy(model, result.displacements[-1], result.velocities[-1])
    power = [viscous_power(model, u, v) for u, v in zip(result.displacements, result.velocities)]
    dissipated = np.trapezoid(power, result.times)
    return (sum(last) - sum(first) + dissipated) / sum(first), last[1] / sum(first)


@pytest.mark.parametrize("method, order", [("euler", 1.0), ("bdf2", 2.0)])
@pytest.mark.parametrize("viscosity", [0.0, 500.0])
def test_energy_balance_converges_at_the_schemes_order(method, order, viscosity):
    residues, shares = zip(*(balance(method, n, viscosity) for n in STEPS))
    residues = np.abs(residues)
    rates = np.log2(residues[:-1] / residues[1:])
    assert min(shares) > 0.5  # most of the energy has become elastic by then: the internal force is exercised
    assert np.all(np.abs(rates - order) < 0.15), (residues, rates)
    assert residues[-1] < (2e-2 if order == 1 else 2e-4)


def test_the_balance_sees_an_uncounted_force():
    """The check can fail: a model with a drag term whose work the balance does not count (a force that is
    not what the energy and the dissipation say) leaves a residue far above the scheme's, at every Δt."""
    from skfem import LinearForm
    from skfem.helpers import dot

    @LinearForm
    def drag(v, w):  # c ẋ · ξ per reference length, c = 0.5 N·s/m²
        return 0.5 * dot(w.xdot, v) * w.J

    def residue(extra: bool) -> float:
        model, start = model_and_pluck(viscosity=500.0)
        if extra:
            model.add_term(drag, name="drag")
        result = sf.simulate(model, t_end=T_END, dt=T_END / 200, method="bdf2", state=start, progress=False,
                             store_every=1)
        power = [viscous_power(model, u, v) for u, v in zip(result.displacements, result.velocities)]
        first = sum(parts_of_energy(model, result.displacements[0], result.velocities[0]))
        last = sum(parts_of_energy(model, result.displacements[-1], result.velocities[-1]))
        return abs(last - first + np.trapezoid(power, result.times)) / first

    assert residue(True) > 100 * residue(False)


def test_a_fiber_and_the_body_it_carries_keep_their_energy_at_the_scheme_s_order():
    """A rod hinged at the origin hanging on an elastic fiber (no viscosity) that is attached to its tip, both
    under gravity, swinging from rest: the fiber's kinetic, elastic and gravitational energy (from the residual's
    parts, as above) plus the rod's (the rigid system's kinetic and potential energy) stay constant but for BDF2's
    residue, which falls at second order.  A coupling force or an inertia the attachment does not pass on, or
    passes on with the wrong sign, would leave a residue that does not vanish.  Measured (2026-12-02; 100, 200
    and 400 steps over 0.2 s, the rod's potential energy having changed by 0.022 J): 2.9·10⁻⁴, 6.3·10⁻⁵ and
    1.4·10⁻⁵ J, rates 2.20 and 2.19."""
    from skfiber.rigid import Body, Revolute, RigidSystem

    def rod_on_a_fiber():
        system = RigidSystem(gravity=(0, 0, -9.81))
        system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
                        joint=Revolute(axis=(0, 1, 0)))
        law = sf.passive_kelvin_voigt(mu_muscle=1e6, mu_tendon=1e6, eta_muscle=0.0, eta_tendon=0.0) + sf.prestress(1e4)
        fiber = sf.Fiber.straight((0.5, 0, 0.4), (0.5, 0, 0), n_elements=4, radius=0.01, law=law, density=1e4)
        model = sf.Model([fiber], rigid=system)
        model.add_gravity((0, 0, -9.81))
        model.fix(fiber, "start")
        model.attach(fiber, "end", "rod", name="tip")
        return model

    def energy(model, state):
        model.set_coordinates(state.q)
        kinetic, elastic = parts_of_energy(model, state.u, state.v)
        zero = np.zeros_like(state.u)
        weight = state.u @ model.evaluate(state.u, zero, zero, state.t, c_v=0.0, c_a=0.0, parts=["loads"]).residual
        rigid = model.rigid.kinetic_energy(state.q, state.p) + model.rigid.potential_energy(state.q)
        return kinetic + elastic + weight + rigid

    residues = []
    for steps in (100, 200, 400):
        model = rod_on_a_fiber()
        run = sf.simulate(model, t_end=T_END, dt=T_END / steps, method="bdf2", progress=False)
        residues.append(abs(energy(model, run.final_state) - energy(model, run.state(0))))
    swing = abs(model.rigid.potential_energy(run.final_state.q) - model.rigid.potential_energy(run.state(0).q))
    assert swing > 0.01  # (J: the rod really swings)
    rates = np.log2(np.array(residues[:-1]) / residues[1:])
    assert np.all((rates > 1.8) & (rates < 2.4)), (residues, rates)
    assert residues[-1] < 2e-3 * swing
