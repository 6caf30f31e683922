// SPDX-License-Identifier: Apache-2.0
// The ```js blocks of the README and docs/ run as written: each as a module
// of a project that installed this package (node_modules/pmon-runtime is
// this directory), under pmon run (whatever it leaves is stopped). A ```text
// block right after one is the output it prints, compared as
// python/tests/test_readme.py compares (digits match any digits, a line
// "..." any lines, "..." within a line any text, runs of spaces as one).
// PMON_NODE_PACKAGE names an installed package to run them against instead
// (the artifact test). A block that cannot run says so, with why, in the line above it:
// <!-- not run by the snippet test: WHY -->.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import './helpers.mjs'; // sets PMON to build/pmon when it is not set
import { findPmon } from '../index.mjs';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(pkg, '..');
const pages = [join(root, 'README.md'), ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => join(root, 'docs', f))];

// The fenced blocks of a page: {lang, line, end, code, notRun}, and
// `expect`, the text block right after a code block.
function blocks(page) {
  const lines = readFileSync(page, 'utf8').split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(\S*)\s*$/.exec(lines[i]);
    if (!m) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== '```') end++;
    let k = i - 1;
    while (k >= 0 && !lines[k].trim()) k--;
    const nr = k >= 0 ? /^<!-- not run by the snippet test: (.+\S) -->$/.exec(lines[k]) : null;
    found.push({ lang: m[1], line: i + 1, end: end + 1, code: lines.slice(i + 1, end).join('\n') + '\n', notRun: nr?.[1] });
    i = end;
  }
  for (let j = 0; j + 1 < found.length; j++) {
    const [a, b] = [found[j], found[j + 1]];
    if (b.lang === 'text' && lines.slice(a.end, b.line - 1).every((x) => !x.trim())) a.expect = b.code;
  }
  return found.map((b) => ({ ...b, id: `${relative(root, page)}:${b.line}` }));
}

export function expectMatch(expected, actual) {
  const norm = (s) => s.split(/\s+/).filter(Boolean).join(' ');
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/[0-9]+/g, '[0-9]+');
  const lineRe = (l) => new RegExp('^' + norm(l).split('...').map(esc).join('.*') + '$');
  const want = expected.split('\n').map(norm);
  const got = actual.split('\n').map(norm);
  while (want.length && want[want.length - 1] === '') want.pop();
  while (got.length && got[got.length - 1] === '') got.pop();
  const at = (i, j) => {
    if (i === want.length) return j === got.length;
    if (want[i] === '...') {
      for (let k = j; k <= got.length; k++) if (at(i + 1, k)) return true;
      return false;
    }
    return j < got.length && lineRe(want[i]).test(got[j]) && at(i + 1, j + 1);
  };
  return at(0, 0);
}

const js = pages.flatMap(blocks).filter((b) => b.lang === 'js');

test('the pages have js snippets, and the matcher matches as documented', () => {
  assert.ok(js.length > 0);
  assert.ok(expectMatch('a 12 b\n...\nend\n', 'a  7 b\nx\ny\nend\n'));
  assert.ok(expectMatch('pid ... gone\n', 'pid 42 (sleep 300) gone\n'));
  assert.ok(!expectMatch('a 1\n', 'a 1\nb\n'));
});

for (const b of js) {
  test(`${b.id} runs as written`, { skip: b.notRun }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'pmon-snippet-'));
    try {
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(process.env.PMON_NODE_PACKAGE || pkg, join(dir, 'node_modules', 'pmon-runtime'));
      writeFileSync(join(dir, 'package.json'), '{"type": "module", "private": true}\n');
      writeFileSync(join(dir, 'snippet.mjs'), b.code);
      const r = spawnSync(process.env.PMON || findPmon(), ['run', '-q', '--timeout', '240s', '--', process.execPath, 'snippet.mjs'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 300_000,
      });
      const out = r.stdout + r.stderr;
      assert.equal(r.status, 0, `${b.id}: exit ${r.status}:\n${out}`);
      if (b.expect !== undefined)
        assert.ok(expectMatch(b.expect, r.stdout), `${b.id}: the output differs from the text block under it.\nwant:\n${b.expect}\ngot:\n${out}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
