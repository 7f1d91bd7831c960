#!/usr/bin/env bash
# The layers are the build's to keep, not a reviewer's: in a copy of the tree
# (its built objects hard-linked, so that only what the test adds is built), a
# file put in a folder that includes a header of a folder above it does not
# compile, and one that calls a function of a folder above it does not link
# (`make layers`, and drfctl's link for the CLI). The same file calling or
# including a folder below it builds: the failures are the direction's.
#   BUILD=.output/cc tests/cli/test_layers.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:?set BUILD to the build directory, e.g. .output/cc}
make=${MAKE:-make}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }

if [ ! -f "$top/$build/libdrf-lib.a" ]; then
	echo "FAIL test_layers: $build is not built (make layers first)"
	exit 1
fi
# The tree, with its outputs hard-linked in (timestamps kept: nothing is stale).
copy=$tmp/tree
mkdir -p "$copy"
(cd "$top" && tar -c --exclude=./.output --exclude=./.git Makefile agent bpf cgroupfs tests) |
	tar -x -C "$copy"
mkdir -p "$copy/.output"
cp -al "$top/.output/bpf" "$top/$build" "$copy/.output/"
variant=${build#.output/}

# build TARGET: make TARGET in the copy, as the tree's variant; its exit status.
build() {
	"$make" -C "$copy" -s BUILD=".output/$variant" CC="${CC:-cc}" "$1" >"$tmp/log" 2>&1
}

# probe NAME DIR TARGET WANT CODE: puts CODE in DIR/zz_probe.c of the copy and
# builds TARGET; WANT is "fails" or "builds".
probe() {
	local name=$1 dir=$2 target=$3 want=$4 code=$5 got
	printf '%s\n' "// SPDX-License-Identifier: MIT" "$code" >"$copy/$dir/zz_probe.c"
	if build "$target"; then got=builds; else got=fails; fi
	rm -f "$copy/$dir/zz_probe.c" "$copy/.output/$variant/$dir/zz_probe."*
	if [ "$got" = "$want" ]; then
		ok "$name: $want"
	else
		ko "$name: $got, expected it $want"
		tail -n 5 "$tmp/log"
	fi
}

# call FN: a file that calls FN, declared by hand (no include to refuse).
call() {
	printf '%s\n' "int $1(void);" "int zz_probe(void);" "int zz_probe(void)" "{" \
		"	return $1();" "}"
}
# incl HEADER: a file that includes HEADER.
incl() {
	printf '%s\n' "#include \"$1\"" "int zz_probe(void);" "int zz_probe(void)" "{" \
		"	return 0;" "}"
}

if build layers; then ok "the tree as it is links layer by layer"; else
	ko "the tree as it is links layer by layer"; tail -n 5 "$tmp/log"; fi

# The pure core: neither the config nor the cgroup layer.
probe "core including config.h" agent/core layers fails "$(incl config.h)"
probe "core including cgroupfs.h" agent/core layers fails "$(incl cgroupfs.h)"
probe "core calling drf_config_load" agent/core layers fails "$(call drf_config_load)"
probe "core calling cgfs_write" agent/core layers fails "$(call cgfs_write)"
probe "core calling drf_log (lib, below it)" agent/core layers builds "$(call drf_log)"
probe "core including log.h (lib, below it)" agent/core layers builds "$(incl log.h)"
# The planner: not the backends it feeds.
probe "plan calling drf_reconcile_tick" agent/plan layers fails "$(call drf_reconcile_tick)"
probe "plan including cgroupfs.h" agent/plan layers fails "$(incl cgroupfs.h)"
probe "plan calling drf_allocate (core, below it)" agent/plan layers builds \
	"$(call drf_allocate)"
# The network shaper: not the daemon.
probe "net including daemon.h" agent/net layers fails "$(incl daemon.h)"
probe "net calling drfd_tick" agent/net layers fails "$(call drfd_tick)"
probe "net including knobs.h (plan, below it)" agent/net layers builds "$(incl knobs.h)"
probe "net calling drf_knobs_compute (plan, below it)" agent/net layers builds \
	"$(call drf_knobs_compute)"
# The reconciler and the shaper: neither uses the other.
probe "enforce calling drf_shaper_tick" agent/enforce layers fails "$(call drf_shaper_tick)"
# The etcd client: not the daemon that will use it.
probe "fleet calling drfd_tick" agent/fleet layers fails "$(call drfd_tick)"
# drfctl: no daemon code.
probe "drfctl calling drfd_tick" agent/cli ".output/$variant/drfctl" fails "$(call drfd_tick)"
probe "drfctl including daemon.h" agent/cli ".output/$variant/drfctl" fails "$(incl daemon.h)"
probe "drfctl calling drf_config_load (config)" agent/cli ".output/$variant/drfctl" builds \
	"$(call drf_config_load)"

echo "test_layers: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
