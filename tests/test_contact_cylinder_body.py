"""Reaction of fiber–cylinder contact on the cylinder's rigid body, and the safeguard with a moving pose."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.cylinder import CylinderBodyLoad, CylinderContact

LAW = PenaltyLaw(stiffness=500.0, gamma=4.0)
RADIUS = 0.2


def fiber_model(n_elements=8, *, radius=0.05, fibers=1):
    """Straight fibers along x, 2 m long, 0.3 m apart in y."""
    law = sf.passive_kelvin_voigt(mu_muscle=10, mu_tendon=10, eta_muscle=0, eta_tendon=0) + sf.prestress(10)
    fs = [sf.Fiber.straight((-1, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=n_elements, radius=radius, law=law,
                            name=f"f{k}") for k in range(fibers)]
    return sf.Model(fs), fs


def cylinder(pose, length=None, **kw):
    pose = np.asarray(pose, dtype=float)
    return CylinderContact(point=pose[:3], axis=pose[3:], radius=RADIUS, law=LAW, length=length, **kw)


def stretched_state(model, rng, *, stretch=1.15, tilt=0.0, noise=0.005):
    """A fiber state stretched by ``stretch`` (λ ≠ 1: the radius r0/√λ changes), tilted in y, plus noise."""
    ref = model.discretization.reference_dofs.reshape(-1, 6)
    u = noise * rng.standard_normal(model.n_dofs)
    nodal = u.reshape(-1, 6)
    nodal[:, 0] += (stretch - 1.0) * ref[:, 0]
    nodal[:, 3] += (stretch - 1.0) * ref[:, 3]
    nodal[:, 1] += tilt * ref[:, 0]
    nodal[:, 4] += tilt * ref[:, 3]
    return u


# configuration: (pose (y0, a), length, fibers, radius, stretch, tilt)
CASES = {
    # a finite cylinder along ~y ending under the tilted fiber: lateral and cap points in contact
    "finite_caps": (np.r_[0.0, -0.6, -0.245, 0.1, 1.0, 0.05], 0.62, 1, lambda th: 0.05 * (1 + 0.3 * th), 1.15, 0.5),
    # an infinite skew cylinder under a stretched fiber
    "infinite": (np.r_[0.05, 0.0, -0.235 * np.hypot(1.0, 0.2), 1.0, 1.0, 0.2], None, 1, 0.05, 1.2, 0.0),
    # a finite cylinder under two fibers, compressed fiber (λ < 1)
    "two_fibers": (np.r_[0.1, -0.2, -0.225, 0.2, 1.0, 0.0], 0.7, 2, 0.05, 0.9, 0.0),
}


def make_case(name, rng):
    pose, length, fibers, radius, stretch, tilt = CASES[name]
    model, _ = fiber_model(8, radius=radius, fibers=fibers)
    u = stretched_state(model, rng, stretch=stretch, tilt=tilt)
    cyl = cylinder(pose, length)
    return model, u, cyl, pose, length


def active_points(cyl, model, u):
    return cyl.contact_points(model, u, 0.0, cyl.candidates(model, u, 0.0))


def away_from_kinks(cyl, model, u, margin=1e-4):
    """No point near g = 0, nor an active point near an end of a finite axis (s = 0 or L)."""
    nar = active_points(cyl, model, u)
    if nar.g.size and np.min(np.abs(nar.g)) <= margin:
        return False
    if cyl.length is None:
        return True
    s = np.einsum("mki,i->mk", nar.p, nar.pose.tangent)[nar.g < 0]
    return bool(np.all(np.minimum(np.abs(s), np.abs(s - cyl.length)) > margin))


def rigid_motion(model, u, pose, *, translation=(0, 0, 0), rotation=(0, 0, 0)):
    """Virtual rigid motion of fiber and cylinder: (δu, δpose), rotation about the origin."""
    c, w = np.asarray(translation, float), np.asarray(rotation, float)
    x = (model.discretization.reference_dofs + u).reshape(-1, 6)
    du = np.zeros_like(x)
    du[:, :3] = c + np.cross(w, x[:, :3])
    du[:, 3:] = np.cross(w, x[:, 3:])
    dpose = np.r_[c + np.cross(w, pose[:3]), np.cross(w, pose[3:])]
    return du.ravel(), dpose


# --------------------------------------------------------------------------- (a) consistent derivative
@pytest.mark.parametrize("case", sorted(CASES))
def test_body_load_derivative_matches_finite_differences(case, rng):
    model, u, cyl, pose, length = make_case(case, rng)
    assert away_from_kinks(cyl, model, u)
    nar = active_points(cyl, model, u)
    act = nar.g < 0
    assert np.any(act) and np.all(np.abs(nar.sample.stretch[act] - 1.0) > 0.05)  # λ ≠ 1
    if length is not None and case == "finite_caps":
        assert np.any(act & nar.side) and np.any(act & ~nar.side)  # lateral surface and cap
    load = cyl.body_load(model, u, 0.0)
    assert isinstance(load, CylinderBodyLoad) and load.n_active == int(np.count_nonzero(act))
    assert load.d_u.shape == (6, model.n_dofs) and load.d_pose.shape == (6, 6)
    np.testing.assert_array_equal(load.d_u[:, load.columns], load.d_u_values)
    assert not np.delete(load.d_u, load.columns, axis=1).any()
    np.testing.assert_array_equal(cyl.body_load(model, u, 0.0, tangent=False).force, load.force)

    def force(uu, p=pose):
        return cylinder(p, length).body_load(model, uu, 0.0, tangent=False).force

    eps = 1e-7
    n = model.n_dofs
    directions = [rng.standard_normal(n) for _ in range(3)]
    slopes = np.zeros(n)
    slopes.reshape(-1, 6)[:, 3:] = rng.standard_normal((n // 6, 3))  # only |x′|: radius r0/√λ and J = |a1|
    directions.append(slopes)
    errors = []
    for d in directions:
        exact = load.d_u @ d
        fd = (force(u + eps * d) - force(u - eps * d)) / (2 * eps)
        errors.append(np.linalg.norm(exact - fd) / np.linalg.norm(exact))
    assert np.linalg.norm(load.d_u @ slopes) > 1e-3 * np.linalg.norm(np.abs(load.d_u) @ np.abs(slopes))
    fd = np.empty((6, 6))
    for j in range(6):
        e = np.zeros(6)
        e[j] = eps
        fd[:, j] = (force(u, pose + e) - force(u, pose - e)) / (2 * eps)
        errors.append(np.linalg.norm(load.d_pose[:, j] - fd[:, j]) / np.linalg.norm(fd[:, j]))
    assert max(errors) < 1e-6, errors


def test_body_load_derivative_of_rigid_motions(rng):
    """Translating fiber and cylinder leaves R_pose unchanged, rotating them rotates both of its parts."""
    model, u, cyl, pose, _ = make_case("finite_caps", rng)
    load = cyl.body_load(model, u, 0.0)
    R = load.force
    for _ in range(3):
        c, w = rng.standard_normal(3), rng.standard_normal(3)
        du, dpose = rigid_motion(model, u, pose, translation=c)
        np.testing.assert_allclose(load.d_u @ du + load.d_pose @ dpose, 0.0, atol=1e-10 * np.abs(R).max())
        du, dpose = rigid_motion(model, u, pose, rotation=w)
        np.testing.assert_allclose(load.d_u @ du + load.d_pose @ dpose,
                                   np.r_[np.cross(w, R[:3]), np.cross(w, R[3:])], atol=1e-10 * np.abs(R).max())


# --------------------------------------------------------------------------- (b), (c), (d) statics
@pytest.mark.parametrize("case", sorted(CASES))
def test_body_force_and_moment_match_the_resultant(case, rng):
    model, u, cyl, pose, _ = make_case(case, rng)
    load = cyl.body_load(model, u, 0.0)
    force, moment = cyl.resultant(model, u, 0.0)  # on the cylinder; moment about y0
    assert np.linalg.norm(force) > 1.0
    # (b) residual = −external: R_pose[:3] = Σ f_k = −(force on the cylinder)
    np.testing.assert_allclose(load.force[:3], -force, rtol=1e-12, atol=1e-12 * np.linalg.norm(force))
    # (c) the moment about y0 on the cylinder is m = −t × Σ s_k f_k and R_pose[3:] = Q Σ s_k f_k, so
    #     R_pose[3:] · (e × a) = (t × Σ s_k f_k) · e = −m · e for every e (m ⊥ t: e ∥ a gives 0 = 0)
    a = pose[3:]
    t = a / np.linalg.norm(a)
    e1 = np.cross(t, [1.0, 0.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(t, e1)
    scale = np.linalg.norm(moment)
    assert scale > 1e-3
    for e in (e1, e2, t, *rng.standard_normal((3, 3))):
        assert load.force[3:] @ np.cross(e, a) == pytest.approx(-moment @ e, abs=1e-12 * scale * np.linalg.norm(e))
    assert abs(moment @ t) < 1e-12 * scale


@pytest.mark.parametrize("case", sorted(CASES))
def test_newtons_third_law_virtual_work(case, rng):
    """(d) G_c · δu + R_pose · δpose = 0 for every rigid motion of fiber and cylinder together."""
    model, u, cyl, pose, _ = make_case(case, rng)
    G = cyl.evaluate(model, u, 0.0, tangent=False).residual
    R = cyl.body_load(model, u, 0.0, tangent=False).force
    for k in range(6):
        e = np.eye(3)[k % 3]
        du, dpose = rigid_motion(model, u, pose, **({"translation": e} if k < 3 else {"rotation": e}))
        work_fiber, work_body = G @ du, R @ dpose
        assert abs(work_fiber) > 1e-3 or k >= 3  # the force does work in a translation
        assert abs(work_fiber + work_body) < 1e-12 * (np.abs(G) @ np.abs(du) + np.abs(R) @ np.abs(dpose))


def test_body_load_without_contact_and_bad_input():
    model, _ = fiber_model(8)
    u = np.zeros(model.n_dofs)
    far = cylinder(np.r_[0.0, 0.0, -5.0, 0.0, 1.0, 0.0])
    load = far.body_load(model, u, 0.0)
    assert not load.force.any() and not load.d_u.any() and not load.d_pose.any() and load.n_active == 0
    lazy = far.body_load(model, u, 0.0, tangent=False)
    assert lazy.d_u is None and lazy.d_pose is None and lazy.columns is None
    near = cylinder(np.r_[0.0, 0.0, -0.3, 0.0, 1.0, 0.0])  # in reach (g = 0.2) but not touching
    assert not near.body_load(model, u, 0.0).force.any()
    with pytest.raises(ValueError, match="vector of the model's"):
        near.body_load(model, np.zeros(5), 0.0)
    with pytest.raises(ValueError, match="must be finite"):
        near.body_load(model, np.full(model.n_dofs, np.nan), 0.0)
    with pytest.raises(FloatingPointError, match="inadmissible contact"):
        cylinder(np.r_[0.0, 0.0, -0.1, 0.0, 1.0, 0.0]).body_load(model, u, 0.0)


# --------------------------------------------------------------------------- (e) safeguard with a moving pose
def moved(pose, pose_step, delta, length=None):
    return cylinder(np.asarray(pose) + delta * np.r_[pose_step[0], pose_step[1]], length)


@pytest.mark.parametrize("motion", ["translation", "rotation"])
def test_safeguard_follows_the_moving_cylinder(motion):
    model, _ = fiber_model(8)
    u = np.zeros(model.n_dofs)
    du = np.zeros(model.n_dofs)
    du.reshape(-1, 6)[:, 2] = 0.01  # the fiber barely moves
    if motion == "translation":  # a cylinder 0.3 m under the fiber (g = 0.2) rises by 0.27 m
        pose, step = np.r_[0.0, 0.0, -0.3, 0.0, 1.0, 0.0], ((0.0, 0.0, 0.27), (0.0, 0.0, 0.0))
    else:  # an axis through (0, −1, −0.3) along y tilts up: at δ = 1 it passes through the fiber
        pose, step = np.r_[0.0, -1.0, -0.3, 0.0, 1.0, 0.0], ((0.0, 0.0, 0.0), (0.0, 0.0, 0.3))
    cyl = cylinder(pose)
    e0 = np.min(cyl.gaps(model, u).admissibility)
    assert e0 == pytest.approx(1.8, abs=0.01)  # g ≈ 0.2 (no point exactly above the axis)
    # the cylinder at rest during the step: the full step is allowed ...
    assert cyl.max_step(model, u, du, 0.0, delta_bar=0.25) == 1.0
    # ... but with the moved pose the full step is inadmissible
    with pytest.raises(FloatingPointError, match="inadmissible"):
        moved(pose, step, 1.0).evaluate(model, u + du, 0.0)
    delta = cyl.max_step(model, u, du, 0.0, delta_bar=0.25, pose_step=step)
    assert 0.1 < delta < 1
    for frac in np.linspace(0.0, delta, 21):
        assert np.min(moved(pose, step, frac).gaps(model, u + frac * du).admissibility) > 0.25 * min(e0, 1.0)
    point = cylinder(pose, safeguard="point").max_step(model, u, du, 0.0, delta_bar=0.25, pose_step=step)
    assert delta <= point + 1e-12 < 1


def test_safeguard_moving_broad_phase_finds_the_approaching_cylinder():
    """A cylinder far out of reach at δ = 0 that sweeps through the fiber during the step."""
    model, _ = fiber_model(8)
    u = np.zeros(model.n_dofs)
    pose, step = np.r_[0.0, 0.0, -1.0, 0.0, 1.0, 0.0], ((0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
    cyl = cylinder(pose)
    assert cyl.candidates(model, u, 0.0, u).size == 0
    assert cyl.candidates(model, u, 0.0, u, pose_step=step).size > 0
    delta = cyl.max_step(model, u, u, 0.0, delta_bar=0.25, pose_step=step)
    assert cyl.max_step(model, u, u, 0.0, delta_bar=0.25) == 1.0
    # 1 + γ g = δ̄ at d = (r_RB + r)(1 + (δ̄ − 1)/γ) = 0.203125 m: δ = 1 − 0.203125 (pure translation: sharp)
    assert delta == pytest.approx(0.796875, abs=1e-3)
    for frac in np.linspace(0.0, delta, 11):
        assert np.min(moved(pose, step, frac).gaps(model, u).admissibility, initial=1.0) > 0.25


@pytest.mark.parametrize("length", [None, 0.8])
@pytest.mark.parametrize("safeguard", ["element", "point"])
def test_safeguard_with_pose_step_is_a_lower_bound(length, safeguard, rng):
    model, _ = fiber_model(16)
    pose = np.r_[0.1, -0.4, -0.27, 0.2, 1.0, 0.1]
    cyl = cylinder(pose, length, safeguard=safeguard)
    shortened = 0
    for _ in range(12):
        u = 0.005 * rng.standard_normal(model.n_dofs)
        du = 0.03 * rng.standard_normal(model.n_dofs)
        step = (0.05 * rng.standard_normal(3) + (0, 0, 0.06), 0.15 * rng.standard_normal(3))
        assert cyl.max_step(model, u, du, 0.0, delta_bar=0.5, pose_step=((0, 0, 0), (0, 0, 0))) == \
            cyl.max_step(model, u, du, 0.0, delta_bar=0.5)
        delta = cyl.max_step(model, u, du, 0.0, delta_bar=0.5, pose_step=step)
        assert 0 < delta <= 1
        shortened += delta < 1
        e0 = np.min(cyl.gaps(model, u).admissibility, initial=np.inf)
        for frac in np.linspace(0.0, delta, 11):
            adm = moved(pose, step, frac, length).gaps(model, u + frac * du).admissibility
            assert np.min(adm, initial=np.inf) > 0.5 * min(e0, 1.0) * 0.999
    assert shortened >= 3


@pytest.mark.parametrize("length", [None, 0.8])
def test_trial_safeguard_with_pose_step_keeps_the_margin_at_the_end(length, rng):
    """safeguard="trial" on a moving cylinder: δ is 1 or a power of ½ at which eq. 71 holds for u + δ Δu at
    the pose moved by δ (Δy0, Δa), and fails at 2δ — checked with the contact's own gaps, not the kernel."""
    model, _ = fiber_model(16)
    pose = np.r_[0.1, -0.4, -0.27, 0.2, 1.0, 0.1]
    cyl = cylinder(pose, length, safeguard="trial")
    shortened = 0
    for _ in range(12):
        u = 0.005 * rng.standard_normal(model.n_dofs)
        du = 0.03 * rng.standard_normal(model.n_dofs)
        step = (0.05 * rng.standard_normal(3) + (0, 0, 0.06), 0.15 * rng.standard_normal(3))
        delta = cyl.max_step(model, u, du, 0.0, delta_bar=0.5, pose_step=step)
        assert 0 < delta <= 1 and np.log2(delta) == int(np.log2(delta))
        every = cyl.fiber_elements(model.discretization)  # all contact points, in one order

        def margins(contact, state):
            points = contact.contact_points(model, state, 0.0, every)
            return np.where(points.d > 0, points.adm, -np.inf)

        target = 0.5 * np.minimum(margins(cyl, u), 1.0)  # per contact point (eq. 71)
        assert np.all(margins(moved(pose, step, delta, length), u + delta * du) > target)
        if delta < 1:
            shortened += 1  # δ is the largest power of ½ that keeps the margin: 2δ does not
            assert not np.all(margins(moved(pose, step, 2 * delta, length), u + 2 * delta * du) > target)
    assert shortened >= 3
    turned_through_zero = ((0.0, 0.0, 0.0), tuple(-pose[3:]))  # a + Δa = 0 at δ = 1
    with pytest.raises(ValueError, match="zero length"):
        cyl.max_step(model, np.zeros(model.n_dofs), np.zeros(model.n_dofs), 0.0, delta_bar=0.5,
                     pose_step=turned_through_zero)


def test_bad_pose_step():
    model, _ = fiber_model(4)
    cyl = cylinder(np.r_[0.0, 0.0, -0.3, 0.0, 1.0, 0.0])
    z = np.zeros(model.n_dofs)
    for bad, match in [((0, 0, 1), "pair"), (((0, 0), (0, 0, 1)), "dy0 must be 3 finite"),
                       (((0, 0, 0), (0, np.nan, 1)), "da must be 3 finite"), (None, None)]:
        if match is None:
            assert cyl.max_step(model, z, z, 0.0, delta_bar=0.25, pose_step=bad) == 1.0
            continue
        with pytest.raises(ValueError, match=match):
            cyl.max_step(model, z, z, 0.0, delta_bar=0.25, pose_step=bad)


def test_cache_body_pose_kernel_data_and_fiber_elements():
    """The public names the coupled solver uses (and the old private names, kept as aliases for now)."""
    from skfiber.rigid import Body, Revolute, RigidSystem

    system = RigidSystem()
    system.add_body(Body("bone", start=(0, 0, 0), axis=(0, 0.2, 0), radius=0.02, mass=1.0),
                    joint=Revolute(axis=(1, 0, 0)))
    cyl = CylinderContact.on_body(system, "bone", law=LAW)
    q, t = np.full(system.n, 0.3), 0.5
    cyl.set_coordinates(q)
    point, axis = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, 2.0])
    cyl.cache_body_pose(q, t, point, axis)  # the pose is taken as given at (q, t)
    pose = cyl.pose_at(t)
    np.testing.assert_array_equal(pose.point, point)
    np.testing.assert_array_equal(pose.axis, axis)
    q2 = np.full(system.n, -0.2)
    cyl.set_coordinates(q2)  # other coordinates: the body's pose again
    body = system.cylinder("bone").pose(q2, t, hessian=False)
    pose = cyl.pose_at(t)
    np.testing.assert_allclose(pose.point, body.start)
    np.testing.assert_allclose(pose.axis, body.axis)
    with pytest.raises(ValueError, match="does not belong to a rigid body"):
        cylinder(np.r_[0.0, 0.0, -0.3, 0.0, 1.0, 0.0]).cache_body_pose(q, t, point, axis)

    model, _ = fiber_model(4, fibers=2)
    d = model.discretization
    cyl = cylinder(np.r_[0.0, 0.0, -0.3, 0.0, 1.0, 0.0], fibers=["f1"])
    assert cyl.fiber_elements(d).tolist() == [4, 5, 6, 7]
    data = cyl.kernel_data(d)
    assert data.dofs.shape[0] == d.element_fiber.size
