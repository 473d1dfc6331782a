/* results.h - everything one run measured; filled by the CUDA side, read by
 * the pure report/verdict code (so those can be unit tested without a GPU). */
#ifndef P2PV_RESULTS_H
#define P2PV_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#define PV_VERSION "1.0.0"
#define PV_MAX_GPUS 16
#define PV_MAX_PAIRS (PV_MAX_GPUS * (PV_MAX_GPUS - 1))
#define PV_MAX_SIZES 16
#define PV_NCCL_MAX_CONN 1024

/* Exit codes (the verdict). */
enum {
    PV_EXIT_OK = 0,
    PV_EXIT_USAGE = 2,
    PV_EXIT_NO_P2P = 20,
    PV_EXIT_CORRUPTION = 21,
    PV_EXIT_CUDA = 22,
    PV_EXIT_NCCL = 23,
    PV_EXIT_FEW_GPUS = 24
};

enum { PV_M_CE = 0, PV_M_SM_STORE = 1, PV_M_SM_LOAD = 2, PV_M_COUNT = 3 };
enum { PV_INT_OK = 0, PV_INT_CORRUPT = 1, PV_INT_SKIPPED = 2, PV_INT_ERROR = 3 };
/* --self-test modes: the integrity checker's (zero-chunk ... flip-bit), then
 * one per hazard test (comp-corrupt ... managed-corrupt, PV_ST_FIRST_HAZARD on). */
enum {
    PV_ST_NONE = 0,
    PV_ST_ZERO_CHUNK,
    PV_ST_DROP_CHUNK,
    PV_ST_FLIP_BIT,
    PV_ST_COMP_CORRUPT,
    PV_ST_LOST_UPDATE,
    PV_ST_FLAG_BEFORE_DATA,
    PV_ST_STALE,
    PV_ST_MANAGED_CORRUPT,
    PV_ST_CAP_CORRUPT          /* --peer-cap's re-mapped copy gets a wrong byte */
};
#define PV_ST_FIRST_HAZARD PV_ST_COMP_CORRUPT
enum { PV_LINK_UNKNOWN = 0, PV_LINK_PCIE = 1, PV_LINK_NVLINK = 2 };
enum { PV_NCCL_NOT_RUN = 0, PV_NCCL_SKIP = 1, PV_NCCL_RAN = 2 };

#define PV_NUM_CASES 3

/* Hazard tests (hazards.c): one result per selected ordered pair and test. */
enum { PV_HZ_COMPRESSIBLE = 0, PV_HZ_ATOMICS, PV_HZ_ORDERING, PV_HZ_STALE, PV_HZ_MANAGED, PV_HZ_COUNT };
/* Their outcome.  REFUSED (CUDA refused the mapping or access), NA (the GPU
 * or driver lacks what the test needs) and SKIPPED (not asked for, or no peer
 * access, or too little memory) are no failures; FAIL is wrong data, a lost
 * update, the flag before the data, stale data (exit 21); ERROR a CUDA error
 * (exit 22). */
enum { PV_HZS_NOT_RUN = 0, PV_HZS_PASS, PV_HZS_REFUSED, PV_HZS_NA, PV_HZS_SKIPPED, PV_HZS_FAIL, PV_HZS_ERROR };

typedef struct {
    int src, dst;              /* GPU src is the peer, GPU dst owns the memory (ordering: src writes
                                  into dst's memory, a kernel on dst reads it) */
    int test;                  /* PV_HZ_* */
    int status;                /* PV_HZS_* */
    int ran;                   /* kernels ran on the GPUs (0: decided before, or the checker alone) */
    unsigned long long checked;/* bytes checked (atomics: updates counted) */
    unsigned long long nbad;   /* bad bytes (ordering: words; atomics: counters) */
    long long first_bad;       /* byte offset (ordering: word; atomics: counter) of the first; -1 none */
    unsigned long long expected, found; /* there */
    unsigned long long nalt;   /* stale: bad bytes holding A's data; atomics: updates lost */
    int round, rounds;         /* the (1-based) round that failed; rounds run */
    unsigned long long guard_bad; /* compressible: bytes of the host guard that changed */
    long long guard_first;     /* offset of the first, -1 none */
    int injected;              /* --self-test injected this test's failure */
    double seconds;
    char what[48];             /* the step that saw it ("peer read", "owner read", "host guard" ...) */
    char note[200];            /* refused / not applicable / skipped / error: why */
} pv_hz_result;

typedef struct {
    int src, dst, method, size_idx, case_idx, iter;
    unsigned long long size, src_off, dst_off, len, seed;
    int status;                /* PV_INT_* */
    long long first_bad;       /* relative to the destination region; <0: guard before */
    unsigned expected, found;  /* bytes at first_bad */
    unsigned long long nbad;   /* bad bytes (region + guards) */
    int host_confirmed;        /* the host re-read the failing bytes and agrees */
    int injected;              /* self-test: corruption was injected here */
    long long inject_off;
    unsigned long long inject_len;
    char note[160];
} pv_int_result;

typedef struct {
    char name[128];
    char bus_id[32];           /* "0000:18:00.0" */
    int cc_major, cc_minor;
    unsigned long long mem_bytes;
    long long bar1_bytes;      /* -1 unknown */
    char bar1_src[16];         /* "sysfs" / "nvml" */
    int gen_cur, width_cur;    /* 0 unknown */
    int gen_max, width_max;    /* max the link can train to (device and its port) */
    char link_src[16];
    int nvlink_active;         /* active NVLink links, -1 unknown */
    int nvlink_version;        /* 0 unknown */
    int smi_index;             /* nvidia-smi index, -1 unknown */
} pv_gpu;

typedef struct {
    int type;                  /* PV_LINK_* */
    double gbps;               /* per direction, GB/s (1e9); 0 = unknown */
    int gen, width;            /* PCIe */
    int nlinks;                /* NVLink */
    double per_link;           /* NVLink GB/s per link per direction */
    char desc[240];
} pv_link;

typedef struct {
    int channel;
    int src_rank, dst_rank;
    char transport[64];        /* "P2P/direct pointer", "SHM/direct/direct", ... */
} pv_nccl_conn;

typedef struct {
    int ran;
    int ok;                    /* child finished and reported every size */
    char error[512];
    int nsizes;
    unsigned long long bytes[PV_MAX_SIZES];
    double time_us[PV_MAX_SIZES], algbw[PV_MAX_SIZES], busbw[PV_MAX_SIZES];
    unsigned long long nbad[PV_MAX_SIZES];
    long long first_bad[PV_MAX_SIZES];
    double expected[PV_MAX_SIZES], found[PV_MAX_SIZES];
    int nconn;
    int conn_truncated;
    pv_nccl_conn conn[PV_NCCL_MAX_CONN];
    double wall_s;
} pv_nccl_run;

typedef struct {
    int state;                 /* PV_NCCL_* */
    char reason[512];          /* why skipped */
    int version;               /* ncclGetVersion code, 0 unknown */
    char lib[512];
    int ngpus;
    int devs[PV_MAX_GPUS];     /* rank r -> CUDA device */
    int warmup, iters;
    pv_nccl_run run[2];        /* 0: P2P allowed, 1: NCCL_P2P_DISABLE=1 */
} pv_nccl;

/* --resident: memory held on each GPU before the tests allocate theirs. */
typedef struct {
    int asked;                 /* --resident given */
    char request[32];          /* as given: "38G", "90%" */
    int ok;                    /* every GPU holds its target */
    char error[256];           /* why not */
    unsigned long long held[PV_MAX_GPUS];      /* bytes held, 0 none */
    unsigned long long free_before[PV_MAX_GPUS];
    unsigned long long total[PV_MAX_GPUS];
} pv_resident;

/* --peer-cap: how much of one owner GPU's memory the legacy route
 * (cudaDeviceEnablePeerAccess, which maps every allocation to the peers)
 * could map, and whether the owner works again once it is freed. */
enum { PV_CAP_NOT_RUN = 0, PV_CAP_NO_CAP, PV_CAP_CAPPED, PV_CAP_FAIL, PV_CAP_ERROR };
typedef struct {
    int owner;
    int npeers;
    int peers[PV_MAX_GPUS];
    int status;                /* PV_CAP_* */
    unsigned long long mapped; /* bytes allocated on the owner while its peers had access */
    unsigned long long limit;  /* what was tried: free memory less the margin */
    char stopped_by[64];       /* "limit" or the CUDA error that ended it */
    int recovered;             /* after freeing: a new allocation, peer-copied, read back right */
    int injected;              /* --self-test cap-corrupt flipped a byte of that copy */
    char note[200];
    double seconds;
} pv_peer_cap;

typedef struct {
    /* identity */
    char date[40];
    char hostname[64];
    char driver_version[32];
    char registry_dwords[256]; /* /proc/driver/nvidia/params' RegistryDwords, "" unknown */
    int cuda_driver_api, cuda_runtime;
    char argv_line[512];

    /* topology */
    int ngpus;
    pv_gpu gpu[PV_MAX_GPUS];
    int access_known;
    int can_access[PV_MAX_GPUS][PV_MAX_GPUS];
    int native_atomics[PV_MAX_GPUS][PV_MAX_GPUS];
    int perf_rank[PV_MAX_GPUS][PV_MAX_GPUS];
    int smi_ok;                /* nvidia-smi topo -p2p matrices parsed */
    char smi_note[256];
    char smi_p2p_r[PV_MAX_GPUS][PV_MAX_GPUS][8];
    char smi_p2p_w[PV_MAX_GPUS][PV_MAX_GPUS][8];
    char smi_topo[PV_MAX_GPUS][PV_MAX_GPUS][12];
    int smi_topo_ok;
    pv_link link[PV_MAX_GPUS][PV_MAX_GPUS];   /* path used with P2P on */
    pv_link pcie[PV_MAX_GPUS][PV_MAX_GPUS];   /* PCIe path (P2P off: staged via host) */

    /* what was asked */
    int npairs;
    int pair_src[PV_MAX_PAIRS], pair_dst[PV_MAX_PAIRS];
    int nsizes;
    unsigned long long sizes[PV_MAX_SIZES];
    int iters;
    unsigned long long seed;
    int self_test;
    int perf_peer_off; /* --perf-peer-off */
    int quick;
    int managed;       /* --managed: the managed-memory test is opted in */

    /* integrity */
    int integrity_ran;
    int nint;
    pv_int_result *ints;       /* nint entries */

    /* hazard tests: hz[k] belongs to pair k (pair_src[k] -> pair_dst[k]) */
    int hazards_ran;
    pv_hz_result hz[PV_MAX_PAIRS][PV_HZ_COUNT];

    /* --resident and --peer-cap (resident.c) */
    pv_resident resident;
    int peer_cap_ran;
    int npeer_cap;
    pv_peer_cap peer_cap[PV_MAX_GPUS];

    /* performance */
    int perf_ran;
    unsigned long long perf_bytes;
    int perf_repeat, perf_reps, lat_repeat;
    double uni_on[PV_MAX_GPUS][PV_MAX_GPUS], uni_off[PV_MAX_GPUS][PV_MAX_GPUS];
    double bi_on[PV_MAX_GPUS][PV_MAX_GPUS], bi_off[PV_MAX_GPUS][PV_MAX_GPUS];
    double lat_on[PV_MAX_GPUS][PV_MAX_GPUS], lat_off[PV_MAX_GPUS][PV_MAX_GPUS];

    /* NCCL */
    pv_nccl nccl;

    /* errors */
    int cuda_error;
    char cuda_error_msg[512];
    int peer_fail_src, peer_fail_dst; /* cudaDeviceEnablePeerAccess failed between them; -1 */

    double elapsed_s;
} pv_results;

const char *pv_method_name(int method);
const char *pv_self_test_name(int mode);
/* Fill a fresh results struct with "unknown"/NaN defaults. */
void pv_results_init(pv_results *r);

#endif
