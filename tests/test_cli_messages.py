"""Messages of the ``skfiber`` command and of the demo scripts: the same parsers, the command's name, what the
options ask for, and what a folder that refuses files is."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import run_main

DEMOS = Path(__file__).resolve().parents[1] / "demos"


def test_verify_list_honours_only(capsys):
    code, out, _ = run_main(capsys, "verify", "--list", "--only", "pendulum-chain")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["pendulum-chain"]
    code, _, err = run_main(capsys, "verify", "--list", "--only", "nothing")
    assert code == 2 and "unknown verification study 'nothing'" in err


def test_run_s_level_is_parsed_as_the_demos_parse_it(capsys):
    code, _, err = run_main(capsys, "run", "whiplash", "--level", "1.5")
    assert code == 2
    assert err.strip() == "skfiber run: error: argument --level: '1.5' is not an integer; see skfiber run --help"
    code, _, demo_err = run_main(capsys, "run", "whiplash", "--", "--level", "1.5")  # (the demo's own parser)
    assert code == 2 and "argument --level: '1.5' is not an integer" in demo_err
    code, _, err = run_main(capsys, "run", "whiplash", "--level", "0")
    assert code == 2 and "argument --level: must be an integer ≥ 1, got 0" in err


@pytest.mark.parametrize("command", ["list", "verify", "view"])
def test_a_command_s_error_names_the_command(command, capsys):
    code, _, err = run_main(capsys, command, *(["x.pvd"] if command == "view" else []), "extra")
    assert code == 2
    assert err.strip() == f"skfiber {command}: error: unrecognized arguments: extra; see skfiber {command} --help"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc: a folder that refuses new files")
def test_a_folder_that_exists_but_refuses_files_is_said_to_exist():
    proc = subprocess.run([sys.executable, str(DEMOS / "contact_cylinder.py"), "--plot", "/proc/x.png"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("contact_cylinder.py: error: --plot /proc: cannot write in the folder (it exists, but the "
                          "system refuses to create a file in it: ") and "pick a writable place" in err
    assert len(err.splitlines()) == 1
