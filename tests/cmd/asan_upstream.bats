#!/usr/bin/env bats
# tests/asan_upstream.sh: the ASan cluster run sets aside the reports of
# Slurm 22.05's shared MUNGE context (a double free in munge_decode) and
# nothing else. The report below is a real one, from slurmd in that run.

setup() {
	SCRIPT="$BATS_TEST_DIRNAME/../asan_upstream.sh"
	REPORT="$BATS_TEST_DIRNAME/../cluster/asan_reports/slurm_munge_double_free.txt"
	D="$BATS_TEST_TMPDIR/reports"
	mkdir -p "$D"
}

@test "asan_upstream: slurmd's double free in munge_decode under cred_p_verify_sign is set aside and named" {
	cp "$REPORT" "$D/asan.29477"
	run "$SCRIPT" "$D"
	[ "$status" -eq 0 ]
	[ ! -e "$D/asan.29477" ]
	[ -f "$D.upstream/asan.29477" ]
	[ "${#lines[@]}" -eq 1 ]
	[[ ${lines[0]} == "# Slurm's own bug, not distenv's: a double free in libmunge's munge_decode"*"$D.upstream/asan.29477" ]]
}

@test "asan_upstream: the same report with a distenv frame stays" {
	sed 's#(/usr/sbin/slurmd-wlm+0x10838)#in distenv_spank_task_init (/usr/lib/slurm/distenv.so+0x1234)#' \
		"$REPORT" >"$D/asan.1"
	grep -q distenv_spank_task_init "$D/asan.1"
	run "$SCRIPT" "$D"
	[ "$status" -eq 0 ]
	[ -f "$D/asan.1" ]
	[ ! -e "$D.upstream" ]
	[ -z "$output" ]
}

@test "asan_upstream: a double free in munge_decode from another caller stays" {
	sed 's/in cred_p_verify_sign /in auth_p_verify /' "$REPORT" >"$D/asan.2"
	grep -q 'in auth_p_verify ' "$D/asan.2"
	run "$SCRIPT" "$D"
	[ "$status" -eq 0 ]
	[ -f "$D/asan.2" ]
	[ -z "$output" ]
}

@test "asan_upstream: another error in the same frames stays" {
	sed 's/attempting double-free/heap-use-after-free/' "$REPORT" >"$D/asan.3"
	grep -q 'heap-use-after-free' "$D/asan.3"
	run "$SCRIPT" "$D"
	[ "$status" -eq 0 ]
	[ -f "$D/asan.3" ]
	[ -z "$output" ]
}
