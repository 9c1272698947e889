/*
 * escape — strings as the writers' formats need them. Invalid UTF-8 (and, in XML and JSON,
 * control characters) becomes '?' so the file always parses.
 */
#ifndef PYEBPF_ESCAPE_H
#define PYEBPF_ESCAPE_H

#include <stdio.h>

/* Writes `s` escaped for XML text/attributes. */
void escape_xml(FILE *f, const char *s);
/* Writes `s` as the body of a JSON string. */
void escape_json(FILE *f, const char *s);
/* A malloc'd copy of `s` with each byte that is not part of valid UTF-8 replaced by '?' (protobuf
 * strings must be UTF-8). NULL when out of memory. */
char *escape_utf8_dup(const char *s);

#endif
