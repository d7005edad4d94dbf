"""The Python examples in README.md run as printed (in order, sharing one namespace)."""
import re
from pathlib import Path

import matplotlib

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 2


def test_readme_examples_run(capsys):
    """Each block on its own (a fresh namespace: a reader may copy any one of them)."""
    matplotlib.use("Agg")
    outputs = []
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), {})  # noqa: S102 - our own README
        outputs.append(capsys.readouterr().out.split())
    radius, force = float(outputs[0][0]), float(outputs[0][1])
    assert 0 < radius < 0.05 and force > 0  # the fiber thins under tension and pulls
    assert "'bending']" in outputs[1]
    assert outputs[2] == ["sag.pvd", "11"]  # the start and 10 steps
