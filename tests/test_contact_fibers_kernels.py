"""The compiled fiber–fiber contact against its former numpy implementation (tests/ff_numpy_reference.py).

Current geometry, closest points, contact pairs and gaps, residual, tangent triplets and the
step bound agree to round-off on random curved fibers, fibers with a variable
reference radius r0(θ), an upper-limb-like layout pushed together, a
staggered parallel bundle (closest points at fiber ends) and a fiber crossing
a bent one at its interior node.
"""
import numpy as np
import pytest
import scipy.sparse as sps

import ff_numpy_reference as ref
import skfiber as sf
from skfiber.contact import PenaltyLaw
from skfiber.contact.closest_point import POWER_FROM_HERMITE, closest_points
from skfiber.contact.fiber_geometry import fiber_setup, fiber_state
from skfiber.contact.fibers import FiberContact

LAW = sf.passive_kelvin_voigt(mu_muscle=100.0, mu_tendon=100.0, eta_muscle=0.0, eta_tendon=0.0) + sf.prestress(100.0)


def _random_segments(rng, n):
    q = rng.standard_normal((n, 4, 3))
    q[: n // 3, [1, 3]] = (q[: n // 3, 2] - q[: n // 3, 0])[:, None] + 0.1 * rng.standard_normal((n // 3, 2, 3))
    q[2 * n // 3:, [1, 3]] *= 4.0
    c = np.matmul(POWER_FROM_HERMITE, q)
    c[:5, 2:] = 0.0  # straight, uniformly parametrized: low effective degree
    x = (q[:, 0] + q[:, 2]) / 2 + rng.standard_normal((n, 3)) * rng.choice([0.01, 0.3, 2.0], size=(n, 1))
    return c, x


@pytest.mark.parametrize("method", ["auto", "eig"])
def test_closest_points_equal_the_numpy_reference(method):
    c, x = _random_segments(np.random.default_rng(21), 3000)
    got, want = closest_points(c, x, method=method), ref.closest_points(c, x, method=method)
    assert np.max(np.abs(got.distance - want.distance)) <= 1e-13 * (1 + np.abs(want.distance).max())
    same = np.abs(got.xi - want.xi) <= 1e-9
    # where the parameter differs the two are (numerically) equally close: two minima at the same distance
    assert np.all(same | (np.abs(got.distance - want.distance) <= 1e-13))
    assert np.mean(same) > 0.999 and np.array_equal(got.stationary[same], want.stationary[same])


def _random_model(rng, variable_radius=False):
    fibers = []
    for k in range(6):
        p0 = rng.uniform(-0.15, 0.15, 3)
        direction = rng.standard_normal(3)
        direction /= np.linalg.norm(direction)
        mid = p0 + 0.3 * direction + rng.uniform(-0.1, 0.1, 3)
        r = rng.uniform(0.03, 0.06)
        radius = (lambda th, r=r: r * (0.7 + 0.6 * th * (1 - th) + 0.1 * np.sin(5 * th))) if variable_radius and k % 2 else r
        fibers.append(sf.Fiber.polyline([p0 - 0.3 * direction, mid, p0 + 0.6 * direction], n_elements=5,
                                         radius=radius, law=LAW, name=f"f{k}"))
    return sf.Model(fibers)


def _upper_limb_like():
    from skfiber.demos import upper_limb
    ends = [((0.06, y, -0.03), (0.03, y, -0.40)) for y in (-0.085, 0.085)]
    ends += [((-0.10, y, -0.05), (-0.10, y, -0.40)) for y in (-0.17, 0.0, 0.17)]
    fibers = [sf.Fiber.straight(a, b, n_elements=8, radius=upper_limb.radius, law=LAW) for a, b in ends]
    model = sf.Model(fibers)
    # squeeze each group towards y = 0 and bend the fibers
    d = model.discretization
    u = np.zeros(model.n_dofs)
    X = d.reference_dofs.reshape(-1, 6)
    u.reshape(-1, 6)[:, 1] = -0.1 * X[:, 1] + 0.01 * np.sin(9 * X[:, 2])
    u.reshape(-1, 6)[:, 0] = 0.02 * np.sin(7 * X[:, 2])
    return model, u


def _staggered_bundle():
    fibers = [sf.Fiber.straight((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), n_elements=4, radius=0.05, law=LAW),
              sf.Fiber.straight((0.13, 0.092, 0.0), (0.93, 0.092, 0.0), n_elements=3, radius=0.05, law=LAW),
              sf.Fiber.straight((-0.1, 0.046, 0.08), (1.1, 0.046, 0.08), n_elements=5, radius=0.05, law=LAW)]
    return sf.Model(fibers)


def contact_cases():
    rng = np.random.default_rng(4)
    for trial in range(4):
        model = _random_model(rng, variable_radius=trial % 2 == 1)
        yield model, 0.02 * rng.standard_normal(model.n_dofs), 0.5, 0.05 * rng.standard_normal(model.n_dofs)
    model, u = _upper_limb_like()
    yield model, u, 2.0, 0.02 * rng.standard_normal(model.n_dofs)
    model = _staggered_bundle()
    yield model, 1e-3 * rng.standard_normal(model.n_dofs), 2.0, 0.01 * rng.standard_normal(model.n_dofs)
    # a fiber crossing a bent one at its interior node: closest points at the node (the tangent's kink branch)
    model = sf.Model([sf.Fiber.straight((-0.5, 0.0, 0.0), (0.5, 0.0, 0.0), n_elements=4, radius=0.05, law=LAW),
                      sf.Fiber.polyline([(0.0, -0.5, 0.09), (0.0, 0.0, 0.06), (0.0, 0.5, 0.09)], n_elements=2,
                                        radius=0.05, law=LAW)])
    yield model, np.zeros(model.n_dofs), 2.0, 0.01 * rng.standard_normal(model.n_dofs)


def _reference_evaluate(contact, model, u):
    """Pairs, residual and tangent of the numpy reference (as FiberContact.evaluate did)."""
    s = fiber_setup(model.discretization, contact.quadrature_points, None, contact.name)
    st = ref.fiber_state(s, model, u)
    pr = ref.find_pairs(model, s, st, gamma=contact.law.gamma)
    F, dF = contact.law.force(pr.gap)
    active = np.flatnonzero(pr.gap < 0)
    k, eA, q = pr.point[active], pr.element_x[active], pr.point[active] % s.nq
    n = (pr.y[active] - pr.x[active]) / pr.distance[active, None]
    T = (s.w[q] * F[active] * st.xp_norm[k])[:, None] * n
    phiA = s.H0[q] * s.scale[eA]
    R = np.bincount(s.dofs[eA].ravel(), weights=(phiA[:, :, None] * T[:, None, :]).ravel(), minlength=model.n_dofs)
    rows, cols, values = ref.tangent_triplets(model, s, st, pr, active, F, dF)
    K = sps.csr_matrix((values, (rows, cols)), shape=(model.n_dofs,) * 2)
    return s, st, pr, R, K


def test_pairs_residual_tangent_and_step_bound_equal_the_numpy_reference():
    n_cases = 0
    at_node = 0  # pairs in contact whose closest point is an interior node of the partner (kink of y″)
    for model, u, gamma, du in contact_cases():
        contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=gamma))
        s, st, want, R_want, K_want = _reference_evaluate(contact, model, u)
        st_got = fiber_state(s, model, u, contact.name)
        for name in ("Qs", "c", "P", "x", "xp", "xp_norm", "rx", "reach", "min_speed", "deviation", "lo", "hi"):
            a, b = getattr(st_got, name), getattr(st, name)
            assert np.allclose(a, b, rtol=1e-13, atol=1e-15), (name, np.max(np.abs(a - b)))
        got = contact.pairs(model, u)
        for name in ("point", "element_x", "element_y", "fixed", "fiber_x", "fiber_y"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
        for name in ("xi_y", "x", "y", "distance", "radius_x", "radius_y", "gap", "admissibility"):
            a, b = getattr(got, name), getattr(want, name)
            assert np.allclose(a, b, rtol=1e-12, atol=1e-13), (name, np.max(np.abs(a - b)))
        at_node += int(np.sum((want.gap < 0) & ~want.fixed & ((want.xi_y <= 1e-9) | (want.xi_y >= 1 - 1e-9))))
        ev = contact.evaluate(model, u, 0.0)
        assert ev.n_active == int(np.sum(want.gap < 0)) > 0
        assert np.max(np.abs(ev.residual - R_want)) <= 1e-12 * np.abs(R_want).max()
        K = sps.csr_matrix((ev.values, (ev.rows, ev.cols)), shape=K_want.shape)
        # r0′ of a callable r0(θ) is a central difference (step 1e-6 in θ): a round-off change of ξ_y
        # changes it by ~1e-16 / 1e-6 relative, which the tangent carries (≈ 1e-11 measured)
        assert abs(K - K_want).max() <= 1e-10 * abs(K_want).max()
        for delta_bar in (0.1, 0.5):
            d_got = contact.max_step(model, u, du, 0.0, delta_bar=delta_bar)
            d_want = ref.step_bound(model, s, st, u, du, delta_bar, gamma=gamma, name=contact.name)
            assert abs(d_got - d_want) <= 1e-9, (d_got, d_want)
        n_cases += 1
    assert n_cases == 7 and at_node > 0


@pytest.mark.parametrize("gap", ["closest_point", "smallest"])
@pytest.mark.parametrize("case", [0, 4, 5])
def test_search_and_tangent_do_not_depend_on_the_number_of_threads(case, gap):
    """The parallel search and tangent share the elements out among threads: with 1, 2, 3 or 7 shares
    the pairs and the blocks are those of the serial kernels to the last bit (each slot and block is
    summed in one order)."""
    from skfiber.contact import fiber_kernels, fiber_tangent

    model, u, gamma, _ = list(contact_cases())[case]
    contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=gamma), gap=gap)
    smallest = gap == "smallest"
    s = fiber_setup(model.discretization, contact.quadrature_points, None, contact.name)
    st = fiber_state(s, model, u, contact.name)
    lo, hi = st.P.min(axis=1), st.P.max(axis=1)
    ptr, nbr = fiber_kernels.neighbours_of(s.elements, s.fiber, lo, hi, st.reach)
    args = (ptr, nbr, s.elements, s.fiber, s.first, s.last, s.nq, s.nf, st.x, st.rx, st.P, st.c, s.c_ref,
            st.deviation, st.reach, lo, hi, True, s.r0_poly, smallest)
    serial = fiber_kernels.pairs_loop(*args)
    assert serial[0].size > 0
    pr = contact.pairs(model, u)
    for a, b in zip(serial, (pr.point, pr.element_y, pr.xi_y, pr.distance, pr.fixed, pr.y)):
        assert np.array_equal(a, b)
    for n in (1, 2, 3, 7):
        for a, b in zip(serial, fiber_kernels.pairs_loop_parallel(*args, n)):
            assert np.array_equal(a, b)
    F, dF = contact.law.force(pr.gap)
    active = np.flatnonzero(pr.gap < 0)
    assert active.size > 0
    targs = (active, pr.point, pr.element_x, pr.element_y, pr.xi_y, pr.fixed, pr.x, pr.y, pr.distance, pr.radius_x,
             pr.radius_y, pr.log_slope_y, F, dF, st.xp, st.xp_norm, st.c, s.c_ref, s.first, s.last, s.H0, s.H1,
             s.scale, s.w, s.nq, s.ne, POWER_FROM_HERMITE, s.r0_poly, smallest)
    serial = fiber_tangent.tangent_loop(*targs)
    for n in (1, 2, 3, 7):
        for a, b in zip(serial, fiber_tangent.tangent_loop_parallel(*targs, n)):
            assert np.array_equal(a, b)
    blocks = fiber_tangent.tangent_blocks(model, s, st, pr, active, F, dF, smallest=smallest)
    assert np.array_equal(blocks[2], serial[2].reshape(-1, 12, 12))


def test_the_parallel_kernels_run_in_the_model_when_the_work_is_large(monkeypatch):
    """Above their work thresholds the contact uses the parallel kernels (same evaluation to the bit)."""
    from skfiber.contact import fiber_pairs, fiber_tangent

    model, u = _upper_limb_like()
    contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))
    want = contact.evaluate(model, u, 0.0)
    calls = []
    for module, name in ((fiber_pairs, "pairs_loop_parallel"), (fiber_tangent, "tangent_loop_parallel")):
        kernel = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, kernel=kernel, name=name: calls.append(name) or kernel(*a))
    monkeypatch.setattr(fiber_pairs, "PARALLEL_SEARCH_WORK", 1)
    monkeypatch.setattr(fiber_tangent, "PARALLEL_TANGENT_WORK", 1)
    monkeypatch.setattr(fiber_pairs, "threads_for", lambda work, least: 2 if work >= least else 1)
    monkeypatch.setattr(fiber_tangent, "threads_for", lambda work, least: 2 if work >= least else 1)
    got = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0)).evaluate(model, u, 0.0)
    assert sorted(set(calls)) == ["pairs_loop_parallel", "tangent_loop_parallel"]
    assert np.array_equal(got.residual, want.residual) and np.array_equal(got.values, want.values)
