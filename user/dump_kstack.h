/*
 * dump_kstack — a thread's kernel stack as /proc/PID/task/TID/stack prints it, turned back into
 * return addresses, for `dump --kernel` where no BPF snapshot can be taken (the kernel prints
 * names and offsets, never addresses; root only).
 */
#ifndef PYEBPF_DUMP_KSTACK_H
#define PYEBPF_DUMP_KSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ksyms;

/* Up to `max` return addresses, leaf first, into out; their number into *n. 0, or a negative
 * errno (-EPERM, -EACCES: the file is root's; -ENOENT: the thread is gone). */
int dump_kstack_read(const struct ksyms *k, pid_t pid, pid_t tid, uint64_t *out, size_t max, size_t *n);

#endif
