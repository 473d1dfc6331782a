/* dp_setpci.c - p2p-doctor's reader of setpci command lines and their output
 * (ACS control of the bridges) (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sysparse.h"

/* ------------------------------------------------------------ setpci */

/* setpci's "-s" for one device: [[domain:]bus:]slot.func in hex; 0 on success. */
static int sp_slot(const char *t, char *out, size_t outlen)
{
    unsigned dom = 0, bus, dev, fn;
    char tail;
    if (sscanf(t, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
        dom = 0;
        if (sscanf(t, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
            return -1;
    }
    if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7 || !isxdigit((unsigned char)t[0]))
        return -1;
    snprintf(out, outlen, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return 0;
}

/* setpci's register "ECAP_ACS+6.w", "ECAP0d+0x6.W", "14e.w", each with an
 * optional "=VALUE" (a write), into r; 0 on success.  Other capabilities,
 * named registers and masked writes: -1. */
static int sp_reg(const char *t, dr_setpci *r)
{
    const char *p = t;
    char *e = NULL;
    r->acs = 0;
    r->write = 0;
    r->value = -1;
    if (!strncasecmp(p, "ECAP_ACS", 8)) {
        r->acs = 1;
        p += 8;
    } else if (!strncasecmp(p, "ECAP", 4) && isxdigit((unsigned char)p[4])) {
        if (strtoul(p + 4, &e, 16) != 0xd)
            return -1;
        r->acs = 1;
        p = e;
    }
    unsigned long reg = 0;
    if (!r->acs) {
        reg = strtoul(p, &e, 16);
        if (e == p || (*e != '.' && *e != '+'))
            return -1;
        p = e;
    }
    if (*p == '+') {
        reg += strtoul(p + 1, &e, 16);
        if (e == p + 1)
            return -1;
        p = e;
    }
    if (*p != '.' || !strchr("bBwWlL", p[1]) || !p[1])
        return -1;
    r->width = tolower((unsigned char)p[1]) == 'b' ? 1 : (tolower((unsigned char)p[1]) == 'w' ? 2 : 4);
    r->reg = (int)(reg & 0xfff);
    p += 2;
    if (*p == '@')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '=') {
        r->value = (long)strtoul(p + 1, &e, 16);
        if (e == p + 1 || *e)
            return -1;
        r->write = 1;
        return 0;
    }
    return *p ? -1 : 0;
}

static void sp_add(dp_ctx *c, const dr_setpci *r)
{
    dr_model *m = c->m;
    if (m->nsetpci >= DR_MAX_SETPCI) {
        m->truncated_recs++;
        return;
    }
    dr_setpci *x = &m->setpci[m->nsetpci++];
    *x = *r;
    dp_ev(c, &x->ev);
    dp_kind(c, DR_K_SETPCI);
}

/* "for VAR in BDF BDF ...; do" (the rest of the line may hold the loop's
 * body): the variable and its devices, for a write "setpci -s "$VAR" R=V" in
 * the loop (a write prints nothing to read the device from).  A list with
 * anything but device addresses ("$(lspci ...)") is not kept. */
static void sp_for(dp_ctx *c, const char *line)
{
    char buf[DP_LINE_MAX], *tok[64];
    snprintf(buf, sizeof buf, "%s", line);
    int nt = pv_tokenize(buf, tok, 64), i = 0;
    while (i < nt && strcmp(tok[i], "for"))
        i++;
    if (i + 3 >= nt || strcmp(tok[i + 2], "in"))
        return;
    c->sp_for_n = 0;
    snprintf(c->sp_for_var, sizeof c->sp_for_var, "%s", tok[i + 1]);
    for (i += 3; i < nt && strcmp(tok[i], "do") && strcmp(tok[i], ";"); i++) {
        size_t l = strlen(tok[i]);
        int last = l > 1 && tok[i][l - 1] == ';';
        if (last)
            tok[i][l - 1] = '\0';
        if (c->sp_for_n >= 16 || sp_slot(tok[i], c->sp_for_bdf[c->sp_for_n], sizeof c->sp_for_bdf[0]) != 0) {
            c->sp_for_n = 0;
            return;
        }
        c->sp_for_n++;
        if (last)
            break;
    }
}

/* setpci's -s argument names the loop's variable: $VAR, ${VAR}, "$VAR". */
static int sp_for_arg(const dp_ctx *c, const char *a)
{
    char v[32];
    size_t l = strlen(a);
    if (l >= 2 && (a[0] == '"' || a[0] == '\'') && a[l - 1] == a[0]) {
        a++;
        l -= 2;
    }
    if (l < 2 || l >= sizeof v || a[0] != '$' || !c->sp_for_n)
        return 0;
    memcpy(v, a + 1, l - 1);
    v[l - 1] = '\0';
    if (v[0] == '{' && l > 3 && v[l - 2] == '}') {
        memmove(v, v + 1, l - 3);
        v[l - 3] = '\0';
    }
    return !strcmp(v, c->sp_for_var);
}

/* A setpci command line: its writes are recorded, its reads wait for their
 * value on the following lines (or come as -v's lines, or a loop's). */
static void sp_command(dp_ctx *c, const char *args)
{
    char buf[DP_LINE_MAX], *tok[64], slot[16] = "";
    snprintf(buf, sizeof buf, "%s", args);
    int nt = pv_tokenize(buf, tok, 64), verbose = 0, loop = 0, forlist = 0;
    dr_setpci regs[4];
    int nregs = 0;
    for (int i = 0; i < nt; i++) {
        char *t = tok[i];
        if (!strcmp(t, ";") || !strcmp(t, "|") || !strcmp(t, "&&") || t[0] == '#')
            break;
        size_t l = strlen(t);
        if (l && t[l - 1] == ';')
            t[l - 1] = '\0';
        if (!strcmp(t, "-v")) {
            verbose = 1;
        } else if (!strncmp(t, "-s", 2) || !strncmp(t, "-d", 2)) {
            const char *a = t[2] ? t + 2 + (t[2] == '=') : (i + 1 < nt ? tok[++i] : "");
            loop = t[1] == 'd' || sp_slot(a, slot, sizeof slot) != 0;
            forlist = t[1] == 's' && loop && sp_for_arg(c, a);
        } else if (nregs < 4 && sp_reg(t, &regs[nregs]) == 0) {
            snprintf(regs[nregs].busid, sizeof regs[nregs].busid, "%s", slot);
            regs[nregs].cap_off = -1;
            nregs++;
        }
    }
    c->sp_npending = 0;
    c->sp_loop = 0;
    for (int k = 0; k < nregs; k++) {
        if (loop && forlist && regs[k].write) {
            /* a write in "for VAR in BDF...": one write to each device listed */
            for (int j = 0; j < c->sp_for_n; j++) {
                dr_setpci r = regs[k];
                snprintf(r.busid, sizeof r.busid, "%s", c->sp_for_bdf[j]);
                sp_add(c, &r);
            }
            continue;
        }
        if (loop) {
            c->sp_loop = !regs[k].write && !verbose;
            c->sp_loopreg = regs[k];
            return;
        }
        if (regs[k].write)
            sp_add(c, &regs[k]);
        else if (!verbose && c->sp_npending < 4)
            c->sp_pending[c->sp_npending++] = regs[k];
    }
}

/* setpci -v's lines: "0000:02:08.0 (ecap 000d @148) @14e = 001d" (a read),
 * "0000:02:08.0 (ecap 000d @148) @14e 0000" (a write); 1 when one. */
static int sp_verbose(dp_ctx *c, const char *p)
{
    dr_setpci r;
    memset(&r, 0, sizeof r);
    r.cap_off = -1;
    unsigned id, off, reg;
    if (strlen(p) < 14 || p[12] != ' ')
        return 0;
    char slot[13];
    memcpy(slot, p, 12);
    slot[12] = '\0';
    if (sp_slot(slot, r.busid, sizeof r.busid) != 0)
        return 0;
    const char *q = p + 13;
    if (sscanf(q, "(ecap %x @%x) ", &id, &off) == 2) {
        if (id != 0xd)
            return 0;
        r.acs = 1;
        r.cap_off = (int)off;
        q = strchr(q, ')') + 1;
        if (*q != ' ')
            return 0; /* cut after the capability (a paste's last line): no register, no value */
        q++;
    }
    char *e = NULL;
    if (*q != '@' || (reg = (unsigned)strtoul(q + 1, &e, 16), e == q + 1))
        return 0;
    r.reg = r.acs ? (int)reg - r.cap_off : (int)reg;
    q = e;
    if (!strncmp(q, " = ", 3)) {
        q += 3;
    } else if (*q == ' ') {
        q++;
        r.write = 1;
    } else {
        return 0;
    }
    size_t digits = strspn(q, "0123456789abcdefABCDEF");
    if ((digits != 2 && digits != 4 && digits != 8) || q[digits])
        return 0;
    r.width = (int)digits / 2;
    r.value = (long)strtoul(q, NULL, 16);
    sp_add(c, &r);
    return 1;
}

/* The devices of "for d in $(lspci ...)" are PLX switch ports: lspci's output
 * filtered by grep for "plx" (not the loop variable's name), or -d 10b5:
 * (PLX's vendor id). */
static int sp_for_plx(const char *q)
{
    const char *l = dp_ci_find(q, "lspci"), *g;
    if (!l)
        return 0;
    if (dp_ci_find(l, "-d 10b5:") || dp_ci_find(l, "-d10b5:"))
        return 1;
    if (!(g = dp_ci_find(l, "grep")))
        return 0;
    size_t seg = strcspn(g, "|);");
    for (const char *x = g; x + 3 <= g + seg; x++)
        if (!strncasecmp(x, "plx", 3))
            return 1;
    return 0;
}

/* A loop's value printed alone ("001d": "setpci -s $d REG" without an echo of
 * $d): which device it is cannot be told, so it goes to no bridge; where the
 * register is ACS control (ECAP_ACS+6, or 0xf2a of PLX switch ports, where
 * NVIDIA's ACS script for PLX switches writes it), a redirect bit set is
 * ACS redirection somewhere on the machine (as an ACSCtl line without its
 * device).  1 when the line is such a value. */
static int sp_loop_value(dp_ctx *c, const char *p)
{
    const dr_setpci *r = &c->sp_loopreg;
    size_t digits = strspn(p, "0123456789abcdefABCDEF");
    if (digits != (size_t)r->width * 2 || p[digits])
        return 0;
    int ctl = (r->acs && r->reg == 6 && r->width == 2) || (!r->acs && r->reg == 0xf2a && r->width == 2 && c->sp_plx);
    if (ctl) {
        long v = (long)strtoul(p, NULL, 16);
        if (v & 0xc) {
            dp_setn(c, &c->m->sys.acs_unknown_ctx, 1);
            dp_setn(c, &c->m->sys.acs_redir_any, 1);
        }
    }
    dp_kind(c, DR_K_SETPCI);
    return 1;
}

void dp_setpci(dp_ctx *c, const char *line)
{
    const char *p = dp_skip_ws(line), *q;
    size_t digits = strspn(p, "0123456789abcdefABCDEF");
    if (!strncmp(p, "[sudo]", 6))
        return; /* sudo's password prompt between a command and its output */
    if (!strncmp(p, "done", 4) && (!p[4] || p[4] == ';' || p[4] == ' '))
        c->sp_for_n = 0; /* the end of a shell loop */
    else if ((q = strstr(p, "for ")) && (q == p || q[-1] == ' ' || q[-1] == ';')) {
        sp_for(c, q);
        c->sp_plx = sp_for_plx(q);
    }
    if (c->sp_npending > 0 && digits == (size_t)c->sp_pending[0].width * 2 && !p[digits]) {
        dr_setpci r = c->sp_pending[0];
        r.value = (long)strtoul(p, NULL, 16);
        sp_add(c, &r);
        memmove(c->sp_pending, c->sp_pending + 1, sizeof c->sp_pending[0] * (size_t)--c->sp_npending);
        return;
    }
    if ((q = strstr(line, "setpci")) && (q == line || !isalnum((unsigned char)q[-1])) && q[6] == ' ' &&
        !strstr(line, "not found")) {
        sp_command(c, q + 7);
        if (strstr(q, "; done") || strstr(q, ";done"))
            c->sp_for_n = 0; /* a loop on one line */
        return;
    }
    if (sp_verbose(c, p))
        return;
    char b[16];
    if (strstr(p, "not found") && dp_ci_find(p, "capability 000d") && dp_find_busid(p, b, sizeof b) == 0) {
        /* "setpci: 0000:00:01.0: Instance #0 of Extended capability 000d not found - ..." */
        dr_setpci r;
        memset(&r, 0, sizeof r);
        snprintf(r.busid, sizeof r.busid, "%s", b);
        r.acs = 1;
        r.cap_off = -1;
        r.value = -1;
        sp_add(c, &r);
        return;
    }
    if (c->sp_loop && *p && sp_loop_value(c, p))
        return;
    if (c->sp_loop && *p) {
        /* a loop's "02:08.0: 001d" or "0000:02:08.0 001d" */
        char slot[24], val[16], extra;
        int n = sscanf(p, "%23s %15s %c", slot, val, &extra);
        size_t sl = strlen(slot);
        if (n == 2 && sl && slot[sl - 1] == ':')
            slot[sl - 1] = '\0';
        size_t vd = strspn(val, "0123456789abcdefABCDEF");
        dr_setpci r = c->sp_loopreg;
        if (n == 2 && sp_slot(slot, r.busid, sizeof r.busid) == 0 && vd == (size_t)r.width * 2 && !val[vd]) {
            r.value = (long)strtoul(val, NULL, 16);
            sp_add(c, &r);
        } else {
            c->sp_loop = 0;
        }
    }
    if (*p)
        c->sp_npending = 0;
}
