#!/usr/bin/env bats
# tests/tap.bash: what every run relays passes its plan and skip checks,
# and a failure is shown again with the lines that say why.

setup() {
	# shellcheck source=tests/tap.bash
	source "$BATS_TEST_DIRNAME/../tap.bash"
}

# relay PREFIX: tap_relay of stdin, then this shell's counts as a line
relay() {
	tap_relay "$1"
	echo "counts n=$tap_n failed=$tap_failed skipped=$tap_skipped"
}

@test "tap_relay: a producer's results renumbered, prefixed, comments kept, other lines dropped, its plan met" {
	run relay "[x] " < <(printf '1..3\nok 1 - one\nnot ok 2 two\n# why\nnoise\nok 3 - three\n')
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "ok 1 - [x] one" ]
	[ "${lines[1]}" = "not ok 2 - [x] two" ]
	[ "${lines[2]}" = "# why" ]
	[ "${lines[3]}" = "ok 3 - [x] three" ]
	[ "${lines[4]}" = "counts n=3 failed=1 skipped=0" ]
	[ "${#lines[@]}" -eq 5 ]
}

@test "tap_relay: fewer results than the plan is a not ok, with the producer's last lines outside TAP" {
	run relay "" < <(printf '1..3\nok 1 - one\nSegmentation fault\nok 2 - two\n')
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "not ok 3 - 2 results of the 3 planned: the run stopped early" ]
	[ "${lines[3]}" = "#   Segmentation fault" ]
	[ "${lines[4]}" = "counts n=3 failed=1 skipped=0" ]
}

@test "tap_relay: no plan is a not ok" {
	run relay "" < <(printf 'ok 1 - one\n')
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "not ok 2 - no TAP plan: the tests did not start or their output was cut" ]
	[ "${lines[2]}" = "counts n=2 failed=1 skipped=0" ]
}

@test "tap_relay: a skip for a reason on the README's list passes, any other skip fails" {
	run relay "" < <(printf '1..2\nok 1 - a # skip needs root\nok 2 - b # SKIP no time today\n')
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "ok 1 - a # skip needs root" ]
	[[ ${lines[1]} == "not ok 2 - b # SKIP no time today (a skip whose reason is not on the list in tests/README.md"* ]]
	[ "${lines[2]}" = "counts n=2 failed=1 skipped=1" ]
}

@test "tap_failures: each not ok again with the 12 comment lines before it, and of its block the first 6 and the last 24" {
	{
		echo "ok 1 - a"
		for i in $(seq 1 14); do echo "# pre $i"; done
		echo "not ok 2 - b"
		for i in $(seq 1 50); do echo "# out $i"; done
		echo "ok 3 - c"
		echo "not ok 4 - d"
		echo "# short"
	} >"$BATS_TEST_TMPDIR/lane"
	run tap_failures "lane 24.11" <"$BATS_TEST_TMPDIR/lane"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "# == lane 24.11: not ok 2 - b" ]
	[ "${lines[1]}" = "#   # pre 3" ]
	[ "${lines[12]}" = "#   # pre 14" ]
	[ "${lines[13]}" = "#   # out 1" ]
	[ "${lines[18]}" = "#   # out 6" ]
	[ "${lines[19]}" = "#   [... 20 lines; of them, those that read as errors:]" ]
	[ "${lines[20]}" = "#   [...]" ]
	[ "${lines[21]}" = "#   # out 27" ]
	[ "${lines[44]}" = "#   # out 50" ]
	[ "${lines[45]}" = "# == lane 24.11: not ok 4 - d" ]
	[ "${lines[46]}" = "#   # short" ]
	[ "${#lines[@]}" -eq 47 ]
}

@test "tap_failures: of the lines between, the last 12 that read as errors" {
	{
		echo "not ok 1 - a"
		for i in $(seq 1 10); do echo "# out $i"; done
		for i in $(seq 1 14); do echo "# rank $i: RuntimeError: x"; done
		echo "# fine"
		for i in $(seq 1 30); do echo "# tail $i"; done
	} >"$BATS_TEST_TMPDIR/lane"
	run tap_failures x <"$BATS_TEST_TMPDIR/lane"
	[ "$status" -eq 0 ]
	[ "${lines[7]}" = "#   [... 25 lines; of them, those that read as errors:]" ]
	[ "${lines[8]}" = "#   # rank 3: RuntimeError: x" ]
	[ "${lines[19]}" = "#   # rank 14: RuntimeError: x" ]
	[ "${lines[20]}" = "#   [...]" ]
	[ "${lines[21]}" = "#   # tail 7" ]
	[ "${lines[44]}" = "#   # tail 30" ]
	[ "${#lines[@]}" -eq 45 ]
}

@test "tap_failures: a block of 30 lines or fewer comes whole; no not ok prints nothing" {
	{
		echo "not ok 1 - a"
		for i in $(seq 1 30); do echo "# out $i"; done
	} >"$BATS_TEST_TMPDIR/lane"
	run tap_failures x <"$BATS_TEST_TMPDIR/lane"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 31 ]
	[ "${lines[30]}" = "#   # out 30" ]
	[[ $output != *"[... "* ]]
	run tap_failures x < <(printf 'ok 1 - a\n# note\n')
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}
