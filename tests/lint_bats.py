#!/usr/bin/env python3
"""Find the assertions of the bats tests that cannot fail.

bats runs a test under errexit, and bash's errexit ignores the failure of
every command of an && or || list but the last, and the status of a
pipeline negated with "!" (bash(1), "set -e"). So, unless it is the last
command of a @test or of a function (whose status bats or the caller then
reads), in a test or in a helper a test calls:

  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]   the first half cannot fail
  ! grep -q 'OK' out                              cannot fail at all

This reads every tests/**/*.bats file and the .bash files they load, and
reports, in each @test and function body:

  - an and-or list with "&&" in it, anywhere but as the last command of
    the body (a list of "||" alone is fine: its last command fails the
    test, as in "[ A ] || [ B ]" or "cond || { echo why; return 1; }");
  - an and-or list whose last pipeline is negated ("! CMD", "A || ! B"),
    anywhere but as the last command of the body.

The conditions of if, while and until, the words of for and case, [[ ]],
(( )), heredoc bodies and quoted strings (a script given to "bash -c")
are not the test's own commands, and a list run in the background (&)
fails nothing: none of them is checked. Nested bodies (then, do, { },
( )) are never the last command of the test.

  tests/lint_bats.py [TOP]     TOP: the tree (default: this one)

Prints "FILE:LINE: ..." per problem, FILE relative to TOP; exits 1 when
there is one, 2 when a file cannot be read.
"""

import os
import re
import sys

FIX_AND = ("one assertion per line, an if for a condition, "
           "or run CMD + [ \"$status\" ... ]")
FIX_NOT = "refute CMD, or run CMD + [ \"$status\" -ne 0 ], or [[ ... != ... ]]"

META = set(" \t\n;&|()<>")


class ParseError(Exception):
    def __init__(self, line, what):
        super().__init__(what)
        self.line = line
        self.what = what


class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind = kind  # "word", "op", "redir", "nl", "eof"
        self.text = text
        self.line = line

    def __repr__(self):
        return "%s(%r)@%d" % (self.kind, self.text, self.line)


class Lexer:
    """Splits bash source into words and operators, as the shell's own
    tokenizer does for the forms the tests use: quotes, $( ), ${ },
    backquotes, (( )), array assignments, heredocs (whose bodies it skips)
    and line continuations."""

    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.heredocs = []  # (delimiter, strip_tabs) waiting for a newline
        self.toks = []

    def err(self, what):
        raise ParseError(self.line, what)

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s) and self.s[self.i] == "\n":
                self.line += 1
            self.i += 1

    def run(self):
        while True:
            c = self.peek()
            if c == "":
                if self.heredocs:
                    self.err("heredoc without its end line %r"
                             % self.heredocs[0][0])
                self.toks.append(Tok("eof", "", self.line))
                return self.toks
            if c in " \t":
                self.adv()
            elif c == "\\" and self.peek(1) == "\n":
                self.adv(2)
            elif c == "#":
                while self.peek() not in ("", "\n"):
                    self.adv()
            elif c == "\n":
                self.toks.append(Tok("nl", "\n", self.line))
                self.adv()
                self.read_heredocs()
            else:
                self.token()

    def read_heredocs(self):
        for delim, strip in self.heredocs:
            while True:
                if self.i >= len(self.s):
                    self.err("heredoc without its end line %r" % delim)
                end = self.s.find("\n", self.i)
                if end < 0:
                    end = len(self.s)
                body = self.s[self.i:end]
                if strip:
                    body = body.lstrip("\t")
                self.adv(end - self.i + 1)
                if body == delim:
                    break
        self.heredocs = []

    def token(self):
        line = self.line
        s = self.s
        for op in (";;&", ";;", ";&", "&&", "||", "|&"):
            if s.startswith(op, self.i):
                self.adv(len(op))
                self.toks.append(Tok("op", op, line))
                return
        m = re.compile(r"[0-9]*(<<<|<<-|<<|<>|<&|>&|>>|>\||&>>|&>|<|>)").match(
            s, self.i)
        if m and not s.startswith(("<(", ">("), self.i + len(m.group(0)) - 1):
            self.adv(len(m.group(0)))
            op = m.group(1)
            self.toks.append(Tok("redir", op, line))
            if op in ("<<", "<<-"):
                while self.peek() in (" ", "\t"):
                    self.adv()
                word = self.word()
                delim = re.sub(r"[\"'\\]", "", word)
                self.heredocs.append((delim, op == "<<-"))
                self.toks.append(Tok("word", word, line))
            return
        if s.startswith("((", self.i) and self.at_command_start():
            start = self.i
            self.adv(2)
            self.balanced("(", ")", 2)
            self.toks.append(Tok("word", s[start:self.i], line))
            return
        c = self.peek()
        if c in ";&|()":
            self.adv()
            self.toks.append(Tok("op", c, line))
            return
        self.toks.append(Tok("word", self.word(), line))

    def at_command_start(self):
        if not self.toks:
            return True
        t = self.toks[-1]
        return t.kind in ("nl", "op") or t.text in (
            "then", "do", "else", "elif", "if", "while", "until", "for", "{",
            "!")

    def word(self):
        start = self.i
        while True:
            c = self.peek()
            if c == "" or c in META:
                if c in "<>" and self.peek(1) == "(":
                    # process substitution <( ) >( )
                    self.adv(2)
                    self.balanced("(", ")", 1)
                    continue
                if c == "(" and self.i > start and (
                        self.s[self.i - 1] == "=" or
                        self.s[self.i - 1] in "@!+*?"):
                    # array assignment x=( ) or an extglob @( )
                    self.adv()
                    self.balanced("(", ")", 1)
                    continue
                break
            self.word_char()
        if self.i == start:
            self.err("unexpected %r" % self.peek())
        return self.s[start:self.i]

    def word_char(self):
        c = self.peek()
        if c == "\\":
            self.adv(2)
        elif c == "'":
            self.single()
        elif c == '"':
            self.double()
        elif c == "`":
            self.backquote()
        elif c == "$":
            n = self.peek(1)
            if n == "'":
                self.adv()
                self.ansi_c()
            elif n == '"':
                self.adv()
                self.double()
            elif n == "(":
                self.adv(2)
                self.balanced("(", ")", 1)
            elif n == "{":
                self.adv(2)
                self.balanced("{", "}", 1)
            else:
                self.adv()
        else:
            self.adv()

    def single(self):
        line = self.line
        self.adv()
        j = self.s.find("'", self.i)
        if j < 0:
            raise ParseError(line, "unterminated single quote")
        self.adv(j - self.i + 1)

    def ansi_c(self):
        self.escaped_until("'", "$'")

    def escaped_until(self, close, what):
        """Skip past the opening character, then to close, where a
        backslash escapes the next character ($'...' and `...`)."""
        line = self.line
        self.adv()
        while True:
            c = self.peek()
            if c == "":
                raise ParseError(line, "unterminated " + what)
            if c == "\\":
                self.adv(2)
            elif c == close:
                self.adv()
                return
            else:
                self.adv()

    def double(self):
        line = self.line
        self.adv()
        while True:
            c = self.peek()
            if c == "":
                raise ParseError(line, "unterminated double quote")
            if c == '"':
                self.adv()
                return
            if c == "\\":
                self.adv(2)
            elif c == "`":
                self.backquote()
            elif c == "$" and self.peek(1) == "(":
                self.adv(2)
                self.balanced("(", ")", 1)
            elif c == "$" and self.peek(1) == "{":
                self.adv(2)
                self.balanced("{", "}", 1)
            else:
                self.adv()

    def backquote(self):
        self.escaped_until("`", "backquote")

    def balanced(self, op, cl, depth):
        """Skip to the close that brings depth to 0, past quotes."""
        line = self.line
        while depth:
            c = self.peek()
            if c == "":
                raise ParseError(line, "unterminated %s" % op)
            if c == op:
                depth += 1
                self.adv()
            elif c == cl:
                depth -= 1
                self.adv()
            elif c in "\\'\"`$":
                self.word_char()
            elif c == "#" and op == "(" and self.s[self.i - 1] in " \t\n":
                while self.peek() not in ("", "\n"):
                    self.adv()
            else:
                self.adv()


class Stmt:
    """One and-or list: where it starts, whether it has an && in it,
    whether its last pipeline is negated, whether it runs in the
    background, and the bodies nested in its commands."""

    def __init__(self, line):
        self.line = line
        self.has_and = False
        self.last_negated = False
        self.background = False
        self.bodies = []  # lists of Stmt


class Parser:
    def __init__(self, toks):
        self.toks = toks
        self.i = 0
        self.defs = []  # (kind, name, line, [Stmt])

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def is_word(self, text, k=0):
        t = self.peek(k)
        return t.kind == "word" and t.text == text

    def is_op(self, text, k=0):
        t = self.peek(k)
        return t.kind == "op" and t.text == text

    def expect_word(self, text):
        t = self.next()
        if t.kind != "word" or t.text != text:
            raise ParseError(t.line, "expected %r, found %r" % (text, t.text))

    def skip_nl(self):
        while self.peek().kind == "nl":
            self.i += 1

    def at_end(self, ends):
        t = self.peek()
        if t.kind == "eof":
            return True
        if t.kind == "op" and t.text in (")", ";;", ";&", ";;&"):
            return True
        return t.kind == "word" and t.text in ends

    def stmt_list(self, ends):
        """Statements up to (not including) one of the words ends."""
        out = []
        while True:
            self.skip_nl()
            if self.at_end(ends):
                return out
            st = self.and_or()
            out.append(st)
            t = self.peek()
            if t.kind == "op" and t.text in (";", "&"):
                st.background = t.text == "&"
                self.i += 1
            elif t.kind == "nl":
                self.i += 1
            elif not self.at_end(ends):
                raise ParseError(t.line, "unexpected %r" % t.text)

    def and_or(self):
        st = Stmt(self.peek().line)
        while True:
            st.last_negated = self.pipeline(st)
            t = self.peek()
            if t.kind == "op" and t.text in ("&&", "||"):
                st.has_and = st.has_and or t.text == "&&"
                self.i += 1
                self.skip_nl()
                continue
            return st

    def pipeline(self, st):
        negated = False
        if self.is_word("time"):
            self.i += 1
        while self.is_word("!"):
            negated = not negated
            self.i += 1
        while True:
            self.command(st)
            t = self.peek()
            if t.kind == "op" and t.text in ("|", "|&"):
                self.i += 1
                self.skip_nl()
                continue
            return negated

    def redirections(self):
        while self.peek().kind == "redir":
            self.i += 1
            if self.peek().kind != "word":
                raise ParseError(self.peek().line, "redirection without a target")
            self.i += 1

    def command(self, st):
        t = self.peek()
        if t.kind == "op" and t.text == "(":
            self.i += 1
            st.bodies.append(self.stmt_list(()))
            if not self.is_op(")"):
                raise ParseError(self.peek().line, "unterminated (")
            self.i += 1
            self.redirections()
            return
        if t.kind != "word" and t.kind != "redir":
            raise ParseError(t.line, "unexpected %r" % t.text)
        w = t.text if t.kind == "word" else ""
        if w == "{":
            self.i += 1
            st.bodies.append(self.stmt_list(("}",)))
            self.expect_word("}")
        elif w == "if":
            self.i += 1
            self.stmt_list(("then",))  # the condition: not checked
            self.expect_word("then")
            st.bodies.append(self.stmt_list(("elif", "else", "fi")))
            while self.is_word("elif"):
                self.i += 1
                self.stmt_list(("then",))
                self.expect_word("then")
                st.bodies.append(self.stmt_list(("elif", "else", "fi")))
            if self.is_word("else"):
                self.i += 1
                st.bodies.append(self.stmt_list(("fi",)))
            self.expect_word("fi")
        elif w in ("while", "until"):
            self.i += 1
            self.stmt_list(("do",))
            self.do_done(st)
        elif w in ("for", "select"):
            self.i += 1
            while not (self.is_op(";") or self.peek().kind in ("nl", "eof")
                       or self.is_word("do")):
                self.i += 1
            if self.is_op(";"):
                self.i += 1
            self.skip_nl()
            self.do_done(st)
        elif w == "case":
            self.case(st)
        elif w == "[[":
            while not self.is_word("]]"):
                if self.peek().kind == "eof":
                    raise ParseError(t.line, "unterminated [[")
                self.i += 1
            self.i += 1
        elif w == "function":
            self.i += 1
            name = self.next()
            if self.is_op("(") and self.is_op(")", 1):
                self.i += 2
            self.function("function", name.text, name.line, st)
            return
        elif w == "@test":
            self.i += 1
            while not self.is_word("{"):
                if self.peek().kind in ("nl", "eof"):
                    raise ParseError(t.line, "@test without {")
                self.i += 1
            name = self.toks[self.i - 1].text
            self.function("test", name, t.line, st)
            return
        elif t.kind == "word" and self.is_op("(", 1) and self.is_op(")", 2):
            self.i += 3
            self.function("function", w, t.line, st)
            return
        else:
            self.simple()
            return
        self.redirections()

    def function(self, kind, name, line, st):
        self.skip_nl()
        if self.is_word("{"):
            self.i += 1
            body = self.stmt_list(("}",))
            self.expect_word("}")
        elif self.is_op("("):
            self.i += 1
            body = self.stmt_list(())
            if not self.is_op(")"):
                raise ParseError(self.peek().line, "unterminated (")
            self.i += 1
        else:
            raise ParseError(line, "%s %s: no body" % (kind, name))
        self.redirections()
        self.defs.append((kind, name, line, body))

    def do_done(self, st):
        self.expect_word("do")
        st.bodies.append(self.stmt_list(("done",)))
        self.expect_word("done")

    def case(self, st):
        line = self.peek().line
        self.i += 1
        self.i += 1  # the word
        self.skip_nl()
        self.expect_word("in")
        while True:
            self.skip_nl()
            if self.is_word("esac"):
                self.i += 1
                return
            if self.is_op("("):
                self.i += 1
            while not self.is_op(")"):
                if self.peek().kind == "eof":
                    raise ParseError(line, "unterminated case")
                self.i += 1
            self.i += 1
            st.bodies.append(self.stmt_list(("esac",)))
            t = self.peek()
            if t.kind == "op" and t.text in (";;", ";&", ";;&"):
                self.i += 1

    def simple(self):
        while True:
            t = self.peek()
            if t.kind == "word":
                self.i += 1
            elif t.kind == "redir":
                self.redirections()
            else:
                return


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
            for b in st.bodies:
                walk(b, False)

    walk(body, True)


def lint_file(top, rel, problems):
    path = os.path.join(top, rel)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print("%s: %s" % (rel, e.strerror), file=sys.stderr)
        sys.exit(2)
    lines = text.split("\n")
    try:
        parser = Parser(Lexer(text).run())
        parser.stmt_list(())
        if parser.peek().kind != "eof":
            raise ParseError(parser.peek().line,
                             "unexpected %r" % parser.peek().text)
    except ParseError as e:
        problems.append("%s:%d: cannot read this as bash: %s (bash -n %s)"
                        % (rel, e.line, e.what, rel))
        return
    found = []
    for kind, name, line, body in parser.defs:
        check_body(kind, name, body, found)
    for line, why in sorted(found):
        problems.append("%s:%d: %s: %s" % (rel, line, lines[line - 1].strip(),
                                           why))


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
    for rel in list(files):
        for p in loaded(top, rel):
            if p not in files:
                files.append(p)
    problems = []
    for rel in files:
        lint_file(top, rel, problems)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
