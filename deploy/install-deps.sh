#!/usr/bin/env bash
# Installs what drfd needs to build, test and run on Debian 12, from Debian's
# archive only. Idempotent: does nothing when everything is installed already.
set -euo pipefail

packages=(
	# build
	make gcc clang llvm pkg-config git
	libinih-dev libcgroup-dev libbpf-dev bpftool libnl-3-dev libnl-route-3-dev
	libsystemd-dev scdoc
	# the Debian package
	dpkg-dev debhelper fakeroot lintian
	# tests
	libcmocka-dev python3 shellcheck iproute2 bash-completion valgrind iperf3 util-linux
	# the real-kernel test VM (tests/vm): QEMU and Debian's kernel
	qemu-system-x86 linux-image-amd64 busybox-static cpio kmod
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
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
echo "install-deps: done"
