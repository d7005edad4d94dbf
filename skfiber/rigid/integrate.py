"""Backward Euler for the rigid system alone (paper eq. 64, rigid part).

    q⁺ = qₙ + Δt p⁺,   M(q⁺, t⁺) (p⁺ − pₙ)/Δt + h(q⁺, p⁺, t⁺) − Q(q⁺, p⁺, t⁺) = 0.

Eliminating p⁺ = (q⁺ − qₙ)/Δt leaves R_rb(q⁺) = 0, solved by Newton on q⁺
with the consistent tangent dR_rb/dq⁺ = ∂R/∂q + (1/Δt) ∂R/∂p (complex
step on the analytic expressions: exact to round-off).

In the coupled system (eq. 64 with fibers, dependent fiber DOFs
u_D = c(q) eliminated) the q-rows are R_rb(q⁺) + C(q⁺)ᵀ G_D, G_D being the
fiber residual (inertia + internal − external) at the dependent DOFs, i.e.
the force the fiber exerts on the attachment (eq. 62); :func:`rigid_step`
gives R_rb and dR_rb/dq⁺ for that assembly.

Force elements with internal states (e.g. the fiber length of an
elastic-tendon :class:`skfiber.hill.HillActuator`) declare them with the
optional protocol ``n_states`` (int, fixed once the element is added),
``state_names``, ``state_scale`` (m,), ``initial_states(ctx)`` → (B, m) and
``state_rates(ctx)`` → (B, m) = ṡ(q, q̇, s, t);
their force and rates read the states from ``ctx.element_states[name]`` (B, m).
The states s of all such elements join q as unknowns of the same step, with
the backward-Euler rows

    R_s(q⁺, s⁺) = (s⁺ − sₙ − Δt ṡ(q⁺, p⁺, s⁺, t⁺)) / s_scale = 0,

and Newton runs on (q⁺, s⁺) with the tangent d(R_rb, R_s)/d(q⁺, s⁺) by the same
complex step (an element whose law is not complex-step safe propagates the
imaginary parts through its own analytic tangent, as ``HillActuator`` does).
Without such elements nothing changes.

:func:`rigid_step` runs once per Newton residual of a coupled model, so it is
built for a small cost per call: the tables of the tree and the element
layout are kept per assembled system (:meth:`RigidSystem.plan
<skfiber.rigid.RigidSystem.plan>`), and M a + h and the weight of all
configurations of the complex-step batch come from one compiled call
(:func:`~.step.compiled_balance`); other force elements are evaluated
through ``force(ctx)`` as always.  :func:`~.step.balance` on a full context
is the definition (:func:`~.step.rigid_step_definition`; the tests compare
the two).

Module map (this module gathers their names):

* :mod:`.element_states` — the layout, names, scales, initial values and
  checks of the elements' internal states;
* :mod:`.step` — the residual and tangent of one step (:func:`rigid_step`,
  :class:`EulerStep`, :func:`rigid_static`, …);
* :mod:`.backward_euler` — one step solved by Newton
  (:func:`backward_euler_rigid`);
* :mod:`.simulate` — a whole run (:func:`simulate_rigid`).

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid import Body, Revolute, RigidSystem, simulate_rigid
>>> system = RigidSystem(gravity=(0, 0, -9.81))
>>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
...                 joint=Revolute(axis=(0, 1, 0))) and None
>>> result = simulate_rigid(system, [0.1], [0.0], t_end=0.1, dt=0.01)
>>> result.q.shape, max(result.newton_iterations) <= 3
((11, 1), True)
"""
from __future__ import annotations

from .backward_euler import STATE_STEP, STEP_TOL, RigidNewtonReport, backward_euler_rigid
from .element_states import element_state_names, initial_element_states
from .simulate import RigidResult, simulate_rigid
from .step import EulerStep, RigidStep, rigid_residual, rigid_static, rigid_step, rigid_tangent

__all__ = ["RigidStep", "EulerStep", "rigid_step", "rigid_static", "rigid_residual", "rigid_tangent", "backward_euler_rigid",
           "simulate_rigid", "RigidResult", "RigidNewtonReport", "element_state_names",
           "initial_element_states", "STEP_TOL", "STATE_STEP"]
