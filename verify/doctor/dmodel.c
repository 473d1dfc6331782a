/* dmodel.c - p2p-doctor's fact model: allocation and setters (pure C). */
#include "dmodel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void num_unknown(dr_num *n)
{
    memset(n, 0, sizeof(*n));
    n->v = -1;
}

static void grec_init(dr_grec *r)
{
    memset(r, 0, sizeof(*r));
    r->index = -1;
    r->cuda_abs = -1;
    dr_num *nums[] = {&r->vram_mib, &r->bar1_mib, &r->bar1_used_mib, &r->rebar_cur_mib, &r->rebar_max_mib,
                      &r->bar1_unassigned, &r->gen_cur, &r->gen_max, &r->gen_host_max, &r->gen_dev_max,
                      &r->width_cur, &r->width_max, &r->width_downgraded, &r->speed_downgraded, &r->display,
                      &r->boot_vga, &r->nvlinks, &r->numa, &r->virt_passthrough};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        num_unknown(nums[i]);
}

dr_model *dr_model_new(void)
{
    dr_model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    for (int i = 0; i < DR_MAX_RECS; i++) {
        grec_init(&m->recs[i]);
        m->rec_gpu[i] = -1;
    }
    /* every dr_num of dr_sys unknown: they are laid out among other
     * members, so each is named */
    dr_sys *s = &m->sys;
    dr_num *nums[] = {&s->iommu_fault, &s->iommu_fault_gpu, &s->iommu_translated, &s->iommu_present,
                      &s->iommu_off, &s->cmd_iommu_pt, &s->cmd_iommu_on, &s->acs_override, &s->module_open,
                      &s->api_mismatch, &s->nvml_mismatch, &s->cuda_driver_mismatch, &s->driver_not_loaded,
                      &s->init_failed, &s->fell_off_bus, &s->no_gpu_found, &s->static_bar1_error,
                      &s->peer_map_unaligned, &s->peer_map_failed,
                      &s->rebar_failed, &s->bar_no_space, &s->rebar_option_configured,
                      &s->rebar_option_applied, &s->modinfo_signed, &s->modinfo_proprietary, &s->secure_boot,
                      &s->module_rejected, &s->unsigned_loaded, &s->insert_eperm, &s->p2p_state_seen, &s->p2p_deb, &s->other_kmod_packages, &s->selftest, &s->verify_status,
                      &s->nccl_wrong, &s->nccl_ok, &s->illegal_access, &s->p2p_error, &s->simplep2p_failed,
                      &s->simplep2p_passed, &s->p2p_unavailable, &s->vm_guest, &s->nouveau, &s->lspci_denied,
                      &s->acs_unknown_ctx, &s->acs_redir_any, &s->p2p_cnsrow, &s->sysfs_gpus};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        num_unknown(nums[i]);
    s->peer_map_from = s->peer_map_to = -1;
    s->p2p_error_a = s->p2p_error_b = -1;
    for (int i = 0; i < 2; i++) {
        s->nccl_bus[i].avg = s->nccl_bus[i].peak = -1;
        s->nccl_bus[i].dev[0] = s->nccl_bus[i].dev[1] = -1;
    }
    return m;
}

void dr_model_free(dr_model *m)
{
    free(m);
}

void dr_grec_reset(dr_grec *r)
{
    grec_init(r);
}

void dr_set(dr_num *n, long long v, const dr_ev *ev)
{
    if (n->v >= 0)
        return;
    n->v = v;
    if (ev)
        n->ev = *ev;
}

int dr_bridge_get(dr_model *m, const char *busid)
{
    for (int i = 0; i < m->nbridges; i++)
        if (!strcmp(m->bridges[i].busid, busid))
            return i;
    if (m->nbridges >= DR_MAX_BRIDGES) {
        m->truncated_recs++;
        return -1;
    }
    dr_bridge *br = &m->bridges[m->nbridges];
    memset(br, 0, sizeof(*br));
    snprintf(br->busid, sizeof br->busid, "%s", busid);
    br->sec = br->sub = br->acs_cap = -1;
    return m->nbridges++;
}

void dr_ev_make(dr_ev *ev, const char *file, long line, const char *text)
{
    memset(ev, 0, sizeof(*ev));
    snprintf(ev->file, sizeof ev->file, "%s", file ? file : "");
    ev->line = line;
    if (!text)
        return;
    while (*text == ' ' || *text == '\t')
        text++;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && o + 1 < sizeof ev->text; p++) {
        unsigned char c = *p;
        if (c == '\t')
            c = ' ';
        if (c < 0x20 || c >= 0x7f)
            c = '?';
        if (c == ' ' && o > 0 && ev->text[o - 1] == ' ')
            continue; /* runs of blanks: one */
        ev->text[o++] = (char)c;
    }
    while (o > 0 && ev->text[o - 1] == ' ')
        o--;
    ev->text[o] = '\0';
}

void dr_note(dr_model *m, const char *fmt, ...)
{
    if (m->nnotes >= (int)(sizeof m->notes / sizeof m->notes[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->notes[m->nnotes], sizeof m->notes[0], fmt, ap);
    va_end(ap);
    for (int i = 0; i < m->nnotes; i++)
        if (strcmp(m->notes[i], m->notes[m->nnotes]) == 0)
            return; /* said already */
    m->nnotes++;
}
