#!/usr/bin/env bats
# The structure rules of plugin/ (tests/check_structure.sh): functions of
# at most 80 lines, folders in layers (core < sys < topo < site < lf <
# spank < cmd), each library linked once, users first. The tree must keep
# them, and the checker must catch each kind of break in a made-up tree.

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
	[ "${lines[0]}" = "plugin/core/a.c: includes plugin/topo/b.h, a layer above plugin/core (order: core sys topo site lf spank cmd)" ]
	[ "${lines[1]}" = "plugin/core and plugin/topo include each other's headers" ]
	[ "${#lines[@]}" -eq 3 ]
	# one way only: the folder above may use the one below
	printf '\n' >"$TREE/plugin/core/a.c"
	run "$CHECK" "$TREE"
	[ "$status" -eq 0 ]
}

@test "structure: a folder outside the layer order fails" {
	mkdir "$TREE/plugin/extra"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "plugin/extra: not in the layer order (core sys topo site lf spank cmd)" ]
}

@test "structure: a library linked twice or before its user fails" {
	printf 'x = libdistenv_sys.la\nprog_LDADD = libdistenv_lf.la $(x) libdistenv_core.la -lslurm $(x)\nlib_la_LIBADD = libdistenv_core.la libdistenv_site.la\nok_LDADD = libdistenv_site.la libdistenv_core.la\n' >"$TREE/Makefile"
	run "$CHECK" "$TREE"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "lib_la_LIBADD: libdistenv_site.la after a library it uses (order: lf site sys core)" ]
	[ "${lines[1]}" = "prog_LDADD: links libdistenv_sys.la twice" ]
	[ "${lines[2]}" = "structure: 2 problems" ]
}
