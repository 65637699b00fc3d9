#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
static int one(const char *s) {
    const char *p = s; while (*p == ' ' || *p == '\t') p++;
    if (*p == '+') p++;
    if (!*p) goto bad;
    for (const char *q = p; *q; q++) if (!isdigit((unsigned char)*q)) goto bad;
    unsigned long long n = strtoull(p, NULL, 10);
    printf("%llu:", n);
    for (unsigned long long d = 2; d * d <= n; d += (d == 2 ? 1 : 2))
        while (n % d == 0) { printf(" %llu", d); n /= d; }
    if (n > 1) printf(" %llu", n);
    printf("\n");
    return 0;
bad:
    fflush(stdout);
    fprintf(stderr, "factor: '%s' is not a valid positive integer\n", s);
    return 1;
}
int main(int argc, char **argv) {
    int status = 0, i = 1, any = 0;
    if (i < argc && !strcmp(argv[i], "--")) i++;
    else if (i < argc && argv[i][0] == '-' && argv[i][1] && !isdigit((unsigned char)argv[i][1])) {
        fprintf(stderr, "factor: invalid option -- '%c'\n", argv[i][1]); return 1;
    }
    for (; i < argc; i++) { any = 1; status |= one(argv[i]); }
    if (!any) {
        char w[4096];
        while (scanf("%4095s", w) == 1) status |= one(w);
    }
    return status;
}
