/* dp_options.c - p2p-doctor's readers of the driver's configuration: modprobe
 * options (NVreg_RegistryDwords, NVreg_EnableResizableBar),
 * /proc/driver/nvidia/params, the kernel command line (pure C).  See
 * dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysparse.h"

/* ------------------------------------------------------------ registry keys */

static void regkeys_parse(dp_ctx *c, dr_regkeys *rk, const char *s)
{
    /* s: the value, possibly quoted: "A=1;B=0x2" */
    char buf[512];
    s = dp_skip_ws(s);
    if (*s == '"' || *s == '\'')
        s++;
    snprintf(buf, sizeof buf, "%s", s);
    char *q = strpbrk(buf, "\"'");
    if (q)
        *q = '\0';
    rk->present = 1;
    rk->n = 0;
    dp_ev(c, &rk->ev);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || rk->n >= DR_MAX_KEYS)
            continue;
        *eq = '\0';
        char key[40];
        dp_trim_copy(key, sizeof key, item, eq);
        char *end = NULL;
        const char *vs = dp_skip_ws(eq + 1);
        long long v = strtoll(vs, &end, 0);
        if (!key[0] || end == vs)
            continue;
        snprintf(rk->key[rk->n], sizeof rk->key[0], "%s", key);
        rk->val[rk->n++] = v;
    }
}

/* "options nvidia ...", "nvidia.NVreg_...=" on a command line, Talos/NixOS
 * key = value forms: the NVreg_ options a machine is configured with. */
void dp_modopts(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "NVreg_");
    if (!p || strstr(line, "parm:"))
        return;
    dr_sys *s = &c->m->sys;
    for (; p; p = strstr(p + 6, "NVreg_")) {
        const char *name = p + 6;
        const char *eq = name;
        while (*eq && (isalnum((unsigned char)*eq) || *eq == '_'))
            eq++;
        size_t nl = (size_t)(eq - name);
        const char *v = dp_skip_ws(eq);
        if (*v == ':' && (nl == 14 && !strncmp(name, "RegistryDwords", 14)))
            v = dp_skip_ws(v + 1); /* "NVreg_RegistryDwords: ..." yaml-ish */
        else if (*v == '=' || *v == ':')
            v = dp_skip_ws(v + 1);
        else
            continue;
        if (nl == 14 && !strncmp(name, "RegistryDwords", 14)) {
            regkeys_parse(c, &s->configured, v);
            dp_kind(c, DR_K_MODOPTS);
        } else if (nl == 18 && !strncmp(name, "EnableResizableBar", 18)) {
            if (*v == '"' || *v == '\'')
                v++;
            if (isdigit((unsigned char)*v)) {
                dp_setn_force(c, &s->rebar_option_configured, strtol(v, NULL, 0) ? 1 : 0);
                dp_kind(c, DR_K_MODOPTS);
            }
        }
    }
}

/* /proc/driver/nvidia/params: "RegistryDwords: "A=1;B=2"", "EnableResizableBar: 1";
 * module parameter lists without the NVreg_ prefix (Talos, NixOS):
 * "RegistryDwords="A=1;B=2"", configured. */
void dp_params(dp_ctx *c, const char *line)
{
    const char *p = dp_skip_ws(line);
    dr_sys *s = &c->m->sys;
    if (!strncmp(p, "RegistryDwords=", 15) || !strncmp(p, "RegistryDwords =", 16)) {
        regkeys_parse(c, &s->configured, strchr(p, '=') + 1);
        dp_kind(c, DR_K_MODOPTS);
        return;
    }
    if (!strncmp(p, "EnableResizableBar=", 19)) {
        dp_setn_force(c, &s->rebar_option_configured, strtol(p + 19, NULL, 0) ? 1 : 0);
        dp_kind(c, DR_K_MODOPTS);
        return;
    }
    if (!strncmp(p, "RegistryDwords:", 15)) {
        regkeys_parse(c, &s->applied, p + 15);
        dp_kind(c, DR_K_PARAMS);
    } else if (!strncmp(p, "EnableResizableBar:", 19)) {
        dp_setn_force(c, &s->rebar_option_applied, strtol(dp_skip_ws(p + 19), NULL, 0) ? 1 : 0);
        dp_kind(c, DR_K_PARAMS);
    }
}

/* ------------------------------------------------------------ kernel command line */

static void cmdline_tokens(dp_ctx *c, const char *s)
{
    char buf[DP_LINE_MAX];
    snprintf(buf, sizeof buf, "%s", s);
    char *tok[256];
    int n = pv_tokenize(buf, tok, 256);
    dr_sys *m = &c->m->sys;
    for (int i = 0; i < n; i++) {
        char *t = tok[i];
        while (*t == '"' || *t == '\'')
            t++;
        size_t l = strlen(t);
        while (l && (t[l - 1] == '"' || t[l - 1] == '\''))
            t[--l] = '\0';
        if (!strcmp(t, "iommu=pt") || !strcmp(t, "iommu.passthrough=1") || !strcmp(t, "iommu.passthrough=on"))
            dp_setn_force(c, &m->cmd_iommu_pt, 1);
        else if (!strcmp(t, "iommu=nopt") || !strcmp(t, "iommu.passthrough=0"))
            dp_setn_force(c, &m->cmd_iommu_pt, 0);
        else if (!strcmp(t, "intel_iommu=off") || !strcmp(t, "amd_iommu=off") || !strcmp(t, "iommu=off"))
            dp_setn_force(c, &m->iommu_off, 1);
        else if (!strncmp(t, "intel_iommu=", 12) && strstr(t + 12, "on"))
            dp_setn_force(c, &m->cmd_iommu_on, 1);
        else if (!strcmp(t, "amd_iommu=on") || !strcmp(t, "amd_iommu=force_isolation"))
            dp_setn_force(c, &m->cmd_iommu_on, 1);
        else if (!strncmp(t, "pcie_acs_override=", 18))
            dp_setn_force(c, &m->acs_override, 1);
    }
    dp_kind(c, DR_K_CMDLINE);
    dp_modopts(c, s);
}

void dp_cmdline(dp_ctx *c, const char *line)
{
    const char *p;
    if (c->cmdline_next) {
        c->cmdline_next = 0;
        if (strchr(line, '=') && !strstr(line, "cat /proc/cmdline")) {
            cmdline_tokens(c, line);
            return;
        }
    }
    size_t ll = strlen(line);
    if (ll >= 17 && !strcmp(line + ll - 17, "cat /proc/cmdline")) {
        c->cmdline_next = 1;
        return;
    }
    if (c->hint_cmdline && !strchr(line, '$') && !strchr(line, '#') && strchr(line, '=')) {
        cmdline_tokens(c, line);
        return;
    }
    if ((p = strstr(line, "Kernel command line:")) || (p = strstr(line, "Command line:"))) {
        cmdline_tokens(c, strchr(p, ':') + 1);
        return;
    }
    if ((p = strstr(line, "GRUB_CMDLINE_LINUX"))) {
        const char *eq = strchr(p, '=');
        if (eq)
            cmdline_tokens(c, eq + 1);
        return;
    }
    if (strstr(line, "BOOT_IMAGE=") || (strstr(line, "root=") && (strstr(line, " ro") || strstr(line, " rw"))))
        cmdline_tokens(c, line);
}
