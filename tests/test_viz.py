"""PyVista views: off-screen screenshots, tube radius, movies (needs the 'viz' extra)."""
import subprocess
import sys

import numpy as np
import pytest

pv = pytest.importorskip("pyvista", reason="rendering tests need the viz extra: pip install '.[viz]'")
from scipy.spatial import cKDTree  # noqa: E402

import skfiber as sf  # noqa: E402
from skfiber import viz  # noqa: E402
from skfiber.demos.hanging_bundle import build_model  # noqa: E402
from skfiber.run import run_simulation  # noqa: E402
from conftest import arm_with_fiber  # noqa: E402

BONE = ((0.0, -0.25, -0.3), (1.0, 0.0, 0.0), 0.04)
SMALL = (320, 240)


@pytest.fixture(scope="module")
def pvd(tmp_path_factory):
    out = tmp_path_factory.mktemp("viz")
    run_simulation(build_model(1), t_end=0.2, dt=0.02, out_dir=out, progress=False, bodies=[BONE])
    return out / "result.pvd"


def _read_png(path):
    import imageio.v2 as imageio

    return np.asarray(imageio.imread(path))[..., :3]


def test_screenshot_is_not_blank(pvd, tmp_path):
    png = viz.screenshot(pvd, tmp_path / "shot.png", field="stress", window_size=SMALL)
    img = _read_png(png)
    assert img.shape == (SMALL[1], SMALL[0], 3)
    background = np.all(img >= 250, axis=-1)  # white background
    assert 0.05 < 1 - background.mean() < 0.9, "the image is (nearly) blank or full"
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50  # shading and a colormap, not one color


def test_tube_radius_matches_data(pvd):
    plotter = viz.scene(pvd, field="stretch", time=0.1, off_screen=True, window_size=SMALL)
    try:
        tube = plotter.actors["fibers"].mapper.dataset
        fibers = viz.Series(pvd).frame(5).fibers
    finally:
        plotter.close()
    assert viz.Series(pvd).times[5] == pytest.approx(0.1)
    centers = np.asarray(fibers.points)
    radius = np.asarray(fibers.point_data["radius"])
    assert radius.max() - radius.min() > 1e-5  # the radius varies along the fibers
    dist, idx = cKDTree(centers).query(np.asarray(tube.points))
    # every tube vertex lies on the ring of its center point, at the data's radius
    np.testing.assert_allclose(dist, radius[idx], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tube.point_data["radius"]), radius[idx], rtol=1e-6)
    assert set(np.unique(idx)) == set(range(len(centers)))  # a ring around every sample
    # the color array is the chosen field
    assert tube.point_data.active_scalars_name == "stretch"


def test_movies_gif_and_mp4(pvd, tmp_path):
    import imageio.v2 as imageio

    n = len(viz.Series(pvd))
    gif = viz.movie(pvd, tmp_path / "m.gif", field="stretch", window_size=SMALL, every=2)
    frames = imageio.mimread(gif)
    assert len(frames) == len(range(0, n, 2)) + (0 if (n - 1) % 2 == 0 else 1)
    assert np.abs(frames[0].astype(int) - frames[-1]).sum() > 0  # the fibers move
    pytest.importorskip("imageio_ffmpeg", reason="MP4 needs imageio-ffmpeg (viz extra)")
    mp4 = viz.movie(pvd, tmp_path / "m.mp4", field="force", window_size=SMALL)
    assert mp4.stat().st_size > 1000
    assert len(imageio.mimread(mp4)) == n


def test_state_source_with_bones(pvd, tmp_path):
    model = build_model(1)
    state = sf.simulate(model, t_end=0.02, dt=0.01, progress=False).final_state
    frame = viz.load((model, state), bodies=[BONE])
    assert frame.bodies is not None and frame.time == state.t
    assert frame.bodies.n_cells == 4 * 32
    assert viz.load(pvd, bodies=[BONE]).bodies.n_cells == 2 * 4 * 32  # written bodies + extra ones
    png = viz.screenshot((model, state), tmp_path / "s.png", bodies=[BONE], field="radius", view="iso", window_size=SMALL)
    assert png.stat().st_size > 0


def test_errors_name_the_choices(pvd, tmp_path):
    with pytest.raises(ValueError, match="pick one of .*stress"):
        viz.scene(pvd, field="nonsense", off_screen=True)
    with pytest.raises(ValueError, match="outside the series"):
        viz.load(pvd, time=99.0)
    with pytest.raises(ValueError, match=r"\.gif"):
        viz.movie(pvd, tmp_path / "m.avi")
    with pytest.raises(FileNotFoundError):
        viz.load(tmp_path / "missing.pvd")
    frame = viz.load(pvd)
    with pytest.raises(ValueError, match=r"time=0\.1 picks a step of a \.pvd series; this Frame holds one state"):
        viz.load(frame, time=0.1)
    fibers_vtu = next(pvd.parent.glob("*fibers*.vtu"))
    with pytest.raises(ValueError, match="time=0.1 picks a step of a .pvd series"):
        viz.load(fibers_vtu, time=0.1)
    with_bones = viz.load(frame, bodies=[BONE])  # bodies added to a frame, the caller's frame left as it was
    assert with_bones.bodies.n_cells == frame.bodies.n_cells + 4 * 32 and viz.load(frame).bodies is frame.bodies
    with pytest.raises(ValueError, match="view"):
        viz.scene(pvd, view="top", off_screen=True)
    for size in ((0, 0), (960,), (960.5, 720), "large"):
        with pytest.raises(ValueError, match="window_size must be two integers"):
            viz.screenshot(pvd, tmp_path / "s.png", window_size=size)
    assert not (tmp_path / "s.png").exists()


def test_a_damaged_file_is_named_not_shown_empty(pvd, tmp_path):
    import shutil

    series = tmp_path / "copy"
    shutil.copytree(pvd.parent, series)
    last = sorted(series.glob("result_fibers_*.vtu"))[-1]
    whole = last.read_bytes()
    for damaged in (whole[:500], b""):
        last.write_bytes(damaged)
        with pytest.raises(ValueError, match=rf"{last.name} holds no points: the file is empty or damaged"):
            viz.load(series / "result.pvd")
        with pytest.raises(ValueError, match="empty or damaged"):
            viz.load(last)
        run = subprocess.run([sys.executable, "-m", "skfiber.cli", "view", str(series / "result.pvd"), "--info"],
                             capture_output=True, text=True)
        assert run.returncode == 2, run.stdout + run.stderr
        assert "empty or damaged" in run.stderr and "vtkXML" not in run.stderr, run.stderr
    last.write_bytes(whole)
    assert viz.load(series / "result.pvd").fibers.n_points > 0


def test_reading_in_threads_leaves_vtks_warnings_as_they_were(pvd):
    """read_grid turns VTK's global warning display off while it reads and back after, one reader at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from vtkmodules.vtkCommonCore import vtkObject

    files = sorted(pvd.parent.glob("result_fibers_*.vtu"))
    before = vtkObject.GetGlobalWarningDisplay()
    with ThreadPoolExecutor(4) as pool:
        sizes = list(pool.map(lambda f: viz.read_grid(f).n_points, files * 20))
    assert vtkObject.GetGlobalWarningDisplay() == before and min(sizes) > 0


def test_view_takes_a_folder_with_one_series(pvd, tmp_path):
    """'skfiber view FOLDER' shows the folder's one .pvd series; with none or several it names them."""
    from skfiber import cli

    (pvd.parent / ".result.tmp4242.pvd").write_text(pvd.read_text())  # (a write cut short: not a series)
    assert cli.main(["view", str(pvd.parent), "--info"]) == 0
    (pvd.parent / ".result.tmp4242.pvd").unlink()
    (tmp_path / "a.pvd").write_text(pvd.read_text())
    (tmp_path / "b.pvd").write_text(pvd.read_text())
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder, names in ((tmp_path, "2: a.pvd, b.pvd"), (empty, "none")):
        run = subprocess.run([sys.executable, "-m", "skfiber.cli", "view", str(folder), "--info"],
                             capture_output=True, text=True)
        assert run.returncode == 2 and f"is a folder; name one .pvd series in it (.pvd files there: {names})" \
            in run.stderr, run.stderr


def test_core_does_not_import_pyvista():
    code = "import sys, skfiber, skfiber.io, skfiber.run, skfiber.cli; print('pyvista' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("time", ["0.1", float("nan"), True])
def test_a_time_that_is_not_a_number_is_named(pvd, time):
    with pytest.raises(TypeError, match=r"time must be a number of seconds \(or None: the last\), got"):
        viz.Series(pvd).index(time)


def test_view_of_a_bodies_file(pvd, tmp_path, capsys):
    """A series' bodies .vtu is described as bodies by --info, and refused with the fix for a picture (it was
    taken for fibers: '384 line cells', 'unknown field stress')."""
    from skfiber import cli

    bodies = pvd.parent / "result_bodies.vtu"
    assert cli.main(["view", str(bodies), "--info"]) == 0
    out = capsys.readouterr().out
    assert "fibers: none (this file holds the bodies of a series" in out
    assert "triangles; arrays: body_id [1]" in out and "line cells" not in out
    assert cli.main(["view", str(bodies), "--screenshot", str(tmp_path / "b.png")]) == 2
    assert "holds the bodies of a series (the bones), not its fibers: show the series' .pvd" in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds the bodies of a series"):
        viz.load(bodies)


def test_view_of_a_folder_names_the_series_in_its_subfolders(pvd, tmp_path, capsys):
    """The upper limb's --levels writes a series a level in DIR/level1/, DIR/level2/: 'skfiber view DIR' names
    them."""
    from skfiber import cli

    for level in (1, 2):
        (tmp_path / f"level{level}").mkdir()
        (tmp_path / f"level{level}" / "upper_limb.pvd").write_text(pvd.read_text())
    assert cli.main(["view", str(tmp_path), "--info"]) == 2
    assert "(.pvd files there: none; in its subfolders: level1/upper_limb.pvd, level2/upper_limb.pvd)" in \
        capsys.readouterr().err


def test_levers_to_the_fiber_attachments_are_drawn_with_the_bones(tmp_path, capsys):
    """A series of a fiber attached to a turning arm: its bodies part holds the arm's triangles and a lever (a
    line cell) to the attachment; the picture draws the lever, the movie moves it with the arm, and --info
    counts it apart from the triangles."""
    from skfiber import cli

    model, _ = arm_with_fiber(end=(0.3, 0, 0.08))
    run_simulation(model, t_end=0.03, dt=0.01, out_dir=tmp_path, progress=False)
    pvd = tmp_path / "result.pvd"
    series = viz.Series(pvd)
    first, last = series.frame(0).bodies, series.frame(len(series) - 1).bodies
    assert viz.holds_bodies(first) and viz.lever_count(first) == 1
    plotter = viz.scene(pvd, time=0.0, off_screen=True, window_size=SMALL)
    try:
        lever = plotter.actors["levers"].mapper.dataset
        assert lever.n_lines == 1
        np.testing.assert_allclose(lever.points[1], (0.3, 0, 0.08), atol=1e-7)  # the attachment at rest (float32)
    finally:
        plotter.close()
    moved = viz._body_levers(last).points
    assert np.linalg.norm(moved[1] - (0.3, 0, 0.08)) > 1e-4  # the arm has turned, the lever with it
    gif = viz.movie(pvd, tmp_path / "m.gif", window_size=SMALL)
    assert gif.stat().st_size > 0
    assert cli.main(["view", str(pvd), "--info"]) == 0
    assert "bodies: " in (out := capsys.readouterr().out) and "128 triangles, 1 lever (lines from" in out


@pytest.mark.parametrize("counts", [(1, 0, 2, 0, 1, 1), (0, 0, 1, 1, 2, 2)])
def test_a_movie_draws_each_frame_s_levers(counts, tmp_path, monkeypatch):
    """Bodies of your own whose attachments come and go: each movie frame shows that frame's levers, where
    they are, none in a frame without any (not the last frame's), and the first ones even when the first
    frame had none."""
    def bodies(state):
        k = counts[int(round(state.t / 0.02))]
        points = [(0.2 * (i + 1), -0.25, -0.1 - 2.5 * state.t) for i in range(k)]
        return [sf.io.Cylinder((0.0, -0.25, -0.3), (1.0, 0.0, 0.0), 0.04, "bone", attachment_points=points)]

    run_simulation(build_model(1), t_end=0.1, dt=0.02, out_dir=tmp_path, progress=False, bodies=bodies)
    pvd = tmp_path / "result.pvd"
    series = viz.Series(pvd)
    assert [viz.lever_count(series.frame(i).bodies) for i in range(len(series))] == list(counts)
    drawn = []
    screenshot = pv.Plotter.screenshot

    def recording(plotter, *args, **kwargs):
        actor = plotter.actors.get("levers")
        shown = actor is not None and actor.visibility
        drawn.append(np.array(actor.mapper.dataset.points[actor.mapper.dataset.lines.reshape(-1, 3)[:, 1:]])
                     if shown else None)
        return screenshot(plotter, *args, **kwargs)

    monkeypatch.setattr(pv.Plotter, "screenshot", recording)
    viz.movie(pvd, tmp_path / "m.gif", window_size=SMALL)
    assert len(drawn) == len(counts)
    for i, k in enumerate(counts):
        if k == 0:
            assert drawn[i] is None
            continue
        expect = viz._body_levers(series.frame(i).bodies)
        np.testing.assert_allclose(drawn[i], expect.points[expect.lines.reshape(-1, 3)[:, 1:]], atol=0)
        assert drawn[i].shape == (k, 2, 3)


def test_colour_bar_labels_differ_on_a_narrow_range_and_name_a_written_unit(pvd, tmp_path):
    """A stretch of 0.996 … 1 labelled with 3 digits reads 1, 1, 1, 0.998: the labels get the digits the
    range needs; an extra field's title takes the unit its file states."""
    for low, high in ((0.996, 1.0), (1e5, 1e5 + 3.0), (1e5 + 3.0, 1e5), (-2.0, 3.0), (0.0, 8.3e4)):
        fmt = viz.label_format(low, high)
        labels = [fmt % v for v in np.linspace(low, high, 5)]
        assert len(set(labels)) == 5, (fmt, labels)
        assert float(labels[0]) == pytest.approx(low, abs=1e-3 * abs(high - low))
    assert viz.label_format(1.0, 1.0) == viz.label_format(0.0, 8.3e4) == "%.3g"
    model = build_model(1)
    state = sf.simulate(model, t_end=0.02, dt=0.01, progress=False).final_state
    series = sf.io.VTKSeries(tmp_path, model, name="x", extra_units={"twice_radius": "m"},
                             extra_fields=lambda m, s, k, theta: {"twice_radius": 2.0 * np.ones(theta.size)})
    series.write(state, 0)
    plotter = viz.scene(tmp_path / "x.pvd", field="twice_radius", off_screen=True, window_size=SMALL)
    try:
        assert plotter.scalar_bars["twice_radius (m)"] is not None
    finally:
        plotter.close()


@pytest.mark.parametrize("width", [320, 480, 640, 960, 1920])
def test_the_colour_bar_keeps_room_for_its_labels(width):
    """A narrow window moves the bar left so that labels of 9 characters (-8.28e+03) stay inside it; the
    default window keeps it at the right edge."""
    from skfiber.viz import BAR_LABEL_PIXELS, _bar_args

    x = _bar_args("stress", (-891.0, 8280.0), {}, window_width=width)["position_x"]
    assert x * width + BAR_LABEL_PIXELS <= width and (x == 0.86 or width < 960)
