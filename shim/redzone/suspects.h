/* Suspects (suspects.c): the kernels launched with a pointer into each zone
 * since its band was last seen clean. The launches themselves enter through
 * redzone.h (gg_redzone_launching, gg_redzone_launched, ...). */
#ifndef GG_SHIM_REDZONE_SUSPECTS_H
#define GG_SHIM_REDZONE_SUSPECTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* GPUGUARD_REDZONE and GPUGUARD_CHECK_LAUNCHES. Set-up only. */
void gg_suspects_configure(uint64_t pad, bool check_launches);

/* The generation the memos are made at (replays.h reads it inline). */
const atomic_uint_fast64_t *gg_suspects_generation(void);

/* A band was given, a suspect list cleared, an allocation quarantined: every
 * memo is stale. */
void gg_suspects_stale(void);

/* Launches whose parameters could not be followed. */
uint64_t gg_suspects_unfollowed(void);

/* Fork: the memos name the parent's zones. */
void gg_suspects_atfork_child(void);

#endif
