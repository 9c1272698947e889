/*
 * cli — pyebpf-sample's options (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

void cli_usage(FILE *f)
{
    fprintf(f,
            "Usage: pyebpf-sample [OPTIONS] PID\n"
            "       pyebpf-sample [OPTIONS] -- COMMAND [ARGS...]\n"
            "       pyebpf-sample render IN.folded -o OUT [-f FORMAT]\n"
            "       pyebpf-sample diff BEFORE.folded AFTER.folded -o OUT.svg [-f folded]\n"
            "       pyebpf-sample dump PID [--json] [--reverse] [--locals]\n"
            "       pyebpf-sample top [OPTIONS] PID | -- COMMAND   (live view; keys: o/t sort,\n"
            "                                  i interval/cumulative, n native, f thread, p pause, q quit;\n"
            "                                  the header has the GIL holder's share, CPython 3.11-3.15)\n"
            "                                  (pyebpf-sample render|diff|dump --help for their options)\n"
            "\n"
            "Samples the stacks (native, JIT and kernel) of a running process or of a command\n"
            "it launches, with an eBPF program on a cpu-clock perf event on every CPU.\n"
            "Ctrl-C or SIGTERM stops sampling and writes what was collected.\n"
            "\n"
            "Options:\n"
            "  -F, --frequency HZ    samples per second per CPU (default %u)\n"
            "  -d, --duration SEC    stop after SEC seconds (default: when the target exits)\n"
            "  -o, --output FILE     write the profile to FILE (default: stdout, folded)\n"
            "  -f, --format FMT      folded, svg, speedscope or pprof (default: from the\n"
            "                        extension of -o: .svg, .json, .pb.gz; else folded)\n"
            "      --kernel          include kernel frames (suffixed _[k])\n"
            "      --unwind MODE     fp (frame pointers), dwarf (CFI over a stack copy) or\n"
            "                        auto (CFI where a module has it; default)\n"
            "      --stack-size N    bytes of user stack copied per sample for dwarf/auto\n"
            "                        (default %u, max %u, multiple of 8)\n"
            "      --mode MODE       cpu (on-CPU samples; default), offcpu (the time threads\n"
            "                        spend off the CPU, weighted in microseconds, with the\n"
            "                        wait as a frame: [waiting for GIL], [idle], [blocked],\n"
            "                        [runnable]) or wall (both: every thread adds up to the\n"
            "                        run's wall time, in microseconds) or gil (on-CPU samples\n"
            "                        of the thread holding the GIL only; Python 3.11-3.15)\n"
            "      --idle, --no-idle keep (default) or drop the stacks of idle threads\n"
            "                        (sleeps, selector waits)\n"
            "      --threads         a root frame per thread: \"thread TID (NAME)\", NAME its\n"
            "                        threading.Thread name (Python 3.11+), else its OS name\n"
            "      --tid TID,...     keep only these threads (at most %u)\n"
            "      --thread-name RE  keep only threads whose NAME matches the extended regex RE\n"
            "      --children        also sample processes the target forks from now on\n"
            "      --stats           print statistics to stderr as \"key: value\" lines\n"
            "      --bpf-stats       --stats, and the BPF program's run time (bpf_ns_per_sample):\n"
            "                        turns on the kernel's statistics for every BPF program while\n"
            "                        sampling (costs ~20 ms of CPU to switch on and off)\n"
            "      --summary-by-line the summary after a profile written to a file: a row per\n"
            "                        Python line (default: per function, lines added up)\n"
            "      --python-only     Python frames only (a Python target's native frames hidden)\n"
            "      --show-internal   keep the interpreter's own frames (_PyEval_*, PyObject_Call*,\n"
            "                        start-up) between and around the Python frames\n"
            "      --no-python       native frames only, even when the target is Python\n"
            "      --no-bpf          sample the Python frames of every thread from user space on\n"
            "                        a timer: no BPF, no perf events, only ptrace rights (Python\n"
            "                        targets only; wall-clock samples of all threads)\n"
            "      --exact-reads     read each predicted Python frame with its own exact iovec\n"
            "      --ring-size N     ring buffer bytes (default: from frequency and stack size)\n"
            "  -r, --refresh SEC     top: seconds between redraws (default 1); -o writes the\n"
            "                        profile when top quits\n"
            "  -q, --quiet           no progress messages\n"
            "  -v, --verbose         libbpf and verifier messages\n"
            "  -h, --help            this help\n"
            "  -V, --version         print the version\n"
            "\n"
            "Needs root, or CAP_BPF + CAP_PERFMON (load the program, open CPU-wide events) and\n"
            "CAP_SYS_PTRACE for processes of other users (read their maps and files).\n",
            CLI_DEFAULT_FREQUENCY, SAMPLE_STACK_COPY_DEFAULT, SAMPLE_STACK_COPY_MAX, CLI_MAX_TIDS);
}

const char *cli_mode_name(enum cli_mode m)
{
    return m == CLI_MODE_WALL ? "wall" : m == CLI_MODE_OFFCPU ? "offcpu" : m == CLI_MODE_GIL ? "gil" : "cpu";
}

void cli_free(struct cli_options *o)
{
    if (o->has_thread_name)
        regfree(&o->thread_name);
    o->has_thread_name = false;
}

/* "TID,TID,..." into o->tids. */
static int parse_tids(const char *s, struct cli_options *o)
{
    char *end;

    o->ntids = 0;
    do {
        unsigned long v;

        if (o->ntids == CLI_MAX_TIDS || *s < '0' || *s > '9')
            return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || !v || v > INT32_MAX || (*end && *end != ','))
            return -EINVAL;
        o->tids[o->ntids++] = (uint32_t)v;
        s = end + 1;
    } while (*end);
    return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;

    errno = 0;
    if (!*s || *s == '-')
        return -EINVAL;
    *out = strtoull(s, &end, 10);
    if (errno || *end || *out > max)
        return -EINVAL;
    return 0;
}

int cli_parse(int argc, char **argv, struct cli_options *o)
{
    enum {
        OPT_KERNEL = 256,
        OPT_UNWIND,
        OPT_STACK,
        OPT_THREADS,
        OPT_STATS,
        OPT_BPF_STATS,
        OPT_RING,
        OPT_CHILDREN,
        OPT_NO_BPF,
        OPT_PYTHON_ONLY,
        OPT_SHOW_INTERNAL,
        OPT_NO_PYTHON,
        OPT_EXACT,
        OPT_SUMMARY_BY_LINE,
        OPT_MODE,
        OPT_IDLE,
        OPT_NO_IDLE,
        OPT_TID,
        OPT_THREAD_NAME,
    };
    static const struct option longopts[] = {
        {"frequency", required_argument, NULL, 'F'},
        {"duration", required_argument, NULL, 'd'},
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"kernel", no_argument, NULL, OPT_KERNEL},
        {"unwind", required_argument, NULL, OPT_UNWIND},
        {"stack-size", required_argument, NULL, OPT_STACK},
        {"threads", no_argument, NULL, OPT_THREADS},
        {"children", no_argument, NULL, OPT_CHILDREN},
        {"stats", no_argument, NULL, OPT_STATS},
        {"bpf-stats", no_argument, NULL, OPT_BPF_STATS},
        {"ring-size", required_argument, NULL, OPT_RING},
        {"no-bpf", no_argument, NULL, OPT_NO_BPF},
        {"python-only", no_argument, NULL, OPT_PYTHON_ONLY},
        {"show-internal", no_argument, NULL, OPT_SHOW_INTERNAL},
        {"no-python", no_argument, NULL, OPT_NO_PYTHON},
        {"exact-reads", no_argument, NULL, OPT_EXACT},
        {"summary-by-line", no_argument, NULL, OPT_SUMMARY_BY_LINE},
        {"refresh", required_argument, NULL, 'r'},
        {"mode", required_argument, NULL, OPT_MODE},
        {"idle", no_argument, NULL, OPT_IDLE},
        {"no-idle", no_argument, NULL, OPT_NO_IDLE},
        {"tid", required_argument, NULL, OPT_TID},
        {"thread-name", required_argument, NULL, OPT_THREAD_NAME},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0},
    };
    unsigned long long v;
    char *end;
    int c;

    optind = 0; /* a fresh scan, also when called more than once */
    o->frequency = CLI_DEFAULT_FREQUENCY;
    o->stack_size = SAMPLE_STACK_COPY_DEFAULT;
    o->unwind = UNWIND_AUTO;
    o->output = "-";
    while ((c = getopt_long(argc, argv, "+F:d:o:f:r:qvhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'F':
            if (parse_uint(optarg, CLI_MAX_FREQUENCY, &v) || !v) {
                fprintf(stderr, "pyebpf-sample: bad frequency '%s' (1..%u Hz)\n", optarg, CLI_MAX_FREQUENCY);
                return -1;
            }
            o->frequency = v;
            break;
        case 'd':
            errno = 0;
            o->duration = strtod(optarg, &end);
            if (errno || *end || !(o->duration > 0)) {
                fprintf(stderr, "pyebpf-sample: bad duration '%s' (seconds > 0)\n", optarg);
                return -1;
            }
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'r':
            errno = 0;
            o->refresh = strtod(optarg, &end);
            if (errno || *end || !(o->refresh >= 0.05) || o->refresh > 3600) {
                fprintf(stderr, "pyebpf-sample: bad refresh '%s' (0.05..3600 seconds)\n", optarg);
                return -1;
            }
            break;
        case 'f':
            o->format = optarg;
            break;
        case OPT_KERNEL:
            o->kernel = true;
            break;
        case OPT_UNWIND:
            if (!strcmp(optarg, "fp"))
                o->unwind = UNWIND_FP;
            else if (!strcmp(optarg, "dwarf"))
                o->unwind = UNWIND_DWARF;
            else if (!strcmp(optarg, "auto"))
                o->unwind = UNWIND_AUTO;
            else {
                fprintf(stderr, "pyebpf-sample: bad --unwind '%s' (fp, dwarf or auto)\n", optarg);
                return -1;
            }
            break;
        case OPT_STACK:
            if (parse_uint(optarg, SAMPLE_STACK_COPY_MAX, &v) || (v & 7) || v < SAMPLE_STACK_COPY_MIN) {
                fprintf(stderr, "pyebpf-sample: bad --stack-size '%s' (%u..%u, multiple of 8)\n", optarg,
                        SAMPLE_STACK_COPY_MIN, SAMPLE_STACK_COPY_MAX);
                return -1;
            }
            o->stack_size = v;
            break;
        case OPT_THREADS:
            o->threads = true;
            break;
        case OPT_CHILDREN:
            o->children = true;
            break;
        case OPT_STATS:
            o->stats = true;
            break;
        case OPT_BPF_STATS:
            o->stats = o->bpf_stats = true;
            break;
        case OPT_RING:
            if (parse_uint(optarg, 1ull << 30, &v) || v < 4096) {
                fprintf(stderr, "pyebpf-sample: bad --ring-size '%s'\n", optarg);
                return -1;
            }
            o->ring_size = v;
            break;
        case OPT_NO_BPF:
            o->no_bpf = true;
            break;
        case OPT_PYTHON_ONLY:
            o->python_only = true;
            break;
        case OPT_SHOW_INTERNAL:
            o->show_internal = true;
            break;
        case OPT_NO_PYTHON:
            o->no_python = true;
            break;
        case OPT_EXACT:
            o->exact_reads = true;
            break;
        case OPT_SUMMARY_BY_LINE:
            o->summary_by_line = true;
            break;
        case OPT_MODE:
            if (!strcmp(optarg, "cpu"))
                o->mode = CLI_MODE_CPU;
            else if (!strcmp(optarg, "wall"))
                o->mode = CLI_MODE_WALL;
            else if (!strcmp(optarg, "offcpu"))
                o->mode = CLI_MODE_OFFCPU;
            else if (!strcmp(optarg, "gil"))
                o->mode = CLI_MODE_GIL;
            else {
                fprintf(stderr, "pyebpf-sample: bad --mode '%s' (cpu, wall, offcpu or gil)\n", optarg);
                return -1;
            }
            break;
        case OPT_IDLE:
            o->no_idle = false;
            break;
        case OPT_NO_IDLE:
            o->no_idle = true;
            break;
        case OPT_TID:
            if (parse_tids(optarg, o)) {
                fprintf(stderr, "pyebpf-sample: bad --tid '%s' (TID,TID,... at most %u)\n", optarg,
                        CLI_MAX_TIDS);
                return -1;
            }
            break;
        case OPT_THREAD_NAME: {
            char msg[128];
            int e;

            cli_free(o);
            e = regcomp(&o->thread_name, optarg, REG_EXTENDED | REG_NOSUB);
            if (e) {
                regerror(e, &o->thread_name, msg, sizeof(msg));
                fprintf(stderr, "pyebpf-sample: bad --thread-name '%s': %s\n", optarg, msg);
                return -1;
            }
            o->has_thread_name = true;
            break;
        }
        case 'q':
            o->quiet = true;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'h':
            cli_usage(stdout);
            return 1;
        case 'V':
            printf("pyebpf-sample %s\n", PYEBPF_VERSION);
            return 1;
        default:
            fprintf(stderr, "Try 'pyebpf-sample --help'.\n");
            return -1;
        }
    }
    if (o->no_python && (o->no_bpf || o->python_only)) {
        fprintf(stderr, "pyebpf-sample: --no-python excludes --no-bpf and --python-only\n");
        return -1;
    }
    if (o->no_bpf && (o->kernel || o->children)) {
        fprintf(stderr, "pyebpf-sample: --no-bpf samples Python frames only (no --kernel, no --children)\n");
        return -1;
    }
    if (o->mode == CLI_MODE_GIL && o->no_python) {
        fprintf(stderr, "pyebpf-sample: --mode gil needs the Python reader (no --no-python)\n");
        return -1;
    }
    if (o->no_bpf && o->mode != CLI_MODE_CPU) {
        fprintf(stderr,
                "pyebpf-sample: --mode %s needs BPF (the scheduler's switches); --no-bpf samples "
                "wall-clock already\n",
                cli_mode_name(o->mode));
        return -1;
    }
    if (optind < argc && !strcmp(argv[optind - 1], "--")) {
        o->command = &argv[optind];
    } else if (optind + 1 == argc) {
        if (parse_uint(argv[optind], INT32_MAX, &v) || !v) {
            fprintf(stderr,
                    "pyebpf-sample: '%s' is not a PID (to run a command: "
                    "pyebpf-sample [OPTIONS] -- COMMAND ARGS...)\n",
                    argv[optind]);
            return -1;
        }
        o->pid = (pid_t)v;
    } else {
        fprintf(stderr, "pyebpf-sample: %s\nTry 'pyebpf-sample --help'.\n",
                optind < argc ? "give one PID, or -- COMMAND ARGS..." : "missing PID or -- COMMAND");
        return -1;
    }
    return 0;
}
