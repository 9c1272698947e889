/*
 * proc_sym — proc's answer to "which function is this address in" (see proc.h): the JIT region
 * holding it, else the symbol of the mapped file, else the file and offset; cached per address
 * for one proc_generation.
 */
#include "symbols/proc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int symbolize(struct proc *p, uint64_t ip, struct symres *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = FRAME_NATIVE;
    size_t i;
    const struct map_entry *e = proc_find_map(p, ip, &i);
    /* A frame's code in a mapping that is not executable was mapped since the mappings were
     * read, over one that has gone (a JIT region where ld.so.cache lay at start-up): the name
     * given now is cached until the generation changes, so the samples' re-check reads the
     * mappings again once the rate limit allows (proc_recheck). Not in proc_find_map: the
     * unwinder probes stack words that point into data. */
    if (e && !(e->prot & MAPS_X))
        proc_suspect(p);
    const struct jitsym *js = proc_find_jit(p, ip, e);
    if (js && (!e || !maps_is_file(e) || e->deleted)) {
        out->name = js->name;
        out->offset = ip - js->start;
        out->kind = FRAME_JIT;
        out->module = "[jit]";
        return 0;
    }
    if (!e)
        return -ENOENT;
    out->module = e->path[0] ? e->path : NULL;
    out->offset = ip - e->start + e->offset;
    const struct mod *m = &p->mods[i];
    if (m->state == MOD_OK) {
        uint64_t off;
        const char *name = elfsym_lookup(m->file, ip - m->bias, &off);
        if (name) {
            out->name = name;
            out->offset = off;
        }
    } else if ((!e->path[0] || e->deleted) && (e->prot & MAPS_X)) {
        /* executable memory JIT regions may cover (anonymous, or a deleted file such as a memfd
         * arena): code nobody named yet, so never cached */
        out->kind = FRAME_JIT;
    }
    return 0;
}

int proc_symbolize(struct proc *p, uint64_t ip, struct symres *out)
{
    struct symslot *s = &p->syms[(ip * 0x9e3779b97f4a7c15ull) >> (64 - SYMCACHE_BITS)];
    if (s->ip == ip && s->gen == p->sym_gen) {
        p->stats.sym_hits++;
        *out = s->r;
        return 0;
    }
    p->stats.sym_misses++;
    int err = symbolize(p, ip, out);
    /* Unnamed code in anonymous memory may be published later: not cached. */
    if (!err && (out->name || out->kind != FRAME_JIT)) {
        s->ip = ip;
        s->gen = p->sym_gen;
        s->r = *out;
    }
    return err;
}

int proc_symbolize_ret(struct proc *p, uint64_t ret, struct symres *out)
{
    int err = proc_symbolize(p, ret - 1, out);
    if (err || out->name)
        return err;
    struct symres at;
    if (proc_symbolize(p, ret, &at) == 0 && at.name && at.offset == 0)
        *out = at;
    return 0;
}

uint64_t proc_generation(const struct proc *p)
{
    return p->sym_gen;
}

int proc_format(const struct symres *r, char *buf, size_t size)
{
    if (r->name)
        return snprintf(buf, size, "%s", r->name);
    if (r->module)
        return snprintf(buf, size, "%s+0x%llx", maps_basename(r->module), (unsigned long long)r->offset);
    return snprintf(buf, size, "[unknown]");
}
