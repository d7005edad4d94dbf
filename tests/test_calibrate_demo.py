"""demos/calibrate.py: the biceps' and triceps' Smax recovered from the elbow-angle curve of a run with
hidden values (a short run, in this process)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from demos import calibrate as demo  # noqa: E402


def test_hidden_maximal_stresses_are_recovered(capsys):
    result = demo.main(["--serial", "--t-end", "0.25"])
    assert result["errors"]["smax_biceps"] < 1e-4 and result["errors"]["smax_triceps"] < 1e-4
    assert result["residual"] < 1e-4  # degrees, summed over the curve
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("summary: smax_biceps=") and "residual_deg=" in last
    assert pytest.approx(result["found"]["smax_biceps"], rel=1e-4) == demo.HIDDEN["smax_biceps"]
