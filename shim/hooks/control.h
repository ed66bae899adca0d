/* The control API a process calls (control.c); a program finds it with
 * dlsym(RTLD_DEFAULT, ...), so it runs with and without the shim. */
#ifndef GG_SHIM_HOOKS_CONTROL_H
#define GG_SHIM_HOOKS_CONTROL_H

int gpuguard_boundary(const char *label);
const char *gpuguard_version(void);

#endif
