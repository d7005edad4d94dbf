"""The benchmark scripts (benchmarks/*.py) as a user runs them: like the demos, they end their output with one
``summary:`` line also when Ctrl-C or an error stops them (``interrupted=1``, exit code 130; ``failed=1``, exit
code 1), and refuse an output path they cannot write before any long work."""
import ast
import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def _main_block(path: Path) -> str:
    """The source of a script's ``if __name__ == "__main__":`` block ('' when it has none)."""
    source = path.read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "__main__" in ast.get_source_segment(source, node.test):
            return ast.get_source_segment(source, node)
    return ""


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_every_benchmark_script_runs_its_main_through_run_script(script):
    assert "run_script(main)" in _main_block(script)


def test_the_helper_modules_are_no_scripts():
    for helper in BENCHMARKS.glob("_*.py"):
        assert _main_block(helper) == "", helper.name


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=BENCHMARKS.parent)


def test_an_unwritable_plot_path_is_refused_at_once():
    """``--plot`` below a file: one line on stderr naming the option, exit code 2, before any run."""
    proc = _run(BENCHMARKS / "bench_transient.py", "--quick", "--plot", "/dev/null/x.png", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""  # (nothing ran)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench_transient.py: error: --plot ")
    assert "Traceback" not in proc.stderr


#: bench_transient run as a script with skfiber.simulate raising ``{error}`` at its first call
FAILING = """
import runpy, sys
import skfiber
def simulate(*args, **kwargs):
    raise {error}
skfiber.simulate = simulate
sys.argv = [{script!r}, "--quick"]
runpy.run_path({script!r}, run_name="__main__")
"""


@pytest.mark.parametrize("error, code, last", [("RuntimeError('singular')", 1, "summary: failed=1"),
                                               ("KeyboardInterrupt", 130, "summary: interrupted=1")])
def test_a_failed_or_interrupted_benchmark_ends_with_a_summary_line(error, code, last):
    script = str(BENCHMARKS / "bench_transient.py")
    proc = _run("-c", FAILING.format(error=error, script=script))
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == last
    assert "Traceback" not in proc.stderr
    outcome = "failed: RuntimeError: singular" if code == 1 else "interrupted"
    assert proc.stderr.strip().splitlines()[-1].startswith(f"bench_transient.py: {outcome}")


def test_ctrl_c_in_a_benchmark_ends_with_a_summary_line():
    """A real SIGINT once the benchmark has started: exit code 130, the last line ``summary: interrupted=1``."""
    proc = subprocess.Popen([sys.executable, "-u", str(BENCHMARKS / "bench_transient.py"), "--quick"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=BENCHMARKS.parent)
    try:
        first = proc.stdout.readline()  # the first line: its main is running
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert first.startswith("stiff tendon:"), err
    assert proc.returncode == 130, err
    assert out.strip().splitlines()[-1] == "summary: interrupted=1"
    assert "Traceback" not in err


def test_the_contact_suite_reports_the_cases_done_when_interrupted(monkeypatch, capsys):
    """robustness_contact.py on Ctrl-C: the table and the summary of the cases done, ``interrupted=1``, 130."""
    spec = importlib.util.spec_from_file_location("robustness_contact_script", BENCHMARKS / "robustness_contact.py")
    suite = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = suite  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(suite)
        done = []

        def run_case(case):
            if done:
                raise KeyboardInterrupt
            done.append(case)
            return suite.Outcome(case, "converged", "", 10, 100)

        monkeypatch.setattr(suite, "run_case", run_case)
        assert suite.main(["--cases", "4"]) == 130
    finally:
        sys.modules.pop(spec.name, None)
    lines = capsys.readouterr().out.strip().splitlines()
    assert "interrupted (Ctrl-C) after 1 of 4 cases" in lines
    assert lines[-1].startswith("summary: cases=1 converged=1 ") and lines[-1].endswith(" interrupted=1")
