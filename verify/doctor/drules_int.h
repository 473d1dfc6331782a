/* drules_int.h - p2p-doctor's rules, inside: the context of one diagnosis
 * (ctx), each ordered pair's observations summed (pobs_sum), and what the
 * dr_*.c files share.  Private to drules.c and the dr_*.c files.
 *
 * Where a rule lives: by subject (dr_module.c the driver, dr_iommu_acs.c,
 * dr_links.c, dr_bar1.c, dr_integrity.c, dr_symptoms.c, dr_missing.c); the
 * order in which they run, which is the order of the findings in the report,
 * is dr_diagnose's (drules.c).  A rule that only turns one flag of dr_sys
 * into one fixed finding is a line of the table in dr_findings.c. */
#ifndef P2PD_DRULES_INT_H
#define P2PD_DRULES_INT_H

#include <stddef.h>

#include "dmodel.h"
#include "drules.h"

/* p2p-verify's hazard tests (its --json "hazards"): a failed one is a finding
 * of its own, a symptom like p2p-data-corruption (no cause of missing P2P). */
#define DR_NHAZ 5
typedef struct {
    const char *test, *id, *summary, *fix;
} dr_hazard;
extern const dr_hazard dr_hazards[DR_NHAZ]; /* dr_integrity.c */

/* A finding's texts: the first wording stays. */
#define SUMMARY(f, ...) dr_f_text((f)->summary, sizeof (f)->summary, __VA_ARGS__)
#define FIX(f, ...) dr_f_text((f)->fix, sizeof (f)->fix, __VA_ARGS__)

/* ---- pair observations */

typedef struct {
    int access;      /* -1 unknown, 0 no, 1 yes */
    int access_src;  /* 4 CUDA/verify, 3 p2pcap, 2 nccl, 1 bandwidth */
    dr_ev access_ev;
    char topo[24];
    dr_ev topo_ev;
    char p2pcap[24];
    dr_ev p2pcap_ev;
    int corrupt;     /* -1 unknown, 0 intact, 1 corrupt */
    dr_ev corrupt_ev;
    double bw_on, bw_off; /* best of uni/bi, GB/s; -1 */
    int bw_kind;
    int bw_hostpath; /* bw_off is nvbandwidth's host path, not a staged copy */
    dr_ev bw_ev;
    double lat_on, lat_off; /* latency with P2P on and off, us; -1 */
    dr_ev lat_ev;
    double limit; /* p2p-verify's limit of the P2P path, GB/s per direction; -1 */
    char limit_type[24];
    unsigned cap_ok; /* topo -p2p modes that report OK: 1 r, 2 w */
    int cap_bad;     /* a topo -p2p mode that reports anything else */
    int nccl_shm;    /* NCCL chose SHM (not P2P) with P2P allowed */
    unsigned hazard; /* p2p-verify hazard tests that failed (bit k: dr_hazards[k]) */
    dr_ev hazard_ev[DR_NHAZ];
} pobs_sum;

typedef struct {
    dr_model *m;
    dr_diag *d;
    const dr_opts *o;
    pobs_sum *ps; /* [DR_MAX_GPUS][DR_MAX_GPUS] */
    int corrupt_unpaired;
    dr_ev corrupt_unpaired_ev;
    int new_keys; /* the module (or tag) numbers RMForceP2PType the 575 way: 1, 0 older, -1 unknown */
    int unexplained; /* a pair's state, or why P2P fails, cannot be told (exit 31) */
    int hazard_any;  /* a p2p-verify hazard test failed on some pair */
    char node_unmeasured[96]; /* pairs on a topo NODE path whose P2P nobody measured */
} ctx;

#define PS(c, a, b) (&(c)->ps[(size_t)(a) * DR_MAX_GPUS + (size_t)(b)])

/* ---- the rules of one flag (dr_findings.c): where each is applied */
enum { DR_ONE_DRIVER_NOT_LOADED = 0, DR_ONE_NOUVEAU, DR_ONE_STATIC_BAR1, DR_ONE_NCCL_WRONG };
void dr_flag_rules(ctx *c, int at);

/* dr_gpus.c */
int dr_is_generic_name(const char *name);
int dr_same_model(const char *a, const char *b);
void dr_add_label(char *list, size_t cap, const char *label);
int dr_map_index_at(dr_model *m, int ns, int idx, const dr_ev *e);
/* dr_findings.c */
dr_finding *dr_finding_get(dr_diag *d, const char *id, int scope, int a, int b, int sev, int cert);
void dr_f_ev(dr_finding *f, const dr_ev *e);
void dr_f_text(char *dst, size_t cap, const char *fmt, ...);
int dr_has_finding(const dr_diag *d, const char *id);
void dr_cat_text(char *dst, size_t cap, const char *fmt, ...);
void dr_cause_add(dr_finding *f, const char *id, int cert, const char *why);
const dr_finding *dr_finding_for(const dr_diag *d, const char *id, int a, int b);
/* dr_pairs.c */
void dr_summarize_pobs(ctx *c);
int dr_gpu_observed_ok(ctx *c, int g);
int dr_pair_error(ctx *c, int a, int b);
int dr_dir_slow(const pobs_sum *s);
int dr_pair_slow(ctx *c, int a, int b);
int dr_dir_lat_high(const pobs_sum *s);
int dr_pair_lat_high(ctx *c, int a, int b);
int dr_pair_symptom(ctx *c, int a, int b);
int dr_pair_observed_ok(ctx *c, int a, int b);
int dr_all_observed_ok(ctx *c);
int dr_any_observed_fail(ctx *c);
/* dr_module.c */
void dr_module_facts(ctx *c);
long long dr_key_val(const dr_regkeys *k, const char *name);
void dr_rule_keys(ctx *c);
void dr_rule_options(ctx *c);
void dr_rule_module(ctx *c);
/* dr_iommu_acs.c */
int dr_busid_is_gpu(dr_model *m, const char *b, int *g);
int dr_gpu_addresses_known(dr_model *m);
int dr_iommu_mode(ctx *c, dr_ev **me);
void dr_rule_iommu(ctx *c);
int dr_bus_of(const char *busid, int *dom);
int dr_bridge_above(const dr_bridge *br, const char *busid);
void dr_apply_setpci(ctx *c);
void dr_rule_acs(ctx *c);
/* dr_links.c */
void dr_rule_links(ctx *c);
void dr_rule_topology(ctx *c);
int dr_pair_nvlink(ctx *c, int a, int b);
int dr_forced_pcie(ctx *c);
void dr_rule_nvlink(ctx *c);
void dr_rule_nvlink_keep(ctx *c);
/* dr_bar1.c */
const char *dr_driver_version(ctx *c);
void dr_rule_bar1(ctx *c);
void dr_rule_display(ctx *c);
void dr_rule_models(ctx *c);
void dr_rule_vm(ctx *c);
/* dr_integrity.c */
int dr_hazard_index(const char *test);
int dr_is_hazard_id(const char *id);
void dr_rule_corruption(ctx *c);
void dr_rule_hazards(ctx *c);
/* dr_symptoms.c */
void dr_rule_symptoms(ctx *c);
/* dr_verdict.c */
int dr_finding_applies(const dr_finding *f, int a, int b);
int dr_is_cause(const dr_finding *f);
void dr_verdicts(ctx *c);
void dr_works_now(ctx *c);
void dr_finish(ctx *c);
/* dr_missing.c */
unsigned dr_kinds_read(dr_model *m);
void dr_rule_stock_guess(ctx *c);
void dr_rule_cut(ctx *c);
void dr_rule_insufficient(ctx *c);
void dr_check_counts(ctx *c);

#endif
