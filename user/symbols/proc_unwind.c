/*
 * proc_unwind — the unwinder's view of the process (see proc.h): for each address, the CFI table
 * that describes it (a mapped file's, a JIT region's, a known trampoline's) and its bias.
 */
#include "symbols/proc_internal.h"

#include <errno.h>

static int find_cfi(void *arg, uint64_t ip, const struct cfi_read_table **cfi, uint64_t *bias)
{
    struct proc *p = arg;
    size_t i;
    const struct map_entry *e = proc_find_map(p, ip, &i);
    if (e && p->mods[i].state == MOD_OK && (e->prot & MAPS_X)) {
        *cfi = elfsym_cfi(p->mods[i].file);
        *bias = p->mods[i].bias;
        return 0;
    }
    struct jitsym *js = proc_find_jit(p, ip, e);
    if (js) {
        *cfi = js->cfi;
        *bias = 0;
        if (!js->cfi)
            *cfi = tramp_region_cfi(&p->tramp, p->mem_fd, js->start, js->end, &js->shape, bias);
        return 0;
    }
    if (e && (e->prot & MAPS_X)) {
        *bias = 0;
        *cfi = maps_is_file(e) ? NULL : tramp_ret_cfi(&p->tramp, p->mem_fd, ip, bias);
        return 0;
    }
    if (e) /* code where the mappings say data: mapped or made executable since they were read */
        proc_suspect(p);
    return -ENOENT;
}

int proc_unwind(struct proc *p, enum unwind_mode mode, const struct unwind_regs *regs, const uint8_t *stack,
                size_t stack_len, uint64_t stack_addr, uint64_t *ips, size_t max, unsigned *stop)
{
    return unwind_stack(p->ucache, find_cfi, p, mode, regs, stack, stack_len, stack_addr, ips, max, stop);
}
