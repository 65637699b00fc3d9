#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *slurp(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0, r; char *b = malloc(cap);
    while ((r = fread(b + n, 1, cap - n, f)) > 0) { n += r; if (n == cap) b = realloc(b, cap *= 2); }
    *len = n; return b;
}
static void tac(const char *b, size_t n, const char *sep, int before) {
    size_t sl = strlen(sep);
    size_t *cut = malloc(sizeof(size_t) * (n + 2)); size_t k = 0;
    cut[k++] = 0;
    for (size_t i = 0; sl && i + sl <= n; ) {
        if (!memcmp(b + i, sep, sl)) { cut[k++] = before ? i : i + sl; i += sl; } else i++;
    }
    if (cut[k - 1] != n) cut[k++] = n;
    for (size_t j = k - 1; j > 0; j--) fwrite(b + cut[j - 1], 1, cut[j] - cut[j - 1], stdout);
    free(cut);
}
int main(int argc, char **argv) {
    const char *sep = "\n"; int before = 0, status = 0, nfiles = 0; char **files = calloc(argc, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-b") || !strcmp(a, "--before")) before = 1;
        else if (!strcmp(a, "-s")) { if (++i >= argc) { fprintf(stderr, "tac: option requires an argument -- 's'\n"); return 1; } sep = argv[i]; }
        else if (!strncmp(a, "--separator=", 12)) sep = a + 12;
        else if (!strncmp(a, "-s", 2)) sep = a + 2;
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "tac: invalid option -- '%c'\n", a[1]); return 1; }
        else files[nfiles++] = a;
    }
    if (!*sep) sep = "\n";
    if (!nfiles) { size_t n; char *b = slurp(stdin, &n); tac(b, n, sep, before); return 0; }
    for (int i = 0; i < nfiles; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f) { fprintf(stderr, "tac: failed to open '%s' for reading: No such file or directory\n", files[i]); status = 1; continue; }
        size_t n; char *b = slurp(f, &n); tac(b, n, sep, before); fclose(f);
    }
    return status;
}
