/*
 * pprof — profile.proto, gzipped, for Pyroscope, Parca and go tool pprof.
 */
#ifndef PYEBPF_PPROF_H
#define PYEBPF_PPROF_H

#include <stdio.h>

#include "profile/view.h"

int pprof_write(const struct profile *p, FILE *f);

#endif
