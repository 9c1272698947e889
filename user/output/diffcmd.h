/*
 * diffcmd — `pyebpf-sample diff BEFORE.folded AFTER.folded [-o OUT] [-f svg|folded]
 * [--no-normalize]`: a differential flame graph of two profiles, or their stacks side by side.
 */
#ifndef PYEBPF_DIFFCMD_H
#define PYEBPF_DIFFCMD_H

int diffcmd_main(int argc, char **argv);

#endif
