"""The README's Python example runs as written."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README should hold a Python example"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["model"].predict(namespace["X"][:3]).shape == (3,)
    assert np.all(np.isfinite(namespace["model"].predict(namespace["X"][:3])))


def test_readme_has_two_setup_commands():
    commands = [line.strip() for line in README.read_text().splitlines() if line.startswith("    pip install")]
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    # CI runs the README's test command, with the linter between the install and the tests
    assert 'pip install -e ".[test]" && ruff check . && python3 -m pytest -q' in ci
    assert 'pip install -e ".[test]" && python3 -m pytest -q' in commands
