/* The file that the proxy's connection guard (xrd_guard.c, preloaded into xrootd) and its
 * supervisor (`ferry proxy run`, cli/proxy_supervisor.cc) share: ADMIN/guard.map, mapped by
 * both. The guard writes the peers it accepts and, when xrootd dies of a fatal signal, the
 * peer whose bytes the dying thread read last; the supervisor reads them after the crash and
 * writes the addresses the guard refuses. Declared once here, in C, for both sides.
 *
 * Addresses are IPv6, IPv4 as ::ffff:a.b.c.d. Times are Unix milliseconds. The supervisor
 * creates the file (zeroed, magic and version set) before it starts xrootd; the guard only
 * maps an existing file of the right magic, version and size, and otherwise does nothing.
 */
#ifndef FERRY_PLUGIN_PROXY_GUARD_MAP_H_
#define FERRY_PLUGIN_PROXY_GUARD_MAP_H_

#include <stdint.h>  // NOLINT(modernize-deprecated-headers): a C header too

#define FERRY_GUARD_MAGIC 0x64726175477246ULL /* "FrGuard" */
#define FERRY_GUARD_VERSION 1u
#define FERRY_GUARD_RING 64u /* peers accepted, newest last */
#define FERRY_GUARD_DENY 64u /* addresses refused */

struct ferry_guard_peer {  // NOLINT(readability-identifier-naming): C
  uint8_t addr[16];
  uint64_t unix_ms; /* when accepted (ring) or until when refused (deny); 0: empty slot */
};

struct ferry_guard_map {  // NOLINT(readability-identifier-naming): C
  uint64_t magic;
  uint32_t version;
  uint32_t pad0;
  /* Written by the guard. accept_seq counts accepts; slot accept_seq % RING is the next. */
  uint64_t accept_seq;
  struct ferry_guard_peer accepted[FERRY_GUARD_RING];
  uint64_t refused; /* connections from a refused address closed at once */
  /* Set by the guard's fatal-signal handler, cleared by the supervisor once read. */
  uint32_t crash_valid;
  int32_t crash_signal;
  struct ferry_guard_peer crash_peer; /* unix_ms: when the crash happened */
  /* Written by the supervisor while xrootd runs: the guard reads each slot per accept. */
  struct ferry_guard_peer deny[FERRY_GUARD_DENY];
};

#endif /* FERRY_PLUGIN_PROXY_GUARD_MAP_H_ */
