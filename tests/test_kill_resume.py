"""A writer killed (SIGKILL) at a random step leaves a loadable series, and the resume ends bit for bit where
the uninterrupted run ends.

The writers: :func:`skfiber.run.run_simulation` and ``skfiber run hanging-bundle`` (the upper-limb demo
writes no checkpoint).  The machinery is ``benchmarks/kill_resume.py``, which runs many random kills.
"""
import importlib.util
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
    """The uninterrupted runs of both writers."""
    out = {}
    for writer in kr.SERIES:
        out[writer] = tmp_path_factory.mktemp(f"reference_{writer}")
        kr.write(out[writer], writer)
    return out


@pytest.mark.parametrize("writer, how", [("api", "between steps"), ("cli", "while writing")])
def test_kill_at_a_random_moment_and_resume(writer, how, references, tmp_path, capsys):
    kill_step, kill_write = kr.moment(np.random.default_rng(sum(map(ord, writer + how))), how)
    out = tmp_path / "out"
    assert kr.kill(out, writer, kill_step, kill_write) == -signal.SIGKILL
    name = kr.SERIES[writer]
    assert kr.loadable(out, name) == ""
    if how == "while writing":  # the killed write left its temporary file behind; the resume removes it
        assert list(out.glob(".*tmp*"))
    kr.write(out, writer, resume=True)
    capsys.readouterr()
    assert kr.identical(out, references[writer], name) == ""


def test_the_comparison_sees_a_difference(references, tmp_path):
    """The checks are not blind: a checkpoint of another run differs, a cut series does not load."""
    import shutil

    from skfiber import io as sio
    from skfiber.run import checkpoint_path

    out = tmp_path / "changed"
    shutil.copytree(references["api"], out)
    ckpt = sio.load_checkpoint(checkpoint_path(out))
    ckpt.state.u[5] = np.nextafter(ckpt.state.u[5], 1.0)  # one bit
    sio.save_checkpoint(checkpoint_path(out), ckpt)
    assert kr.identical(out, references["api"], "result") == "state.u differs"
    (out / "result.pvd").write_text((out / "result.pvd").read_text()[:200])
    assert kr.loadable(out, "result") != ""
