/*
 * maps — /proc/PID/maps parser. The file is read whole (one read loop, no stdio) and parsed in
 * place: paths are pointers into the text, so a refresh costs one allocation for the text and one
 * for the entries.
 */
#include "util/maps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char DELETED[] = " (deleted)";

static uint64_t hex(char **s)
{
    uint64_t v = 0;
    char *p = *s;
    for (;; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (*p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            break;
        v = v << 4 | d;
    }
    *s = p;
    return v;
}

static uint64_t dec(char **s)
{
    uint64_t v = 0;
    char *p = *s;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *s = p;
    return v;
}

static int expect(char **s, char c)
{
    if (**s != c)
        return -EINVAL;
    (*s)++;
    return 0;
}

static void skip_spaces(char **s)
{
    while (**s == ' ' || **s == '\t')
        (*s)++;
}

/* One line (NUL-terminated, no newline) into e. */
static int parse_line(char *s, struct map_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->start = hex(&s);
    if (expect(&s, '-'))
        return -EINVAL;
    e->end = hex(&s);
    if (expect(&s, ' ') || e->end < e->start)
        return -EINVAL;
    for (int i = 0; i < 4; i++, s++) {
        static const char want[] = "rwxs";
        if (*s == want[i])
            e->prot |= 1u << i;
        else if (*s != '-' && !(i == 3 && *s == 'p'))
            return -EINVAL;
    }
    if (expect(&s, ' '))
        return -EINVAL;
    e->offset = hex(&s);
    if (expect(&s, ' '))
        return -EINVAL;
    e->dev_major = (uint32_t)hex(&s);
    if (expect(&s, ':'))
        return -EINVAL;
    e->dev_minor = (uint32_t)hex(&s);
    if (expect(&s, ' '))
        return -EINVAL;
    e->inode = dec(&s);
    skip_spaces(&s);
    e->path = s;
    size_t len = strlen(s), dl = sizeof(DELETED) - 1;
    if (len > dl && !strcmp(s + len - dl, DELETED)) {
        s[len - dl] = '\0';
        e->deleted = true;
    }
    return 0;
}

int maps_parse(struct maps *m, char *text)
{
    memset(m, 0, sizeof(*m));
    m->text = text;
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    m->v = calloc(lines + 1, sizeof(*m->v));
    if (!m->v) {
        maps_free(m);
        return -ENOMEM;
    }
    char *s = text;
    while (*s) {
        char *nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        if (*s) {
            if (parse_line(s, &m->v[m->n]) < 0) {
                maps_free(m);
                return -EINVAL;
            }
            m->n++;
        }
        if (!nl)
            break;
        s = nl + 1;
    }
    return 0;
}

/* Whether the thread whose /proc directory is dir has exited (zombie or dead); false when its
 * state cannot be read. */
static bool exited(const char *dir)
{
    char path[96], buf[512], *c;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "%s/stat", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    c = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    return c && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X');
}

int maps_live_dir(pid_t pid, char *dir, size_t size)
{
    char task[48];
    struct dirent *d;
    int err = -ESRCH;
    DIR *td;

    snprintf(dir, size, "/proc/%d", (int)pid);
    if (!exited(dir))
        return 0;
    snprintf(task, sizeof(task), "/proc/%d/task", (int)pid);
    td = opendir(task);
    if (!td)
        return errno == ENOENT ? -ESRCH : -errno;
    while (err && (d = readdir(td))) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9' || atoi(d->d_name) == (int)pid)
            continue;
        snprintf(dir, size, "/proc/%d/task/%.16s", (int)pid, d->d_name);
        if (!exited(dir))
            err = 0;
    }
    closedir(td);
    if (err)
        snprintf(dir, size, "/proc/%d", (int)pid);
    return err;
}

static int read_file(struct maps *m, const char *dir)
{
    char path[96];
    snprintf(path, sizeof(path), "%s/maps", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    int err = buf ? 0 : -ENOMEM;
    while (!err) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                err = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            err = -errno;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (err) {
        free(buf);
        return err;
    }
    buf[len] = '\0';
    return maps_parse(m, buf);
}

int maps_read_at(struct maps *m, pid_t pid, char *dir, size_t size)
{
    char own[64];
    int err;

    if (!dir) {
        dir = own;
        size = sizeof(own);
    }
    snprintf(dir, size, "/proc/%d", (int)pid);
    err = read_file(m, dir);
    if (err || m->n)
        return err;
    /* Empty: a kernel thread (whose maps are empty indeed), or a leader that exited while its
     * threads run on. */
    if (maps_live_dir(pid, dir, size) || !strstr(dir, "/task/"))
        return 0;
    maps_free(m);
    err = read_file(m, dir);
    if (err)
        snprintf(dir, size, "/proc/%d", (int)pid);
    return err;
}

int maps_read(struct maps *m, pid_t pid)
{
    return maps_read_at(m, pid, NULL, 0);
}

const struct map_entry *maps_find(const struct maps *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct map_entry *e = &m->v[mid];
        if (addr < e->start)
            hi = mid;
        else if (addr >= e->end)
            lo = mid + 1;
        else
            return e;
    }
    return NULL;
}

const char *maps_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

bool maps_is_file(const struct map_entry *e)
{
    return e->path && e->path[0] == '/';
}

bool maps_is_kernel_code(const struct map_entry *e)
{
    return e->path &&
           (!strcmp(e->path, "[vdso]") || !strcmp(e->path, "[vsyscall]") || !strcmp(e->path, "[uprobes]"));
}

void maps_free(struct maps *m)
{
    free(m->v);
    free(m->text);
    memset(m, 0, sizeof(*m));
}
