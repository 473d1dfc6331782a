/* nccl_run.c - NCCL all-reduce with P2P allowed and with NCCL_P2P_DISABLE=1.
 *
 * NCCL reads its environment once per process, so each phase runs in a child
 * process: this same binary re-executed with the hidden subcommand
 * "__nccl-child" and the environment set for that phase.  The child dlopen()s
 * libnccl.so.2 (no link-time dependency), runs ncclCommInitAll over the GPUs,
 * times out-of-place float-sum all-reduces the way nccl-tests does (warm-up,
 * one synchronising call, then N back-to-back calls timed with a host clock
 * around enqueue + stream sync, buffers rotated through the largest size),
 * checks the result against the known per-rank values, and prints one line
 * per size on stdout.  The parent parses that and NCCL's INFO log
 * (NCCL_DEBUG_FILE) for the transport of every channel. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "kernels.h"
#include "ncclparse.h"
#include "proc.h"
#include "report.h"

/* ---- the few NCCL declarations we need (no nccl.h required) ---- */
typedef struct ncclComm *pv_ncclComm_t;
#define PV_NCCL_SUCCESS 0
#define PV_NCCL_FLOAT32 7
#define PV_NCCL_SUM 0
#ifdef PV_HAVE_NCCL_H
#include <nccl.h>
_Static_assert(ncclFloat32 == PV_NCCL_FLOAT32, "ncclFloat32");
_Static_assert(ncclSum == PV_NCCL_SUM, "ncclSum");
_Static_assert(ncclSuccess == PV_NCCL_SUCCESS, "ncclSuccess");
#endif

#define CHILD_DLOPEN_FAILED 3
#define NCCL_TIMEOUT_MS 180000

typedef struct {
    void *h;
    int (*getVersion)(int *);
    int (*commInitAll)(pv_ncclComm_t *, int, const int *);
    int (*commDestroy)(pv_ncclComm_t);
    int (*allReduce)(const void *, void *, size_t, int, int, pv_ncclComm_t, cudaStream_t);
    int (*groupStart)(void);
    int (*groupEnd)(void);
    const char *(*errStr)(int);
    int (*memAlloc)(void **, size_t); /* NCCL >= 2.19; nccl-tests allocates with it */
    int (*memFree)(void *);
} pv_ncclapi;

/* ------------------------------------------------------------ child */

static void child_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ERROR ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

#define CCK(call)                                                                                           \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            child_err("CUDA %s: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, __LINE__);           \
            return 1;                                                                                       \
        }                                                                                                   \
    } while (0)
#define NCK(call)                                                                                           \
    do {                                                                                                    \
        int e_ = (call);                                                                                    \
        if (e_ != PV_NCCL_SUCCESS) {                                                                        \
            child_err("NCCL %s: %s (%d)", #call, api.errStr ? api.errStr(e_) : "?", e_);                   \
            return 1;                                                                                       \
        }                                                                                                   \
    } while (0)

static int run_allreduce(pv_ncclapi api, int n, pv_ncclComm_t *comms, float **send, float **recv,
                         cudaStream_t *st, const int *devs, size_t bytes, size_t shift)
{
    size_t count = bytes / sizeof(float);
    NCK(api.groupStart());
    for (int r = 0; r < n; r++) {
        (void)devs;
        NCK(api.allReduce((const char *)send[r] + shift, (char *)recv[r] + shift, count, PV_NCCL_FLOAT32,
                          PV_NCCL_SUM, comms[r], st[r]));
    }
    NCK(api.groupEnd());
    return 0;
}

static int sync_all(int n, const int *devs, cudaStream_t *st)
{
    for (int r = 0; r < n; r++) {
        CCK(cudaSetDevice(devs[r]));
        CCK(cudaStreamSynchronize(st[r]));
    }
    return 0;
}

int pv_nccl_child_main(int argc, char **argv)
{
    const char *lib = "libnccl.so.2";
    int devs[PV_MAX_GPUS], n = 0;
    unsigned long long sizes[PV_MAX_SIZES];
    int nsizes = 0, warmup = 5, iters = 20;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--lib") == 0) {
            lib = argv[i + 1];
        } else if (strcmp(argv[i], "--gpus") == 0) {
            char *s = argv[i + 1];
            while (*s && n < PV_MAX_GPUS) {
                devs[n++] = (int)strtol(s, &s, 10);
                if (*s == ',')
                    s++;
            }
        } else if (strcmp(argv[i], "--sizes") == 0) {
            char *s = argv[i + 1];
            while (*s && nsizes < PV_MAX_SIZES) {
                sizes[nsizes++] = strtoull(s, &s, 10);
                if (*s == ',')
                    s++;
            }
        } else if (strcmp(argv[i], "--warmup") == 0) {
            warmup = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--iters") == 0) {
            iters = atoi(argv[i + 1]);
        }
    }
    if (n < 1 || nsizes < 1 || iters < 1) {
        child_err("bad child arguments");
        return 1;
    }
    pv_ncclapi api;
    memset(&api, 0, sizeof api);
    api.h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!api.h) {
        const char *e = dlerror();
        child_err("cannot dlopen %s: %s", lib, e ? e : "?");
        return CHILD_DLOPEN_FAILED;
    }
#define SYM(field, name) *(void **)(&api.field) = dlsym(api.h, name)
    SYM(getVersion, "ncclGetVersion");
    SYM(commInitAll, "ncclCommInitAll");
    SYM(commDestroy, "ncclCommDestroy");
    SYM(allReduce, "ncclAllReduce");
    SYM(groupStart, "ncclGroupStart");
    SYM(groupEnd, "ncclGroupEnd");
    SYM(errStr, "ncclGetErrorString");
    SYM(memAlloc, "ncclMemAlloc");
    SYM(memFree, "ncclMemFree");
#undef SYM
    if (!api.getVersion || !api.commInitAll || !api.commDestroy || !api.allReduce || !api.groupStart ||
        !api.groupEnd) {
        child_err("%s lacks the NCCL symbols needed (ncclCommInitAll, ncclAllReduce, ...)", lib);
        return CHILD_DLOPEN_FAILED;
    }
    int version = 0;
    NCK(api.getVersion(&version));
    printf("VERSION %d\n", version);
    fflush(stdout);

    unsigned long long maxb = 0;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > maxb)
            maxb = sizes[s];
    pv_ncclComm_t comms[PV_MAX_GPUS];
    NCK(api.commInitAll(comms, n, devs));
    /* buffers as nccl-tests allocates them: ncclMemAlloc when NCCL has it */
    float *send[PV_MAX_GPUS], *recv[PV_MAX_GPUS];
    cudaStream_t st[PV_MAX_GPUS];
    pv_dev_check *res[PV_MAX_GPUS];
    for (int r = 0; r < n; r++) {
        CCK(cudaSetDevice(devs[r]));
        if (api.memAlloc && api.memFree) {
            NCK(api.memAlloc((void **)&send[r], maxb));
            NCK(api.memAlloc((void **)&recv[r], maxb));
        } else {
            CCK(cudaMalloc((void **)&send[r], maxb));
            CCK(cudaMalloc((void **)&recv[r], maxb));
        }
        CCK(cudaMalloc((void **)&res[r], sizeof(pv_dev_check)));
        CCK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
        CCK(pv_k_fill_float(send[r], maxb / sizeof(float), r, st[r]));
        CCK(cudaMemsetAsync(recv[r], 0, maxb, st[r]));
    }
    if (sync_all(n, devs, st))
        return 1;

    for (int s = 0; s < nsizes; s++) {
        size_t bytes = sizes[s];
        size_t steps = bytes ? maxb / bytes : 1;
        if (steps < 1)
            steps = 1;
        for (int w = 0; w < warmup; w++)
            if (run_allreduce(api, n, comms, send, recv, st, devs, bytes, bytes * ((size_t)w % steps)))
                return 1;
        if (sync_all(n, devs, st))
            return 1;
        /* one synchronising call, then the timed loop (as nccl-tests' BenchTime) */
        if (run_allreduce(api, n, comms, send, recv, st, devs, bytes, 0) || sync_all(n, devs, st))
            return 1;
        double t0 = pv_now_s();
        for (int it = 0; it < iters; it++)
            if (run_allreduce(api, n, comms, send, recv, st, devs, bytes, bytes * ((size_t)it % steps)))
                return 1;
        if (sync_all(n, devs, st))
            return 1;
        double dt = (pv_now_s() - t0) / iters;
        double algbw = (double)bytes / 1e9 / dt;
        double busbw = algbw * 2.0 * (double)(n - 1) / (double)n;

        /* correctness: poison (NaN), one all-reduce, check every element on each GPU */
        for (int r = 0; r < n; r++) {
            CCK(cudaSetDevice(devs[r]));
            CCK(cudaMemsetAsync(recv[r], 0xff, bytes, st[r]));
        }
        if (run_allreduce(api, n, comms, send, recv, st, devs, bytes, 0))
            return 1;
        unsigned long long nbad = 0;
        long long first = -1;
        double exp = 0, found = 0;
        for (int r = 0; r < n; r++) {
            CCK(cudaSetDevice(devs[r]));
            CCK(pv_k_reset_check(res[r], st[r]));
            CCK(pv_k_check_float(recv[r], bytes / sizeof(float), n, res[r], st[r]));
            pv_dev_check h;
            CCK(cudaMemcpyAsync(&h, res[r], sizeof h, cudaMemcpyDeviceToHost, st[r]));
            CCK(cudaStreamSynchronize(st[r]));
            if (h.nbad) {
                if (nbad == 0) {
                    float fv = 0;
                    first = h.first_bad;
                    CCK(cudaMemcpy(&fv, recv[r] + first, sizeof fv, cudaMemcpyDeviceToHost));
                    found = fv;
                    exp = (double)(((unsigned long long)first % 251) + 1) * (double)(n * (n + 1) / 2);
                }
                nbad += h.nbad;
            }
        }
        printf("SIZE %zu %.3f %.4f %.4f %llu %lld %.6g %.6g\n", bytes, dt * 1e6, algbw, busbw, nbad, first, exp,
               found);
        fflush(stdout);
    }
    for (int r = 0; r < n; r++) {
        cudaSetDevice(devs[r]);
        if (api.memAlloc && api.memFree) {
            api.memFree(send[r]);
            api.memFree(recv[r]);
        }
        api.commDestroy(comms[r]);
    }
    printf("DONE\n");
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------ parent */

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void tail_of(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    char *s = pv_read_file(path, 1 << 20);
    if (!s)
        return;
    size_t l = strlen(s);
    while (l && (s[l - 1] == '\n' || s[l - 1] == ' '))
        s[--l] = '\0';
    const char *start = l > 300 ? s + l - 300 : s;
    snprintf(out, len, "%s", start);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
    free(s);
}

int pv_run_nccl(pv_results *r, const pv_options *o)
{
    pv_nccl *nc = &r->nccl;
    nc->warmup = o->nccl_warmup;
    nc->iters = o->nccl_iters;
    if (o->no_nccl) {
        nc->state = PV_NCCL_NOT_RUN;
        snprintf(nc->reason, sizeof nc->reason, "%s", o->self_test ? "--self-test implies --no-nccl" : "--no-nccl");
        return 0;
    }
    int ids[PV_MAX_GPUS];
    nc->ngpus = pv_pair_gpus(r, ids);
    memcpy(nc->devs, ids, sizeof ids);

    /* which library */
    if (o->nccl_lib[0]) {
        snprintf(nc->lib, sizeof nc->lib, "%s", o->nccl_lib);
        if (strchr(nc->lib, '/') && !file_exists(nc->lib)) {
            nc->state = PV_NCCL_SKIP;
            snprintf(nc->reason, sizeof nc->reason, "--nccl-lib %.400s: no such file", nc->lib);
            return 0;
        }
    } else {
        const char *home = getenv("NCCL_HOME");
        char cand[512];
        nc->lib[0] = '\0';
        if (home && *home) {
            snprintf(cand, sizeof cand, "%.400s/lib/libnccl.so.2", home);
            if (file_exists(cand))
                snprintf(nc->lib, sizeof nc->lib, "%s", cand);
        }
        if (!nc->lib[0])
            snprintf(nc->lib, sizeof nc->lib, "libnccl.so.2");
    }

    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        nc->state = PV_NCCL_SKIP;
        snprintf(nc->reason, sizeof nc->reason, "cannot find own executable (/proc/self/exe)");
        return 0;
    }
    self[sl] = '\0';
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/p2p-verify.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        nc->state = PV_NCCL_SKIP;
        snprintf(nc->reason, sizeof nc->reason, "cannot create a temporary directory: %s", strerror(errno));
        return 0;
    }

    char gpus[128] = "", sizes[512] = "", warm[16], its[16];
    for (int k = 0; k < nc->ngpus; k++)
        snprintf(gpus + strlen(gpus), sizeof gpus - strlen(gpus), "%s%d", k ? "," : "", nc->devs[k]);
    for (int s = 0; s < o->n_nccl_sizes; s++)
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%llu", s ? "," : "", o->nccl_sizes[s]);
    snprintf(warm, sizeof warm, "%d", o->nccl_warmup);
    snprintf(its, sizeof its, "%d", o->nccl_iters);

    nc->state = PV_NCCL_RAN;
    for (int phase = 0; phase < 2; phase++) {
        pv_nccl_run *run = &nc->run[phase];
        char logf[PATH_MAX + 32], errf[PATH_MAX + 32];
        snprintf(logf, sizeof logf, "%s/nccl-%s.log", dir, phase == 0 ? "p2p" : "nop2p");
        snprintf(errf, sizeof errf, "%s/child-%s.err", dir, phase == 0 ? "p2p" : "nop2p");
        pv_envset env[] = {
            {"NCCL_DEBUG", "INFO"},
            {"NCCL_DEBUG_SUBSYS", "INIT,ENV,P2P,SHM,NET"},
            {"NCCL_DEBUG_FILE", logf},
            {"NCCL_NVLS_ENABLE", "0"}, /* never NVLink multicast */
            {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
            {"NVSHMEM_DISABLE_NVLS", "1"},
            {"NCCL_P2P_DISABLE", phase == 0 ? NULL : "1"},
        };
        char *argv[] = {self, "__nccl-child", "--lib", nc->lib, "--gpus", gpus, "--sizes", sizes,
                        "--warmup", warm, "--iters", its, NULL};
        pv_log("NCCL phase: %s", phase == 0 ? "P2P allowed" : "NCCL_P2P_DISABLE=1");
        char *out = NULL;
        int sig = 0;
        double t0 = pv_now_s();
        int rc = pv_run_capture(argv, env, (int)(sizeof env / sizeof env[0]), NCCL_TIMEOUT_MS, &out, errf, &sig);
        run->wall_s = pv_now_s() - t0;
        run->ran = 1;
        int version = 0;
        int perr = pv_nccl_parse_child(out, run, &version);
        if (version)
            nc->version = version;
        if (rc == CHILD_DLOPEN_FAILED) {
            nc->state = PV_NCCL_SKIP;
            snprintf(nc->reason, sizeof nc->reason, "%s", run->error[0] ? run->error : "cannot load NCCL");
            memset(&nc->run[0], 0, sizeof nc->run[0]);
            free(out);
            break;
        }
        char *log = pv_read_file(logf, 64u << 20);
        pv_nccl_parse_log(log, run);
        free(log);
        if (rc == 0 && perr == 0) {
            run->ok = 1;
        } else {
            char tail[320];
            tail_of(errf, tail, sizeof tail);
            if (rc == PV_RUN_TIMEOUT)
                snprintf(run->error, sizeof run->error, "NCCL child timed out after %d s", NCCL_TIMEOUT_MS / 1000);
            else if (rc == PV_RUN_SIGNALED)
                snprintf(run->error, sizeof run->error, "NCCL child killed by signal %d; stderr: %.300s", sig, tail);
            else if (!run->error[0] || rc != 0)
                snprintf(run->error + strlen(run->error), sizeof run->error - strlen(run->error),
                         "%s(child exit %d)%s%.300s", run->error[0] ? " " : "", rc, tail[0] ? "; stderr: " : "",
                         tail);
        }
        free(out);
        if (!getenv("P2P_VERIFY_KEEP_TMP")) {
            unlink(logf);
            unlink(errf);
        }
    }
    if (!getenv("P2P_VERIFY_KEEP_TMP"))
        rmdir(dir);
    else
        pv_log("NCCL logs kept in %s", dir);
    return 0;
}
