// SPDX-License-Identifier: MIT
/*
 * `drfctl plan --tradeoff --svg FILE`: the sweep of planview.c drawn by gnuplot
 * (Debian's gnuplot-nox, with its default settings: -d). drfctl writes the
 * script, data inline, to gnuplot's stdin; gnuplot writes the SVG to its stdout,
 * a temporary file beside FILE that replaces FILE only once gnuplot has exited 0
 * within a minute and the file ends as an SVG does. FILE must be a regular file
 * or absent. (drfctl killed meanwhile leaves FILE.tmp.PID.)
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planview.h"

extern char **environ;

/* s as a gnuplot double-quoted string's contents. */
static void put_quoted(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f) /* (not every path is UTF-8: the SVG must be) */
			fputc('?', f);
		else
			fputc(c, f);
	}
}

/* Whether row r is of policy pol's sweep on the line (off false) or, off it, at beta. */
static bool row_of(const struct drf_tradeoff_row *r, int pol, bool off, double beta)
{
	return r->policy == pol && r->off_sweep == off && !r->gave_up && (!off || r->beta == beta);
}

/* A data block of those rows, in columns beta, lambda, jain, each resource's
 * utilization, and their mean. */
static void put_block(FILE *f, const char *name, const struct drf_tradeoff *t, int pol, bool off,
		      double beta)
{
	fprintf(f, "$%s << EOD\n", name);
	for (size_t i = 0; i < t->n; i++) {
		const struct drf_tradeoff_row *r = &t->rows[i];

		if (!row_of(r, pol, off, beta))
			continue;
		fprintf(f, "%.17g %.17g %.17g", r->beta, r->lambda, r->met.jain);
		for (int k = 0; k < t->m; k++)
			fprintf(f, " %.17g", r->met.utilization[t->ids[k]]);
		fprintf(f, " %.17g\n", drf_tradeoff_mean_used(t, r));
	}
	fputs("EOD\n", f);
}

static bool has_rows(const struct drf_tradeoff *t, int pol, bool off, double beta)
{
	for (size_t i = 0; i < t->n; i++)
		if (row_of(&t->rows[i], pol, off, beta))
			return true;
	return false;
}

/*
 * A resource's dash, one of its own for each of the six (gnuplot's numbered
 * dash types repeat after five, and a DRF line has no marks to tell it by);
 * Jain's index is solid.
 */
static const char *const res_dash[] = {
	"(8,4)", "(2,3)", "(8,4,2,4)", "(12,3,2,3,2,3)", "(16,6)", "(3,9)",
};
#define NDASH (sizeof(res_dash) / sizeof(res_dash[0]))

static void put_script(FILE *f, const struct drf_config *cfg, const struct drf_tradeoff *t)
{
	/*
	 * Colour is the policy in both panels (FDS, GFJ, DRF); on the left, the
	 * dash and the point say the figure (Jain's index: solid, filled
	 * circles; a resource's utilization: a dash and an open shape of its
	 * own).
	 */
	static const struct {
		int pol;
		const char *name, *block;
		int colour;
	} fam[] = { { DRF_POLICY_FDS, "FDS", "fds", 1 }, { DRF_POLICY_GFJ, "GFJ", "gfj", 2 } };
	const int drf_colour = 7;
	double off_betas[8];
	size_t nob = 0;
	const struct drf_tradeoff_row *drf = NULL;
	int mean = 4 + t->m; /* the column of the mean utilization */
	double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
	const char *sep;

	for (size_t i = 0; i < t->n; i++) {
		const struct drf_tradeoff_row *r = &t->rows[i];
		size_t k = 0;

		if (r->policy == DRF_POLICY_DRF && !r->gave_up)
			drf = r;
		/* The betas of the lambda sweep, in the sweep's order. */
		while (r->off_sweep && k < nob && off_betas[k] != r->beta)
			k++;
		if (r->off_sweep && k == nob && nob < sizeof(off_betas) / sizeof(off_betas[0]))
			off_betas[nob++] = r->beta;
	}
	fputs("set terminal svg size 1200,700 dynamic noenhanced font 'sans,11'\n"
	      "set output\n", f);
	for (size_t q = 0; q < 2; q++) {
		char name[32];

		put_block(f, fam[q].block, t, fam[q].pol, false, 0);
		for (size_t b = 0; b < nob; b++) {
			snprintf(name, sizeof(name), "%s_off%g", fam[q].block, off_betas[b]);
			put_block(f, name, t, fam[q].pol, true, off_betas[b]);
		}
	}
	if (drf)
		fprintf(f, "$drf << EOD\n%.17g %.17g\nEOD\n", drf->met.jain,
			drf_tradeoff_mean_used(t, drf));
	fputs("set multiplot layout 1,2 title \"fairness against efficiency: ", f);
	put_quoted(f, cfg->path);
	fputs("\"\n", f);

	/* Left: against beta, on the alpha-fair line. */
	fputs("set title \"against beta, lambda = (1 - beta) / beta\"\n"
	      "set logscale x\nset xrange [0.2:120]\nset yrange [0:1.05]\n"
	      "set xlabel \"beta\"\nset ylabel \"Jain's index; utilization\"\n"
	      /* the legend below the x axis's label, not on it */
	      "set key below height 1.5\nset grid\n", f);
	sep = "plot ";
	for (size_t q = 0; q < 2; q++) {
		if (!has_rows(t, fam[q].pol, false, 0))
			continue;
		fprintf(f, "%s$%s using 1:3 with linespoints lc %d dt 1 pt 7 title \"%s: Jain's index\"",
			sep, fam[q].block, fam[q].colour, fam[q].name);
		sep = ", \\\n  ";
		for (int k = 0; k < t->m; k++) {
			fprintf(f, "%s$%s using 1:%d with linespoints lc %d dt %s pt %d "
				   "title \"%s: %s used\"",
				sep, fam[q].block, 4 + k, fam[q].colour, res_dash[k % NDASH], 4 + 2 * k,
				fam[q].name, drf_res_name(t->ids[k]));
		}
	}
	if (drf) {
		fprintf(f, "%s%.17g with lines lc %d dt 1 title \"DRF: Jain's index\"", sep,
			drf->met.jain, drf_colour);
		sep = ", \\\n  ";
		for (int k = 0; k < t->m; k++)
			fprintf(f, "%s%.17g with lines lc %d dt %s title \"DRF: %s used\"", sep,
				drf->met.utilization[t->ids[k]], drf_colour, res_dash[k % NDASH],
				drf_res_name(t->ids[k]));
	}
	fputs("\n", f);

	/* Right: the frontier. */
	/* The points' box and 4% more each way: DRF's marker at Jain's 1 is seen whole. */
	for (size_t i = 0; i < t->n; i++) {
		const struct drf_tradeoff_row *r = &t->rows[i];
		double y = drf_tradeoff_mean_used(t, r);

		if (r->gave_up)
			continue;
		x0 = fmin(x0, r->met.jain);
		x1 = fmax(x1, r->met.jain);
		y0 = fmin(y0, y);
		y1 = fmax(y1, y);
	}
	if (x0 <= x1 && y0 <= y1) {
		double dx = fmax(x1 - x0, 0.01) * 0.04, dy = fmax(y1 - y0, 0.01) * 0.04;

		fprintf(f, "set xrange [%.17g:%.17g]\nset yrange [%.17g:%.17g]\n", x0 - dx, x1 + dx,
			y0 - dy, y1 + dy);
	} else {
		fputs("set xrange [*:*]\nset yrange [*:*]\n", f);
	}
	fputs("unset logscale x\n"
	      "set title \"the frontier: fairness against efficiency\"\n"
	      "set xlabel \"Jain's index (fairness)\"\n"
	      "set ylabel \"mean utilization of the resources (efficiency)\"\n"
	      "set key below height 1.5 maxrows 3\n", f);
	sep = "plot ";
	/* DRF first, an open triangle: the sweeps' points that end on it stay seen. */
	if (drf) {
		fprintf(f, "%s$drf using 1:2 with points lc %d pt 8 ps 2.5 title \"DRF\"", sep,
			drf_colour);
		sep = ", \\\n  ";
	}
	for (size_t q = 0; q < 2; q++) {
		if (has_rows(t, fam[q].pol, false, 0)) {
			fprintf(f, "%s$%s using 3:%d with linespoints lc %d dt 1 pt 7 "
				   "title \"%s, beta 0.25 to 100\"",
				sep, fam[q].block, mean, fam[q].colour, fam[q].name);
			sep = ", \\\n  ";
		}
		for (size_t b = 0; b < nob; b++) {
			if (!has_rows(t, fam[q].pol, true, off_betas[b]))
				continue;
			fprintf(f, "%s$%s_off%g using 3:%d with linespoints lc %d dt 2 pt %zu "
				   "title \"%s, beta %g, lambda below the line\"",
				sep, fam[q].block, off_betas[b], mean, fam[q].colour, 4 + 2 * b,
				fam[q].name, off_betas[b]);
			sep = ", \\\n  ";
		}
	}
	fputs("\nunset multiplot\n", f);
}

/* fd moved to 3 or above (close-on-exec), so that a closed stdin, stdout or stderr
 * cannot make it one of the child's standard streams by accident. */
static int above_stdio(int fd)
{
	int moved;

	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return moved;
}

/* Whether the file at fd holds a whole SVG document: not empty, ending in </svg>. */
static bool whole_svg(int fd)
{
	char tail[64];
	struct stat st;
	ssize_t n;
	off_t at;

	if (fstat(fd, &st) < 0 || st.st_size <= 0)
		return false;
	at = st.st_size > (off_t)sizeof(tail) - 1 ? st.st_size - (off_t)sizeof(tail) + 1 : 0;
	n = pread(fd, tail, sizeof(tail) - 1, at);
	if (n <= 0)
		return false;
	tail[n] = '\0';
	return strstr(tail, "</svg>") != NULL;
}

int drf_plan_plot_tradeoff(const char *path, const struct drf_config *cfg,
			   const struct drf_tradeoff *sweep, char *err, size_t errlen)
{
	/* -d: gnuplot's defaults, not the user's ~/.gnuplot, which could change the picture */
	char *argv[] = { "gnuplot", "-d", NULL };
	posix_spawn_file_actions_t fa;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	struct stat st;
	char *tmp = NULL;
	int fds[2] = { -1, -1 }, out = -1, status = 0, r = 0;
	bool wrote = false;
	pid_t pid = -1;
	FILE *f;

	/* A device, a directory, a symlink: not replaced by a rename (--svg /dev/null). */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a regular file: not replaced", path);
		return -EEXIST;
	}
	if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0)
		return -ENOMEM;
	out = above_stdio(open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	if (out < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot write beside %s: %s", path, strerror(-r));
		free(tmp);
		return r;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-r));
		goto out;
	}
	fds[0] = above_stdio(fds[0]);
	fds[1] = above_stdio(fds[1]);
	if (fds[0] < 0 || fds[1] < 0) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-r));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	r = -posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	fds[0] = -1;
	if (r < 0) {
		pid = -1;
		snprintf(err, errlen, r == -ENOENT ?
			 "gnuplot is not installed; the picture needs it (Debian: gnuplot-nox)" :
			 "cannot run gnuplot: %s", strerror(-r));
		goto out;
	}
	/* gnuplot gone early must not kill drfctl with SIGPIPE: its exit says why. */
	sigaction(SIGPIPE, &ign, &old);
	f = fdopen(fds[1], "w");
	if (f) {
		fds[1] = -1;
		put_script(f, cfg, sweep);
		wrote = !ferror(f);
		wrote &= fclose(f) == 0;
	}
	sigaction(SIGPIPE, &old, NULL);
	if (fds[1] >= 0) {
		close(fds[1]);
		fds[1] = -1;
	}
	/* At most a minute: a gnuplot that hangs is killed, and nothing is replaced. */
	for (int waited = 0;; waited++) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "waiting for gnuplot: %s", strerror(-r));
			goto out;
		}
		if (waited == 60 * 20) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			pid = -1;
			r = -ETIMEDOUT;
			snprintf(err, errlen, "gnuplot did not finish in 60 s; %s left as it was", path);
			goto out;
		}
		usleep(50000);
	}
	pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		r = -EIO;
		snprintf(err, errlen, "gnuplot failed (%s %d); %s left as it was", WIFEXITED(status) ?
			 "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			 path);
		goto out;
	}
	if (!wrote || !whole_svg(out)) {
		r = -EIO;
		snprintf(err, errlen, "%s; %s left as it was", !wrote ?
			 "the script did not reach gnuplot whole" :
			 "gnuplot exited 0 without a whole SVG picture", path);
		goto out;
	}
	if (fsync(out) < 0) {
		r = -errno;
		snprintf(err, errlen, "writing %s: %s", tmp, strerror(-r));
		goto out;
	}
	r = close(out) < 0 ? -errno : 0;
	out = -1;
	if (r < 0) {
		snprintf(err, errlen, "writing %s: %s", tmp, strerror(-r));
		goto out;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot replace %s: %s", path, strerror(-r));
	}
out:
	if (out >= 0)
		close(out);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}
