/*
 * escape — text the writers put into XML, JSON and protobuf strings: valid UTF-8 kept, each byte
 * that is not part of it (and each control character in XML) replaced by '?', so the file always
 * parses.
 */
#include <stdlib.h>
#include <string.h>

#include "output/escape.h"

/* -- Escaping ----------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    /* U+FFFE and U+FFFF are not XML characters. */
    if (n == 3 && c == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
        return 0;
    return n;
}

char *escape_utf8_dup(const char *str)
{
    size_t n = strlen(str);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    const unsigned char *s = (const unsigned char *)str;
    size_t o = 0;
    while (*s) {
        int k = utf8_len(s);
        if (k == 0) {
            d[o++] = '?';
            s++;
        } else {
            memcpy(d + o, s, (size_t)k);
            o += (size_t)k;
            s += k;
        }
    }
    d[o] = '\0';
    return d;
}

/* Writes str with each valid UTF-8 sequence as it is, each byte that is not part of one as '?',
 * and each ASCII character through the format's own `ascii`. */
static void escape_with(FILE *f, const char *str, void (*ascii)(FILE *f, unsigned char c))
{
    const unsigned char *s = (const unsigned char *)str;

    while (*s) {
        int n = utf8_len(s);

        if (n == 1) {
            ascii(f, *s);
        } else if (n > 1) {
            fwrite(s, 1, (size_t)n, f);
        } else {
            fputc('?', f);
            n = 1;
        }
        s += n;
    }
}

static void xml_ascii(FILE *f, unsigned char c)
{
    static const char *const entity[128] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
    };

    if (c < 128 && entity[c])
        fputs(entity[c], f);
    else
        fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
}

static void json_ascii(FILE *f, unsigned char c)
{
    if (c == '"' || c == '\\')
        fprintf(f, "\\%c", c);
    else if (c < 0x20)
        fprintf(f, "\\u%04x", c);
    else
        fputc(c, f);
}

void escape_xml(FILE *f, const char *str)
{
    escape_with(f, str, xml_ascii);
}

void escape_json(FILE *f, const char *str)
{
    escape_with(f, str, json_ascii);
}
