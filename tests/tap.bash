# tap.bash: one TAP plan for a script that runs other TAP producers
# (cmocka, bats, the scripts below) and adds checks of its own. Sourced by
# tests/run, tests/releases.sh, tests/sanitize.sh and
# tests/sanitize_cluster.sh. Every producer's output passes through
# tap_relay, which checks its plan and its skips; a script ends with
# tap_plan, so the script that relays it can check it in turn.

tap_n=0
tap_failed=0
tap_skipped=0

tap() { # tap ok|not-ok TEXT: one line, numbered in this script's plan
	tap_n=$((tap_n + 1))
	if [ "$1" = ok ]; then
		echo "ok $tap_n - $2"
		if [[ ${2,,} =~ \#[[:space:]]*skip ]]; then
			tap_skipped=$((tap_skipped + 1))
		fi
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
# run that stopped early cannot pass for a clean one, followed by the
# last lines the producer wrote outside TAP. Feed it with a
# redirection, not a pipe, so the count goes on in this shell.
tap_relay() {
	local prefix=$1 line text plan="" results=0 other=()
	while IFS= read -r line; do
		case "$line" in
		"ok "[0-9]* | "not ok "[0-9]*)
			results=$((results + 1))
			text=${line#*ok }
			text=${text#* }
			text=${text#- }
			if [ "${line%%ok *}" != "" ]; then
				tap not-ok "$prefix$text"
			elif tap_skip_refused "$text"; then
				tap not-ok "$prefix$text (a skip whose reason is not on the list in tests/README.md, \"Skips\")"
			else
				tap ok "$prefix$text"
			fi
			;;
		1..[0-9]*) plan=${line#1..} plan=${plan%% *} ;;
		"#"*) echo "$line" ;;
		*)
			other+=("$line")
			[ ${#other[@]} -le 10 ] || other=("${other[@]:1}")
			;;
		esac
	done
	if [ -z "$plan" ]; then
		tap not-ok "${prefix}no TAP plan: the tests did not start or their output was cut"
	elif [ "$results" -ne "$plan" ]; then
		tap not-ok "${prefix}$results results of the $plan planned: the run stopped early"
	else
		return 0
	fi
	# what the producer said last outside TAP (a crash, a kill, bats's
	# own error)
	[ ${#other[@]} -eq 0 ] || printf '#   %s\n' "${other[@]}"
}

# The skips a run may have: the list under "## Skips" in tests/README.md,
# one `reason` in backquotes at the start of each item, matched as a
# fixed string anywhere in the skip's reason. Read once.
tap_skips_allowed=()
tap_skips_read=0
tap_skip_list() {
	local readme line in=0
	readme="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/README.md"
	tap_skips_read=1
	while IFS= read -r line; do
		case "$line" in
		"## Skips"*) in=1 ;;
		"## "*) in=0 ;;
		"- \`"*) [ "$in" = 1 ] || continue
			line=${line#- \`}
			tap_skips_allowed+=("${line%%\`*}")
			;;
		esac
	done <"$readme"
}

# tap_skip_refused TEXT: true when TEXT (a result's text) is a skip whose
# reason is on no item of the list
tap_skip_refused() {
	local text=$1 reason allowed
	shopt -s nocasematch
	if [[ $text =~ \#[[:space:]]*skip[^[:space:]]*[[:space:]]*(.*)$ ]]; then
		reason=${BASH_REMATCH[1]}
	else
		shopt -u nocasematch
		return 1
	fi
	shopt -u nocasematch
	[ "$tap_skips_read" = 1 ] || tap_skip_list
	for allowed in "${tap_skips_allowed[@]}"; do
		[[ $reason == *"$allowed"* ]] && return 1
	done
	return 0
}

# tap_plan: the plan line of this script's results, printed last, after
# a run that went to its end (a script killed half-way prints none).
tap_plan() {
	echo "1..$tap_n"
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

# tap_failures NAME: each `not ok` of the TAP on stdin again, headed
# "== NAME", with the comment lines around it: the 12 before, then of
# the block after it (bats's failed command, the job's output,
# setup_file's error) the first 6 and the last 24, since what a failed
# test printed last is often its cause, and between them the last 12
# lines that read as errors (a crash in a job's middle: a rank's abort
# before the tracebacks of the ranks killed after it).
tap_failures() {
	awk -v name="$1" '
		function flush(   i, n) {
			for (i = 1; i <= na && i <= 6; i++) print "#   " after[i]
			if (na > 30) {
				print "#   [... " na - 30 " lines; of them, those that read as errors:]"
				for (i = 7; i <= na - 24; i++)
					if (after[i] ~ /[Ee]rror|ERROR|FAILED|[Ff]ailed|[Ss]ignal|terminate|[Kk]illed|[Aa]borted|Traceback/)
						hit[++n] = after[i]
				for (i = (n > 12 ? n - 11 : 1); i <= n; i++) print "#   " hit[i]
				delete hit
				print "#   [...]"
			}
			for (i = (na > 30 ? na - 23 : 7); i <= na; i++) print "#   " after[i]
			in_block = 0; na = 0; delete after
		}
		in_block && /^#/ { after[++na] = $0; next }
		/^#/ { before[++nb] = $0; delete before[nb - 12]; next }
		in_block { flush() }
		/^not ok / {
			print "# == " name ": " $0
			for (i = nb - 11; i <= nb; i++)
				if (i in before) print "#   " before[i]
			in_block = 1; nb = 0; delete before
		}
		END { if (in_block) flush() }'
}

# tap_status: the plan, then the script's exit status, 1 when any
# `not ok` was printed (tests/run reads the lines; this is for a run by
# hand). The last command of a script that goes to its end.
tap_status() {
	tap_plan
	[ "$tap_failed" -eq 0 ]
}
