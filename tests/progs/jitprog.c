/*
 * jitprog: a tiny JIT for tests. It writes three x86-64 frame-pointer trampolines into an
 * executable arena, chains them main -> jit_a -> jit_b -> jit_c -> innermost() (a C function),
 * publishes them through libpyjit and calls the chain.
 *
 *   jitprog [--sinks gdb,jitdump,perfmap] [--batch N] [--jitdump-dir DIR] [--regions N]
 *           [--spin SECONDS | --stop | --wait]
 *   jitprog [--sinks ...] [--jitdump-dir DIR] --reuse SECONDS
 *
 *   --sinks      sinks to switch on (default: $JITPROG_SINKS, else gdb)
 *   --batch      regions per GDB image (pyjit_options.gdb_batch)
 *   --regions N  also publish N extra trampolines (extra_0 ...), for scaling tests
 *   --spin S     burn CPU for S seconds inside innermost() (for profilers)
 *   --stop       raise SIGSTOP inside innermost() (for gdb -p), return when continued
 *   --wait       sleep inside innermost() until killed
 *   --reuse S    one code slot, two lives: a trampoline published as "first_fn" calls
 *                innermost(), which spins S seconds; then it is retired, written again at the
 *                same address, published as "second_fn" and spun in for S seconds more (what a
 *                JIT does when it frees code and hands the memory to other code)
 *
 * Before entering the chain it prints one line "ready PID jit_a=ADDR jit_b=ADDR jit_c=ADDR" on
 * stdout ("ready PID slot=ADDR" with --reuse). Exit status 0 on success.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pyjit.h"

/* push %rbp; mov %rsp,%rbp; movabs $target,%rax; call *%rax; pop %rbp; ret */
static const uint8_t TRAMPOLINE[] = {
    0x55,                                  /* 0  push %rbp */
    0x48, 0x89, 0xe5,                      /* 1  mov %rsp,%rbp */
    0x48, 0xb8, 0,    0, 0, 0, 0, 0, 0, 0, /* 4  movabs $target,%rax */
    0xff, 0xd0,                            /* 14 call *%rax */
    0x5d,                                  /* 16 pop %rbp */
    0xc3,                                  /* 17 ret */
};
enum { T_PUSH_END = 1, T_SETUP_END = 4, T_TARGET = 6, T_POP_END = 17 };

enum mode { MODE_RETURN, MODE_SPIN, MODE_STOP, MODE_WAIT };
static enum mode mode;
static double spin_seconds;
static volatile uint64_t sink_counter;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The innermost C function the JIT chain calls; a breakpoint target for gdb. */
__attribute__((noinline)) long innermost(long x)
{
    switch (mode) {
    case MODE_SPIN: {
        double end = now() + spin_seconds;
        while (now() < end)
            for (int i = 0; i < 100000; i++)
                sink_counter += (uint64_t)i * (uint64_t)x;
        break;
    }
    case MODE_STOP:
        raise(SIGSTOP);
        break;
    case MODE_WAIT:
        for (;;)
            pause();
    case MODE_RETURN:
        break;
    }
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static unsigned parse_sinks(const char *s)
{
    unsigned m = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "gdb"))
            m |= PYJIT_SINK_GDB;
        else if (!strcmp(t, "jitdump"))
            m |= PYJIT_SINK_JITDUMP;
        else if (!strcmp(t, "perfmap"))
            m |= PYJIT_SINK_PERFMAP;
        else if (!strcmp(t, "all"))
            m |= PYJIT_SINK_ALL;
        else if (strcmp(t, "none")) {
            fprintf(stderr, "jitprog: unknown sink %s\n", t);
            exit(2);
        }
    }
    free(copy);
    return m;
}

static void emit(uint8_t *at, const void *target)
{
    uint64_t t = (uint64_t)(uintptr_t)target;
    memcpy(at, TRAMPOLINE, sizeof(TRAMPOLINE));
    memcpy(at + T_TARGET, &t, 8);
}

static struct pyjit_region region(const uint8_t *code, const char *name)
{
    return (struct pyjit_region){.code = code,
                                 .size = sizeof(TRAMPOLINE),
                                 .name = name,
                                 .unwind = PYJIT_UNWIND_TRAMPOLINE,
                                 .push_end = T_PUSH_END,
                                 .setup_end = T_SETUP_END,
                                 .pop_end = T_POP_END};
}

static void *arena(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Calls jit_a through a pointer, so main is the JIT chain's caller. */
__attribute__((noinline)) static long run_chain(long (*entry)(long), long x)
{
    long r = entry(x);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* --reuse: the slot is written, published, run and retired twice, under two names. */
static int run_reuse(struct pyjit *jit, double seconds)
{
    static const char *const names[2] = {"first_fn", "second_fn"};
    size_t len = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *slot = arena(len);
    if (!slot) {
        perror("jitprog: mmap");
        return 1;
    }
    mode = MODE_SPIN;
    spin_seconds = seconds;
    for (int i = 0; i < 2; i++) {
        if (mprotect(slot, len, PROT_READ | PROT_WRITE)) {
            perror("jitprog: mprotect");
            return 1;
        }
        emit(slot, (const void *)innermost);
        if (mprotect(slot, len, PROT_READ | PROT_EXEC)) {
            perror("jitprog: mprotect");
            return 1;
        }
        struct pyjit_region r = region(slot, names[i]);
        uint64_t id;
        int err = pyjit_publish(jit, &r, &id);
        if (err) {
            fprintf(stderr, "jitprog: publish %s: %s\n", names[i], strerror(-err));
            return 1;
        }
        if (i == 0) {
            printf("ready %d slot=%p\n", (int)getpid(), (void *)slot);
            fflush(stdout);
        }
        long ret = run_chain((long (*)(long))(void *)slot, 41);
        pyjit_retire(jit, id);
        if (ret != 42) {
            fprintf(stderr, "jitprog: %s returned %ld\n", names[i], ret);
            return 1;
        }
    }
    pyjit_close(jit);
    munmap(slot, len);
    return 0;
}

int main(int argc, char **argv)
{
#ifndef __x86_64__
    fprintf(stderr, "jitprog: x86-64 only\n");
    return 2;
#endif
    const char *env = getenv("JITPROG_SINKS");
    struct pyjit_options o = {.sinks = env && *env ? parse_sinks(env) : PYJIT_SINK_GDB};
    long extra = 0;
    double reuse = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--sinks") && v)
            o.sinks = parse_sinks(argv[++i]);
        else if (!strcmp(a, "--batch") && v)
            o.gdb_batch = (unsigned)atoi(argv[++i]);
        else if (!strcmp(a, "--jitdump-dir") && v)
            o.jitdump_dir = argv[++i];
        else if (!strcmp(a, "--regions") && v)
            extra = atol(argv[++i]);
        else if (!strcmp(a, "--spin") && v)
            mode = MODE_SPIN, spin_seconds = atof(argv[++i]);
        else if (!strcmp(a, "--stop"))
            mode = MODE_STOP;
        else if (!strcmp(a, "--wait"))
            mode = MODE_WAIT;
        else if (!strcmp(a, "--reuse") && v)
            reuse = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: jitprog [--sinks gdb,jitdump,perfmap] [--batch N] [--jitdump-dir DIR] "
                            "[--regions N] [--spin SECONDS | --stop | --wait | --reuse SECONDS]\n");
            return 2;
        }
    }

    struct pyjit *jit;
    int err = pyjit_open(&jit, &o);
    if (err) {
        fprintf(stderr, "jitprog: pyjit_open: %s\n", strerror(-err));
        return 1;
    }
    if (reuse > 0)
        return run_reuse(jit, reuse);
    size_t stride = pyjit_region_stride(jit, sizeof(TRAMPOLINE));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (3 * stride + page - 1) / page * page;
    uint8_t *code = arena(len);
    if (!code) {
        perror("jitprog: mmap");
        return 1;
    }
    uint8_t *a = code, *b = code + stride, *c = code + 2 * stride;
    emit(c, (const void *)innermost);
    emit(b, c);
    emit(a, b);
    if (mprotect(code, len, PROT_READ | PROT_EXEC)) {
        perror("jitprog: mprotect");
        return 1;
    }
    struct pyjit_region rs[3] = {region(a, "jit_a"), region(b, "jit_b"), region(c, "jit_c")};
    uint64_t ids[3];
    for (int i = 0; i < 3; i++)
        if ((err = pyjit_publish(jit, &rs[i], &ids[i]))) {
            fprintf(stderr, "jitprog: publish %s: %s\n", rs[i].name, strerror(-err));
            return 1;
        }

    if (extra > 0) {
        size_t xlen = ((size_t)extra * stride + page - 1) / page * page;
        uint8_t *x = arena(xlen);
        if (!x) {
            perror("jitprog: mmap");
            return 1;
        }
        for (long i = 0; i < extra; i++)
            emit(x + i * stride, (const void *)innermost);
        mprotect(x, xlen, PROT_READ | PROT_EXEC);
        double t0 = now();
        for (long i = 0; i < extra; i++) {
            char name[32];
            snprintf(name, sizeof(name), "extra_%ld", i);
            struct pyjit_region r = region(x + i * stride, name);
            if ((err = pyjit_publish(jit, &r, NULL))) {
                fprintf(stderr, "jitprog: publish %s: %s\n", name, strerror(-err));
                return 1;
            }
        }
        fprintf(stderr, "jitprog: published %ld extra regions in %.3f s\n", extra, now() - t0);
    }

    printf("ready %d jit_a=%p jit_b=%p jit_c=%p\n", (int)getpid(), (void *)a, (void *)b, (void *)c);
    fflush(stdout);
    long r = run_chain((long (*)(long))(void *)a, 41);
    if (r != 42) {
        fprintf(stderr, "jitprog: chain returned %ld\n", r);
        return 1;
    }
    for (int i = 0; i < 3; i++)
        pyjit_retire(jit, ids[i]);
    pyjit_close(jit);
    munmap(code, len);
    return 0;
}
