"""The elbow with a biceps of many fibers (demos/elbow_bundle.py)."""
import itertools
import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import skfiber as sf
from skfiber.bundle import reference_clearance
from skfiber.contact import FiberContact

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos"))
import elbow_bundle as eb  # noqa: E402


def _brute_force_gap(model, samples=201):
    """The smallest d/(r0(θa) + r0(θb)) − 1 over all pairs of fibers, from the fibers' own curves."""
    theta = np.linspace(0, 1, samples)
    lines = [f.curve(theta).T for f in model.fibers]
    r = np.array([f.radius_at(theta) for f in model.fibers])
    return min(float(np.min(np.linalg.norm(lines[a][:, None, :] - lines[b][None, :, :], axis=2)
                            / (r[a][:, None] + r[b][None, :]))) - 1.0
               for a, b in itertools.combinations(range(len(lines)), 2))


@pytest.mark.parametrize("n", [9, 36])
def test_the_bundle_starts_admissible(n):
    """Both heads, every pair (brute force over the fibers' curves, within and between the heads): the
    clearance of the builder, and the contact search finds every pair apart."""
    model, _ = eb.build_model(n, 4)
    assert len(model.fibers) == n
    assert _brute_force_gap(model) >= eb.CLEARANCE * (1 - 0.01)
    contact = next(c for c in model.contacts if isinstance(c, FiberContact))
    assert reference_clearance(model, contact) > 0


def test_the_insertion_forces_turn_the_forearm_by_euler_s_law():
    """A free elbow (revolute joint): at every step the muscle's moment about the elbow, from the insertion
    forces the model reports, minus the forearm's weight moment equals the forearm's I θ̈ (solid cylinder
    about its end, closed form) — the insertion forces are the forces that turn the forearm."""
    model, motion = eb.build_model(4, 4, free_elbow=True)
    motion.activation = lambda t: 0.6 * eb.smooth_step(t / 0.2)
    m, L, r = eb.FOREARM_MASS, 0.287, 0.035
    inertia = m * (r * r / 4 + L * L / 3)
    rows = []

    def record(state, info):
        moment = eb.flexion_moment(model, state)
        weight = m * 9.81 * L / 2 * math.sin(state.q[0])
        rows.append((moment, moment - weight - inertia * state.b[0]))

    sf.simulate(model, t_end=0.4, dt=0.01, progress=False, max_halvings=8, callback=record,
                newton_options=sf.NewtonOptions(rtol=1e-9, stagnation_window=8, max_iterations=60))
    rows = np.array(rows)
    assert rows[-1, 0] > 0.5  # the muscle flexes the elbow
    assert np.max(np.abs(rows[:, 1])) <= 1e-7 * np.max(np.abs(rows[:, 0]))


def test_the_cross_section_of_the_reference_bundle_is_its_fibers_and_the_space_between():
    """At rest (λ = 1) the fibers cross mid-belly with r0 = 2 mm: their areas sum to n π r0²; the enclosed
    area is larger (the packing's gaps) and at most the area of the disc around the fibers' crossings."""
    model, _ = eb.build_model(9, 4)
    state = model.initial_state(0.0)
    enclosed, fibers = eb.cross_section(model, state)
    assert fibers == pytest.approx(9 * math.pi * eb.R_BELLY**2, rel=1e-9)
    theta = np.linspace(0.25, 0.75, 201)
    centres = np.array([f.curve(theta).T for f in model.fibers])[:, 100]  # ≈ the crossings (θ = 1/2)
    reach = np.max(np.linalg.norm(centres - centres.mean(axis=0), axis=1)) + eb.R_BELLY
    assert fibers < enclosed <= math.pi * reach**2 * 1.05


def test_the_isometric_schedule_holds_the_angles_at_the_samples():
    angle, activation, times = eb.isometric_schedule([30.0, 90.0])
    assert [round(math.degrees(angle(t)), 12) for t in times] == [0.0, 30.0, 90.0]
    assert activation(0.0) == 0.0 and activation(eb.T_ACTIVATE) == 1.0
    assert math.degrees(angle(times[1] - 1e-9)) == pytest.approx(30.0)  # held before the sample


def test_the_demo_runs_small_and_ends_with_its_summary(capsys, tmp_path):
    """9 fibers (the README's CI size): isometric at 30° and 90°, a short isokinetic run; the bundle swells
    when the muscle shortens, its force falls as it shortens (the rising branch of N(λ)), and the Hill
    muscle on the same path is compared."""
    out = eb.main(["--fibers", "9", "--elements", "4", "--angles", "30", "90", "--isokinetic-time", "0.05",
                   "--out", str(tmp_path)])
    text = capsys.readouterr().out
    summary = text.strip().splitlines()[-1]
    assert summary.startswith("summary: fibers=9 csa_increase_pct_90=")
    keys = dict(item.split("=") for item in summary.split()[1:])
    assert set(keys) == {"fibers", "csa_increase_pct_90", "peak_isometric_force_N", "wall_s", "softening"}
    assert keys["softening"] == "0" and "strain softening: none (the stretch λ at the fibers' sample points" in text
    log = out["softening"]  # every step of both runs checked; the bellies shortened, the tendons barely stretched
    assert log.states == round(out["points"][-1].state.t / 0.01) + 5
    lowest, highest = log.min_stretch.min(), log.max_stretch.max()
    assert 0.3 < lowest < 0.9 and 1.0 < highest < 1.1, (lowest, highest)
    assert not log.softening and not log.past_states.any() and np.isnan(log.first_past).all()
    points = out["points"]
    assert [p.angle_deg for p in points] == [0.0, 30.0, 90.0]
    assert points[0].force_N > points[1].force_N > points[2].force_N > 0
    assert all(p.moment_Nm > 0 for p in points)
    assert 10.0 < out["csa_increase_pct_90"] < 80.0
    assert np.all(out["hill"] > 0) and out["isokinetic"].shape[1] == 5
    import meshio  # the VTK series: every fiber with the other fibers' line force on it, and the bones

    entries = sf.io.read_pvd(tmp_path / "elbow_bundle_isometric.pvd")
    turning = sf.io.read_pvd(tmp_path / "elbow_bundle_isokinetic.pvd")
    assert len(turning) == 2 * 6  # the start and 5 steps: fibers, bones
    # each series starts at 0 s with its start state (the isokinetic one on the test's clock, as its progress lines
    # print, not the run's, which starts at 30° after the isometric schedule), its files numbered by the steps of
    # its run and its times exact multiples of the step
    assert points[1].state.t > 0.5
    for series in (entries, turning):
        frames = sorted({(e.time, e.file) for e in series if e.part == 0})
        assert frames[0][0] == 0.0 and frames[0][1].endswith("_fibers_000000.vtu")
        assert [t for t, _ in frames] == [round(int(f[-10:-4]) * 0.01, 12) for _, f in frames]
    fibers = meshio.read(tmp_path / [e.file for e in entries if e.part == 0][-1])
    force = fibers.point_data["fiber_contact_force"]
    assert force.shape == (9 * (4 * 4 + 1), 3) and np.linalg.norm(force, axis=1).max() > 0
    assert "units: fiber_contact_force [N/m] line force of the other fibers on this fiber, per current length" \
        in fibers.field_data  # (what ParaView and skfiber view --info show)
    assert {e.part for e in entries} == {0, 1}


def test_the_demo_refuses_bad_options():
    with pytest.raises(SystemExit):
        eb.main(["--fibers", "1"])
    with pytest.raises(SystemExit):
        eb.main(["--fibers", "9", "--angles", "60", "90"])  # no 30°: the isokinetic start
    with pytest.raises(SystemExit):
        eb.main(["--dt", "-1"])
    with pytest.raises(SystemExit):
        eb.main(["--dt", "0.2"])  # does not divide the schedule's 0.3 s
    with pytest.raises(SystemExit):
        eb.main(["--angles", "30", "nan"])
    for argv in (["--fibers", str(eb.MAX_FIBERS + 1)],   # the two heads would overlap at the start
                 ["--dt", "1e7"],   # a multiple of nothing: round(t/dt) is 0 for every sample time
                 ["--isokinetic-time", "0.001"]):   # shorter than one step
        with pytest.raises(SystemExit):
            eb.main(argv)
    with pytest.raises(ValueError, match="tissue_drag"):
        eb.build_model(9, 4, tissue_drag=-1.0)
    with pytest.raises(ValueError, match="n_elements"):
        eb.build_model(9, 0)


@pytest.mark.parametrize("argv, message", [
    (["--dt", "0.015"], "--dt must divide 0.3 s and 0.5 s"),   # (the schedule's settle, its turn + hold)
    (["--dt", "1e7"], "--dt must divide"),   # named for itself, not as too long for --isokinetic-time
    (["--fibers", "-4"], "--fibers: must be 2 … 400"),
    (["--fibers", "1"], "--fibers: must be 2 … 400"),
])
def test_the_demo_names_its_limits(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        eb.main(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_a_run_that_stalls_says_what_to_change_and_ends_with_its_summary(capsys):
    """Two fibers of two elements at Δt = 0.1 s stall in the isometric test (Newton's steps cut to 1–2 % by
    the contact safeguard): the demo names --dt and --elements, prints the figures reached in its summary
    line marked failed=1, and returns 1."""
    assert eb.main(["--fibers", "2", "--elements", "2", "--dt", "0.1", "--angles", "30", "90",
                    "--isokinetic-time", "0.1"]) == 1
    out, err = capsys.readouterr()
    assert "--dt" in err and "--elements" in err and "stopped at t = " in err
    last = out.strip().splitlines()[-1]
    assert last.startswith("summary: fibers=2 csa_increase_pct_90=") and last.endswith(" failed=1")
    assert "peak_isometric_force_N=nan" not in last  # (the 0° point was reached)


def test_a_bundle_in_touch_is_solved_by_the_sparse_lu_with_the_same_steps_as_gmres(monkeypatch):
    """A contact among ≥ DIRECT_FROM_FIBERS fibers takes the sparse direct path (SuperLU) instead of GMRES;
    the run is the same to Newton's tolerance (here 10⁻⁸ of the largest force) either way."""
    import skfiber.coupling_fast as cf

    direct_solves = []
    real = cf.FastCoupling.solve_blocks
    monkeypatch.setattr(cf.FastCoupling, "solve_blocks", lambda self, ev: direct_solves.append(1) or real(self, ev))

    def run(limit):
        monkeypatch.setattr(cf, "DIRECT_FROM_FIBERS", limit)
        direct_solves.clear()
        model, motion = eb.build_model(9, 4)
        motion.activation = lambda t: eb.smooth_step(t / 0.05)
        result = sf.simulate(model, t_end=0.05, dt=0.01, progress=False, max_halvings=8,
                             newton_options=sf.NewtonOptions(rtol=1e-8, stagnation_window=3, max_iterations=10))
        return result.final_state, len(direct_solves)

    direct, n_direct = run(cf.DIRECT_FROM_FIBERS)
    assert cf.DIRECT_FROM_FIBERS <= 9 and n_direct > 0  # the fibers touch: the sparse LU served
    krylov, n_krylov_direct = run(10**6)
    assert n_krylov_direct < n_direct  # GMRES instead (its rare fallbacks aside)
    scale = np.max(np.abs(direct.u))
    assert np.max(np.abs(direct.u - krylov.u)) <= 1e-6 * scale


def test_the_bundle_s_tangents_are_factorized_on_their_diagonal_in_minimum_degree_order(monkeypatch):
    """SuperLU factorizes the tangents of a bundle in touch (16 elements a fiber), scaled to a unit diagonal,
    with threshold pivoting in the ordering of SPLU_ORDERING: no solution is rejected by the residual test, each
    agrees with partial pivoting in SuperLU's default order (COLAMD), and the pivots leave the diagonal far less
    often, with less fill, than those of the same tangents unscaled (the Hermite slopes' small diagonal)."""
    import scipy.sparse.linalg as spla

    import skfiber.linalg as la

    calls, unscaled = [], []
    real = la.spla.splu
    monkeypatch.setattr(la.spla, "splu", lambda A, **kw: calls.append((A.copy(), kw)) or real(A, **kw))
    real_scaling = la.symmetric_scaling
    monkeypatch.setattr(la, "symmetric_scaling", lambda K: unscaled.append(K.copy()) or real_scaling(K))
    model, motion = eb.build_model(9, 16)
    motion.activation = lambda t: eb.smooth_step(t / 0.05)
    result = sf.simulate(model, t_end=0.03, dt=0.01, progress=False, max_halvings=8,
                         newton_options=eb.newton_options())
    assert len(calls) > 5 and len(unscaled) == len(calls)  # no fallback to partial pivoting
    assert result.times[-1] == pytest.approx(0.03)
    assert la.SPLU_ORDERING == "MMD_AT_PLUS_A"  # SuperLU's minimum degree on A + Aᵀ
    assert all(kw == {"permc_spec": la.SPLU_ORDERING, "diag_pivot_thresh": la.SPLU_PIVOT_THRESHOLD} for _, kw in calls)
    rng = np.random.default_rng(2)
    off_diagonal, fill = np.zeros(2, dtype=int), np.zeros(2, dtype=int)  # scaled, unscaled
    for (A, kw), K in list(zip(calls, unscaled))[::3]:
        assert np.allclose(np.abs(A.diagonal()), 1.0)
        for k, lu in enumerate((real(A, **kw), real(K, **kw))):
            off_diagonal[k] += np.sum(lu.perm_r != lu.perm_c)
            fill[k] += lu.L.nnz + lu.U.nnz
        b = rng.normal(size=A.shape[0])
        y = spla.splu(A).solve(b)
        assert np.max(np.abs(real(A, **kw).solve(b) - y)) <= 1e-10 * np.max(np.abs(y))
    assert off_diagonal[0] * 4 < off_diagonal[1] and fill[0] < fill[1]


def test_the_skfiber_command_finds_and_imports_the_demo():
    """``skfiber run elbow-bundle`` imports it as a package module (its helper import must work there too)."""
    import importlib

    module = importlib.import_module("skfiber.demos.elbow_bundle")
    assert module.drag_term.__module__ == "skfiber.demos.custom_term"
    assert module.__doc__.startswith("The elbow with a biceps of many fibers")


@pytest.mark.parametrize("free_elbow", [True, False])
def test_the_coupled_tangent_with_fibers_in_touch_matches_finite_differences(free_elbow):
    """The whole coupled tangent of a bundle whose attached fibers touch each other, at t ≠ 0: with the
    elbow a revolute joint (the rigid rows and columns) and with it prescribed (the insertions moving with
    t); central differences along random directions.  The fiber–fiber contact's share of T·d is far above
    the tolerance: a missing or wrong contact block would fail."""
    from conftest import step_functions
    from skfiber.coupling import CoupledProblem

    def model_at(fiber_contact):
        model, motion = eb.build_model(4, 4, free_elbow=free_elbow, fiber_contact=fiber_contact)
        motion.activation = lambda t: eb.smooth_step(t / 0.05)
        motion.angle = lambda t: math.radians(60.0 * t)
        return model

    model, dt = model_at(True), 0.01
    state = sf.simulate(model, t_end=0.06, dt=dt, progress=False, max_halvings=eb.MAX_HALVINGS).final_state
    problem = CoupledProblem(model)
    fiber_state, rigid_state = step_functions(model, state, dt)
    rng = np.random.default_rng(0)
    z = np.concatenate([state.u + 1e-5 * rng.standard_normal(problem.N),
                        state.q + 1e-4 * rng.standard_normal(problem.n)])
    t = state.t + dt
    contact = next(c for c in model.contacts if isinstance(c, FiberContact))
    assert np.count_nonzero(contact.pairs(model, z[:problem.N]).gap < 0) >= 5  # fibers in touch
    assert problem.n == (1 if free_elbow else 0)

    def residual(zz, prob=problem):
        return prob.evaluate(zz, t, fiber_state=fiber_state, rigid_state=rigid_state).residual

    tangent = problem.tangent_matrix(problem.evaluate(z, t, fiber_state=fiber_state, rigid_state=rigid_state))
    untouched = CoupledProblem(model_at(False))
    without_contact = untouched.tangent_matrix(untouched.evaluate(z, t, fiber_state=fiber_state,
                                                                  rigid_state=rigid_state))
    free = np.concatenate([~problem.fiber_solver.fixed, np.ones(problem.n, dtype=bool)])
    h = 1e-8
    for _ in range(6):
        d = rng.standard_normal(z.size) * free
        Td = (tangent @ d)[free]
        fd = ((residual(z + h * d) - residual(z - h * d)) / (2 * h))[free]
        assert np.linalg.norm(Td - fd) <= 1e-6 * np.linalg.norm(fd)
        assert np.linalg.norm(Td - (without_contact @ d)[free]) > 1e-3 * np.linalg.norm(Td)


def test_ctrl_c_stops_the_tests_and_exits_130(monkeypatch, capsys):
    """Ctrl-C during the isometric test: the demo runs no further test (simulate lets the interruption
    through, keeping no part of a run to report on), says so, ends with its summary line marked interrupted
    and returns 130 (skfiber run's exit code)."""
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(eb, "flexion_moment", ctrl_c)  # (called at the first isometric sample)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # (a "simulation interrupted" warning would fail the test)
        code = eb.main(["--fibers", "4", "--elements", "2", "--angles", "30", "90", "--isokinetic-time", "0.05"])
    out = capsys.readouterr().out
    assert code == 130
    assert "interrupted (Ctrl-C)" in out and "isokinetic test" not in out
    assert out.strip().splitlines()[-1].startswith("summary: fibers=4 ") and out.strip().endswith("interrupted=1")


def test_ctrl_c_in_the_isokinetic_test_keeps_the_isometric_figures(monkeypatch, capsys):
    """Ctrl-C in the isokinetic test: the summary keeps the swelling and the peak force that the isometric
    test found (not nan), marked interrupted."""
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(eb, "drag_force", ctrl_c)  # (called at the isokinetic test's first step)
    code = eb.main(["--fibers", "4", "--elements", "2", "--angles", "30", "90", "--isokinetic-time", "0.05"])
    out = capsys.readouterr().out
    assert code == 130 and "isokinetic test" in out and "interrupted (Ctrl-C)" in out
    summary = dict(item.split("=") for item in out.strip().splitlines()[-1].split()[1:])
    assert summary["interrupted"] == "1" and summary["fibers"] == "4"
    swelling = re.search(r"enclosed area \+(-?[0-9.]+) %", out)
    assert swelling and summary["csa_increase_pct_90"] == swelling.group(1)
    lines = out.splitlines()
    header = next(k for k, line in enumerate(lines) if "force N" in line)
    table = lines[header + 1:next(k for k, line in enumerate(lines) if line.startswith("  (length:"))]
    forces = [float(line.split()[2]) for line in table]  # (0°, where the continuation starts, 30° and 90°)
    assert len(forces) == 3 and float(summary["peak_isometric_force_N"]) == pytest.approx(max(forces), abs=0.05)


def test_ctrl_c_in_a_kernel_during_the_isometric_test_keeps_the_points_reached(monkeypatch, capsys):
    """Ctrl-C as numba reports it from a compiled kernel (a SystemError caused by the KeyboardInterrupt) at the
    second isometric point: the summary's peak force is that of the first point (0°), printed as it was
    reached, not nan; the swelling needs 90° and stays nan."""
    calls = []
    moment = eb.flexion_moment

    def ctrl_c_at_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as cause:
                raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from cause
        return moment(*args, **kwargs)

    monkeypatch.setattr(eb, "flexion_moment", ctrl_c_at_the_second)
    code = eb.main(["--fibers", "4", "--elements", "2", "--angles", "30", "90", "--isokinetic-time", "0.05"])
    out = capsys.readouterr().out
    assert code == 130 and "interrupted (Ctrl-C)" in out
    first = re.search(r"isometric +0\.0°: .*force +([0-9.]+) N", out)
    summary = dict(item.split("=") for item in out.strip().splitlines()[-1].split()[1:])
    assert first and summary["peak_isometric_force_N"] == first.group(1)
    assert summary["csa_increase_pct_90"] == "nan" and summary["interrupted"] == "1"


def test_the_longest_isokinetic_test_printed_is_accepted():
    """--help prints the largest --isokinetic-time as a number the check accepts (it printed 2.167 s, rounded up
    past the 160° limit, and refused it)."""
    longest = eb.isokinetic_time_max()
    assert float(f"{longest:.4f}") == longest
    assert eb.START_DEG + eb.SPEED_DEG_S * longest <= 160.0
    assert eb.START_DEG + eb.SPEED_DEG_S * (longest + 1e-4) > 160.0
