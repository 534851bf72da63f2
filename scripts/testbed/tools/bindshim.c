/* ferry test bed: LD_PRELOAD library that pins wildcard listeners to one IPv4 address.
 *
 * xrootd 5.5 has no directive for the listen address: it always binds the wildcard
 * (0.0.0.0 or ::). A test server must listen only on 127.0.0.1 (or on the address of a
 * namespace the test made), so this library wraps bind(2):
 *
 *   FERRY_TB_BIND_ADDR=127.0.0.1 LD_PRELOAD=libferry_tb_bindshim.so xrootd ...
 *
 * - AF_INET  bind to INADDR_ANY  -> bind to the given address, same port;
 * - AF_INET6 bind to in6addr_any -> bind to ::ffff:<address> (IPv4-mapped), same port;
 * - every other bind, and every bind when the variable is unset or not an IPv4 address,
 *   goes to the real bind(2) unchanged.
 * The variable is read once, at load time. No allocation, no locks.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*ferry_bind_fn)(int, const struct sockaddr*, socklen_t);

static ferry_bind_fn ferry_real_bind;
static int ferry_pin_active;
static struct in_addr ferry_pin_addr;

__attribute__((constructor)) static void ferry_bindshim_init(void) {
  ferry_real_bind = (ferry_bind_fn)dlsym(RTLD_NEXT, "bind");
  const char* want = getenv("FERRY_TB_BIND_ADDR");
  if (want != NULL && inet_pton(AF_INET, want, &ferry_pin_addr) == 1) {
    ferry_pin_active = 1;
  }
}

static int ferry_call_real(int fd, const struct sockaddr* sa, socklen_t len) {
  if (ferry_real_bind == NULL) {
    ferry_real_bind = (ferry_bind_fn)dlsym(RTLD_NEXT, "bind");
    if (ferry_real_bind == NULL) {
      errno = ENOSYS;
      return -1;
    }
  }
  return ferry_real_bind(fd, sa, len);
}

int bind(int fd, const struct sockaddr* sa, socklen_t len) {
  if (!ferry_pin_active || sa == NULL) {
    return ferry_call_real(fd, sa, len);
  }
  if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in v4;
    memcpy(&v4, sa, sizeof v4);
    if (v4.sin_addr.s_addr != htonl(INADDR_ANY)) {
      return ferry_call_real(fd, sa, len);
    }
    v4.sin_addr = ferry_pin_addr;
    return ferry_call_real(fd, (const struct sockaddr*)&v4, sizeof v4);
  }
  if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 v6;
    memcpy(&v6, sa, sizeof v6);
    if (!IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
      return ferry_call_real(fd, sa, len);
    }
    /* ::ffff:a.b.c.d */
    memset(v6.sin6_addr.s6_addr, 0, 10);
    v6.sin6_addr.s6_addr[10] = 0xff;
    v6.sin6_addr.s6_addr[11] = 0xff;
    memcpy(&v6.sin6_addr.s6_addr[12], &ferry_pin_addr, sizeof ferry_pin_addr);
    return ferry_call_real(fd, (const struct sockaddr*)&v6, sizeof v6);
  }
  return ferry_call_real(fd, sa, len);
}
