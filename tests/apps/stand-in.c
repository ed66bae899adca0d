/* A stand-in for a framework's shared object (libc10_cuda.so, librmm.so):
 * only its name matters, to the shim's caching-allocator check. */
int gg_stand_in(void);

int gg_stand_in(void)
{
	return 0;
}
