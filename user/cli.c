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
            "      --threads         a root frame per thread: \"thread TID (comm)\"\n"
            "      --children        also sample processes the target forks from now on\n"
            "      --stats           print statistics to stderr as \"key: value\" lines\n"
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
            "  -q, --quiet           no progress messages\n"
            "  -v, --verbose         libbpf and verifier messages\n"
            "  -h, --help            this help\n"
            "  -V, --version         print the version\n"
            "\n"
            "Needs root, or CAP_BPF + CAP_PERFMON (load the program, open CPU-wide events) and\n"
            "CAP_SYS_PTRACE for processes of other users (read their maps and files).\n",
            CLI_DEFAULT_FREQUENCY, SAMPLE_STACK_COPY_DEFAULT, SAMPLE_STACK_COPY_MAX);
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
        OPT_RING,
        OPT_CHILDREN,
        OPT_NO_BPF,
        OPT_PYTHON_ONLY,
        OPT_SHOW_INTERNAL,
        OPT_NO_PYTHON,
        OPT_EXACT,
        OPT_SUMMARY_BY_LINE,
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
        {"ring-size", required_argument, NULL, OPT_RING},
        {"no-bpf", no_argument, NULL, OPT_NO_BPF},
        {"python-only", no_argument, NULL, OPT_PYTHON_ONLY},
        {"show-internal", no_argument, NULL, OPT_SHOW_INTERNAL},
        {"no-python", no_argument, NULL, OPT_NO_PYTHON},
        {"exact-reads", no_argument, NULL, OPT_EXACT},
        {"summary-by-line", no_argument, NULL, OPT_SUMMARY_BY_LINE},
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
    while ((c = getopt_long(argc, argv, "+F:d:o:f:qvhV", longopts, NULL)) != -1) {
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
