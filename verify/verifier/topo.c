/* topo.c - GPUs, links, peer access, nvidia-smi matrices. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "linklimits.h"
#include "proc.h"
#include "sysparse.h"

/* ---- NVML, loaded with dlopen (optional) ---- */
typedef struct nvmlDevice_st *pv_nvmlDevice;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pv_nvmlPciInfo;
typedef struct {
    unsigned long long bar1Total, bar1Free, bar1Used;
} pv_nvmlBAR1;

typedef struct {
    void *h;
    int (*init)(void);
    int (*shutdown)(void);
    int (*byBus)(const char *, pv_nvmlDevice *);
    int (*maxGen)(pv_nvmlDevice, unsigned *);
    int (*maxWidth)(pv_nvmlDevice, unsigned *);
    int (*curGen)(pv_nvmlDevice, unsigned *);
    int (*curWidth)(pv_nvmlDevice, unsigned *);
    int (*bar1)(pv_nvmlDevice, pv_nvmlBAR1 *);
    int (*nvlState)(pv_nvmlDevice, unsigned, int *);
    int (*nvlVersion)(pv_nvmlDevice, unsigned, unsigned *);
    int (*nvlRemote)(pv_nvmlDevice, unsigned, pv_nvmlPciInfo *);
    int (*driverVersion)(char *, unsigned);
} pv_nvml;

static int nvml_open(pv_nvml *n)
{
    memset(n, 0, sizeof(*n));
    n->h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->h)
        return -1;
#define SYM(field, name) *(void **)(&n->field) = dlsym(n->h, name)
    SYM(init, "nvmlInit_v2");
    SYM(shutdown, "nvmlShutdown");
    SYM(byBus, "nvmlDeviceGetHandleByPciBusId_v2");
    SYM(maxGen, "nvmlDeviceGetMaxPcieLinkGeneration");
    SYM(maxWidth, "nvmlDeviceGetMaxPcieLinkWidth");
    SYM(curGen, "nvmlDeviceGetCurrPcieLinkGeneration");
    SYM(curWidth, "nvmlDeviceGetCurrPcieLinkWidth");
    SYM(bar1, "nvmlDeviceGetBAR1MemoryInfo");
    SYM(nvlState, "nvmlDeviceGetNvLinkState");
    SYM(nvlVersion, "nvmlDeviceGetNvLinkVersion");
    SYM(nvlRemote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    SYM(driverVersion, "nvmlSystemGetDriverVersion");
#undef SYM
    if (!n->init || !n->shutdown || !n->byBus || n->init() != 0) {
        dlclose(n->h);
        n->h = NULL;
        return -1;
    }
    return 0;
}

static void nvml_close(pv_nvml *n)
{
    if (n->h) {
        n->shutdown();
        dlclose(n->h);
        n->h = NULL;
    }
}

/* ---- sysfs ---- */
static char *sysfs_read(const char *busid, const char *file)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", busid, file);
    char *s = pv_read_file(path, 1 << 16);
    if (s) {
        size_t l = strlen(s);
        while (l && (s[l - 1] == '\n' || s[l - 1] == ' '))
            s[--l] = '\0';
    }
    return s;
}

static void sysfs_link(const char *busid, const char *speedf, const char *widthf, int *gen, int *width)
{
    char *s = sysfs_read(busid, speedf);
    char *w = sysfs_read(busid, widthf);
    *gen = s ? pv_pcie_gen_from_speed(s) : 0;
    *width = w ? atoi(w) : 0;
    free(s);
    free(w);
}

/* bus id of the port above the GPU ("" if none / not a PCI device) */
static void sysfs_parent(const char *busid, char *out, size_t len)
{
    char path[PATH_MAX], real[PATH_MAX];
    out[0] = '\0';
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", busid);
    if (!realpath(path, real))
        return;
    char *dir = dirname(real);
    char *base = basename(dir);
    char norm[32];
    if (pv_norm_busid(base, norm, sizeof norm) == 0 && strchr(base, '.'))
        snprintf(out, len, "%s", norm);
}

static void gpu_sysfs(pv_gpu *g)
{
    char *res = sysfs_read(g->bus_id, "resource");
    if (res) {
        long long b1 = pv_parse_sysfs_bar1(res);
        if (b1 > 0) {
            g->bar1_bytes = b1;
            snprintf(g->bar1_src, sizeof g->bar1_src, "sysfs");
        } else {
            pv_log("%s: no BAR1 range in /sys/bus/pci/devices/%s/resource", g->bus_id, g->bus_id);
        }
        free(res);
    } else {
        pv_log("%s: cannot read /sys/bus/pci/devices/%s/resource", g->bus_id, g->bus_id);
    }
    int gc = 0, wc = 0, gm = 0, wm = 0;
    sysfs_link(g->bus_id, "current_link_speed", "current_link_width", &gc, &wc);
    sysfs_link(g->bus_id, "max_link_speed", "max_link_width", &gm, &wm);
    char parent[32];
    sysfs_parent(g->bus_id, parent, sizeof parent);
    if (parent[0]) {
        int pg = 0, pw = 0;
        sysfs_link(parent, "max_link_speed", "max_link_width", &pg, &pw);
        if (pg > 0 && (gm == 0 || pg < gm))
            gm = pg;
        if (pw > 0 && (wm == 0 || pw < wm))
            wm = pw;
    }
    if (gc || gm) {
        g->gen_cur = gc;
        g->width_cur = wc;
        g->gen_max = gm;
        g->width_max = wm;
        snprintf(g->link_src, sizeof g->link_src, "sysfs");
    }
}

static void smi_matrix(pv_results *r, const char *arg1, const char *arg2, char *dst, size_t cellsz, int *ok,
                       const int *cuda_to_smi)
{
    char *argv[6] = {"nvidia-smi", "topo", (char *)arg1, (char *)arg2, NULL, NULL};
    char *out = NULL;
    int rc = pv_run_capture(argv, NULL, 0, 20000, &out, NULL, NULL);
    *ok = 0;
    if (rc == 0 && out) {
        enum { MAXN = 64 };
        char *cells = calloc((size_t)MAXN * MAXN, cellsz);
        int n = cells ? pv_parse_smi_matrix(out, MAXN, cells, cellsz) : 0;
        if (n > 0) {
            int good = 1;
            for (int i = 0; i < r->ngpus; i++)
                if (cuda_to_smi[i] < 0 || cuda_to_smi[i] >= n)
                    good = 0;
            if (good) {
                for (int i = 0; i < r->ngpus; i++)
                    for (int j = 0; j < r->ngpus; j++)
                        snprintf(dst + ((size_t)i * PV_MAX_GPUS + (size_t)j) * cellsz, cellsz, "%s",
                                 cells + ((size_t)cuda_to_smi[i] * MAXN + (size_t)cuda_to_smi[j]) * cellsz);
                *ok = 1;
            }
        }
        free(cells);
    }
    free(out);
}

int pv_gather_topology(pv_results *r)
{
    PV_CK(r, cudaDriverGetVersion(&r->cuda_driver_api));
    PV_CK(r, cudaRuntimeGetVersion(&r->cuda_runtime));

    pv_nvml nv;
    int have_nvml = nvml_open(&nv) == 0;

    /* driver version */
    if (have_nvml && nv.driverVersion)
        nv.driverVersion(r->driver_version, sizeof r->driver_version);
    if (!r->driver_version[0]) {
        char *s = pv_read_file("/proc/driver/nvidia/version", 1 << 16);
        if (s)
            pv_parse_proc_driver_version(s, r->driver_version, sizeof r->driver_version);
        free(s);
    }
    char *params = pv_read_file("/proc/driver/nvidia/params", 1 << 16);
    if (params)
        pv_parse_params_regdwords(params, r->registry_dwords, sizeof r->registry_dwords);
    free(params);

    for (int i = 0; i < r->ngpus; i++) {
        pv_gpu *g = &r->gpu[i];
        struct cudaDeviceProp p;
        PV_CK(r, cudaGetDeviceProperties(&p, i));
        snprintf(g->name, sizeof g->name, "%.127s", p.name);
        g->cc_major = p.major;
        g->cc_minor = p.minor;
        g->mem_bytes = p.totalGlobalMem;
        char bus[64];
        PV_CK(r, cudaDeviceGetPCIBusId(bus, sizeof bus, i));
        if (pv_norm_busid(bus, g->bus_id, sizeof g->bus_id) != 0)
            snprintf(g->bus_id, sizeof g->bus_id, "%.31s", bus);
        gpu_sysfs(g);
        if (have_nvml) {
            pv_nvmlDevice d;
            if (nv.byBus(g->bus_id, &d) == 0) {
                unsigned a = 0, b = 0;
                if (nv.maxGen && nv.maxWidth && nv.maxGen(d, &a) == 0 && nv.maxWidth(d, &b) == 0 && a && b) {
                    g->gen_max = (int)a;
                    g->width_max = (int)b;
                    snprintf(g->link_src, sizeof g->link_src, "nvml");
                }
                if (nv.curGen && nv.curWidth && nv.curGen(d, &a) == 0 && nv.curWidth(d, &b) == 0 && a && b) {
                    g->gen_cur = (int)a;
                    g->width_cur = (int)b;
                }
                pv_nvmlBAR1 bar;
                if (g->bar1_bytes <= 0 && nv.bar1 && nv.bar1(d, &bar) == 0 && bar.bar1Total) {
                    g->bar1_bytes = (long long)bar.bar1Total;
                    snprintf(g->bar1_src, sizeof g->bar1_src, "nvml");
                }
                if (nv.nvlState) {
                    int active = 0;
                    for (unsigned l = 0; l < 18; l++) {
                        int st = 0;
                        if (nv.nvlState(d, l, &st) != 0)
                            break;
                        if (st) {
                            active++;
                            unsigned ver = 0;
                            if (nv.nvlVersion && nv.nvlVersion(d, l, &ver) == 0 && ver)
                                g->nvlink_version = (int)ver;
                        }
                    }
                    g->nvlink_active = active;
                }
            }
        }
    }

    /* peer access matrix and P2P attributes */
    r->access_known = 1;
    for (int i = 0; i < r->ngpus; i++)
        for (int j = 0; j < r->ngpus; j++) {
            if (i == j)
                continue;
            int v = 0;
            PV_CK(r, cudaDeviceCanAccessPeer(&v, i, j));
            r->can_access[i][j] = v ? 1 : 0;
            if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, i, j) == cudaSuccess)
                r->native_atomics[i][j] = v;
            if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrPerformanceRank, i, j) == cudaSuccess)
                r->perf_rank[i][j] = v;
        }

    /* NVLink between pairs from NVML remote PCI info */
    int nvml_links[PV_MAX_GPUS][PV_MAX_GPUS] = {{0}};
    int nvml_other[PV_MAX_GPUS] = {0};
    if (have_nvml && nv.nvlState && nv.nvlRemote) {
        for (int i = 0; i < r->ngpus; i++) {
            pv_nvmlDevice d;
            if (nv.byBus(r->gpu[i].bus_id, &d) != 0)
                continue;
            for (unsigned l = 0; l < 18; l++) {
                int st = 0;
                if (nv.nvlState(d, l, &st) != 0)
                    break;
                if (!st)
                    continue;
                pv_nvmlPciInfo pi;
                memset(&pi, 0, sizeof pi);
                if (nv.nvlRemote(d, l, &pi) != 0)
                    continue;
                char rb[32];
                int hit = 0;
                if (pv_norm_busid(pi.busId, rb, sizeof rb) == 0)
                    for (int j = 0; j < r->ngpus; j++)
                        if (j != i && strcmp(rb, r->gpu[j].bus_id) == 0) {
                            nvml_links[i][j]++;
                            hit = 1;
                        }
                if (!hit)
                    nvml_other[i]++;
            }
        }
    }
    if (have_nvml)
        nvml_close(&nv);

    /* nvidia-smi: index mapping, p2p matrices, topo -m */
    int cuda_to_smi[PV_MAX_GPUS];
    for (int i = 0; i < PV_MAX_GPUS; i++)
        cuda_to_smi[i] = -1;
    {
        char *argv[] = {"nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader", NULL};
        char *out = NULL;
        int rc = pv_run_capture(argv, NULL, 0, 20000, &out, NULL, NULL);
        if (rc == 0 && out) {
            char busids[64][32];
            memset(busids, 0, sizeof busids);
            int cnt = pv_parse_smi_index_csv(out, 64, busids);
            for (int i = 0; i < r->ngpus; i++)
                for (int s = 0; s < cnt; s++)
                    if (strcmp(busids[s], r->gpu[i].bus_id) == 0) {
                        cuda_to_smi[i] = s;
                        r->gpu[i].smi_index = s;
                    }
        } else if (rc == PV_RUN_EXEC_FAILED) {
            snprintf(r->smi_note, sizeof r->smi_note, "nvidia-smi not found in PATH");
        } else {
            snprintf(r->smi_note, sizeof r->smi_note, "nvidia-smi --query-gpu failed (status %d)", rc);
        }
        free(out);
    }
    if (!r->smi_note[0]) {
        int okr = 0, okw = 0;
        smi_matrix(r, "-p2p", "r", &r->smi_p2p_r[0][0][0], sizeof r->smi_p2p_r[0][0], &okr, cuda_to_smi);
        smi_matrix(r, "-p2p", "w", &r->smi_p2p_w[0][0][0], sizeof r->smi_p2p_w[0][0], &okw, cuda_to_smi);
        r->smi_ok = okr && okw;
        if (!r->smi_ok)
            snprintf(r->smi_note, sizeof r->smi_note,
                     "nvidia-smi topo -p2p r/w gave no parsable matrix (old nvidia-smi?)");
        smi_matrix(r, "-m", NULL, &r->smi_topo[0][0][0], sizeof r->smi_topo[0][0], &r->smi_topo_ok, cuda_to_smi);
    }

    /* limits per pair */
    for (int i = 0; i < r->ngpus; i++)
        for (int j = 0; j < r->ngpus; j++) {
            if (i == j)
                continue;
            pv_link_pcie(&r->pcie[i][j], &r->gpu[i], &r->gpu[j]);
            int nl = 0;
            const char *src = NULL;
            if (r->smi_topo_ok && (nl = pv_smi_nvlinks(r->smi_topo[i][j])) > 0) {
                src = "nvidia-smi topo -m";
            } else if (nvml_links[i][j] > 0) {
                nl = nvml_links[i][j];
                src = "NVML";
            } else if (nvml_other[i] > 0 && nvml_other[j] > 0 && r->native_atomics[i][j] == 1) {
                nl = nvml_other[i] < nvml_other[j] ? nvml_other[i] : nvml_other[j];
                src = "NVML, through an NVSwitch";
            }
            if (nl > 0)
                pv_link_nvlink(&r->link[i][j], &r->gpu[i], &r->gpu[j], nl, src);
            else
                r->link[i][j] = r->pcie[i][j];
        }
    return 0;
}
