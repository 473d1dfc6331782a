/* verdict.c - verdict computation (pure C). */
#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bar1room.h"
#include "hzcheck.h"
#include "ncclparse.h"
#include "sysparse.h"

const char *pv_exit_label(int code)
{
    switch (code) {
    case PV_EXIT_OK: return "PASS";
    case PV_EXIT_USAGE: return "USAGE";
    case PV_EXIT_NO_P2P: return "NO-P2P";
    case PV_EXIT_CORRUPTION: return "CORRUPTION";
    case PV_EXIT_CUDA: return "CUDA-ERROR";
    case PV_EXIT_NCCL: return "NCCL-ERROR";
    case PV_EXIT_FEW_GPUS: return "FEWER-THAN-2-GPUS";
    default: return "?";
    }
}

static void add_reason(pv_verdict *v, const char *fmt, ...)
{
    if (v->nreasons >= PV_MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reasons[v->nreasons], sizeof v->reasons[0], fmt, ap);
    va_end(ap);
    v->nreasons++;
}

const char *pv_method_name(int m)
{
    switch (m) {
    case PV_M_CE: return "cudaMemcpyPeerAsync";
    case PV_M_SM_STORE: return "sm-store";
    case PV_M_SM_LOAD: return "sm-load";
    default: return "?";
    }
}

const char *pv_self_test_name(int m)
{
    switch (m) {
    case PV_ST_ZERO_CHUNK: return "zero-chunk";
    case PV_ST_DROP_CHUNK: return "drop-chunk";
    case PV_ST_FLIP_BIT: return "flip-bit";
    case PV_ST_COMP_CORRUPT: return "comp-corrupt";
    case PV_ST_LOST_UPDATE: return "lost-update";
    case PV_ST_FLAG_BEFORE_DATA: return "flag-before-data";
    case PV_ST_STALE: return "stale";
    case PV_ST_MANAGED_CORRUPT: return "managed-corrupt";
    case PV_ST_CAP_CORRUPT: return "cap-corrupt";
    default: return "none";
    }
}

void pv_results_init(pv_results *r)
{
    memset(r, 0, sizeof(*r));
    r->peer_fail_src = r->peer_fail_dst = -1;
    for (int i = 0; i < PV_MAX_GPUS; i++) {
        r->gpu[i].bar1_bytes = -1;
        r->gpu[i].nvlink_active = -1;
        r->gpu[i].smi_index = -1;
        for (int j = 0; j < PV_MAX_GPUS; j++) {
            r->uni_on[i][j] = r->uni_off[i][j] = NAN;
            r->bi_on[i][j] = r->bi_off[i][j] = NAN;
            r->lat_on[i][j] = r->lat_off[i][j] = NAN;
            r->can_access[i][j] = -1;
            r->native_atomics[i][j] = -1;
            r->perf_rank[i][j] = -1;
        }
    }
}

int pv_nccl_non_p2p(const pv_results *r, const pv_nccl_run *run, char *first, size_t firstlen)
{
    int bad = 0;
    if (first && firstlen)
        first[0] = '\0';
    for (int k = 0; k < run->nconn; k++) {
        const pv_nccl_conn *c = &run->conn[k];
        if (c->src_rank < 0 || c->dst_rank < 0 || c->src_rank >= r->nccl.ngpus || c->dst_rank >= r->nccl.ngpus)
            continue;
        int a = r->nccl.devs[c->src_rank], b = r->nccl.devs[c->dst_rank];
        if (a == b || a < 0 || b < 0 || a >= PV_MAX_GPUS || b >= PV_MAX_GPUS)
            continue;
        if (r->can_access[a][b] != 1)
            continue;
        char cls[32];
        pv_nccl_transport_class(c->transport, cls, sizeof cls);
        if (strcmp(cls, "P2P") != 0) {
            if (bad == 0 && first && firstlen)
                snprintf(first, firstlen, "channel %02d GPU%d->GPU%d via %s", c->channel, a, b, c->transport);
            bad++;
        }
    }
    return bad;
}

int pv_nvlink_keep_risk(const pv_results *r, int i, int j)
{
    int major = atoi(r->driver_version);
    return i >= 0 && j >= 0 && r->link[i][j].type == PV_LINK_NVLINK && major >= 535 && major < 575 &&
           pv_regdword(r->registry_dwords, "RMBar1P2PKeepNvlink") == 1 &&
           pv_regdword(r->registry_dwords, "RMForceP2PType") == 2;
}

/* An NVLink pair without working peer access where --nvlink keep is in
 * effect on 535-570: name the open risk of p2p-0006 and its fix. */
static void keep_risk_reasons(const pv_results *r, pv_verdict *v)
{
    for (int i = 0; i < r->ngpus; i++)
        for (int j = i + 1; j < r->ngpus; j++) {
            int failed = r->can_access[i][j] == 0 || r->can_access[j][i] == 0 ||
                         (r->peer_fail_src == i && r->peer_fail_dst == j) || (r->peer_fail_src == j && r->peer_fail_dst == i);
            if (failed && pv_nvlink_keep_risk(r, i, j))
                add_reason(v, "GPU%d<->GPU%d: NVLink, no working peer access, --nvlink keep in effect on %.16s "
                              "(RMBar1P2PKeepNvlink=1): GSP may not set up NVLink peers under RMForceP2PType=2, and the "
                              "pair gets no BAR1 fallback; fix: build.sh install <tag> --nvlink off",
                           i, j, r->driver_version);
        }
}

/* The hazard tests: count failures (the first ones named), CUDA errors and
 * self-test injections.  Returns 1 when a test failed without an injection. */
static int hazard_verdict(const pv_results *r, pv_verdict *v)
{
    if (!r->hazards_ran)
        return 0;
    for (int k = 0; k < r->npairs; k++)
        for (int t = 0; t < PV_HZ_COUNT; t++) {
            const pv_hz_result *x = &r->hz[k][t];
            if (x->status == PV_HZS_ERROR)
                v->hz_errors++;
            if (x->injected) {
                v->hz_injected++;
                if (x->status == PV_HZS_FAIL)
                    v->hz_caught++;
                continue;
            }
            if (x->status == PV_HZS_FAIL) {
                v->hz_failed++;
                if (v->hz_failed <= 4) {
                    char d[400];
                    pv_hz_describe(x, d, sizeof d);
                    add_reason(v, "HAZARD %s GPU%d->GPU%d: %s", pv_hz_name(t), x->src, x->dst, d);
                }
            }
        }
    if (v->hz_failed > 4)
        add_reason(v, "%d hazard tests failed in all", v->hz_failed);
    return v->hz_failed > 0;
}

int pv_compute_verdict(const pv_results *r, pv_verdict *v)
{
    memset(v, 0, sizeof(*v));
    int few = 0, corrupt = 0, cuda = 0, nccl = 0, nop2p = 0, broken_selftest = 0;

    if (r->ngpus < 2 && !r->cuda_error) {
        few = 1;
        add_reason(v, "%d CUDA GPU%s visible: P2P needs at least two", r->ngpus, r->ngpus == 1 ? "" : "s");
    }

    /* P2P access */
    for (int k = 0; k < r->npairs; k++) {
        int i = r->pair_src[k], j = r->pair_dst[k];
        if (r->can_access[i][j] != 1) {
            v->pairs_without_p2p++;
            if (v->pairs_without_p2p <= 4)
                add_reason(v, "no P2P: cudaDeviceCanAccessPeer(GPU%d -> GPU%d) = %d", i, j, r->can_access[i][j]);
        }
    }
    if (v->pairs_without_p2p > 0)
        nop2p = 1;
    if (v->pairs_without_p2p > 4)
        add_reason(v, "no P2P on %d pairs in all", v->pairs_without_p2p);

    /* integrity */
    int errors = 0;
    for (int k = 0; k < r->nint; k++) {
        const pv_int_result *t = &r->ints[k];
        if (t->injected) {
            v->injected++;
            if (t->status == PV_INT_CORRUPT)
                v->caught++;
        }
        if (t->status == PV_INT_CORRUPT) {
            v->corrupt_tests++;
            if (!t->injected && v->corrupt_tests <= 4)
                add_reason(v, "CORRUPTION GPU%d->GPU%d %s size=%llu first bad offset 0x%llx", t->src, t->dst,
                           pv_method_name(t->method), t->size, (unsigned long long)t->first_bad);
        } else if (t->status == PV_INT_ERROR) {
            errors++;
        }
    }
    if (v->corrupt_tests > v->caught || (v->corrupt_tests > 0 && r->self_test == PV_ST_NONE))
        corrupt = 1;
    int hz_self = pv_self_test_hazard(r->self_test);
    if (hazard_verdict(r, v))
        corrupt = 1;
    if (hz_self >= 0) {
        if (v->hz_injected == 0) {
            broken_selftest = 1;
            add_reason(v, "self-test %s: no failure was injected (the %s test ran on no pair)",
                       pv_self_test_name(r->self_test), pv_hz_name(hz_self));
        } else if (v->hz_caught < v->hz_injected) {
            broken_selftest = 1;
            add_reason(v, "self-test %s: only %d of %d injected failures were detected: the checker is broken",
                       pv_self_test_name(r->self_test), v->hz_caught, v->hz_injected);
        } else {
            corrupt = 1;
            add_reason(v, "self-test %s: the injected failure was detected in all %d %s test%s (as intended)",
                       pv_self_test_name(r->self_test), v->hz_injected, pv_hz_name(hz_self),
                       v->hz_injected == 1 ? "" : "s");
        }
    } else if (r->self_test != PV_ST_NONE && r->self_test != PV_ST_CAP_CORRUPT) {
        if (v->injected == 0) {
            broken_selftest = 1;
            add_reason(v, "self-test %s: no corruption was injected (no test of the largest size ran)",
                       pv_self_test_name(r->self_test));
        } else if (v->caught < v->injected) {
            broken_selftest = 1;
            add_reason(v, "self-test %s: only %d of %d injected corruptions were detected: the checker is broken",
                       pv_self_test_name(r->self_test), v->caught, v->injected);
        } else {
            corrupt = 1;
            add_reason(v, "self-test %s: all %d injected corruptions were detected (as intended)",
                       pv_self_test_name(r->self_test), v->injected);
        }
    }
    if (errors) {
        cuda = 1;
        add_reason(v, "%d integrity test%s hit a CUDA error", errors, errors == 1 ? "" : "s");
    }
    if (v->hz_errors) {
        cuda = 1;
        add_reason(v, "%d hazard test%s hit a CUDA error", v->hz_errors, v->hz_errors == 1 ? "" : "s");
    }
    if (r->cuda_error) {
        cuda = 1;
        add_reason(v, "CUDA error: %s", r->cuda_error_msg);
    }
    keep_risk_reasons(r, v);

    /* --peer-cap: the owner must work again once its memory is freed */
    int cap_injected = 0, cap_caught = 0;
    for (int k = 0; r->peer_cap_ran && k < r->npeer_cap; k++) {
        const pv_peer_cap *c = &r->peer_cap[k];
        if (c->injected) {
            cap_injected++;
            cap_caught += c->status == PV_CAP_FAIL;
            continue;
        }
        if (c->status != PV_CAP_FAIL)
            continue;
        char d[400];
        pv_peer_cap_describe(c, r->gpu[c->owner].bar1_bytes, d, sizeof d);
        add_reason(v, "PEER CAP %s", d);
        if (strstr(c->note, "wrong bytes"))
            corrupt = 1;
        else
            cuda = 1;
    }
    if (r->self_test == PV_ST_CAP_CORRUPT) {
        if (cap_injected == 0) {
            broken_selftest = 1;
            add_reason(v, "self-test cap-corrupt: nothing was injected (no GPU's cap was measured)%s", "");
        } else if (cap_caught < cap_injected) {
            broken_selftest = 1;
            add_reason(v, "self-test cap-corrupt: only %d of %d injected wrong bytes were detected: the check is broken",
                       cap_caught, cap_injected);
        } else {
            corrupt = 1;
            add_reason(v, "self-test cap-corrupt: the injected wrong byte was detected for all %d GPU%s (as intended)",
                       cap_injected, cap_injected == 1 ? "" : "s");
        }
    }

    /* NCCL */
    if (r->nccl.state == PV_NCCL_RAN) {
        for (int p = 0; p < 2; p++) {
            const pv_nccl_run *run = &r->nccl.run[p];
            const char *what = p == 0 ? "P2P allowed" : "NCCL_P2P_DISABLE=1";
            if (!run->ran)
                continue;
            if (!run->ok) {
                nccl = 1;
                add_reason(v, "NCCL (%s): %s", what, run->error[0] ? run->error : "failed");
            }
            for (int s = 0; s < run->nsizes; s++)
                if (run->nbad[s]) {
                    nccl = 1;
                    add_reason(v, "NCCL (%s): all-reduce of %llu bytes wrong: %llu bad elements, first #%lld "
                                  "expected %g found %g",
                               what, run->bytes[s], run->nbad[s], run->first_bad[s], run->expected[s],
                               run->found[s]);
                }
        }
        const pv_nccl_run *on = &r->nccl.run[0];
        if (on->ran && on->ok) {
            char first[200];
            v->nccl_no_p2p_conns = pv_nccl_non_p2p(r, on, first, sizeof first);
            if (v->nccl_no_p2p_conns > 0) {
                nop2p = 1;
                add_reason(v, "NCCL did not use P2P where P2P is available: %d connection%s, e.g. %s",
                           v->nccl_no_p2p_conns, v->nccl_no_p2p_conns == 1 ? "" : "s", first);
            }
        }
    }

    if (few)
        v->code = PV_EXIT_FEW_GPUS;
    else if (broken_selftest)
        v->code = PV_EXIT_CUDA;
    else if (corrupt)
        v->code = PV_EXIT_CORRUPTION;
    else if (cuda)
        v->code = PV_EXIT_CUDA;
    else if (nccl)
        v->code = PV_EXIT_NCCL;
    else if (nop2p)
        v->code = PV_EXIT_NO_P2P;
    else
        v->code = PV_EXIT_OK;
    v->label = pv_exit_label(v->code);
    if (v->code == PV_EXIT_OK && v->nreasons == 0)
        add_reason(v, "every pair has P2P and every checked byte arrived intact%s",
                   r->hazards_ran ? "; no hazard test failed" : "");
    return v->code;
}
