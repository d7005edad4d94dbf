"""The upper-limb demo (paper §5.4) at small size."""
import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import upper_limb


def test_upper_limb_first_half_second(tmp_path, capsys):
    results = upper_limb.main(["--t-end", "0.5", "--quiet", "--output", str(tmp_path), "--vtk", str(tmp_path / "vtk")])
    r = results[0]
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("summary: level=1 dofs=542 steps=16 ")
    assert r.dofs == 542  # the paper's count for level 1 (Table 5)
    assert r.times[-1] == 0.5 and len(r.times) == 17
    # the biceps (α ≈ 0.13 at t = 0.5 s) flexes the elbow; the triceps then presses on the wrapping cylinder
    assert 30.0 < r.angle_deg[-1] < 60.0
    assert np.all(np.diff(r.angle_deg[:5]) > 0)
    assert r.max_contacts > 0
    # fibers pull on the upper arm (kN: Table 4's Smax is large); the biceps harder than the stretched triceps
    assert np.all(r.biceps_origin_force > 0) and r.biceps_origin_force[-1] > 2 * r.triceps_origin_force[-1] > 1e3
    for name in ("angle_level1.csv", "axial_force_level1.csv", "angle.png", "forces.png", "axial_force.png"):
        assert (tmp_path / name).stat().st_size > 0
    pvd = (tmp_path / "vtk" / "upper_limb.pvd").read_text()
    assert pvd.count("upper_limb_fibers_") == 5 and pvd.count("upper_limb_bodies_") == 5  # steps 0, 4, 8, 12, 16
    data = np.loadtxt(tmp_path / "angle_level1.csv", delimiter=",", skiprows=1)
    assert data.shape == (17, 4) and np.allclose(data[:, 1], r.angle_deg, rtol=1e-8)
    # a 0.5 s run is not compared with the paper's 8 s timing
    assert not r.complete and "—" in upper_limb.report(results).splitlines()[1]


def test_out_puts_every_file_in_one_folder(tmp_path, capsys):
    """'skfiber run upper-limb --out DIR' passes --out: CSV/PNG files and the VTK series all land in DIR
    (it once stood silently for --output, an abbreviation, and no VTK series was written)."""
    from skfiber import cli

    out = tmp_path / "res"
    assert cli.main(["run", "upper-limb", "--out", str(out), "--t-end", "0.125", "--quiet"]) == 0
    assert (out / "upper_limb.pvd").read_text().count("upper_limb_fibers_") == 2  # steps 0 and 4
    assert (out / "angle_level1.csv").is_file()
    assert f"results: {out / 'upper_limb.pvd'}" in capsys.readouterr().err
    for other in ("--output", "--vtk"):   # one folder for all, or the two folders: not both
        with pytest.raises(SystemExit):
            upper_limb.main(["--out", str(out), other, str(tmp_path / "x"), "--quiet"])
        assert "give either --out or --output/--vtk" in capsys.readouterr().err
    with pytest.raises(SystemExit):        # no abbreviations: '--outp' is not '--output'
        upper_limb.main(["--outp", str(tmp_path / "x")])
    assert "unrecognized arguments: --outp" in capsys.readouterr().err


def test_interrupted_run_is_reported_as_partial(monkeypatch, capsys, tmp_path):
    """Ctrl-C during the run: the steps done are written, marked as partial, and no further level runs."""
    real = sf.simulate

    def interrupted_after_three_steps(model, **kwargs):
        if "callback" not in kwargs:  # the demo's throw-away warm-up step
            return real(model, **kwargs)

        def callback(state, info):
            kwargs["callback"](state, info)
            if info.step == 3:
                raise KeyboardInterrupt

        return real(model, **{**kwargs, "callback": callback})

    monkeypatch.setattr(sf, "simulate", interrupted_after_three_steps)
    with pytest.warns(UserWarning, match="simulation interrupted"):
        results = upper_limb.main(["--levels", "1", "2", "--t-end", "0.5", "--quiet", "--output", str(tmp_path)])
    assert len(results) == 1 and results[0].interrupted and len(results[0].newton_iterations) == 3
    out = capsys.readouterr().out
    assert "level 1 was interrupted at t = 0.09375 s (3 of 16 steps): partial results" in out
    assert out.strip().splitlines()[-1].endswith("interrupted_at_s=0.09375")
    assert (tmp_path / "angle_level1.csv").exists()


def test_reference_configuration_is_admissible():
    """At q = 0 every fiber end sits on its body point and the triceps bulge rests lightly on the wrapping cylinder."""
    model = upper_limb.build_model(4)
    state = model.initial_state()
    forces = model.attachment_forces(state)
    assert set(forces) == {f"{f.name}.{end}" for f in model.fibers for end in ("origin", "insertion")}
    ev = model.evaluate(state.u, state.v, state.a, 0.0, c_v=0.0, c_a=0.0)
    assert np.isfinite(ev.residual).all()
    contact = model.contacts[0].evaluate(model, state.u, 0.0)
    assert contact.n_active > 0 and contact.admissibility.min() > 0.5


def test_forearm_hangs_nearly_downward_at_rest():
    """Paper §5.4: at t = 0 the model is close to equilibrium with the forearm hanging down —
    the static equilibrium with all bodies and fibers (solve_static with rigid bodies)."""
    model = upper_limb.build_model(8)
    result = sf.solve_static(model, t=0.0)
    angle = np.degrees(result.state.q[0])
    assert abs(angle) < 1.0 and angle != 0.0  # 0.21° with these attachment points


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
        model = upper_limb.build_model(8)
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
    model = upper_limb.build_model(8)
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
