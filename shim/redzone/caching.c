/* Caching allocators (docs/python.md, "Frameworks and caching allocators"): PyTorch,
 * JAX/XLA, CuPy and RAPIDS RMM ask the driver for large segments and cut
 * tensors out of them, so a band guards a segment, not a tensor. When one is
 * loaded and its per-allocation switch is off, one WARN says so and names the
 * switch.
 *
 * Checked when red zones are on: at allocations (cheaply: only when the
 * dynamic linker loaded something since the last look), at scans and at exit.
 * Not in a child forked while other threads ran (base/loader.h): the walk
 * could wait for ever for the loader's list. Its parent's answer stands
 * there; what it loads itself goes unseen, which one TRACE line says. */
#include "redzone/caching.h"

#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/gg.h"
#include "base/loader.h"
#include "report/report.h"

struct allocator {
	const char *name;        /* as in the JSON's caching_allocators */
	const char *shown;       /* as the WARN names it */
	const char *objects[2];  /* path globs of the objects that hold it */
	const char *env, *value; /* the switch that makes it allocate per tensor; NULL: none */
	const char *how;         /* what to do instead, when there is no switch */
};

static const struct allocator known[] = {
	{ "pytorch",
	  "PyTorch",
	  { "*/libc10_cuda.so*", "*/libtorch_cuda.so*" },
	  "PYTORCH_NO_CUDA_MEMORY_CACHING",
	  "1",
	  NULL },
	{ "jax",
	  "JAX/XLA",
	  { "*/xla_extension*.so*", "*/jaxlib/*.so*" },
	  "XLA_PYTHON_CLIENT_ALLOCATOR",
	  "platform",
	  NULL },
	{ "cupy",
	  "CuPy",
	  { "*/cupy/cuda/memory*.so*", NULL },
	  NULL,
	  NULL,
	  "its memory pool is turned off only from the program: "
	  "cupy.cuda.set_allocator(None) before the first allocation" },
	{ "rmm",
	  "RAPIDS RMM",
	  { "*/librmm.so*", "*/rmm/_lib/*.so*" },
	  NULL,
	  NULL,
	  "its pool is chosen only from the program: rmm.reinitialize(pool_allocator=False), "
	  "or a cuda_memory_resource" },
};

static struct {
	pthread_mutex_t lock;            /* guards @seen, and @adds' writes; taken with no other lock */
	_Atomic unsigned long long adds; /* the dynamic linker's load count at the last look */
	atomic_ulong skipped;            /* looks not made (base/loader.h); lock-free */
	bool seen[GG_ARRAY_SIZE(known)];
} caching_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Whether @a's per-allocation switch is on in this process's environment. */
static bool switched_off_caching(const struct allocator *a)
{
	const char *v = a->env ? getenv(a->env) : NULL;

	return v && !strcmp(v, a->value);
}

struct walk {
	unsigned long long adds;
	bool changed;
	bool found[GG_ARRAY_SIZE(known)];
};

/* Whether @name may match @glob: it holds the plain characters that follow
 * the glob's leading stars (every match does). fnmatch costs about 700
 * instructions a call, and the first look (at exit, when nothing looked
 * before) asks about every loaded object and every glob: this turns nearly
 * all of them away for tens. */
static bool may_match(const char *glob, const char *name)
{
	char run[64];
	size_t n;

	glob += strspn(glob, "*");
	n = strcspn(glob, "*?[\\");
	if (!n || n >= sizeof(run))
		return true;
	memcpy(run, glob, n);
	run[n] = '\0';
	return strstr(name, run) != NULL;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;

	(void)size;
	if (!w->changed) {
		/* Nothing loaded since the last look: stop at the first object. */
		w->adds = info->dlpi_adds;
		if (info->dlpi_adds == atomic_load_explicit(&caching_state.adds, memory_order_relaxed))
			return 1;
		w->changed = true;
	}
	for (size_t i = 0; i < GG_ARRAY_SIZE(known); i++)
		for (size_t k = 0; k < 2 && known[i].objects[k]; k++)
			if (info->dlpi_name && may_match(known[i].objects[k], info->dlpi_name) &&
			    !fnmatch(known[i].objects[k], info->dlpi_name, 0))
				w->found[i] = true;
	return 0;
}

void gg_redzone_caching_check(void)
{
	struct walk w = { 0 };
	bool warn[GG_ARRAY_SIZE(known)] = { false };

	if (gg_loader_list_may_hang()) {
		if (atomic_fetch_add_explicit(&caching_state.skipped, 1, memory_order_relaxed) == 0)
			gg_report_trace("caching allocators loaded in this process are not looked "
					"for: it was forked while other threads ran, so the dynamic "
					"loader's list may stay locked; its parent's answer stands");
		return;
	}
	/* The look takes no lock of ours: nothing loaded, nothing to write. */
	dl_iterate_phdr(visit, &w);
	if (!w.changed)
		return;
	pthread_mutex_lock(&caching_state.lock);
	atomic_store_explicit(&caching_state.adds, w.adds, memory_order_relaxed);
	for (size_t i = 0; i < GG_ARRAY_SIZE(known); i++) {
		if (w.found[i] && !caching_state.seen[i] && !switched_off_caching(&known[i]))
			caching_state.seen[i] = warn[i] = true;
	}
	pthread_mutex_unlock(&caching_state.lock);
	for (size_t i = 0; i < GG_ARRAY_SIZE(known); i++) {
		const struct allocator *a = &known[i];

		if (!warn[i])
			continue;
		if (a->env)
			gg_report_warn(
				"%s's caching allocator is loaded and %s is not %s: the red zones "
				"guard its segments, not its tensors (set %s=%s, or run under "
				"gpuguard --per-tensor)",
				a->shown, a->env, a->value, a->env, a->value);
		else
			gg_report_warn("%s's caching allocator is loaded: the red zones guard its "
				       "segments, not its arrays; %s",
				       a->shown, a->how);
	}
}

unsigned gg_redzone_caching(const char **names, unsigned cap)
{
	unsigned n = 0;

	pthread_mutex_lock(&caching_state.lock);
	for (size_t i = 0; i < GG_ARRAY_SIZE(known) && n < cap; i++)
		if (caching_state.seen[i])
			names[n++] = known[i].name;
	pthread_mutex_unlock(&caching_state.lock);
	return n;
}

void gg_redzone_caching_atfork_child(void)
{
	/* The child has its parent's objects, and says nothing its parent said. */
	pthread_mutex_init(&caching_state.lock, NULL);
	atomic_store(&caching_state.skipped, 0);
}
