#!/bin/bash
# Check the structure rules of plugin/ and of the bats tests
# (tests/cmd/structure.bats runs it):
#
# 1. No function longer than FUNC_MAX lines, counted between the
#    column-0 "{" and "}" that open and close its body (the layout
#    .clang-format gives every function). A longer one hides its phases:
#    name them as functions.
# 2. The folders of plugin/ form layers, each using only those below it:
#        core < sys < topo < site < plan < lf < spank < cmd
#    core: the pure derivation (and the pure topology ranking); sys: the
#    adapters to the system and to Slurm; topo: the hwloc adapter; site:
#    the site policy file; plan: the memory model, pure arithmetic that
#    uses only core; lf: LLaMA-Factory run preparation; spank: the
#    plugin glue; cmd: the distenv command. A file may include a header
#    of its own folder or of a folder before it, never of one after it,
#    so no two folders include each other's headers. A new folder must
#    be placed in LAYERS. The pure layers (PURE: core, plan) include no
#    header of another folder but core, and none of Slurm, libyaml or
#    hwloc.
# 3. With a configured build (TOP/Makefile), every link line of a program,
#    the plugin or a library (*_LDADD, *_LIBADD) names each of distenv's
#    libraries once, users before what they use: lf, plan, site, sys,
#    core (a program's linker searches static archives in order, so a
#    library listed again later only hides a wrong order).
# 4. In the bats tests (tests/**/*.bats and the .bash files they load),
#    no assertion that cannot fail: an && list, or a command negated
#    with !, before the end of a @test or a function body. bats runs a
#    test under errexit, which ignores a failure of every command of an
#    && list but the last, and the status of "! CMD", so
#    "[ A ] && [ B ]" never fails on A; nor a call, where errexit is
#    off (in $( ), after run, in a condition), of a function with a
#    check before its end. tests/lint_bats.py reads the files and says
#    what to write instead.
# 5. No file of plugin/ longer than FILE_MAX lines: a reader holds one
#    file at a time, so a longer one is split along its seams, each
#    derived value's rule in one file.
# 6. Every C file of plugin/ is laid out as .clang-format says (Slurm's
#    own settings), checked with clang-format --dry-run -Werror; the fix
#    is clang-format -i FILE. A tree without .clang-format (the made-up
#    trees of structure.bats) is not checked; where clang-format is
#    missing the check is a problem, not a pass.
#
#   tests/check_structure.sh [TOP]     TOP: the tree (default: this one)
#
# Prints one line per problem, then "structure: ok" or "structure: N
# problems"; exits 1 when there is a problem.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${1:-$(cd "$here/.." && pwd)}
cd "$top" || exit 2
shopt -s nullglob

FUNC_MAX=80
FILE_MAX=700
LAYERS=(core sys topo site plan lf spank cmd)
PURE=(core plan)
LIB_ORDER=(lf plan site sys core)
problems=0

problem() {
	echo "$*"
	problems=$((problems + 1))
}

layer_of() { # FOLDER: its index in LAYERS, or -1
	local i
	for i in "${!LAYERS[@]}"; do
		[ "${LAYERS[$i]}" = "$1" ] && { echo "$i"; return; }
	done
	echo -1
}

# 1. Function length.
while IFS= read -r line; do
	problem "$line"
done < <(for f in plugin/*/*.[ch]; do
	awk -v file="$f" -v max="$FUNC_MAX" '
		# The last line that starts a declaration names the function.
		/^[A-Za-z_]/ { head = $0; head_line = NR }
		/^\{/ {
			start = NR
			name = head
			line = head_line
			if (match(head, /[A-Za-z_][A-Za-z0-9_]*\(/))
				name = substr(head, RSTART, RLENGTH - 1)
		}
		/^\}/ && start {
			n = NR - start - 1
			if (n > max)
				printf "%s:%d: %s: %d lines (at most %d)\n",
				       file, line, name, n, max
			start = 0
		}' "$f"
done)

# 2. Layers. Which folder owns each header name.
declare -A owner
for h in plugin/*/*.h; do
	d=${h#plugin/}
	owner[$(basename "$h")]=${d%%/*}
done
for d in plugin/*/; do
	d=${d#plugin/}
	d=${d%/}
	[ "$(layer_of "$d")" -ge 0 ] ||
		problem "plugin/$d: not in the layer order (${LAYERS[*]})"
done
declare -A uses
for f in plugin/*/*.[ch]; do
	d=${f#plugin/}
	d=${d%%/*}
	from=$(layer_of "$d")
	[ "$from" -ge 0 ] || continue
	pure=0
	[[ " ${PURE[*]} " == *" $d "* ]] && pure=1
	if [ "$pure" = 1 ]; then
		while IFS= read -r h; do
			problem "$f: includes <$h>; plugin/$d is pure (no Slurm, libyaml or hwloc)"
		done < <(sed -n 's/^#include <\(slurm\/[^>]*\|yaml\.h\|hwloc[^>]*\)>.*/\1/p' "$f")
	fi
	while IFS= read -r h; do
		o=${owner[$h]:-}
		[ -n "$o" ] && [ "$o" != "$d" ] || continue
		uses[$d/$o]=1
		if [ "$(layer_of "$o")" -gt "$from" ]; then
			problem "$f: includes plugin/$o/$h, a layer above plugin/$d (order: ${LAYERS[*]})"
		elif [ "$pure" = 1 ] && [ "$o" != core ]; then
			problem "$f: includes plugin/$o/$h; plugin/$d is pure and uses only plugin/core"
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
for k in "${!uses[@]}"; do
	a=${k%/*}
	b=${k#*/}
	if [[ "$a" < "$b" ]] && [ -n "${uses[$b/$a]:-}" ]; then
		problem "plugin/$a and plugin/$b include each other's headers"
	fi
done

# 3. Link lines, as the configured Makefile expands them (read from
# stdin, so that make never regenerates it).
if [ -f Makefile ]; then
	vars=$(sed -n 's/^\([A-Za-z0-9_]*_\(LDADD\|LIBADD\)\) =.*/\1/p' Makefile | sort -u)
	for v in $vars; do
		value=$({ cat Makefile; printf '\nstructure-print:\n\t@echo $(%s)\n' "$v"; } |
			make -s -f - structure-print 2>/dev/null)
		seen=" "
		last=-1
		for w in $value; do
			case "$w" in libdistenv_*.la) ;; *) continue ;; esac
			lib=${w#libdistenv_}
			lib=${lib%.la}
			if [[ "$seen" == *" $lib "* ]]; then
				problem "$v: links libdistenv_$lib.la twice"
				continue
			fi
			seen="$seen$lib "
			for i in "${!LIB_ORDER[@]}"; do
				[ "${LIB_ORDER[$i]}" = "$lib" ] || continue
				[ "$i" -lt "$last" ] &&
					problem "$v: libdistenv_$lib.la after a library it uses (order: ${LIB_ORDER[*]})"
				last=$i
			done
		done
	done
fi

# 4. Assertions that cannot fail, in the bats tests.
lint=$(python3 "$here/lint_bats.py" "$top")
rc=$?
if [ -n "$lint" ]; then
	while IFS= read -r line; do
		problem "$line"
	done <<<"$lint"
elif [ "$rc" -ne 0 ]; then
	problem "tests/lint_bats.py: exit $rc without a finding"
fi

# 5. File length.
for f in plugin/*/*.[ch]; do
	n=$(wc -l <"$f")
	[ "$n" -le "$FILE_MAX" ] ||
		problem "$f: $n lines (at most $FILE_MAX): split it along its seams"
done

# 6. Layout. clang-format reads the .clang-format of TOP (its
# --style=file looks upward from each file).
if [ ! -f .clang-format ]; then
	:
elif ! command -v clang-format >/dev/null; then
	problem "clang-format: not found (Debian package clang-format; contrib/install-deps.sh installs it)"
else
	for f in plugin/*/*.[ch]; do
		clang-format --dry-run -Werror --style=file "$f" >/dev/null 2>&1 ||
			problem "$f: not laid out as .clang-format says (clang-format -i $f)"
	done
fi

if [ "$problems" -eq 0 ]; then
	echo "structure: ok"
	exit 0
fi
echo "structure: $problems problems"
exit 1
