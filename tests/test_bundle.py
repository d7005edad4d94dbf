"""A bundle of fibers (skfiber.bundle) and their recruitment by the size principle (skfiber.recruitment)."""
import itertools
import math

import numpy as np
import pytest

import skfiber as sf
from skfiber.bundle import bundle, bundle_points, packing, reference_clearance
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


def test_converging_bundle_with_a_varying_radius_starts_admissible():
    """Patches of 0.5 and 0.35 of the belly's and r0(θ) of eq. 77's shape (thin tendons, thick belly): the
    gaps at the reference state, by the contact search and by brute force over dense centerline samples
    (independent of the search), are all positive."""
    radius = lambda th: 0.004 + 0.016 * np.sin(np.pi * np.asarray(th)) ** 2  # noqa: E731
    fibers = bundle((0, 0, 0), (0, 0, -0.3), 19, radius=radius, clearance=0.1, origin_scale=0.5,
                    insertion_scale=0.35, n_elements=8, law=sf.paper_law(), name="m")
    model = sf.Model(fibers)
    contact = model.add_contact(FiberContact(PenaltyLaw(stiffness=500.0, gamma=3.0)))
    assert reference_clearance(model, contact) > 0
    theta = np.linspace(0, 1, 401)
    lines = [f.curve(theta).T for f in fibers]
    r = radius(theta)
    for a, b in itertools.combinations(range(len(fibers)), 2):
        d = np.linalg.norm(lines[a][:, None, :] - lines[b][None, :, :], axis=2)
        assert np.min(d / (r[:, None] + r[None, :])) > 1.0


def test_bundle_checks_its_input():
    with pytest.raises(ValueError, match="n must be an integer ≥ 1"):
        packing(0)
    with pytest.raises(ValueError, match="layout must be one of"):
        packing(3, layout="square")
    with pytest.raises(ValueError, match="same point"):
        bundle_points((0, 0, 0), (0, 0, 0), 3, radius=0.01)
    with pytest.raises(ValueError, match="origin_scale must be a finite number > 0, got 0"):
        bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, origin_scale=0)
    for up in ((0, 0, 2), (1, 0)):
        with pytest.raises(ValueError, match="up must be a vector"):
            bundle_points((0, 0, 0), (0, 0, 1), 3, radius=0.01, up=up)
    with pytest.raises(ValueError, match="r0"):
        bundle_points((0, 0, 0), (0, 0, 1), 3, radius=lambda th: 0.01 - 0.02 * th)
    with pytest.raises(ValueError, match="one per fiber, got 2"):
        bundle((0, 0, 0), (0, 0, 1), 3, radius=0.01, n_elements=2, activation=[0.1, 0.2])


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


def test_recruitment_checks_its_input():
    with pytest.raises(ValueError, match="sizes must be"):
        size_principle_thresholds([1.0, -2.0])
    with pytest.raises(ValueError, match="last"):
        size_principle_thresholds([1.0], last=1.0)
    with pytest.raises(ValueError, match="drive must lie in \\[0, 1\\], got 1.5"):
        recruitment(1.5, [1.0, 2.0])


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
