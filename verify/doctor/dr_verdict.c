/* dr_verdict.c - p2p-doctor's verdicts: each ordered GPU pair's, whether P2P
 * works with the loaded driver, and the exit code with its reasons (pure C).
 * See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ verdicts */

int dr_finding_applies(const dr_finding *f, int a, int b)
{
    if (f->severity != DR_SEV_BLOCKS || !strcmp(f->id, "insufficient-data") || f->certainty < DR_CERT_LIKELY)
        return 0;
    if (f->scope == DR_SCOPE_MACHINE)
        return 1;
    if (f->scope == DR_SCOPE_GPU)
        return f->a == a || f->a == b;
    return (f->a == a && f->b == b) || (f->a == b && f->b == a);
}

/* Findings that explain no P2P (corruption is a symptom, not a cause). */
int dr_is_cause(const dr_finding *f)
{
    return strcmp(f->id, "p2p-data-corruption") != 0 && strcmp(f->id, "insufficient-data") != 0 &&
           !dr_is_hazard_id(f->id);
}

static void pair_causes(ctx *c, dr_pairv *v)
{
    dr_diag *d = c->d;
    for (int i = 0; i < d->nf && v->ncauses < 8; i++) {
        if (!dr_finding_applies(&d->f[i], v->a, v->b) || !dr_is_cause(&d->f[i]))
            continue;
        int dup = 0;
        for (int k = 0; k < v->ncauses; k++)
            if (!strcmp(v->causes[k], d->f[i].id))
                dup = 1;
        if (!dup)
            v->causes[v->ncauses++] = d->f[i].id;
    }
}

/* What a pair with P2P shows of a symptom, after its why. */
static void why_symptom(dr_pairv *v, const pobs_sum *s, const pobs_sum *r)
{
    size_t l = strlen(v->why);
    if (dr_dir_slow(s)) {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P (%.1f GB/s) is slower than %s (%.1f)", s->bw_on,
                 s->bw_hostpath ? "the host path" : "host staging", s->bw_off);
        v->ev = s->bw_ev;
    } else if (dr_dir_lat_high(s)) {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P's latency (%.1f us) is not a direct path's", s->lat_on);
        v->ev = s->lat_ev;
    } else {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P the other way is %s", dr_dir_slow(r) ? "slower than host staging"
                                                                                   : "no direct path (latency)");
    }
}

void dr_verdicts(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int n = m->ngpus;
    d->npairs = 0;
    if (n < 2)
        return;
    d->pairs = calloc((size_t)n * (size_t)(n - 1), sizeof(dr_pairv));
    if (!d->pairs)
        return;
    int forced = dr_forced_pcie(c);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            dr_pairv *v = &d->pairs[d->npairs++];
            v->a = a;
            v->b = b;
            pobs_sum *s = PS(c, a, b);
            int nv = dr_pair_nvlink(c, a, b);
            int topo_known = s->topo[0] || PS(c, b, a)->topo[0];
            pair_causes(c, v);
            int err = dr_pair_error(c, a, b);
            if (s->corrupt == 1) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->corrupt_ev;
                snprintf(v->why, sizeof v->why, "peer copies delivered wrong data: P2P must not be used");
            } else if (s->hazard) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                char tests[80] = "";
                for (int k = 0; k < DR_NHAZ; k++)
                    if (s->hazard & (1u << k)) {
                        if (!tests[0])
                            v->ev = s->hazard_ev[k];
                        size_t l = strlen(tests);
                        snprintf(tests + l, sizeof tests - l, "%s%s", l ? ", " : "", dr_hazards[k].test);
                    }
                snprintf(v->why, sizeof v->why, "p2p-verify's hazard test%s failed (%s): P2P must not be used as it is",
                         strchr(tests, ',') ? "s" : "", tests);
            } else if (err == 1 || (err == -1 && n == 2)) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = m->sys.p2p_error.ev;
                snprintf(v->why, sizeof v->why, "P2P is offered but fails in use (a CUDA error in a P2P test)");
            } else if (s->access == 1 && s->access_src == 3 && v->ncauses > 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_INFERRED;
                v->ev = s->access_ev;
                snprintf(v->why, sizeof v->why,
                         "nvidia-smi topo -p2p reports OK (the driver's view), but the findings stop P2P for CUDA");
            } else if (s->access == 1) {
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->access_ev;
                if (nv && forced != 1 && !(s->bw_on > 0 && s->bw_on < 35 && s->bw_kind == DR_BW_UNI))
                    v->verdict = DR_V_NVLINK;
                else if (topo_known || forced == 1 || (m->gpus[a].nvlinks.v == 0 && m->gpus[b].nvlinks.v >= 0))
                    v->verdict = DR_V_BAR1;
                else
                    v->verdict = DR_V_P2P;
                snprintf(v->why, sizeof v->why, "%s%s",
                         s->access_src == 4   ? "peer access reported by CUDA"
                         : s->access_src == 3 ? "nvidia-smi topo -p2p reports OK (the driver's view, not a test)"
                         : s->access_src == 2 ? "NCCL uses P2P between them"
                                              : "P2P bandwidth/latency beats host staging",
                         s->corrupt == 0 ? "; data checked intact" : "; data integrity not checked");
                if (!dr_pair_symptom(c, a, b))
                    v->ncauses = 0; /* it works: the findings are not its causes */
                else
                    why_symptom(v, s, PS(c, b, a));
                if (s->nccl_shm) {
                    size_t l = strlen(v->why);
                    snprintf(v->why + l, sizeof v->why - l, "; NCCL used SHM, not P2P, here with P2P allowed");
                }
            } else if (s->access == 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->access_ev;
                snprintf(v->why, sizeof v->why, "%s", s->access_src == 4   ? "CUDA reports no peer access"
                                                      : s->access_src == 3 ? "nvidia-smi topo -p2p reports no P2P"
                                                                           : "P2P=Enabled is no faster than host staging");
            } else if (v->ncauses > 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_INFERRED;
                snprintf(v->why, sizeof v->why, "expected from the findings (no test of this pair was read)");
            } else {
                v->verdict = DR_V_UNKNOWN;
                v->basis = DR_BASIS_NONE;
                snprintf(v->why, sizeof v->why, "no output shows whether this pair has P2P");
            }
        }
}

/* ------------------------------------------------------------ symptoms */

/* P2P already works with the loaded driver: every ordered pair OK in topo
 * -p2p r and w, one model, nothing that stops it. */
void dr_works_now(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    if (m->ngpus < 2 || dr_has_finding(d, "mixed-gpu-models"))
        return;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
            return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            pobs_sum *s = PS(c, a, b);
            if (a != b && (s->cap_ok != 3 || s->cap_bad || s->access == 0 || s->corrupt == 1))
                return;
        }
    d->works_now = m->ngpus * (m->ngpus - 1);
}

/* ------------------------------------------------------------ the whole */

void dr_finish(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int blocked = 0;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY) {
            blocked++;
        }
    int unknown = c->unexplained;
    if (blocked) {
        d->exit_code = DR_EXIT_BLOCKED;
        d->status = "BLOCKED";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%d finding%s stop%s or break%s P2P", blocked,
                 blocked == 1 ? "" : "s", blocked == 1 ? "s" : "", blocked == 1 ? "s" : "");
    } else if (m->ngpus == 0 && unknown) {
        /* nothing read lists the GPUs (sysfs would say 0): how many there
           are, and so the pairs, cannot be told; not "fewer than two" */
        d->exit_code = DR_EXIT_INSUFFICIENT;
        d->status = "INSUFFICIENT-DATA";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "no NVIDIA GPU could be identified in what was read: neither the GPUs nor their pairs can be told");
    } else if (m->ngpus < 2) {
        d->exit_code = DR_EXIT_NO_PAIR;
        d->status = "FEWER-THAN-2-GPUS";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "%d NVIDIA GPU%s found in what was read: no pair to diagnose", m->ngpus, m->ngpus == 1 ? "" : "s");
    } else if (unknown) {
        d->exit_code = DR_EXIT_INSUFFICIENT;
        d->status = "INSUFFICIENT-DATA";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "nothing found that stops P2P, but the outputs cannot show every pair's state, or why P2P fails "
                 "where it does");
    } else {
        d->exit_code = DR_EXIT_OK;
        d->status = "OK";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%s",
                 c->o->preinstall ? "nothing found that would stop P2P after the install"
                                  : "nothing found that stops P2P, and every GPU pair has a verdict");
        if (d->unverified)
            snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                     "P2P is seen on %d pair%s, but no output checked that its data arrives intact: build.sh doctor "
                     "--verify checks every byte",
                     d->unverified, d->unverified == 1 ? "" : "s");
    }
    int degr = 0;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_DEGRADES || (d->f[i].severity == DR_SEV_BLOCKS &&
                                                     d->f[i].certainty == DR_CERT_POSSIBLE))
            degr++;
    if (degr && d->nreasons < 4)
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%d more finding%s to check (degrades, or possible)",
                 degr, degr == 1 ? "" : "s");
}
