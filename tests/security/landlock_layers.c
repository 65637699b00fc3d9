/* Stacks as many Landlock layers as the kernel allows (16), none restricting, then executes argv[1]
   (tests/security/test_tracing.py: the launcher must not run the original unconfined). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
struct rs { uint64_t h; }; struct pb { uint64_t a; int32_t fd; } __attribute__((packed));
int main(int c, char **v) {
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  int n = 0;
  for (int i = 0; i < 20; i++) {
    struct rs r = {1ULL << 2}; int fd = syscall(444, &r, sizeof r, 0);
    struct pb p = {1ULL << 2, open("/", O_PATH)}; syscall(445, fd, 1, &p, 0);
    if (syscall(446, fd, 0) == 0) n++;
    close(fd);
  }
  fprintf(stderr, "layers=%d\n", n);
  execv(v[1], v + 1); return 127;
}
