#!/usr/bin/env bash
# Installs what drfd needs to build, test and run on Debian 12, from Debian's
# archive only. Idempotent: does nothing when everything is installed already.
#   ./deploy/install-deps.sh           everything: build, package, every test, the demo
#   ./deploy/install-deps.sh --build   what `make` and `make deb` need, no more
set -euo pipefail

case ${1:-} in
"") only_build=no ;;
--build) only_build=yes ;;
-h | --help)
	sed -n '2,5s/^# \{0,1\}//p' "$0"
	exit 0
	;;
*)
	echo "install-deps: unknown option '$1' (--build: only what make and make deb need)" >&2
	exit 64
	;;
esac

packages=(
	# build
	make gcc clang llvm pkg-config git
	libinih-dev libcgroup-dev libbpf-dev bpftool libnl-3-dev libnl-route-3-dev
	libsystemd-dev scdoc libncurses-dev libjson-c-dev libmicrohttpd-dev zlib1g-dev libglpk-dev libcurl4-openssl-dev
	# the Debian package
	dpkg-dev debhelper fakeroot
)
if [ $only_build = no ]; then
	packages+=(
		# the package's checks
		lintian
		# tests
		libcmocka-dev python3 shellcheck iproute2 bash-completion valgrind iperf3 util-linux
		tmux bash-builtins etcd-server etcd-client gnuplot-nox
		# containers in a tenant (tests/vm/t_systemd.sh, docs/containers.md)
		podman
		# the real-kernel test VM (tests/vm): QEMU and Debian's kernel
		qemu-system-x86 linux-image-amd64 busybox-static cpio kmod
	)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
# promtool and prometheus itself (Debian's `prometheus`: test_metrics.sh has a
# real Prometheus scrape drfd's metrics-listen) and node-exporter
# (`prometheus-node-exporter`) for the metrics tests (tests/cli/test_metrics.sh,
# tests/vm/t_metrics.sh).
# Installing those packages would start and enable their services (prometheus on
# :9090, node-exporter on :9100, and again at every boot), add system users and,
# for prometheus, pull in its web UI's JavaScript: a test dependency must do none
# of that. So their two .debs are fetched with `apt-get download` and unpacked
# with `dpkg-deb -x`, which runs no maintainer script: only the three binaries
# (linked to libc alone) land in $tools_dir/bin, outside dpkg's database and
# outside the source tree (which `make clean` and a fresh clone wipe). Nothing
# runs and nothing needs stopping, with or without systemd; removing the
# directory undoes it. The VM tests find them there too: the VM mounts this /.
tools_dir=/opt/drfd-test-tools
install_test_tools() {
	local tmp rc=0
	local -a su=()
	[ -x $tools_dir/bin/promtool ] && [ -x $tools_dir/bin/prometheus-node-exporter ] &&
		[ -x $tools_dir/bin/prometheus ] && return 0
	[ "$(id -u)" -eq 0 ] || su=(sudo)
	tmp=$(mktemp -d)
	# As root, apt downloads as its user _apt, which must be able to write there.
	[ "$(id -u)" -ne 0 ] || chown _apt "$tmp" 2>/dev/null || true
	if ! (cd "$tmp" && apt-get download -qq prometheus prometheus-node-exporter 2>/dev/null); then
		# No package lists yet (a fresh machine): fetch them once.
		"${su[@]}" apt-get update -qq
		(cd "$tmp" && apt-get download -qq prometheus prometheus-node-exporter) || rc=1
	fi
	if [ $rc -eq 0 ]; then
		for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x" || rc=1; done
		"${su[@]}" install -d -m 0755 $tools_dir/bin &&
			"${su[@]}" install -m 0755 "$tmp/x/usr/bin/promtool" "$tmp/x/usr/bin/prometheus" \
				"$tmp/x/usr/bin/prometheus-node-exporter" $tools_dir/bin/ || rc=1
	fi
	rm -rf "$tmp"
	if [ $rc -ne 0 ]; then
		echo "install-deps: cannot unpack promtool, prometheus and prometheus-node-exporter into $tools_dir" >&2
		return 1
	fi
	echo "install-deps: promtool, prometheus and prometheus-node-exporter unpacked into $tools_dir/bin"
}

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	[ $only_build = yes ] || install_test_tools
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 1; }
	sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ $only_build = yes ] || install_test_tools
echo "install-deps: done"
