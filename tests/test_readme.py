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
    matplotlib.use("Agg")
    namespace: dict = {}
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    out = capsys.readouterr().out.split()
    radius, force = float(out[0]), float(out[1])
    assert 0 < radius < 0.05 and force > 0  # the fiber thins under tension and pulls
