/* log.c - p2p-verify's verbose log and its clock (see log.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

int pv_verbose = 0;
static double g_t0;

double pv_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pv_log_start(int verbose)
{
    pv_verbose = verbose;
    g_t0 = pv_now_s();
}

double pv_elapsed_s(void)
{
    return pv_now_s() - g_t0;
}

void pv_log(const char *fmt, ...)
{
    if (!pv_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[p2p-verify %6.2fs] ", pv_elapsed_s());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
