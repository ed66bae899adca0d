/* Labelled boundaries: a pytest test (or any caller of gpuguard_boundary)
 * owns the errors found since the labelled boundary before it, and the ERROR
 * lines that named them. Only those that found something are kept: a suite
 * of ten thousand clean tests leaves an empty list, and a summary rewritten
 * after each of them stays small. */
#include "boundary/labels.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/errlines.h"

/* Labels kept at most; those past it (or that memory refused) are counted
 * in "labels_omitted" and warned of once (their ERROR lines are in the
 * log), so a reader never takes a missing label for a clean test. */
#define LABELS_MAX 4096
#define LABEL_LINES_BYTES 16384

struct label {
	char *label, *lines; /* malloc()ed */
	uint64_t boundary, errors, dropped;
};

static struct {
	pthread_mutex_t lock; /* the list; taken inside the boundary lock */
	struct label *v;      /* under @lock */
	size_t n, cap;        /* under @lock */
	uint64_t boundaries;  /* labelled boundaries run; under @lock */
	uint64_t errors_seen; /* the process's errors at the last one; under @lock */
	uint64_t omitted;     /* labels that found something and were not kept; under @lock */
} labels_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* 0, or -ENOSPC past LABELS_MAX, -ENOMEM when memory refused. */
static int keep(const char *label, uint64_t errors, const char *lines, uint64_t dropped)
{
	struct label *l;

	if (labels_state.n == labels_state.cap) {
		size_t cap = labels_state.cap ? labels_state.cap * 2 : 16;
		struct label *v;

		if (cap > LABELS_MAX)
			return -ENOSPC;
		if (!(v = realloc(labels_state.v, cap * sizeof(*v))))
			return -ENOMEM;
		labels_state.v = v;
		labels_state.cap = cap;
	}
	l = &labels_state.v[labels_state.n];
	l->label = strdup(label);
	l->lines = strdup(lines);
	if (!l->label || !l->lines) {
		free(l->label);
		free(l->lines);
		return -ENOMEM;
	}
	l->boundary = labels_state.boundaries;
	l->errors = errors;
	l->dropped = dropped;
	labels_state.n++;
	return 0;
}

uint64_t gg_labels_record(const char *label, uint64_t errors)
{
	static char lines[LABEL_LINES_BYTES]; /* under the boundary lock */
	uint64_t dropped, found;
	int err = 0;
	bool first = false;
	size_t kept;

	gg_report_errlines_take(lines, sizeof(lines), &dropped);
	pthread_mutex_lock(&labels_state.lock);
	labels_state.boundaries++;
	found = errors > labels_state.errors_seen ? errors - labels_state.errors_seen : 0;
	labels_state.errors_seen = errors;
	if ((found || lines[0] || dropped) && (err = keep(label, found, lines, dropped)))
		first = !labels_state.omitted++;
	kept = labels_state.n;
	pthread_mutex_unlock(&labels_state.lock);
	/* Said after the lock: the log's own lock is not taken under ours. */
	if (first)
		gg_report_warn("labelled boundaries: the summary %s %d labels that found something; "
			       "\"%s\" and those after it that find something are left out of its "
			       "\"labels\" (counted in \"labels_omitted\"): their ERROR lines are "
			       "in this log only",
			       err == -ENOSPC ? "keeps the first" : "is out of memory after",
			       err == -ENOSPC ? LABELS_MAX : (int)kept, label);
	return found;
}

void gg_labels_foreach(void (*emit)(void *ctx, const struct gg_report_label *l), void *ctx)
{
	pthread_mutex_lock(&labels_state.lock);
	for (size_t i = 0; i < labels_state.n; i++) {
		const struct label *l = &labels_state.v[i];
		struct gg_report_label r = { l->label, l->boundary, l->errors, l->lines, l->dropped };

		emit(ctx, &r);
	}
	pthread_mutex_unlock(&labels_state.lock);
}

uint64_t gg_labels_omitted(void)
{
	uint64_t n;

	pthread_mutex_lock(&labels_state.lock);
	n = labels_state.omitted;
	pthread_mutex_unlock(&labels_state.lock);
	return n;
}

void gg_labels_atfork_prepare(void)
{
	pthread_mutex_lock(&labels_state.lock);
}

void gg_labels_atfork_parent(void)
{
	pthread_mutex_unlock(&labels_state.lock);
}

/* The child starts with none of its parent's labels or errors (its own
 * counters start at zero too). */
void gg_labels_atfork_child(void)
{
	pthread_mutex_init(&labels_state.lock, NULL);
	for (size_t i = 0; i < labels_state.n; i++) {
		free(labels_state.v[i].label);
		free(labels_state.v[i].lines);
	}
	labels_state.n = 0;
	labels_state.boundaries = 0;
	labels_state.errors_seen = 0;
	labels_state.omitted = 0;
}
