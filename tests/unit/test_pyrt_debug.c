/*
 * _Py_DebugOffsets per version (user/python/pyrt_debug.c): the .PyRuntime data of every interpreter on
 * the machine (pyenv 3.13.0; Debian's 3.14 and 3.15, release and debug builds, and the
 * free-threaded 3.14t and 3.15t, under build/pythons after `make test-pythons`) is parsed and
 * compared with what the interpreter itself says about its objects (code objects'
 * __basicsize__, sys.getsizeof of strings and bytes, Py_GIL_DISABLED); a default build's data
 * marked free-threaded is accepted only once it says where co_tlbc is; then the refusals: bad
 * cookie, version mismatch, unknown minor, pre-release, a layout read with another version's
 * table.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "python/pyrt.h"

struct interp {
    const char *exe; /* the ELF holding .PyRuntime (python or libpython) */
    const char *run; /* how to start it (a wrapper for the unpacked ones) */
    unsigned minor;
};

static const struct interp interps[] = {
    {"/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", "/root/.pyenv/versions/3.13.0/bin/python3.13",
     13},
    {"build/pythons/root/usr/bin/python3.14", "build/pythons/bin/python3.14", 14},
    {"build/pythons/root/usr/bin/python3.15", "build/pythons/bin/python3.15", 15},
    {"build/pythons/root/usr/bin/python3.14d", "build/pythons/bin/python3.14d", 14},
    {"build/pythons/root/usr/bin/python3.15d", "build/pythons/bin/python3.15d", 15},
    {"build/pythons/ft/3.14t/bin/python3.14t", "build/pythons/bin/python3.14t", 14},
    {"build/pythons/ft/3.15t/bin/python3.15t", "build/pythons/bin/python3.15t", 15},
};

/* The .PyRuntime section's first bytes and the Py_Version value, straight from the file. */
static int read_runtime(const char *path, uint8_t *buf, size_t len, uint32_t *hex)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t shstrndx = 0;
    int rc = -ENOENT;
    uint64_t ver_addr = 0;
    if (!e || elf_getshdrstrndx(e, &shstrndx) != 0)
        goto out;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        gelf_getshdr(s, &sh);
        if (sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
                strcmp(elf_strptr(e, sh.sh_link, sym.st_name), "Py_Version") == 0)
                ver_addr = sym.st_value;
        }
    }
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        gelf_getshdr(s, &sh);
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".PyRuntime") == 0 && sh.sh_size >= len &&
            pread(fd, buf, len, (off_t)sh.sh_offset) == (ssize_t)len)
            rc = 0;
        if (ver_addr >= sh.sh_addr && ver_addr + 4 <= sh.sh_addr + sh.sh_size && sh.sh_type == SHT_PROGBITS &&
            (sh.sh_flags & SHF_ALLOC) &&
            pread(fd, hex, 4, (off_t)(sh.sh_offset + ver_addr - sh.sh_addr)) != 4)
            rc = -EIO;
    }
    if (!ver_addr)
        rc = -ENOENT;
out:
    if (e)
        elf_end(e);
    close(fd);
    return rc;
}

/* One integer the interpreter prints about itself. */
static long ask(const char *run, const char *expr)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s -I -c 'import sys; print(%s)' 2>/dev/null", run, expr);
    FILE *p = popen(cmd, "r");
    long v = -1;
    if (!p)
        return -1;
    if (fscanf(p, "%ld", &v) != 1)
        v = -1;
    pclose(p);
    return v;
}

static void real_interpreters(void **state)
{
    int tested = 0;
    for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++) {
        const struct interp *in = &interps[i];
        uint8_t buf[1024];
        uint32_t hex = 0;
        if (access(in->exe, R_OK) != 0 || access(in->run, X_OK) != 0) {
            fprintf(stderr, "# SKIP python3.%u: %s absent (make test-pythons fetches 3.14 and 3.15)\n",
                    in->minor, in->exe);
            continue;
        }
        size_t need = pyrt_debug_offsets_size(in->minor);
        assert_true(need > 0 && need <= sizeof(buf));
        assert_int_equal(read_runtime(in->exe, buf, need, &hex), 0);
        assert_int_equal((hex >> 16) & 0xff, in->minor);

        struct pyrt_layout L;
        char err[256] = "";
        memset(&L, 0, sizeof(L));
        int rc = pyrt_debug_offsets(&L, buf, need, hex, err, sizeof(err));
        if (rc)
            fprintf(stderr, "# %s: %s\n", in->exe, err);
        assert_int_equal(rc, 0);
        /* What the interpreter says about its own objects. */
        assert_int_equal(L.co_code_adaptive, ask(in->run, "type((lambda: 0).__code__).__basicsize__"));
        assert_int_equal(L.str_ascii_data + 1, ask(in->run, "sys.getsizeof(\"\")"));
        /* a fresh UCS-2 string (no cached UTF-8): header + 2 code units of 2 bytes with the NUL */
        assert_int_equal(L.str_compact_data + 4, ask(in->run, "sys.getsizeof(chr(0x101))"));
        assert_int_equal(L.bytes_ob_sval + 1, ask(in->run, "sys.getsizeof(b\"\")"));
        /* The object header: 16 bytes, or 32 in a free-threaded build (ob_tid, flags and two
         * reference counts before ob_type); co_tlbc there only. */
        const long ft = ask(in->run, "__import__('sysconfig').get_config_var('Py_GIL_DISABLED') or 0");
        assert_int_equal(L.free_threaded, ft == 1);
        assert_int_equal(L.var_ob_size, ft == 1 ? 32 : 16);
        assert_int_equal(L.ob_type, ft == 1 ? 24 : 8);
        assert_true(ft == 1 ? L.co_tlbc > L.ob_type && L.co_tlbc < L.co_code_adaptive : L.co_tlbc == 0);
        if (ft == 0) {
            /* Marked free-threaded, a default build's data is refused while co_tlbc is 0, and
             * accepted once the word after co_code_adaptive (where the code_object group keeps
             * co_tlbc) names a place in the header. */
            uint8_t fake[1024];
            uint64_t one = 1, at = 0, adaptive = L.co_code_adaptive, tlbc = adaptive - 8;
            memcpy(fake, buf, sizeof(fake));
            memcpy(fake + 16, &one, 8);
            rc = pyrt_debug_offsets(&L, fake, need, hex, err, sizeof(err));
            assert_int_equal(rc, -EPROTO);
            assert_non_null(strstr(err, "co_tlbc"));
            for (size_t o = 24; o + 16 <= need && !at; o += 8)
                if (!memcmp(fake + o, &adaptive, 8) && !memcmp(fake + o + 8, &at, 8))
                    at = o + 8;
            assert_true(at != 0);
            memcpy(fake + at, &tlbc, 8);
            assert_int_equal(pyrt_debug_offsets(&L, fake, need, hex, err, sizeof(err)), 0);
            assert_true(L.free_threaded && L.co_tlbc == tlbc);
        }
        /* 3.14 made f_executable a tagged reference; the owner enum changed in 3.14 and 3.15. */
        assert_true(in->minor >= 14 ? L.f_code_mask == ~(uint64_t)3 : L.f_code_mask == ~(uint64_t)0);
        assert_int_equal(L.f_owner_max, in->minor == 14 ? 4 : 3);
        assert_true(L.ts_current_frame && !L.ts_cframe && L.f_is_entry == -1);

        /* Read with a neighbour's table, the same bytes must be refused, not misread. */
        for (unsigned other = 13; other <= 15; other++) {
            if (other == in->minor || pyrt_debug_offsets_size(other) > sizeof(buf))
                continue;
            uint8_t fake[1024];
            memcpy(fake, buf, sizeof(fake));
            uint64_t v = ((uint64_t)3 << 24) | ((uint64_t)other << 16) | 0xf0;
            memcpy(fake + 8, &v, 8);
            rc = pyrt_debug_offsets(&L, fake, sizeof(fake), (uint32_t)v, err, sizeof(err));
            assert_int_equal(rc, -EPROTO);
            assert_non_null(strstr(err, "expected"));
        }
        tested++;
    }
    if (!tested)
        skip();
}

/* A minimal, well-formed 3.14 description built by hand (every size 0x100, offsets 8). */
static size_t forge(uint8_t *b, size_t cap, uint64_t version, uint64_t ft)
{
    size_t n = pyrt_debug_offsets_size(14);
    assert_true(n <= cap);
    for (size_t i = 24; i < n; i += 8) {
        uint64_t v = 8;
        memcpy(b + i, &v, 8);
    }
    /* sizes of the groups with one: recognisable because the table says where they are */
    memcpy(b, "xdebugpy", 8);
    memcpy(b + 8, &version, 8);
    memcpy(b + 16, &ft, 8);
    return n;
}

static void refusals(void **state)
{
    uint8_t b[1024] = {0};
    char err[256];
    struct pyrt_layout L;

    /* Not a cookie. */
    memcpy(b, "xdebugpz", 8);
    assert_int_equal(pyrt_debug_offsets(&L, b, sizeof(b), 0x030e0af0, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "cookie"));

    /* Version field disagrees with Py_Version. */
    forge(b, sizeof(b), 0x030d00f0, 0);
    assert_int_equal(pyrt_debug_offsets(&L, b, sizeof(b), 0x030e0af0, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "Py_Version"));

    /* A version after the last known one. */
    forge(b, sizeof(b), 0x031000f0, 0);
    assert_int_equal(pyrt_debug_offsets(&L, b, sizeof(b), 0x031000f0, err, sizeof(err)), -ENOTSUP);
    assert_non_null(strstr(err, "3.16"));
    assert_non_null(strstr(err, "refusing"));
    assert_int_equal(pyrt_debug_offsets_size(16), 0);

    /* A pre-release. */
    forge(b, sizeof(b), 0x030f00b4, 0);
    assert_int_equal(pyrt_debug_offsets(&L, b, sizeof(b), 0x030f00b4, err, sizeof(err)), -ENOTSUP);
    assert_non_null(strstr(err, "beta 4"));

    /* Short buffer. */
    forge(b, sizeof(b), 0x030e0af0, 0);
    assert_int_equal(pyrt_debug_offsets(&L, b, 100, 0x030e0af0, err, sizeof(err)), -EINVAL);

    /* Every size 8 with offsets 8: each offset lies outside its struct. */
    assert_int_equal(pyrt_debug_offsets(&L, b, sizeof(b), 0x030e0af0, err, sizeof(err)), -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_interpreters),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
