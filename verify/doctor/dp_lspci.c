/* dp_lspci.c - p2p-doctor's readers of lspci -v/-vv/-vvv and lspci -t (pure
 * C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysparse.h"

/* ------------------------------------------------------------ lspci */

static int lspci_header(const char *line, char *busid, char *cls, size_t clen, const char **desc)
{
    if (isspace((unsigned char)line[0]))
        return 0;
    const char *p = line;
    /* optional domain */
    const char *sp = strchr(p, ' ');
    if (!sp || sp - p > 12 || sp - p < 7)
        return 0;
    char addr[16];
    dp_trim_copy(addr, sizeof addr, p, sp);
    for (const char *q = addr; *q; q++)
        if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
            return 0;
    if (pv_norm_busid(addr, busid, 16) != 0)
        return 0;
    const char *cb = sp + 1;
    const char *ce = strstr(cb, ": ");
    if (!ce)
        return 0;
    dp_trim_copy(cls, clen, cb, ce);
    *desc = ce + 2;
    return 1;
}

void dp_lspci(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    char busid[16], cls[96];
    const char *desc;
    if (lspci_header(line, busid, cls, sizeof cls, &desc)) {
        c->pci_kind = 0;
        c->pci_idx = -1;
        c->pci_mem = 0;
        c->pci_bar1_reg = -1;
        c->pci_in_rebar = 0;
        int nv = strstr(desc, "NVIDIA") != NULL || strstr(desc, "[10de:") != NULL;
        if (nv && (strstr(cls, "VGA compatible controller") || strstr(cls, "3D controller") ||
                   strstr(cls, "Display controller"))) {
            char name[96];
            const char *e = strstr(desc, " (rev");
            dp_trim_copy(name, sizeof name, desc, e ? e : desc + strlen(desc));
            c->pci_idx = dp_rec_get(c, "lspci", DR_NS_NONE, -1, busid, name);
            c->pci_kind = c->pci_idx >= 0 ? 1 : 0;
            dp_kind(c, DR_K_LSPCI);
        } else if (strstr(cls, "PCI bridge")) {
            c->pci_idx = dr_bridge_get(m, busid);
            if (c->pci_idx >= 0) {
                dr_bridge *br = &m->bridges[c->pci_idx];
                dp_trim_copy(br->name, sizeof br->name, desc, desc + strlen(desc));
                c->pci_kind = 2;
            }
            dp_kind(c, DR_K_LSPCI);
        } else {
            c->pci_kind = 3;
        }
        return;
    }
    const char *p = dp_skip_ws(line);
    if (p == line && (!strncmp(p, "VGA compatible controller: NVIDIA", 33) ||
                      !strncmp(p, "3D controller: NVIDIA", 21))) {
        /* a block pasted without its address: facts only */
        c->pci_kind = 1;
        c->pci_idx = dp_rec_anon(c, "lspci");
        c->pci_mem = 0;
        c->pci_bar1_reg = -1;
        c->pci_in_rebar = 0;
        if (c->pci_idx < 0)
            c->pci_kind = 0;
        dp_kind(c, DR_K_LSPCI);
        return;
    }
    if (p == line && *p)
        return; /* not part of a block */
    const char *q;
    if ((q = strstr(p, "ACSCtl:"))) {
        int rr = strstr(q, "ReqRedir+") != NULL, cr = strstr(q, "CmpltRedir+") != NULL;
        if (rr || cr)
            dp_setn(c, &s->acs_redir_any, 1);
        if (c->pci_kind == 2) {
            dr_bridge *br = &m->bridges[c->pci_idx];
            br->acs_seen = 1;
            br->req_redir = rr;
            br->cmplt_redir = cr;
            br->src_valid = strstr(q, "SrcValid+") != NULL;
            dp_ev(c, &br->acs_ev);
        } else if (c->pci_kind == 0 && (rr || cr)) {
            dp_setn(c, &s->acs_unknown_ctx, 1);
        }
        dp_kind(c, DR_K_LSPCIV);
        return;
    }
    if (strstr(p, "Capabilities: <access denied>")) {
        dp_setn(c, &s->lspci_denied, 1);
        return;
    }
    if (c->pci_kind == 2) {
        dr_bridge *br = &m->bridges[c->pci_idx];
        if ((q = strstr(p, "Bus: primary="))) {
            const char *se = strstr(q, "secondary="), *su = strstr(q, "subordinate=");
            if (se)
                br->sec = (int)strtol(se + 10, NULL, 16);
            if (su)
                br->sub = (int)strtol(su + 12, NULL, 16);
        } else if (strstr(p, "Express") && strstr(p, "Root Port")) {
            br->type = 1;
        } else if (strstr(p, "Express") && strstr(p, "Downstream Port")) {
            br->type = 2;
        } else if (strstr(p, "Express") && strstr(p, "Upstream Port")) {
            br->type = 3;
        } else if ((q = strstr(p, "Capabilities: [")) && strstr(q, "Access Control Services")) {
            br->acs_cap = (int)strtol(q + 15, NULL, 16);
        }
        return;
    }
    if (c->pci_kind != 1)
        return;
    dr_grec *g = &m->recs[c->pci_idx];
    if ((!strncmp(p, "Region ", 7) && strstr(p, "Memory at")) || !strncmp(p, "Memory at ", 10)) {
        /* lspci -vv "Region 1: Memory at ...", lspci -v "Memory at ..." */
        int reg = !strncmp(p, "Region ", 7) ? atoi(p + 7) : c->pci_mem;
        if (++c->pci_mem == 2) {
            c->pci_bar1_reg = reg;
            if (strstr(p, "<unassigned>") || strstr(p, "<ignored>") || strstr(p, "[disabled]"))
                dp_setn(c, &g->bar1_unassigned, 1);
            const char *sz = strstr(p, "[size=");
            if (sz) {
                long long mib = dp_parse_mib(sz + 6);
                if (mib > 0)
                    dp_setn(c, &g->bar1_mib, mib);
            }
        }
        dp_kind(c, DR_K_LSPCIV);
        return;
    }
    if (strstr(p, "Capabilities:")) {
        c->pci_in_rebar = strstr(p, "Resizable BAR") != NULL;
        dp_kind(c, DR_K_LSPCIV);
        return;
    }
    if (c->pci_in_rebar && !strncmp(p, "BAR ", 4) && (q = strstr(p, "current size:"))) {
        int bar = atoi(p + 4);
        if (bar == (c->pci_bar1_reg >= 0 ? c->pci_bar1_reg : 1)) {
            long long cur = dp_parse_mib(q + 13), max = -1;
            const char *sup = strstr(q, "supported:");
            if (sup) {
                char buf[512], *tok[32];
                snprintf(buf, sizeof buf, "%s", sup + 10);
                int nt = pv_tokenize(buf, tok, 32);
                for (int i = 0; i < nt; i++) {
                    long long v = dp_parse_mib(tok[i]);
                    if (v > max)
                        max = v;
                }
            }
            if (cur > 0)
                dp_setn(c, &g->rebar_cur_mib, cur);
            if (max > 0)
                dp_setn(c, &g->rebar_max_mib, max);
        }
        return;
    }
    if ((q = strstr(p, "LnkCap:")) && strstr(q, "Speed")) {
        const char *sp = strstr(q, "Speed "), *w = strstr(q, "Width x");
        if (sp && dp_gts_to_gen(atof(sp + 6)) > 0)
            dp_setn(c, &g->gen_dev_max, dp_gts_to_gen(atof(sp + 6)));
        if (w)
            dp_setn(c, &g->width_max, atoi(w + 7));
        return;
    }
    if ((q = strstr(p, "LnkSta:")) && strstr(q, "Speed")) {
        const char *sp = strstr(q, "Speed "), *w = strstr(q, "Width x");
        if (sp && dp_gts_to_gen(atof(sp + 6)) > 0)
            dp_setn(c, &g->gen_cur, dp_gts_to_gen(atof(sp + 6)));
        if (w) {
            dp_setn(c, &g->width_cur, atoi(w + 7));
            const char *after = w + 7;
            while (isdigit((unsigned char)*after))
                after++;
            if (!strncmp(dp_skip_ws(after), "(downgraded)", 12))
                dp_setn(c, &g->width_downgraded, 1);
        }
        if (sp && strstr(sp, "(downgraded)") && (!w || strstr(sp, "(downgraded)") < w))
            dp_setn(c, &g->speed_downgraded, 1);
        return;
    }
    if ((q = strstr(p, "Kernel driver in use:"))) {
        dp_trim_copy(g->driver_in_use, sizeof g->driver_in_use, q + 21, q + strlen(q));
        if (!strcmp(g->driver_in_use, "nouveau"))
            dp_setn(c, &s->nouveau, 1);
        return;
    }
    if ((q = strstr(p, "NUMA node:"))) {
        dp_setn(c, &g->numa, atoi(q + 10));
        return;
    }
}

/* ------------------------------------------------------------ lspci -t */

/* "[0000:40]" (or "[40]", lspci before domains): a tree's root at p, its
 * domain and bus; the length, 0 when none. */
static int lt_root_at(const char *p, int *dom, int *bus)
{
    unsigned d = 0, b;
    int n = 0;
    if (sscanf(p, "[%4x:%2x]%n", &d, &b, &n) == 2 && n == 9) {
        *dom = (int)d;
        *bus = (int)b;
        return n;
    }
    if (sscanf(p, "[%2x]%n", &b, &n) == 1 && n == 4) {
        *dom = 0;
        *bus = (int)b;
        return n;
    }
    return 0;
}

/* The devices after a connector ("-+-", "----", "--\-") from k are on bus. */
static void lt_children(dp_ctx *c, const char *line, size_t k, int bus)
{
    k += strspn(line + k, "-+\\");
    if (isxdigit((unsigned char)line[k]) && k < sizeof c->lt_bus / sizeof c->lt_bus[0])
        c->lt_bus[k] = (short)bus;
}

/* An NVIDIA GPU by its lspci name (function 0, not its audio, USB or a switch). */
static int lt_gpu_name(const char *name, int fn)
{
    static const char *const not_gpu[] = {"Audio", "USB", "Serial", "UCSI", "NVSwitch", "Bridge", "ConnectX",
                                          "BlueField", "Ethernet", "Network"};
    if (fn != 0 || !(strstr(name, "NVIDIA") || strstr(name, "[10de:")))
        return 0;
    for (size_t i = 0; i < sizeof not_gpu / sizeof not_gpu[0]; i++)
        if (strstr(name, not_gpu[i]))
            return 0;
    return 1;
}

/* A device "dd.f" at column i of a tree line: a bridge with its bus range
 * (its children's bus), or a device with its name.  Returns where to go on. */
static size_t lt_device(dp_ctx *c, const char *line, size_t i)
{
    int dev = dp_hexval(line[i]) * 16 + dp_hexval(line[i + 1]), fn = dp_hexval(line[i + 3]);
    int bus = i < sizeof c->lt_bus / sizeof c->lt_bus[0] ? c->lt_bus[i] : -1;
    char b[16] = "";
    if (bus >= 0 && dev <= 0x1f && fn <= 7)
        snprintf(b, sizeof b, "%04x:%02x:%02x.%x", c->lt_dom, bus, dev, fn);
    size_t j = i + 4;
    unsigned sec, sub;
    int n = 0;
    if (line[j] == '-' && line[j + 1] == '[' &&
        (sscanf(line + j + 1, "[%2x-%2x]%n", &sec, &sub, &n) == 2 || (sscanf(line + j + 1, "[%2x]%n", &sec, &n) == 1 && (sub = sec, 1)))) {
        int k = b[0] ? dr_bridge_get(c->m, b) : -1;
        if (k >= 0) {
            dr_bridge *br = &c->m->bridges[k];
            if (br->sec < 0) {
                br->sec = (int)sec;
                br->sub = (int)sub;
            }
            if (br->type == 0 && bus == c->lt_root)
                br->type = 1; /* on the root bus: a root port */
        }
        lt_children(c, line, j + 1 + (size_t)n, (int)sec);
        return j + (size_t)n;
    }
    const char *name = dp_skip_ws(line + j);
    if (b[0] && lt_gpu_name(name, fn))
        dp_rec_get(c, "lspci", DR_NS_NONE, -1, b, name);
    return strlen(line) - 1;
}

/* lspci -t (-v, -nn): "-[0000:00]-+-01.1-[01-05]----00.0-[02-05]--+-08.0-[03]----00.0  NVIDIA ...":
 * the bridges with their bus ranges (which GPUs share a switch) and the GPUs.
 * 1 when the line was part of a tree. */
int dp_lstree(dp_ctx *c, const char *line)
{
    size_t lead = strspn(line, " -+\\|");
    int dom, bus, n = lt_root_at(line + lead, &dom, &bus);
    if (n > 0 && line[lead + (size_t)n] == '-') {
        c->lt_on = 1;
        c->lt_dom = dom;
        c->lt_root = bus;
        lt_children(c, line, lead + (size_t)n, bus);
        dp_kind(c, DR_K_LSPCIT);
    } else if (!c->lt_on || !line[0]) {
        c->lt_on = 0; /* (a blank line ends it) */
        return 0;
    } else if (line[0] != ' ' && line[0] != '|') {
        return 0; /* the tail of a wrapped name, or another output: the tree may go on */
    }
    int found = 0;
    for (size_t i = lead > 0 ? lead : 1; line[i]; i++)
        if (line[i - 1] == '-' && isxdigit((unsigned char)line[i]) && isxdigit((unsigned char)line[i + 1]) &&
            line[i + 2] == '.' && isxdigit((unsigned char)line[i + 3]) &&
            (line[i + 4] == '-' || line[i + 4] == ' ' || !line[i + 4])) {
            i = lt_device(c, line, i);
            found = 1;
        }
    if (!found && line[strspn(line, " |")]) {
        c->lt_on = 0; /* no device and not the tree's drawing: another output */
        return 0;
    }
    return 1;
}
