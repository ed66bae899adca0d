/* The ERROR lines written since the last labelled boundary (gpuguard_boundary),
 * kept so that the boundary can hand them to its label: a pytest test fails
 * with the very lines of the log. */
#ifndef GG_SHIM_REPORT_ERRLINES_H
#define GG_SHIM_REPORT_ERRLINES_H

#include <stddef.h>
#include <stdint.h>

/* Keep the ERROR line @line (@len bytes, its '\n' included). */
void gg_report_errlines_add(const char *line, size_t len);

/* Hand over the lines kept since the last call and forget them: up to
 * @cap - 1 bytes into @out, NUL-terminated, whole lines only; *@dropped: the
 * lines that did not fit (here or in the store). */
void gg_report_errlines_take(char *out, size_t cap, uint64_t *dropped);

/* The lock across fork(); the child starts with none of its parent's lines. */
void gg_report_errlines_atfork_prepare(void);
void gg_report_errlines_atfork_parent(void);
void gg_report_errlines_atfork_child(void);

#endif
