#!/bin/sh
# etcd-roles.sh: the least-privilege etcd roles and users of a drfd fleet
# (docs/fleet.md, "etcd roles"). Run it as etcd's root user, once per fleet and
# again whenever a node joins; it is idempotent: what exists is left, what is
# missing is made, and a permission it grants again is granted the same.
#
#   etcd-roles.sh [options] NODE...
#     --endpoints URLS     etcd's client URLs (default http://127.0.0.1:2379)
#     --prefix P           the fleet's key prefix, '/' first and last (default /drfd/)
#     --planner NODE       NODE's user also gets the planner role (repeat it; at
#                          least one node must have it). The others are plain
#                          nodes: set [fleet] planner = no in their drfd.conf.
#     --password-dir DIR   where each user's password is kept, one file per user,
#                          mode 0600 (default ./etcd-passwords); a user made now
#                          gets a random one; give a node its file as [fleet]
#                          password-file, and drfctl its as --password-file
#     --root-password-file FILE
#                          etcd's root password, to run as root once auth is on
#                          (etcdctl --user root); default DIR/root if it exists
#     --enable-auth        make the root user (password in DIR/root, made if
#                          missing) and turn etcd's authentication on
#     --cacert, --cert, --key FILE
#                          TLS to etcd, passed to etcdctl
#
# The roles (P the prefix; NODE each node named):
#   drfd-node-NODE  readwrite P/nodes/NODE and P/taskstate/NODE/;
#                   read P/nodes/, P/planner, P/assign/NODE, P/tasks/NODE/
#   drfd-planner    readwrite P/planner and P/assign/; read P/nodes/, P/tenants/
#   drfd-submit     readwrite P/tasks/ and P/taskids/; read P/ (to place tasks)
#   drfd-admin      readwrite P/tenants/; read P/ (drfctl fleet apply, status)
#   drfd-viewer     read P/ (drfctl fleet status)
# and a user of each name with that role (drfd-node-NODE also drfd-planner
# where --planner named NODE).
set -eu

endpoints=http://127.0.0.1:2379
prefix=/drfd/
pwdir=./etcd-passwords
rootpw=
enable_auth=no
planners=
nodes=
tls=

usage() {
	sed -n '7,23p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--endpoints) endpoints=${2:?--endpoints needs URLs}; shift 2 ;;
	--prefix) prefix=${2:?--prefix needs a prefix}; shift 2 ;;
	--planner) planners="$planners ${2:?--planner needs a node}"; shift 2 ;;
	--password-dir) pwdir=${2:?--password-dir needs a directory}; shift 2 ;;
	--root-password-file) rootpw=${2:?--root-password-file needs a file}; shift 2 ;;
	--enable-auth) enable_auth=yes; shift ;;
	--cacert | --cert | --key) tls="$tls $1=${2:?$1 needs a file}"; shift 2 ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-*) echo "etcd-roles.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
nodes=$*

fail() {
	echo "etcd-roles.sh: $*" >&2
	exit 1
}

# A name as drfd takes it: 1-63 of [A-Za-z0-9_.-], not starting with '.'.
valid_name() {
	case $1 in
	'' | .* | *[!A-Za-z0-9_.-]*) return 1 ;;
	esac
	[ ${#1} -le 63 ]
}

[ -n "$nodes" ] || fail "which nodes? name them (etcd-roles.sh --planner a a b c)"
case $prefix in
/*/ | /) ;;
*) fail "--prefix '$prefix': expected a prefix that begins and ends with '/'" ;;
esac
for n in $nodes; do
	valid_name "$n" || fail "node '$n': not 1-63 characters of [A-Za-z0-9_.-] not starting with '.'"
done
[ -n "$planners" ] || fail "no --planner: name at least one node that may plan the fleet"
for p in $planners; do
	case " $nodes " in
	*" $p "*) ;;
	*) fail "--planner $p: not one of the nodes named ($nodes)" ;;
	esac
done
command -v etcdctl >/dev/null || fail "etcdctl is not installed (Debian: etcd-client)"

mkdir -p "$pwdir"
chmod 0700 "$pwdir"
[ -n "$rootpw" ] || rootpw=$pwdir/root

# A user's password: its file, made with 24 random characters if missing.
password() { # USER
	if [ ! -s "$pwdir/$1" ]; then
		(umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$pwdir/$1")
	fi
	head -n 1 "$pwdir/$1"
}

# etcdctl as root: without a user before auth is on (--enable-auth), else as
# root, its password in etcdctl's environment (not on a command line, which
# every user of the host can read).
as_root=no
ctl() {
	# shellcheck disable=SC2086 # $tls: the TLS options, each one word
	if [ "$as_root" = yes ]; then
		ETCDCTL_API=3 ETCDCTL_USER="root:$(head -n 1 "$rootpw")" \
			etcdctl --endpoints "$endpoints" --dial-timeout 10s $tls "$@"
	else
		ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --dial-timeout 10s $tls "$@"
	fi
}
if [ -s "$rootpw" ]; then
	as_root=yes
fi
# Whether auth is on: without credentials, a user list is refused then.
if [ "$as_root" = no ] && [ "$enable_auth" = no ]; then
	ctl user list >/dev/null 2>&1 ||
		fail "etcd refused 'user list' without credentials: its authentication is on; give --root-password-file"
fi

role() { # NAME: made unless it exists (one call: a role that exists is refused so)
	if ! out=$(ctl role add "$1" 2>&1); then
		case $out in
		*"already exists"*) ;;
		*) fail "role add $1: $out" ;;
		esac
	fi
}
grant() { # ROLE TYPE KEY [--prefix]: granted again, the same, if it was
	ctl role grant-permission "$@" >/dev/null
}
user() { # NAME ROLE...: made with its password unless it exists, then given the roles
	u=$1
	shift
	if ! ctl user get "$u" >/dev/null 2>&1; then
		password "$u" | ctl user add "$u" --interactive=false >/dev/null
		echo "user $u: password in $pwdir/$u"
	fi
	for r in "$@"; do
		ctl user grant-role "$u" "$r" >/dev/null
	done
}

if [ "$enable_auth" = yes ] && [ "$as_root" = no ]; then
	password root >/dev/null
	ctl user get root >/dev/null 2>&1 ||
		password root | ctl user add root --interactive=false >/dev/null
	ctl user grant-role root root >/dev/null
	ctl auth enable >/dev/null
	as_root=yes
	echo "auth enabled: root's password in $rootpw"
fi

P=$prefix
role drfd-planner
grant drfd-planner readwrite "${P}planner"
grant drfd-planner readwrite "${P}assign/" --prefix
grant drfd-planner read "${P}nodes/" --prefix
grant drfd-planner read "${P}tenants/" --prefix

role drfd-submit
grant drfd-submit read "$P" --prefix
grant drfd-submit readwrite "${P}tasks/" --prefix
grant drfd-submit readwrite "${P}taskids/" --prefix
user drfd-submit drfd-submit

role drfd-admin
grant drfd-admin read "$P" --prefix
grant drfd-admin readwrite "${P}tenants/" --prefix
user drfd-admin drfd-admin

role drfd-viewer
grant drfd-viewer read "$P" --prefix
user drfd-viewer drfd-viewer

for n in $nodes; do
	r=drfd-node-$n
	role "$r"
	grant "$r" readwrite "${P}nodes/$n"
	grant "$r" readwrite "${P}taskstate/$n/" --prefix
	grant "$r" read "${P}nodes/" --prefix
	grant "$r" read "${P}planner"
	grant "$r" read "${P}assign/$n"
	grant "$r" read "${P}tasks/$n/" --prefix
	case " $planners " in
	*" $n "*) user "$r" "$r" drfd-planner ;;
	*) user "$r" "$r" ;;
	esac
done
echo "roles and users of the fleet under $P made; plain nodes: set [fleet] planner = no"
