/*
 * dump_kstack — /proc/PID/task/TID/stack back into addresses (see dump_kstack.h).
 *
 *   [<0>] hrtimer_nanosleep+0xb5/0x130        one line per frame, leaf first: the address
 *   [<0>] common_nsleep+0x30/0x60             column is hidden (always 0), so each frame is
 *   [<0>] futex_wait+0x17b/0x260 [mod]        its symbol's address (kallsyms) + the offset
 *
 * The offsets are of return addresses, as the sampler's kernel stacks hold, so the collector
 * names both the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_kstack.h"
#include "symbols/ksyms.h"

int dump_kstack_read(const struct ksyms *k, pid_t pid, pid_t tid, uint64_t *out, size_t max, size_t *n)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    *n = 0;
    if (!f)
        return -errno;
    /* The file's content is made at the first read: EPERM comes from there, not from open. */
    if (!fgets(line, sizeof(line), f)) {
        int err = ferror(f) ? -errno : 0;
        fclose(f);
        return err;
    }
    do {
        char *name = strstr(line, "] ");
        char *plus = name ? strchr(name + 2, '+') : NULL;
        uint64_t base;
        if (!plus)
            continue;
        *plus = '\0';
        if (ksyms_addr(k, name + 2, &base) != 0)
            continue; /* a symbol kallsyms does not list: the frame is left out */
        out[(*n)++] = base + strtoull(plus + 1, NULL, 16);
    } while (*n < max && fgets(line, sizeof(line), f));
    fclose(f);
    return 0;
}
