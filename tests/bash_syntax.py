"""A reader of bash source, for tests/lint_bats.py: a tokenizer and a
parser of the forms the tests use, down to what the lint needs.

Parser(Lexer(text).run()).stmt_list(()) gives the top level as a list of
Stmt (one and-or list each), and fills, as it reads:

  defs   every function and @test: (kind, name, line, [Stmt])
  calls  every simple command: Call(name, line, quiet), where quiet says
         where it runs when errexit does not reach into it ("in the
         condition of if", ...): bash(1), "set -e", names the condition
         of if, while or until, a command of an && or || list but the
         last, a pipeline negated with !, a command of a pipeline but
         the last and a list run in the background; a command
         substitution does not inherit errexit; bats's run and the
         tests' refute read the status themselves. None where errexit
         reaches it.

A Stmt records the operators of its list, the words of the last command
of its last pipeline (None for a compound command), and its nested
bodies, each with its kind: "loop" (do ... done) or "block" (then, else,
case items, { }, ( )). Raises ParseError(line, what) on what it cannot
read.
"""

import re

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
    """One and-or list: where it starts, its operators (&& and ||, in
    order), whether its last pipeline is negated, whether it runs in the
    background, the words of its last simple command, and the bodies
    nested in its commands as (kind, [Stmt])."""

    def __init__(self, line):
        self.line = line
        self.ops = []
        self.last_negated = False
        self.background = False
        self.last_words = None
        self.bodies = []

    @property
    def has_and(self):
        return "&&" in self.ops


class Call:
    __slots__ = ("name", "line", "quiet")

    def __init__(self, name, line, quiet):
        self.name = name
        self.line = line
        self.quiet = quiet


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
# the commands that read another's status themselves: bats's run, the
# tests' refute (tests/cluster/helpers.bash)
STATUS_READERS = {"run": "after run", "refute": "after refute"}


def substitutions(word):
    """The command lines of the $( ) and ` ` substitutions in word (not
    those in single quotes, nor arithmetic $(( )))."""
    out = []
    lx = Lexer(word)
    quoted = False
    while lx.i < len(word):
        c = lx.peek()
        if c == "\\":
            lx.adv(2)
        elif c == "'" and not quoted:
            lx.single()
        elif c == '"':
            quoted = not quoted
            lx.adv()
        elif c == "$" and lx.peek(1) == "(" and lx.peek(2) != "(":
            lx.adv(2)
            start = lx.i
            lx.balanced("(", ")", 1)
            out.append(word[start:lx.i - 1])
        elif c == "`":
            start = lx.i + 1
            lx.backquote()
            out.append(word[start:lx.i - 1])
        else:
            lx.adv()
    return out


class Parser:
    def __init__(self, toks, first_line=1):
        self.toks = toks
        self.i = 0
        self.first_line = first_line
        self.defs = []  # (kind, name, line, [Stmt])
        self.calls = []  # Call

    def quiet(self, start, why):
        """Says why of each call recorded since index start that has no
        reason yet."""
        for c in self.calls[start:]:
            if c.quiet is None:
                c.quiet = why

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
            start = len(self.calls)
            st = self.and_or()
            out.append(st)
            t = self.peek()
            if t.kind == "op" and t.text in (";", "&"):
                st.background = t.text == "&"
                if st.background:
                    self.quiet(start, "in the background")
                self.i += 1
            elif t.kind == "nl":
                self.i += 1
            elif not self.at_end(ends):
                raise ParseError(t.line, "unexpected %r" % t.text)

    def condition(self, ends, word):
        start = len(self.calls)
        self.stmt_list(ends)
        self.quiet(start, "in the condition of " + word)

    def and_or(self):
        st = Stmt(self.peek().line)
        while True:
            start = len(self.calls)
            st.last_negated = self.pipeline(st)
            t = self.peek()
            if t.kind == "op" and t.text in ("&&", "||"):
                self.quiet(start, "in an && or || list, before its last command")
                st.ops.append(t.text)
                self.i += 1
                self.skip_nl()
                continue
            return st

    def pipeline(self, st):
        negated = False
        start = len(self.calls)
        if self.is_word("time"):
            self.i += 1
        while self.is_word("!"):
            negated = not negated
            self.i += 1
        while True:
            cmd_start = len(self.calls)
            st.last_words = self.command(st)
            t = self.peek()
            if t.kind == "op" and t.text in ("|", "|&"):
                self.quiet(cmd_start, "in a pipeline, before its last command")
                self.i += 1
                self.skip_nl()
                continue
            if negated:
                self.quiet(start, "in a pipeline negated with !")
            return negated

    def redirections(self):
        """Reads the redirections here, recording the calls in their
        targets' substitutions."""
        while self.peek().kind == "redir":
            self.i += 1
            if self.peek().kind != "word":
                raise ParseError(self.peek().line, "redirection without a target")
            self.words_calls(self.next())

    def command(self, st):
        """Reads one command; the words of a simple command, else None."""
        t = self.peek()
        if t.kind == "op" and t.text == "(":
            self.i += 1
            st.bodies.append(("block", self.stmt_list(())))
            if not self.is_op(")"):
                raise ParseError(self.peek().line, "unterminated (")
            self.i += 1
            self.redirections()
            return None
        if t.kind != "word" and t.kind != "redir":
            raise ParseError(t.line, "unexpected %r" % t.text)
        w = t.text if t.kind == "word" else ""
        if w == "{":
            self.i += 1
            st.bodies.append(("block", self.stmt_list(("}",))))
            self.expect_word("}")
        elif w == "if":
            self.i += 1
            self.condition(("then",), "if")
            self.expect_word("then")
            st.bodies.append(("block", self.stmt_list(("elif", "else", "fi"))))
            while self.is_word("elif"):
                self.i += 1
                self.condition(("then",), "elif")
                self.expect_word("then")
                st.bodies.append(("block", self.stmt_list(("elif", "else", "fi"))))
            if self.is_word("else"):
                self.i += 1
                st.bodies.append(("block", self.stmt_list(("fi",))))
            self.expect_word("fi")
        elif w in ("while", "until"):
            self.i += 1
            self.condition(("do",), w)
            self.do_done(st)
        elif w in ("for", "select"):
            self.i += 1
            while not (self.is_op(";") or self.peek().kind in ("nl", "eof")
                       or self.is_word("do")):
                self.words_calls(self.next())
            if self.is_op(";"):
                self.i += 1
            self.skip_nl()
            self.do_done(st)
        elif w == "case":
            self.case(st)
        elif w == "[[":
            words = []
            while not self.is_word("]]"):
                if self.peek().kind == "eof":
                    raise ParseError(t.line, "unterminated [[")
                words.append(self.peek().text)
                self.words_calls(self.next())
            self.i += 1
            self.redirections()
            return ["[["] + words + ["]]"]
        elif w == "function":
            self.i += 1
            name = self.next()
            if self.is_op("(") and self.is_op(")", 1):
                self.i += 2
            self.function("function", name.text, name.line, st)
            return None
        elif w == "@test":
            self.i += 1
            while not self.is_word("{"):
                if self.peek().kind in ("nl", "eof"):
                    raise ParseError(t.line, "@test without {")
                self.i += 1
            name = self.toks[self.i - 1].text
            self.function("test", name, t.line, st)
            return None
        elif t.kind == "word" and self.is_op("(", 1) and self.is_op(")", 2):
            self.i += 3
            self.function("function", w, t.line, st)
            return None
        else:
            return self.simple()
        self.redirections()
        return None

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
        st.bodies.append(("loop", self.stmt_list(("done",))))
        self.expect_word("done")

    def case(self, st):
        line = self.peek().line
        self.i += 1
        self.words_calls(self.next())  # the word
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
            st.bodies.append(("block", self.stmt_list(("esac",))))
            t = self.peek()
            if t.kind == "op" and t.text in (";;", ";&", ";;&"):
                self.i += 1

    def words_calls(self, tok):
        """Records the calls in the substitutions of a word token."""
        if tok.kind != "word" or ("$(" not in tok.text and "`" not in tok.text):
            return
        for text in substitutions(tok.text):
            sub = Parser(Lexer(text).run(), tok.line)
            try:
                sub.stmt_list(())
            except ParseError:
                continue
            for c in sub.calls:
                self.calls.append(Call(c.name, tok.line + c.line - 1,
                                       c.quiet or "in a command substitution"))

    def simple(self):
        words = []
        line = self.peek().line
        while True:
            t = self.peek()
            if t.kind == "word":
                words.append(t.text)
                self.words_calls(t)
                self.i += 1
            elif t.kind == "redir":
                self.redirections()
            else:
                break
        # the command itself, after its assignments; the command run
        # and refute run, after their options
        names = [w for w in words if not ASSIGNMENT.match(w)]
        if names:
            self.calls.append(Call(names[0], line, None))
            why = STATUS_READERS.get(names[0])
            rest = [w for w in names[1:] if not w.startswith("-") and w != "!"]
            if why and rest:
                self.calls.append(Call(rest[0], line, why))
        return words
