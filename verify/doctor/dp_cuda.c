/* dp_cuda.c - p2p-doctor's readers of CUDA programs' own lines: the CUDA
 * samples (p2pBandwidthLatencyTest's device list and access lines, simpleP2P)
 * and PyTorch's can_device_access_peer (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ CUDA samples */

void dp_cuda_samples(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    /* p2pBandwidthLatencyTest */
    if ((p = strstr(line, "Device: ")) && strstr(line, "pciBusID:")) {
        long idx = strtol(p + 8, NULL, 10);
        const char *n1 = strchr(p, ',');
        const char *n2 = n1 ? strstr(n1, ", pciBusID:") : NULL;
        if (!n1 || !n2 || idx < 0 || idx >= DR_MAX_GPUS)
            return;
        char name[96];
        dp_trim_copy(name, sizeof name, n1 + 1, n2);
        unsigned bus = 0, dev = 0, dom = 0;
        const char *q = strstr(line, "pciBusID:");
        sscanf(q + 9, " %x", &bus);
        if ((q = strstr(line, "pciDeviceID:")))
            sscanf(q + 12, " %x", &dev);
        if ((q = strstr(line, "pciDomainID:")))
            sscanf(q + 12, " %x", &dom);
        char b[16];
        snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, dev & 0x1f);
        dp_rec_get(c, "p2pbw", DR_NS_CUDA, (int)idx, b, name);
        dp_kind(c, DR_K_P2PBW);
        return;
    }
    if ((p = strstr(line, "Device=")) && strstr(line, "Access Peer Device=")) {
        long a = strtol(p + 7, NULL, 10);
        const char *q = strstr(line, "Peer Device=");
        long b = strtol(q + 12, NULL, 10);
        int can = strstr(line, "CANNOT") == NULL && strstr(line, " CAN ") != NULL;
        dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, (int)a, (int)b, can, 0, 0, NULL, NULL);
        dp_kind(c, DR_K_P2PBW);
        return;
    }
    /* simpleP2P */
    if ((p = strstr(line, "Peer access from ")) && strstr(line, "(GPU")) {
        const char *g1 = strstr(p, "(GPU");
        const char *g2 = g1 ? strstr(g1 + 4, "(GPU") : NULL;
        const char *res = strrchr(line, ':');
        if (!g1 || !g2 || !res)
            return;
        long a = strtol(g1 + 4, NULL, 10), b = strtol(g2 + 4, NULL, 10);
        char n1[96], n2[96];
        dp_trim_copy(n1, sizeof n1, p + 17, g1);
        const char *arrow = strstr(g1, "->");
        dp_trim_copy(n2, sizeof n2, arrow ? arrow + 2 : g1, g2);
        dp_rec_get(c, "simplep2p", DR_NS_CUDA, (int)a, NULL, n1);
        dp_rec_get(c, "simplep2p", DR_NS_CUDA, (int)b, NULL, n2);
        const char *r = dp_skip_ws(res + 1);
        if (!strncmp(r, "Yes", 3) || !strncmp(r, "No", 2))
            dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, (int)a, (int)b, r[0] == 'Y', 0, 0, NULL, NULL);
        dp_kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if ((p = strstr(line, "Enabling peer access between GPU"))) {
        c->sp_a = atoi(p + 32);
        const char *q = strstr(p + 32, "GPU");
        c->sp_b = q ? atoi(q + 3) : -1;
        dp_kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if (strstr(line, "Verification error @ element")) {
        if (c->sp_errs++ == 0)
            dp_ev(c, &c->sp_ev);
        dp_kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if (strstr(line, "Test failed!") || strstr(line, "Test FAILED")) {
        dp_setn(c, &s->simplep2p_failed, 1);
        return;
    }
    if (strstr(line, "Test passed") || strstr(line, "Test PASSED")) {
        dp_setn(c, &s->simplep2p_passed, 1);
        return;
    }
    if (strstr(line, "Peer-to-Peer access capability are required") ||
        strstr(line, "Peer to Peer access is not available")) {
        dp_setn(c, &s->p2p_unavailable, 1);
        dp_kind(c, DR_K_SIMPLEP2P);
        return;
    }
}

void dp_sp_close(dp_ctx *c)
{
    dr_sys *s = &c->m->sys;
    if (c->sp_errs > 0) {
        char text[DR_EV_TEXT];
        snprintf(text, sizeof text, "%.150s (and %d more verification errors)", c->sp_ev.text, c->sp_errs - 1);
        snprintf(c->sp_ev.text, sizeof c->sp_ev.text, "%s", text);
        if (c->sp_a >= 0 && c->sp_b >= 0) {
            dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_a, c->sp_b, 1, 0, 0, NULL, &c->sp_ev);
            dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_b, c->sp_a, 1, 0, 0, NULL, &c->sp_ev);
        } else {
            /* no pair named: the first two P2P GPUs, unknown which */
            dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_NONE, 0, 1, 1, 0, 0, NULL, &c->sp_ev);
        }
    } else if (s->simplep2p_passed.v == 1 && c->sp_a >= 0 && c->sp_b >= 0) {
        dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_a, c->sp_b, 0, 0, 0, NULL, &s->simplep2p_passed.ev);
        dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_b, c->sp_a, 0, 0, 0, NULL, &s->simplep2p_passed.ev);
    }
}

/* PyTorch: "torch.cuda.can_device_access_peer(0, 1)" and its True/False (on
 * the same line, or the next). */
void dp_torch(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "can_device_access_peer(");
    int call = p != NULL;
    if (call) {
        int a = -1, b = -1;
        c->torch_a = c->torch_b = -1;
        if (sscanf(p + 23, " %d , %d", &a, &b) == 2 && a >= 0 && b >= 0) {
            c->torch_a = a;
            c->torch_b = b;
        }
        p = strchr(p, ')');
        line = p ? p + 1 : "";
    }
    if (c->torch_a < 0)
        return;
    const char *t = strstr(line, "True"), *f = strstr(line, "False");
    if (t || f) {
        dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, c->torch_a, c->torch_b, t && (!f || t < f), 0, 0, NULL, NULL);
        dp_kind(c, DR_K_CUDAERR);
        c->torch_a = c->torch_b = -1;
    } else if (!call && *dp_skip_ws(line)) {
        c->torch_a = c->torch_b = -1; /* the answer is not on the next line */
    }
}
