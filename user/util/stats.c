/*
 * stats — named rows for --stats and their one printer (see stats.h).
 */
#include "util/stats.h"

#include <inttypes.h>

void stats_count(struct stats out, const char *name, uint64_t v)
{
    out.row(out.arg, &(struct stat_row){.name = name, .kind = STAT_COUNT, .count = v});
}

void stats_real(struct stats out, const char *name, double v, int digits)
{
    out.row(out.arg, &(struct stat_row){.name = name, .kind = STAT_REAL, .digits = digits, .real = v});
}

void stats_ratio(struct stats out, const char *name, double num, double den, int digits)
{
    stats_real(out, name, den ? num / den : 0.0, digits);
}

void stats_text(struct stats out, const char *name, const char *text)
{
    out.row(out.arg, &(struct stat_row){.name = name, .kind = STAT_TEXT, .text = text});
}

void stats_counts(struct stats out, const struct stat_count *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        stats_count(out, rows[i].name, rows[i].v);
}

static void print_row(void *arg, const struct stat_row *r)
{
    FILE *f = arg;

    switch (r->kind) {
    case STAT_COUNT:
        fprintf(f, "%s: %" PRIu64 "\n", r->name, r->count);
        break;
    case STAT_REAL:
        fprintf(f, "%s: %.*f\n", r->name, r->digits, r->real);
        break;
    case STAT_TEXT:
        fprintf(f, "%s: %s\n", r->name, r->text ? r->text : "");
        break;
    }
}

struct stats stats_file(FILE *f)
{
    return (struct stats){.row = print_row, .arg = f};
}
