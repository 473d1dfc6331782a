/* dinput.c - p2p-doctor's file input (POSIX C).  See dinput.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "dinput.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dparse.h"

#define CHUNK (1 << 16)
#define SNIFF (1 << 16)

static void safe_name(char *out, size_t outlen, const char *in)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < outlen; p++)
        out[o++] = (*p < 0x20 || *p >= 0x7f) ? '?' : (char)*p;
    out[o] = '\0';
}

/* Binary: NUL bytes or many control bytes in the first block. */
static int looks_binary(const unsigned char *b, size_t n)
{
    size_t nul = 0, ctl = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == 0)
            nul++;
        else if (b[i] < 0x20 && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' && b[i] != '\f' && b[i] != 0x1b &&
                 b[i] != '\b')
            ctl++;
    }
    return n > 0 && (nul * 200 > n || ctl * 20 > n);
}

static dr_file *new_file(dr_model *m, const char *name)
{
    if (m->nfiles >= DR_MAX_FILES)
        return NULL;
    dr_file *f = &m->files[m->nfiles++];
    memset(f, 0, sizeof(*f));
    safe_name(f->name, sizeof f->name, name);
    f->ngpus = -1;
    return f;
}

int dr_read_fd(dr_model *m, int fd, const char *name, const dr_limits *lim, long long *total)
{
    dr_file *f = new_file(m, name);
    if (!f) {
        dr_note(m, "more than %d files: the rest were not read", DR_MAX_FILES);
        return 0;
    }
    int fi = (int)(f - m->files);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(f->status, sizeof f->status, "skipped");
        snprintf(f->note, sizeof f->note, "not a regular file");
        return 0;
    }
    f->bytes = (long long)st.st_size;
    if (st.st_size == 0) {
        snprintf(f->status, sizeof f->status, "empty");
        return 0;
    }
    long long budget = lim->max_file_bytes;
    if (lim->max_total_bytes - *total < budget)
        budget = lim->max_total_bytes - *total;
    if (budget <= 0) {
        snprintf(f->status, sizeof f->status, "skipped");
        snprintf(f->note, sizeof f->note, "the read limit for all files (%lld MiB) was reached",
                 lim->max_total_bytes >> 20);
        return 0;
    }
    unsigned char *buf = malloc(CHUNK);
    char *line = malloc(DP_LINE_MAX);
    if (!buf || !line) {
        free(buf);
        free(line);
        snprintf(f->status, sizeof f->status, "unreadable");
        snprintf(f->note, sizeof f->note, "out of memory");
        return 0;
    }
    dp_ctx *c = NULL;
    size_t ll = 0; /* bytes in line */
    int cut = 0, first = 1;
    long long got = 0;
    long ln = 0;
    for (;;) {
        size_t want = CHUNK;
        if ((long long)want > budget - got)
            want = (size_t)(budget - got);
        if (want == 0)
            break;
        ssize_t n = read(fd, buf, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(f->note, sizeof f->note, "read error: %s", strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (first) {
            first = 0;
            if (looks_binary(buf, (size_t)n < SNIFF ? (size_t)n : SNIFF)) {
                snprintf(f->status, sizeof f->status, "skipped");
                snprintf(f->note, sizeof f->note, "binary data (NUL or control bytes), not command output");
                free(buf);
                free(line);
                *total += n;
                return 0;
            }
            c = dp_begin(m, fi);
            if (!c)
                break;
        }
        got += n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                line[ll] = '\0';
                dp_clean_line(line, ll);
                f->lines++;
                if (cut)
                    f->cut_lines++;
                dp_line(c, line, ++ln);
                ll = 0;
                cut = 0;
            } else if (ll < DP_LINE_MAX - 1) {
                line[ll++] = (char)buf[i];
            } else {
                cut = 1;
            }
        }
    }
    if (c && ll > 0) {
        line[ll] = '\0';
        dp_clean_line(line, ll);
        f->lines++;
        dp_line(c, line, ++ln);
    }
    dp_end(c);
    *total += got;
    free(buf);
    free(line);
    if (got < f->bytes) {
        snprintf(f->status, sizeof f->status, "partial");
        if (!f->note[0])
            snprintf(f->note, sizeof f->note, "read the first %lld MiB of %lld MiB", got >> 20, f->bytes >> 20);
    } else {
        snprintf(f->status, sizeof f->status, "read");
    }
    if (f->cut_lines) {
        size_t l = strlen(f->note);
        snprintf(f->note + l, sizeof f->note - l, "%s%ld line%s longer than %d bytes cut", l ? "; " : "",
                 f->cut_lines, f->cut_lines == 1 ? "" : "s", DP_LINE_MAX - 1);
    }
    if (f->kinds == 0 && !f->note[0])
        snprintf(f->note, sizeof f->note, "no output p2p-doctor knows was found in it");
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int metadata(const char *n)
{
    return !strcmp(n, "source.txt") || !strcmp(n, "diagnosis.txt") || !strcmp(n, "expected.txt") ||
           !strncmp(n, "README", 6);
}

/* MANIFEST.txt of a bundle: "missing<TAB>file<TAB>why" lines become notes. */
static void manifest(dr_model *m, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.txt", dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        close(fd);
        return;
    }
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        return;
    }
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        char *t1 = strchr(line, '\t');
        if (!t1)
            continue;
        *t1 = '\0';
        if (strcmp(line, "missing") != 0 && strcmp(line, "failed") != 0)
            continue;
        char *t2 = strchr(t1 + 1, '\t');
        if (t2)
            *t2 = '\0';
        char name[64], why[400];
        safe_name(name, sizeof name, t1 + 1);
        safe_name(why, sizeof why, t2 ? t2 + 1 : "");
        dr_note(m, "not collected: %s: %s", name, why);
    }
    fclose(fp);
}

int dr_read_dir(dr_model *m, const char *dir, const dr_limits *lim)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || metadata(e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof(char *));
            if (!nn)
                break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(char *), cmp_str);
    int read_ok = 0;
    long long total = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            dr_file *f = new_file(m, names[i]);
            if (f) {
                snprintf(f->status, sizeof f->status, errno == ELOOP ? "skipped" : "unreadable");
                snprintf(f->note, sizeof f->note, "%s", errno == ELOOP ? "a symbolic link (not followed)"
                                                                        : strerror(errno));
            }
            continue;
        }
        if (!strcmp(names[i], "MANIFEST.txt")) {
            close(fd);
            continue;
        }
        read_ok += dr_read_fd(m, fd, names[i], lim, &total);
        close(fd);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    manifest(m, dir);
    return read_ok;
}
