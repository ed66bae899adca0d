/* The exported driver entry points. Each only unpacks its arguments and
 * forwards: to the real driver function, then to audit or redzone with what
 * happened. Policy lives in those modules. */
#include <stdatomic.h>

#include "audit/audit.h"
#include "boundary.h"
#include "gg.h"
#include "hooks/hooks.h"
#include "redzone/redzone.h"
#include "report/report.h"
#include "shim.h"

static struct {
	atomic_ulong calls[GG_HOOK_COUNT]; /* lock-free counters, one per entry point */
} hooks_state;

/* Set while this thread is inside a hook: a driver that calls its own exports
 * is passed straight through, so one application call is seen once. */
static __thread int in_hook;

/* False: pass straight through (disabled, or re-entered from the driver). */
static inline bool enter(enum gg_hook_id id)
{
	if (in_hook || !gg_shim_active())
		return false;
	in_hook = 1;
	atomic_fetch_add_explicit(&hooks_state.calls[id], 1, memory_order_relaxed);
	return true;
}

static inline void leave(void)
{
	in_hook = 0;
}

#define REAL(name) ((gg_pfn_##name)gg_real_get(GG_ID_##name))

/* The common shape: resolve, pass through when inactive, else call, then @after. */
#define FORWARD(name, args, after)                                  \
	gg_pfn_##name real_ = REAL(name);                           \
	if (GG_UNLIKELY(!real_))                                    \
		return CUDA_ERROR_NOT_SUPPORTED;                    \
	if (!enter(GG_ID_##name))                                   \
		return real_ args;                                  \
	CUresult rc = real_ args;                                   \
	after;                                                      \
	leave();                                                    \
	return rc

#define NOTHING ((void)0)

/* The same shape with work done before the call is forwarded. */
#define FORWARD_AFTER_DOING(name, args, before)                           \
	gg_pfn_##name real_ = REAL(name);                           \
	if (GG_UNLIKELY(!real_))                                    \
		return CUDA_ERROR_NOT_SUPPORTED;                    \
	if (!enter(GG_ID_##name))                                   \
		return real_ args;                                  \
	before;                                                     \
	CUresult rc = real_ args;                                   \
	leave();                                                    \
	return rc

/* Allocations take their index before the driver is asked (failed calls count). */
#define FORWARD_ALLOC(name, args, dptr, bytes)                                           \
	gg_pfn_##name real_ = REAL(name);                                                \
	if (GG_UNLIKELY(!real_))                                                         \
		return CUDA_ERROR_NOT_SUPPORTED;                                         \
	if (!enter(GG_ID_##name))                                                        \
		return real_ args;                                                       \
	uint64_t index = gg_redzone_next_index();                                        \
	CUresult rc = real_ args;                                                        \
	gg_redzone_alloc(#name, index, bytes, rc == CUDA_SUCCESS && dptr ? *dptr : 0,    \
			 (int)rc, gg_hooks_result_name(rc));                             \
	leave();                                                                         \
	return rc

#define AUDIT_LOOKUP(api, kind, handle, kname) \
	gg_audit_lookup(api, kind, handle, kname, (int)rc, gg_hooks_result_name(rc))
#define LOADED_FILE(kind, handle_ptr, path) \
	((rc == CUDA_SUCCESS && handle_ptr) ? gg_audit_loaded_file(kind, *(handle_ptr), path) : (void)0)
#define LOADED_IMAGE(kind, handle_ptr, image) \
	((rc == CUDA_SUCCESS && handle_ptr) ? gg_audit_loaded_image(kind, *(handle_ptr), image) : (void)0)
#define FREED(api, ptr) gg_redzone_free(api, ptr, (int)rc, gg_hooks_result_name(rc))

/* Kernel lookups. */

CUresult gg_hook_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	FORWARD(cuModuleGetFunction, (hfunc, hmod, name),
		AUDIT_LOOKUP("cuModuleGetFunction", GG_AUDIT_MODULE, hmod, name));
}

CUresult gg_hook_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	FORWARD(cuLibraryGetKernel, (pKernel, library, name),
		AUDIT_LOOKUP("cuLibraryGetKernel", GG_AUDIT_LIBRARY, library, name));
}

/* Module and library loading: the audit names what was loaded. */

CUresult gg_hook_cuModuleLoad(CUmodule *module, const char *fname)
{
	FORWARD(cuModuleLoad, (module, fname), LOADED_FILE(GG_AUDIT_MODULE, module, fname));
}

CUresult gg_hook_cuModuleLoadData(CUmodule *module, const void *image)
{
	FORWARD(cuModuleLoadData, (module, image), LOADED_IMAGE(GG_AUDIT_MODULE, module, image));
}

CUresult gg_hook_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				    CUjit_option *options, void **optionValues)
{
	FORWARD(cuModuleLoadDataEx, (module, image, numOptions, options, optionValues),
		LOADED_IMAGE(GG_AUDIT_MODULE, module, image));
}

CUresult gg_hook_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	FORWARD(cuModuleLoadFatBinary, (module, fatCubin),
		LOADED_IMAGE(GG_AUDIT_MODULE, module, fatCubin));
}

/* Forgotten before the driver can hand the same handle value to another thread. */
CUresult gg_hook_cuModuleUnload(CUmodule hmod)
{
	FORWARD_AFTER_DOING(cuModuleUnload, (hmod), gg_audit_unloaded(GG_AUDIT_MODULE, hmod));
}

CUresult gg_hook_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				   void **jitOptionsValues, unsigned int numJitOptions,
				   CUlibraryOption *libraryOptions, void **libraryOptionValues,
				   unsigned int numLibraryOptions)
{
	FORWARD(cuLibraryLoadData,
		(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
		 libraryOptionValues, numLibraryOptions),
		LOADED_IMAGE(GG_AUDIT_LIBRARY, library, code));
}

CUresult gg_hook_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				       CUjit_option *jitOptions, void **jitOptionsValues,
				       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				       void **libraryOptionValues, unsigned int numLibraryOptions)
{
	FORWARD(cuLibraryLoadFromFile,
		(library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
		 libraryOptionValues, numLibraryOptions),
		LOADED_FILE(GG_AUDIT_LIBRARY, library, fileName));
}

CUresult gg_hook_cuLibraryUnload(CUlibrary library)
{
	FORWARD_AFTER_DOING(cuLibraryUnload, (library), gg_audit_unloaded(GG_AUDIT_LIBRARY, library));
}

/* Allocations. */

CUresult gg_hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	FORWARD_ALLOC(cuMemAlloc_v2, (dptr, bytesize), dptr, bytesize);
}

CUresult gg_hook_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocAsync, (dptr, bytesize, hStream), dptr, bytesize);
}

CUresult gg_hook_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	FORWARD_ALLOC(cuMemAllocAsync_ptsz, (dptr, bytesize, hStream), dptr, bytesize);
}

CUresult gg_hook_cuMemFree_v2(CUdeviceptr dptr)
{
	FORWARD(cuMemFree_v2, (dptr), FREED("cuMemFree_v2", dptr));
}

CUresult gg_hook_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	FORWARD(cuMemFreeAsync, (dptr, hStream), FREED("cuMemFreeAsync", dptr));
}

CUresult gg_hook_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	FORWARD(cuMemFreeAsync_ptsz, (dptr, hStream), FREED("cuMemFreeAsync_ptsz", dptr));
}

/* Queries that must not reveal padding: counted for now. */

CUresult gg_hook_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	FORWARD(cuMemGetAddressRange_v2, (pbase, psize, dptr), NOTHING);
}

CUresult gg_hook_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	FORWARD(cuPointerGetAttribute, (data, attribute, ptr), NOTHING);
}

CUresult gg_hook_cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
					void **data, CUdeviceptr ptr)
{
	FORWARD(cuPointerGetAttributes, (numAttributes, attributes, data, ptr), NOTHING);
}

/* Launches and synchronisation: the boundaries' events. launch:N fires before
 * the N-th launch is forwarded, sync:N after the N-th synchronize returns. */

#define LAUNCH_PARAMS                                                                     \
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
		unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,   \
		unsigned int sharedMemBytes, CUstream hStream, void **kernelParams
#define LAUNCH_ARGS                                                                        \
	f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, \
		hStream, kernelParams

CUresult gg_hook_cuLaunchKernel(LAUNCH_PARAMS, void **extra)
{
	FORWARD_AFTER_DOING(cuLaunchKernel, (LAUNCH_ARGS, extra), gg_boundary_on_launch());
}

CUresult gg_hook_cuLaunchKernel_ptsz(LAUNCH_PARAMS, void **extra)
{
	FORWARD_AFTER_DOING(cuLaunchKernel_ptsz, (LAUNCH_ARGS, extra), gg_boundary_on_launch());
}

CUresult gg_hook_cuLaunchCooperativeKernel(LAUNCH_PARAMS)
{
	FORWARD_AFTER_DOING(cuLaunchCooperativeKernel, (LAUNCH_ARGS), gg_boundary_on_launch());
}

CUresult gg_hook_cuLaunchCooperativeKernel_ptsz(LAUNCH_PARAMS)
{
	FORWARD_AFTER_DOING(cuLaunchCooperativeKernel_ptsz, (LAUNCH_ARGS), gg_boundary_on_launch());
}

CUresult gg_hook_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				  void **extra)
{
	FORWARD_AFTER_DOING(cuLaunchKernelEx, (config, f, kernelParams, extra), gg_boundary_on_launch());
}

CUresult gg_hook_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
				       void **kernelParams, void **extra)
{
	FORWARD_AFTER_DOING(cuLaunchKernelEx_ptsz, (config, f, kernelParams, extra),
		      gg_boundary_on_launch());
}

CUresult gg_hook_cuCtxSynchronize(void)
{
	FORWARD(cuCtxSynchronize, (), gg_boundary_on_sync());
}

CUresult gg_hook_cuCtxSynchronize_v2(CUcontext ctx)
{
	FORWARD(cuCtxSynchronize_v2, (ctx), gg_boundary_on_sync());
}

/* Context teardown: bands will be checked here before their memory dies. */

CUresult gg_hook_cuCtxDestroy_v2(CUcontext ctx)
{
	FORWARD(cuCtxDestroy_v2, (ctx), NOTHING);
}

CUresult gg_hook_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	FORWARD(cuDevicePrimaryCtxRelease_v2, (dev), NOTHING);
}

CUresult gg_hook_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	FORWARD(cuDevicePrimaryCtxReset_v2, (dev), NOTHING);
}

/* cuGetProcAddress: the caller's arguments go through unchanged; only a
 * returned pointer that is a hooked driver export is swapped for our wrapper
 * of that same export. */

#define SWAP_PROC() \
	((rc == CUDA_SUCCESS && pfn && *pfn) ? (void)(*pfn = gg_hooks_swap_proc((void *)real_, *pfn)) : (void)0)

CUresult gg_hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
				  cuuint64_t flags)
{
	FORWARD(cuGetProcAddress, (symbol, pfn, cudaVersion, flags), SWAP_PROC());
}

CUresult gg_hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	FORWARD(cuGetProcAddress_v2, (symbol, pfn, cudaVersion, flags, symbolStatus), SWAP_PROC());
}

void gg_hooks_report_calls(void)
{
	const char *names[GG_HOOK_COUNT];
	unsigned long counts[GG_HOOK_COUNT];

	for (int i = 0; i < GG_HOOK_COUNT; i++) {
		names[i] = gg_hooks_name((enum gg_hook_id)i);
		counts[i] = atomic_load_explicit(&hooks_state.calls[i], memory_order_relaxed);
	}
	gg_report_calls(names, counts, GG_HOOK_COUNT);
}

/* Export each gg_hook_NAME as NAME, checked against cudaTypedefs.h. The shim's
 * own references use the hidden names, which nothing can interpose. */
#define GG_HOOK(name, pfn, params, args)                                                      \
	extern __typeof__(gg_hook_##name) name                                                \
		__attribute__((alias("gg_hook_" #name), visibility("default")));             \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&gg_hook_##name), pfn),        \
		       #name " does not have the signature of " #pfn);
#include "hooks/hooks.def"
#undef GG_HOOK
