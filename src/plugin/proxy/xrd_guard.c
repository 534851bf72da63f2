/* libferry_xrd_guard.so: preloaded into the proxy's xrootd by `ferry proxy run`, so that its
 * supervisor can tell which client a crash came from and refuse that client for a while.
 *
 * XRootD itself has no deny list (xrd.allow only lists hosts to allow) and says nothing about
 * the connection a worker thread was serving when the process died. So this library wraps:
 * - accept/accept4: records each peer in ADMIN/guard.map's ring, and closes a connection from
 *   a refused address at once, then accepts the next one itself (xrootd's acceptor sleeps a
 *   whole second after a failed accept, for every client);
 * - recv/read: remembers, per thread, the descriptor read last (a worker thread reads the
 *   request it then processes);
 * - SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT: the handler writes the peer of the dying
 *   thread's last descriptor into the map, then lets the signal kill the process as before.
 *
 * The map's path comes from FERRY_GUARD_MAP, read once at load. Without it, or when the file
 * is not a guard map (guard_map.h), every call goes to libc unchanged. No allocation, no
 * locks: the signal handler only copies bytes into the shared mapping.
 *
 * FERRY_GUARD_LIFELINE names a descriptor whose write end only the supervisor holds: a thread
 * waits on it and kills the process when it reads end-of-file, so a server never outlives a
 * supervisor that was killed. (PR_SET_PDEATHSIG cannot do this: the kernel clears it when
 * xrootd drops root for its -R account.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "guard_map.h"

typedef int (*accept_fn)(int, struct sockaddr*, socklen_t*);
typedef int (*accept4_fn)(int, struct sockaddr*, socklen_t*, int);
typedef ssize_t (*recv_fn)(int, void*, size_t, int);
typedef ssize_t (*read_fn)(int, void*, size_t);

static accept_fn real_accept;
static accept4_fn real_accept4;
static recv_fn real_recv;
static read_fn real_read;
static struct ferry_guard_map* map;
static __thread int last_fd = -1;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The peer as IPv6 (IPv4-mapped for IPv4); zeros for other families. */
static void peer_of(const struct sockaddr_storage* ss, uint8_t out[16]) {
  memset(out, 0, 16);
  if (ss->ss_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6*)ss)->sin6_addr, 16);
  } else if (ss->ss_family == AF_INET) {
    out[10] = 0xff;
    out[11] = 0xff;
    memcpy(out + 12, &((const struct sockaddr_in*)ss)->sin_addr, 4);
  }
}

static int refused(const uint8_t addr[16], uint64_t now) {
  for (unsigned i = 0; i < FERRY_GUARD_DENY; ++i) {
    const uint64_t until = __atomic_load_n(&map->deny[i].unix_ms, __ATOMIC_ACQUIRE);
    if (until > now && memcmp(map->deny[i].addr, addr, 16) == 0
        && __atomic_load_n(&map->deny[i].unix_ms, __ATOMIC_ACQUIRE) == until) {
      return 1;
    }
  }
  return 0;
}

/* 1: keep the connection fd (recorded); 0: it was refused and closed. */
static int admit(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (map == NULL || getpeername(fd, (struct sockaddr*)&ss, &len) != 0) {
    return 1;
  }
  uint8_t addr[16];
  peer_of(&ss, addr);
  const uint64_t now = now_ms();
  if (refused(addr, now)) {
    __atomic_fetch_add(&map->refused, 1, __ATOMIC_RELAXED);
    close(fd);
    return 0;
  }
  const uint64_t seq = __atomic_fetch_add(&map->accept_seq, 1, __ATOMIC_RELAXED);
  struct ferry_guard_peer* slot = &map->accepted[seq % FERRY_GUARD_RING];
  memcpy(slot->addr, addr, 16);
  slot->unix_ms = now;
  return 1;
}

/* Another library's constructor may call these before ours ran: resolve on first use too. */
#define FERRY_REAL(name, type)                     \
  do {                                             \
    if (real_##name == NULL) {                     \
      real_##name = (type)dlsym(RTLD_NEXT, #name); \
    }                                              \
  } while (0)

int accept4(int s, struct sockaddr* addr, socklen_t* len, int flags) {
  FERRY_REAL(accept4, accept4_fn);
  for (;;) {
    const int fd = real_accept4(s, addr, len, flags);
    if (fd < 0 || admit(fd)) {
      return fd;
    }
  }
}

int accept(int s, struct sockaddr* addr, socklen_t* len) {
  FERRY_REAL(accept, accept_fn);
  for (;;) {
    const int fd = real_accept(s, addr, len);
    if (fd < 0 || admit(fd)) {
      return fd;
    }
  }
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
  FERRY_REAL(recv, recv_fn);
  last_fd = fd;
  return real_recv(fd, buf, n, flags);
}

ssize_t read(int fd, void* buf, size_t n) {
  FERRY_REAL(read, read_fn);
  last_fd = fd;
  return real_read(fd, buf, n);
}

/* The fault came from this process (the kernel's SIGSEGV, abort()): not a kill from outside,
 * which lands on any thread and says nothing about its last peer. */
static int own_fault(const siginfo_t* info) {
  return info->si_code > 0 || info->si_pid == getpid();
}

static void on_fatal(int sig, siginfo_t* info, void* context) {
  (void)context;
  const int fd = last_fd;
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  /* getpeername: a plain system call, safe here. The thread's last descriptor read is the
   * connection whose request it was serving; a file or a closed descriptor has no peer. */
  if (map != NULL && own_fault(info) && fd >= 0
      && getpeername(fd, (struct sockaddr*)&ss, &len) == 0) {
    peer_of(&ss, map->crash_peer.addr);
    map->crash_peer.unix_ms = now_ms();
    map->crash_signal = sig;
    __atomic_store_n(&map->crash_valid, 1u, __ATOMIC_RELEASE);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void map_file(void) {
  const char* path = getenv("FERRY_GUARD_MAP");
  if (path == NULL || path[0] == '\0') {
    return;
  }
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    return;
  }
  if (fstat(fd, &st) == 0 && st.st_size == (off_t)sizeof(struct ferry_guard_map)) {
    void* p = mmap(NULL, sizeof(struct ferry_guard_map), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      struct ferry_guard_map* m = p;
      if (m->magic == FERRY_GUARD_MAGIC && m->version == FERRY_GUARD_VERSION) {
        map = m;
      } else {
        munmap(p, sizeof(struct ferry_guard_map));
      }
    }
  }
  close(fd);
}

static void* watch_lifeline(void* arg) {
  const int fd = (int)(intptr_t)arg;
  char byte;
  for (;;) {
    FERRY_REAL(read, read_fn);
    const ssize_t n = real_read(fd, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) {
      kill(getpid(), SIGKILL);
    }
  }
  return NULL;
}

static void start_lifeline(void) {
  const char* text = getenv("FERRY_GUARD_LIFELINE");
  if (text == NULL || text[0] == '\0') {
    return;
  }
  const int fd = atoi(text);
  /* Not passed on to anything xrootd itself runs. */
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  pthread_t thread;
  if (pthread_create(&thread, NULL, watch_lifeline, (void*)(intptr_t)fd) == 0) {
    pthread_detach(thread);
  }
}

__attribute__((constructor)) static void ferry_guard_init(void) {
  real_accept = (accept_fn)dlsym(RTLD_NEXT, "accept");
  real_accept4 = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
  real_recv = (recv_fn)dlsym(RTLD_NEXT, "recv");
  real_read = (read_fn)dlsym(RTLD_NEXT, "read");
  start_lifeline();
  map_file();
  if (map == NULL) {
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (unsigned i = 0; i < sizeof fatal / sizeof fatal[0]; ++i) {
    sigaction(fatal[i], &sa, NULL);
  }
}
