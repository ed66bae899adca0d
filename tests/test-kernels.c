/* The kernels table (handles/kernels.c): a handle's slot and names, and a
 * handle the driver hands out again after its module was unloaded. No driver
 * is loaded here: names come from lookups, or are the handle's address.
 * Also the real functions' bookkeeping (driver/real.c). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "handles/kernels.h"
#include "driver/real.h"

#define MOD_A ((const void *)0x1000)
#define MOD_B ((const void *)0x2000)

static const char *name_of(const void *handle)
{
	static struct gg_report_kernel k;

	gg_kernels_name_handle(handle, &k);
	return k.name;
}

Test(kernels, a_lookup_names_its_handle_and_a_launch_finds_the_same_slot)
{
	const void *h = (const void *)0xabc0;
	int slot;

	gg_kernels_found(h, false, MOD_A, "kernels.ptx", "gg_fill", NULL);
	slot = gg_kernels_slot(h);
	cr_assert_geq(slot, 0);
	cr_expect_eq(gg_kernels_slot(h), slot);
	cr_expect_str_eq(name_of(h), "gg_fill");
}

Test(kernels, a_handle_no_lookup_produced_is_named_by_its_address)
{
	cr_expect_str_eq(name_of((const void *)0xdead00), "function@0xdead00");
}

/* The driver may hand a handle out again once its module is unloaded: the
 * new kernel gets a slot of its own (what was reported of the old one keeps
 * its name), and caches of slots see the epoch change. */
Test(kernels, a_handle_reused_after_its_module_was_unloaded_gets_a_new_slot)
{
	const void *h = (const void *)0xbee0;
	struct gg_report_kernel k;
	uint64_t epoch;
	int old, now;

	gg_kernels_found(h, false, MOD_A, "a.ptx", "old_kernel", NULL);
	old = gg_kernels_slot(h);
	epoch = gg_kernels_epoch();
	gg_kernels_unloaded(MOD_A);
	cr_expect_neq(gg_kernels_epoch(), epoch);
	gg_kernels_found(h, false, MOD_B, "b.ptx", "new_kernel", NULL);
	now = gg_kernels_slot(h);
	cr_assert_neq(now, old);
	cr_expect_str_eq(name_of(h), "new_kernel");
	gg_kernels_name(old, &k);
	cr_expect_str_eq(k.name, "old_kernel");
	cr_expect_str_eq(k.module, "a.ptx");
}

/* An unload the shim did not see (a route it does not hook): the lookup of
 * another kernel under the same handle still gets a slot of its own. */
Test(kernels, a_handle_found_again_as_another_kernel_gets_a_new_slot)
{
	const void *h = (const void *)0xcaf0;
	int old;

	gg_kernels_found(h, false, MOD_A, "a.ptx", "first", NULL);
	old = gg_kernels_slot(h);
	gg_kernels_found(h, false, MOD_A, "a.ptx", "second", NULL);
	cr_expect_neq(gg_kernels_slot(h), old);
	cr_expect_str_eq(name_of(h), "second");
}

Test(kernels, a_second_lookup_of_the_same_kernel_keeps_its_slot)
{
	const void *h = (const void *)0xd0d0;
	int old;

	gg_kernels_found(h, false, MOD_A, "a.ptx", "same", NULL);
	old = gg_kernels_slot(h);
	gg_kernels_found(h, false, MOD_A, "a.ptx", "same", NULL);
	cr_expect_eq(gg_kernels_slot(h), old);
}

/* ---- the real functions (driver/real.c): which object an address is in ---- */

/* A function of libc's own: &strlen may be a sanitizer's interceptor. */
static void *in_libc(void)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "getpid") : NULL;

	cr_assert_not_null(fn);
	dlclose(h);
	return fn;
}

/* Here the shim's code is linked into this test program, which is therefore
 * "the shim's object"; libc is another. */
Test(real, an_address_in_the_shims_own_object_is_never_taken_for_the_drivers)
{
	void *own = (void *)&gg_real_in_shim, *other = in_libc();

	cr_expect(gg_real_in_shim(own));
	cr_expect(gg_real_in_shim((const void *)&gg_real_fns[0]), "its data too");
	cr_expect(!gg_real_in_shim(other));
	gg_real_note(GG_ID_cuMemAlloc_v2, own);
	cr_expect_null(atomic_load(&gg_real_fns[GG_ID_cuMemAlloc_v2]));
	gg_real_note(GG_ID_cuMemAlloc_v2, other);
	cr_expect_eq(atomic_load(&gg_real_fns[GG_ID_cuMemAlloc_v2]), other);
}

Test(real, an_objects_name_is_the_file_that_holds_the_address)
{
	const char *libc = gg_real_object_name(in_libc());

	cr_assert_not_null(libc);
	cr_expect(strstr(libc, "libc.so"), "%s", libc);
	cr_expect_str_eq(gg_real_object_name((const void *)&gg_real_object_name), "",
			 "the executable is named \"\"");
	cr_expect_null(gg_real_object_name(NULL));
}
