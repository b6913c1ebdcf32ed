#!/usr/bin/env python3
"""Check the option lists of the man pages and docs/user-guide.md against the
option table (plugin/core/distenv_option_table.h), in both directions,
and the DISTENV_* variables of the man pages against the sources.

    man_options.py DISTENV PLUGIN_OPTIONS TOP [distenv.1 [distenv.8 [user-guide.md]]]

DISTENV is the built command: `distenv --help` names the subcommands and
`distenv SUB --help` each one's options, both made from the table.
PLUGIN_OPTIONS is tests/unit/plugin_options, which prints the options the
plugin registers. TOP is the source tree; the pages default to those in
it (a test passes edited copies). Prints one line per disagreement and
exits 1 when there is any.
"""
import re
import subprocess
import sys

LONG_OPTION = re.compile(r"--([a-z][a-z-]*[a-z]|[a-z])")
VARIABLE = re.compile(r"DISTENV_[A-Z_]*[A-Z]")


def roff_text(line):
    """A roff line as text: \\- is a dash, font changes and quotes go."""
    line = line.replace("\\-", "-")
    line = re.sub(r"\\f[BIRP]", "", line)
    return line.replace('"', "")


def sections(path):
    """{.SH title: [(.SS title or "", [tag lines of its .TP entries])]}"""
    out, sh, ss = {}, None, ""
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SH "):
            sh, ss = roff_text(line[4:]).strip(), ""
            out[sh] = [(ss, [])]
        elif line.startswith(".SS ") and sh:
            ss = roff_text(line[4:]).strip()
            out[sh].append((ss, []))
        elif line.startswith(".TP") and sh and i + 1 < len(lines):
            out[sh][-1][1].append(roff_text(lines[i + 1]))
    return out


def tag_options(tags):
    return {m for tag in tags for m in LONG_OPTION.findall(tag)}


def command_options(distenv):
    """{subcommand (or "distenv" for the command alone): {option names}}"""
    top = subprocess.run([distenv, "--help"], capture_output=True,
                         text=True, check=True).stdout
    subs = re.findall(r"^(?:usage:| {6}) distenv ([a-z][a-z-]*)", top, re.M)
    out = {"distenv": set(re.findall(r"^ {7}distenv --([a-z-]+)$", top,
                                     re.M))}
    for sub in subs:
        text = subprocess.run([distenv, sub, "--help"], capture_output=True,
                              text=True, check=True).stdout
        opts = text.split("\noptions:\n", 1)[1]
        out[sub] = set(re.findall(r"^  (?:-[a-z], )?--([a-z-]+)", opts,
                                  re.M))
    return out


def compare(what, have, want, problems):
    for name in sorted(want - have):
        problems.append(f"{what} lacks --{name}")
    for name in sorted(have - want):
        problems.append(f"{what} lists --{name}, which is not an option")


def check_distenv1(path, table, problems):
    """Every option of every subcommand in the OPTIONS section, in a
    subsection whose title names the subcommand ("every command": all)."""
    subs = sections(path).get("OPTIONS", [])
    placed = {}
    for title, tags in subs:
        names = set(re.findall(r"[a-z][a-z-]*", title))
        takers = set(table) if "every" in names else names & set(table)
        for opt in tag_options(tags):
            if not any(opt in table[t] for t in takers):
                problems.append(f"{path}: OPTIONS, '{title}' lists --{opt}, "
                                f"which none of {sorted(takers)} takes")
            for t in takers:
                placed.setdefault(t, set()).add(opt)
    for sub, opts in sorted(table.items()):
        for opt in sorted(opts - placed.get(sub, set())):
            problems.append(f"{path}: OPTIONS lack --{opt} of "
                            f"{'distenv' if sub == 'distenv' else 'distenv ' + sub}")


def check_distenv8(path, plugin, problems):
    subs = sections(path).get("OPTIONS", [])
    have = tag_options(t for _, tags in subs for t in tags)
    compare(f"{path}: OPTIONS", have, plugin, problems)


def check_readme(path, plugin, problems):
    """The first column of the table under '## Options'."""
    text = open(path, encoding="utf-8").read()
    part = text.split("\n## Options\n", 1)[1].split("\n#", 1)[0]
    have = {m for row in re.findall(r"^\| `([^`]*)`", part, re.M)
            for m in LONG_OPTION.findall(row)}
    compare(f"{path}: ## Options", have, plugin, problems)


def source_variables(top):
    """DISTENV_* names the plugin's and the command's sources quote."""
    out = subprocess.run(["grep", "-rhoE", '"DISTENV_[A-Z_]*[A-Z]"',
                          f"{top}/plugin"], capture_output=True, text=True)
    return {v.strip('"') for v in out.stdout.split()}


def check_variables(path, names, problems):
    have = set(VARIABLE.findall(open(path, encoding="utf-8").read()))
    for name in sorted(names - have):
        problems.append(f"{path} lacks {name}")
    for name in sorted(have - names):
        problems.append(f"{path} names {name}, which distenv does not use")


def main(argv):
    distenv, plugin_options, top = argv[1:4]
    pages = argv[4:] + [None] * (3 - len(argv[4:]))
    man1 = pages[0] or f"{top}/contrib/man/distenv.1"
    man8 = pages[1] or f"{top}/contrib/man/distenv.8"
    readme = pages[2] or f"{top}/docs/user-guide.md"
    plugin = set()
    for line in subprocess.run([plugin_options], capture_output=True,
                               text=True, check=True).stdout.split():
        plugin.add(line[2:].split("=", 1)[0])
    table = command_options(distenv)
    problems = []
    if len(plugin) < 10 or len(table) < 6:
        problems.append(f"too few options read: {sorted(plugin)} {table}")
    check_distenv1(man1, table, problems)
    check_distenv8(man8, plugin, problems)
    check_readme(readme, plugin, problems)
    variables = source_variables(top)
    if not variables:
        problems.append("no DISTENV_* variable found in the sources")
    check_variables(man1, variables, problems)
    check_variables(man8, variables, problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
