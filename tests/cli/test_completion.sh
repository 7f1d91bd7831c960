#!/usr/bin/env bash
# drfctl's bash completion (deploy/bash-completion/drfctl), run the way bash runs
# it: COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT set, the completion
# function called, COMPREPLY compared with the exact list expected. Needs
# bash-completion (deploy/install-deps.sh installs it): without it the test is
# skipped, loudly, except under CI=true, where that is a failure.
# With DRFCTL set to the drfctl binary, the lists are also checked against
# drfctl's own help, and the tenants against drfctl plan --json.
# DRFCTL_COMPLETION and DRF_BASH_COMPLETION name other files to test with.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
completion=${DRFCTL_COMPLETION:-$top/deploy/bash-completion/drfctl}
bash_completion=${DRF_BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
drfctl=${DRFCTL:-}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; cat "$tmp/err" 2>/dev/null; }

if [ ! -r "$bash_completion" ]; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL $bash_completion is missing (apt-get install bash-completion; deploy/install-deps.sh installs it)"
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "SKIP test_completion.sh: $bash_completion is missing, so drfctl's bash completion" \
		"is NOT tested (apt-get install bash-completion; deploy/install-deps.sh installs it)" >&2
	exit 0
fi

# bash-completion is not written for set -u.
set +u
# shellcheck source=/dev/null
. "$bash_completion"
# shellcheck source=deploy/bash-completion/drfctl
. "$completion"
set -u
if ! declare -F _drfctl >/dev/null || [ "$(complete -p drfctl 2>/dev/null)" != "complete -F _drfctl drfctl" ]; then
	echo "FAIL $completion does not define _drfctl for drfctl"
	echo "0 passed, 1 failed"
	exit 1
fi

# drfd's completion (deploy/bash-completion/drfd): its options, as its --help
# lists them, and file names after -c.
drfd_completion=$(dirname "$completion")/drfd
set +u
# shellcheck source=deploy/bash-completion/drfd
. "$drfd_completion"
set -u
drfd_line() { # WORD...: as complete_line, for drfd
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	set +u
	_drfd drfd "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	set -u
	[ ${#COMPREPLY[@]} -gt 0 ] && printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort -u
}
got=$(drfd_line drfd -- | tr '\n' ' ')
if [ -n "${DRFD:-}" ]; then
	want=$("$DRFD" --help | grep -oE -- '(^| )--[a-z][a-z-]*' | tr -d ' ' | LC_ALL=C sort -u | tr '\n' ' ')
else
	want="--config --dry-run --foreground --help --once --version "
fi
if [ "$got" = "$want" ]; then
	ok "drfd --<TAB>: its options as drfd --help lists them: $got"
else
	ko "drfd --<TAB>: got [$got], drfd --help [$want]"
fi
mkdir -p "$tmp/cfgdir" && : >"$tmp/cfgdir/drfd.conf"
got=$(cd "$tmp/cfgdir" && drfd_line drfd -c dr)
if [ "$got" = drfd.conf ]; then ok "drfd -c dr<TAB>: drfd.conf"; else ko "drfd -c dr<TAB>: got [$got]"; fi

# complete_line WORD...: completes the command line WORD... (the last word is the
# one being completed; '=' is a word of its own, as bash splits it) and prints
# COMPREPLY, sorted, one a line.
complete_line() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMP_LINE="$*"
	COMP_LINE=${COMP_LINE// = /=}
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	set +u
	_drfctl drfctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	set -u
	if [ ${#COMPREPLY[@]} -gt 0 ]; then
		printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort -u
	fi
}

# sorted WORDS: WORDS (one string, blank-separated) sorted, one a line.
sorted() {
	local -a w
	read -ra w <<<"$1"
	if [ ${#w[@]} -gt 0 ]; then
		printf '%s\n' "${w[@]}" | LC_ALL=C sort -u
	fi
}

# expect NAME "WORDS" WORD...: the completion of WORD... is exactly WORDS.
expect() {
	local name=$1 want got
	want=$(sorted "$2")
	shift 2
	: >"$tmp/err"
	got=$(complete_line "$@" 2>"$tmp/err")
	if [ "$got" = "$want" ]; then
		ok "$name: $(echo "$want" | tr '\n' ' ')"
	else
		ko "$name: expected [$(echo "$want" | tr '\n' ' ')], got [$(echo "$got" | tr '\n' ' ')]"
	fi
}

commands="plan fleet reload status exec net-reset top recommend submit tasks cancel help"
policies="drf asset per-resource fds gfj ceei"
# opts COMMAND: the options of COMMAND.
opts() {
	case $1 in
	plan) echo "-c --config --policy --beta --lambda --discrete --strict --json --compare --tradeoff --svg -h --help" ;;
	reload) echo "-c --config --socket -h --help" ;;
	status) echo "-c --config --json --socket -h --help" ;;
	exec) echo "-c --config -h --help" ;;
	net-reset) echo "-c --config --device -h --help" ;;
	top) echo "-c --config --socket -d --delay -b --batch -n --iterations --sort -h --help" ;;
	recommend) echo "-c --config --window --history --json -h --help" ;;
	submit) echo "-c --config --socket --key --cpu --memory --io-read-bps --io-write-bps --net-rate -h --help" ;;
	tasks) echo "-c --config --socket --json -h --help" ;;
	cancel) echo "-c --config --socket -h --help" ;;
	esac
}
sort_keys="dominant allocation cpu memory io network name"

# The lists above are drfctl's own, when there is a drfctl to ask.
if [ -n "$drfctl" ]; then
	# "  -c, --config FILE   text": the options before the two-space gap, and
	# -h/--help, which every command takes.
	help_opts() {
		local line first
		local -a w
		"$drfctl" help "$1" | while IFS= read -r line; do
			[[ $line == "  -"* ]] || continue
			first=${line:2}
			read -ra w <<<"${first%%  *}"
			printf '%s\n' "${w[@]}"
		done | tr -d , | grep '^-'
		printf '%s\n' -h --help
	}
	for c in plan reload status exec top recommend; do
		got=$(help_opts "$c" | LC_ALL=C sort -u)
		if [ "$got" = "$(sorted "$(opts "$c")")" ]; then
			ok "drfctl help $c lists the options the completion offers"
		else
			ko "drfctl help $c lists [$(echo "$got" | tr '\n' ' ')], the completion [$(opts "$c")]"
		fi
	done
	# "drfctl: no command 'x' (plan, status, exec, help)"
	got=$("$drfctl" help no-such-command 2>&1 >/dev/null | sed -nE 's/.*\((.*)\)$/\1/p' |
		tr -d ' ' | tr , '\n' | LC_ALL=C sort -u)
	if [ "$got" = "$(sorted "$commands")" ]; then
		ok "drfctl names the commands the completion offers"
	else
		ko "drfctl names [$(echo "$got" | tr '\n' ' ')], the completion [$commands]"
	fi
	# "  --sort KEY          dominant, allocation, ... or name"
	got=$("$drfctl" help top | sed -nE 's/^  --sort KEY +//p' | sed 's/,* or /, /' | tr -d ' ' |
		tr , '\n' | LC_ALL=C sort -u)
	if [ "$got" = "$(sorted "$sort_keys")" ]; then
		ok "drfctl help top lists the sort keys the completion offers"
	else
		ko "drfctl help top lists [$(echo "$got" | tr '\n' ' ')], the completion [$sort_keys]"
	fi
	got=$("$drfctl" help plan | sed -nE '1s/.*--policy ([a-z|-]+).*/\1/p' | tr '|' '\n' |
		LC_ALL=C sort -u)
	if [ "$got" = "$(sorted "$policies")" ]; then
		ok "drfctl help plan lists the policies the completion offers"
	else
		ko "drfctl help plan lists [$(echo "$got" | tr '\n' ' ')], the completion [$policies]"
	fi
fi

expect "drfctl <TAB>: the commands" "$commands" drfctl ""
expect "drfctl p<TAB>" "plan" drfctl p
expect "drfctl -<TAB>: the global options" "-h --help --version" drfctl -
expect "drfctl help <TAB>: the commands" "$commands" drfctl help ""
expect "drfctl help s<TAB>" "status submit" drfctl help s
expect "drfctl help plan <TAB>: nothing" "" drfctl help plan ""
expect "drfctl plan -<TAB>: plan's options" "$(opts plan)" drfctl plan -
expect "drfctl plan --<TAB>: plan's long options" "--config --policy --beta --lambda --discrete --strict --json --compare --tradeoff --svg --help" \
	drfctl plan --
expect "drfctl status --<TAB>: status's long options" "--config --json --socket --help" \
	drfctl status --
expect "drfctl status -<TAB>: status's options" "$(opts status)" drfctl status -
expect "drfctl exec -<TAB>: exec's options" "$(opts exec)" drfctl exec -
expect "drfctl plan --policy <TAB>: the policies" "$policies" drfctl plan --policy ""
expect "drfctl plan --policy p<TAB>" "per-resource" drfctl plan --policy p
expect "drfctl plan --policy=<TAB>: the policies" "$policies" drfctl plan --policy = ""
expect "drfctl plan --policy=a<TAB>" "asset" drfctl plan --policy = a
expect "drfctl top -<TAB>: top's options" "$(opts top)" drfctl top -
expect "drfctl top --sort <TAB>: the sort keys" "$sort_keys" drfctl top --sort ""
expect "drfctl top --sort=n<TAB>" "name network" drfctl top --sort = n
expect "drfctl top -d <TAB>: nothing (seconds)" "" drfctl top -d ""
expect "drfctl top -n <TAB>: nothing (a count)" "" drfctl top -n ""
expect "drfctl plan --sort <TAB>: plan has no --sort" "" drfctl plan --sort ""
expect "drfctl fleet <TAB>: its subcommands" "plan apply status submit" drfctl fleet ""
expect "drfctl fleet submit --task-key <TAB>: nothing (a key)" "" drfctl fleet submit --task-key ""
expect "drfctl fleet a<TAB>" "apply" drfctl fleet a
expect "drfctl fleet status --e<TAB>" "--endpoints" drfctl fleet status --e
expect "drfctl fleet apply --endpoints <TAB>: nothing (URLs)" "" drfctl fleet apply --endpoints ""
# each subcommand its own options: plan's are offline, no etcd option
expect "drfctl fleet plan --<TAB>: plan's" "--config --json --compare --discrete --first-fit --help" \
	drfctl fleet plan --
expect "drfctl fleet apply --<TAB>: apply's" \
	"--file --endpoints --prefix --cacert --cert --key --user --password-file --help" drfctl fleet apply --
expect "drfctl fleet status --j<TAB>" "--json" drfctl fleet status --j
expect "drfctl fleet submit --t<TAB>" "--task-key" drfctl fleet submit --t
expect "drfctl tasks -<TAB>: tasks's options" "$(opts tasks)" drfctl tasks -
expect "drfctl cancel -<TAB>: cancel's options" "$(opts cancel)" drfctl cancel -
expect "drfctl reload -<TAB>: reload's options" "$(opts reload)" drfctl reload -
expect "drfctl submit A --cpu 1 <TAB>: -- or submit's options" "-- $(opts submit)" \
	drfctl submit A --cpu 1 ""
expect "drfctl submit A --memory <TAB>: nothing (a quantity)" "" drfctl submit A --memory ""
expect "drfctl submit --key <TAB>: nothing (the client's key)" "" drfctl submit --key ""

# A config of the tenants A and B in the main file, and B2 and c-1.x in
# tenants.d; what drfd does not read is not offered: a commented header, a
# dot file, a file not ending in .conf.
mkdir -p "$tmp/cfg/tenants.d" "$tmp/cfg/teams"
cat >"$tmp/cfg/drfd.conf" <<'EOF'
[agent]
mode = share

[capacity]
cpu = 8
memory = 16G

[tenant A]
cpu = 2
# [tenant commented]
;[tenant commented2]
[tenant B] ; a comment after the header
task-cpu = 1
EOF
printf '[tenant B2]\r\nmemory = 1G\r\n\n[tenant\tc-1.x]\n' >"$tmp/cfg/tenants.d/b.conf"
printf '[tenant hidden]\n' >"$tmp/cfg/tenants.d/.hidden.conf"
printf '[tenant notes]\n' >"$tmp/cfg/tenants.d/notes.txt"
# The same with tenants-dir = teams: tenants.d is not read then.
sed 's/^mode = share$/tenants-dir = teams ; where the teams are/' "$tmp/cfg/drfd.conf" \
	>"$tmp/cfg/teams.conf"
printf '[tenant T1]\n[tenant T2]\n' >"$tmp/cfg/teams/t.conf"

expect "drfctl exec -c MAIN <TAB>: the main file's and tenants.d's tenants" "A B B2 c-1.x" \
	drfctl exec -c "$tmp/cfg/drfd.conf" ""
expect "drfctl exec --config MAIN c<TAB>" "c-1.x" drfctl exec --config "$tmp/cfg/drfd.conf" c
expect "drfctl submit -c MAIN --cpu 1 <TAB>: the tenants" "A B B2 c-1.x" \
	drfctl submit -c "$tmp/cfg/drfd.conf" --cpu 1 ""
expect "drfctl submit -c MAIN --key K <TAB>: the tenants (K is the key's, not one)" "A B B2 c-1.x" \
	drfctl submit -c "$tmp/cfg/drfd.conf" --key K ""
expect "drfctl submit -c MAIN A --key K <TAB>: -- or submit's options" "-- $(opts submit)" \
	drfctl submit -c "$tmp/cfg/drfd.conf" A --key K ""
expect "drfctl exec --config=MAIN B<TAB>" "B B2" drfctl exec --config = "$tmp/cfg/drfd.conf" B
expect "drfctl exec -c MAIN <TAB> with tenants-dir = teams" "A B T1 T2" \
	drfctl exec -c "$tmp/cfg/teams.conf" ""
got=$(cd "$tmp/cfg" && complete_line drfctl exec -c drfd.conf "" 2>"$tmp/err")
if [ "$got" = "$(sorted "A B B2 c-1.x")" ]; then
	ok "drfctl exec -c RELATIVE <TAB>: tenants.d beside the main file"
else
	ko "drfctl exec -c RELATIVE <TAB>: got [$(echo "$got" | tr '\n' ' ')]"
fi
expect "drfctl exec -c MISSING <TAB>: nothing" "" drfctl exec -c "$tmp/none.conf" ""
expect "drfctl exec -c MAIN A <TAB>: --" "--" drfctl exec -c "$tmp/cfg/drfd.conf" A ""
expect "drfctl recommend -<TAB>: recommend's options" "$(opts recommend)" drfctl recommend -
expect "drfctl recommend -c MAIN <TAB>: the tenants" "A B B2 c-1.x" \
	drfctl recommend -c "$tmp/cfg/drfd.conf" ""
expect "drfctl recommend --window 7d -c MAIN --history F B<TAB>" "B B2" \
	drfctl recommend --window 7d -c "$tmp/cfg/drfd.conf" --history /nonexistent B
expect "drfctl recommend -c MAIN A <TAB>: one tenant only" "" \
	drfctl recommend -c "$tmp/cfg/drfd.conf" A ""
expect "drfctl recommend --window <TAB>" "1d 7d 30d all" drfctl recommend --window ""
expect "drfctl status -c MAIN <TAB>: the tenants" "A B B2 c-1.x" \
	drfctl status -c "$tmp/cfg/drfd.conf" ""
expect "drfctl status --json --socket S -c MAIN B<TAB>" "B B2" \
	drfctl status --json --socket /run/x.sock -c "$tmp/cfg/drfd.conf" B
expect "drfctl status -c MAIN A <TAB>: one tenant only" "" \
	drfctl status -c "$tmp/cfg/drfd.conf" A ""
expect "drfctl status -c MAIN A --<TAB>: its options still" "--config --json --socket --help" \
	drfctl status -c "$tmp/cfg/drfd.conf" A --

# After `--`, a command: every answer starts with what was typed, and echo is one.
: >"$tmp/err"
got=$(complete_line drfctl exec -c "$tmp/cfg/drfd.conf" A -- ech 2>"$tmp/err")
if grep -qx echo <<<"$got" && ! grep -qv '^ech' <<<"$got"; then
	ok "drfctl exec -c MAIN A -- ech<TAB>: commands (echo)"
else
	ko "drfctl exec -c MAIN A -- ech<TAB>: got [$(echo "$got" | tr '\n' ' ')]"
fi

if [ -n "$drfctl" ]; then
	for f in drfd.conf teams.conf; do
		got=$("$drfctl" plan --json -c "$tmp/cfg/$f" 2>"$tmp/err" | python3 -c \
			'import json, sys; print("\n".join(t["name"] for t in json.load(sys.stdin)["tenants"]))' |
			LC_ALL=C sort -u)
		want=$(complete_line drfctl exec -c "$tmp/cfg/$f" "" 2>/dev/null)
		if [ -n "$got" ] && [ "$got" = "$want" ]; then
			ok "the tenants of $f are drfctl plan's"
		else
			ko "the tenants of $f: drfctl plan [$(echo "$got" | tr '\n' ' ')], the completion [$(echo "$want" | tr '\n' ' ')]"
		fi
	done
fi

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
