/* proc.c - fork/exec with captured stdout and a timeout. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *pv_read_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= max)
                break;
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

int pv_run_capture(char *const argv[], const pv_envset *env, int nenv, int timeout_ms, char **out,
                   const char *stderr_path, int *sig)
{
    int pfd[2];
    if (out)
        *out = NULL;
    if (sig)
        *sig = 0;
    if (pipe(pfd) != 0)
        return PV_RUN_SYSERR;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return PV_RUN_SYSERR;
    }
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], STDOUT_FILENO);
        close(pfd[1]);
        int efd = stderr_path ? open(stderr_path, O_WRONLY | O_CREAT | O_APPEND, 0600) : open("/dev/null", O_WRONLY);
        if (efd >= 0) {
            dup2(efd, STDERR_FILENO);
            close(efd);
        }
        int nfd = open("/dev/null", O_RDONLY);
        if (nfd >= 0) {
            dup2(nfd, STDIN_FILENO);
            close(nfd);
        }
        for (int i = 0; i < nenv; i++) {
            if (env[i].value)
                setenv(env[i].name, env[i].value, 1);
            else
                unsetenv(env[i].name);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap + 1);
    long long deadline = now_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pr == 0)
            continue;
        if (buf && len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (nb) {
                buf = nb;
                cap *= 2;
            }
        }
        char sink[4096];
        char *dst = (buf && len < cap) ? buf + len : sink;
        size_t room = (buf && len < cap) ? cap - len : sizeof sink;
        ssize_t got = read(pfd[0], dst, room);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (got == 0)
            break;
        if (dst != sink)
            len += (size_t)got;
    }
    close(pfd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (buf)
        buf[len] = '\0';
    if (out)
        *out = buf;
    else
        free(buf);
    if (timed_out)
        return PV_RUN_TIMEOUT;
    if (WIFSIGNALED(status)) {
        if (sig)
            *sig = WTERMSIG(status);
        return PV_RUN_SIGNALED;
    }
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        return code == 127 ? PV_RUN_EXEC_FAILED : code;
    }
    return PV_RUN_SYSERR;
}
