/* drules.h - p2p-doctor's rules: from the facts (dmodel.h) to findings with
 * stable ids, a verdict per ordered GPU pair, and an exit code (pure C). */
#ifndef P2PD_DRULES_H
#define P2PD_DRULES_H

#include "dmodel.h"

#define DR_MAX_FINDINGS 256
#define DR_FIND_EV 5
#define DR_MAX_MISSING 16
#define DR_MAX_CAUSES 6

enum { DR_SCOPE_MACHINE = 0, DR_SCOPE_GPU, DR_SCOPE_PAIR };
enum { DR_SEV_INFO = 0, DR_SEV_DEGRADES, DR_SEV_BLOCKS };
enum { DR_CERT_POSSIBLE = 0, DR_CERT_LIKELY, DR_CERT_CERTAIN };

/* Pair verdicts. */
enum {
    DR_V_UNKNOWN = 0,
    DR_V_BAR1,   /* P2P over PCIe (BAR1 on GeForce) */
    DR_V_NVLINK, /* P2P over NVLink */
    DR_V_P2P,    /* P2P works; the link is not shown */
    DR_V_HOST,   /* no P2P: copies staged through host memory */
    DR_V_NONE,   /* P2P must not be used: data corruption */
};
enum { DR_BASIS_NONE = 0, DR_BASIS_OBSERVED, DR_BASIS_INFERRED };

/* Exit codes of p2p-doctor (and build.sh doctor). */
enum {
    DR_EXIT_OK = 0,
    DR_EXIT_INTERNAL = 1,
    DR_EXIT_USAGE = 2,
    DR_EXIT_BLOCKED = 30,
    DR_EXIT_INSUFFICIENT = 31,
    DR_EXIT_NO_PAIR = 32,
    DR_EXIT_UNREADABLE = 33,
};

typedef struct {
    const char *id;
    int scope;
    int a, b; /* merged GPUs, -1 */
    int severity, certainty;
    char summary[400];
    char fix[480];
    dr_ev ev[DR_FIND_EV];
    int nev;
    /* a symptom's (p2p-slower-than-host, p2p-latency-high) likely causes, most
     * likely first, each with its certainty and what shows it; the causes the
     * outputs rule out; the ones they cannot tell, with what would */
    struct {
        const char *id;
        int certainty;
        char why[200];
    } cause[DR_MAX_CAUSES];
    int ncause;
    char ruled_out[300];
    char not_shown[400];
} dr_finding;

typedef struct {
    int a, b;
    int verdict, basis;
    char why[240];
    dr_ev ev;
    const char *causes[8];
    int ncauses;
} dr_pairv;

typedef struct {
    int preinstall;   /* before build.sh installs: the loaded driver is stock */
    char tag[24];     /* the tag to be installed (preinstall) */
} dr_opts;

typedef struct {
    dr_finding f[DR_MAX_FINDINGS];
    int nf;
    dr_pairv *pairs;
    int npairs;
    char missing[DR_MAX_MISSING][200];
    int nmissing;
    int inconsistent; /* outputs disagree on the GPUs */
    char module_version[24];
    const char *module_version_src;
    int ours; /* 1 the loaded module is nvidia-p2p's, 0 not, -1 unknown */
    char p2p_pending[24]; /* nvidia-p2p-dkms's version when it is installed and another version of the
                             open module is loaded, no other kernel module package beside it; "" else */
    int unverified; /* pairs seen with P2P whose data no output checked */
    int works_now;  /* every one of these ordered pairs is OK in topo -p2p r and w (the loaded
                       driver gives them P2P) and nothing blocks it; 0 otherwise */
    int exit_code;
    const char *status;
    char reasons[4][240];
    int nreasons;
} dr_diag;

/* Merge GPU records into m->gpus (by PCI address, then by index). */
void dr_unify(dr_model *m);
/* Diagnose (dr_unify first).  d must be zeroed; free with dr_diag_free. */
int dr_diagnose(dr_model *m, const dr_opts *o, dr_diag *d);
void dr_diag_free(dr_diag *d);

const char *dr_verdict_name(int v);
const char *dr_sev_name(int s);
const char *dr_cert_name(int c);
/* "GPU0" (nvidia-smi index), else "CUDA GPU0", else the PCI address. */
void dr_gpu_label(const dr_model *m, int g, char *out, size_t outlen);
/* Every finding id this version can report, NULL-terminated. */
extern const char *const dr_finding_ids[];

#endif
