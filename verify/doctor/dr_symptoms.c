/* dr_symptoms.c - p2p-doctor's rules about symptoms: P2P slower than host
 * staging, or without a direct path's latency, with their likely causes
 * ranked (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <string.h>

#include "dparse.h"
#include "linklimits.h"
#include "sysparse.h"

/* ------------------------------------------------------------ symptoms */

/* Compute capability by the GPU's name, for NVLink's per-link rate (the
 * figures of linklimits.c); 0 when the name does not tell. */
static int cc_of_name(const char *name, int *minor)
{
    static const struct {
        const char *key;
        int major, minor;
    } cc[] = {{"h100", 9, 0}, {"h200", 9, 0}, {"h800", 9, 0}, {"gh200", 9, 0}, {"a100", 8, 0}, {"a800", 8, 0},
              {"a30", 8, 0},  {"rtx 30", 8, 6}, {"a40", 8, 6},  {"a6000", 8, 6}, {"a5000", 8, 6}, {"a4000", 8, 6},
              {"v100", 7, 0}, {"b200", 10, 0}, {"b100", 10, 0}, {"gb200", 10, 0}};
    char k[96];
    dp_model_key(name, k, sizeof k);
    for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++)
        if (strstr(k, cc[i].key)) {
            *minor = cc[i].minor;
            return cc[i].major;
        }
    return 0;
}

static void gpu_as_pv(const dr_gpu *x, pv_gpu *g)
{
    memset(g, 0, sizeof(*g));
    g->gen_max = (int)(x->gen_max.v > 0 ? x->gen_max.v : (x->gen_dev_max.v > 0 ? x->gen_dev_max.v : 0));
    g->width_max = (int)(x->width_max.v > 0 ? x->width_max.v : 0);
    g->gen_cur = (int)(x->gen_cur.v > 0 ? x->gen_cur.v : 0);
    g->width_cur = (int)(x->width_cur.v > 0 ? x->width_cur.v : 0);
    g->cc_major = cc_of_name(x->name, &g->cc_minor);
}

/* The limit of the link P2P between a and b uses, as p2p-verify computes it
 * (linklimits.c; GB/s per direction): its own figure where its output was read,
 * else NVLink's links x the generation's per-link rate, else the slower of
 * the two PCIe links; -1 unknown.  desc names it. */
static double pair_limit(ctx *c, int a, int b, char *desc, size_t dlen)
{
    pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    pv_gpu ga, gb;
    pv_link l;
    if (s->limit > 0) {
        snprintf(desc, dlen, "p2p-verify's figure for its %s path", s->limit_type);
        return s->limit;
    }
    gpu_as_pv(&c->m->gpus[a], &ga);
    gpu_as_pv(&c->m->gpus[b], &gb);
    int nl = pv_smi_nvlinks(s->topo[0] ? s->topo : r->topo);
    if (nl > 0) {
        pv_link_nvlink(&l, &ga, &gb, nl, "topo -m");
        snprintf(desc, dlen, l.gbps > 0 ? "NVLink x%d, as p2p-verify computes it"
                                         : "NVLink x%d, whose per-link rate for these GPUs p2p-verify does not know",
                 nl);
        return l.gbps > 0 ? l.gbps : -1;
    }
    pv_link_pcie(&l, &ga, &gb);
    if (l.gbps <= 0) {
        snprintf(desc, dlen, "their PCIe generation and width are not shown: nvidia-smi -q");
        return -1;
    }
    snprintf(desc, dlen, "PCIe gen%d x%d, as p2p-verify computes it", l.gen, l.width);
    return l.gbps;
}

static int gpu_under_a_bridge(dr_model *m, int g)
{
    for (int i = 0; i < m->nbridges; i++)
        if (dr_bridge_above(&m->bridges[i], m->gpus[g].busid))
            return 1;
    return 0;
}

/* ACS on the switch ports between a and b: 0 none redirects (or no switch
 * port is between them), -1 not known (a port's ACS not read, or where the
 * GPUs sit not known). */
static int acs_between(ctx *c, int a, int b)
{
    dr_model *m = c->m;
    if (a < 0 || !m->gpus[a].busid[0] || !m->gpus[b].busid[0] || !gpu_under_a_bridge(m, a) ||
        !gpu_under_a_bridge(m, b))
        return -1;
    for (int i = 0; i < m->nbridges; i++) {
        dr_bridge *br = &m->bridges[i];
        if (br->type != 1 && dr_bridge_above(br, m->gpus[a].busid) != dr_bridge_above(br, m->gpus[b].busid) &&
            !br->acs_seen)
            return -1;
    }
    return 0;
}

/* The lowest bridge above both GPUs: a switch port (1), none but both under
 * root ports of one root bus (2), under different root buses (3); 0 unknown. */
static int pair_route(ctx *c, int a, int b)
{
    dr_model *m = c->m;
    int root_a = -1, root_b = -1;
    if (a < 0 || !m->gpus[a].busid[0] || !m->gpus[b].busid[0])
        return 0;
    for (int i = 0; i < m->nbridges; i++) {
        dr_bridge *br = &m->bridges[i];
        int ua = dr_bridge_above(br, m->gpus[a].busid), ub = dr_bridge_above(br, m->gpus[b].busid);
        if (ua && ub && br->type != 1)
            return 1;
        if (br->type == 1 && ua)
            root_a = dr_bus_of(br->busid, NULL);
        if (br->type == 1 && ub)
            root_b = dr_bus_of(br->busid, NULL);
    }
    if (root_a < 0 || root_b < 0)
        return 0;
    return root_a == root_b ? 2 : 3;
}

static void rank_path(ctx *c, dr_finding *f, int a, int b)
{
    const dr_finding *x = dr_finding_for(c->d, "cross-root-complex", a, b);
    if (x) {
        dr_cause_add(f, x->id, x->certainty, x->summary);
        return;
    }
    if ((x = dr_finding_for(c->d, "nvlink-bridged", a, b)))
        dr_cause_add(f, x->id, x->certainty, x->summary);
    const char *t = a < 0 ? "" : (PS(c, a, b)->topo[0] ? PS(c, a, b)->topo : PS(c, b, a)->topo);
    int route = pair_route(c, a, b);
    if (!strcmp(t, "NODE") || route == 3)
        dr_cause_add(f, "cross-root-complex", DR_CERT_POSSIBLE,
                     t[0] ? "the path crosses the interconnect between PCIe root complexes of the CPU (topo NODE)"
                          : "the GPUs sit under root ports of different root complexes (lspci)");
    else if (t[0] || route)
        dr_cat_text(f->ruled_out, sizeof f->ruled_out, "the CPU interconnect (%s%s)", t[0] ? "topo " : "",
                    t[0] ? t : (route == 1 ? "one PCIe switch, lspci" : "one root complex, lspci"));
    else
        dr_cat_text(f->not_shown, sizeof f->not_shown, "how they are connected (nvidia-smi topo -m, lspci -tv)");
}

static void rank_acs_iommu(ctx *c, dr_finding *f, int a, int b)
{
    const dr_finding *x = dr_finding_for(c->d, "acs-redirect", a, b);
    dr_ev *me = NULL;
    if (x)
        dr_cause_add(f, x->id, x->certainty, x->summary);
    else if (acs_between(c, a, b) == 0)
        dr_cat_text(f->ruled_out, sizeof f->ruled_out, "ACS redirect (none on the switch ports between them, lspci)");
    else
        dr_cat_text(f->not_shown, sizeof f->not_shown,
                    "ACS on the bridges between them (sudo lspci -vvv; or lspci -tv and sudo setpci -s <bridge> "
                    "ECAP_ACS+6.w)");
    int t = dr_iommu_mode(c, &me);
    if ((x = dr_finding_for(c->d, "iommu-translated", a, b)))
        dr_cause_add(f, x->id, x->certainty, x->summary);
    else if (t == 1)
        dr_cause_add(f, "iommu-translated", DR_CERT_POSSIBLE, "the IOMMU translates DMA (not passthrough)");
    else if (t == 0)
        dr_cat_text(f->ruled_out, sizeof f->ruled_out, "IOMMU translation (passthrough or off)");
    else
        dr_cat_text(f->not_shown, sizeof f->not_shown, "the IOMMU mode (cat /proc/cmdline; sudo dmesg)");
}

static void rank_vm_link(ctx *c, dr_finding *f, int a, int b)
{
    dr_model *m = c->m;
    const dr_finding *x;
    int vm = m->sys.vm_guest.v == 1;
    for (int g = 0; g < m->ngpus; g++)
        vm |= m->gpus[g].virt_passthrough.v == 1;
    if (vm)
        dr_cause_add(f, "virtual-machine", DR_CERT_POSSIBLE,
                     "a virtual machine: peer traffic also crosses the host's IOMMU and ACS, which the guest's outputs "
                     "do not show");
    else if (dr_kinds_read(m) & DR_K_DMESG)
        dr_cat_text(f->ruled_out, sizeof f->ruled_out, "a virtual machine (no hypervisor in the kernel log)");
    else
        dr_cat_text(f->not_shown, sizeof f->not_shown, "whether this is a virtual machine (sudo dmesg)");
    if ((x = dr_finding_for(c->d, "link-degraded", a, b)))
        dr_cause_add(f, x->id, DR_CERT_POSSIBLE, x->summary);
    else if (a >= 0 && m->gpus[a].width_cur.v > 0 && m->gpus[b].width_cur.v > 0)
        dr_cat_text(f->ruled_out, sizeof f->ruled_out, "a degraded link (both at their full width)");
}

/* A symptom's likely causes from the rest of the evidence, most likely
 * first, with what rules the others out and what would tell. */
static void rank_causes(ctx *c, dr_finding *f, int a, int b)
{
    rank_acs_iommu(c, f, a, b);
    rank_path(c, f, a, b);
    rank_vm_link(c, f, a, b);
    FIX(f, "%s", f->ncause ? "check the causes listed, most likely first (each has its finding and fix); build.sh "
                             "verify measures P2P against host staging and the link's limit again"
                           : "collect what is listed as not shown (build.sh doctor --collect DIR has all of it) and "
                             "diagnose again; build.sh verify measures P2P against host staging and the link's limit");
}

static const char *bw_tool(const dr_ev *e)
{
    if (!strncmp(e->text, "nvbandwidth", 11))
        return "nvbandwidth";
    if (!strncmp(e->text, "performance.", 12) || strstr(e->file, ".json"))
        return "p2p-verify";
    return "p2pBandwidthLatencyTest";
}

/* "GPU0->GPU1 3.1 GB/s with P2P vs 11.9 host-staged; GPU1->GPU0 3.2 vs 12.0
 * (p2pBandwidthLatencyTest, unidirectional)": the slow directions. */
static void slow_numbers(ctx *c, int a, int b, char *out, size_t cap, dr_finding *f)
{
    int dirs[2][2] = {{a, b}, {b, a}};
    const pobs_sum *first = NULL;
    char la[48], lb[48];
    for (int k = 0; k < 2; k++) {
        const pobs_sum *s = PS(c, dirs[k][0], dirs[k][1]);
        if (!dr_dir_slow(s))
            continue;
        dr_gpu_label(c->m, dirs[k][0], la, sizeof la);
        dr_gpu_label(c->m, dirs[k][1], lb, sizeof lb);
        if (first)
            dr_cat_text(out, cap, "%s->%s %.1f vs %.1f", la, lb, s->bw_on, s->bw_off);
        else
            dr_cat_text(out, cap, "%s->%s %.1f GB/s with P2P vs %.1f %s", la, lb, s->bw_on, s->bw_off,
                        s->bw_hostpath ? "on its host path" : "host-staged");
        first = first ? first : s;
        dr_f_ev(f, &s->bw_ev);
    }
    size_t l = strlen(out);
    snprintf(out + l, cap - l, " (%s, %s)", bw_tool(&first->bw_ev),
             first->bw_kind == DR_BW_BI ? "bidirectional" : "unidirectional");
}

static void symptom_slow(ctx *c, int a, int b)
{
    char nums[300] = "", desc[96];
    dr_finding *f = dr_finding_get(c->d, "p2p-slower-than-host", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES,
                                   c->m->gpus[a].assumed_index || c->m->gpus[b].assumed_index ? DR_CERT_LIKELY
                                                                                              : DR_CERT_CERTAIN);
    if (!f)
        return;
    slow_numbers(c, a, b, nums, sizeof nums, f);
    double lim = pair_limit(c, a, b, desc, sizeof desc), on = PS(c, a, b)->bw_on;
    if (lim > 0 && on > 0)
        SUMMARY(f, "P2P is slower than copies through host memory: %s; the link's limit is %.1f GB/s per direction "
                   "(%s), P2P reaches %.0f%% of it",
                nums, PS(c, a, b)->bw_kind == DR_BW_BI ? 2 * lim : lim, desc,
                100.0 * on / (PS(c, a, b)->bw_kind == DR_BW_BI ? 2 * lim : lim));
    else
        SUMMARY(f, "P2P is slower than copies through host memory: %s; the link's limit is not known (%s)", nums, desc);
    rank_causes(c, f, a, b);
}

static void symptom_latency(ctx *c, int a, int b)
{
    pobs_sum *s = dr_dir_lat_high(PS(c, a, b)) ? PS(c, a, b) : PS(c, b, a);
    char la[48], lb[48];
    dr_gpu_label(c->m, s == PS(c, a, b) ? a : b, la, sizeof la);
    dr_gpu_label(c->m, s == PS(c, a, b) ? b : a, lb, sizeof lb);
    dr_finding *f = dr_finding_get(c->d, "p2p-latency-high", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
    if (!f)
        return;
    if (s->lat_off > 0)
        SUMMARY(f, "peer access is reported, but P2P's latency is that of a path through host memory, not a direct "
                   "one: %s->%s %.2f us with P2P, %.2f us without (%s); direct PCIe or NVLink writes take a few us",
                la, lb, s->lat_on, s->lat_off, bw_tool(&s->lat_ev));
    else
        SUMMARY(f, "peer access is reported, but P2P's latency (%s->%s %.2f us, %s) is far above a direct path's "
                   "(a few us)", la, lb, s->lat_on, bw_tool(&s->lat_ev));
    dr_f_ev(f, &s->lat_ev);
    dr_f_ev(f, &s->access_ev);
    rank_causes(c, f, a, b);
}

/* NCCL's all-reduce with P2P slower than with NCCL_P2P_DISABLE=1. */
static void symptom_nccl(ctx *c)
{
    dr_model *m = c->m;
    const dr_busbw *on = &m->sys.nccl_bus[0], *off = &m->sys.nccl_bus[1];
    int avg = on->avg > 0 && off->avg > 0;
    double x = avg ? on->avg : on->peak, y = avg ? off->avg : off->peak;
    if (x <= 0 || y <= 0 || x >= 0.8 * y || (on->ngpus && off->ngpus && on->ngpus != off->ngpus))
        return;
    int a = on->ngpus == 2 ? dr_map_index_at(m, DR_NS_CUDA, on->dev[0], &on->ev) : -1;
    int b = on->ngpus == 2 ? dr_map_index_at(m, DR_NS_CUDA, on->dev[1], &on->ev) : -1;
    if (a < 0 || b < 0 || a == b)
        a = b = -1;
    dr_finding *f = dr_finding_get(c->d, "p2p-slower-than-host", a < 0 ? DR_SCOPE_MACHINE : DR_SCOPE_PAIR, a < b ? a : b,
                                   a < b ? b : a, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
    if (!f)
        return;
    char nums[200];
    snprintf(nums, sizeof nums, "NCCL's all-reduce reaches a bus bandwidth of %.1f GB/s with P2P allowed, %.1f with "
                                "NCCL_P2P_DISABLE=1 (%s, %d GPUs)",
             x, y, avg ? "nccl-tests' average" : "its largest size", on->ngpus);
    dr_f_ev(f, &on->ev);
    dr_f_ev(f, &off->ev);
    if (f->summary[0]) { /* the pair's matrices said it first: the causes are ranked */
        dr_cat_text(f->summary, sizeof f->summary, "%s", nums);
        return;
    }
    SUMMARY(f, "P2P is slower than the path through host memory: %s", nums);
    rank_causes(c, f, a, b);
}

void dr_rule_symptoms(ctx *c)
{
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = a + 1; b < c->m->ngpus; b++) {
            if (dr_pair_slow(c, a, b))
                symptom_slow(c, a, b);
            if (dr_pair_lat_high(c, a, b))
                symptom_latency(c, a, b);
        }
    symptom_nccl(c);
}
