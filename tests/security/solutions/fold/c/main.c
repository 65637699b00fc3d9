#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
static long width = 80; static int bytes = 0, spaces = 0;
static int setw(const char *s) {
    char *e; long v = strtol(s, &e, 10);
    if (!*s || *e) { fprintf(stderr, "fold: invalid number of columns: '%s'\n", s); return 1; }
    if (v <= 0) { fprintf(stderr, "fold: invalid number of columns: '%s': Numerical result out of range\n", s); return 1; }
    width = v; return 0;
}
static long adv(long col, int c) {
    if (bytes) return col + 1;
    if (c == '\t') return (col / 8 + 1) * 8;
    if (c == '\b') return col ? col - 1 : 0;
    if (c == '\r') return 0;
    return col + 1;
}
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--spaces")) { spaces = 1; continue; }
        if (!strcmp(a, "--bytes")) { bytes = 1; continue; }
        if (!strncmp(a, "--width=", 8)) { if (setw(a + 8)) return 1; continue; }
        if (a[0] == '-' && isdigit((unsigned char)a[1])) { if (setw(a + 1)) return 1; continue; }
        if (a[0] != '-' || !a[1]) continue;
        for (char *p = a + 1; *p; p++) {
            if (*p == 'b') bytes = 1; else if (*p == 's') spaces = 1;
            else if (*p == 'w') { const char *v = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : ""); if (setw(v)) return 1; break; }
            else { fprintf(stderr, "fold: invalid option -- '%c'\n", *p); return 1; }
        }
    }
    size_t cap = 1 << 16; char *buf = malloc(cap); size_t n = 0; long col = 0; int c;
    while ((c = getchar()) != EOF) {
        if (c == '\n') { fwrite(buf, 1, n, stdout); putchar('\n'); n = 0; col = 0; continue; }
        long nc = adv(col, c);
        if (nc > width && n > 0) {
            size_t cut = n;
            if (spaces) { for (size_t k = n; k > 0; k--) if (buf[k - 1] == ' ') { cut = k; break; } }
            fwrite(buf, 1, cut, stdout); putchar('\n');
            memmove(buf, buf + cut, n - cut); n -= cut;
            col = 0; for (size_t k = 0; k < n; k++) col = adv(col, (unsigned char)buf[k]);
            nc = adv(col, c);
        }
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
        buf[n++] = (char)c; col = nc;
    }
    fwrite(buf, 1, n, stdout);
    return 0;
}
