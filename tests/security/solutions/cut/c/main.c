#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define MAXP 4096
static char sel[MAXP + 2]; static long openfrom = 0; static int complement = 0;
static int die(const char *m) { fprintf(stderr, "cut: %s\n", m); return 1; }
static int parse(const char *l) {
    char *s = strdup(l), *tok, *save;
    for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-'); long a, b;
        if (!dash) { a = b = atol(tok); if (a < 1) return -1; }
        else {
            a = dash == tok ? 1 : atol(tok);
            b = dash[1] ? atol(dash + 1) : 0;
            if (a < 1) return -1;
            if (!dash[1]) { if (!openfrom || a < openfrom) openfrom = a; continue; }
            if (b < a) return -2;
        }
        for (long i = a; i <= b && i <= MAXP; i++) sel[i] = 1;
    }
    return 0;
}
static int on(long i) { int s = (i <= MAXP && sel[i]) || (openfrom && i >= openfrom); return complement ? !s : s; }
int main(int argc, char **argv) {
    char mode = 0, delim = '\t'; int only = 0, dset = 0; const char *list = NULL, *odelim = NULL;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--complement")) { complement = 1; continue; }
        if (!strncmp(a, "--output-delimiter=", 19)) { odelim = a + 19; continue; }
        if (a[0] != '-' || !a[1]) continue;
        for (char *p = a + 1; *p; p++) {
            if (*p == 's') { only = 1; continue; }
            if (strchr("bcfd", *p)) {
                const char *v = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (!v) { fprintf(stderr, "cut: option requires an argument -- '%c'\n", *p); return 1; }
                if (*p == 'd') { if (strlen(v) > 1) return die("the delimiter must be a single character"); delim = v[0]; dset = 1; }
                else { if (mode) return die("only one list may be specified"); mode = *p == 'c' ? 'b' : *p; list = v; }
                break;
            }
            fprintf(stderr, "cut: invalid option -- '%c'\n", *p); return 1;
        }
    }
    if (!mode) return die("you must specify a list of bytes, characters, or fields");
    if (dset && mode != 'f') return die("an input delimiter may be specified only when operating on fields");
    int r = parse(list);
    if (r == -1) return die(mode == 'f' ? "fields are numbered from 1" : "byte/character positions are numbered from 1");
    if (r == -2) return die("invalid decreasing range");
    char line[65536];
    char od[2] = {delim, 0};
    if (!odelim) odelim = mode == 'f' ? od : "";
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line); int nl = n && line[n - 1] == '\n'; if (nl) line[--n] = 0;
        if (mode == 'b') {
            int prev = 0;
            for (size_t i = 0; i < n; i++) if (on(i + 1)) {
                if (prev && prev != (int)i && *odelim) fputs(odelim, stdout);
                putchar(line[i]); prev = i + 1;
            }
        } else {
            if (!strchr(line, delim)) { if (!only) fputs(line, stdout); else if (!nl) continue; else continue; }
            else {
                long f = 1; int first = 1; char *start = line;
                for (char *p = line;; p++) {
                    if (*p == delim || !*p) {
                        if (on(f)) { if (!first) fputs(odelim, stdout); fwrite(start, 1, p - start, stdout); first = 0; }
                        if (!*p) break;
                        f++; start = p + 1;
                    }
                }
            }
        }
        putchar('\n');
    }
    return 0;
}
