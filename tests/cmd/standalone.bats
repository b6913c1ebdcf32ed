#!/usr/bin/env bats
# The project stands alone (tests/check_standalone.sh): no tracked file,
# no string of the built plugin or command and no installed file names
# the workshop folder beside a checkout, its notes or its case tags.

setup() {
	CHECK="$BATS_TEST_DIRNAME/../check_standalone.sh"
	up=..
}

@test "standalone: the tree, the built plugin and command, and make install name nothing outside the tree" {
	run "$CHECK"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "standalone: ok" ]
}

@test "standalone: a template line, a message in a built file and a case tag are each caught, with file and line" {
	mkdir -p "$BATS_TEST_TMPDIR/t"
	printf '# fine\n# the run stops (%s/shared/notes 1)\n' "$up" >"$BATS_TEST_TMPDIR/t/dpo.sbatch"
	tag=$(printf 'case C%s' 5) # not written whole here, or the tree would hold one
	printf 'warning: cutoff_len too long (%s)\n' "$tag" >"$BATS_TEST_TMPDIR/t/msg.txt"
	printf 'int main(void) { return 0; }\nconst char *m = "see %s/shared/x";\n' "$up" >"$BATS_TEST_TMPDIR/m.c"
	gcc -o "$BATS_TEST_TMPDIR/t/m.bin" "$BATS_TEST_TMPDIR/m.c"
	run "$CHECK" "$BATS_TEST_TMPDIR/t"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -qF "$BATS_TEST_TMPDIR/t/dpo.sbatch:2:# the run stops ($up/shared/notes 1)" <<<"$output"
	grep -qF "$BATS_TEST_TMPDIR/t/msg.txt:1:warning: cutoff_len too long ($tag)" <<<"$output"
	grep -qE "^$BATS_TEST_TMPDIR/t/m.bin:[0-9]+:see \.\./shared/x$" <<<"$output"
	[ "$(wc -l <<<"$output")" -eq 3 ]
}
