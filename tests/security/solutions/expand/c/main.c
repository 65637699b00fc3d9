#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
static long stops[64]; static int ns = 0;
static int parse(const char *s) {
    for (const char *p = s; *p; p++) if (!isdigit((unsigned char)*p) && *p != ',' && *p != ' ') {
        fprintf(stderr, "expand: tab size contains invalid character(s): '%s'\n", p); return 1; }
    char *c = strdup(s), *t, *sv;
    for (t = strtok_r(c, ", ", &sv); t; t = strtok_r(NULL, ", ", &sv)) {
        long v = atol(t);
        if (v == 0) { fprintf(stderr, "expand: tab size cannot be 0\n"); return 1; }
        if (ns && v <= stops[ns - 1]) { fprintf(stderr, "expand: tab sizes must be ascending\n"); return 1; }
        stops[ns++] = v;
    }
    return 0;
}
static long next(long col) {
    if (ns == 0) return (col / 8 + 1) * 8;
    if (ns == 1) return (col / stops[0] + 1) * stops[0];
    for (int i = 0; i < ns; i++) if (stops[i] > col) return stops[i];
    return col + 1;
}
int main(int argc, char **argv) {
    int initial = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-i") || !strcmp(a, "--initial")) initial = 1;
        else if (!strcmp(a, "-t")) { if (++i >= argc || parse(argv[i])) return 1; }
        else if (!strncmp(a, "--tabs=", 7)) { if (parse(a + 7)) return 1; }
        else if (!strncmp(a, "-t", 2)) { if (parse(a + 2)) return 1; }
        else if (a[0] == '-' && isdigit((unsigned char)a[1])) { if (parse(a + 1)) return 1; }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "expand: invalid option -- '%c'\n", a[1]); return 1; }
    }
    int c; long col = 0; int lead = 1;
    while ((c = getchar()) != EOF) {
        if (c == '\t' && (!initial || lead)) { long t = next(col); while (col < t) { putchar(' '); col++; } continue; }
        if (c != ' ' && c != '\t') lead = 0;
        putchar(c);
        if (c == '\n') { col = 0; lead = 1; } else if (c == '\b') { if (col) col--; } else col++;
    }
    return 0;
}
