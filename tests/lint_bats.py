#!/usr/bin/env python3
"""Find the assertions of the bats tests that cannot fail.

bats runs a test under errexit, and bash's errexit ignores the failure of
every command of an && or || list but the last, and the status of a
pipeline negated with "!" (bash(1), "set -e"). So, unless it is the last
command of a @test or of a function (whose status bats or the caller then
reads), in a test or in a helper a test calls:

  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]   the first half cannot fail
  ! grep -q 'OK' out                              cannot fail at all

Nor does errexit reach into a function where it is off: one run in a
command substitution (bash does not pass errexit into $( ) unless
inherit_errexit is set, and bats does not set it), after bats's run, in
a condition, in an && or || list but last, negated or in the background.
There only the function's last command decides its status, so

  start_job() { sbatch ... >out; wait_line out 'started'; cat id; }
  id=$(start_job)                  wait_line cannot fail the test

This reads every tests/**/*.bats file and the .bash files they load, and
reports:

  - in each @test and function body, an and-or list with "&&" in it,
    anywhere but as the last command of the body (a list of "||" alone
    is fine: its last command fails the test, as in "[ A ] || [ B ]" or
    "cond || { echo why; return 1; }");
  - in each @test and function body, an and-or list whose last pipeline
    is negated ("! CMD", "A || ! B"), anywhere but as the last command
    of the body;
  - each call, where errexit is off, of a function with a check before
    its end: a command of its own ([, [[, test, grep, refute, cmp, diff,
    false) or a call of a function that can fail (one that has such a
    check, a return or exit with a status other than 0, or calls one),
    not guarded by "|| return ...". The call is named, with the check
    that cannot fail there.

The conditions of if, while and until, the words of for and case, [[ ]],
(( )), heredoc bodies and quoted strings (a script given to "bash -c")
are not the test's own commands, and a list run in the background (&)
fails nothing: none of them is checked by the first two rules. Nested
bodies (then, do, { }, ( )) are never the last command of the test, and
a loop's body is never a function's last command: its checks before the
last pass count for nothing where errexit is off.

  tests/lint_bats.py [TOP]     TOP: the tree (default: this one)

Prints "FILE:LINE: ..." per problem, FILE relative to TOP; exits 1 when
there is one, 2 when a file cannot be read.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bash_syntax import ASSIGNMENT, Lexer, ParseError, Parser  # noqa: E402

FIX_AND = ("one assertion per line, an if for a condition, "
           "or run CMD + [ \"$status\" ... ]")
FIX_NOT = "refute CMD, or run CMD + [ \"$status\" -ne 0 ], or [[ ... != ... ]]"
FIX_QUIET = ("end that line with || return 1, or call the function as a "
             "command of its own")
CHECK_WORDS = {"[", "[[", "test", "grep", "egrep", "fgrep", "refute", "cmp",
               "diff", "false"}


def check_body(kind, name, body, out):
    where = ('test "%s"' % name.strip("\"'")) if kind == "test" else (
        "function %s" % name)

    def walk(stmts, top):
        for n, st in enumerate(stmts):
            last = top and n == len(stmts) - 1
            if not last and not st.background:
                if st.has_and:
                    out.append((st.line, "an && list before the end of %s: "
                                "errexit ignores a failure of each command "
                                "of it but the last, so the first ones "
                                "cannot fail the test (fix: %s)"
                                % (where, FIX_AND)))
                elif st.last_negated:
                    out.append((st.line, "a command negated with ! before "
                                "the end of %s: errexit ignores the status "
                                "of a negated command, so it cannot fail the "
                                "test (fix: %s)" % (where, FIX_NOT)))
            for _, b in st.bodies:
                walk(b, False)

    walk(body, True)


def command_name(words):
    for w in words or ():
        if not ASSIGNMENT.match(w):
            return w
    return None


def statements(body):
    """Every statement of body, nested ones too."""
    for st in body:
        yield st
        for _, b in st.bodies:
            yield from statements(b)


class Functions:
    """The functions of all the files read, by name, and which can fail."""

    def __init__(self):
        self.defs = {}  # name -> [(rel, line, body)]
        self.failing = set()

    def add(self, rel, parser):
        for kind, name, line, body in parser.defs:
            if kind == "function":
                self.defs.setdefault(name, []).append((rel, line, body))

    def settle(self):
        """Which functions can fail: a check, a return or exit other than
        0, or a call of one that can fail, anywhere in the body."""
        called = {}
        for name, defs in self.defs.items():
            called[name] = set()
            for _, _, body in defs:
                for st in statements(body):
                    words = st.last_words or []
                    cmd = command_name(words)
                    if cmd in CHECK_WORDS:
                        self.failing.add(name)
                    elif cmd in ("return", "exit"):
                        status = words[words.index(cmd) + 1:][:1]
                        if status and status != ["0"]:
                            self.failing.add(name)
                    elif cmd:
                        called[name].add(cmd)
        grew = True
        while grew:
            grew = False
            for name, cmds in called.items():
                if name not in self.failing and cmds & self.failing:
                    self.failing.add(name)
                    grew = True

    def is_check(self, words):
        cmd = command_name(words)
        return cmd in CHECK_WORDS or cmd in self.failing

    def quiet_checks(self, body):
        """The checks of body that errexit alone makes fail: before the
        body's end, or in a loop, not guarded by an || list."""
        found = []

        def walk(stmts, may_be_last):
            for n, st in enumerate(stmts):
                last = may_be_last and n == len(stmts) - 1
                if not last and not st.background and "||" not in st.ops \
                        and self.is_check(st.last_words):
                    found.append(st.line)
                for kind, b in st.bodies:
                    walk(b, last and kind == "block")

        walk(body, True)
        return found

    def find(self, name, scope):
        """name's definition, in the first file of scope that has one."""
        defs = self.defs.get(name, [])
        for rel in scope:
            for d in defs:
                if d[0] == rel:
                    return d
        return defs[0] if defs else None


def parse_file(top, rel):
    path = os.path.join(top, rel)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print("%s: %s" % (rel, e.strerror), file=sys.stderr)
        sys.exit(2)
    parser = Parser(Lexer(text).run())
    parser.stmt_list(())
    if parser.peek().kind != "eof":
        raise ParseError(parser.peek().line,
                         "unexpected %r" % parser.peek().text)
    return parser, text.split("\n")


def loaded(top, rel):
    """The .bash files a .bats file loads with `load NAME` (bats looks
    for NAME.bash, then NAME, beside the test file)."""
    out = []
    with open(os.path.join(top, rel), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*load\s+['\"]?([A-Za-z0-9_./-]+)['\"]?\s*(#.*)?$",
                         line)
            if not m:
                continue
            for name in (m.group(1) + ".bash", m.group(1)):
                p = os.path.normpath(os.path.join(os.path.dirname(rel), name))
                if os.path.isfile(os.path.join(top, p)):
                    out.append(p)
                    break
    return out


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    files = []
    for d, dirs, names in os.walk(os.path.join(top, "tests")):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(".bats"):
                files.append(os.path.relpath(os.path.join(d, n), top))
    scope = {}
    for rel in list(files):
        scope[rel] = [rel] + loaded(top, rel)
        for p in scope[rel][1:]:
            if p not in files:
                files.append(p)
                scope[p] = [p]
    problems = []
    parsed = {}
    funcs = Functions()
    for rel in files:
        try:
            parsed[rel] = parse_file(top, rel)
        except ParseError as e:
            problems.append("%s:%d: cannot read this as bash: %s (bash -n %s)"
                            % (rel, e.line, e.what, rel))
            continue
        funcs.add(rel, parsed[rel][0])
    funcs.settle()
    for rel, (parser, lines) in parsed.items():
        found = []
        for kind, name, line, body in parser.defs:
            check_body(kind, name, body, found)
        for c in parser.calls:
            d = funcs.find(c.name, scope[rel]) if c.quiet else None
            checks = funcs.quiet_checks(d[2]) if d else []
            if checks:
                found.append((c.line, "%s runs here %s, where errexit "
                              "is off: its check at %s:%d (%s) cannot fail "
                              "the test (fix: %s)"
                              % (c.name, c.quiet, d[0], checks[0],
                                 parsed[d[0]][1][checks[0] - 1].strip(),
                                 FIX_QUIET)))
        for line, why in sorted(set(found)):
            problems.append("%s:%d: %s: %s" % (rel, line,
                                               lines[line - 1].strip(), why))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
