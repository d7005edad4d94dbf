"""Output folders and files checked before a run: made, tried for writing, or refused naming what and why."""
import os

import numpy as np
import pytest

import skfiber as sf
from skfiber.core.files import writable_file, writable_folder


def test_folders_and_files_are_made_and_tried(tmp_path):
    assert writable_folder(tmp_path / "a" / "b", what="out_dir").is_dir()
    existing = tmp_path / "kept.txt"
    existing.write_text("data")
    assert writable_file(existing, what="screenshot") == existing and existing.read_text() == "data"
    new = writable_file(tmp_path / "c" / "shot.png", what="screenshot")
    assert new.parent.is_dir() and not new.exists()


def test_unwritable_places_are_named_with_the_reason(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError, match=r"out_dir .*a_file exists and is not a folder; give a folder"):
        writable_folder(blocker, what="out_dir")
    with pytest.raises(NotADirectoryError, match=r"out_dir .*a_file/sub/deeper: cannot create the folder \(Not a "
                                                 r"directory\); pick a writable place"):
        writable_folder(blocker / "sub" / "deeper", what="out_dir")
    with pytest.raises(IsADirectoryError, match="screenshot .* is a folder; give a file name"):
        writable_file(tmp_path, what="screenshot")
    with pytest.raises(OSError, match=r"screenshot .*: cannot write the file .*pick another name"):
        writable_file(tmp_path / ("x" * 5000 + ".png"), what="screenshot")


def test_run_simulation_names_an_out_dir_it_cannot_make(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    with pytest.raises(NotADirectoryError, match=r"out_dir .*a_file/run: cannot create the folder \(Not a "
                                                 r"directory\)"):
        sf.run_simulation(model, t_end=0.01, dt=0.01, out_dir=blocker / "run", progress=False)
    assert np.isfinite(model.discretization.reference_dofs).all()


@pytest.mark.skipif(not os.path.isdir("/proc/self"),
                    reason="needs Linux's /proc: a folder no one can write in, root too")
def test_an_existing_folder_that_cannot_be_written_is_named_before_the_run(tmp_path):
    """/proc exists and refuses new files even to root (whom permissions do not stop): the folder is tried, and
    run_simulation's checkpoint there is refused before the first step, not when the first checkpoint is due."""
    with pytest.raises(OSError, match=r"out_dir /proc: cannot write in the folder .*pick a writable place"):
        writable_folder("/proc", what="out_dir")
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    model.fix(model.fibers[0], "start")
    steps = []
    with pytest.raises(OSError, match=r"checkpoint_file /proc: cannot write in the folder"):
        sf.run_simulation(model, t_end=0.03, dt=0.01, checkpoint_file="/proc/ckpt.npz", checkpoint_every=2,
                          progress=False, callback=lambda state, info: steps.append(info.step))
    assert steps == []
    with pytest.raises(NotADirectoryError, match=r"screenshot .*a_file/s.png: its folder .*a_file is a file"):
        (tmp_path / "a_file").write_text("")
        writable_file(tmp_path / "a_file" / "s.png", what="screenshot")
