#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
static int decimals(const char *s) { const char *d = strchr(s, '.'); return d ? (int)strlen(d + 1) : 0; }
static int num(const char *s, double *v) { char *e; *v = strtod(s, &e); return *s && !*e; }
int main(int argc, char **argv) {
    const char *sep = "\n"; int wide = 0; const char *ops[8]; int n = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-w") || !strcmp(a, "--equal-width")) wide = 1;
        else if (!strcmp(a, "-s")) { if (++i >= argc) return 1; sep = argv[i]; }
        else if (!strncmp(a, "--separator=", 12)) sep = a + 12;
        else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.') {
            fprintf(stderr, "seq: invalid option -- '%c'\n", a[1]); return 1;
        } else { if (n == 3) { fprintf(stderr, "seq: extra operand '%s'\n", a); return 1; } ops[n++] = a; }
    }
    if (!n) { fprintf(stderr, "seq: missing operand\n"); return 1; }
    double f = 1, inc = 1, last; const char *fs = "1", *is = "1", *ls;
    if (n == 1) ls = ops[0]; else if (n == 2) { fs = ops[0]; ls = ops[1]; } else { fs = ops[0]; is = ops[1]; ls = ops[2]; }
    const char *all[3] = {fs, is, ls};
    double *vals[3] = {&f, &inc, &last};
    for (int k = 0; k < 3; k++) if (!num(all[k], vals[k])) { fprintf(stderr, "seq: invalid floating point argument: '%s'\n", all[k]); return 1; }
    if (inc == 0) { fprintf(stderr, "seq: invalid Zero increment value: '%s'\n", is); return 1; }
    int prec = decimals(fs) > decimals(is) ? decimals(fs) : decimals(is);
    int width = 0;
    if (wide) {
        char b[64];
        int a1 = snprintf(b, sizeof b, "%.*f", prec, f), a2 = snprintf(b, sizeof b, "%.*f", prec, last);
        width = a1 > a2 ? a1 : a2;
    }
    int first = 1;
    for (long k = 0;; k++) {
        double v = f + k * inc;
        if (inc > 0 ? v > last + 1e-9 : v < last - 1e-9) break;
        if (!first) fputs(sep, stdout);
        first = 0;
        if (wide) {
            char b[64]; int len = snprintf(b, sizeof b, "%.*f", prec, v);
            int neg = b[0] == '-';
            if (neg) putchar('-');
            for (int z = len; z < width; z++) putchar('0');
            fputs(b + neg, stdout);
        } else printf("%.*f", prec, v);
    }
    if (!first) putchar('\n');
    return 0;
}
