/* Unit tests for user/output/folded.c: the writer, and the reader on good, bad and random input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "output/folded.h"

static int setup(void **state)
{
    struct profile *p = malloc(sizeof(*p));
    if (!p || profile_init(p) != 0)
        return -1;
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    profile_free(*state);
    free(*state);
    return 0;
}

static int read_str(struct profile *p, const char *s, struct folded_stats *st)
{
    return folded_read(p, s, strlen(s), st);
}

/* The profile written as folded text (malloc'd). */
static char *write_str(struct profile *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    profile_finish(p);
    assert_int_equal(folded_write(p, f), 0);
    fclose(f);
    return buf;
}

static const struct frame *leaf_frame(struct profile *p, const char *name)
{
    for (uint32_t i = 0; i < p->nframes; i++)
        if (strcmp(p->frames[i].name, name) == 0)
            return &p->frames[i];
    return NULL;
}

static void test_kinds_from_text(void **state)
{
    struct profile *p = *state;
    struct folded_stats st = {0};
    assert_int_equal(read_str(p,
                              "thread 812 (python3);main;run (/app/x.py:12);py::work:/app/x.py;"
                              "<lambda> (<frozen importlib._bootstrap>:99);mod (/app/y.py);"
                              "do_syscall_64_[k];[unknown] 7\n",
                              &st),
                     0);
    assert_int_equal(st.lines, 1);
    assert_int_equal(st.bad_lines, 0);
    assert_true(p->show_threads);
    const struct frame *f = leaf_frame(p, "thread 812 (python3)");
    assert_non_null(f);
    assert_int_equal(f->kind, FRAME_THREAD);
    assert_int_equal(leaf_frame(p, "main")->kind, FRAME_NATIVE);
    f = leaf_frame(p, "run");
    assert_int_equal(f->kind, FRAME_PYTHON);
    assert_string_equal(f->file, "/app/x.py");
    assert_int_equal(f->line, 12);
    assert_int_equal(leaf_frame(p, "py::work:/app/x.py")->kind, FRAME_JIT);
    f = leaf_frame(p, "<lambda>");
    assert_int_equal(f->kind, FRAME_PYTHON);
    assert_string_equal(f->file, "<frozen importlib._bootstrap>");
    f = leaf_frame(p, "mod");
    assert_int_equal(f->kind, FRAME_PYTHON);
    assert_int_equal(f->line, 0);
    assert_int_equal(leaf_frame(p, "do_syscall_64")->kind, FRAME_KERNEL);
    assert_int_equal(leaf_frame(p, "[unknown]")->kind, FRAME_OTHER);
    assert_int_equal(p->meta.samples, 7);
}

static void test_not_python(void **state)
{
    struct profile *p = *state;
    /* Parentheses that are not "file.py:N" stay native names. */
    assert_int_equal(read_str(p, "operator new(unsigned long);foo (bar.c:3);x (y.py:abc) 1\n", NULL), 0);
    assert_int_equal(leaf_frame(p, "operator new(unsigned long)")->kind, FRAME_NATIVE);
    assert_int_equal(leaf_frame(p, "foo (bar.c:3)")->kind, FRAME_NATIVE);
    assert_int_equal(leaf_frame(p, "x (y.py:abc)")->kind, FRAME_NATIVE);
}

static void test_round_trip(void **state)
{
    struct profile *p = *state;
    const char *in = "thread 1 (a);main;f (/x.py:1) 3\n"
                     "thread 1 (a);main;f (/x.py:1);g (/x.py:2) 5\n"
                     "thread 2 (b);start_thread;h (/y.py:7);sys_read_[k] 11\n"
                     "thread 2 (b);start_thread;py::h:/y.py 2\n";
    assert_int_equal(read_str(p, in, NULL), 0);
    char *out = write_str(p);
    /* Depth first, children sorted by label, a parent's own line first: the order is fixed. */
    assert_string_equal(out, in);
    struct profile q;
    assert_int_equal(profile_init(&q), 0);
    assert_int_equal(read_str(&q, out, NULL), 0);
    char *again = write_str(&q);
    assert_string_equal(again, out);
    free(out);
    free(again);
    profile_free(&q);
}

/* Labels the text cannot carry as they are: a leading '#' (a comment when read back), an empty
 * name (the frame would vanish), line breaks and ';' inside names; a frame on many lines is
 * written the same on each. */
static void test_labels_written(void **state)
{
    struct profile *p = *state;
    uint32_t hash = profile_frame(p, FRAME_NATIVE, "#root", NULL, 0);
    uint32_t empty = profile_frame(p, FRAME_NATIVE, "", NULL, 0);
    uint32_t br = profile_frame(p, FRAME_NATIVE, "a\nb\rc;d", NULL, 0);
    uint32_t x = profile_frame(p, FRAME_NATIVE, "x", NULL, 0);
    uint32_t a[] = {hash, empty, br}, b[] = {hash, br, x}, c[] = {x, hash};
    profile_add(p, a, 3, 1);
    profile_add(p, b, 3, 2);
    profile_add(p, c, 2, 3);
    char *out = write_str(p);
    assert_string_equal(out, "?root;?;a b c:d 1\n"
                             "?root;a b c:d;x 2\n"
                             "x;#root 3\n");
    free(out);
}

static void test_threads_hidden_and_merged(void **state)
{
    struct profile *p = *state;
    /* Built through the API (the sampler's way): thread frames hidden unless asked for. */
    uint32_t t1 = profile_frame(p, FRAME_THREAD, "thread 1 (a)", NULL, 0);
    uint32_t t2 = profile_frame(p, FRAME_THREAD, "thread 2 (a)", NULL, 0);
    uint32_t m = profile_frame(p, FRAME_NATIVE, "main", NULL, 0);
    uint32_t w = profile_frame(p, FRAME_PYTHON, "work", "w;x.py", 3);
    uint32_t a[] = {t1, m, w}, b[] = {t2, m, w}, c[] = {t2};
    profile_add(p, a, 3, 4);
    profile_add(p, b, 3, 6);
    profile_add(p, c, 1, 1); /* nothing but the thread: written as [unknown] */
    char *out = write_str(p);
    /* ';' inside a name cannot split the stack. */
    assert_string_equal(out, "[unknown] 1\nmain;work (w:x.py:3) 10\n");
    free(out);
    p->show_threads = true;
    out = write_str(p);
    assert_string_equal(out, "thread 1 (a);main;work (w:x.py:3) 4\n"
                             "thread 2 (a) 1\n"
                             "thread 2 (a);main;work (w:x.py:3) 6\n");
    free(out);
}

/* What the writer produced reads back as itself, also for texts that look almost like a form the
 * reader knows (line 0, leading zeros, perf's _[j]) and for long labels sharing a prefix. */
static void test_fixed_point(void **state)
{
    struct profile *p = *state;
    char *longa = malloc(6000), *longb = malloc(6000);
    memset(longa, 'x', 5000);
    strcpy(longa + 5000, "a (/m.py:1)");
    memset(longb, 'x', 5000);
    strcpy(longb + 5000, "b");
    char *in = malloc(13000);
    snprintf(in, 13000, "f (/x.py:0);g (/x.py:007);h_[j];k (/x.py:1);_[k] 2\n%s;%s 3\n%s 4\n%s;%s 5\n", longb,
             longa, longa, longa, longb);
    assert_int_equal(read_str(p, in, NULL), 0);
    char *t1 = write_str(p);
    assert_non_null(strstr(t1, "f (/x.py:0);g (/x.py:007);h_[j];k (/x.py:1);_[k] 2\n"));
    struct profile q;
    assert_int_equal(profile_init(&q), 0);
    assert_int_equal(read_str(&q, t1, NULL), 0);
    char *t2 = write_str(&q);
    assert_string_equal(t1, t2);
    assert_int_equal(leaf_frame(p, "h_[j]")->kind, FRAME_JIT);
    assert_int_equal(leaf_frame(p, "f (/x.py:0)")->kind, FRAME_NATIVE);
    free(t1);
    free(t2);
    free(in);
    free(longa);
    free(longb);
    profile_free(&q);
}

static void test_bad_lines(void **state)
{
    struct profile *p = *state;
    struct folded_stats st = {0};
    const char *in = "# a comment\n"
                     "\n"
                     "   \n"
                     "a;b 3\r\n"                     /* CRLF */
                     "a;b\t2\n"                      /* tab before the count */
                     "a;;b; 1\n"                     /* empty frames dropped */
                     "nocount\n"                     /* bad */
                     "a;b -3\n"                      /* bad */
                     "a;b 3x\n"                      /* bad */
                     "a;b 99999999999999999999999\n" /* overflow: bad */
                     "a;b 281474976710657\n"         /* above FOLDED_MAX_COUNT: bad */
                     ";;; 4\n"                       /* empty stack: bad */
                     " 5\n"                          /* empty stack: bad */
                     "a;b 281474976710650\n"         /* the total reaches FOLDED_MAX_COUNT */
                     "a;b 1";                        /* above it: bad (and no newline at the end) */
    assert_int_equal(read_str(p, in, &st), 0);
    assert_int_equal(st.lines, 4);
    assert_int_equal(st.bad_lines, 8);
    char *out = write_str(p);
    assert_string_equal(out, "a;b 281474976710656\n");
    free(out);
}

static void test_not_nul_terminated(void **state)
{
    struct profile *p = *state;
    char buf[32];
    memset(buf, 'Z', sizeof(buf));
    memcpy(buf, "f;g 12", 6);
    struct folded_stats st = {0};
    assert_int_equal(folded_read(p, buf, 6, &st), 0);
    assert_int_equal(st.lines, 1);
    char *out = write_str(p);
    assert_string_equal(out, "f;g 12\n");
    free(out);
    /* Zero length reads nothing. */
    assert_int_equal(folded_read(p, buf, 0, &st), 0);
    assert_int_equal(st.lines, 1);
}

static void test_too_deep(void **state)
{
    struct profile *p = *state;
    size_t n = FOLDED_MAX_DEPTH + 100, len = 0;
    char *s = malloc(n * 4 + 16);
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "%s%c", i ? ";" : "", 'a' + (int)(i % 26));
    len += (size_t)sprintf(s + len, " 9\n");
    struct folded_stats st = {0};
    assert_int_equal(folded_read(p, s, len, &st), 0);
    assert_int_equal(st.lines, 1);
    assert_int_equal(st.truncated, 1);
    profile_finish(p);
    assert_int_equal(p->nodes[0].total, 9);
    /* root + unnamed thread + FOLDED_MAX_DEPTH - 1 frames */
    assert_int_equal(p->nnodes, FOLDED_MAX_DEPTH + 1);
    free(s);
}

/* Random bytes and mangled good lines: no crash, no leak (run under ASan), totals consistent. */
static void test_random_input(void **state)
{
    (void)state;
    static const char alphabet[] = "ab;; ;(:.py)123456789_[k]\n\t\r\xff\xc3\x00py::thread (";
    unsigned seed = 12345;
    for (int iter = 0; iter < 2000; iter++) {
        char buf[512];
        size_t len = (size_t)(rand_r(&seed) % sizeof(buf));
        for (size_t i = 0; i < len; i++) {
            unsigned r = (unsigned)rand_r(&seed);
            buf[i] = (r & 3) ? alphabet[r % (sizeof(alphabet) - 1)] : (char)(r >> 8);
        }
        struct profile p;
        assert_int_equal(profile_init(&p), 0);
        struct folded_stats st = {0};
        assert_int_equal(folded_read(&p, buf, len, &st), 0);
        profile_finish(&p);
        assert_int_equal(p.nodes[0].total, p.meta.samples);
        char *out = NULL;
        size_t olen = 0;
        FILE *f = open_memstream(&out, &olen);
        assert_int_equal(folded_write(&p, f), 0);
        fclose(f);
        /* What we write, we read back to the same total. */
        struct profile q;
        assert_int_equal(profile_init(&q), 0);
        struct folded_stats st2 = {0};
        assert_int_equal(folded_read(&q, out, olen, &st2), 0);
        assert_int_equal(st2.bad_lines, 0);
        profile_finish(&q);
        assert_int_equal(q.nodes[0].total, p.nodes[0].total);
        free(out);
        profile_free(&q);
        profile_free(&p);
    }
}

static void test_read_file(void **state)
{
    struct profile *p = *state;
    char path[] = "/tmp/test_folded.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    /* Larger than the reader's first buffer, so it grows. */
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "thread 1 (x);main;fn_%d (/m.py:%d) %d\n", i % 100, i % 7, 1);
    fclose(f);
    struct folded_stats st = {0};
    assert_int_equal(folded_read_file(p, path, &st), 0);
    assert_int_equal(st.lines, 5000);
    profile_finish(p);
    assert_int_equal(p->nodes[0].total, 5000);
    unlink(path);
    assert_int_equal(folded_read_file(p, path, &st), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kinds_from_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_python, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_hidden_and_merged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_nul_terminated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_deep, setup, teardown),
        cmocka_unit_test(test_random_input),
        cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
