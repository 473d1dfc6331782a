/* hz_sync.c - the hazard tests of synchronisation between two GPUs: atomic
 * adds from both on the same counters, and data written by one GPU then
 * flagged through host memory, read by the other. */
#define _GNU_SOURCE
#include <string.h>

#include "hazards.h"
#include "pattern.h"

#define AT_COUNTERS 64
#define AT_BLOCKS 32
#define AT_THREADS 256
#define AT_ITERS 256 /* a multiple of AT_COUNTERS: every thread adds 4 times to every counter */
#define ORD_BYTES (1ull << 20)
#define ORD_ROUNDS 16
#define ORD_BLOCKS 16

/* Counters as both GPUs leave them when no update is lost. */
static void perfect_counts(unsigned long long *c, unsigned long long per)
{
    for (int k = 0; k < AT_COUNTERS; k++)
        c[k] = per | (per << 32);
}

static unsigned long long per_counter(void)
{
    return pv_atomic_per_counter((unsigned long long)AT_BLOCKS * AT_THREADS, AT_ITERS, AT_COUNTERS);
}

void pv_hz_atomics_checker_only(pv_hz_result *t)
{
    unsigned long long c[AT_COUNTERS];
    unsigned long long per = per_counter();
    perfect_counts(c, per);
    c[AT_COUNTERS / 2] -= 1; /* one of the peer's updates lost */
    t->injected = 1;
    pv_atomic_check(c, AT_COUNTERS, per, t);
}

int pv_hz_atomics(pv_hz_ctx *cx, int i, int j, pv_hz_result *t)
{
    pv_results *r = cx->r;
    unsigned long long *ctr = NULL, c[AT_COUNTERS];
    if (pv_enable_peer(r, i, j) != 0) {
        t->status = PV_HZS_ERROR;
        snprintf(t->note, sizeof t->note, "cudaDeviceEnablePeerAccess(GPU%d -> GPU%d) failed", i, j);
        return -1;
    }
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, cudaMalloc((void **)&ctr, sizeof c));
    HZ_CK(cx, t, cudaMemset(ctr, 0, sizeof c));
    /* both GPUs wait for one host flag, then add at once: the peer 1, the owner 1 << 32 */
    *cx->flag = 0;
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, pv_k_delay(cx->flag_dev, PV_HZ_TIMEOUT_NS, cx->s[i]));
    HZ_CK(cx, t, pv_k_atomic_add(ctr, AT_COUNTERS, 1ull, AT_ITERS, AT_BLOCKS, AT_THREADS, cx->s[i]));
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, pv_k_delay(cx->flag_dev, PV_HZ_TIMEOUT_NS, cx->s[j]));
    HZ_CK(cx, t, pv_k_atomic_add(ctr, AT_COUNTERS, 1ull << 32, AT_ITERS, AT_BLOCKS, AT_THREADS, cx->s[j]));
    *cx->flag = 1;
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[j]));
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[i]));
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, cudaMemcpy(c, ctr, sizeof c, cudaMemcpyDeviceToHost));
    HZ_CK(cx, t, cudaFree(ctr));
    t->ran = 1;
    if (cx->inject) {
        c[AT_COUNTERS / 2] -= 1; /* self-test lost-update: at the checker */
        t->injected = 1;
    }
    pv_atomic_check(c, AT_COUNTERS, per_counter(), t);
    return 0;
}

int pv_hz_ordering(pv_hz_ctx *cx, int i, int j, pv_hz_result *t)
{
    pv_results *r = cx->r;
    uint32_t *data = NULL;
    unsigned int *done = NULL;
    size_t nwords = ORD_BYTES / 4;
    if (pv_enable_peer(r, i, j) != 0) {
        t->status = PV_HZS_ERROR;
        snprintf(t->note, sizeof t->note, "cudaDeviceEnablePeerAccess(GPU%d -> GPU%d) failed", i, j);
        return -1;
    }
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, cudaMalloc((void **)&data, ORD_BYTES));
    HZ_CK(cx, t, cudaMemset(data, 0, ORD_BYTES));
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, cudaMalloc((void **)&done, sizeof *done));
    uint64_t seed = pv_hz_seed(cx, PV_HZ_ORDERING, i, j, 0, 0);
    int inject_round = cx->inject ? ORD_ROUNDS / 2 : 0;
    t->ran = 1;
    t->status = PV_HZS_PASS;
    for (int round = 1; round <= ORD_ROUNDS; round++) {
        *cx->flag = 0;
        *cx->ack = 0;
        pv_hz_dev h;
        /* the reader first: it waits on the flag in host memory */
        HZ_CK(cx, t, cudaSetDevice(j));
        HZ_CK(cx, t, pv_k_hz_reset(cx->res[j], cx->s[j]));
        HZ_CK(cx, t, pv_k_order_read(data, nwords, cx->flag_dev, cx->ack_dev, round, seed, PV_HZ_TIMEOUT_NS,
                                     cx->res[j], cx->s[j]));
        HZ_CK(cx, t, cudaSetDevice(i));
        HZ_CK(cx, t, cudaMemsetAsync(done, 0, sizeof *done, cx->s[i]));
        HZ_CK(cx, t, pv_k_order_write(data, nwords, done, cx->flag_dev, cx->ack_dev, round, seed,
                                      round == inject_round, PV_HZ_TIMEOUT_NS, ORD_BLOCKS, cx->s[i]));
        HZ_CK(cx, t, cudaStreamSynchronize(cx->s[i]));
        HZ_CK(cx, t, cudaSetDevice(j));
        HZ_CK(cx, t, cudaMemcpyAsync(&h, cx->res[j], sizeof h, cudaMemcpyDeviceToHost, cx->s[j]));
        HZ_CK(cx, t, cudaStreamSynchronize(cx->s[j]));
        if (round == inject_round)
            t->injected = 1;
        t->rounds = round;
        if (h.timed_out) {
            t->status = PV_HZS_ERROR;
            snprintf(t->note, sizeof t->note, "round %d: the reader on GPU%d never saw the flag (timeout %.0f s)",
                     round, j, PV_HZ_TIMEOUT_NS / 1e9);
            break;
        }
        t->checked += ORD_BYTES;
        if (h.nbad && t->nbad == 0) {
            t->status = PV_HZS_FAIL;
            t->nbad = h.nbad;
            t->first_bad = (long long)(h.first_key >> 32);
            t->found = h.first_key & 0xffffffffull;
            t->expected = pv_order_word(seed, round, (uint64_t)t->first_bad);
            t->round = round;
            snprintf(t->what, sizeof t->what, "GPU%d (owner) reading after the flag", j);
        }
    }
    HZ_CK(cx, t, cudaFree(data));
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, cudaFree(done));
    return 0;
}
