/*
 * Unit tests for user/capture/kbtf.c: BTF blobs built here by the format's rules
 * (Documentation/bpf/btf.rst: anonymous members, a member path, bitfields, a bad header, a cut
 * type section), then the running kernel's struct offsets against a reference that bpftool and
 * the compiler computed (koff_ref.c, generated into koff_ref.h at build time).
 */
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

#include "capture/kbtf.h"

/* -- A blob built by hand ---------------------------------------------------------------------- */

struct blob {
    uint8_t types[1024];
    uint32_t tlen;
    char strs[256];
    uint32_t slen;
};

static uint32_t str(struct blob *b, const char *s)
{
    uint32_t at = b->slen;

    if (!*s)
        return 0;
    memcpy(b->strs + at, s, strlen(s) + 1);
    b->slen += (uint32_t)strlen(s) + 1;
    return at;
}

static void put32(struct blob *b, uint32_t v)
{
    memcpy(b->types + b->tlen, &v, 4);
    b->tlen += 4;
}

/* kind, vlen, kind_flag, then size or type */
static void type(struct blob *b, const char *name, unsigned kind, unsigned vlen, unsigned kflag, uint32_t st)
{
    put32(b, str(b, name));
    put32(b, (kflag << 31) | (kind << 24) | vlen);
    put32(b, st);
}

static void member(struct blob *b, const char *name, uint32_t type_id, uint32_t offset)
{
    put32(b, str(b, name));
    put32(b, type_id);
    put32(b, offset);
}

/* Writes header + types + strings to path; `cut` bytes are dropped from the end of the types. */
static void write_blob(struct blob *b, const char *path, uint16_t magic, uint32_t cut)
{
    uint32_t hdr[6] = {0, 24, 0, b->tlen - cut, b->tlen - cut, b->slen};
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    memcpy(hdr, &magic, 2);
    ((uint8_t *)hdr)[2] = 1; /* version */
    fwrite(hdr, sizeof(hdr), 1, f);
    fwrite(b->types, 1, b->tlen - cut, f);
    fwrite(b->strs, 1, b->slen, f);
    fclose(f);
}

/*
 * [1] int (4 bytes)          [2] unsigned long (8)     [3] struct inner { int a; unsigned long b; }
 * [4] union (anonymous) { int u; struct inner in; }    [5] typedef inner_t → 3
 * [6] struct outer (kind_flag: bitfields) {
 *         int x : 3;   (bit 0)        int y;  (bit 32)    union { ... } (anonymous, bit 64)
 *         inner_t nest (bit 256)      int arr[4] (bit 448) }
 * [7] array of 4 × int   [8] const → 6 (a qualifier is looked through)
 */
static struct blob make_blob(void)
{
    struct blob b = {.slen = 1}; /* strings start with "" */

    type(&b, "int", 1, 0, 0, 4);
    put32(&b, 32); /* INT encoding: bits */
    type(&b, "unsigned long", 1, 0, 0, 8);
    put32(&b, 64);
    type(&b, "inner", 4, 2, 0, 16);
    member(&b, "a", 1, 0);
    member(&b, "b", 2, 64);
    type(&b, "", 5, 2, 0, 16);
    member(&b, "u", 1, 0);
    member(&b, "in", 3, 0);
    type(&b, "inner_t", 8, 0, 0, 3);
    type(&b, "outer", 4, 5, 1, 72);
    member(&b, "x", 1, (3u << 24) | 0);
    member(&b, "y", 1, 32);
    member(&b, "", 4, 64);
    member(&b, "nest", 5, 256);
    member(&b, "arr", 7, 448);
    type(&b, "", 3, 0, 0, 0); /* ARRAY */
    put32(&b, 1);
    put32(&b, 1);
    put32(&b, 4);
    type(&b, "", 10, 0, 0, 6);
    return b;
}

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/pyebpf-kbtf.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_members(void **state)
{
    struct blob b = make_blob();
    char path[128];
    struct kbtf k;
    uint32_t off, size;

    snprintf(path, sizeof(path), "%s/ok.btf", dir);
    write_blob(&b, path, 0xeB9F, 0);
    assert_int_equal(kbtf_open(&k, path), 0);

    assert_int_equal(kbtf_member(&k, "outer", "y", &off, &size), 0);
    assert_int_equal(off, 4);
    assert_int_equal(size, 4);
    /* through the anonymous union */
    assert_int_equal(kbtf_member(&k, "outer", "u", &off, &size), 0);
    assert_int_equal(off, 8);
    assert_int_equal(kbtf_member(&k, "outer", "in.b", &off, &size), 0);
    assert_int_equal(off, 16);
    assert_int_equal(size, 8);
    /* a path through a typedef */
    assert_int_equal(kbtf_member(&k, "outer", "nest.b", &off, &size), 0);
    assert_int_equal(off, 40);
    assert_int_equal(kbtf_member(&k, "outer", "nest", &off, &size), 0);
    assert_int_equal(off, 32);
    assert_int_equal(size, 16);
    assert_int_equal(kbtf_member(&k, "outer", "arr", &off, &size), 0);
    assert_int_equal(off, 56);
    assert_int_equal(size, 16);
    /* a bitfield has no byte offset; missing names */
    assert_int_equal(kbtf_member(&k, "outer", "x", &off, &size), -EINVAL);
    assert_int_equal(kbtf_member(&k, "outer", "z", &off, &size), -ENOENT);
    assert_int_equal(kbtf_member(&k, "outer", "y.a", &off, &size), -ENOENT);
    assert_int_equal(kbtf_member(&k, "nothere", "y", &off, &size), -ENOENT);
    /* a prefix of a name is not the name */
    assert_int_equal(kbtf_member(&k, "outer", "ne", &off, &size), -ENOENT);
    assert_int_equal(kbtf_size(&k, "outer", &size), 0);
    assert_int_equal(size, 72);
    assert_int_equal(kbtf_size(&k, "inner", &size), 0);
    assert_int_equal(size, 16);
    assert_int_equal(k.ntypes, 8); /* a missing name walked them all */
    kbtf_close(&k);
}

static void test_bad_files(void **state)
{
    struct blob b = make_blob();
    char path[128];
    struct kbtf k;
    uint32_t off, size;

    snprintf(path, sizeof(path), "%s/magic.btf", dir);
    write_blob(&b, path, 0x9FeB, 0); /* the other byte order */
    assert_int_equal(kbtf_open(&k, path), -EINVAL);
    snprintf(path, sizeof(path), "%s/cut.btf", dir);
    write_blob(&b, path, 0xeB9F, 8); /* the last record cut: found where the walk reaches it */
    assert_int_equal(kbtf_open(&k, path), 0);
    assert_int_equal(kbtf_member(&k, "outer", "y", &off, &size), 0);
    assert_int_equal(kbtf_member(&k, "nothere", "y", &off, &size), -EINVAL);
    assert_int_equal(kbtf_size(&k, "nothere", &size), -EINVAL);
    kbtf_close(&k);
    snprintf(path, sizeof(path), "%s/empty.btf", dir);
    fclose(fopen(path, "w"));
    assert_int_equal(kbtf_open(&k, path), -EINVAL);
    snprintf(path, sizeof(path), "%s/absent.btf", dir);
    assert_int_equal(kbtf_open(&k, path), -ENOENT);
}

/* -- The running kernel against bpftool + the compiler ----------------------------------------- */

static const struct {
    const char *type, *member;
    unsigned long off, size;
} ref[] = {
#include "koff_ref.h"
};

static void test_kernel(void **state)
{
    struct kbtf k;
    uint32_t off, size;

    if (access("/sys/kernel/btf/vmlinux", R_OK))
        skip(); /* no kernel BTF here */
    assert_int_equal(kbtf_open(&k, NULL), 0);
    for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
        print_message("%s.%s: reference %lu (%lu bytes)\n", ref[i].type, ref[i].member, ref[i].off,
                      ref[i].size);
        assert_int_equal(kbtf_member(&k, ref[i].type, ref[i].member, &off, &size), 0);
        assert_int_equal(off, ref[i].off);
        if (ref[i].size) /* 0: a flexible array */
            assert_int_equal(size, ref[i].size);
    }
    assert_int_equal(kbtf_size(&k, "upid", &size), 0);
    assert_int_equal(size, REF_UPID_SIZE);
    kbtf_close(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_kernel),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
