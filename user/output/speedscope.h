/*
 * speedscope — the speedscope file format: JSON, one "sampled" profile per thread.
 */
#ifndef PYEBPF_SPEEDSCOPE_H
#define PYEBPF_SPEEDSCOPE_H

#include <stdio.h>

#include "profile/view.h"

int speedscope_write(const struct profile *p, FILE *f);

#endif
