/*
 * sampler_err — a sampler failure in words (sampler_strerror, see sampler.h): the stage that
 * failed, the errno, and the capabilities this process lacks, with what to do instead.
 */
#include "capture/sampler.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Whether the effective set holds capability `cap` (false when unknown). */
static bool has_cap(int cap)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2] = {{0}};

    if (syscall(SYS_capget, &h, d))
        return false;
    return d[cap / 32].effective & (1u << (cap % 32));
}

/* "CAP_BPF and CAP_PERFMON", naming only those missing; empty when none is. */
static const char *missing_caps(void)
{
    bool admin = has_cap(CAP_SYS_ADMIN);
    bool bpf = admin || has_cap(CAP_BPF);
    bool perfmon = admin || has_cap(CAP_PERFMON);

    if (!bpf && !perfmon)
        return "CAP_BPF and CAP_PERFMON";
    if (!bpf)
        return "CAP_BPF";
    if (!perfmon)
        return "CAP_PERFMON";
    return "";
}

const char *sampler_strerror(enum sampler_stage stage, int err, char *buf, size_t size)
{
    const char *alt = "; without BPF rights, --no-bpf samples Python frames with ptrace rights only";
    const char *missing = missing_caps();

    if ((err == -EPERM || err == -EACCES) && *missing &&
        (stage == SAMPLER_STAGE_LOAD || stage == SAMPLER_STAGE_PERF || stage == SAMPLER_STAGE_ATTACH ||
         stage == SAMPLER_STAGE_OPEN)) {
        snprintf(buf, size,
                 "no permission to use BPF (%s): missing capability %s (run as root, "
                 "or grant CAP_BPF and CAP_PERFMON)%s",
                 strerror(-err), missing, alt);
        return buf;
    }
    switch (stage) {
    case SAMPLER_STAGE_OPEN:
        if (err == -EPROTO)
            snprintf(buf, size,
                     "cannot open the BPF program: the kernel's BTF (/sys/kernel/btf/vmlinux) does not "
                     "describe a field it reads (-v names it)%s",
                     alt);
        else if (err == -ENOENT || err == -ESRCH)
            snprintf(buf, size,
                     "cannot open the BPF program: the kernel has no BTF "
                     "(/sys/kernel/btf/vmlinux) or BPF support%s",
                     alt);
        else
            snprintf(buf, size, "cannot open the BPF program: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_LOAD:
        if (access("/sys/kernel/btf/vmlinux", R_OK))
            snprintf(buf, size,
                     "cannot load the BPF program: the kernel has no BTF (/sys/kernel/btf/vmlinux, "
                     "CONFIG_DEBUG_INFO_BTF) to relocate it against (%s)%s",
                     strerror(-err), alt);
        else if (err == -ENOSYS)
            snprintf(buf, size, "this kernel has no BPF support (bpf() not implemented)%s", alt);
        else if (err == -EPERM)
            snprintf(buf, size,
                     "BPF is not allowed here (%s), although the capabilities are "
                     "held: a security module or kernel.unprivileged_bpf_disabled/lockdown "
                     "refuses it%s",
                     strerror(-err), alt);
        else {
            struct utsname u;

            if (uname(&u))
                strcpy(u.release, "?");
            snprintf(buf, size,
                     "the kernel (%s) refused the BPF program: %s; it needs Linux 5.15 or later "
                     "with BTF (run with -v for the verifier log)",
                     u.release, strerror(-err));
        }
        break;
    case SAMPLER_STAGE_PERF:
        if (err == -EPERM || err == -EACCES)
            snprintf(buf, size,
                     "not allowed to open CPU-wide perf events (%s): needs CAP_PERFMON "
                     "or kernel.perf_event_paranoid <= -1%s",
                     strerror(-err), alt);
        else if (err == -ENOENT || err == -ENOSYS || err == -EOPNOTSUPP)
            snprintf(buf, size, "this kernel has no perf events for cpu-clock sampling: %s", strerror(-err));
        else if (err == -EINVAL)
            snprintf(buf, size,
                     "perf_event_open refused the frequency (see "
                     "/proc/sys/kernel/perf_event_max_sample_rate): %s",
                     strerror(-err));
        else
            snprintf(buf, size, "perf_event_open failed: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_ATTACH:
        snprintf(buf, size, "cannot attach the BPF program to a perf event: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_MAP:
        snprintf(buf, size, "cannot update a BPF map: %s", strerror(-err));
        break;
    default:
        snprintf(buf, size, "%s", strerror(-err));
    }
    return buf;
}
