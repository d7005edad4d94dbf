"""A writer killed (SIGKILL) at a random step, rename or time leaves a loadable series, and the resume ends bit for
bit where the uninterrupted run ends.

The writers: :func:`skfiber.run.run_simulation`, ``skfiber run hanging-bundle`` and ``skfiber run upper-limb``
(level 1, 8 steps with fiber–fiber contact; its CSV tables, figures and recorded history are compared too).  The
machinery is ``benchmarks/kill_resume.py``, which runs many random kills.
"""
import importlib.util
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "kill_resume.py"


def _script():
    spec = importlib.util.spec_from_file_location("kill_resume", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kr = _script()


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """The uninterrupted runs of the writers."""
    out = {}
    for writer in kr.WRITERS:
        out[writer] = tmp_path_factory.mktemp(f"reference_{writer}")
        kr.write(out[writer], writer)
    return out


@pytest.mark.parametrize("writer, how", [("api", "between steps"), ("cli", "while writing"),
                                         ("limb", "between steps"), ("limb", "while writing")])
def test_kill_at_a_random_moment_and_resume(writer, how, references, tmp_path, capsys):
    kill_step, kill_write = kr.moment(np.random.default_rng(sum(map(ord, writer + how))), how, writer)
    out = tmp_path / "out"
    assert kr.kill(out, writer, kill_step, kill_write) == -signal.SIGKILL
    assert kr.loadable(out, writer) == ""
    if how == "while writing":  # the killed write left its temporary file behind; the resume removes it
        assert list(out.glob(".*tmp*"))
    kr.write(out, writer, resume=True)
    capsys.readouterr()
    assert kr.identical(out, references[writer], writer) == ""


def test_upper_limb_killed_at_a_random_time_resumes_bit_for_bit(references, tmp_path):
    """SIGKILL from outside at a random time after the first checkpoint (in a step, while writing, or while the
    figures are drawn; or the run has ended): the series loads, and the resume gives the same files."""
    window = kr.run_time_after_first_checkpoint(tmp_path / "window", "limb")
    delay = float(np.random.default_rng(7).uniform(0.0, window))
    out = tmp_path / "out"
    assert kr.kill_at_random_time(out, "limb", delay) in (0, -signal.SIGKILL)
    assert kr.loadable(out, "limb") == ""
    kr.write(out, "limb", resume=True)
    assert kr.identical(out, references["limb"], "limb") == ""


def test_the_comparison_sees_a_difference(references, tmp_path):
    """The checks are not blind: a checkpoint of another run differs, a cut series does not load, another byte in
    the upper limb's table or one bit of its recorded history differs."""
    from skfiber import io as sio

    out = tmp_path / "changed"
    shutil.copytree(references["api"], out)
    path = out / kr.WRITERS["api"].checkpoint
    ckpt = sio.load_checkpoint(path)
    ckpt.state.u[5] = np.nextafter(ckpt.state.u[5], 1.0)  # one bit
    sio.save_checkpoint(path, ckpt)
    assert kr.identical(out, references["api"], "api") == "state.u differs"
    (out / "result.pvd").write_text((out / "result.pvd").read_text()[:200])
    assert kr.loadable(out, "api") != ""

    limb = tmp_path / "limb"
    shutil.copytree(references["limb"], limb)
    assert kr.identical(limb, references["limb"], "limb") == ""
    path = limb / kr.WRITERS["limb"].checkpoint
    ckpt = sio.load_checkpoint(path)
    ckpt.extra["angle"][3] = np.nextafter(ckpt.extra["angle"][3], 1.0)
    sio.save_checkpoint(path, ckpt)
    assert kr.identical(limb, references["limb"], "limb") == "the recorded history's angle differs"
    shutil.copy(references["limb"] / kr.WRITERS["limb"].checkpoint, path)
    table = limb / "angle_level1.csv"
    table.write_text(table.read_text().replace("0.03125,", "0.031250,", 1))
    assert kr.identical(limb, references["limb"], "limb") == "angle_level1.csv differs"
