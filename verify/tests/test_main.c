/* test_main.c - unit tests of p2p-verify's pure-C logic (no CUDA, no GPU).
 *
 * Usage: test_runner FIXTURE_DIR
 * Every check prints the failing expression; the exit status is the number
 * of failed checks (capped at 100), 0 when all pass. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "json.h"
#include "linklimits.h"
#include "ncclparse.h"
#include "bar1room.h"
#include "options.h"
#include "pattern.h"
#include "report.h"
#include "results.h"
#include "sysparse.h"
#include "verdict.h"

#include "check.h"

int g_checks, g_failed;
const char *g_fixtures = "tests/fixtures";

static char *slurp_opt(const char *name, int required)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_fixtures, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (required) {
            fprintf(stderr, "FAIL: cannot open fixture %s\n", path);
            g_failed++;
        }
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

char *slurp(const char *name) { return slurp_opt(name, 1); }

/* Capture what fn writes to a FILE* as a string. */
static char *file_to_string(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    return buf;
}

/* ------------------------------------------------------------ a tiny JSON validator */
static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}
static const char *js_value(const char *p, int depth);
static const char *js_string(const char *p)
{
    if (*p != '"')
        return NULL;
    p++;
    while (*p && *p != '"') {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
        p++;
    }
    return *p == '"' ? p + 1 : NULL;
}
static const char *js_number(const char *p)
{
    const char *s = p;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return NULL;
    if (*p == '0' && isdigit((unsigned char)p[1]))
        return NULL;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p > s ? p : NULL;
}
static const char *js_value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    p = js_ws(p);
    if (*p == '{') {
        p = js_ws(p + 1);
        if (*p == '}')
            return p + 1;
        for (;;) {
            p = js_string(js_ws(p));
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p != ':')
                return NULL;
            p = js_value(p + 1, depth + 1);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == '}' ? p + 1 : NULL;
        }
    }
    if (*p == '[') {
        p = js_ws(p + 1);
        if (*p == ']')
            return p + 1;
        for (;;) {
            p = js_value(p, depth + 1);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == ']' ? p + 1 : NULL;
        }
    }
    if (*p == '"')
        return js_string(p);
    if (strncmp(p, "true", 4) == 0)
        return p + 4;
    if (strncmp(p, "false", 5) == 0)
        return p + 5;
    if (strncmp(p, "null", 4) == 0)
        return p + 4;
    return js_number(p);
}
int json_valid(const char *s)
{
    const char *p = js_value(s, 0);
    return p && *js_ws(p) == '\0';
}

/* ------------------------------------------------------------ fixtures for results */

static pv_gpu mkgpu(int gen, int width, int ccmaj, int ccmin)
{
    pv_gpu g;
    memset(&g, 0, sizeof g);
    g.gen_max = gen;
    g.width_max = width;
    g.cc_major = ccmaj;
    g.cc_minor = ccmin;
    g.bar1_bytes = -1;
    g.nvlink_active = -1;
    g.smi_index = -1;
    return g;
}

/* two GPUs, P2P both ways, integrity all OK */
static pv_results *mkresults(void)
{
    pv_results *r = malloc(sizeof *r);
    pv_results_init(r);
    snprintf(r->date, sizeof r->date, "2026-11-20T00:00:00Z");
    snprintf(r->hostname, sizeof r->hostname, "test\"host\\with\nnewline");
    snprintf(r->driver_version, sizeof r->driver_version, "580.159.04");
    r->cuda_driver_api = 13000;
    r->cuda_runtime = 13000;
    r->ngpus = 2;
    for (int g = 0; g < 2; g++) {
        r->gpu[g] = mkgpu(4, 16, 8, 9);
        snprintf(r->gpu[g].name, sizeof r->gpu[g].name, "NVIDIA GeForce RTX 4090");
        snprintf(r->gpu[g].bus_id, sizeof r->gpu[g].bus_id, "0000:%02x:00.0", g + 1);
        r->gpu[g].bar1_bytes = 32ll << 30;
    }
    r->can_access[0][1] = r->can_access[1][0] = 1;
    pv_link_pcie(&r->pcie[0][1], &r->gpu[0], &r->gpu[1]);
    r->pcie[1][0] = r->pcie[0][1];
    r->link[0][1] = r->link[1][0] = r->pcie[0][1];
    r->npairs = 2;
    r->pair_src[0] = 0;
    r->pair_dst[0] = 1;
    r->pair_src[1] = 1;
    r->pair_dst[1] = 0;
    r->nsizes = 1;
    r->sizes[0] = 1 << 20;
    r->iters = 1;
    r->integrity_ran = 1;
    r->ints = calloc(8, sizeof(pv_int_result));
    r->nint = 2;
    for (int k = 0; k < 2; k++) {
        r->ints[k].src = k;
        r->ints[k].dst = 1 - k;
        r->ints[k].method = PV_M_CE;
        r->ints[k].size = r->ints[k].len = 1 << 20;
        r->ints[k].status = PV_INT_OK;
    }
    return r;
}

static void free_results(pv_results *r)
{
    free(r->ints);
    free(r);
}

/* ------------------------------------------------------------ tests */

static void test_limits(void)
{
    CHECK_NEAR(pv_pcie_gbps(4, 16), 31.5077, 0.001);
    CHECK_NEAR(pv_pcie_gbps(3, 16), 15.7538, 0.001);
    CHECK_NEAR(pv_pcie_gbps(5, 16), 63.0154, 0.001);
    CHECK_NEAR(pv_pcie_gbps(6, 16), 126.0308, 0.001);
    CHECK_NEAR(pv_pcie_gbps(1, 16), 4.0, 1e-9);
    CHECK_NEAR(pv_pcie_gbps(2, 8), 4.0, 1e-9);
    CHECK_NEAR(pv_pcie_gbps(4, 8), 15.7538, 0.001);
    CHECK_NEAR(pv_pcie_gbps(4, 1), 1.9692, 0.001);
    CHECK_NEAR(pv_pcie_gbps(0, 16), 0.0, 0);
    CHECK_NEAR(pv_pcie_gbps(7, 16), 0.0, 0);
    CHECK_NEAR(pv_pcie_gbps(4, 0), 0.0, 0);
    CHECK_INT(pv_pcie_gen_from_speed("16.0 GT/s PCIe"), 4);
    CHECK_INT(pv_pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
    CHECK_INT(pv_pcie_gen_from_speed("5.0 GT/s"), 2);
    CHECK_INT(pv_pcie_gen_from_speed("8 GT/s"), 3);
    CHECK_INT(pv_pcie_gen_from_speed("32.0 GT/s PCIe"), 5);
    CHECK_INT(pv_pcie_gen_from_speed("64.0 GT/s PCIe"), 6);
    CHECK_INT(pv_pcie_gen_from_speed("Unknown"), 0);
    CHECK_INT(pv_pcie_gen_from_speed("16.0"), 0);
    int gen = 0;
    CHECK_NEAR(pv_nvlink_per_link_gbps(9, 0, &gen), 25.0, 0);
    CHECK_INT(gen, 4);
    CHECK_NEAR(pv_nvlink_per_link_gbps(8, 6, &gen), 14.0625, 0);
    CHECK_NEAR(pv_nvlink_per_link_gbps(8, 9, &gen), 0.0, 0); /* Ada: no NVLink */

    pv_gpu a = mkgpu(4, 16, 8, 9), b = mkgpu(3, 8, 8, 9);
    pv_link l;
    pv_link_pcie(&l, &a, &b);
    CHECK_INT(l.type, PV_LINK_PCIE);
    CHECK_INT(l.gen, 3);
    CHECK_INT(l.width, 8);
    CHECK_NEAR(l.gbps, 7.877, 0.001);
    CHECK(strstr(l.desc, "PCIe gen3 x8") != NULL);
    pv_gpu h0 = mkgpu(5, 16, 9, 0), h1 = mkgpu(5, 16, 9, 0);
    pv_link_nvlink(&l, &h0, &h1, 18, "nvidia-smi topo -m");
    CHECK_INT(l.type, PV_LINK_NVLINK);
    CHECK_NEAR(l.gbps, 450.0, 1e-9);
    CHECK(strstr(l.desc, "NVLink4 x18") != NULL);
    CHECK(strstr(l.desc, "450.0 GB/s per direction") != NULL);
    char ver[8];
    CHECK_INT(pv_nvml_nvlink_version(6, ver, sizeof ver), 6);
    CHECK_STR(ver, "4.0");
    pv_nvml_nvlink_version(3, ver, sizeof ver);
    CHECK_STR(ver, "2.2");
    pv_nvml_nvlink_version(7, ver, sizeof ver);
    CHECK_STR(ver, "5.0");
    CHECK_INT(pv_nvml_nvlink_version(0, ver, sizeof ver), 0);
    CHECK_INT(pv_nvml_nvlink_version(99, ver, sizeof ver), 0);
    pv_gpu u = mkgpu(0, 0, 8, 9);
    pv_link_pcie(&l, &u, &a);
    CHECK_INT(l.type, PV_LINK_UNKNOWN);
    CHECK_NEAR(l.gbps, 0.0, 0);
}

static void test_verdict(void)
{
    pv_verdict v;
    pv_results *r = mkresults();
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    CHECK_STR(v.label, "PASS");

    /* no P2P on one pair */
    r->can_access[1][0] = 0;
    CHECK_INT(pv_compute_verdict(r, &v), 20);
    CHECK_INT(v.pairs_without_p2p, 1);
    /* corruption wins over missing P2P */
    r->ints[0].status = PV_INT_CORRUPT;
    r->ints[0].first_bad = 0x1000;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    CHECK(strstr(v.reasons[1], "CORRUPTION GPU0->GPU1 cudaMemcpyPeerAsync") != NULL);
    r->can_access[1][0] = 1;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    /* CUDA error, no corruption */
    r->ints[0].status = PV_INT_OK;
    r->cuda_error = 1;
    snprintf(r->cuda_error_msg, sizeof r->cuda_error_msg, "cudaMalloc failed");
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    /* corruption beats CUDA error */
    r->ints[1].status = PV_INT_CORRUPT;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    r->ints[1].status = PV_INT_OK;
    r->cuda_error = 0;
    /* an integrity test that errored */
    r->ints[1].status = PV_INT_ERROR;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    r->ints[1].status = PV_INT_OK;

    /* NCCL: wrong result -> 23, beats no-P2P */
    r->nccl.state = PV_NCCL_RAN;
    r->nccl.ngpus = 2;
    r->nccl.devs[0] = 0;
    r->nccl.devs[1] = 1;
    r->nccl.run[0].ran = r->nccl.run[0].ok = 1;
    r->nccl.run[0].nsizes = 1;
    r->nccl.run[0].bytes[0] = 8 << 20;
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    r->nccl.run[0].nbad[0] = 5;
    CHECK_INT(pv_compute_verdict(r, &v), 23);
    r->can_access[0][1] = 0;
    CHECK_INT(pv_compute_verdict(r, &v), 23);
    r->can_access[0][1] = 1;
    r->nccl.run[0].nbad[0] = 0;
    /* NCCL child failure -> 23 */
    r->nccl.run[1].ran = 1;
    r->nccl.run[1].ok = 0;
    snprintf(r->nccl.run[1].error, sizeof r->nccl.run[1].error, "ncclCommInitAll failed");
    CHECK_INT(pv_compute_verdict(r, &v), 23);
    r->nccl.run[1].ok = 1;
    /* NCCL chose SHM although P2P is available -> 20 */
    r->nccl.run[0].nconn = 2;
    r->nccl.run[0].conn[0] = (pv_nccl_conn){0, 0, 1, "P2P/direct pointer"};
    r->nccl.run[0].conn[1] = (pv_nccl_conn){1, 1, 0, "SHM/direct/direct"};
    CHECK_INT(pv_compute_verdict(r, &v), 20);
    CHECK_INT(v.nccl_no_p2p_conns, 1);
    /* ... but not when the pair has no P2P anyway (then 20 comes from the access matrix) */
    r->nccl.run[0].conn[1] = (pv_nccl_conn){1, 1, 0, "P2P/CUMEM/read"};
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    /* SHM in the P2P-disabled run is expected */
    r->nccl.run[1].nconn = 1;
    r->nccl.run[1].conn[0] = (pv_nccl_conn){0, 0, 1, "SHM/direct/direct"};
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    /* NCCL skipped (no libnccl) does not fail */
    r->nccl.state = PV_NCCL_SKIP;
    r->nccl.run[0].nbad[0] = 9;
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    r->nccl.state = PV_NCCL_NOT_RUN;

    /* self-test: all injections caught -> 21; one missed -> 22 */
    r->self_test = PV_ST_ZERO_CHUNK;
    r->ints[0].injected = 1;
    r->ints[0].status = PV_INT_CORRUPT;
    r->ints[1].injected = 1;
    r->ints[1].status = PV_INT_CORRUPT;
    CHECK_INT(pv_compute_verdict(r, &v), 21);
    CHECK_INT(v.caught, 2);
    r->ints[1].status = PV_INT_OK;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    /* self-test that injected nothing is a broken run */
    r->ints[0].injected = r->ints[1].injected = 0;
    r->ints[0].status = PV_INT_OK;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    r->self_test = PV_ST_NONE;
    CHECK_INT(pv_compute_verdict(r, &v), 0);

    /* fewer than two GPUs */
    r->ngpus = 1;
    CHECK_INT(pv_compute_verdict(r, &v), 24);
    r->ngpus = 0;
    CHECK_INT(pv_compute_verdict(r, &v), 24);
    /* no driver at all: a CUDA error, not "few GPUs" */
    r->cuda_error = 1;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    CHECK_STR(pv_exit_label(24), "FEWER-THAN-2-GPUS");
    free_results(r);
}

/* The open risk of --nvlink keep in 535-570 (p2p-0006) named in the verdict,
 * and the hint for a failing cudaGetDeviceCount. */
static void test_keep_risk_and_hints(void)
{
    pv_verdict v;
    pv_results *r = mkresults();
    snprintf(r->driver_version, sizeof r->driver_version, "570.211.01");
    snprintf(r->registry_dwords, sizeof r->registry_dwords, "ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1");
    pv_link_nvlink(&r->link[0][1], &r->gpu[0], &r->gpu[1], 4, "nvidia-smi topo -m");
    r->link[1][0] = r->link[0][1];
    CHECK_INT(pv_nvlink_keep_risk(r, 0, 1), 1);
    /* peer access works: nothing said */
    CHECK_INT(pv_compute_verdict(r, &v), 0);
    for (int i = 0; i < v.nreasons; i++)
        CHECK(strstr(v.reasons[i], "--nvlink off") == NULL);
    /* enabling it failed between the bridged pair: named, with the fix */
    r->cuda_error = 1;
    snprintf(r->cuda_error_msg, sizeof r->cuda_error_msg, "cudaDeviceEnablePeerAccess(j, 0) failed");
    r->peer_fail_src = 1;
    r->peer_fail_dst = 0;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    CHECK(v.nreasons == 2 && strstr(v.reasons[1], "GPU0<->GPU1: NVLink, no working peer access, --nvlink keep in effect "
                                                   "on 570.211.01") &&
          strstr(v.reasons[1], "build.sh install <tag> --nvlink off"));
    /* not from 575 on, not with keep off, not over PCIe */
    snprintf(r->driver_version, sizeof r->driver_version, "575.64.05");
    CHECK_INT(pv_nvlink_keep_risk(r, 0, 1), 0);
    snprintf(r->driver_version, sizeof r->driver_version, "535.288.01");
    CHECK_INT(pv_nvlink_keep_risk(r, 0, 1), 1);
    snprintf(r->registry_dwords, sizeof r->registry_dwords, "ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=0");
    CHECK_INT(pv_nvlink_keep_risk(r, 0, 1), 0);
    snprintf(r->registry_dwords, sizeof r->registry_dwords, "RMBar1P2PKeepNvlink=1;RMForceP2PType=2");
    r->link[0][1] = r->pcie[0][1];
    CHECK_INT(pv_nvlink_keep_risk(r, 0, 1), 0);
    free(r->ints);
    free(r);

    /* /proc/driver/nvidia/params' RegistryDwords and its keys */
    char dw[256];
    CHECK_INT(pv_parse_params_regdwords("EnableMSI: 1\nRegistryDwords: \"ForceP2P=0x11;RMForceP2PType=2\"\nRmMsg: \"\"\n",
                                        dw, sizeof dw),
              0);
    CHECK_STR(dw, "ForceP2P=0x11;RMForceP2PType=2");
    CHECK_INT(pv_regdword(dw, "ForceP2P"), 0x11);
    CHECK_INT(pv_regdword(dw, "RMForceP2PType"), 2);
    CHECK_INT(pv_regdword(dw, "P2PType"), -1);
    CHECK_INT(pv_parse_params_regdwords("EnableMSI: 1\n", dw, sizeof dw), -1);

    /* cudaGetDeviceCount failing: a GPU listed twice in CUDA_VISIBLE_DEVICES is said as such (CUDA then
     * returns cudaErrorInvalidDevice, "invalid device ordinal"); else the driver, and the variable if set */
    char h[160];
    CHECK_STR(pv_device_count_hint("0,0", h, sizeof h), "CUDA_VISIBLE_DEVICES=0,0 lists GPU 0 twice; list each GPU once");
    CHECK(strstr(pv_device_count_hint("1, 2,01", h, sizeof h), "lists GPU 1 twice") != NULL);
    CHECK(strstr(pv_device_count_hint("GPU-ab,GPU-cd,GPU-ab", h, sizeof h), "lists GPU GPU-ab twice") != NULL);
    /* CUDA reads up to the first empty entry: what follows it is not a second listing */
    CHECK(strstr(pv_device_count_hint("0,,0", h, sizeof h), "twice") == NULL);
    CHECK_STR(pv_device_count_hint("0,1", h, sizeof h),
              "is the NVIDIA driver loaded? does CUDA_VISIBLE_DEVICES=0,1 name GPUs that exist?");
    CHECK_STR(pv_device_count_hint(NULL, h, sizeof h), "is the NVIDIA driver loaded?");
}

static void test_matrix_format(void)
{
    double v[PV_MAX_GPUS][PV_MAX_GPUS];
    pv_link lim[PV_MAX_GPUS][PV_MAX_GPUS];
    memset(lim, 0, sizeof lim);
    for (int i = 0; i < PV_MAX_GPUS; i++)
        for (int j = 0; j < PV_MAX_GPUS; j++)
            v[i][j] = NAN;
    v[0][0] = 3901.5;
    v[0][2] = 25.2;
    v[2][0] = 24.44;
    lim[0][2].gbps = lim[2][0].gbps = 31.5077;
    int ids[2] = {0, 2};
    FILE *f = tmpfile();
    pv_fmt_num_matrix(f, "D\\D", 2, ids, v, 2, 8, 0);
    char *s = file_to_string(f);
    CHECK_STR(s, "   D\\D        0        2\n"
                 "     0  3901.50    25.20\n"
                 "     2    24.44      n/a\n");
    free(s);
    fclose(f);

    f = tmpfile();
    pv_fmt_pct_matrix(f, "D\\D", 2, ids, v, lim, 1.0, 7);
    s = file_to_string(f);
    CHECK_STR(s, "   D\\D       0       2\n"
                 "     0       -   80.0%\n"
                 "     2   77.6%       -\n");
    free(s);
    fclose(f);

    f = tmpfile();
    pv_fmt_num_matrix(f, "GPU", 2, ids, v, 1, 6, 1);
    s = file_to_string(f);
    CHECK_STR(s, "   GPU      0      2\n"
                 "     0      -   25.2\n"
                 "     2   24.4      -\n");
    free(s);
    fclose(f);

    char sz[32];
    pv_fmt_size(256ull << 20, sz, sizeof sz);
    CHECK_STR(sz, "256 MiB");
    pv_fmt_size(4096, sz, sizeof sz);
    CHECK_STR(sz, "4 KiB");
    pv_fmt_size(1000, sz, sizeof sz);
    CHECK_STR(sz, "1000 B");
    pv_fmt_size(3ull << 30, sz, sizeof sz);
    CHECK_STR(sz, "3 GiB");
    pv_fmt_bytes(1972248ull << 10, sz, sizeof sz);
    CHECK_STR(sz, "1.88 GiB");
    pv_fmt_bytes(101388ull << 10, sz, sizeof sz);
    CHECK_STR(sz, "99.0 MiB");
    pv_fmt_bytes(12, sz, sizeof sz);
    CHECK_STR(sz, "12 B");
}

static int python_json_ok(const char *path)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        fprintf(stderr, "note: python3 not found; JSON checked by the built-in validator only\n");
        return 1;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "python3 -m json.tool < '%s' > /dev/null", path);
    return system(cmd) == 0;
}

static void test_json(void)
{
    /* the writer itself */
    FILE *f = tmpfile();
    pv_json j;
    pvj_init(&j, f);
    pvj_obj(&j, NULL);
    pvj_str(&j, "s", "quote\" backslash\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9");
    pvj_num(&j, "nan", NAN, 2);
    pvj_num(&j, "pi", 3.14159, 2);
    pvj_int(&j, "neg", -42);
    pvj_bool(&j, "t", 1);
    pvj_null(&j, "n");
    pvj_arr(&j, "empty");
    pvj_end_arr(&j);
    pvj_obj(&j, "o");
    pvj_end_obj(&j);
    pvj_arr(&j, "a");
    pvj_uint(&j, NULL, 18446744073709551615ull);
    pvj_str(&j, NULL, NULL);
    pvj_end_arr(&j);
    pvj_end_obj(&j);
    CHECK_INT(pvj_finish(&j), 0);
    char *s = file_to_string(f);
    fclose(f);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"quote\\\" backslash\\\\ nl\\n tab\\t ctl\\u0001") != NULL);
    CHECK(strstr(s, "\"nan\": null") != NULL);
    CHECK(strstr(s, "\"pi\": 3.14") != NULL);
    CHECK(strstr(s, "\"empty\": []") != NULL);
    free(s);
    /* unbalanced writer is reported */
    f = tmpfile();
    pvj_init(&j, f);
    pvj_obj(&j, NULL);
    CHECK(pvj_finish(&j) != 0);
    fclose(f);
    CHECK(!json_valid("{\"a\": 1,}"));
    CHECK(!json_valid("{\"a\": nan}"));
    CHECK(!json_valid("[1 2]"));

    /* a whole report: corruption, NCCL, perf with NaN */
    pv_results *r = mkresults();
    r->perf_ran = 1;
    r->perf_bytes = 160000000;
    r->perf_repeat = 5;
    r->perf_reps = 3;
    r->lat_repeat = 100;
    r->uni_on[0][1] = 24.4;
    r->uni_on[0][0] = 900.0;
    r->ints[1].status = PV_INT_CORRUPT;
    r->ints[1].first_bad = 0x1000;
    r->ints[1].expected = 0x5a;
    r->ints[1].found = 0;
    r->ints[1].nbad = 4096;
    r->nccl.state = PV_NCCL_RAN;
    r->nccl.version = 22703;
    snprintf(r->nccl.lib, sizeof r->nccl.lib, "/opt/nccl/lib/libnccl.so.2");
    r->nccl.ngpus = 2;
    r->nccl.devs[1] = 1;
    r->nccl.run[0].ran = r->nccl.run[0].ok = 1;
    r->nccl.run[0].nsizes = 1;
    r->nccl.run[0].bytes[0] = 8 << 20;
    r->nccl.run[0].busbw[0] = 168.0;
    r->nccl.run[0].nconn = 1;
    r->nccl.run[0].conn[0] = (pv_nccl_conn){0, 0, 1, "P2P/direct pointer"};
    snprintf(r->smi_note, sizeof r->smi_note, "nvidia-smi \"not\" found");
    pv_verdict v;
    pv_compute_verdict(r, &v);
    char path[] = "/tmp/p2pv-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    f = fdopen(fd, "w+");
    CHECK_INT(pv_report_json(f, r, &v), 0);
    s = file_to_string(f);
    fclose(f);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"exit_code\": 21") != NULL);
    CHECK(strstr(s, "\"first_bad_offset\": 4096") != NULL);
    CHECK(strstr(s, "\"via\": \"P2P/direct pointer\"") != NULL);
    CHECK(strstr(s, "\"version\": \"2.27.3\"") != NULL);
    CHECK(python_json_ok(path));
    free(s);
    remove(path);

    /* the human report: verdict line and the CORRUPTION line in the documented format */
    f = tmpfile();
    pv_report_human(f, r, &v);
    s = file_to_string(f);
    fclose(f);
    CHECK(strstr(s, "== VERDICT: CORRUPTION (exit 21) ==") != NULL);
    CHECK(strstr(s, "CORRUPTION GPU1->GPU0 cudaMemcpyPeerAsync size=1048576 first bad offset 0x1000: expected "
                    "0x5a found 0x00") != NULL);
    CHECK(strstr(s, "== Topology ==") && strstr(s, "== Peer access ==") && strstr(s, "== Integrity ==") &&
          strstr(s, "== Bandwidth and latency ==") && strstr(s, "== NCCL all-reduce =="));
    CHECK(strstr(s, "PCIe gen4 x16 = 31.5 GB/s per direction") != NULL);
    CHECK(strstr(s, "77.4%") != NULL); /* 24.4 / 31.5077 */
    free(s);
    free_results(r);
}

static void test_selftest_report(void)
{
    pv_results *r = mkresults();
    r->self_test = PV_ST_FLIP_BIT;
    pv_int_result *t = &r->ints[0];
    t->injected = 1;
    t->inject_off = 0x2000;
    t->inject_len = 1;
    t->status = PV_INT_CORRUPT;
    t->first_bad = 0x2000;
    t->expected = 0xac;
    t->found = 0xbc;
    t->nbad = 1;
    t->host_confirmed = 1;
    pv_verdict v;
    CHECK_INT(pv_compute_verdict(r, &v), 21); /* ints[1] was not injected: only one injection, caught */
    FILE *f = tmpfile();
    pv_report_human(f, r, &v);
    char *s = file_to_string(f);
    fclose(f);
    CHECK(strstr(s, "CORRUPTION GPU0->GPU1 cudaMemcpyPeerAsync size=1048576 first bad offset 0x2000: expected 0xac "
                    "found 0xbc (src+0 dst+0 len=1048576, 1 bad byte, confirmed on host)") != NULL);
    CHECK(strstr(s, "^ self-test: flip-bit injected at offset 0x2000 (1 byte) - caught at exactly that offset") != NULL);
    CHECK(strstr(s, "all 1 injected corruptions were detected") != NULL);
    free(s);
    /* the injection was missed: the report says so and the verdict is 22 */
    t->status = PV_INT_OK;
    CHECK_INT(pv_compute_verdict(r, &v), 22);
    f = tmpfile();
    pv_report_human(f, r, &v);
    s = file_to_string(f);
    fclose(f);
    CHECK(strstr(s, "SELF-TEST MISSED: GPU0->GPU1 cudaMemcpyPeerAsync size=1048576: flip-bit injected at 0x2000") != NULL);
    free(s);
    free_results(r);
}

/* parse_line: pv_parse_options on a command line split at spaces (shared
 * with test_hazards.c through check.h). */
int parse_line(pv_options *o, const char *line, char *err, size_t errlen)
{
    char buf[512];
    char *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    argv[argc++] = "p2p-verify";
    char *save = NULL;
    for (char *t = strtok_r(buf, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return pv_parse_options(argc, argv, o, err, errlen);
}

static int parse(pv_options *o, const char *line)
{
    char err[256];
    return parse_line(o, line, err, sizeof err);
}

static void test_options(void)
{
    pv_options o;
    char err[256];
    CHECK_INT(parse(&o, ""), PV_PARSE_OK);
    CHECK_INT(o.nsizes, 4);
    CHECK(o.sizes[3] == 256ull << 20);
    CHECK_INT(o.n_nccl_sizes, 4);
    CHECK(o.nccl_sizes[0] == 8ull << 20 && o.nccl_sizes[3] == 512ull << 20);
    CHECK_INT(o.json, 0);
    CHECK_INT(pv_resolve_pairs(&o, 3, err, sizeof err), 0);
    CHECK_INT(o.npairs, 6);

    CHECK_INT(parse(&o, "--json --quick --no-nccl --no-perf"), PV_PARSE_OK);
    CHECK(o.json && o.quick && o.no_nccl && o.no_perf);
    CHECK_INT(o.iters, 1);
    CHECK(o.nsizes == 3 && o.sizes[2] == 32ull << 20);
    CHECK(!o.perf_peer_off);
    CHECK_INT(parse(&o, "--perf-peer-off"), PV_PARSE_OK);
    CHECK(o.perf_peer_off && !o.no_perf);
    CHECK_INT(parse(&o, "--perf-peer-off=1"), PV_PARSE_USAGE);

    CHECK_INT(parse(&o, "--pairs 0-1,1-0"), PV_PARSE_OK);
    CHECK_INT(o.npairs, 2);
    CHECK(o.pair_src[0] == 0 && o.pair_dst[0] == 1 && o.pair_src[1] == 1 && o.pair_dst[1] == 0);
    CHECK_INT(pv_resolve_pairs(&o, 2, err, sizeof err), 0);
    CHECK_INT(pv_resolve_pairs(&o, 1, err, sizeof err), -1);
    CHECK(strstr(err, "GPU 1 does not exist") != NULL);

    CHECK_INT(parse(&o, "--pairs=0,2,3"), PV_PARSE_OK);
    CHECK_INT(pv_resolve_pairs(&o, 4, err, sizeof err), 0);
    CHECK_INT(o.npairs, 6);
    CHECK_INT(pv_resolve_pairs(&o, 3, err, sizeof err), -1);
    CHECK_INT(parse(&o, "--pairs all"), PV_PARSE_OK);
    CHECK_INT(pv_resolve_pairs(&o, 2, err, sizeof err), 0);
    CHECK_INT(o.npairs, 2);

    CHECK_INT(parse(&o, "--sizes 4K,1M,256M"), PV_PARSE_OK);
    CHECK_INT(o.nsizes, 3);
    CHECK(o.sizes[0] == 4096 && o.sizes[1] == 1048576 && o.sizes[2] == 268435456);
    CHECK_INT(parse(&o, "--sizes 1000,3MiB,1G,7B"), PV_PARSE_OK);
    CHECK(o.sizes[0] == 1000 && o.sizes[1] == 3ull << 20 && o.sizes[2] == 1ull << 30 && o.sizes[3] == 7);
    CHECK_INT(parse(&o, "--self-test zero-chunk"), PV_PARSE_OK);
    CHECK_INT(o.self_test, PV_ST_ZERO_CHUNK);
    CHECK(o.no_perf && o.no_nccl);
    CHECK_INT(parse(&o, "--self-test drop-chunk --sizes 1M"), PV_PARSE_OK);
    CHECK(o.self_test == PV_ST_DROP_CHUNK && o.nsizes == 1);
    CHECK_INT(parse(&o, "--self-test flip-bit"), PV_PARSE_OK);
    CHECK_INT(parse(&o, "--nccl-lib /x/libnccl.so.2 --nccl-sizes 8M,512M --seed 0x10"), PV_PARSE_OK);
    CHECK_STR(o.nccl_lib, "/x/libnccl.so.2");
    CHECK(o.n_nccl_sizes == 2 && o.seed == 16);
    CHECK_INT(parse(&o, "--help"), PV_PARSE_EXIT_OK);
    CHECK_INT(o.show, PV_SHOW_HELP);
    CHECK_INT(parse(&o, "--version"), PV_PARSE_EXIT_OK);
    CHECK_INT(o.show, PV_SHOW_VERSION);

    /* bad input -> usage (exit 2) */
    const char *bad[] = {"--bogus",
                         "--pairs",
                         "--pairs 0-0",
                         "--pairs 0-1,",
                         "--pairs 0-1,1",
                         "--pairs 1",
                         "--pairs a-b",
                         "--pairs 0-99",
                         "--sizes",
                         "--sizes 0",
                         "--sizes 1X",
                         "--sizes -4K",
                         "--sizes 4K,,1M",
                         "--sizes 17G",
                         "--sizes 99999999999999999999",
                         "--nccl-sizes 6",
                         "--self-test",
                         "--self-test melt",
                         "--iters 0",
                         "--perf-reps x",
                         "--seed -1",
                         "--json=1",
                         "--nccl-lib"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = parse(&o, bad[k]);
        if (rc != PV_PARSE_USAGE)
            fprintf(stderr, "  (option line '%s' gave %d)\n", bad[k], rc);
        CHECK_INT(rc, PV_PARSE_USAGE);
    }
    unsigned long long x = 0;
    CHECK_INT(pv_parse_size("256M", &x), 0);
    CHECK(x == 256ull << 20);
    CHECK_INT(pv_parse_size("4k", &x), 0);
    CHECK(x == 4096);
    CHECK_INT(pv_parse_size("", &x), -1);
    CHECK_INT(pv_parse_size("M", &x), -1);
    const char *help = pv_help_text();
    CHECK(strstr(help, "21  data corruption") != NULL);
    CHECK(strstr(help, "24  fewer than two GPUs") != NULL);
    CHECK(strstr(help, "--self-test MODE") != NULL);
}

static void test_nccl_parse(void)
{
    pv_nccl_conn c;
    CHECK_INT(pv_nccl_parse_line("node-a:1200:1210 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/direct pointer", &c),
              1);
    CHECK_INT(c.channel, 2);
    CHECK_INT(c.src_rank, 3);
    CHECK_INT(c.dst_rank, 4);
    CHECK_STR(c.transport, "P2P/direct pointer");
    CHECK_INT(pv_nccl_parse_line("m:1:2 [6] NCCL INFO Channel 03 : 7[b2000] -> 14[b1000] [receive] via "
                                 "NET/IB/0/GDRDMA\r",
                                 &c),
              1);
    CHECK_INT(c.src_rank, 7);
    CHECK_INT(c.dst_rank, 14);
    CHECK_STR(c.transport, "NET/IB/0/GDRDMA");
    CHECK_INT(pv_nccl_parse_line("h:1:2 [0] NCCL INFO Channel 00/24 :    0   1", &c), 0);
    CHECK_INT(pv_nccl_parse_line("h:1:2 [0] NCCL INFO Connected all rings", &c), 0);
    CHECK_INT(pv_nccl_parse_line("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ", &c), 0);
    char cls[16];
    pv_nccl_transport_class("SHM/direct/direct", cls, sizeof cls);
    CHECK_STR(cls, "SHM");
    pv_nccl_transport_class("P2P/CUMEM/read", cls, sizeof cls);
    CHECK_STR(cls, "P2P");

    static pv_nccl_run run;
    char *log = slurp("nccl-info-p2p.log");
    CHECK_INT(pv_nccl_parse_log(log, &run), 9); /* 8 + one P2P/CUMEM/read, duplicate dropped */
    int p2p = 0;
    for (int k = 0; k < run.nconn; k++)
        p2p += strncmp(run.conn[k].transport, "P2P/", 4) == 0;
    CHECK_INT(p2p, 9);
    free(log);
    log = slurp("nccl-info-shm.log");
    CHECK_INT(pv_nccl_parse_log(log, &run), 6);
    CHECK_STR(run.conn[0].transport, "SHM/direct/direct");
    CHECK_STR(run.conn[4].transport, "NET/IB/0/GDRDMA");
    free(log);
    /* real lines captured on 2x H200 (NCCL 2.28.9, ncclCommInitAll, NCCL_DEBUG=INFO) */
    log = slurp("nccl-info-h200-p2p.log");
    CHECK_INT(pv_nccl_parse_log(log, &run), 48); /* 24 channels each way */
    for (int k = 0; k < run.nconn; k++)
        CHECK_STR(run.conn[k].transport, "P2P/direct pointer");
    free(log);
    log = slurp("nccl-info-h200-nop2p.log");
    CHECK_INT(pv_nccl_parse_log(log, &run), 8); /* NCCL_P2P_DISABLE=1: 4 channels each way via SHM */
    for (int k = 0; k < run.nconn; k++)
        CHECK_STR(run.conn[k].transport, "SHM/direct/direct");
    free(log);

    /* verdict uses the parsed log: SHM while P2P is possible -> 20 */
    pv_results *r = mkresults();
    r->nccl.state = PV_NCCL_RAN;
    r->nccl.ngpus = 2;
    r->nccl.devs[0] = 0;
    r->nccl.devs[1] = 1;
    r->nccl.run[0].ran = r->nccl.run[0].ok = 1;
    log = slurp("nccl-info-shm.log");
    pv_nccl_parse_log(log, &r->nccl.run[0]);
    free(log);
    pv_verdict v;
    CHECK_INT(pv_compute_verdict(r, &v), 20);
    CHECK_INT(v.nccl_no_p2p_conns, 4);
    free_results(r);

    /* child protocol */
    static pv_nccl_run cr;
    int version = 0;
    memset(&cr, 0, sizeof cr);
    CHECK_INT(pv_nccl_parse_child("VERSION 22703\nSIZE 8388608 50.1 167.4 167.4 0 -1 0 0\n"
                                  "SIZE 33554432 140.0 239.6 239.6 3 17 54 0\nDONE\n",
                                  &cr, &version),
              0);
    CHECK_INT(version, 22703);
    CHECK_INT(cr.nsizes, 2);
    CHECK(cr.bytes[1] == 33554432ull && cr.nbad[1] == 3 && cr.first_bad[1] == 17);
    CHECK_NEAR(cr.busbw[0], 167.4, 1e-9);
    memset(&cr, 0, sizeof cr);
    CHECK_INT(pv_nccl_parse_child("VERSION 22703\nERROR NCCL ncclCommInitAll: unhandled cuda error (1)\n", &cr, NULL),
              -1);
    CHECK(strstr(cr.error, "ncclCommInitAll") != NULL);
    memset(&cr, 0, sizeof cr);
    CHECK_INT(pv_nccl_parse_child("VERSION 1\nSIZE 8 1 1 1 0 -1 0 0\n", &cr, NULL), -1); /* no DONE */
    CHECK(strstr(cr.error, "without reporting DONE") != NULL);
    CHECK_INT(pv_nccl_parse_child("SIZE garbage\nDONE\n", &cr, NULL), -1);
}

static void test_pattern(void)
{
    size_t n = 1 << 20;
    uint8_t *buf = malloc(n);
    uint64_t seed = pv_test_seed(1, 0, 1, 0, 3, 0, 0);
    pv_pattern_fill(buf, n, seed, 0);
    long long first;
    unsigned e = 0, f = 0;
    CHECK(pv_pattern_check(buf, n, seed, 0, &first, &e, &f) == 0);
    CHECK_INT(first, -1);
    /* never zero, not constant, every byte value used */
    int hist[256] = {0};
    for (size_t i = 0; i < n; i++)
        hist[buf[i]]++;
    CHECK_INT(hist[0], 0);
    int used = 0;
    for (int b = 1; b < 256; b++)
        used += hist[b] > 0;
    CHECK_INT(used, 255);
    /* a different (pair, iteration) gives a different pattern */
    CHECK(pv_test_seed(1, 0, 1, 0, 3, 0, 0) != pv_test_seed(1, 1, 0, 0, 3, 0, 0));
    CHECK(pv_test_seed(1, 0, 1, 0, 3, 0, 0) != pv_test_seed(1, 0, 1, 0, 3, 0, 1));
    CHECK(pv_pattern_byte(seed, 12345) != pv_pattern_byte(seed ^ 1, 12345) ||
          pv_pattern_byte(seed, 12346) != pv_pattern_byte(seed ^ 1, 12346));
    /* corrupt: first bad offset, expected and found */
    uint8_t want = buf[0x1000];
    memset(buf + 0x1000, 0, 4096);
    buf[0x9000] ^= 0x10;
    CHECK(pv_pattern_check(buf, n, seed, 0, &first, &e, &f) == 4097);
    CHECK_INT(first, 0x1000);
    CHECK_INT(e, want);
    CHECK_INT(f, 0);
    /* a window starting inside the region (k0 != 0) */
    CHECK(pv_pattern_check(buf + 0x2000, n - 0x2000, seed, 0x2000, &first, &e, &f) == 1);
    CHECK_INT(first, 0x7000);
    /* a single flipped bit at the very end */
    pv_pattern_fill(buf, n, seed, 0);
    buf[n - 1] ^= 1;
    CHECK(pv_pattern_check(buf, n, seed, 0, &first, &e, &f) == 1);
    CHECK_INT(first, (long long)n - 1);
    free(buf);
}

static void test_next_line(void)
{
    const char *p = "ab\n\nlonger line\nlast";
    char line[6];
    int cut = -1;
    CHECK_INT(pv_next_line(&p, line, sizeof line, &cut), 1);
    CHECK_STR(line, "ab");
    CHECK_INT(cut, 0);
    CHECK_INT(pv_next_line(&p, line, sizeof line, &cut), 1);
    CHECK_STR(line, "");
    CHECK_INT(pv_next_line(&p, line, sizeof line, &cut), 1);
    CHECK_STR(line, "longe");
    CHECK_INT(cut, 1);
    CHECK_INT(pv_next_line(&p, line, sizeof line, NULL), 1);
    CHECK_STR(line, "last");
    CHECK_INT(pv_next_line(&p, line, sizeof line, &cut), 0);
    const char *q = "x\n";
    CHECK_INT(pv_next_line(&q, line, sizeof line, &cut), 1);
    CHECK_INT(pv_next_line(&q, line, sizeof line, &cut), 0);
}

static void test_tokenize(void)
{
    char buf[] = "  GPU0\tX  NV4 \r\n";
    char *tok[2];
    CHECK_INT(pv_tokenize(buf, tok, 2), 2);
    CHECK_STR(tok[0], "GPU0");
    CHECK_STR(tok[1], "X");
    char blank[] = " \t ";
    CHECK_INT(pv_tokenize(blank, tok, 2), 0);
}

static void test_sysparse(void)
{
    test_next_line();
    test_tokenize();
    char cells[8][8][12];
    memset(cells, 0, sizeof cells);
    char *t = slurp("smi-topo-m.txt");
    CHECK_INT(pv_parse_smi_matrix(t, 8, &cells[0][0][0], 12), 2);
    CHECK_STR(cells[0][1], "NV18");
    CHECK_STR(cells[1][0], "NV18");
    CHECK_STR(cells[0][0], "X");
    CHECK_INT(pv_smi_nvlinks(cells[0][1]), 18);
    CHECK_INT(pv_smi_nvlinks("PHB"), 0);
    CHECK_INT(pv_smi_nvlinks("NV"), 0);
    free(t);
    t = slurp("smi-topo-p2p-r.txt");
    memset(cells, 0, sizeof cells);
    CHECK_INT(pv_parse_smi_matrix(t, 8, &cells[0][0][0], 12), 3);
    CHECK_STR(cells[0][2], "CNS");
    CHECK_STR(cells[1][2], "OK");
    CHECK_STR(cells[2][2], "X");
    free(t);
    CHECK_INT(pv_parse_smi_matrix("No devices were found\n", 8, &cells[0][0][0], 12), 0);

    char b[32];
    CHECK_INT(pv_norm_busid("00000000:2A:00.0", b, sizeof b), 0);
    CHECK_STR(b, "0000:2a:00.0");
    CHECK_INT(pv_norm_busid("0000:18:00.0", b, sizeof b), 0);
    CHECK_STR(b, "0000:18:00.0");
    CHECK_INT(pv_norm_busid("18:00.0", b, sizeof b), 0);
    CHECK_STR(b, "0000:18:00.0");
    CHECK_INT(pv_norm_busid("garbage", b, sizeof b), -1);
    char ids[4][32];
    memset(ids, 0, sizeof ids);
    t = slurp("smi-query.csv");
    CHECK_INT(pv_parse_smi_index_csv(t, 4, ids), 2);
    CHECK_STR(ids[1], "0000:2a:00.0");
    free(t);
    t = slurp("sysfs-resource.txt");
    CHECK(pv_parse_sysfs_bar(t, 1) == 128ll << 30);
    CHECK(pv_parse_sysfs_bar(t, 0) == 16ll << 20);
    CHECK(pv_parse_sysfs_bar(t, 3) == 32ll << 20);
    CHECK(pv_parse_sysfs_bar(t, 2) == -1);
    CHECK(pv_parse_sysfs_bar(t, 40) == -1);
    CHECK(pv_parse_sysfs_bar1(t) == 128ll << 30); /* 32-bit BAR0: BAR1 on line 1 */
    free(t);
    t = slurp("sysfs-resource-h200-vm.txt"); /* captured on 2x H200: 64-bit BAR0, BAR1 on line 2 */
    CHECK(pv_parse_sysfs_bar1(t) == 256ll << 30);
    CHECK(pv_parse_sysfs_bar(t, 1) == -1);
    free(t);
    CHECK(pv_parse_sysfs_bar1("0x0 0x0 0x0\n") == -1);
    CHECK(pv_parse_sysfs_bar1("0x1000 0x1fff 0x101\n0x2000 0x2fff 0x101\n") == -1); /* I/O ports only */
    t = slurp("proc-driver-version.txt");
    CHECK_INT(pv_parse_proc_driver_version(t, b, sizeof b), 0);
    CHECK_STR(b, "580.159.04");
    free(t);
    CHECK_INT(pv_parse_proc_driver_version("nothing here", b, sizeof b), -1);
    char ansi[] = "\033[4mGPU0\033[0m\tGPU1";
    pv_strip_ansi(ansi);
    CHECK_STR(ansi, "GPU0\tGPU1");
}

/* --resident and --peer-cap: parsing, targets, verdicts, reports */
static void test_room(void)
{
    unsigned long long b = 0, t = 0;
    int pct = 0;
    char err[256];
    CHECK_INT(pv_parse_resident("38G", &b, &pct, err, sizeof err), 0);
    CHECK(b == 38ull << 30 && pct == 0);
    CHECK_INT(pv_parse_resident("90%", &b, &pct, err, sizeof err), 0);
    CHECK(b == 0 && pct == 90);
    CHECK_INT(pv_parse_resident("96%", &b, &pct, err, sizeof err), -1);
    CHECK(strstr(err, "1%..95%") != NULL);
    CHECK_INT(pv_parse_resident("0%", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("%", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("-5%", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("1M", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("2T", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("1TiB", &b, &pct, err, sizeof err), 0);
    CHECK(b == 1ull << 40);
    CHECK_INT(pv_parse_resident("2048", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("38Gx", &b, &pct, err, sizeof err), -1);
    CHECK_INT(pv_parse_resident("lots", &b, &pct, err, sizeof err), -1);

    /* targets: rounded down to 2 MiB, 2 GiB kept free */
    CHECK_INT(pv_resident_target(0, 50, 80ull << 30, 0, &t, err, sizeof err), 0);
    CHECK(t == 40ull << 30);
    CHECK_INT(pv_resident_target((38ull << 30) + 12345, 0, 80ull << 30, 0, &t, err, sizeof err), 0);
    CHECK(t == 38ull << 30);
    CHECK_INT(pv_resident_target(79ull << 30, 0, 80ull << 30, 3, &t, err, sizeof err), -1);
    CHECK(strstr(err, "GPU3 has 80.00 GiB free") && strstr(err, "at most 78.00 GiB") && strstr(err, "not 79.00 GiB"));
    CHECK_INT(pv_resident_target(2ull << 20, 0, 1ull << 30, 1, &t, err, sizeof err), -1);
    CHECK_INT(pv_resident_target(0, 95, 20ull << 30, 0, &t, err, sizeof err), -1);
    CHECK_INT(pv_resident_target(0, 95, 40ull << 30, 0, &t, err, sizeof err), 0);
    CHECK(pv_peer_cap_limit(80ull << 30) == 78ull << 30);
    CHECK(pv_peer_cap_limit(1ull << 30) == 0);

    /* statuses */
    CHECK_INT(pv_peer_cap_status(1, 1, 0), PV_CAP_NO_CAP);
    CHECK_INT(pv_peer_cap_status(0, 1, 0), PV_CAP_CAPPED);
    CHECK_INT(pv_peer_cap_status(0, 0, 0), PV_CAP_FAIL);
    CHECK_INT(pv_peer_cap_status(1, 0, 1), PV_CAP_ERROR);

    /* options: both accepted, --resident's value kept for the report */
    pv_options o;
    char *argv1[] = {"p2p-verify", "--resident", "90%", "--peer-cap", NULL};
    CHECK_INT(pv_parse_options(4, argv1, &o, err, sizeof err), PV_PARSE_OK);
    CHECK(o.resident_pct == 90 && o.peer_cap && strcmp(o.resident_arg, "90%") == 0);
    char *argv2[] = {"p2p-verify", "--resident=1K", NULL};
    CHECK_INT(pv_parse_options(2, argv2, &o, err, sizeof err), PV_PARSE_USAGE);
    char *argv3[] = {"p2p-verify", "--peer-cap=yes", NULL};
    CHECK_INT(pv_parse_options(2, argv3, &o, err, sizeof err), PV_PARSE_USAGE);
    CHECK(strstr(pv_help_text(), "--resident SIZE|N%") && strstr(pv_help_text(), "--peer-cap"));

    /* a capped owner that recovered: informational, exit 0; a failed recovery is a failure */
    pv_results *r = mkresults();
    r->gpu[0].bar1_bytes = 32ll << 30;
    r->resident.asked = r->resident.ok = 1;
    snprintf(r->resident.request, sizeof r->resident.request, "38G");
    r->resident.held[0] = 38ull << 30;
    r->resident.free_before[0] = 47ull << 30;
    r->resident.held[1] = 38ull << 30;
    r->resident.free_before[1] = 47ull << 30;
    r->peer_cap_ran = 1;
    r->npeer_cap = 2;
    pv_peer_cap *c = &r->peer_cap[0];
    c->owner = 0;
    c->npeers = 1;
    c->peers[0] = 1;
    c->mapped = 31ull << 30;
    c->limit = 45ull << 30;
    snprintf(c->stopped_by, sizeof c->stopped_by, "cudaErrorMemoryAllocation");
    c->recovered = 1;
    c->status = PV_CAP_CAPPED;
    c = &r->peer_cap[1];
    c->owner = 1;
    c->npeers = 1;
    c->peers[0] = 0;
    c->mapped = c->limit = 45ull << 30;
    snprintf(c->stopped_by, sizeof c->stopped_by, "limit");
    c->recovered = 1;
    c->status = PV_CAP_NO_CAP;
    pv_verdict v;
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_OK);
    FILE *f = tmpfile();
    pv_report_human(f, r, &v);
    char *s = file_to_string(f);
    fclose(f);
    CHECK(strstr(s, "== Memory held and the legacy peer-access cap ==") != NULL);
    CHECK(strstr(s, "GPU0: 38.00 GiB held of 47.00 GiB free (BAR1 32.00 GiB): at least BAR1's size") != NULL);
    CHECK(strstr(s, "GPU0's memory mapped by GPU 1: 31.00 GiB of 45.00 GiB tried, then cudaErrorMemoryAllocation "
                    "(BAR1 32.00 GiB): capped") != NULL);
    CHECK(strstr(s, "GPU1's memory mapped by GPU 0: 45.00 GiB, all it had free less 2 GiB (BAR1 32.00 GiB): no cap") != NULL);
    free(s);
    f = tmpfile();
    CHECK_INT(pv_report_json(f, r, &v), 0);
    s = file_to_string(f);
    fclose(f);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"request\": \"38G\"") && strstr(s, "\"held_at_least_bar1\": true") &&
          strstr(s, "\"status\": \"capped\"") && strstr(s, "\"status\": \"no-cap\"") &&
          strstr(s, "\"stopped_by\": \"cudaErrorMemoryAllocation\""));
    free(s);

    r->peer_cap[0].status = PV_CAP_FAIL;
    r->peer_cap[0].recovered = 0;
    snprintf(r->peer_cap[0].note, sizeof r->peer_cap[0].note,
             "the peer copy GPU0 -> GPU1 delivered 4096 wrong bytes of 64 MiB");
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_CORRUPTION);
    snprintf(r->peer_cap[0].note, sizeof r->peer_cap[0].note, "a new 64 MiB allocation on GPU0 failed: x");
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_CUDA);
    int seen = 0;
    for (int k = 0; k < v.nreasons; k++)
        seen |= strstr(v.reasons[k], "PEER CAP GPU0's memory") != NULL;
    CHECK(seen);

    /* --self-test cap-corrupt: caught is exit 21 "as intended", missed is a broken check (22) */
    char *argv4[] = {"p2p-verify", "--self-test", "cap-corrupt", NULL};
    CHECK_INT(pv_parse_options(3, argv4, &o, err, sizeof err), PV_PARSE_USAGE);
    CHECK(strstr(err, "needs --peer-cap") != NULL);
    char *argv5[] = {"p2p-verify", "--self-test", "cap-corrupt", "--peer-cap", NULL};
    CHECK_INT(pv_parse_options(4, argv5, &o, err, sizeof err), PV_PARSE_OK);
    CHECK(o.no_perf && o.no_nccl && o.no_integrity && o.no_hazards && o.self_test == PV_ST_CAP_CORRUPT);
    r->self_test = PV_ST_CAP_CORRUPT;
    for (int k = 0; k < 2; k++) {
        r->peer_cap[k].injected = 1;
        r->peer_cap[k].status = PV_CAP_FAIL;
        snprintf(r->peer_cap[k].note, sizeof r->peer_cap[k].note,
                 "the peer copy GPU0 -> GPU1 delivered 1 wrong bytes of 64 MiB");
    }
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_CORRUPTION);
    seen = 0;
    for (int k = 0; k < v.nreasons; k++)
        seen |= strstr(v.reasons[k], "detected for all 2 GPUs (as intended)") != NULL;
    CHECK(seen);
    r->peer_cap[1].status = PV_CAP_NO_CAP;
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_CUDA);
    r->peer_cap_ran = 0;
    CHECK_INT(pv_compute_verdict(r, &v), PV_EXIT_CUDA);
    r->self_test = PV_ST_NONE;

    /* neither asked: both null in the JSON, no section */
    pv_results_init(r);
    r->ngpus = 2;
    pv_compute_verdict(r, &v);
    f = tmpfile();
    CHECK_INT(pv_report_json(f, r, &v), 0);
    s = file_to_string(f);
    fclose(f);
    CHECK(strstr(s, "\"resident\": null") && strstr(s, "\"peer_cap\": null"));
    free(s);
    free_results(r);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_fixtures = argv[1];
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"limits", test_limits},   {"verdict", test_verdict},       {"keep_risk_hints", test_keep_risk_and_hints},       {"matrix_format", test_matrix_format},
        {"json", test_json},       {"options", test_options},       {"nccl_parse", test_nccl_parse},
        {"pattern", test_pattern}, {"sysparse", test_sysparse}, {"selftest_report", test_selftest_report},
        {"hazards", test_hazards}, {"room", test_room},
        {"doctor_parse", test_doctor_parsers}, {"doctor_rules", test_doctor_rules},
        {"doctor_symptoms", test_doctor_symptoms},
        {"doctor_input", test_doctor_input}, {"doctor_json", test_doctor_json_reader},
    };
    for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
        int before = g_failed;
        tests[k].fn();
        printf("%-14s %s\n", tests[k].name, g_failed == before ? "ok" : "FAILED");
    }
    printf("%d checks, %d failed\n", g_checks, g_failed);
    return g_failed > 100 ? 100 : g_failed;
}
