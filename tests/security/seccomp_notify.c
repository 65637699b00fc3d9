/* A worker's seccomp user-notification supervisor on the original (tests/security/test_tracing.py):
   the child installs a filter with a listener that notifies on write(2), passes the listener to the
   parent over SCM_RIGHTS and executes argv[1]; the parent answers each write "done" without writing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <linux/audit.h>
static int send_fd(int s, int fd){ struct msghdr m={0}; char buf[CMSG_SPACE(sizeof(int))]; char c='x'; struct iovec io={&c,1};
 m.msg_iov=&io; m.msg_iovlen=1; m.msg_control=buf; m.msg_controllen=sizeof buf; struct cmsghdr*cm=CMSG_FIRSTHDR(&m);
 cm->cmsg_level=SOL_SOCKET; cm->cmsg_type=SCM_RIGHTS; cm->cmsg_len=CMSG_LEN(sizeof(int)); memcpy(CMSG_DATA(cm),&fd,sizeof fd); return sendmsg(s,&m,0);}
static int recv_fd(int s){ struct msghdr m={0}; char buf[CMSG_SPACE(sizeof(int))]; char c; struct iovec io={&c,1};
 m.msg_iov=&io; m.msg_iovlen=1; m.msg_control=buf; m.msg_controllen=sizeof buf; if(recvmsg(s,&m,0)<0) return -1; int fd; memcpy(&fd,CMSG_DATA(CMSG_FIRSTHDR(&m)),sizeof fd); return fd;}
int main(int argc, char**argv){
  int sv[2]; socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  pid_t p = fork();
  if (p==0){
    struct sock_filter f[] = {
      BPF_STMT(BPF_LD|BPF_W|BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, __NR_write, 0, 1),
      BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS,1,0,0,0);
    int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) {
      fprintf(stderr, "NEW_LISTENER refused: %s\n", strerror(errno));
      struct sock_filter allow[] = {BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ALLOW)};
      struct sock_fprog p2 = {1, allow};
      if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p2) == 0) fprintf(stderr, "plain filter installed\n");
      send_fd(sv[1], 0); execv(argv[1], argv+1); _exit(1);
    }
    send_fd(sv[1], fd); close(fd);
    execv(argv[1], argv+1); _exit(127);
  }
  int fd = recv_fd(sv[0]);
  struct seccomp_notif req; struct seccomp_notif_resp resp; int n=0;
  while (fd > 0 && n < 5) {
    memset(&req,0,sizeof req);
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) break;
    fprintf(stderr, "NOTIFIED: pid=%d nr=%d arg1(buf)=%llx len=%llu\n", req.pid, req.data.nr, req.data.args[1], req.data.args[2]);
    memset(&resp,0,sizeof resp); resp.id=req.id; resp.error=0; resp.val=req.data.args[2]; /* fake success, nothing written */
    ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp); n++;
  }
  int st; waitpid(p,&st,0); fprintf(stderr, "child status %d, notifications %d\n", st, n); return 0;
}
