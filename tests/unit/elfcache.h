/*
 * The ELF cache a collector owns (collect_open), for the files and procs a test opens: one per
 * test binary, made and freed by the group's setup and teardown.
 */
#ifndef PYEBPF_TESTS_ELFCACHE_H
#define PYEBPF_TESTS_ELFCACHE_H

#include "symbols/elfsym.h"

static struct elfsym_cache *cache;

static int elfcache_setup(void **state)
{
    (void)state;
    return elfsym_cache_new(&cache);
}

static int elfcache_teardown(void **state)
{
    (void)state;
    elfsym_cache_free(cache);
    return 0;
}

#endif
