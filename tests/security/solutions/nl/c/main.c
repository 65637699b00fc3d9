#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int bad(const char *m, const char *v) { fprintf(stderr, "nl: %s: '%s'\n", m, v); return 1; }
int main(int argc, char **argv) {
    char style = 't'; const char *fmt = "rn", *sep = "\t"; long width = 6, start = 1, incr = 1;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i], opt; const char *v;
        if (!strncmp(a, "--number-separator=", 19)) { sep = a + 19; continue; }
        if (a[0] != '-' || !a[1]) continue;
        opt = a[1];
        if (!strchr("bnswvi", opt)) { fprintf(stderr, "nl: invalid option -- '%c'\n", opt); return 1; }
        v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
        switch (opt) {
            case 'b': if (strcmp(v, "a") && strcmp(v, "t") && strcmp(v, "n")) return bad("invalid body numbering style", v); style = v[0]; break;
            case 'n': if (strcmp(v, "ln") && strcmp(v, "rn") && strcmp(v, "rz")) return bad("invalid line numbering format", v); fmt = v; break;
            case 's': sep = v; break;
            case 'w': width = atol(v); if (width <= 0) { fprintf(stderr, "nl: invalid line number field width: '%s': Numerical result out of range\n", v); return 1; } break;
            case 'v': start = atol(v); break;
            case 'i': incr = atol(v); break;
        }
    }
    char line[65536]; long no = start;
    while (fgets(line, sizeof line, stdin)) {
        int empty = line[0] == '\n' || line[0] == 0;
        int num = style == 'a' || (style == 't' && !empty);
        if (num) {
            if (!strcmp(fmt, "ln")) printf("%-*ld", (int)width, no);
            else if (!strcmp(fmt, "rz")) printf("%0*ld", (int)width, no);
            else printf("%*ld", (int)width, no);
            fputs(sep, stdout); fputs(line, stdout); no += incr;
        } else {
            printf("%*s", (int)(width + strlen(sep)), ""); fputs(line, stdout);
        }
    }
    return 0;
}
