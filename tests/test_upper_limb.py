"""The upper-limb demo (paper §5.4) at small size."""
import re

import numpy as np
import pytest

import skfiber as sf
from skfiber.contact import FiberContact
from skfiber.demos import upper_limb
from skfiber.postprocess import fiber_fields

from conftest import interrupted_at_first_step


@pytest.fixture(scope="module")
def quarter_second(tmp_path_factory):
    """main() at level 1 over the first 0.25 s (8 steps; fiber–fiber contact on), its output folder and stdout."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("upper_limb")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        results = upper_limb.main(["--t-end", "0.25", "--quiet", "--output", str(out), "--vtk", str(out / "vtk")])
    return results, out, buffer.getvalue()


def test_upper_limb_first_quarter_second(quarter_second):
    results, out, stdout = quarter_second
    r = results[0]
    summary = stdout.strip().splitlines()[-1]
    assert summary.startswith("summary: level=1 dofs=542 steps=8 ")
    assert " geometry=table4 fiber_contact=1 " in summary and " softening=0 " in summary
    assert r.dofs == 542  # the paper's count for level 1 (Table 5)
    assert r.times[-1] == 0.25 and len(r.times) == 9
    # the biceps (α ≈ 0.08 at t = 0.25 s) flexes the elbow; measured 0 → 12.7° → … → 20.66° at 0.25 s
    assert 18.0 < r.angle_deg[-1] < 23.0
    assert np.all(np.diff(r.angle_deg) > 0)
    assert r.max_contacts > 0
    # fibers pull on the upper arm (kN: Table 4's Smax is large); measured at 0.25 s: biceps 1.28 kN,
    # triceps 1.82 kN (its 7 cm lever needs more force than the biceps' 15 cm for a balance)
    assert np.all(r.biceps_origin_force > 0) and 1e3 < r.biceps_origin_force[-1] < r.triceps_origin_force[-1]
    for name in ("angle_level1.csv", "axial_force_level1.csv", "angle.png", "forces.png", "axial_force.png"):
        assert (out / name).stat().st_size > 0
    pvd = (out / "vtk" / "upper_limb.pvd").read_text()
    assert pvd.count("upper_limb_fibers_") == 9 and pvd.count("upper_limb_bodies_") == 9  # every step, 0 … 8
    data = np.loadtxt(out / "angle_level1.csv", delimiter=",", skiprows=1)
    assert data.shape == (9, 4) and np.allclose(data[:, 1], r.angle_deg, rtol=1e-8)
    # a 0.25 s run is not compared with the paper's 8 s timing
    assert not r.complete and "—" in upper_limb.report(results).splitlines()[1]


def test_printed_wiggles_relative_to_range_and_to_mean(quarter_second):
    """main() prints the wiggles of N(θ) relative to the force range (the check as before) and to the mean
    force, each with its fiber and time, and says what they are."""
    from skfiber.demos._upper_limb_checks import oscillation, profile_oscillation, profile_wiggles

    results, _, stdout = quarter_second
    r = results[0]
    (t, profiles), = r.profiles.items()
    by_range = {name: oscillation(N) for name, (_, N, _) in profiles.items()}
    by_mean = {name: oscillation(N, relative_to="mean") for name, (_, N, _) in profiles.items()}
    recovered = {name: oscillation(N_rec) for name, (_, _, N_rec) in profiles.items()}
    assert max(by_range.values()) == profile_oscillation(r)
    assert max(by_mean.values()) == profile_oscillation(r, relative_to="mean")
    assert max(recovered.values()) == profile_oscillation(r, recovered=True)
    assert profile_wiggles(r) == [(t, name, by_range[name], by_mean[name], recovered[name]) for name in profiles]
    worst_range, worst_mean = max(by_range, key=by_range.get), max(by_mean, key=by_mean.get)
    worst_recovered = max(recovered, key=recovered.get)
    assert (f"recovered N {100 * recovered[worst_recovered]:.2f} % of the force range ({worst_recovered}, "
            f"t = {t:g} s); N at the samples {100 * by_range[worst_range]:.2f} % of the force range "
            f"({worst_range}, t = {t:g} s), {100 * by_mean[worst_mean]:.2f} % of the mean force "
            f"({worst_mean}, t = {t:g} s)") in stdout
    assert "falls like h³" in stdout


def test_oscillation_relative_to_range_or_mean():
    from skfiber.demos._upper_limb_checks import oscillation

    N = np.array([100.0, 100.0, 102.0, 100.0])   # sample 2 is 2 from its neighbours' mean; range 2, mean 100.5
    assert oscillation(N) == oscillation(N, relative_to="range") == 1.0
    assert oscillation(N, relative_to="mean") == pytest.approx(2.0 / 100.5)
    assert oscillation(N + 1e6, relative_to="range") == 1.0     # the range-relative value ignores the level of N
    assert oscillation(np.full(5, 3.0), relative_to="mean") == 0.0
    with pytest.raises(ValueError, match="relative_to must be 'range' or 'mean'"):
        oscillation(N, relative_to="max")


def test_fiber_contact_is_active_and_admissible(quarter_second):
    """Fiber–fiber contact acts during the run (measured: 170–198 active contact points of the 400 in the first
    0.25 s at level 1), every contact point stays admissible (1 + γg > 0) and the VTK output has no NaN."""
    import meshio

    results, out, stdout = quarter_second
    c = results[0].checks
    assert c.fiber_contacts.min() > 100 and c.wrap_contacts.min() > 0
    assert c.fiber_margin.min() > 0 and c.wrap_margin.min() > 0
    assert "contacts in touch (contact point – partner pairs with g < 0): wrapping cylinder" in stdout
    assert "fiber–fiber 1" in stdout
    for vtu in sorted((out / "vtk").glob("upper_limb_fibers_*.vtu")):
        mesh = meshio.read(vtu)
        for name, values in mesh.point_data.items():
            assert np.isfinite(values).all(), (vtu.name, name)
        assert np.abs(mesh.point_data["contact_force"]).max() > 0


def test_softening_check_is_silent_on_the_default_geometry(quarter_second):
    """No material past its force peak in the default run; the demo says so and gives the largest stretches."""
    results, out, stdout = quarter_second
    c = results[0].checks
    assert not c.softening and all(n == 0 and t0 is None for n, t0 in c.past_peak.values())
    assert "material past the force peak or minimum of its law: none" in stdout
    assert set(c.max_stretch) == {f.name for f in results[0].model.fibers}
    assert all(1.0 < lam < 1.5 for lam in c.max_stretch.values())


def test_softening_check_fires_on_the_old_geometry():
    """The earlier geometry (olecranon lever 0.1 m): the triceps is stretched past its force peak within the first
    0.25 s (measured: first at t = 0.156 s, λ up to 2.9 by 0.25 s) and the run warns."""
    from skfiber.softening import SofteningWarning

    with pytest.warns(SofteningWarning) as record:
        r = upper_limb.run(1, t_end=0.25, progress=False, geometry="softening")
    assert sorted(str(w.message).split(" ")[0] for w in record) == ["triceps1", "triceps2", "triceps3"]
    assert all("(level 1): material past the force peak or minimum of its law" in str(w.message) for w in record)
    assert not r.fiber_contact and r.checks.softening
    assert {name for name, (n, _) in r.checks.past_peak.items() if n} == {"triceps1", "triceps2", "triceps3"}
    assert max(r.checks.max_stretch[f"triceps{k}"] for k in (1, 2, 3)) > 1.5


def test_out_puts_every_file_in_one_folder(tmp_path, capsys):
    """'skfiber run upper-limb --out DIR' passes --out: CSV/PNG files and the VTK series all land in DIR
    (it once stood silently for --output, an abbreviation, and no VTK series was written)."""
    from skfiber import cli

    out = tmp_path / "res"
    assert cli.main(["run", "upper-limb", "--out", str(out), "--t-end", "0.125", "--quiet", "--vtk-every", "4"]) == 0
    assert (out / "upper_limb.pvd").read_text().count("upper_limb_fibers_") == 2  # steps 0 and 4 (--vtk-every 4)
    assert (out / "angle_level1.csv").is_file()
    assert f"results: {out / 'upper_limb.pvd'}" in capsys.readouterr().err
    for other in ("--output", "--vtk"):   # one folder for all, or the two folders: not both
        with pytest.raises(SystemExit):
            upper_limb.main(["--out", str(out), other, str(tmp_path / "x"), "--quiet"])
        assert "give either --out or --output/--vtk" in capsys.readouterr().err
    with pytest.raises(SystemExit):        # no abbreviations: '--outp' is not '--output'
        upper_limb.main(["--outp", str(tmp_path / "x")])
    assert "unrecognized arguments: --outp" in capsys.readouterr().err


@pytest.mark.parametrize("argv, why", [(["--fiber-contact", "off"], "(--fiber-contact off)"),
                                       (["--geometry", "softening"], "(the default of --geometry softening)")])
def test_a_contact_gap_without_fiber_contact_is_refused(argv, why, capsys):
    """--contact-gap only sets fiber–fiber contact's gap: with that contact off it would be silently ignored."""
    with pytest.raises(SystemExit):
        upper_limb.main(["--contact-gap", "smallest", "--t-end", "0.1", *argv])
    assert f"--contact-gap smallest sets the gap of fiber–fiber contact, which is off here {why}" in \
        capsys.readouterr().err


def test_ctrl_c_after_the_first_step_or_in_the_warm_up_is_reported_with_exit_code_130(monkeypatch, capsys,
                                                                                      tmp_path):
    """Ctrl-C after one step: the report of that step and the summary, exit code 130 as a script; Ctrl-C in
    the warm-up step (where the kernels compile on a first run): nothing to report but the interrupted summary,
    exit code 130."""
    import skfiber
    import skfiber.run
    from skfiber.cli import run_script

    real, calls = skfiber.run.simulate, []

    def interrupted_in_step_two(model, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(model, **kwargs)

    monkeypatch.setattr(skfiber.run, "simulate", interrupted_in_step_two)
    argv = ["--levels", "2", "--t-end", "0.25", "--quiet", "--output", str(tmp_path)]  # a step < one sample
    assert pytest.raises(SystemExit, run_script, upper_limb.main, argv).value.code == 130
    captured = capsys.readouterr()
    assert "level 2 was interrupted at t = 0.01562 s (1 of 16 steps)" in captured.out
    assert captured.out.strip().splitlines()[-1].startswith("summary: level=2 ")
    assert "Traceback" not in captured.err
    monkeypatch.setattr(skfiber, "simulate", interrupted_at_first_step(skfiber.simulate))  # (the warm-up step)
    assert pytest.raises(SystemExit, run_script, upper_limb.main, argv).value.code == 130
    captured = capsys.readouterr()
    assert captured.err.strip().endswith(": interrupted")
    assert [line for line in captured.out.splitlines() if line.startswith("summary:")] == ["summary: interrupted=1"]


def test_interrupted_run_is_reported_as_partial_and_resumes(monkeypatch, capsys, tmp_path, quarter_second):
    """Ctrl-C during the run: the steps done are written, marked as partial and checkpointed, no further level
    runs; --resume finishes level 1 from its checkpoint, equal bit for bit to the uninterrupted run, and runs
    level 2 (which has no checkpoint) afresh."""
    import skfiber.run
    from skfiber.io import load_checkpoint

    real, calls = skfiber.run.simulate, []

    def interrupted_in_step_four(model, **kwargs):  # the run driver's steps (not the demo's warm-up step)
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(model, **kwargs)

    monkeypatch.setattr(skfiber.run, "simulate", interrupted_in_step_four)
    argv = ["--levels", "1", "2", "--t-end", "0.25", "--quiet", "--output", str(tmp_path), "--checkpoint-every", "5"]
    results = upper_limb.main(argv)
    assert len(results) == 1 and results[0].interrupted and len(results[0].newton_iterations) == 3
    out = capsys.readouterr().out
    assert "level 1 was interrupted at t = 0.09375 s (3 of 8 steps): partial results" in out
    assert "continue with the same options and --resume" in out
    summary = out.strip().splitlines()[-1]
    assert summary.endswith("interrupted_at_s=0.09375 steps_planned=8 interrupted=1") and " steps=3 " in summary
    assert (tmp_path / "angle_level1.csv").exists()
    assert load_checkpoint(upper_limb.checkpoint_file(tmp_path, 1)).step == 3   # not a multiple of 5: Ctrl-C
    monkeypatch.setattr(skfiber.run, "simulate", real)
    resumed = upper_limb.main(argv + ["--resume"])
    assert [r.resumed_from for r in resumed] == [3, None] and not resumed[0].complete
    assert "level 1 was resumed from its checkpoint at step 3" in capsys.readouterr().out
    whole = quarter_second[0][0]
    for name in ("times", "angle_deg", "biceps_origin_force", "triceps_origin_force", "newton_iterations"):
        assert np.array_equal(getattr(resumed[0], name), getattr(whole, name)), name
    assert resumed[0].retries == whole.retries and resumed[0].max_contacts == whole.max_contacts
    for field in ("fiber_contacts", "wrap_contacts", "fiber_margin", "wrap_margin", "times"):
        assert np.array_equal(getattr(resumed[0].checks, field), getattr(whole.checks, field)), field
    assert resumed[0].checks.max_stretch == whole.checks.max_stretch
    assert resumed[0].checks.past_peak == whole.checks.past_peak
    # the softening check of every step: the start and the 8 steps, once each across the resume
    assert resumed[0].checks.softening_states == whole.checks.softening_states == 8 + 1
    np.testing.assert_array_equal(resumed[0].final_state.u, whole.final_state.u)
    assert (tmp_path / "angle_level1.csv").read_bytes() == (quarter_second[1] / "angle_level1.csv").read_bytes()


@pytest.mark.parametrize("change, named", [
    (["--geometry", "softening"], "fiber_contact=True, geometry='table4'; this run has fiber_contact=False, "
                                  "geometry='softening'"),
    (["--fiber-contact", "off"], "fiber_contact=True; this run has fiber_contact=False"),
    (["--bending", "1e-4"], "bending_EI=0.0; this run has bending_EI=0.0001"),
    (["--stretch-gradient", "5"], "stretch_gradient=0.0; this run has stretch_gradient=5.0"),
    (["--t-end", "0.1"], "written with steps of 0.03125 s, and --t-end 0.1 s gives steps of 0.0333333 s: give a "
                         "--t-end that is a multiple of 0.03125 s"),
    (["--t-end", "0.03125"], "--t-end must not be before the checkpoint's time 0.0625 s (the run continues from "
                             "there), got 0.03125"),
    (["--level", "2"], "no checkpoint"),
    (["--newton-rtol", "1e-9"], "newton_rtol=1e-05; this run has newton_rtol=1e-09"),
])
def test_resume_refuses_a_checkpoint_of_other_options(change, named, tmp_path, capsys):
    """A checkpoint written with other options is refused before anything runs: one line naming the options
    that differ and exit code 2, as a script and through 'skfiber run'; a later --t-end on the same Δt
    grid resumes."""
    from skfiber import cli

    base = ["--t-end", "0.0625", "--quiet", "--output", str(tmp_path)]
    upper_limb.main(base)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        upper_limb.main(base + change + ["--resume"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and named in err and len(err.strip().splitlines()) == 1, err
    assert cli.main(["run", "upper-limb", "--output", str(tmp_path), "--t-end", "0.0625", "--quiet", "--resume"]
                    + change) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert named in err[-1] and err[-1].startswith("skfiber run upper-limb: error: --resume: ")


def test_resume_to_a_later_end_time(tmp_path, quarter_second, capsys):
    """A run to 0.125 s resumed to 0.25 s (the same Δt) equals the run to 0.25 s, and so do its files."""
    base = ["--quiet", "--output", str(tmp_path)]
    upper_limb.main(base + ["--t-end", "0.125"])
    longer = upper_limb.main(base + ["--t-end", "0.25", "--resume"])[0]
    whole = quarter_second[0][0]
    assert longer.resumed_from == 4
    assert np.array_equal(longer.angle_deg, whole.angle_deg) and np.array_equal(longer.times, whole.times)
    for name in ("angle_level1.csv", "axial_force_level1.csv"):
        assert (tmp_path / name).read_bytes() == (quarter_second[1] / name).read_bytes()


def test_reference_configuration_is_admissible():
    """At q = 0 every fiber end sits on its body point, the triceps rest lightly on the wrapping cylinder and
    the fibers lying side by side touch, all admissibly (1 + γg > 0; measured min 0.23 and 0.126), and
    fiber–fiber contact covers every pair that touches."""
    model = upper_limb.build_model(4)
    state = model.initial_state()
    forces = model.attachment_forces(state)
    assert set(forces) == {f"{f.name}.{end}" for f in model.fibers for end in ("origin", "insertion")}
    ev = model.evaluate(state.u, state.v, state.a, 0.0, c_v=0.0, c_a=0.0)
    assert np.isfinite(ev.residual).all()
    wrap, fibers = model.contacts
    assert isinstance(fibers, FiberContact) and fibers.fibers is None    # all fibers, all pairs
    for contact, floor in ((wrap, 0.2), (fibers, 0.1)):
        e = contact.evaluate(model, state.u, 0.0)
        assert e.n_active > 0 and e.admissibility.min() > floor
    pairs = fibers.pairs(model, state.u)
    names = [f.name for f in model.fibers]
    touching = {tuple(sorted((names[a], names[b]))) for a, b, g in zip(pairs.fiber_x, pairs.fiber_y, pairs.gap) if g < 0}
    assert touching == {("biceps1", "biceps2"), ("triceps1", "triceps2"), ("triceps2", "triceps3"),
                        ("biceps1", "triceps1"), ("biceps1", "triceps2"), ("biceps2", "triceps2"),
                        ("biceps2", "triceps3")}
    assert not upper_limb.build_model(4, fiber_contact=False).contacts[1:]
    with pytest.raises(ValueError, match="geometry must be one of"):
        upper_limb.build_model(4, geometry="elbow")


def test_forearm_hangs_nearly_downward_at_rest():
    """Paper §5.4: at t = 0 the model is close to equilibrium with the forearm hanging down —
    the static equilibrium with all bodies and fibers (solve_static with rigid bodies)."""
    model = upper_limb.build_model(8, fiber_contact=False)   # with fiber–fiber contact: −0.26° (35 s)
    result = sf.solve_static(model, t=0.0)
    state = result.state
    angle = np.degrees(state.q[0])
    assert abs(angle) < 1.0 and angle != 0.0  # −0.46° with these attachment points
    # the forearm's moments about the elbow balance: the insertion forces' and the weight's (the wrapping
    # cylinder's axis is the elbow's, so its frictionless contact forces have no moment about it)
    axis, elbow = np.array([0.0, -1.0, 0.0]), upper_limb.ELBOW
    forces = model.attachment_forces(state)
    muscles = sum(np.cross(fiber_fields(model, state, f, points_per_element=1).position[:, -1] - elbow,
                           forces[f"{f.name}.insertion"]) @ axis for f in model.fibers)
    centre = elbow + 0.287 / 2 * np.array([np.sin(state.q[0]), 0.0, -np.cos(state.q[0])])
    weight = np.cross(centre - elbow, 1.50 * np.array([0.0, 0.0, -9.81])) @ axis
    assert abs(weight) > 1e-3 and abs(muscles + weight) <= 1e-5 * abs(weight)


def test_end_of_step_safeguard_check_changes_nothing(monkeypatch):
    """Newton checks the wrapping contact's eq. 71 from the evaluation at the end of the full step
    (margins_kept) instead of searching the contact points along it (max_step): same trajectory,
    far fewer safeguard searches."""
    import skfiber.coupling
    import skfiber.newton
    import skfiber.solver

    def run():
        calls = []
        real = skfiber.coupling.CoupledProblem.max_step
        monkeypatch.setattr(skfiber.coupling.CoupledProblem, "max_step",
                            lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
        model = upper_limb.build_model(8, fiber_contact=False)   # the wrapping cylinder's safeguard only
        result = sf.simulate(model, t_end=0.5, dt=8 / 256, progress=False)
        return result, len(calls)

    fast, searches = run()
    for module in (skfiber.time_step, skfiber.newton):  # always search along the step
        monkeypatch.setattr(module, "margins_kept", lambda *a: False)
    slow, searches_slow = run()
    assert np.array_equal(fast.newton_iterations, slow.newton_iterations)
    assert np.max(np.abs(fast.coordinates - slow.coordinates)) < 1e-10
    assert np.max(np.abs(fast.displacements - slow.displacements)) < 1e-10
    # one search per step for the predictor, otherwise only where the end check fails
    assert searches_slow >= 16 + sum(slow.newton_iterations) and searches < 0.5 * searches_slow


def test_insertion_forces_reuse_the_last_newton_evaluation():
    """attachment_forces at a state the solver just converged to takes the residual of that
    evaluation (no new evaluation) and equals a fresh evaluation bit for bit."""
    model = upper_limb.build_model(8, fiber_contact=False)
    evaluations = []
    real = model.evaluate
    model.evaluate = lambda *a, **k: evaluations.append(1) or real(*a, **k)
    seen = {}

    def callback(state, info):
        evaluations.clear()
        seen[info.step] = model.attachment_forces(state)
        assert not evaluations

    result = sf.simulate(model, t_end=0.25, dt=8 / 256, progress=False, callback=callback)
    model.memo.clear()  # forget it: evaluate afresh
    fresh = model.attachment_forces(result.final_state)
    assert evaluations and set(fresh) == set(seen[8])
    for name, force in fresh.items():
        np.testing.assert_array_equal(force, seen[8][name])


def test_insertion_forces_after_the_run_see_a_changed_model():
    """Outside simulate nothing is reused: changing the model after a run changes the forces."""
    model = upper_limb.build_model(4)
    result = sf.simulate(model, t_end=2 / 32, dt=1 / 32, progress=False)
    before = model.attachment_forces(result.final_state)["biceps1.origin"]
    model.add_line_load((0.0, 0.0, -1e3))
    after = model.attachment_forces(result.final_state)["biceps1.origin"]
    assert abs(after[2] - before[2]) > 1.0


def test_levels_one_and_two_agree(quarter_second):
    """Levels 1 and 2 (8/16 elements per fiber, Δt = 1/32 and 1/64 s; both take the first 1/8 s in steps of
    1/256 s) over the first 0.25 s, fiber–fiber contact on.  Measured: at the common times (level 1's) the
    elbow angles differ by at most 0.044° (at t = 5/32 s: 19.33° and 19.38°), the attachment forces by
    0.36 % of the largest force of these 0.25 s.  Over the whole 8 s: see docs/theory.md."""
    one = quarter_second[0][0]
    two = upper_limb.run(2, t_end=0.25, progress=False)
    assert two.n_elements == 16 and len(two.times) == 17
    common = np.abs(two.angle_deg[::2] - one.angle_deg)
    assert 0.01 < common.max() < 0.1, common
    assert upper_limb.angle_difference(one, two) == upper_limb.angle_difference(two, one) == common.max()
    assert 0.001 < upper_limb.force_difference(one, two) < 0.01
    assert not two.checks.softening and two.checks.fiber_contacts.min() > 100


def test_snapshots_of_fig_13(tmp_path):
    """--snapshots renders the sampled states nearest to 0, 0.5, 1, 1.5, 2 s that the run reached into one PNG
    (PyVista off screen), and the last state of a run that ends between them: here t = 0 and t = 0.0625 s side
    by side, the figure at least 7 inches wide for its title (120 dpi); a short run without fiber–fiber contact."""
    pytest.importorskip("pyvista")
    import matplotlib.image

    results = upper_limb.main(["--t-end", "0.0625", "--fiber-contact", "off", "--snapshots", "--quiet",
                               "--output", str(tmp_path)])
    assert not results[0].fiber_contact and results[0].checks.fiber_contacts.max() == 0
    image = matplotlib.image.imread(tmp_path / "snapshots.png")
    assert image.shape[0] > 300 and image.shape[1] >= 7 * 120 and image[..., :3].std() > 0.05   # not blank
    from skfiber.demos._upper_limb_figures import snapshot_states
    assert [state.t for state in snapshot_states(results[0])] == [0.0, 0.0625]


def test_a_run_without_checkpoints_takes_the_same_steps(quarter_second, tmp_path, capsys):
    """run() without a checkpoint takes all steps in one simulate call, the command (checkpoints on) one call per
    step through the run driver: the same trajectory and records, bit for bit; --no-checkpoints writes none."""
    direct = upper_limb.run(1, t_end=0.25, progress=False)
    driven = quarter_second[0][0]
    assert direct.resumed_from is None and driven.resumed_from is None
    for name in ("times", "angle_deg", "biceps_origin_force", "triceps_origin_force", "newton_iterations"):
        assert np.array_equal(getattr(direct, name), getattr(driven, name)), name
    np.testing.assert_array_equal(direct.final_state.u, driven.final_state.u)
    upper_limb.main(["--t-end", "0.0625", "--quiet", "--output", str(tmp_path), "--no-checkpoints"])
    assert (tmp_path / "angle_level1.csv").is_file() and not list(tmp_path.glob("*checkpoint*"))
    with pytest.raises(SystemExit):
        upper_limb.main(["--quiet", "--output", str(tmp_path), "--no-checkpoints", "--resume"])
    assert "leave out --no-checkpoints" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # (before anything runs)
        upper_limb.main(["--quiet", "--output", str(tmp_path / "both"), "--level", "2", "--levels", "1", "3"])
    assert "--level 2 and --levels 1 3 both name the levels to run; give one of them" in capsys.readouterr().err
    assert not (tmp_path / "both").exists()


def test_command_line_chooses_the_time_scheme(tmp_path):
    """--method bdf2 at fixed steps, --rtol for error control (BDF2, with checkpoints of the step control);
    a clear error for the combination that cannot work."""
    fixed = upper_limb.main(["--t-end", "0.0625", "--fiber-contact", "off", "--quiet", "--output",
                             str(tmp_path / "fixed"), "--method", "bdf2"])[-1]
    assert not fixed.interrupted and fixed.times[-1] == pytest.approx(0.0625)
    assert any((tmp_path / "fixed").glob("*checkpoint*"))
    adaptive = upper_limb.main(["--t-end", "0.0625", "--fiber-contact", "off", "--quiet", "--output",
                                str(tmp_path / "adaptive"), "--rtol", "1e-2"])[-1]
    assert not adaptive.interrupted and adaptive.times[-1] == pytest.approx(0.0625)
    assert any((tmp_path / "adaptive").glob("*checkpoint*"))
    assert abs(adaptive.angle_deg[-1] - fixed.angle_deg[-1]) < 1.0
    euler = upper_limb.main(["--t-end", "0.0625", "--fiber-contact", "off", "--quiet", "--output",
                             str(tmp_path / "euler"), "--no-checkpoints"])[-1]
    assert abs(euler.angle_deg[-1] - fixed.angle_deg[-1]) > 1e-6  # the schemes differ: --method was used
    with pytest.raises(SystemExit):
        upper_limb.main(["--quiet", "--output", str(tmp_path / "bad"), "--rtol", "1e-2", "--method", "euler"])


def test_an_error_controlled_run_resumes_exactly(monkeypatch, tmp_path):
    """--rtol with fiber–fiber contact, bodies and wrapping: Ctrl-C in a Newton step after the checkpoint of
    output time 2, then --resume: the same records and final state, bit for bit, as the run never stopped."""
    import skfiber.adaptive
    argv = ["--t-end", "0.125", "--quiet", "--rtol", "1e-2", "--checkpoint-every", "1"]
    whole = upper_limb.main(argv + ["--output", str(tmp_path / "whole")])[-1]
    real, dt = skfiber.adaptive.implicit_step, 0.125 / 4

    def interrupted_after_output_two(model, state, *args, **kwargs):
        if state.t >= 2 * dt:  # (the step that passed output 2 was accepted and checkpointed)
            raise KeyboardInterrupt
        return real(model, state, *args, **kwargs)

    monkeypatch.setattr(skfiber.adaptive, "implicit_step", interrupted_after_output_two)
    first = upper_limb.main(argv + ["--output", str(tmp_path / "split")])[-1]
    assert first.interrupted and len(first.times) == 3   # t = 0 and two output times
    monkeypatch.setattr(skfiber.adaptive, "implicit_step", real)
    resumed = upper_limb.main(argv + ["--output", str(tmp_path / "split"), "--resume"])[-1]
    assert resumed.resumed_from == 2 and not resumed.interrupted
    for name in ("times", "angle_deg", "biceps_origin_force", "triceps_origin_force", "newton_iterations"):
        assert np.array_equal(getattr(resumed, name), getattr(whole, name)), name
    np.testing.assert_array_equal(resumed.final_state.u, whole.final_state.u)
    np.testing.assert_array_equal(resumed.final_state.q, whole.final_state.q)


def test_error_control_runs_through_the_swap_of_closest_points_with_the_smallest_gap(tmp_path):
    """With the paper's gap, adaptive BDF2 at level 1 stops at t ≈ 0.374 s (rtol 1e-2), where two closest
    points of different radius swap and g jumps (docs/theory.md, "Contact"); --rtol takes the smallest gap
    by default, which is continuous, and runs past it."""
    r = upper_limb.main(["--t-end", "0.38", "--quiet", "--output", str(tmp_path), "--rtol", "1e-2"])[-1]
    assert r.fiber_contact and not r.interrupted and r.times[-1] == pytest.approx(0.38)
    assert r.model.contacts[-1].gap == "smallest"
    assert np.all(np.isfinite(r.angle_deg)) and r.angle_deg.max() > 1.0


def test_command_line_chooses_the_contact_gap(tmp_path):
    """--contact-gap picks the gap of fiber–fiber contact; the default is the paper's at fixed steps and the
    smallest with --rtol."""
    runs = {
        "fixed": [],
        "explicit": ["--rtol", "1e-2", "--contact-gap", "closest_point"],
        "smallest": ["--contact-gap", "smallest", "--no-checkpoints"],
    }
    gaps = {}
    for name, extra in runs.items():
        r = upper_limb.main(["--t-end", "0.03125", "--quiet", "--output", str(tmp_path / name), *extra])[-1]
        gaps[name] = r.model.contacts[-1].gap
    assert gaps == {"fixed": "closest_point", "explicit": "closest_point", "smallest": "smallest"}
    with pytest.raises(SystemExit):
        upper_limb.main(["--quiet", "--output", str(tmp_path / "bad"), "--contact-gap", "balls"])


def test_newton_tolerance_of_the_runs(quarter_second):
    """Fixed steps converge Newton to ‖G‖ ≤ 1e-5 × the largest force (the library's default is 1e-9); error
    control keeps 1e-9; bad values are refused naming the value.  Over the first 0.25 s at level 1 the looser
    tolerance takes fewer Newton iterations and moves the elbow angle by at most 1e-4° (over the whole 8 s see
    the module notes)."""
    assert upper_limb.NEWTON_RTOL == 1e-5
    assert upper_limb.newton_options().rtol == 1e-5 and upper_limb.newton_options(adaptive=True).rtol == 1e-9
    assert upper_limb.newton_options(1e-8, adaptive=True).rtol == 1e-8
    for bad in (0, 1, -1e-6, float("nan"), "tight", "1e-6", True):
        with pytest.raises(ValueError, match="newton_rtol must be a number in \\(0, 1\\)"):
            upper_limb.newton_options(bad)
    with pytest.raises(ValueError, match="got 2.0"):
        upper_limb.run(1, t_end=0.0625, progress=False, newton_rtol=2.0)
    loose = quarter_second[0][0]   # main(): a run with checkpoints (skfiber.run.run_simulation)
    direct = upper_limb.run(1, t_end=0.25, progress=False)   # one sf.simulate call
    tight = upper_limb.run(1, t_end=0.25, progress=False, newton_rtol=1e-9)
    assert loose.newton_rtol == direct.newton_rtol == 1e-5 and tight.newton_rtol == 1e-9
    assert loose.newton_iterations.sum() == direct.newton_iterations.sum() < tight.newton_iterations.sum()
    assert np.abs(loose.angle_deg - tight.angle_deg).max() < 1e-4
    assert " newton_rtol=1e-05 " in quarter_second[2].strip().splitlines()[-1]


def test_error_controlled_runs_keep_newton_at_1e_9():
    """Error-controlled runs keep Newton's 1e-9; atol defaults to rtol/100 as on the command line (a purely
    relative tolerance cannot be met from rest)."""
    r = upper_limb.run(1, t_end=0.0625, progress=False, method="bdf2", rtol=1e-2, atol=1e-4, fiber_contact=False)
    assert r.newton_rtol == 1e-9 and r.times[-1] == pytest.approx(0.0625)
    same = upper_limb.run(1, t_end=0.0625, progress=False, method="bdf2", rtol=1e-2, fiber_contact=False)
    assert np.array_equal(same.angle_deg, r.angle_deg) and np.array_equal(same.times, r.times)


def test_command_line_refuses_a_newton_tolerance_of_one_or_more(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        upper_limb.main(["--t-end", "0.0625", "--quiet", "--output", str(tmp_path), "--newton-rtol", "1"])
    assert exc.value.code == 2 and "--newton-rtol must be below 1" in capsys.readouterr().err


def test_command_line_refuses_a_level_named_twice(tmp_path, capsys):
    """--levels 1 1 ran level 1 twice, then failed on the figures (an array compared as a truth value)."""
    with pytest.raises(SystemExit) as exc:
        upper_limb.main(["--t-end", "0.0625", "--quiet", "--output", str(tmp_path / "twice"), "--levels", "1", "1"])
    assert exc.value.code == 2 and "--levels must name different levels, got 1 1" in capsys.readouterr().err
    assert not (tmp_path / "twice").exists()  # (before anything runs)


def test_fixed_step_bdf2_passes_the_start_at_level_2():
    """Fixed-step BDF2 at level 2 presses the biceps bellies together at t ≈ 0.1 s, where Newton's steps end
    below eq. 71's bound.  The fiber–fiber safeguard then takes the part of the step that passes its end check
    (0.23–0.87 of it, measured) instead of the estimate of eqs. 69–73 (0.0002–0.12), with which Newton
    stalled at t = 0.114 s even with the step split 16 times."""
    r = upper_limb.run(2, t_end=0.25, n_steps=16, method="bdf2", progress=False)
    assert not r.interrupted and r.times[-1] == pytest.approx(0.25)
    assert np.all(np.isfinite(r.angle_deg))


@pytest.mark.parametrize("lever", [0.0, -0.1, float("nan")])
def test_study_target_refuses_a_biceps_lever_at_or_behind_the_axis(lever):
    with pytest.raises(ValueError, match="biceps_lever must be a distance > 0 in front of the elbow axis"):
        upper_limb.study_run({"biceps_lever": lever}, t_end=0.01)


def test_the_progress_line_counts_the_start_and_the_rest_as_one_run(capsys):
    """Without checkpoints the start transient's steps (in substeps) and the rest are two solver calls; the
    progress line counts the run's steps over both (level 1 at t_end = 0.25 s: 8 steps, the first 4 the
    start's)."""
    upper_limb.run(1, t_end=0.25, progress=True)
    steps = [tuple(map(int, m)) for m in re.findall(r"step (\d+)/(\d+)", capsys.readouterr().err)]
    assert steps[0] == (1, 8) and steps[-1] == (8, 8)
    assert all(n == 8 for _, n in steps) and [k for k, _ in steps] == sorted({k for k, _ in steps})


def test_fiber_contact_on_the_softening_geometry_is_refused_by_name(capsys, tmp_path):
    """The earlier geometry's triceps start overlapping: --fiber-contact on there is refused before anything
    runs, naming the two options (not the inadmissible start of a library call)."""
    with pytest.raises(SystemExit) as exc:
        upper_limb.main(["--geometry", "softening", "--fiber-contact", "on", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--fiber-contact on does not go with --geometry softening" in err
    assert not (tmp_path / "o").exists()


def test_a_shorter_run_names_its_steps(capsys, tmp_path):
    """--t-end scales the level's steps: the header says how many and how long they are."""
    upper_limb.main(["--t-end", "0.05", "--quiet", "--no-checkpoints", "--output", str(tmp_path)])
    assert "(scaled to t_end = 0.05 s: 2 steps of 0.025 s)" in capsys.readouterr().out


def test_the_wrote_line_lists_the_checkpoint(capsys, tmp_path):
    upper_limb.main(["--t-end", "0.05", "--quiet", "--output", str(tmp_path)])
    wrote = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote ")][0]
    assert str(upper_limb.checkpoint_file(tmp_path, 1)) in wrote


def test_ctrl_c_while_the_files_are_written_says_the_run_is_complete(monkeypatch, capsys, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(upper_limb, "_write_outputs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        upper_limb.main(["--t-end", "0.05", "--quiet", "--output", str(tmp_path)])
    assert "interrupted while writing the output files; the runs are complete" in capsys.readouterr().out
    monkeypatch.undo()
    upper_limb.main(["--t-end", "0.05", "--quiet", "--output", str(tmp_path), "--resume"])
    assert (tmp_path / "angle_level1.csv").exists()


def test_a_resume_onto_another_runs_series_is_refused_before_the_model_is_built(capsys, monkeypatch, tmp_path):
    """Level 1 stops with its checkpoint, level 2 writes its series into the same --vtk folder; resuming level 1
    is refused by the argument checks (exit 2, one line), before any model is built."""
    out, vtk = tmp_path / "out", tmp_path / "vtk"
    options = ["--t-end", "0.1", "--quiet", "--output", str(out), "--vtk", str(vtk)]
    upper_limb.main(options)
    upper_limb.main(options + ["--level", "2", "--t-end", "0.05"])
    monkeypatch.setattr(upper_limb, "build_model", None)  # (anything that builds a model fails loudly)
    with pytest.raises(SystemExit) as exc:
        upper_limb.main(options + ["--resume", "--t-end", "0.2"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "is not the series of the run to resume" in err
