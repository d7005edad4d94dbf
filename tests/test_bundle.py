"""A bundle of fibers (skfiber.bundle) and their recruitment by the size principle (skfiber.recruitment)."""
import itertools
import math

import numpy as np
import pytest

import skfiber as sf
from skfiber.bundle import bundle, bundle_curves, bundle_points, packing, reference_clearance, row_order, smallest_gap
from skfiber.contact import FiberContact, PenaltyLaw
from skfiber.recruitment import recruited_activation, recruitment, size_principle_thresholds


def _pairwise(points):
    return np.array([np.linalg.norm(p - q) for p, q in itertools.combinations(points, 2)])


@pytest.mark.parametrize("layout", ["hexagonal", "rings"])
@pytest.mark.parametrize("n", [1, 2, 7, 9, 19, 36, 144])
def test_packing_has_unit_spacing_and_starts_at_the_centre(layout, n):
    pts = packing(n, layout=layout)
    assert pts.shape == (n, 2) and np.array_equal(pts[0], [0.0, 0.0])
    if n > 1:
        assert _pairwise(pts).min() == pytest.approx(1.0, abs=1e-12)
    radii = np.hypot(pts[:, 0], pts[:, 1])
    assert np.all(np.diff(radii) > -1e-12) if layout == "hexagonal" else np.all(np.diff(np.ceil(radii - 1e-9)) >= 0)


@pytest.mark.parametrize("n", [37, 144, 300])
def test_hexagonal_packing_takes_the_lattice_points_nearest_to_the_centre(n):
    """The n points are the n nearest to the centre of a much larger lattice (ties by angle)."""
    span = range(-40, 41)
    lattice = np.array([(i + 0.5 * j, 0.5 * math.sqrt(3.0) * j) for i in span for j in span])
    dist = np.round(np.hypot(lattice[:, 0], lattice[:, 1]), 9)
    angle = np.round(np.mod(np.arctan2(lattice[:, 1], lattice[:, 0]), 2 * math.pi), 9)
    want = lattice[np.lexsort((angle, dist))[:n]]
    assert np.allclose(packing(n), want, atol=1e-12)


def test_hexagonal_packing_fills_rings():
    """7 and 19 points are the centre with one and two full rings of a hexagonal lattice: each inner point
    has 6 neighbours at distance 1."""
    for n, inner in ((7, 1), (19, 7)):
        pts = packing(n)
        for p in pts[:inner]:
            assert np.sum(np.isclose(np.linalg.norm(pts - p, axis=1), 1.0)) == 6


def test_parallel_bundle_starts_with_the_clearance_asked_for():
    """Equal patches and a constant radius: neighbouring fibers are parallel at S = 2 r0 (1 + c), so the
    smallest reference gap d/(r_x + r_y) − 1 is c exactly (closed form), and the contact search finds it (a
    clearance within its reach, which ends about 5 % beyond touching; farther, no pair is found: +inf)."""
    r0, c = 0.012, 0.03
    fibers = bundle((0, 0, 0), (0.05, 0.02, -0.3), 9, radius=r0, clearance=c, n_elements=4, law=sf.paper_law())
    model = sf.Model(fibers)
    contact = model.add_contact(FiberContact(PenaltyLaw(stiffness=500.0, gamma=3.0)))
    assert reference_clearance(model, contact) == pytest.approx(c, rel=1e-9)
    far = sf.Model(bundle((0, 0, 0), (0, 0, -0.3), 9, radius=r0, clearance=0.15, n_elements=4, law=sf.paper_law()))
    assert reference_clearance(far, far.add_contact(FiberContact(PenaltyLaw(stiffness=500.0, gamma=3.0)))) == math.inf


def _brute_force_gap(fibers, radius, samples=401):
    """The smallest d/(r0(θa) + r0(θb)) − 1 over all pairs of fibers and samples×samples points of their
    centerlines (evaluated from the fibers' own curves, independent of the builder's arithmetic)."""
    theta = np.linspace(0, 1, samples)
    lines = [f.curve(theta).T for f in fibers]
    r = radius(theta) if callable(radius) else np.full(samples, radius)
    return min(float(np.min(np.linalg.norm(lines[a][:, None, :] - lines[b][None, :, :], axis=2)
                            / (r[:, None] + r[None, :]))) - 1.0
               for a, b in itertools.combinations(range(len(fibers)), 2))


def _eq77_like(theta):
    """r0(θ) of eq. 77's shape: thin ends, a thick middle (m)."""
    return 0.004 + 0.016 * np.sin(np.pi * np.asarray(theta)) ** 2


@pytest.mark.parametrize("scales, clearance", [((0.5, 0.35), 0.1), ((0.3, 0.1), 0.02), ((1.0, 0.2), 0.1),
                                               ((1.0, 1.0), 0.05)])
def test_converging_bundle_starts_with_the_clearance_asked_for(scales, clearance):
    """Patches of different sizes and r0(θ) of eq. 77's shape (thin ends, thick middle): the fibers converge,
    so they come closer than at equal θ; the builder measures that and widens the spacing.  The smallest gap
    over all pairs, by brute force over 401 × 401 centerline points (independent of the builder's 201
    samples), is the clearance asked for to 1 %; the contact search agrees where it reaches."""
    radius = _eq77_like
    fibers = bundle((0, 0, 0), (0.02, 0.01, -0.3), 19, radius=radius, clearance=clearance, origin_scale=scales[0],
                    insertion_scale=scales[1], n_elements=8, law=sf.paper_law(), name="m")
    assert _brute_force_gap(fibers, radius) == pytest.approx(clearance, rel=0.01)
    model = sf.Model(fibers)
    found = reference_clearance(model, model.add_contact(FiberContact(PenaltyLaw(stiffness=500.0, gamma=3.0))))
    assert found >= clearance * (1 - 0.01)
    if clearance < 0.04:  # within the search's reach (about 5 % beyond touching)
        assert found < clearance * 1.5


def test_the_spacing_rule_at_equal_theta_alone_would_let_converging_fibers_overlap():
    """Why the builder measures the gap: 36 fibers with patches of 1 and 0.2, spaced by the equal-θ rule
    alone, overlap (the outer fibers pass each other near the narrow patch: gap −0.05, smallest_gap sees it);
    the builder's bundle keeps the clearance (brute force)."""
    unit = packing(36)
    theta = np.linspace(0, 1, 201)
    r0 = np.full(201, 0.01)
    S = float(np.max(2 * r0 * 1.1 / (1.0 - 0.8 * theta)))
    plane = np.column_stack([unit, np.zeros(36)]) * S
    starts, ends = plane, np.array([0, 0, -0.3]) + 0.2 * plane
    pairs = np.array([(i, j) for i in range(36) for j in range(i + 1, 36)])
    assert smallest_gap(starts, ends, r0, pairs) < -0.04
    fibers = bundle((0, 0, 0), (0, 0, -0.3), 36, radius=0.01, clearance=0.1, origin_scale=1.0,
                    insertion_scale=0.2, n_elements=2, law=sf.paper_law())
    assert _brute_force_gap(fibers, 0.01, samples=201) == pytest.approx(0.1, rel=0.01)


def test_up_sets_the_first_axis_of_the_cross_section():
    starts, ends = bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, up=(1.0, 1.0, 0.5))
    first = starts[1] - starts[0]
    assert np.allclose(first / np.linalg.norm(first), np.array([1.0, 1.0, 0.0]) / math.sqrt(2))
    assert np.allclose((starts - starts[0]) @ np.array([0, 0, 1.0]), 0.0)  # in the plane normal to the line


def test_bundle_checks_its_input():
    with pytest.raises(ValueError, match="number of fibers must be an integer ≥ 1, got 0"):
        packing(0)
    with pytest.raises(ValueError, match="layout must be one of"):
        packing(3, layout="square")
    with pytest.raises(ValueError, match="same point"):
        bundle_points((0, 0, 0), (0, 0, 0), 3, radius=0.01)
    with pytest.raises(ValueError, match="origin_scale must be a finite number > 0, got 0"):
        bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, origin_scale=0)
    for up in ((0, 0, 2), (1, 0), (np.inf, 0, 0), "x"):
        with pytest.raises(ValueError, match="up must be a finite vector"):
            bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, up=up)
    for radius in (lambda th: 0.01 - 0.02 * th, "thick", None, float("nan"), -0.01):
        with pytest.raises(ValueError, match="radius must be"):
            bundle_points((0, 0, 0), (0, 0, 1), 3, radius=radius)
    with pytest.raises(ValueError, match="clearance must be a finite number > 0, got 0"):
        bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, clearance=0)
    with pytest.raises(ValueError, match="origin and insertion must be finite points"):
        bundle_points((0, 0, "a"), (0, 0, 1), 3, radius=0.01)
    with pytest.raises(ValueError, match="name must be a string"):
        bundle((0, 0, 0), (0, 0, 1), 3, radius=0.01, n_elements=2, name=3)
    assert [f.activation for f in bundle((0, 0, 0), (0, 0, 1), 2, radius=0.01, n_elements=2,
                                         activation=np.float64(0.25))] == [0.25, 0.25]
    for values in ([0.1, 0.2], [0.1] * 4):  # too few, too many (not cut short)
        with pytest.raises(ValueError, match=f"one per fiber, got {len(values)}"):
            bundle((0, 0, 0), (0, 0, 1), 3, radius=0.01, n_elements=2, activation=values)


def test_recruitment_follows_the_size_principle():
    """Smaller units have lower thresholds; at any drive a unit is active only if every smaller one is, and
    at least as much; all are off at E = 0 and fully on at E = 1; the thresholds span [0, last]."""
    rng = np.random.default_rng(3)
    sizes = rng.uniform(0.5, 4.0, 12)
    T = size_principle_thresholds(sizes, last=0.7)
    order = np.argsort(sizes)
    assert T[order[0]] == 0.0 and T[order[-1]] == pytest.approx(0.7)
    assert np.all(np.diff(T[order]) > 0)
    units = recruitment(lambda t: t, sizes, last=0.7)
    for drive in np.linspace(0, 1, 41):
        alpha = np.array([u(drive) for u in units])[order]  # smallest first
        assert np.all(np.diff(alpha) <= 1e-15) and np.all((alpha >= 0) & (alpha <= 1))
        assert np.array_equal(alpha > 0, drive > T[order])
    assert [u(0.0) for u in units] == [0.0] * 12 and [u(1.0) for u in units] == [1.0] * 12
    equal = size_principle_thresholds([2.0] * 5, last=0.8)
    assert equal.tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])  # equal sizes: equal steps, by index
    assert recruited_activation(0.5, 0.2) == pytest.approx(0.3 / 0.8)
    # the rule itself: T_k = last · (sizes smaller than s_k) / (all sizes but the largest)
    assert size_principle_thresholds([1.0, 3.0, 2.0], last=0.6) == pytest.approx([0.0, 0.6, 0.2])
    sorted_sizes = sizes[order]
    want = 0.7 * np.concatenate([[0.0], np.cumsum(sorted_sizes)[:-1]]) / np.sum(sorted_sizes[:-1])
    assert T[order] == pytest.approx(want, rel=1e-12)
    assert size_principle_thresholds([1e308, 1e308, 1e308], last=0.5) == pytest.approx([0.0, 0.25, 0.5])
    # the default range [0, 0.8] (the module's notes), for the thresholds and the activations alike
    assert size_principle_thresholds([1.0, 3.0, 2.0]) == pytest.approx([0.0, 0.8, 0.8 / 3])
    largest = recruitment(lambda t: t, [1.0, 3.0, 2.0])[1]
    assert largest(0.8) == 0.0 and largest(0.8 + 1e-9) > 0.0


def test_recruitment_checks_its_input():
    for sizes in ([1.0, -2.0], [0.0, 1.0]):
        with pytest.raises(ValueError, match="sizes must be"):
            size_principle_thresholds(sizes)
    assert size_principle_thresholds([2.0], last=0.6).tolist() == [0.0]  # one unit: recruited at once
    with pytest.raises(ValueError, match="last"):
        size_principle_thresholds([1.0], last=1.0)
    for bad in (1.5, "0.5", True, -0.1, float("nan")):
        with pytest.raises(ValueError, match="drive must be a number in \\[0, 1\\] or E\\(t\\)"):
            recruitment(bad, [1.0, 2.0])
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match=rf"drive must be a number in \[0, 1\], got {bad}"):
            recruited_activation(bad, 0.2)
    over = recruitment(lambda t: 2.0 * t, [1.0, 2.0])
    assert over[0](0.5) == 1.0
    with pytest.raises(ValueError, match="E = 1.2 at t = 0.6 s"):
        over[0](0.6)
    for T in (1.0, -0.1):
        with pytest.raises(ValueError, match="threshold must lie in \\[0, 1\\)"):
            recruited_activation(0.5, T)
    assert size_principle_thresholds([1.0, 2.0], last=np.int64(0)).tolist() == [0.0, 0.0]


def test_a_recruited_bundle_hangs_in_contact():
    """9 fibers between two fixed patches, recruited by the size principle (the centre fiber smallest),
    sag under gravity into each other for 0.05 s: the run ends admissible, with fiber–fiber contact
    active (a second in CI)."""
    law = sf.paper_law(sigma0=30.0)
    sizes = 1.0 + 0.2 * np.arange(9)
    fibers = bundle((0, 0, 0), (1.0, 0, 0), 9, radius=0.05, clearance=0.02, n_elements=4, law=law,
                    density=900.0, activation=recruitment(0.3, sizes, last=0.8), up=(0, 0, 1))
    model = sf.Model(fibers)
    for f in fibers:
        model.fix(f, "start")
        model.fix(f, "end")
    model.add_gravity()
    contact = model.add_contact(FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0)))
    result = sf.simulate(model, t_end=0.05, dt=0.01, progress=False)
    assert not result.interrupted and math.isclose(result.final_state.t, 0.05)
    final = contact.evaluate(model, result.final_state.u, result.final_state.t)
    assert final.n_active > 0 and np.all(final.admissibility > 0)
    alphas = [f.activation_at(0.0) for f in fibers]
    assert alphas[0] > 0 and alphas[-1] == 0.0  # drive 0.3 recruits the small units only


@pytest.mark.parametrize("n", [7, 18])
def test_a_row_insertion_ends_the_fibers_on_a_line_in_order_and_apart(n):
    """insertion_layout="row": the ends lie on the line through the insertion along ``up``, ``insertion_scale``
    spacings apart, in the order of row_order; every pair (brute force, not only the builder's near pairs)
    keeps the clearance to 1 %."""
    radius = _eq77_like
    fibers = bundle((0, 0, 0), (0.01, 0, -0.3), n, radius=radius, clearance=0.1, origin_scale=0.5,
                    insertion_scale=0.3, up=(0, 1, 0), insertion_layout="row", n_elements=4, law=sf.paper_law())
    ends = np.array([f.curve(np.array([1.0]))[:, 0] for f in fibers])
    assert np.allclose(ends[:, [0, 2]], [0.01, -0.3], atol=1e-12)
    order = np.argsort(ends[:, 1])
    assert np.array_equal(np.argsort(order), row_order(packing(n)))
    pitch = np.diff(ends[order, 1])
    assert np.allclose(pitch, pitch[0], rtol=1e-9)
    assert ends[:, 1].mean() == pytest.approx(0.0, abs=1e-12)  # the row centred on the insertion
    assert _brute_force_gap(fibers, radius) == pytest.approx(0.1, rel=0.01)


def test_row_order_sorts_by_a_projection_off_the_first_axis():
    pts = packing(19)
    t = pts @ np.array([math.cos(0.1), math.sin(0.1)])
    rank = row_order(pts)
    assert sorted(rank.tolist()) == list(range(19))
    assert np.all(np.diff(t[np.argsort(rank)]) > 0)


def test_a_bellied_bundle_passes_through_its_belly_and_keeps_the_clearance():
    """belly_scale: each fiber is the parabola through its origin point, its belly point (θ = 1/2) and its end;
    its tangent is the curve's derivative (central differences); the smallest gap of all pairs (brute
    force) is the clearance."""
    radius = _eq77_like
    points = bundle_curves((0, 0, 0), (0, 0, -0.3), 7, radius=radius, clearance=0.05, origin_scale=0.3,
                           belly_scale=1.0, insertion_scale=0.2)
    fibers = bundle((0, 0, 0), (0, 0, -0.3), 7, radius=radius, clearance=0.05, origin_scale=0.3, belly_scale=1.0,
                    insertion_scale=0.2, n_elements=4, law=sf.paper_law())
    for f, p in zip(fibers, points):
        assert np.allclose(f.curve(np.array([0.0, 0.5, 1.0])).T, p, atol=1e-14)
        th, h = np.array([0.2, 0.7]), 1e-6
        fd = (f.curve(th + h) - f.curve(th - h)) / (2 * h)
        assert np.allclose(f.tangent(th), fd, atol=1e-8)
    belly = points[:, 1] - [0, 0, -0.15]
    assert np.linalg.norm(belly, axis=1).max() > 2.5 * np.linalg.norm(points[:, 0], axis=1).max()  # it swells
    assert _brute_force_gap(fibers, radius) == pytest.approx(0.05, rel=0.01)


def test_smallest_gap_of_curved_fibers_against_brute_force():
    rng = np.random.default_rng(3)
    starts = rng.normal(size=(3, 3)) * 0.05
    ends = starts + [0, 0, -0.3]
    middles = 0.5 * (starts + ends) + rng.normal(size=(3, 3)) * 0.03
    r0 = np.full(101, 0.01)
    theta = np.linspace(0, 1, 101)
    L = np.column_stack([(1 - theta) * (1 - 2 * theta), 4 * theta * (1 - theta), theta * (2 * theta - 1)])
    lines = [L @ np.stack([s, m, e]) for s, m, e in zip(starts, middles, ends)]
    want = min(np.min(np.linalg.norm(lines[a][:, None] - lines[b][None], axis=2)) / 0.02 - 1
               for a, b in [(0, 1), (0, 2), (1, 2)])
    got = smallest_gap(starts, ends, r0, np.array([(0, 1), (0, 2), (1, 2)]), middles=middles)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_smallest_gap_of_many_pairs_with_a_varying_radius_against_brute_force():
    """Pairs far apart are skipped by their boxes: the result must still be the minimum over every pair."""
    rng = np.random.default_rng(11)
    n = 12
    starts = rng.uniform(-0.1, 0.1, size=(n, 3))
    ends = starts + [0, 0, -0.3] + rng.normal(size=(n, 3)) * 0.001
    middles = 0.5 * (starts + ends) + rng.normal(size=(n, 3)) * 0.002  # thin boxes: many pairs skipped
    theta = np.linspace(0, 1, 61)
    r0 = 0.001 + 0.002 * np.sin(np.pi * theta)
    L = np.column_stack([(1 - theta) * (1 - 2 * theta), 4 * theta * (1 - theta), theta * (2 * theta - 1)])
    lines = [L @ np.stack([s, m, e]) for s, m, e in zip(starts, middles, ends)]
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n) if rng.uniform() < 0.6])
    gaps = [np.min(np.linalg.norm(lines[a][:, None] - lines[b][None], axis=2) / (r0[:, None] + r0[None, :])) - 1
            for a, b in pairs]
    got = smallest_gap(starts, ends, r0, pairs, middles=middles)
    assert got == pytest.approx(min(gaps), rel=1e-9, abs=1e-12)
    closest = pairs[int(np.argmin(gaps))]
    assert smallest_gap(starts, ends, r0, closest[None], middles=middles) == pytest.approx(min(gaps), rel=1e-9)
    assert smallest_gap(starts, ends, r0, np.zeros((0, 2), dtype=int), middles=middles) == np.inf
    # parallel straight fibers at x = 0, 35, 60 mm, r0 = 5 mm: the farther pair first (d/2r0 = 6), the closer
    # one (3.5) last, its box 3.5 apart: it must not be skipped
    starts = np.array([[0.0, 0, 0], [0.035, 0, 0], [0.06, 0, 0]])
    got = smallest_gap(starts, starts + [0, 0, -0.3], np.full(11, 0.005), np.array([(0, 2), (0, 1)]))
    assert got == pytest.approx(2.5, rel=1e-12)
    # the same at the skip's edge: the closer pair (4.5) only half a gap unit below the first (5.0)
    starts = np.array([[0.0, 0, 0], [0.055, 0, 0], [0.06, 0, 0]])
    got = smallest_gap(starts, starts + [0, 0, -0.3], np.full(11, 0.005), np.array([(0, 2), (0, 1)]))
    assert got == pytest.approx(4.5, rel=1e-12)


@pytest.mark.parametrize("pairs, match", [(np.array([[0, 3]]), "indices of the 3 fibers"),
                                          (np.array([[-1, 0]]), "indices of the 3 fibers"),
                                          (np.array([[0.0, 1.0]]), "integer"), (np.array([0, 1, 2]), r"\(m, 2\)")])
def test_smallest_gap_refuses_pairs_outside_the_fibers(pairs, match):
    starts = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]])
    with pytest.raises(ValueError, match=match):
        smallest_gap(starts, starts + [0, 0, 1], np.full(5, 0.01), pairs)
    with pytest.raises(ValueError, match="middles must be"):
        smallest_gap(starts, starts + [0, 0, 1], np.full(5, 0.01), np.array([[0, 1]]), middles=starts[:2])
    with pytest.raises(ValueError, match="r0 must be"):
        smallest_gap(starts, starts + [0, 0, 1], 0.01, np.array([[0, 1]]))


def test_bundle_refuses_a_bad_insertion_layout_and_belly_scale():
    with pytest.raises(ValueError, match="insertion_layout"):
        bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, insertion_layout="ring")
    with pytest.raises(ValueError, match="belly_scale"):
        bundle_curves((0, 0, 0), (0, 0, 1), 3, radius=0.01, belly_scale=-1.0)
    with pytest.raises(ValueError, match="belly_scale=0.01 .* pinches"):  # the parabolas' scale < 0 near θ = 1
        bundle_curves((0, 0, 0), (0, 0, 1), 3, radius=0.01, origin_scale=1.0, belly_scale=0.01, insertion_scale=0.01)
    bundle_curves((0, 0, 0), (0, 0, 1), 3, radius=0.01, origin_scale=1.0, belly_scale=0.2525, insertion_scale=0.01)


def test_bundle_refuses_scales_that_spread_it_wider_than_ten_times_its_length():
    """Patch scales far apart: the spacing keeping the narrow end admissible spreads the wide end; a bundle
    0.3 m long with its origin patch 10⁶ times narrower would be kilometres across."""
    with pytest.raises(ValueError, match=r"would be .* m across at its belly for a muscle 0.3 m long .*"
                                         r"origin_scale=1e-06"):
        bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, origin_scale=1e-6, insertion_scale=1.0)
    with pytest.raises(ValueError, match="m across at its origin"):   # 36 converging fibers: 88 m across
        bundle_points((0, 0, 0), (0, 0, -0.3), 36, radius=0.01, origin_scale=1.0, insertion_scale=0.1)
    # the limit itself: the same 2.2 m wide insertion kept on a 0.3 m muscle, refused on a 0.2 m one
    _, ends = bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.01, origin_scale=0.02, insertion_scale=1.0)
    assert 2 * np.max(np.linalg.norm(ends - ends.mean(axis=0), axis=1)) == pytest.approx(2.2)
    with pytest.raises(ValueError, match="2.2 m across at its insertion for a muscle 0.2 m long"):
        bundle_points((0, 0, 0), (0, 0, -0.2), 7, radius=0.01, origin_scale=0.02, insertion_scale=1.0)


def test_a_row_bundle_keeps_the_clearance_over_all_pairs():
    """A row insertion (12 fibers, the row half as wide as the origin patch) keeps the 10 % clearance between
    every pair of fibers."""
    n, r0 = 12, 0.005
    P = bundle_curves((0, 0, 0), (0, 0, -0.3), n, radius=r0, insertion_layout="row", insertion_scale=0.5, up=(0, 1, 0))
    i, j = np.triu_indices(n, 1)
    gap = smallest_gap(P[:, 0], P[:, 2], np.full(201, r0), np.column_stack([i, j]).astype(np.int64), middles=P[:, 1])
    assert gap >= 0.1 * (1 - 1e-9)


def test_only_the_ratio_of_the_patch_scales_matters():
    """The points depend on the ratio of the origin and insertion scales only, as documented."""
    a = bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.005, origin_scale=1.0, insertion_scale=0.5)
    b = bundle_points((0, 0, 0), (0, 0, -0.3), 7, radius=0.005, origin_scale=4.0, insertion_scale=2.0)
    np.testing.assert_allclose(b[0], a[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(b[1], a[1], rtol=0, atol=1e-6)


def test_ties_in_size_are_recruited_by_index():
    """Units of equal size are recruited in the order of their index (the closed-form thresholds of 8 units)."""
    T = size_principle_thresholds([1.0, 2.0] * 4, last=0.8)
    np.testing.assert_allclose(T, [0, 0.32, 0.08, 0.48, 0.16, 0.64, 0.24, 0.8], atol=1e-12)
