/* main.c - p2p-verify: does GPU peer-to-peer really work, byte for byte, and how fast? */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "options.h"
#include "report.h"
#include "verdict.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__nccl-child") == 0) {
        /* hidden: one NCCL phase, started by pv_run_nccl with its own environment;
         * _exit skips library teardown, which is not what is being tested */
        int rc = pv_nccl_child_main(argc, argv);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }

    /* NVLink multicast stays off in everything this process starts */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
    setenv("NVSHMEM_DISABLE_NVLS", "1", 1);

    pv_options o;
    char err[512];
    int pr = pv_parse_options(argc, argv, &o, err, sizeof err);
    if (pr == PV_PARSE_USAGE) {
        fprintf(stderr, "p2p-verify: %s\n", err);
        return PV_EXIT_USAGE;
    }
    if (pr == PV_PARSE_EXIT_OK) {
        if (o.show == PV_SHOW_VERSION)
            printf("p2p-verify %s\n", PV_VERSION);
        else
            fputs(pv_help_text(), stdout);
        return 0;
    }
    pv_log_start(o.verbose);

    pv_results *r = malloc(sizeof *r);
    if (!r) {
        fprintf(stderr, "p2p-verify: out of memory\n");
        return PV_EXIT_CUDA;
    }
    pv_results_init(r);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->date, sizeof r->date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    gethostname(r->hostname, sizeof r->hostname - 1);
    for (int i = 0; i < argc; i++)
        snprintf(r->argv_line + strlen(r->argv_line), sizeof r->argv_line - strlen(r->argv_line), "%s%s",
                 i ? " " : "", argv[i]);
    r->nsizes = o.nsizes;
    memcpy(r->sizes, o.sizes, sizeof r->sizes);
    r->iters = o.iters;
    r->seed = o.seed;
    r->self_test = o.self_test;
    r->perf_peer_off = o.perf_peer_off;
    r->quick = o.quick;
    r->managed = o.managed;

    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce == cudaErrorNoDevice) {
        (void)cudaGetLastError();
        n = 0;
    } else if (ce != cudaSuccess) {
        char hint[160], what[200];
        snprintf(what, sizeof what, "cudaGetDeviceCount (%s)",
                 pv_device_count_hint(getenv("CUDA_VISIBLE_DEVICES"), hint, sizeof hint));
        pv_cuda_fail(r, ce, what, __FILE__, __LINE__);
        n = 0;
    }
    if (n > PV_MAX_GPUS) {
        fprintf(stderr, "p2p-verify: %d GPUs visible, only the first %d are checked\n", n, PV_MAX_GPUS);
        n = PV_MAX_GPUS;
    }
    r->ngpus = n;
    pv_log("%d CUDA GPU(s)", n);

    if (n >= 1 && !r->cuda_error)
        pv_gather_topology(r);
    if (n >= 2 && !r->cuda_error) {
        if (pv_resolve_pairs(&o, n, err, sizeof err) != 0) {
            fprintf(stderr, "p2p-verify: %s\n", err);
            return PV_EXIT_USAGE;
        }
        r->npairs = o.npairs;
        memcpy(r->pair_src, o.pair_src, sizeof r->pair_src);
        memcpy(r->pair_dst, o.pair_dst, sizeof r->pair_dst);
        if (o.resident_arg[0] && !r->cuda_error && pv_resident_hold(r, &o, err, sizeof err) > 0) {
            fprintf(stderr, "p2p-verify: %s\n", err);
            return PV_EXIT_USAGE;
        }
        if (!o.no_integrity && !r->cuda_error)
            pv_run_integrity(r, &o);
        if (!o.no_hazards && !r->cuda_error)
            pv_run_hazards(r, &o);
        if (!o.no_perf && !r->cuda_error)
            pv_run_perf(r, &o);
        if (!r->cuda_error)
            pv_run_nccl(r, &o);
        else
            snprintf(r->nccl.reason, sizeof r->nccl.reason, "not run after a CUDA error");
        if (o.peer_cap && !r->cuda_error)
            pv_run_peer_cap(r, &o);
        pv_resident_release(r);
    }
    r->elapsed_s = pv_elapsed_s();

    pv_verdict v;
    pv_compute_verdict(r, &v);
    if (o.json) {
        pv_report_human(stderr, r, &v);
        pv_report_json(stdout, r, &v);
    } else {
        pv_report_human(stdout, r, &v);
    }
    fflush(stdout);
    free(r->ints);
    free(r);
    return v.code;
}
