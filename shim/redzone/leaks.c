/* Leaks: one walk of the registry at exit, the zones counted by their
 * allocation stack's id in a hash table, then the stacks sorted by the bytes
 * they hold. Allocated with malloc, once, at exit (no hook is under way). */
#include "redzone/leaks.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "callsite/depot.h"
#include "redzone/registry.h"

struct leak {
	uint32_t stack; /* 0: a free slot of the table (an unknown stack is UINT32_MAX) */
	uint64_t count, bytes;
};

#define UNKNOWN_STACK UINT32_MAX

static struct {
	bool check;           /* written at set-up */
	pthread_mutex_t lock; /* guards what follows */
	bool known;           /* gathered */
	struct leak *v;       /* @n stacks, largest bytes first */
	size_t n, cap;        /* @cap: the table's size while gathering */
	bool oom;             /* some zones could not be counted (out of memory) */
	uint64_t allocations, bytes;
} leaks_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

void gg_leaks_configure(bool check)
{
	leaks_state.check = check;
}

static bool grow(void)
{
	size_t cap = leaks_state.cap ? leaks_state.cap * 2 : 256;
	struct leak *v = calloc(cap, sizeof(*v)), *old = leaks_state.v;

	if (!v)
		return false;
	for (size_t i = 0; i < leaks_state.cap; i++) {
		size_t k = (old[i].stack * 0x9e3779b9u) & (cap - 1);

		if (!old[i].stack)
			continue;
		while (v[k].stack)
			k = (k + 1) & (cap - 1);
		v[k] = old[i];
	}
	free(old);
	leaks_state.v = v;
	leaks_state.cap = cap;
	return true;
}

/* Under their shard's lock: a run of zones (a free slot's ptr is 0). */
static void count_run(void *ctx, struct gg_zone *zones, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		uint32_t stack = zones[i].site ? zones[i].site : UNKNOWN_STACK;
		size_t k;

		if (!zones[i].ptr)
			continue;
		/* At most half full. */
		if (2 * (leaks_state.n + 1) > leaks_state.cap && !grow()) {
			leaks_state.oom = true;
			continue;
		}
		k = (stack * 0x9e3779b9u) & (leaks_state.cap - 1);
		while (leaks_state.v[k].stack && leaks_state.v[k].stack != stack)
			k = (k + 1) & (leaks_state.cap - 1);
		if (!leaks_state.v[k].stack) {
			leaks_state.v[k].stack = stack;
			leaks_state.n++;
		}
		leaks_state.v[k].count++;
		leaks_state.v[k].bytes += zones[i].user;
		leaks_state.allocations++;
		leaks_state.bytes += zones[i].user;
	}
}

/* Largest bytes first; then more allocations; then the older stack. */
static int by_bytes(const void *a, const void *b)
{
	const struct leak *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

void gg_leaks_gather(void)
{
	size_t n = 0;

	pthread_mutex_lock(&leaks_state.lock);
	if (leaks_state.known) {
		pthread_mutex_unlock(&leaks_state.lock);
		return;
	}
	gg_registry_foreach_run(count_run, NULL);
	/* The table's used slots to its front, then in order. */
	for (size_t i = 0; i < leaks_state.cap; i++)
		if (leaks_state.v[i].stack)
			leaks_state.v[n++] = leaks_state.v[i];
	if (n)
		qsort(leaks_state.v, n, sizeof(*leaks_state.v), by_bytes);
	leaks_state.known = true;
	pthread_mutex_unlock(&leaks_state.lock);
}

/* Describe each leak for the report, largest first: with no lock held (the
 * description runs dladdr), from the array gathered once and never changed. */
static void each(void (*emit)(void *ctx, const struct gg_report_leak *l), void *ctx)
{
	struct gg_report_stack stack;

	for (size_t i = 0; i < leaks_state.n; i++) {
		const struct leak *k = &leaks_state.v[i];
		struct gg_report_leak l = { .count = k->count, .bytes = k->bytes, .stack = &stack };

		gg_depot_report(k->stack == UNKNOWN_STACK ? 0 : k->stack, &l.site, &stack);
		emit(ctx, &l);
	}
}

void gg_leaks_figures(struct gg_report_leaks *out)
{
	pthread_mutex_lock(&leaks_state.lock);
	*out = (struct gg_report_leaks){
		.known = leaks_state.known,
		.check = leaks_state.check,
		.stacks = leaks_state.known ? leaks_state.n : 0,
		.allocations = leaks_state.allocations,
		.bytes = leaks_state.bytes,
		.each = each,
	};
	pthread_mutex_unlock(&leaks_state.lock);
}

void gg_leaks_atfork_child(void)
{
	pthread_mutex_init(&leaks_state.lock, NULL);
	leaks_state.known = false;
	leaks_state.n = leaks_state.cap = 0;
	leaks_state.v = NULL; /* the parent's, if any: it is not ours to free */
	leaks_state.allocations = leaks_state.bytes = 0;
	leaks_state.oom = false;
}
