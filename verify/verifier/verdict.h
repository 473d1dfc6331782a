/* verdict.h - exit code from the results (pure C). */
#ifndef P2PV_VERDICT_H
#define P2PV_VERDICT_H

#include "results.h"

#define PV_MAX_REASONS 24

typedef struct {
    int code;                       /* PV_EXIT_* */
    const char *label;              /* "PASS", "NO-P2P", "CORRUPTION", ... */
    int nreasons;
    char reasons[PV_MAX_REASONS][256];
    /* summary counters */
    int pairs_without_p2p;
    int corrupt_tests;
    int injected, caught;
    int nccl_no_p2p_conns;
    int hz_failed, hz_errors;       /* hazard tests that failed (not injected) / hit a CUDA error */
    int hz_injected, hz_caught;     /* hazard self-test: injected failures, and those detected */
} pv_verdict;

/* Precedence when several apply: 24, 21, 22, 23, 20 (a self-test whose
 * injection went unnoticed is a broken checker: 22). */
int pv_compute_verdict(const pv_results *r, pv_verdict *v);
const char *pv_exit_label(int code);
/* For a P2P-allowed NCCL run: count connections between GPUs that can
 * access each other which did not use a P2P transport. */
int pv_nccl_non_p2p(const pv_results *r, const pv_nccl_run *run, char *first, size_t firstlen);
/* GPUs i and j are joined by NVLink, and --nvlink keep of build.sh's
 * 535-570 modules is in effect (RMBar1P2PKeepNvlink=1 beside
 * RMForceP2PType=2): the open risk of patch p2p-0006, where GSP firmware may
 * not set up NVLink peers and the pair gets no BAR1 fallback. */
int pv_nvlink_keep_risk(const pv_results *r, int i, int j);

#endif
