/* Route 1: linked with -lcuda, calling the driver's exports directly. */
#include <stdio.h>

#include "driver-table.h"

int main(int argc, char **argv)
{
	static const struct app_driver d = {
#define APP_FN(field, export, pfn, base) .field = export,
		APP_DRIVER_FUNCTIONS
#undef APP_FN
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]);
		return 64;
	}
	return app_scenario(&d, "direct", argv[1]);
}
