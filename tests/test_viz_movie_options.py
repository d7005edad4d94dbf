"""``skfiber view --movie``'s --fps and --every: a GIF faster than its delays can say is refused, and --every that
leaves a movie of fewer than 3 frames is noted with the series' length."""
import pytest

pytest.importorskip("pyvista", reason="rendering tests need the viz extra: pip install '.[viz]'")

import skfiber as sf  # noqa: E402
from skfiber import viz  # noqa: E402
from test_cli import run_main  # noqa: E402


@pytest.fixture(scope="module")
def pvd(tmp_path_factory):
    """A series of 11 time points."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity()
    out = tmp_path_factory.mktemp("series")
    run = sf.run_simulation(model, t_end=0.1, dt=0.01, out_dir=out, progress=False)
    assert len(viz.Series(run.pvd)) == 11
    return run.pvd


def test_a_gif_faster_than_50_fps_is_refused_naming_the_value_and_the_limit(pvd, tmp_path, capsys):
    gif = tmp_path / "movies" / "f.gif"
    code, _, err = run_main(capsys, "view", pvd, "--movie", gif, "--fps", "200")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("skfiber view: error: --fps 200 is too fast for a GIF") and "give fps 50 or less" in err
    assert not gif.parent.exists()  # refused before anything was made
    with pytest.raises(ValueError, match=r"fps 200 is too fast for a GIF.*give fps 50 or less"):
        viz.movie(pvd, gif, fps=200)
    code, out, _ = run_main(capsys, "view", pvd, "--movie", gif, "--fps", "30", "--every", "5",
                            "--window-size", "160", "120")
    assert code == 0 and gif.exists()
    from PIL import Image
    with Image.open(gif) as movie:      # 30 fps: the nearest whole hundredth of a second, 3/100 s
        assert movie.info["duration"] == viz.gif_delay_ms(30.0) == 30


def test_every_that_leaves_fewer_than_3_frames_is_noted(pvd, tmp_path, capsys):
    code, _, err = run_main(capsys, "view", pvd, "--movie", tmp_path / "m.gif", "--every", "1000",
                            "--window-size", "160", "120")
    assert code == 0
    assert ("skfiber view: note: --every 1000 leaves 2 frames of the series' 11 time points; --every 5 or less "
            "gives 3 or more") in err
    code, _, err = run_main(capsys, "view", pvd, "--movie", tmp_path / "m.gif", "--every", "5",
                            "--window-size", "160", "120")
    assert code == 0 and "note:" not in err
