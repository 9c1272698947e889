/*
 * The reference test_kbtf compares the kernel's struct offsets with: compiled against the
 * vmlinux.h that bpftool writes from the running kernel's BTF, so the offsets are bpftool's
 * decoding and the compiler's offsetof (anonymous members included), not kbtf's. It prints one
 * C initializer per field the sampler reads (the list in user/capture/sampler.c), then
 * sizeof(struct upid).
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"

int printf(const char *fmt, ...);

#define F(t, m)                                                                                              \
    printf("{\"%s\", \"%s\", %lu, %lu},\n", #t, #m, (unsigned long)__builtin_offsetof(struct t, m),          \
           (unsigned long)sizeof(((struct t *)0)->m))

int main(void)
{
    F(task_struct, mm);
    F(task_struct, group_leader);
    F(task_struct, start_boottime);
    F(task_struct, pid);
    F(task_struct, tgid);
    F(task_struct, thread_pid);
    F(task_struct, se.sum_exec_runtime);
    F(task_struct, se.prev_sum_exec_runtime);
    F(mm_struct, start_stack);
    F(pid, level);
    /* a flexible array: no size */
    printf("{\"pid\", \"numbers\", %lu, 0},\n", (unsigned long)__builtin_offsetof(struct pid, numbers));
    F(upid, nr);
    printf("#define REF_UPID_SIZE %lu\n", (unsigned long)sizeof(struct upid));
    return 0;
}
