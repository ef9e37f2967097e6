"""The Python examples of README.md and docs/python.md run and say what they claim."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", (ROOT / path).read_text(), re.S)


def test_the_readme_example_runs():
    (block,) = python_blocks("README.md")
    exec(compile(block, "README.md", "exec"), {})


def test_the_gradient_descent_example_fits_the_line():
    block = python_blocks("docs/python.md")[0]
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    claimed = re.search(r"# (loss .*)", block).group(1)
    assert out.stdout.strip() == claimed.strip()


def test_the_higher_order_example_runs():
    (block,) = [b for b in python_blocks("docs/python.md") if "compile_hessian" in b]
    exec(compile(block, "docs/python.md", "exec"), {})
