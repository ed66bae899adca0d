/* The exported driver entry points. Each only unpacks its arguments and
 * forwards: to the real driver function, then to audit or redzone with what
 * happened. Policy lives in those modules. */
#include <stdatomic.h>

#include "audit/audit.h"
#include "boundary/boundary.h"
#include "handles/graphs.h"
#include "base/gg.h"
#include "hooks/hooks.h"
#include "redzone/adjacency.h"
#include "redzone/quarantine.h"
#include "redzone/redzone.h"
#include "redzone/replays.h"
#include "report/report.h"
#include "start/start.h"
#include "hooks/work.h"

#define REAL(name) ((gg_pfn_##name)gg_real_get(GG_ID_##name))

/* Every hook starts so: resolve, and pass straight through when inactive. */
#define ENTER_OR_PASS(name, args)                \
	gg_pfn_##name real_ = REAL(name);        \
	if (GG_UNLIKELY(!real_))                 \
		return CUDA_ERROR_NOT_SUPPORTED; \
	if (!gg_hooks_enter(GG_ID_##name))       \
	return real_ args

/* A call that can run out of device memory (redzone/quarantine.c,
 * gg_quarantine_drains) and did: asked again once the quarantine gave back
 * what it held, so the application never sees an out-of-memory error it
 * would not have had. A constant test for every other hook. */
#define DRAINED(name, rc, call)                                                       \
	do {                                                                          \
		if (GG_UNLIKELY((rc) == CUDA_ERROR_OUT_OF_MEMORY) &&                  \
		    gg_quarantine_drains(GG_ID_##name) && gg_redzone_out_of_memory()) \
			(rc) = (call);                                                \
	} while (0)

/* The common shape: @before, the call (with @own_args, which may differ from
 * the caller's @args), @after. */
#define FORWARD_WITH(name, args, own_args, before, after) \
	ENTER_OR_PASS(name, args);                        \
	before;                                           \
	CUresult rc = real_ own_args;                     \
	DRAINED(name, rc, real_ own_args);                \
	after;                                            \
	gg_hooks_leave();                                 \
	return rc

#define NOTHING ((void)0)
#define FORWARD(name, args, after) FORWARD_WITH(name, args, args, NOTHING, after)
#define FORWARD_AS(name, args, own_args, after) FORWARD_WITH(name, args, own_args, NOTHING, after)
#define FORWARD_AFTER_DOING(name, args, before) FORWARD_WITH(name, args, args, before, NOTHING)

/* The application's return address: the entry point jumped to the work
 * function, which so returns where the application called (where a C entry
 * called it instead, this is the shim's, and the call site is unwound). */
#define GG_CALLER() ((uintptr_t)__builtin_return_address(0))
/* The work function's frame, whose return address GG_CALLER() is: where the
 * stack depot reads a stack seen before (callsite/depot.c). */
#define GG_FRAME() ((const void *)__builtin_frame_address(0))

/* Allocations take their index before the driver is asked (failed calls
 * count). A request that runs out of memory is asked again once the
 * quarantine gave back what it held, and a padded one that still does is
 * retried as asked, so the application never sees an error it would not
 * have had. */
#define FORWARD_ALLOC(name, args, padded_args, dptr, bytes, stream, async)                    \
	ENTER_OR_PASS(name, args);                                                            \
	uint64_t index = gg_redzone_next_index();                                             \
	struct gg_redzone_ticket ticket;                                                      \
	size_t pad = gg_adjacency_band(                                                       \
		bytes, gg_redzone_request(index, bytes, (void *)(stream), async, &ticket));   \
	ticket.caller = GG_CALLER();                                                          \
	ticket.frame = GG_FRAME();                                                            \
	CUresult rc = pad ? real_ padded_args : real_ args;                                   \
	if (GG_UNLIKELY(rc == CUDA_ERROR_OUT_OF_MEMORY)) {                                    \
		if (gg_redzone_out_of_memory())                                               \
			rc = pad ? real_ padded_args : real_ args;                            \
		if (rc == CUDA_ERROR_OUT_OF_MEMORY && pad) {                                  \
			gg_redzone_fallback(&ticket);                                         \
			pad = 0;                                                              \
			rc = real_ args;                                                      \
		}                                                                             \
	}                                                                                     \
	gg_redzone_alloc(#name, index, bytes, pad, rc == CUDA_SUCCESS && dptr ? *dptr : 0,    \
			 (void *)(stream), async, &ticket, (int)rc, gg_real_result_name(rc)); \
	gg_hooks_leave();                                                                     \
	return rc

/* Frees: the band is checked before the memory is released, and forgotten
 * only when the driver did release it. A quarantined allocation is not
 * released at all (CUDA_SUCCESS), and a free of one already quarantined is
 * answered as the driver answers a pointer freed before. */
#define FORWARD_FREE(name, args, ptr, stream, async)                             \
	struct gg_redzone_free ticket;                                           \
	ENTER_OR_PASS(name, args);                                               \
	ticket.caller = GG_CALLER();                                             \
	ticket.frame = GG_FRAME();                                               \
	gg_redzone_freeing(ptr, (void *)(stream), async, &ticket);               \
	CUresult rc;                                                             \
	if (GG_LIKELY(!(ticket.quarantined | ticket.twice)))                     \
		rc = real_ args;                                                 \
	else                                                                     \
		rc = ticket.quarantined  ? CUDA_SUCCESS                          \
		     : ticket.no_context ? CUDA_ERROR_INVALID_CONTEXT            \
					 : CUDA_ERROR_INVALID_VALUE;             \
	gg_redzone_freed(#name, ptr, &ticket, (int)rc, gg_real_result_name(rc)); \
	gg_hooks_leave();                                                        \
	return rc

#define AUDIT_LOOKUP(api, kind, handle, kname, out)                                 \
	gg_audit_lookup(api, kind, handle, kname, (int)rc, gg_real_result_name(rc), \
			rc == CUDA_SUCCESS && (out) ? (const void *)*(out) : NULL)
/* A load, as the driver answered it: named, listed, and a failure audited. */
#define LOADED_FILE(kind, handle_ptr, path)                              \
	gg_audit_load_file(kind, path, (int)rc, gg_real_result_name(rc), \
			   rc == CUDA_SUCCESS && (handle_ptr) ? (const void *)*(handle_ptr) : NULL)
#define LOADED_IMAGE(kind, handle_ptr, image)                              \
	gg_audit_load_image(kind, image, (int)rc, gg_real_result_name(rc), \
			    rc == CUDA_SUCCESS && (handle_ptr) ? (const void *)*(handle_ptr) : NULL)

/* Kernel lookups. */

GG_WORK CUresult gg_hooks_work_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	FORWARD(cuModuleGetFunction, (hfunc, hmod, name),
		AUDIT_LOOKUP("cuModuleGetFunction", GG_AUDIT_MODULE, hmod, name, hfunc));
}

GG_WORK CUresult gg_hooks_work_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
						  const char *name)
{
	FORWARD(cuLibraryGetKernel, (pKernel, library, name),
		AUDIT_LOOKUP("cuLibraryGetKernel", GG_AUDIT_LIBRARY, library, name, pKernel));
}

/* Lazy loading: a library's kernel or module is materialised in the current
 * context here, where an image with no code for this GPU fails
 * (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */

GG_WORK CUresult gg_hooks_work_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	FORWARD(cuKernelGetFunction, (pFunc, kernel),
		gg_audit_kernel_function(kernel, (int)rc, gg_real_result_name(rc),
					 rc == CUDA_SUCCESS && pFunc ? (const void *)*pFunc : NULL));
}

GG_WORK CUresult gg_hooks_work_cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	FORWARD(cuLibraryGetModule, (pMod, library),
		gg_audit_library_module(library, (int)rc, gg_real_result_name(rc),
					rc == CUDA_SUCCESS && pMod ? (const void *)*pMod : NULL));
}

GG_WORK CUresult gg_hooks_work_cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
							 CUlibrary lib)
{
	FORWARD(cuLibraryEnumerateKernels, (kernels, numKernels, lib),
		if (rc == CUDA_SUCCESS && kernels)
			gg_audit_kernels_enumerated((const void *const *)kernels, numKernels));
}

/* Module and library loading: the audit names what was loaded. */

GG_WORK CUresult gg_hooks_work_cuModuleLoad(CUmodule *module, const char *fname)
{
	FORWARD(cuModuleLoad, (module, fname), LOADED_FILE(GG_AUDIT_MODULE, module, fname));
}

GG_WORK CUresult gg_hooks_work_cuModuleLoadData(CUmodule *module, const void *image)
{
	FORWARD(cuModuleLoadData, (module, image), LOADED_IMAGE(GG_AUDIT_MODULE, module, image));
}

GG_WORK CUresult gg_hooks_work_cuModuleLoadDataEx(CUmodule *module, const void *image,
						  unsigned int numOptions, CUjit_option *options,
						  void **optionValues)
{
	FORWARD(cuModuleLoadDataEx, (module, image, numOptions, options, optionValues),
		LOADED_IMAGE(GG_AUDIT_MODULE, module, image));
}

GG_WORK CUresult gg_hooks_work_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	FORWARD(cuModuleLoadFatBinary, (module, fatCubin),
		LOADED_IMAGE(GG_AUDIT_MODULE, module, fatCubin));
}

/* Forgotten before the driver can hand the same handle value to another thread. */
GG_WORK CUresult gg_hooks_work_cuModuleUnload(CUmodule hmod)
{
	FORWARD_AFTER_DOING(cuModuleUnload, (hmod), gg_audit_unloaded(GG_AUDIT_MODULE, hmod));
}

GG_WORK CUresult gg_hooks_work_cuLibraryLoadData(CUlibrary *library, const void *code,
						 CUjit_option *jitOptions, void **jitOptionsValues,
						 unsigned int numJitOptions,
						 CUlibraryOption *libraryOptions,
						 void **libraryOptionValues,
						 unsigned int numLibraryOptions)
{
	FORWARD(cuLibraryLoadData,
		(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
		 libraryOptionValues, numLibraryOptions),
		LOADED_IMAGE(GG_AUDIT_LIBRARY, library, code));
}

GG_WORK CUresult gg_hooks_work_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
						     CUjit_option *jitOptions, void **jitOptionsValues,
						     unsigned int numJitOptions,
						     CUlibraryOption *libraryOptions,
						     void **libraryOptionValues,
						     unsigned int numLibraryOptions)
{
	FORWARD(cuLibraryLoadFromFile,
		(library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
		 libraryOptionValues, numLibraryOptions),
		LOADED_FILE(GG_AUDIT_LIBRARY, library, fileName));
}

GG_WORK CUresult gg_hooks_work_cuLibraryUnload(CUlibrary library)
{
	FORWARD_AFTER_DOING(cuLibraryUnload, (library), gg_audit_unloaded(GG_AUDIT_LIBRARY, library));
}

/* Allocations. */

GG_WORK CUresult gg_hooks_work_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	FORWARD_ALLOC(cuMemAlloc_v2, (dptr, bytesize), (dptr, bytesize + pad), dptr, bytesize, NULL,
		      false);
}

GG_WORK CUresult gg_hooks_work_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocAsync, (dptr, bytesize, hStream), (dptr, bytesize + pad, hStream), dptr,
		      bytesize, hStream, true);
}

GG_WORK CUresult gg_hooks_work_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
						    CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocAsync_ptsz, (dptr, bytesize, hStream), (dptr, bytesize + pad, hStream),
		      dptr, bytesize, hStream, true);
}

/* A pitched allocation's band follows its last row: rows enough for the band
 * are asked for (the pitch is at least the width), and the application gets
 * the pitch it would have had. */
GG_WORK CUresult gg_hooks_work_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
						  size_t WidthInBytes, size_t Height,
						  unsigned int ElementSizeBytes)
{
	ENTER_OR_PASS(cuMemAllocPitch_v2, (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	uint64_t index = gg_redzone_next_index();
	struct gg_redzone_ticket ticket;
	size_t estimate = WidthInBytes && Height <= SIZE_MAX / WidthInBytes ? WidthInBytes * Height : 0;
	size_t pad = gg_redzone_request(index, estimate, NULL, false, &ticket);
	ticket.caller = GG_CALLER();
	ticket.frame = GG_FRAME();
	size_t rows = pad ? (pad + WidthInBytes - 1) / WidthInBytes : 0;
	CUresult rc;

	if (pad && Height > SIZE_MAX - rows)
		pad = 0, rows = 0, ticket.reason = GG_REASON_overflow;
	rc = real_(dptr, pPitch, WidthInBytes, Height + rows, ElementSizeBytes);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY && gg_redzone_out_of_memory())
		rc = real_(dptr, pPitch, WidthInBytes, Height + rows, ElementSizeBytes);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY && pad) {
		gg_redzone_fallback(&ticket);
		pad = 0;
		rc = real_(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	}
	gg_redzone_alloc("cuMemAllocPitch_v2", index,
			 rc == CUDA_SUCCESS && pPitch ? *pPitch * Height : estimate, pad,
			 rc == CUDA_SUCCESS && dptr ? *dptr : 0, NULL, false, &ticket, (int)rc,
			 gg_real_result_name(rc));
	/* Its spare rows after the band are padding too (redzone/ranges.c). */
	if (pad && rc == CUDA_SUCCESS && dptr && pPitch)
		gg_redzone_reaches(*dptr, *dptr + *pPitch * (Height + rows));
	gg_hooks_leave();
	return rc;
}

GG_WORK CUresult gg_hooks_work_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	FORWARD_ALLOC(cuMemAllocManaged, (dptr, bytesize, flags), (dptr, bytesize + pad, flags), dptr,
		      bytesize, NULL, false);
}

GG_WORK CUresult gg_hooks_work_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
						       CUmemoryPool pool, CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocFromPoolAsync, (dptr, bytesize, pool, hStream),
		      (dptr, bytesize + pad, pool, hStream), dptr, bytesize, hStream, true);
}

GG_WORK CUresult gg_hooks_work_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
							    CUmemoryPool pool, CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocFromPoolAsync_ptsz, (dptr, bytesize, pool, hStream),
		      (dptr, bytesize + pad, pool, hStream), dptr, bytesize, hStream, true);
}

/* Virtual memory: counted, never guarded (docs/how-it-works.md, "Red zones": Coverage). */

GG_WORK CUresult gg_hooks_work_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
					   const CUmemAllocationProp *prop, unsigned long long flags)
{
	FORWARD(cuMemCreate, (handle, size, prop, flags),
		(rc == CUDA_SUCCESS ? gg_redzone_vmm(size, 0) : (void)0));
}

GG_WORK CUresult gg_hooks_work_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	FORWARD(cuMemRelease, (handle), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
					CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	FORWARD(cuMemMap, (ptr, size, offset, handle, flags),
		(rc == CUDA_SUCCESS ? gg_redzone_vmm(0, size) : (void)0));
}

GG_WORK CUresult gg_hooks_work_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	FORWARD(cuMemUnmap, (ptr, size), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuMemFree_v2(CUdeviceptr dptr)
{
	FORWARD_FREE(cuMemFree_v2, (dptr), dptr, NULL, false);
}

GG_WORK CUresult gg_hooks_work_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	FORWARD_FREE(cuMemFreeAsync, (dptr, hStream), dptr, hStream, true);
}

GG_WORK CUresult gg_hooks_work_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	FORWARD_FREE(cuMemFreeAsync_ptsz, (dptr, hStream), dptr, hStream, true);
}

/* Queries that must not reveal padding: a padded allocation reports the
 * user's size, and an address inside a band is one the driver would not know. */

/* Whether [base, base+size) is a padded allocation whose band holds @ptr;
 * *user gets the application's size when it is padded at all. */
static bool hide_padding(CUdeviceptr base, CUdeviceptr ptr, uint64_t *user)
{
	return gg_redzone_user_size(base, user) == 0 && ptr >= base + *user;
}

GG_WORK CUresult gg_hooks_work_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
						       CUdeviceptr dptr)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	uint64_t user;

	/* Either out-pointer may be NULL; the base is needed to find the zone. */
	FORWARD_AS(cuMemGetAddressRange_v2, (pbase, psize, dptr), (&base, &size, dptr), ({
			   if (rc == CUDA_SUCCESS && hide_padding(base, dptr, &user))
				   rc = CUDA_ERROR_NOT_FOUND;
			   else if (rc == CUDA_SUCCESS && gg_redzone_user_size(base, &user) == 0)
				   size = (size_t)user;
			   if (rc == CUDA_SUCCESS && pbase)
				   *pbase = base;
			   if (rc == CUDA_SUCCESS && psize)
				   *psize = size;
		   }));
}

/* The allocation holding @ptr, through the driver's own range query. */
static bool range_of(CUdeviceptr ptr, CUdeviceptr *base)
{
	gg_pfn_cuMemGetAddressRange_v2 range = REAL(cuMemGetAddressRange_v2);
	size_t size;

	return range && range(base, &size, ptr) == CUDA_SUCCESS;
}

GG_WORK CUresult gg_hooks_work_cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
						     CUdeviceptr ptr)
{
	bool size_query = attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE && data;
	size_t size = 0;
	CUdeviceptr base;
	uint64_t user;

	/* The size goes through a local, so a band address leaves *data untouched. */
	FORWARD_AS(cuPointerGetAttribute, (data, attribute, ptr),
		   (size_query ? (void *)&size : data, attribute, ptr), ({
			   if (rc == CUDA_SUCCESS && size_query) {
				   if (range_of(ptr, &base) && gg_redzone_user_size(base, &user) == 0) {
					   if (ptr >= base + user)
						   rc = CUDA_ERROR_INVALID_VALUE;
					   else
						   size = (size_t)user;
				   }
				   if (rc == CUDA_SUCCESS)
					   *(size_t *)data = size;
			   }
		   }));
}

GG_WORK CUresult gg_hooks_work_cuPointerGetAttributes(unsigned int numAttributes,
						      CUpointer_attribute *attributes, void **data,
						      CUdeviceptr ptr)
{
	CUdeviceptr base;
	uint64_t user;

	FORWARD(cuPointerGetAttributes, (numAttributes, attributes, data, ptr), ({
			for (unsigned i = 0;
			     rc == CUDA_SUCCESS && attributes && data && i < numAttributes; i++) {
				if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE && data[i] &&
				    range_of(ptr, &base) && gg_redzone_user_size(base, &user) == 0)
					*(size_t *)data[i] = ptr >= base + user ? 0 : (size_t)user;
			}
		}));
}

/* Launches and synchronisation: the boundaries' events. launch:N fires before
 * the N-th launch is forwarded, sync:N after the N-th synchronize returns. */

#define LAUNCH_PARAMS                                                                      \
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
		unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,    \
		unsigned int sharedMemBytes, CUstream hStream, void **kernelParams
#define LAUNCH_ARGS                                                                                \
	f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
		kernelParams

/* A launch's stream (@ptsz: a NULL stream is the per-thread one). */
#define STREAM_OF(stream_, ptsz_) \
	((stream_) || !(ptsz_) ? (void *)(stream_) : (void *)CU_STREAM_PER_THREAD)
/* The launch's index (launch:N counts the same), its dangling pointers
 * (before it can run), then the call; what the driver answered goes to the
 * audit with the kernel, and a launch it took to the red zones with what it
 * was given. */
#define LAUNCH_OF(fn_, params_, extra_, stream_, ptsz_)                    \
	(&(struct gg_redzone_launch){ .fn = (fn_),                         \
				      .params = (params_),                 \
				      .extra = (extra_),                   \
				      .index = index,                      \
				      .stream = STREAM_OF(stream_, ptsz_), \
				      .dangling_checked = true })
#define FORWARD_LAUNCH(name, args, fn_, params_, extra_, stream_, ptsz_)                             \
	ENTER_OR_PASS(name, args);                                                                   \
	if (GG_UNLIKELY(gg_graphs_captured(STREAM_OF(stream_, ptsz_)))) {                            \
		gg_hooks_leave(); /* captured: it runs when its graph is replayed */                 \
		return real_ args;                                                                   \
	}                                                                                            \
	uint64_t index = gg_boundary_on_launch();                                                    \
	bool settled = false;                                                                        \
	if (GG_UNLIKELY(gg_quarantine_any()))                                                        \
		settled = gg_redzone_launching(LAUNCH_OF(fn_, params_, extra_, stream_, ptsz_));     \
	CUresult rc = real_ args;                                                                    \
	gg_audit_launched((const void *)(fn_), index, (int)rc, rc ? gg_real_result_name(rc) : NULL); \
	if (rc == CUDA_SUCCESS && !settled)                                                          \
		gg_redzone_launched(LAUNCH_OF(fn_, params_, extra_, stream_, ptsz_));                \
	gg_hooks_leave();                                                                            \
	return rc

GG_WORK CUresult gg_hooks_work_cuLaunchKernel(LAUNCH_PARAMS, void **extra)
{
	FORWARD_LAUNCH(cuLaunchKernel, (LAUNCH_ARGS, extra), f, kernelParams, extra, hStream, false);
}

GG_WORK CUresult gg_hooks_work_cuLaunchKernel_ptsz(LAUNCH_PARAMS, void **extra)
{
	FORWARD_LAUNCH(cuLaunchKernel_ptsz, (LAUNCH_ARGS, extra), f, kernelParams, extra, hStream,
		       true);
}

GG_WORK CUresult gg_hooks_work_cuLaunchCooperativeKernel(LAUNCH_PARAMS)
{
	FORWARD_LAUNCH(cuLaunchCooperativeKernel, (LAUNCH_ARGS), f, kernelParams, NULL, hStream, false);
}

GG_WORK CUresult gg_hooks_work_cuLaunchCooperativeKernel_ptsz(LAUNCH_PARAMS)
{
	FORWARD_LAUNCH(cuLaunchCooperativeKernel_ptsz, (LAUNCH_ARGS), f, kernelParams, NULL, hStream,
		       true);
}

GG_WORK CUresult gg_hooks_work_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
						void **kernelParams, void **extra)
{
	FORWARD_LAUNCH(cuLaunchKernelEx, (config, f, kernelParams, extra), f, kernelParams, extra,
		       config ? config->hStream : NULL, false);
}

GG_WORK CUresult gg_hooks_work_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
						     void **kernelParams, void **extra)
{
	FORWARD_LAUNCH(cuLaunchKernelEx_ptsz, (config, f, kernelParams, extra), f, kernelParams, extra,
		       config ? config->hStream : NULL, true);
}

/* CUDA graphs (handles/graphs.c): an executable graph's kernel nodes are
 * read from the driver when it is made or updated, and each replay is a
 * launch of each of them (docs/how-it-works.md, "CUDA graphs"): indices and launch:N before it is
 * forwarded, suspects (unless nothing changed since its last replay) before
 * too, so a dangling launch is said before the graph runs; its check after. */

#define FORWARD_INSTANTIATE(name, args, exec_ptr, graph, device)                                       \
	FORWARD(name, args,                                                                            \
		(rc == CUDA_SUCCESS && (exec_ptr) ? gg_graphs_instantiated(*(exec_ptr), graph, device) \
						  : (void)0))

/* The CUDA 10 form and its _v2, the same arguments. */
#define INSTANTIATE_LOGGED(name)                                                                     \
	GG_WORK CUresult gg_hooks_work_##name(CUgraphExec *phGraphExec, CUgraph hGraph,              \
					      CUgraphNode *phErrorNode, char *logBuffer,             \
					      size_t bufferSize)                                     \
	{                                                                                            \
		FORWARD_INSTANTIATE(name, (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), \
				    phGraphExec, hGraph, false);                                     \
	}
INSTANTIATE_LOGGED(cuGraphInstantiate)
INSTANTIATE_LOGGED(cuGraphInstantiate_v2)

GG_WORK CUresult gg_hooks_work_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
							   unsigned long long flags)
{
	FORWARD_INSTANTIATE(cuGraphInstantiateWithFlags, (phGraphExec, hGraph, flags), phGraphExec,
			    hGraph, flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
}

/* Each with parameters twice: the entry point and its per-thread-stream form. */
#define INSTANTIATE_WITH_PARAMS(name)                                                                  \
	GG_WORK CUresult gg_hooks_work_##name(CUgraphExec *phGraphExec, CUgraph hGraph,                \
					      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)        \
	{                                                                                              \
		FORWARD_INSTANTIATE(name, (phGraphExec, hGraph, instantiateParams), phGraphExec,       \
				    hGraph,                                                            \
				    instantiateParams && (instantiateParams->flags &                   \
							  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)); \
	}
INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams)
INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams_ptsz)

/* An update that succeeded gave the executable graph @hGraph's parameters. */
GG_WORK CUresult gg_hooks_work_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
						 CUgraphNode *hErrorNode_out,
						 CUgraphExecUpdateResult *updateResult_out)
{
	FORWARD(cuGraphExecUpdate, (hGraphExec, hGraph, hErrorNode_out, updateResult_out),
		(rc == CUDA_SUCCESS ? gg_graphs_instantiated(hGraphExec, hGraph, false) : (void)0));
}

GG_WORK CUresult gg_hooks_work_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
						    CUgraphExecUpdateResultInfo *resultInfo)
{
	FORWARD(cuGraphExecUpdate_v2, (hGraphExec, hGraph, resultInfo),
		(rc == CUDA_SUCCESS ? gg_graphs_instantiated(hGraphExec, hGraph, false) : (void)0));
}

/* The CUDA 10 parameters (v1) and CUDA 12's (v2, with kern and ctx). */
#define EXEC_KERNEL_NODE_SET(name, params_type, v2)                                                 \
	GG_WORK CUresult gg_hooks_work_##name(CUgraphExec hGraphExec, CUgraphNode hNode,            \
					      const params_type *nodeParams)                        \
	{                                                                                           \
		FORWARD(name, (hGraphExec, hNode, nodeParams),                                      \
			(rc == CUDA_SUCCESS ? gg_graphs_node_set(hGraphExec, hNode, nodeParams, v2) \
					    : (void)0));                                            \
	}
EXEC_KERNEL_NODE_SET(cuGraphExecKernelNodeSetParams, CUDA_KERNEL_NODE_PARAMS_v1, false)
EXEC_KERNEL_NODE_SET(cuGraphExecKernelNodeSetParams_v2, CUDA_KERNEL_NODE_PARAMS_v2, true)

/* The generic form (CUDA 12.2): only a kernel node's parameters are a launch's
 * (CUDA_KERNEL_NODE_PARAMS_v3 is the _v2 layout). */
GG_WORK CUresult gg_hooks_work_cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
							CUgraphNodeParams *nodeParams)
{
	_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v3) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2),
		       "the v3 kernel node parameters are v2's");
	FORWARD(cuGraphExecNodeSetParams, (hGraphExec, hNode, nodeParams),
		(rc == CUDA_SUCCESS && nodeParams && nodeParams->type == CU_GRAPH_NODE_TYPE_KERNEL
			 ? gg_graphs_node_set(hGraphExec, hNode, &nodeParams->kernel, true)
			 : (void)0));
}

/* Forgotten before the driver can hand the same handle to another thread. */
GG_WORK CUresult gg_hooks_work_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	FORWARD_AFTER_DOING(cuGraphExecDestroy, (hGraphExec), gg_graphs_destroyed(hGraphExec));
}

/* Each begin of capture: the entry point, its _v2 and ToGraph forms, and
 * each one's per-thread-stream form. */
#define BEGIN_CAPTURE(name, params, args)                                                        \
	GG_WORK CUresult gg_hooks_work_##name params                                             \
	{                                                                                        \
		FORWARD(name, args, (rc == CUDA_SUCCESS ? gg_graphs_capture_begun() : (void)0)); \
	}
#define CAPTURE_TO_GRAPH_PARAMS                                             \
	(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, \
	 const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode)
#define CAPTURE_TO_GRAPH_ARGS (hStream, hGraph, dependencies, dependencyData, numDependencies, mode)
BEGIN_CAPTURE(cuStreamBeginCapture, (CUstream hStream), (hStream))
BEGIN_CAPTURE(cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream))
BEGIN_CAPTURE(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode),
	      (hStream, mode))
BEGIN_CAPTURE(cuStreamBeginCaptureToGraph, CAPTURE_TO_GRAPH_PARAMS, CAPTURE_TO_GRAPH_ARGS)
BEGIN_CAPTURE(cuStreamBeginCaptureToGraph_ptsz, CAPTURE_TO_GRAPH_PARAMS, CAPTURE_TO_GRAPH_ARGS)

/* The end of a capture, and its per-thread-stream form (@ptsz_). */
#define END_CAPTURE(name, ptsz_)                                                           \
	GG_WORK CUresult gg_hooks_work_##name(CUstream hStream, CUgraph *phGraph)          \
	{                                                                                  \
		bool was = false;                                                          \
		FORWARD_WITH(name, (hStream, phGraph), (hStream, phGraph),                 \
			     was = gg_graphs_stream_in_capture(STREAM_OF(hStream, ptsz_)), \
			     gg_graphs_capture_ended(STREAM_OF(hStream, ptsz_), was));     \
	}
END_CAPTURE(cuStreamEndCapture, false)
END_CAPTURE(cuStreamEndCapture_ptsz, true)

/* A replay: its launches' indices, the zones given them unless its memo
 * holds (before it is forwarded); after, the ring of launches in flight gets
 * one entry for the whole replay, a refusal is each kernel's, a check.
 *
 * An unchanged replay (redzone/replays.h: its memo holds, all its nodes are
 * followed, nothing is checked after it) of the graph this thread replayed
 * last takes a path of its own, inline, with no call but the driver's (its
 * cost, BENCHMARKS.md "Graph replays (issue 27)"): one load and compare
 * says it is one, one atomic add takes its indices, one mask test says no
 * launch:N event is set at all (where one is, the mask turned to the
 * replay's first launch says whether one is among its launches), one store
 * says it is the memo's latest, and a store per field writes its ring entry, before the call, so
 * that little is kept across it (withdrawn on a refusal). Any other replay
 * goes to replay_changed, out of line. Threads replaying one graph at once:
 * each takes indices of its own and a ring slot of its own; the memo's
 * latest is a relaxed store (redzone/replays.h says why that suffices). */
typedef CUresult (*replay_fn)(CUgraphExec, CUstream);

/* A launch:N event may be among replay @first's launches: where one fired,
 * its boundary may have changed the zones, so the memo is looked at again. */
static __attribute__((noinline)) void replay_events(struct gg_graph *g, uint64_t first, void *stream)
{
	if (!gg_boundary_launches_fire(first, g->nkernels) || gg_redzone_replay_unchanged(g))
		gg_redzone_replay_latest(g, first);
	else
		gg_redzone_replaying(g, first, stream);
}

/* Any replay but an unchanged one: @g its record, NULL if none; it leaves. */
static __attribute__((noinline)) CUresult replay_changed(replay_fn real, CUgraphExec exec,
							 CUstream stream_, void *stream,
							 struct gg_graph *g)
{
	unsigned nodes = g ? g->nkernels : 0;
	uint64_t first = 0;
	CUresult rc;

	if (GG_LIKELY(nodes)) {
		first = gg_boundary_on_launches(nodes);
		gg_redzone_replaying(g, first, stream);
	}
	rc = real(exec, stream_);
	DRAINED(cuGraphLaunch, rc, real(exec, stream_)); /* its memory nodes' */
	if (GG_LIKELY(first && rc == CUDA_SUCCESS)) {
		gg_audit_replay_taken(g, nodes, first);
		if (GG_UNLIKELY(gg_redzone_replay_hot.checking))
			gg_redzone_replayed(g, first, stream);
	} else if (first) {
		gg_audit_replayed(g, first, (int)rc, gg_real_result_name(rc));
	}
	if (GG_UNLIKELY(!g || g->unfollowed))
		gg_graphs_replayed_unfollowed(g);
	gg_hooks_leave();
	return rc;
}

#define FORWARD_REPLAY(name, exec, stream_, ptsz_)                                                  \
	ENTER_OR_PASS(name, (exec, stream_));                                                       \
	void *stream = STREAM_OF(stream_, ptsz_);                                                   \
	if (GG_UNLIKELY(gg_graphs_captured(stream))) {                                              \
		gg_hooks_leave(); /* its nodes are captured into another graph */                   \
		return real_(exec, stream_);                                                        \
	}                                                                                           \
	struct gg_graph *g = gg_graphs_find_replayed(exec);                                         \
	if (GG_UNLIKELY(!g || !gg_redzone_replay_unchanged(g)))                                     \
		return replay_changed(real_, exec, stream_, stream, g);                             \
	unsigned nodes = g->nkernels;                                                               \
	uint64_t first = gg_boundary_launches_take(nodes);                                          \
	if (GG_UNLIKELY(gg_boundary_launch_counter.mask) && gg_boundary_launches_any(first, nodes)) \
		replay_events(g, first, stream);                                                    \
	else                                                                                        \
		gg_redzone_replay_latest(g, first);                                                 \
	struct gg_audit_launch *entry = gg_audit_replay_taking(g, nodes, first);                    \
	CUresult rc = real_(exec, stream_);                                                         \
	DRAINED(name, rc, real_(exec, stream_));                                                    \
	if (GG_UNLIKELY(rc != CUDA_SUCCESS))                                                        \
		gg_audit_replay_refused(entry, g, first, (int)rc, gg_real_result_name(rc));         \
	gg_hooks_leave();                                                                           \
	return rc

#define GRAPH_LAUNCH(name, ptsz_)                                                       \
	GG_WORK CUresult gg_hooks_work_##name(CUgraphExec hGraphExec, CUstream hStream) \
	{                                                                               \
		FORWARD_REPLAY(name, hGraphExec, hStream, ptsz_);                       \
	}
GRAPH_LAUNCH(cuGraphLaunch, false)
GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)

/* Calls whose only work is to ask again when they ran out of device memory
 * while the quarantine held some (redzone/quarantine.c, gg_quarantine_drains;
 * start/start.c hands them out only while the quarantine is on). */

GG_WORK CUresult gg_hooks_work_cuArrayCreate_v2(CUarray *pHandle,
						const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	FORWARD(cuArrayCreate_v2, (pHandle, pAllocateArray), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuArray3DCreate_v2(CUarray *pHandle,
						  const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	FORWARD(cuArray3DCreate_v2, (pHandle, pAllocateArray), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuMipmappedArrayCreate(
	CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
	unsigned int numMipmapLevels)
{
	FORWARD(cuMipmappedArrayCreate, (pHandle, pMipmappedArrayDesc, numMipmapLevels), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						      const CUgraphNode *dependencies,
						      size_t numDependencies,
						      CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	FORWARD(cuGraphAddMemAllocNode,
		(phGraphNode, hGraph, dependencies, numDependencies, nodeParams), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	FORWARD(cuGraphUpload, (hGraphExec, hStream), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	FORWARD(cuGraphUpload_ptsz, (hGraphExec, hStream), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	FORWARD(cuCtxCreate_v2, (pctx, flags, dev), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
					      int numParams, unsigned int flags, CUdevice dev)
{
	FORWARD(cuCtxCreate_v3, (pctx, paramsArray, numParams, flags, dev), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
					      unsigned int flags, CUdevice dev)
{
	FORWARD(cuCtxCreate_v4, (pctx, ctxCreateParams, flags, dev), NOTHING);
}

GG_WORK CUresult gg_hooks_work_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	FORWARD(cuDevicePrimaryCtxRetain, (pctx, dev), NOTHING);
}

/* A synchronize: the sync:N boundary, and, for the audit, either the
 * context's launches done or a sticky error naming them. */
#define FORWARD_SYNC(name, args)                                                  \
	ENTER_OR_PASS(name, args);                                                \
	uint64_t launches = gg_boundary_launches();                               \
	CUresult rc = real_ args;                                                 \
	gg_audit_synchronized(#name, launches, (int)rc, gg_real_result_name(rc)); \
	gg_boundary_on_sync();                                                    \
	gg_hooks_leave();                                                         \
	return rc

GG_WORK CUresult gg_hooks_work_cuCtxSynchronize(void)
{
	FORWARD_SYNC(cuCtxSynchronize, ());
}

GG_WORK CUresult gg_hooks_work_cuCtxSynchronize_v2(CUcontext ctx)
{
	FORWARD_SYNC(cuCtxSynchronize_v2, (ctx));
}

/* Context teardown: bands are checked before their memory dies, and
 * forgotten once it has. */

#define FORWARD_TEARDOWN(name, args, before, after) \
	FORWARD_WITH(name, args, args, before, if (rc == CUDA_SUCCESS) after)

/* Each teardown twice: the current entry point and its legacy same-ABI form. */
#define CTX_DESTROY(name)                                                     \
	GG_WORK CUresult gg_hooks_work_##name(CUcontext ctx)                  \
	{                                                                     \
		FORWARD_TEARDOWN(name, (ctx), gg_redzone_context_ending(ctx), \
				 gg_redzone_context_ended(ctx));              \
	}
#define PRIMARY_TEARDOWN(name, reset)                                                  \
	GG_WORK CUresult gg_hooks_work_##name(CUdevice dev)                            \
	{                                                                              \
		void *primary = NULL;                                                  \
		FORWARD_TEARDOWN(name, (dev), primary = gg_redzone_device_ending(dev), \
				 gg_redzone_device_ended(dev, primary, reset));        \
	}

CTX_DESTROY(cuCtxDestroy_v2)
CTX_DESTROY(cuCtxDestroy)

/* cuCtxDetach destroys @ctx only when its usage count reaches 0: its bands
 * are checked first either way, and forgotten only once it is gone. */
GG_WORK CUresult gg_hooks_work_cuCtxDetach(CUcontext ctx)
{
	FORWARD_TEARDOWN(cuCtxDetach, (ctx), gg_redzone_context_ending(ctx),
			 gg_redzone_context_detached(ctx));
}
PRIMARY_TEARDOWN(cuDevicePrimaryCtxRelease_v2, false)
PRIMARY_TEARDOWN(cuDevicePrimaryCtxRelease, false)
PRIMARY_TEARDOWN(cuDevicePrimaryCtxReset_v2, true)
PRIMARY_TEARDOWN(cuDevicePrimaryCtxReset, true)

/* cuGetProcAddress: the caller's arguments go through unchanged; only a
 * returned pointer that is a hooked driver export is swapped for our wrapper
 * of that same export. */

#define SWAP_PROC()                                                               \
	((rc == CUDA_SUCCESS && pfn && *pfn)                                      \
		 ? (void)(*pfn = gg_hooks_swap_proc((void *)real_, symbol, *pfn)) \
		 : (void)0)

GG_WORK CUresult gg_hooks_work_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
						cuuint64_t flags)
{
	FORWARD(cuGetProcAddress, (symbol, pfn, cudaVersion, flags), SWAP_PROC());
}

GG_WORK CUresult gg_hooks_work_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
						   cuuint64_t flags,
						   CUdriverProcAddressQueryResult *symbolStatus)
{
	FORWARD(cuGetProcAddress_v2, (symbol, pfn, cudaVersion, flags, symbolStatus), SWAP_PROC());
}

/* The exported entry points, where no assembly has them (entry-x86_64.S).
 * Disabled, re-entered from the driver, or idle on every route
 * (gg_start_pass), the call goes straight to the
 * driver's function: a tail call made before any register is saved (issue
 * 16), though gcc moves stack-passed arguments first. Otherwise, and until the
 * driver's function is known, the hook's work, also a tail call. */
#ifndef GG_ASM_ENTRIES
#define GG_HOOK(name, pfn, params, args)                                                  \
	CUresult gg_hook_##name params                                                    \
	{                                                                                 \
		int mode_ = atomic_load_explicit(&gg_start_mode, memory_order_relaxed);   \
		if (GG_UNLIKELY(mode_ == GG_MODE_DISABLED ||                              \
				(mode_ == GG_MODE_ACTIVE &&                               \
				 (gg_start_pass[GG_ID_##name] || gg_real_inside)))) {     \
			pfn real_ = (pfn)atomic_load_explicit(&gg_real_fns[GG_ID_##name], \
							      memory_order_acquire);      \
			if (GG_LIKELY(real_ != NULL))                                     \
				return real_ args;                                        \
		}                                                                         \
		return gg_hooks_work_##name args;                                         \
	}
#include "driver/hooks.def"
#undef GG_HOOK
#endif

static void *const hook_wrappers[GG_HOOK_COUNT] = {
#define GG_HOOK(name, pfn, params, args) [GG_ID_##name] = (void *)&gg_hook_##name,
#include "driver/hooks.def"
#undef GG_HOOK
};

void *gg_hooks_wrapper(enum gg_hook_id id)
{
	return hook_wrappers[id];
}

void *gg_hooks_swap_proc(void *gpa, const char *symbol, void *fn)
{
	int id = gg_real_export_id(gpa, symbol, fn);

	if (id < 0)
		return fn;
	gg_real_note((enum gg_hook_id)id, fn);
	/* No work for its wrapper here: the driver's own costs nothing. */
	return gg_start_hook_idle(id) ? fn : hook_wrappers[id];
}

/* Export each gg_hook_NAME as NAME@GPUGUARD_HOOK, checked against cudaTypedefs.h.
 * A hidden (non-default) version: a program's unversioned reference (libcuda
 * has no symbol versions) binds to it, but dlsym() never sees it, so every
 * lookup succeeds or fails, dlerror() included, exactly as without the shim
 * (libgpuguard.map). The shim's own references use the hidden names, which
 * nothing can interpose. The unit tests' static copy exports nothing. On
 * x86-64, entry-x86_64.S exports them; the signatures are checked here. */
#if defined(GG_EXPORT_HOOKS) && !defined(GG_ASM_ENTRIES)
#define GG_HOOK(name, pfn, params, args)                                               \
	extern __typeof__(gg_hook_##name) gg_export_##name                             \
		__attribute__((alias("gg_hook_" #name), visibility("default")));       \
	__asm__(".symver gg_export_" #name ", " #name "@GPUGUARD_HOOK");               \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&gg_hook_##name), pfn), \
		       #name " does not have the signature of " #pfn);
#else
#define GG_HOOK(name, pfn, params, args)                                               \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&gg_hook_##name), pfn), \
		       #name " does not have the signature of " #pfn);
#endif
#include "driver/hooks.def"
#undef GG_HOOK
