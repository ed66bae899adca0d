/* A dependency of libprobe-local.so, in its local group only. */
int gg_probe_local_dep_symbol(void);

int gg_probe_local_dep_symbol(void)
{
	return 4;
}

/* A cu… name the shim does not hook, in the local group: never redirected. */
int cuDriverGetVersionFake(void);
int cudnnCreate(void);

int cuDriverGetVersionFake(void)
{
	return 6;
}

int cudnnCreate(void)
{
	return 7;
}
