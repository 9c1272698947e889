/* Unit tests for the collector's caches: fcache.c and scache.c on their own, the stack cache of
 * profile_add, and the sample and frame caches inside collect_sample on records of this very
 * process (and of a forked child), including every way an address's name can change: JIT regions
 * published late or republished at the same address (a reused code slot), mappings replaced,
 * another process. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/collect.h"
#include "collect/fcache.h"
#include "collect/scache.h"

/* -- fcache on its own ----------------------------------------------------------------- */

static void test_fcache_hit_miss_and_kinds(void **state)
{
    struct fcache fc = {0};
    uint32_t frame = 0;
    unsigned flags = 9;
    uint64_t a = 0x401000;

    (void)state;
    assert_false(fcache_get(&fc, 1, a, false, &frame, &flags));
    assert_int_equal(fcache_put(&fc, 1, a, false, 7, 0), 0);
    assert_int_equal(fcache_put(&fc, 1, a, true, 8, FCACHE_UNKNOWN), 0);
    assert_int_equal(fc.bits, FCACHE_MIN_BITS);
    assert_true(fcache_get(&fc, 1, a, false, &frame, &flags));
    assert_int_equal(frame, 7);
    assert_int_equal(flags, 0);
    /* the same address as a leaf is another entry (a return address is looked up at - 1) */
    assert_true(fcache_get(&fc, 1, a, true, &frame, &flags));
    assert_int_equal(frame, 8);
    assert_int_equal(flags, FCACHE_UNKNOWN);
    assert_false(fcache_get(&fc, 1, a + 1, false, &frame, &flags));
    assert_int_equal(fc.hits, 2);
    assert_int_equal(fc.misses, 2);
    fcache_free(&fc);
    assert_null(fc.slots);
    assert_int_equal(fc.hits, 0);
}

static void test_fcache_generation_empties_it(void **state)
{
    struct fcache fc = {0};
    uint32_t frame;
    unsigned flags, hits = 0;

    (void)state;
    for (uint64_t a = 0x1000; a < 0x1000 + 64 * 16; a += 16)
        assert_int_equal(fcache_put(&fc, 5, a, false, (uint32_t)a, 0), 0);
    /* a bucket may have overflowed: none answers for another address */
    for (uint64_t a = 0x1000; a < 0x1000 + 64 * 16; a += 16)
        if (fcache_get(&fc, 5, a, false, &frame, &flags)) {
            assert_int_equal(frame, (uint32_t)a);
            hits++;
        }
    assert_true(hits >= 32);
    assert_int_equal(fc.flushes, 0);
    /* mappings or JIT regions re-read: nothing of generation 5 is answered any more */
    for (uint64_t a = 0x1000; a < 0x1000 + 64 * 16; a += 16)
        assert_false(fcache_get(&fc, 6, a, false, &frame, &flags));
    assert_int_equal(fc.flushes, 1);
    /* an entry made at 6 is not answered at 5 either (any other generation empties) */
    assert_int_equal(fcache_put(&fc, 6, 0x1010, false, 99, 0), 0);
    assert_true(fcache_get(&fc, 6, 0x1010, false, &frame, &flags));
    assert_false(fcache_get(&fc, 5, 0x1010, false, &frame, &flags));
    assert_int_equal(fc.flushes, 2);
    fcache_free(&fc);
}

/* A fifth address in a full bucket pushes out the oldest; the others stay. */
static void test_fcache_full_bucket_drops_oldest(void **state)
{
    struct fcache fc = {0};
    uint64_t key[FCACHE_WAYS + 1], a = 0x7f0000001234;
    uint32_t frame;
    unsigned flags;

    (void)state;
    key[0] = a;
    for (int k = 1; k <= FCACHE_WAYS; k++) {
        do
            a++;
        while (fcache_bucket_of(a, false, FCACHE_MIN_BITS) !=
               fcache_bucket_of(key[0], false, FCACHE_MIN_BITS));
        key[k] = a;
    }
    for (int k = 0; k <= FCACHE_WAYS; k++)
        assert_int_equal(fcache_put(&fc, 1, key[k], false, (uint32_t)k + 1, 0), 0);
    assert_int_equal(fc.bits, FCACHE_MIN_BITS);
    assert_int_equal(fc.replaced, 1);
    assert_false(fcache_get(&fc, 1, key[0], false, &frame, &flags)); /* gone, never answered as another */
    for (int k = 1; k <= FCACHE_WAYS; k++) {
        assert_true(fcache_get(&fc, 1, key[k], false, &frame, &flags));
        assert_int_equal(frame, (uint32_t)k + 1);
    }
    /* storing a known key again replaces it in place */
    assert_int_equal(fcache_put(&fc, 1, key[2], false, 42, FCACHE_UNKNOWN), 0);
    assert_int_equal(fc.replaced, 1);
    assert_true(fcache_get(&fc, 1, key[2], false, &frame, &flags));
    assert_int_equal(frame, 42);
    assert_int_equal(flags, FCACHE_UNKNOWN);
    fcache_free(&fc);
}

/* Many addresses: the table doubles up to its limit, and keeps answering right throughout. */
static void test_fcache_grows(void **state)
{
    enum { N = 40000 };
    struct fcache fc = {0};
    uint32_t frame;
    unsigned flags, hits = 0;

    (void)state;
    assert_int_equal(fcache_put(&fc, 3, 0x5000, true, 1, 0), 0);
    assert_int_equal(fc.bits, FCACHE_MIN_BITS);
    for (int round = 0; round < 4; round++)
        for (uint64_t i = 0; i < N; i++) {
            uint64_t a = 0x7f0000000000 + i * 24;
            if (fcache_get(&fc, 3, a, false, &frame, &flags)) {
                assert_int_equal(frame, (uint32_t)i); /* never another address's frame */
                hits++;
            } else {
                assert_int_equal(fcache_put(&fc, 3, a, false, (uint32_t)i, 0), 0);
            }
            assert_true(fc.bits <= FCACHE_MAX_BITS);
        }
    assert_int_equal(fc.bits, FCACHE_MAX_BITS);
    assert_true(hits > 0);
    /* a small working set after growth: all of it stays */
    for (uint64_t i = 0; i < 100; i++)
        assert_int_equal(fcache_put(&fc, 3, 0x1000 + i * 16, false, (uint32_t)i, 0), 0);
    for (uint64_t i = 0; i < 100; i++) {
        assert_true(fcache_get(&fc, 3, 0x1000 + i * 16, false, &frame, &flags));
        assert_int_equal(frame, (uint32_t)i);
    }
    fcache_free(&fc);
}

/* -- scache on its own ----------------------------------------------------------------- */

static const uint32_t frames_a[3] = {10, 11, 12};

static void put_twice(struct scache *sc, uint64_t gen, const struct scache_key *k, uint64_t h,
                      const uint32_t *fr, size_t n)
{
    struct scache_val v = {.frames = fr, .nframes = n, .py_frames = 1, .merged = true};
    assert_int_equal(scache_put(sc, gen, k, h, &v), 0);
    assert_int_equal(scache_put(sc, gen, k, h, &v), 0);
}

/* Kept at its second build, answered whole, compared whole: the same hash with another key, or
 * another Python frame, is a miss; another generation empties it. */
static void test_scache_keeps_compares_and_flushes(void **state)
{
    (void)state;
    struct scache sc = {0};
    uint64_t ips[2] = {0x1000, 0x2000}, other[2] = {0x1000, 0x2008};
    struct pystack_raw py[1] = {{.code = 0x7000, .instr = 0x7010, .ident = 5, .owner = 0, .is_entry = true}};
    struct scache_key k = {.ips = ips, .nips = 2, .py = py, .npy = 1, .flags = 2};
    struct scache_val v, once = {.frames = frames_a, .nframes = 3};
    uint64_t h = scache_hash(&k);

    assert_false(scache_get(&sc, 1, &k, h, &v));
    assert_int_equal(scache_put(&sc, 1, &k, h, &once), 0); /* first build: only noted */
    assert_false(scache_get(&sc, 1, &k, h, &v));
    put_twice(&sc, 1, &k, h, frames_a, 3);
    assert_true(scache_get(&sc, 1, &k, h, &v));
    assert_int_equal(v.nframes, 3);
    assert_memory_equal(v.frames, frames_a, sizeof(frames_a));
    assert_int_equal(v.py_frames, 1);
    assert_true(v.merged);
    assert_false(v.truncated);

    struct scache_key k2 = k;
    k2.ips = other;
    assert_false(scache_get(&sc, 1, &k2, h, &v)); /* forced to the same hash: the key decides */
    struct pystack_raw py2[1] = {py[0]};
    py2[0].instr += 2;
    k2 = k;
    k2.py = py2;
    assert_false(scache_get(&sc, 1, &k2, h, &v));
    k2 = k;
    k2.flags = 6;
    assert_false(scache_get(&sc, 1, &k2, h, &v));

    assert_false(scache_get(&sc, 2, &k, h, &v)); /* the addresses mean something else now */
    assert_int_equal(sc.flushes, 1);
    assert_int_equal(sc.hits, 1);
    scache_free(&sc);
}

/* Direct-mapped: a stack that lands on a kept one's slot takes it once it is built twice. */
static void test_scache_slot_taken(void **state)
{
    (void)state;
    struct scache sc = {0};
    uint64_t a[1] = {0x1000}, b[1] = {0x3000};
    struct scache_key ka = {.ips = a, .nips = 1}, kb = {.ips = b, .nips = 1};
    uint64_t ha = scache_hash(&ka), hb = ha + ((uint64_t)1 << SCACHE_BITS); /* same slot */
    struct scache_val v;
    static const uint32_t frames_b[1] = {99};

    put_twice(&sc, 1, &ka, ha, frames_a, 3);
    put_twice(&sc, 1, &kb, hb, frames_b, 1);
    assert_false(scache_get(&sc, 1, &ka, ha, &v));
    assert_true(scache_get(&sc, 1, &kb, hb, &v));
    assert_int_equal(v.frames[0], 99);
    scache_free(&sc);
}

/* -- profile_add's stack cache ------------------------------------------------------------- */

static void test_profile_stack_cache_counts(void **state)
{
    struct profile p;
    uint32_t fr[4];
    const char *names[4] = {"thread", "a", "b", "c"};

    (void)state;
    assert_int_equal(profile_init(&p), 0);
    for (int i = 0; i < 4; i++)
        fr[i] = (uint32_t)profile_frame(&p, i ? FRAME_NATIVE : FRAME_THREAD, names[i], NULL, 0);
    int64_t ab = profile_add(&p, fr, 3, 1), a = profile_add(&p, fr, 2, 1);
    int64_t abc = profile_add(&p, fr, 4, 1);
    assert_true(ab > 0 && a > 0 && abc > 0);
    for (int r = 0; r < 10; r++) {
        assert_int_equal(profile_add(&p, fr, 3, 2), ab); /* cached */
        assert_int_equal(profile_add(&p, fr, 2, 1), a);  /* a prefix: another stack */
        assert_int_equal(profile_add(&p, fr, 4, 1), abc);
    }
    assert_int_equal(p.nnodes, 5); /* root, thread, a, b, c: nothing duplicated */
    assert_int_equal(p.nodes[ab].self, 21);
    assert_int_equal(p.nodes[a].self, 11);
    assert_int_equal(p.nodes[abc].self, 11);
    assert_int_equal(p.meta.samples, 43);
    /* a bad frame is refused whether or not a valid stack is cached */
    uint32_t bad[3] = {fr[0], fr[1], 77};
    assert_int_equal(profile_add(&p, bad, 3, 1), -EINVAL);
    uint32_t root_like[2] = {UINT32_MAX, fr[0]};
    assert_int_equal(profile_add(&p, root_like, 2, 1), -EINVAL);
    profile_free(&p);
}

/* More distinct stacks than cache slots, in an order that makes them collide: every count exact. */
static void test_profile_stack_cache_many(void **state)
{
    enum { NF = 64, NS = 20000 };
    struct profile p;
    uint32_t fr[NF], st[4];
    int64_t *leaf = calloc(NS, sizeof(*leaf));

    (void)state;
    assert_non_null(leaf);
    assert_int_equal(profile_init(&p), 0);
    for (int i = 0; i < NF; i++) {
        char nm[16];
        snprintf(nm, sizeof(nm), "f%d", i);
        fr[i] = (uint32_t)profile_frame(&p, FRAME_NATIVE, nm, NULL, 0);
    }
    for (int round = 0; round < 3; round++)
        for (int s = 0; s < NS; s++) {
            st[0] = fr[0];
            st[1] = fr[1 + s % 63];
            st[2] = fr[(s / 63) % NF];
            st[3] = fr[s % 7];
            int64_t n = profile_add(&p, st, 2 + s % 3, 1);
            assert_true(n > 0);
            if (round == 0)
                leaf[s] = n;
            else
                assert_int_equal(n, leaf[s]);
        }
    uint64_t total = 0;
    for (uint32_t i = 0; i < p.nnodes; i++)
        total += p.nodes[i].self;
    assert_int_equal(total, 3 * NS);
    assert_int_equal(p.meta.samples, 3 * NS);
    profile_free(&p);
    free(leaf);
}

/* -- the frame cache in collect_sample ----------------------------------------------------- */

struct fixture {
    struct profile prof;
    struct collector *c;
    struct sample_event *ev;
    char perfmap[64];
    uint8_t *jit; /* three pages of anonymous executable memory */
    char file[64];
    pid_t child;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    snprintf(f->perfmap, sizeof(f->perfmap), "/tmp/perf-%d.map", (int)getpid());
    unlink(f->perfmap);
    f->jit = mmap(NULL, 3 * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->jit == MAP_FAILED)
        return -1;
    f->ev = calloc(1, sizeof(*f->ev) + 64 + 2 * SAMPLE_STACK_BYTES);
    if (!f->ev || profile_init(&f->prof))
        return -1;
    f->ev->pid = getpid();
    f->ev->tid = gettid();
    strcpy(f->ev->comm, "tester");
    *state = f;
    return 0;
}

/* The collector is opened by each test, once the perf map says what it should. */
static void open_collector(struct fixture *f, bool kernel)
{
    struct collect_opts o = {.unwind = UNWIND_FP, .kernel = kernel};

    assert_int_equal(collect_open(&f->c, &o, &f->prof), 0);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->child > 0) {
        kill(f->child, SIGKILL);
        waitpid(f->child, NULL, 0);
        char path[64];
        snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)f->child);
        unlink(path);
    }
    collect_close(f->c);
    profile_free(&f->prof);
    free(f->ev);
    munmap(f->jit, 3 * 4096);
    unlink(f->perfmap);
    if (f->file[0])
        unlink(f->file);
    free(f);
    return 0;
}

static void perfmap_add(const char *path, uint64_t start, uint64_t size, const char *name)
{
    FILE *fp = fopen(path, "a");

    assert_non_null(fp);
    fprintf(fp, "%llx %llx %s\n", (unsigned long long)start, (unsigned long long)size, name);
    assert_int_equal(fclose(fp), 0);
}

/* proc re-reads mappings and JIT files at most every 20 ms. */
static void past_refresh_limit(void)
{
    struct timespec ts = {0, 60 * 1000 * 1000};

    nanosleep(&ts, NULL);
}

/* Adds one record of process `pid` whose frame-pointer chain is ips[0..n) (leaf first) and
 * writes the labels of the stack it made, root first, ';'-joined, thread frame left out. */
static void sample_pid(struct fixture *f, pid_t pid, const uint64_t *ips, size_t n, char *text, size_t size)
{
    uint64_t *before = calloc(f->prof.nnodes + 1, sizeof(*before));
    uint32_t leaf = 0, chain[64];
    size_t len = 0, k = 0;

    assert_non_null(before);
    for (uint32_t i = 0; i < f->prof.nnodes; i++)
        before[i] = f->prof.nodes[i].self;
    uint32_t old_n = f->prof.nnodes;
    f->ev->pid = (uint32_t)pid;
    memcpy(sample_ustack(f->ev), ips, n * 8);
    f->ev->ustack_len = (uint32_t)(n * 8);
    f->ev->regs.ip = ips[0];
    assert_true(collect_sample(f->c, f->ev, sample_event_len(f->ev)) >= 0);
    for (uint32_t i = 1; i < f->prof.nnodes; i++)
        if (f->prof.nodes[i].self != (i < old_n ? before[i] : 0))
            leaf = i;
    free(before);
    assert_true(leaf != 0);
    for (uint32_t i = leaf; i && k < 64; i = f->prof.nodes[i].parent)
        chain[k++] = i;
    text[0] = 0;
    k--; /* chain[k] is the thread frame */
    while (k-- > 0) {
        char lab[256];
        profile_frame_label(&f->prof, f->prof.nodes[chain[k]].frame, lab, sizeof(lab));
        len += (size_t)snprintf(text + len, size - len, "%s%s", len ? ";" : "", lab);
    }
}

static void sample(struct fixture *f, const uint64_t *ips, size_t n, char *text, size_t size)
{
    sample_pid(f, getpid(), ips, n, text, size);
}

static struct collect_stats stats(const struct fixture *f)
{
    struct collect_stats st;

    collect_get_stats(f->c, &st);
    return st;
}

extern const char __executable_start[]; /* the linker's: start of the executable's first mapping */

/* A warm address is answered by the caches, with the same frame and the same unknown count. */
static void test_warm_samples_hit(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    /* leaf in a JIT region; a return address in the executable's ELF header: no symbol there */
    uint64_t ips[2] = {base + 0x10, (uintptr_t)__executable_start + 0x21};
    char t1[512], t2[512];

    perfmap_add(f->perfmap, base, 0x100, "jit_one");
    open_collector(f, false);
    sample(f, ips, 2, t1, sizeof(t1));
    struct collect_stats s1 = stats(f);
    assert_non_null(strstr(t1, "+0x20;jit_one"));
    assert_int_equal(s1.unknown_frames, 1);
    for (int i = 0; i < 5; i++) {
        sample(f, ips, 2, t2, sizeof(t2));
        assert_string_equal(t2, t1);
    }
    struct collect_stats s2 = stats(f);
    /* the second sample from the frame cache; the stack is kept whole at that second build (an
     * address with no symbol in a file mapping stays so, as a stripped binary's do), and the
     * four after it are replayed from the sample cache */
    assert_int_equal(s2.frame_cache_hits - s1.frame_cache_hits, 2);
    assert_int_equal(s2.frame_cache_misses, s1.frame_cache_misses);
    assert_int_equal(s2.sample_cache_hits, 4);
    assert_int_equal(s2.unknown_frames, 6); /* counted on every use, however answered */
}

/* One address, two meanings: a leaf at a region's start is that region; as a return address the
 * call is in the region before it. */
static void test_leaf_and_return_address_differ(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit, mid = base + 0x100;
    uint64_t leaf[1] = {mid}, ret[2] = {base + 0x20, mid};
    char t[512];

    perfmap_add(f->perfmap, base, mid - base, "jit_one");
    perfmap_add(f->perfmap, mid, 0x100, "jit_two");
    open_collector(f, false);
    for (int i = 0; i < 3; i++) {
        sample(f, leaf, 1, t, sizeof(t));
        assert_string_equal(t, "jit_two");
        sample(f, ret, 2, t, sizeof(t));
        assert_string_equal(t, "jit_one;jit_one");
    }
    /* the second round from the frame cache (all but the first of each key), the third whole
     * from the sample cache, which keeps a stack the second time it is built */
    assert_int_equal(stats(f).frame_cache_hits, 3);
    assert_int_equal(stats(f).sample_cache_hits, 2);
}

/* Two leaf addresses in one function under the same caller are one stack: the second address's
 * first sample is built (its frame is new to the frame cache) and offered under the frame's key,
 * which the first address's stack already holds; from its second sample on it is a hit, with the
 * same frames. */
static void test_leaf_keyed_by_its_frame(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    uint64_t a[2] = {base + 0x10, base + 0x220}, b[2] = {base + 0x48, base + 0x220};
    char ta[512], tb[512];

    perfmap_add(f->perfmap, base, 0x100, "jit_leaf");
    perfmap_add(f->perfmap, base + 0x200, 0x100, "jit_caller");
    open_collector(f, false);
    for (int i = 0; i < 3; i++)
        sample(f, a, 2, ta, sizeof(ta)); /* built, kept at its second build, then a hit */
    assert_string_equal(ta, "jit_caller;jit_leaf");
    assert_int_equal(stats(f).sample_cache_hits, 1);
    sample(f, b, 2, tb, sizeof(tb));
    assert_string_equal(tb, ta);
    assert_int_equal(stats(f).sample_cache_hits, 1);
    for (int i = 0; i < 3; i++) {
        sample(f, i % 2 ? a : b, 2, tb, sizeof(tb));
        assert_string_equal(tb, ta);
    }
    assert_int_equal(stats(f).sample_cache_hits, 4);
}

/* A reused code slot: the same start published again under another name (a later perf map line
 * wins). Once proc re-reads the JIT files, the cached name must go. */
static void test_republished_region_is_renamed(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    uint64_t ips[1] = {base + 0x10}, fresh[1] = {base + 0x1010};
    char t[512];

    perfmap_add(f->perfmap, base, 0x100, "py::old:/a.py");
    open_collector(f, false);
    for (int i = 0; i < 3; i++) {
        sample(f, ips, 1, t, sizeof(t));
        assert_string_equal(t, "py::old:/a.py");
    }
    assert_int_equal(stats(f).sample_cache_hits, 1);

    perfmap_add(f->perfmap, base, 0x100, "py::new:/b.py");
    past_refresh_limit();
    /* code nobody named yet makes proc re-read the JIT files (what a new trampoline does) */
    sample(f, fresh, 1, t, sizeof(t));
    assert_string_equal(t, "[unknown]");
    sample(f, ips, 1, t, sizeof(t));
    assert_string_equal(t, "py::new:/b.py"); /* the whole sample was remembered too: both caches let go */
    assert_true(stats(f).frame_cache_flushes >= 1);
}

/* Unnamed JIT code is never cached: once published, the next sample names it. */
static void test_code_published_later_is_named(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    uint64_t ips[2] = {base + 0x1010, base + 0x2020};
    char t[512];

    perfmap_add(f->perfmap, base, 0x100, "jit_one");
    open_collector(f, false);
    sample(f, ips, 2, t, sizeof(t));
    assert_string_equal(t, "[unknown];[unknown]");
    sample(f, ips, 2, t, sizeof(t));
    assert_string_equal(t, "[unknown];[unknown]");
    perfmap_add(f->perfmap, base + 0x1000, 0x100, "jit_late");
    perfmap_add(f->perfmap, base + 0x2000, 0x100, "jit_caller");
    past_refresh_limit();
    sample(f, ips, 2, t, sizeof(t));
    assert_string_equal(t, "jit_caller;jit_late");
}

/* JIT code in a memfd arena (a deleted-file mapping) is named once published, like anonymous
 * code, and publishing a region elsewhere keeps the names already cached. */
static void test_memfd_code_published_later_is_named(void **state)
{
    struct fixture *f = *state;
    int fd = memfd_create("jitarena", MFD_CLOEXEC);
    char t[512];

    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(m != MAP_FAILED);
    uint64_t base = (uintptr_t)m, anon = (uintptr_t)f->jit;
    uint64_t ips[2] = {base + 0x10, anon + 0x10};

    perfmap_add(f->perfmap, anon, 0x100, "jit_anon");
    open_collector(f, false);
    sample(f, ips, 2, t, sizeof(t));
    assert_non_null(strstr(t, "jitarena"));
    sample(f, ips, 2, t, sizeof(t));
    assert_non_null(strstr(t, "jitarena"));
    uint64_t flushes = stats(f).frame_cache_flushes;
    perfmap_add(f->perfmap, base, 0x100, "jit_memfd");
    past_refresh_limit();
    sample(f, ips, 2, t, sizeof(t));
    assert_string_equal(t, "jit_anon;jit_memfd");
    assert_int_equal(stats(f).frame_cache_flushes, flushes);
    munmap(m, 4096);
}

/* The mapping under a cached address is replaced (JIT memory unmapped, a file mapped there):
 * once proc re-reads the mappings, the address names the file. */
static void test_replaced_mapping_is_renamed(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    uint64_t ips[1] = {base + 0x10}, outside[1] = {0x10};
    char t[512], want[128];
    static uint8_t page[4096];

    perfmap_add(f->perfmap, base, 0x100, "jit_gone");
    open_collector(f, false);
    sample(f, ips, 1, t, sizeof(t));
    assert_string_equal(t, "jit_gone");
    sample(f, ips, 1, t, sizeof(t));
    assert_string_equal(t, "jit_gone");

    snprintf(f->file, sizeof(f->file), "/tmp/pyebpf-fcache-%d.bin", (int)getpid());
    int fd = open(f->file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
    void *m = mmap(f->jit, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
    close(fd);
    assert_ptr_equal(m, f->jit);
    past_refresh_limit();
    sample(f, outside, 1, t, sizeof(t)); /* an address in no mapping: proc re-reads them */
    assert_string_equal(t, "[unknown]");
    sample(f, ips, 1, t, sizeof(t));
    snprintf(want, sizeof(want), "pyebpf-fcache-%d.bin+0x10", (int)getpid());
    assert_string_equal(t, want);
    sample(f, ips, 1, t, sizeof(t)); /* and that answer is cached in turn */
    assert_string_equal(t, want);
    assert_true(stats(f).frame_cache_flushes >= 1);
}

/* Two processes, one address, two names: each target has its own cache. */
static void test_other_process_other_name(void **state)
{
    struct fixture *f = *state;
    uint64_t base = (uintptr_t)f->jit;
    uint64_t ips[1] = {base + 0x10};
    int ready[2];
    char t[512], c = 0;

    assert_int_equal(pipe(ready), 0);
    f->child = fork();
    assert_true(f->child >= 0);
    if (f->child == 0) {
        char path[64];
        snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
        unlink(path);
        perfmap_add(path, base, 0x100, "child_fn");
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    perfmap_add(f->perfmap, base, 0x100, "parent_fn");
    open_collector(f, false);
    for (int i = 0; i < 3; i++) {
        sample_pid(f, getpid(), ips, 1, t, sizeof(t));
        assert_string_equal(t, "parent_fn");
        sample_pid(f, f->child, ips, 1, t, sizeof(t));
        assert_string_equal(t, "child_fn");
    }
    assert_int_equal(stats(f).sample_cache_hits, 2); /* one cache per process: the third round */
}

/* Kernel frames are cached too (kallsyms is read once). */
static void test_kernel_frames_cached(void **state)
{
    struct fixture *f = *state;
    FILE *ks = fopen("/proc/kallsyms", "re");
    char line[512], sym[256], type, t[512];
    unsigned long long addr = 0, a;

    while (ks && fgets(line, sizeof(line), ks))
        if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, "ksys_write")) {
            addr = a;
            break;
        }
    if (ks)
        fclose(ks);
    if (!addr)
        skip();
    open_collector(f, true);
    uint64_t ips[1] = {(uintptr_t)f->jit + 0x10};
    f->ev->flags = SAMPLE_F_IN_KERNEL;
    sample_kstack(f->ev)[0] = addr + 4;
    f->ev->kstack_len = 8;
    for (int i = 0; i < 3; i++) {
        sample(f, ips, 1, t, sizeof(t));
        assert_string_equal(t, "[unknown];ksys_write_[k]");
    }
    assert_int_equal(stats(f).frame_cache_hits, 2); /* the kernel frame; the unnamed JIT one never */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fcache_hit_miss_and_kinds),
        cmocka_unit_test(test_fcache_generation_empties_it),
        cmocka_unit_test(test_fcache_full_bucket_drops_oldest),
        cmocka_unit_test(test_fcache_grows),
        cmocka_unit_test(test_scache_keeps_compares_and_flushes),
        cmocka_unit_test(test_scache_slot_taken),
        cmocka_unit_test(test_profile_stack_cache_counts),
        cmocka_unit_test(test_profile_stack_cache_many),
        cmocka_unit_test_setup_teardown(test_warm_samples_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaf_and_return_address_differ, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaf_keyed_by_its_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republished_region_is_renamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_code_published_later_is_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memfd_code_published_later_is_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_mapping_is_renamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_process_other_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_frames_cached, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
