#include <stdio.h>
#include <string.h>
#include <ctype.h>
typedef struct { long l, w, c, L; } Cnt;
static Cnt count(FILE *f) {
    Cnt k = {0, 0, 0, 0}; int c, inw = 0; long col = 0;
    while ((c = getc(f)) != EOF) {
        k.c++;
        if (c == '\n') { k.l++; if (col > k.L) k.L = col; col = 0; }
        else if (c == '\t') col = (col / 8 + 1) * 8;
        else if (isprint(c)) col++;
        if (isspace(c)) inw = 0; else if (!inw) { inw = 1; k.w++; }
    }
    if (col > k.L) k.L = col;
    return k;
}
int main(int argc, char **argv) {
    int l = 0, w = 0, c = 0, m = 0, L = 0, status = 0, nf = 0; char *files[64];
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--lines")) l = 1; else if (!strcmp(a, "--words")) w = 1;
        else if (!strcmp(a, "--bytes")) c = 1; else if (!strcmp(a, "--chars")) m = 1;
        else if (!strcmp(a, "--max-line-length")) L = 1;
        else if (a[0] == '-' && a[1]) {
            for (char *p = a + 1; *p; p++) switch (*p) {
                case 'l': l = 1; break; case 'w': w = 1; break; case 'c': c = 1; break;
                case 'm': m = 1; break; case 'L': L = 1; break;
                default: fprintf(stderr, "wc: invalid option -- '%c'\n", *p); return 1;
            }
        } else files[nf++] = a;
    }
    if (!l && !w && !c && !m && !L) l = w = c = 1;
    int fields = l + w + c + m + L, width = fields > 1 ? 7 : 1;
    if (!nf) {
        Cnt k = count(stdin); const char *sp = "";
        if (l) { printf("%s%*ld", sp, width, k.l); sp = " "; }
        if (w) { printf("%s%*ld", sp, width, k.w); sp = " "; }
        if (m) { printf("%s%*ld", sp, width, k.c); sp = " "; }
        if (c) { printf("%s%*ld", sp, width, k.c); sp = " "; }
        if (L) { printf("%s%*ld", sp, width, k.L); sp = " "; }
        printf("\n"); return 0;
    }
    for (int i = 0; i < nf; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f) { fprintf(stderr, "wc: %s: No such file or directory\n", files[i]); status = 1; continue; }
        Cnt k = count(f); fclose(f); const char *sp = "";
        if (l) { printf("%s%ld", sp, k.l); sp = " "; }
        if (w) { printf("%s%ld", sp, k.w); sp = " "; }
        if (c) { printf("%s%ld", sp, k.c); sp = " "; }
        printf(" %s\n", files[i]);
    }
    return status;
}
