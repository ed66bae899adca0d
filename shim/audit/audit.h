/* Kernel-lookup audit (SPEC §3). */
#ifndef GG_AUDIT_H
#define GG_AUDIT_H

/* A kernel lookup as the driver answered it: @rc 0 means found. */
void gg_audit_lookup(const char *api, const void *module, const char *name, int rc,
		     const char *rc_name);

#endif
