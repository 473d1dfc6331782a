/* dr_pairs.c - p2p-doctor's rules: the observations of each ordered GPU pair
 * summed up (peer access, data, bandwidth, latency, topology), and what they
 * show: a pair working, failing, slower than host staging (pure C).  See
 * drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ pair observations */

static void set_access(pobs_sum *s, int v, int src, const dr_ev *e)
{
    if (src < s->access_src)
        return;
    if (src == s->access_src && s->access == 0 && v == 1)
        return; /* a "no" of the same kind of output stays */
    s->access = v;
    s->access_src = src;
    s->access_ev = *e;
}

/* A bandwidth or latency observation of a pair.  P2P clearly slower than
 * host staging (below 0.8 of it, the symptom's bound) means peer copies do
 * happen: a pair without peer access falls back to the very staged copy that
 * P2P=Disabled measures, so it cannot be much slower than itself; about as
 * fast means none do, unless another output says there is peer access.
 * nvbandwidth measures a pair only after CUDA enabled peer access between
 * them (its host path is no staged copy). */
static void sum_bw(pobs_sum *s, const dr_pobs *o)
{
    int hostpath = !strcmp(o->text, "nvbw");
    if (o->val == DR_BW_LAT) {
        if (o->x > 0 && (s->lat_on < 0 || o->x < s->lat_on)) {
            s->lat_on = o->x;
            s->lat_off = o->y;
            s->lat_ev = o->ev;
        }
        if (o->x > 0 && o->y > 0 && s->access_src <= 1 && o->x < 0.6 * o->y)
            set_access(s, 1, 1, &o->ev);
        return;
    }
    /* unidirectional figures first (they are what people compare), the best of them */
    int uni = o->val == DR_BW_UNI, had_uni = s->bw_kind == DR_BW_UNI;
    if ((uni && (!had_uni || o->x > s->bw_on)) || (!uni && !had_uni && o->x > s->bw_on)) {
        s->bw_on = o->x;
        s->bw_off = o->y;
        s->bw_kind = o->val;
        s->bw_hostpath = hostpath;
        s->bw_ev = o->ev;
    }
    if (hostpath && o->x > 0)
        set_access(s, 1, 4, &o->ev);
    if (o->x <= 0 || o->y <= 0 || hostpath)
        return;
    if (o->x > 1.3 * o->y || o->x < 0.8 * o->y)
        set_access(s, 1, 1, &o->ev);
    else if (o->x < 1.1 * o->y && s->access_src < 1)
        set_access(s, 0, 1, &o->ev);
}

void dr_summarize_pobs(ctx *c)
{
    dr_model *m = c->m;
    for (int a = 0; a < DR_MAX_GPUS; a++)
        for (int b = 0; b < DR_MAX_GPUS; b++) {
            pobs_sum *s = PS(c, a, b);
            memset(s, 0, sizeof(*s));
            s->access = s->corrupt = -1;
            s->bw_on = s->bw_off = s->lat_on = s->lat_off = s->limit = -1;
        }
    for (int i = 0; i < m->npobs; i++) {
        dr_pobs *o = &m->pobs[i];
        if (o->ns == DR_NS_NONE) {
            if (o->kind == DR_OBS_CORRUPT && o->val == 1 && m->sys.selftest.v != 1) {
                c->corrupt_unpaired = 1;
                c->corrupt_unpaired_ev = o->ev;
            }
            continue;
        }
        int a = dr_map_index_at(m, o->ns, o->a, &o->ev), b = dr_map_index_at(m, o->ns, o->b, &o->ev);
        if (a < 0 || b < 0 || a == b)
            continue;
        pobs_sum *s = PS(c, a, b);
        switch (o->kind) {
        case DR_OBS_ACCESS:
            set_access(s, o->val, 4, &o->ev);
            break;
        case DR_OBS_P2PCAP:
            if (!s->p2pcap[0] || strcmp(o->text, "OK") != 0) {
                snprintf(s->p2pcap, sizeof s->p2pcap, "%s", o->text);
                s->p2pcap_ev = o->ev;
            }
            if (!strcmp(o->text, "OK")) {
                set_access(s, 1, 3, &o->ev);
                s->cap_ok |= (o->val == 'r' || o->val == 'x' ? 1u : 0u) | (o->val == 'w' || o->val == 'x' ? 2u : 0u);
            } else {
                s->cap_bad = 1;
                if (strcmp(o->text, "U") != 0)
                    set_access(s, 0, 3, &o->ev);
            }
            break;
        case DR_OBS_TOPO:
            snprintf(s->topo, sizeof s->topo, "%s", o->text);
            s->topo_ev = o->ev;
            break;
        case DR_OBS_NCCL:
            if (!strcmp(o->text, "P2P") && !o->val)
                set_access(s, 1, 2, &o->ev);
            else if (!strcmp(o->text, "SHM") && !o->val)
                s->nccl_shm = 1;
            break;
        case DR_OBS_BW:
            sum_bw(s, o);
            break;
        case DR_OBS_LIMIT:
            s->limit = o->x;
            snprintf(s->limit_type, sizeof s->limit_type, "%s", o->text);
            break;
        case DR_OBS_HAZARD: {
            int k = dr_hazard_index(o->text);
            if (m->sys.selftest.v == 1 || k < 0 || (s->hazard & (1u << k)))
                break;
            s->hazard |= 1u << k;
            s->hazard_ev[k] = o->ev;
            c->hazard_any = 1;
            break;
        }
        case DR_OBS_CORRUPT:
            if (m->sys.selftest.v == 1)
                break; /* p2p-verify --self-test: corruption was injected */
            if (o->val == 1 || s->corrupt < 0) {
                if (s->corrupt != 1) {
                    s->corrupt = o->val;
                    s->corrupt_ev = o->ev;
                }
            }
            break;
        }
    }
}

/* Every pair of GPU g observed with P2P and intact data (and at least one). */
int dr_gpu_observed_ok(ctx *c, int g)
{
    int n = 0;
    for (int h = 0; h < c->m->ngpus; h++) {
        if (h == g)
            continue;
        pobs_sum *s1 = PS(c, g, h), *s2 = PS(c, h, g);
        if (s1->access == 0 || s2->access == 0 || s1->corrupt == 1 || s2->corrupt == 1)
            return 0;
        if (dr_pair_observed_ok(c, g, h))
            n++;
    }
    return n > 0;
}

/* A failure in use (CUDA error in a P2P test) of this pair: 1, or -1 when
 * the failing pair is not named. */
int dr_pair_error(ctx *c, int a, int b)
{
    dr_sys *s = &c->m->sys;
    if (s->p2p_error.v != 1)
        return 0;
    if (s->p2p_error_a < 0)
        return -1;
    int x = dr_map_index_at(c->m, DR_NS_CUDA, s->p2p_error_a, &s->p2p_error.ev),
        y = dr_map_index_at(c->m, DR_NS_CUDA, s->p2p_error_b, &s->p2p_error.ev);
    return (x == a && y == b) || (x == b && y == a);
}

/* P2P slower than copies staged through host memory in this direction, with
 * peer copies known to happen: a symptom.  nvbandwidth's host path bounds
 * what staging could reach, so there P2P must be below half of it. */
int dr_dir_slow(const pobs_sum *s)
{
    double f = s->bw_hostpath ? 0.5 : 0.8;
    return s->access != 0 && s->bw_on > 0 && s->bw_off > 0 && s->bw_on < f * s->bw_off;
}

int dr_pair_slow(ctx *c, int a, int b)
{
    return dr_dir_slow(PS(c, a, b)) || dr_dir_slow(PS(c, b, a));
}

/* Peer access reported (not only inferred from timings), yet P2P's latency is
 * that of a round trip through host memory (0.6 of it or more), or above
 * 10 us: no direct path (direct PCIe or NVLink writes take a few us). */
int dr_dir_lat_high(const pobs_sum *s)
{
    return s->access == 1 && s->access_src >= 2 && s->lat_on > 0 &&
           ((s->lat_off > 0 && s->lat_on >= 0.6 * s->lat_off) || s->lat_on > 10);
}

int dr_pair_lat_high(ctx *c, int a, int b)
{
    return dr_dir_lat_high(PS(c, a, b)) || dr_dir_lat_high(PS(c, b, a));
}

int dr_pair_symptom(ctx *c, int a, int b)
{
    return dr_pair_slow(c, a, b) || dr_pair_lat_high(c, a, b);
}

/* Seen working: CUDA, NCCL or a bandwidth test moved data peer to peer (the
 * driver's own claim, topo -p2p OK, is not enough), nothing failed, and it
 * was not much slower than host staging. */
int dr_pair_observed_ok(ctx *c, int a, int b)
{
    pobs_sum *s1 = PS(c, a, b), *s2 = PS(c, b, a);
    int seen = (s1->access == 1 && s1->access_src != 3) || (s2->access == 1 && s2->access_src != 3);
    return seen && s1->access != 0 && s2->access != 0 && s1->corrupt != 1 && s2->corrupt != 1 &&
           dr_pair_error(c, a, b) == 0 && !dr_pair_symptom(c, a, b);
}

/* Every observed pair works and none fails (and some pair was observed). */
int dr_all_observed_ok(ctx *c)
{
    int n = 0;
    if (c->corrupt_unpaired || c->m->sys.nccl_wrong.v == 1 || c->m->sys.p2p_error.v == 1)
        return 0;
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = 0; b < c->m->ngpus; b++) {
            if (a == b)
                continue;
            pobs_sum *s = PS(c, a, b);
            if (s->access == 0 || s->corrupt == 1)
                return 0;
            if (dr_pair_observed_ok(c, a, b))
                n++;
        }
    return n > 0;
}

/* A failure seen in use: no peer access, wrong data, CUDA errors, or P2P
 * slower than host staging (or without a direct path's latency). */
int dr_any_observed_fail(ctx *c)
{
    if (c->corrupt_unpaired || c->m->sys.nccl_wrong.v == 1 || c->m->sys.p2p_unavailable.v == 1 ||
        c->m->sys.simplep2p_failed.v == 1 || c->m->sys.p2p_error.v == 1)
        return 1;
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = 0; b < c->m->ngpus; b++)
            if (a != b && (PS(c, a, b)->access == 0 || PS(c, a, b)->corrupt == 1 || dr_pair_symptom(c, a, b)))
                return 1;
    return 0;
}
