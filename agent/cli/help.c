// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fleet.h"

static const struct {
	const char *name, *synopsis, *text;
} cmds[] = {
	{ "plan",
	  "drfctl plan [-c FILE] [--strict] [--policy drf|asset|per-resource|fds|gfj|ceei] [--beta B] "
	  "[--lambda L] [--discrete] [--compare | --tradeoff [--svg FILE]] [--json]",
	  "Shows what each tenant gets under a policy, offline: reads the config and touches no\n"
	  "cgroup. `auto` capacities are read from this machine.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG ")\n"
	  "  --strict            a demand no capacity meets (a task bigger than the host, a\n"
	  "                      demand beyond it) is an error, exit 2; else a warning\n"
	  "  --policy P          override the config's policy\n"
	  "  --beta B            fds and gfj: beta in (0, 100] (default the config's, or 2)\n"
	  "  --lambda L          fds and gfj: lambda (default (1 - beta) / beta); refused\n"
	  "                      where the optimum need not be Pareto-efficient\n"
	  "  --discrete          whole tasks only (task tenants): DRF's Algorithm 1\n"
	  "  --json              machine-readable output\n"
	  "  --compare           the six policies side by side (--beta/--lambda apply)\n"
	  "  --tradeoff          fds and gfj for beta from 0.25 to 100: Jain's index and\n"
	  "                      each resource's utilization, beside drf; then lambda\n"
	  "                      below (1 - beta) / beta at beta 2, 5 and 20\n"
	  "                      (with --json: its rows as JSON)\n"
	  "  --svg FILE          with --tradeoff: draws it with gnuplot, as an SVG picture\n"
	  "\n"
	  "When a drfd answers on the config's status-socket, it also says which of the\n"
	  "config's start-only keys differ from those in force: each needs a restart (a\n"
	  "reload is refused), or is ignored until one (net-replace-qdisc).\n"
	  "\n"
	  "A config with [group NAME] sections is shared by hierarchical DRF: the table\n"
	  "shows each tenant's group, and each group's allocation and dominant share.\n"
	  "\n"
	  "exit status: 0 ok, 1 failure, 2 config error, 64 usage error\n" },
	{ "fleet",
	  "drfctl fleet plan -c FLEET.conf [--json] [--compare | --discrete | --first-fit]\n"
	  "  drfctl fleet apply -f FLEET.conf --endpoints URL[,URL...] [ETCD OPTIONS]\n"
	  "  drfctl fleet status --endpoints URL[,URL...] [ETCD OPTIONS] [--json]\n"
	  "  drfctl fleet submit TENANT --endpoints URL[,URL...] [ETCD OPTIONS] [--cpu N]\n"
	  "                      [--memory SIZE] ... [--task-key KEY] [--json] -- CMD [ARG...]",
	  "DRFH: dominant resource fairness over a fleet of servers that differ, offline, from\n"
	  "a fleet file: [server NAME] sections with a capacity (cpu, memory, io-read-bps, ...;\n"
	  "`count = N` makes NAME-1 .. NAME-N of that shape) and [tenant NAME] sections as in\n"
	  "drfd.conf. Each tenant's global dominant share (its dominant share of the pool,\n"
	  "summed over servers) is max-min fair by weight, within every server's capacity.\n"
	  "\n"
	  "  -c, --config FILE   the fleet file\n"
	  "  --json              machine-readable output (see drfctl(8) for the schema)\n"
	  "  --discrete          whole tasks, placed by Best-Fit (the tenant with the least\n"
	  "                      weighted share places its next task on the server whose\n"
	  "                      remaining shape is closest to the task's)\n"
	  "  --first-fit         whole tasks, each on the first server where it fits\n"
	  "  --compare           DRFH (divisible, Best-Fit, First-Fit) beside per-server DRF\n"
	  "                      and slots ([fleet] slot-RES; default one core and the pool's\n"
	  "                      share of the rest per core): Jain's index, the least weighted\n"
	  "                      share, tasks, utilization, and each tenant's share\n"
	  "\n"
	  "The fleet in etcd, where drfd nodes in fleet mode register and a planner elected\n"
	  "among them writes each node's assignment: `apply` makes the fleet's tenants those\n"
	  "of FLEET.conf (one txn; its [server] sections are not applied: the servers are\n"
	  "the nodes that register), `status` shows the nodes alive with their capacity and\n"
	  "assignment (its revision), the tenants with their global share and placement,\n"
	  "the planner, and the fleet tasks with their node and state. `submit` places a\n"
	  "task of TENANT (its task shape, or the quantities given) on the node alive\n"
	  "whose assignment gives TENANT room for it, by Best-Fit (the node whose capacity\n"
	  "left is nearest the task's shape); with no room anywhere now, on such a node\n"
	  "whose share could hold it, to wait in its queue. The node runs it as its\n"
	  "[fleet] task-user, in TENANT's cgroup there.\n"
	  "\n"
	  "  -f, --file FILE     apply: the fleet file whose tenants to put\n"
	  "  --endpoints URLS    etcd's client URLs, tried in turn (http:// or https://)\n"
	  "  --prefix P          the fleet's keys (default " DRF_FLEET_DEFAULT_PREFIX ")\n"
	  "  --cacert FILE       TLS: the CA that signed etcd's certificate\n"
	  "  --cert FILE         TLS: a client certificate\n"
	  "  --key FILE          TLS: its key\n"
	  "  --user NAME         etcd's authentication: the user\n"
	  "  --password-file F  and the file that holds its password (first line)\n"
	  "  --json              status, submit: machine-readable output (see drfctl(8))\n"
	  "  --cpu N, --memory SIZE, --io-read-bps N, --io-write-bps N, --net-rate N\n"
	  "                      submit: the task's vector (default: the tenant's task shape;\n"
	  "                      a demand tenant's task needs them)\n"
	  "  --task-key KEY      submit: the task's ID (a name): a retry with the same KEY\n"
	  "                      places nothing twice\n"
	  "\n"
	  "exit status: 0 ok, 1 failure (etcd unreachable or refusing), 2 config error (or a\n"
	  "             task refused: no such tenant, no node with a share for it), 64 usage\n"
	  "             error\n" },
	{ "reload",
	  "drfctl reload [-c FILE] [--socket PATH]",
	  "Asks the running drfd to reload its config (as SIGHUP does) and waits for the\n"
	  "verdict: the new config in force, or refused with the reason (a config error, or a\n"
	  "change that needs a restart: cgroup-root, io-device, net-device, network\n"
	  "capacities, state-dir, status-socket, status-group). Root only. systemctl reload\n"
	  "drfd runs it.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG "): where the\n"
	  "                      socket is (drfd reloads the file it started with)\n"
	  "  --socket PATH       the status socket (default: the config's status-socket, or\n"
	  "                      " DRFCTL_DEFAULT_SOCKET ")\n"
	  "\n"
	  "exit status: 0 the new config is in force, 1 failure (no drfd answers, not root),\n"
	  "             2 refused, 64 usage error\n" },
	{ "status",
	  "drfctl status [-c FILE] [--json] [--socket PATH] [TENANT]",
	  "Asks the running drfd for its state: the plan in force, each knob's desired and\n"
	  "current value, usage (processes: the tenant's whole subtree), orphans (departed\n"
	  "tenants whose cgroups still hold processes), errors and retries. With TENANT, the\n"
	  "daemon's own lines and that tenant's only. Only a whole status is printed: one cut\n"
	  "short is an error, and one whose plan changed while it was sent is asked for again.\n"
	  "When no drfd answers it says so and shows cgroupfs against the plan computed from\n"
	  "the config instead, marked as such.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG "): where the\n"
	  "                      socket is, and the plan for the fallback\n"
	  "  --json              machine-readable output (see drfctl(8) for the schema)\n"
	  "  --socket PATH       the status socket (default: the config's status-socket, or\n"
	  "                      " DRFCTL_DEFAULT_SOCKET ")\n"
	  "\n"
	  "exit status: 0 every knob holds what drfd wants, 1 failure (or no such tenant),\n"
	  "             2 config error, 3 some knob differs or a write is failing, 64 usage\n"
	  "             error\n" },
	{ "exec",
	  "drfctl exec [-c FILE] TENANT -- CMD [ARG...]",
	  "Runs CMD inside TENANT's cgroup (it must exist: drfd creates it). A user other\n"
	  "than root is moved there by the running drfd, if TENANT's access or admins name\n"
	  "it (drfd.conf(5), ACCESS).\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG ")\n"
	  "\n"
	  "exit status: CMD's, or 1 failure, 2 config error, unknown tenant or refused,\n"
	  "             64 usage error, 127 CMD cannot run\n" },
	{ "net-reset",
	  "drfctl net-reset [-c FILE] [--device IFNAME]",
	  "Removes what drfd installed for the network, and only that: its root qdisc on\n"
	  "net-device (htb d7f:, with its classes) and its programs and maps pinned in bpffs.\n"
	  "A qdisc drfd did not install is left alone. Refused while drfd runs: it would\n"
	  "install them again.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG ")\n"
	  "  --device IFNAME     the device, if not the config's net-device\n"
	  "\n"
	  "exit status: 0 done, 1 failure (or drfd runs), 2 config error, 64 usage error\n" },
	{ "top",
	  "drfctl top [-c FILE] [--socket PATH] [-d SECONDS] [-b] [-n N] [--sort KEY]",
	  "A live view of the running drfd, like systemd-cgtop: one row per tenant with its\n"
	  "weight, dominant share of allocation and of use, use/allocation of each resource\n"
	  "with a capacity (a '!' marks use above its limit: enforcement not holding), and\n"
	  "run-queue wait. Asks drfd's status socket for its metrics each refresh.\n"
	  "Keys: d dominant share of use (the default, largest first), a of allocation,\n"
	  "c cpu, m memory, i io, n network, t tenant name, r reverse, h or ? keys, q quit.\n"
	  "\n"
	  "  -c, --config FILE     main config file (default " DRFCTL_DEFAULT_CONFIG "): where\n"
	  "                        the socket is, and the tick interval\n"
	  "  --socket PATH         the status socket (default: the config's status-socket, or\n"
	  "                        " DRFCTL_DEFAULT_SOCKET ")\n"
	  "  -d, --delay SECONDS   time between refreshes, 0.1 to 3600 (or 500ms): default the\n"
	  "                        config's interval (at least 0.1), or 1 without a config\n"
	  "  -b, --batch           plain text frames, a blank line between them, no curses\n"
	  "                        (also when standard output is not a terminal)\n"
	  "  -n, --iterations N    stop after N refreshes\n"
	  "  --sort KEY            dominant, allocation, cpu, memory, io, network or name\n"
	  "\n"
	  "exit status: 0 ok (q, -n N, or a signal), 1 failure or no drfd answers,\n"
	  "             64 usage error\n" },
	{ "recommend",
	  "drfctl recommend [TENANT] [-c FILE] [--window DURATION] [--history FILE] [--json]",
	  "Right-sizing advice from the usage history drfd keeps under state-dir (one line per\n"
	  "tenant a minute): for each tenant, or TENANT, and each resource with a capacity, the\n"
	  "declared demand against the p50, p95 and peak of the measured use over the window\n"
	  "(nearest-rank percentiles of the minutes' means), the over-provisioning (the share of\n"
	  "the declared demand above p95), and a suggested demand: p95 x 1.2 rounded up (cpu to\n"
	  "0.1, others to 2 digits), for memory at least the peak working set, at most the\n"
	  "capacity. Then a [tenant NAME] section with the suggestions, to put in tenants.d in\n"
	  "place of the tenant's own; a task tenant keeps its task and gets a task count.\n"
	  "Tenants with fewer than 10 minutes get figures but no advice. Offline: reads the\n"
	  "config and the history only.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG "): the\n"
	  "                      demands, and where the history is (state-dir, cgroup-root)\n"
	  "  --window DURATION   the history up to its newest record: N followed by s, m, h or\n"
	  "                      d, or all (default 7d)\n"
	  "  --history FILE      the history (default STATE-DIR/ROOT.history, ROOT as the\n"
	  "                      state file names it); FILE.1, its older half, is read first\n"
	  "  --json              machine-readable output (see drfctl(8))\n"
	  "\n"
	  "exit status: 0 ok, 1 no history or one that cannot be read, 2 config error or\n"
	  "             unknown tenant, 64 usage error\n" },
	{ "submit",
	  "drfctl submit [-c FILE] [--socket PATH] [--key KEY] TENANT [--cpu N] [--memory SIZE]\n"
	  "              [--io-read-bps R] [--io-write-bps W] [--net-rate B] -- CMD [ARG...]",
	  "Queues CMD as a task of TENANT with the resource vector given (a resource not given:\n"
	  "the tenant's task-* value, else none). drfd starts queued tasks in DRF order: the\n"
	  "tenant with the lowest weighted dominant share whose next task fits in what running\n"
	  "tasks leave free. Each runs with exactly the submitter's uid, gid and groups (as its\n"
	  "connection had them), in its own cgroup TENANT-CGROUP/task-ID with cpu.max,\n"
	  "memory.max and io.max at its vector (net is counted, not enforced per task); its\n"
	  "output goes to STATE-DIR/...tasks/ID/stdout and stderr. Prints the task's id.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG "): where the\n"
	  "                      socket is\n"
	  "  --socket PATH       the status socket (default: the config's status-socket)\n"
	  "  --cpu N             cores (0.5, 2)\n"
	  "  --memory SIZE       bytes (512M, 2G)\n"
	  "  --io-read-bps R     bytes/s on the config's io-device\n"
	  "  --io-write-bps W    bytes/s on the config's io-device\n"
	  "  --net-rate B        bits/s (100mbit)\n"
	  "  --key KEY           idempotent: if this user submitted KEY to a task drfd still\n"
	  "                      knows (queued, running or kept finished), queue nothing and\n"
	  "                      print that task's id: retry a submit whose reply was lost\n"
	  "                      with the same KEY, and the task runs once\n"
	  "\n"
	  "exit status: 0 queued (or known by its key), 1 failure or no drfd answers,\n"
	  "             2 refused (unknown tenant, a task larger than the node, a tenant\n"
	  "             cgroup holding processes, 256 tasks of yours not yet finished or\n"
	  "             4096 of all users), 64 usage error\n" },
	{ "tasks",
	  "drfctl tasks [-c FILE] [--socket PATH] [--json]",
	  "Lists the running drfd's queued, running and finished tasks (the last 200 finished\n"
	  "of each user): tenant, user, vector, and how each ended: exited N, signal N,\n"
	  "oom-killed (its memory.events counted an OOM kill), cancelled, failed (with why),\n"
	  "lost (its supervisor was killed). Of other users' tasks, a user other than root\n"
	  "sees no command, key, groups or error.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG ")\n"
	  "  --socket PATH       the status socket (default: the config's status-socket)\n"
	  "  --json              machine-readable output (see drfctl(8))\n"
	  "\n"
	  "exit status: 0 ok, 1 failure or no drfd answers, 64 usage error\n" },
	{ "cancel",
	  "drfctl cancel [-c FILE] [--socket PATH] ID",
	  "Cancels task ID: a queued one is not started, a running one is killed (cgroup.kill).\n"
	  "Root, or the user who submitted it.\n"
	  "\n"
	  "  -c, --config FILE   main config file (default " DRFCTL_DEFAULT_CONFIG ")\n"
	  "  --socket PATH       the status socket (default: the config's status-socket)\n"
	  "\n"
	  "exit status: 0 cancelled, 1 failure or no drfd answers, 2 refused (no such task,\n"
	  "             ended, not yours), 64 usage error\n" },
	{ "help",
	  "drfctl help [COMMAND]",
	  "Prints the help of COMMAND, or of every command.\n" },
};

/*
 * "PREFIXSYNOPSIS" within 100 columns: broken at a space outside brackets
 * before the word that would cross them, the rest indented under the
 * command's first argument.
 */
static void print_synopsis(FILE *out, const char *prefix, const char *syn)
{
	size_t col = strlen(prefix), indent, len = strlen(syn), start = 0, brk = 0, depth = 0;
	/* under the first argument: "drfctl plan [-c FILE]" after "plan ", and
	 * "drfctl fleet plan -c FLEET.conf" after "fleet plan " */
	const char *arg = strchr(syn + (strncmp(syn, "drfctl fleet ", 13) == 0 ? 13 : 7), ' ');

	indent = col + (arg ? (size_t)(arg - syn) + 1 : 0);
	fputs(prefix, out);
	if (strchr(syn, '\n')) { /* several synopses (fleet's), each already within the width */
		fprintf(out, "%s\n", syn);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (syn[i] == ' ' && depth == 0)
			brk = i;
		depth += syn[i] == '[';
		depth -= syn[i] == ']' && depth > 0;
		if (col + (i - start) + 1 > 100 && brk > start) {
			fprintf(out, "%.*s\n%*s", (int)(brk - start), syn + start, (int)indent, "");
			col = indent;
			start = brk + 1;
		}
	}
	fprintf(out, "%s\n", syn + start);
}

int drfctl_help(FILE *out, const char *cmd)
{
	size_t n = sizeof(cmds) / sizeof(cmds[0]);

	for (size_t i = 0; cmd && i < n; i++) {
		if (strcmp(cmd, cmds[i].name) != 0)
			continue;
		print_synopsis(out, "usage: ", cmds[i].synopsis);
		fprintf(out, "\n%s", cmds[i].text);
		return 0;
	}
	if (cmd) {
		fprintf(stderr, "drfctl: no command '%s' (plan, fleet, reload, status, exec, net-reset, "
				"top, recommend, submit, tasks, cancel, help)\n", cmd);
		return -1;
	}
	fputs("usage:\n", out);
	for (size_t i = 0; i < n; i++)
		print_synopsis(out, "  ", cmds[i].synopsis);
	fputs("  drfctl --version\n\n"
	      "  plan     what DRF gives each tenant, offline\n"
	      "  fleet    fair shares over servers that differ (DRFH); the fleet in etcd\n"
	      "  reload   the running drfd reloads its config; its verdict is the exit status\n"
	      "  status   what the running drfd enforces, knob by knob\n"
	      "  exec     run a command inside a tenant\n"
	      "  net-reset  remove drfd's qdisc and network programs (drfd stopped)\n"
	      "  top      live view of each tenant's use against its allocation\n"
	      "  recommend  declared demands against measured use, and better ones\n"
	      "  submit   queue a task for a tenant (DRF task queue)\n"
	      "  tasks    the queued, running and finished tasks\n"
	      "  cancel   cancel a task\n"
	      "  help     one command's help: drfctl help COMMAND, or drfctl COMMAND --help\n"
	      "\nsee drfctl(8), drfd(8), drfd.conf(5)\n",
	      out);
	return 0;
}

void drfctl_config_failed(const char *path, const char *err)
{
	/* one error a line (a file's independent errors are all said) */
	for (const char *l = err; *l;) {
		size_t n = strcspn(l, "\n");

		fprintf(stderr, "drfctl: %.*s\n", (int)n, l);
		l += n + (l[n] == '\n');
	}
	if (strcmp(path, DRFCTL_DEFAULT_CONFIG) == 0 && access(path, F_OK) < 0 && errno == ENOENT)
		fputs("drfctl: " DRFCTL_DEFAULT_CONFIG " is the default config (the package's); "
		      "name another with -c FILE, e.g. -c deploy/examples/drfd.conf in a checkout\n",
		      stderr);
}

/* Edits from A to B (insert, delete, replace, swap two neighbours), up to a cap. */
static size_t edits(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d[33][33];

	if (la > 32 || lb > 32)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *drfctl_nearest(const char *word, const char *const *words, size_t n)
{
	size_t best = strlen(word) <= 4 ? 1 : 2, e;
	const char *found = NULL;

	for (size_t i = 0; i < n; i++) {
		e = edits(word, words[i]);
		if (e <= best && (!found || e < best)) {
			found = words[i];
			best = e;
		}
	}
	return found;
}

int drfctl_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		  const char *cmd)
{
	char spec[64], topic[32], name[40];
	const char *names[64], *bad, *near = NULL;
	size_t n = 0, k;
	int r;

	/* ':' first (after a '+'): a missing value is ':', told apart from an unknown option */
	snprintf(spec, sizeof(spec), "%s:%s", shortopts[0] == '+' ? "+" : "",
		 shortopts + (shortopts[0] == '+'));
	opterr = 0;
	r = getopt_long(argc, argv, spec, longopts, NULL);
	if (r != '?' && r != ':')
		return r;
	snprintf(topic, sizeof(topic), "%s", cmd);
	topic[strcspn(topic, " ")] = '\0';
	bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	if (r == ':') {
		fprintf(stderr, "drfctl %s: option '%s' needs a value (drfctl help %s)\n", cmd, bad,
			topic);
		return '?';
	}
	if (strncmp(bad, "--", 2) == 0) {
		k = strcspn(bad + 2, "=");
		snprintf(name, sizeof(name), "%.*s", (int)(k < sizeof(name) - 1 ? k : sizeof(name) - 1),
			 bad + 2);
		for (const struct option *o = longopts; o && o->name && n < 64; o++)
			names[n++] = o->name;
		near = drfctl_nearest(name, names, n);
	} else if (optopt) {
		snprintf(name, sizeof(name), "-%c", optopt);
		bad = name;
	}
	if (near && strcmp(near, name) == 0)
		fprintf(stderr, "drfctl %s: option '--%s' takes no value (drfctl help %s)\n", cmd, near,
			topic);
	else if (near)
		fprintf(stderr, "drfctl %s: unknown option '%s'; did you mean '--%s'? "
				"(drfctl help %s)\n", cmd, bad, near, topic);
	else
		fprintf(stderr, "drfctl %s: unknown option '%s' (drfctl help %s lists them)\n", cmd,
			bad, topic);
	return '?';
}

const char *drfctl_nearest_command(const char *word)
{
	const char *names[sizeof(cmds) / sizeof(cmds[0])];

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		names[i] = cmds[i].name;
	return drfctl_nearest(word, names, sizeof(cmds) / sizeof(cmds[0]));
}
