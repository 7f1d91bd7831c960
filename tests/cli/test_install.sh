#!/usr/bin/env bash
# make install into a scratch DESTDIR: the FHS layout for PREFIX=/usr and
# /usr/local, units that run the installed drfd, and a config that exists is
# never overwritten.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
make=${MAKE:-make}
build=${BUILD:?set BUILD to the build folder, e.g. .output/cc}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }

inst() { # DESTDIR PREFIX
	"$make" -s -C "$top" install BUILD="$build" DESTDIR="$1" PREFIX="$2" >"$tmp/log" 2>&1
}

d=$tmp/usr
inst "$d" /usr
rc=$?
missing=''
for f in usr/sbin/drfd:755 usr/bin/drfctl:755 usr/libexec/drfd/drfd-hold:755 \
	usr/share/man/man8/drfd.8:644 usr/share/man/man8/drfctl.8:644 \
	usr/share/man/man5/drfd.conf.5:644 usr/share/bash-completion/completions/drfctl:644 \
	usr/share/bash-completion/completions/drfd:644 \
	lib/systemd/system/drfd.service:644 lib/systemd/system/drfd-tenants.service:644 \
	etc/drfd/drfd.conf:644 etc/drfd/tenants.d/example.conf:644 \
	usr/share/doc/drfd/security.md:644 usr/share/drfd/prometheus/drfd-alerts.yml:644; do
	p=${f%:*} mode=${f#*:}
	[ "$(stat -c %a "$d/$p" 2>/dev/null)" = "$mode" ] || missing="$missing $p"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then
	ok "PREFIX=/usr installs every file with its mode"
else
	ko "PREFIX=/usr (exit $rc), missing or wrong mode:$missing"
	cat "$tmp/log"
fi

if grep -qx 'ExecStart=/usr/sbin/drfd --foreground' "$d/lib/systemd/system/drfd.service" &&
	grep -qx 'ExecReload=/usr/bin/drfctl reload' "$d/lib/systemd/system/drfd.service" &&
	grep -qx 'ExecStart=/usr/libexec/drfd/drfd-hold' "$d/lib/systemd/system/drfd-tenants.service"; then
	ok "the units run the installed programs"
else
	ko "the units' ExecStart lines"
fi

# An administrator's config survives a second install; a removed file comes back.
echo "; mine" >>"$d/etc/drfd/drfd.conf"
cp "$d/etc/drfd/drfd.conf" "$tmp/mine"
rm "$d/etc/drfd/tenants.d/example.conf"
inst "$d" /usr
rc=$?
if [ $rc -eq 0 ] && cmp -s "$d/etc/drfd/drfd.conf" "$tmp/mine" &&
	[ -f "$d/etc/drfd/tenants.d/example.conf" ]; then
	ok "a second install keeps the existing drfd.conf"
else
	ko "a second install (exit $rc) overwrote drfd.conf or did not restore example.conf"
fi

d=$tmp/local
inst "$d" /usr/local
rc=$?
if [ $rc -eq 0 ] && [ -x "$d/usr/local/sbin/drfd" ] && [ -f "$d/etc/drfd/drfd.conf" ] &&
	grep -qx 'ExecStart=/usr/local/sbin/drfd --foreground' \
		"$d/usr/local/lib/systemd/system/drfd.service" &&
	grep -qx 'ExecReload=/usr/local/bin/drfctl reload' \
		"$d/usr/local/lib/systemd/system/drfd.service"; then
	ok "PREFIX=/usr/local: units in /usr/local/lib/systemd/system run /usr/local/sbin/drfd and /usr/local/bin/drfctl"
else
	ko "PREFIX=/usr/local (exit $rc)"
fi

# The shipped config is valid and has no tenants: drfd idles on it.
out=$("$top/$build/drfctl" plan --json -c "$tmp/usr/etc/drfd/drfd.conf" 2>"$tmp/err")
rc=$?
if [ $rc -eq 0 ] && python3 -c 'import json,sys; p=json.loads(sys.argv[1]); sys.exit(len(p["tenants"]) != 0 or "cpu" not in p["capacity"])' "$out"; then
	ok "the installed config loads, with cpu = auto and no tenants"
else
	ko "the installed config (exit $rc): $(cat "$tmp/err")"
fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
