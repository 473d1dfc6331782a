/* dr_iommu_acs.c - p2p-doctor's rules about the IOMMU and ACS: whether the
 * IOMMU translates the GPUs' DMA, which bridges lie between two GPUs and
 * redirect their peer traffic (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ IOMMU */

int dr_busid_is_gpu(dr_model *m, const char *b, int *g)
{
    for (int i = 0; i < m->ngpus; i++)
        if (m->gpus[i].busid[0] && !strcmp(m->gpus[i].busid, b)) {
            if (g)
                *g = i;
            return 1;
        }
    /* same bus and device, another function (the GPU's audio): not the GPU */
    return 0;
}

int dr_gpu_addresses_known(dr_model *m)
{
    if (m->ngpus == 0)
        return 0;
    for (int g = 0; g < m->ngpus; g++)
        if (!m->gpus[g].busid[0])
            return 0;
    return 1;
}

/* Whether the IOMMU translates the GPUs' DMA: 1 (and what shows it), 0
 * (passthrough or off), -1 unknown. */
int dr_iommu_mode(ctx *c, dr_ev **me)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    int translated = -1;
    for (int i = 0; i < s->ngroup_type; i++)
        if (dr_busid_is_gpu(m, s->group_type[i].busid, NULL) || !dr_gpu_addresses_known(m)) {
            translated = (int)s->group_type[i].type;
            *me = &s->group_type[i].ev;
            if (translated)
                return 1;
        }
    if (translated >= 0)
        return translated;
    if (s->iommu_off.v == 1 || s->cmd_iommu_pt.v == 1 || s->iommu_translated.v == 0)
        return 0;
    if (s->iommu_translated.v == 1 && (s->iommu_present.v == 1 || s->cmd_iommu_on.v == 1)) {
        /* the default domain type is printed without IOMMU hardware too */
        *me = &s->iommu_translated.ev;
        return 1;
    }
    if (s->cmd_iommu_on.v == 1) {
        *me = &s->cmd_iommu_on.ev;
        return 1;
    }
    return -1;
}

void dr_rule_iommu(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    int gpu_fault = 0, other_fault = 0, unknown_fault = 0;
    dr_ev *fe = NULL;
    for (int i = 0; i < s->nfault_dev; i++) {
        if (dr_busid_is_gpu(m, s->fault_dev[i], NULL)) {
            gpu_fault = 1;
            fe = &s->fault_dev_ev[i];
        } else if (dr_gpu_addresses_known(m)) {
            other_fault = 1;
        } else {
            unknown_fault = 1;
            if (!fe)
                fe = &s->fault_dev_ev[i];
        }
    }
    if (s->iommu_fault.v > 0 && s->nfault_dev == 0) {
        unknown_fault = 1;
        fe = &s->iommu_fault.ev;
    }
    dr_ev *me = NULL;
    int translated = dr_iommu_mode(c, &me);
    int faults = gpu_fault || unknown_fault;
    if (!faults && translated != 1) {
        if (other_fault)
            dr_note(m, "IOMMU faults in the kernel log name other devices than the GPUs: not counted against P2P");
        return;
    }
    if (!faults && dr_all_observed_ok(c)) {
        dr_note(m, "the IOMMU translates DMA, and every observed GPU pair has working P2P anyway");
        return;
    }
    int cert = gpu_fault ? DR_CERT_CERTAIN
                         : ((unknown_fault || (translated == 1 && dr_any_observed_fail(c))) ? DR_CERT_LIKELY
                                                                                         : DR_CERT_POSSIBLE);
    if (translated == 1 && !faults && (me == &s->cmd_iommu_on.ev || me == &s->iommu_translated.ev) &&
        !dr_any_observed_fail(c))
        cert = DR_CERT_POSSIBLE;
    dr_finding *f = dr_finding_get(d, "iommu-translated", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, cert);
    if (!f)
        return;
    if (faults)
        SUMMARY(f, "the IOMMU translates DMA and faulted on %s: peer writes into a GPU's BAR1 are blocked or land "
                   "in the wrong place (zeroed or NaN data, hangs)",
                gpu_fault ? "a GPU's accesses" : "device accesses");
    else
        SUMMARY(f, "the IOMMU translates DMA (not passthrough): BAR1 peer traffic then goes through the IOMMU, "
                   "which the P2P forks do not support (this series uses the peer's DMA address, untested there)");
    FIX(f, "boot with iommu=pt (add it to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, sudo update-grub, "
           "reboot), or turn the IOMMU (VT-d / AMD-Vi) off in the firmware");
    dr_f_ev(f, fe);
    dr_f_ev(f, me);
    dr_f_ev(f, &s->iommu_fault.ev);
}

/* ------------------------------------------------------------ PCIe: ACS, links, topology */

int dr_bus_of(const char *busid, int *dom)
{
    unsigned d, b;
    if (sscanf(busid, "%x:%x", &d, &b) != 2)
        return -1;
    if (dom)
        *dom = (int)d;
    return (int)b;
}

int dr_bridge_above(const dr_bridge *br, const char *busid)
{
    int dg, db;
    int bus = dr_bus_of(busid, &dg);
    if (bus < 0 || br->sec < 0 || br->sub < 0 || dr_bus_of(br->busid, &db) < 0 || db != dg)
        return 0;
    return bus >= br->sec && bus <= br->sub;
}

/* The ACS control register's value in a setpci access of bridge br: -1 when
 * the device has no ACS capability, -2 when the access is not known to be
 * that register (a raw offset counts where lspci gave the capability's). */
static long acs_ctl(const dr_setpci *r, const dr_bridge *br)
{
    if (r->value < 0)
        return r->acs ? -1 : -2;
    int rel = r->acs ? r->reg : (br->acs_cap > 0 ? r->reg - br->acs_cap : -1);
    if (rel == 6 && r->width <= 2)
        return r->value;
    if (rel == 4 && r->width == 4)
        return r->value >> 16;
    return -2;
}

/* setpci's readings and writes of ACS control, onto the bridges, in the order
 * read: a write sets the state; a reading that disagrees with an earlier one
 * (lspci's ACSCtl, another paste) keeps the redirect and marks the conflict. */
void dr_apply_setpci(ctx *c)
{
    dr_model *m = c->m;
    for (int i = 0; i < m->nsetpci; i++) {
        dr_setpci *r = &m->setpci[i];
        int k = dr_busid_is_gpu(m, r->busid, NULL) ? -1 : dr_bridge_get(m, r->busid);
        if (k < 0)
            continue;
        dr_bridge *br = &m->bridges[k];
        if (r->cap_off > 0 && br->acs_cap < 0)
            br->acs_cap = r->cap_off; /* setpci -v printed where the capability is */
        long ctl = acs_ctl(r, br);
        if (ctl == -2) {
            dr_note(m, "%s:%ld: setpci register 0x%x of %s is not known to be ACS control (lspci -vvv of that bridge "
                       "gives its ACS offset): not read",
                    r->ev.file, r->ev.line, r->reg, r->busid);
            continue;
        }
        int rr = ctl > 0 && (ctl & 4), cr = ctl > 0 && (ctl & 8);
        if (br->acs_seen && !r->write && (rr != br->req_redir || cr != br->cmplt_redir)) {
            br->acs_conflict = 1;
            rr |= br->req_redir;
            cr |= br->cmplt_redir;
        } else if (r->write) {
            br->acs_conflict = 0;
        }
        br->acs_seen = 1;
        br->req_redir = rr;
        br->cmplt_redir = cr;
        br->acs_ev = r->ev;
    }
}

void dr_rule_acs(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int ranges = 0;
    for (int i = 0; i < m->nbridges; i++)
        if (m->bridges[i].sec >= 0)
            ranges++;
    int computable = ranges > 0 && dr_gpu_addresses_known(m);
    int found = 0;
    dr_ev *me = NULL;
    /* A root port's redirect sends peer requests into the root complex's
     * translation agent (the IOMMU) instead of across to the other root
     * port: harmless with the IOMMU off or in passthrough, a possible cause
     * where it translates or its mode is not known (field report 89). */
    int rp_counts = dr_iommu_mode(c, &me) != 0;
    if (computable) {
        for (int a = 0; a < m->ngpus; a++)
            for (int b = a + 1; b < m->ngpus; b++) {
                if (dr_pair_observed_ok(c, a, b))
                    continue;
                int sw = 0; /* a switch port's finding for the pair: its root ports are not named */
                for (int pass = 0; pass < 2; pass++)
                    for (int i = 0; i < m->nbridges; i++) {
                        dr_bridge *br = &m->bridges[i];
                        int ua = dr_bridge_above(br, m->gpus[a].busid), ub = dr_bridge_above(br, m->gpus[b].busid);
                        if (ua == ub || (br->type == 1) != pass || !(br->req_redir || br->cmplt_redir))
                            continue; /* not between them, not this pass's kind of port, or no redirect */
                        if (pass == 1 && (sw || !rp_counts))
                            continue; /* the pair's switch port is named; or the IOMMU off or in passthrough */
                        dr_finding *f = dr_finding_get(d, "acs-redirect", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                                       br->acs_conflict || pass == 1 ? DR_CERT_POSSIBLE : DR_CERT_LIKELY);
                        if (!f)
                            return;
                        const char *flags = br->req_redir && br->cmplt_redir ? "ReqRedir/CmpltRedir"
                                            : br->req_redir                  ? "ReqRedir"
                                                                             : "CmpltRedir";
                        const char *reread = br->acs_conflict ? " (lspci and setpci read its ACS control "
                                                                "differently: read it again)"
                                                              : "";
                        if (pass == 0) {
                            SUMMARY(f, "PCIe switch port %s between the two GPUs has ACS %s on: peer requests are "
                                       "sent up to the root complex instead of across the switch%s",
                                    br->busid, flags, reread);
                            FIX(f, "disable ACS on the switch ports (a firmware option on some boards; otherwise as "
                                   "root after each boot: setpci -s <port> ECAP_ACS+0x6.w=0000 for each port named "
                                   "here); with an IOMMU on, use iommu=pt");
                            sw = 1;
                        } else {
                            SUMMARY(f, "root port %s above GPU%d has ACS %s on: peer requests to the other "
                                       "GPU's root port are sent to the root complex's IOMMU, which blocks or "
                                       "misroutes them unless it is off or in passthrough%s",
                                    br->busid, ua ? a : b, flags, reread);
                            FIX(f, "boot with iommu=pt (or the IOMMU off); or disable ACS on the root ports above "
                                   "the GPUs (as root after each boot: setpci -s <port> ECAP_ACS+0x6.w=0000 for each "
                                   "port named here, or pci=noacs)");
                            dr_f_ev(f, me);
                        }
                        dr_f_ev(f, &br->acs_ev);
                        found = 1;
                    }
            }
    }
    if (found)
        return;
    int switch_redir = m->sys.acs_unknown_ctx.v == 1;
    for (int i = 0; i < m->nbridges; i++)
        if (m->bridges[i].type != 1 && (m->bridges[i].req_redir || m->bridges[i].cmplt_redir))
            switch_redir = 1;
    if (!computable && switch_redir && !dr_all_observed_ok(c)) {
        dr_finding *f = dr_finding_get(d, "acs-redirect", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        if (!f)
            return;
        SUMMARY(f, "a PCIe bridge has ACS redirection on; whether it lies between the GPUs cannot be told without "
                   "the bus ranges (the whole sudo lspci -vvv, or lspci -tv) and the GPUs' addresses");
        FIX(f, "collect sudo lspci -vvv (build.sh doctor --collect) to see which ports are between the GPUs; "
               "disable ACS on those");
        for (int i = 0; i < m->nbridges; i++)
            if (m->bridges[i].req_redir || m->bridges[i].cmplt_redir)
                dr_f_ev(f, &m->bridges[i].acs_ev);
        dr_f_ev(f, &m->sys.acs_unknown_ctx.ev);
    }
}
