#!/usr/bin/env bats
# The option table (plugin/core/distenv_option_table.h) against what users
# read: each subcommand's --help, distenv(1), distenv(8) and
# docs/user-guide.md,
# in both directions, and the DISTENV_* variables of the man pages
# against the sources (tests/cmd/man_options.py).

bats_require_minimum_version 1.5.0

setup() {
	TOP="$BATS_TEST_DIRNAME/../.."
	DISTENV="${DISTENV_BIN:-$TOP/distenv}"
	CHECK=(python3 "$BATS_TEST_DIRNAME/man_options.py" "$DISTENV"
		"$TOP/tests/unit/plugin_options" "$TOP")
	MAN1="$TOP/contrib/man/distenv.1" MAN8="$TOP/contrib/man/distenv.8"
	README="$TOP/docs/user-guide.md"
}

# The subcommands, as distenv --help names them.
subcommands() {
	"$DISTENV" --help | sed -nE 's/^(usage:| {6}) distenv ([a-z][a-z-]*).*/\2/p'
}

@test "distenv(1), distenv(8) and the user's guide list every option of the table and no other, and the DISTENV_* variables" {
	run "${CHECK[@]}"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# what was compared
	[ "$("$TOP/tests/unit/plugin_options" | wc -l)" -eq 16 ]
	[ "$(subcommands | tr '\n' ' ')" = "env show topo check-config check-env plan prepare " ]
}

@test "an option taken out of a man page or the user's guide, or one the table lacks, fails the check with its name" {
	# distenv(8) without --distenv-port
	grep -vF '.BI \-\-distenv\-port= PORT' "$MAN8" >"$BATS_TEST_TMPDIR/distenv.8"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/distenv.8")" -eq $(($(wc -l <"$MAN8") - 1)) ]
	run "${CHECK[@]}" "$MAN1" "$BATS_TEST_TMPDIR/distenv.8"
	[ "$status" -eq 1 ]
	[ "$output" = "$BATS_TEST_TMPDIR/distenv.8: OPTIONS lacks --distenv-port" ]
	# distenv(8) with an option the plugin does not have
	sed 's/^\.BI \\-\\-distenv\\-port= PORT$/.BI \\-\\-distenv\\-prot= PORT/' "$MAN8" >"$BATS_TEST_TMPDIR/distenv.8"
	run "${CHECK[@]}" "$MAN1" "$BATS_TEST_TMPDIR/distenv.8"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "$BATS_TEST_TMPDIR/distenv.8: OPTIONS lacks --distenv-port" ]
	[ "${lines[1]}" = "$BATS_TEST_TMPDIR/distenv.8: OPTIONS lists --distenv-prot, which is not an option" ]
	# distenv(1) without topo's --nvidia-dir
	grep -vF '.BI \-\-nvidia\-dir\  DIR' "$MAN1" >"$BATS_TEST_TMPDIR/distenv.1"
	run "${CHECK[@]}" "$BATS_TEST_TMPDIR/distenv.1"
	[ "$status" -eq 1 ]
	[ "$output" = "$BATS_TEST_TMPDIR/distenv.1: OPTIONS lack --nvidia-dir of distenv topo" ]
	# distenv(1) with --json under env, which does not take it
	sed 's/^\.SS plan, prepare$/.SS env/' "$MAN1" >"$BATS_TEST_TMPDIR/distenv.1"
	run "${CHECK[@]}" "$BATS_TEST_TMPDIR/distenv.1"
	[ "$status" -eq 1 ]
	grep -qxF "$BATS_TEST_TMPDIR/distenv.1: OPTIONS, 'env' lists --json, which none of ['env'] takes" <<<"$output"
	grep -qxF "$BATS_TEST_TMPDIR/distenv.1: OPTIONS lack --json of distenv plan" <<<"$output"
	# the user's guide without --distenv-resume
	grep -v '^| `--distenv-resume' "$README" >"$BATS_TEST_TMPDIR/README.md"
	run "${CHECK[@]}" "$MAN1" "$MAN8" "$BATS_TEST_TMPDIR/README.md"
	[ "$status" -eq 1 ]
	[ "$output" = "$BATS_TEST_TMPDIR/README.md: ## Options lacks --distenv-resume" ]
}

@test "a DISTENV_* variable taken out of a man page, or one the sources do not use, fails the check" {
	sed 's/DISTENV_LF_RESUME/DISTENV_LF_RESUMED/' "$MAN1" >"$BATS_TEST_TMPDIR/distenv.1"
	run "${CHECK[@]}" "$BATS_TEST_TMPDIR/distenv.1"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "$BATS_TEST_TMPDIR/distenv.1 lacks DISTENV_LF_RESUME" ]
	[ "${lines[1]}" = "$BATS_TEST_TMPDIR/distenv.1 names DISTENV_LF_RESUMED, which distenv does not use" ]
}

@test "every subcommand answers --help and -h on stdout with exit 0, and usage errors exit 2" {
	local c
	for c in $(subcommands); do
		run --separate-stderr "$DISTENV" "$c" --help
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[[ "${lines[0]}" == "usage: distenv $c"* ]]
		grep -qx '  -h, --help              Print this help and exit' <<<"$output"
		run --separate-stderr "$DISTENV" "$c" -h
		[ "$status" -eq 0 ]
		[[ "${lines[0]}" == "usage: distenv $c"* ]]
		run "$DISTENV" "$c" --bogus
		[ "$status" -eq 2 ]
		[ "$output" = "distenv: error: --bogus: unknown option. See distenv $c --help" ]
		run "$DISTENV" "$c" --help=yes
		[ "$status" -eq 2 ]
		[ "$output" = "distenv: error: --help=yes: takes no value. See distenv $c --help" ]
	done
	# an option's value missing, an operand too many or too few
	run "$DISTENV" topo --xml
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --xml: needs a value. See distenv topo --help" ]
	run "$DISTENV" show extra
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: extra: unexpected argument. See distenv show --help" ]
	run "$DISTENV" plan
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: distenv plan: give FILE. See distenv plan --help" ]
	run "$DISTENV" plan a.yaml b.yaml
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: b.yaml: unexpected argument. See distenv plan --help" ]
	# --help wins wherever it stands, even outside a step
	run env -i "$DISTENV" prepare --offload cpu --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: distenv prepare --lf-config FILE "* ]]
	run "$DISTENV" plan a.yaml --help
	[ "$status" -eq 0 ]
	run "$DISTENV"
	[ "$status" -eq 2 ]
	run "$DISTENV" --bogus
	[ "$status" -eq 2 ]
}

@test "a subcommand's --help lists its options with their values, from the table" {
	run "$DISTENV" topo --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "usage: distenv topo [--xml FILE] [--gpus LIST] [--nvidia-dir DIR]" ]
	grep -qx '  --xml FILE              An hwloc XML topology instead of this node'"'"'s' <<<"$output"
	[ "$(grep -c '^  -' <<<"$output")" -eq 4 ]
	run "$DISTENV" prepare --help
	grep -q '^  --lf-config FILE ' <<<"$output"
	[[ "$output" != *--json* ]]
	run "$DISTENV" plan --help
	grep -q '^  --json ' <<<"$output"
	[[ "$output" != *--lf-config* ]]
}
