"""The contact search's pruning against the plain loop over the broad-phase rows, bit for bit.

:func:`skfiber.contact.fiber_kernels.pairs_loop` skips elements by proven box distances and by the
upper bound of a seed element per partner fiber.  ``_plain_pairs`` below is the search without any
of that (the semantics of the numpy reference): every element of the row of a contact point gets the
box and fat-chord tests, the fiber's upper bound g is the minimum over all tested elements, the kept
candidates (lower bound ≤ g (1 + slack)) are solved in row order and the first best one wins.  Both
must give the same pairs to the last bit on random layouts: thick fibers with many elements within
reach, fibers crossing, curved fibers, wider rows (a kept neighbour list), and points or radii that
are NaN; serial and parallel alike.
"""
import numba
import numpy as np
import pytest

import skfiber as sf
from skfiber.contact import fiber_kernels as fk
from skfiber.contact.broadphase import box_neighbours
from skfiber.contact.closest_point import closest_point_one
from skfiber.contact.fiber_geometry import fiber_setup, fiber_state

LAW = sf.passive_kelvin_voigt(mu_muscle=100.0, mu_tendon=100.0, eta_muscle=0.0, eta_tendon=0.0) + sf.prestress(100.0)


@numba.njit
def _plain_pairs(ptr, nbr, elements, fiber, first, last, nq, nf, x, rx, P, c, c_ref, deviation, reach, lo, hi,
                 certify):
    """The search of pairs_loop without pruning beyond the tests themselves (same outputs, same order)."""
    slots = elements.size * nq * nf  # dense: a slot for every (contact point, fiber)
    out_k = np.empty(slots, dtype=np.int64)
    out_e = np.full(slots, -1, dtype=np.int64)
    out_xi, out_d = np.empty(slots), np.empty(slots)
    out_fixed = np.zeros(slots, dtype=np.bool_)
    out_y, out_yp, out_Yp = np.empty((slots, 3)), np.empty(slots), np.empty(slots)
    cand_e = np.empty(max(nbr.size, 1), dtype=np.int64)
    cand_lb = np.empty(max(nbr.size, 1))
    g = np.empty(nf)
    y = np.empty(3)
    a = np.empty(6)
    scratch = np.empty((9, 7))
    for ia in range(elements.size):
        for q in range(nq):
            k = elements[ia] * nq + q
            g[:] = np.inf
            m = 0
            for r in range(ptr[ia], ptr[ia + 1]):
                eB = elements[nbr[r]]
                bound = rx[k] + reach[eB]
                lb = fk._box_distance(lo[eB], hi[eB], x[k])
                if not lb < bound:
                    continue
                lb = max(lb, fk.chord_distance(P[eB], x[k]) - deviation[eB])
                if not lb < bound:
                    continue
                g[fiber[eB]] = min(g[fiber[eB]], fk._upper_bound(c[eB], P[eB], x[k], fk.chord_parameter(P[eB], x[k])))
                cand_e[m], cand_lb[m] = eB, lb
                m += 1
            for fb in range(nf):
                best, best_xi, best_d, best_st = -1, 0.0, np.inf, False
                for i in range(m):
                    eB = cand_e[i]
                    if fiber[eB] != fb or not cand_lb[i] <= g[fb] * (1 + fk._PRUNE_SLACK):
                        continue
                    xi, d, st = closest_point_one(c[eB], x[k], certify, a, scratch)
                    if best < 0 or d < best_d:
                        best, best_xi, best_d, best_st = eB, xi, d, st
                if best < 0:
                    continue
                n = (ia * nq + q) * nf + fb
                out_k[n], out_e[n], out_xi[n], out_d[n] = k, best, best_xi, best_d
                out_fixed[n] = not best_st and ((best_xi == 0.0 and first[best]) or (best_xi == 1.0 and last[best]))
                fk.power_point(c[best], best_xi, 0, out_y[n])
                fk.power_point(c[best], best_xi, 1, y)
                out_yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
                fk.power_point(c_ref[best], best_xi, 1, y)
                out_Yp[n] = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
    return fk._pairs_compact(out_k, out_e, out_xi, out_d, out_fixed, out_y, out_yp, out_Yp)


def _unit(rng):
    v = rng.standard_normal(3)
    return v / np.linalg.norm(v)


def _layout(rng, kind):
    """A random model: "bundle" (thick parallel bellies, many elements within reach), "crossing"
    (random directions through one ball) or "curved" (bent centre lines, thin and thick)."""
    n_fibers = int(rng.integers(2, 6))
    fibers = []
    axis = _unit(rng)
    for f in range(n_fibers):
        n_el = int(rng.integers(3, 41))
        if kind == "bundle":
            side = np.cross(axis, _unit(rng))
            p0 = 0.2 * rng.uniform(-1, 1) * side / np.linalg.norm(side)
            ends = [p0 - 0.4 * axis, p0 + 0.02 * _unit(rng), p0 + 0.4 * axis]
            r = rng.uniform(0.05, 0.14)
        elif kind == "crossing":
            d = _unit(rng)
            p0 = rng.uniform(-0.1, 0.1, 3)
            ends = [p0 - 0.5 * d, p0 + 0.05 * _unit(rng), p0 + 0.5 * d]
            r = rng.uniform(0.02, 0.1)
        else:
            d = _unit(rng)
            p0 = rng.uniform(-0.15, 0.15, 3)
            ends = [p0 - 0.4 * d, p0 + 0.25 * _unit(rng), p0 + 0.1 * _unit(rng), p0 + 0.4 * d]
            r = rng.choice([0.01, 0.05, 0.15])
        radius = (lambda th, r=r: r * (0.3 + 2.8 * th * (1 - th))) if f % 2 else float(r)
        fibers.append(sf.Fiber.polyline(ends, n_elements=n_el, radius=radius, law=LAW))
    return sf.Model(fibers)


def _search_inputs(rng, kind):
    model = _layout(rng, kind)
    u = 0.01 * rng.standard_normal(model.n_dofs)
    s = fiber_setup(model.discretization, int(rng.integers(1, 6)), None, "contact")
    st = fiber_state(s, model, u, "contact")
    lo, hi = st.P.min(axis=1), st.P.max(axis=1)
    if rng.random() < 0.5:
        ptr, nbr = fk.neighbours_of(s.elements, s.fiber, lo, hi, st.reach)
    else:  # a kept neighbour list: rows wider than this state's broad phase
        el = s.elements
        ptr, nbr = box_neighbours(lo[el], hi[el], s.fiber[el], st.reach[el] + 0.1 * st.reach.max())
    return [ptr, nbr, s.elements, s.fiber, s.first, s.last, s.nq, s.nf, st.x.copy(), st.rx.copy(), st.P, st.c,
            s.c_ref, st.deviation, st.reach.copy(), lo, hi, bool(rng.random() < 0.8), s.r0_poly,
            False]


def _assert_same(got, want):
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


@pytest.mark.parametrize("kind", ["bundle", "crossing", "curved"])
def test_the_pruned_search_equals_the_plain_loop_bit_for_bit(kind):
    rng = np.random.default_rng({"bundle": 1, "crossing": 2, "curved": 3}[kind])
    pairs = 0
    for trial in range(12):
        args = _search_inputs(rng, kind)
        want = _plain_pairs(*args[:18])  # (the closest-point search: args[-1] is False)
        _assert_same(fk.pairs_loop(*args), want)
        for n in (2, 3):
            _assert_same(fk.pairs_loop_parallel(*args, n), want)
        pairs += want[0].size
    assert pairs > 1000


def test_the_pruned_search_equals_the_plain_loop_with_nan_points_and_radii():
    rng = np.random.default_rng(7)
    for trial in range(6):
        args = _search_inputs(rng, "bundle")
        x, rx, reach = args[8], args[9], args[14]
        x[rng.integers(x.shape[0]), rng.integers(3)] = np.nan
        rx[rng.integers(rx.size)] = np.nan
        reach[rng.integers(reach.size)] = np.nan
        x[rng.integers(x.shape[0]), 0] = np.inf
        want = _plain_pairs(*args[:18])  # (the closest-point search: args[-1] is False)
        assert want[0].size > 0
        _assert_same(fk.pairs_loop(*args), want)
        _assert_same(fk.pairs_loop_parallel(*args, 2), want)
