"""The ``skfiber`` command, run as a subprocess like a user would."""
import io
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from skfiber import cli
from skfiber.io import read_pvd

from conftest import interrupted_at_first_step


def skfiber(*args, env=None, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "skfiber.cli", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def headless_env():
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """``skfiber run hanging-bundle`` end to end (short run, demo option passed through)."""
    out = tmp_path_factory.mktemp("cli") / "bundle"
    proc = skfiber("run", "hanging-bundle", "--level", 1, "--out", out, "--t-end", 0.06, "--checkpoint-every", 2)
    return proc, out


def run_main(capsys, *args):
    """``skfiber ARGS`` in this process (fast; argparse exits become return codes)."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_explains_every_command(capsys):
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    for command in ("run", "view", "verify", "list"):
        assert command in out
    run = run_main(capsys, "run", "--help")[1]
    assert "--level" in run and "--out" in run and "passed on to the demo" in run
    view = run_main(capsys, "view", "--help")[1]
    for option in ("--screenshot", "--movie", "--field", "--time", "--info", "--every", "--fps"):
        assert option in view
    assert "--only" in run_main(capsys, "verify", "--help")[1]
    assert run_main(capsys)[0] == 2  # no command: help and usage error


def test_console_script_is_installed():
    exe = shutil.which("skfiber") or str(Path(sys.executable).with_name("skfiber"))
    assert Path(exe).exists(), "the skfiber console script is not installed (pip install -e . makes it)"
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("skfiber ")


def test_python_m_skfiber_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "skfiber", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("skfiber ")


CTRL_C_WHILE_LOADING = """
import importlib, sys
import skfiber.__main__ as entry

def interrupted(name, *args):
    if name == "skfiber.cli":  # the command's module, as Ctrl-C reaches it while numpy and numba load
        if sys.argv[1] == "list":
            raise KeyboardInterrupt
        try:  # numpy and scipy turn a Ctrl-C during their import into an ImportError
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ImportError("initialization failed")
    return importlib.import_module(name, *args)

entry.importlib = type(sys)("importlib")
entry.importlib.import_module = interrupted
sys.argv = ["skfiber", *sys.argv[1:]]
sys.exit(entry.main())
"""


@pytest.mark.parametrize("argv, summary", [(["list"], ""), (["run", "hanging-bundle"], "summary: interrupted=1\n")])
def test_ctrl_c_while_the_command_loads_is_one_line_and_130(argv, summary):
    """A Ctrl-C while the command's modules load: one line, exit code 130, and the summary line of the commands
    that end with one, also when numpy or scipy raised it as an ImportError (not a broken install)."""
    proc = subprocess.run([sys.executable, "-c", CTRL_C_WHILE_LOADING, *argv], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "skfiber: interrupted\n", summary)


def test_ctrl_c_while_a_demo_loads_ends_with_its_summary_line(monkeypatch, capsys):
    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_import_demo", interrupted)
    code, out, err = run_main(capsys, "run", "hanging-bundle")
    assert code == cli.EXIT_INTERRUPTED and out == "summary: interrupted=1\n"
    assert err == "skfiber run hanging-bundle: interrupted\n"


def test_run_demo_end_to_end(bundle):
    proc, out = bundle
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("summary: max_sag_m=")
    assert "step 6/6" in proc.stderr and "elapsed" in proc.stderr  # progress bar (no ETA in a run this short)
    assert "done: 6/6 steps" in proc.stderr  # the driver's final summary
    assert "results:" in proc.stderr and "hanging_bundle.pvd" in proc.stderr
    times = sorted({e.time for e in read_pvd(out / "hanging_bundle.pvd")})
    assert len(times) == 7 and times[-1] == pytest.approx(0.06)
    assert (out / "hanging_bundle_checkpoint.npz").is_file()


def test_every_demo_is_listed(capsys):
    code, out, _ = run_main(capsys, "list")
    assert code == 0
    for name in cli.demo_names():
        assert name in out
    assert "hanging-bundle" in cli.demo_names()


def test_bad_arguments_list_the_choices(tmp_path, capsys):
    proc = skfiber("run", "no-such-demo")  # once through a real process: message and exit code
    assert proc.returncode == 2
    assert "unknown demo 'no-such-demo'" in proc.stderr and "hanging-bundle" in proc.stderr
    code, _, err = run_main(capsys, "run", "hanging-bundle", "--no-such-option")
    assert code == 2 and "unrecognized arguments" in err
    code, _, err = run_main(capsys, "run", "hanging-bundle", "--level", 0)
    assert code == 2 and "--level" in err
    code, _, err = run_main(capsys, "view", tmp_path / "missing.pvd")
    assert code == 2 and "no such file" in err
    (tmp_path / "x.txt").write_text("")
    code, _, err = run_main(capsys, "view", tmp_path / "x.txt")
    assert code == 2 and ".pvd" in err
    (tmp_path / "x.pvd").write_text("")
    code, _, err = run_main(capsys, "view", tmp_path / "x.pvd", "--movie", "a.avi")
    assert code == 2 and ".gif or .mp4" in err
    code, _, err = run_main(capsys, "verify", "--only", "nonsense")
    assert code == 2 and "manufactured-solution" in err
    code, _, err = run_main(capsys, "verify", "--bogus")
    assert code == 2


def test_view(bundle, tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyvista", reason="skfiber view needs the viz extra")
    _, out = bundle
    pvd = out / "hanging_bundle.pvd"
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code, info, _ = run_main(capsys, "view", pvd, "--info")
    assert code == 0 and "7 time points" in info and "radius" in info and "[Pa]" in info
    code, _, err = run_main(capsys, "view", pvd, "--screenshot", tmp_path / "a.png", "--field", "nonsense")
    assert code == 2 and "pick one of" in err and "stretch" in err
    code, _, err = run_main(capsys, "view", pvd, "--screenshot", tmp_path / "a.png", "--time", 5)
    assert code == 2 and "outside the series" in err
    code, _, err = run_main(capsys, "view", pvd)
    assert code == 2 and "--screenshot" in err  # no display: say what to do instead
    (tmp_path / "afile").touch()
    for option, name in (("--screenshot", "x.png"), ("--movie", "x.gif")):
        code, _, err = run_main(capsys, "view", pvd, option, tmp_path / "afile" / name)
        assert code == 2 and f"error: {option} {tmp_path / 'afile' / name}: its folder {tmp_path / 'afile'} is a file" \
            in err
        code, _, err = run_main(capsys, "view", pvd, option, tmp_path / "new" / "x.bmp")  # a bad suffix
        assert code == 2 and "pick a file ending in" in err and not (tmp_path / "new").exists()
    ok = skfiber("view", pvd, "--screenshot", tmp_path / "a.png", "--movie", tmp_path / "a.gif",
                 "--field", "force", "--time", 0.03, "--window-size", 320, 240, env=headless_env())
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "a.png").stat().st_size > 1000 and (tmp_path / "a.gif").stat().st_size > 1000


def test_verify_lists_and_runs_the_studies(capsys):
    code, listed, _ = run_main(capsys, "verify", "--list")
    assert code == 0
    assert "manufactured-solution" in cli.demo_names() and "manufactured-solution" in listed
    proc = skfiber("verify", "--only", "manufactured-solution", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "=== manufactured-solution (small) ===" in proc.stdout
    assert "verification summary" in proc.stdout and " ok " in proc.stdout
    assert "\n(study) summary:" in proc.stdout  # the study's own summary line, relabelled
    assert [line for line in proc.stdout.splitlines() if line.startswith("summary:")] == \
        proc.stdout.strip().splitlines()[-1:]  # one summary line: the command's, the last
    assert proc.stdout.strip().splitlines()[-1].startswith("summary: studies=1 passed=1 failed=0 not_found=0 wall_s=")


def test_level_only_for_demos_with_levels_and_usage_names_the_demo(capsys):
    """--level is refused (one line, exit 2) by a demo without levels, naming those that have them; a demo's
    own argument errors name 'skfiber run DEMO', not the command's file."""
    from skfiber.cli import demos_with_levels

    assert {"hanging-bundle", "upper-limb", "whiplash"} <= set(demos_with_levels())
    assert "custom-law" not in demos_with_levels()
    code, _, err = run_main(capsys, "run", "custom-law", "--level", 3)
    assert code == 2 and "custom-law takes no --level" in err and "upper-limb" in err
    assert "Traceback" not in err
    code, _, err = run_main(capsys, "run", "custom-law", "--bogus")
    assert code == 2 and "skfiber run custom-law: error: unrecognized arguments: --bogus" in err


def test_a_warning_under_a_command_is_one_line_naming_it():
    """Under a skfiber command a warning is shown as one line (no file, line number or source line);
    --debug keeps Python's format, and the format is restored afterwards."""
    from skfiber.cli import _warnings_in_one_line
    from skfiber.softening import SofteningWarning

    before = warnings.formatwarning
    with _warnings_in_one_line("skfiber run upper-limb", enabled=True):
        shown = warnings.formatwarning("triceps1: material past\n the force peak", SofteningWarning, "demo.py", 7,
                                       "run(level)")
    assert shown == "skfiber run upper-limb: warning: triceps1: material past the force peak (SofteningWarning)\n"
    assert warnings.formatwarning is before
    with _warnings_in_one_line("skfiber run upper-limb", enabled=False):
        shown = warnings.formatwarning("as Python shows it", RuntimeWarning, "demo.py", 7, "run(level)")
    assert shown.startswith("demo.py:7: RuntimeWarning: as Python shows it")


@pytest.mark.parametrize("returned, code", [
    (type("Run", (), {"interrupted": True})(), 130),
    ([type("Run", (), {"interrupted": False})(), type("Run", (), {"interrupted": True})()], 130),
    (type("Run", (), {"interrupted": False})(), 0),
    (None, 0),
    (3, 3),
])
def test_a_demo_interrupted_exits_130(returned, code, capsys, monkeypatch):
    """A demo whose main returns a result (or results) that Ctrl-C interrupted exits 130, not 0."""
    module = __import__("skfiber.demos.custom_law", fromlist=["main"])
    monkeypatch.setattr(module, "main", lambda argv: returned)
    got, _, err = run_main(capsys, "run", "custom-law")
    assert got == code
    assert ("interrupted in" in err) == (code == 130)


@pytest.mark.parametrize("demo", ["custom-law", "custom-term", "manufactured-solution"])
def test_ctrl_c_in_a_demo_s_simulation_stops_it_with_130(demo, capsys, monkeypatch):
    """A demo that goes on to compare a whole run with its closed form asks simulate to let Ctrl-C through
    (instead of keeping a part of the run, which it would compare): skfiber run exits 130, and the output
    ends with the summary line of an interrupted demo."""
    import skfiber as sf

    monkeypatch.setattr(sf, "simulate", interrupted_at_first_step(sf.simulate))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_main(capsys, "run", demo, "--", "--small")
    assert code == 130 and f"skfiber run {demo}: interrupted" in err
    # no summary of a part of a run: only the command's last line saying the demo was interrupted
    assert [line for line in out.splitlines() if line.startswith("summary:")] == ["summary: interrupted=1"]
    assert out.strip().splitlines()[-1] == "summary: interrupted=1"
    assert not [w for w in caught if "interrupted" in str(w.message)]  # no part of a run kept


@pytest.mark.parametrize("demo, module_name", [("whiplash", "skfiber.demos.whiplash"),
                                               ("pendulum-chain", "skfiber.demos.pendulum_chain")])
def test_ctrl_c_in_a_rigid_simulation_stops_a_comparing_demo_with_130(demo, module_name, capsys, monkeypatch,
                                                                       tmp_path):
    """A demo that compares rigid runs (integrators, step sizes) stops when Ctrl-C stops one of them, instead
    of comparing a part of a trajectory (and finishing with exit code 0); whiplash reports the methods it has
    compared (none here) and ends with its summary line, marked interrupted."""
    monkeypatch.chdir(tmp_path)  # (whiplash's default output folder)
    module = __import__(module_name, fromlist=["simulate_rigid"])
    monkeypatch.setattr(module, "simulate_rigid", interrupted_at_first_step(module.simulate_rigid))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_main(capsys, "run", demo, "--", "--small")
    assert not [w for w in caught if "interrupted" in str(w.message)]  # no part of a trajectory kept
    assert code == 130
    if demo == "whiplash":
        last = out.strip().splitlines()[-1]
        assert last.startswith("summary: max_head_disp_m=nan ") and last.endswith(" interrupted=1")
    else:  # (it reports nothing of its own: the command ends its output with the interrupted summary)
        assert f"skfiber run {demo}: interrupted" in err and out.strip().splitlines()[-1] == "summary: interrupted=1"


def script_exit_code(main, argv):
    """run_script's outcome: 0 returned, or the code of its SystemExit."""
    try:
        assert cli.run_script(main, argv) == 0
        return 0
    except SystemExit as exc:
        assert exc.code != 0
        return exc.code


def _raises(error):
    def main(argv):
        raise error
    return main


def _raises_while_handling_ctrl_c(error):
    def main(argv):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise error
    return main


def _numba_s_ctrl_c(argv):
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as err:
        raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from err


@pytest.mark.parametrize("main, code, message", [
    (_raises(ValueError("--t-end must be > 0, got -1")), 2, "demo.py: error: --t-end must be > 0, got -1"),
    (_raises(FileNotFoundError("no checkpoint at out/x.npz")), 2, "demo.py: error: no checkpoint at out/x.npz"),
    (_raises(RuntimeError("Newton failed\n at t = 1")), 1,
     "demo.py: failed: RuntimeError: Newton failed at t = 1 (--debug shows the traceback)"),
    (_raises(np.linalg.LinAlgError("Singular matrix")), 1,  # a ValueError, but the computation's, not the input's
     "demo.py: failed: LinAlgError: Singular matrix (--debug shows the traceback)"),
    (_raises(KeyboardInterrupt()), 130, "demo.py: interrupted"),
    # what is reported and the summary line agree: a singular matrix met while handling Ctrl-C is a failure
    (_raises_while_handling_ctrl_c(np.linalg.LinAlgError("Singular matrix")), 1,
     "demo.py: failed: LinAlgError: Singular matrix (--debug shows the traceback)"),
    (lambda argv: sys.exit("the target was not reached"), 1, "the target was not reached"),  # (Python's message)
    (_raises(BrokenPipeError(32, "Broken pipe")), 1,  # another pipe's, not stdout's: a failure
     "demo.py: failed: BrokenPipeError: [Errno 32] Broken pipe (--debug shows the traceback)"),
    (_numba_s_ctrl_c, 130, "demo.py: interrupted"),
    (lambda argv: type("Run", (), {"interrupted": True})(), 130, ""),
    (lambda argv: sys.exit(2), 2, ""),
    (lambda argv: None, 0, ""),
])
def test_a_demo_run_as_a_script_reports_like_skfiber_run(main, code, message, capsys, monkeypatch):
    """run_script, a demo's ``__main__``: the exit codes and the one-line messages of skfiber run; a demo
    that succeeds returns (sphinx-gallery runs the demos as __main__ in its own process), any other outcome
    leaves by SystemExit."""
    monkeypatch.setattr(sys, "argv", ["demos/demo.py"])
    assert script_exit_code(main, ["--level", "2"]) == code
    out, err = capsys.readouterr()
    assert err.strip() == message and "Traceback" not in err
    # a Ctrl-C that left main (nothing reported by the demo), or a failure, ends the output with a summary line;
    # bad input (the run never started) and a demo's own exit do not
    assert out == {130: "summary: interrupted=1\n" if message else "", 1: "summary: failed=1\n"}.get(code, "")


def test_under_sphinx_gallery_a_demo_s_error_propagates():
    """The documentation's gallery runs the demos as __main__, without a __file__, and records an exception
    itself (and goes on with the next demo): run_script neither reports it nor exits."""
    gallery = {"__name__": "__main__", "run_script": cli.run_script}  # sphinx-gallery's globals: no __file__
    exec("def main(argv):\n    raise RuntimeError('a failing demo')\n", gallery)
    with pytest.raises(RuntimeError, match="a failing demo"):
        exec("run_script(main)", gallery)
    exec("def main(argv):\n    return None\n", gallery)
    exec("assert run_script(main) == 0", gallery)


def test_debug_shows_the_traceback_of_a_demo_run_as_a_script(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["demos/demo.py"])
    seen = []

    def main(argv):
        seen.append(argv)
        raise RuntimeError("bug")

    assert script_exit_code(main, ["--level", "2", "--debug", "--", "--debug"]) == 1
    err = capsys.readouterr().err
    assert seen == [["--level", "2", "--", "--debug"]]
    assert "Traceback" in err and err.strip().endswith("demo.py: failed: RuntimeError: bug")


@pytest.mark.parametrize("script, args, message", [
    ("hanging_bundle.py", ["--resume", "--t-end", "0.02"], "hanging_bundle.py: error: --resume: no checkpoint at "),
    ("whiplash.py", ["--small", "--t-end", "0.0001"],
     "whiplash.py: error: argument --t-end: must be longer than the step Δt = 0.0004 s of --level 1 with --small, "
     "got 0.0001; see whiplash.py --help"),
])
def test_a_demo_script_s_bad_input_is_one_line_without_a_folder(script, args, message, tmp_path):
    """A demo run as a script (python demos/….py), bad input: one line naming what is wrong, exit code 2,
    and no empty output folder left behind."""
    out = tmp_path / "out"
    demo = Path(__file__).resolve().parents[1] / "demos" / script
    proc = subprocess.run([sys.executable, str(demo), "--out", str(out), *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().startswith(message) and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_ctrl_c_with_stdout_closed_still_exits_130(capsys, monkeypatch):
    """A demo's Ctrl-C while its output's reader is gone (``… | head``, both stopped): the interrupted summary
    cannot be printed, and the Ctrl-C is what is reported (exit code 130), not the broken pipe."""
    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "argv", ["demos/demo.py"])
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert script_exit_code(_raises(KeyboardInterrupt()), []) == 130


def test_an_interrupted_study_ends_with_its_summary_line(monkeypatch, capsys, tmp_path):
    """Ctrl-C during `skfiber study` (the study has written its table and how to resume it): the output ends with
    `summary: interrupted=1`, exit code 130, as the demos' does."""
    from skfiber.study import execute

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "run_study", interrupted)
    code = cli.main(["study", "quadratic", "--serial", "--n", "3", "--out", str(tmp_path / "study")])
    captured = capsys.readouterr()
    assert code == 130 and captured.out.strip().splitlines()[-1] == "summary: interrupted=1"
    assert "skfiber study: interrupted" in captured.err
