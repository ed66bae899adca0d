/* Red zones (docs/how-it-works.md, "Red zones"): every device allocation gets a trailing
 * guard band filled with a known byte; scans at boundaries, at free, at context
 * teardown and at exit report any byte that changed. */
#ifndef GG_SHIM_REDZONE_REDZONE_H
#define GG_SHIM_REDZONE_REDZONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redzone/registry.h"
#include "report/report.h"

struct gg_config;

void gg_redzone_configure(const struct gg_config *cfg);

/* Every call of an allocation hook takes the next index, failed calls included. */
uint64_t gg_redzone_next_index(void);

/* What gg_redzone_request() settled for gg_redzone_alloc(). */
struct gg_redzone_ticket {
	int ctx;                      /* the context's slot; -1: no band */
	enum gg_report_reason reason; /* why no band; GG_REASON_COUNT: none, it has one */
	uintptr_t caller;             /* the hooked call's return address, when known; else 0 */
	const void *frame;            /* the hook's frame, which returns to @caller; NULL: unknown */
};

/* Band bytes to add to an allocation of @bytes with @index (0: none), on
 * @stream when @async. Settles everything a band needs before the driver is
 * asked, so a padded allocation is always recorded. */
size_t gg_redzone_request(uint64_t index, size_t bytes, void *stream, bool async,
			  struct gg_redzone_ticket *t);

/* The padded request ran out of memory and was retried without the band. */
void gg_redzone_fallback(struct gg_redzone_ticket *t);

/* A request ran out of memory: true when the quarantine released what it
 * held (its fills checked), so the request is worth asking again. */
bool gg_redzone_out_of_memory(void);

/* Virtual memory (never guarded: docs/how-it-works.md, "Red zones"): a physical
 * allocation of @created bytes was made, or @mapped bytes were mapped (0:
 * none). */
void gg_redzone_vmm(size_t created, size_t mapped);

/* An allocation as the driver answered it (@rc 0: @ptr is valid), padded by
 * @pad bytes (0, what gg_redzone_request() answered, or that rounded by
 * gg_adjacency_band(): a zone keeps only whether it was); @stream is the
 * stream-ordered allocator's stream (NULL: none). */
void gg_redzone_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, uint64_t ptr,
		      void *stream, bool async, const struct gg_redzone_ticket *t, int rc,
		      const char *rc_name);

/* A free in flight: the zone taken out of the registry while the driver is asked. */
struct gg_redzone_free {
	struct gg_zone zone;
	bool held;     /* @zone was ours */
	bool violated; /* its check found a violation */
	/* Not to be forwarded: the allocation went into the quarantine (the
	 * free answers CUDA_SUCCESS), or was there already (a double free,
	 * answered as the driver answers a pointer freed before; @no_context:
	 * with no context current). */
	bool quarantined, twice, no_context;
	uintptr_t caller; /* as a ticket's: the free's own stack (callsite/depot.h) */
	const void *frame;
};

/* Before a free is forwarded: check the band of @ptr (@async: stream-ordered,
 * after @stream's work) and take it out of the registry into @t. After it:
 * the trace line, and the zone forgotten, or put back as it was when the
 * driver refused the free (@rc != 0). */
void gg_redzone_freeing(uint64_t ptr, void *stream, bool async, struct gg_redzone_free *t);
void gg_redzone_freed(const char *api, uint64_t ptr, const struct gg_redzone_free *t, int rc,
		      const char *rc_name);

/* The padded allocation at @ptr reaches @end, past its band (a pitched
 * allocation's spare rows): interior pointers up to there are looked up. */
void gg_redzone_reaches(uint64_t ptr, uint64_t end);

/* The configured band's bytes (0: red zones are off). */
uint64_t gg_redzone_pad(void);

/* The zone holding @ptr: the one it starts, else the padded allocation the
 * driver says holds it, its band (and a pitched one's spare rows) included.
 * 0 or -ENOENT (none, or red zones are off). An interior pointer's
 * allocation comes from a per-thread cache of the driver's answers, which a
 * free the shim did not see can leave stale: a refusal asks again through
 * gg_redzone_zone_of_now(), which asks the driver. */
int gg_redzone_zone_of(uint64_t ptr, struct gg_zone *z);
int gg_redzone_zone_of_now(uint64_t ptr, struct gg_zone *z);

/* A refused copy or set (ranges.c), kept and reported by its module:
 * counted with the violations (errors, the exit line, the metrics, by its
 * kind), and GPUGUARD_HALT_ON_ERROR aborts here. */
void gg_redzone_finding(void);

/* The user's size of the padded allocation at @base. 0 or -ENOENT. */
int gg_redzone_user_size(uint64_t base, uint64_t *user);

/* Read back every band; report and re-fill the changed ones. */
void gg_redzone_scan(const char *why);

/* Context teardown: check the bands of @ctx (or of @dev's primary context)
 * before their memory dies, then forget them once it has. _ending returns
 * the primary context to hand to _ended (NULL: nothing to do). */
void gg_redzone_context_ending(void *ctx);
void gg_redzone_context_ended(void *ctx);
/* After a successful cuCtxDetach: _ended when it destroyed @ctx. */
void gg_redzone_context_detached(void *ctx);
void *gg_redzone_device_ending(int dev);
void gg_redzone_device_ended(int dev, void *primary, bool reset);

void gg_redzone_stats(struct gg_report_redzone *out);

/* A launch as the hooks saw it, after the driver took it
 * (docs/how-it-works.md, "Red zones": Which kernel did it): its kernel, its parameters in
 * either form, the stream it runs on (the per-thread stream already named as
 * such), and its index. */
struct gg_redzone_launch {
	const void *fn;
	void **params; /* kernelParams; NULL: the buffer of @extra */
	void **extra;
	void *stream;
	uint64_t index;
	/* gg_redzone_launching() saw it before it was forwarded: its dangling
	 * pointers were reported there. */
	bool dangling_checked;
	/* A kernel of a graph's replay, not forwarded yet (redzone/replays.c):
	 * its suspects are given now, its check comes after the replay is. A
	 * finding made while giving them (a dangling launch) is said before the
	 * graph runs, and names @node, the graph's kernel node. */
	bool unforwarded;
	const void *node;
};

/* Before launch @l is forwarded (its index taken), while anything is
 * quarantined (gg_quarantine_any(), quarantine.h): a pointer into a
 * quarantined allocation is a dangling launch, reported now
 * (GPUGUARD_HALT_ON_ERROR stops here, before the kernel runs). True when
 * its kernel's memo stands for it (noted before the driver took it): then
 * it is no business of gg_redzone_launched(). */
bool gg_redzone_launching(const struct gg_redzone_launch *l);

/* Note the launch among the suspects of the zones it was given, and with
 * GPUGUARD_CHECK_LAUNCHES wait for it and check their bands. */
void gg_redzone_launched(const struct gg_redzone_launch *l);

/* Replays of CUDA graphs (redzone/replays.c): each kernel node of @g is a
 * launch, @first the first's index. _replaying before the replay is
 * forwarded (suspects, and with a quarantine its dangling launches) where
 * gg_redzone_replay_unchanged (redzone/replays.h) said it has work;
 * _replayed after the driver took it, with GPUGUARD_CHECK_LAUNCHES. */
struct gg_graph;
void gg_redzone_replaying(struct gg_graph *g, uint64_t first, void *stream);
void gg_redzone_replayed(struct gg_graph *g, uint64_t first, void *stream);

/* For replays.c: the check of a launch already given its suspects; the
 * launch a suspect entry of a memoised replay stands for. */
void gg_redzone_launch_check(const struct gg_redzone_launch *l);
uint64_t gg_redzone_replay_index(uint64_t launch);

/* A violation as kept: its sites interned (described when reported). */
struct gg_violation {
	uint8_t kind; /* GG_VIOLATION_* */
	uint64_t index, user, pad;
	uint64_t slack;                /* the band's bytes past @pad, up to the driver's alignment */
	uint64_t first, last, changed; /* offsets into the band; changed bytes */
	uint8_t first_value, expected;
	bool by_launch; /* found right after launch @launch of kernel @kernel */
	uint64_t ptr;
	uint32_t site;        /* the allocation's stack (callsite/depot.h) */
	uint32_t launch_site; /* when @by_launch: where it was launched */
	int kernel;           /* its slot (handles/kernels.h) */
	uint64_t launch;
	const char *detected_by; /* "scan", "free", "teardown", "exit", "launch" */
	uint64_t suspects[GG_SUSPECTS];
	/* A free's finding (frees.c): the call, the pointer it was given, its
	 * stack and, for a double free, the first free's. */
	const char *api;
	uint64_t address;
	uint32_t free_stack, first_free_stack;
	/* A band changed up to its top, where another zone starts (adjacency.c):
	 * that zone, as it was when the band was read (@ptr 0: none). */
	struct {
		uint64_t ptr, user, index;
		uint32_t site;
		uint64_t suspects[GG_SUSPECTS];
	} upper;
	int param;        /* a dangling launch's parameter (its index) */
	const void *node; /* a dangling launch's graph kernel node (replays.c), or NULL */
};

enum {
	GG_VIOLATION_OVERRUN,
	GG_VIOLATION_DOUBLE_FREE,
	GG_VIOLATION_INVALID_FREE,
	GG_VIOLATION_UNDERFLOW,
	GG_VIOLATION_WRITE_AFTER_FREE,
	GG_VIOLATION_DANGLING_LAUNCH
};

/* A check that could not be made, counted with @why (quarantine.c). */
void gg_redzone_unchecked(enum gg_report_unchecked why);

/* The quarantine released @z, freed at @free_stack (@freed: handed to the
 * driver; else its context died with it): forgotten as a free is. */
void gg_redzone_released(const struct gg_zone *z, uint32_t free_stack, bool freed);

/* Record and report @v, a finding of another file of this module (frees.c);
 * GPUGUARD_HALT_ON_ERROR stops there. No lock held. */
void gg_redzone_found(const struct gg_violation *v);

/* The launch a zone's suspect @entry stands for: a kernel's memo or a
 * graph's may have made an older entry stand for a newer launch. */
uint64_t gg_redzone_suspect_launch(uint64_t entry);

void gg_redzone_atfork_prepare(void);
void gg_redzone_atfork_parent(void);
void gg_redzone_atfork_child(void);

#endif
