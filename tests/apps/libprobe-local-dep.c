/* A dependency of libprobe-local.so, in its local group only. */
int gg_probe_local_dep_symbol(void);

int gg_probe_local_dep_symbol(void)
{
	return 4;
}
