/* test_hazards.c - unit tests of the hazard tests' pure logic: the gate,
 * the atomics' counting and check, the data patterns, the verdict lines, the
 * verdict and the reports (no CUDA, no GPU). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hzcheck.h"
#include "options.h"
#include "pattern.h"
#include "report.h"

/* test_main.c: pv_parse_options on a command line split at spaces. */
int parse_line(pv_options *o, const char *line, char *err, size_t errlen);
#include "results.h"
#include "verdict.h"

#include "check.h"

/* Two GPUs with P2P both ways; every hazard test passed on both pairs,
 * managed skipped (not opted in). */
static pv_results *mk(void)
{
    pv_results *r = malloc(sizeof *r);
    pv_results_init(r);
    snprintf(r->date, sizeof r->date, "2026-11-27T00:00:00Z");
    snprintf(r->hostname, sizeof r->hostname, "test");
    snprintf(r->driver_version, sizeof r->driver_version, "580.159.04");
    r->ngpus = 2;
    for (int g = 0; g < 2; g++) {
        snprintf(r->gpu[g].name, sizeof r->gpu[g].name, "NVIDIA H100 80GB HBM3");
        snprintf(r->gpu[g].bus_id, sizeof r->gpu[g].bus_id, "0000:%02x:00.0", g + 1);
    }
    r->can_access[0][1] = r->can_access[1][0] = 1;
    r->native_atomics[0][1] = r->native_atomics[1][0] = 1;
    r->npairs = 2;
    r->pair_src[0] = 0;
    r->pair_dst[0] = 1;
    r->pair_src[1] = 1;
    r->pair_dst[1] = 0;
    r->hazards_ran = 1;
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < PV_HZ_COUNT; t++) {
            pv_hz_result *x = &r->hz[k][t];
            x->src = r->pair_src[k];
            x->dst = r->pair_dst[k];
            x->test = t;
            x->first_bad = x->guard_first = -1;
            x->status = t == PV_HZ_MANAGED ? PV_HZS_SKIPPED : PV_HZS_PASS;
            x->ran = t != PV_HZ_MANAGED;
            x->checked = 12u << 20;
            x->rounds = t == PV_HZ_ORDERING ? 16 : (t == PV_HZ_STALE ? 2 : 1);
            x->seconds = 0.01;
            if (t == PV_HZ_MANAGED)
                snprintf(x->note, sizeof x->note, "opt-in: --managed");
        }
    return r;
}

static char *report(const pv_results *r, int json)
{
    pv_verdict v;
    pv_compute_verdict(r, &v);
    FILE *f = tmpfile();
    if (json)
        CHECK_INT(pv_report_json(f, r, &v), 0);
    else
        pv_report_human(f, r, &v);
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static void test_names_and_patterns(void)
{
    CHECK_STR(pv_hz_name(PV_HZ_COMPRESSIBLE), "compressible");
    CHECK_STR(pv_hz_name(PV_HZ_MANAGED), "managed");
    CHECK_STR(pv_hz_status_name(PV_HZS_NA), "not_applicable");
    CHECK_STR(pv_hz_status_name(PV_HZS_REFUSED), "refused");
    CHECK_STR(pv_hz_status_name(PV_HZS_NOT_RUN), "not_run");
    const char *modes[] = {"comp-corrupt", "lost-update", "flag-before-data", "stale", "managed-corrupt"};
    for (int k = 0; k < 5; k++) {
        int m = pv_parse_self_test(modes[k]);
        CHECK_INT(m, PV_ST_FIRST_HAZARD + k);
        CHECK_INT(pv_self_test_hazard(m), k);
        CHECK_STR(pv_self_test_name(m), modes[k]);
        CHECK(strcmp(pv_hz_inject_desc(m), "nothing") != 0);
    }
    CHECK_INT(pv_self_test_hazard(PV_ST_ZERO_CHUNK), -1);
    CHECK_INT(pv_self_test_hazard(PV_ST_NONE), -1);

    /* the data: shift 0 is the integrity pattern; shift 9 runs of 512 equal bytes, never 0 */
    uint64_t seed = pv_test_seed(7, 0, 1, 16, 0, 0, 0);
    int zero = 0, runs_ok = 1, distinct_runs = 0, same = 1;
    for (uint64_t k = 0; k < (1u << 20); k++) {
        if (k < 4096 && pv_hz_byte(seed, k, 0) != pv_pattern_byte(seed, k))
            same = 0;
        zero += pv_hz_byte(seed, k, 9) == 0;
        if (k % 512 && pv_hz_byte(seed, k, 9) != pv_hz_byte(seed, k - 1, 9))
            runs_ok = 0;
        if (k % 512 == 0 && k && pv_hz_byte(seed, k, 9) != pv_hz_byte(seed, k - 1, 9))
            distinct_runs++;
    }
    CHECK(same);
    CHECK_INT(zero, 0);
    CHECK(runs_ok);
    CHECK(distinct_runs > 2000); /* of 2047 run boundaries, nearly all change the byte */
    /* the ordering test's words: the round in the low byte; never 0; two rounds always differ */
    int bad = 0;
    for (int round = 1; round < 256; round++)
        for (uint64_t k = 0; k < 64; k++) {
            uint32_t w = pv_order_word(seed, round, k);
            bad += w == 0 || (w & 0xffu) != (uint32_t)round || w == pv_order_word(seed, round % 255 + 1, k);
        }
    CHECK_INT(bad, 0);
    CHECK(pv_order_word(seed, 1, 0) != pv_order_word(seed, 1, 1));
}

static void test_gate(void)
{
    pv_hz_gate_in g;
    char why[200];
    memset(&g, 0, sizeof g);
    g.peer = 0;
    g.owner = 1;
    g.can_access = 1;
    g.native_atomics = 1;
    g.drv_ok = 1;
    g.vmm_supported = 1;
    g.comp_supported = 1;
    g.concurrent_managed = 1;
    g.free_min = 80ull << 30;
    g.need = 68ull << 20;
    g.free_gpu = 1;
    for (int t = 0; t < PV_HZ_MANAGED; t++)
        CHECK_INT(pv_hz_gate(t, &g, why, sizeof why), PV_HZS_NOT_RUN);
    /* managed: opt-in only, said before anything else */
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_SKIPPED);
    CHECK_STR(why, "opt-in: --managed");
    g.can_access = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_SKIPPED);
    CHECK_STR(why, "opt-in: --managed");
    g.managed_opt_in = 1;
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_SKIPPED);
    CHECK_STR(why, "GPU0 cannot access GPU1 (no peer access)");
    /* no peer access: every test skipped */
    for (int t = 0; t < PV_HZ_COUNT; t++)
        CHECK_INT(pv_hz_gate(t, &g, why, sizeof why), PV_HZS_SKIPPED);
    g.can_access = 1;
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_NOT_RUN);
    /* too little free memory: a clear verdict */
    g.free_min = 20ull << 20;
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_SKIPPED);
    CHECK_STR(why, "too little free GPU memory: GPU1 has 20.0 MiB free, the test needs 68.0 MiB on each GPU");
    g.free_min = 80ull << 30;
    g.concurrent_managed = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_MANAGED, &g, why, sizeof why), PV_HZS_NA);
    CHECK(strstr(why, "cudaDevAttrConcurrentManagedAccess") != NULL);
    /* a GPU without compression: not applicable, never a pass */
    g.comp_supported = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_COMPRESSIBLE, &g, why, sizeof why), PV_HZS_NA);
    CHECK_STR(why, "GPU1 lacks generic compression (CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 0)");
    CHECK_INT(pv_hz_gate(PV_HZ_STALE, &g, why, sizeof why), PV_HZS_NOT_RUN);
    g.comp_supported = -1; /* unknown is no support either */
    CHECK_INT(pv_hz_gate(PV_HZ_COMPRESSIBLE, &g, why, sizeof why), PV_HZS_NA);
    g.vmm_supported = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_STALE, &g, why, sizeof why), PV_HZS_NA);
    CHECK(strstr(why, "virtual memory management") != NULL);
    g.vmm_supported = 1;
    g.drv_ok = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_STALE, &g, why, sizeof why), PV_HZS_NA);
    CHECK(strstr(why, "entry points") != NULL);
    /* GeForce BAR1 P2P: no native peer atomics */
    g.native_atomics = 0;
    CHECK_INT(pv_hz_gate(PV_HZ_ATOMICS, &g, why, sizeof why), PV_HZS_NA);
    CHECK_STR(why, "the driver reports no native peer atomics");
    g.native_atomics = -1;
    CHECK_INT(pv_hz_gate(PV_HZ_ATOMICS, &g, why, sizeof why), PV_HZS_NA);
    CHECK_INT(pv_hz_gate(PV_HZ_ORDERING, &g, why, sizeof why), PV_HZS_NOT_RUN);
}

static void test_atomic_check(void)
{
    CHECK(pv_atomic_per_counter(8192, 256, 64) == 32768);
    CHECK(pv_atomic_per_counter(8192, 100, 64) == 0); /* not a multiple: refused */
    CHECK(pv_atomic_per_counter(8192, 64, 0) == 0);
    unsigned long long c[64], per = 32768;
    for (int k = 0; k < 64; k++)
        c[k] = per | (per << 32);
    pv_hz_result t;
    memset(&t, 0, sizeof t);
    t.test = PV_HZ_ATOMICS;
    t.src = 0;
    t.dst = 1;
    CHECK(pv_atomic_check(c, 64, per, &t) == 0);
    CHECK_INT(t.status, PV_HZS_PASS);
    CHECK(t.checked == 2ull * 32768 * 64);
    CHECK_INT(t.first_bad, -1);
    /* one of the peer's updates lost */
    c[32] -= 1;
    CHECK(pv_atomic_check(c, 64, per, &t) == 1);
    CHECK_INT(t.status, PV_HZS_FAIL);
    CHECK_INT(t.first_bad, 32);
    CHECK(t.nalt == 1);
    CHECK(t.found == ((per - 1) | (per << 32)));
    /* and three of the owner's on another, earlier counter */
    c[5] -= 3ull << 32;
    CHECK(pv_atomic_check(c, 64, per, &t) == 2);
    CHECK_INT(t.first_bad, 5);
    CHECK(t.nalt == 4);
    char d[400];
    t.ran = 1;
    pv_hz_describe(&t, d, sizeof d);
    CHECK(strstr(d, "FAIL: 4 updates lost: counter 5 holds 32768 of GPU0's (peer) and 32765 of GPU1's (owner) 32768 "
                    "updates each (2 wrong counters)") != NULL);
    /* a count too high (a doubled update) is wrong too, though nothing was lost */
    for (int k = 0; k < 64; k++)
        c[k] = per | (per << 32);
    c[63] += 1;
    CHECK(pv_atomic_check(c, 64, per, &t) == 1);
    CHECK(t.nalt == 0);
    CHECK_INT(t.status, PV_HZS_FAIL);
}

static void test_describe(void)
{
    pv_results *r = mk();
    char d[480];
    pv_hz_describe(&r->hz[0][PV_HZ_COMPRESSIBLE], d, sizeof d);
    CHECK(strncmp(d, "PASS: 12.0 MiB checked", 22) == 0 && strstr(d, "host guard intact (0.01 s)"));
    pv_hz_describe(&r->hz[0][PV_HZ_ORDERING], d, sizeof d);
    CHECK(strncmp(d, "PASS: 16 rounds", 15) == 0);
    pv_hz_describe(&r->hz[0][PV_HZ_STALE], d, sizeof d);
    CHECK(strncmp(d, "PASS: 2 remaps at the same VA, the peer read B's data every time", 64) == 0);
    pv_hz_describe(&r->hz[0][PV_HZ_MANAGED], d, sizeof d);
    CHECK_STR(d, "skipped (opt-in: --managed)");
    pv_hz_result *x = &r->hz[0][PV_HZ_ATOMICS];
    x->status = PV_HZS_NA;
    snprintf(x->note, sizeof x->note, "the driver reports no native peer atomics");
    pv_hz_describe(x, d, sizeof d);
    CHECK_STR(d, "not applicable (the driver reports no native peer atomics)");
    x = &r->hz[0][PV_HZ_COMPRESSIBLE];
    x->status = PV_HZS_REFUSED;
    snprintf(x->note, sizeof x->note, "cuMemSetAccess for the peer GPU0: CUDA_ERROR_INVALID_DEVICE");
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "refused: cuMemSetAccess for the peer GPU0: CUDA_ERROR_INVALID_DEVICE (CUDA refused it") == d);
    /* wrong data, a changed guard */
    x->status = PV_HZS_FAIL;
    x->nbad = 4096;
    x->first_bad = 0x200000;
    x->expected = 0x70;
    x->found = 0;
    snprintf(x->what, sizeof x->what, "GPU0 (peer) reading the owner's data");
    pv_hz_describe(x, d, sizeof d);
    CHECK_STR(d, "FAIL: GPU0 (peer) reading the owner's data saw 0x00 at offset 0x200000, expected 0x70 (4096 bad "
                 "bytes) (0.01 s)");
    x->nbad = 0;
    x->guard_bad = 16;
    x->guard_first = 0x1000;
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "FAIL: the host guard changed: 16 bytes, the first at offset 0x1000") != NULL);
    /* ordering, stale */
    x = &r->hz[1][PV_HZ_ORDERING];
    x->status = PV_HZS_FAIL;
    x->round = 8;
    x->first_bad = 0;
    x->expected = 0x97df4808;
    x->found = 0x7c54da07;
    x->nbad = 262144;
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "FAIL: round 8: the reader on GPU0 saw the flag before the data: word 0 expected 0x97df4808 found "
                    "0x7c54da07 (262144 stale words)") != NULL);
    x = &r->hz[1][PV_HZ_STALE];
    x->status = PV_HZS_FAIL;
    x->round = 1;
    x->first_bad = 0;
    x->expected = 0x75;
    x->found = 0xdb;
    x->nbad = x->nalt = 2088820;
    snprintf(x->what, sizeof x->what, "GPU1 (peer) reading B");
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "FAIL: round 1: after the remap, GPU1 (peer) reading B saw A's data (the old allocation): 0xdb at "
                    "offset 0x0, expected 0x75") != NULL);
    x->nalt = 5;
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "saw wrong data") != NULL);
    /* the checker alone (the atomics' self-test where the GPUs cannot run it) */
    x = &r->hz[1][PV_HZ_ATOMICS];
    x->status = PV_HZS_FAIL;
    x->ran = 0;
    pv_hz_describe(x, d, sizeof d);
    CHECK(strstr(d, "(checker only)") != NULL);
    x->status = PV_HZS_ERROR;
    snprintf(x->note, sizeof x->note, "cudaMalloc: cudaErrorMemoryAllocation");
    pv_hz_describe(x, d, sizeof d);
    CHECK_STR(d, "ERROR: cudaMalloc: cudaErrorMemoryAllocation");
    free(r);
}

static void test_hz_verdict(void)
{
    pv_verdict v;
    pv_results *r = mk();
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    CHECK_STR(v.reasons[0], "every pair has P2P and every checked byte arrived intact; no hazard test failed");
    /* refused, not applicable, skipped: no failure */
    r->hz[0][PV_HZ_COMPRESSIBLE].status = PV_HZS_REFUSED;
    r->hz[0][PV_HZ_ATOMICS].status = PV_HZS_NA;
    r->hz[1][PV_HZ_STALE].status = PV_HZS_SKIPPED;
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    /* a lost update: 21, named */
    pv_hz_result *x = &r->hz[1][PV_HZ_ATOMICS];
    x->status = PV_HZS_FAIL;
    x->nbad = 1;
    x->nalt = 1;
    x->first_bad = 3;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    CHECK_STR(v.label, "CORRUPTION");
    CHECK_INT(v.hz_failed, 1);
    CHECK(strncmp(v.reasons[0], "HAZARD atomics GPU1->GPU0: FAIL: 1 update lost", 46) == 0);
    /* beats a CUDA error, as corruption does */
    r->hz[0][PV_HZ_ORDERING].status = PV_HZS_ERROR;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    x->status = PV_HZS_PASS;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    CHECK_INT(v.hz_errors, 1);
    r->hz[0][PV_HZ_ORDERING].status = PV_HZS_PASS;
    /* not run (hazards_ran 0): nothing counted */
    x->status = PV_HZS_FAIL;
    r->hazards_ran = 0;
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    r->hazards_ran = 1;
    x->status = PV_HZS_PASS;

    /* self-test lost-update: injected and caught on both pairs -> 21; one missed -> 22; none -> 22 */
    r->self_test = PV_ST_LOST_UPDATE;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    CHECK(strstr(v.reasons[0], "self-test lost-update: no failure was injected (the atomics test ran on no pair)"));
    for (int k = 0; k < 2; k++) {
        r->hz[k][PV_HZ_ATOMICS].injected = 1;
        r->hz[k][PV_HZ_ATOMICS].status = PV_HZS_FAIL;
    }
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    CHECK_INT(v.hz_caught, 2);
    CHECK_INT(v.hz_failed, 0);
    CHECK_STR(v.reasons[0], "self-test lost-update: the injected failure was detected in all 2 atomics tests (as "
                            "intended)");
    r->hz[1][PV_HZ_ATOMICS].status = PV_HZS_PASS;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    CHECK(strstr(v.reasons[0], "only 1 of 2 injected failures were detected: the checker is broken"));
    /* a real failure of another test during a self-test still counts */
    r->hz[1][PV_HZ_ATOMICS].status = PV_HZS_FAIL;
    r->hz[0][PV_HZ_STALE].status = PV_HZS_FAIL;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    CHECK_INT(v.hz_failed, 1);
    free(r);
}

static void test_hz_reports(void)
{
    pv_results *r = mk();
    char *s = report(r, 0);
    CHECK(strstr(s, "== Hazard tests ==") != NULL);
    CHECK(strstr(s, "  GPU0->GPU1   compressible  PASS: 12.0 MiB checked") != NULL);
    CHECK(strstr(s, "  GPU1->GPU0   managed       skipped (opt-in: --managed)") != NULL);
    CHECK(strstr(s, "== VERDICT: PASS (exit 0) ==") != NULL);
    /* the hazard section comes after the integrity section and before the bandwidth */
    CHECK(strstr(s, "== Integrity ==") < strstr(s, "== Hazard tests ==") &&
          strstr(s, "== Hazard tests ==") < strstr(s, "== Bandwidth and latency =="));
    free(s);
    s = report(r, 1);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"hazards\": {") != NULL);
    CHECK(strstr(s, "\"counts\": {\n      \"pass\": 8,\n      \"fail\": 0,\n      \"refused\": 0,\n      "
                    "\"not_applicable\": 0,\n      \"skipped\": 2,\n      \"error\": 0\n    }") != NULL);
    CHECK(strstr(s, "\"test\": \"stale\"") != NULL);
    CHECK(strstr(s, "\"managed_opt_in\": false") != NULL);
    CHECK(strstr(s, "\"checked_unit\": \"updates\"") != NULL);
    free(s);

    /* a self-test: the injection line; a missed one */
    r->self_test = PV_ST_FLAG_BEFORE_DATA;
    pv_hz_result *x = &r->hz[0][PV_HZ_ORDERING];
    x->injected = 1;
    x->status = PV_HZS_FAIL;
    x->round = 8;
    x->nbad = 262144;
    x->first_bad = 0;
    r->hz[1][PV_HZ_ORDERING].injected = 1;
    s = report(r, 0);
    CHECK(strstr(s, "SELF-TEST flag-before-data: the writer set the flag before it wrote the data (ordering test)"));
    CHECK(strstr(s, "    ^ self-test: flag-before-data injected (the writer set the flag before it wrote the data) - "
                    "caught") != NULL);
    CHECK(strstr(s, "SELF-TEST MISSED: GPU1->GPU0 ordering: flag-before-data injected was NOT detected") != NULL);
    CHECK(strstr(s, "== VERDICT: CUDA-ERROR (exit 22) ==") != NULL);
    free(s);
    s = report(r, 1);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"self_test\": \"flag-before-data\"") != NULL);
    CHECK(strstr(s, "\"injected\": true") != NULL);
    CHECK(strstr(s, "\"round\": 8") != NULL);
    free(s);

    /* not run: said, and the JSON says ran false with no results */
    r->self_test = PV_ST_ZERO_CHUNK;
    r->hazards_ran = 0;
    s = report(r, 0);
    CHECK(strstr(s, "== Hazard tests ==\nskipped (--no-hazards, implied by --self-test)") != NULL);
    free(s);
    r->self_test = PV_ST_NONE;
    r->cuda_error = 1;
    s = report(r, 0);
    CHECK(strstr(s, "== Hazard tests ==\nnot run (after a CUDA error)") != NULL);
    free(s);
    r->cuda_error = 0;
    r->self_test = PV_ST_ZERO_CHUNK;
    s = report(r, 1);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"hazards\": {\n    \"ran\": false") != NULL);
    CHECK(strstr(s, "\"results\": []") != NULL);
    free(s);
    free(r);
}


static void test_hz_options(void)
{
    pv_options o;
    char err[256];
    CHECK_INT(parse_line(&o, "", err, sizeof err), PV_PARSE_OK);
    CHECK(!o.managed && !o.no_hazards);
    CHECK_INT(parse_line(&o, "--managed --no-hazards", err, sizeof err), PV_PARSE_OK);
    CHECK(o.managed && o.no_hazards);
    CHECK_INT(parse_line(&o, "--managed=1", err, sizeof err), PV_PARSE_USAGE);
    /* a hazard self-test: the hazards only */
    CHECK_INT(parse_line(&o, "--self-test lost-update --no-hazards", err, sizeof err), PV_PARSE_OK);
    CHECK(o.self_test == PV_ST_LOST_UPDATE && o.no_integrity && o.no_perf && o.no_nccl && !o.no_hazards);
    /* an integrity self-test: no hazards */
    CHECK_INT(parse_line(&o, "--self-test flip-bit", err, sizeof err), PV_PARSE_OK);
    CHECK(o.no_hazards && !o.no_integrity);
    /* managed-corrupt needs the opt-in */
    CHECK_INT(parse_line(&o, "--self-test managed-corrupt", err, sizeof err), PV_PARSE_USAGE);
    CHECK(strstr(err, "--self-test managed-corrupt needs --managed") != NULL);
    CHECK_INT(parse_line(&o, "--self-test=managed-corrupt --managed", err, sizeof err), PV_PARSE_OK);
    CHECK_INT(o.self_test, PV_ST_MANAGED_CORRUPT);
    CHECK_INT(parse_line(&o, "--self-test stale --pairs 0-1", err, sizeof err), PV_PARSE_OK);
    CHECK_INT(parse_line(&o, "--self-test stall", err, sizeof err), PV_PARSE_USAGE);
    CHECK(strstr(err, "flag-before-data") != NULL);
    const char *help = pv_help_text();
    CHECK(strstr(help, "--managed") && strstr(help, "Xid 31") && strstr(help, "Xid 154") &&
          strstr(help, "--no-hazards") && strstr(help, "lost-update") && strstr(help, "skipped (opt-in: --managed)"));
}

void test_hazards(void)
{
    test_names_and_patterns();
    test_gate();
    test_atomic_check();
    test_describe();
    test_hz_verdict();
    test_hz_reports();
    test_hz_options();
}
