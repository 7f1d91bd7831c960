#!/usr/bin/env bash
# The documentation against the code, so that neither drifts alone:
#   - drfctl's commands: the dispatch in agent/cli/drfctl.c, the help table in
#     agent/cli/help.c, `drfctl help` (with DRFCTL), drfctl(8)'s COMMANDS and
#     SYNOPSIS, and the bash completion's command list are one set; each
#     command's `drfctl help CMD` and `drfctl CMD --help` answer.
#   - config keys: the [agent] and [capacity] keys of agent/config/config.c,
#     the "known:" lists its errors print, and the tenant keys those name, are
#     the keys drfd.conf(5) documents in the same section (and [group]'s); with DRFCTL, every
#     key drfd.conf(5) documents is one `drfctl plan` does not call unknown.
#   - metric families: every "drfd_*" family of agent/observe/metrics.c is in
#     drfd(8)'s METRICS, and every drfd_* name drfd(8) mentions is one of them.
#   - the README: 150 to 250 lines, the two set-up commands as they are, the
#     one .ci/run extracts, and links that lead to files of the tree.
# The option lists and the completion are tests/cli/test_completion.sh's.
#   DRFCTL=.output/cc/drfctl tests/cli/test_docs.sh
# TOP names another tree to check (the test's own check: a copy of the tree
# with one thing removed must fail).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${TOP:-$(cd "$here/../.." && pwd)}
drfctl=${DRFCTL:-}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }

# same NAME A B: the sorted word lists in files A and B are equal; else says
# what each has that the other lacks.
same() {
	local name=$1 a=$2 b=$3 only_a only_b
	LC_ALL=C sort -u -o "$a" "$a"
	LC_ALL=C sort -u -o "$b" "$b"
	if [ ! -s "$a" ] || [ ! -s "$b" ]; then
		ko "$name: a list is empty (the parsing below no longer matches the files)"
		return
	fi
	only_a=$(LC_ALL=C comm -23 "$a" "$b" | tr '\n' ' ')
	only_b=$(LC_ALL=C comm -13 "$a" "$b" | tr '\n' ' ')
	if [ -z "$only_a" ] && [ -z "$only_b" ]; then
		ok "$name: $(wc -l <"$a") alike"
	else
		ko "$name: only in the first [${only_a% }], only in the second [${only_b% }]"
	fi
}

# --- drfctl's commands -------------------------------------------------------
man8=$top/deploy/man/drfctl.8.scd
grep -oE 'strcmp\(argv\[1\], "[a-z][a-z-]*"\)' "$top/agent/cli/drfctl.c" |
	sed -E 's/.*"(.*)".*/\1/' >"$tmp/cmd.code"
sed -nE 's/^\t\{ "([a-z][a-z-]*)",$/\1/p' "$top/agent/cli/help.c" >"$tmp/cmd.helptable"
sed -n '/^# COMMANDS$/,/^# OPTIONS$/p' "$man8" | sed -nE 's/^## ([a-z][a-z-]*)$/\1/p' \
	>"$tmp/cmd.man"
sed -n '/^# SYNOPSIS$/,/^# DESCRIPTION$/p' "$man8" | sed -nE 's/^\*drfctl ([a-z][a-z-]*)\*.*/\1/p' \
	>"$tmp/cmd.mansyn"
sed -nE 's/^ *""\) echo "(.*)" ;;$/\1/p' "$top/deploy/bash-completion/drfctl" | tr ' ' '\n' |
	grep . >"$tmp/cmd.completion"
same "commands: drfctl.c's dispatch against help.c's table" "$tmp/cmd.code" "$tmp/cmd.helptable"
same "commands: drfctl.c against drfctl(8)'s COMMANDS" "$tmp/cmd.code" "$tmp/cmd.man"
same "commands: drfctl.c against drfctl(8)'s SYNOPSIS" "$tmp/cmd.code" "$tmp/cmd.mansyn"
same "commands: drfctl.c against the bash completion" "$tmp/cmd.code" "$tmp/cmd.completion"
if [ -n "$drfctl" ]; then
	# "  drfctl plan [-c FILE] ...": the usage lines of `drfctl help`.
	"$drfctl" help | sed -nE 's/^  drfctl ([a-z][a-z-]*).*/\1/p' >"$tmp/cmd.help"
	same "commands: drfctl.c against \`drfctl help\`" "$tmp/cmd.code" "$tmp/cmd.help"
	# "  plan     what DRF gives ...": the summary lines.
	"$drfctl" help | sed -nE 's/^  ([a-z][a-z-]*)  +[a-z].*/\1/p' >"$tmp/cmd.summary"
	same "commands: drfctl.c against \`drfctl help\`'s summaries" "$tmp/cmd.code" "$tmp/cmd.summary"
	bad=
	while read -r c; do
		"$drfctl" help "$c" >/dev/null 2>&1 || bad="$bad help-$c"
		[ "$c" = help ] || "$drfctl" "$c" --help >/dev/null 2>&1 || bad="$bad $c--help"
	done <"$tmp/cmd.code"
	if [ -z "$bad" ]; then
		ok "every command answers \`drfctl help CMD\` and \`drfctl CMD --help\`"
	else
		ko "no help for:$bad"
	fi
fi

# --- config keys -------------------------------------------------------------
conf5=$top/deploy/man/drfd.conf.5.scd
config_c=$top/agent/config/config.c
# code_keys ARRAY: the strings of `static const char *const ARRAY[...] = { ... };`
code_keys() {
	sed -n "/^static const char \*const $1\[/,/^};/p" "$config_c" | grep -oE '"[a-z][a-z-]*"' | tr -d '"'
}
# known SECTION: the "(known: ...)" list of the error for an unknown key in SECTION.
known() {
	sed -n "/unknown key '%s' in \\[$1/,/);/p" "$config_c" | tr -d '\n\t' |
		sed -E 's/" *"//g; s/.*\(known: ([^)]*)\).*/\1/' | tr -d ' ' | tr , '\n'
}
# man_keys SECTION: the keys drfd.conf(5) documents in "# [SECTION...]": the
# definition lines, `*key*, *key* = VALUE`.
man_keys() {
	awk -v sec="# [$1" 'index($0, sec) == 1 { on = 1; next } /^# / { on = 0 } on' "$conf5" |
		grep -E '^\*[a-z][a-z-]*\*(, \*[a-z][a-z-]*\*)* = ' | sed 's/ = .*//' |
		grep -oE '[a-z][a-z-]*'
}
code_keys agent_keys >"$tmp/agent.code"
code_keys cap_keys >"$tmp/capacity.code"
known agent >"$tmp/agent.known"
known capacity >"$tmp/capacity.known"
known tenant >"$tmp/tenant.known"
code_keys member_keys >"$tmp/fleet.code"
known fleet >"$tmp/fleet.known.all"
man_keys fleet >"$tmp/fleet.man"
man_keys agent >"$tmp/agent.man"
man_keys capacity >"$tmp/capacity.man"
man_keys tenant >"$tmp/tenant.man"
same "[agent] keys: config.c's agent_keys against its error's known list" "$tmp/agent.code" "$tmp/agent.known"
same "[capacity] keys: config.c's cap_keys against its error's known list" "$tmp/capacity.code" "$tmp/capacity.known"
same "[agent] keys: config.c against drfd.conf(5)" "$tmp/agent.code" "$tmp/agent.man"
same "[capacity] keys: config.c against drfd.conf(5)" "$tmp/capacity.code" "$tmp/capacity.man"
same "[tenant] keys: config.c's known list against drfd.conf(5)" "$tmp/tenant.known" "$tmp/tenant.man"
code_keys group_keys >"$tmp/group.code"
known group >"$tmp/group.known"
man_keys group >"$tmp/group.man"
same "[group] keys: config.c's group_keys against its error's known list" "$tmp/group.code" "$tmp/group.known"
same "[group] keys: config.c against drfd.conf(5)" "$tmp/group.code" "$tmp/group.man"
# drfd.conf's [fleet] (member_keys); a fleet file's [fleet] has the slot-* keys
grep -v '^slot-' "$tmp/fleet.known.all" >"$tmp/fleet.known"
same "[fleet] keys: config.c's member_keys against its error's known list" "$tmp/fleet.code" "$tmp/fleet.known"
same "[fleet] keys: config.c against drfd.conf(5)" "$tmp/fleet.code" "$tmp/fleet.man"
if [ -n "$drfctl" ]; then
	# What the binary says: every documented key is known (a bad value or a
	# missing capacity is another error), and a made-up one is not.
	bad=
	for sec in agent capacity tenant; do
		header="[$sec]"
		[ "$sec" = tenant ] && header="[tenant t]"
		for k in $(cat "$tmp/$sec.man") no-such-key; do
			printf '%s\n%s = 1\n' "$header" "$k" >"$tmp/k.conf"
			out=$("$drfctl" plan -c "$tmp/k.conf" 2>&1)
			if grep -q "unknown key '$k'" <<<"$out"; then
				[ "$k" = no-such-key ] || bad="$bad $sec/$k"
			elif [ "$k" = no-such-key ]; then
				bad="$bad $sec/$k(accepted: the check below proves nothing)"
			fi
		done
	done
	if [ -z "$bad" ]; then
		ok "drfctl plan knows every key drfd.conf(5) documents"
	else
		ko "drfctl plan calls unknown what drfd.conf(5) documents:$bad"
	fi
fi

# START-ONLY KEYS names keys: each is one drfd.conf(5) documents in a section.
cat "$tmp"/{agent,capacity,tenant,group,fleet}.man >"$tmp/all.man"
sed -n '/^# START-ONLY KEYS$/,/^# THE TENANTS DIRECTORY$/p' "$conf5" | grep -oE '\*[a-z][a-z-]*\*' | tr -d '*' |
	LC_ALL=C sort -u >"$tmp/startonly.man"
stray=$(LC_ALL=C sort -u "$tmp/all.man" | LC_ALL=C comm -23 "$tmp/startonly.man" - | tr '\n' ' ')
if [ ! -s "$tmp/startonly.man" ]; then
	ko "START-ONLY KEYS: no key found (the parsing no longer matches drfd.conf(5))"
elif [ -z "$stray" ]; then
	ok "START-ONLY KEYS: its $(wc -l <"$tmp/startonly.man") keys are documented keys"
else
	ko "START-ONLY KEYS names keys no section documents: ${stray% }"
fi
# The sections: config.c's error for an unknown one lists them, and so does
# FILE FORMAT's first rule.
sed -n '/fail(ps, "unknown section \[%s\] (expected/,/);/p' "$config_c" | tr -d '\n\t' |
	grep -oE '\[[a-z]+( NAME)?\]' | tr -d '[]' | awk '{print $1}' >"$tmp/sections.code"
sed -n '/^# FILE FORMAT$/,/^# UNITS$/p' "$conf5" | awk '/^- A section starts with/ { on = 1 } on && /^- / && !/^- A section/ { exit } on' |
	tr '\n' ' ' | sed 's/(A fleet file.*//' | grep -oE '\*\[[a-z]+' | tr -d '*[' >"$tmp/sections.man"
same "sections: config.c's unknown-section error against drfd.conf(5)'s FILE FORMAT" "$tmp/sections.code" \
	"$tmp/sections.man"

# --- metric families ---------------------------------------------------------
man_drfd=$top/deploy/man/drfd.8.scd
grep -oE '"drfd_[a-z_]+"' "$top/agent/observe/metrics.c" | tr -d '"' >"$tmp/metrics.code"
# A family of one unit each (metrics.c's family_unit) is the base name in the
# code, and in drfd(8) drfd_X_cores, drfd_X_bytes, drfd_X_bytes_per_second or
# drfd_X_*{cores,...}: the man's names are mapped to the base the code has.
unit_base() { # CODE-NAMES: stdin's names, each as the code names it
	awk 'NR == FNR { code[$1] = 1; next }
	     { n = $1; if (!(n in code)) { b = n; sub(/_$/, "", b)
	       if (!(b in code)) { b = n; sub(/_(cores|bytes_per_second|bytes)$/, "", b) }
	       if (b in code) n = b }
	       print n }' "$1" -
}
sed -n '/^# METRICS$/,/^# EXIT STATUS$/p' "$man_drfd" | sed 's/[\\]//g' | grep -oE 'drfd_[a-z_]+' |
	unit_base "$tmp/metrics.code" >"$tmp/metrics.man"
sed 's/[\\]//g' "$man_drfd" | grep -oE 'drfd_[a-z_]+' | unit_base "$tmp/metrics.code" >"$tmp/metrics.anywhere"
same "metric families: metrics.c against drfd(8)'s METRICS" "$tmp/metrics.code" "$tmp/metrics.man"
LC_ALL=C sort -u -o "$tmp/metrics.anywhere" "$tmp/metrics.anywhere"
stray=$(LC_ALL=C comm -13 "$tmp/metrics.code" "$tmp/metrics.anywhere" | tr '\n' ' ')
if [ -z "$stray" ]; then
	ok "every drfd_* name in drfd(8) is a family of metrics.c"
else
	ko "drfd(8) names metrics that metrics.c does not emit: ${stray% }"
fi

# --- the build dependencies --------------------------------------------------
# `install-deps.sh --build && make deb` on a fresh machine: the build set holds
# every Build-Depends of debian/control (those for the tests, <!nocheck>, are the
# full set's), under the names install-deps.sh uses.
sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*: /p' "$top/debian/control" | sed 's/^Build-Depends://' |
	grep -v '^[A-Z]' | tr ',' '\n' | grep -v '<!nocheck>' | sed -E 's/\(.*\)//; s/^ *//; s/ *$//' | grep . |
	sed 's/^debhelper-compat$/debhelper/; s/^pkgconf$/pkg-config/' >"$tmp/bdeps"
awk '/^packages=\(/ { on = 1; next } on && /^\)/ { exit } on' "$top/deploy/install-deps.sh" |
	sed 's/#.*//' | tr -s '[:blank:]' '\n' | grep . >"$tmp/build-set"
missing=$(LC_ALL=C sort -u "$tmp/bdeps" | LC_ALL=C comm -23 - <(LC_ALL=C sort -u "$tmp/build-set") | tr '\n' ' ')
if [ ! -s "$tmp/bdeps" ] || [ ! -s "$tmp/build-set" ]; then
	ko "build dependencies: a list is empty (the parsing no longer matches the files)"
elif [ -z "$missing" ]; then
	ok "install-deps.sh --build installs debian/control's $(wc -l <"$tmp/bdeps") Build-Depends"
else
	ko "install-deps.sh --build lacks Build-Depends: ${missing% }"
fi

# --- the README --------------------------------------------------------------
readme=$top/README.md
n=$(wc -l <"$readme")
if [ "$n" -ge 150 ] && [ "$n" -le 250 ]; then
	ok "README.md is $n lines (150-250)"
else
	ko "README.md is $n lines, not 150-250: the reference goes to the man pages, the rest to docs/"
fi
for line in '    ./deploy/install-deps.sh && make demo        # drfd enforcing the example tenants' \
	'    ./deploy/install-deps.sh && make check-all   # runs every test'; do
	if grep -qxF -- "$line" "$readme"; then
		ok "README.md has the set-up line [${line#    }]"
	else
		ko "README.md lost the set-up line [${line#    }]"
	fi
done
# What .ci/run runs, extracted as it extracts it.
cmd=$(sed -n 's/^    \(.*\) *# runs every test$/\1/p' "$readme" | sed 's/ *$//')
if [ "$cmd" = "./deploy/install-deps.sh && make check-all" ]; then
	ok ".ci/run's extraction gives [$cmd]"
else
	ko ".ci/run's extraction gives [$cmd]"
fi
# The Layout names every folder of agent/ the Makefile builds as a layer.
bad=
read -ra layers < <(sed -n 's/^LAYERS := //p' "$top/Makefile")
for l in "${layers[@]}"; do
	[ -d "$top/agent/$l" ] || continue
	sed -n '/^## Layout$/,/^## /p' "$readme" | grep -q "\`$l\`" || bad="$bad $l"
done
if [ -z "$bad" ]; then
	ok "README.md's Layout names every folder of agent/"
else
	ko "README.md's Layout does not name agent/:$bad"
fi
bad=
for f in "$readme" "$top"/docs/*.md "$top/tests/README.md"; do
	while IFS= read -r t; do
		case $t in http:* | https:* | '#'*) continue ;; esac
		[ -e "$(dirname "$f")/${t%%#*}" ] || bad="$bad ${f#"$top"/}:$t"
	done < <(grep -oE '\]\([^)]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/')
done
if [ -z "$bad" ]; then
	ok "the links of README.md, docs/ and tests/README.md lead to files"
else
	ko "links to nothing:$bad"
fi

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
