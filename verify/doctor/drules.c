/* drules.c - p2p-doctor's rules (pure C).  See drules.h; the rules are in the dr_*.c
 * files by subject (drules_int.h lists them), this is their order.
 *
 * Principles: an observation of the pair itself (CUDA's peer access, a
 * verification, the bandwidth with P2P on and off) outranks anything
 * inferred from the configuration; a finding is "certain" only when an
 * output shows it directly; where the outputs cannot show why a pair has no
 * P2P, the answer is insufficient-data with what to collect. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdlib.h>
#include <string.h>

const char *const dr_finding_ids[] = {
    "iommu-translated", "acs-redirect", "rebar-off", "bar1-unassigned", "bar1-smaller-than-vram",
    "bar1-as-large-as-vram", "static-bar1-missing", "static-bar1-peer-map-failed", "display-attached", "nvlink-bridged", "cross-root-complex", "link-degraded",
    "userspace-mismatch", "stock-module-loaded", "p2p-module-upgraded-not-loaded", "p2p-options-missing",
    "regkeys-wrong-generation",
    "chipset-not-supported", "mixed-gpu-models", "secure-boot-unsigned", "p2p-data-corruption",
    "insufficient-data", "driver-not-loaded", "gpu-init-failed", "nouveau-loaded", "virtual-machine",
    "p2p-slower-than-host", "p2p-latency-high", "nvlink-keep-failed", "test-output-cut",
    "verify-compressible-corrupt", "verify-atomics-lost", "verify-ordering", "verify-stale", "verify-managed", NULL};

const char *dr_verdict_name(int v)
{
    switch (v) {
    case DR_V_BAR1: return "p2p-bar1";
    case DR_V_NVLINK: return "p2p-nvlink";
    case DR_V_P2P: return "p2p";
    case DR_V_HOST: return "host-staged";
    case DR_V_NONE: return "not-possible";
    default: return "unknown";
    }
}

const char *dr_sev_name(int s)
{
    return s == DR_SEV_BLOCKS ? "blocks" : (s == DR_SEV_DEGRADES ? "degrades" : "info");
}

const char *dr_cert_name(int c)
{
    return c == DR_CERT_CERTAIN ? "certain" : (c == DR_CERT_LIKELY ? "likely" : "possible");
}

int dr_diagnose(dr_model *m, const dr_opts *o, dr_diag *d)
{
    static const dr_opts none = {0, ""};
    ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.d = d;
    c.o = o ? o : &none;
    c.new_keys = -1;
    memset(d, 0, sizeof(*d));
    c.ps = calloc((size_t)DR_MAX_GPUS * DR_MAX_GPUS, sizeof(pobs_sum));
    if (!c.ps)
        return -1;
    dr_summarize_pobs(&c);
    dr_module_facts(&c);
    dr_check_counts(&c);
    dr_rule_keys(&c);
    dr_rule_options(&c);
    dr_rule_module(&c);
    dr_rule_iommu(&c);
    dr_rule_bar1(&c);
    dr_rule_display(&c);
    dr_apply_setpci(&c);
    dr_rule_acs(&c);
    dr_rule_topology(&c);
    dr_rule_nvlink(&c);
    dr_rule_links(&c);
    dr_rule_models(&c);
    dr_rule_vm(&c);
    dr_rule_nvlink_keep(&c);
    dr_rule_symptoms(&c);
    dr_rule_corruption(&c);
    dr_rule_hazards(&c);
    dr_verdicts(&c);
    dr_rule_stock_guess(&c);
    dr_rule_cut(&c);
    dr_rule_insufficient(&c);
    dr_works_now(&c);
    dr_finish(&c);
    free(c.ps);
    return 0;
}

void dr_diag_free(dr_diag *d)
{
    free(d->pairs);
    d->pairs = NULL;
}
