"""demos/sensitivity.py: the Sobol indices of the Ishigami function against their closed form, through the
whole study chain (design, runs, table, estimator), and the demo's files and summary."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("SALib")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from demos import sensitivity  # noqa: E402
from skfiber.study.targets import ISHIGAMI_INDICES  # noqa: E402


def test_ishigami_indices_within_their_confidence_intervals(tmp_path, capsys):
    result = sensitivity.main(["--small", "--out", str(tmp_path)])
    y = result["indices"]["y"]
    for key in ("S1", "ST"):
        exact = np.array(ISHIGAMI_INDICES[key])
        assert np.all(np.abs(y[key] - exact) <= 1.5 * y[f"{key}_conf"] + 0.02), (key, y[key], y[f"{key}_conf"])
    assert (tmp_path / "indices.csv").read_text().count("\n") == 4
    assert (tmp_path / "sobol_indices.png").stat().st_size > 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("summary: runs=1280 failed=0 wall_s=") and " top_parameter=x" in last
    assert "target=ishigami" in last and "max_index_error=" in last


def test_a_study_with_failed_runs_ends_with_its_summary_and_exit_code_1(tmp_path, capsys, monkeypatch):
    # y = a² fails for a < 0: on [−1, 1] about half of the runs fail, and Saltelli's estimator needs them all
    from skfiber.study import Parameter
    from skfiber.study.targets import Target, quadratic

    monkeypatch.setitem(sensitivity.TARGETS, "quadratic",
                        Target(quadratic, None, (Parameter("a", -1.0, 1.0),), ("a",), "y = a², failing for a < 0"))
    code = sensitivity.main(["--target", "quadratic", "--n", "8", "--scheduler", "serial", "--out", str(tmp_path)])
    assert code == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-2].startswith("Sobol indices not computed: ") and "runs failed" in out[-2]
    assert out[-1].startswith("summary: runs=24 failed=") and "top_parameter=nan max_st=nan" in out[-1]
    assert not (tmp_path / "indices.csv").exists()


def test_summary_takes_the_largest_finite_total_index():
    # a constant output has nan indices (its variance is 0): it neither wins nor resets the search
    result = dict(names=["a", "b"], runs=8, failed=0, wall_s=1.0, speedup=float("nan"), target="x",
                  indices={"y1": {"ST": np.array([0.2, 0.9])}, "y2": {"ST": np.array([np.nan, np.nan])},
                           "y3": {"ST": np.array([0.1, 0.05])}})
    assert "top_parameter=b max_st=0.900" in sensitivity.summary(result)
    result["indices"] = {"y2": {"ST": np.array([np.nan, np.nan])}}
    assert "top_parameter=nan max_st=nan" in sensitivity.summary(result)


def test_serial_runs_in_this_process_as_in_calibrate_and_skfiber_study(tmp_path, capsys, monkeypatch):
    import skfiber.study.execute as execute

    monkeypatch.setattr(execute, "run_on_dask", None)  # (a study on dask would fail calling it)
    result = sensitivity.main(["--target", "ishigami", "--n", "8", "--serial", "--out", str(tmp_path)])
    assert result["failed"] == 0 and np.isnan(result["speedup"])
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("summary: runs=40 failed=0")
    # --scheduler serial still does the same
    assert np.isnan(sensitivity.main(["--target", "ishigami", "--n", "8", "--scheduler", "serial",
                                      "--out", str(tmp_path / "b")])["speedup"])
    for extra in (["--workers", "2"], ["--scheduler", "tcp://host:8786"]):
        with pytest.raises(SystemExit) as stop:
            sensitivity.main(["--serial", *extra, "--out", str(tmp_path / "c")])
        assert stop.value.code == 2
        assert f"--serial runs in this process, without dask; leave out {extra[0]}" in capsys.readouterr().err
