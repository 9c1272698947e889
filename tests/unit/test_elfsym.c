/*
 * elfsym, proc_symbolize and ksyms against independent decoders: `nm` on the test binary,
 * `nm -D` on libc and on Debian's stripped /usr/bin/python3.11 (dynamic symbols only), `nm -D`
 * on a dump of the vDSO, /proc/kallsyms read by hand; plus a separate debug file found by
 * build-id and by .gnu_debuglink, a deleted library, unknown addresses.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/elfsym.h"
#include "symbols/ksyms.h"
#include "util/maps.h"
#include "util/monotime.h"
#include "symbols/proc.h"

#include "elfcache.h"

#define LIBC  "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define PY311 "/usr/bin/python3.11"

struct nsym {
    uint64_t addr;
    char name[256];
};

struct range {
    uint64_t lo, hi;
};

/* Executable PT_LOAD ranges as readelf prints them (weak symbols may be data: data_start). */
static size_t exec_ranges(const char *path, struct range *r, size_t max)
{
    char cmd[4400], line[512], flags[8];
    snprintf(cmd, sizeof(cmd), "readelf -lW '%s' 2>/dev/null", path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t n = 0;
    unsigned long long off, va, pa, fs, ms;
    while (fgets(line, sizeof(line), fp))
        if (n < max &&
            sscanf(line, " LOAD %llx %llx %llx %llx %llx %7[RWE ]", &off, &va, &pa, &fs, &ms, flags) == 6 &&
            strchr(flags, 'E'))
            r[n++] = (struct range){va, va + ms};
    pclose(fp);
    return n;
}

/* Function symbols as nm prints them (T/t/W/w/i) inside executable segments, versions
 * ("@@GLIBC_2.2.5") cut off. Appends to *out. */
static size_t run_nm_more(const char *args, const char *path, struct nsym **out, size_t n)
{
    struct range rg[16];
    size_t nr = exec_ranges(path, rg, 16);
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null", args, path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t cap = n + 1024;
    struct nsym *v = realloc(*out, cap * sizeof(*v));
    char line[1024], type;
    unsigned long long addr;
    char name[256];
    while (fgets(line, sizeof(line), fp)) {
        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
            continue;
        bool exec = false;
        for (size_t i = 0; i < nr; i++)
            exec |= addr >= rg[i].lo && addr < rg[i].hi;
        if (!strchr("TtWwi", type) || !addr || !exec)
            continue;
        name[strcspn(name, "@")] = '\0';
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof(*v));
        v[n].addr = addr;
        snprintf(v[n].name, sizeof(v[n].name), "%s", name);
        n++;
    }
    pclose(fp);
    *out = v;
    return n;
}

static size_t run_nm(const char *args, const char *path, struct nsym **out)
{
    *out = NULL;
    return run_nm_more(args, path, out, 0);
}

/* Path of the debug file found by build-id, or "" */
static void debug_path(struct elf_file *f, char *buf, size_t size)
{
    size_t idlen;
    const uint8_t *id = elfsym_build_id(f, &idlen);
    int n = snprintf(buf, size, "/usr/lib/debug/.build-id/%02x/", id[0]);
    for (size_t i = 1; i < idlen; i++)
        n += snprintf(buf + n, size - (size_t)n, "%02x", id[i]);
    snprintf(buf + n, size - (size_t)n, ".debug");
}

/* True when nm lists `name` at addr (aliases share addresses). */
static bool nm_has(const struct nsym *v, size_t n, uint64_t addr, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].addr == addr && !strcmp(v[i].name, name))
            return true;
    return false;
}

static struct elf_file *open_file(const char *path, const char *root)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_file *f;
    assert_int_equal(elfsym_open(cache, fd, path, root, &f), 0);
    close(fd);
    return f;
}

/* Every nm symbol's start (and a byte inside it) resolves to a name nm lists at that address. */
static void compare_with_nm(struct elf_file *f, const char *nm_args, const char *path, size_t min_syms)
{
    struct nsym *v;
    size_t n = run_nm(nm_args, path, &v);
    assert_true(n >= min_syms);
    size_t own = n;
    if (elfsym_from_debug_file(f)) {
        /* names the debug file adds (local aliases such as __GI_*) are right too */
        char dbg[256];
        debug_path(f, dbg, sizeof(dbg));
        n = run_nm_more("", dbg, &v, n);
    }
    size_t checked = 0;
    for (size_t i = 0; i < own; i++) {
        uint64_t off;
        const char *name = elfsym_lookup(f, v[i].addr, &off);
        if (!name || off != 0 || !nm_has(v, n, v[i].addr, name))
            fail_msg("%s: %#llx: nm says %s, lookup says %s+%llu", path, (unsigned long long)v[i].addr,
                     v[i].name, name ? name : "(none)", (unsigned long long)off);
        checked++;
    }
    print_message("# %s: %zu nm symbols all resolved (%zu in table%s)\n", path, checked, elfsym_count(f),
                  elfsym_from_debug_file(f) ? ", from the debug file" : "");
    free(v);
}

static __attribute__((noinline)) int local_function(int x)
{
    asm volatile("" ::: "memory");
    return x * 3 + 1;
}

static void test_self_binary(void **state)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    struct elf_file *f = open_file(exe, "");
    compare_with_nm(f, "", exe, 20);
    assert_false(elfsym_from_debug_file(f));
    assert_non_null(elfsym_cfi(f));
    size_t idlen;
    assert_non_null(elfsym_build_id(f, &idlen));
    assert_int_equal(idlen, 20);
    /* The same file again: the cache hands out the same object. */
    struct elf_file *g = open_file(exe, "");
    assert_ptr_equal(f, g);
    elfsym_put(g);
    elfsym_put(f);
}

static void test_libc(void **state)
{
    struct elf_file *f = open_file(LIBC, "");
    compare_with_nm(f, "-D", LIBC, 1000);
    elfsym_put(f);
}

static void test_python_dynsym_only(void **state)
{
    if (access(PY311, R_OK))
        skip();
    struct elf_file *f = open_file(PY311, "");
    compare_with_nm(f, "-D", PY311, 1000);
    uint64_t off;
    /* non-PIE: link-time addresses are runtime addresses */
    struct nsym *v;
    size_t n = run_nm("-D", PY311, &v);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, "PyEval_EvalCode")) {
            const char *name = elfsym_lookup(f, v[i].addr + 5, &off);
            assert_non_null(name);
            assert_string_equal(name, "PyEval_EvalCode");
            assert_int_equal(off, 5);
        }
    free(v);
    assert_non_null(elfsym_cfi(f));
    elfsym_put(f);
}

static void expect_symbol(struct proc *p, const void *addr, const char *want, const char *module)
{
    struct symres r;
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)addr, &r), 0);
    if (!r.name || strcmp(r.name, want))
        fail_msg("%p: want %s, got %s", addr, want, r.name ? r.name : "(null)");
    assert_int_equal(r.kind, FRAME_NATIVE);
    if (module)
        assert_non_null(strstr(r.module, module));
}

static void test_proc_symbolize_self(void **state)
{
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    expect_symbol(p, (const char *)local_function + 3, "local_function", "test_elfsym");
    expect_symbol(p, (const void *)test_libc, "test_libc", "test_elfsym");

    /* libc: the name is one nm -D lists at the address dlsym gave */
    /* libc's own qsort, not a sanitizer's interceptor of the same name */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    void *pf = dlsym(libc, "qsort");
    struct symres r;
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)pf, &r), 0);
    assert_non_null(r.name);
    assert_int_equal(r.offset, 0);
    assert_non_null(strstr(r.module, "libc.so"));
    Dl_info di;
    assert_true(dladdr(pf, &di));
    struct nsym *v;
    size_t n = run_nm("-D", LIBC, &v);
    struct elf_file *lf = open_file(LIBC, "");
    if (elfsym_from_debug_file(lf)) {
        char dbg[256];
        debug_path(lf, dbg, sizeof(dbg));
        n = run_nm_more("", dbg, &v, n);
    }
    elfsym_put(lf);
    assert_true(nm_has(v, n, (uint64_t)((char *)pf - (char *)di.dli_fbase), r.name));
    free(v);

    /* Unknown addresses keep their module: a string constant in our binary has no symbol. */
    static const char here[] = "data, not code";
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)here, &r), 0);
    char buf[256];
    proc_format(&r, buf, sizeof(buf));
    assert_null(r.name);
    assert_string_equal(maps_basename(r.module), "test_elfsym");
    char want[64];
    snprintf(want, sizeof(want), "test_elfsym+0x%llx", (unsigned long long)r.offset);
    assert_string_equal(buf, want);

    /* Anonymous executable memory that nobody published: [unknown], kind JIT. */
    void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(anon != MAP_FAILED);
    assert_int_equal(proc_refresh(p), 0);
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)anon + 16, &r), 0);
    assert_null(r.name);
    assert_null(r.module);
    assert_int_equal(r.kind, FRAME_JIT);
    proc_format(&r, buf, sizeof(buf));
    assert_string_equal(buf, "[unknown]");
    munmap(anon, 4096);

    /* Not mapped at all. */
    assert_int_equal(proc_symbolize(p, 8, &r), -ENOENT);
    proc_format(&r, buf, sizeof(buf));
    assert_string_equal(buf, "[unknown]");
    proc_close(p);
}

/* The vDSO, compared with nm -D on a dump of our own image. */
static void test_vdso(void **state)
{
    const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        skip();
    struct maps m;
    assert_int_equal(maps_read(&m, getpid()), 0);
    const struct map_entry *e = maps_find(&m, (uint64_t)(uintptr_t)base);
    assert_non_null(e);
    assert_string_equal(e->path, "[vdso]");
    char path[] = "/tmp/pyebpf-vdso.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, base, e->end - e->start), (ssize_t)(e->end - e->start));
    close(fd);
    struct nsym *v;
    size_t n = run_nm("-D", path, &v);
    unlink(path);
    assert_true(n >= 4);
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    for (size_t i = 0; i < n; i++) {
        struct symres r;
        assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)base + v[i].addr + 1, &r), 0);
        assert_non_null(r.name);
        assert_true(nm_has(v, n, v[i].addr, r.name));
        assert_int_equal(r.offset, 1);
        assert_string_equal(r.module, "[vdso]");
    }
    print_message("# vdso: %zu symbols resolved\n", n);
    free(v);
    maps_free(&m);
    proc_close(p);
}

static int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* A stripped copy of our binary whose .symtab lives in a debug file under ROOT/usr/lib/debug. */
static void test_debug_file(void **state)
{
    char exe[4096], dir[] = "/tmp/pyebpf-dbg.XXXXXX";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_non_null(mkdtemp(dir));
    assert_int_equal(sh("objcopy --only-keep-debug '%s' %s/full.debug && "
                        "strip -o %s/stripped '%s' && objcopy --add-gnu-debuglink=%s/full.debug "
                        "%s/stripped %s/linked",
                        exe, dir, dir, exe, dir, dir, dir),
                     0);
    /* stripped: only .dynsym, which has no local_function */
    char path[4200];
    snprintf(path, sizeof(path), "%s/stripped", dir);
    /* The copies share the binary's build-id: each step gets its own cache. */
    struct elfsym_cache *saved = cache;
    assert_int_equal(elfsym_cache_new(&cache), 0);
    struct elf_file *f = open_file(path, dir);
    uint64_t off, addr;
    struct nsym *v;
    size_t nn = run_nm("", exe, &v);
    addr = 0;
    for (size_t i = 0; i < nn; i++)
        if (!strcmp(v[i].name, "local_function"))
            addr = v[i].addr;
    free(v);
    assert_true(addr != 0);
    const char *name = elfsym_lookup(f, addr, &off);
    assert_true(!name || strcmp(name, "local_function"));
    assert_false(elfsym_from_debug_file(f));
    elfsym_put(f);

    /* by build-id: ROOT/usr/lib/debug/.build-id/xx/rest.debug */
    size_t idlen;
    f = open_file(exe, "");
    const uint8_t *id = elfsym_build_id(f, &idlen);
    char hex[2 * 64 + 1] = "";
    for (size_t i = 0; i < idlen; i++)
        sprintf(hex + 2 * i, "%02x", id[i]);
    elfsym_put(f);
    assert_int_equal(sh("mkdir -p %s/usr/lib/debug/.build-id/%.2s && cp %s/full.debug "
                        "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
                        dir, hex, dir, dir, hex, hex + 2),
                     0);
    elfsym_cache_free(cache);
    assert_int_equal(elfsym_cache_new(&cache), 0);
    f = open_file(path, dir);
    assert_true(elfsym_from_debug_file(f));
    name = elfsym_lookup(f, addr + 2, &off);
    assert_non_null(name);
    assert_string_equal(name, "local_function");
    assert_int_equal(off, 2);
    elfsym_put(f);
    assert_int_equal(sh("rm -rf %s/usr/lib/debug/.build-id", dir), 0);

    /* by .gnu_debuglink: ROOT/usr/lib/debug/<dir of the file>/full.debug; the file is named
     * as the target sees it (/opt/app/linked) */
    assert_int_equal(sh("mkdir -p %s/usr/lib/debug/opt/app && cp %s/full.debug "
                        "%s/usr/lib/debug/opt/app/",
                        dir, dir, dir),
                     0);
    snprintf(path, sizeof(path), "%s/linked", dir);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    elfsym_cache_free(cache);
    assert_int_equal(elfsym_cache_new(&cache), 0);
    assert_int_equal(elfsym_open(cache, fd, "/opt/app/linked", dir, &f), 0);
    close(fd);
    assert_true(elfsym_from_debug_file(f));
    name = elfsym_lookup(f, addr, &off);
    assert_non_null(name);
    assert_string_equal(name, "local_function");
    elfsym_put(f);
    elfsym_cache_free(cache);
    cache = saved;
    sh("rm -rf %s", dir);
}

/* A library deleted after it was loaded is still read, through /proc/PID/map_files. */
static void test_deleted_library(void **state)
{
    char dir[] = "/tmp/pyebpf-del.XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/libzcopy.so", dir);
    assert_int_equal(sh("cp /usr/lib/x86_64-linux-gnu/libz.so.1 %s", path), 0);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    void *fn = dlsym(h, "zlibVersion");
    assert_non_null(fn);
    unlink(path);
    rmdir(dir);
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    struct maps m;
    assert_int_equal(maps_read(&m, getpid()), 0);
    const struct map_entry *e = maps_find(&m, (uint64_t)(uintptr_t)fn);
    assert_non_null(e);
    assert_true(e->deleted);
    maps_free(&m);
    expect_symbol(p, fn, "zlibVersion", "libzcopy.so");
    /* Names handed out stay valid after the library leaves the mappings. */
    struct symres r;
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)fn, &r), 0);
    dlclose(h);
    assert_int_equal(proc_refresh(p), 0);
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)fn, &(struct symres){0}), -ENOENT);
    assert_string_equal(r.name, "zlibVersion");
    assert_string_equal(maps_basename(r.module), "libzcopy.so");
    proc_close(p);
}

/* A library loaded after the mappings were read, met within the rate limit by a stack taken
 * after it was loaded (a module imported just before a thread blocked): the mappings are read
 * again at once and the frame is named. Addresses in no mapping at all do not re-read them on
 * every lookup: after one that finds nothing new, no more of them for a rate limit. */
static void test_loaded_since_read(void **state)
{
    char dir[] = "/tmp/pyebpf-late.XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/libzlate.so", dir);
    assert_int_equal(sh("cp /usr/lib/x86_64-linux-gnu/libz.so.1 %s", path), 0);
    /* A child, not this process: our own mappings move as we read them (a sanitizer's heap). */
    int go[2], back[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(back), 0);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]);
        close(back[0]);
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        uint64_t fn = h ? (uint64_t)(uintptr_t)dlsym(h, "zlibVersion") : 0;
        if (write(back[1], &fn, sizeof(fn)) != sizeof(fn))
            _exit(1);
        while (read(go[0], &c, 1) > 0) /* until the parent closes its end */
            ;
        _exit(0);
    }
    assert_true(pid > 0);
    close(go[0]);
    close(back[1]);
    struct proc *p;
    assert_int_equal(proc_open(&p, pid, cache), 0);
    uint64_t fn = 0;
    assert_int_equal(write(go[1], "x", 1), 1);
    assert_int_equal(read(back[0], &fn, sizeof(fn)), sizeof(fn));
    assert_true(fn != 0);
    struct symres r;
    proc_set_instant(p, monotime_ns());
    assert_int_equal(proc_symbolize(p, fn, &r), 0);
    assert_string_equal(r.name, "zlibVersion");

    struct proc_stats st0, st1;
    proc_get_stats(p, &st0);
    uint64_t t0 = monotime_ns();
    for (uint64_t a = 8; a < 8 + 100 * 16; a += 16) {
        proc_set_instant(p, monotime_ns());
        assert_int_equal(proc_symbolize(p, a, &r), -ENOENT);
    }
    proc_get_stats(p, &st1);
    uint64_t limits = (monotime_ns() - t0) / 20000000ull + 1;
    print_message("# 100 unmapped lookups: %lu re-reads in %lu rate limits\n",
                  (unsigned long)(st1.refreshes - st0.refreshes), (unsigned long)limits);
    assert_true(st1.refreshes - st0.refreshes <= 2 * limits);
    proc_close(p);
    close(go[1]);
    close(back[0]);
    waitpid(pid, NULL, 0);
    unlink(path);
    rmdir(dir);
}

/* Refreshing over and over keeps memory flat (paths interned, files referenced once). */
static void test_refresh_bounded(void **state)
{
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    struct symres r;
    assert_int_equal(proc_symbolize(p, (uint64_t)(uintptr_t)test_refresh_bounded, &r), 0);
    for (int i = 0; i < 50; i++)
        assert_int_equal(proc_refresh(p), 0);
    struct mallinfo2 before = mallinfo2();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 500; i++)
        assert_int_equal(proc_refresh(p), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    struct mallinfo2 after = mallinfo2();
    long grew = (long)after.uordblks - (long)before.uordblks;
    print_message("# 500 refreshes: heap in use changed by %ld bytes, %.1f us per refresh\n", grew,
                  ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 500 / 1000);
    assert_true(grew < 64 * 1024);
    assert_string_equal(r.name, "test_refresh_bounded");
    proc_close(p);
}

/* Start of the first mapping of a file whose path contains `name` (file offset 0). */
static uint64_t map_base(pid_t pid, const char *name)
{
    struct maps m;
    assert_int_equal(maps_read(&m, pid), 0);
    uint64_t base = 0;
    for (size_t i = 0; i < m.n && !base; i++)
        if (strstr(m.v[i].path, name) && m.v[i].offset == 0)
            base = m.v[i].start;
    maps_free(&m);
    return base;
}

/* A child sleeping in /bin/sleep, returned once it has exec'd and ld.so has mapped its libc:
 * another process whose mappings hold still. 0 when it did not get there within 5 s. */
static pid_t sleeper(void)
{
    char exe[64], path[256];
    pid_t pid = fork();

    if (pid == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
    for (int i = 0; i < 500; i++) {
        ssize_t n = readlink(exe, path, sizeof(path) - 1);
        path[n > 0 ? n : 0] = 0;
        if (strstr(path, "sleep") && map_base(pid, "/libc.so"))
            return pid;
        usleep(10 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return 0;
}

/* Another process whose mappings hold still (a sleeping child): a refresh that finds the same
 * mappings keeps the symbol cache; libc's qsort resolves at the child's base. */
static void test_refresh_unchanged(void **state)
{
    pid_t pid = sleeper();
    assert_true(pid > 0);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    uint64_t fn = (uint64_t)(uintptr_t)dlsym(libc, "qsort");
    uint64_t ip = fn - map_base(getpid(), "/libc.so") + map_base(pid, "/libc.so");
    struct proc *p;
    assert_int_equal(proc_open(&p, pid, cache), 0);
    struct symres r;
    assert_int_equal(proc_symbolize(p, ip, &r), 0);
    assert_non_null(r.name);
    assert_int_equal(r.offset, 0);
    assert_int_equal(proc_refresh(p), 0);
    struct proc_stats st0, st1;
    proc_get_stats(p, &st0);
    assert_int_equal(proc_symbolize(p, ip, &r), 0);
    proc_get_stats(p, &st1);
    assert_int_equal(st1.sym_hits, st0.sym_hits + 1);
    assert_int_equal(st1.files_opened, st0.files_opened);
    proc_close(p);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Frames in another process's vdso (a thread waiting with a timeout) are named from its image
 * and never make the samples' re-check read the mappings again: the vdso is no JIT's code. */
static void test_vdso_not_suspect(void **state)
{
    pid_t pid = sleeper();
    assert_true(pid > 0);
    uint64_t vdso = map_base(pid, "[vdso]");
    if (!vdso) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        skip(); /* a kernel without a vdso */
    }
    struct proc *p;
    assert_int_equal(proc_open(&p, pid, cache), 0);
    struct proc_stats st0, st1;
    proc_get_stats(p, &st0);
    struct symres r;
    for (uint64_t off = 0; off < 4096; off += 64) /* named or not, each a new frame */
        (void)proc_symbolize(p, vdso + off, &r);
    assert_int_equal(proc_recheck(p, monotime_ns() + 10 * 1000000000ull), 0);
    proc_get_stats(p, &st1);
    assert_int_equal(st1.refreshes, st0.refreshes);
    assert_int_equal(st1.jit_reloads, st0.jit_reloads);
    proc_close(p);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_ksyms(void **state)
{
    struct ksyms *k;
    int err = ksyms_open(&k);
    if (err == -EPERM || err == -EACCES)
        skip();
    assert_int_equal(err, 0);
    /* Independent: the first few text symbols as the file lists them. */
    FILE *fp = fopen("/proc/kallsyms", "r");
    char line[512], name[256], type;
    unsigned long long addr;
    int checked = 0;
    while (checked < 200 && fgets(line, sizeof(line), fp)) {
        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !strchr("tT", type) || !addr)
            continue;
        uint64_t off = 99;
        const char *got = ksyms_lookup(k, addr, &off);
        assert_non_null(got);
        assert_int_equal(off, 0);
        /* aliases: the name found must sit at the same address */
        checked++;
    }
    fclose(fp);
    assert_true(checked > 50);
    uint64_t off;
    assert_null(ksyms_lookup(k, 1, &off));
    ksyms_close(k);
}

/* Cost of symbolising one frame once warm: addresses spread over the test binary and libc. */
static void test_symbolize_cost(void **state)
{
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    static const char *const fns[] = {"qsort",  "printf", "malloc", "free", "memcpy",
                                      "strlen", "read",   "write",  "open", "close"};
    uint64_t addrs[20];
    for (int i = 0; i < 10; i++) {
        addrs[i] = (uint64_t)(uintptr_t)dlsym(libc, fns[i]) + 3;
        addrs[10 + i] = (uint64_t)(uintptr_t)test_symbolize_cost + (uint64_t)i * 8;
    }
    struct symres r;
    for (int i = 0; i < 20; i++)
        assert_int_equal(proc_symbolize(p, addrs[i], &r), 0);
    int iters = 20000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int k = 0; k < iters; k++)
        for (int i = 0; i < 20; i++)
            proc_symbolize(p, addrs[i], &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / iters / 20;
    print_message("# proc_symbolize: %.1f ns per frame (warm)\n", ns);
    proc_close(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_binary),
        cmocka_unit_test(test_libc),
        cmocka_unit_test(test_python_dynsym_only),
        cmocka_unit_test(test_proc_symbolize_self),
        cmocka_unit_test(test_vdso),
        cmocka_unit_test(test_debug_file),
        cmocka_unit_test(test_deleted_library),
        cmocka_unit_test(test_refresh_bounded),
        cmocka_unit_test(test_loaded_since_read),
        cmocka_unit_test(test_refresh_unchanged),
        cmocka_unit_test(test_vdso_not_suspect),
        cmocka_unit_test(test_symbolize_cost),
        cmocka_unit_test(test_ksyms),
    };
    return cmocka_run_group_tests(tests, elfcache_setup, elfcache_teardown);
}
