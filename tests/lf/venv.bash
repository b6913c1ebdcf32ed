# The pinned LLaMA-Factory venv of the template tools' tests: where it is
# (DISTENV_VENV, as contrib/lfstack/venv.sh builds it), its Python, and
# need_venv, which skips a test without it, for the reason tests/README.md
# lists.
VENV=$("$BATS_TEST_DIRNAME/../../contrib/lfstack/venv.sh" --path)
PY=$VENV/bin/python

need_venv() {
	[ -x "$PY" ] || skip "no LLaMA-Factory venv at $VENV: contrib/lfstack/venv.sh builds it (as root; tests/run does before these tests)"
}
