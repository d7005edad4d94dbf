"""Fiber–fiber contact (paper §2.4, §4.3, §4.4, A.3): closest point, broad phase,
residual sign and balance, consistent tangent, safeguard, bundle robustness."""
import numpy as np
import pytest
import scipy.sparse as sps
from scipy.optimize import minimize_scalar

import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.broadphase import box_pairs
from skfiber.contact.closest_point import POWER_FROM_HERMITE, closest_points, real_roots
from skfiber.contact.fiber_geometry import fiber_setup, fiber_state
from skfiber.contact.fibers import FiberContact
from skfiber.linalg import ConstrainedSolver


LAW = sf.passive_kelvin_voigt(mu_muscle=100.0, mu_tendon=100.0, eta_muscle=0.0, eta_tendon=0.0) + sf.prestress(100.0)


def contact_law(kappa=1000.0, gamma=2.0):
    return PenaltyLaw(stiffness=kappa, gamma=gamma)


def tangent_matrix(ev, n):
    return sps.csr_matrix((ev.values, (ev.rows, ev.cols)), shape=(n, n))


def fd_error(contact, model, u, directions, eps=1e-6, mask=None):
    """max ‖K d − FD‖/‖K d‖ of the standalone contact over directions (optionally restricted)."""
    n = model.n_dofs
    K = tangent_matrix(contact.evaluate(model, u, 0.0), n)
    worst = 0.0
    for d in directions:
        Kd = K @ d
        fd = (contact.evaluate(model, u + eps * d, 0.0, tangent=False).residual
              - contact.evaluate(model, u - eps * d, 0.0, tangent=False).residual) / (2 * eps)
        if mask is not None:
            Kd, fd = Kd[mask], fd[mask]
        assert np.linalg.norm(Kd) > 0
        worst = max(worst, np.linalg.norm(Kd - fd) / np.linalg.norm(Kd))
    return worst


def block_fd_error(contact, model, u, rng, fa, fb):
    """fd_error of the tangent's block of fiber fa's rows by fiber fb's columns (a random direction in fb)."""
    n = model.n_dofs
    rows, cols = fiber_rows(model, fa), fiber_rows(model, fb)
    d = np.zeros(n)
    d[cols] = rng.standard_normal(cols.size)
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return fd_error(contact, model, u, [d], mask=mask)


def fiber_rows(model, k):
    fd = model.discretization.fiber_dofs[k]
    return np.arange(6 * fd.first_node, 6 * (fd.first_node + fd.n_nodes))


# --------------------------------------------------------------------------- closest point
def _brute_distance(c, x, samples=4001):
    """Global minimum of |y(ξ) − x| on [0, 1]: dense sampling, then a bounded local refinement."""
    s = np.linspace(0.0, 1.0, samples)
    y = (s[:, None] ** np.arange(4)) @ c
    d = np.linalg.norm(y - x, axis=1)
    i = int(np.argmin(d))
    lo, hi = s[max(i - 1, 0)], s[min(i + 1, samples - 1)]
    f = lambda t: np.linalg.norm((t ** np.arange(4)) @ c - x)  # noqa: E731
    r = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    return min(d[i], r.fun)


@pytest.mark.parametrize("method", ["auto", "eig"])
def test_closest_point_matches_brute_force_on_random_hermite_curves(method):
    rng = np.random.default_rng(7)
    n = 250
    # Hermite data: from gently to strongly curved (loops), points near and far
    q = rng.standard_normal((n, 4, 3))
    q[: n // 2, 1] = q[: n // 2, 2] - q[: n // 2, 0] + 0.2 * rng.standard_normal((n // 2, 3))
    q[: n // 2, 3] = q[: n // 2, 2] - q[: n // 2, 0] + 0.2 * rng.standard_normal((n // 2, 3))
    q[n // 2:, [1, 3]] *= 4.0
    c = np.matmul(POWER_FROM_HERMITE, q)
    x = (q[:, 0] + q[:, 2]) / 2 + rng.standard_normal((n, 3)) * rng.choice([0.05, 0.5, 2.0], size=(n, 1))
    r = closest_points(c, x, method=method)
    y = np.matmul((r.xi[:, None] ** np.arange(4))[:, None, :], c)[:, 0]
    assert np.allclose(np.linalg.norm(y - x, axis=1), r.distance, rtol=0, atol=1e-13)
    brute = np.array([_brute_distance(c[i], x[i]) for i in range(n)])
    assert np.all(r.distance <= brute + 1e-12)  # never worse than the brute force
    assert np.max(r.distance - brute) <= 1e-12 and np.min(r.distance - brute) > -1e-7  # the global minimum
    assert np.all((r.xi >= 0) & (r.xi <= 1))


def test_closest_point_degenerate_segments():
    # straight, uniformly parametrized (the quintic drops to degree 1), a point on the curve,
    # and a point beyond the end (minimum at the end, not stationary)
    c = np.zeros((3, 4, 3))
    c[:, 1] = [2.0, 0.0, 0.0]
    x = np.array([[0.5, 0.3, 0.0], [1.2, 0.0, 0.0], [3.0, 1.0, 0.0]])
    for method in ("auto", "eig"):
        r = closest_points(c, x, method=method)
        assert np.allclose(r.xi, [0.25, 0.6, 1.0]) and np.allclose(r.distance, [0.3, 0.0, np.hypot(1.0, 1.0)])
        assert r.stationary.tolist() == [True, True, False]


def test_real_roots_match_numpy_roots_and_handle_lower_degree():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((400, 6))
    a[:, 0] *= 0.1  # roots near [0, 1]
    a[:100, 5] = 0.0  # quartics
    a[100:150, 3:] = 0.0  # quadratics
    a[150:160] = np.polynomial.polynomial.polyfromroots([0.2, 0.2001, 0.7, 0.95, 3.0]) * rng.uniform(0.5, 2)
    r = real_roots(a)
    n_roots = 0
    for i in range(a.shape[0]):
        z = np.roots(np.trim_zeros(a[i, ::-1], "f"))
        expected = np.sort(z.real[(np.abs(z.imag) < 1e-12) & (z.real >= 0) & (z.real <= 1)])
        got = r[i][np.isfinite(r[i])]
        assert np.all(np.diff(got) >= 0)
        assert got.size == expected.size and np.allclose(got, expected, rtol=0, atol=1e-10)
        n_roots += got.size
    assert n_roots > 200


def test_slope_certificate_proves_the_quintic_monotone():
    # the fast path's certificate: the Bernstein coefficients of f′ on [0, 1] (here from scipy's conversion of the
    # power basis) all of one sign ⇒ f′ has that sign on [0, 1]
    from scipy.interpolate import BPoly, PPoly

    from skfiber.contact.closest_point import _slope_sign

    rng = np.random.default_rng(5)
    a = rng.standard_normal((4000, 6)) * rng.choice([0.05, 1.0, 5.0], size=(4000, 6))
    derivative = np.polynomial.polynomial.polyder(a.T)  # (5, 4000) power coefficients of f′
    bernstein = BPoly.from_power_basis(PPoly(derivative[::-1, None, :], [0.0, 1.0])).c[:, 0, :].T  # (4000, 5)
    expected = np.where((bernstein > 0).all(axis=1), 1, np.where((bernstein < 0).all(axis=1), -1, 0))
    signs = np.array([_slope_sign(row) for row in a])
    margin = np.abs(bernstein).min(axis=1) > 1e-12 * np.abs(bernstein).max(axis=1)  # (no sign decided by round-off)
    assert np.array_equal(signs[margin], expected[margin])
    assert (signs > 0).sum() > 400 and (signs < 0).sum() > 400
    xi = np.linspace(0.0, 1.0, 2001)
    slope = np.polynomial.polynomial.polyval(xi, derivative)  # (4000, 2001)
    assert np.all(slope[signs > 0] > 0) and np.all(slope[signs < 0] < 0)
    assert np.any((signs == 0) & (slope.min(axis=1) > 0))      # not exact (those go to the root isolation)
    # one Bernstein coefficient of the wrong sign, at each place in turn: not certified
    for i in range(5):
        for sign in (1.0, -1.0):
            b = np.full(5, sign)
            b[i] = -1e-3 * sign
            power = PPoly.from_bernstein_basis(BPoly(b[:, None], [0.0, 1.0])).c[::-1, 0]  # f′ in the power basis
            f = np.concatenate([[0.3], power / np.arange(1, 6)])  # an f with that f′
            assert _slope_sign(f) == 0, (i, sign)
    assert _slope_sign(np.array([-0.3, 1.0, 0.0, 0.0, 0.0, 0.0])) == 1      # f = ξ − 0.3


def test_closest_point_branches_of_the_certified_path():
    # y = (ξ, 0, 0) bent into an arc; the certified path against the root isolation on points chosen to reach
    # each branch: increasing f with a root (interior minimum), increasing f ≥ 0 at 0 (exactly 0: stationary) or
    # ≤ 0 at 1, and decreasing f (points on the concave side, far from the arc: the nearer end)
    from skfiber.contact.closest_point import _one_sign, _quintic, _slope_sign, closest_point_loop

    c = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])   # straight, f = ξ − x0
    arc = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.6, 0.0], [0.0, 0.0, 0.0]])  # y = (ξ, 0.6 ξ², 0)
    cases = [(c, [0.25, 0.3, 0.0]), (c, [0.0, 0.5, 0.0]), (c, [1.0, 0.2, 0.0]), (c, [-0.5, 0.1, 0.0]),
             (c, [1.7, -0.2, 0.0]), (arc, [-0.5, 4.0, 0.0]), (arc, [-0.3, 3.5, 0.0]), (arc, [0.5, -0.4, 0.0])]
    C = np.array([cc for cc, _ in cases])
    X = np.array([x for _, x in cases], dtype=float)
    branches = []
    for cc, x in zip(C, X):
        a = _quintic(cc, x, np.empty(6))
        no_root, slope = int(_one_sign(a)), int(_slope_sign(a))
        branches.append({1: "no root, at 0", -1: "no root, at 1"}[no_root] if no_root else
                        {1: "increasing", -1: "decreasing", 0: "root isolation"}[slope])
    assert branches[:5] == ["increasing"] * 3 + ["no root, at 0", "no root, at 1"]
    assert branches[5:] == ["decreasing", "decreasing", "increasing"]
    out = {}
    for certify in (True, False):
        xi, d, st = np.empty(len(C)), np.empty(len(C)), np.empty(len(C), dtype=bool)
        closest_point_loop(C, X, certify, xi, d, st)
        out[certify] = xi, d, st
    assert np.allclose(out[True][0], out[False][0], rtol=0, atol=1e-12)
    assert np.allclose(out[True][1], out[False][1], rtol=0, atol=1e-14)
    assert np.array_equal(out[True][2], out[False][2])
    assert out[True][0][:3].tolist() == [0.25, 0.0, 1.0] and out[True][2][:3].tolist() == [True, True, True]


@pytest.mark.parametrize("seed", [0, 1])
def test_certified_closest_points_equal_the_root_isolation(seed):
    # the certified path and the root isolation of every segment (certify=False) agree: distance to round-off,
    # the same parameter and kind of point (stationary or at an end) unless two minima are equally close
    from skfiber.contact.closest_point import closest_point_loop

    rng = np.random.default_rng(seed)
    n = 3000
    q = rng.standard_normal((n, 4, 3))
    q[:, [1, 3]] = (q[:, 2] - q[:, 0])[:, None] + rng.choice([0.05, 0.5, 2.0], size=(n, 1, 1)) * \
        rng.standard_normal((n, 2, 3))
    c = np.matmul(POWER_FROM_HERMITE, q)
    x = (q[:, 0] + q[:, 2]) / 2 + rng.standard_normal((n, 3)) * rng.choice([0.05, 0.5, 2.0], size=(n, 1))
    out = {}
    for certify in (True, False):
        xi, d, st = np.empty(n), np.empty(n), np.empty(n, dtype=bool)
        closest_point_loop(c, x, certify, xi, d, st)
        out[certify] = xi, d, st
    (xi1, d1, st1), (xi0, d0, st0) = out[True], out[False]
    assert np.max(np.abs(d1 - d0)) <= 1e-13 * (1 + d0.max())
    same = np.abs(xi1 - xi0) <= 1e-9
    assert np.mean(same) > 0.999 and np.array_equal(st1[same], st0[same])


# --------------------------------------------------------------------------- broad phase
def test_box_pairs_match_brute_force():
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(2, 300))
        lo = rng.uniform(0, 3, (n, 3))
        hi = lo + rng.uniform(0, 0.4, (n, 3)) * rng.choice([0.2, 1.0, 3.0])
        group = rng.integers(0, max(2, n // 10), n)
        reach = rng.uniform(0, 0.1, n)
        got = {tuple(p) for p in box_pairs(lo, hi, group, reach)}
        L, H = lo - reach[:, None], hi + reach[:, None]
        overlap = np.all((L[:, None] <= H[None]) & (L[None] <= H[:, None]), axis=2) & (group[:, None] != group[None])
        assert got == {(int(i), int(j)) for i, j in zip(*np.nonzero(overlap))}


def _brute_pairs(lo, hi, group, reach):
    L, H = lo - reach[:, None], hi + reach[:, None]
    overlap = np.all((L[:, None] <= H[None]) & (L[None] <= H[:, None]), axis=2) & (group[:, None] != group[None])
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(overlap))}


def test_box_pairs_of_the_grid_match_brute_force_on_bundles_and_awkward_boxes():
    """The grid's pairs (each once, in the first cell both boxes cover) against all pairs tested: a bundle of
    thin boxes along z (one x holds every box of a column), one huge box among small ones, boxes that only
    touch, repeated and zero-size boxes, and the sweep's answer where a corner is not finite."""
    from skfiber.contact.broadphase import _grid_keys, _sweep_keys

    rng = np.random.default_rng(5)
    # a bundle: 12 × 12 fibers along z, 16 elements each
    gx, gy = np.meshgrid(np.arange(12) * 0.004, np.arange(12) * 0.004)
    lo = np.concatenate([np.stack([gx.ravel() + 0.0005 * rng.standard_normal(144), gy.ravel(),
                                   np.full(144, 0.02 * k)], axis=1) for k in range(16)])
    hi = lo + [0.003, 0.003, 0.021]
    group = np.tile(np.arange(144), 16)
    reach = np.full(lo.shape[0], 0.0006)
    cases = [(lo, hi, group, reach)]
    big = rng.uniform(0, 1, (200, 3))
    big_hi = big + 0.02
    big_hi[0] = big[0] + 0.9  # one box over most of the others
    cases.append((big, big_hi, np.arange(200), np.zeros(200)))
    touch = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 1, 0], [0, 0, 0], [5, 5, 5], [5, 5, 5]])
    cases.append((touch, touch + [1.0, 1, 1], np.array([0, 1, 2, 3, 4, 5, 6]), np.zeros(7)))  # faces, a copy
    cases.append((touch, touch.copy(), np.arange(7), np.zeros(7)))  # points
    for lo_, hi_, group_, reach_ in cases:
        got = {tuple(p) for p in box_pairs(lo_, hi_, group_, reach_)}
        assert got == _brute_pairs(lo_, hi_, group_, reach_)
        keys = _grid_keys(lo_ - reach_[:, None], hi_ + reach_[:, None], group_)
        assert keys.size == len(got) and keys.size == np.unique(keys).size  # every pair once, no repeat
    nan = touch.astype(float).copy()
    nan[2, 1] = np.nan
    L, H = nan, nan + 1.0
    assert _grid_keys(L, H, np.arange(7)).tolist() == [-1]  # no grid: the sweep answers
    got = {tuple(p) for p in box_pairs(nan, nan + 1.0, np.arange(7), np.zeros(7))}
    assert got == _brute_pairs(nan, nan + 1.0, np.arange(7), np.zeros(7))
    assert np.sort(_sweep_keys(L, H, np.arange(7))).size == len(got)
    # inverted boxes (a negative reach) and corners whose span overflows: the sweep, the same pairs
    rng = np.random.default_rng(8)
    lo_, group_ = rng.uniform(0, 1, (60, 3)), rng.integers(0, 6, 60)
    hi_, reach_ = lo_ + rng.uniform(0, 0.2, (60, 3)), rng.uniform(-0.1, 0.1, 60)
    assert {tuple(p) for p in box_pairs(lo_, hi_, group_, reach_)} == _brute_pairs(lo_, hi_, group_, reach_)
    far = np.array([[-1e308, 0, 0], [0, 0, 0], [0.5, 0, 0]])
    far_hi = np.array([[1e308, 1, 1], [1, 1, 1], [2, 1, 1]])
    assert _grid_keys(far, far_hi, np.arange(3)).tolist() == [-1]
    got = {tuple(p) for p in box_pairs(far, far_hi, np.arange(3), np.zeros(3))}
    assert got == _brute_pairs(far, far_hi, np.arange(3), np.zeros(3)) and len(got) == 6


def test_two_end_check_takes_the_start_pairs_by_key_in_any_order():
    """The start's pairs are looked up by (contact point, partner fiber), whatever their order; of two pairs
    of one key the smaller 1 + γg and distance count, and a NaN among them is passed over (as the least
    of +∞ and the values); a key not in reach at the start is +∞ there."""
    from skfiber.contact.fiber_safeguard import _end_kept

    def kept(adm0, order):
        point0, fiber0 = np.array([4, 4, 1])[order], np.array([2, 2, 0])[order]
        adm0, dist0 = np.asarray(adm0, float)[order], np.array([1.0, 1.0, 1.0])[order]
        return _end_kept(point0, fiber0, adm0, dist0, np.full(3, 0.5), np.array([1, 4, 7]), np.array([0, 2, 1]),
                         np.array([0.9, 0.49, 0.9]), np.full(3, 1.0), np.full(3, 1.0), np.full(3, 0.5), 3, 0.5,
                         2.0, 0.01, False)

    for order in ([0, 1, 2], [1, 0, 2], [2, 1, 0]):
        # key (4, 2) ends at 1 + γg = 0.49 (less a dip of 10⁻⁴ along the step); the bound is δ̄ = 0.5 times the
        # smaller start value: 0.3 → 0.15, kept; 0.99 → 0.495, not kept (the larger, 0.99 or 1.2, never counts)
        assert kept([0.99, 0.3, 1.0], order)
        assert not kept([1.2, 0.99, 1.0], order)
        assert kept([np.nan, 0.3, 1.0], order) and not kept([np.nan, 0.99, 1.0], order)


def random_fibers(rng, n_fibers=6, ne=5):
    fibers = []
    for k in range(n_fibers):
        p0 = rng.uniform(-0.15, 0.15, 3)
        direction = rng.standard_normal(3)
        direction /= np.linalg.norm(direction)
        mid = p0 + 0.3 * direction + rng.uniform(-0.1, 0.1, 3)
        fibers.append(sf.Fiber.polyline([p0 - 0.3 * direction, mid, p0 + 0.6 * direction], n_elements=ne,
                                         radius=rng.uniform(0.03, 0.06), law=LAW, name=f"f{k}"))
    return fibers


def test_kept_neighbour_list_gives_the_pairs_of_a_fresh_broad_phase():
    """A broad phase kept over states (rebuilt when the boxes moved too far): the same pairs, bit for bit, as
    the sweep of each state, over small and large motions."""
    from skfiber.contact.broadphase import NeighbourList
    from skfiber.contact.fiber_pairs import find_pairs
    rng = np.random.default_rng(21)
    model = sf.Model(random_fibers(rng, n_fibers=5, ne=6))
    contact = FiberContact(contact_law(gamma=0.5))
    s = fiber_setup(model.discretization, contact.quadrature_points, contact.fibers, contact.name)
    kept = NeighbourList()
    u = np.zeros(model.n_dofs)
    for step in range(30):
        u = u + (0.05 if step % 10 == 9 else 0.001) * rng.standard_normal(model.n_dofs)
        st = fiber_state(s, model, u, "contact")
        fresh = find_pairs(model, s, st, gamma=0.5)
        reused = find_pairs(model, s, st, gamma=0.5, neighbours=kept)
        for name in ("point", "element_y", "xi_y", "distance", "gap"):
            np.testing.assert_array_equal(getattr(fresh, name), getattr(reused, name))
        assert fresh.point.size > 0
    assert 3 <= kept.builds < 30  # rebuilt after the large motions, kept over the small ones
    builds = kept.builds  # another grouping of the same boxes: rebuilt
    kept.neighbours(st.P, s.elements, np.zeros_like(s.fiber), st.reach)
    assert kept.builds == builds + 1
    kept.neighbours(st.P, s.elements, s.fiber, st.reach)
    kept.neighbours(st.P, s.elements, s.fiber, st.reach)
    assert kept.builds == builds + 2  # back to the fibers' grouping once, then kept
    P = st.P.copy()
    P[s.elements[0], 0, 0] = np.nan
    kept.neighbours(P, s.elements, s.fiber, st.reach)
    assert kept.builds == builds + 3  # a control point that is not a number is no small motion


def test_kept_neighbour_list_follows_a_rigid_move():
    """A fiber moved rigidly onto another (its reach, which depends on the stretch, unchanged): the kept list is
    rebuilt for the move itself and finds the pairs a fresh broad phase finds."""
    from skfiber.contact.broadphase import NeighbourList
    from skfiber.contact.fiber_pairs import find_pairs

    def two_fibers(y):
        return sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.06, law=LAW),
                         sf.Fiber.straight((0, y, 0), (1, y, 0), n_elements=4, radius=0.06, law=LAW)])

    apart, close = two_fibers(1.0), two_fibers(0.1)
    contact = FiberContact(contact_law(gamma=0.5))
    s = fiber_setup(apart.discretization, contact.quadrature_points, contact.fibers, contact.name)
    kept = NeighbourList()
    for u in (np.zeros(apart.n_dofs), close.discretization.reference_dofs - apart.discretization.reference_dofs):
        st = fiber_state(s, apart, u, "contact")
        fresh = find_pairs(apart, s, st, gamma=0.5)
        reused = find_pairs(apart, s, st, gamma=0.5, neighbours=kept)
        for name in ("point", "element_y", "xi_y", "distance", "gap"):
            np.testing.assert_array_equal(getattr(fresh, name), getattr(reused, name))
    assert fresh.point.size > 0 and np.all(fresh.gap < 0) and kept.builds == 2


def test_contact_pairs_find_every_contact_brute_force_finds():
    """Broad + narrow phase against brute force: every (contact point, other fiber) with g < 0."""
    rng = np.random.default_rng(5)
    for trial in range(6):
        model = sf.Model(random_fibers(rng))
        d = model.discretization
        u = 0.02 * rng.standard_normal(model.n_dofs)
        contact = FiberContact(contact_law(gamma=0.5))  # γ < 1: deep overlaps stay admissible
        pr = contact.pairs(model, u)
        found = {(int(p), int(f)): (g, dd) for p, f, g, dd in zip(pr.point, pr.fiber_y, pr.gap, pr.distance)}
        s = fiber_setup(d, contact.quadrature_points, contact.fibers, contact.name)
        st = fiber_state(s, model, u, contact.name)
        th = np.linspace(0, 1, 10001)
        ys, rys = [], []
        for k in range(len(model.fibers)):
            ys.append(d.evaluate(d.reference_dofs + u, k, th))
            a1 = np.linalg.norm(d.evaluate(d.reference_dofs + u, k, th, 1), axis=0)
            A1 = np.linalg.norm(d.evaluate(d.reference_dofs, k, th, 1), axis=0)
            rys.append(model.fibers[k].radius_at(th) * np.sqrt(A1 / a1))
        n_contacts = 0
        for p in range(st.x.shape[0]):
            fa = int(s.fiber[p // s.nq])
            for fb in range(len(model.fibers)):
                if fb == fa:
                    continue
                dist = np.linalg.norm(ys[fb] - st.x[p][:, None], axis=0)
                i = np.argmin(dist)
                g = dist[i] / (st.rx[p] + rys[fb][i]) - 1.0
                if g < -1e-3:  # clearly in contact by brute force
                    n_contacts += 1
                    assert (p, fb) in found, f"trial {trial}: contact point {p} – fiber {fb} missed (g = {g:.3g})"
                    g_found, d_found = found[(p, fb)]
                    assert -1e-12 < dist[i] - d_found < 1e-5  # the closest point (up to the sampling error)
                    assert abs(g_found - g) < 2e-3  # r_y at the sample vs at the exact point
        assert n_contacts > 0


# --------------------------------------------------------------------------- residual
def test_overlapping_parallel_fibers_are_pushed_apart():
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0, 0.09, 0), (1, 0.09, 0), n_elements=4, radius=0.05, law=LAW)
    model = sf.Model([a, b])
    ev = FiberContact(contact_law()).evaluate(model, np.zeros(model.n_dofs), 0.0)
    assert ev.n_active == 2 * 4 * 5  # every contact point of both fibers
    # g = 0.09/0.1 − 1 = −0.1, F = 100/0.8 = 125 N/m over 1 m: the external force on a is −125 e_y,
    # so G_y (internal − external) sums to +125 over a's value DOFs, −125 over b's
    Ry = ev.residual[1::6]
    assert np.isclose(Ry[:5].sum(), 125.0) and np.isclose(Ry[5:].sum(), -125.0)
    assert np.allclose(ev.admissibility, 0.8)


def test_the_tangent_after_the_residual_reuses_its_forces_and_returns_a_fresh_residual():
    """Newton asks for the residual, then for the tangent at the same state: the second call reuses the
    first one's contact forces; a caller that changes a returned residual does not change the next, and a new
    law is not served the old forces."""
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0, 0.09, 0), (1, 0.09, 0), n_elements=4, radius=0.05, law=LAW)
    model = sf.Model([a, b])
    u = np.zeros(model.n_dofs)
    contact = FiberContact(contact_law())
    first = contact.evaluate(model, u, 0.0, tangent=False)
    expected = first.residual.copy()
    first.residual[:] = 1e9
    again = contact.evaluate(model, u, 0.0)  # the same state, with the tangent
    np.testing.assert_array_equal(again.residual, expected)
    fresh = FiberContact(contact_law()).evaluate(model, u, 0.0)
    np.testing.assert_array_equal(again.residual, fresh.residual)
    for x, y in zip((again.rows, again.cols, again.values), (fresh.rows, fresh.cols, fresh.values)):
        np.testing.assert_array_equal(x, y)
    contact.law = contact_law(kappa=2000.0)  # F = −κ g/(1 + γ g) doubles
    np.testing.assert_allclose(contact.evaluate(model, u, 0.0).residual, 2 * expected, rtol=1e-14, atol=0)


def test_symmetric_crossing_gives_equal_and_opposite_total_forces():
    a = sf.Fiber.straight((-0.5, 0, 0), (0.5, 0, 0), n_elements=6, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0, -0.5, 0.08), (0, 0.5, 0.08), n_elements=6, radius=0.05, law=LAW)
    model = sf.Model([a, b])
    ev = FiberContact(contact_law()).evaluate(model, np.zeros(model.n_dofs), 0.0)
    total = [ev.residual[fiber_rows(model, k)].reshape(-1, 6)[:, :3].sum(axis=0) for k in (0, 1)]
    assert ev.n_active > 0
    assert total[0][2] > 0  # a is pushed down (G_z = −external > 0)
    assert np.allclose(total[0], -total[1], rtol=1e-12, atol=1e-12 * np.abs(total[0]).max())
    assert np.allclose(total[0][:2], 0.0, atol=1e-10)


def test_contact_quadrature_is_independent_and_converges():
    a = sf.Fiber.straight((-0.5, 0, 0), (0.5, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0, -0.5, 0.085), (0.2, 0.5, 0.085), n_elements=3, radius=0.05, law=LAW)
    model = sf.Model([a, b], quadrature_points=2)  # cable quadrature: 2 points
    u = np.zeros(model.n_dofs)
    rows = fiber_rows(model, 0)[2::6]  # z value DOFs of a: its total vertical contact force
    total = {n: FiberContact(contact_law(), quadrature_points=n).evaluate(model, u, 0.0).residual[rows].sum()
             for n in (1, 5, 10, 20)}
    assert abs(total[1] - total[20]) > 0.5 * total[20]  # one point per element misses the small zone
    for n in (5, 10):
        assert abs(total[n] - total[20]) < 0.03 * total[20]


def test_taking_part_fibers_and_never_self_contact():
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=LAW)
    b = sf.Fiber.straight((0, 0.09, 0), (1, 0.09, 0), n_elements=4, law=LAW, name="b")
    c = sf.Fiber.straight((0, -0.09, 0), (1, -0.09, 0), n_elements=4, law=LAW, name="c")
    # a folded fiber touching itself feels nothing
    loop = sf.Fiber.polyline([(0, 1, 0), (1, 1, 0), (1, 1.08, 0), (0, 1.08, 0)], n_elements=9, law=LAW)
    model = sf.Model([a, b, c, loop])
    u = np.zeros(model.n_dofs)
    ev_all = FiberContact(contact_law()).evaluate(model, u, 0.0)
    assert np.allclose(ev_all.residual[fiber_rows(model, 3)], 0.0)
    ev_ab = FiberContact(contact_law(), fibers=[a, "b"]).evaluate(model, u, 0.0)
    assert ev_ab.n_active == 2 * 4 * 5 and np.allclose(ev_ab.residual[fiber_rows(model, 2)], 0.0)


def test_inadmissible_state_raises_and_names_the_fibers():
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=LAW, name="left")
    b = sf.Fiber.straight((0, 0.04, 0), (1, 0.04, 0), n_elements=4, law=LAW, name="right")
    model = sf.Model([a, b])
    with pytest.raises(FloatingPointError, match=r"fiber 0 \('left'\).*fiber 1 \('right'\).*1 \+ γg"):
        FiberContact(contact_law(gamma=2.0)).evaluate(model, np.zeros(model.n_dofs), 0.0)
    for bad, where in ((np.nan, 0), (np.inf, -1), (-np.inf, 7)):
        u = np.zeros(model.n_dofs)
        u[where] = bad
        with pytest.raises(FloatingPointError, match="the displacement is not finite"):
            FiberContact(contact_law()).evaluate(model, u, 0.0)


def test_bad_parameters_give_clear_errors():
    with pytest.raises(ValueError, match="stiffness κ must be a finite number > 0"):
        PenaltyLaw(stiffness=0.0, gamma=2.0)
    with pytest.raises(ValueError, match="gamma γ must be a finite number > 0"):
        PenaltyLaw(stiffness=1.0, gamma=-1.0)
    with pytest.raises(TypeError, match="PenaltyLaw"):
        FiberContact(1000.0)
    with pytest.raises(ValueError, match="quadrature_points"):
        FiberContact(contact_law(), quadrature_points=0)
    with pytest.raises(ValueError, match="at least 2"):
        FiberContact(contact_law(), fibers=[0])
    with pytest.raises(ValueError, match="radius r0 must be finite and > 0"):
        sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=-0.05)
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=LAW)
    b = sf.Fiber.straight((0, 1, 0), (1, 1, 0), n_elements=2, law=LAW)
    model = sf.Model([a, b])
    with pytest.raises(ValueError, match="unknown fiber name"):
        FiberContact(contact_law(), fibers=["a", "nope"]).evaluate(model, np.zeros(model.n_dofs), 0.0)
    with pytest.raises(ValueError, match="delta_bar"):
        FiberContact(contact_law()).max_step(model, np.zeros(model.n_dofs), np.ones(model.n_dofs), 0.0, delta_bar=1.5)


# --------------------------------------------------------------------------- tangent
def _tangent_model(rng):
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0.45, -0.5, 0.08), (0.55, 0.5, 0.085), n_elements=5,
                          radius=lambda th: 0.05 + 0.01 * th, law=LAW)  # r0(θ) varies
    c = sf.Fiber.polyline([(0, 0.09, 0.0), (0.5, 0.085, 0.02), (1, 0.09, 0)], n_elements=3, radius=0.04, law=LAW)
    model = sf.Model([a, b, c])
    return model, 1e-3 * rng.standard_normal(model.n_dofs)


def test_tangent_matches_finite_differences_including_cross_fiber_blocks():
    rng = np.random.default_rng(1)
    model, u = _tangent_model(rng)
    contact = FiberContact(contact_law())
    ev = contact.evaluate(model, u, 0.0)
    assert ev.n_active > 20 and np.all(np.abs(contact.pairs(model, u).gap) > 1e-4)  # away from the kink
    n = model.n_dofs
    assert fd_error(contact, model, u, [rng.standard_normal(n) for _ in range(3)]) < 1e-6
    # every fiber-by-fiber block, the cross-fiber ones included
    K = tangent_matrix(ev, n)
    for fa in range(3):
        for fb in range(3):
            assert abs(K[fiber_rows(model, fa)][:, fiber_rows(model, fb)]).max() > 0, (fa, fb)
            assert block_fd_error(contact, model, u, rng, fa, fb) < 1e-6, (fa, fb)


def test_tangent_with_the_closest_point_at_a_fiber_end():
    # T junction: b ends above the middle of a, so a's points near θ = 0.5 find b's end point
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0.5, 0.0, 0.07), (0.5, 0.0, 1.0), n_elements=3, radius=0.05, law=LAW)
    model = sf.Model([a, b])
    rng = np.random.default_rng(2)
    u = 1e-3 * rng.standard_normal(model.n_dofs)
    contact = FiberContact(contact_law())
    pr = contact.pairs(model, u)
    assert np.any(pr.fixed & (pr.gap < 0)) and np.any(~pr.fixed & (pr.gap < 0))
    assert fd_error(contact, model, u, [rng.standard_normal(model.n_dofs) for _ in range(3)]) < 1e-6


def test_check_tangent_of_the_model_with_fiber_contact():
    rng = np.random.default_rng(4)
    model, u = _tangent_model(rng)
    contact = model.add_contact(FiberContact(contact_law()))
    state = sf.State(0.0, u, np.zeros(model.n_dofs))
    assert sf.check_tangent(model, state, parts=[contact.name]) < 1e-6
    assert sf.check_tangent(model, state) < 1e-6


# --------------------------------------------------------------------------- safeguard
def _crossing(load):
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, radius=0.05, law=LAW, name="upper")
    b = sf.Fiber.straight((0.5, -0.5, -0.11), (0.5, 0.5, -0.11), n_elements=6, radius=0.05, law=LAW, name="lower")
    model = sf.Model([a, b])
    for f in (a, b):
        model.fix(f, "start")
        model.fix(f, "end")
    model.add_line_load((0.0, 0.0, load), fibers=[a])
    return model, a, FiberContact(contact_law(kappa=100.0, gamma=2.0))


def test_safeguard_keeps_newton_out_of_the_inadmissible_zone():
    model, upper, contact = _crossing(-0.8)
    model.add_contact(contact)
    zero = np.zeros(model.n_dofs)
    ev = model.evaluate(zero, zero, zero, 0.0, c_v=0.0, c_a=0.0)
    du = ConstrainedSolver(model.discretization.assembler, model.constrained_dofs).solve(
        ev.element_matrices, -ev.residual, ev.extra)
    # plain Newton: the first step (no contact yet) lands deep in the inadmissible zone
    with pytest.raises(FloatingPointError, match="1 \\+ γg"):
        contact.evaluate(model, du, 0.0)
    pr_full = contact.pairs(model, du)
    assert np.min(pr_full.admissibility) <= 0
    delta = contact.max_step(model, zero, du, 0.0, delta_bar=0.25)
    assert 0 < delta < 1
    for fraction in np.linspace(0, 1, 21):  # along the whole safeguarded step
        adm = contact.evaluate(model, fraction * delta * du, 0.0).admissibility
        assert adm.size == 0 or np.all(adm > 0.25)  # δ̄ · min(1 + γg₀, 1) with g₀ ≥ 0
    # and the safeguarded static solve converges to an admissible state in contact
    result = sf.solve_static(model)
    final = contact.evaluate(model, result.state.u, 0.0)
    assert final.n_active > 0 and np.all(final.admissibility > 0)
    d = model.discretization
    z_upper, z_lower = (d.evaluate(d.reference_dofs + result.state.u, k, 0.5)[2, 0] for k in (0, 1))
    assert z_upper - z_lower > 0.05  # still on top: (1 − 1/γ)(r_x + r_y) = 0.05


@pytest.mark.parametrize("gap", ["closest_point", "smallest"])
def test_safeguard_bound_holds_along_random_steps(gap):
    """For random states and steps: every contact point keeps 1 + γg > δ̄ min(1 + γg₀, 1) on [0, δ]."""
    rng = np.random.default_rng(9)
    for trial in range(8):
        model = sf.Model(random_fibers(rng, n_fibers=4, ne=4))
        contact = FiberContact(contact_law(gamma=0.8), gap=gap)
        u = 0.005 * rng.standard_normal(model.n_dofs)
        before = contact.pairs(model, u)
        du = 0.05 * rng.standard_normal(model.n_dofs)
        delta = contact.max_step(model, u, du, 0.0, delta_bar=0.3)
        assert 0 < delta <= 1
        start = {(int(p), int(f)): a for p, f, a in zip(before.point, before.fiber_y, before.admissibility)}
        for fraction in np.linspace(0, 1, 11)[1:]:
            pr = contact.pairs(model, u + fraction * delta * du)
            for p, f, a in zip(pr.point, pr.fiber_y, pr.admissibility):
                assert a > 0.3 * min(start.get((int(p), int(f)), 1.0), 1.0) - 1e-12


def _eq71_along_short_step(before, after, delta_bar, gamma, M):
    """Eq. 71 along a short step from its ends, by hand: distances above M at both ends, and the margin with
    the lowest distance √(min(d₀, d₁)² − M²) above the target (see fiber_safeguard.end_state_kept)."""
    d0 = {(int(p), int(f)): d for p, f, d in zip(before.point, before.fiber_y, before.distance)}
    e0 = {(int(p), int(f)): a for p, f, a in zip(before.point, before.fiber_y, before.admissibility)}
    if not all(d > M for d in before.distance) or not all(d > M for d in after.distance):
        return False
    for p, f, d1, r in zip(after.point, after.fiber_y, after.distance, after.radius_x + after.radius_y):
        d = min(d0.get((int(p), int(f)), np.inf), d1)
        if not 1 + gamma * (np.sqrt(d * d - M * M) / r - 1) > delta_bar * min(e0.get((int(p), int(f)), 1.0), 1.0):
            return False
    return True


def _pressed_crossing():
    """The crossing fibers with the upper one pressed onto the lower (1 + γg ≈ 0.11 at the crossing), and a
    short step 9.9 % of a radius further down whose end breaks eq. 71 (δ̄ = 0.25): model, contact, setup,
    u, the geometry at u, the step."""
    model, upper, contact = _crossing(0.0)
    s = fiber_setup(model.discretization, contact.quadrature_points, contact.fibers, contact.name)
    u = np.zeros(model.n_dofs)
    rows = fiber_rows(model, 0)
    u[rows[2::6]] = -0.055
    st = fiber_state(s, model, u, "contact")
    du = np.zeros(model.n_dofs)
    du[rows[2::6]] = -0.099 * st.rx.min()
    return model, contact, s, u, st, du


def test_short_steps_are_checked_at_their_ends():
    """Short steps (no point moves by more than M = SHORT_STEP × the smallest contact radius) are decided from
    the exact distances at their two ends: δ = 1 exactly where eq. 71 holds with the lowest distance the step
    allows, the estimate of eqs. 69–73 otherwise; and eq. 71 then holds along the whole step."""
    from skfiber.contact import fiber_safeguard as sg
    rng = np.random.default_rng(11)
    taken = 0
    for trial in range(12):
        model = sf.Model(random_fibers(rng, n_fibers=4, ne=4))
        contact = FiberContact(contact_law(gamma=0.8))
        u = 0.005 * rng.standard_normal(model.n_dofs)
        before = contact.pairs(model, u)
        s = fiber_setup(model.discretization, contact.quadrature_points, contact.fibers, contact.name)
        st = fiber_state(s, model, u, "contact")
        du = rng.standard_normal(model.n_dofs)
        du *= rng.uniform(0.2, 1.0) * sg.SHORT_STEP * st.rx.min() / sg.step_motion(s, du)  # a short step
        M = sg.step_motion(s, du)
        assert sg.short_step(s, st, M)
        after = contact.pairs(model, u + du)
        kept = _eq71_along_short_step(before, after, 0.3, 0.8, M)
        assert sg.end_state_kept(s, before, after, 0.3, gamma=0.8, motion=M) == kept
        delta = contact.max_step(model, u, du, 0.0, delta_bar=0.3)
        assert (delta == 1.0) if kept else (0 < delta <= 1)
        taken += kept
        start = {(int(p), int(f)): a for p, f, a in zip(before.point, before.fiber_y, before.admissibility)}
        for fraction in np.linspace(0, 1, 11)[1:]:
            pr = contact.pairs(model, u + fraction * delta * du)
            for p, f, a in zip(pr.point, pr.fiber_y, pr.admissibility):
                assert a > 0.3 * min(start.get((int(p), int(f)), 1.0), 1.0) - 1e-9
    assert taken >= 6  # most short steps are taken whole
    # a short step that ends below the target is refused by the end check, and the step is cut
    model, contact, s, u, st, du = _pressed_crossing()
    before = contact.pairs(model, u)
    assert 0.05 < before.admissibility.min() < 0.2
    M = sg.step_motion(s, du)
    assert sg.short_step(s, st, M)
    after = contact.pairs(model, u + du)
    assert after.admissibility.min() < 0.25 * before.admissibility.min()
    assert not sg.end_state_kept(s, before, after, 0.25, gamma=2.0, motion=M)
    refused = contact.max_step(model, u, du, 0.0, delta_bar=0.25)
    assert 0 < refused < 1


def test_a_short_step_that_ends_below_the_bound_is_cut_where_its_part_passes_the_end_check():
    """When eq. 71 fails at the end of a short step, the safeguard checks parts of the step from their two
    ends (short_fractions) and takes the first that passes or the estimate of eqs. 69–73, whichever is
    larger; eq. 71 holds along it (sampled here).  (Where the fibers slide on each other the estimate
    allowed a fraction of a per cent of such steps, and Newton stalled: fixed-step BDF2 on the upper limb
    at level 2, tests/test_upper_limb.py.)"""
    from skfiber.contact import fiber_safeguard as sg
    model, contact, s, u, st, du = _pressed_crossing()
    before, after = contact.pairs(model, u), contact.pairs(model, u + du)
    assert not sg.end_state_kept(s, before, after, 0.25, gamma=2.0, motion=sg.step_motion(s, du))
    delta = contact.max_step(model, u, du, 0.0, delta_bar=0.25)
    passing = [f for f in sg.short_fractions(before, after, 0.25)
               if sg.end_state_kept(s, before, contact.pairs(model, u + f * du), 0.25, gamma=2.0,
                                    motion=sg.step_motion(s, f * du))]
    estimate = sg.step_bound(model, s, st, u, du, 0.25, gamma=2.0, name=contact.name)
    assert passing and delta == max(passing[0], estimate) and 0.5 < delta < 1
    start = {(int(p), int(f)): a for p, f, a in zip(before.point, before.fiber_y, before.admissibility)}
    for fraction in np.linspace(0, 1, 41)[1:]:  # eq. 71 along the part, pair by pair
        pr = contact.pairs(model, u + fraction * delta * du)
        for p, f, a in zip(pr.point, pr.fiber_y, pr.admissibility):
            assert a > 0.25 * min(start.get((int(p), int(f)), 1.0), 1.0)
    # beyond the part the margin falls below the bound: the check did not pass a step that breaks eq. 71
    assert contact.pairs(model, u + du).admissibility.min() < 0.25 * before.admissibility.min()


def test_the_parts_of_a_short_step_are_checked_against_the_start_of_the_step(monkeypatch):
    """Each part is checked, against eq. 71's bound of the step's start: a part that ends below it (0.99 of
    the step of the test above) is refused and the next one (0.5) taken; with no part that passes, the
    estimate decides, and the end state's search is kept for Newton's next evaluation; with the smallest
    gap and γ ≤ 1 (where the end check cannot decide) no part is tried.  (The estimate is replaced here by
    a small δ, so that the part shows.)"""
    import skfiber.contact.fibers as fibers_module
    from skfiber.contact import fiber_safeguard as sg
    model, contact, s, u, st, du = _pressed_crossing()
    before = contact.pairs(model, u)
    assert contact.pairs(model, u + 0.99 * du).admissibility.min() < 0.25 * before.admissibility.min()
    monkeypatch.setattr(fibers_module, "step_bound", lambda *a, **k: 1e-3)
    monkeypatch.setattr(fibers_module, "short_fractions", lambda *a: (0.99, 0.5))
    assert contact.max_step(model, u, du, 0.0, delta_bar=0.25) == 0.5
    monkeypatch.setattr(fibers_module, "short_fractions", lambda *a: (0.99,))
    assert contact.max_step(model, u, du, 0.0, delta_bar=0.25) == 1e-3
    monkeypatch.setattr(fibers_module, "step_bound", lambda *a, **k: 1.0)  # the estimate allows the whole step:
    assert contact.max_step(model, u, du, 0.0, delta_bar=0.25) == 1.0
    searches = []
    real = fibers_module.find_pairs
    monkeypatch.setattr(fibers_module, "find_pairs", lambda *a, **k: searches.append(1) or real(*a, **k))
    contact.evaluate(model, u + du, 0.0)  # … Newton evaluates its end, searched already
    assert searches == []
    smallest = FiberContact(PenaltyLaw(stiffness=100.0, gamma=0.5), gap="smallest")
    assert sg.short_step(s, st, sg.step_motion(s, du)) and not sg.end_check_decides(0.5, True)

    def refuse(*a):
        raise AssertionError("parts tried with the smallest gap and γ ≤ 1")
    monkeypatch.setattr(fibers_module, "short_fractions", refuse)
    assert smallest.max_step(model, u, du, 0.0, delta_bar=0.25) == 1.0


def test_a_short_step_through_another_fiber_is_not_taken_from_its_ends():
    """With γ ≤ 1 any distance > 0 is admissible: a short step can carry a contact point through another
    fiber's centerline and end admissible on the other side.  The end check refuses it (a distance ≤ M at an
    end); what remains is a part of the step that passes the end check, or the estimate of eqs. 69–73, and
    either stops before the centerline."""
    from skfiber.contact import fiber_safeguard as sg
    for gamma in (0.5, 1.0):
        x_q = 2.5 / 6  # the middle contact point (ξ = 1/2) of the upper fiber's third element
        a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=6, radius=0.05, law=LAW, name="upper")
        b = sf.Fiber.straight((x_q, -0.5, -0.11), (x_q, 0.5, -0.11), n_elements=6, radius=0.05, law=LAW,
                              name="lower")
        model = sf.Model([a, b])
        contact = FiberContact(PenaltyLaw(stiffness=100.0, gamma=gamma))
        s = fiber_setup(model.discretization, contact.quadrature_points, contact.fibers, contact.name)
        rows = fiber_rows(model, 0)
        u = np.zeros(model.n_dofs)
        u[rows[2::6]] = -0.11 + 0.049 * 0.05  # the upper centerline 0.049 r above the lower one
        st = fiber_state(s, model, u, "contact")
        du = np.zeros(model.n_dofs)
        du[rows[2::6]] = -0.0999 * 0.05  # 0.0999 r down: through the lower centerline, 0.051 r below it
        M = sg.step_motion(s, du)
        assert sg.short_step(s, st, M)
        before, after = contact.pairs(model, u), contact.pairs(model, u + du)
        assert before.admissibility.min() > 0 and after.admissibility.min() > 0  # both ends admissible
        assert not sg.end_state_kept(s, before, after, 0.25, gamma=gamma, motion=M)
        delta = contact.max_step(model, u, du, 0.0, delta_bar=0.25)
        estimate = sg.step_bound(model, s, st, u, du, 0.25, gamma=gamma, name=contact.name)
        # a part of the step checked from its ends, or the estimate, whichever is larger: both stop short of the
        # centerline (the estimate's bound of the distance, d − δ m, must stay > 0: with γ < 1, e(δ) ≥ 1 − γ > 0
        # would not stop it)
        assert delta >= estimate and (delta == estimate or delta in sg.short_fractions(before, after, 0.25))
        assert 0 < delta * 0.0999 < 0.049 and 0 < estimate * 0.0999 < 0.049


# --------------------------------------------------------------------------- bundle
BUNDLE_KAPPA = 1000.0  # N/m, as stiff as the paper's fiber–fiber contact (§5.3, Table 3)


def _squeezed_bundle(seed, n_elements=4, kappa=BUNDLE_KAPPA):
    """7 parallel fibers (hexagonal: one centre, six around) squeezed by inward line loads."""
    rng = np.random.default_rng(seed)
    r = 0.05
    spacing = 2 * r * 1.05  # 5 % clearance
    centres = [(0.0, 0.0)] + [(spacing * np.cos(a), spacing * np.sin(a)) for a in np.arange(6) * np.pi / 3]
    fibers = []
    for k, (y, z) in enumerate(centres):
        p = rng.uniform(-0.0015, 0.0015, (2, 3)) * [0, 1, 1]  # no initial overlap
        fibers.append(sf.Fiber.straight((0, y, z) + p[0], (1, y, z) + p[1], n_elements=n_elements, radius=r,
                                        law=LAW, name=f"fiber{k}"))
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start")
        model.fix(f, "end")
    for f, (y, z) in zip(fibers[1:], centres[1:]):
        inward = -np.array([0.0, y, z]) / np.hypot(y, z)
        model.add_line_load(0.6 * (1 + 0.2 * rng.uniform(-1, 1)) * inward, fibers=[f])  # N/m
    contact = model.add_contact(FiberContact(PenaltyLaw(stiffness=kappa, gamma=2.0)))
    return model, contact


def _solve_with_penalty_continuation(model, contact, factors=(0.01, 0.1)):
    """Static equilibrium at the contact's κ, reached through softer contacts first.

    The contact here is ~10³ times stiffer than the cables across their axis
    (κ/(r_x + r_y) = 10⁴ N/m² against T π²/L² ≈ 8 N/m², T = π r0² σ0): from
    the straight fibers Newton's steps do not see a contact before it is
    active, every step that closes a gap overshoots into forces far above the
    load (and their geometric stiffness −F/d makes the tangent indefinite),
    and the line search creeps (≈ 70 iterations and load-step bisections per
    solve, 6 s).  With κ·0.01 the contacts close in a few iterations, and
    raising κ tenfold from an equilibrium keeps the active set: ≈ 6 Newton
    iterations per stage, and the same equilibrium as the direct solve.
    """
    law = contact.law
    state = None
    try:
        for f in (*factors, 1.0):
            contact.law = PenaltyLaw(stiffness=law.stiffness * f, gamma=law.gamma)
            if state is None:
                state = sf.solve_static(model).state
            else:  # one Newton solve from the last equilibrium (nothing to bisect)
                state = sf.solve_static(model, state=state, max_bisections=0).state
    finally:
        contact.law = law
    return state


def test_squeezed_bundle_converges_and_stays_admissible_over_100_seeds():
    worst = np.inf
    for seed in range(100):
        model, contact = _squeezed_bundle(seed)
        u = _solve_with_penalty_continuation(model, contact).u
        assert np.all(np.isfinite(u)), seed
        ev = contact.evaluate(model, u, 0.0)
        assert np.all(np.isfinite(ev.residual)) and ev.n_active > 0, seed
        assert np.all(ev.admissibility > 0), seed
        worst = min(worst, float(ev.admissibility.min()))
        # the outer fibers moved inwards (squeezed), the centre fiber hardly moved
        d = model.discretization
        centre = d.evaluate(d.reference_dofs + u, 0, 0.5)[1:, 0]
        assert np.linalg.norm(centre) < 0.02, seed
        # the fibers press into each other: the contact carries most of every outer fiber's load
        # (≈ 0.75–0.8; the cables carry the rest near the fixed ends)
        load = model.external_force(0.0)
        for k in range(1, 7):
            rows = fiber_rows(model, k)
            q = load[rows].reshape(-1, 6)[:, :3].sum(axis=0)
            carried = ev.residual[rows].reshape(-1, 6)[:, :3].sum(axis=0) @ q / (q @ q)
            assert carried > 0.5, (seed, k, carried)
    # κ = 1000 N/m: penetrations are small (g ≈ −F/κ ≈ −6·10⁻⁴), but real
    assert worst < 0.999


def test_penalty_continuation_reaches_the_equilibrium_of_the_direct_solve():
    """The softer stages only lead the way: the end state is the κ = 1000 equilibrium itself."""
    model, contact = _squeezed_bundle(4)
    direct = sf.solve_static(model).state.u  # slow (creeps, see above) but converges
    continued = _solve_with_penalty_continuation(model, contact).u
    assert contact.law.stiffness == BUNDLE_KAPPA
    assert np.abs(direct - continued).max() < 1e-8 * np.abs(direct).max()
    zero = np.zeros(model.n_dofs)
    ev = model.evaluate(continued, zero, zero, 0.0, c_v=0.0, c_a=0.0)
    free = np.ones(model.n_dofs, dtype=bool)
    free[model.constrained_dofs] = False
    assert np.linalg.norm(ev.residual[free]) <= 1e-9 * ev.reference_force + 1e-12 + ev.roundoff


def test_check_pairs_names_the_deepest_inadmissible_pair():
    """Two crossing fibers pressed together beyond the law's limit: check_pairs raises naming both fibers and
    the pair with the smallest 1 + γg (numpy's argmin over the inadmissible pairs); a NaN 1 + γg counts as the
    smallest; an admissible set passes."""
    import dataclasses

    from skfiber.contact.fiber_pairs import check_pairs, find_pairs
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, name="a")
    b = sf.Fiber.straight((0.5, -0.5, 0.02), (0.5, 0.5, 0.02), n_elements=4, radius=0.05, name="b")
    model = sf.Model([a, b])
    s = fiber_setup(model.discretization, 5, None, "contact")
    pr = find_pairs(model, s, fiber_state(s, model, np.zeros(model.n_dofs), "contact"), gamma=2.0)
    bad = np.flatnonzero(~(pr.admissibility > 0))
    assert bad.size > 1
    worst = bad[np.argmin(pr.admissibility[bad])]
    with pytest.raises(FloatingPointError, match="penetrate too far") as err:
        check_pairs("contact", 2.0, s, pr, 0.5)
    first, second = (f"fiber {pr.fiber_x[worst]} ('{'ab'[pr.fiber_x[worst]]}')",
                     f"fiber {pr.fiber_y[worst]} ('{'ab'[pr.fiber_y[worst]]}')")
    assert f"{first} at θ =" in str(err.value) and f"and {second} at θ =" in str(err.value)
    assert f"1 + γg = {pr.admissibility[worst]:.3g}" in str(err.value)
    admissibility = pr.admissibility.copy()
    admissibility[bad[-1]] = np.nan
    with pytest.raises(FloatingPointError, match="1 \\+ γg = nan"):
        check_pairs("contact", 2.0, s, dataclasses.replace(pr, admissibility=admissibility), 0.5)
    ok = find_pairs(model, s, fiber_state(s, model, np.zeros(model.n_dofs), "contact"), gamma=0.5)
    assert (ok.gap < 0).any() and (ok.admissibility > 0).all()
    check_pairs("contact", 0.5, s, ok, 0.5)


def test_point_forces_are_the_force_density_of_the_contact_residual():
    """FiberContact.point_forces: the line force −F n at every contact point.  Weighted by the quadrature
    (w |x′| per unit ξ) and summed, it is the total contact force on each fiber, which the residual carries on
    the fiber's position DOFs (Hermite value functions sum to 1): Σ force w |x′| = −Σ G_c over those DOFs."""
    from skfiber.contact.fiber_geometry import fiber_state

    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
    b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.6, 0.5, 0.08), n_elements=5, radius=0.05)
    model = sf.Model([a, b])
    contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))
    u = np.zeros(model.n_dofs)
    fiber, theta, force = contact.point_forces(model, u)
    s = contact._setup(model)
    weight = np.tile(s.w, s.ne) * fiber_state(s, model, u, contact.name).xp_norm
    residual = contact.evaluate(model, u, 0.0, tangent=False).residual
    d = model.discretization
    for k in range(2):
        on_dofs = np.concatenate([d.fiber_dofs[k].position_dofs(i) for i in range(d.fiber_dofs[k].n_nodes)])
        total = (weight[fiber == k, None] * force[fiber == k]).sum(axis=0)
        assert np.linalg.norm(total) > 0
        assert np.allclose(total, -residual[on_dofs].reshape(-1, 3).sum(axis=0), rtol=1e-12, atol=1e-12)
    assert np.all((theta >= 0) & (theta <= 1))
    # the fibers push each other apart: a (below) down, b (above) up (the two half passes are not exactly
    # equal and opposite on a coarse mesh, eq. 65 per fiber)
    assert force[fiber == 0, 2].sum() < 0 < force[fiber == 1, 2].sum()


def uniformly_stretched(model, stretch, n_elements, length=1.0):
    """The displacement that stretches straight fibers along x by ``stretch`` about θ = 0."""
    u = np.zeros(model.n_dofs)
    per_node = u.reshape(-1, 6)
    per_node[:, 0] = (stretch - 1) * length * np.tile(np.linspace(0.0, 1.0, n_elements + 1), len(model.fibers))
    per_node[:, 3] = (stretch - 1) * length
    return u


@pytest.mark.parametrize("gap", ["closest_point", "smallest"])
@pytest.mark.parametrize("stretch", [1.0, 1.2, 0.9])
def test_stretched_parallel_fibers_press_with_the_law_over_their_current_length(stretch, gap):
    """Two parallel fibers stretched by λ: the current radius r0/√λ enters the gap, and the force per current
    length F(g) acts over the current length λ L (eq. 39, an integral over the deformed centerline), in
    closed form; with either gap (with the radius constant along the partner, the smallest gap's point is the
    closest point)."""
    a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05, law=LAW)
    b = sf.Fiber.straight((0, 0.09, 0), (1, 0.09, 0), n_elements=4, radius=0.05, law=LAW)
    model = sf.Model([a, b])
    ev = FiberContact(contact_law(), gap=gap).evaluate(model, uniformly_stretched(model, stretch, 4), 0.0)
    g = 0.09 / (2 * 0.05 / np.sqrt(stretch)) - 1
    force = -1000.0 * g / (1 + 2.0 * g) * stretch * 1.0  # F(g) = −κ g/(1 + γ g) over λ L
    Ry = ev.residual[1::6]
    np.testing.assert_allclose([Ry[:5].sum(), Ry[5:].sum()], [force, -force], rtol=1e-12)
    np.testing.assert_allclose(ev.admissibility, 1 + 2.0 * g, rtol=1e-12)
