"""Parameter studies (skfiber.study): designs, the study folder, dask execution, resume, failures, CLI."""
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from skfiber.cli import main as cli_main
from skfiber.study import Parameter, StudyFolder, make_design, parse_parameter, run_study
from skfiber.study.targets import TARGETS, quadratic

distributed = pytest.importorskip("distributed")


def crash_once(params):
    """y = a², but the run with a = 0.5 kills its worker process the first time (a lost worker)."""
    marker = Path(os.environ["SKFIBER_TEST_STUDY_MARKERS"]) / "crashed"
    if params["a"] == 0.5 and not marker.exists():
        marker.write_text("")
        os._exit(1)
    return {"y": params["a"] ** 2}


@pytest.fixture
def by_value():
    """Let the workers unpickle this module's functions by value (the tests folder is not on their path)."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_designs_are_deterministic_and_in_range():
    params = [Parameter("a", 1.0, 2.0), Parameter("b", 1e-3, 1e-1, log=True)]
    for design, n, runs in (("grid", 3, 9), ("random", 5, 5), ("lhs", 5, 5), ("sobol", 4, 16)):
        rows = make_design(params, design, n=n, seed=7)
        assert len(rows) == runs and rows == make_design(params, design, n=n, seed=7)
        a = np.array([r["a"] for r in rows])
        b = np.array([r["b"] for r in rows])
        assert np.all((1 <= a) & (a <= 2)) and np.all((1e-3 <= b) & (b <= 1e-1))
    lhs = np.array([r["a"] for r in make_design(params, "lhs", n=10, seed=1)])
    assert sorted(np.floor((lhs - 1) * 10).astype(int)) == list(range(10))  # one sample per stratum
    assert make_design(params, "random", n=3, seed=1) != make_design(params, "random", n=3, seed=2)


@pytest.mark.parametrize("call, message", [
    (lambda: Parameter("1a", 0, 1), "identifier"),
    (lambda: Parameter("a", 1, 1), "low < high"),
    (lambda: Parameter("a", 0, float("nan")), "finite"),
    (lambda: Parameter("a", 0, 1, log=True), "positive"),
    (lambda: parse_parameter("a=1"), "NAME=LOW:HIGH"),
    (lambda: parse_parameter("a=x:2"), "numbers"),
    (lambda: make_design([Parameter("a", 0, 1)], "sobol", n=6), "power of 2"),
    (lambda: make_design([Parameter("a", 0, 1)], "halton", n=6), "unknown design"),
    (lambda: make_design([Parameter("a", 0, 1), Parameter("a", 1, 2)], "lhs", n=6), "distinct"),
    (lambda: make_design([], "lhs", n=6), "at least one"),
    (lambda: TARGETS["cable-sag"].check([Parameter("smax", 1, 2)]), "unknown parameter smax"),
])
def test_bad_parameters_are_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_study_without_a_folder_is_refused():
    with pytest.raises(TypeError, match="out must be the study's folder .*got None"):
        run_study(quadratic, [Parameter("a", -1.0, 1.0)], design="grid", n=3, out=None, scheduler="serial")


def test_a_failed_run_is_recorded_and_the_study_goes_on(tmp_path):
    r = run_study(quadratic, [Parameter("a", -1.0, 1.0)], design="grid", n=3, out=tmp_path, scheduler="serial",
                  progress=False)
    assert (r.completed, r.failed) == (2, 1)
    failed = r.table[r.table["status"] == "failed"].iloc[0]
    assert failed["a"] == -1.0 and failed["error"] == "ValueError: a must be ≥ 0, got -1"
    assert list(r.table.loc[r.table["status"] == "ok", "y"]) == [0.0, 1.0]
    assert (tmp_path / "results.csv").exists() or (tmp_path / "results.parquet").exists()
    # the columns as the guide lists them, though the first run failed (and has no outputs)
    assert list(r.table.columns) == ["run", "a", "y", "status", "error", "wall_s", "worker"]


def test_resume_skips_recorded_runs(tmp_path):
    params = [Parameter("a", 0.0, 1.0)]
    run_study(quadratic, params, design="lhs", n=5, seed=3, out=tmp_path, scheduler="serial", progress=False)
    runs = tmp_path / "runs.jsonl"
    lines = runs.read_text().splitlines()
    runs.write_text("\n".join(lines[:2]) + "\n" + lines[2][:17])  # killed while writing the third record
    assert StudyFolder(tmp_path).finished() == {0, 1}
    r = run_study(quadratic, params, design="lhs", n=5, seed=3, out=tmp_path, scheduler="serial", progress=False)
    assert (r.skipped, r.completed, r.failed) == (2, 3, 0)
    assert sorted(r.table["run"]) == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(r.table["y"], r.table["a"] ** 2)
    with pytest.raises(ValueError, match="holds another study .*seed"):
        run_study(quadratic, params, design="lhs", n=5, seed=4, out=tmp_path, scheduler="serial", progress=False)


def test_study_clusters_run_with_quiet_workers():
    """The cluster a study starts turns dask's statistical profiler off in its workers (it slowed the runs) and
    makes their other periodic wake-ups rarer (QUIET_WORKERS), and leaves this process's configuration as it
    was."""
    import dask
    from distributed import Client

    from skfiber.study.execute import QUIET_WORKERS, local_cluster
    before = {key: dask.config.get(key) for key in QUIET_WORKERS}
    assert before != QUIET_WORKERS  # (else the test could not fail)
    with local_cluster(1) as cluster, Client(cluster) as client:
        seen = client.run(lambda: {key: dask.config.get(key) for key in QUIET_WORKERS})
        assert list(seen.values()) == [QUIET_WORKERS]
    assert {key: dask.config.get(key) for key in QUIET_WORKERS} == before


def test_local_cluster_equals_serial_runs(tmp_path):
    target = TARGETS["cable-sag"]
    params = [Parameter("sigma0", 10.0, 60.0), Parameter("mu", 5e4, 2e5)]
    serial = run_study(target.run, params, design="lhs", n=2, seed=1, out=tmp_path / "serial", scheduler="serial",
                       progress=False)
    parallel = run_study(target.run, params, design="lhs", n=2, seed=1, out=tmp_path / "dask", workers=2,
                         warmup=target.warmup, progress=False)
    assert parallel.completed == 2 and parallel.failed == 0
    assert all(w.startswith("tcp://") for w in parallel.table["worker"])
    for column in ("sigma0", "mu", "sag_m", "max_force_N"):
        np.testing.assert_array_equal(parallel.table[column], serial.table[column])
    series = np.load(tmp_path / "dask" / "series" / "run_00000.npz")
    assert series["z_mid"][-1] == pytest.approx(-parallel.table["sag_m"][0])


def test_a_killed_worker_has_its_run_retried(tmp_path, monkeypatch, by_value):
    monkeypatch.setenv("SKFIBER_TEST_STUDY_MARKERS", str(tmp_path))
    r = run_study(crash_once, [Parameter("a", 0.0, 1.0)], design="grid", n=3, out=tmp_path / "study", workers=2,
                  progress=False)
    assert (tmp_path / "crashed").exists()  # a worker died
    assert (r.completed, r.failed) == (3, 0)
    np.testing.assert_allclose(sorted(r.table["y"]), [0.0, 0.25, 1.0])


def test_command_line(tmp_path, capsys):
    out = tmp_path / "study"
    assert cli_main(["study", "quadratic", "--param", "a=-1:1", "--design", "grid", "--n", "3", "--out", str(out),
                     "--serial"]) == 1  # a run failed
    assert "summary: runs=3 completed=2 failed=1 skipped=0" in capsys.readouterr().out
    assert cli_main(["study", str(out), "--summary"]) == 0
    printed = capsys.readouterr().out
    assert "ValueError: a must be ≥ 0" in printed and (out / "summary.png").exists()
    plan = json.loads((out / "plan.json").read_text())
    assert plan["target"] == "quadratic" and len(plan["rows"]) == 3
    for argv, message in ((["study", "cable-sag", "--param", "smax=1:2", "--out", str(out)], "unknown parameter smax"),
                          (["study", "nothing", "--out", str(out)], "unknown target"),
                          (["study", "quadratic"], "--out DIR is needed"),
                          (["study", str(tmp_path), "--summary"], "not a study folder"),
                          (["study", "quadratic", "--param", "a=2:1", "--out", str(out)], "low < high")):
        assert cli_main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_calibration_recovers_hidden_parameters():
    """The sag history of a run with hidden μ and η; calibrated from the middle of the ranges."""
    from skfiber.study.calibrate import calibrate
    from skfiber.study.targets import cable_sag

    hidden = {"mu": 1.2e5, "eta": 2.0e4}
    target = cable_sag(hidden)["series"]["z_mid"]
    r = calibrate(cable_sag, [Parameter("mu", 5e4, 2e5), Parameter("eta", 5e3, 5e4, log=True)], "z_mid", target,
                  scheduler="serial")
    assert r.parameters["mu"] == pytest.approx(hidden["mu"], rel=1e-5)
    assert r.parameters["eta"] == pytest.approx(hidden["eta"], rel=1e-5)
    assert r.residual_norm < 1e-8 and r.runs < 60


def test_calibration_jacobian_runs_as_a_batch_on_a_cluster():
    from distributed import Client, LocalCluster

    from skfiber.study.calibrate import calibrate

    t = np.linspace(0.0, 1.0, 7)
    target = 1.5 * np.exp(-0.7 * t)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        r = calibrate(_decay, [Parameter("a", 0.5, 3.0), Parameter("k", 0.1, 2.0)], "y", target, scheduler=client)
    assert r.parameters == pytest.approx({"a": 1.5, "k": 0.7}, rel=1e-6)
    with pytest.raises(ValueError, match="has 7 values, the target 3"):
        calibrate(_decay, [Parameter("a", 0.5, 3.0)], "y", target[:3], scheduler="serial")


def _decay(params):
    t = np.linspace(0.0, 1.0, 7)
    return {"series": {"y": params["a"] * np.exp(-params.get("k", 0.7) * t)}}


def test_upper_limb_target_changes_what_it_names():
    from skfiber.demos.upper_limb import study_run

    base = study_run({}, t_end=0.25)
    stronger = study_run({"smax_biceps": 5.5e7}, t_end=0.25)
    assert stronger["peak_biceps_force_N"] > base["peak_biceps_force_N"]  # a stronger biceps pulls harder
    assert stronger["peak_angle_deg"] > base["peak_angle_deg"]  # and flexes the elbow further
    assert base["series"]["angle_deg"].shape == base["series"]["t"].shape
    with pytest.raises(ValueError, match="does not know the parameters \\['lever'\\]"):
        study_run({"lever": 0.1})
    TARGETS["upper-limb"].check([Parameter("biceps_lever", 0.13, 0.17)])


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_line_now_and_then_not_one_per_run():
    """1280 quick runs: the first line, a line at once for each failure and the last one (not one line per
    run), on a terminal as in a log, each a whole line."""
    from skfiber.study.execute import _Progress

    for stream in (io.StringIO(), _Terminal()):
        progress = _Progress(1280, 0, True, stream=stream)
        for k in range(1280):
            progress.update(ok=k != 600)
        lines = stream.getvalue().split("\n")
        assert lines[-1] == "" and len(lines) == 4, lines
        assert lines[0].startswith("study: 1/1280 done (0 failed), 1279 remaining, ETA")
        assert lines[1].startswith("study: 601/1280 done (1 failed), 679 remaining, ETA")
        assert lines[2] == "study: 1280/1280 done (1 failed), 0 remaining, ETA 0:00:00"
    quiet = io.StringIO()
    progress = _Progress(5, 0, False, stream=quiet)
    for _ in range(5):
        progress.update(ok=False)
    assert quiet.getvalue() == "" and progress.failed == 5


def test_a_failed_run_runs_again_when_the_study_resumes(tmp_path, monkeypatch):
    """A failed run is recorded; resuming the study runs it again (a transient failure, a fixed bug) and the
    table keeps its last record; the runs that succeeded are not run again."""
    params = [Parameter("a", -1.0, 1.0)]
    first = run_study(quadratic, params, design="grid", n=3, out=tmp_path, scheduler="serial", progress=False)
    assert (first.completed, first.failed) == (2, 1) and StudyFolder(tmp_path).finished() == {1, 2}
    again = run_study(lambda p: {"y": p["a"] ** 2}, params, design="grid", n=3, out=tmp_path, scheduler="serial",
                      progress=False, target=first_target(tmp_path))
    assert (again.skipped, again.completed, again.failed) == (2, 1, 0)
    assert list(again.table["status"]) == ["ok"] * 3 and list(again.table["y"]) == [1.0, 0.0, 1.0]


def first_target(folder) -> str:
    """The target name a study folder records (to resume it with another function of the same study)."""
    return StudyFolder(folder).plan()["target"]


@pytest.mark.parametrize("outputs, says", [
    ({"a": 99.0}, "output 'a' has the name of a parameter"),
    ({"status": 1.0}, "output 'status' has the name of a parameter or of a column"),
    ({"y": 1.0, "series": [1, 2, 3]}, "'series' must be a dict"),
    ({"y": 1.0, "series": {"bad": [[1, 2], [3]]}}, "rectangular"),
])
def test_an_output_that_would_spoil_the_table_fails_its_run(outputs, says, tmp_path):
    """Outputs named like a parameter or a column of the table would overwrite it; a malformed series would
    stop the study: each fails its run (recorded, with the reason), and the study goes on."""
    r = run_study(lambda p: outputs, [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=tmp_path,
                  scheduler="serial", progress=False)
    assert (r.completed, r.failed) == (0, 2)
    assert says in r.table["error"][0] and list(r.table["a"]) == [0.0, 1.0]


@pytest.mark.parametrize("name", ["run", "status", "error", "wall_s", "worker", "series"])
def test_a_parameter_may_not_take_a_column_s_name(name):
    with pytest.raises(ValueError, match=f"may not be named '{name}'"):
        Parameter(name, 0.0, 1.0)


def test_ctrl_c_in_a_serial_study_writes_the_table_and_says_how_to_resume(tmp_path, capsys):
    calls = []

    def interrupted_third(p):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return {"y": p["a"]}

    with pytest.raises(KeyboardInterrupt):
        run_study(interrupted_third, [Parameter("a", 0.0, 1.0)], design="grid", n=5, out=tmp_path,
                  scheduler="serial", progress=False)
    assert "study: interrupted; 2 of 5 runs have succeeded" in capsys.readouterr().err
    table = tmp_path / "results.csv"
    assert table.exists() or (tmp_path / "results.parquet").exists()
    assert StudyFolder(tmp_path).finished() == {0, 1}


_SLOW_STUDY = """
import os, sys, time
from pathlib import Path
from skfiber.study import Parameter, run_study

def slow(params):
    marker = Path(sys.argv[2])
    if params["a"] == 0.0 and not marker.exists():   # "restarted": this run kills its worker once
        marker.write_text("")
        os._exit(1)
    time.sleep(0.5)
    return {"y": params["a"]}

if __name__ == "__main__":
    try:
        run_study(slow, [Parameter("a", 0.0, 1.0)], design="grid", n=12, out=sys.argv[1], workers=2, progress=False)
    except KeyboardInterrupt:
        sys.exit(130)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
@pytest.mark.parametrize("when", ["running", "starting", "restarted", "background"])
def test_ctrl_c_in_a_study_on_a_local_cluster_stops_it_cleanly(tmp_path, when):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) during a study on the local cluster,
    while runs are under way, while the cluster starts, or after a worker was restarted: the study writes its
    table, says how to resume and exits with 130, and the workers print no tracebacks (but those that are
    starting).  Before, every worker
    died with its own traceback, and closing the cluster of dead workers could hang.  A study started with
    SIGINT ignored (a background job) ignores it and runs to its end."""
    import signal
    import subprocess

    out, marker = tmp_path / "study", tmp_path / "crashed"
    if when != "restarted":
        marker.write_text("")
    sigint = signal.SIG_IGN if when == "background" else signal.SIG_DFL
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_STUDY, str(out), str(marker)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
    runs = out / "runs.jsonl"

    def workers_done():  # the workers that have recorded a run
        return {json.loads(line)["worker"] for line in runs.read_text().splitlines()} if runs.exists() else set()

    def there():
        if when == "starting":
            return (out / "plan.json").exists()
        # after a restart: the new worker has recorded a run (the crashed one never did)
        return len(workers_done()) >= (2 if when == "restarted" else 1)

    try:
        deadline = time.monotonic() + 120
        while not there():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the study did not get there within 120 s"
            time.sleep(0.02)
        if when == "starting":
            time.sleep(0.5)  # the cluster's workers are starting
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if when != "starting":  # (a worker that is starting dies of Ctrl-C before it can ignore it)
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    done = len(StudyFolder(out).finished())
    if when == "background":
        assert proc.returncode == 0 and done == 12, stderr
        return
    assert proc.returncode == 130, stderr
    assert "study: interrupted;" in stderr and "the same call resumes it" in stderr
    assert done < 12 and ((out / "results.csv").exists() or (out / "results.parquet").exists())
    assert marker.exists()


_SLOW_CALIBRATION = """
import sys, time
from pathlib import Path
import numpy as np
from skfiber.study import Parameter, calibrate

def line(params):
    Path(sys.argv[1]).write_text("")   # a run has started
    time.sleep(0.5)
    return {"series": {"y": params["a"] * np.linspace(0.0, 1.0, 5)}}

if __name__ == "__main__":
    try:
        calibrate(line, [Parameter("a", 0.0, 5.0)], "y", 2.0 * np.linspace(0.0, 1.0, 5), scheduler=None)
    except KeyboardInterrupt:
        sys.exit(130)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
def test_ctrl_c_in_a_calibration_on_a_local_cluster_stops_it_cleanly(tmp_path):
    import signal
    import subprocess

    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CALIBRATION, str(started)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        from conftest import wait_for_file  # (not at the top: the workers import this module, by value)

        wait_for_file(started, proc, timeout=120, what="no run started within 120 s")
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def _nap(params):
    time.sleep(1.0)
    return {"y": params["a"]}


def test_ctrl_c_in_a_study_on_the_user_s_cluster_cancels_its_runs(tmp_path):
    """The user's cluster goes on after Ctrl-C; the study's runs still waiting on it are cancelled."""
    from distributed import Client, LocalCluster

    from skfiber.study.execute import run_on_dask

    rows = [{"a": float(a)} for a in range(12)]
    seen = []

    def record(rec, series):
        seen.append(rec["run"])
        raise KeyboardInterrupt  # Ctrl-C while the first finished run is recorded

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        with pytest.raises(KeyboardInterrupt):
            run_on_dask(_nap, rows, list(range(12)), record, scheduler=client, workers=None, warmup=None, retries=0)
        for _ in range(40):  # 2 s: the 11 runs not yet recorded would take 11 s
            left = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
            if left == 0:
                break
            time.sleep(0.05)
        assert left == 0 and len(seen) == 1


@pytest.mark.parametrize("max_runs", [3, 6, 10])
def test_calibration_runs_the_model_at_most_max_runs_times(max_runs):
    from skfiber.study.calibrate import calibrate

    target = 1.5 * np.exp(-0.7 * np.linspace(0.0, 1.0, 7))
    r = calibrate(_decay, [Parameter("a", 0.5, 3.0), Parameter("k", 0.1, 2.0)], "y", target, scheduler="serial",
                  max_runs=max_runs)
    assert 1 <= r.runs <= max_runs


@pytest.mark.parametrize("kwargs, says", [
    (dict(fixed={"a": 1.0}), "'a' is both calibrated and fixed"),
    (dict(start={"a": 7.0}), r"start a=7.0 lies outside its range \[0.5, 3\]"),
    (dict(max_runs=2), "max_runs must be an integer ≥ 3"),
])
def test_calibration_refuses_contradictory_settings(kwargs, says):
    from skfiber.study.calibrate import calibrate

    target = 1.5 * np.exp(-0.7 * np.linspace(0.0, 1.0, 7))
    with pytest.raises(ValueError, match=says):
        calibrate(_decay, [Parameter("a", 0.5, 3.0), Parameter("k", 0.1, 2.0)], "y", target, scheduler="serial",
                  **kwargs)


def test_a_study_resumes_under_either_spelling_of_its_target(tmp_path, capsys):
    """A folder that recorded ``cable_sag`` (as typed, in earlier versions) resumes as ``cable-sag`` and the
    other way round."""
    argv = ["--param", "sigma0=10:60", "--design", "grid", "--n", "2", "--serial"]
    old = tmp_path / "old"
    assert cli_main(["study", "cable-sag", "--out", str(old), *argv]) == 0
    plan = StudyFolder(old).plan()
    (old / "plan.json").write_text(json.dumps(dict(plan, target="cable_sag")))
    for spelling in ("cable-sag", "cable_sag"):
        assert cli_main(["study", spelling, "--out", str(old), *argv]) == 0
        assert "0 runs done, 0 failed, 2 succeeded before" in capsys.readouterr().out


def test_a_series_keeps_its_dtype(tmp_path):
    r = run_study(lambda p: {"y": 1.0, "series": {"steps": np.arange(3), "on": np.array([True, False, True])}},
                  [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=tmp_path, scheduler="serial", progress=False)
    assert r.completed == 2
    saved = np.load(tmp_path / "series" / "run_00000.npz")
    assert saved["steps"].dtype.kind == "i" and saved["on"].dtype == bool


@pytest.mark.parametrize("target", ["cable-sag", "upper-limb"])
def test_ctrl_c_in_a_target_s_simulation_stops_the_study(target, tmp_path, monkeypatch):
    """simulate keeps what it computed when Ctrl-C stops it; a study's run is no outcome of its parameters
    then: the serial study stops (KeyboardInterrupt) with nothing recorded for that run, instead of
    recording a part of the run as its result (a calibration failed on a series of the wrong length)."""
    import skfiber as sf
    import skfiber.run

    real = sf.simulate

    def interrupted(model, **kwargs):
        def ctrl_c(state, info):
            if state.t > 0.05:
                raise KeyboardInterrupt
        return real(model, **dict(kwargs, callback=ctrl_c))

    monkeypatch.setattr(sf, "simulate", interrupted)
    monkeypatch.setattr(skfiber.run, "simulate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_study(TARGETS[target].run, TARGETS[target].defaults[:1], design="lhs", n=2, out=tmp_path / "s",
                  scheduler="serial", progress=False)
    assert list(StudyFolder(tmp_path / "s").records()) == []  # neither a success nor a failure recorded


def test_a_bad_scheduler_address_is_named_with_what_to_give():
    pytest.importorskip("distributed")
    from skfiber.study.execute import connect

    with pytest.raises(ValueError, match="cannot connect to the dask scheduler 'foo': .*tcp://host:8786.*'serial'"):
        connect("foo")


def test_a_scheduler_address_with_nothing_listening_is_refused_at_once(monkeypatch):
    """dask would retry it for its connect timeout (30 s); the check refuses it before dask is asked."""
    pytest.importorskip("distributed")
    import socket

    import distributed

    from skfiber.study import execute

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class NoClient:
        def __init__(self, *args, **kwargs):
            raise AssertionError("dask's Client was asked to connect to an address that refuses")

    monkeypatch.setattr(distributed, "Client", NoClient)
    monkeypatch.setattr(execute, "CONNECT_CHECK_SECONDS", 0.5)
    with pytest.raises(OSError, match=rf"cannot connect to the dask scheduler 'tcp://127.0.0.1:{port}': .*refused.*"
                                      r"tcp://host:8786"):
        execute.connect(f"tcp://127.0.0.1:{port}")


def test_the_early_check_lets_through_what_answers_and_leaves_the_rest_to_dask(monkeypatch):
    pytest.importorskip("distributed")
    import socket

    from skfiber.study.execute import refuse_at_once

    with socket.socket() as server:  # something listens: the check passes it on
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert refuse_at_once(f"tcp://127.0.0.1:{server.getsockname()[1]}") is None
    assert refuse_at_once("tls://127.0.0.1:1") is None  # another protocol: dask's to judge
    assert refuse_at_once("foo") is None  # no port: dask says what is missing

    import threading

    from skfiber.study import execute

    with socket.socket() as probe:  # a scheduler that starts listening a moment after the study asks
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    late = socket.socket()
    late.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def start():
        late.bind(("127.0.0.1", port))
        late.listen()

    timer = threading.Timer(0.5, start)
    timer.start()
    try:
        assert refuse_at_once(f"tcp://127.0.0.1:{port}") is None
    finally:
        timer.join()
        late.close()
    assert execute.CONNECT_CHECK_SECONDS > 0.5

    def slow(*args, **kwargs):
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", slow)
    assert refuse_at_once("tcp://127.0.0.1:1") is None  # no answer in time: dask waits its own timeout

    def name_server(code):
        def fails(*args, **kwargs):
            raise socket.gaierror(code, "name server")
        return fails

    monkeypatch.setattr(socket, "create_connection", name_server(socket.EAI_AGAIN))
    assert refuse_at_once("tcp://somewhere:8786") is None  # failed for now: dask retries
    monkeypatch.setattr(socket, "create_connection", name_server(socket.EAI_NONAME))
    with pytest.raises(socket.gaierror):  # no such host
        refuse_at_once("tcp://somewhere:8786")


def test_a_grid_too_large_to_hold_is_refused_before_it_is_built():
    from skfiber.study.design import MAX_GRID_RUNS

    params = [Parameter(f"p{k}", 0.0, 1.0) for k in range(6)]
    with pytest.raises(ValueError, match=r"n = 16 values for each of the 6 parameters has 16,777,216 runs, more "
                                         r"than 1,000,000; give a smaller n"):
        make_design(params, "grid", n=16)
    assert MAX_GRID_RUNS == 1_000_000 and len(make_design(params[:2], "grid", n=4)) == 16


@pytest.mark.parametrize("parameters, says", [
    (Parameter("a", 0.0, 1.0), "parameters must be a list of Parameter or of .name, low, high. tuples"),
    ({"a": (0.0, 1.0)}, "got dict"),
    ([], "at least one parameter"),
    ([("a", 0.0)], r"a \(name, low, high\[, log\]\) tuple"),
    ([Parameter("a", 0.0, 1.0), ("a", 1.0, 2.0)], r"distinct, got \['a', 'a'\]"),
])
def test_bad_parameter_lists_are_named(parameters, says, tmp_path):
    from skfiber.study.calibrate import calibrate

    with pytest.raises(ValueError, match=says):
        run_study(lambda p: {"y": 1.0}, parameters, design="random", n=2, out=tmp_path, scheduler="serial",
                  progress=False)
    with pytest.raises(ValueError, match=says):
        calibrate(lambda p: {"series": {"y": np.zeros(2)}}, parameters, "y", np.zeros(2), scheduler="serial")


@pytest.mark.parametrize("seed", [None, -1, 1.5, True])
def test_a_bad_seed_is_named(seed):
    with pytest.raises(ValueError, match=f"seed must be an integer ≥ 0, got {seed!r}"):
        make_design([Parameter("a", 0.0, 1.0)], "random", n=2, seed=seed)


@pytest.mark.parametrize("name", ["file", "allow_pickle"])
def test_a_series_named_like_numpys_writer_arguments_fails_its_run_only(name, tmp_path):
    def run(params):
        return {"y": params["a"], "series": {name if params["a"] > 0.5 else "ok": np.arange(3.0)}}

    study = run_study(run, [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=tmp_path, scheduler="serial",
                      progress=False)
    assert list(study.table["status"]) == ["ok", "failed"]
    assert f"a series may not be named {name!r}" in study.table["error"].iloc[1]


_HOLDER = """
import sys, time
from pathlib import Path
from skfiber.study import StudyFolder

with StudyFolder(sys.argv[1]).hold():
    Path(sys.argv[2]).write_text("held")
    time.sleep(60)
"""


def test_a_second_process_is_kept_out_of_a_study_s_folder_and_a_killed_one_leaves_no_lock(tmp_path, capsys):
    """While one process runs a study in a folder, another that would run one there is refused with the folder's
    name and what to do (the API's ValueError, the command's one-line error); once the first process dies, even
    by SIGKILL, the folder is free again."""
    import subprocess

    out, marker = tmp_path / "study", tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out), str(marker)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        from conftest import wait_for_file  # (not at the top: the workers import this module, by value)

        wait_for_file(marker, holder, timeout=60, what="the other process did not take the folder")
        with pytest.raises(ValueError, match="is in use by another process running a study there") as err:
            run_study(quadratic, [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=out, scheduler="serial",
                      progress=False)
        assert str(out) in str(err.value)
        assert not (out / "plan.json").exists() and not (out / "runs.jsonl").exists()  # nothing recorded
        assert cli_main(["study", "quadratic", "--param", "a=0:1", "--design", "grid", "--n", "2", "--out",
                         str(out), "--serial"]) == 2
        said = capsys.readouterr().err
        assert "is in use by another process" in said and "Traceback" not in said and len(said.splitlines()) == 1
    finally:
        holder.kill()  # (SIGKILL: no clean-up of its own)
        holder.communicate()
    study = run_study(quadratic, [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=out, scheduler="serial",
                      progress=False)
    assert study.completed == 2


def test_an_interrupted_study_command_ends_with_the_counts_it_reached(tmp_path, capsys, monkeypatch):
    """Ctrl-C stops `skfiber study` (exit code 130); its last line still says how many of the planned runs
    have succeeded and failed, as its message on stderr does."""
    import dataclasses

    calls = []

    def stops_at_the_fourth(params):
        calls.append(params)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return quadratic(params)

    monkeypatch.setitem(TARGETS, "quadratic", dataclasses.replace(TARGETS["quadratic"], run=stops_at_the_fourth))
    code = cli_main(["study", "quadratic", "--param", "a=-1:1", "--design", "grid", "--n", "5", "--out",
                     str(tmp_path / "s"), "--serial"])
    out, err = capsys.readouterr()
    assert code == 130 and "1 of 5 runs have succeeded" in err  # (a = −1 and −0.5 failed, a = 0 succeeded)
    assert out.strip().splitlines()[-1] == "summary: runs=3 ok=1 failed=2 planned=5 interrupted=1"


_FAILS_ON_WORKERS = '''
import os
if os.environ["SKFIBER_TEST_PARENT_PID"] != str(os.getpid()):
    raise ImportError("no module named 'labdata' on this worker")


def run(params):
    return {"y": params["a"]}
'''


def test_a_run_function_the_workers_cannot_load_stops_the_study_at_once(tmp_path, monkeypatch):
    """A run function whose module fails to import on the workers: dask's workers die of it and are not
    started again, so the study would wait for ever; it stops at once with the worker's error and records
    nothing (its plan is not kept)."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "fails_on_workers.py").write_text(_FAILS_ON_WORKERS)
    monkeypatch.setenv("SKFIBER_TEST_PARENT_PID", str(os.getpid()))
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    import fails_on_workers

    start = time.monotonic()
    with pytest.raises(ValueError, match=r"the run function fails_on_workers.run cannot be loaded on the study's "
                                         r"workers \(ImportError: no module named 'labdata' on this worker\)"):
        run_study(fails_on_workers.run, [Parameter("a", 0.0, 1.0)], design="grid", n=2, out=tmp_path / "s",
                  workers=1, progress=False)
    assert time.monotonic() - start < 60
    assert not (tmp_path / "s" / "plan.json").exists()
