/* Which process a metrics file belongs to: the program's name as its series'
 * exe label, and the start time and boot that tell one process from a later
 * one given the same pid. Written by the shim into each metrics file; read
 * back by gpuguard prune-metrics (tools/cmd-prune.c), which removes the files
 * of processes that have exited. Nothing here allocates or prints. */
#ifndef GG_SHIM_REPORT_PROCESS_H
#define GG_SHIM_REPORT_PROCESS_H

#include <stddef.h>

/* The first line of every metrics file, a comment to Prometheus:
 * "# gpuguard-process pid=PID starttime=TICKS boot_id=UUID pidns=INODE",
 * where TICKS is /proc/PID/stat's start time (clock ticks since boot), UUID
 * is /proc/sys/kernel/random/boot_id and INODE the pid namespace's
 * (/proc/self/ns/pid, "pid:[INODE]"): PID means a process there only; a
 * field that could not be read is left out. */
#define GG_PROCESS_LINE "# gpuguard-process"

/* Room for an exe label: a file name (255 bytes) with every byte escaped. */
#define GG_EXE_LABEL_MAX 512

/* Length of the valid UTF-8 sequence at @s, 0 if invalid. */
size_t gg_report_utf8_len(const unsigned char *s);

/* Process @pid's program name (@pid 0: this process's, else argv[0]'s
 * basename when /proc/self/exe cannot be read) as a Prometheus label value:
 * the basename of /proc/PID/exe, less the " (deleted)" the kernel adds once
 * the file is replaced, with backslash, double quote and newline escaped and
 * each byte that is not valid UTF-8 written as '?'. 0 or -errno. */
int gg_report_exe_label(int pid, char *out, size_t cap);

/* /proc/PID/stat's start time (@pid 0: this process's), clock ticks since
 * boot. 0 or -errno (-EPROTO when the line cannot be parsed). */
int gg_report_start_ticks(int pid, unsigned long long *ticks);

/* This process's pid namespace: the INODE of /proc/self/ns/pid's
 * "pid:[INODE]". 0 or -errno (-EPROTO when the link cannot be parsed). */
int gg_report_pid_ns(unsigned long long *inode);

/* This boot's id, from /proc/sys/kernel/random/boot_id, without its newline.
 * 0 or -errno. */
int gg_report_boot_id(char *out, size_t cap);

#endif
