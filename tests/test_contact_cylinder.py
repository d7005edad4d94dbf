"""Fiber–cylinder contact: gap, force, consistent tangent, pose derivative, safeguard, demo."""
import numpy as np
import pytest
import scipy.sparse as sps

import skfiber as sf
from skfiber.contact import Contact, PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.contact.cylinder_safeguard import admissibility_estimate
from skfiber.contact.geometry import control_points, element_coefficients, gauss_legendre, sample_centerline
from skfiber.linalg import ConstrainedSolver
from skfiber.solver import ConvergenceError, NewtonOptions, newton

LAW = PenaltyLaw(stiffness=500.0, gamma=4.0)


def fiber_model(n_elements=8, *, radius=0.05, fibers=1, law=None):
    """Straight fibers along x, 2 m long, 0.3 m apart in y."""
    law = law or (sf.passive_kelvin_voigt(mu_muscle=10, mu_tendon=10, eta_muscle=0, eta_tendon=0) + sf.prestress(10))
    fs = [sf.Fiber.straight((-1, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=n_elements, radius=radius, law=law,
                            name=f"f{k}") for k in range(fibers)]
    model = sf.Model(fs)
    for f in fs:
        model.fix(f, "start")
        model.fix(f, "end")
    return model, fs


def sparse(ev, n):
    return sps.csr_matrix((ev.values, (ev.rows, ev.cols)), shape=(n, n))


def random_state(model, rng, scale=0.01):
    return scale * rng.standard_normal(model.n_dofs)


def away_from_kink(contact, model, u, margin=1e-4):
    g = contact.gaps(model, u).gap
    return g.size == 0 or np.min(np.abs(g)) > margin


def fd_error(contact, model, u, rng, directions=4, eps=1e-7):
    n = model.n_dofs
    K = sparse(contact.evaluate(model, u, 0.0), n)
    worst = 0.0
    for _ in range(directions):
        d = rng.standard_normal(n)
        Kd = K @ d
        fd = (contact.evaluate(model, u + eps * d, 0.0).residual
              - contact.evaluate(model, u - eps * d, 0.0).residual) / (2 * eps)
        worst = max(worst, np.linalg.norm(Kd - fd) / np.linalg.norm(Kd))
    return worst


# --------------------------------------------------------------------------- penalty law
def test_penalty_law_values_and_derivative():
    law = PenaltyLaw(stiffness=500.0, gamma=4.0)
    g = np.array([0.3, 0.0, -0.05, -0.2, -0.24])
    F, dF = law.force(g)
    expected = np.where(g < 0, -500 * g / (1 + 4 * g), 0.0)
    np.testing.assert_allclose(F, expected, rtol=1e-14)
    assert F[3] == pytest.approx(500.0)  # the paper's initial state of §5.2: g = −0.2
    h = 1e-7
    for gi in (-0.05, -0.2, -0.24):
        Fp, _ = law.force(np.array(gi + h))
        Fm, _ = law.force(np.array(gi - h))
        assert float(law.force(np.array(gi))[1]) == pytest.approx(float(Fp - Fm) / (2 * h), rel=1e-6)
    F, dF = law.force(np.array([-0.25, -0.3]))  # 1 + γg ≤ 0
    assert np.all(np.isnan(F)) and np.all(np.isnan(dF))


# --------------------------------------------------------------------------- geometry
@pytest.mark.parametrize("length", [None, 0.6])
def test_gap_and_closest_point_against_brute_force(length, rng):
    model, _ = fiber_model(6, radius=lambda th: 0.04 + 0.03 * th)
    cyl = CylinderContact(point=(-0.2, -0.3, -0.25), axis=(1.0, 1.2, 0.3), radius=0.2, law=LAW, length=length,
                          quadrature_points=4)
    for _ in range(5):
        u = random_state(model, rng, 0.03)
        gaps = cyl.gaps(model, u)
        assert gaps.elements.size > 0
        d = model.discretization
        # the points: evaluate the fiber at the contact points' θ independently
        theta = gaps.theta.ravel()
        x = d.evaluate(d.reference_dofs + u, 0, theta).T
        np.testing.assert_allclose(gaps.x.reshape(-1, 3), x, atol=1e-13)
        # current radius r0/√λ with λ = |x′|/|X′|
        lam = (np.linalg.norm(d.evaluate(d.reference_dofs + u, 0, theta, 1), axis=0)
               / np.linalg.norm(d.evaluate(d.reference_dofs, 0, theta, 1), axis=0))
        r = (0.04 + 0.03 * theta) / np.sqrt(lam)
        np.testing.assert_allclose(gaps.radius.ravel(), r, rtol=1e-12)
        # distance to the axis (segment) by dense sampling
        t = np.array([1.0, 1.2, 0.3]) / np.linalg.norm([1.0, 1.2, 0.3])
        s = np.linspace(-5, 5, 200001) if length is None else np.linspace(0, length, 200001)
        axis_pts = np.array([-0.2, -0.3, -0.25]) + s[:, None] * t
        brute = np.array([np.min(np.linalg.norm(axis_pts - p, axis=1)) for p in x])
        np.testing.assert_allclose(gaps.distance.ravel(), brute, atol=5e-5)
        np.testing.assert_allclose(gaps.gap.ravel(), gaps.distance.ravel() / (0.2 + r) - 1, rtol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(gaps.closest.reshape(-1, 3) - x, axis=1), gaps.distance.ravel())


def test_finite_cylinder_uses_the_end_point_beyond_its_ends():
    model, _ = fiber_model(4)
    # a short cylinder along y ending at y = 0.1 below the fiber (which lies at y = 0)
    cyl = CylinderContact(point=(0.0, 0.1, -0.2), axis=(0, 1, 0), radius=0.2, law=LAW, length=1.0)
    g = cyl.gaps(model, np.zeros(model.n_dofs))
    y = g.closest.reshape(-1, 3)
    np.testing.assert_allclose(y, np.broadcast_to([0.0, 0.1, -0.2], y.shape), atol=1e-15)  # the end point
    np.testing.assert_allclose(g.distance.ravel(), np.linalg.norm(g.x.reshape(-1, 3) - [0, 0.1, -0.2], axis=1))


def test_bezier_hull_contains_the_segments(rng):
    model, _ = fiber_model(5)
    u = random_state(model, rng, 0.2)
    d = model.discretization
    P = control_points(element_coefficients(d, u), np.full(5, 0.2))
    xi, w = gauss_legendre(7)
    x = sample_centerline(d, u, np.linspace(0, 1, 50), np.ones(50) / 50).x
    lo, hi = P.min(axis=1)[:, None], P.max(axis=1)[:, None]
    assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
    assert xi.min() > 0 and w.sum() == pytest.approx(1.0)


def test_broad_phase_keeps_every_element_in_reach(rng):
    model, _ = fiber_model(32)
    cyl = CylinderContact(point=(0.3, 0.0, -0.27), axis=(1, 2, 0.5), radius=0.2, law=LAW)
    all_el = np.arange(32)
    for _ in range(20):
        u = random_state(model, rng, 0.005)
        kept = cyl.candidates(model, u, 0.0)
        near = cyl.contact_points(model, u, 0.0, all_el)
        in_reach = all_el[np.any(near.g < 0.0, axis=1)]
        assert set(in_reach) <= set(kept)
        assert kept.size < 32  # and it does prune
        du = random_state(model, rng, 0.01)
        kept_step = set(cyl.candidates(model, u, 0.0, du))
        for delta in (0.3, 0.7, 1.0):
            after = cyl.contact_points(model, u + delta * du, 0.0, all_el)
            assert set(all_el[np.any(after.g < 0.0, axis=1)]) <= kept_step


# --------------------------------------------------------------------------- force
def test_force_pushes_the_fiber_out_of_the_cylinder():
    model, _ = fiber_model(8)
    cyl = CylinderContact(point=(0.0, 0.0, -0.22), axis=(0, 1, 0), radius=0.2, law=LAW)
    u = np.zeros(model.n_dofs)
    ev = cyl.evaluate(model, u, 0.0)
    assert ev.n_active > 0 and np.all(ev.admissibility > 0)
    G = ev.residual.reshape(-1, 6)
    # G = −f_ext: the fiber above the cylinder is pushed up (+z), so G_z < 0
    assert G[:, 2].sum() < 0 and np.all(G[:, 2] <= 1e-14)
    np.testing.assert_allclose(G[:, 1], 0.0, atol=1e-12)  # axis along y: no force along it
    # Newton's third law: the cylinder feels the opposite total force (partition of unity of the values)
    force, moment = cyl.resultant(model, u, 0.0)
    np.testing.assert_allclose(force, G[:, :3].sum(axis=0), rtol=1e-12, atol=1e-12)
    assert force[2] < 0
    # a fiber below the cylinder is pushed down
    below = CylinderContact(point=(0.0, 0.0, 0.22), axis=(0, 1, 0), radius=0.2, law=LAW)
    assert below.evaluate(model, u, 0.0).residual.reshape(-1, 6)[:, 2].sum() > 0


def test_contact_is_a_protocol_member_and_far_cylinder_does_nothing():
    model, _ = fiber_model(8)
    cyl = CylinderContact(point=(0.0, 0.0, -5.0), axis=(0, 1, 0), radius=0.2, law=LAW)
    assert isinstance(cyl, Contact)
    u = np.zeros(model.n_dofs)
    ev = cyl.evaluate(model, u, 0.0)
    assert ev.n_active == 0 and not ev.residual.any() and ev.values.size == 0
    assert cyl.candidates(model, u, 0.0).size == 0
    assert cyl.max_step(model, u, 0.01 * np.ones(model.n_dofs), 0.0, delta_bar=0.25) == 1.0
    assert not cyl.pose_derivative(model, u, 0.0).any()


def test_only_the_chosen_fibers():
    model, fs = fiber_model(6, fibers=2)
    # a cylinder along y below both fibers
    both = CylinderContact(point=(0.0, 0.0, -0.22), axis=(0, 1, 0), radius=0.2, law=LAW)
    second = CylinderContact(point=(0.0, 0.0, -0.22), axis=(0, 1, 0), radius=0.2, law=LAW, fibers=["f1"])
    u = np.zeros(model.n_dofs)
    Rb, Rs = both.evaluate(model, u, 0.0).residual, second.evaluate(model, u, 0.0).residual
    d = model.discretization
    first_dofs = np.arange(6 * d.fiber_dofs[0].n_nodes)
    assert np.abs(Rb[first_dofs]).sum() > 0 and not Rs[first_dofs].any()
    np.testing.assert_allclose(Rs[6 * d.fiber_dofs[1].first_node:], Rb[6 * d.fiber_dofs[1].first_node:])


def test_moving_pose_is_evaluated_at_t():
    model, _ = fiber_model(8)

    def pose(t):
        return (0.1 * t, 0.0, -0.3 + 0.1 * t), (np.sin(t), 1.0, 0.0)

    moving = CylinderContact(pose=pose, radius=0.2, law=LAW)
    u = np.zeros(model.n_dofs)
    for t in (0.0, 0.5, 0.9):
        fixed = CylinderContact(*pose(t), radius=0.2, law=LAW)
        np.testing.assert_array_equal(moving.evaluate(model, u, t).residual, fixed.evaluate(model, u, t).residual)
    assert moving.evaluate(model, u, 0.9).n_active > moving.evaluate(model, u, 0.0).n_active


# --------------------------------------------------------------------------- tangent
@pytest.mark.parametrize("case", ["infinite", "finite_caps", "variable_radius", "two_fibers"])
def test_tangent_matches_finite_differences(case, rng):
    fibers, radius, length = 1, 0.05, None
    # the axis crosses 0.23 m under the fiber (the x axis): g ≈ −0.08 there
    point, axis = (0.05, 0.0, -0.23 * np.hypot(1.0, 0.2)), (1.0, 1.0, 0.2)
    if case == "finite_caps":  # the segment ends at y = 0, under the fiber: side and cap points are active
        point, axis, length = (0.0, -0.6, -0.22), (0.0, 1.0, 0.0), 0.6
    if case == "variable_radius":
        radius = lambda th: 0.05 * (1 + 0.5 * th)  # noqa: E731
    if case == "two_fibers":
        fibers, point, axis = 2, (0.0, 0.15, -0.23), (0.2, 1.0, 0.0)
    model, _ = fiber_model(8, radius=radius, fibers=fibers)
    cyl = CylinderContact(point=point, axis=axis, radius=0.2, law=LAW, length=length)
    checked = 0
    for _ in range(6):
        u = random_state(model, rng, 0.01)
        if case == "finite_caps":  # tilt the fiber in y: y < 0 (side) for x < 0, y > 0 (cap) for x > 0
            nodal = u.reshape(-1, 6)
            nodal[:, 1] += 0.5 * model.discretization.reference_dofs.reshape(-1, 6)[:, 0]
            nodal[:, 4] += 1.0
        if not away_from_kink(cyl, model, u):
            continue
        ev = cyl.evaluate(model, u, 0.0)
        assert ev.n_active > 0
        if case == "finite_caps":
            nar = cyl.contact_points(model, u, 0.0, cyl.candidates(model, u, 0.0))
            assert np.any(~nar.side & (nar.g < 0)) and np.any(nar.side & (nar.g < 0))
        assert fd_error(cyl, model, u, rng) < 1e-6
        checked += 1
    assert checked >= 3


def test_tangent_radius_and_length_terms(rng):
    """Directions that only stretch (slope DOFs) change the gap through r = r0/√λ and |a1|."""
    model, _ = fiber_model(8)
    cyl = CylinderContact(point=(0.0, 0.0, -0.23), axis=(0.3, 1.0, 0.0), radius=0.2, law=LAW)
    u = random_state(model, rng, 0.005)
    assert away_from_kink(cyl, model, u)
    n = model.n_dofs
    K = sparse(cyl.evaluate(model, u, 0.0), n)
    d = np.zeros(n)
    d.reshape(-1, 6)[:, 3:] = rng.standard_normal((n // 6, 3))  # slopes only
    eps = 1e-7
    fd = (cyl.evaluate(model, u + eps * d, 0.0).residual - cyl.evaluate(model, u - eps * d, 0.0).residual) / (2 * eps)
    assert np.linalg.norm(K @ d - fd) / np.linalg.norm(K @ d) < 1e-6
    assert np.linalg.norm(K @ d) > 1e-3 * np.linalg.norm(K @ np.abs(d))


@pytest.mark.parametrize("length", [None, 0.62])
def test_pose_derivative_matches_finite_differences(length, rng):
    model, _ = fiber_model(8, radius=lambda th: 0.05 * (1 + 0.3 * th))
    if length is None:
        y0, a = np.array([0.05, 0.0, -0.23 * np.hypot(1.0, 0.2)]), np.array([1.0, 1.0, 0.2])
    else:
        y0, a = np.array([0.0, -0.6, -0.22]), np.array([0.1, 1.0, 0.0])
    u = random_state(model, rng, 0.005)
    cyl = CylinderContact(point=y0, axis=a, radius=0.2, law=LAW, length=length)
    assert away_from_kink(cyl, model, u)
    D = cyl.pose_derivative(model, u, 0.0)
    assert D.shape == (model.n_dofs, 6)
    eps = 1e-7
    for j in range(6):
        p = np.r_[y0, a]
        R = []
        for sign in (1, -1):
            q = p.copy()
            q[j] += sign * eps
            R.append(CylinderContact(point=q[:3], axis=q[3:], radius=0.2, law=LAW, length=length)
                     .evaluate(model, u, 0.0).residual)
        fd = (R[0] - R[1]) / (2 * eps)
        assert np.linalg.norm(D[:, j] - fd) / np.linalg.norm(D[:, j]) < 1e-6
    # translating the cylinder along its (infinite) axis changes nothing
    if length is None:
        assert np.linalg.norm(D[:, :3] @ (a / np.linalg.norm(a))) < 1e-9 * np.linalg.norm(D[:, :3])


def test_model_tangent_with_contact(rng):
    model, _ = fiber_model(8)
    cyl = model.add_contact(CylinderContact(point=(0.05, 0.0, -0.235), axis=(1.0, 1.0, 0.2), radius=0.2, law=LAW))
    u = random_state(model, rng, 0.01)
    assert away_from_kink(cyl, model, u) and cyl.evaluate(model, u, 0.0).n_active > 0
    assert sf.check_tangent(model, sf.State(0.0, u, np.zeros_like(u)), step=1e-8) < 1e-6


# --------------------------------------------------------------------------- admissibility
def test_inadmissible_state_raises_with_fiber_and_cylinder_names():
    model, _ = fiber_model(8)
    cyl = model.add_contact(CylinderContact(point=(0.0, 0.0, -0.1), axis=(0, 1, 0), radius=0.2, law=LAW,
                                            name="humerus"))
    u = np.zeros(model.n_dofs)
    with pytest.raises(FloatingPointError, match=r"humerus.*fiber 0 \('f0'\).*1 \+ γg"):
        cyl.evaluate(model, u, 0.0)
    z = np.zeros(model.n_dofs)
    with pytest.raises(FloatingPointError, match="humerus"):
        model.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0)
    assert cyl.max_step(model, u, z + 0.01, 0.0, delta_bar=0.25) == 0.0


def test_safeguard_keeps_newton_admissible():
    """Plain Newton's full step lands inside the cylinder; the safeguard keeps every point admissible."""
    law = sf.prestress(1e4) + sf.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0, eta_tendon=0)
    model, _ = fiber_model(8, law=law)  # a taut fiber 0.3 m above the axis (not touching: g = 0.2)
    cyl = model.add_contact(CylinderContact(point=(0.0, 0.0, -0.3), axis=(0, 1, 0), radius=0.2, law=LAW))
    model.add_line_load((0.0, 0.0, -47.0))  # linear sag ≈ 0.3 m: the first step ends on the axis
    solver = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
    z = np.zeros(model.n_dofs)

    def evaluate(u):
        return model.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0)

    ev = evaluate(z)
    du = solver.solve(ev.element_matrices, -ev.residual, ev.extra)
    assert np.min(cyl.gaps(model, du).admissibility) < -2  # the full Newton step is inadmissible
    with pytest.raises(ConvergenceError, match="inadmissible contact with cylinder 'cylinder'"):
        newton(evaluate, z, solver, options=NewtonOptions(line_search=0))  # plain Newton
    delta = cyl.max_step(model, z, du, 0.0, delta_bar=0.25)
    assert 0.2 < delta < 1
    for frac in np.linspace(0, 1, 21):  # every point on the shortened step stays admissible
        assert np.min(cyl.gaps(model, frac * delta * du).admissibility) > 0.25 * 1.0
    u, report = newton(evaluate, z, solver, options=NewtonOptions(line_search=0),
                       max_step=lambda u, du: model.max_step(u, du, 0.0, delta_bar=0.25))
    assert report.step_fractions[0] == pytest.approx(delta) and report.step_fractions[-1] == 1.0
    assert np.min(cyl.gaps(model, u).admissibility) > 0.3
    assert_fiber_in_equilibrium(model, cyl, u)
    force, _ = cyl.resultant(model, u, 0.0)  # the cylinder carries a good part of the 94 N
    assert force[2] == pytest.approx(-34.27, rel=1e-3)  # (a regression value: the balance above is the check)


def test_safeguard_estimate_is_a_lower_bound(rng):
    model, _ = fiber_model(16)
    kw = dict(point=(0.1, 0.0, -0.25), axis=(1.0, 0.7, 0.1), radius=0.2, law=LAW)
    element, point = CylinderContact(**kw), CylinderContact(**kw, safeguard="point")
    shortened = 0
    for _ in range(20):
        u = random_state(model, rng, 0.005)
        du = random_state(model, rng, 0.08)
        d_el = element.max_step(model, u, du, 0.0, delta_bar=0.5)
        d_pt = point.max_step(model, u, du, 0.0, delta_bar=0.5)
        assert 0 < d_el <= d_pt + 1e-9 <= 1 + 1e-9  # the point-wise bound is sharper
        shortened += d_pt < 1
        eps0 = np.min(point.gaps(model, u).admissibility)
        for frac in np.linspace(0, d_pt, 11):
            # every point keeps > 0; the one closest before keeps > δ̄ of its margin (capped at 1)
            assert np.min(point.gaps(model, u + frac * du).admissibility) > 0.5 * min(eps0, 1.0) * 0.999
    assert shortened >= 5


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(radius=0.0), "radius r_RB must be a finite number > 0"),
        (dict(radius=-1.0), "radius r_RB"),
        (dict(radius=float("nan")), "radius r_RB"),
        (dict(axis=(0, 0, 0)), "axis must be a nonzero direction"),
        (dict(axis=(1, 0)), "axis must be 3 numbers"),
        (dict(point=(0, np.inf, 0)), "point must be finite"),
        (dict(quadrature_points=0), "quadrature_points must be an integer"),
        (dict(quadrature_points=2.5), "quadrature_points must be an integer"),
        (dict(length=0.0), "length must be a finite number > 0"),
        (dict(pose=lambda t: ((0, 0, 0), (0, 0, 1))), "either point and axis"),
        (dict(name=""), "name must be a non-empty string"),
        (dict(safeguard="fast"), "unknown safeguard estimate"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = dict(point=(0, 0, 0), axis=(0, 1, 0), radius=0.2, law=LAW)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        CylinderContact(**args)


def test_bad_penalty_law_and_pose():
    for kw in (dict(stiffness=0.0, gamma=4.0), dict(stiffness=-1.0, gamma=4.0),
               dict(stiffness=500.0, gamma=0.0), dict(stiffness=500.0, gamma=-2.0)):
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            PenaltyLaw(**kw)
    with pytest.raises(TypeError, match="PenaltyLaw"):
        CylinderContact(point=(0, 0, 0), axis=(0, 1, 0), radius=0.2, law=(500, 4))
    with pytest.raises(ValueError, match="axis must be a nonzero direction"):
        CylinderContact(pose=lambda t: ((0, 0, 0), (0, 0, 0)), radius=0.2, law=LAW)
    with pytest.raises(ValueError, match="give the cylinder's point and axis"):
        CylinderContact(radius=0.2, law=LAW)
    model, _ = fiber_model(4)
    with pytest.raises(ValueError, match="unknown fiber name"):
        CylinderContact(point=(0, 0, 0), axis=(0, 1, 0), radius=0.2, law=LAW, fibers=["nope"]).evaluate(
            model, np.zeros(model.n_dofs), 0.0)


# --------------------------------------------------------------------------- demo
def test_demo_small(capsys):
    from skfiber.demos import contact_cylinder

    assert contact_cylinder.main(["--small"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("summary: qp4_change_pct=") and sum(l.startswith("summary:") for l in lines) == 1
    values = {k: float(v) for k, v in (item.split("=") for item in lines[-1].split()[1:])}
    # regression values of the demo's own output (the paper gives §5.2 as a figure only): they guard the
    # demo's report against unnoticed changes; the physics is checked independently by the force balance
    # (assert_fiber_in_equilibrium) and the convergence tests above.
    # 32 elements: 5 vs 8 points differ by 0.215 %; 32 vs 64 elements by 0.615 %
    assert values["qp4_change_pct"] == pytest.approx(0.215, abs=0.01)
    assert values["ne32_error_pct"] == pytest.approx(0.615, abs=0.01)
    assert "  -12.28631" in "\n".join(lines)  # 32 elements, 5 points (m)
    assert "-12.07385" in "\n".join(lines) and "-12.36233" in "\n".join(lines)  # 16 and 64 elements


def assert_fiber_in_equilibrium(model, cyl, u):
    """The whole fiber at rest: its load, the supports' reactions (the residual at the fixed DOFs: the
    internal forces of a translation sum to zero) and the cylinder's push (minus the force the fiber exerts
    on it, :meth:`CylinderContact.resultant`, summed by its own code) add up to zero."""
    z = np.zeros(model.n_dofs)
    G = model.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0).residual
    values = model.constrained_dofs[model.constrained_dofs % 6 < 3]
    reactions = np.bincount(values % 6, weights=G[values], minlength=3)
    load = model.external_force(0.0).reshape(-1, 6)[:, :3].sum(axis=0)
    force, _ = cyl.resultant(model, u, 0.0)
    assert force[2] < -10.0 and reactions[2] > 10.0  # both carry a good part of the load
    np.testing.assert_allclose(load + reactions - force, 0.0, atol=1e-9 * np.linalg.norm(load))


def trial_safeguard_first_step():
    """A prestressed fiber pressed onto a cylinder with safeguard="trial": model, cylinder,
    solver, the reference state z, its evaluation and the first Newton step du (too long)."""
    law = sf.prestress(1e4) + sf.passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0, eta_tendon=0)
    model, _ = fiber_model(8, law=law)
    cyl = model.add_contact(CylinderContact(point=(0.0, 0.0, -0.3), axis=(0, 1, 0), radius=0.2, law=LAW,
                                            safeguard="trial"))
    model.add_line_load((0.0, 0.0, -47.0))
    solver = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs)
    z = np.zeros(model.n_dofs)
    ev = model.evaluate(z, z, z, 0.0, c_v=0.0, c_a=0.0)
    du = solver.solve(ev.element_matrices, -ev.residual, ev.extra)
    return model, cyl, solver, z, ev, du


def test_trial_safeguard_keeps_the_margin_at_the_end_of_the_step():
    """safeguard="trial": eq. 71 holds exactly at u + δ du, δ a power of 1/2, and Newton converges."""
    model, cyl, solver, z, ev, du = trial_safeguard_first_step()
    delta = cyl.max_step(model, z, du, 0.0, delta_bar=0.25)
    assert 0 < delta < 1 and np.log2(delta) == int(np.log2(delta))
    before = cyl.gaps(model, z).admissibility
    after = cyl.gaps(model, delta * du).admissibility
    assert np.all(after > 0.25 * np.minimum(before, 1.0))
    assert np.any(cyl.gaps(model, 2 * delta * du).admissibility <= 0.25 * np.minimum(before, 1.0))  # δ is the largest
    u, report = newton(lambda u: model.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0), z, solver,
                       max_step=lambda u, du: model.max_step(u, du, 0.0, delta_bar=0.25))
    assert_fiber_in_equilibrium(model, cyl, u)
    assert cyl.resultant(model, u, 0.0)[0][2] == pytest.approx(-34.27, rel=1e-3)  # as with the element-wise bound


def test_end_of_step_margin_check_agrees_with_the_trial_safeguard():
    """margins_kept on the evaluations before and after a step accepts exactly the steps that
    the trial safeguard takes whole (δ = 1), over step lengths on both sides of the limit."""
    from skfiber.contact.base import margins_kept

    model, cyl, solver, z, ev, du = trial_safeguard_first_step()
    assert set(ev.margins) == {cyl.name}
    outcomes = []
    for scale in np.geomspace(0.01, 2.0, 40):
        whole = cyl.max_step(model, z, scale * du, 0.0, delta_bar=0.25) == 1.0
        try:
            after = model.evaluate(scale * du, z, z, 0.0, c_v=0.0, c_a=0.0).margins
        except FloatingPointError:  # beyond the penalty law's limit: never kept
            after = None
        kept = after is not None and margins_kept(ev.margins, after, 0.25)
        assert kept == whole, f"step scale {scale:.4g}: end check {kept}, trial safeguard {whole}"
        outcomes.append(kept)
    assert any(outcomes) and not all(outcomes)  # both sides of the limit were probed
    # the bound-based safeguards bound the whole path: their evaluations carry no margins
    model.contacts[0].safeguard = "element"
    assert model.evaluate(z, z, z, 0.0, c_v=0.0, c_a=0.0).margins is None


def test_margins_kept_matches_pointwise_rule():
    """Independent check of margins_kept against a loop over the points (random element sets)."""
    from skfiber.contact.base import margins_kept

    rng = np.random.default_rng(3)
    for _ in range(200):
        el0 = np.sort(rng.choice(12, size=rng.integers(0, 8), replace=False))
        el1 = np.sort(rng.choice(12, size=rng.integers(0, 8), replace=False))
        m0 = rng.uniform(0.05, 1.5, (el0.size, 3))
        m1 = rng.uniform(0.05, 1.5, (el1.size, 3))
        expected = True
        for i, e in enumerate(el1):
            before = m0[list(el0).index(e)] if e in el0 else np.ones(3)
            expected &= bool(np.all(m1[i] > 0.25 * np.minimum(before, 1.0)))
        assert margins_kept({"c": (el0, m0)}, {"c": (el1, m1)}, 0.25) == expected


# --------------------------------------------------------------------------- compiled kernels vs numpy
def numpy_broad_phase(cyl, model, u, du=None, pose_step=None):
    """The broad phase of ``CylinderContact.candidates`` written with numpy and the geometry helpers."""
    from skfiber.contact.geometry import element_shapes, min_speed_bound

    d = model.discretization
    sh = element_shapes(d, cyl.xi, cyl.weights)
    pose = cyl.pose_at(0.0)
    Y = element_coefficients(d, u)
    P = control_points(Y, sh.h)
    dY = None
    if du is not None:
        dY = np.asarray(du)[sh.dofs].reshape(-1, 4, 3)
        P = np.concatenate([P, control_points(Y + dY, sh.h)], axis=1)
    lo, hi = P.min(axis=1), P.max(axis=1)
    centre, ball = 0.5 * (lo + hi), 0.5 * np.linalg.norm(hi - lo, axis=1)
    with np.errstate(divide="ignore"):
        rbar = sh.r0_max * np.sqrt(sh.A1_max / min_speed_bound(Y, sh.h, dY))
    p = centre - pose.point
    s = p @ pose.tangent
    if cyl.length is not None:
        s = np.clip(s, 0.0, cyl.length)
    dc = np.linalg.norm(p - s[:, None] * pose.tangent, axis=1)
    if pose_step is not None:
        dy0, da = (np.linalg.norm(v) for v in pose_step)
        arm = np.linalg.norm(p, axis=1) + dy0
        if cyl.length is not None:
            arm = np.minimum(arm, cyl.length)
        tau = min(2.0, da / (pose.axis_norm - da)) if pose.axis_norm > da else 2.0
        dc = dc - dy0 - arm * tau
    return np.flatnonzero(dc - ball < cyl.radius + rbar)


@pytest.mark.parametrize("length", [None, 0.6])
def test_compiled_contact_matches_numpy_reference(length, rng):
    """Kernels (skfiber.contact.cylinder_kernels) against numpy: broad phase, points, residual, body reaction."""
    from skfiber.contact.geometry import sample_centerline

    model, _ = fiber_model(8, radius=lambda th: 0.04 + 0.03 * th, fibers=2)
    # a finite axis ending under the fibers: lateral and cap points in contact
    cyl = CylinderContact(point=(-0.2, -0.3, -0.25), axis=(0.3, 1.0, 0.0), radius=0.2, law=LAW, length=length)
    pose = cyl.pose_at(0.0)
    d = model.discretization
    checked = caps = 0
    for _ in range(6):
        u = random_state(model, rng, 0.01)
        du = random_state(model, rng, 0.02)
        step = (0.01 * rng.standard_normal(3), 0.05 * rng.standard_normal(3))
        for args in ((None, None), (du, None), (du, step)):
            np.testing.assert_array_equal(cyl.candidates(model, u, 0.0, *args[:1], pose_step=args[1]),
                                          numpy_broad_phase(cyl, model, u, *args))
        el = cyl.candidates(model, u, 0.0)
        if el.size == 0:
            continue
        # the points and gaps against the numpy sample of the centerline
        s = sample_centerline(d, u, cyl.xi, cyl.weights, el)
        nar = cyl.contact_points(model, u, 0.0, el)
        for name in ("x", "a1", "a1_norm", "stretch", "radius", "weight"):
            np.testing.assert_allclose(getattr(nar.sample, name), getattr(s, name), rtol=1e-13, atol=1e-15)
        p = s.x - pose.point
        sc = p @ pose.tangent
        side = np.ones(sc.shape, dtype=bool) if length is None else (sc > 0) & (sc < length)
        sc = sc if length is None else np.clip(sc, 0.0, length)
        w = p - sc[..., None] * pose.tangent
        dist = np.linalg.norm(w, axis=-1)
        g = dist / (cyl.radius + s.radius) - 1.0
        np.testing.assert_array_equal(nar.side, side)
        np.testing.assert_allclose(nar.sc, sc, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(nar.d, dist, rtol=1e-13)
        np.testing.assert_allclose(nar.nu, w / dist[..., None], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(nar.g, g, rtol=1e-12, atol=1e-15)
        # residual G_c = −Σ S^T F ν J W and the body reaction [Σ f ; Q Σ s f]
        F, _ = LAW.force(g)
        f = (F * s.a1_norm * s.weight)[..., None] * w / dist[..., None]
        r_el = -(s.S.transpose(0, 2, 1) @ f).reshape(-1, 12)
        residual = np.bincount(s.dofs.ravel(), weights=r_el.ravel(), minlength=model.n_dofs)
        ev = cyl.evaluate(model, u, 0.0)
        scale = np.abs(residual).max()
        np.testing.assert_allclose(ev.residual, residual, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(ev.admissibility, 1 + LAW.gamma * g.ravel(), rtol=1e-13)
        assert ev.n_active == np.count_nonzero(g < 0)
        touching = np.any(g < 0, axis=1)
        assert ev.values.size == 144 * np.count_nonzero(touching)
        assert set(ev.rows) == set(s.dofs[touching].ravel())
        load = cyl.body_load(model, u, 0.0)
        Q = (np.eye(3) - np.outer(pose.tangent, pose.tangent)) / pose.axis_norm
        expected = np.r_[f.sum(axis=(0, 1)), Q @ (sc.ravel() @ f.reshape(-1, 3))]
        np.testing.assert_allclose(load.force, expected, rtol=0, atol=1e-13 * np.abs(expected).max())
        np.testing.assert_array_equal(load.columns, np.unique(s.dofs[touching]))
        checked += int(ev.n_active > 0)
        caps += int(np.any(~side & (g < 0)))
    assert checked >= 3 and (length is None or caps >= 1)


def test_wrong_size_state_raises_before_the_compiled_loops():
    """The kernels index u without bounds checks: the length is checked before (ValueError, not a crash)."""
    model, _ = fiber_model(8)
    cyl = CylinderContact(point=(0.0, 0.0, -0.22), axis=(0, 1, 0), radius=0.2, law=LAW)
    n = model.n_dofs
    with pytest.raises(ValueError, match="u must be a vector"):
        cyl.evaluate(model, np.zeros(n - 6), 0.0)
    with pytest.raises(ValueError, match="du must be a vector"):
        cyl.max_step(model, np.zeros(n), np.zeros(3), 0.0, delta_bar=0.25)
    # other dtypes and layouts are converted: the same result
    u = random_state(model, np.random.default_rng(3), 0.005)
    ref = cyl.evaluate(model, u, 0.0).residual
    cyl.clear_cache()
    np.testing.assert_array_equal(cyl.evaluate(model, list(u), 0.0).residual, ref)
    strided = np.zeros(2 * n)
    strided[::2] = u
    frozen = u.copy()
    frozen.setflags(write=False)
    for v in (strided[::2], frozen):
        cyl.clear_cache()  # evaluate again, not from the last state
        np.testing.assert_array_equal(cyl.evaluate(model, v, 0.0).residual, ref)


@pytest.mark.parametrize("stretch", [1.0, 1.2])
def test_stretched_fiber_on_a_parallel_cylinder_is_pressed_with_the_law_over_its_current_length(stretch):
    """A straight fiber stretched by λ lying along a cylinder's axis, inside its reach: the current radius
    r0/√λ enters the gap and the force per current length F(g) acts over the current length λ L (eq. 50, an
    integral over the deformed centerline), in closed form."""
    r0, R, distance, length, n = 0.05, 0.2, 0.24, 1.0, 4
    fiber = sf.Fiber.straight((0, 0, 0), (length, 0, 0), n_elements=n, radius=r0, law=sf.prestress(100.0))
    model = sf.Model([fiber])
    cyl = CylinderContact(point=(0.0, -distance, 0.0), axis=(1, 0, 0), radius=R, law=LAW)
    u = np.zeros(model.n_dofs)
    per_node = u.reshape(-1, 6)
    per_node[:, 0] = (stretch - 1) * length * np.linspace(0.0, 1.0, n + 1)
    per_node[:, 3] = (stretch - 1) * length
    ev = cyl.evaluate(model, u, 0.0)
    g = distance / (R + r0 / np.sqrt(stretch)) - 1
    assert g < 0 and ev.n_active == n * cyl.quadrature_points
    force = -500.0 * g / (1 + 4.0 * g) * stretch * length  # F(g) = −κ g/(1 + γ g) over λ L, along +y
    np.testing.assert_allclose(ev.residual[1::6].sum(), -force, rtol=1e-12)  # G = internal − external
    np.testing.assert_allclose(ev.residual[0::6].sum(), 0.0, atol=1e-12 * force)


def test_safeguard_estimate_bounds_a_fiber_that_shortens_beside_the_cylinder():
    # a short straight fiber (length 0.02, |A1| = 0.02) parallel to the axis at D = 0.3 is compressed about its
    # centre, x(δ) = X − δ c (X − X_c) along the axis: its distance to the axis stays D while its radius grows
    # as r0/√(1 − δ c) (eq. 21); the estimate must stay below the true margin 1 + γ (D/(R + r(δ)) − 1)
    D, R, r0, gamma, length, c = 0.3, 0.2, 0.05, 4.0, 0.02, 0.5
    delta = np.linspace(0.0, 1.0, 21)
    true_margin = 1.0 + gamma * (D / (R + r0 / np.sqrt(1.0 - delta * c)) - 1.0)
    estimate = admissibility_estimate(D, c * length / 2, r0, length, length, c * length, delta, radius=R,
                                      length=None, gamma=gamma)
    assert np.all(estimate <= true_margin + 1e-12)
    # at the start only the distance bound D − δ|Δu| is conservative, and at δ = 0 it is exact
    assert estimate[0] == pytest.approx(true_margin[0], rel=1e-12)
    assert true_margin[-1] < true_margin[0] - 0.3  # the growing radius matters along this step


def test_demo_interrupted_in_its_warm_up_says_no_case_was_solved(capsys, monkeypatch):
    from skfiber.demos import contact_cylinder

    def stop(n_elements, points):
        raise KeyboardInterrupt

    monkeypatch.setattr(contact_cylinder, "solve", stop)
    assert contact_cylinder.main(["--small"]) == 130
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith("s, before any case was solved") and len(lines) == 2
    assert lines[-1] == "summary: qp4_change_pct=nan ne32_error_pct=nan interrupted=1"


def test_demo_interrupted_reports_the_cases_solved(capsys, monkeypatch):
    """Ctrl-C during the third solve after the warm-up: the two cases solved are printed, the summary line ends
    the output marked interrupted, and main returns 130."""
    from skfiber.demos import contact_cylinder

    solve, calls = contact_cylinder.solve, []

    def stop_at_the_third_case(n_elements, points):
        calls.append((n_elements, points))
        if len(calls) == 4:
            raise KeyboardInterrupt
        return solve(n_elements, points)

    monkeypatch.setattr(contact_cylinder, "solve", stop_at_the_third_case)
    assert contact_cylinder.main(["--small"]) == 130
    lines = capsys.readouterr().out.strip().splitlines()
    assert calls[0] == (contact_cylinder.WARM_UP_ELEMENTS, contact_cylinder.BASE_POINTS)  # untimed, not a case
    assert lines[0].startswith("interrupted (Ctrl-C) after ") and len(lines) == 5
    assert [tuple(int(v) for v in line.split()[:2]) for line in lines[2:4]] == calls[1:3]
    assert lines[-1] == "summary: qp4_change_pct=nan ne32_error_pct=nan interrupted=1"
