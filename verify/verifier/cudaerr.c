/* cudaerr.c - the first CUDA error of a run, recorded for the report (PV_CK). */
#include <stdio.h>
#include <string.h>

#include "host.h"

int pv_cuda_fail(pv_results *r, cudaError_t e, const char *what, const char *file, int line)
{
    if (!r->cuda_error) {
        r->cuda_error = 1;
        const char *base = strrchr(file, '/');
        snprintf(r->cuda_error_msg, sizeof r->cuda_error_msg, "%.200s failed: %s (%s) at %s:%d", what,
                 cudaGetErrorName(e), cudaGetErrorString(e), base ? base + 1 : file, line);
    }
    pv_log("CUDA error: %s", r->cuda_error_msg);
    return -1;
}
