#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void rev(FILE *f) {
    size_t cap = 1 << 16, n = 0; char *b = malloc(cap); int c;
    for (;;) {
        c = getc(f);
        if (c == EOF || c == '\n') {
            for (size_t i = n; i > 0; i--) putchar(b[i - 1]);
            if (c == '\n') putchar('\n');
            n = 0;
            if (c == EOF) break;
            continue;
        }
        if (n == cap) b = realloc(b, cap *= 2);
        b[n++] = (char)c;
    }
    free(b);
}
int main(int argc, char **argv) {
    int status = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { puts("Usage: rev [options] [file ...]"); return 0; }
            fprintf(stderr, "rev: invalid option -- '%s'\n", argv[i] + 1); return 1;
        }
    }
    for (int i = 1; i < argc; i++) {
        files++;
        FILE *f = fopen(argv[i], "r");
        if (!f) { fprintf(stderr, "rev: cannot open %s: No such file or directory\n", argv[i]); status = 1; continue; }
        rev(f); fclose(f);
    }
    if (!files) rev(stdin);
    return status;
}
