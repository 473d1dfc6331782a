/* doctor.c - p2p-doctor: why GPU peer-to-peer works or not on a machine,
 * from the outputs of the usual commands (a bundle of build.sh doctor
 * --collect, or outputs pasted into files).  Needs no driver, CUDA or GPU.
 * Usually run through `build.sh doctor`. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dinput.h"
#include "dmodel.h"
#include "dreport.h"
#include "drules.h"

#ifndef PD_VERSION
#define PD_VERSION "1.0.0"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: p2p-doctor --from DIR [--json] [--preinstall [--tag TAG]] [--max-file-mib N]\n"
            "\n"
            "Diagnose GPU peer-to-peer (P2P) from command outputs in DIR: a bundle written by\n"
            "`build.sh doctor --collect`, or outputs pasted into files (nvidia-smi -q, topo -m,\n"
            "topo -p2p, lspci -vvv, lspci -tv, setpci, dmesg, /proc/cmdline, modprobe options,\n"
            "simpleP2P, p2pBandwidthLatencyTest, nvbandwidth, NCCL logs and nccl-tests, p2p-verify\n"
            "--json ...; any file names: each output is recognised by its content).  Nothing read\n"
            "is executed.\n"
            "\n"
            "  --from DIR         the directory to read (regular files only, links not followed)\n"
            "  --json             JSON (schema %d) instead of text\n"
            "  --brief            one tab-separated line per finding, pair and the verdict\n"
            "  --preinstall       before build.sh installs: findings about the loaded (stock)\n"
            "                     driver are left out; verdicts are what to expect after it\n"
            "  --tag TAG          the driver tag to be installed (with --preinstall)\n"
            "  --max-file-mib N   read at most N MiB of one file (default 256; all files: 4x)\n"
            "  --label TEXT       name the source so in the report (default: DIR)\n"
            "  --list-ids         print every finding id, one per line\n"
            "  --version, --help\n"
            "\n"
            "Exit codes:\n"
            "   0  nothing found that stops P2P, and every GPU pair has a verdict (pairs whose data\n"
            "      no output checked are said: build.sh doctor --verify checks every byte)\n"
            "   2  usage error\n"
            "  30  a finding stops or breaks P2P (certain or likely)\n"
            "  31  insufficient data: nothing found that stops P2P, but some pair's state, or the\n"
            "      cause of a failure or of a symptom (P2P slower than host staging), cannot be\n"
            "      told from the outputs, or no GPU can be identified in them (the report lists\n"
            "      what to collect)\n"
            "  32  one NVIDIA GPU in the outputs, or none where they list the GPUs (sysfs), and\n"
            "      nothing found that stops P2P\n"
            "  33  nothing readable in DIR\n"
            "   1  internal error\n",
            DR_SCHEMA);
}

int main(int argc, char **argv)
{
    const char *from = NULL, *label = NULL;
    int json = 0, brief = 0;
    dr_opts o;
    memset(&o, 0, sizeof o);
    dr_limits lim = {256LL << 20, 1024LL << 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("p2p-doctor %s\n", PD_VERSION);
            return 0;
        } else if (!strcmp(a, "--list-ids")) {
            for (int k = 0; dr_finding_ids[k]; k++)
                printf("%s\n", dr_finding_ids[k]);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--brief")) {
            brief = 1;
        } else if (!strcmp(a, "--preinstall")) {
            o.preinstall = 1;
        } else if ((!strcmp(a, "--from") || !strcmp(a, "--tag") || !strcmp(a, "--max-file-mib") ||
                    !strcmp(a, "--label")) &&
                   i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(a, "--from")) {
                from = v;
            } else if (!strcmp(a, "--label")) {
                label = v;
            } else if (!strcmp(a, "--tag")) {
                if (strlen(v) >= sizeof o.tag || strspn(v, "0123456789.") != strlen(v) || !v[0]) {
                    fprintf(stderr, "p2p-doctor: --tag '%s' is not a driver tag (e.g. 565.57.01)\n", v);
                    return DR_EXIT_USAGE;
                }
                snprintf(o.tag, sizeof o.tag, "%s", v);
            } else {
                char *end = NULL;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > 65536) {
                    fprintf(stderr, "p2p-doctor: --max-file-mib needs a number from 1 to 65536\n");
                    return DR_EXIT_USAGE;
                }
                lim.max_file_bytes = (long long)n << 20;
                lim.max_total_bytes = lim.max_file_bytes * 4;
            }
        } else {
            fprintf(stderr, "p2p-doctor: unknown or incomplete option '%s' (see --help)\n", a);
            return DR_EXIT_USAGE;
        }
    }
    if (json && brief) {
        fprintf(stderr, "p2p-doctor: --json and --brief exclude each other\n");
        return DR_EXIT_USAGE;
    }
    if (!from) {
        fprintf(stderr, "p2p-doctor: --from DIR is required (see --help)\n");
        return DR_EXIT_USAGE;
    }
    dr_model *m = dr_model_new();
    if (!m) {
        fprintf(stderr, "p2p-doctor: out of memory\n");
        return DR_EXIT_INTERNAL;
    }
    int n = dr_read_dir(m, from, &lim);
    if (n < 0) {
        fprintf(stderr, "p2p-doctor: cannot read directory %s: %s\n", from, strerror(errno));
        dr_model_free(m);
        return DR_EXIT_UNREADABLE;
    }
    dr_unify(m);
    dr_diag d;
    if (dr_diagnose(m, &o, &d) != 0) {
        fprintf(stderr, "p2p-doctor: out of memory\n");
        dr_model_free(m);
        return DR_EXIT_INTERNAL;
    }
    unsigned kinds = 0;
    for (int i = 0; i < m->nfiles; i++)
        kinds |= m->files[i].kinds;
    if (n == 0 || kinds == 0) {
        d.exit_code = DR_EXIT_UNREADABLE;
        d.status = "UNREADABLE";
        /* insufficient-data would only repeat the verdict: drop it */
        for (int i = 0; i < d.nf; i++)
            if (!strcmp(d.f[i].id, "insufficient-data")) {
                memmove(&d.f[i], &d.f[i + 1], (size_t)(d.nf - i - 1) * sizeof d.f[0]);
                d.nf--;
                i--;
            }
        d.nreasons = 1;
        snprintf(d.reasons[0], sizeof d.reasons[0], "%s",
                 n == 0 ? "no readable file in the directory" : "no file holds an output p2p-doctor knows");
    }
    const char *src = label ? label : from;
    if (json)
        dr_report_json(stdout, m, &d, src, o.preinstall);
    else if (brief)
        dr_report_brief(stdout, m, &d);
    else
        dr_report_text(stdout, m, &d, src, o.preinstall);
    int rc = d.exit_code;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "p2p-doctor: cannot write the report: %s\n", strerror(errno));
        rc = DR_EXIT_INTERNAL;
    }
    dr_diag_free(&d);
    dr_model_free(m);
    return rc;
}
