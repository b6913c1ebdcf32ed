#!/usr/bin/env bats
# The structure rules of plugin/ (tests/check_structure.sh): functions of
# at most 80 lines, files of at most 700, folders in layers (core < sys <
# topo < site < plan < lf < spank < cmd; core and plan pure), each
# library linked once, users first, every C file laid out as
# .clang-format says; and in the bats tests, no assertion that cannot
# fail (tests/lint_bats.py). The tree must keep them, and the checker
# must catch each kind of break in a made-up tree.

setup() {
	CHECK="$BATS_TEST_DIRNAME/../check_structure.sh"
	TREE="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$TREE/plugin/core" "$TREE/plugin/topo"
}

# function FILE NAME LINES: a function whose body has LINES lines.
function_of() {
	{
		printf 'int %s(void)\n{\n' "$2"
		for ((i = 0; i < $3; i++)); do printf '\t(void)0;\n'; done
		printf '}\n'
	} >>"$1"
}

@test "structure: plugin/ keeps the rules" {
	run "$CHECK"
	[ "$status" -eq 0 ]
	[ "$output" = "structure: ok" ]
	# the layout rule checks only a tree that has the settings
	[ -f "$BATS_TEST_DIRNAME/../../.clang-format" ]
}

@test "structure: 80 lines pass, 81 fail, named by file, line and function" {
	function_of "$TREE/plugin/core/a.c" fits 80
	function_of "$TREE/plugin/core/a.c" too_long 81
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/core/a.c:84: too_long: 81 lines (at most 80)" ]
	[ "${lines[1]}" = "structure: 1 problems" ]
}

@test "structure: two folders that include each other's headers fail" {
	touch "$TREE/plugin/core/a.h" "$TREE/plugin/topo/b.h"
	printf '#include "b.h"\n' >"$TREE/plugin/core/a.c"
	printf '#include "a.h"\n' >"$TREE/plugin/topo/b.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/core/a.c: includes plugin/topo/b.h, a layer above plugin/core (order: core sys topo site plan lf spank cmd)" ]
	[ "${lines[1]}" = "plugin/core and plugin/topo include each other's headers" ]
	[ "${#lines[@]}" -eq 3 ]
	# one way only: the folder above may use the one below
	printf '\n' >"$TREE/plugin/core/a.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 0 ]
}

@test "structure: a pure layer that uses a folder but core, or Slurm, fails" {
	mkdir -p "$TREE/plugin/plan" "$TREE/plugin/sys"
	touch "$TREE/plugin/core/a.h" "$TREE/plugin/sys/s.h"
	printf '#include "a.h"\n' >"$TREE/plugin/plan/p.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 0 ]
	printf '#include <slurm/spank.h>\n#include "s.h"\n' >>"$TREE/plugin/plan/p.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/plan/p.c: includes <slurm/spank.h>; plugin/plan is pure (no Slurm, libyaml or hwloc)" ]
	[ "${lines[1]}" = "plugin/plan/p.c: includes plugin/sys/s.h; plugin/plan is pure and uses only plugin/core" ]
	[ "${lines[2]}" = "structure: 2 problems" ]
}

@test "structure: a file of 700 lines passes, of 701 fails, named with its count" {
	for ((i = 0; i < 700; i++)); do printf '\n'; done >"$TREE/plugin/core/a.h"
	run "$CHECK" "$TREE"
	[ "$status" -eq 0 ]
	printf '\n' >>"$TREE/plugin/core/a.h"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/core/a.h: 701 lines (at most 700): split it along its seams" ]
	[ "${lines[1]}" = "structure: 1 problems" ]
}

@test "structure: a C file laid out otherwise than .clang-format says fails" {
	cp "$BATS_TEST_DIRNAME/../../.clang-format" "$TREE/"
	printf 'int f(void)\n{\n\treturn 0;\n}\n' >"$TREE/plugin/core/a.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 0 ]
	printf 'int f(void) {\n  return 0;\n}\n' >"$TREE/plugin/core/a.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/core/a.c: not laid out as .clang-format says (clang-format -i plugin/core/a.c)" ]
	[ "${lines[1]}" = "structure: 1 problems" ]
}

@test "structure: a folder outside the layer order fails" {
	mkdir "$TREE/plugin/extra"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/extra: not in the layer order (core sys topo site plan lf spank cmd)" ]
}

@test "structure: a library linked twice or before its user fails" {
	printf 'x = libdistenv_sys.la\nprog_LDADD = libdistenv_lf.la $(x) libdistenv_core.la -lslurm $(x)\nlib_la_LIBADD = libdistenv_core.la libdistenv_site.la\nok_LDADD = libdistenv_site.la libdistenv_core.la\n' >"$TREE/Makefile"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "lib_la_LIBADD: libdistenv_site.la after a library it uses (order: lf plan site sys core)" ]
	[ "${lines[1]}" = "prog_LDADD: links libdistenv_sys.la twice" ]
	[ "${lines[2]}" = "structure: 2 problems" ]
}

# bats_file FILE: a made-up bats file, read by tests/lint_bats.py and never
# run, from stdin, with "%test" for "@test" (bats would take a line of
# this file that starts with "@test" for a test of its own, even in a
# heredoc).
# (%and becomes && and a leading %not becomes !: a fixture's && list or
# bare negation inside a heredoc would read, to a line-based check of
# this file, as an assertion that cannot fail)
bats_file() {
	mkdir -p "$(dirname "$1")"
	sed -e 's/^%test /@test /' -e 's/%and/\&\&/g' -e 's/^\([[:space:]]*\)%not /\1! /' >"$1"
}

# shellcheck disable=SC2016 # the expected lines quote the fixture, $ and all
@test "structure: a mid-test && list, in a test or in a helper it loads, fails, named by file and line" {
	# the fixtures' lines are printed, not written out here, so that
	# no line of this file is itself an assertion that cannot fail
	printf '%s\n' 'load helpers' '' '%test "two at once" {' \
		'	run true' '	[ "$status" -eq 0 ] && [ -z "$output" ]' \
		'	true' '}' | bats_file "$TREE/tests/cluster/and.bats"
	printf '%s\n' '# ended: the step failed, but not by the timeout' \
		'ended() {' '	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]' \
		'	echo "status $status"' '}' >"$TREE/tests/cluster/helpers.bash"
	run "$CHECK" "$TREE"
	echo "$output"
	[ "$status" -eq 1 ]
	and='&&'
	[[ "${lines[0]}" == 'tests/cluster/and.bats:5: [ "$status" -eq 0 ] '"$and"' [ -z "$output" ]: an '"$and"' list before the end of test "two at once": errexit ignores '*'(fix: one assertion per line, '* ]]
	[[ "${lines[1]}" == 'tests/cluster/helpers.bash:3: [ "$status" -ne 0 ] '"$and"' [ "$status" -ne 124 ]: an '"$and"' list before the end of function ended: '* ]]
	[ "${lines[2]}" = "structure: 2 problems" ]
}

@test "structure: a mid-test ! CMD fails, named by file and line" {
	printf '%s\n' '%test "no match" {' '	echo y >f' '	! grep -q x f' \
		'	[ -s f ]' '}' | bats_file "$TREE/tests/not.bats"
	run "$CHECK" "$TREE"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == 'tests/not.bats:3: ! grep -q x f: a command negated with ! before the end of test "no match": errexit ignores '*'(fix: refute CMD, '* ]]
	[ "${lines[1]}" = "structure: 1 problems" ]
}

# shellcheck disable=SC2016 # the expected lines quote the fixture, $ and all
@test "structure: a helper whose check comes before its end, called where errexit is off (\$( ), run, a condition), fails; guarded or called on its own, it passes" {
	mkdir -p "$TREE/tests"
	cat >"$TREE/tests/helpers.bash" <<'EOF'
# start_job: checks, then prints the id
start_job() {
	echo 7 >id
	grep -q 7 id
	cat id
}
start_job_guarded() {
	echo 7 >id
	grep -q 7 id || return 1
	cat id
}
each_rank() {
	for r in 0 1; do grep -q "rank $r" out; done
}
EOF
	bats_file "$TREE/tests/quiet.bats" <<'EOF'
load helpers
%test "quiet" {
	id=$(start_job)
	run each_rank
	[ "$status" -eq 0 ]
	if each_rank; then echo "$id"; fi
	id=$(start_job_guarded)
	start_job
	each_rank
}
EOF
	run "$CHECK" "$TREE"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == 'tests/quiet.bats:3: id=$(start_job): start_job runs here in a command substitution, where errexit is off: its check at tests/helpers.bash:4 (grep -q 7 id) cannot fail the test (fix: end that line with || return 1, '* ]]
	[[ "${lines[1]}" == 'tests/quiet.bats:4: run each_rank: each_rank runs here after run, where errexit is off: its check at tests/helpers.bash:13 (for r in 0 1; do grep -q "rank $r" out; done) cannot fail '* ]]
	[[ "${lines[2]}" == 'tests/quiet.bats:6: if each_rank; then echo "$id"; fi: each_rank runs here in the condition of if, where errexit is off: '* ]]
	[ "${lines[3]}" = "structure: 3 problems" ]
}

@test "structure: lists and negations that do fail a test pass: last commands, conditions, || lists, heredocs, scripts in strings" {
	bats_file "$TREE/tests/ok.bats" <<'EOF'
setup() { cd "$BATS_TEST_TMPDIR" && echo x >f; }

%test "each form" {
	if [ -s f ] && ! grep -q y f; then
		echo ok
	fi
	while [ ! -e g ] && true; do touch g; done
	for ((i = 0; i < 2; i++)); do echo "$i"; done
	[ -s f ] || [ -s g ]
	! grep -q y f || false
	[[ -s f && ! -e h ]]
	cat <<EOT
	[ a ] %and [ b ]
	%not grep -q y f
EOT
	run bash -c '
		[ -s f ] && echo yes
		%not grep -q y f
	'
	(( 1 && 2 ))
	sleep 0 && true &
	[ -s f ] && [ -s g ]
}

%test "last negation" {
	! grep -q y f
}
EOF
	run "$CHECK" "$TREE"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "structure: ok" ]
}

@test "structure: a bats file that does not read as bash fails" {
	printf '%%test "open" {\n\techo "unterminated\n}\n' | bats_file "$TREE/tests/bad.bats"
	run "$CHECK" "$TREE"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "tests/bad.bats:2: cannot read this as bash: unterminated double quote (bash -n tests/bad.bats)" ]
}
