/* SPDX-License-Identifier: MIT */
/* drfctl's commands and their help (drfctl(8)). */
#ifndef DRF_CLI_H
#define DRF_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "startkeys.h"

#ifndef DRF_SYSCONFDIR
#define DRF_SYSCONFDIR "/etc"
#endif
#define DRFCTL_DEFAULT_CONFIG DRF_SYSCONFDIR "/drfd/drfd.conf"
#define DRFCTL_DEFAULT_SOCKET "/run/drfd/drfd.sock"

/* drfctl's exit codes (drfctl(8)); the other commands' are 0, 1 and 64. */
enum {
	DRFCTL_EXIT_CONFIG = 2,
	DRFCTL_EXIT_DRIFT = 3,  /* status: a knob differs from what drfd wants, or a write fails */
	DRFCTL_EXIT_USAGE = 64,
	DRFCTL_EXIT_TEMPFAIL = 75, /* fleet submit: every node that could take it is busy */
	DRFCTL_EXIT_NOEXEC = 127,
};

/* The help of one command ("plan", "status", "exec", "top", ...), or of all with NULL. */
int drfctl_help(FILE *out, const char *cmd);
/*
 * A config that did not load: its error (ERR names the file, line and cause)
 * on stderr, and, when PATH is the default one and does not exist, how to name
 * another.
 */
void drfctl_config_failed(const char *path, const char *err);
/*
 * getopt_long for command CMD ("plan", "fleet status"): a bad option (unknown,
 * or missing its value) is said in one line, with the nearest option's name
 * when one is a typo away and where the options are listed; it then returns
 * '?', which the caller answers with DRFCTL_EXIT_USAGE.
 */
struct option;
int drfctl_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		  const char *cmd);
/* Of N words, the one WORD is a typo of (at most two edits, or one for a short word), or NULL. */
const char *drfctl_nearest(const char *word, const char *const *words, size_t n);
/* The command WORD is a typo of (help.c's table of commands), or NULL. */
const char *drfctl_nearest_command(const char *word);

int drfctl_status(int argc, char **argv);
int drfctl_exec(int argc, char **argv);
int drfctl_net_reset(int argc, char **argv);
/* drfctl submit, tasks, cancel (tasks_cmd.c): the task queue of the running drfd. */
int drfctl_submit(int argc, char **argv);
int drfctl_tasks(int argc, char **argv);
int drfctl_cancel(int argc, char **argv);
/* drfctl reload (reload_cmd.c): the running drfd reloads; its verdict is the exit code. */
int drfctl_reload(int argc, char **argv);

/*
 * drfd's answers as every command shows them (answer.c). Asks drfd a task
 * request (submit, cancel, exec); prints the answer's body to out (or the
 * reason to stderr); returns the exit code: 0, 2 refused, 1.
 */
int drfctl_task_ask(const char *cmd, const char *sock, const char *req, FILE *out, char *id,
		    size_t idlen);

/* The status socket: sock (--socket) if given, else config's status-socket, else the default. */
void drfctl_socket_of(const char *config, const char *sock, char *ret, size_t len);

/*
 * What `drfctl plan` says of a config against the running drfd (reload_cmd.c):
 * the start-only keys that differ from those in force, by the daemon's status.
 */
struct json_object;
struct drfctl_running {
	int pid;
	struct drf_start_change ch[DRF_START_KEYS_MAX];
	size_t n;
	struct json_object *doc; /* the status the changes point into */
};
/*
 * Asks the drfd at cfg's status-socket; 0, or -errno: -ENOENT or -ECONNREFUSED
 * when none runs, -EACCES when the user may not ask, -EPROTONOSUPPORT when its
 * status has no start-only keys (an older drfd).
 */
int drfctl_plan_running(const struct drf_config *cfg, struct drfctl_running *ret);
void drfctl_running_free(struct drfctl_running *r);
/* One line per change, after the plan's table. 0 or -EIO. */
int drfctl_plan_print_running(FILE *out, const struct drfctl_running *run);
/* "running": {"pid": int, "start_only_changes": [...]} in o. 0 or -ENOMEM. */
int drfctl_plan_json_running(struct json_object *o, const struct drfctl_running *run);

/* drfctl fleet (fleet_cmd.c): DRFH over a fleet of servers. */
int drfctl_fleet(int argc, char **argv);
/* drfctl fleet apply, status (fleet_etcd_cmd.c): the fleet in etcd. */
int drfctl_fleet_apply(int argc, char **argv);
int drfctl_fleet_status(int argc, char **argv);
/* drfctl fleet submit (fleet_etcd_cmd.c): a task placed by Best-Fit on a node of the fleet. */
int drfctl_fleet_submit(int argc, char **argv);

/* drfctl top (top.c): the live view of drfd's metrics. */
int drfctl_top(int argc, char **argv);
/* drfctl recommend (recommend.c): right-sizing advice from drfd's usage history. */
int drfctl_recommend(int argc, char **argv);

/*
 * The cgroup-root as drfd sees it: asked of the daemon at sock when one runs;
 * else the config's, where `auto` means the tenants unit's cgroup if systemd
 * has one, or the default.
 */
void drfctl_cli_root(const struct drf_config *c, const char *sock, char *ret, size_t len);

/*
 * (answer.c) Prints text from drfd (status, tasks, a refusal) with its control characters
 * but newlines escaped: a task's command line is another user's input.
 * 0, or -errno (out of memory, or out's error).
 */
int drfctl_print_text(FILE *out, const char *text);

#endif
