/* gc-info: what scripts/gpu-check runs on. Prints "driver N", "devices N",
 * and for device 0 "name ...", "cc MAJORMINOR" and "memory N MiB".
 * Exit status 2 (with the driver's error on stderr) when there is no usable
 * device. */
#include "gc-common.h"

int main(void)
{
	int version = 0, count = 0, major = 0, minor = 0;
	char name[256] = "";
	size_t total = 0;
	CUdevice dev;

	GC_CHECK(cuInit(0));
	GC_CHECK(cuDriverGetVersion(&version));
	printf("driver %d\n", version);
	GC_CHECK(cuDeviceGetCount(&count));
	printf("devices %d\n", count);
	if (count < 1) {
		fprintf(stderr, "gc-info: no CUDA device\n");
		return 2;
	}
	GC_CHECK(cuDeviceGet(&dev, 0));
	GC_CHECK(cuDeviceGetName(name, (int)sizeof(name), dev));
	GC_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	GC_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	GC_CHECK(cuDeviceTotalMem_v2(&total, dev));
	printf("name %s\n", name);
	printf("cc %d%d\n", major, minor);
	printf("memory %zu MiB\n", total >> 20);
	return 0;
}
