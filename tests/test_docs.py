#!/usr/bin/env python3
"""test_docs.py: the command-line tools against their documentation.

  test_docs.py options TIDE HEAT3D MPIEXEC   every option in the --help text of `tide`, each
                                             of its subcommands and heat3d appears in
                                             docs/api.md or README.md, every --help ends
                                             with the exit statuses, and every NAME.md the
                                             README, docs/api.md, docs/design.md,
                                             docs/scaling.md, docs/performance.md,
                                             docs/cuda-mpi.md and bench/ name is in the
                                             repository
  test_docs.py json FILE COMMAND             a -json FILE of `tide COMMAND` parses as JSON and
                                             has exactly the members docs/api.md's table
                                             lists ("every command" and the command's row)

Exit status: 0 when everything checked holds, 1 otherwise (each problem printed).
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "docs", "api.md")
README = os.path.join(ROOT, "README.md")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def help_text(mpiexec, prog, *args):
    r = subprocess.run([mpiexec, "-n", "1", prog, *args, "--help"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("test_docs.py: %s %s --help: exit status %d\n%s" % (
            prog, " ".join(args), r.returncode, r.stderr))
    return r.stdout


def options_of(text):
    """The options an option list names: '  -a X | -b Y   ...' at the start of a line."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^  (--?[a-z][a-z0-9-]*.*?)(?:\s{2,}|$)", line)
        if not m:
            continue
        for part in m.group(1).split(" | "):
            name = part.split()[0] if part.split() else ""
            if re.fullmatch(r"--?[a-z][a-z0-9-]*", name):
                out.append(name)
    return out


def mentioned(opt, docs):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), docs) is not None


def check_options(tide, heat3d, mpiexec):
    docs = read(API) + read(README)
    problems = []
    texts = {"tide": help_text(mpiexec, tide)}
    for cmd in ("fft", "poisson", "stencil", "band", "gemm", "info"):
        texts["tide " + cmd] = help_text(mpiexec, tide, cmd)
    texts["heat3d"] = help_text(mpiexec, heat3d)
    counted = 0
    for who, text in texts.items():
        if "Exit status: 0 success; 1 a run that failed" not in text:
            problems.append("%s --help: no exit statuses" % who)
        if who == "tide":
            continue
        opts = options_of(text)
        if not opts:
            problems.append("%s --help: no options found" % who)
        for o in opts:
            counted += 1
            if not mentioned(o, docs):
                problems.append("%s --help: option %s is in neither docs/api.md nor README.md"
                                % (who, o))
    problems += check_cited()
    for p in problems:
        print("FAIL: " + p)
    print("test_docs.py options: %d options of %d --help texts checked, and the files %s "
          "cite; %d problems" % (counted, len(texts), ", ".join(CITING), len(problems)))
    return 1 if problems else 0


# The files whose NAME.md mentions must be in the repository.
CITING = ["README.md", "docs/api.md", "docs/design.md", "docs/scaling.md", "docs/performance.md",
          "docs/cuda-mpi.md", "bench/scaling", "bench/tide_model.py"]


def check_cited():
    """NAME.md mentioned in CITING but found nowhere in the tree: problems."""
    present = set()
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
        present.update(f for f in files if f.endswith(".md"))
    problems = []
    for doc in CITING:
        for name in sorted(set(re.findall(r"[A-Za-z0-9_-]+\.md\b", read(os.path.join(ROOT, doc))))):
            if name not in present:
                problems.append("%s cites %s, which is not in the repository" % (doc, name))
    return problems


def documented_members(command):
    """The members docs/api.md's JSON table gives every command and `tide COMMAND`."""
    rows = {}
    for line in read(API).splitlines():
        m = re.match(r"^\| (every command|`tide [a-z]+`) \| (.*) \|$", line)
        if m:
            rows[m.group(1).strip("`")] = re.findall(r"`([a-z_0-9]+)`", m.group(2))
    if "every command" not in rows or "tide " + command not in rows:
        raise SystemExit("test_docs.py: docs/api.md has no JSON members for %s" % command)
    return rows["every command"] + rows["tide " + command]


def check_json(path, command):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL: %s: %s" % (path, e))
        return 1
    want = documented_members(command)
    got = list(d) if isinstance(d, dict) else []
    problems = []
    if d.get("command") != command:
        problems.append('"command" is %r, not %r' % (d.get("command"), command))
    for k in want:
        if k not in got:
            problems.append("member %s (docs/api.md) missing" % k)
    for k in got:
        if k not in want:
            problems.append("member %s not in docs/api.md's table" % k)
    if len(set(want)) != len(want):
        problems.append("docs/api.md lists a member twice for %s" % command)
    for p in problems:
        print("FAIL: %s: %s" % (path, p))
    return 1 if problems else 0


def main(argv):
    if len(argv) == 4 and argv[0] == "options":
        return check_options(*argv[1:])
    if len(argv) == 3 and argv[0] == "json":
        return check_json(argv[1], argv[2])
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
