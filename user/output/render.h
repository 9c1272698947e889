/*
 * render — `pyebpf-sample render IN.folded -o OUT [-f FORMAT] [--title T] [--reverse] [-F HZ] [-q]`:
 * folded text read back and written in any format.
 */
#ifndef PYEBPF_RENDER_H
#define PYEBPF_RENDER_H

int render_main(int argc, char **argv);

#endif
