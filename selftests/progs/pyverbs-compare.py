#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Compare two runs of rdma-core's pyverbs suite (run_tests.py -v): one on
rxe, the reference, and one on ferroce, in the same guest.

    pyverbs-compare.py RXE_LOG FERROCE_LOG [--known TEST=REASON]...
                       [--different TEST=REASON]... [--must-run PREFIX]...

It fails (exit 1) when
- a test fails or errors on ferroce, unless it is --different (rxe skips
  it; the reason says why ferroce fails it);
- a test passes on rxe but not on ferroce, unless it is --known (not yet
  on ferroce) or --different;
- an entry of either list names no test of the run, or its difference is
  gone (a --known test passes on ferroce, a --different one no longer
  fails): the lists say what differs today, not what once did;
- a test whose name starts with a --must-run PREFIX is skipped on rxe, or
  on ferroce while it is not --known (what the suite's set-up must give
  those tests, the guest has);
- a log does not hold one result for each test it says it ran.

It prints ferroce's skips with their reasons, the tracebacks of ferroce's
failures, one line per difference, and the counts; the verdicts come
last (a failed selftest shows the end of its output).
"""
import argparse
import re
import sys


def entry(arg):
    name, sep, reason = arg.partition("=")
    if not sep or not name.startswith("tests.") or not reason:
        raise argparse.ArgumentTypeError(f"{arg!r} is not TEST=REASON")
    return name, " ".join(reason.split())


def parse(path):
    """test name -> ok, skipped '...', ERROR or FAIL; and the tracebacks."""
    out = open(path, errors="replace").read()
    # unittest -v: "name (tests.module.Class.name)", the first line of the
    # docstring on the next line if there is one, " ... " and the result.
    # (A child process that a test forks may print between the two.)
    res = {m.group(2): m.group(3) for m in re.finditer(
        r"^(\w+) \((tests\.[\w.]+)\)(?:\n[^\n]*?)? \.\.\. (?:[^\n]*\n)?"
        r"(ok|skipped.*|ERROR|FAIL)$", out, re.M)}
    ran = re.search(r"^Ran (\d+) tests?", out, re.M)
    if not ran or int(ran.group(1)) != len(res):
        print(out[-3000:])
        sys.exit(f"{path}: parsed {len(res)} results of {ran.group(1) if ran else '?'} tests")
    why = {}
    for block in re.split(r"^={50,}\n", out, flags=re.M)[1:]:
        m = re.match(r"(?:ERROR|FAIL): \w+ \((tests\.[\w.]+)\)", block)
        if m:
            why[m.group(1)] = block.split("\n" + "-" * 70 + "\nRan ")[0].rstrip()
    return res, why


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rxe_log")
    ap.add_argument("ferroce_log")
    ap.add_argument("--known", type=entry, action="append", default=[],
                    help="TEST=REASON: passes on rxe, not yet on ferroce")
    ap.add_argument("--different", type=entry, action="append", default=[],
                    help="TEST=REASON: rxe skips it, ferroce fails it")
    ap.add_argument("--must-run", action="append", default=[], metavar="PREFIX",
                    help="tests whose names start with PREFIX must not be skipped")
    args = ap.parse_args()
    known, different = dict(args.known), dict(args.different)
    (rxe, _), (fer, why) = parse(args.rxe_log), parse(args.ferroce_log)
    failed = ("ERROR", "FAIL")

    for name, r in sorted(fer.items()):
        if r.startswith("skipped"):
            print(f"  skip  {name}: {r[len('skipped '):]}")
    bad = []
    for name, r in sorted(fer.items()):
        if r in failed and name not in different:
            print(why.get(name, f"(no traceback of {name})"))
            bad.append(f"  FAIL  {name}: {r} on ferroce (rxe: {rxe.get(name)})")
    for name, r in sorted(rxe.items()):
        if r in failed:
            print(f"  (rxe: {name}: {r})")
        if r == "ok" and fer.get(name) != "ok":
            if name in known:
                print(f"  known {name}: {known[name]}")
            elif name in different:
                print(f"  diff  {name}: {different[name]}")
            elif fer.get(name) not in failed:
                bad.append(f"  FAIL  {name}: ok on rxe, {fer.get(name)} on ferroce")
    for name in sorted(different):
        if fer.get(name) in failed and rxe.get(name) != "ok":
            print(f"  diff  {name}: {different[name]}")
    for prefix in args.must_run:
        names = [n for n in rxe if n.startswith(prefix)]
        if not names:
            bad.append(f"  FAIL  no test {prefix}* in the run")
        for name in names:
            for dev, r in (("rxe", rxe[name]), ("ferroce", fer.get(name, "not run"))):
                if r.startswith("skipped") and not (dev == "ferroce" and name in known):
                    bad.append(f"  FAIL  {name} must run, {dev}: {r}")
    for name in sorted(known):
        if name not in fer or fer[name] == "ok":
            bad.append(f"  FAIL  known {name}: {fer.get(name, 'not in the run')} on ferroce:"
                       " remove it from the list")
    for name in sorted(different):
        if fer.get(name) not in failed:
            bad.append(f"  FAIL  different {name}: {fer.get(name, 'not in the run')} on ferroce:"
                       " remove it from the list")

    ok = lambda d: sum(v == "ok" for v in d.values())
    skipped = lambda d: sum(v.startswith("skipped") for v in d.values())
    for line in bad:
        print(line)
    print(f"  pyverbs: rxe {ok(rxe)} ok, {skipped(rxe)} skipped; ferroce {ok(fer)} ok,"
          f" {skipped(fer)} skipped; of {len(fer)} tests")
    sys.exit(1 if bad else 0)


main()
