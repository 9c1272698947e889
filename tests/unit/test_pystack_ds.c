/*
 * The data-stack window and gap reads of the frame reader (user/python/pydstack.[ch], user/python/pystack.c).
 *
 * First the arithmetic on hand-made words (which chunk, how far, what is read), then the reader
 * against real interpreters (tests/py/nested.py varied: random call trees that change at every
 * sample): one call per read, frames only ever of the functions on the stack, correctly nested;
 * and against forged data stacks written into a scratch buffer of the target (a thread that moved
 * on, a stack grown past the window, words that make no sense, a chunk that is not mapped), and
 * which code-object headers may fill a new entry (user/python/pycode.c).
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/remote.h"
#include "profile/profile.h"
#include "pytargets.h"
#include "python/pycode.h"
#include "python/pydstack.h"
#include "python/pystack.h"

/* -- Words, windows, gaps ------------------------------------------------------------------- */

#define CH 0x7f0000010000ull /* a chunk of 16 KiB */

static struct pydstack_words words(uint64_t chunk, uint64_t top, uint64_t limit)
{
    return (struct pydstack_words){chunk, top, limit};
}

static void valid_words(void **state)
{
    (void)state;
    struct pydstack_words w = words(CH, CH + 2688, CH + 16384);
    assert_true(pydstack_valid(&w));
    w = words(CH, CH + PYDSTACK_DATA, CH + 16384); /* empty chunk */
    assert_true(pydstack_valid(&w));
    w = words(CH, CH + 16384, CH + 16384); /* full */
    assert_true(pydstack_valid(&w));
    const struct pydstack_words bad[] = {
        words(0, 2688, 16384),                             /* no chunk */
        words(CH + 4, CH + 2688, CH + 16384),              /* misaligned chunk */
        words(CH, CH + 2689, CH + 16384),                  /* misaligned top */
        words(CH, CH + 16, CH + 16384),                    /* top inside the header */
        words(CH, CH + 16392, CH + 16384),                 /* top past the limit */
        words(CH, CH + 2688, CH + PYDSTACK_CHUNK_MAX + 8), /* absurd size */
        words(CH, CH - 8, CH + 16384),                     /* top below the chunk */
        words(~0ull - 4095, ~0ull - 2047, ~0ull),          /* would wrap */
        words(1ull << 56, (1ull << 56) + 64, (1ull << 56) + 4096),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        print_message("bad words %zu\n", i);
        assert_false(pydstack_valid(&bad[i]));
    }
}

static void window_follows_top(void **state)
{
    (void)state;
    struct pydstack_hist h = {0};
    uint64_t lo, hi;

    assert_false(pydstack_window(&h, &lo, &hi)); /* nothing seen yet */
    struct pydstack_words w = words(CH, CH + 2688, CH + 16384);
    pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(lo, CH + PYDSTACK_DATA);
    assert_int_equal(hi, CH + 2688 + PYDSTACK_SLACK);

    /* One deep sample: the window stays that high while it is among the recent tops ... */
    w.top = CH + 6000;
    pydstack_note(&h, &w);
    w.top = CH + 1000;
    for (unsigned i = 0; i < PYDSTACK_EPOCH; i++)
        pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(hi, CH + 6000 + PYDSTACK_SLACK);
    /* ... and comes down once two epochs passed without it. */
    for (unsigned i = 0; i < PYDSTACK_EPOCH; i++)
        pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(hi, CH + 1000 + PYDSTACK_SLACK);

    /* Never past the limit. */
    w.top = CH + 16384 - 8;
    pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(hi, CH + 16384);
    assert_int_equal(lo, CH + PYDSTACK_DATA);

    /* Another chunk: the high-water mark of the old one does not carry over. */
    const uint64_t ch2 = CH + (1 << 20);
    w = words(ch2, ch2 + 200, ch2 + 16384);
    pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(lo, ch2 + PYDSTACK_DATA);
    assert_int_equal(hi, ch2 + 200 + PYDSTACK_SLACK);

    /* Words that make no sense: no window at all. */
    w = words(ch2, ch2 + 8, ch2 + 16384);
    pydstack_note(&h, &w);
    assert_false(pydstack_window(&h, &lo, &hi));
    pydstack_note(&h, NULL);
    assert_false(pydstack_window(&h, &lo, &hi));
}

static void window_capped(void **state)
{
    (void)state;
    struct pydstack_hist h = {0};
    uint64_t lo, hi;
    /* A chunk grown for a huge frame: at most PYDSTACK_WINDOW_MAX bytes, ending above the top. */
    struct pydstack_words w = words(CH, CH + (1 << 20), CH + (2 << 20));
    pydstack_note(&h, &w);
    assert_true(pydstack_window(&h, &lo, &hi));
    assert_int_equal(hi, CH + (1 << 20) + PYDSTACK_SLACK);
    assert_int_equal(hi - lo, PYDSTACK_WINDOW_MAX);
    assert_int_equal(lo & 7, 0);
}

static void gap_ranges(void **state)
{
    (void)state;
    const struct pydstack_words w = words(CH, CH + 8192, CH + 16384);
    uint64_t lo, hi;

    /* Nothing held: from the chunk's start up to the end of the frame. */
    assert_true(pydstack_gap(&w, CH + 5000, 72, 0, 0, &lo, &hi));
    assert_int_equal(lo, CH + PYDSTACK_DATA);
    assert_int_equal(hi, CH + 5072);
    /* The window holds the bottom: only the part above it, one frame's bytes overlapping. */
    assert_true(pydstack_gap(&w, CH + 5000, 72, CH + PYDSTACK_DATA, CH + 3000, &lo, &hi));
    assert_int_equal(lo, (CH + 3000 - 72) & ~7ull);
    assert_int_equal(hi, CH + 5072);
    /* A held range that does not reach the bottom, or lies elsewhere, changes nothing. */
    assert_true(pydstack_gap(&w, CH + 5000, 72, CH + 1000, CH + 3000, &lo, &hi));
    assert_int_equal(lo, CH + PYDSTACK_DATA);
    assert_true(pydstack_gap(&w, CH + 5000, 72, CH + (1 << 20), CH + (1 << 20) + 4096, &lo, &hi));
    assert_int_equal(lo, CH + PYDSTACK_DATA);
    /* Far up a big chunk: at most PYDSTACK_WINDOW_MAX bytes. */
    const struct pydstack_words big = words(CH, CH + (1 << 20), CH + (1 << 21));
    assert_true(pydstack_gap(&big, CH + 900000, 72, 0, 0, &lo, &hi));
    assert_int_equal(hi, CH + 900072);
    assert_int_equal(hi - lo, PYDSTACK_WINDOW_MAX);
    /* Not in the chunk, straddling its end, or no usable words: no gap read. */
    assert_false(pydstack_gap(&w, CH - 4096, 72, 0, 0, &lo, &hi));
    assert_false(pydstack_gap(&w, CH + 8, 72, 0, 0, &lo, &hi));
    assert_false(pydstack_gap(&w, CH + 16384 - 40, 72, 0, 0, &lo, &hi));
    assert_false(pydstack_gap(&w, CH + 16384, 72, 0, 0, &lo, &hi));
    const struct pydstack_words bad = words(CH, CH + 16, CH + 16384);
    assert_false(pydstack_gap(&bad, CH + 5000, 72, 0, 0, &lo, &hi));
    assert_false(pydstack_gap(&w, CH + 5000, 0, 0, 0, &lo, &hi));
}

/* -- Real interpreters ------------------------------------------------------------------------ */

struct target {
    pid_t pid;
    int fd;
    uint64_t scratch, scratch_len;
};
static struct target *current;

static bool read_line(int fd, char *line, size_t cap)
{
    size_t n = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        char c;
        if (poll(&p, 1, 30000) <= 0 || read(fd, &c, 1) != 1)
            return false;
        if (c == '\n') {
            line[n] = 0;
            return true;
        }
        if (n + 1 < cap)
            line[n++] = c;
    }
}

/* Starts `py tests/py/nested.py mode` and waits for its READY. */
static struct target *spawn(const char *py, const char *mode)
{
    int p[2];
    struct target *t = calloc(1, sizeof(*t));
    char line[4096];
    assert_non_null(t);
    assert_int_equal(pipe(p), 0);
    t->pid = fork();
    assert_true(t->pid >= 0);
    if (t->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        close(p[0]);
        execl(py, py, "tests/py/nested.py", mode, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    t->fd = p[0];
    current = t;
    bool ready = false;
    while (!ready && read_line(t->fd, line, sizeof(line))) {
        ready = strcmp(line, "READY") == 0;
        if (strncmp(line, "BUFFER ", 7) == 0)
            sscanf(line + 7, "%lu %lu", &t->scratch, &t->scratch_len);
    }
    assert_true(ready);
    usleep(50000);
    return t;
}

static int teardown(void **state)
{
    (void)state;
    if (current) {
        kill(current->pid, SIGKILL);
        waitpid(current->pid, NULL, 0);
        close(current->fd);
        free(current);
        current = NULL;
    }
    return 0;
}

static bool have(void **state)
{
    if (access(*state, X_OK) == 0)
        return true;
    fprintf(stderr, "# SKIP %s absent (make test-pythons provides build/pythons/bin/*)\n",
            (const char *)*state);
    skip();
    return false;
}

static struct pystack *open_reader(pid_t pid, struct profile *prof, bool exact)
{
    struct pystack *ps = NULL;
    struct pystack_opts o = {.exact_reads = exact};
    char err[512] = "";
    assert_int_equal(profile_init(prof), 0);
    int rc = pystack_open(&ps, pid, prof, &o, err, sizeof(err));
    if (rc)
        print_error("pystack_open: %d %s\n", rc, err);
    assert_int_equal(rc, 0);
    return ps;
}

/* Lines [first, last] of each function of tests/py/nested.py's varied mode, from the file. */
struct fn_lines {
    const char *name;
    unsigned first, last;
};

static void find_lines(struct fn_lines *fl, size_t n)
{
    FILE *f = fopen("tests/py/nested.py", "r");
    char line[512], prev_name[64] = "";
    unsigned no = 0;
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fl[i].first = fl[i].last = 0;
    while (fgets(line, sizeof(line), f)) {
        no++;
        if (strncmp(line, "def ", 4) != 0)
            continue;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(prev_name, fl[i].name))
                fl[i].last = no - 1;
        sscanf(line + 4, "%63[^(]", prev_name);
        for (size_t i = 0; i < n; i++)
            if (!strcmp(prev_name, fl[i].name))
                fl[i].first = no;
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        assert_true(fl[i].first && fl[i].last > fl[i].first);
}

/* Call trees that change at almost every read: one call per read, and every frame one of the
 * functions really on that stack, at one of its lines, nested as the program nests them. */
static void varied(void **state)
{
    if (!have(state))
        return;
    struct fn_lines fl[] = {{"vwork", 0, 0}, {"vleft", 0, 0}, {"vright", 0, 0}, {"varied", 0, 0}};
    find_lines(fl, 4);
    struct target *t = spawn(*state, "varied");
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, false);
    static struct pystack_frame fr[256];
    const int reads = 2000, warm = 100;
    unsigned cut = 0, unreadable = 0, depth = 0;
    uint64_t calls = 0;

    for (int i = 0; i < reads; i++) {
        unsigned flags = 0;
        uint64_t c0 = pystack_remote_stats(ps)->calls;
        int n = pystack_read(ps, t->pid, fr, 256, &flags);
        assert_true(n >= 0);
        if (i >= warm)
            calls += pystack_remote_stats(ps)->calls - c0;
        cut += (flags & PYSTACK_BROKEN) != 0;
        bool bare = false;
        for (int k = 0; k < n; k++) {
            const struct frame *f = &prof.frames[fr[k].frame];
            if (!f->file && !strcmp(f->name, PYSTACK_REFUSED)) {
                bare = true;
                continue;
            }
            size_t w = 0;
            while (w < 4 && strcmp(f->name, fl[w].name))
                w++;
            if (w == 4) { /* main and <module> close every whole stack */
                bool root =
                    (!strcmp(f->name, "main") && k == n - 2) || (!strcmp(f->name, "<module>") && k == n - 1);
                if (!root)
                    print_error("read %d frame %d of %d: %s:%u\n", i, k, n, f->name, f->line);
                assert_true(root);
                continue;
            }
            if (f->line < fl[w].first || f->line > fl[w].last)
                print_error("read %d frame %d: %s:%u outside %u-%u\n", i, k, f->name, f->line, fl[w].first,
                            fl[w].last);
            assert_true(f->line >= fl[w].first && f->line <= fl[w].last);
            /* vleft/vright call vwork; vwork is called by vleft, vright or varied. */
            if (k + 1 < n && !bare) {
                const char *caller = prof.frames[fr[k + 1].frame].name;
                if (w == 0)
                    assert_true(!strcmp(caller, "vleft") || !strcmp(caller, "vright") ||
                                !strcmp(caller, "varied") || !strcmp(caller, PYSTACK_REFUSED));
                else if (w < 3)
                    assert_true(!strcmp(caller, "vwork") || !strcmp(caller, PYSTACK_REFUSED));
            }
        }
        unreadable += bare;
        depth += (unsigned)n;
        usleep(100);
    }
    struct pystack_stats st;
    pystack_get_stats(ps, &st);
    double cpr = (double)calls / (reads - warm);
    print_message("%d reads: %.3f calls/read, %.1f frames/read, %u cut, %u with <unreadable>; window frames "
                  "%lu, gap reads %lu, torn %lu\n",
                  reads, cpr, (double)depth / reads, cut, unreadable, (unsigned long)st.ds_window_frames,
                  (unsigned long)st.ds_gap_reads, (unsigned long)st.ds_torn);
    assert_true(cpr <= 1.15);
    assert_true(st.ds_window_frames > st.frames / 2);
    assert_true(cut + unreadable < (unsigned)reads * 15 / 100);
    pystack_close(ps);
    profile_free(&prof);

    /* exact_reads: one iovec per predicted frame, no window. */
    ps = open_reader(t->pid, &prof, true);
    for (int i = 0; i < 50; i++)
        assert_true(pystack_read(ps, t->pid, fr, 256, NULL) >= 0);
    pystack_get_stats(ps, &st);
    assert_int_equal(st.ds_window_frames + st.ds_gap_reads, 0);
    pystack_close(ps);
    profile_free(&prof);
}

/* -- Forged data stacks ------------------------------------------------------------------------ */

#define FAKE_TID 0x3fffe000
#define NCODES   8

struct forge {
    pid_t pid;
    const struct pyrt *rt;
    const struct pyrt_layout *L;
    uint64_t ts, cf, chunk, code[NCODES];
};

static void set_words(const struct forge *g, uint64_t chunk, uint64_t top, uint64_t limit)
{
    w64(g->pid, g->ts + g->L->ts_datastack, chunk);
    w64(g->pid, g->ts + g->L->ts_datastack + 8, top);
    w64(g->pid, g->ts + g->L->ts_datastack + 16, limit);
}

static void set_leaf(const struct forge *g, uint64_t frame)
{
    if (g->L->ts_cframe)
        w64(g->pid, g->cf + g->L->cf_current_frame, frame);
    else
        w64(g->pid, g->ts + g->L->ts_current_frame, frame);
}

/* A frame of code object `c` at `at` whose caller is `previous`; 64 bytes of locals after it
 * hold pointers to code object 7 (what a dead frame's slots would show when read as a frame). */
static void frame(const struct forge *g, uint64_t at, int c, uint64_t previous)
{
    const struct pyrt_layout *L = g->L;
    uint8_t owner = 0;
    w64(g->pid, at + L->f_code, g->code[c]);
    w64(g->pid, at + L->f_previous, previous);
    w64(g->pid, at + L->f_instr, g->code[c] + L->co_code_adaptive);
    wmem(g->pid, at + L->f_owner, &owner, 1);
    if (L->f_is_entry >= 0)
        wmem(g->pid, at + (uint64_t)L->f_is_entry, &owner, 1);
}

/* Reads FAKE_TID; the frames' names, leaf first, must be "ds<k>" for k in want[0..n). */
static void expect(struct pystack *ps, struct profile *prof, const int *want, int n, uint64_t *calls)
{
    static struct pystack_frame fr[256];
    unsigned flags = 0;
    uint64_t c0 = pystack_remote_stats(ps)->calls;
    int got = pystack_read(ps, FAKE_TID, fr, 256, &flags);
    if (calls)
        *calls = pystack_remote_stats(ps)->calls - c0;
    if (got != n)
        print_error("read %d frames, expected %d (flags %x)\n", got, n, flags);
    assert_int_equal(got, n);
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof(name), "ds%d", want[k]);
        assert_string_equal(prof->frames[fr[k].frame].name, name);
    }
    assert_false(flags & PYSTACK_BROKEN);
}

static void forged_stack(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "forge");
    assert_true(t->scratch && t->scratch_len >= (1 << 20));
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, false);
    const struct pyrt *rt = pystack_runtime(ps);
    const struct pyrt_layout *L = &rt->L;
    const pid_t pid = t->pid;
    const uint64_t B = (t->scratch + 4095) & ~4095ull;
    const unsigned ascii = (1u << 2) | (1u << 5) | (1u << 6);
    struct pystack_stats st0, st;
    assert_true(L->ts_datastack != 0 && rt->code_type != 0);

    /* Code objects ds0..ds7 with names, an empty line table. */
    struct forge g = {.pid = pid, .rt = rt, .L = L, .ts = B, .cf = B + 3072, .chunk = B + 65536};
    uint64_t empty = B + 4096;
    w64(pid, empty + L->var_ob_size, 0);
    for (int c = 0; c < NCODES; c++) {
        uint64_t str = B + 8192 + (uint64_t)c * 128, code = B + 16384 + (uint64_t)c * 512;
        char name[8];
        uint32_t st32 = ascii, first = 1;
        snprintf(name, sizeof(name), "ds%d", c);
        w64(pid, str + L->str_length, strlen(name));
        wmem(pid, str + L->str_state, &st32, 4);
        wmem(pid, str + L->str_ascii_data, name, strlen(name));
        w64(pid, code + L->ob_type - 8, 1); /* a live object's reference count */
        w64(pid, code + L->ob_type, rt->code_type);
        w64(pid, code + L->co_qualname, str);
        w64(pid, code + L->co_name, str);
        w64(pid, code + L->co_filename, str);
        w64(pid, code + L->co_linetable, empty);
        wmem(pid, code + L->co_firstlineno, &first, 4);
        g.code[c] = code;
    }
    /* The chunk: header, then frames 128 bytes apart from chunk + 32. */
    const uint64_t C = g.chunk, F0 = C + 32;
    w64(pid, C, 0);
    w64(pid, C + 8, 16384);
    w64(pid, C + 16, 0);
    for (int k = 0; k < 6; k++)
        frame(&g, F0 + (uint64_t)k * 128, k, k ? F0 + (uint64_t)(k - 1) * 128 : 0);
    set_words(&g, C, F0 + 6 * 128, C + 16384);
    /* The thread state, linked after the last real one. */
    uint64_t interp = rd64(pid, rt->runtime_addr + L->rt_interpreters_head);
    uint64_t last = rd64(pid, interp + L->is_threads_head);
    while (rd64(pid, last + L->ts_next))
        last = rd64(pid, last + L->ts_next);
    w64(pid, g.ts + L->ts_next, 0);
    w64(pid, g.ts + L->ts_interp, interp);
    w64(pid, g.ts + L->ts_native_thread_id, FAKE_TID);
    if (L->ts_cframe)
        w64(pid, g.ts + L->ts_cframe, g.cf);
    set_leaf(&g, F0 + 5 * 128);
    w64(pid, last + L->ts_next, g.ts);

    /* Cold, then steady: the whole chain in the one batched call, from the window. */
    uint64_t calls;
    expect(ps, &prof, (int[]){5, 4, 3, 2, 1, 0}, 6, &calls);
    print_message("cold read: %lu calls\n", (unsigned long)calls);
    pystack_get_stats(ps, &st0);
    expect(ps, &prof, (int[]){5, 4, 3, 2, 1, 0}, 6, &calls);
    pystack_get_stats(ps, &st);
    assert_int_equal(calls, 1);
    assert_int_equal(st.ds_window_frames - st0.ds_window_frames, 6);

    /* The thread moved on: back in ds2, it called ds6 then ds7 (bigger frames over the old ones;
     * the old leaf's bytes stay above the new top). The new frames come from the window. */
    uint64_t f3 = F0 + 3 * 128, f4 = f3 + 200;
    frame(&g, f3, 6, F0 + 2 * 128);
    frame(&g, f4, 7, f3);
    set_words(&g, C, f4 + 160, C + 16384);
    set_leaf(&g, f4);
    st0 = st;
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);
    pystack_get_stats(ps, &st);
    /* New code objects (ds6, ds7): the stack is read once more with their headers. */
    assert_int_equal(st.code_rereads - st0.code_rereads, 1);
    assert_int_equal(st.ds_window_frames - st0.ds_window_frames, 2 * 5);
    assert_int_equal(st.pred_misses, st0.pred_misses);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);
    assert_int_equal(calls, 1);

    /* Grown far past the window: the frames above it in one gap read. */
    int want[64] = {0};
    uint64_t at = f4;
    for (int k = 0; k < 40; k++) {
        frame(&g, at + 128, k % NCODES, at);
        at += 128;
    }
    for (int k = 0; k < 40; k++)
        want[k] = (39 - k) % NCODES;
    memcpy(want + 40, (int[]){7, 6, 2, 1, 0}, 5 * sizeof(int));
    set_words(&g, C, at + 128, C + 16384);
    set_leaf(&g, at);
    st0 = st;
    expect(ps, &prof, want, 45, &calls);
    pystack_get_stats(ps, &st);
    print_message("grown by 40 frames: %lu calls, %lu gap reads\n", (unsigned long)calls,
                  (unsigned long)(st.ds_gap_reads - st0.ds_gap_reads));
    assert_int_equal(st.ds_gap_reads - st0.ds_gap_reads, 1);
    assert_int_equal(calls, 2);
    expect(ps, &prof, want, 45, &calls);
    assert_int_equal(calls, 1);

    /* Top frames at or above datastack_top had been popped when it was read: the thread may have
     * returned from their callers too and pushed anew in those slots, so the chain is of two
     * instants. Read again; still so, the frames above top are left out and the callers
     * under them are kept, marked. */
    static struct pystack_frame fr[256];
    unsigned flags;
    set_words(&g, C, f4 + 160, C + 16384);
    st0 = st;
    int n = pystack_read(ps, FAKE_TID, fr, 256, &flags);
    pystack_get_stats(ps, &st);
    assert_true(flags & PYSTACK_BROKEN);
    assert_int_equal(n, 5);
    for (int k = 0; k < 5; k++) {
        char name[16];
        snprintf(name, sizeof(name), "ds%d", (int[]){7, 6, 2, 1, 0}[k]);
        assert_string_equal(prof.frames[fr[k].frame].name, name);
    }
    assert_int_equal(st.ds_torn - st0.ds_torn, st.ds_torn_retries - st0.ds_torn_retries + 1);
    assert_true(st.ds_torn_retries - st0.ds_torn_retries >= 1);
    assert_int_equal(st.ds_torn_dropped - st0.ds_torn_dropped, 40);
    /* The leaf a thread state names is still live while the words say so. */
    set_leaf(&g, f4);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);
    pystack_get_stats(ps, &st);
    /* A leaf whose code reference is cleared had been popped when its bytes were read (3.14+
     * clear it as they pop a frame, before the thread state names the caller), and so may its
     * caller: read again; still so, the chain starts at the first frame not popped, marked (it
     * used to end at the leaf: no frame, no sample). Once the thread state names that frame,
     * its chain is of one instant. */
    w64(pid, f4 + L->f_code, 0);
    w64(pid, f3 + L->f_code, 0);
    st0 = st;
    n = pystack_read(ps, FAKE_TID, fr, 256, &flags);
    pystack_get_stats(ps, &st);
    assert_true(flags & PYSTACK_BROKEN);
    assert_int_equal(n, 3);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof(name), "ds%d", 2 - k);
        assert_string_equal(prof.frames[fr[k].frame].name, name);
    }
    assert_true(st.ds_torn_retries - st0.ds_torn_retries >= 1);
    assert_int_equal(st.ds_popped_leaves - st0.ds_popped_leaves,
                     2 * (st.ds_torn_retries - st0.ds_torn_retries + 1));
    set_leaf(&g, F0 + 2 * 128);
    expect(ps, &prof, (int[]){2, 1, 0}, 3, NULL);
    frame(&g, f3, 6, F0 + 2 * 128);
    frame(&g, f4, 7, f3);
    set_leaf(&g, f4);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);
    pystack_get_stats(ps, &st);
    /* A caller above its callee in the chunk: the bytes at f3 were written after its frame was
     * popped (no live frame links up), so they and what they point to are of another instant:
     * the chain ends below f3's callee, cut and counted as torn, nothing of f3 or above reported. */
    frame(&g, f3, 6, f4 + 400);
    frame(&g, f4 + 400, 5, 0);
    st0 = st;
    n = pystack_read(ps, FAKE_TID, fr, 256, &flags);
    assert_true(n == 1 && (flags & PYSTACK_BROKEN));
    pystack_get_stats(ps, &st);
    assert_int_equal(st.ds_torn - st0.ds_torn, 1);
    assert_string_equal(prof.frames[fr[0].frame].name, "ds7");
    frame(&g, f3, 6, F0 + 2 * 128);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);

    /* A frame not owned by the C stack that runs the eval loop's shim code (3.12: an entry
     * frame caught while being set up, or its bytes read after the loop returned): no frame of
     * the stack, named <unreadable>, never after the shim. */
    uint64_t tq = B + 8192 + 8 * 128, tf = B + 8192 + 9 * 128, tc = B + 16384 + 8 * 512;
    const char *tn[2] = {"<interpreter trampoline>", "<shim>"};
    for (int k = 0; k < 2; k++) {
        uint64_t str = k ? tf : tq;
        uint32_t st32 = ascii;
        w64(pid, str + L->str_length, strlen(tn[k]));
        wmem(pid, str + L->str_state, &st32, 4);
        wmem(pid, str + L->str_ascii_data, tn[k], strlen(tn[k]));
    }
    w64(pid, tc + L->ob_type - 8, 1);
    w64(pid, tc + L->ob_type, rt->code_type);
    w64(pid, tc + L->co_qualname, tq);
    w64(pid, tc + L->co_name, tq);
    w64(pid, tc + L->co_filename, tf);
    w64(pid, tc + L->co_linetable, empty);
    w64(pid, f3 + L->f_code, tc);
    for (int k = 0; k < 2; k++) /* new code: read once more with its header */
        n = pystack_read(ps, FAKE_TID, fr, 256, &flags);
    assert_int_equal(n, 5);
    assert_string_equal(prof.frames[fr[1].frame].name, L->minor >= 12 ? "<unreadable>" : tn[0]);
    frame(&g, f3, 6, F0 + 2 * 128);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);

    /* Words that make no sense: no window, no gap read; the chain is still read right. */
    set_words(&g, C, C + 8, C + 16384);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, NULL);
    pystack_get_stats(ps, &st0);
    for (int k = 0; k < 3; k++)
        expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, NULL);
    pystack_get_stats(ps, &st);
    assert_int_equal(st.ds_window_frames, st0.ds_window_frames);
    assert_int_equal(st.ds_torn, st0.ds_torn);

    /* A chunk that is not mapped (the frames are elsewhere): the window fails, frames are still
     * read, in at most one more call; two the first time the window fails (its second copy, the
     * leaf's witness, fails too, and is left out until a window reads again). */
    set_words(&g, 1ull << 32, (1ull << 32) + 4096, (1ull << 32) + 16384);
    expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, NULL);
    for (int k = 0; k < 4; k++) {
        expect(ps, &prof, (int[]){7, 6, 2, 1, 0}, 5, &calls);
        assert_true(calls <= (k == 0 ? 3u : 2u));
    }

    /* Code objects' headers read after the frames fill a new entry only when witnessed (every
     * frame running the object still live after the read: the words read last in the batch);
     * unwitnessed they still confirm an entry already filled. */
    {
        struct remote r2;
        struct pystack_stats pst = {0};
        struct pycode *c;
        uint8_t hdr[1024], qual[PYCODE_QUAL_SIZE];
        const uint64_t code = g.code[3];
        struct pystack_raw raw = {.code = code, .instr = code + L->co_code_adaptive};
        struct pystack_frame out;
        /* A new entry's first header comes without qualname words (their address is read from
         * it); then the words, unwitnessed: no fill; witnessed: filled; unwitnessed: confirmed. */
        const char *named[4] = {"<unreadable>", "<unreadable>", "ds3", "ds3"};
        const bool witnessed[4] = {true, false, true, false};
        remote_init(&r2, pid);
        assert_int_equal(pycode_new(&c, rt, &r2, &prof, &pst), 0);
        assert_true(L->co_hdr_size <= sizeof(hdr));
        assert_int_equal(remote_read(&r2, code + L->co_hdr_start, hdr, L->co_hdr_size), 0);
        assert_int_equal(
            remote_read(&r2, rd64(pid, code + L->co_qualname) + L->str_length, qual, sizeof(qual)), 0);
        for (int k = 0; k < 4; k++) {
            pycode_begin(c);
            pycode_header(c, code, hdr, k ? qual : NULL, witnessed[k]);
            assert_int_equal(pycode_symbolize(c, &raw, 1, &out, 1, PYCODE_COMPLETE), 1);
            assert_string_equal(prof.frames[out.frame].name, named[k]);
        }
        pycode_free(c);
    }

    /* The real thread still reads fine, and the target still runs. */
    w64(pid, last + L->ts_next, 0);
    assert_true(pystack_read(ps, t->pid, fr, 256, &flags) > 0);
    assert_int_equal(kill(t->pid, 0), 0);
    pystack_get_stats(ps, &st);
    pystack_stats(ps, stats_file(stderr));
    pystack_close(ps);
    profile_free(&prof);
}

int main(void)
{
    static struct CMUnitTest tests[4 + 2 * NPY];
    static char names[2 * NPY][128];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(valid_words);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(window_follows_top);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(window_capped);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(gap_ranges);
    for (size_t i = 0; i < NPY; i++) {
        snprintf(names[2 * i], sizeof(names[0]), "changing call trees, ~1 call per read: %s", pythons[i]);
        tests[n++] = (struct CMUnitTest){names[2 * i], varied, NULL, teardown, (void *)pythons[i]};
        snprintf(names[2 * i + 1], sizeof(names[0]), "forged data stack: %s", pythons[i]);
        tests[n++] = (struct CMUnitTest){names[2 * i + 1], forged_stack, NULL, teardown, (void *)pythons[i]};
    }
    return _cmocka_run_group_tests("pystack_ds", tests, n, NULL, NULL);
}
