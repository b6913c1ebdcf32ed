# tap.bash: one TAP plan for a script that runs other TAP producers
# (cmocka, bats) and adds checks of its own. Sourced by tests/sanitize.sh
# and tests/sanitize_cluster.sh; tests/run counts the `ok` / `not ok`
# lines they print.

tap_n=0
tap_failed=0

tap() { # tap ok|not-ok TEXT: one line, numbered in this script's plan
	tap_n=$((tap_n + 1))
	if [ "$1" = ok ]; then
		echo "ok $tap_n - $2"
	else
		tap_failed=$((tap_failed + 1))
		echo "not ok $tap_n - $2"
	fi
}

# tap_relay PREFIX: the TAP lines on stdin, renumbered, their text after
# PREFIX (cmocka writes "ok 3 - text", bats "ok 3 text"); comments pass
# through, other lines are dropped. The producer's plan ("1..N") is
# checked: no plan, or another number of results than planned (a
# producer that crashed or was killed half-way), adds a `not ok`, so a
# run that stopped early cannot pass for a clean one. Feed it with a
# redirection, not a pipe, so the count goes on in this shell.
tap_relay() {
	local prefix=$1 line text plan="" results=0
	while IFS= read -r line; do
		case "$line" in
		"ok "[0-9]* | "not ok "[0-9]*)
			results=$((results + 1))
			text=${line#*ok }
			text=${text#* }
			text=${text#- }
			if [ "${line%%ok *}" = "" ]; then tap ok "$prefix$text"; else tap not-ok "$prefix$text"; fi
			;;
		1..[0-9]*) plan=${line#1..} plan=${plan%% *} ;;
		"#"*) echo "$line" ;;
		esac
	done
	if [ -z "$plan" ]; then
		tap not-ok "${prefix}no TAP plan: the tests did not start or their output was cut"
	elif [ "$results" -ne "$plan" ]; then
		tap not-ok "${prefix}$results results of the $plan planned: the run stopped early"
	fi
}

# tap_no_reports DIR WHAT: `ok` when DIR holds no file (no sanitizer
# report), else `not ok` and the start of the reports.
tap_no_reports() {
	local dir=$1 what=$2
	if compgen -G "$dir/*" >/dev/null; then
		tap not-ok "$what: sanitizer reports in $dir"
		head -40 "$dir"/* | sed 's/^/#   /'
	else
		tap ok "$what: no sanitizer report"
	fi
}

# tap_status: the script's exit status, 1 when any `not ok` was printed
# (tests/run counts lines; this is for a run by hand).
tap_status() {
	[ "$tap_failed" -eq 0 ]
}
