# SPDX-License-Identifier: Apache-2.0
# The README and docs/ run as written. Every ```sh block runs with bash from
# the top of the checkout (pmon first on PATH), every ```python block as a
# script, every ```json block parses; a ```text block right after one of
# them is the output it prints, and is compared (snippets.expect_match).
# A block that cannot run here says so, with why, in the line above it:
# <!-- not run by the snippet test: WHY -->. The ```js blocks are run by
# node/test/readme.test.mjs. And examples/agent_shell.py runs as its
# docstring says, by its path, even when the python3 first on PATH is not
# the one pmon is installed for.
import json
import os
import pathlib
import re
import subprocess
import tempfile
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
RUN = {"sh", "python", "js", "json"}  # languages whose blocks run (js: in the Node suite)
SHOWN = {"", "text"}  # output, usage or protocol exchanges: shown, not run
NOT_RUN = re.compile(r"^<!-- not run by the snippet test: (.+\S) -->$")


class Block:
    def __init__(self, page, line, end, lang, code, expect, not_run):
        self.page, self.line, self.end, self.lang, self.code = page, line, end, lang, code
        self.expect, self.not_run = expect, not_run

    @property
    def id(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page):
    """The fenced blocks of a page, each with the ```text block that follows
    it (its output) and the reason it is not run, if the line above says."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        end = start + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        assert end < len(lines), f"{page}:{start + 1}: a block that never ends"
        above = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        nr = NOT_RUN.match(above)
        found.append(Block(page, start + 1, end + 1, lang, "\n".join(lines[start + 1:end]) + "\n", None,
                           nr.group(1) if nr else None))
        i = end + 1
    # A text block right after a code block (blank lines between) is its output.
    for a, b in zip(found, found[1:]):
        between = lines[a.end:b.line - 1]  # (1-based lines: those after a's closing fence)
        if a.lang in RUN and b.lang == "text" and all(not x.strip() for x in between):
            a.expect = b.code
    return found


ALL = [b for p in PAGES for b in blocks(p)]
SH = [b for b in ALL if b.lang == "sh" and not b.not_run]
PY = [b for b in ALL if b.lang == "python" and not b.not_run]
JSON = [b for b in ALL if b.lang == "json" and not b.not_run]


def expect_match(expected, actual):
    """Whether the output `actual` is what `expected` shows: runs of digits
    match any digits, a line "..." any lines (none too), "..." within a line
    any text, and runs of spaces are one space."""
    def norm(s):
        return " ".join(s.split())

    def line_re(line):
        parts = [re.sub(r"[0-9]+", "[0-9]+", re.escape(p)) for p in norm(line).split("...")]
        return re.compile(".*".join(parts) + r"\Z")

    want = [norm(x) for x in expected.splitlines()]
    got = [norm(x) for x in actual.splitlines()]

    def at(i, j):
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(at(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and line_re(want[i]).match(got[j]) is not None and at(i + 1, j + 1)

    return at(0, 0)


def pmon_executable():
    exe = os.environ.get("PMON")
    if not exe and os.environ.get("PMON_HELPERS"):
        exe = str(pathlib.Path(os.environ["PMON_HELPERS"]).resolve().parent.parent / "pmon")
    if not exe or not os.access(exe, os.X_OK):
        pytest.fail("the snippets need the pmon executable: set PMON, or PMON_HELPERS of a build")
    return exe


def run_checked(block, argv, cwd):
    """Runs a snippet under pmon run (whatever it leaves is stopped), with
    pmon first on PATH; asserts it exits 0 and prints what its text block shows."""
    pmon = pmon_executable()
    # (what a snippet makes with mktemp is removed with this directory)
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, PATH=f"{os.path.dirname(pmon)}:{os.environ['PATH']}", TMPDIR=scratch)
        r = subprocess.run([pmon, "run", "-q", "--timeout", "240s", "--", *argv], cwd=cwd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, f"{block.id}: exit {r.returncode}:\n{r.stdout}"
    if block.expect is not None:
        assert expect_match(block.expect, r.stdout), \
            f"{block.id}: the output differs from the text block under it.\nwant:\n{block.expect}\ngot:\n{r.stdout}"


def test_every_block_runs_or_says_why():
    assert SH and PY and JSON
    for b in ALL:
        assert b.lang in RUN | SHOWN, f"{b.id}: a ```{b.lang} block: mark it sh, python, js, json or text"
        if b.not_run:
            assert b.lang in RUN, f"{b.id}: a 'not run' comment above a block that is not code"
        if b.lang == "text":
            assert not b.code.strip().startswith("$ "), f"{b.id}: a shell session as text: make it a sh block"


def test_expect_match():
    assert expect_match("a 12 b\n...\nend\n", "a  7 b\nx\ny\nend\n")
    assert expect_match("pid ... gone\n", "pid 42 (sleep 300) gone\n")
    assert expect_match("...\n", "")
    assert not expect_match("a 1\n", "a 1\nb\n")
    assert not expect_match("a 1.5\n", "a 15\n")


@pytest.mark.parametrize("block", SH, ids=[b.id for b in SH])
def test_sh_snippet_runs(block, tmp_path):
    script = tmp_path / "snippet.sh"
    script.write_text("set -euo pipefail\n" + block.code)
    run_checked(block, ["bash", str(script)], ROOT)


@pytest.mark.parametrize("block", PY, ids=[b.id for b in PY])
def test_python_snippet_runs(block, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(block.code)
    run_checked(block, [sys.executable, str(script)], tmp_path)


@pytest.mark.parametrize("block", JSON, ids=[b.id for b in JSON])
def test_json_snippet_parses(block):
    json.loads(block.code)


def anchors(page):
    """The anchors GitHub makes of a page's headings."""
    out = set()
    for line in page.read_text().splitlines():
        m = re.match(r"^#+ (.*)", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(a)
    return out


def test_links_lead_somewhere():
    for page in PAGES + [ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md"]:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{page.relative_to(ROOT)}: a link to {target}, which does not exist"
            if anchor and dest.suffix == ".md":
                assert anchor in anchors(dest), f"{page.relative_to(ROOT)}: no heading for #{anchor} in {path or page.name}"


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
