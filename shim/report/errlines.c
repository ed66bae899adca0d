/* The ERROR lines since the last labelled boundary, in a fixed buffer: the
 * log itself is write-only (a terminal, a pipe), and a label's findings are
 * named by the lines the log already has, word for word. Nothing is
 * allocated; a line that does not fit is counted, never cut. */
#include "report/errlines.h"

#include <pthread.h>
#include <string.h>

#define ERRLINES_BYTES 16384

static struct {
	pthread_mutex_t lock;
	char buf[ERRLINES_BYTES]; /* whole lines, each ending '\n'; under @lock */
	size_t len;               /* under @lock */
	uint64_t dropped;         /* lines that did not fit; under @lock */
} errlines_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

void gg_report_errlines_add(const char *line, size_t len)
{
	pthread_mutex_lock(&errlines_state.lock);
	if (len <= sizeof(errlines_state.buf) - errlines_state.len) {
		memcpy(errlines_state.buf + errlines_state.len, line, len);
		errlines_state.len += len;
	} else {
		errlines_state.dropped++;
	}
	pthread_mutex_unlock(&errlines_state.lock);
}

void gg_report_errlines_take(char *out, size_t cap, uint64_t *dropped)
{
	size_t n = 0;

	pthread_mutex_lock(&errlines_state.lock);
	*dropped = errlines_state.dropped;
	/* Whole lines up to @cap: the first that does not fit and those after it
	 * are dropped, and counted. */
	for (size_t at = 0; at < errlines_state.len;) {
		const char *nl = memchr(errlines_state.buf + at, '\n', errlines_state.len - at);
		size_t line = (size_t)(nl - (errlines_state.buf + at)) + 1;

		if (cap && n + line <= cap - 1) {
			memcpy(out + n, errlines_state.buf + at, line);
			n += line;
		} else {
			++*dropped;
		}
		at += line;
	}
	if (cap)
		out[n] = '\0';
	errlines_state.len = 0;
	errlines_state.dropped = 0;
	pthread_mutex_unlock(&errlines_state.lock);
}

void gg_report_errlines_atfork_prepare(void)
{
	pthread_mutex_lock(&errlines_state.lock);
}

void gg_report_errlines_atfork_parent(void)
{
	pthread_mutex_unlock(&errlines_state.lock);
}

void gg_report_errlines_atfork_child(void)
{
	pthread_mutex_init(&errlines_state.lock, NULL);
	errlines_state.len = 0;
	errlines_state.dropped = 0;
}
