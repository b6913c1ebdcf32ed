#!/usr/bin/env bats
# distenv check-env: the environment against the DISTENV_SET that distenv
# exported for the step, as the first command inside a container. The
# marker is made here the way the plugin makes it (32-bit FNV-1a of each
# value it set, plugin/core/distenv_env.h), so the tests need no Slurm.

bats_require_minimum_version 1.5.0

setup() {
	DISTENV="$BATS_TEST_DIRNAME/../../distenv"
	SET="DISTENV_SET=NNODES:$(fnv1a 2) MASTER_PORT:$(fnv1a 21007)"
}

# fnv1a VALUE: its 32-bit FNV-1a hash in 8 hex digits
fnv1a() {
	python3 -c 'import sys
h = 2166136261
for c in sys.argv[1].encode():
    h = ((h ^ c) * 16777619) & 0xffffffff
print("%08x" % h)' "$1"
}

@test "check-env: the values distenv set, as it set them: runs COMMAND with its arguments and exits with its status" {
	# shellcheck disable=SC2016 # the inner shell expands them
	run --separate-stderr env -i "$SET" NNODES=2 MASTER_PORT=21007 "$DISTENV" check-env -- sh -c 'echo "ran $1 $NNODES"; exit 3' sh arg
	[ "$status" -eq 3 ]
	[ "$output" = "ran arg 2" ]
	[ -z "$stderr" ]
	# no COMMAND: only the check
	run --separate-stderr env -i "$SET" NNODES=2 MASTER_PORT=21007 "$DISTENV" check-env
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]
}

@test "check-env: a value replaced after distenv set it, or one dropped, fails naming each and its value here, and COMMAND does not run" {
	run --separate-stderr env -i "$SET" NNODES=7 "$DISTENV" check-env -- echo ran
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	# shellcheck disable=SC2154 # bats sets stderr_lines
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "distenv: error: NNODES: is \"7\" here, not the value distenv set for this step: replaced after distenv set it, by the container runtime or the image. Remove it from the image's environment (its ENV, ch-run --set-env, Apptainer's %environment or APPTAINERENV_*), or pass the step's value in (pyxis: --container-env=NNODES)" ]
	[ "${stderr_lines[1]}" = "distenv: error: MASTER_PORT: not set here, though distenv set it for this step: the container runtime dropped it. Let the host's environment into the container (no Apptainer --cleanenv/--containall), or pass it (pyxis: --container-env=MASTER_PORT)" ]
}

@test "check-env: a resolved YAML that cannot be read here fails, naming the path and the fix" {
	run --separate-stderr env -i "$SET" NNODES=2 MASTER_PORT=21007 DISTENV_LF_CONFIG=/nonexistent/distenv-0-1.0-0/lf_config.yaml "$DISTENV" check-env -- echo ran
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[ "$stderr" = "distenv: error: DISTENV_LF_CONFIG: /nonexistent/distenv-0-1.0-0/lf_config.yaml: No such file or directory here: distenv wrote it where this container does not see it. Mount the directory at the same path inside the container (ch-run -b, apptainer --bind, pyxis --container-mounts), or have distenv write it in a directory mounted so (--distenv-lf-dir, the site file's lf_dir:, or TMPDIR)" ]
	# readable: the check passes
	echo 'stage: dpo' >"$BATS_TEST_TMPDIR/lf_config.yaml"
	run env -i "$SET" NNODES=2 MASTER_PORT=21007 DISTENV_LF_CONFIG="$BATS_TEST_TMPDIR/lf_config.yaml" "$DISTENV" check-env -- echo ran
	[ "$status" -eq 0 ]
	[ "$output" = "ran" ]
}

@test "check-env: outside a step distenv set up, with a malformed DISTENV_SET, or a COMMAND that is not there, it says so" {
	run env -i NNODES=2 "$DISTENV" check-env -- echo ran
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: DISTENV_SET: not set: this is no task of a step distenv set up, or the container runtime dropped the environment. Run it as the command of a step that asked for distenv (srun --distenv ...), inside the container" ]
	run env -i DISTENV_SET='NNODES:2' "$DISTENV" check-env
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: DISTENV_SET: \"NNODES:2\" is not NAME:HASH (8 hex digits). Leave DISTENV_SET as distenv set it" ]
	run -127 env -i "$SET" NNODES=2 MASTER_PORT=21007 "$DISTENV" check-env -- /nonexistent/cmd
	[ "$status" -eq 127 ]
	[ "$output" = "distenv: error: /nonexistent/cmd: cannot run it: No such file or directory" ]
}

@test "check-env: an OMP_NUM_THREADS replaced (enroot's PyTorch hook sets 1) is a warning, not a failure, and COMMAND runs" {
	local set="$SET OMP_NUM_THREADS:$(fnv1a 12)"
	run --separate-stderr env -i "DISTENV_SET=${set#DISTENV_SET=}" NNODES=2 MASTER_PORT=21007 OMP_NUM_THREADS=1 "$DISTENV" check-env -- echo ran
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
	[ "$stderr" = "distenv: warning: OMP_NUM_THREADS: is \"1\" here, not the value distenv set for this step: replaced after distenv set it, by the container runtime or the image (a slower run, not a hang). Remove it from the image's environment (its ENV, ch-run --set-env, Apptainer's %environment or APPTAINERENV_*), or pass the step's value in (pyxis: --container-env=OMP_NUM_THREADS)" ]
	# the same marker with NNODES replaced still fails
	run --separate-stderr env -i "DISTENV_SET=${set#DISTENV_SET=}" NNODES=7 MASTER_PORT=21007 OMP_NUM_THREADS=12 "$DISTENV" check-env -- echo ran
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}
