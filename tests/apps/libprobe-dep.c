/* A dependency of libprobe.so: in the global scope, after libprobe. */
int gg_probe_dep_symbol(void);
int gg_probe_next_symbol(void);

int gg_probe_dep_symbol(void)
{
	return 1;
}

/* The definition libprobe's RTLD_NEXT lookup must find. */
int gg_probe_next_symbol(void)
{
	return 2;
}

/* A driver-like name the shim does not hook: never redirected. */
int cudnnCreate(void);

int cudnnCreate(void)
{
	return 5;
}
