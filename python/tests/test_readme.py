# The README runs as written: every ```python block is run as a script, and
# examples/agent_shell.py runs as its docstring says, by its path, even when
# the python3 first on PATH is not the one pmon is installed for.
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
BLOCKS = re.findall(r"^```python\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)


def test_readme_has_python_snippets():
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_snippet_runs(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_agent_shell_runs_by_its_path(tmp_path):
    # A python3 first on PATH that cannot import pmon (as a pyenv or a
    # virtualenv's would): the example must not depend on it.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\nexec /usr/bin/python3 -E -s -S \"$@\"\n")
    (fake / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    assert subprocess.run(["python3", "-c", "import pmon"], env=env, capture_output=True).returncode != 0
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.fail("/usr/bin/python3 is missing: the example's interpreter")
    r = subprocess.run([str(ROOT / "examples" / "agent_shell.py"), "echo hi; sleep 300 & echo started"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[exit code 0]" in r.stdout and "hi\nstarted" in r.stdout, r.stdout
    assert "[1 process was still running after the command ended and was stopped:]" in r.stdout, r.stdout
