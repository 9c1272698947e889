/*
 * dump — `pyebpf-sample dump PID [--reverse] [--json] [--locals] [--python-only] [--nonblocking]`: one
 * snapshot of every thread's stack.
 */
#ifndef PYEBPF_DUMP_H
#define PYEBPF_DUMP_H

int dump_main(int argc, char **argv);

#endif
