/* _exit() and _Exit() end a process with no exit handler: a forked worker
 * (Python's multiprocessing, os._exit) would take its findings with it. They
 * report like exit() (docs/how-it-works.md, "Boundaries, signals, exit"), as
 * AddressSanitizer's interceptor does. */
#include <stdlib.h>
#include <unistd.h>

#include "base/gg.h"
#include "start/start.h"

GG_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	gg_start_exit(0, status);
}

GG_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	gg_start_exit(1, status);
}
