/* SIGTERM and SIGINT at their default disposition: the exit work through the
 * watcher thread, bounded, then the same death (ending.c). */
#ifndef GG_SHIM_BOUNDARY_ENDING_H
#define GG_SHIM_BOUNDARY_ENDING_H

#include <stdbool.h>

/* How long the handler waits for the watcher's exit work, in milliseconds. */
#define GG_ENDING_WAIT_MS 5000

/* At set-up: gpuguard's handler for SIGTERM and SIGINT where the program left
 * the default (never for @except, GPUGUARD_SIGNAL's), @work the exit work the
 * watcher runs with the signal's number. 1: installed for at least one (the
 * watcher must poll gg_ending_fd()); 0: none; -errno. */
int gg_ending_install(void (*work)(int sig), int except);

/* No watcher after all: the default disposition back where it is still ours. */
void gg_ending_uninstall(void);

/* The descriptor the watcher polls; -1 when nothing is installed. */
int gg_ending_fd(void);

/* The watcher, when gg_ending_fd() is readable: the exit work, then the
 * handler's wait ends. */
void gg_ending_run(void);

/* fork(): the child dies of an end signal unreported until its first hook
 * call gives it pipes of its own (restart: 1 when it has them, 0 when none is
 * needed, -errno). */
void gg_ending_atfork_child(void);
int gg_ending_restart_in_child(void);

#endif
