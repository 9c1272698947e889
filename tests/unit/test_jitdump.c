/*
 * jitdump writer and reader: round trip of every record kind, the file-safety rules (no
 * symlink followed, no existing file reused, 0600, mapped r-x), fork (the child writes its own
 * file), threads, write errors, and a reader that survives truncated, lying and random input.
 * perf itself decodes the writer's output in tests/integration/perf_jit.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jitdump.h"
#include "jitdump_format.h"
#include "symbols/jitdump_read.h"

/* Trampoline-shaped bytes (x86-64 push/mov/call/pop/ret); the writer only copies them. */
static const uint8_t tramp[14] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8,
                                  0x48, 0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};
static uint8_t arena[4][64] __attribute__((aligned(16)));

static char dir[64];

static int setup(void **state)
{
    strcpy(dir, "/tmp/pyebpf-jd.XXXXXX");
    assert_non_null(mkdtemp(dir));
    for (int i = 0; i < 4; i++)
        memcpy(arena[i], tramp, sizeof(tramp));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void dump_path(char *out, size_t n, pid_t pid)
{
    snprintf(out, n, "%s/jit-%d.dump", dir, (int)pid);
}

static struct pyjit_region tramp_region(int i, const char *name)
{
    return (struct pyjit_region){.code = arena[i],
                                 .size = sizeof(tramp),
                                 .name = name,
                                 .unwind = PYJIT_UNWIND_TRAMPOLINE,
                                 .push_end = 1,
                                 .setup_end = 4,
                                 .pop_end = 13};
}

/* Whole file (also /proc files, whose size reads as 0), NUL-terminated. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 4096, n = 0, got;
    uint8_t *b = malloc(cap + 1);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            b = realloc(b, (cap *= 2) + 1);
    }
    fclose(f);
    b[n] = 0;
    *len = n;
    return b;
}

static int32_t rd_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static const struct pyjit_line lines3[] = {{0, 10}, {4, 11}, {12, 12}};

/* Writes regions A (trampoline + lines), B (frame pointer), C (caller CFI, empty) and closes. */
static void write_sample(size_t *stride_a)
{
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    struct pyjit_region a = tramp_region(0, "py::a:/x.py");
    a.filename = "/x.py";
    a.lines = lines3;
    a.nlines = 3;
    struct pyjit_region b = tramp_region(1, "py::b:/x.py");
    b.unwind = PYJIT_UNWIND_FP;
    struct pyjit_region c = tramp_region(2, "c");
    c.unwind = PYJIT_UNWIND_CFI;
    assert_int_equal(jitdump_code_load(jd, &a), 0);
    assert_int_equal(jitdump_code_load(jd, &b), 0);
    assert_int_equal(jitdump_code_load(jd, &c), 0);
    if (stride_a)
        *stride_a = jitdump_stride(jd, a.size);
    jitdump_close(jd);
}

static void test_roundtrip(void **state)
{
    size_t stride;
    char path[128];
    dump_path(path, sizeof(path), getpid());
    write_sample(&stride);

    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);

    struct jitdump_read_dump d;
    assert_int_equal(jitdump_read_file(path, &d), 0);
    assert_int_equal(d.version, 1);
    assert_int_equal(d.elf_mach, 62);
    assert_int_equal(d.pid, getpid());
    assert_true(d.closed);
    assert_int_equal(d.nunknown, 0);
    assert_int_equal(d.nregions, 3);
    const char *names[] = {"py::a:/x.py", "py::b:/x.py", "c"};
    for (size_t i = 0; i < 3; i++) {
        const struct jitdump_read_region *r = &d.regions[i];
        assert_string_equal(r->name, names[i]);
        assert_int_equal(r->addr, (uintptr_t)arena[i]);
        assert_int_equal(r->size, 16); /* 14 padded to 8 */
        assert_int_equal(r->index, i);
        assert_int_equal(r->pid, getpid());
        assert_true(r->timestamp >= d.timestamp);
        /* .eh_frame then the 20-byte .eh_frame_hdr, data at code + ALIGN8(size). */
        assert_non_null(r->eh_frame);
        assert_int_equal(r->eh_frame_hdr_size, 20);
        assert_ptr_equal(r->eh_frame_hdr, r->eh_frame + r->eh_frame_size);
        assert_int_equal(r->mapped_size, JITDUMP_ALIGN8(r->eh_frame_size + 20));
        assert_int_equal(rd_i32(r->eh_frame + 4), 0); /* first entry is the CIE */
        const uint8_t *h = r->eh_frame_hdr;
        assert_int_equal(h[0], 1);
        assert_int_equal(h[1], 0x1b);
        assert_int_equal(h[2], 0x03);
        assert_int_equal(h[3], 0x3b);
        uint64_t eh_addr = r->addr + r->size, hdr_addr = eh_addr + r->eh_frame_size;
        assert_int_equal(hdr_addr + 4 + (int64_t)rd_i32(h + 4), eh_addr);
        assert_int_equal(rd_i32(h + 8), 1);
        assert_int_equal(hdr_addr + (int64_t)rd_i32(h + 12), r->addr);
        assert_true(jitdump_read_find(&d, r->addr + 13) == r);
    }
    assert_true(stride >= 16 + d.regions[0].mapped_size);
    assert_null(jitdump_read_find(&d, (uintptr_t)arena[3]));

    /* Line table: one entry per row, the file named each time, a sentinel at the end. */
    const struct jitdump_read_region *a = &d.regions[0];
    assert_int_equal(a->nlines, 4);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(a->lines[i].addr, a->addr + lines3[i].offset);
        assert_int_equal(a->lines[i].line, lines3[i].line);
        assert_string_equal(a->lines[i].file, "/x.py");
    }
    assert_int_equal(a->lines[3].addr, a->addr + sizeof(tramp));
    assert_int_equal(a->lines[3].line, 12);
    assert_int_equal(d.regions[1].nlines, 0);
    jitdump_read_free(&d);

    /* The code bytes end each CODE_LOAD, padded with int3. */
    size_t len;
    uint8_t *raw = slurp(path, &len);
    uint8_t want[16];
    memcpy(want, tramp, 14);
    want[14] = want[15] = 0xcc;
    const uint8_t *at = memmem(raw, len, "py::b:/x.py", 12);
    assert_non_null(at);
    assert_memory_equal(at + 12, want, 16);
    free(raw);
}

static void test_mapped_exec(void **state)
{
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    size_t len;
    uint8_t *maps = slurp("/proc/self/maps", &len);
    const char *line = strstr((char *)maps, jitdump_path(jd));
    assert_non_null(line);
    while (line > (char *)maps && line[-1] != '\n')
        line--;
    assert_non_null(strstr(line, " r-xp ")); /* perf inject finds the dump by this mapping */
    free(maps);
    jitdump_close(jd);
}

static void test_refuses_symlink(void **state)
{
    char path[128], victim[128];
    dump_path(path, sizeof(path), getpid());
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    /* dangling link: the target must not be created */
    assert_int_equal(symlink(victim, path), 0);
    struct jitdump *jd = (void *)1;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), -EEXIST);
    assert_null(jd);
    assert_int_equal(access(victim, F_OK), -1);
    /* link to an existing file: untouched */
    FILE *f = fopen(victim, "w");
    fputs("keep", f);
    fclose(f);
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), -EEXIST);
    size_t len;
    uint8_t *b = slurp(victim, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(b, "keep", 4);
    free(b);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
}

static void test_refuses_existing(void **state)
{
    char path[128];
    dump_path(path, sizeof(path), getpid());
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), -EEXIST);
    size_t len;
    uint8_t *b = slurp(path, &len);
    assert_int_equal(len, 3);
    free(b);
}

static void test_fork_child_own_file(void **state)
{
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    struct pyjit_region a = tramp_region(0, "parent-a"), b = tramp_region(1, "child-b"),
                        c = tramp_region(2, "parent-c");
    assert_int_equal(jitdump_code_load(jd, &a), 0);

    pid_t kid = fork();
    if (kid == 0) {
        int ok = jitdump_code_load(jd, &b) == 0 && strstr(jitdump_path(jd), "jit-") &&
                 atoi(strrchr(jitdump_path(jd), '-') + 1) == getpid();
        jitdump_close(jd);
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(kid, &status, 0), kid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* A child that only closes must not end the parent's file. */
    pid_t idle = fork();
    if (idle == 0) {
        jitdump_close(jd);
        _exit(0);
    }
    assert_int_equal(waitpid(idle, &status, 0), idle);
    char idle_path[128];
    dump_path(idle_path, sizeof(idle_path), idle);
    assert_int_equal(access(idle_path, F_OK), -1);

    assert_int_equal(jitdump_code_load(jd, &c), 0);
    char ppath[128], cpath[128];
    dump_path(ppath, sizeof(ppath), getpid());
    dump_path(cpath, sizeof(cpath), kid);
    struct jitdump_read_dump d;
    assert_int_equal(jitdump_read_file(ppath, &d), 0);
    assert_false(d.closed);
    assert_int_equal(d.nregions, 2);
    assert_string_equal(d.regions[0].name, "parent-a");
    assert_string_equal(d.regions[1].name, "parent-c");
    jitdump_read_free(&d);
    jitdump_close(jd);

    assert_int_equal(jitdump_read_file(cpath, &d), 0);
    assert_int_equal(d.pid, kid);
    assert_true(d.closed);
    assert_int_equal(d.nregions, 1);
    assert_string_equal(d.regions[0].name, "child-b");
    assert_int_equal(d.regions[0].pid, kid);
    jitdump_read_free(&d);
}

struct thread_arg {
    struct jitdump *jd;
    int n, errors;
};

static void *loader(void *p)
{
    struct thread_arg *t = p;
    for (int i = 0; i < t->n; i++) {
        struct pyjit_region r = tramp_region(i & 3, "threaded");
        if (jitdump_code_load(t->jd, &r) != 0)
            t->errors++;
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_threads(void **state)
{
    enum { T = 4, N = 250 };
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    pthread_t th[T];
    struct thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (struct thread_arg){.jd = jd, .n = N};
        assert_int_equal(pthread_create(&th[i], NULL, loader, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].errors, 0);
    }
    char path[128];
    snprintf(path, sizeof(path), "%s", jitdump_path(jd));
    jitdump_close(jd);
    struct jitdump_read_dump d;
    assert_int_equal(jitdump_read_file(path, &d), 0);
    assert_int_equal(d.nregions, T * N);
    uint64_t *idx = malloc(sizeof(uint64_t) * T * N);
    for (size_t i = 0; i < d.nregions; i++)
        idx[i] = d.regions[i].index;
    qsort(idx, d.nregions, sizeof(*idx), cmp_u64);
    for (size_t i = 1; i < d.nregions; i++)
        assert_true(idx[i] != idx[i - 1]);
    free(idx);
    jitdump_read_free(&d);
}

/* A full disk (here: RLIMIT_FSIZE) switches the sink off with exactly one message. */
static void test_write_error(void **state)
{
    char errpath[128];
    snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
    pid_t kid = fork();
    if (kid == 0) {
        if (!freopen(errpath, "w", stderr))
            _exit(2);
        signal(SIGXFSZ, SIG_IGN);
        struct jitdump *jd;
        if (jitdump_open(&jd, dir, PYJIT_ARCH_X86_64) != 0)
            _exit(3);
        struct rlimit rl = {.rlim_cur = 400, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &rl);
        int first = 0, after = 0;
        for (int i = 0; i < 20; i++) {
            struct pyjit_region r = tramp_region(0, "x");
            int e = jitdump_code_load(jd, &r);
            if (e && !first)
                first = e;
            else if (e)
                after = e;
        }
        jitdump_close(jd);
        fflush(stderr);
        _exit(first == -EFBIG && after == -EBADF ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(kid, &status, 0), kid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    size_t len;
    uint8_t *b = slurp(errpath, &len);
    int nl = 0;
    for (size_t i = 0; i < len; i++)
        nl += b[i] == '\n';
    assert_int_equal(nl, 1);
    free(b);
}

/* ---- reader against damaged input ---------------------------------------------------- */

static uint8_t *sample_bytes(size_t *len)
{
    write_sample(NULL);
    char path[128];
    dump_path(path, sizeof(path), getpid());
    uint8_t *b = slurp(path, len);
    unlink(path);
    return b;
}

/* Offset of the n-th record (0-based) of a valid file. */
static size_t record_at(const uint8_t *b, int n)
{
    size_t off = sizeof(struct jitdump_file_header);
    for (int i = 0; i < n; i++) {
        struct jitdump_record_prefix p;
        memcpy(&p, b + off, sizeof(p));
        off += p.total_size;
    }
    return off;
}

static int parse_copy(const uint8_t *b, size_t len, struct jitdump_read_dump *d)
{
    uint8_t *c = malloc(len ? len : 1); /* exact size: ASan sees any overread */
    memcpy(c, b, len);
    int e = jitdump_read_parse(c, len, d);
    free(c);
    return e;
}

static void test_truncation_every_offset(void **state)
{
    size_t len;
    uint8_t *b = sample_bytes(&len);
    struct jitdump_read_dump d;
    assert_int_equal(parse_copy(b, len, &d), 0);
    size_t full = d.nregions;
    jitdump_read_free(&d);
    size_t prev = 0;
    for (size_t k = 0; k < len; k++) {
        int e = parse_copy(b, k, &d);
        if (e == 0)
            assert_int_equal(d.consumed, k); /* only whole records parse cleanly */
        else
            assert_int_equal(e, -ENODATA);
        assert_true(d.nregions <= full && d.nregions >= prev);
        assert_true(d.consumed <= k);
        prev = d.nregions;
        jitdump_read_free(&d);
    }
    free(b);
}

static void test_lying_sizes(void **state)
{
    size_t len;
    uint8_t *b = sample_bytes(&len);
    uint8_t *m = malloc(len);
    struct jitdump_read_dump d;
    uint32_t u32;
    uint64_t u64;

    /* header total_size beyond the file, and below the header's own size */
    memcpy(m, b, len);
    u32 = 0xffffffff;
    memcpy(m + 8, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -ENODATA);
    jitdump_read_free(&d);
    u32 = 39;
    memcpy(m + 8, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -EINVAL);
    jitdump_read_free(&d);

    /* record total_size smaller than a prefix (would never advance), or past the end */
    size_t r0 = record_at(b, 0);
    memcpy(m, b, len);
    u32 = 8;
    memcpy(m + r0 + 4, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
    assert_int_equal(d.nregions, 0);
    jitdump_read_free(&d);
    u32 = 0x7fffffff;
    memcpy(m + r0 + 4, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -ENODATA);
    jitdump_read_free(&d);

    /* DEBUG_INFO (record 0) claiming a huge number of entries */
    uint64_t counts[] = {1ull << 60, 0xffffffffull, 5};
    for (size_t i = 0; i < 3; i++) {
        memcpy(m, b, len);
        memcpy(m + r0 + 24, &counts[i], 8);
        assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
        assert_int_equal(d.nregions, 0);
        jitdump_read_free(&d);
    }

    /* UNWINDING_INFO (record 1): data larger than the record, header larger than the data */
    size_t r1 = record_at(b, 1);
    memcpy(m, b, len);
    u64 = 1ull << 40;
    memcpy(m + r1 + 16, &u64, 8);
    assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
    jitdump_read_free(&d);
    memcpy(m, b, len);
    memcpy(m + r1 + 24, &u64, 8);
    assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
    jitdump_read_free(&d);

    /* CODE_LOAD (record 2): code larger than what follows the name; name without NUL */
    size_t r2 = record_at(b, 2);
    memcpy(m, b, len);
    u64 = 1000;
    memcpy(m + r2 + 40, &u64, 8);
    assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
    jitdump_read_free(&d);
    memcpy(m, b, len);
    struct jitdump_record_prefix p;
    memcpy(&p, b + r2, sizeof(p));
    memset(m + r2 + 56, 'n', p.total_size - 56);
    assert_int_equal(parse_copy(m, len, &d), -EBADMSG);
    jitdump_read_free(&d);

    /* magic: byte-swapped file, foreign file, unknown version */
    memcpy(m, b, len);
    u32 = JITDUMP_MAGIC_SWAPPED;
    memcpy(m, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -EPROTONOSUPPORT);
    assert_non_null(strstr(jitdump_read_strerror(-EPROTONOSUPPORT), "byte"));
    jitdump_read_free(&d);
    memcpy(m,
           "\x7f"
           "ELF",
           4);
    assert_int_equal(parse_copy(m, len, &d), -EINVAL);
    jitdump_read_free(&d);
    memcpy(m, b, len);
    u32 = 2;
    memcpy(m + 4, &u32, 4);
    assert_int_equal(parse_copy(m, len, &d), -EINVAL);
    jitdump_read_free(&d);
    free(m);
    free(b);
}

static void test_unknown_record_skipped(void **state)
{
    size_t len;
    uint8_t *b = sample_bytes(&len);
    size_t r3 = record_at(b, 3); /* between region A and region B */
    uint8_t *m = malloc(len + 24);
    memcpy(m, b, r3);
    struct jitdump_record_prefix p = {.id = 99, .total_size = 24};
    memcpy(m + r3, &p, sizeof(p));
    memset(m + r3 + 16, 0xab, 8);
    memcpy(m + r3 + 24, b + r3, len - r3);
    struct jitdump_read_dump d;
    assert_int_equal(parse_copy(m, len + 24, &d), 0);
    assert_int_equal(d.nunknown, 1);
    assert_int_equal(d.nregions, 3);
    assert_true(d.closed);
    jitdump_read_free(&d);
    free(m);
    free(b);
}

static void test_random_damage(void **state)
{
    size_t len;
    uint8_t *b = sample_bytes(&len);
    uint8_t *m = malloc(len);
    srand(1234);
    for (int it = 0; it < 3000; it++) {
        memcpy(m, b, len);
        int flips = 1 + rand() % 8;
        for (int f = 0; f < flips; f++)
            m[(size_t)rand() % len] = (uint8_t)rand();
        struct jitdump_read_dump d;
        int e = parse_copy(m, len, &d);
        assert_true(e == 0 || e == -ENODATA || e == -EBADMSG || e == -EINVAL || e == -EPROTONOSUPPORT);
        assert_true(d.consumed <= len);
        jitdump_read_free(&d);
    }
    free(m);
    free(b);
}

static void test_stride_and_errors(void **state)
{
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, NULL, 0), -EINVAL); /* unknown architecture */
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    size_t s1 = jitdump_stride(jd, 1), s8 = jitdump_stride(jd, 8), s9 = jitdump_stride(jd, 9);
    assert_int_equal(s1, s8);
    assert_int_equal(s9, s8 + 8);
    assert_int_equal(s8 % 8, 0);
    struct pyjit_region bad = tramp_region(0, "bad");
    bad.setup_end = 100; /* beyond the code: the encoder refuses it, nothing is written */
    assert_int_equal(jitdump_code_load(jd, &bad), -EINVAL);
    static const struct pyjit_line unordered[] = {{4, 1}, {2, 2}}, outside[] = {{14, 1}};
    bad = tramp_region(0, "lines");
    bad.lines = unordered;
    bad.nlines = 2;
    assert_int_equal(jitdump_code_load(jd, &bad), -EINVAL);
    bad.lines = outside;
    bad.nlines = 1;
    assert_int_equal(jitdump_code_load(jd, &bad), -EINVAL);
    bad = tramp_region(0, "empty");
    bad.size = 0;
    assert_int_equal(jitdump_code_load(jd, &bad), -EINVAL);
    char path[128];
    snprintf(path, sizeof(path), "%s", jitdump_path(jd));
    jitdump_close(jd);
    struct jitdump_read_dump d;
    assert_int_equal(jitdump_read_file(path, &d), 0);
    assert_int_equal(d.nregions, 0);
    assert_true(d.closed);
    jitdump_read_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_exec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_child_own_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_every_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lying_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_record_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stride_and_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
