/* The dynamic loader's list of objects after fork(): whether this process
 * may walk it. */
#ifndef GG_SHIM_BASE_LOADER_H
#define GG_SHIM_BASE_LOADER_H

#include <stdbool.h>

/* True in a process forked from one where other threads ran (and in every
 * process forked from it): one of them may have held the lock that guards
 * the loader's list of objects, which glibc does not reset in the child, so
 * dl_iterate_phdr, an unwinder that calls it (libunwind), a dlopen that maps
 * a new object, or a dlclose that unmaps one may never return. dladdr, dlsym
 * and dlopen of an object already loaded take only the loader's main lock,
 * which glibc resets in every child: they may be used (dlopen as
 * gg_loader_may_open() says). Lock-free. */
bool gg_loader_list_may_hang(void);

/* Whether dlopen (of an object already loaded, RTLD_NOLOAD) may be called:
 * not in such a child forked while another thread was inside dlopen or
 * dlclose, where the loader's state still says a change is under way and
 * glibc ends the process at the next dlopen ("Inconsistency detected by
 * ld.so"). Lock-free. */
bool gg_loader_may_open(void);

#endif
