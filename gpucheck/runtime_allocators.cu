// Every other linear allocator of the CUDA runtime, for scripts/gpu-check:
// cudaMallocPitch (3 rows of 1000 bytes), cudaMallocManaged (2000 bytes) and
// cudaMallocFromPoolAsync from a pool of its own (3000 bytes), each written 8
// bytes past its end by a kernel and freed; then a virtual-memory mapping
// through the driver API (reserve, create, map, set access, a kernel writes
// it, unmap, release), which gpuguard counts and never guards. Prints only
// what the program itself knows, so its stdout is the same with and without
// gpuguard. Linked with -lcuda for the VMM calls.
#include <cstdio>
#include <cstdlib>

#include <cuda.h>
#include <cuda_runtime.h>

#include "gc-runtime.h"

#define CHECK(call) GC_CHECK("runtime_allocators", call)
#define DCHECK(call)                                                                       \
	do {                                                                               \
		CUresult r_ = (call);                                                      \
		if (r_ != CUDA_SUCCESS) {                                                  \
			std::fprintf(stderr, "runtime_allocators: %s failed: %d\n", #call,    \
				     (int)r_);                                             \
			std::exit(2);                                                      \
		}                                                                          \
	} while (0)

static void overrun(void *p, unsigned long long size)
{
	write_bytes<<<4, 128>>>((unsigned char *)p, size + 8, 0x41); // the bug: 8 bytes past
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
}

int main()
{
	void *pitched = nullptr, *managed = nullptr, *pooled = nullptr;
	size_t pitch = 0;
	cudaMemPool_t pool;
	cudaMemPoolProps props = {};
	cudaStream_t stream;

	CHECK(cudaMallocPitch(&pitched, &pitch, 1000, 3));
	std::printf("pitched: 3 rows\n");
	overrun(pitched, pitch * 3);
	CHECK(cudaFree(pitched));

	CHECK(cudaMallocManaged(&managed, 2000));
	overrun(managed, 2000);
	CHECK(cudaFree(managed));
	std::printf("managed: 2000 bytes\n");

	CHECK(cudaStreamCreate(&stream));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolCreate(&pool, &props));
	CHECK(cudaMallocFromPoolAsync(&pooled, 3000, pool, stream));
	CHECK(cudaStreamSynchronize(stream));
	overrun(pooled, 3000);
	CHECK(cudaFreeAsync(pooled, stream));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaMemPoolDestroy(pool));
	std::printf("pooled: 3000 bytes\n");

	CUmemAllocationProp prop = {};
	CUmemAccessDesc access = {};
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	size_t gran = 0;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DCHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	DCHECK(cuMemAddressReserve(&va, gran, 0, 0, 0));
	DCHECK(cuMemCreate(&h, gran, &prop, 0));
	DCHECK(cuMemMap(va, gran, 0, h, 0));
	DCHECK(cuMemSetAccess(va, gran, &access, 1));
	write_bytes<<<4, 128>>>((unsigned char *)va, gran, 0x42);
	CHECK(cudaDeviceSynchronize());
	DCHECK(cuMemUnmap(va, gran));
	DCHECK(cuMemRelease(h));
	DCHECK(cuMemAddressFree(va, gran));
	std::printf("vmm: one granule mapped\n");
	return 0;
}
