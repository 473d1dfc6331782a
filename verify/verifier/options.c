/* options.c - command-line parsing (pure C, no CUDA). */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include "hzcheck.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned long long kDefaultSizes[] = {4ull << 10, 1ull << 20, 64ull << 20, 256ull << 20};
static const unsigned long long kQuickSizes[] = {4ull << 10, 1ull << 20, 32ull << 20};
static const unsigned long long kDefaultNccl[] = {8ull << 20, 32ull << 20, 128ull << 20, 512ull << 20};
static const unsigned long long kQuickNccl[] = {8ull << 20, 128ull << 20};

#define PV_MAX_TEST_SIZE (16ull << 30)

void pv_options_defaults(pv_options *o)
{
    memset(o, 0, sizeof(*o));
    o->nsizes = (int)(sizeof(kDefaultSizes) / sizeof(kDefaultSizes[0]));
    memcpy(o->sizes, kDefaultSizes, sizeof(kDefaultSizes));
    o->n_nccl_sizes = (int)(sizeof(kDefaultNccl) / sizeof(kDefaultNccl[0]));
    memcpy(o->nccl_sizes, kDefaultNccl, sizeof(kDefaultNccl));
    o->seed = 0x5032505645524946ull; /* "P2PVERIF" */
    o->iters = 2;
    o->perf_reps = 3;
    o->nccl_warmup = 5;
    o->nccl_iters = 20;
}

static void seterr(char *err, size_t errlen, const char *fmt, const char *arg)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, arg ? arg : "");
}

int pv_parse_size(const char *s, unsigned long long *out)
{
    if (!s || !*s)
        return -1;
    if (!isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned long long mul = 1;
    if (*end) {
        char c = (char)toupper((unsigned char)*end);
        if (c == 'K')
            mul = 1ull << 10;
        else if (c == 'M')
            mul = 1ull << 20;
        else if (c == 'G')
            mul = 1ull << 30;
        else if (c == 'B' && end[1] == '\0')
            mul = 1;
        else
            return -1;
        end++;
        if (mul != 1) {
            /* optional "iB" or "B" */
            if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
                end += 2;
            else if (end[0] == 'B' || end[0] == 'b')
                end += 1;
        }
        if (*end)
            return -1;
    }
    if (v == 0)
        return -1;
    if (v > PV_MAX_TEST_SIZE / mul)
        return -1;
    *out = v * mul;
    return 0;
}

int pv_parse_size_list(const char *s, unsigned long long *out, int max, int *n)
{
    char buf[512];
    if (!s || !*s || strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    int cnt = 0;
    char *save = NULL;
    if (buf[strlen(buf) - 1] == ',' || buf[0] == ',' || strstr(buf, ",,"))
        return -1;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (cnt >= max)
            return -1;
        if (pv_parse_size(tok, &out[cnt]) != 0)
            return -1;
        cnt++;
    }
    if (cnt == 0)
        return -1;
    *n = cnt;
    return 0;
}

static int parse_index(const char *s, const char **end)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    long v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v >= PV_MAX_GPUS)
            return -1;
        s++;
    }
    *end = s;
    return (int)v;
}

int pv_parse_pairs(const char *s, pv_options *o, char *err, size_t errlen)
{
    o->pairs_given = 1;
    o->npairs = 0;
    o->nlist = 0;
    o->pairs_is_list = 0;
    if (!s || !*s) {
        seterr(err, errlen, "--pairs: empty value%s", "");
        return -1;
    }
    if (strcmp(s, "all") == 0) {
        o->pairs_given = 0;
        return 0;
    }
    int has_dash = strchr(s, '-') != NULL;
    const char *p = s;
    while (*p) {
        const char *e = NULL;
        int a = parse_index(p, &e);
        if (a < 0)
            goto bad;
        p = e;
        if (has_dash) {
            if (*p != '-')
                goto bad;
            p++;
            int b = parse_index(p, &e);
            if (b < 0)
                goto bad;
            p = e;
            if (a == b) {
                seterr(err, errlen, "--pairs: '%s': a pair needs two different GPUs", s);
                return -1;
            }
            for (int k = 0; k < o->npairs; k++)
                if (o->pair_src[k] == a && o->pair_dst[k] == b)
                    goto dup;
            if (o->npairs >= PV_MAX_PAIRS)
                goto bad;
            o->pair_src[o->npairs] = a;
            o->pair_dst[o->npairs] = b;
            o->npairs++;
        } else {
            for (int k = 0; k < o->nlist; k++)
                if (o->list[k] == a)
                    goto dup;
            o->list[o->nlist++] = a;
        }
    dup:
        if (*p == ',') {
            p++;
            if (!*p)
                goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    if (!has_dash) {
        if (o->nlist < 2) {
            seterr(err, errlen, "--pairs: '%s': a GPU list needs at least two GPUs", s);
            return -1;
        }
        o->pairs_is_list = 1;
    }
    return 0;
bad:
    seterr(err, errlen, "--pairs: cannot parse '%s' (use e.g. 0-1,1-0 or 0,1,2 or all)", s);
    return -1;
}

int pv_resolve_pairs(pv_options *o, int ngpus, char *err, size_t errlen)
{
    if (!o->pairs_given) {
        o->npairs = 0;
        for (int i = 0; i < ngpus && i < PV_MAX_GPUS; i++)
            for (int j = 0; j < ngpus && j < PV_MAX_GPUS; j++)
                if (i != j) {
                    o->pair_src[o->npairs] = i;
                    o->pair_dst[o->npairs] = j;
                    o->npairs++;
                }
        return 0;
    }
    if (o->pairs_is_list) {
        o->npairs = 0;
        for (int a = 0; a < o->nlist; a++) {
            if (o->list[a] >= ngpus) {
                char idx[16];
                snprintf(idx, sizeof idx, "%d", o->list[a]);
                seterr(err, errlen, "--pairs: GPU %s does not exist", idx);
                if (err && errlen)
                    snprintf(err + strlen(err), errlen - strlen(err), " (%d GPUs visible)", ngpus);
                return -1;
            }
        }
        for (int a = 0; a < o->nlist; a++)
            for (int b = 0; b < o->nlist; b++)
                if (a != b) {
                    o->pair_src[o->npairs] = o->list[a];
                    o->pair_dst[o->npairs] = o->list[b];
                    o->npairs++;
                }
        return 0;
    }
    for (int k = 0; k < o->npairs; k++) {
        int bad = o->pair_src[k] >= ngpus ? o->pair_src[k] : (o->pair_dst[k] >= ngpus ? o->pair_dst[k] : -1);
        if (bad >= 0) {
            char idx[16];
            snprintf(idx, sizeof idx, "%d", bad);
            seterr(err, errlen, "--pairs: GPU %s does not exist", idx);
            if (err && errlen)
                snprintf(err + strlen(err), errlen - strlen(err), " (%d GPUs visible)", ngpus);
            return -1;
        }
    }
    return 0;
}

int pv_parse_self_test(const char *s)
{
    if (!s)
        return -1;
    if (strcmp(s, "zero-chunk") == 0)
        return PV_ST_ZERO_CHUNK;
    if (strcmp(s, "drop-chunk") == 0)
        return PV_ST_DROP_CHUNK;
    if (strcmp(s, "flip-bit") == 0)
        return PV_ST_FLIP_BIT;
    if (strcmp(s, "comp-corrupt") == 0)
        return PV_ST_COMP_CORRUPT;
    if (strcmp(s, "lost-update") == 0)
        return PV_ST_LOST_UPDATE;
    if (strcmp(s, "flag-before-data") == 0)
        return PV_ST_FLAG_BEFORE_DATA;
    if (strcmp(s, "stale") == 0)
        return PV_ST_STALE;
    if (strcmp(s, "managed-corrupt") == 0)
        return PV_ST_MANAGED_CORRUPT;
    if (strcmp(s, "cap-corrupt") == 0)
        return PV_ST_CAP_CORRUPT;
    return -1;
}

int pv_parse_resident(const char *s, unsigned long long *bytes, int *pct, char *err, size_t errlen)
{
    *bytes = 0;
    *pct = 0;
    size_t n = s ? strlen(s) : 0;
    if (n > 0 && s[n - 1] == '%') {
        char num[16];
        char *end = NULL;
        if (n - 1 == 0 || n - 1 >= sizeof num)
            goto bad;
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        errno = 0;
        long v = strtol(num, &end, 10);
        if (errno || *end || !isdigit((unsigned char)num[0]) || v < 1 || v > 95)
            goto bad;
        *pct = (int)v;
        return 0;
    }
    /* a size: digits and K, M, G or T (binary), optionally followed by iB or B */
    char *end = NULL;
    if (!s || !isdigit((unsigned char)s[0]))
        goto bad;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (errno)
        goto bad;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
        end += 2;
    else if (shift && (end[0] == 'B' || end[0] == 'b'))
        end++;
    if (*end || v > ((1ull << 40) >> shift) || (v << shift) < (2ull << 20))
        goto bad;
    *bytes = v << shift;
    return 0;
bad:
    seterr(err, errlen, "--resident: cannot parse '%s' (a size per GPU, 2M .. 1T, e.g. 38G; or a percentage of "
                        "each GPU's free memory, 1%%..95%%, e.g. 90%%)", s ? s : "");
    return -1;
}

static int parse_int_arg(const char *s, int lo, int hi, int *out)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int pv_parse_options(int argc, char *const *argv, pv_options *o, char *err, size_t errlen)
{
    pv_options_defaults(o);
    if (err && errlen)
        err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        /* accept --opt=value as well as --opt value */
        const char *eq = (strncmp(a, "--", 2) == 0) ? strchr(a, '=') : NULL;
        if (eq) {
            size_t nl = (size_t)(eq - a);
            if (nl >= sizeof(name)) {
                seterr(err, errlen, "unknown option '%s'", a);
                return PV_PARSE_USAGE;
            }
            memcpy(name, a, nl);
            name[nl] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
#define NEED_VALUE()                                                           \
    do {                                                                       \
        if (!val) {                                                            \
            if (i + 1 >= argc) {                                               \
                seterr(err, errlen, "option %s needs a value", name);          \
                return PV_PARSE_USAGE;                                         \
            }                                                                  \
            val = argv[++i];                                                   \
        }                                                                      \
    } while (0)
#define NO_VALUE()                                                             \
    do {                                                                       \
        if (val) {                                                             \
            seterr(err, errlen, "option %s takes no value", name);             \
            return PV_PARSE_USAGE;                                             \
        }                                                                      \
    } while (0)
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            NO_VALUE();
            o->show = PV_SHOW_HELP;
            return PV_PARSE_EXIT_OK;
        } else if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
            NO_VALUE();
            o->show = PV_SHOW_VERSION;
            return PV_PARSE_EXIT_OK;
        } else if (strcmp(name, "--json") == 0) {
            NO_VALUE();
            o->json = 1;
        } else if (strcmp(name, "--quick") == 0) {
            NO_VALUE();
            o->quick = 1;
        } else if (strcmp(name, "--no-nccl") == 0) {
            NO_VALUE();
            o->no_nccl = 1;
        } else if (strcmp(name, "--no-perf") == 0) {
            NO_VALUE();
            o->no_perf = 1;
        } else if (strcmp(name, "--no-integrity") == 0) {
            NO_VALUE();
            o->no_integrity = 1;
        } else if (strcmp(name, "--perf-peer-off") == 0) {
            NO_VALUE();
            o->perf_peer_off = 1;
        } else if (strcmp(name, "--no-hazards") == 0) {
            NO_VALUE();
            o->no_hazards = 1;
        } else if (strcmp(name, "--managed") == 0) {
            NO_VALUE();
            o->managed = 1;
        } else if (strcmp(name, "--resident") == 0) {
            NEED_VALUE();
            if (pv_parse_resident(val, &o->resident_bytes, &o->resident_pct, err, errlen) != 0)
                return PV_PARSE_USAGE;
            snprintf(o->resident_arg, sizeof o->resident_arg, "%.31s", val);
        } else if (strcmp(name, "--peer-cap") == 0) {
            NO_VALUE();
            o->peer_cap = 1;
        } else if (strcmp(name, "--verbose") == 0 || strcmp(name, "-v") == 0) {
            NO_VALUE();
            o->verbose = 1;
        } else if (strcmp(name, "--pairs") == 0) {
            NEED_VALUE();
            if (pv_parse_pairs(val, o, err, errlen) != 0)
                return PV_PARSE_USAGE;
        } else if (strcmp(name, "--sizes") == 0) {
            NEED_VALUE();
            if (pv_parse_size_list(val, o->sizes, PV_MAX_SIZES, &o->nsizes) != 0) {
                seterr(err, errlen, "--sizes: cannot parse '%s' (use e.g. 4K,1M,256M; 1 B .. 16 GiB each, at most 16)", val);
                return PV_PARSE_USAGE;
            }
            o->sizes_given = 1;
        } else if (strcmp(name, "--nccl-sizes") == 0) {
            NEED_VALUE();
            if (pv_parse_size_list(val, o->nccl_sizes, PV_MAX_SIZES, &o->n_nccl_sizes) != 0) {
                seterr(err, errlen, "--nccl-sizes: cannot parse '%s' (use e.g. 8M,32M,128M,512M)", val);
                return PV_PARSE_USAGE;
            }
            for (int k = 0; k < o->n_nccl_sizes; k++)
                if (o->nccl_sizes[k] % 4) {
                    seterr(err, errlen, "--nccl-sizes: '%s': each size must be a multiple of 4 bytes (float)", val);
                    return PV_PARSE_USAGE;
                }
            o->nccl_sizes_given = 1;
        } else if (strcmp(name, "--nccl-lib") == 0) {
            NEED_VALUE();
            if (!*val || strlen(val) >= sizeof(o->nccl_lib)) {
                seterr(err, errlen, "--nccl-lib: bad path '%s'", val);
                return PV_PARSE_USAGE;
            }
            snprintf(o->nccl_lib, sizeof o->nccl_lib, "%s", val);
        } else if (strcmp(name, "--self-test") == 0) {
            NEED_VALUE();
            int m = pv_parse_self_test(val);
            if (m < 0) {
                seterr(err, errlen, "--self-test: unknown mode '%s' (zero-chunk, drop-chunk, flip-bit, comp-corrupt, "
                                    "lost-update, flag-before-data, stale, managed-corrupt, cap-corrupt)", val);
                return PV_PARSE_USAGE;
            }
            o->self_test = m;
        } else if (strcmp(name, "--seed") == 0) {
            NEED_VALUE();
            char *end = NULL;
            errno = 0;
            unsigned long long s = strtoull(val, &end, 0);
            if (errno || !*val || *end || val[0] == '-') {
                seterr(err, errlen, "--seed: cannot parse '%s'", val);
                return PV_PARSE_USAGE;
            }
            o->seed = s;
        } else if (strcmp(name, "--iters") == 0) {
            NEED_VALUE();
            if (parse_int_arg(val, 1, 100, &o->iters) != 0) {
                seterr(err, errlen, "--iters: '%s' is not an integer in 1..100", val);
                return PV_PARSE_USAGE;
            }
        } else if (strcmp(name, "--perf-reps") == 0) {
            NEED_VALUE();
            if (parse_int_arg(val, 1, 100, &o->perf_reps) != 0) {
                seterr(err, errlen, "--perf-reps: '%s' is not an integer in 1..100", val);
                return PV_PARSE_USAGE;
            }
        } else {
            seterr(err, errlen, "unknown option '%s' (see --help)", a);
            return PV_PARSE_USAGE;
        }
#undef NEED_VALUE
#undef NO_VALUE
    }
    if (o->quick) {
        if (!o->sizes_given) {
            o->nsizes = (int)(sizeof(kQuickSizes) / sizeof(kQuickSizes[0]));
            memcpy(o->sizes, kQuickSizes, sizeof(kQuickSizes));
        }
        if (!o->nccl_sizes_given) {
            o->n_nccl_sizes = (int)(sizeof(kQuickNccl) / sizeof(kQuickNccl[0]));
            memcpy(o->nccl_sizes, kQuickNccl, sizeof(kQuickNccl));
        }
        o->iters = 1;
        o->perf_reps = 1;
        o->nccl_warmup = 2;
        o->nccl_iters = 10;
    }
    if (o->self_test == PV_ST_MANAGED_CORRUPT && !o->managed) {
        seterr(err, errlen, "--self-test managed-corrupt needs --managed: the managed-memory test is opt-in (it can "
                            "wedge every GPU on an unfixed patched driver; see --help)%s", "");
        return PV_PARSE_USAGE;
    }
    if (o->self_test == PV_ST_CAP_CORRUPT && !o->peer_cap) {
        seterr(err, errlen, "--self-test cap-corrupt needs --peer-cap (it proves that measurement's check)%s", "");
        return PV_PARSE_USAGE;
    }
    if (o->self_test == PV_ST_CAP_CORRUPT) {
        /* proves --peer-cap's check of the re-mapped copy: nothing else runs */
        o->no_perf = 1;
        o->no_nccl = 1;
        o->no_integrity = 1;
        o->no_hazards = 1;
    } else if (pv_self_test_hazard(o->self_test) >= 0) {
        /* a hazard self-test proves that test's checker: the hazard tests run, nothing else */
        o->no_perf = 1;
        o->no_nccl = 1;
        o->no_integrity = 1;
        o->no_hazards = 0;
    } else if (o->self_test) {
        /* the self-test proves the checker; it needs neither perf nor NCCL */
        o->no_perf = 1;
        o->no_nccl = 1;
        o->no_hazards = 1;
        o->no_integrity = 0;
        if (!o->sizes_given) {
            o->nsizes = 2;
            o->sizes[0] = 1ull << 20;
            o->sizes[1] = 64ull << 20;
        }
        o->iters = 1;
    }
    return PV_PARSE_OK;
}

void pv_fmt_size(unsigned long long b, char *buf, size_t len)
{
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        snprintf(buf, len, "%llu GiB", b >> 30);
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", b >> 20);
    else if (b >= (1ull << 10) && b % (1ull << 10) == 0)
        snprintf(buf, len, "%llu KiB", b >> 10);
    else if (b >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, len, "%.2f MiB", (double)b / (double)(1ull << 20));
    else
        snprintf(buf, len, "%llu B", b);
}

void pv_fmt_bytes(unsigned long long b, char *buf, size_t len)
{
    if (b >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= (1ull << 10))
        snprintf(buf, len, "%.1f KiB", (double)b / (double)(1ull << 10));
    else
        snprintf(buf, len, "%llu B", b);
}

const char *pv_help_text(void)
{
    return "Usage: p2p-verify [OPTIONS]\n"
           "\n"
           "Checks GPU peer-to-peer (P2P) between every ordered pair of visible GPUs:\n"
           "topology and peer-access matrix, byte-exact integrity of copy-engine and\n"
           "SM (kernel load/store) peer copies, bandwidth/latency with P2P on and off\n"
           "(measured like NVIDIA's p2pBandwidthLatencyTest) as a fraction of the\n"
           "link's limit, NCCL all-reduce with P2P allowed and disabled, and hazard\n"
           "tests: compressible memory shared with the peer, concurrent peer atomics,\n"
           "write-then-flag ordering, stale data after a remap at the same address,\n"
           "and (opt-in, --managed) managed memory used by both GPUs.\n"
           "\n"
           "Options:\n"
           "  --pairs LIST        ordered pairs '0-1,1-0', or a GPU list '0,1,2' (all\n"
           "                      ordered pairs among them), or 'all' (default)\n"
           "  --sizes LIST        integrity copy sizes, e.g. 4K,1M,256M\n"
           "                      (default 4K,1M,64M,256M; --quick 4K,1M,32M)\n"
           "  --quick             fewer sizes and iterations\n"
           "  --no-nccl           skip the NCCL all-reduce section\n"
           "  --no-perf           skip bandwidth/latency\n"
           "  --no-integrity      skip the integrity section\n"
           "  --perf-peer-off     a stand-in for P2P that CUDA offers but that takes the\n"
           "                      host path: measure the P2P=Enabled bandwidth and latency\n"
           "                      with peer access left off (the driver stages the copies\n"
           "                      through host memory); said in the report and the JSON\n"
           "                      (perf_peer_access_off), for testing build.sh doctor\n"
           "  --json              JSON to stdout; the human report goes to stderr\n"
           "  --no-hazards        skip the hazard tests (compressible memory, peer atomics,\n"
           "                      write ordering, stale mappings, managed memory)\n"
           "  --managed           also run the managed-memory hazard test (cudaMallocManaged\n"
           "                      shared by both GPUs of a pair). OPT-IN: on an unfixed\n"
           "                      patched driver it can wedge every GPU (Xid 31, then\n"
           "                      Xid 154: only a reboot recovers). Without it the test\n"
           "                      says 'skipped (opt-in: --managed)'.\n"
           "  --resident SIZE|N%  hold SIZE (e.g. 38G) or N% (1..95) of each GPU's free\n"
           "                      memory from the start, so that every buffer the tests\n"
           "                      allocate comes after it (a GPU whose BAR1 is smaller\n"
           "                      than its VRAM: shared buffers beyond the first\n"
           "                      BAR1-sized part). 2 GiB of each GPU stay free for the\n"
           "                      tests; asking for more ends with exit 2 before any test\n"
           "  --peer-cap          measure how much of each owner GPU's memory the legacy\n"
           "                      route (cudaDeviceEnablePeerAccess, which maps every\n"
           "                      allocation to the peers) can map: allocate in 1 GiB\n"
           "                      steps until an allocation fails or all free memory less\n"
           "                      2 GiB is taken; then free it, allocate again and copy\n"
           "                      to a peer (must succeed, bytes checked: a failure means\n"
           "                      the driver kept something of the freed memory). Runs last\n"
           "  --self-test MODE    inject corruption after each copy of the largest size\n"
           "                      and before the check: zero-chunk (zero 4 KiB in the\n"
           "                      middle), drop-chunk (do not copy one 4 KiB chunk),\n"
           "                      flip-bit (flip one bit); must end in CORRUPTION, exit 21.\n"
           "                      Implies --no-perf --no-nccl --no-hazards, sizes 1M,64M.\n"
           "                      Or inject one hazard test's failure:\n"
           "                        comp-corrupt      flip a byte of the compressible memory\n"
           "                        lost-update       take one update off a counter (at the\n"
           "                                          checker: works without peer atomics)\n"
           "                        flag-before-data  the writer sets the flag, then the data\n"
           "                        stale             allocation B gets A's data\n"
           "                        managed-corrupt   flip a byte of the managed memory (needs\n"
           "                                          --managed)\n"
           "                        cap-corrupt       flip a byte of --peer-cap's re-mapped\n"
           "                                          copy (needs --peer-cap; runs nothing\n"
           "                                          else)\n"
           "                      must end in CORRUPTION, exit 21 (22 where the test cannot\n"
           "                      run: nothing injected). Implies --no-perf --no-nccl\n"
           "                      --no-integrity.\n"
           "  --nccl-lib PATH     libnccl.so.2 to dlopen (default: $NCCL_HOME/lib, then\n"
           "                      the dynamic loader's search path)\n"
           "  --nccl-sizes LIST   all-reduce sizes (default 8M,32M,128M,512M)\n"
           "  --seed N            pattern seed (default 0x5032505645524946)\n"
           "  --iters N           integrity iterations per size and offset (default 2)\n"
           "  --perf-reps N       samples per bandwidth/latency cell, median (default 3)\n"
           "  -v, --verbose       progress on stderr\n"
           "  -h, --help          this text\n"
           "  -V, --version       print the version\n"
           "\n"
           "Exit codes (the verdict):\n"
           "   0  every pair has P2P and every byte arrived intact, no hazard test\n"
           "      failed (and NCCL, if run, was correct and used P2P)\n"
           "   2  usage error\n"
           "  20  no P2P between at least one pair (or NCCL did not use P2P where P2P\n"
           "      is available)\n"
           "  21  data corruption (a copy delivered wrong bytes; or a hazard test read\n"
           "      wrong data, lost an atomic update, saw the flag before the data, or\n"
           "      read stale data)\n"
           "  22  CUDA/runtime error (no driver, a failing CUDA call, a self-test whose\n"
           "      injection was not detected, ...)\n"
           "  23  NCCL error or wrong all-reduce result\n"
           "  24  fewer than two GPUs (nothing to verify)\n"
           "When several apply, the first in this order wins: 24, 21, 22, 23, 20.\n"
           "A missing libnccl.so.2 makes the NCCL section SKIP; it does not fail.\n"
           "A hazard test that CUDA refuses (refused), that the GPU cannot run (not\n"
           "applicable) or that is skipped never fails the verdict.\n";
}

/* The entries of CUDA_VISIBLE_DEVICES that CUDA uses: up to the first empty
 * one, blanks around each dropped.  Returns how many (at most max). */
static int cvd_entries(const char *cvd, char out[][64], int max)
{
    int n = 0;
    while (n < max) {
        while (*cvd == ' ')
            cvd++;
        size_t l = strcspn(cvd, ",");
        while (l > 0 && cvd[l - 1] == ' ')
            l--;
        if (l == 0 || l >= sizeof out[0])
            break;
        memcpy(out[n], cvd, l);
        out[n++][l] = '\0';
        cvd = strchr(cvd, ',');
        if (!cvd)
            break;
        cvd++;
    }
    return n;
}

/* Two entries for one GPU: "0" and "00" by number, UUIDs as written. */
static int same_entry(const char *a, const char *b)
{
    char *ea = NULL, *eb = NULL;
    long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
    if (ea != a && !*ea && eb != b && !*eb)
        return x == y;
    return !strcmp(a, b);
}

const char *pv_device_count_hint(const char *cvd, char *buf, size_t len)
{
    char e[PV_MAX_GPUS * 2][64];
    int n = cvd ? cvd_entries(cvd, e, PV_MAX_GPUS * 2) : 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (same_entry(e[i], e[j])) {
                snprintf(buf, len, "CUDA_VISIBLE_DEVICES=%.40s lists GPU %s twice; list each GPU once", cvd, e[i]);
                return buf;
            }
    if (cvd)
        snprintf(buf, len, "is the NVIDIA driver loaded? does CUDA_VISIBLE_DEVICES=%.40s name GPUs that exist?", cvd);
    else
        snprintf(buf, len, "is the NVIDIA driver loaded?");
    return buf;
}
