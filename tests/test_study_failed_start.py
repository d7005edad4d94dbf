"""A study whose scheduler cannot be reached leaves no plan behind: the corrected command runs in the same folder,
while a folder that holds another study's runs is still refused; the error names the flag --help documents."""
import json
import socket

import pytest

from skfiber.cli import main as cli_main
from skfiber.study import Parameter, StudyFolder, run_study, serial_conflict
from skfiber.study.targets import quadratic

pytest.importorskip("distributed")


@pytest.fixture
def refused_address(monkeypatch):
    """The address of a TCP port where nothing listens, refused within half a second."""
    from skfiber.study import execute

    monkeypatch.setattr(execute, "CONNECT_CHECK_SECONDS", 0.5)
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def test_a_failed_scheduler_connection_leaves_no_plan_and_the_corrected_command_runs(tmp_path, capsys,
                                                                                      refused_address):
    out = tmp_path / "sched"
    assert cli_main(["study", "quadratic", "--n", "2", "--out", str(out), "--scheduler", refused_address]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to the dask scheduler" in err and "--serial" in err and len(err.strip().splitlines()) == 1
    assert not (out / "plan.json").exists()
    assert cli_main(["study", "quadratic", "--n", "4", "--out", str(out), "--serial"]) == 0
    assert "summary: runs=4 completed=4 failed=0" in capsys.readouterr().out
    assert len(json.loads((out / "plan.json").read_text())["rows"]) == 4


def test_the_flag_the_connection_error_names_is_the_one_help_documents(capsys):
    with pytest.raises(SystemExit):
        cli_main(["study", "--help"])
    assert "--serial" in capsys.readouterr().out


def test_a_folder_with_another_study_s_runs_is_still_refused_and_keeps_its_plan(tmp_path, capsys, refused_address):
    out = tmp_path / "s"
    assert cli_main(["study", "quadratic", "--n", "2", "--out", str(out), "--serial"]) == 0
    plan = (out / "plan.json").read_text()
    capsys.readouterr()
    assert cli_main(["study", "quadratic", "--n", "4", "--out", str(out), "--scheduler", refused_address]) == 2
    assert "holds another study (its n, rows differ: n 2 there, 4 here)" in capsys.readouterr().err
    # the same study resumed (nothing left to run: no connection) and a failed connection keep the plan
    assert cli_main(["study", "quadratic", "--n", "2", "--out", str(out), "--scheduler", refused_address]) == 0
    assert (out / "plan.json").read_text() == plan


def test_a_resumed_study_keeps_its_plan_when_the_scheduler_cannot_be_reached(tmp_path, refused_address):
    parameters = [Parameter("a", -1.0, 1.0)]  # the run at a = -1 fails: the study resumes with it to run
    run_study(quadratic, parameters, design="grid", n=3, out=tmp_path, scheduler="serial", progress=False)
    plan = (tmp_path / "plan.json").read_text()
    with pytest.raises(OSError, match="cannot connect to the dask scheduler"):
        run_study(quadratic, parameters, design="grid", n=3, out=tmp_path, scheduler=refused_address, progress=False)
    assert (tmp_path / "plan.json").read_text() == plan


def test_discard_plan_keeps_the_plan_of_a_folder_with_runs(tmp_path):
    folder = StudyFolder(tmp_path)
    assert folder.start({"n": 2}) is True and folder.start({"n": 2}) is False
    folder.record({"run": 0, "params": {"a": 1.0}, "status": "failed", "error": "x", "wall_s": 0.1, "worker": "",
                   "outputs": {}})
    assert folder.discard_plan() is False and folder.plan() == {"n": 2}
    (tmp_path / "runs.jsonl").unlink()
    assert folder.discard_plan() is True and folder.plan() is None


def test_a_study_folder_that_cannot_be_written_is_named_with_the_reason(tmp_path):
    """The study folder is checked as every output folder is (skfiber.core.files): a file in its place, and a
    folder where files cannot be made, are named with what they are."""
    blocker = tmp_path / "taken"
    blocker.write_text("")
    with pytest.raises(ValueError, match=r"the study folder .*taken exists and is not a folder; give a folder"):
        StudyFolder(blocker)
    with pytest.raises(ValueError, match=r"the study folder .*: cannot create the folder \(.*\); pick a writable "
                                         r"place"):
        StudyFolder(blocker / "below")


def test_a_failed_start_does_not_remove_a_plan_another_process_stored_or_leave_runs_without_one(tmp_path):
    """Two folder objects on one folder (two processes): only the one that stored the plan may remove it, and
    only while it is the plan it stored; runs without a plan are refused rather than taken as another study's."""
    first, second = StudyFolder(tmp_path), StudyFolder(tmp_path)
    assert first.start({"n": 2}) is True and second.start({"n": 2}) is False
    assert second.discard_plan() is False and first.plan() == {"n": 2}      # not the one that stored it
    (tmp_path / "plan.json").write_text(json.dumps({"n": 2, "seed": 1}))      # replaced meanwhile
    assert first.discard_plan() is False and first.plan() == {"n": 2, "seed": 1}
    first.record({"run": 0, "params": {"a": 1.0}, "status": "failed", "error": "x", "wall_s": 0.1, "worker": "",
                  "outputs": {}})
    (tmp_path / "plan.json").unlink()
    with pytest.raises(ValueError, match="holds runs of a study but no plan"):
        StudyFolder(tmp_path).start({"n": 3})


@pytest.mark.parametrize("given, named", [({"workers": 2, "scheduler": None}, "--workers"),
                                          ({"workers": None, "scheduler": "tcp://h:1"}, "--scheduler"),
                                          ({"workers": 2, "scheduler": "tcp://h:1"}, "--workers and --scheduler")])
def test_serial_with_dask_options_is_one_message_in_every_command(given, named, capsys):
    """``--serial`` with --workers or --scheduler: one message (skfiber.study.serial_conflict) for the study
    command and the demos that take these options."""
    from skfiber.demos import calibrate, sensitivity

    expected = f"--serial runs in this process, without dask; leave out {named}"
    assert serial_conflict(serial=True, **given) == expected and serial_conflict(serial=False, **given) is None
    options = [*(["--workers", "2"] if given["workers"] else []), *(["--scheduler", "tcp://h:1"] if given["scheduler"]
                                                                      else [])]
    assert cli_main(["study", "quadratic", "--serial", *options]) == 2
    assert expected in capsys.readouterr().err
    for demo in (calibrate, sensitivity):
        with pytest.raises(SystemExit):
            demo.main(["--serial", *options])
        assert expected in capsys.readouterr().err
