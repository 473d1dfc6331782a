/* hazards.h - what the hazard tests' CUDA-side units share (hazards.c runs
 * them; hz_vmm.c: compressible memory and stale mappings; hz_sync.c: peer
 * atomics and write ordering; hz_managed.c: managed memory). */
#ifndef P2PV_HAZARDS_H
#define P2PV_HAZARDS_H

#include <stdint.h>

#include "cudrv.h"
#include "host.h"
#include "hzcheck.h"
#include "kernels.h"

#define PV_HZ_GUARD_BYTES (4ull << 20) /* the compressible test's host guard */
#define PV_HZ_TIMEOUT_NS 2000000000ull /* a kernel waiting for a flag gives up after 2 s */

typedef struct {
    pv_results *r;
    const pv_options *o;
    pv_cudrv drv;
    cudaStream_t s[PV_MAX_GPUS];
    pv_hz_dev *res[PV_MAX_GPUS];  /* a check's result, on each GPU */
    uint8_t *guard;               /* pinned host memory, PV_HZ_GUARD_BYTES */
    volatile int *flag, *ack;     /* pinned mapped host words */
    int *flag_dev, *ack_dev;      /* the same, as kernels address them */
    uint64_t seed;
    int inject;                   /* the test being run gets the self-test's injection */
} pv_hz_ctx;

/* A CUDA runtime error in test t: t is ERROR, the run's CUDA error is
 * recorded (the hazard section stops, as integrity does); returns -1. */
int pv_hz_fail_cuda(pv_hz_ctx *cx, pv_hz_result *t, cudaError_t e, const char *what, const char *file, int line);
#define HZ_CK(cx, t, call)                                                            \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess)                                                        \
            return pv_hz_fail_cuda((cx), (t), e_, #call, __FILE__, __LINE__);         \
    } while (0)

/* Seed of one test's data: distinct per test, pair, round and buffer. */
uint64_t pv_hz_seed(const pv_hz_ctx *cx, int test, int i, int j, int round, int which);
/* Check len bytes at base on GPU g against pv_hz_byte(seed, k, shift) (and
 * count those that are alt's, where use_alt); t->checked grows; the first
 * failure is recorded in t (what, round), status FAIL.  *nbad: the bad bytes.
 * 0, or -1 on a CUDA error. */
int pv_hz_check(pv_hz_ctx *cx, pv_hz_result *t, int g, const uint8_t *base, size_t len, uint64_t seed,
                unsigned shift, uint64_t alt, int use_alt, const char *what, int round, unsigned long long *nbad);

/* Each runs one test on the pair (peer i, owner j) and sets t's status;
 * 0, or -1 after a CUDA runtime error (recorded). */
int pv_hz_compressible(pv_hz_ctx *cx, int i, int j, pv_hz_result *t);
int pv_hz_stale(pv_hz_ctx *cx, int i, int j, pv_hz_result *t);
int pv_hz_atomics(pv_hz_ctx *cx, int i, int j, pv_hz_result *t);
/* The atomics' check alone, on counters as a perfect run leaves them, one
 * update taken off: the self-test where the GPUs cannot run the test. */
void pv_hz_atomics_checker_only(pv_hz_result *t);
int pv_hz_ordering(pv_hz_ctx *cx, int i, int j, pv_hz_result *t);
int pv_hz_managed(pv_hz_ctx *cx, int i, int j, pv_hz_result *t);
/* What the managed test needs free on each GPU. */
unsigned long long pv_hz_managed_need(void);

#endif
