/* options.h - command-line parsing (pure C). */
#ifndef P2PV_OPTIONS_H
#define P2PV_OPTIONS_H

#include <stddef.h>
#include "results.h"

enum { PV_PARSE_OK = 0, PV_PARSE_EXIT_OK = 1, PV_PARSE_USAGE = 2 };
enum { PV_SHOW_NONE = 0, PV_SHOW_HELP = 1, PV_SHOW_VERSION = 2 };

typedef struct {
    int json, quick, no_nccl, no_perf, no_integrity, verbose;
    int perf_peer_off; /* --perf-peer-off: P2P=Enabled measured with peer access off */
    int no_hazards;    /* --no-hazards */
    int managed;       /* --managed: run the managed-memory hazard test (opt-in: it can wedge GPUs) */
    unsigned long long resident_bytes; /* --resident SIZE: bytes held per GPU during the tests */
    int resident_pct;                  /* --resident N%: percent of each GPU's free memory */
    char resident_arg[32];             /* as given, "" when not */
    int peer_cap;                      /* --peer-cap: measure the legacy peer-access cap */
    int self_test;                       /* PV_ST_* */
    int pairs_given;
    int pairs_is_list;                   /* "0,1": all ordered pairs among these GPUs */
    int nlist;
    int list[PV_MAX_GPUS];
    int npairs;
    int pair_src[PV_MAX_PAIRS], pair_dst[PV_MAX_PAIRS];
    int sizes_given;
    int nsizes;
    unsigned long long sizes[PV_MAX_SIZES];
    int nccl_sizes_given;
    int n_nccl_sizes;
    unsigned long long nccl_sizes[PV_MAX_SIZES];
    char nccl_lib[512];
    unsigned long long seed;
    int iters;                           /* integrity iterations per case */
    int perf_reps;                       /* measured samples per perf cell (median) */
    int nccl_warmup, nccl_iters;
    int show;                            /* PV_SHOW_* */
} pv_options;

void pv_options_defaults(pv_options *o);
/* Parse argv[1..argc).  Returns PV_PARSE_OK, PV_PARSE_EXIT_OK (--help or
 * --version: print and exit 0) or PV_PARSE_USAGE (message in err: exit 2). */
int pv_parse_options(int argc, char *const *argv, pv_options *o, char *err, size_t errlen);

/* "4K", "1M", "256MiB", "1G", "4096" -> bytes (binary suffixes).  0 on success. */
int pv_parse_size(const char *s, unsigned long long *out);
/* Comma list of sizes.  0 on success. */
int pv_parse_size_list(const char *s, unsigned long long *out, int max, int *n);
/* "0-1,1-0" (ordered pairs), "0,1,2" (GPU list) or "all".  0 on success. */
int pv_parse_pairs(const char *s, pv_options *o, char *err, size_t errlen);
/* Turn the option into the ordered pair list for ngpus GPUs; validates the
 * indices.  0 on success, -1 with message on a GPU index out of range. */
int pv_resolve_pairs(pv_options *o, int ngpus, char *err, size_t errlen);

int pv_parse_self_test(const char *s);
/* --resident's value: "38G" (bytes, 2 MiB .. 1 TiB) or "90%" (1..95 percent
 * of free memory).  0 on success, -1 (message in err) otherwise. */
int pv_parse_resident(const char *s, unsigned long long *bytes, int *pct, char *err, size_t errlen);
/* What to say when cudaGetDeviceCount fails, given CUDA_VISIBLE_DEVICES
 * (NULL: unset): a GPU listed twice (CUDA then fails with "invalid device
 * ordinal"), else the driver.  Written to buf, which is returned. */
const char *pv_device_count_hint(const char *cvd, char *buf, size_t len);
const char *pv_help_text(void);
/* Human "256 MiB" / "4 KiB" / "1000 B". */
void pv_fmt_size(unsigned long long bytes, char *buf, size_t len);
/* Rounded: "1.88 GiB", "99.0 MiB", "4.0 KiB", "12 B". */
void pv_fmt_bytes(unsigned long long bytes, char *buf, size_t len);

#endif
