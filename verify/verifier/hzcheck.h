/* hzcheck.h - the hazard tests' pure logic: names, which tests run where
 * (the gate), the atomics' counting and check, and the verdict line of each
 * result (pure C, no CUDA: unit tested by make check). */
#ifndef P2PV_HZCHECK_H
#define P2PV_HZCHECK_H

#include <stddef.h>
#include "results.h"

/* "compressible", "atomics", "ordering", "stale", "managed" */
const char *pv_hz_name(int test);
/* JSON status: "pass", "fail", "refused", "not_applicable", "skipped", "error", "not_run" */
const char *pv_hz_status_name(int status);
/* The hazard test a --self-test mode injects into (PV_HZ_*), -1 for none. */
int pv_self_test_hazard(int mode);
/* What that self-test injects, in words. */
const char *pv_hz_inject_desc(int mode);

/* What the CUDA side found out before running a test on a pair (peer ->
 * owner); -1 where unknown or not asked. */
typedef struct {
    int can_access;          /* cudaDeviceCanAccessPeer(peer, owner) */
    int native_atomics;      /* cudaDevP2PAttrNativeAtomicSupported(peer, owner) */
    int comp_supported;      /* CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED of the owner */
    int vmm_supported;       /* CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED of the owner */
    int drv_ok;              /* the driver API's entry points were found */
    int managed_opt_in;      /* --managed */
    int concurrent_managed;  /* cudaDevAttrConcurrentManagedAccess of both GPUs (1 = both) */
    unsigned long long free_min;  /* the smaller free memory of the two GPUs (cudaMemGetInfo) */
    unsigned long long need;      /* what the test needs free on each */
    int free_gpu;            /* the GPU with the smaller free memory */
    int peer, owner;
} pv_hz_gate_in;

/* PV_HZS_NOT_RUN: run the test; else the status it gets without running
 * (PV_HZS_NA, PV_HZS_SKIPPED), with why in `why`.  A self-test of the
 * atomics still checks where the attribute says 0 (the caller injects at
 * the checker). */
int pv_hz_gate(int test, const pv_hz_gate_in *g, char *why, size_t whylen);

/* Atomics: each of `threads` threads of a GPU adds once per iteration to
 * counter (thread + iteration) % ncounters; with iters a multiple of
 * ncounters every counter gets threads * iters / ncounters adds from each
 * GPU.  Returns that, or 0 when iters is not a multiple. */
unsigned long long pv_atomic_per_counter(unsigned long long threads, int iters, int ncounters);
/* The peer adds 1, the owner 1 << 32: a counter's low half counts the
 * peer's updates, its high half the owner's.  Check every counter against
 * `per` of each; fills t (nbad = wrong counters, first_bad, expected,
 * found, nalt = updates lost, checked, status PASS/FAIL).  Returns nbad. */
unsigned long long pv_atomic_check(const unsigned long long *counts, int ncounters, unsigned long long per,
                                   pv_hz_result *t);

/* The result column of the human report, e.g. "PASS: 12.0 MiB checked, host
 * guard intact (0.02 s)", "FAIL: ...", "not applicable (...)". */
void pv_hz_describe(const pv_hz_result *t, char *buf, size_t len);

#endif
