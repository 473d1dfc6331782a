/* proc.h - run a child process with a modified environment and capture its stdout. */
#ifndef P2PV_PROC_H
#define P2PV_PROC_H

#include <stddef.h>

typedef struct {
    const char *name;
    const char *value; /* NULL: unset */
} pv_envset;

enum { PV_RUN_EXEC_FAILED = -1, PV_RUN_TIMEOUT = -2, PV_RUN_SIGNALED = -3, PV_RUN_SYSERR = -4 };

/* Run argv (PATH lookup) with env changes applied, stdout captured into a
 * malloc'd NUL-terminated *out (may be NULL if not wanted), stderr appended
 * to stderr_path (NULL: /dev/null).  Kills the child after timeout_ms.
 * Returns the exit status (0..255), or PV_RUN_* (<0); *sig gets the signal. */
int pv_run_capture(char *const argv[], const pv_envset *env, int nenv, int timeout_ms, char **out,
                   const char *stderr_path, int *sig);
/* Read a whole (small) file into a malloc'd string; NULL on error. */
char *pv_read_file(const char *path, size_t max);

#endif
