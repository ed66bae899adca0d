/* The driver calls the shim makes itself (filling and reading guard bands;
 * contexts, streams and events; a kernel's parameters and name; a graph's
 * nodes; a pointer's range), behind plain C types: CUresult stays in device.c,
 * and its callers (the red zones, the kernel table, the graphs, the audit, the
 * copies) see only 0 or -errno. Every int function returns 0, -ENOSYS when the
 * driver lacks a function it needs, or -EIO when the driver refused. Contexts
 * and streams are the driver's handles, passed through. */
#ifndef GG_SHIM_DRIVER_DEVICE_H
#define GG_SHIM_DRIVER_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Find every function below in the driver, once; called outside the shim's
 * locks, so no later call needs the dynamic loader. 0, or -ENOSYS with
 * *@missing (when not NULL) the first one the driver lacks. */
int gg_device_resolve(const char **missing);

/* The calling thread's current context and its device. -ENOENT if none. */
int gg_device_current(void **ctx, int *dev);

/* The calling thread's current context alone (one driver call). -ENOENT if none. */
int gg_device_context(void **ctx);

/* A private non-blocking stream in @ctx: its work waits for nothing of the
 * application's, and the legacy stream does not wait for it. */
int gg_device_stream_create(void *ctx, void **stream);
int gg_device_stream_destroy(void *ctx, void *stream);

/* Set @n bytes at @ptr to @value on @stream, in @ctx (NULL: the current
 * context, which is @stream's, here and in gg_device_event_after); with
 * @wait, return only when it is done. */
int gg_device_fill(void *ctx, void *stream, uint64_t ptr, uint8_t value, size_t n, bool wait);

/* Copy @n bytes at @ptr to @dst after the work queued on @stream (NULL: the
 * legacy stream, which also waits for the blocking streams), in @ctx. */
int gg_device_read(void *ctx, void *stream, uint64_t ptr, void *dst, size_t n);

/* @count copies, device @srcs[i] to host @dsts[i] of @sizes[i] bytes, as one
 * cuMemcpyBatchAsync on @stream (not the legacy stream), waited for.
 * -ENOSYS when the driver has no batched copy. */
int gg_device_read_batch(void *ctx, void *stream, const uint64_t *srcs, void *const *dsts,
			 const size_t *sizes, size_t count);

/* The library of the CUkernel @kernel (CUDA 12.5); -ENOSYS before. */
int gg_device_kernel_library(const void *kernel, void **library);

/* Whether the context @ctx still lives (a detach that was not the last
 * leaves it alive); -ENOSYS when the driver cannot say. */
int gg_device_context_alive(void *ctx, bool *alive);

/* Whether @dev's primary context is active. */
int gg_device_primary_active(int dev, bool *active);

/* @dev's primary context, when it is active (-ENOENT otherwise; never
 * activates it). */
int gg_device_primary(int dev, void **ctx);

/* Whether the legacy stream may not be used now (a blocking stream is being
 * captured, or the driver cannot say). */
bool gg_device_legacy_capturing(void);
/* Graph queries (handles/graphs.c): a graph's nodes (@nodes NULL: *n gets
 * their count), a node's type (GG_DEVICE_NODE_*: cuda.h's CUgraphNodeType),
 * a kernel node's parameters, a child graph node's graph. */
enum {
	GG_DEVICE_NODE_KERNEL = 0,
	GG_DEVICE_NODE_GRAPH = 4,
	GG_DEVICE_NODE_CONDITIONAL = 13
};
struct gg_device_kernel_node {
	const void *fn;        /* the function, else the CUkernel */
	void **params;         /* kernelParams, or NULL */
	const uint8_t *buffer; /* extra's CU_LAUNCH_PARAM_BUFFER_POINTER, or NULL */
	size_t buffer_size;
};
int gg_device_graph_nodes(const void *graph, void **nodes, size_t *n);
int gg_device_graph_node_type(const void *node, int *type);
int gg_device_graph_kernel(const void *node, struct gg_device_kernel_node *out);
int gg_device_graph_child(const void *node, void **graph);
/* The same, of the CUDA_KERNEL_NODE_PARAMS (_v2 when @v2) @params the
 * application gave. */
void gg_device_kernel_node_of(const void *params, bool v2, struct gg_device_kernel_node *out);

/* Whether @stream is being captured into a graph. */
int gg_device_capturing(void *stream, bool *capturing);
/* Whether @stream is in a capture that goes on (not invalidated, not implicit). */
int gg_device_capture_active(void *stream, bool *active);

/* An event recorded on @stream after the work queued so far, in @ctx;
 * gg_device_event_done: 1 when that work is done, 0 while it is not. */
int gg_device_event_after(void *ctx, void *stream, void **event);
int gg_device_event_done(void *ctx, void *event);
int gg_device_event_destroy(void *ctx, void *event);
/* Wait until the work before @event is done. */
int gg_device_event_wait(void *ctx, void *event);

/* Hand the allocation at @ptr back to the driver, in @ctx: cuMemFreeAsync
 * on @stream, or cuMemFree_v2 when @stream is NULL (the quarantine's
 * releases, redzone/quarantine.c). */
int gg_device_free(void *ctx, void *stream, uint64_t ptr);

/* Launches. The driver's layout of parameter @i of a function (@kernel
 * false) or CUkernel: -EINVAL past the last one (cuda.h), -ENOSYS when the
 * driver cannot say (before CUDA 12.4). */
int gg_device_param_info(const void *handle, bool kernel, size_t i, size_t *offset, size_t *size);

/* The driver's name of a function or CUkernel (its string, the driver's). */
int gg_device_kernel_name(const void *handle, bool kernel, const char **name);

/* The allocation holding @ptr, in the current context: its base and size. */
int gg_device_range(uint64_t ptr, uint64_t *base, size_t *size);

/* The bytes of one element of the CUDA array @array (a CUarray): its
 * format's times its channels. -EINVAL for a format without one. */
int gg_device_array_element(const void *array, size_t *bytes);

/* The current context's device's compute capability, major * 10 + minor. */
int gg_device_compute_capability(unsigned *cc);

/* Wait for the work queued on @stream, in the current context. */
int gg_device_stream_wait(void *stream);

#endif
