/* dr_integrity.c - p2p-doctor's rules about the data: wrong data in peer
 * copies, and p2p-verify's hazard tests (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <string.h>

/* ------------------------------------------------------------ hazard tests */

/* p2p-verify's hazard tests: the test, its finding, the finding's texts. */
const dr_hazard dr_hazards[DR_NHAZ] = {
    {"compressible", "verify-compressible-corrupt",
     "p2p-verify's compressible-memory test failed: memory allocated with CU_MEM_ALLOCATION_COMP_GENERIC and shared "
     "with the peer (cuMemSetAccess) held wrong data, or a write landed in host RAM",
     "keep compressible allocations away from P2P between these GPUs (allocate peer buffers without "
     "CU_MEM_ALLOCATION_COMP_GENERIC), or NCCL_P2P_DISABLE=1; please report it with the bundle of build.sh doctor "
     "--collect"},
    {"atomics", "verify-atomics-lost",
     "p2p-verify's atomics test failed: the driver reports native peer atomics, yet atomicAdd from both GPUs on the "
     "same counters lost updates",
     "do not use peer atomics between these GPUs (programs that do: NCCL_P2P_DISABLE=1, or no P2P); please report "
     "it with the bundle of build.sh doctor --collect"},
    {"ordering", "verify-ordering",
     "p2p-verify's ordering test failed: a kernel saw a flag in host memory before the data that the peer wrote "
     "ahead of it (with __threadfence_system() between)",
     "peer writes can arrive after a later flag: anything that hands data between GPUs through flags (NCCL among "
     "them) may read stale data; NCCL_P2P_DISABLE=1 until it is fixed; please report it with the bundle of build.sh "
     "doctor --collect"},
    {"stale", "verify-stale",
     "p2p-verify's stale-mapping test failed: after memory was unmapped and other memory mapped at the same address, "
     "the peer read wrong (or the old) data",
     "a peer keeps stale mappings: allocators that free and reuse memory (every framework's) can hand wrong data "
     "over P2P; NCCL_P2P_DISABLE=1 until it is fixed; please report it with the bundle of build.sh doctor --collect"},
    {"managed", "verify-managed",
     "p2p-verify's managed-memory test failed: memory from cudaMallocManaged, used by both GPUs, held wrong data",
     "do not share managed memory (cudaMallocManaged) between these GPUs with P2P on this driver; please report it "
     "with the bundle of build.sh doctor --collect"},
};

int dr_hazard_index(const char *test)
{
    for (int k = 0; k < DR_NHAZ; k++)
        if (!strcmp(dr_hazards[k].test, test))
            return k;
    return -1;
}

int dr_is_hazard_id(const char *id)
{
    for (int k = 0; k < DR_NHAZ; k++)
        if (!strcmp(dr_hazards[k].id, id))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ BAR1, display, models */

void dr_rule_corruption(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    if (s->selftest.v == 1) {
        dr_note(m, "p2p-verify --self-test injected corruption on purpose: its CORRUPTION lines are not counted");
        return;
    }
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            if (a == b)
                continue;
            pobs_sum *p = PS(c, a, b);
            if (p->corrupt != 1)
                continue;
            int lo = a < b ? a : b, hi = a < b ? b : a;
            dr_finding *f = dr_finding_get(d, "p2p-data-corruption", DR_SCOPE_PAIR, lo, hi, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "peer copies between these GPUs delivered wrong data");
                dr_f_ev(f, &p->corrupt_ev);
            }
        }
    dr_finding *f = NULL;
    if (c->corrupt_unpaired) {
        f = dr_finding_get(d, "p2p-data-corruption", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "a P2P test found wrong data (the GPU pair is not named in the output)");
            dr_f_ev(f, &c->corrupt_unpaired_ev);
        }
    }
    dr_flag_rules(c, DR_ONE_NCCL_WRONG);
    if (s->verify_status.v == 21 && !c->hazard_any) { /* (a failed hazard test has its own finding) */
        f = dr_finding_get(d, "p2p-data-corruption", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "p2p-verify found corrupted peer copies (verdict CORRUPTION)");
            dr_f_ev(f, &s->verify_ev);
        }
    }
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, "p2p-data-corruption"))
            FIX(&d->f[i], "do not use P2P here until the cause is fixed (NCCL_P2P_DISABLE=1 meanwhile); the usual "
                           "causes are an IOMMU translating peer writes (iommu=pt), a display on the GPU, and ACS "
                           "redirection; rerun build.sh verify after each change");
}

/* p2p-verify's hazard tests that failed: one finding per test and pair. */
void dr_rule_hazards(ctx *c)
{
    dr_model *m = c->m;
    if (!c->hazard_any)
        return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            pobs_sum *p = a == b ? NULL : PS(c, a, b);
            for (int k = 0; p && k < DR_NHAZ; k++) {
                if (!(p->hazard & (1u << k)))
                    continue;
                int lo = a < b ? a : b, hi = a < b ? b : a;
                dr_finding *f = dr_finding_get(c->d, dr_hazards[k].id, DR_SCOPE_PAIR, lo, hi, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
                if (!f)
                    continue;
                SUMMARY(f, "%s", dr_hazards[k].summary);
                FIX(f, "%s", dr_hazards[k].fix);
                dr_f_ev(f, &p->hazard_ev[k]);
            }
        }
}
