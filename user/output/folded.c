/*
 * folded — the text format flame graph tools share: one line per distinct stack, frames from the
 * root to the leaf separated by ';', a space, the sample count.
 *
 *   thread 812 (python3);main;Py_RunMain;run (/app/x.py:12);work (/app/x.py:3) 41
 *   └ root (optional) ────────────────────────────────────── leaf ┘ └ count ┘
 *
 * Reading back, a frame's kind comes from its text:
 *   "sym_[k]"                 kernel           (the suffix is dropped)
 *   "py::...", "..._[j]"      JIT              (CPython's trampolines; perf's JIT annotation)
 *   "name (file.py:N)"        Python           (also "name (file.py)" and "name (<frozen x>:N)")
 *   "thread N (comm)"         thread           (first frame only; turns show_threads on)
 *   "[unknown]", "[...]"      other
 *   anything else             native
 * The reader never trusts its input: lines without a valid count (or one above FOLDED_MAX_COUNT),
 * empty stacks and absurd depths are counted and skipped (or cut), NUL bytes become '?' and CRs
 * spaces, and it works on a buffer that is not NUL-terminated.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/folded.h"

/* -- Writer ------------------------------------------------------------------------------------- */

void folded_fold(char *s)
{
    if (!*s) {
        strcpy(s, "?"); /* an empty frame would vanish when read back */
        return;
    }
    for (; *s; s++) /* ';' separates frames, a line break ends the stack */
        *s = *s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s;
}

void folded_put_label(FILE *f, const char *s, bool first)
{
    if (first && *s == '#')
        s++, putc_unlocked('?', f); /* a line starting with '#' reads back as a comment */
    fputs_unlocked(s, f);
}

/* Each frame's label as written, made at its first line: a frame is on many lines (200
 * threads' 2,800 stacks wrote 70,000 labels of 875 frames), and formatting it each time and
 * writing it a character at a time through the locked stdio calls took 2 of the 5 ms that
 * writing that file took. */
struct labels {
    const struct profile *v;
    char **s; /* by frame; NULL: not made yet */
};

static const char *label_of(struct labels *L, uint32_t frame)
{
    if (L->s[frame])
        return L->s[frame];
    int n = profile_frame_label(L->v, frame, NULL, 0);
    char *t = n >= 0 ? malloc((size_t)n + 2) : NULL;
    if (!t)
        return NULL;
    /* never cut: a cut label could merge two frames when read back */
    profile_frame_label(L->v, frame, t, (size_t)n + 1);
    folded_fold(t);
    return L->s[frame] = t;
}

static int write_node(struct labels *L, uint32_t node, FILE *f, uint32_t *path, size_t depth)
{
    const struct profile *v = L->v;
    if (node != 0) {
        path[depth++] = node;
        if (v->nodes[node].self) {
            for (size_t i = 0; i < depth; i++) {
                const char *l = label_of(L, v->nodes[path[i]].frame);
                if (!l)
                    return -ENOMEM;
                if (i)
                    putc_unlocked(';', f);
                folded_put_label(f, l, i == 0);
            }
            fprintf(f, " %llu\n", (unsigned long long)v->nodes[node].self);
        }
    }
    uint32_t *kids;
    int64_t n = view_sorted_children(v, node, &kids);
    if (n < 0)
        return (int)n;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++)
        rc = write_node(L, kids[i], f, path, depth);
    free(kids);
    return rc;
}

int folded_write(const struct profile *p, FILE *f)
{
    struct profile v;
    int rc = view_build(p, &v);
    if (rc)
        return rc;
    uint32_t *path = malloc((VIEW_MAX_DEPTH + 1) * sizeof(*path));
    struct labels L = {.v = &v, .s = calloc(v.nframes ? v.nframes : 1, sizeof(*L.s))};
    if (!path || !L.s)
        rc = -ENOMEM;
    else
        rc = write_node(&L, 0, f, path, 0);
    for (uint32_t i = 0; L.s && i < v.nframes; i++)
        free(L.s[i]);
    free(L.s);
    free(path);
    profile_free(&v);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    return rc;
}

/* -- Reader ------------------------------------------------------------------------------------- */

static bool has_suffix(const char *s, size_t n, const char *suf)
{
    size_t m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* "name (file:N)" or "name (file)" with a Python-looking file: splits it in place. */
static bool parse_python(char *s, size_t n, const char **name, const char **file, uint32_t *line)
{
    if (n < 5 || s[n - 1] != ')')
        return false;
    char *open = NULL;
    for (size_t i = n - 1; i-- > 0;) {
        if (s[i] == '(' && i > 0 && s[i - 1] == ' ') {
            open = s + i;
            break;
        }
    }
    if (!open || open - 1 == s)
        return false;
    char *in = open + 1, *end = s + n - 1; /* in .. end: "file:N" */
    uint32_t ln = 0;
    char *colon = NULL;
    for (char *c = end; c > in; c--) {
        if (c[-1] == ':') {
            colon = c - 1;
            break;
        }
        if (!isdigit((unsigned char)c[-1]))
            break;
    }
    char *fend = end;
    if (colon && colon + 1 < end) {
        /* Only the form the writer produces ("N", N > 0, no leading zero), so that the text
         * read is the text written back. */
        if (colon[1] == '0')
            return false;
        uint64_t v = 0;
        for (char *c = colon + 1; c < end; c++) {
            v = v * 10 + (uint64_t)(*c - '0');
            if (v > UINT32_MAX)
                return false;
        }
        ln = (uint32_t)v;
        fend = colon;
    }
    size_t flen = (size_t)(fend - in);
    bool pyfile =
        (flen >= 3 && memcmp(fend - 3, ".py", 3) == 0) || (flen >= 2 && in[0] == '<' && fend[-1] == '>');
    if (!pyfile)
        return false;
    open[-1] = '\0';
    *fend = '\0';
    *name = s;
    *file = in;
    *line = ln;
    return true;
}

static bool is_thread(const char *s, size_t n)
{
    if (n < 8 || memcmp(s, "thread ", 7) != 0 || !isdigit((unsigned char)s[7]))
        return false;
    size_t i = 7;
    while (i < n && isdigit((unsigned char)s[i]))
        i++;
    return i == n || (s[i] == ' ' && i + 1 < n && s[i + 1] == '(' && s[n - 1] == ')');
}

/* Interns one frame's text (s[0..n), writable scratch). */
static int64_t intern_frame(struct profile *p, char *s, size_t n, bool first)
{
    s[n] = '\0';
    const char *name, *file;
    uint32_t line;
    if (first && is_thread(s, n)) {
        p->show_threads = true;
        return profile_frame(p, FRAME_THREAD, s, NULL, 0);
    }
    if (has_suffix(s, n, "_[k]") && n > 4) {
        s[n - 4] = '\0';
        return profile_frame(p, FRAME_KERNEL, s, NULL, 0);
    }
    if (n > 4 && memcmp(s, "py::", 4) == 0)
        return profile_frame(p, FRAME_JIT, s, NULL, 0);
    if (has_suffix(s, n, "_[j]") && n > 4) /* perf's JIT annotation; kept in the name */
        return profile_frame(p, FRAME_JIT, s, NULL, 0);
    if (parse_python(s, n, &name, &file, &line))
        return profile_frame(p, FRAME_PYTHON, name, file, line);
    if (s[0] == '[' && s[n - 1] == ']' && (strcmp(s, "[unknown]") == 0 || strstr(s, "truncated")))
        return profile_frame(p, FRAME_OTHER, s, NULL, 0);
    return profile_frame(p, FRAME_NATIVE, s, NULL, 0);
}

/* One line (no newline). Returns 1 accepted, 0 skipped, or -ENOMEM. */
static int read_line(struct profile *p, const char *l, size_t n, char *scratch, uint32_t *frames,
                     int64_t anon, struct folded_stats *st)
{
    while (n && isspace((unsigned char)l[n - 1]))
        n--;
    while (n && isspace((unsigned char)*l))
        l++, n--;
    if (n == 0 || l[0] == '#')
        return 0;
    size_t sp = n;
    while (sp && l[sp - 1] != ' ' && l[sp - 1] != '\t')
        sp--;
    if (sp == 0 || sp == n)
        return -1;
    uint64_t count = 0;
    for (size_t i = sp; i < n; i++) {
        if (!isdigit((unsigned char)l[i]))
            return -1;
        count = count * 10 + (uint64_t)(l[i] - '0');
        if (count > FOLDED_MAX_COUNT)
            return -1;
    }
    size_t slen = sp - 1;
    while (slen && isspace((unsigned char)l[slen - 1]))
        slen--;
    size_t depth = 0;
    bool cut = false;
    for (size_t a = 0; a <= slen && !cut;) {
        size_t b = a;
        while (b < slen && l[b] != ';')
            b++;
        size_t next = b + 1;
        /* Each frame loses its surrounding blanks, wherever it stands in the line: the line's
         * own trimming would otherwise strip them only from a frame that ends up first or last
         * when the text is written again (" x" after an empty frame), so read(write(read(t)))
         * would differ from read(t). */
        while (a < b && isspace((unsigned char)l[a]))
            a++;
        while (b > a && isspace((unsigned char)l[b - 1]))
            b--;
        if (b > a) {
            if (depth == FOLDED_MAX_DEPTH) {
                cut = true;
                break;
            }
            memcpy(scratch, l + a, b - a);
            /* A NUL would cut the name short; a CR is what the writer turns into a space. */
            for (size_t k = 0; k < b - a; k++) {
                if (scratch[k] == '\0')
                    scratch[k] = '?';
                else if (scratch[k] == '\r')
                    scratch[k] = ' ';
            }
            int64_t fi = intern_frame(p, scratch, b - a, depth == 0);
            if (fi < 0)
                return (int)fi;
            if (depth == 0 && p->frames[fi].kind != FRAME_THREAD)
                frames[depth++] = (uint32_t)anon;
            if (depth < FOLDED_MAX_DEPTH)
                frames[depth++] = (uint32_t)fi;
            else
                cut = true;
        }
        a = next;
    }
    if (depth == 0)
        return -1;
    if (cut && st)
        st->truncated++;
    /* Keep the whole profile under FOLDED_MAX_COUNT, so merged counts stay readable too. */
    if (count > FOLDED_MAX_COUNT - p->meta.samples)
        return -1;
    int64_t r = profile_add(p, frames, depth, count);
    return r < 0 ? (int)r : 1;
}

int folded_read(struct profile *p, const char *buf, size_t len, struct folded_stats *st)
{
    struct folded_stats local = {0};
    if (!st)
        st = &local;
    /* Stacks without a thread frame go under one unnamed thread, which writers never show. */
    int64_t anon = profile_frame(p, FRAME_THREAD, "", NULL, 0);
    if (anon < 0)
        return (int)anon;
    size_t maxline = 0;
    for (size_t i = 0, start = 0; i <= len; i++) {
        if (i == len || buf[i] == '\n') {
            if (i - start > maxline)
                maxline = i - start;
            start = i + 1;
        }
    }
    char *scratch = malloc(maxline + 1);
    uint32_t *frames = malloc(FOLDED_MAX_DEPTH * sizeof(*frames));
    int rc = 0;
    if (!scratch || !frames) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0, start = 0; i <= len; i++) {
        if (i < len && buf[i] != '\n')
            continue;
        int r = read_line(p, buf + start, i - start, scratch, frames, anon, st);
        if (r == -ENOMEM) {
            rc = r;
            goto out;
        }
        if (r == 1)
            st->lines++;
        else if (r < 0)
            st->bad_lines++;
        start = i + 1;
    }
out:
    free(scratch);
    free(frames);
    return rc;
}

int folded_read_file(struct profile *p, const char *path, struct folded_stats *st)
{
    int fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    int rc = 0;
    for (;;) {
        if (!buf) {
            rc = -ENOMEM;
            break;
        }
        if (len == cap) {
            char *nb = cap < ((size_t)1 << 34) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (rc == 0)
        rc = folded_read(p, buf, len, st);
    free(buf);
    return rc;
}
