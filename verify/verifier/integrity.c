/* integrity.c - byte-exact peer copy checks (CE and SM paths). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "kernels.h"
#include "pattern.h"
#include "report.h"

#define PV_GUARD 4096ull
#define PV_PAD 16384ull
#define PV_CHUNK 4096ull

static const unsigned long long kSrcOff[PV_NUM_CASES] = {0, 1, 4093};
static const unsigned long long kDstOff[PV_NUM_CASES] = {0, 3, 4};

static unsigned long long case_len(int c, unsigned long long size)
{
    if (c == 0)
        return size;
    if (c == 1)
        return size > 1 ? size - 1 : 0;
    return size + 1;
}

typedef struct {
    uint8_t *src, *dst;
    pv_dev_check *res;
    cudaStream_t stream;
    int ready;
} gpu_bufs;

int pv_enable_peer(pv_results *r, int i, int j)
{
    PV_CK(r, cudaSetDevice(i));
    cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        return 0;
    }
    if (e != cudaSuccess && r->peer_fail_src < 0) {
        r->peer_fail_src = i;
        r->peer_fail_dst = j;
    }
    PV_CK(r, e);
    return 0;
}

/* Re-read the failing bytes on the host and confirm the GPU's finding. */
static int host_confirm(pv_results *r, pv_int_result *t, const uint8_t *dst, unsigned long long lo,
                        unsigned long long hi)
{
    long long abs_pos = (long long)t->dst_off + t->first_bad;
    if (abs_pos < (long long)lo || abs_pos >= (long long)hi)
        return 0;
    uint8_t found = 0;
    PV_CK(r, cudaMemcpy(&found, dst + abs_pos, 1, cudaMemcpyDeviceToHost));
    uint8_t exp = (t->first_bad >= 0 && (unsigned long long)t->first_bad < t->len)
                      ? pv_pattern_byte(t->seed, (uint64_t)t->first_bad)
                      : (uint8_t)PV_POISON_BYTE;
    t->expected = exp;
    t->found = found;
    t->host_confirmed = found != exp;
    /* make sure no earlier byte in the preceding window is bad either (the GPU said first) */
    if (t->first_bad > 0 && (unsigned long long)t->first_bad < t->len) {
        size_t w = (size_t)(t->first_bad < 64 ? t->first_bad : 64);
        uint8_t buf[64];
        PV_CK(r, cudaMemcpy(buf, dst + abs_pos - (long long)w, w, cudaMemcpyDeviceToHost));
        long long fb;
        unsigned e2, f2;
        if (pv_pattern_check(buf, w, t->seed, (uint64_t)t->first_bad - w, &fb, &e2, &f2) != 0)
            t->host_confirmed = 0; /* host disagrees: an earlier byte is bad */
    }
    return 0;
}

int pv_run_integrity(pv_results *r, const pv_options *o)
{
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    unsigned long long smax = 0;
    int largest = 0;
    for (int s = 0; s < o->nsizes; s++)
        if (o->sizes[s] > smax) {
            smax = o->sizes[s];
            largest = s;
        }
    unsigned long long alloc = ((smax + PV_PAD) + 15) & ~15ull;

    size_t cap = (size_t)r->npairs * PV_M_COUNT * (size_t)o->nsizes * PV_NUM_CASES * (size_t)o->iters;
    r->ints = calloc(cap ? cap : 1, sizeof(pv_int_result));
    if (!r->ints) {
        r->cuda_error = 1;
        snprintf(r->cuda_error_msg, sizeof r->cuda_error_msg, "out of host memory");
        return -1;
    }
    r->integrity_ran = 1;

    gpu_bufs b[PV_MAX_GPUS];
    memset(b, 0, sizeof b);
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaMalloc((void **)&b[g].src, alloc));
        PV_CK(r, cudaMalloc((void **)&b[g].dst, alloc));
        PV_CK(r, cudaMalloc((void **)&b[g].res, sizeof(pv_dev_check)));
        PV_CK(r, cudaStreamCreateWithFlags(&b[g].stream, cudaStreamNonBlocking));
        PV_CK(r, cudaMemset(b[g].src, 0, alloc));
        PV_CK(r, cudaMemset(b[g].dst, 0, alloc));
        b[g].ready = 1;
    }
    for (int k = 0; k < r->npairs; k++) {
        int i = r->pair_src[k], j = r->pair_dst[k];
        if (r->can_access[i][j] == 1 && pv_enable_peer(r, i, j) != 0)
            return -1;
        if (r->can_access[j][i] == 1 && pv_enable_peer(r, j, i) != 0)
            return -1;
    }

    for (int k = 0; k < r->npairs; k++) {
        int i = r->pair_src[k], j = r->pair_dst[k];
        for (int m = 0; m < PV_M_COUNT; m++) {
            pv_log("integrity GPU%d->GPU%d %s", i, j, pv_method_name(m));
            for (int s = 0; s < o->nsizes; s++)
                for (int c = 0; c < PV_NUM_CASES; c++)
                    for (int it = 0; it < o->iters; it++) {
                        unsigned long long len = case_len(c, o->sizes[s]);
                        if (len == 0)
                            continue;
                        pv_int_result *t = &r->ints[r->nint++];
                        t->src = i;
                        t->dst = j;
                        t->method = m;
                        t->size_idx = s;
                        t->case_idx = c;
                        t->iter = it;
                        t->size = o->sizes[s];
                        t->src_off = kSrcOff[c];
                        t->dst_off = kDstOff[c];
                        t->len = len;
                        t->seed = pv_test_seed(o->seed, i, j, m, s, c, it);
                        t->first_bad = -1;
                        if (m == PV_M_SM_STORE && r->can_access[i][j] != 1) {
                            t->status = PV_INT_SKIPPED;
                            snprintf(t->note, sizeof t->note, "GPU%d cannot access GPU%d (no peer access)", i, j);
                            continue;
                        }
                        if (m == PV_M_SM_LOAD && r->can_access[j][i] != 1) {
                            t->status = PV_INT_SKIPPED;
                            snprintf(t->note, sizeof t->note, "GPU%d cannot access GPU%d (no peer access)", j, i);
                            continue;
                        }
                        if (m == PV_M_CE && r->can_access[i][j] != 1)
                            snprintf(t->note, sizeof t->note, "no peer access: the driver staged this copy");

                        uint8_t *src = b[i].src + t->src_off;
                        uint8_t *dst = b[j].dst + t->dst_off;
                        unsigned long long lo = t->dst_off >= PV_GUARD ? t->dst_off - PV_GUARD : 0;
                        unsigned long long hi = t->dst_off + len + PV_GUARD;
                        if (hi > alloc)
                            hi = alloc;

                        /* self-test injection point: a 4 KiB chunk in the middle */
                        int inject = o->self_test != PV_ST_NONE && s == largest && it == 0 && len >= 2 * PV_CHUNK;
                        unsigned long long x = (len / 2) & ~(PV_CHUNK - 1);
                        if (inject) {
                            t->injected = 1;
                            t->inject_off = (long long)x;
                            t->inject_len = o->self_test == PV_ST_FLIP_BIT ? 1 : PV_CHUNK;
                        }
                        int drop = inject && o->self_test == PV_ST_DROP_CHUNK;

                        /* 1. pattern into the source, 2. poison the destination */
                        PV_CK(r, cudaSetDevice(i));
                        PV_CK(r, pv_k_fill(b[i].src, t->src_off, len, t->seed, b[i].stream));
                        PV_CK(r, cudaSetDevice(j));
                        PV_CK(r, cudaMemsetAsync(b[j].dst + lo, PV_POISON_BYTE, hi - lo, b[j].stream));
                        PV_CK(r, cudaStreamSynchronize(b[j].stream));
                        PV_CK(r, cudaSetDevice(i));
                        PV_CK(r, cudaStreamSynchronize(b[i].stream));

                        /* 3. the copy under test */
                        if (m == PV_M_CE) {
                            PV_CK(r, cudaSetDevice(i));
                            if (drop) {
                                PV_CK(r, cudaMemcpyPeerAsync(dst, j, src, i, x, b[i].stream));
                                PV_CK(r, cudaMemcpyPeerAsync(dst + x + PV_CHUNK, j, src + x + PV_CHUNK, i,
                                                             len - x - PV_CHUNK, b[i].stream));
                            } else {
                                PV_CK(r, cudaMemcpyPeerAsync(dst, j, src, i, len, b[i].stream));
                            }
                            PV_CK(r, cudaStreamSynchronize(b[i].stream));
                        } else {
                            int g = m == PV_M_SM_STORE ? i : j;
                            PV_CK(r, cudaSetDevice(g));
                            PV_CK(r, pv_k_copy(dst, src, len, drop ? x : 0, drop ? x + PV_CHUNK : 0, b[g].stream));
                            PV_CK(r, cudaStreamSynchronize(b[g].stream));
                        }

                        /* 4. self-test corruption after the copy, before the check */
                        PV_CK(r, cudaSetDevice(j));
                        if (inject && o->self_test == PV_ST_ZERO_CHUNK)
                            PV_CK(r, cudaMemsetAsync(dst + x, 0, PV_CHUNK, b[j].stream));
                        else if (inject && o->self_test == PV_ST_FLIP_BIT)
                            PV_CK(r, pv_k_flip(dst + x, 0x10, b[j].stream));

                        /* 5. check every byte on the destination GPU */
                        pv_dev_check hres;
                        PV_CK(r, pv_k_reset_check(b[j].res, b[j].stream));
                        PV_CK(r, pv_k_check(b[j].dst, lo, hi, t->dst_off, len, t->seed, b[j].res, b[j].stream));
                        PV_CK(r, cudaMemcpyAsync(&hres, b[j].res, sizeof hres, cudaMemcpyDeviceToHost, b[j].stream));
                        PV_CK(r, cudaStreamSynchronize(b[j].stream));
                        if (hres.nbad == 0) {
                            t->status = PV_INT_OK;
                            continue;
                        }
                        t->status = PV_INT_CORRUPT;
                        t->nbad = hres.nbad;
                        t->first_bad = hres.first_bad;
                        if (host_confirm(r, t, b[j].dst, lo, hi) != 0)
                            return -1;
                        if (!t->injected) {
                            char line[512];
                            pv_format_corruption(t, line, sizeof line);
                            pv_log("%s", line);
                        }
                    }
        }
    }

    for (int a = 0; a < n; a++) {
        int g = ids[a];
        if (!b[g].ready)
            continue;
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaFree(b[g].src));
        PV_CK(r, cudaFree(b[g].dst));
        PV_CK(r, cudaFree(b[g].res));
        PV_CK(r, cudaStreamDestroy(b[g].stream));
    }
    return 0;
}
