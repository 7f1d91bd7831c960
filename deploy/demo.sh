#!/usr/bin/env bash
# The README's first command (make demo): drfd on the example tenants.
# On a host with cgroup v2 and the cpu and memory controllers, as root, it runs
# drfd there for real. Elsewhere (a cgroup v1 or hybrid host, like the machines
# this project is built on) it says why, then boots Debian's kernel in QEMU and
# runs the same demo inside, with the host's build.
#   demo.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=$(cd "${1:?usage: demo.sh BUILD_DIR}" && pwd)
conf=$top/deploy/examples/drfd.conf

echo "== the plan: drfctl plan -c $conf"
"$build/drfctl" plan -c "$conf" || exit 1
echo

# drfd --dry-run runs drfd's own host check and says what is missing.
why=$("$build/drfd" -c "$conf" --dry-run 2>&1 >/dev/null |
	sed -n 's/^drfd: this host could not enforce: \(.*\); dry run: .*/\1/p')
if [ -z "$why" ] && [ "$(id -u)" -eq 0 ]; then
	exec "$here/demo-run.sh" "$build"
fi
if [ -n "$why" ]; then
	echo "This host cannot enforce: $why"
else
	echo "drfd needs root to write cgroupfs."
fi
echo
echo "So the demo runs in a VM: Debian's kernel under QEMU, with this build (about a minute)."
# shellcheck source=tests/vm/boot.sh
. "$top/tests/vm/boot.sh"
out=$top/.output/vm
if ! vm_prepare "$out"; then
	echo "demo: cannot boot the VM: $VM_WHY" >&2
	exit 1
fi
res=$out/demo
rm -rf "$res"
mkdir -p "$res"
truncate -s 64M "$out/demo.img"
vm_boot "$top/tests/vm/demo-guest.sh" "$res" "$build" "$out/demo.img"
rm -f "$out/demo.img"
if [ ! -s "$res/console.log" ]; then
	echo "demo: the VM produced no output; its serial console:" >&2
	tail -n 20 "$res/serial.log" >&2
	exit 1
fi
sed 's/^/   | /' "$res/console.log"
[ "$(cat "$res/exit-status" 2>/dev/null)" = 0 ]
