"""VTK output through meshio: fiber polylines, cylinders, .pvd collections, atomic writes."""
import dataclasses
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import meshio
import numpy as np
import pytest
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber import io as sio
from skfiber.demos.hanging_bundle import build_model
from skfiber.run import run_simulation

from conftest import arm_with_fiber

BONES = [((0.0, -0.2, -0.3), (1.0, 0.0, 0.0), 0.05), sio.Cylinder((0.5, 0.5, 0.0), (0.0, 0.0, 0.4), 0.03)]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """Hanging bundle, 5 steps, written with 3 points per element and two bones."""
    model = build_model(1)
    out = tmp_path_factory.mktemp("series")
    result = run_simulation(
        model, t_end=0.05, dt=0.01, out_dir=out, name="hb", checkpoint_every=2,
        progress=False, points_per_element=3, bodies=BONES,
    )
    return model, result, out


def test_fiber_mesh_samples_and_fields():
    model = build_model(1)
    state = sf.simulate(model, t_end=0.03, dt=0.01, progress=False).final_state
    mesh = sio.fiber_mesh(model, state, points_per_element=5)
    n_fibers, ne = len(model.fibers), model.fibers[0].n_elements
    assert mesh.points.shape == (n_fibers * (ne * 5 + 1), 3)
    assert set(sio.FIBER_FIELDS) == set(mesh.point_data)
    lines = mesh.cells_dict["line"]
    assert lines.shape == (n_fibers * ne * 5, 2)
    fid = mesh.point_data["fiber_id"]
    assert np.all(fid[lines[:, 0]] == fid[lines[:, 1]])  # no line joins two fibers
    np.testing.assert_array_equal(mesh.cell_data["fiber_id"][0], fid[lines[:, 0]])
    # fields against their definitions
    pd = mesh.point_data
    np.testing.assert_allclose(pd["radius"], 0.05 / np.sqrt(pd["stretch"]), rtol=1e-14)
    np.testing.assert_allclose(pd["force"], np.pi * 0.05**2 * pd["stretch"] * pd["stress"], rtol=1e-14)
    np.testing.assert_allclose(pd["activation"], np.repeat([0.0, 0.05, 0.1], ne * 5 + 1))
    theta = pd["theta"]
    np.testing.assert_allclose(pd["muscle_fraction"], 16 * (1 - theta) ** 2 * theta**2, atol=1e-14)
    # position − displacement = reference (straight fibers: X = (θ, 0.15 k, 0))
    X = np.column_stack([theta, 0.15 * fid, np.zeros_like(theta)])
    np.testing.assert_allclose(mesh.points - pd["displacement"], X, atol=1e-14)
    assert np.max(np.abs(pd["velocity"][:, 2])) > 0.01  # falling
    # same samples as fiber_fields
    ff = sf.fiber_fields(model, state, 1, points_per_element=5)
    sel = fid == 1
    np.testing.assert_array_equal(mesh.points[sel], ff.position.T)
    np.testing.assert_array_equal(pd["stress"][sel], ff.stress)


def test_extra_fields_hook():
    model = build_model(1)

    def contact(model, state, k, theta):
        return {"contact_force": np.full(theta.size, float(k))}

    mesh = sio.fiber_mesh(model, model.initial_state(), extra_fields=contact)
    np.testing.assert_array_equal(mesh.point_data["contact_force"], mesh.point_data["fiber_id"])
    with pytest.raises(ValueError, match="clashes"):
        sio.fiber_mesh(model, model.initial_state(), extra_fields=lambda m, s, k, th: {"radius": th})
    with pytest.raises(ValueError, match="shape"):
        sio.fiber_mesh(model, model.initial_state(), extra_fields=lambda m, s, k, th: {"x": th[:-1]})
    with pytest.raises(TypeError, match="extra_fields must return a dict of arrays .*, got NoneType"):
        sio.fiber_mesh(model, model.initial_state(), extra_fields=lambda m, s, k, th: None)


def test_a_series_writes_the_units_of_extra_fields(tmp_path, capsys):
    """VTKSeries(extra_units=…) writes an extra array's unit beside the built-in ones; a unit that is not
    printable ASCII, or one for a built-in field, is refused when the series is made; ``skfiber view --info``
    shows the unit the file states."""
    model = build_model(1)

    def tension(model, state, k, theta):
        return {"tension": np.full(theta.size, 2.0)}

    series = sio.VTKSeries(tmp_path, model, name="x", extra_fields=tension, extra_units={"tension": "N"})
    files = series.write(model.initial_state(), 0)
    mesh = meshio.read(files[0])
    assert "units: tension [N]" in mesh.field_data and "units: force [N]" in mesh.field_data
    plain = sio.VTKSeries(tmp_path / "plain", model, name="x", extra_fields=tension)
    assert not any("tension" in name for name in meshio.read(plain.write(model.initial_state(), 0)[0]).field_data)
    pytest.importorskip("pyvista")
    from skfiber import cli
    assert cli.main(["view", str(series.pvd_path), "--info"]) == 0
    listed = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("tension")]
    assert listed and listed[0][:2] == ["tension", "[N]"] and "does not say what it holds" in " ".join(listed[0])
    # a (unit, meaning) pair: the file states both, and --info shows the meaning
    meant = sio.VTKSeries(tmp_path / "meant", model, name="x", extra_fields=tension,
                          extra_units={"tension": ("N", "the cable's pull [sampled]")})
    mesh = meshio.read(meant.write(model.initial_state(), 0)[0])
    assert "units: tension [N] the cable's pull [sampled]" in mesh.field_data
    assert cli.main(["view", str(meant.pvd_path), "--info"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("tension")]
    assert listed and listed[0].split()[:2] == ["tension", "[N]"] and listed[0].endswith("the cable's pull [sampled]")
    with pytest.raises(ValueError, match=r"the unit of 'tension' must be printable ASCII without brackets, got 'N\]'"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"tension": ("N]", "pull")})
    with pytest.raises(ValueError, match="the meaning of 'tension' must be one line"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"tension": ("N", "pull\nmore")})
    with pytest.raises(ValueError, match="to units or to .unit, meaning. pairs.*got 3"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"tension": 3})
    with pytest.raises(ValueError, match="printable ASCII .* the unit of 'tension' .* got 'N.n'"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"tension": "N\n"})
    with pytest.raises(ValueError, match="'radius' is a built-in field, whose unit is 'm'"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"radius": "mm"})
    with pytest.raises(ValueError, match="give extra_fields too"):
        sio.VTKSeries(tmp_path, model, name="y", extra_units={"tension": "N"})
    with pytest.raises(ValueError, match="the unit of 'tension' must be printable ASCII .* got ' '"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"tension": " "})
    with pytest.raises(ValueError, match="an array name with a unit must be printable ASCII .* got 'Spannung µ'"):
        sio.VTKSeries(tmp_path, model, name="y", extra_fields=tension, extra_units={"Spannung µ": "N"})
    typo = sio.VTKSeries(tmp_path / "typo", model, name="x", extra_fields=tension, extra_units={"tensoin": "N"})
    with pytest.warns(UserWarning, match="extra_units names 'tensoin', which extra_fields does not return "
                                         r"\(it returns tension\): a typo\?"):
        typo.write(model.initial_state(), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (said once)
        typo.write(model.initial_state(), 1)


def test_files_read_back_with_meshio(series):
    model, result, out = series
    entries = sio.read_pvd(out / "hb.pvd")
    times = sorted({e.time for e in entries})
    assert times == [n * 0.01 for n in range(6)]  # exactly t_start + n dt
    assert {e.part for e in entries} == {0, 1}
    root = ET.parse(out / "hb.pvd").getroot()
    assert root.tag == "VTKFile" and root.get("type") == "Collection"
    n_points = sum(f.n_elements * 3 + 1 for f in model.fibers)
    for e in entries:
        mesh = meshio.read(out / e.file)
        if e.part == 0:
            assert mesh.points.shape == (n_points, 3)
            assert set(sio.FIBER_FIELDS) <= set(mesh.point_data)
            assert mesh.cells_dict["line"].shape == (n_points - len(model.fibers), 2)
            # every built-in array says its unit in the file's field data
            units = {f"units: {name} [{unit}]" for name, (unit, _) in sio.FIBER_FIELDS.items()}
            assert units <= set(mesh.field_data) and "units: force [N]" in mesh.field_data
        else:
            assert e.file == "hb_bodies.vtu"  # fixed bodies are written once
            assert mesh.cells_dict["triangle"].shape == (2 * 4 * 32, 3)
            assert sorted(set(mesh.point_data["body_id"])) == [0, 1]
            assert set(mesh.field_data) == {"units: body_id [1]"}
    last = meshio.read(out / "hb_fibers_000005.vtu")
    ref = sio.fiber_mesh(model, result.final_state, points_per_element=3)
    np.testing.assert_array_equal(last.points, ref.points)  # binary float64: exact
    for name in sio.FIBER_FIELDS:
        np.testing.assert_array_equal(last.point_data[name], ref.point_data[name])
    assert not list(out.glob(".*tmp*")), "temporary files left behind"


def test_pvd_read_with_pyvista(series):
    pv = pytest.importorskip("pyvista", reason="pyvista (extra 'viz') reads the .pvd as ParaView would")
    model, result, out = series
    reader = pv.get_reader(str(out / "hb.pvd"))
    assert isinstance(reader, pv.PVDReader)
    np.testing.assert_array_equal(reader.time_values, [n * 0.01 for n in range(6)])
    n_points = sum(f.n_elements * 3 + 1 for f in model.fibers)
    for i in (0, 5):
        reader.set_active_time_point(i)
        blocks = reader.read()
        assert len(blocks) == 2
        fibers, bodies = blocks[0], blocks[1]
        assert fibers.n_points == n_points
        assert set(sio.FIBER_FIELDS) <= set(fibers.point_data.keys())
        assert "body_id" in bodies.point_data
    ref = sio.fiber_mesh(model, result.final_state, points_per_element=3)
    np.testing.assert_array_equal(np.asarray(fibers.point_data["radius"]), ref.point_data["radius"])


def test_cylinder_mesh_is_closed_and_outward():
    mesh = sio.cylinder_mesh([((1.0, 2.0, 3.0), (0.0, 0.3, 0.4), 0.2)], resolution=64)
    p, t = mesh.points, mesh.cells_dict["triangle"]
    # divergence theorem: V = Σ (p0 · (p1 × p2)) / 6 > 0 for outward normals
    volume = np.sum(np.einsum("ij,ij->i", p[t[:, 0]], np.cross(p[t[:, 1]], p[t[:, 2]]))) / 6
    exact = 0.5 * 64 * np.sin(2 * np.pi / 64) * 0.2**2 * 0.5  # inscribed polygon × length
    assert volume == pytest.approx(exact, rel=1e-12)
    edges = np.sort(np.vstack([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2)  # closed surface
    with pytest.raises(ValueError, match="radius"):
        sio.cylinder_mesh([((0, 0, 0), (1, 0, 0), -1.0)])
    with pytest.raises(TypeError, match="start, axis, radius"):
        sio.cylinder_mesh([((0, 0, 0), (1, 0, 0))])
    with pytest.raises(ValueError, match="3 coordinates"):
        sio.cylinder_mesh([(0, 0, 0)])


def test_levers_run_from_the_closest_point_of_the_axis_to_each_attachment():
    """A cylinder's attachment points are drawn as line cells from the closest point of its axis segment (the
    axis' end for a point beyond it), with the body's body_id; cylinders without any add no line block."""
    arm = sio.Cylinder((0.0, 0.0, 0.0), (0.0, 0.0, -0.4), 0.03, "arm",
                       attachment_points=[(0.1, 0.0, -0.1), (0.0, 0.2, -0.6), (0.0, -0.1, 0.1)])
    mesh = sio.cylinder_mesh([((1.0, 0.0, 0.0), (0.0, 0.0, 0.5), 0.02), arm], resolution=8)
    lines = mesh.points[mesh.cells_dict["line"]]
    np.testing.assert_allclose(lines[:, 0], [(0, 0, -0.1), (0, 0, -0.4), (0, 0, 0)], atol=1e-15)
    np.testing.assert_allclose(lines[:, 1], arm.attachment_points, atol=0)
    assert list(mesh.cell_data_dict["body_id"]["line"]) == [1, 1, 1]
    assert mesh.cells_dict["triangle"].shape == (2 * 4 * 8, 3)
    assert "line" not in sio.cylinder_mesh([BONES[0]]).cells_dict
    for bad in ([(0.0, 0.0)], [(0.0, np.nan, 0.0)], [(0, 0, 0), (1, 2)], "abc", [(1j, 0, 0)]):
        with pytest.raises(ValueError, match="attachment_points must be finite points of 3 coordinates"):
            sio.Cylinder((0, 0, 0), (0, 0, 1), 0.1, attachment_points=bad)


def test_levers_end_at_the_fiber_ends_on_every_body_of_a_chain(tmp_path):
    """Three bodies in a chain: a turning upper arm with two attachments, a middle one with none, and a lower
    one turned by a prescribed rotation in t with two; a fiber also tied to the ground.  At the run's end each
    lever ends at its fiber's end and starts at the closest point of its own body's axis, and the ground
    attachment has none."""
    from skfiber.coupling import body_cylinders
    from skfiber.rigid import Body, Prescribed, Revolute, RigidSystem

    system = RigidSystem(gravity=(0.0, 0.0, -9.81))
    system.add_body(Body("upper", start=(0, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0),
                    joint=Revolute(axis=(0, 1, 0)))
    system.add_body(Body("mid", start=(0.3, 0, 0), axis=(0.3, 0, 0), radius=0.02, mass=1.0), parent="upper",
                    joint=Revolute(axis=(0, 1, 0), point=(0.3, 0, 0)))

    def turn(t):
        c, s = np.cos(2.0 * t), np.sin(2.0 * t)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    system.add_body(Body("lower", start=(0.6, 0, 0), axis=(0.2, 0, 0), radius=0.02, mass=1.0), parent="mid",
                    joint=Prescribed(rotation=turn, center=(0.6, 0, 0)))
    law = sf.paper_law(sigma0=100.0)
    a = sf.Fiber.straight((0.0, 0, 0.1), (0.2, 0, 0.05), n_elements=2, law=law)
    b = sf.Fiber.straight((0.5, 0.0, 0.2), (0.7, 0.05, 0.04), n_elements=2, law=law)
    c = sf.Fiber.straight((0.1, 0.0, -0.05), (0.75, -0.03, -0.06), n_elements=3, law=law)
    model = sf.Model([a, b, c], rigid=system)
    model.fix(a, "start"); model.attach(a, "end", "upper")
    model.attach(b, "start", "ground"); model.attach(b, "end", "lower")
    model.attach(c, "start", "upper"); model.attach(c, "end", "lower")
    state = run_simulation(model, t_end=0.05, dt=0.01, out_dir=tmp_path, progress=False).final_state
    cylinders = body_cylinders(model)(state)
    assert [len(cyl.attachment_points) for cyl in cylinders] == [2, 0, 2]
    fibers = sio.fiber_mesh(model, state, points_per_element=2)
    ends = [fibers.points[fibers.point_data["fiber_id"] == k][[0, -1]] for k in range(3)]
    expected = {"upper": [ends[0][1], ends[2][0]], "lower": [ends[1][1], ends[2][1]]}
    files = [e.file for e in sio.read_pvd(tmp_path / "result.pvd") if e.part == 1]
    bones = meshio.read(tmp_path / files[-1])
    levers, owners = bones.points[bones.cells_dict["line"]], bones.cell_data_dict["body_id"]["line"]
    assert list(owners) == [0, 0, 2, 2]
    for (foot, tip), owner in zip(levers, owners):
        cyl = cylinders[owner]
        assert min(np.linalg.norm(tip - end) for end in expected[cyl.name]) < 1e-12
        s = np.clip(np.dot(tip - cyl.start, cyl.axis) / np.dot(cyl.axis, cyl.axis), 0.0, 1.0)
        np.testing.assert_allclose(foot, cyl.start + s * cyl.axis, atol=1e-14)
    assert np.linalg.norm(levers[2:, 1] - [[0.7, 0.05, 0.04], [0.75, -0.03, -0.06]]) > 1e-3  # (moved, with t)


def test_a_step_is_listed_at_the_time_given(tmp_path):
    """VTKSeries.write(..., time=…) lists the step at that time (a test's own clock), the state's t otherwise;
    a time that is not a finite number is refused."""
    model = build_model(1)
    state = model.initial_state()
    series = sio.VTKSeries(tmp_path, model, name="clock")
    series.write(dataclasses.replace(state, t=0.8), 0, time=0.0)
    series.write(dataclasses.replace(state, t=0.8 + 0.01), 1)
    assert sorted({e.time for e in sio.read_pvd(tmp_path / "clock.pvd")}) == [0.0, 0.81]
    # another step listed at a time already listed replaces the step there, and its file goes
    series.write(dataclasses.replace(state, t=0.804), 2, time=0.81)
    assert [(e.time, e.file) for e in sio.read_pvd(tmp_path / "clock.pvd")] == [
        (0.0, "clock_fibers_000000.vtu"), (0.81, "clock_fibers_000002.vtu")]
    assert sorted(p.name for p in tmp_path.glob("*.vtu")) == ["clock_fibers_000000.vtu", "clock_fibers_000002.vtu"]
    for bad in (float("nan"), True, "1"):
        with pytest.raises(ValueError, match="time must be a finite number"):
            series.write(state, 2, time=bad)


def test_moving_bodies_written_every_step(tmp_path):
    model = build_model(1)
    bodies = lambda state: [((0, 0, -0.2 - state.t), (1, 0, 0), 0.05)]  # noqa: E731
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, bodies=bodies, progress=False)
    files = [e.file for e in sio.read_pvd(tmp_path / "result.pvd") if e.part == 1]
    assert files == [f"result_bodies_{n:06d}.vtu" for n in range(3)]
    z = meshio.read(tmp_path / files[-1]).points[:, 2]
    assert z.min() == pytest.approx(-0.22 - 0.05)


def test_a_model_s_bones_are_written_by_default(tmp_path):
    """run_simulation on a model with a rigid system writes its bodies (the bones, at each step's q) without
    being asked."""

    model, _ = arm_with_fiber()
    result = run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, progress=False)
    files = [e.file for e in sio.read_pvd(tmp_path / "result.pvd") if e.part == 1]
    assert files == [f"result_bodies_{n:06d}.vtu" for n in range(3)]
    bones = meshio.read(tmp_path / files[-1])
    assert bones.points[:, 0].max() == pytest.approx(0.3, abs=0.05)
    # the lever of the attachment: from the arm's axis to the fiber's end where the arm has turned it
    state = result.final_state
    assert abs(state.q[0]) > 1e-4  # (the arm has turned)
    lever = bones.points[bones.cells_dict["line"]]
    assert lever.shape == (1, 2, 3) and list(bones.cell_data_dict["body_id"]["line"]) == [0]
    x_end = sio.fiber_mesh(model, state, points_per_element=2).points[-1]
    np.testing.assert_allclose(lever[0, 1], x_end, atol=1e-12)
    c, s = np.cos(state.q[0]), np.sin(state.q[0])
    axis = np.array([0.3 * c, 0.0, -0.3 * s])  # the arm's axis turned about y by q
    foot = lever[0, 0]
    assert abs(np.dot(lever[0, 1] - foot, axis)) < 1e-12 and np.linalg.norm(np.cross(foot, axis)) < 1e-12


def test_atomic_write_keeps_old_file(tmp_path, monkeypatch):
    model = build_model(1)
    path = tmp_path / "a.vtu"
    sio.write_vtu(path, sio.fiber_mesh(model, model.initial_state()))
    before = path.read_bytes()

    def broken(filename, *args, **kwargs):
        with open(filename, "w") as fh:
            fh.write("<half a file")
        raise OSError("disk full")

    monkeypatch.setattr(meshio, "write", broken)
    with pytest.raises(OSError, match="disk full"):
        sio.write_vtu(path, sio.fiber_mesh(model, model.initial_state()))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.vtu"]


def test_fresh_series_replaces_old_one(tmp_path):
    model = build_model(1)
    run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path, progress=False)
    run_simulation(model, t_end=0.01, dt=0.01, out_dir=tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.glob("result_*.vtu")) == ["result_fibers_000000.vtu", "result_fibers_000001.vtu"]
    assert len(sio.read_pvd(tmp_path / "result.pvd")) == 2


def test_errors(tmp_path):
    model = build_model(1)
    with pytest.raises(ValueError, match="points_per_element"):
        sio.fiber_mesh(model, model.initial_state(), points_per_element=0)
    with pytest.raises(ValueError, match="plain file name"):
        sio.VTKSeries(tmp_path, model, name="a/b")
    with pytest.raises(FileNotFoundError, match="no such .pvd"):
        sio.read_pvd(tmp_path / "missing.pvd")
    (tmp_path / "bad.pvd").write_text("<VTKFile type='UnstructuredGrid'/>")
    with pytest.raises(ValueError, match="not a ParaView collection"):
        sio.read_pvd(tmp_path / "bad.pvd")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        sio.VTKSeries(tmp_path / "file", model)


def test_units_must_be_printable_ascii(tmp_path):
    """The units go into XML array names: a control character would make a file meshio refuses."""
    f = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.05)
    model = sf.Model([f])
    mesh = sio.fiber_mesh(model, model.initial_state())
    with pytest.raises(ValueError, match="printable ASCII"):
        sio.write_vtu(tmp_path / "x.vtu", mesh, units={"force": "N\x01"})
    sio.write_vtu(tmp_path / "y.vtu", mesh, units={"force": "N & <kN>"})  # escaped, read back as written
    assert "units: force [N & <kN>]" in meshio.read(tmp_path / "y.vtu").field_data


def test_resuming_a_series_whose_pvd_is_missing_says_so(tmp_path):
    model = build_model(1)
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path, progress=False, checkpoint_every=1)
    (tmp_path / "result.pvd").unlink()
    with pytest.warns(UserWarning, match=r"result.pvd is missing: the resumed series lists only the steps after t = 0.02 s"):
        run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path, progress=False, checkpoint_every=1, resume=True)


def test_a_run_resumes_only_with_its_time_scheme(tmp_path):
    """A checkpoint of a backward-Euler run does not continue as BDF2 (nor the other way round): the states
    would differ from either run's."""
    model = build_model(1)
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path / "euler", progress=False, checkpoint_every=1)
    with pytest.raises(ValueError, match="time_scheme='bdf2'"):
        run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path / "euler", progress=False, checkpoint_every=1,
                       resume=True, method="bdf2")
    run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp_path / "bdf2", progress=False, checkpoint_every=1,
                   method="bdf2")
    with pytest.raises(ValueError, match="time_scheme='bdf2'"):
        run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path / "bdf2", progress=False, checkpoint_every=1,
                       resume=True)
    run_simulation(model, t_end=0.04, dt=0.01, out_dir=tmp_path / "bdf2", progress=False, checkpoint_every=1,
                   resume=True, method="bdf2")


def test_what_a_checkpoint_records_of_the_time_scheme():
    """Backward Euler records nothing (as checkpoints always did), fixed-step BDF2 records it, and an
    error-controlled run (BDF2, its tolerances recorded) or options naming the method already do not add it."""
    from skfiber.run import checkpoint_options

    assert "time_scheme" not in checkpoint_options({"level": 1})
    assert checkpoint_options({"level": 1}, method="bdf2")["time_scheme"] == "bdf2"
    assert "time_scheme" not in checkpoint_options({}, rtol=1e-3, atol=1e-5, t_end=1.0, method="bdf2")
    assert "time_scheme" not in checkpoint_options({"method": "bdf2"}, method="bdf2")
    with pytest.raises(ValueError, match="may not name 'time_scheme'"):
        checkpoint_options({"time_scheme": "bdf2"})


def test_a_rigid_system_without_bodies_writes_no_bones(tmp_path):
    fiber = sf.Fiber.straight((0.0, 0, 0), (0.3, 0, 0), n_elements=2, law=sf.paper_law(sigma0=100.0))
    model = sf.Model([fiber], rigid=sf.rigid.RigidSystem())
    model.fix(fiber, "start"); model.fix(fiber, "end")
    run_simulation(model, t_end=0.01, dt=0.01, out_dir=tmp_path, progress=False)
    assert {e.part for e in sio.read_pvd(tmp_path / "result.pvd")} == {0}


def test_bodies_empty_means_none(tmp_path):
    model = build_model(1)
    run_simulation(model, t_end=0.01, dt=0.01, out_dir=tmp_path, progress=False, bodies=())
    assert {e.part for e in sio.read_pvd(tmp_path / "result.pvd")} == {0}


def test_stretch_rate_and_stress_of_a_fiber_not_1_m_long():
    """A fiber of 0.3 m stretched uniformly about the origin, x = (1 + c t) X, so u = c t X and v = c X (Hermite
    DOFs, positions and slopes alike): λ = 1 + c t and λ̇ = c whatever its length, and the stress is the law's
    at (λ, λ̇) (the field tests before used fibers 1 m long, where a λ̇ not divided by |A₁| was right by chance)."""
    law = sf.passive_kelvin_voigt(mu_muscle=2e4, mu_tendon=2e4, eta_muscle=1e3, eta_tendon=1e3)
    length, c, t = 0.3, 0.5, 0.2
    fiber = sf.Fiber.straight((0.1, 0.2, 0), (0.1 + length * 0.6, 0.2 + length * 0.8, 0), n_elements=4, law=law)
    model = sf.Model([fiber])
    X = model.discretization.reference_dofs
    state = sf.State(t, c * t * X, c * X)
    fields = sf.fiber_fields(model, state, 0)
    np.testing.assert_allclose(fields.stretch, 1 + c * t, rtol=1e-13)
    np.testing.assert_allclose(fields.stretch_rate, c, rtol=1e-13)
    expected = law(sf.MaterialPoint(np.full(3, 1 + c * t), np.full(3, c), theta=0.5)).stress
    np.testing.assert_allclose(fields.stress, expected[0], rtol=1e-12)
    mesh = sio.fiber_mesh(model, state)
    np.testing.assert_allclose(mesh.point_data["stretch_rate"], c, rtol=1e-13)


def test_units_written_are_those_the_page_states():
    """docs/paraview.md's tables of arrays and units against the units every file states (FIBER_FIELDS,
    CONTACT_FIELDS): a wrong unit in either shows (a dimensionless – is the code's 1)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "paraview.md").read_text(encoding="utf-8")
    stated = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            stated[cells[0].strip("`")] = "1" if cells[1] == "–" else cells[1]
    written = {name: unit for name, (unit, _) in sio.ALL_FIBER_FIELDS.items()}
    assert stated == written


def test_writing_a_time_again_replaces_its_entries(tmp_path):
    """VTKSeries.write at a time already written lists the new files only (ParaView would show both)."""
    model = build_model(1)
    state = model.initial_state()
    series = sio.VTKSeries(tmp_path, model, bodies=[((0, 0, -1), (1, 0, 0), 0.05)])
    series.write(state, 0)
    series.write(state, 1)
    entries = sio.read_pvd(tmp_path / "result.pvd")
    assert [(e.time, e.part) for e in entries] == [(0.0, 0), (0.0, 1)]
    assert entries[0].file.endswith("_000001.vtu")


def test_the_fingerprint_tells_apart_what_a_resume_must_not_change():
    """Each of: the geometry, the end conditions, the radius, the density, the muscle fraction, the law, the
    activation, a load, a term: a model that differs in one of them has another fingerprint (a resume of it is
    refused); the same model built again has the same."""
    def model(**change):
        options = dict(radius=0.02, density=1000.0, muscle_fraction=1.0, activation=0.3, law=sf.paper_law(),
                       end=(1.0, 0, 0), gravity=True, fixed="end", term=False) | change
        fiber = sf.Fiber.straight((0, 0, 0), options["end"], n_elements=4, radius=options["radius"],
                                  density=options["density"], muscle_fraction=options["muscle_fraction"],
                                  activation=options["activation"], law=options["law"])
        m = sf.Model([fiber])
        m.fix(fiber, "start")
        if options["fixed"]:
            m.fix(fiber, options["fixed"])
        if options["gravity"]:
            m.add_gravity()
        if options["term"]:
            m.add_term(LinearForm(lambda v, w: 2.0 * dot(w.xdot, v) * w.J), name="drag")
        return sio.model_fingerprint(m)

    base = model()
    assert model() == base
    changes = dict(end=(1.1, 0, 0), radius=0.03, density=1100.0, muscle_fraction=0.5, activation=0.8,
                   law=sf.paper_law(sigma0=50.0), gravity=False, fixed=None, term=True)
    prints = {name: model(**{name: value}) for name, value in changes.items()}
    assert all(p != base for p in prints.values()), [n for n, p in prints.items() if p == base]
    assert len(set(prints.values())) == len(prints)


def _taut_string(n=4):
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n)
    model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    return model, fiber


def test_dropping_a_step_keeps_the_static_bodies_file_the_other_steps_list(tmp_path):
    """A step dropped from a series with static bodies (a resume after a Ctrl-C off the output grid) removes its
    own files only: the bodies file the other steps list stays."""
    model, _ = _taut_string()
    series = sio.VTKSeries(tmp_path, model, name="s", bodies=[((0, 0, -0.2), (1, 0, 0), 0.05)])
    state = model.initial_state()
    for k in range(3):
        state.t = 0.1 * k
        series.write(state, k)
    series.drop_time(0.2)
    entries = sio.read_pvd(tmp_path / "s.pvd")
    assert sorted({e.time for e in entries}) == [0.0, 0.1]
    assert all((tmp_path / e.file).is_file() for e in entries)


def test_resuming_a_series_at_time_zero_keeps_step_zero(tmp_path):
    """A series resumed at t = 0 (a checkpoint before the first output time) keeps step 0 and drops what came
    after it."""
    model, _ = _taut_string()
    series = sio.VTKSeries(tmp_path, model, name="s")
    state = model.initial_state()
    series.write(state, 0)
    state.t = 0.1
    series.write(state, 1)
    again = sio.VTKSeries(tmp_path, model, name="s", resume_time=0.0)
    assert again.times == [0.0]
    assert (tmp_path / "s_fibers_000000.vtu").is_file() and not (tmp_path / "s_fibers_000001.vtu").exists()


def test_pvd_times_are_written_exactly(tmp_path):
    """The .pvd's times read back bit for bit (as documented), not rounded to six digits."""
    times = [0.0, 1 / 3, 0.1 + 1e-9, 12345.678901234]
    sio.write_pvd(tmp_path / "a.pvd", [sio.PvdEntry(t, 0, f"f{k}.vtu") for k, t in enumerate(times)])
    assert [e.time for e in sio.read_pvd(tmp_path / "a.pvd")] == times


def test_fiber_tangent_is_the_unit_derivative_of_the_current_centerline():
    """The output's tangent is x'/|x'| of the deformed centerline (central differences of the position), not of
    the reference."""
    model, fiber = _taut_string(n=4)
    state = model.initial_state()
    state.u[:] = 0.05 * np.random.default_rng(3).standard_normal(state.u.size)
    theta = np.array([0.2, 0.45, 0.7])
    eps = 1e-6
    f = sf.fiber_fields(model, state, fiber, theta=theta)
    plus = sf.fiber_fields(model, state, fiber, theta=theta + eps).position
    minus = sf.fiber_fields(model, state, fiber, theta=theta - eps).position
    d = plus - minus
    np.testing.assert_allclose(f.tangent, d / np.linalg.norm(d, axis=0), atol=1e-6)


def test_fiber_activation_and_stress_are_those_at_the_states_time():
    """Activation and stress of the output are those at the state's time (α(t) = min(t, 1) at t = 0.5)."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law(), activation=lambda t: min(t, 1.0))
    model = sf.Model([fiber])
    state = model.initial_state()
    state.t = 0.5
    f = sf.fiber_fields(model, state, fiber, theta=np.array([0.5]))
    assert f.activation == 0.5
    expected = fiber.law(sf.MaterialPoint(np.ones(1), np.zeros(1), theta=np.array([0.5]), t=0.5,
                                          muscle_fraction=f.muscle_fraction, activation=0.5)).stress
    np.testing.assert_allclose(f.stress, expected)


def test_a_folder_in_the_place_of_the_pvd_is_named(tmp_path):
    (tmp_path / "x.pvd").mkdir()
    with pytest.raises(IsADirectoryError, match=r"x\.pvd is a folder, where the series writes its \.pvd file"):
        sio.VTKSeries(tmp_path, build_model(1), name="x")
