"""The smallest gap of fiber–fiber contact (``FiberContact(gap="smallest")``): the radius quintics, the
minimum against brute force, its continuity where the closest point's gap jumps, and its tangent."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.fibers import FiberContact
from skfiber.contact.smallest_gap import POWER_FROM_QUINTIC_HERMITE, radius_polynomials
from test_contact_fibers import LAW, block_fd_error, fd_error


def law():
    return PenaltyLaw(stiffness=1000.0, gamma=2.0)


def test_quintic_hermite_matrix_reproduces_quintics():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(6)  # Σ a_j t^j
    p = np.polynomial.Polynomial(a)
    v = np.array([p(0), p.deriv()(0), p.deriv(2)(0), p(1), p.deriv()(1), p.deriv(2)(1)])
    assert np.allclose(POWER_FROM_QUINTIC_HERMITE @ v, a, atol=1e-12)


@pytest.mark.parametrize("r0", [
    lambda th: 0.06 * (1.0 + 16.0 * (1.0 - th) ** 2 * th**2),  # the upper limb's (quartic; flat at both ends)
    lambda th: 0.01 + 0.14 * th - 0.05 * th**3,                # sloped at both ends (the one-sided differences)
], ids=["quartic", "sloped cubic"])
def test_radius_polynomials_interpolate_the_callable_and_are_c2_across_nodes(r0):
    f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=5, radius=r0)
    d = sf.Model([f]).discretization
    a = radius_polynomials(d)
    h = 1.0 / 5
    xi = np.linspace(0, 1, 11)
    for e in range(5):
        theta = e * h + h * xi
        # finite differences of the callable: about 1e-8 at the fiber ends (one-sided), exact quartic else
        assert np.allclose(np.polynomial.polynomial.polyval(xi, a[e]), r0(theta), rtol=0, atol=1e-7)
    for e in range(4):  # value, first and second derivative (per θ) agree at the shared node
        left = [np.polynomial.polynomial.polyval(1.0, np.polynomial.polynomial.polyder(a[e], m)) / h**m
                for m in range(3)]
        right = [np.polynomial.polynomial.polyval(0.0, np.polynomial.polynomial.polyder(a[e + 1], m)) / h**m
                 for m in range(3)]
        assert np.allclose(left, right, rtol=0, atol=1e-12)
    const = radius_polynomials(sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2,
                                                           radius=0.05)]).discretization)
    assert np.array_equal(const, np.array([[0.05, 0, 0, 0, 0, 0]] * 2))


def _varying_model(rng, scale=1e-3):
    """A straight fiber under a partner whose radius grows 15-fold along it: the smallest gap's point is
    not the closest point."""
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.03, law=LAW)
    b = sf.Fiber.polyline([(0.4, -0.5, 0.1), (0.5, 0.0, 0.09), (0.55, 0.5, 0.1)], n_elements=5,
                          radius=lambda th: 0.01 + 0.14 * th, law=LAW)
    model = sf.Model([a, b])
    return model, scale * rng.standard_normal(model.n_dofs)


def _brute_gap(model, u, pr, samples=20001, quintic=None):
    """min over the partner fiber of d/(r_x + r_y) − 1 by dense sampling with the exact r0(θ), or with the
    radius quintics ``quintic`` (e, 6) of the search."""
    d = model.discretization
    x = pr.x
    out = np.empty(pr.point.size)
    for fb in np.unique(pr.fiber_y):
        fiber = d.fibers[fb]
        theta = np.linspace(0, 1, samples)
        q = d.reference_dofs + u
        y, yp = d.evaluate(q, fb, theta).T, d.evaluate(q, fb, theta, 1).T
        Yp = d.evaluate(d.reference_dofs, fb, theta, 1).T
        if quintic is None:
            r0 = fiber.radius_at(theta)
        else:
            fd = d.fiber_dofs[fb]
            ne = fd.n_nodes - 1
            e = np.minimum((theta * ne).astype(int), ne - 1)
            xi = theta * ne - e
            coefficients = quintic[np.arange(quintic.shape[0])[fd.elements][e]]
            r0 = np.einsum("ij,ij->i", coefficients, xi[:, None] ** np.arange(6))
        ry = r0 * np.sqrt(np.linalg.norm(Yp, axis=1) / np.linalg.norm(yp, axis=1))
        rows = np.flatnonzero(pr.fiber_y == fb)
        dist = np.linalg.norm(y[None, :, :] - x[rows, None, :], axis=2)
        out[rows] = (dist / (pr.radius_x[rows, None] + ry[None, :])).min(axis=1) - 1
    return out


def test_smallest_gap_is_the_minimum_over_the_partner_and_below_the_closest_point_gap():
    rng = np.random.default_rng(3)
    model, u = _varying_model(rng)
    smallest = FiberContact(law(), gap="smallest").pairs(model, u)
    closest = FiberContact(law(), gap="closest_point").pairs(model, u)
    assert np.array_equal(smallest.point, closest.point) and np.array_equal(smallest.fiber_y, closest.fiber_y)
    # the quintic radius against the callable: 1e-9; then the minimum can only be lower
    assert np.all(smallest.gap <= closest.gap + 1e-8)
    moved = np.abs(smallest.xi_y + smallest.element_y - closest.xi_y - closest.element_y)
    assert moved.max() > 0.05  # the smallest gap is not at the closest point
    assert (closest.gap - smallest.gap).max() > 5e-3
    brute = _brute_gap(model, u, smallest)
    assert np.max(np.abs(smallest.gap - brute)) < 1e-6


def test_tangent_of_the_smallest_gap_matches_finite_differences():
    rng = np.random.default_rng(4)
    model, u = _varying_model(rng)
    contact = FiberContact(law(), gap="smallest")
    pr = contact.pairs(model, u)
    assert np.sum(pr.gap < 0) >= 5 and np.all(np.abs(pr.gap) > 1e-4)
    n = model.n_dofs
    assert fd_error(contact, model, u, [rng.standard_normal(n) for _ in range(3)]) < 1e-6
    for fa in range(2):
        for fb in range(2):
            assert block_fd_error(contact, model, u, rng, fa, fb) < 1e-6, (fa, fb)


def test_smallest_gap_is_continuous_where_the_closest_points_swap():
    # a partner with two humps, its radius growing along it; a short fiber above the valley between
    # them moves along x through the symmetry plane, where its closest point jumps from hump to hump
    b = sf.Fiber.polyline([(-0.4, 0, 0), (-0.1, 0, 0.15), (0, 0, 0), (0.1, 0, 0.15), (0.4, 0, 0)], n_elements=8,
                          radius=lambda th: 0.03 + 0.04 * th, law=LAW)
    a = sf.Fiber.straight((0.0, -0.05, 0.2), (0.0, 0.05, 0.2), n_elements=1, radius=0.06, law=LAW)
    model = sf.Model([a, b])
    shift = np.zeros(model.n_dofs)
    shift[0:6 * 2:6] = 1.0  # fiber a (nodes 0, 1): x displacement
    assert model.discretization.fiber_dofs[0].first_node == 0
    steps = np.linspace(-1e-3, 1e-3, 41)
    jumps = {}
    for gap in ("closest_point", "smallest"):
        contact = FiberContact(law(), gap=gap)
        g = np.array([contact.pairs(model, s * shift).gap for s in steps])
        jumps[gap] = np.abs(np.diff(g, axis=0)).max()
    assert jumps["closest_point"] > 0.1  # the swap: g of the middle point jumps from +0.08 to −0.04
    assert jumps["smallest"] < 2e-3  # continuous: the change over one shift of 5e-5 m


def test_bad_gap_name_is_a_clear_error():
    with pytest.raises(ValueError, match="gap must be one of 'closest_point', 'smallest'"):
        FiberContact(law(), gap="balls")


@pytest.mark.parametrize("case", range(7))
def test_smallest_gap_against_brute_force_on_random_bundles(case):
    """Random bundles (constant and varying radii), an upper-limb-like set and a staggered bundle: where
    the pair is in contact (g < 0 by either), its smallest gap equals the dense-sampled minimum over its
    partner fiber, and the tangent matches finite differences.  (A pair out of contact takes the minimum
    over the partner's elements within reach, g ≥ 0 elsewhere: possibly above the fiber's minimum, and
    without force either way.)"""
    from test_contact_fibers_kernels import contact_cases

    model, u, gamma, direction = list(contact_cases())[case]
    contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=gamma), gap="smallest")
    pr = contact.pairs(model, u)
    assert pr.point.size > 0
    brute = _brute_gap(model, u, pr, samples=4001, quintic=radius_polynomials(model.discretization))
    near = (pr.gap < 0) | (brute < 0)
    assert near.sum() > 0
    assert np.all(pr.gap[near] <= brute[near] + 1e-8)  # a minimum: never above a sampled value
    assert np.max(brute[near] - pr.gap[near]) < 1e-5  # and the sampled minimum comes down to it
    # case 6: a fiber crosses a bent one at its interior node, and by symmetry the minimum sits on the node,
    # stationary from both sides; y″ jumps there, so ξ(u) has a kink and central differences see the mean
    # of the two sides, while the tangent takes the side of the element that holds the point (< 1 %)
    # every case holds pairs in touch and none at the law's kink g = 0, where differences are meaningless
    assert np.any(pr.gap < 0) and np.all(np.abs(pr.gap) > 1e-6), np.abs(pr.gap).min()
    assert fd_error(contact, model, u, [direction]) < (1e-2 if case == 6 else 1e-5)
    if case == 6:
        assert not np.any(pr.fixed[pr.gap < 0])  # stationary at the node, not a kink: ξ moves


def test_short_steps_keep_the_smallest_gaps_margin_along_the_step():
    """Short steps decided from their two ends (the smallest gap's bound, γ > 1): along every accepted
    fraction of the step each pair keeps 1 + γg > δ̄ min(1 + γg₀, 1), and some steps pass whole."""
    from test_contact_fibers import random_fibers

    rng = np.random.default_rng(21)
    whole = 0
    for trial in range(20):
        model = sf.Model(random_fibers(rng, n_fibers=4, ne=4))
        contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=1.25), gap="smallest")
        u = 0.005 * rng.standard_normal(model.n_dofs)
        try:
            before = contact.pairs(model, u)
            contact.evaluate(model, u, 0.0, tangent=False)
        except FloatingPointError:
            continue
        du = 2e-4 * rng.standard_normal(model.n_dofs)
        delta = contact.max_step(model, u, du, 0.0, delta_bar=0.3)
        whole += delta == 1.0
        start = {(int(p), int(f)): a for p, f, a in zip(before.point, before.fiber_y, before.admissibility)}
        for fraction in np.linspace(0, 1, 11)[1:]:
            pr = contact.pairs(model, u + fraction * delta * du)
            for p, f, a in zip(pr.point, pr.fiber_y, pr.admissibility):
                assert a > 0.3 * min(start.get((int(p), int(f)), 1.0), 1.0) - 1e-12
    assert whole >= 3


def test_pruned_search_equals_the_search_of_every_partner_element():
    """The pruning of the smallest gap's search (lower bounds of φ from distance bounds and the radius bound)
    drops no element that holds the minimum: against the same per-element search on every element of the
    partner fiber, without any pruning."""
    from skfiber.contact.closest_point import closest_point_one
    from skfiber.contact.fiber_geometry import fiber_setup, fiber_state
    from skfiber.contact.smallest_gap import smallest_on_element
    from test_contact_fibers_kernels import contact_cases

    checked = 0
    for model, u, gamma, _ in list(contact_cases())[:6]:
        contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=gamma), gap="smallest")
        pr = contact.pairs(model, u)
        s = fiber_setup(model.discretization, contact.quadrature_points, None, contact.name)
        st = fiber_state(s, model, u, contact.name)
        a, scratch = np.empty(6), np.empty((9, 7))
        for i in np.flatnonzero(pr.gap < 0):
            k = pr.point[i]
            best = np.inf
            for e in np.flatnonzero(s.fiber == pr.fiber_y[i]):
                xi, _, _ = closest_point_one(st.c[e], st.x[k], True, a, scratch)
                best = min(best, smallest_on_element(st.c[e], s.c_ref[e], s.r0_poly[e], st.x[k], st.rx[k], xi)[1])
            assert pr.gap[i] == pytest.approx(best - 1, abs=1e-13)
            checked += 1
    assert checked > 200


def test_two_minima_of_the_gap_on_one_element_are_both_seen():
    """An element whose radius has two bumps, under a point above its thin middle: φ has two interior local
    minima, away from the closest point; the search returns the deeper one, as dense sampling does."""
    from numpy.polynomial import polynomial as P

    from skfiber.contact.smallest_gap import phi_derivatives, smallest_on_element

    c = np.array([[-0.5, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # y = (ξ − 0.5, 0, 0)
    bumps = P.polymul(P.polymul([0.0, 1.0, -1.0], [0.25, -1.0, 1.0]), [12.8])  # 12.8 ξ(1 − ξ)(ξ − 0.5)²
    rp = np.zeros(6)
    rp[:bumps.size] = bumps
    rp[0] += 0.05
    x = np.array([0.01, 0.0, 0.3])
    xi, phi, d, stationary = smallest_on_element(c, c.copy(), rp, x, 0.05, 0.51)
    t = np.linspace(0, 1, 20001)
    values = np.array([phi_derivatives(c, c.copy(), rp, x, 0.05, v)[0] for v in t])
    interior = (values[1:-1] < values[:-2]) & (values[1:-1] < values[2:])
    assert interior.sum() == 2  # two local minima, neither at the closest point ξ = 0.51
    assert stationary and phi == pytest.approx(values.min(), abs=1e-8) and abs(xi - 0.51) > 0.2


def test_smallest_gap_on_an_element_against_dense_sampling_on_random_radii():
    """Random quintic radii (thin and thick parts, several local minima of φ), random points beside a curved
    element: the search over the element's samples, the closest point and the roots of φ′ finds the minimum
    that dense sampling finds (300 cases, fixed seed)."""
    from skfiber.contact.smallest_gap import phi_derivatives, smallest_on_element

    rng = np.random.default_rng(7)
    t = np.linspace(0, 1, 4001)
    checked = 0
    while checked < 300:
        c = np.array([[-0.5, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        c[2:] += rng.uniform(-0.15, 0.15, (2, 3))  # a curved cubic element
        rp = np.concatenate([[0.05], rng.uniform(-0.4, 0.4, 5) / np.arange(1, 6)])
        radius = np.polynomial.polynomial.polyval(t, rp)
        if radius.min() < 0.01:  # (a radius must stay positive)
            continue
        x = np.array([rng.uniform(-0.6, 0.6), rng.uniform(-0.1, 0.1), rng.uniform(0.1, 0.4)])
        curve = np.polynomial.polynomial.polyval(t, c).T  # (4001, 3)
        xi_closest = float(t[np.argmin(np.linalg.norm(curve - x, axis=1))])
        _, phi, _, _ = smallest_on_element(c, c.copy(), rp, x, 0.05, xi_closest)
        dense = min(phi_derivatives(c, c.copy(), rp, x, 0.05, v)[0] for v in t)
        assert phi <= dense + 1e-9 and phi == pytest.approx(dense, abs=1e-6), (checked, phi, dense)
        checked += 1
