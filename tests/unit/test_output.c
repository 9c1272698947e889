/* Unit tests for user/output/output.c and the writers: formats, atomic replacement (no symlink followed),
 * escaping, the content of SVG / speedscope / pprof / summary, and render_main's arguments. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "output/escape.h"
#include "output/output.h"
#include "output/render.h"
#include "output/summary.h"

struct fixture {
    struct profile p;
    char dir[64];
};

/* A small profile built the sampler's way, with meta filled in. */
static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    if (!fx || profile_init(&fx->p) != 0)
        return -1;
    strcpy(fx->dir, "/tmp/test_output.XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    struct profile *p = &fx->p;
    uint32_t t = profile_frame(p, FRAME_THREAD, "thread 9 (python3)", NULL, 0);
    uint32_t m = profile_frame(p, FRAME_NATIVE, "main", "/usr/bin/python3.12", 0);
    uint32_t o = profile_frame(p, FRAME_PYTHON, "outer", "/app/x.py", 10);
    uint32_t i = profile_frame(p, FRAME_PYTHON, "inner", "/app/x.py", 3);
    uint32_t j = profile_frame(p, FRAME_JIT, "py::inner:/app/x.py", NULL, 0);
    uint32_t k = profile_frame(p, FRAME_KERNEL, "do_syscall_64", NULL, 0);
    uint32_t a[] = {t, m, o, j, i}, b[] = {t, m, o, k};
    profile_add(p, a, 5, 30);
    profile_add(p, b, 4, 10);
    profile_set_command(p, "python3 <x>.py & \"quoted\"");
    p->meta.duration_s = 2.0;
    p->meta.frequency = 20;
    p->meta.period_ns = 50000000;
    profile_finish(p);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0)
        return -1;
    profile_free(&fx->p);
    free(fx);
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static int count_entries(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f && fscanf(f, "%d", &n) != 1)
        n = -1;
    if (f)
        pclose(f);
    return n;
}

static void test_formats(void **state)
{
    (void)state;
    enum output_format f;
    assert_int_equal(output_format_from_path("a.svg"), OUTPUT_SVG);
    assert_int_equal(output_format_from_path("A.SVG"), OUTPUT_SVG);
    assert_int_equal(output_format_from_path("a.json"), OUTPUT_SPEEDSCOPE);
    assert_int_equal(output_format_from_path("a.pb.gz"), OUTPUT_PPROF);
    assert_int_equal(output_format_from_path("a.pprof"), OUTPUT_PPROF);
    assert_int_equal(output_format_from_path("a.folded"), OUTPUT_FOLDED);
    assert_int_equal(output_format_from_path("a"), OUTPUT_FOLDED);
    assert_int_equal(output_format_from_path("-"), OUTPUT_FOLDED);
    assert_int_equal(output_format_from_path(NULL), OUTPUT_FOLDED);
    assert_int_equal(output_format_parse("speedscope", &f), 0);
    assert_int_equal(f, OUTPUT_SPEEDSCOPE);
    assert_int_equal(output_format_parse("PPROF", &f), 0);
    assert_int_equal(f, OUTPUT_PPROF);
    assert_int_equal(output_format_parse("png", &f), -EINVAL);
    for (int i = OUTPUT_FOLDED; i <= OUTPUT_PPROF; i++) {
        assert_int_equal(output_format_parse(output_format_name(i), &f), 0);
        assert_int_equal(f, i);
    }
}

static void test_atomic_write(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/out.folded", fx->dir);
    assert_int_equal(output_write(&fx->p, OUTPUT_FOLDED, path), 0);
    char *s = slurp(path, NULL);
    assert_string_equal(s, "main;outer (/app/x.py:10);do_syscall_64_[k] 10\n"
                           "main;outer (/app/x.py:10);py::inner:/app/x.py;inner (/app/x.py:3) 30\n");
    free(s);
    /* Replacing keeps no temporary file and gives a fresh inode (never rewritten in place). */
    struct stat a, b;
    assert_int_equal(stat(path, &a), 0);
    assert_int_equal(output_write(&fx->p, OUTPUT_SVG, path), 0);
    assert_int_equal(stat(path, &b), 0);
    assert_int_not_equal(a.st_ino, b.st_ino);
    assert_int_equal(count_entries(fx->dir), 1);
    /* Mode: 0644 under the umask. */
    mode_t um = umask(022);
    umask(um);
    assert_int_equal(b.st_mode & 0777, 0644 & ~um);
}

static void test_symlink_not_followed(void **state)
{
    struct fixture *fx = *state;
    char victim[128], link[128], dangling[128];
    snprintf(victim, sizeof(victim), "%s/victim", fx->dir);
    snprintf(link, sizeof(link), "%s/planted.svg", fx->dir);
    snprintf(dangling, sizeof(dangling), "%s/dangling.json", fx->dir);
    FILE *f = fopen(victim, "w");
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(symlink("/nonexistent/should-not-be-created", dangling), 0);

    assert_int_equal(output_write(&fx->p, OUTPUT_SVG, link), 0);
    char *s = slurp(victim, NULL);
    assert_string_equal(s, "precious\n");
    free(s);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));

    assert_int_equal(output_write(&fx->p, OUTPUT_SPEEDSCOPE, dangling), 0);
    assert_int_equal(lstat(dangling, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(access("/nonexistent/should-not-be-created", F_OK), -1);
}

/* A FIFO or a character device named as the output is written in place (renaming over it would
 * leave a regular file there); a symlink to one is still replaced, never followed; a block
 * device or a directory is refused. */
static void test_special_files(void **state)
{
    struct fixture *fx = *state;
    char fifo[128], got[128], link[128];
    snprintf(fifo, sizeof(fifo), "%s/fifo", fx->dir);
    snprintf(got, sizeof(got), "%s/got", fx->dir);
    snprintf(link, sizeof(link), "%s/link.svg", fx->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* the reader at the other end of the pipe */
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "cat '%s' > '%s'", fifo, got);
        _exit(system(cmd) == 0 ? 0 : 1);
    }
    assert_int_equal(output_write(&fx->p, OUTPUT_FOLDED, fifo), 0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    char *s = slurp(got, NULL);
    assert_non_null(strstr(s, "inner (/app/x.py:3) 30\n"));
    free(s);

    assert_int_equal(symlink(fifo, link), 0);
    assert_int_equal(output_write(&fx->p, OUTPUT_SVG, link), 0); /* would block if followed */
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));

    if (geteuid() == 0) {
        char null[128], blk[128];
        snprintf(null, sizeof(null), "%s/null", fx->dir);
        snprintf(blk, sizeof(blk), "%s/blk", fx->dir);
        assert_int_equal(mknod(null, S_IFCHR | 0666, makedev(1, 3)), 0);
        assert_int_equal(output_write(&fx->p, OUTPUT_SVG, null), 0);
        assert_int_equal(lstat(null, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
        assert_int_equal(mknod(blk, S_IFBLK | 0600, makedev(7, 200)), 0);
        assert_int_equal(output_write(&fx->p, OUTPUT_SVG, blk), -EINVAL);
    }
    assert_int_equal(output_write(&fx->p, OUTPUT_SVG, fx->dir), -EISDIR);
}

static void test_tmpfile_flags(void **state)
{
    struct fixture *fx = *state;
    char path[128], tmp[256];
    snprintf(path, sizeof(path), "%s/x.svg", fx->dir);
    int fd = output_tmpfile(path, tmp, sizeof(tmp));
    assert_true(fd >= 0);
    /* Same directory (so rename is atomic), hidden name, exclusive create. */
    assert_memory_equal(tmp, fx->dir, strlen(fx->dir));
    assert_non_null(strstr(tmp, "/.x.svg."));
    int fl = fcntl(fd, F_GETFD);
    assert_true(fl & FD_CLOEXEC);
    close(fd);
    unlink(tmp);
    /* A relative path stays relative. */
    char cwd[256];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(fx->dir), 0);
    fd = output_tmpfile("rel.svg", tmp, sizeof(tmp));
    assert_true(fd >= 0);
    assert_memory_equal(tmp, ".rel.svg.", 9);
    close(fd);
    unlink(tmp);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(output_tmpfile("", tmp, sizeof(tmp)), -EINVAL);
    assert_int_equal(output_tmpfile("/tmp/", tmp, sizeof(tmp)), -EISDIR);
    assert_int_equal(output_tmpfile(path, tmp, 8), -ENAMETOOLONG);
}

static void test_write_errors(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/no/such/dir/x.svg", fx->dir);
    assert_int_equal(output_write(&fx->p, OUTPUT_SVG, path), -ENOENT);
    /* A directory at the path: the rename fails, the temporary file is removed. */
    snprintf(path, sizeof(path), "%s/adir", fx->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_true(output_write(&fx->p, OUTPUT_SVG, path) < 0);
    assert_int_equal(count_entries(fx->dir), 1);
}

static void test_stdout(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/stdout.txt", fx->dir);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    close(fd);
    int rc = output_write(&fx->p, OUTPUT_FOLDED, "-");
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(rc, 0);
    char *s = slurp(path, NULL);
    assert_non_null(strstr(s, "inner (/app/x.py:3) 30\n"));
    free(s);
}

static void test_escape(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    escape_xml(f, "a<b>&\"'\x01 \xc3\xa9 \xff \xe2\x82 \xed\xa0\x80 \xef\xbf\xbe \xf0\x9f\x94\xa5");
    fputc('|', f);
    escape_json(f, "q\"\\\n\x1f \xc3\xa9 \xc0\xaf");
    fclose(f);
    assert_string_equal(buf, "a&lt;b&gt;&amp;&quot;&#39;? \xc3\xa9 ? ?? ??? ??? \xf0\x9f\x94\xa5|"
                             "q\\\"\\\\\\u000a\\u001f \xc3\xa9 ??");
    free(buf);
    char *d = escape_utf8_dup("ok \xc3\xa9 \xff\xc3 \xf0\x9f\x94\xa5");
    assert_string_equal(d, "ok \xc3\xa9 ?? \xf0\x9f\x94\xa5");
    free(d);
}

static void test_svg_content(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/f.svg", fx->dir);
    struct output_opts o = {.icicle = true};
    assert_int_equal(output_write_opts(&fx->p, OUTPUT_SVG, path, &o), 0);
    char *s = slurp(path, NULL);
    assert_non_null(strstr(s, "pyebpf: python3 &lt;x&gt;.py &amp; &quot;quoted&quot;"));
    assert_non_null(strstr(s, "40 samples · 2.0 s · 20 samples/s · 20 Hz · icicle"));
    assert_non_null(strstr(s, "data-icicle=\"1\""));
    assert_non_null(strstr(s, "data-k=\"jit\"><title>py::inner:/app/x.py\n30 samples (75.00%)</title>"));
    assert_non_null(strstr(s, "data-k=\"k\"><title>do_syscall_64_[k]\n10 samples (25.00%)</title>"));
    assert_non_null(strstr(s, "data-k=\"py\"><title>outer (/app/x.py:10)\n40 samples (100.00%)"));
    assert_null(strstr(s, "thread 9")); /* threads hidden by default */
    assert_non_null(strstr(s, "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\""));
    assert_non_null(strstr(s, "]]></script>\n</svg>\n"));
    free(s);
}

static void test_speedscope_content(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/f.json", fx->dir);
    assert_int_equal(output_write(&fx->p, OUTPUT_SPEEDSCOPE, path), 0);
    char *s = slurp(path, NULL);
    assert_non_null(strstr(s, "{\"name\":\"outer\",\"file\":\"/app/x.py\",\"line\":10}"));
    assert_non_null(strstr(s, "{\"name\":\"main\",\"file\":\"/usr/bin/python3.12\"}"));
    assert_non_null(
        strstr(s, "\"type\":\"sampled\",\"name\":\"thread 9 (python3)\",\"unit\":\"nanoseconds\""));
    assert_non_null(strstr(s, "\"endValue\":2000000000"));
    assert_non_null(strstr(s, "\"name\":\"python3 <x>.py & \\\"quoted\\\"\""));
    free(s);
}

/* Reads one varint at *p. */
static uint64_t varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (int s = 0;; s += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80))
            return v;
    }
}

static void test_pprof_content(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/f.pb.gz", fx->dir);
    assert_int_equal(output_write(&fx->p, OUTPUT_PPROF, path), 0);
    gzFile gz = gzopen(path, "rb");
    assert_non_null(gz);
    static uint8_t buf[1 << 16];
    int n = gzread(gz, buf, sizeof(buf));
    gzclose(gz);
    assert_true(n > 0);
    /* Walk the top-level fields: count samples and add up their first value. */
    const uint8_t *p = buf, *end = buf + n;
    unsigned samples = 0, strings = 0;
    uint64_t count = 0, period = 0;
    while (p < end) {
        uint64_t key = varint(&p);
        if ((key & 7) == 0) {
            uint64_t v = varint(&p);
            if (key >> 3 == 12)
                period = v;
            continue;
        }
        assert_int_equal(key & 7, 2);
        uint64_t len = varint(&p);
        const uint8_t *q = p, *qend = p + len;
        if (key >> 3 == 2) {
            samples++;
            while (q < qend) {
                uint64_t k = varint(&q), l = varint(&q);
                if (k >> 3 == 2) {
                    const uint8_t *v = q;
                    count += varint(&v);
                }
                q += (k & 7) == 2 ? l : 0;
            }
        }
        strings += key >> 3 == 6;
        p += len;
    }
    assert_true(p == end);
    assert_int_equal(samples, 2);
    assert_int_equal(count, 40);
    assert_int_equal(period, 50000000);
    assert_true(strings > 8);
}

static void test_summary(void **state)
{
    struct fixture *fx = *state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(summary_print(&fx->p, f, 2), 0);
    fclose(f);
    assert_string_equal(buf, "40 samples, top 2 by self time:\n"
                             "   self%  total%  function\n"
                             "   75.00   75.00  inner (/app/x.py)\n"
                             "   25.00   25.00  do_syscall_64_[k]\n");
    free(buf);
}

/* A run that caught nothing still writes valid, empty files in every format. */
static void test_empty_profile(void **state)
{
    struct fixture *fx = *state;
    struct profile e;
    assert_int_equal(profile_init(&e), 0);
    profile_finish(&e);
    static const char *names[] = {"e.folded", "e.svg", "e.json", "e.pb.gz"};
    for (int i = OUTPUT_FOLDED; i <= OUTPUT_PPROF; i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", fx->dir, names[i]);
        assert_int_equal(output_write(&e, output_format_from_path(path), path), 0);
        size_t len = 0;
        char *s = slurp(path, &len);
        assert_non_null(s);
        if (i == OUTPUT_FOLDED)
            assert_int_equal(len, 0);
        else
            assert_true(len > 0);
        if (i == OUTPUT_SVG)
            assert_non_null(strstr(s, "0 samples"));
        if (i == OUTPUT_SPEEDSCOPE)
            assert_non_null(strstr(s, "\"name\":\"all threads\""));
        free(s);
    }
    FILE *null = fopen("/dev/null", "w");
    assert_int_equal(summary_print(&e, null, 10), 0);
    fclose(null);
    profile_free(&e);
}

static void test_render_args(void **state)
{
    struct fixture *fx = *state;
    char in[128], out[128];
    snprintf(in, sizeof(in), "%s/in.folded", fx->dir);
    snprintf(out, sizeof(out), "%s/out.json", fx->dir);
    FILE *f = fopen(in, "w");
    fputs("thread 1 (a);main;f (/x.py:1) 5\nthread 2 (b);main;g (/x.py:2) 7\n", f);
    fclose(f);
    char *ok[] = {"render", in, "-o", out, "-q", "-F", "100", NULL};
    assert_int_equal(render_main(7, ok), 0);
    char *s = slurp(out, NULL);
    assert_non_null(strstr(s, "\"endValue\":70000000"));
    free(s);
    char *badfmt[] = {"render", in, "-f", "png", NULL};
    assert_int_equal(render_main(4, badfmt), 2);
    char *noinput[] = {"render", NULL};
    assert_int_equal(render_main(1, noinput), 2);
    char *badhz[] = {"render", in, "-F", "0", NULL};
    assert_int_equal(render_main(4, badhz), 2);
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/missing.folded", fx->dir);
    char *nofile[] = {"render", missing, "-o", out, NULL};
    assert_int_equal(render_main(4, nofile), 1);
    f = fopen(in, "w");
    fputs("garbage only\n", f);
    fclose(f);
    char *empty[] = {"render", in, "-o", out, NULL};
    assert_int_equal(render_main(4, empty), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test_setup_teardown(test_atomic_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_special_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmpfile_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stdout, setup, teardown),
        cmocka_unit_test(test_escape),
        cmocka_unit_test_setup_teardown(test_svg_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_speedscope_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pprof_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
