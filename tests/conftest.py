import time

import numpy as np
import pytest

import skfiber as sf
from skfiber.rigid import Body, Revolute, RigidSystem


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def interrupted_at_first_step(simulate):
    """``simulate`` (or ``simulate_rigid``) as Ctrl-C meets it: its callback raises KeyboardInterrupt after the
    first step, and the caller's other arguments (``on_interrupt`` among them) are passed on."""
    def ctrl_c(*args):
        raise KeyboardInterrupt

    def interrupted(*args, **kwargs):
        return simulate(*args, **dict(kwargs, callback=ctrl_c))

    return interrupted


def hanging_rod():
    """A rigid rod of 0.5 m and 1 kg hanging from a revolute joint about y at the origin, under gravity."""
    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("rod", start=(0, 0, 0), axis=(0, 0, -0.5), radius=0.01, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    return system


def stopping_at_call(n, stop):
    """(callback, calls): a callback of any arguments that records each call in ``calls`` and calls ``stop()``
    at the ``n``-th (e.g. to raise what Ctrl-C raises)."""
    calls = []

    def callback(*args):
        calls.append(args)
        if len(calls) == n:
            stop()

    return callback, calls


def straight_model(n_elements=8, *, law=None, fibers=1, **fiber_kwargs):
    """A model with `fibers` parallel straight fibers of unit length."""
    law = law if law is not None else sf.paper_law()
    fs = [
        sf.Fiber.straight((0, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=n_elements, law=law, **fiber_kwargs)
        for k in range(fibers)
    ]
    return sf.Model(fs), fs


# --------------------------------------------------------------------------- fibers + bodies
LAW_COUPLED = sf.passive_kelvin_voigt(mu_muscle=2e4, mu_tendon=1e5, eta_muscle=50, eta_tendon=50) + sf.prestress(1e3)


def arm_with_fiber(end=(0.3, 0.0, 0.03)):
    """A 0.3 m arm turning under gravity about y through the origin, and a 2-element fiber fixed at (0, 0, 0.1)
    whose other end at ``end`` is attached to the arm: (model, fiber)."""
    system = RigidSystem(gravity=(0.0, 0.0, -9.81))
    system.add_body(Body("arm", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.03, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    fiber = sf.Fiber.straight((0.0, 0, 0.1), end, n_elements=2, law=sf.paper_law(sigma0=100.0))
    model = sf.Model([fiber], rigid=system)
    model.fix(fiber, "start")
    model.attach(fiber, "end", "arm", point=end)
    return model, fiber


def two_link_model(*, body_gravity=True, elements=(), fiber_contact=None):
    """Two hinged links, two fibers (one from the ground), a contact cylinder on the second link.

    ``elements``: functions ``system -> force element`` added to the rigid system (e.g. a muscle).
    ``fiber_contact``: a gap (``"closest_point"`` or ``"smallest"``) adds a third fiber ``c`` beside ``b``,
    pressed into it (their centerlines 0.017 m apart, radii 0.01 m), with fiber–fiber contact between them,
    and lays both over the cylinders of both links (two contact cylinders on bodies).
    """
    from skfiber.contact import PenaltyLaw
    from skfiber.contact.cylinder import CylinderContact
    from skfiber.contact.fibers import FiberContact
    from skfiber.rigid import Body, JointSpringDamper, Revolute, RigidSystem

    system = RigidSystem(gravity=(0, 0, -9.81) if body_gravity else (0, 0, 0))
    system.add_body(Body("b1", start=(0, 0, 0), axis=(0.4, 0, 0), radius=0.03, mass=1.0), joint=Revolute(axis=(0, 1, 0)))
    system.add_body(Body("b2", start=(0.4, 0, 0), axis=(0.3, 0, 0), radius=0.05, mass=0.7), parent="b1",
                    joint=Revolute(axis=(0, 1, 0.2), point=(0.4, 0, 0)))
    system.add(JointSpringDamper("b2", stiffness=3.0, damping=0.2))
    for make in elements:
        system.add(make(system))
    fa = sf.Fiber.straight((0.2, 0, 0.3), (0.2, 0, 0.0), n_elements=4, radius=0.01, law=LAW_COUPLED, name="a")
    fb = sf.Fiber.polyline([(0.3, 0.0, 0.07), (0.5, 0.0, 0.052), (0.65, 0, 0.07)], n_elements=6, radius=0.01,
                           law=LAW_COUPLED, name="b")
    fibers = [fa, fb]
    if fiber_contact is not None:  # b and c dip onto b1's cylinder too
        fibers[1:] = [sf.Fiber.polyline([(0.22, y, 0.07), (0.3, y, 0.037), (0.4, y, 0.057), (0.5, y, 0.053),
                                         (0.65, y, 0.07)], n_elements=8, radius=0.01, law=LAW_COUPLED, name=name)
                      for y, name in ((0.0, "b"), (0.017, "c"))]
    model = sf.Model(fibers, rigid=system)
    model.fix(fa, "start")
    model.attach(fa, "end", "b1")
    for f in fibers[1:]:
        model.attach(f, "start", "b1")
        model.attach(f, "end", "b2")
    model.add_gravity()
    model.add_contact(CylinderContact.on_body(system, "b2", law=PenaltyLaw(stiffness=500.0, gamma=4.0),
                                              fibers=[f.name for f in fibers[1:]]))
    if fiber_contact is not None:
        model.add_contact(CylinderContact.on_body(system, "b1", law=PenaltyLaw(stiffness=500.0, gamma=4.0),
                                                  fibers=["b", "c"]))
        model.add_contact(FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0), fibers=["b", "c"], gap=fiber_contact))
    return model


def step_functions(model, state, dt):
    """fiber_state(u), rigid_state(q) of one backward-Euler step from ``state`` (for CoupledProblem.evaluate)."""
    from skfiber.rigid import rigid_step

    u_n, v_n = state.u, state.v

    def fiber_state(u):
        v = (u - u_n) / dt
        return v, (v - v_n) / dt, 1.0 / dt, 1.0 / dt**2

    def rigid_state(q):
        return rigid_step(model.rigid, q, q_prev=state.q, p_prev=state.p, dt=dt, t=state.t + dt)

    return fiber_state, rigid_state


def coupled_tangent_and_differences(prob, cev, z, t, *, fiber_state, rigid_state, h=1e-7):
    """(T, FD, free): the coupled tangent at z and its central differences (fixed rows/columns zero)."""
    T = prob.tangent_matrix(cev)
    free = np.concatenate([~prob.fiber_solver.fixed, np.ones(prob.n, dtype=bool)])
    FD = np.zeros_like(T)
    for j in np.flatnonzero(free):
        zp, zm = z.copy(), z.copy()
        zp[j] += h
        zm[j] -= h
        FD[:, j] = (prob.evaluate(zp, t, fiber_state=fiber_state, rigid_state=rigid_state).residual
                    - prob.evaluate(zm, t, fiber_state=fiber_state, rigid_state=rigid_state).residual) / (2 * h)
    FD[~free] = 0.0
    return T, FD, free


def perturbed_step(model, seed, dt=0.01, *, fast=True, scale=1.0):
    """A backward-Euler step of ``two_link_model`` from a random state near rest to a random trial z
    (``fast``: the problem's compiled coupling, or its general path; ``scale`` scales the random
    displacements, of 2 and 1 mm).

    Returns (problem, state, z, fiber_state, rigid_state).
    """
    from skfiber.coupling import CoupledProblem

    prob = CoupledProblem(model, fast=fast)
    rng = np.random.default_rng(seed)
    N = prob.N
    s0 = model.initial_state()
    state = sf.State(0.0, s0.u + scale * 0.002 * rng.standard_normal(N), 0.01 * rng.standard_normal(N),
                     q=s0.q, p=np.array([0.1, -0.2]))
    fs, rs = step_functions(model, state, dt)
    z = np.concatenate([state.u + scale * 0.001 * rng.standard_normal(N), state.q + [0.003, -0.004]])
    return prob, state, z, fs, rs


def wait_for_file(path, proc, *, timeout: float, what: str) -> None:
    """Wait until ``path`` exists, made by the running process ``proc`` (its output if it ends first; ``what``
    if ``timeout`` seconds pass)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
