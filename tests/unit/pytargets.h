/*
 * What the Python-reader tests share: the interpreters they run against and the remote memory
 * helpers they forge and inspect a target's memory with (failures are test failures).
 */
#ifndef PYEBPF_TESTS_PYTARGETS_H
#define PYEBPF_TESTS_PYTARGETS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* tests/pythons, the one list of interpreters, as paths (from the repository root, where
 * tests/run starts every test); a missing one is a skip. */
static const char *pythons[] = {
#include "pythons.h"
};
#define NPY (sizeof(pythons) / sizeof(pythons[0]))

static inline void wmem(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
    struct iovec l = {(void *)buf, len}, r = {(void *)(uintptr_t)addr, len};
    assert_int_equal(process_vm_writev(pid, &l, 1, &r, 1, 0), (ssize_t)len);
}

static inline void w64(pid_t pid, uint64_t addr, uint64_t v)
{
    wmem(pid, addr, &v, 8);
}

static inline uint64_t rd64(pid_t pid, uint64_t addr)
{
    uint64_t v = 0;
    struct iovec l = {&v, 8}, r = {(void *)(uintptr_t)addr, 8};
    assert_int_equal(process_vm_readv(pid, &l, 1, &r, 1, 0), 8);
    return v;
}

static inline uint8_t rd8(pid_t pid, uint64_t addr)
{
    uint8_t v = 0;
    struct iovec l = {&v, 1}, r = {(void *)(uintptr_t)addr, 1};
    assert_int_equal(process_vm_readv(pid, &l, 1, &r, 1, 0), 1);
    return v;
}

#endif
