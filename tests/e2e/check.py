#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Named checks on JSON for the end-to-end scenarios (reports, replies, the
output of --json): called from shell, through the functions of common.inc.

SRC is a JSON text (it starts with { or [), - (one on stdin) or the path of
a file holding one (and nothing else), or lines:FILE (a file of JSON lines,
one message each, read as the list of them). PATH names a value in it: keys and list indexes joined by
dots (stop.reason, command.3, result.terminals.0.pid); a [KEY=VALUE] picks
the one element of a list with those fields (result.terminals[terminalId=j1].pid,
leftovers[pid=7,start_time=99]; none when there is not exactly one), a
{KEY=VALUE,...} all the elements with those fields, as a list (leftovers{pid=7}.#);
# is the length of the value before it (result.terminals.#), #b the length
of a string in bytes (UTF-8); * takes the rest of the path in each element
of a list (result.terminals.*.status: the list of their statuses).

A value is compared as text: a string as it is, anything else as JSON
(true, 3, null, ["a", "b"]).

  check.py get SRC PATH [DEFAULT]      prints the value (or DEFAULT; exit 1:
                                       absent and no DEFAULT)
  check.py eq SRC PATH WANT            the value is WANT
  check.py ne SRC PATH WANT            the value is there and is not WANT
  check.py absent SRC PATH             there is no such value
  check.py has SRC PATH TEXT           the value (as text) contains TEXT
  check.py cmp SRC PATH OP N           the number compares: OP is one of
                                       -lt -le -gt -ge -eq -ne
  check.py is [-m LABEL] SRC CHECK...  each CHECK holds: PATH=WANT, PATH!=WANT,
                                       PATH~TEXT (contains), PATH^=TEXT (starts
                                       with; PATH^= alone: a string), PATH$=TEXT
                                       (ends with), PATH=~REGEX (matches), PATH<N, PATH<=N,
                                       PATH>N, PATH>=N; PATH=(absent) and
                                       PATH!=(absent) say whether it is there;
                                       PATH=@FILE: the string is FILE's text
  check.py params [K=STR|K:=JSON|{JSON}]... -- COMMAND ARG...
                                       prints {"command":..,"args":[..],K:..}
                                       (a {JSON} object's fields added)

On failure a check prints one line, what was expected and what was found,
and exits 1. The shell side adds the scenario's name and ends it."""
import json
import operator
import os
import re
import sys

ABSENT = object()


STDIN = []
LABEL = [""]
WHY = [""]  # why the last value looked for is absent, when that says more


def load(src):
    if src == "-":
        STDIN.append(sys.stdin.read())
        text = STDIN[0]
    elif src.startswith("lines:"):
        with open(src[6:], encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    else:
        text = src if src.lstrip()[:1] in ("{", "[") or not os.path.isfile(src) else open(src, encoding="utf-8").read()
    try:
        return json.loads(text)
    except ValueError as e:
        print("%sexpected one JSON document in %s, found: %s (%s)" % (LABEL[0], name_of(src), json.dumps(text[:200]), e))
        sys.exit(1)


def name_of(src):
    if src.startswith("lines:"):
        return os.path.basename(src[6:])
    if src == "-":
        src = STDIN[0].strip()
    if src.lstrip()[:1] in ("{", "["):
        return "reply " + (src if len(src) <= 300 else src[:300] + "...")
    return os.path.basename(src)


STEP = re.compile(r"([^.\[{]+)|\[([^=\]]+=[^\]]*)\]|\{([^=}]+=[^}]*)\}|\.")


def walk(value, path):
    pos = 0
    while pos < len(path):
        m = STEP.match(path, pos)
        if not m or m.end() == pos:
            raise SystemExit("check.py: bad path " + path)
        pos = m.end()
        key, fields, every = m.groups()
        if every is not None:
            if not isinstance(value, list):
                return ABSENT
            want = [f.partition("=")[::2] for f in every.split(",")]
            value = [x for x in value if isinstance(x, dict) and all(k in x and text(x[k]) == v for k, v in want)]
            continue
        if key is None and fields is None:
            continue
        if fields is not None:
            want = [f.partition("=")[::2] for f in fields.split(",")]
            if not isinstance(value, list):
                return ABSENT
            hits = [x for x in value if isinstance(x, dict) and all(k in x and text(x[k]) == v for k, v in want)]
            if len(hits) != 1:
                WHY[0] = " (%d elements with %s)" % (len(hits), fields)
                return ABSENT
            value = hits[0]
        elif key == "*":
            if not isinstance(value, list):
                return ABSENT
            each = [walk(x, path[pos:]) for x in value]
            return ABSENT if ABSENT in each else each
        elif key == "#":
            if not isinstance(value, (list, dict, str)):
                return ABSENT
            value = len(value)
        elif key == "#b":
            if not isinstance(value, str):
                return ABSENT
            value = len(value.encode())
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", key):
            i = int(key)
            if not -len(value) <= i < len(value):
                return ABSENT
            value = value[i]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return ABSENT
    return value


def text(value):
    if value is ABSENT:
        return "(absent)"
    return value if isinstance(value, str) else json.dumps(value)


def shown(value):
    if value is ABSENT:
        return "(absent)" + WHY[0]
    s = json.dumps(value)
    return s if len(s) <= 200 else s[:200] + "..."


OPS = {"-lt": operator.lt, "-le": operator.le, "-gt": operator.gt, "-ge": operator.ge,
       "-eq": operator.eq, "-ne": operator.ne}


def params(argv):
    out = {}
    while argv and argv[0] != "--":
        if argv[0].startswith("{"):
            out.update(json.loads(argv[0]))
            argv = argv[1:]
            continue
        k, sep, v = argv[0].partition(":=")
        if sep:
            out[k] = json.loads(v)
        else:
            k, sep, v = argv[0].partition("=")
            if not sep:
                raise SystemExit("check.py params: not K=STR or K:=JSON: " + argv[0])
            out[k] = v
        argv = argv[1:]
    argv = argv[1:]
    if argv:
        out = {"command": argv[0], "args": argv[1:], **out}
    print(json.dumps(out))


CHECK = re.compile(r"((?:[^.\[{=!<>~^$]+|\[[^\]]*\]|\{[^}]*\}|\.)+)(=~|=|!=|~|\^=|\$=|<=|>=|<|>)(.*)", re.S)
NUM = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def holds(value, op, want):
    if op == "=" and want.startswith("@"):
        with open(want[1:], encoding="utf-8", newline="") as f:
            return value == f.read()
    if op == "=":
        return text(value) == want
    if op == "!=":
        return text(value) != want
    if op == "~":
        return value is not ABSENT and want in text(value)
    if op == "=~":
        return isinstance(value, str) and re.search(want, value) is not None
    if op == "^=":
        return isinstance(value, str) and value.startswith(want)
    if op == "$=":
        return isinstance(value, str) and value.endswith(want)
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and NUM[op](value, float(want)))


def is_(argv):
    label = ""
    if argv[0] == "-m":
        label, argv = argv[1] + ": ", argv[2:]
        LABEL[0] = label
    src, doc = argv[0], load(argv[0])
    for c in argv[1:]:
        m = CHECK.fullmatch(c)
        if not m:
            raise SystemExit("check.py is: not PATH OP VALUE: " + c)
        path, op, want = m.groups()
        WHY[0] = ""
        value = walk(doc, path)
        if not holds(value, op, want):
            if not want.isprintable():
                want = json.dumps(want)
            shown_want = want if op == "=" else "%s %s" % ({"~": "to contain", "^=": "to start with", "$=": "to end with", "=~": "to match"}.get(op, op), want)
            if want == "(absent)":
                shown_want = "none" if op == "=" else "a value"
            if op == "=" and want.startswith("@"):
                shown_want = "the text of " + os.path.basename(want[1:])
            print("%s%s: expected %s, found %s (in %s)" % (label, path, shown_want, shown(value), name_of(src)))
            return 1
    return 0


def main(argv):
    what = argv[0]
    if what == "params":
        return params(argv[1:])
    if what == "is":
        return is_(argv[1:])
    src, path = argv[1], argv[2]
    value = walk(load(src), path)
    where, found_in = path, " (in %s)" % name_of(src)
    if what == "get":
        if value is ABSENT and len(argv) > 3:
            value = argv[3]
        if value is ABSENT:
            sys.stderr.write("%s: expected a value, found none%s\n" % (where, found_in))
            return 1
        print(text(value))
        return 0
    if what == "eq":
        if text(value) == argv[3]:
            return 0
        print("%s: expected %s, found %s" % (where, argv[3] if argv[3].isprintable() else json.dumps(argv[3]),
                                             shown(value)) + found_in)
    elif what == "ne":
        if value is not ABSENT and text(value) != argv[3]:
            return 0
        print("%s: expected anything but %s, found %s" % (where, argv[3], shown(value)) + found_in)
    elif what == "absent":
        if value is ABSENT:
            return 0
        print("%s: expected no value, found %s" % (where, shown(value)) + found_in)
    elif what == "has":
        if value is not ABSENT and argv[3] in text(value):
            return 0
        print("%s: expected to contain %s, found %s" % (where, json.dumps(argv[3]), shown(value)) + found_in)
    elif what == "cmp":
        op, want = argv[3], float(argv[4])
        if isinstance(value, (int, float)) and not isinstance(value, bool) and OPS[op](value, want):
            return 0
        print("%s: expected %s %s, found %s" % (where, op, argv[4], shown(value)) + found_in)
    else:
        raise SystemExit("check.py: no check named " + what)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
