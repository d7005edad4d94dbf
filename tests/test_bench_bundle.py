"""The many-fiber benchmark (benchmarks/bench_bundle.py): its counts, and its quick mode's summary line."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_bundle as bb  # noqa: E402

from skfiber.coupling import CoupledProblem  # noqa: E402


def test_the_newton_iterations_of_failed_attempts_are_counted(monkeypatch):
    """Every Newton iteration of the coupled problem solves once (``solve_newton``): the run's count of all
    iterations is that number, the converged steps' count plus the failed attempts'."""
    solves = []
    original = CoupledProblem.solve_newton

    def counted(self, *args, **kwargs):
        solves.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CoupledProblem, "solve_newton", counted)
    run = bb.timed_run(9, 4, 0.03)
    assert run["retries"] > 0  # (the case has failed attempts: what this test is about)
    assert run["newton_all"] == len(solves)
    assert bb.failed_iterations(run) == len(solves) - run["newton"] > 0


def test_the_quick_mode_ends_with_its_summary(capsys):
    out = bb.main(["--quick", "--elastica-wall", "0"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("summary: bundle36_s=") and "scaling_exponent=" in lines[-1]
    assert "newton_mean=" in lines[-1]
    assert any("per Newton iteration (all " in line for line in lines)
    main = out["main"]
    assert main["newton_all"] >= main["newton"] and out["elastica"] is None
