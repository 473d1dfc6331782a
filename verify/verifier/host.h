/* host.h - what p2p-verify's CUDA-side host units (main, topo, integrity, hazards,
 * perf, nccl_run) share: their entry points and the recording of a CUDA error. */
#ifndef P2PV_HOST_H
#define P2PV_HOST_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "log.h"
#include "options.h"
#include "results.h"

/* cudaerr.c: record a CUDA error in r (first one wins) and return -1. */
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
int pv_run_hazards(pv_results *r, const pv_options *o);
int pv_run_perf(pv_results *r, const pv_options *o);
int pv_run_nccl(pv_results *r, const pv_options *o);
/* resident.c: --resident holds memory on every GPU of the run (1 with the
 * message in err when a GPU has too little free: a usage error; -1 on a
 * CUDA error); pv_resident_release frees it. --peer-cap: pv_run_peer_cap. */
int pv_resident_hold(pv_results *r, const pv_options *o, char *err, size_t errlen);
void pv_resident_release(pv_results *r);
int pv_run_peer_cap(pv_results *r, const pv_options *o);
int pv_nccl_child_main(int argc, char **argv);

#endif
