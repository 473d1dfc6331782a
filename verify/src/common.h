/* common.h - shared helpers of the CUDA-side host code. */
#ifndef P2PV_COMMON_H
#define P2PV_COMMON_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "options.h"
#include "results.h"

extern int pv_verbose;

void pv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record a CUDA error in r (first one wins) and return -1. */
int pv_cuda_fail(pv_results *r, cudaError_t e, const char *what, const char *file, int line);

#define PV_CK(r, call)                                                        \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess)                                                \
            return pv_cuda_fail((r), e_, #call, __FILE__, __LINE__);          \
    } while (0)

int pv_gather_topology(pv_results *r);
int pv_enable_peer(pv_results *r, int i, int j);
int pv_run_integrity(pv_results *r, const pv_options *o);
int pv_run_perf(pv_results *r, const pv_options *o);
int pv_run_nccl(pv_results *r, const pv_options *o);
int pv_nccl_child_main(int argc, char **argv);
double pv_now_s(void);

#endif
