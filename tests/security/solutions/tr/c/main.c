#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
static int expand(const char *s, unsigned char *out) {
    int n = 0; const unsigned char *p = (const unsigned char *)s;
    static const char *cls[] = {"alnum", "alpha", "digit", "lower", "upper", "space", "punct", "blank", "cntrl", "graph", "print", "xdigit"};
    while (*p) {
        if (*p == '[' && p[1] == ':') {
            const char *e = strstr((const char *)p + 2, ":]");
            if (e) {
                int len = e - (const char *)p - 2, k;
                for (k = 0; k < 12; k++) if ((int)strlen(cls[k]) == len && !strncmp(cls[k], (const char *)p + 2, len)) break;
                for (int c = 0; c < 256 && k < 12; c++) {
                    int m = (k == 0 && isalnum(c)) || (k == 1 && isalpha(c)) || (k == 2 && isdigit(c)) || (k == 3 && islower(c)) ||
                            (k == 4 && isupper(c)) || (k == 5 && isspace(c)) || (k == 6 && ispunct(c)) || (k == 7 && isblank(c)) ||
                            (k == 8 && iscntrl(c)) || (k == 9 && isgraph(c)) || (k == 10 && isprint(c)) || (k == 11 && isxdigit(c));
                    if (m) out[n++] = c;
                }
                p = (const unsigned char *)e + 2; continue;
            }
        }
        int c;
        if (*p == '\\' && p[1]) {
            p++;
            if (*p >= '0' && *p <= '7') { c = 0; for (int k = 0; k < 3 && *p >= '0' && *p <= '7'; k++) c = c * 8 + (*p++ - '0'); }
            else { c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p == '\\' ? '\\' : *p; p++; }
        } else c = *p++;
        if (*p == '-' && p[1]) {
            int d = p[1]; p += 2;
            if (d < c) { fprintf(stderr, "tr: range-endpoints of '%c-%c' are in reverse collating sequence order\n", c, d); exit(1); }
            for (int x = c; x <= d; x++) out[n++] = x;
        } else out[n++] = c;
    }
    return n;
}
int main(int argc, char **argv) {
    int del = 0, sq = 0, comp = 0, trunc = 0; const char *ops[4]; int n = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (a[0] == '-' && a[1] && n == 0) {
            for (char *p = a + 1; *p; p++) switch (*p) {
                case 'd': del = 1; break; case 's': sq = 1; break; case 'c': case 'C': comp = 1; break; case 't': trunc = 1; break;
                default: fprintf(stderr, "tr: invalid option -- '%c'\n", *p); return 1;
            }
        } else if (n < 4) ops[n++] = a;
    }
    if (n == 0) { fprintf(stderr, "tr: missing operand\n"); return 1; }
    if (del && !sq && n > 1) { fprintf(stderr, "tr: extra operand '%s'\n", ops[1]); return 1; }
    if (!del && !sq && n < 2) { fprintf(stderr, "tr: missing operand after '%s'\n", ops[0]); return 1; }
    static unsigned char s1[4096], s2[4096]; int n1 = expand(ops[0], s1), n2 = n > 1 ? expand(ops[1], s2) : 0;
    int in1[256] = {0}; for (int k = 0; k < n1; k++) in1[s1[k]] = 1;
    if (comp) { for (int c = 0; c < 256; c++) in1[c] = !in1[c]; n1 = 0; for (int c = 0; c < 256; c++) if (in1[c]) s1[n1++] = c; }
    int map[256]; for (int c = 0; c < 256; c++) map[c] = c;
    int translate = !del && n > 1 && !(sq && n == 1);
    if (translate) {
        if (n2 == 0) { fprintf(stderr, "tr: when not truncating set1, string2 must be non-empty\n"); return 1; }
        if (trunc && n1 > n2) n1 = n2;
        for (int k = 0; k < n1; k++) map[s1[k]] = s2[k < n2 ? k : n2 - 1];
    }
    int sqset[256] = {0};
    if (sq) { if (n > 1 && !del) { for (int k = 0; k < n2; k++) sqset[s2[k]] = 1; } else if (del) { for (int k = 0; k < n2; k++) sqset[s2[k]] = 1; } else for (int c = 0; c < 256; c++) sqset[c] = in1[c]; }
    int c, last = -1;
    while ((c = getchar()) != EOF) {
        if (del && in1[c]) continue;
        int o = translate ? map[c] : c;
        if (sq && sqset[o] && o == last) continue;
        putchar(o); last = o;
    }
    return 0;
}
