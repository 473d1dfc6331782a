/* perf.c - bandwidth and latency matrices, measured the way NVIDIA's
 * p2pBandwidthLatencyTest measures them (so the figures are comparable):
 *  - cudaMemcpyPeerAsync (copy engine) on a non-blocking stream of the source
 *    GPU ("P2P writes"), 40e6 ints = 160e6 bytes per copy, 5 copies per sample;
 *  - the stream is first held by a kernel spinning on a host flag, so all
 *    copies are queued before the start event runs (no launch gaps);
 *  - bidirectional: the second direction on a stream of the peer GPU that
 *    waits on the start event; the stop event waits for both;
 *  - latency: 100 copies of 16 bytes, GPU event time / 100;
 *  - "P2P=Disabled": peer access not enabled, the driver stages through host.
 *  - the same order: uni P2P off, uni on, bi off, bi on, latency off, latency on,
 *    each matrix with freshly created streams and events.
 * Differences: each cell is the median of N samples after a warm-up sample
 * (NVIDIA's tool takes one cold sample), peer access stays enabled for the
 * whole P2P=Enabled matrix (NVIDIA's tool enables/disables it per cell), and
 * pairs without peer access are reported as n/a in the P2P=Enabled matrices
 * (NVIDIA's tool silently falls back to a staged copy there). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "kernels.h"
#include "report.h"

#define PERF_BYTES (40000000ull * 4ull)
#define PERF_REPEAT 5
#define LAT_BYTES 16ull
#define LAT_REPEAT 100
#define DELAY_TIMEOUT_NS 20000000ull

typedef struct {
    uint8_t *buf, *buf2, *lat, *lat2;
    cudaStream_t s0, s1;
    cudaEvent_t start, stop;
} pgpu;

static volatile int *g_flag;
static int *g_flag_dev;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One unidirectional sample i -> j (i == j: local copy).  Returns ms. */
static int sample_uni(pv_results *r, pgpu *p, int i, int j, int lat, float *ms)
{
    unsigned long long bytes = lat ? LAT_BYTES : PERF_BYTES;
    int repeat = lat ? LAT_REPEAT : PERF_REPEAT;
    PV_CK(r, cudaSetDevice(i));
    PV_CK(r, cudaStreamSynchronize(p[i].s0));
    *g_flag = 0;
    PV_CK(r, pv_k_delay((volatile int *)g_flag_dev, DELAY_TIMEOUT_NS, p[i].s0));
    PV_CK(r, cudaEventRecord(p[i].start, p[i].s0));
    for (int k = 0; k < repeat; k++) {
        if (i == j)
            PV_CK(r, cudaMemcpyPeerAsync(lat ? p[i].lat : p[i].buf, i, lat ? p[i].lat2 : p[i].buf2, i, bytes,
                                         p[i].s0));
        else
            PV_CK(r, cudaMemcpyPeerAsync(lat ? p[j].lat : p[j].buf, j, lat ? p[i].lat : p[i].buf, i, bytes,
                                         p[i].s0));
    }
    PV_CK(r, cudaEventRecord(p[i].stop, p[i].s0));
    *g_flag = 1;
    PV_CK(r, cudaStreamSynchronize(p[i].s0));
    PV_CK(r, cudaEventElapsedTime(ms, p[i].start, p[i].stop));
    return 0;
}

/* One bidirectional sample between i and j.  Returns ms. */
static int sample_bi(pv_results *r, pgpu *p, int i, int j, float *ms)
{
    PV_CK(r, cudaSetDevice(i));
    PV_CK(r, cudaStreamSynchronize(p[i].s0));
    PV_CK(r, cudaStreamSynchronize(p[j].s1));
    *g_flag = 0;
    PV_CK(r, pv_k_delay((volatile int *)g_flag_dev, DELAY_TIMEOUT_NS, p[i].s0));
    PV_CK(r, cudaEventRecord(p[i].start, p[i].s0));
    PV_CK(r, cudaStreamWaitEvent(p[j].s1, p[i].start, 0));
    if (i == j) {
        for (int k = 0; k < PERF_REPEAT; k++)
            PV_CK(r, cudaMemcpyPeerAsync(p[i].buf, i, p[i].buf2, i, PERF_BYTES, p[i].s0));
        for (int k = 0; k < PERF_REPEAT; k++)
            PV_CK(r, cudaMemcpyPeerAsync(p[i].buf2, i, p[i].buf, i, PERF_BYTES, p[i].s1));
    } else {
        for (int k = 0; k < PERF_REPEAT; k++)
            PV_CK(r, cudaMemcpyPeerAsync(p[i].buf, i, p[j].buf, j, PERF_BYTES, p[j].s1));
        for (int k = 0; k < PERF_REPEAT; k++)
            PV_CK(r, cudaMemcpyPeerAsync(p[j].buf, j, p[i].buf, i, PERF_BYTES, p[i].s0));
    }
    PV_CK(r, cudaEventRecord(p[j].stop, p[j].s1));
    PV_CK(r, cudaStreamWaitEvent(p[i].s0, p[j].stop, 0));
    PV_CK(r, cudaEventRecord(p[i].stop, p[i].s0));
    *g_flag = 1;
    PV_CK(r, cudaStreamSynchronize(p[i].s0));
    PV_CK(r, cudaStreamSynchronize(p[j].s1));
    PV_CK(r, cudaEventElapsedTime(ms, p[i].start, p[i].stop));
    return 0;
}

enum { KIND_UNI, KIND_BI, KIND_LAT };

static int measure(pv_results *r, pgpu *p, int i, int j, int kind, int reps, double *out)
{
    double v[128];
    for (int k = -1; k < reps; k++) { /* k == -1: warm-up */
        float ms = 0;
        int rc = kind == KIND_BI ? sample_bi(r, p, i, j, &ms) : sample_uni(r, p, i, j, kind == KIND_LAT, &ms);
        if (rc)
            return rc;
        if (k < 0)
            continue;
        double s = ms / 1e3;
        if (kind == KIND_LAT) {
            v[k] = ms * 1e3 / LAT_REPEAT;
        } else {
            double gb = (double)PERF_BYTES * PERF_REPEAT / 1e9;
            if (kind == KIND_BI)
                gb *= 2;
            if (i == j)
                gb *= 2; /* local copy: read and write */
            v[k] = s > 0 ? gb / s : NAN;
        }
    }
    if (pv_verbose) {
        char line[1024];
        int l = 0;
        for (int k = 0; k < reps && l < (int)sizeof line - 16; k++)
            l += snprintf(line + l, sizeof line - (size_t)l, " %.3f", v[k]);
        pv_log("  %s GPU%d->GPU%d samples:%s", kind == KIND_UNI ? "uni" : (kind == KIND_BI ? "bi" : "lat"), i, j,
               line);
    }
    *out = median(v, reps);
    return 0;
}

static int in_pairs(const pv_results *r, int i, int j)
{
    for (int k = 0; k < r->npairs; k++)
        if (r->pair_src[k] == i && r->pair_dst[k] == j)
            return 1;
    return 0;
}

static int set_peer_all(pv_results *r, const int *ids, int n, int enable)
{
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int i = ids[a], j = ids[b];
            if (i == j || r->can_access[i][j] != 1)
                continue;
            if (enable) {
                if (pv_enable_peer(r, i, j))
                    return -1;
            } else {
                PV_CK(r, cudaSetDevice(i));
                cudaError_t e = cudaDeviceDisablePeerAccess(j);
                if (e == cudaErrorPeerAccessNotEnabled)
                    (void)cudaGetLastError();
                else
                    PV_CK(r, e);
            }
        }
    return 0;
}

static int streams_create(pv_results *r, pgpu *p, const int *ids, int n)
{
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaStreamCreateWithFlags(&p[g].s0, cudaStreamNonBlocking));
        PV_CK(r, cudaStreamCreateWithFlags(&p[g].s1, cudaStreamNonBlocking));
        PV_CK(r, cudaEventCreate(&p[g].start));
        PV_CK(r, cudaEventCreate(&p[g].stop));
    }
    return 0;
}

static int streams_destroy(pv_results *r, pgpu *p, const int *ids, int n)
{
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaStreamDestroy(p[g].s0));
        PV_CK(r, cudaStreamDestroy(p[g].s1));
        PV_CK(r, cudaEventDestroy(p[g].start));
        PV_CK(r, cudaEventDestroy(p[g].stop));
    }
    return 0;
}

int pv_run_perf(pv_results *r, const pv_options *o)
{
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    int reps = o->perf_reps < 128 ? o->perf_reps : 127;
    pgpu p[PV_MAX_GPUS];
    memset(p, 0, sizeof p);
    r->perf_bytes = PERF_BYTES;
    r->perf_repeat = PERF_REPEAT;
    r->lat_repeat = LAT_REPEAT;
    r->perf_reps = reps;

    PV_CK(r, cudaHostAlloc((void **)&g_flag, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
    PV_CK(r, cudaHostGetDevicePointer((void **)&g_flag_dev, (void *)g_flag, 0));
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaMalloc((void **)&p[g].buf, PERF_BYTES));
        PV_CK(r, cudaMalloc((void **)&p[g].buf2, PERF_BYTES));
        PV_CK(r, cudaMalloc((void **)&p[g].lat, LAT_BYTES));
        PV_CK(r, cudaMalloc((void **)&p[g].lat2, LAT_BYTES));
        PV_CK(r, cudaMemset(p[g].buf, 0x11, PERF_BYTES));
        PV_CK(r, cudaMemset(p[g].buf2, 0x22, PERF_BYTES));
        PV_CK(r, cudaMemset(p[g].lat, 0x33, LAT_BYTES));
        PV_CK(r, cudaMemset(p[g].lat2, 0x44, LAT_BYTES));
    }

    /* NVIDIA's order: uni off, uni on, bi off, bi on, latency off, latency on */
    static const int kinds[6] = {KIND_UNI, KIND_UNI, KIND_BI, KIND_BI, KIND_LAT, KIND_LAT};
    for (int phase = 0; phase < 6; phase++) {
        int kind = kinds[phase];
        int on = phase % 2 == 1;
        /* --perf-peer-off: the P2P=Enabled phases too run with peer access off */
        if (set_peer_all(r, ids, n, on && !o->perf_peer_off) || streams_create(r, p, ids, n))
            return -1;
        double(*dst)[PV_MAX_GPUS] = kind == KIND_UNI ? (on ? r->uni_on : r->uni_off)
                                    : kind == KIND_BI ? (on ? r->bi_on : r->bi_off)
                                                      : (on ? r->lat_on : r->lat_off);
        pv_log("perf %s P2P=%s", kind == KIND_UNI ? "unidirectional" : (kind == KIND_BI ? "bidirectional" : "latency"),
               on ? "Enabled" : "Disabled");
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                int i = ids[a], j = ids[b];
                if (i != j && !in_pairs(r, i, j))
                    continue;
                if (on && i != j && (r->can_access[i][j] != 1 || r->can_access[j][i] != 1))
                    continue; /* no P2P: nothing to measure with P2P on */
                if (measure(r, p, i, j, kind, reps, &dst[i][j]))
                    return -1;
            }
        if (streams_destroy(r, p, ids, n))
            return -1;
    }
    /* leave peer access enabled, as after the integrity section */
    if (set_peer_all(r, ids, n, 1))
        return -1;

    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaFree(p[g].buf));
        PV_CK(r, cudaFree(p[g].buf2));
        PV_CK(r, cudaFree(p[g].lat));
        PV_CK(r, cudaFree(p[g].lat2));
    }
    PV_CK(r, cudaFreeHost((void *)g_flag));
    r->perf_ran = 1;
    return 0;
}
