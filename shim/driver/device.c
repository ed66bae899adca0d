/* The shim's own driver calls (device.h). The driver object is the one the
 * hooks resolved; each function is looked up there once. */
#include "driver/device.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/gg.h"
#include "base/loader.h"
#include "driver/real.h"

enum driver_id {
#define GG_DRIVER(name, pfn) DRV_##name,
#include "driver/device.def"
#undef GG_DRIVER
	DRV_COUNT
};

static const char *const driver_names[DRV_COUNT] = {
#define GG_DRIVER(name, pfn) [DRV_##name] = #name,
#include "driver/device.def"
#undef GG_DRIVER
};

#define ABSENT ((void *)1) /* the driver has no such function: asked once */

static struct {
	_Atomic(void *) driver;        /* a handle on the driver object: set once from NULL */
	_Atomic(void *) fn[DRV_COUNT]; /* lock-free: set once from NULL (ABSENT included) */
} device_state;

/* A handle on the driver object, found beside a hooked function we already
 * resolved; kept for good (real.c pins that object anyway), so the loader
 * is asked once. */
static void *driver_handle(void)
{
	void *h = atomic_load_explicit(&device_state.driver, memory_order_acquire);
	void *anchor, *expected = NULL;
	const char *path;

	if (GG_LIKELY(h))
		return h;
	anchor = gg_real_get(GG_ID_cuMemAlloc_v2);
	/* "" is the executable: dlopen would answer with the global scope. */
	if (!anchor || !gg_loader_may_open() || !(path = gg_real_object_name(anchor)) || !*path ||
	    !(h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD)))
		return NULL;
	if (!atomic_compare_exchange_strong(&device_state.driver, &expected, h)) {
		dlclose(h); /* another thread's is kept */
		h = expected;
	}
	return h;
}

/* The driver's @id, looked up on its first use only: set-up and a module
 * load need three of these functions, and each dlsym costs about 800
 * instructions. One an older driver lacks is remembered absent, not asked
 * again. */
static __attribute__((noinline)) void *resolve(enum driver_id id)
{
	void *(*real_dlsym)(void *, const char *);
	void *h, *fn, *expected = NULL;

	real_dlsym = (void *(*)(void *, const char *))gg_real_dlsym();
	if (!real_dlsym || !(h = driver_handle()))
		return NULL;
	fn = real_dlsym(h, driver_names[id]);
	(void)atomic_compare_exchange_strong(&device_state.fn[id], &expected, fn ? fn : ABSENT);
	fn = atomic_load_explicit(&device_state.fn[id], memory_order_acquire);
	return fn == ABSENT ? NULL : fn;
}

/* Inline: every driver call of the shim asks (the resolved case is a load). */
static inline void *lookup(enum driver_id id)
{
	void *fn = atomic_load_explicit(&device_state.fn[id], memory_order_acquire);

	if (GG_LIKELY(fn))
		return fn == ABSENT ? NULL : fn;
	return resolve(id);
}

#define GG_DRIVER(name, pfn) typedef pfn gg_driver_##name##_fn;
#include "driver/device.def"
#undef GG_DRIVER

/* Call the driver's @name: 0, -EIO when it refused, -ENOSYS when it has none. */
#define CALL(name, args)                                                              \
	({                                                                            \
		gg_driver_##name##_fn f_ = (gg_driver_##name##_fn)lookup(DRV_##name); \
		f_ ? (f_ args == CUDA_SUCCESS ? 0 : -EIO) : -ENOSYS;                  \
	})

/* Functions the shim can do without (older drivers): gg_device_resolve()
 * does not insist on them. */
static bool optional(enum driver_id id)
{
	return id == DRV_cuMemcpyBatchAsync_v2 || id == DRV_cuMemcpyBatchAsync ||
	       id == DRV_cuStreamIsCapturing || id == DRV_cuThreadExchangeStreamCaptureMode ||
	       id >= DRV_cuMemGetAddressRange_v2; /* launches' and images' */
}

int gg_device_resolve(const char **missing)
{
	int err = 0;

	for (int id = 0; id < DRV_COUNT; id++) {
		if (!lookup((enum driver_id)id) && !optional((enum driver_id)id)) {
			if (!err && missing)
				*missing = driver_names[id];
			err = -ENOSYS;
		}
	}
	return err;
}

int gg_device_context(void **ctx)
{
	CUcontext c = NULL;
	int err = CALL(cuCtxGetCurrent, (&c));

	if (err)
		return err;
	if (!c)
		return -ENOENT;
	*ctx = c;
	return 0;
}

int gg_device_current(void **ctx, int *dev)
{
	void *c = NULL;
	CUdevice d = 0;
	int err = gg_device_context(&c);

	if (err)
		return err;
	if ((err = CALL(cuCtxGetDevice, (&d))))
		return err;
	*ctx = c;
	*dev = d;
	return 0;
}

/* The application's capture mode on this thread, while the shim's own calls
 * run in relaxed mode: in global or thread-local mode a capture under way
 * would refuse them, and be invalidated by them (cuda.h,
 * cuThreadExchangeStreamCaptureMode: what NVIDIA asks of libraries). */
static __thread struct {
	CUstreamCaptureMode mode;
	bool exchanged; /* @mode holds the application's, to give back */
} capture_mode __attribute__((tls_model("initial-exec")));

/* Make @ctx current for the duration of a call (NULL: the current one is,
 * and two driver calls are saved); pairs with pop(@ctx). */
static int push(void *ctx)
{
	int err = ctx ? CALL(cuCtxPushCurrent_v2, ((CUcontext)ctx)) : 0;

	capture_mode.mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	capture_mode.exchanged = !err && !CALL(cuThreadExchangeStreamCaptureMode, (&capture_mode.mode));
	return err;
}

static void pop(void *ctx)
{
	CUcontext c;

	if (capture_mode.exchanged)
		(void)CALL(cuThreadExchangeStreamCaptureMode, (&capture_mode.mode));
	if (ctx)
		(void)CALL(cuCtxPopCurrent_v2, (&c));
}

int gg_device_stream_create(void *ctx, void **stream)
{
	CUstream s = NULL;
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuStreamCreate, (&s, CU_STREAM_NON_BLOCKING));
	pop(ctx);
	if (!err)
		*stream = s;
	return err;
}

int gg_device_stream_destroy(void *ctx, void *stream)
{
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuStreamDestroy_v2, ((CUstream)stream));
	pop(ctx);
	return err;
}

int gg_device_fill(void *ctx, void *stream, uint64_t ptr, uint8_t value, size_t n, bool wait)
{
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuMemsetD8Async, ((CUdeviceptr)ptr, value, n, (CUstream)stream));
	if (!err && wait)
		err = CALL(cuStreamSynchronize, ((CUstream)stream));
	pop(ctx);
	return err;
}

/* Whether the legacy stream may not be used now: asking about it while a
 * blocking stream is captured is an error that invalidates nothing. */
bool gg_device_legacy_capturing(void)
{
	bool capturing;

	return gg_device_capturing(CU_STREAM_LEGACY, &capturing) || capturing;
}

int gg_device_read(void *ctx, void *stream, uint64_t ptr, void *dst, size_t n)
{
	void *cur = NULL;
	int err;

	/* Read in its own context, as a free usually is: one call, not two. */
	if (ctx && !gg_device_context(&cur) && cur == ctx)
		ctx = NULL;
	err = push(ctx);

	if (err)
		return err;
	if (stream) {
		err = CALL(cuMemcpyDtoHAsync_v2, (dst, (CUdeviceptr)ptr, n, (CUstream)stream));
		if (!err)
			err = CALL(cuStreamSynchronize, ((CUstream)stream));
	} else if (gg_device_legacy_capturing()) {
		/* A blocking stream is being captured: the legacy stream would join
		 * the capture and invalidate it (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
		err = -EBUSY;
	} else {
		err = CALL(cuMemcpyDtoH_v2, (dst, (CUdeviceptr)ptr, n));
	}
	pop(ctx);
	return err;
}

int gg_device_context_alive(void *ctx, bool *alive)
{
	gg_driver_cuCtxGetApiVersion_fn f = (gg_driver_cuCtxGetApiVersion_fn)lookup(
		DRV_cuCtxGetApiVersion);
	unsigned version = 0;
	CUresult rc;

	if (!f)
		return -ENOSYS;
	rc = f((CUcontext)ctx, &version);
	/* cuda.h: CUDA_ERROR_INVALID_CONTEXT for a context that is gone. */
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_CONTEXT &&
	    rc != CUDA_ERROR_CONTEXT_IS_DESTROYED)
		return -EIO;
	*alive = rc == CUDA_SUCCESS;
	return 0;
}

int gg_device_primary_active(int dev, bool *active)
{
	unsigned flags = 0;
	int on = 0;
	int err = CALL(cuDevicePrimaryCtxGetState, ((CUdevice)dev, &flags, &on));

	if (!err)
		*active = on != 0;
	return err;
}

int gg_device_primary(int dev, void **ctx)
{
	CUcontext c = NULL;
	bool active = false;
	int err = gg_device_primary_active(dev, &active);

	if (err)
		return err;
	if (!active)
		return -ENOENT;
	/* Retain and release at once: the handle, and the count as it was. */
	if ((err = CALL(cuDevicePrimaryCtxRetain, (&c, (CUdevice)dev))))
		return err;
	(void)CALL(cuDevicePrimaryCtxRelease_v2, ((CUdevice)dev));
	*ctx = c;
	return 0;
}

int gg_device_graph_nodes(const void *graph, void **nodes, size_t *n)
{
	return CALL(cuGraphGetNodes, ((CUgraph)graph, (CUgraphNode *)nodes, n));
}

int gg_device_graph_node_type(const void *node, int *type)
{
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	int err = CALL(cuGraphNodeGetType, ((CUgraphNode)node, &t));

	*type = (int)t;
	return err;
}

void gg_device_kernel_node_of(const void *params, bool v2, struct gg_device_kernel_node *out)
{
	/* The fields read are the same in _v1 and _v2 (kern follows them). */
	const CUDA_KERNEL_NODE_PARAMS_v1 *p = params;
	void **extra = p ? p->extra : NULL;

	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	out->fn = p->func;
	if (!out->fn && v2)
		out->fn = ((const CUDA_KERNEL_NODE_PARAMS_v2 *)params)->kern;
	out->params = p->kernelParams;
	for (int i = 0; extra && i < 16 && extra[2 * i] != CU_LAUNCH_PARAM_END; i++) {
		if (extra[2 * i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			out->buffer = extra[2 * i + 1];
		else if (extra[2 * i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[2 * i + 1])
			out->buffer_size = *(const size_t *)extra[2 * i + 1];
	}
}

/* Through cuGraphKernelNodeGetParams_v2 (a node of a CUkernel has no func
 * there, but kern), else the CUDA 10 form. The arrays are the node's. */
int gg_device_graph_kernel(const void *node, struct gg_device_kernel_node *out)
{
	CUDA_KERNEL_NODE_PARAMS_v2 p;
	int err;

	memset(&p, 0, sizeof(p));
	err = CALL(cuGraphKernelNodeGetParams_v2, ((CUgraphNode)node, &p));
	if (err == -ENOSYS)
		err = CALL(cuGraphKernelNodeGetParams,
			   ((CUgraphNode)node, (CUDA_KERNEL_NODE_PARAMS_v1 *)&p));
	if (err)
		return err;
	gg_device_kernel_node_of(&p, true, out);
	return 0;
}

int gg_device_graph_child(const void *node, void **graph)
{
	CUgraph g = NULL;
	int err = CALL(cuGraphChildGraphNodeGetGraph, ((CUgraphNode)node, &g));

	*graph = g;
	return err;
}

int gg_device_capturing(void *stream, bool *capturing)
{
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
	int err = CALL(cuStreamIsCapturing, ((CUstream)stream, &status));

	*capturing = !err && status != CU_STREAM_CAPTURE_STATUS_NONE;
	return err == -ENOSYS ? 0 : err; /* a driver without capture captures nothing */
}

int gg_device_capture_active(void *stream, bool *active)
{
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
	int err = CALL(cuStreamIsCapturing, ((CUstream)stream, &status));

	*active = !err && status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
	return err;
}

int gg_device_event_after(void *ctx, void *stream, void **event)
{
	CUevent e = NULL;
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuEventCreate, (&e, CU_EVENT_DISABLE_TIMING));
	if (!err && (err = CALL(cuEventRecord, (e, (CUstream)stream))))
		(void)CALL(cuEventDestroy_v2, (e));
	pop(ctx);
	if (!err)
		*event = e;
	return err;
}

int gg_device_event_done(void *ctx, void *event)
{
	gg_driver_cuEventQuery_fn query = (gg_driver_cuEventQuery_fn)lookup(DRV_cuEventQuery);
	CUresult rc;
	int err = push(ctx);

	if (err)
		return err;
	rc = query ? query((CUevent)event) : CUDA_ERROR_NOT_SUPPORTED;
	pop(ctx);
	if (rc == CUDA_SUCCESS)
		return 1;
	return rc == CUDA_ERROR_NOT_READY ? 0 : -EIO;
}

int gg_device_event_destroy(void *ctx, void *event)
{
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuEventDestroy_v2, ((CUevent)event));
	pop(ctx);
	return err;
}

int gg_device_event_wait(void *ctx, void *event)
{
	int err = push(ctx);

	if (err)
		return err;
	err = CALL(cuEventSynchronize, ((CUevent)event));
	pop(ctx);
	return err;
}

int gg_device_free(void *ctx, void *stream, uint64_t ptr)
{
	int err = push(ctx);

	if (err)
		return err;
	if (stream)
		err = CALL(cuMemFreeAsync, ((CUdeviceptr)ptr, (CUstream)stream));
	else
		err = CALL(cuMemFree_v2, ((CUdeviceptr)ptr));
	pop(ctx);
	return err;
}

int gg_device_read_batch(void *ctx, void *stream, const uint64_t *srcs, void *const *dsts,
			 const size_t *sizes, size_t count)
{
	gg_driver_cuMemcpyBatchAsync_v2_fn v2 = (gg_driver_cuMemcpyBatchAsync_v2_fn)lookup(
		DRV_cuMemcpyBatchAsync_v2);
	gg_driver_cuMemcpyBatchAsync_fn v1 = (gg_driver_cuMemcpyBatchAsync_fn)lookup(
		DRV_cuMemcpyBatchAsync);
	/* One attribute for every copy: ordinary stream ordering of the sources. */
	CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
	size_t attr_idx = 0, fail = 0;
	CUresult rc;
	int err;

	if (!v2 && !v1)
		return -ENOSYS;
	if ((err = push(ctx)))
		return err;
	/* Host destinations are plain addresses under unified addressing. */
	if (v2)
		rc = v2((CUdeviceptr *)dsts, (CUdeviceptr *)srcs, (size_t *)sizes, count, &attr,
			&attr_idx, 1, (CUstream)stream);
	else
		rc = v1((CUdeviceptr *)dsts, (CUdeviceptr *)srcs, (size_t *)sizes, count, &attr,
			&attr_idx, 1, &fail, (CUstream)stream);
	err = rc == CUDA_SUCCESS ? CALL(cuStreamSynchronize, ((CUstream)stream)) : -EIO;
	pop(ctx);
	return rc == CUDA_ERROR_NOT_SUPPORTED ? -ENOSYS : err;
}

/* ---- launches: kernels' parameters and names, and what they were given ---- */

int gg_device_param_info(const void *handle, bool kernel, size_t i, size_t *offset, size_t *size)
{
	CUresult rc;

	if (kernel) {
		gg_driver_cuKernelGetParamInfo_fn f = (gg_driver_cuKernelGetParamInfo_fn)lookup(
			DRV_cuKernelGetParamInfo);

		if (!f)
			return -ENOSYS;
		rc = f((CUkernel)handle, i, offset, size);
	} else {
		gg_driver_cuFuncGetParamInfo_fn f = (gg_driver_cuFuncGetParamInfo_fn)lookup(
			DRV_cuFuncGetParamInfo);

		if (!f)
			return -ENOSYS;
		rc = f((CUfunction)handle, i, offset, size);
	}
	/* cuda.h: CUDA_ERROR_INVALID_VALUE past the last parameter. */
	return rc == CUDA_SUCCESS               ? 0
	       : rc == CUDA_ERROR_INVALID_VALUE ? -EINVAL
	       : rc == CUDA_ERROR_NOT_SUPPORTED ? -ENOSYS
						: -EIO;
}

int gg_device_kernel_name(const void *handle, bool kernel, const char **name)
{
	*name = NULL;
	return kernel ? CALL(cuKernelGetName, (name, (CUkernel)handle))
		      : CALL(cuFuncGetName, (name, (CUfunction)handle));
}

int gg_device_kernel_library(const void *kernel, void **library)
{
	CUlibrary lib = NULL;
	int err = CALL(cuKernelGetLibrary, (&lib, (CUkernel)kernel));

	if (!err)
		*library = lib;
	return err;
}

int gg_device_range(uint64_t ptr, uint64_t *base, size_t *size)
{
	CUdeviceptr b = 0;
	int err = CALL(cuMemGetAddressRange_v2, (&b, size, (CUdeviceptr)ptr));

	if (!err)
		*base = b;
	return err;
}

int gg_device_array_element(const void *array, size_t *bytes)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	size_t size;
	int err = CALL(cuArray3DGetDescriptor_v2, (&d, (CUarray)(uintptr_t)array));

	if (err)
		return err;
	/* The plain formats; the packed, planar and compressed ones have no
	 * single element size here. */
	switch (d.Format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		size = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		size = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		size = 4;
		break;
	default:
		return -EINVAL;
	}
	if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4)
		return -EINVAL;
	*bytes = size * d.NumChannels;
	return 0;
}

int gg_device_compute_capability(unsigned *cc)
{
	void *ctx;
	int dev, major = 0, minor = 0, err = gg_device_current(&ctx, &dev);

	if (!err)
		err = CALL(cuDeviceGetAttribute,
			   (&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, (CUdevice)dev));
	if (!err)
		err = CALL(cuDeviceGetAttribute,
			   (&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, (CUdevice)dev));
	if (!err)
		*cc = (unsigned)(major * 10 + minor);
	return err;
}

int gg_device_stream_wait(void *stream)
{
	/* In relaxed capture mode, as the shim's other calls (push()): a
	 * synchronize made while another thread captures in global mode would
	 * invalidate that capture. */
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	bool exchanged = !CALL(cuThreadExchangeStreamCaptureMode, (&mode));
	int err = CALL(cuStreamSynchronize, ((CUstream)stream));

	if (exchanged)
		(void)CALL(cuThreadExchangeStreamCaptureMode, (&mode));
	return err;
}
