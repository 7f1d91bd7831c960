// SPDX-License-Identifier: MIT
/*
 * The values of fleet mode's keys, and the assignment file of the state dir
 * (see fleet.h). Written with json.h (drfd's escaping, shortest numbers that
 * read back as the same double), read with json-c. Values written by drfd
 * (nodes, assignments) may carry keys a newer drfd adds: those are passed
 * over. A tenant's value is written by people and tools: a key it does not
 * know is an error, as in a fleet file.
 */
#include "fleet.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json_tokener.h>
#include <json-c/linkhash.h>

#include "alloc.h"
#include "fileio.h"
#include "json.h"
#include "statedir.h"

/* What a value may hold at most (etcd's default request limit is 1.5 MiB). */
#define VALUE_MAX (16u << 20)

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* doc as one line, without its newline, in a new string; doc is put. */
static int to_text(json_object *doc, char **ret)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f) {
		json_object_put(doc);
		return -ENOMEM;
	}
	r = drf_json_print(f, doc);
	json_object_put(doc);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(text);
		return r == -EIO ? -ENOMEM : r;
	}
	if (len && text[len - 1] == '\n')
		text[len - 1] = '\0';
	*ret = text;
	return 0;
}

/* The object of len bytes of text: a new reference, or -EBADMSG with why. */
static int parse_object(const char *text, size_t len, json_object **ret, char *err, size_t errlen)
{
	json_tokener *tok;
	json_object *o;
	size_t end;

	if (len > VALUE_MAX)
		return fail(err, errlen, -EBADMSG, "%zu bytes: too long", len);
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		json_object_put(o);
		json_tokener_free(tok);
		return fail(err, errlen, -EBADMSG, "not JSON (%s)",
			    e == json_tokener_continue ? "it ends early"
						       : json_tokener_error_desc(e));
	}
	json_tokener_free(tok);
	for (; end < len; end++)
		if (!strchr(" \t\r\n", text[end])) {
			json_object_put(o);
			return fail(err, errlen, -EBADMSG, "text after the JSON value");
		}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return fail(err, errlen, -EBADMSG, "not a JSON object");
	}
	*ret = o;
	return 0;
}

static bool is_number(json_object *v)
{
	return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
}

/* A number >= 0 and finite under key, into *ret. */
static int get_quantity(json_object *v, const char *what, double *ret, char *err, size_t errlen)
{
	double d;

	if (!is_number(v))
		return fail(err, errlen, -EBADMSG, "%s: not a number", what);
	d = json_object_get_double(v);
	if (!isfinite(d) || d < 0)
		return fail(err, errlen, -EINVAL, "%s: %g is out of range", what, d);
	*ret = d;
	return 0;
}

/* {RES: n}: into vec (and declared, if not NULL). Unknown resources are refused if strict. */
static int get_resources(json_object *o, const char *what, bool strict, double vec[DRF_NRES],
			 bool *declared, char *err, size_t errlen)
{
	if (!json_object_is_type(o, json_type_object))
		return fail(err, errlen, -EBADMSG, "%s: not an object", what);
	json_object_object_foreach(o, k, v)
	{
		int res = drf_res_from_name(k);
		char w[96];
		int r;

		if (res < 0) {
			if (strict)
				return fail(err, errlen, -EBADMSG, "%s: unknown resource '%s'",
					    what, k);
			continue;
		}
		snprintf(w, sizeof(w), "%s %s", what, k);
		r = get_quantity(v, w, &vec[res], err, errlen);
		if (r < 0)
			return r;
		if (declared)
			declared[res] = true;
	}
	return 0;
}

static json_object *res_json(json_object *parent, const char *key, const double v[DRF_NRES],
			     const bool *declared)
{
	json_object *o = drf_json_set_object(parent, key);

	for (int r = 0; r < DRF_NRES; r++)
		if (declared ? declared[r] : v[r] > 0)
			drf_json_set_num(o, drf_res_name((enum drf_res)r), v[r]);
	return o;
}

/* Nodes. */

static bool label_key_valid(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n > DRF_FLEET_LABEL_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || strchr("_.-/", k[i])))
			return false;
	return true;
}

static bool label_value_valid(const char *v)
{
	size_t n = strlen(v);

	if (n > DRF_FLEET_LABEL_VALUE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

int drf_fleet_node_value(const double capacity[DRF_NRES], const struct drf_fleet_label *labels,
			 size_t n_labels, char **ret)
{
	json_object *doc = drf_json_object(), *l;

	res_json(doc, "capacity", capacity, NULL);
	l = drf_json_set_object(doc, "labels");
	for (size_t i = 0; i < n_labels; i++) {
		if (!label_key_valid(labels[i].key) || !label_value_valid(labels[i].value)) {
			json_object_put(doc);
			return -EINVAL;
		}
		drf_json_set_str(l, labels[i].key, labels[i].value);
	}
	return to_text(doc, ret);
}

void drf_fleet_nodeinfo_clear(struct drf_fleet_nodeinfo *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_labels; i++) {
		free(n->labels[i].key);
		free(n->labels[i].value);
	}
	free(n->labels);
	memset(n, 0, sizeof(*n));
}

int drf_fleet_node_parse(const char *name, const char *text, size_t len,
			 struct drf_fleet_nodeinfo *ret, char *err, size_t errlen)
{
	struct drf_fleet_nodeinfo n = { 0 };
	json_object *doc, *v;
	bool any = false;
	int r;

	if (!drf_name_valid(name))
		return fail(err, errlen, -EINVAL, "node name '%s' is not 1-%d of [A-Za-z0-9_.-]",
			    name, DRF_TENANT_NAME_MAX);
	r = parse_object(text, len, &doc, err, errlen);
	if (r < 0)
		return r;
	snprintf(n.name, sizeof(n.name), "%s", name);
	if (!json_object_object_get_ex(doc, "capacity", &v)) {
		r = fail(err, errlen, -EBADMSG, "no capacity");
		goto out;
	}
	r = get_resources(v, "capacity", false, n.capacity, NULL, err, errlen);
	if (r < 0)
		goto out;
	for (int k = 0; k < DRF_NRES; k++) {
		/* As a config's [capacity] (drf_parse_quantity): the pool stays finite. */
		if (n.capacity[k] > DRF_QUANTITY_MAX) {
			r = fail(err, errlen, -EINVAL, "capacity %s: %g is over %g",
				 drf_res_name((enum drf_res)k), n.capacity[k], DRF_QUANTITY_MAX);
			goto out;
		}
		any = any || n.capacity[k] > 0;
	}
	if (!any) {
		r = fail(err, errlen, -EINVAL, "capacity: none of any resource");
		goto out;
	}
	if (json_object_object_get_ex(doc, "labels", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_object)) {
			r = fail(err, errlen, -EBADMSG, "labels: not an object");
			goto out;
		}
		n.labels = calloc((size_t)json_object_object_length(v) + 1, sizeof(*n.labels));
		if (!n.labels) {
			r = -ENOMEM;
			goto out;
		}
		json_object_object_foreach(v, k, lv)
		{
			const char *s = json_object_get_string(lv);

			if (!json_object_is_type(lv, json_type_string) || !label_key_valid(k) ||
			    !label_value_valid(s) || n.n_labels >= DRF_FLEET_LABELS_MAX) {
				r = fail(err, errlen, -EINVAL, "label '%.64s' refused", k);
				goto out;
			}
			n.labels[n.n_labels].key = strdup(k);
			n.labels[n.n_labels].value = strdup(s);
			n.n_labels++;
			if (!n.labels[n.n_labels - 1].key || !n.labels[n.n_labels - 1].value) {
				r = -ENOMEM;
				goto out;
			}
		}
	}
	*ret = n;
	memset(&n, 0, sizeof(n));
	r = 0;
out:
	drf_fleet_nodeinfo_clear(&n);
	json_object_put(doc);
	return r;
}

/* Tenants. */

int drf_fleet_tenant_value(const struct drf_tenant *t, char **ret)
{
	json_object *doc = drf_json_object();

	drf_json_set_num(doc, "weight", t->weight);
	drf_json_set_str(doc, "cgroup", t->cgroup ? t->cgroup : t->name);
	if (t->task_model) {
		if (isinf(t->tasks))
			drf_json_set_str(doc, "tasks", "unlimited");
		else
			drf_json_set_num(doc, "tasks", t->tasks);
		res_json(doc, "task", t->vec, t->declared);
	} else {
		res_json(doc, "demand", t->vec, t->declared);
	}
	return to_text(doc, ret);
}

void drf_fleet_tenant_clear(struct drf_tenant *t)
{
	if (!t)
		return;
	free(t->cgroup);
	memset(t, 0, sizeof(*t));
}

int drf_fleet_tenant_parse(const char *name, const char *text, size_t len, struct drf_tenant *ret,
			   char *err, size_t errlen)
{
	struct drf_tenant t = { .weight = 1, .tasks = INFINITY };
	json_object *doc, *tasks = NULL, *task = NULL, *demand = NULL;
	const char *cgroup = name, *why;
	int r = 0;

	if (!drf_name_valid(name))
		return fail(err, errlen, -EINVAL, "tenant name '%s' is not 1-%d of [A-Za-z0-9_.-]",
			    name, DRF_TENANT_NAME_MAX);
	r = parse_object(text, len, &doc, err, errlen);
	if (r < 0)
		return r;
	snprintf(t.name, sizeof(t.name), "%s", name);
	json_object_object_foreach(doc, k, v)
	{
		if (strcmp(k, "weight") == 0) {
			r = get_quantity(v, "weight", &t.weight, err, errlen);
			if (r == 0 && !(t.weight > 0 && t.weight <= DRF_WEIGHT_MAX))
				r = fail(err, errlen, -EINVAL, "weight %g: out of range (0, %g]",
					 t.weight, DRF_WEIGHT_MAX);
		} else if (strcmp(k, "cgroup") == 0) {
			if (!json_object_is_type(v, json_type_string))
				r = fail(err, errlen, -EBADMSG, "cgroup: not a string");
			else
				cgroup = json_object_get_string(v);
		} else if (strcmp(k, "tasks") == 0) {
			tasks = v;
		} else if (strcmp(k, "task") == 0) {
			task = v;
		} else if (strcmp(k, "demand") == 0) {
			demand = v;
		} else {
			r = fail(err, errlen, -EBADMSG, "unknown key '%.64s' (known: weight, "
				 "cgroup, tasks, task, demand)", k);
		}
		if (r < 0)
			goto out;
	}
	if (task && demand) {
		r = fail(err, errlen, -EINVAL, "both a task and a demand: a tenant has one");
		goto out;
	}
	if (tasks && !task) {
		r = fail(err, errlen, -EINVAL, "tasks without a task");
		goto out;
	}
	if (tasks) {
		if (json_object_is_type(tasks, json_type_string) &&
		    strcmp(json_object_get_string(tasks), "unlimited") == 0) {
			t.tasks = INFINITY;
		} else {
			r = get_quantity(tasks, "tasks", &t.tasks, err, errlen);
			if (r == 0 && (t.tasks < 1 || t.tasks != floor(t.tasks) || t.tasks > 1e15))
				r = fail(err, errlen, -EINVAL, "tasks %g: expected a whole number "
					 ">= 1 or \"unlimited\"", t.tasks);
			if (r < 0)
				goto out;
		}
	}
	t.task_model = task != NULL;
	if (task || demand) {
		r = get_resources(task ? task : demand, task ? "task" : "demand", true, t.vec,
				  t.declared, err, errlen);
		if (r < 0)
			goto out;
	}
	if (task) {
		bool any = false;

		for (int res_i = 0; res_i < DRF_NRES; res_i++)
			any = any || t.vec[res_i] > 0;
		if (!any) {
			r = fail(err, errlen, -EINVAL, "task: needs nothing");
			goto out;
		}
	}
	why = drf_cgroup_path_problem(cgroup);
	if (why) {
		r = fail(err, errlen, -EINVAL, "cgroup '%.200s': the path %s", cgroup, why);
		goto out;
	}
	t.cgroup = strdup(cgroup);
	if (!t.cgroup) {
		r = -ENOMEM;
		goto out;
	}
	*ret = t;
out:
	json_object_put(doc);
	return r;
}

/* Assignments. */

void drf_fleet_assignment_clear(struct drf_fleet_assignment *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->tenants[i].cgroup);
	free(a->tenants);
	memset(a, 0, sizeof(*a));
}

int drf_fleet_assignment_copy(struct drf_fleet_assignment *dst,
			      const struct drf_fleet_assignment *src)
{
	struct drf_fleet_assignment a = *src;

	a.tenants = calloc(src->n + 1, sizeof(*a.tenants));
	if (!a.tenants)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		a.tenants[i] = src->tenants[i];
		a.tenants[i].cgroup = strdup(src->tenants[i].cgroup ? src->tenants[i].cgroup : "");
		if (!a.tenants[i].cgroup) {
			a.n = i;
			drf_fleet_assignment_clear(&a);
			return -ENOMEM;
		}
	}
	*dst = a;
	return 0;
}

bool drf_fleet_assignment_same(const struct drf_fleet_assignment *a,
			       const struct drf_fleet_assignment *b)
{
	if (a->n != b->n || memcmp(a->capacity, b->capacity, sizeof(a->capacity)) != 0)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct drf_fleet_share *x = &a->tenants[i], *y = &b->tenants[i];

		if (strcmp(x->name, y->name) != 0 || strcmp(x->cgroup, y->cgroup) != 0 ||
		    x->weight != y->weight || x->tasks != y->tasks ||
		    memcmp(x->alloc, y->alloc, sizeof(x->alloc)) != 0)
			return false;
	}
	return true;
}

static void assignment_json(json_object *o, const struct drf_fleet_assignment *a)
{
	json_object *arr;

	drf_json_set_int(o, "revision", a->revision);
	drf_json_set_str(o, "planner", a->planner);
	for (int r = 0; r < DRF_NRES; r++)
		if (a->capacity[r] > 0) {
			res_json(o, "capacity", a->capacity, NULL);
			break;
		}
	arr = drf_json_set_array(o, "tenants");
	for (size_t i = 0; i < a->n; i++) {
		const struct drf_fleet_share *s = &a->tenants[i];
		json_object *t = drf_json_append_object(arr);

		drf_json_set_str(t, "name", s->name);
		drf_json_set_str(t, "cgroup", s->cgroup);
		drf_json_set_num(t, "weight", s->weight);
		drf_json_set_num(t, "tasks", s->tasks);
		res_json(t, "alloc", s->alloc, NULL);
	}
}

int drf_fleet_assignment_value(const struct drf_fleet_assignment *a, char **ret)
{
	json_object *doc = drf_json_object();

	assignment_json(doc, a);
	return to_text(doc, ret);
}

static int share_of(json_object *o, struct drf_fleet_share *s, char *err, size_t errlen)
{
	json_object *v;
	const char *why;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return fail(err, errlen, -EBADMSG, "tenants: an entry is not an object");
	if (!json_object_object_get_ex(o, "name", &v) ||
	    !json_object_is_type(v, json_type_string) || !drf_name_valid(json_object_get_string(v)))
		return fail(err, errlen, -EBADMSG, "tenants: an entry without a valid name");
	snprintf(s->name, sizeof(s->name), "%s", json_object_get_string(v));
	if (!json_object_object_get_ex(o, "cgroup", &v) ||
	    !json_object_is_type(v, json_type_string))
		return fail(err, errlen, -EBADMSG, "tenant '%s': no cgroup", s->name);
	why = drf_cgroup_path_problem(json_object_get_string(v));
	if (why)
		return fail(err, errlen, -EINVAL, "tenant '%s': cgroup %s", s->name, why);
	s->cgroup = strdup(json_object_get_string(v));
	if (!s->cgroup)
		return -ENOMEM;
	if (!json_object_object_get_ex(o, "weight", &v))
		return fail(err, errlen, -EBADMSG, "tenant '%s': no weight", s->name);
	r = get_quantity(v, "weight", &s->weight, err, errlen);
	if (r < 0)
		return r;
	if (!(s->weight > 0 && s->weight <= DRF_WEIGHT_MAX))
		return fail(err, errlen, -EINVAL, "tenant '%s': weight %g out of range", s->name,
			    s->weight);
	if (!json_object_object_get_ex(o, "tasks", &v))
		return fail(err, errlen, -EBADMSG, "tenant '%s': no tasks", s->name);
	r = get_quantity(v, "tasks", &s->tasks, err, errlen);
	if (r < 0)
		return r;
	/* Whole, and no more than a plan places: the planner continues from it. */
	if (s->tasks != floor(s->tasks) || s->tasks > DRF_DISCRETE_MAX_TASKS)
		return fail(err, errlen, -EINVAL, "tenant '%s': tasks %g is not a whole number "
			    "up to %.0f", s->name, s->tasks, DRF_DISCRETE_MAX_TASKS);
	if (!json_object_object_get_ex(o, "alloc", &v))
		return fail(err, errlen, -EBADMSG, "tenant '%s': no alloc", s->name);
	return get_resources(v, "alloc", false, s->alloc, NULL, err, errlen);
}

static int assignment_of(json_object *doc, struct drf_fleet_assignment *ret, char *err,
			 size_t errlen)
{
	struct drf_fleet_assignment a = { 0 };
	json_object *v, *arr;
	size_t n;
	int r;

	if (!json_object_object_get_ex(doc, "revision", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return fail(err, errlen, -EBADMSG, "no revision");
	a.revision = json_object_get_int64(v);
	if (!json_object_object_get_ex(doc, "planner", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) > DRF_TENANT_NAME_MAX)
		return fail(err, errlen, -EBADMSG, "no planner");
	snprintf(a.planner, sizeof(a.planner), "%s", json_object_get_string(v));
	/* Optional: an older drfd's planner does not write it. */
	if (json_object_object_get_ex(doc, "capacity", &v)) {
		r = get_resources(v, "capacity", false, a.capacity, NULL, err, errlen);
		if (r < 0)
			return r;
	}
	if (!json_object_object_get_ex(doc, "tenants", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return fail(err, errlen, -EBADMSG, "no tenants");
	n = json_object_array_length(arr);
	a.tenants = calloc(n + 1, sizeof(*a.tenants));
	if (!a.tenants)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		r = share_of(json_object_array_get_idx(arr, i), &a.tenants[i], err, errlen);
		a.n = i + 1;
		if (r == 0 && i > 0 && strcmp(a.tenants[i - 1].name, a.tenants[i].name) >= 0)
			r = fail(err, errlen, -EBADMSG, "tenants: '%s' out of order or twice",
				 a.tenants[i].name);
		if (r < 0) {
			drf_fleet_assignment_clear(&a);
			return r;
		}
	}
	*ret = a;
	return 0;
}

int drf_fleet_assignment_parse(const char *text, size_t len, struct drf_fleet_assignment *ret,
			       char *err, size_t errlen)
{
	json_object *doc;
	int r = parse_object(text, len, &doc, err, errlen);

	if (r < 0)
		return r;
	r = assignment_of(doc, ret, err, errlen);
	json_object_put(doc);
	return r;
}

/* The assignment file. */

static int file_path(const char *state_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", state_dir, DRF_FLEET_ASSIGNMENT_FILE);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int drf_fleet_assignment_save(const char *state_dir, const char *node, const char *prefix,
			      const struct drf_fleet_assignment *a)
{
	json_object *doc = drf_json_object();
	char path[PATH_MAX], why[512], *text;
	const char *file;
	int dfd, r;

	drf_json_set_str(doc, "node", node);
	drf_json_set_str(doc, "prefix", prefix);
	assignment_json(drf_json_set_object(doc, "assignment"), a);
	r = file_path(state_dir, path, sizeof(path));
	if (r < 0) {
		json_object_put(doc);
		return r;
	}
	r = to_text(doc, &text);
	if (r < 0)
		return r;
	/* Beneath the checked state dir, as the state file (statefile.c). */
	dfd = drf_statedir_open_parent(path, true, &file, why, sizeof(why));
	if (dfd >= 0) {
		size_t len = strlen(text);

		text[len] = '\n';
		r = drf_replace_at(dfd, file, text, len + 1, DRF_PUBLIC_FILE_MODE);
		close(dfd);
	} else {
		r = dfd;
	}
	free(text);
	return r;
}

int drf_fleet_assignment_load(const char *state_dir, const char *node, const char *prefix,
			      struct drf_fleet_assignment *ret)
{
	char path[PATH_MAX], why[512], *text = NULL;
	json_object *doc = NULL, *v;
	const char *file;
	ssize_t len;
	int dfd, r;

	r = file_path(state_dir, path, sizeof(path));
	if (r < 0)
		return r;
	dfd = drf_statedir_open_parent(path, false, &file, why, sizeof(why));
	if (dfd < 0)
		return dfd;
	len = drf_at_read(dfd, file, VALUE_MAX, true, &text);
	close(dfd);
	if (len < 0)
		return (int)len;
	r = parse_object(text, (size_t)len, &doc, NULL, 0);
	free(text);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(doc, "node", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), node) != 0 ||
	    !json_object_object_get_ex(doc, "prefix", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), prefix) != 0) {
		r = -ESTALE;
	} else if (!json_object_object_get_ex(doc, "assignment", &v) ||
		   !json_object_is_type(v, json_type_object)) {
		r = -EBADMSG;
	} else {
		r = assignment_of(v, ret, NULL, 0);
	}
	json_object_put(doc);
	return r;
}

/* Fleet tasks. */

static const char *const task_st_names[] = {
	[DRF_FLEET_TASK_NONE] = "none",       [DRF_FLEET_TASK_QUEUED] = "queued",
	[DRF_FLEET_TASK_RUNNING] = "running", [DRF_FLEET_TASK_EXITED] = "exited",
	[DRF_FLEET_TASK_FAILED] = "failed",   [DRF_FLEET_TASK_REFUSED] = "refused",
};

const char *drf_fleet_task_st_name(enum drf_fleet_task_st st)
{
	return (unsigned)st < sizeof(task_st_names) / sizeof(*task_st_names) ? task_st_names[st]
									      : "?";
}

bool drf_fleet_task_st_final(enum drf_fleet_task_st st)
{
	return st == DRF_FLEET_TASK_EXITED || st == DRF_FLEET_TASK_FAILED ||
	       st == DRF_FLEET_TASK_REFUSED;
}

void drf_fleet_task_clear(struct drf_fleet_task *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->by);
	free(t->key);
	memset(t, 0, sizeof(*t));
}

int drf_fleet_task_value(const struct drf_fleet_task *t, char **ret)
{
	json_object *doc, *a;

	if (!drf_name_valid(t->tenant) || t->argc == 0 || t->argc > DRF_FLEET_TASK_ARGS_MAX)
		return -EINVAL;
	doc = drf_json_object();
	drf_json_set_str(doc, "tenant", t->tenant);
	a = drf_json_set_array(doc, "argv");
	for (size_t i = 0; i < t->argc; i++)
		drf_json_append_str(a, t->argv[i]);
	res_json(doc, "task", t->vec, NULL);
	drf_json_set_int(doc, "submitted", t->submitted);
	if (t->by)
		drf_json_set_str(doc, "by", t->by);
	if (t->key)
		drf_json_set_str(doc, "key", t->key);
	return to_text(doc, ret);
}

/* A string without a NUL under key, in a new copy. */
static int get_text(json_object *v, const char *what, char **ret, char *err, size_t errlen)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, -EBADMSG, "%s: not a string", what);
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return fail(err, errlen, -EINVAL, "%s: holds a NUL byte", what);
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int task_argv(json_object *v, struct drf_fleet_task *t, char *err, size_t errlen)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return fail(err, errlen, -EBADMSG, "argv: not an array");
	n = json_object_array_length(v);
	if (n == 0 || n > DRF_FLEET_TASK_ARGS_MAX)
		return fail(err, errlen, -EINVAL, "argv: %zu words (1 to %d)", n,
			    DRF_FLEET_TASK_ARGS_MAX);
	t->argv = calloc(n + 1, sizeof(*t->argv));
	if (!t->argv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char what[32];
		int r;

		snprintf(what, sizeof(what), "argv[%zu]", i);
		r = get_text(json_object_array_get_idx(v, i), what, &t->argv[i], err, errlen);
		if (r < 0)
			return r;
		t->argc++;
	}
	return 0;
}

int drf_fleet_task_parse(const char *node, const char *id, const char *text, size_t len,
			 struct drf_fleet_task *ret, char *err, size_t errlen)
{
	struct drf_fleet_task t = { 0 };
	json_object *doc;
	bool tenant = false, argv = false;
	int r;

	if (!drf_name_valid(node) || !drf_name_valid(id))
		return fail(err, errlen, -EINVAL, "node '%s' or task id '%s' is not 1-%d of "
			    "[A-Za-z0-9_.-]", node, id, DRF_TENANT_NAME_MAX);
	r = parse_object(text, len, &doc, err, errlen);
	if (r < 0)
		return r;
	snprintf(t.node, sizeof(t.node), "%s", node);
	snprintf(t.id, sizeof(t.id), "%s", id);
	json_object_object_foreach(doc, k, v)
	{
		if (strcmp(k, "tenant") == 0) {
			const char *s = json_object_get_string(v);

			if (!json_object_is_type(v, json_type_string) || !drf_name_valid(s))
				r = fail(err, errlen, -EINVAL, "tenant: not a tenant's name");
			else
				snprintf(t.tenant, sizeof(t.tenant), "%s", s);
			tenant = true;
		} else if (strcmp(k, "argv") == 0) {
			r = task_argv(v, &t, err, errlen);
			argv = true;
		} else if (strcmp(k, "task") == 0) {
			r = get_resources(v, "task", true, t.vec, NULL, err, errlen);
		} else if (strcmp(k, "submitted") == 0) {
			if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
				r = fail(err, errlen, -EBADMSG, "submitted: not a time");
			else
				t.submitted = json_object_get_int64(v);
		} else if (strcmp(k, "by") == 0) {
			r = get_text(v, "by", &t.by, err, errlen);
		} else if (strcmp(k, "key") == 0) {
			r = get_text(v, "key", &t.key, err, errlen);
		}
		/* Other keys: a newer drfctl's, passed over. */
		if (r < 0)
			goto out;
	}
	if (!tenant || !argv)
		r = fail(err, errlen, -EBADMSG, "no %s", tenant ? "argv" : "tenant");
out:
	json_object_put(doc);
	if (r < 0) {
		drf_fleet_task_clear(&t);
		return r;
	}
	*ret = t;
	return 0;
}

int drf_fleet_task_state_value(const struct drf_fleet_task_state *s, char **ret)
{
	json_object *doc;

	if (s->st == DRF_FLEET_TASK_NONE || (unsigned)s->st > DRF_FLEET_TASK_REFUSED)
		return -EINVAL;
	doc = drf_json_object();
	drf_json_set_str(doc, "state", drf_fleet_task_st_name(s->st));
	if (s->st == DRF_FLEET_TASK_EXITED)
		drf_json_set_int(doc, "code", s->code);
	if (s->st == DRF_FLEET_TASK_FAILED || s->st == DRF_FLEET_TASK_REFUSED)
		drf_json_set_str(doc, "why", s->why);
	drf_json_set_u64(doc, "task", s->task);
	drf_json_set_int(doc, "at", s->at);
	return to_text(doc, ret);
}

int drf_fleet_task_state_parse(const char *text, size_t len, struct drf_fleet_task_state *ret,
			       char *err, size_t errlen)
{
	struct drf_fleet_task_state s = { 0 };
	json_object *doc, *v;
	const char *name;
	int r;

	r = parse_object(text, len, &doc, err, errlen);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(doc, "state", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		r = fail(err, errlen, -EBADMSG, "no state");
		goto out;
	}
	name = json_object_get_string(v);
	for (int k = DRF_FLEET_TASK_QUEUED; k <= DRF_FLEET_TASK_REFUSED; k++)
		if (strcmp(name, task_st_names[k]) == 0)
			s.st = (enum drf_fleet_task_st)k;
	if (s.st == DRF_FLEET_TASK_NONE) {
		r = fail(err, errlen, -EINVAL, "state '%.32s': not one of queued, running, exited, "
			 "failed, refused", name);
		goto out;
	}
	if (json_object_object_get_ex(doc, "code", &v)) {
		int64_t c = json_object_get_int64(v);

		if (!json_object_is_type(v, json_type_int) || c < -1 || c > 255) {
			r = fail(err, errlen, -EINVAL, "code: not an exit code");
			goto out;
		}
		s.code = (int)c;
	}
	if (json_object_object_get_ex(doc, "why", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			r = fail(err, errlen, -EBADMSG, "why: not a string");
			goto out;
		}
		snprintf(s.why, sizeof(s.why), "%s", json_object_get_string(v));
	}
	if (json_object_object_get_ex(doc, "task", &v) && json_object_is_type(v, json_type_int))
		s.task = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(doc, "at", &v) && json_object_is_type(v, json_type_int))
		s.at = json_object_get_int64(v);
out:
	json_object_put(doc);
	if (r == 0)
		*ret = s;
	return r;
}

bool drf_fleet_task_state_same(const struct drf_fleet_task_state *a,
			       const struct drf_fleet_task_state *b)
{
	return a->st == b->st && a->code == b->code && a->task == b->task &&
	       strcmp(a->why, b->why) == 0;
}
