/* dr_links.c - p2p-doctor's rules about the links between GPUs: PCIe link
 * width and generation, the path between two GPUs (topo, NUMA), NVLink and
 * the options that force PCIe over it (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dparse.h"

/* ------------------------------------------------------------ PCIe: ACS, links, topology */

/* PCIe generation the GPU itself supports, by its name (0 unknown). */
static int native_gen(const char *name)
{
    char k[96];
    dp_model_key(name, k, sizeof k);
    const char *p = strstr(k, "rtx ");
    if (p) {
        int num = atoi(p + 4);
        if (num >= 5000 && num < 6000)
            return 5;
        if (num >= 3000 && num < 5000)
            return 4;
    }
    if (strstr(k, "a6000") || strstr(k, "a5000") || strstr(k, "a100") || strstr(k, "ada"))
        return 4;
    if (strstr(k, "h100") || strstr(k, "h200") || strstr(k, "blackwell") || strstr(k, "b200"))
        return 5;
    return 0;
}

void dr_rule_links(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    char lab[48];
    for (int g = 0; g < m->ngpus; g++) {
        dr_gpu *x = &m->gpus[g];
        dr_gpu_label(m, g, lab, sizeof lab);
        dr_finding *f = NULL;
        if ((x->width_cur.v > 0 && x->width_max.v > 0 && x->width_cur.v < x->width_max.v) ||
            x->width_downgraded.v == 1) {
            f = dr_finding_get(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "%s's PCIe link runs at x%lld of x%lld lanes: P2P bandwidth is cut in proportion", lab,
                        x->width_cur.v, x->width_max.v > 0 ? x->width_max.v : 16);
                dr_f_ev(f, &x->width_cur.ev);
                dr_f_ev(f, &x->width_downgraded.ev);
            }
        } else if (x->gen_host_max.v > 0 && x->gen_dev_max.v > 0 && x->gen_host_max.v < x->gen_dev_max.v) {
            f = dr_finding_get(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
            if (f) {
                SUMMARY(f, "%s's slot allows PCIe gen%lld, the GPU gen%lld: P2P bandwidth is limited by the slot", lab,
                        x->gen_host_max.v, x->gen_dev_max.v);
                dr_f_ev(f, &x->gen_host_max.ev);
            }
        } else {
            int ng = native_gen(x->name);
            long long mx = x->gen_max.v;
            if (ng > 0 && mx > 0 && mx < ng) {
                f = dr_finding_get(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
                if (f) {
                    SUMMARY(f, "%s's link can train to PCIe gen%lld at most; the GPU supports gen%d (slot, riser or "
                               "firmware setting)",
                            lab, mx, ng);
                    dr_f_ev(f, &x->gen_max.ev);
                }
            }
        }
        if (f)
            FIX(f, "use a slot wired x16 at the GPU's generation (the board manual's lane map), without risers or "
                   "bifurcation; check the firmware's PCIe speed setting (not forced to a lower gen)");
    }
}

/* A measurement of the pair's P2P against the path through host memory:
 * a bandwidth test with and without P2P, or a two-GPU NCCL all-reduce with
 * and without. */
static int pair_measured(ctx *c, int a, int b)
{
    const pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    if ((s->bw_on > 0 && s->bw_off > 0) || (r->bw_on > 0 && r->bw_off > 0))
        return 1;
    const dr_busbw *on = &c->m->sys.nccl_bus[0], *off = &c->m->sys.nccl_bus[1];
    if (on->ngpus != 2 || off->ngpus != 2 || (on->avg <= 0 && on->peak <= 0) || (off->avg <= 0 && off->peak <= 0))
        return 0;
    int x = dr_map_index_at(c->m, DR_NS_CUDA, on->dev[0], &on->ev), y = dr_map_index_at(c->m, DR_NS_CUDA, on->dev[1], &on->ev);
    return (x == a && y == b) || (x == b && y == a);
}

/* A path between host bridges of one CPU (topo NODE), P2P possible on it,
 * and nothing measured: P2P there is slower than host memory on many CPUs
 * (NVIDIA/nccl#428: the NCCL maintainer's answer for a two-socket Intel box),
 * and fine on others, so the path alone is no finding; what would tell is
 * collected (dr_rule_insufficient), and where it was measured the symptoms
 * judge it. */
static void node_unmeasured(ctx *c, int a, int b)
{
    char la[48], lb[48], pair[48];
    dr_gpu_label(c->m, a, la, sizeof la);
    dr_gpu_label(c->m, b, lb, sizeof lb);
    snprintf(pair, sizeof pair, "%.20s-%.20s", la, lb);
    dr_add_label(c->node_unmeasured, sizeof c->node_unmeasured, pair);
}

void dr_rule_topology(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
            const char *topo = s->topo[0] ? s->topo : r->topo;
            const dr_ev *te = s->topo[0] ? &s->topo_ev : &r->topo_ev;
            /* chipset: CNS in topo -p2p */
            for (int k = 0; k < 2; k++) {
                pobs_sum *q = k ? r : s;
                if (!strcmp(q->p2pcap, "CNS")) {
                    dr_finding *f = dr_finding_get(d, "chipset-not-supported", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                                   DR_CERT_CERTAIN);
                    if (f) {
                        SUMMARY(f, "nvidia-smi topo -p2p reports CNS (chipset not supported): the driver's chipset "
                                   "allow-list refuses P2P here");
                        FIX(f, "ForceP2P=0x11 in NVreg_RegistryDwords overrides the chipset check (build.sh install "
                               "writes it); if it is in effect and CNS stays, the loaded module is not the patched one");
                        dr_f_ev(f, &q->p2pcap_ev);
                    }
                }
            }
            if (!strcmp(topo, "NODE") && s->access != 0 && r->access != 0 && !pair_measured(c, a, b))
                node_unmeasured(c, a, b);
            if (dr_pair_observed_ok(c, a, b))
                continue;
            int sys = !strcmp(topo, "SYS") || !strcmp(topo, "QPI");
            int tns = !strcmp(s->p2pcap, "TNS") || !strcmp(r->p2pcap, "TNS");
            int numa = m->gpus[a].numa.v >= 0 && m->gpus[b].numa.v >= 0 && m->gpus[a].numa.v != m->gpus[b].numa.v;
            if (sys || tns || (numa && !topo[0])) {
                dr_finding *f = dr_finding_get(d, "cross-root-complex", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                               sys && s->access == 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
                if (!f)
                    continue;
                SUMMARY(f, "the path between the two GPUs crosses the CPU interconnect (%s): PCIe P2P is not "
                           "supported across CPU sockets / root complexes on most platforms",
                        sys ? "topo SYS" : (tns ? "topo -p2p TNS" : "different NUMA nodes"));
                FIX(f, "put the GPUs that exchange data under the same CPU socket (or the same PCIe switch); use P2P "
                       "within each group");
                if (sys)
                    dr_f_ev(f, te);
                if (tns)
                    dr_f_ev(f, !strcmp(s->p2pcap, "TNS") ? &s->p2pcap_ev : &r->p2pcap_ev);
                if (numa) {
                    dr_f_ev(f, &m->gpus[a].numa.ev);
                    dr_f_ev(f, &m->gpus[b].numa.ev);
                }
            }
        }
}

int dr_pair_nvlink(ctx *c, int a, int b)
{
    pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    const char *t = s->topo[0] ? s->topo : r->topo;
    if (t[0])
        return t[0] == 'N' && t[1] == 'V';
    /* no topo: nvlink -s on a two-GPU machine */
    if (c->m->ngpus == 2 && c->m->gpus[a].nvlinks.v > 0 && c->m->gpus[b].nvlinks.v > 0)
        return 1;
    return 0;
}

/* Options that force PCIe (BAR1) P2P for every pair: 1, none: 0, unknown -1. */
int dr_forced_pcie(ctx *c)
{
    dr_sys *s = &c->m->sys;
    const dr_regkeys *k = s->applied.present ? &s->applied : (s->configured.present ? &s->configured : NULL);
    if (!k)
        return -1;
    long long t = dr_key_val(k, "RMForceP2PType");
    if (t < 0)
        return 0;
    if (c->new_keys == 1)
        return t == 1;
    /* before 575: 2 forces PCIe unless this series' p2p-0006 key keeps NVLink */
    if (c->new_keys == 0)
        return t == 2 && dr_key_val(k, "RMBar1P2PKeepNvlink") != 1;
    return -1;
}

void dr_rule_nvlink(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int forced = dr_forced_pcie(c);
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            if (!dr_pair_nvlink(c, a, b))
                continue;
            pobs_sum *s = PS(c, a, b);
            double on = s->bw_on;
            int slow = on > 0 && ((s->bw_kind == DR_BW_UNI && on < 35) || (s->bw_kind == DR_BW_BI && on < 70));
            int fast = on > 0 && !slow;
            if (fast && forced != 1)
                continue;
            /* options known not to force PCIe (575+: RMForceP2PType=0; before 575:
               RMBar1P2PKeepNvlink=1): nothing to say unless slow */
            if (!slow && forced == 0)
                continue;
            int cert = forced == 1 || slow ? (forced == 1 ? DR_CERT_CERTAIN : DR_CERT_LIKELY) : DR_CERT_POSSIBLE;
            dr_finding *f = dr_finding_get(d, "nvlink-bridged", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES, cert);
            if (!f)
                continue;
            if (forced == 1)
                SUMMARY(f, "this pair has an NVLink bridge, but RMForceP2PType forces PCIe (BAR1) P2P for every "
                           "pair: NVLink (about 56 GB/s per direction on RTX 3090) goes unused");
            else if (slow)
                SUMMARY(f, "this pair has an NVLink bridge, but its P2P bandwidth (%.1f GB/s) is PCIe's: the driver "
                           "does not use NVLink for it",
                        on);
            else
                SUMMARY(f, "this pair has an NVLink bridge; BAR1 P2P options (and the P2P forks) force PCIe for every "
                           "pair, which leaves NVLink unused");
            if (c->new_keys == 1)
                FIX(f, "575 and later: RMForceP2PType=0 in NVreg_RegistryDwords (build.sh install --nvlink keep, the "
                       "default there) gives this pair NVLink and every pair without a bridge BAR1 P2P; then "
                       "update-initramfs -u and reboot");
            else
                FIX(f, "before 575 BAR1 P2P (RMForceP2PType=2) turns NVLink off for every pair; the modules of "
                       "build.sh (patch p2p-0006) add RMBar1P2PKeepNvlink=1 to NVreg_RegistryDwords (build.sh install "
                       "--nvlink keep, the default), which gives this pair NVLink and every pair without a bridge "
                       "BAR1 P2P; then update-initramfs -u and reboot. Stock or fork modules have no such key: "
                       "without RMForceP2PType they pick NVLink where a bridge exists but pairs without one lose "
                       "BAR1 P2P");
            dr_f_ev(f, s->topo[0] ? &s->topo_ev : &PS(c, b, a)->topo_ev);
            dr_f_ev(f, &m->gpus[a].nvlinks.ev);
            if (slow)
                dr_f_ev(f, &s->bw_ev);
            if (forced == 1)
                dr_f_ev(f, m->sys.applied.present ? &m->sys.applied.ev : &m->sys.configured.ev);
        }
}

/* ------------------------------------------------------------ symptoms */

/* The pair's peer access fails in use: CUDA says no, or a P2P test hit a
 * CUDA error (one that names no pair counts for the only pair). */
static int pair_fails(ctx *c, int a, int b)
{
    dr_sys *s = &c->m->sys;
    pobs_sum *x = PS(c, a, b), *y = PS(c, b, a);
    int err = dr_pair_error(c, a, b);
    if ((x->access == 0 && x->access_src == 4) || (y->access == 0 && y->access_src == 4) || err == 1)
        return 1;
    return c->m->ngpus == 2 && (err == -1 || s->p2p_unavailable.v == 1 || s->simplep2p_failed.v == 1);
}

/* The one open risk of --nvlink keep in 535-570 (patch p2p-0006): GSP
 * firmware gets RMForceP2PType=2 too, and whether it still sets up NVLink
 * peers under that value cannot be read from the source.  If it does not, a
 * bridged pair is reported as NVLink, creating its P2P object fails, and the
 * pair gets no BAR1 fallback. */
void dr_rule_nvlink_keep(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    const dr_regkeys *k = s->applied.present ? &s->applied : (s->configured.present ? &s->configured : NULL);
    const char *v = dr_driver_version(c);
    if (c->o->preinstall || !k || dr_key_val(k, "RMBar1P2PKeepNvlink") != 1 || dr_key_val(k, "RMForceP2PType") != 2 ||
        c->d->ours == 0 || (v && (dp_vercmp(v, "535") < 0 || dp_vercmp(v, "575") >= 0)))
        return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            if (!dr_pair_nvlink(c, a, b) || !pair_fails(c, a, b))
                continue;
            int other = 0;
            for (int i = 0; i < c->d->nf; i++)
                other |= dr_finding_applies(&c->d->f[i], a, b) && dr_is_cause(&c->d->f[i]);
            dr_finding *f = dr_finding_get(c->d, "nvlink-keep-failed", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                           other ? DR_CERT_POSSIBLE : DR_CERT_LIKELY);
            if (!f)
                continue;
            SUMMARY(f, "this NVLink-bridged pair fails peer access with --nvlink keep in effect on driver %s "
                       "(RMBar1P2PKeepNvlink=1 beside RMForceP2PType=2, patch p2p-0006): GSP firmware gets "
                       "RMForceP2PType=2 too, and whether it still sets up NVLink peers then cannot be read from the "
                       "source; if not, the pair is reported as NVLink, creating its P2P object fails, and it gets no "
                       "BAR1 fallback",
                    v ? v : "535-570");
            FIX(f, "BAR1 P2P for every pair: sudo build.sh install <tag> --nvlink off (RMBar1P2PKeepNvlink=0), sudo "
                   "update-initramfs -u, reboot, then build.sh verify; please report the outcome with the bundle of "
                   "build.sh doctor --collect, so that this risk can be closed");
            dr_f_ev(f, &k->ev);
            dr_f_ev(f, PS(c, a, b)->topo[0] ? &PS(c, a, b)->topo_ev : &PS(c, b, a)->topo_ev);
            dr_f_ev(f, PS(c, a, b)->access == 0 ? &PS(c, a, b)->access_ev : &s->p2p_error.ev);
        }
}
